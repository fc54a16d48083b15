//! The UDP datapath's endpoint (`sluice-udp`) fed datagrams from peers: whatever arrives, in whatever
//! order, it neither panics nor answers with a packet that does not parse, and it counts every datagram.
//!
//! An input is a sequence of records: one control byte (bits 0-1: the peer, 0 being the flows' receiver;
//! bits 2-3: the ECN codepoint; bit 4: let 100 us pass first), a length byte, then that many bytes of
//! datagram. The endpoint sends two DCTCP flows (0 and 1), an NDP flow (2) and a RoCC flow (3, with a
//! switch signal) to peer 0, runs NDP's receiver side for receiver-driven flows that come to it, and
//! receives whatever comes.

use sluice_cc::registry::lookup;
use sluice_plane::PlaneConfig;
use sluice_udp::{Endpoint, FlowSpec, TransportConfig};
use sluice_wire::sluice::{encode, Flags, Kind, SignalField, SluiceHeader, SluicePacket};
use sluice_wire::Ecn;

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut e = endpoint();
    let mut now = 0;
    let mut buf = vec![0u8; 9000];
    let mut fed = 0;
    let mut rest = data;
    while let [control, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (datagram, next) = tail.split_at(n);
        rest = next;
        if control & 0x10 != 0 {
            now += 100_000_000;
        }
        let _ = e.handle(now, (control & 3) as u32, Ecn::from_bits(control >> 2), datagram);
        fed += 1;
        e.advance(now);
        drain(&mut e, now, &mut buf);
    }
    assert_eq!(e.counters.received, fed, "every datagram is counted");
}

fn endpoint() -> Endpoint {
    let mut e = Endpoint::new(TransportConfig::default(), PlaneConfig::default(), 0);
    let dctcp = lookup("dctcp").expect("registered");
    let factory = (dctcp.build)(&toml::Table::new(), 10_000_000_000).expect("defaults build");
    for id in 0..2 {
        let spec = FlowSpec { id, peer: 0, size: Some(50_000), factory: factory.clone(), needs: dctcp.needs };
        e.open(spec, 0).expect("fresh ids");
    }
    let ndp = lookup("ndp").expect("registered");
    let factory = (ndp.build)(&toml::Table::new(), 10_000_000_000).expect("defaults build");
    e.receive_tokens(factory.clone()).expect("a receiver-driven algorithm");
    e.open(FlowSpec { id: 2, peer: 0, size: Some(50_000), factory, needs: ndp.needs }, 0).expect("a fresh id");
    let rocc = lookup("rocc").expect("registered");
    let factory = (rocc.build)(&toml::Table::new(), 10_000_000_000).expect("defaults build");
    e.open(FlowSpec { id: 3, peer: 0, size: Some(50_000), factory, needs: rocc.needs }, 0).expect("a fresh id");
    e
}

/// Sends what is due; everything sent must parse.
fn drain(e: &mut Endpoint, now: u64, buf: &mut [u8]) {
    for _ in 0..64 {
        let Some(t) = e.poll_transmit(now, buf) else { return };
        SluicePacket::parse(&buf[..t.len]).expect("the endpoint sends well-formed packets");
    }
}

/// Seed inputs: ACKs for the flows (in order, selective, with ECN echo), data of a new flow (in order,
/// out of order, CE-marked, last), a CNP, tokens and NACKs for the NDP flow, a receiver-driven flow
/// coming in (its request, data, a probe and a stop), switch signals for the RoCC flow (an ACK echoing
/// the path's field, a switch's signal packet, and one for a flow without a signal), data carrying a
/// signal field, and a datagram that is not a sluice packet.
pub fn seed_messages() -> Vec<(String, Vec<u8>)> {
    let ack = |flow, seq, offset, ce| SluiceHeader {
        seq,
        offset,
        bytes: 1416,
        ce_bytes: ce,
        flags: Flags(if ce > 0 { Flags::ECN_ECHO } else { 0 }),
        ..SluiceHeader::new(Kind::Ack, flow)
    };
    let data = |seq, flags| SluiceHeader { seq, flags: Flags(flags), ..SluiceHeader::new(Kind::Data, 9) };
    let rd = |seq, flags| SluiceHeader { seq, flags: Flags(flags), ..SluiceHeader::new(Kind::Data, 8) };
    let record = |control: u8, h: SluiceHeader, payload: usize| {
        let mut b = vec![0u8; 256];
        let n = encode(&h, &[], &vec![0u8; payload], &mut b).expect("fits");
        let mut r = vec![control, n as u8];
        r.extend_from_slice(&b[..n]);
        r
    };
    let seeds = [
        ("acks", vec![record(0, ack(0, 1416, 0, 0), 0), record(0x10, ack(1, 1416, 0, 1416), 0)]),
        ("sack", vec![record(0, ack(0, 0, 1416, 0), 0), record(0, ack(0, 2832, 0, 0), 0)]),
        (
            "data",
            vec![
                record(1, data(0, Flags::FIRST), 100),
                record(1 | 0xc, data(100, Flags::LAST | Flags::CNP_REQUEST), 50),
            ],
        ),
        ("reorder", vec![record(2, data(200, 0), 100), record(2, data(0, 0), 100), record(2, data(100, 0), 100)]),
        ("cnp", vec![record(0, SluiceHeader::new(Kind::Cnp, 1), 0)]),
        (
            "tokens",
            vec![
                record(0, SluiceHeader { seq: 0, bytes: 1416, ..SluiceHeader::new(Kind::Token, 2) }, 0),
                record(0x10, SluiceHeader { seq: 1, bytes: 1416, ..SluiceHeader::new(Kind::Token, 2) }, 0),
                record(0, SluiceHeader { seq: 0, offset: 1416, ..SluiceHeader::new(Kind::Nack, 2) }, 0),
                record(0, SluiceHeader { seq: 50_000, offset: 48_144, ..SluiceHeader::new(Kind::Ack, 2) }, 0),
            ],
        ),
        (
            "incoming",
            vec![
                record(
                    1,
                    SluiceHeader {
                        seq: 3000,
                        offset: 1000,
                        bytes: 3000,
                        ce_bytes: 1000,
                        ..SluiceHeader::new(Kind::Request, 8)
                    },
                    0,
                ),
                record(1, rd(0, Flags::RECEIVER_DRIVEN), 100),
                record(1 | 0x10, rd(1000, Flags::RECEIVER_DRIVEN | Flags::PROBE), 0),
                record(1, rd(2000, Flags::RECEIVER_DRIVEN | Flags::SCHEDULED | Flags::MORE_THAN_BDP), 100),
                record(1, SluiceHeader::new(Kind::Stop, 8), 0),
            ],
        ),
        (
            "signals",
            vec![
                record(
                    0,
                    SluiceHeader { signal: Some(SignalField { value: 5_000, hops: 1 }), ..ack(3, 1416, 0, 0) },
                    0,
                ),
                record(0x10, SluiceHeader { seq: 2_500, bytes: 9, ..SluiceHeader::new(Kind::Signal, 3) }, 0),
                record(0, SluiceHeader { seq: 2_500, bytes: 9, ..SluiceHeader::new(Kind::Signal, 0) }, 0),
                record(
                    1,
                    SluiceHeader { signal: Some(SignalField { value: 7, hops: 2 }), ..data(0, Flags::FIRST) },
                    100,
                ),
            ],
        ),
        ("garbage", vec![vec![0, 4, b'j', b'u', b'n', b'k']]),
    ];
    seeds.into_iter().map(|(name, records)| (name.to_string(), records.concat())).collect()
}
