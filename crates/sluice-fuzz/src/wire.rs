//! The packet formats of the software switch and the sluice UDP transport (`sluice-wire`): frames and
//! sluice headers arrive from peers, so every byte string must parse or be refused without a panic.

use sluice_wire::frame::{self, Frame, L4};
use sluice_wire::sluice::{self, IntRecord, SluiceHeader, SluicePacket};

/// Parses the input as a sluice packet and as an Ethernet frame. An accepted sluice packet must encode
/// back to the same bytes; an accepted frame must still parse after CE marking (with only its ECN
/// changed), after an INT record is appended (with one more record) and after a signal value is
/// written (with that value, and nothing else changed).
pub fn run(data: &[u8]) {
    if let Ok(p) = SluicePacket::parse(data) {
        let hops: Vec<IntRecord> = p.hops().collect();
        let mut again = vec![0u8; data.len()];
        let n = sluice::encode(&p.header, &hops, p.payload, &mut again).expect("an accepted packet re-encodes");
        assert_eq!(&again[..n], data, "a parsed sluice packet does not round-trip");
    }
    let Ok(f) = Frame::parse(data) else { return };
    let mut marked = data.to_vec();
    let did = frame::set_ce(&mut marked);
    let after = Frame::parse(&marked).expect("a marked frame still parses");
    assert_eq!(did, f.ip.ecn.is_ect(), "only ECN-capable packets are marked");
    assert_eq!(after.five_tuple(), f.five_tuple());
    let mut grown = data.to_vec();
    grown.resize(data.len() + sluice::HOP_LEN, 0);
    let hop = IntRecord { ts_ns: 1, tx_bytes: 2, qlen: 3, rate: 4 };
    if let Ok(n) = frame::append_int(&mut grown, f.len(), 1500, &hop) {
        let g = Frame::parse(&grown[..n]).expect("a stamped frame parses");
        let hops = |l4: L4| match l4 {
            L4::Udp { sluice: Some(SluiceHeader { int_hops, .. }), .. } => Some(int_hops),
            _ => None,
        };
        assert_eq!(hops(g.l4), hops(f.l4).map(|h| h + 1), "the record is counted");
    }
    let mut signalled = data.to_vec();
    if frame::set_signal(&mut signalled, f.len(), 7, 2).is_ok() {
        let g = Frame::parse(&signalled).expect("a frame with a signal written parses");
        let (L4::Udp { sluice: Some(before), .. }, L4::Udp { sluice: Some(after), .. }) = (f.l4, g.l4) else {
            panic!("a signal is written only into sluice packets");
        };
        assert_eq!(after.signal, Some(sluice::SignalField { value: 7, hops: 2 }));
        assert_eq!(SluiceHeader { signal: before.signal, ..after }, before, "only the signal field changes");
    }
}

/// Seed inputs made by the encoders: sluice packets of every kind with and without INT records, and
/// whole frames (plain UDP, sluice over UDP, TCP).
pub fn seed_messages() -> Vec<(String, Vec<u8>)> {
    use sluice_wire::eth::EthHeader;
    use sluice_wire::ipv4::{Ecn, Ipv4Header};
    use sluice_wire::sluice::{Flags, Kind};
    let mut seeds = Vec::new();
    let hop = IntRecord { ts_ns: 1_000, tx_bytes: 15_000, qlen: 3_000, rate: 10_000_000_000 };
    let kinds = [
        ("data", Kind::Data),
        ("ack", Kind::Ack),
        ("nack", Kind::Nack),
        ("token", Kind::Token),
        ("request", Kind::Request),
        ("stop", Kind::Stop),
        ("signal", Kind::Signal),
    ];
    for (name, kind) in kinds {
        for hops in [0usize, 2] {
            // Data and acks carry a signal field in half the seeds.
            let signal = matches!(kind, Kind::Data | Kind::Ack) && hops > 0;
            let header = SluiceHeader {
                flags: Flags(Flags::INT_REQUEST),
                seq: 4096,
                sent_ns: 1_000_000,
                signal: signal.then_some(sluice::SignalField { value: 12_345, hops: 1 }),
                ..SluiceHeader::new(kind, 1)
            };
            let mut buf = vec![0u8; 512];
            let n = sluice::encode(&header, &vec![hop; hops], b"payload", &mut buf).expect("room");
            buf.truncate(n);
            let eth = EthHeader { dst: [2, 0, 0, 0, 0, 1], src: [2, 0, 0, 0, 0, 2], ethertype: 0 };
            let ip = Ipv4Header {
                header_len: 20,
                dscp: 0,
                ecn: Ecn::Ect0,
                total_len: 0,
                id: 1,
                flags_fragment: 0x4000,
                ttl: 64,
                protocol: 0,
                src: [10, 77, 0, 1],
                dst: [10, 77, 0, 2],
            };
            let mut frame_buf = vec![0u8; 1024];
            let m = frame::write_udp(&mut frame_buf, &eth, &ip, (40_000, 5_201), &buf).expect("room");
            frame_buf.truncate(m);
            seeds.push((format!("{name}-{hops}-hops"), buf));
            seeds.push((format!("frame-{name}-{hops}-hops"), frame_buf));
        }
    }
    seeds
}
