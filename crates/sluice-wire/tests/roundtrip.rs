//! Property tests: everything encoded parses back to itself, marking and INT keep every checksum
//! valid, and no input makes a parser panic.

use proptest::prelude::*;
use sluice_wire::eth::EthHeader;
use sluice_wire::frame::{self, Frame, L4};
use sluice_wire::ipv4::{self, Ecn, Ipv4Header};
use sluice_wire::sluice::{self, Flags, IntRecord, Kind, SignalField, SluiceHeader, SluicePacket};
use sluice_wire::udp;

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Data),
        Just(Kind::Ack),
        Just(Kind::Nack),
        Just(Kind::Token),
        Just(Kind::Cnp),
        Just(Kind::Request),
        Just(Kind::Stop),
        Just(Kind::Signal)
    ]
}

fn ecn() -> impl Strategy<Value = Ecn> {
    prop_oneof![Just(Ecn::NotEct), Just(Ecn::Ect0), Just(Ecn::Ect1), Just(Ecn::Ce)]
}

fn header() -> impl Strategy<Value = SluiceHeader> {
    let signal = prop::option::of((any::<u64>(), any::<u8>()).prop_map(|(value, hops)| SignalField { value, hops }));
    (kind(), 0..=Flags::ALL, any::<u32>(), any::<[u64; 4]>(), any::<[u32; 2]>(), signal).prop_map(
        |(kind, flags, flow, w, b, signal)| SluiceHeader {
            kind,
            // The encoder sets the signal flag from the field.
            flags: Flags(if signal.is_some() { flags | Flags::SIGNAL } else { flags & !Flags::SIGNAL }),
            int_hops: 0,
            flow,
            payload_len: 0,
            seq: w[0],
            sent_ns: w[1],
            echo_ns: w[2],
            offset: w[3],
            bytes: b[0],
            ce_bytes: b[1],
            signal,
        },
    )
}

fn hop() -> impl Strategy<Value = IntRecord> {
    any::<[u64; 4]>().prop_map(|w| IntRecord { ts_ns: w[0], tx_bytes: w[1], qlen: w[2], rate: w[3] })
}

fn ip(ecn: Ecn, dscp: u8, id: u16) -> Ipv4Header {
    Ipv4Header {
        header_len: 20,
        dscp,
        ecn,
        total_len: 0,
        id,
        flags_fragment: 0,
        ttl: 64,
        protocol: 0,
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
    }
}

proptest! {
    #[test]
    fn sluice_packets_round_trip(h in header(), hops in prop::collection::vec(hop(), 0..6),
                                 payload in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut buf = vec![0u8; 2048];
        let n = sluice::encode(&h, &hops, &payload, &mut buf).unwrap();
        let p = SluicePacket::parse(&buf[..n]).unwrap();
        prop_assert_eq!(p.header, SluiceHeader { int_hops: hops.len() as u8, payload_len: payload.len() as u32, ..h });
        prop_assert_eq!(p.hops().collect::<Vec<_>>(), hops);
        prop_assert_eq!(p.payload, &payload[..]);
    }

    #[test]
    fn ce_marking_keeps_the_ip_checksum(e in ecn(), dscp in 0u8..64, id in any::<u16>(),
                                        payload in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut buf = vec![0u8; 256];
        let eth = EthHeader { dst: [1; 6], src: [2; 6], ethertype: 0 };
        let n = frame::write_udp(&mut buf, &eth, &ip(e, dscp, id), (7, 9), &payload).unwrap();
        let marked = frame::set_ce(&mut buf[..n]);
        prop_assert_eq!(marked, e.is_ect());
        let f = Frame::parse(&buf[..n]).unwrap();
        prop_assert_eq!(f.ip.ecn, if e == Ecn::NotEct { Ecn::NotEct } else { Ecn::Ce });
        prop_assert_eq!(f.ip.dscp, dscp);
        prop_assert_eq!(ipv4::checksum(&buf[14..34]), 0);
        prop_assert!(udp::verify(f.ip.src, f.ip.dst, &buf[34..n]));
    }

    #[test]
    fn int_appends_keep_records_payload_and_checksums(h in header(), hops in prop::collection::vec(hop(), 1..5),
                                                      payload in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut inner = vec![0u8; 1024];
        let p = sluice::encode(&h, &[], &payload, &mut inner).unwrap();
        let mut buf = vec![0u8; 2048];
        let eth = EthHeader { dst: [1; 6], src: [2; 6], ethertype: 0 };
        let mut n = frame::write_udp(&mut buf, &eth, &ip(Ecn::Ect0, 0, 1), (7, 9), &inner[..p]).unwrap();
        for hop in &hops {
            n = frame::append_int(&mut buf, n, 1500, hop).unwrap();
        }
        let f = Frame::parse(&buf[..n]).unwrap();
        let is_sluice = matches!(f.l4, L4::Udp { sluice: Some(_), .. });
        prop_assert!(is_sluice);
        prop_assert!(udp::verify(f.ip.src, f.ip.dst, &buf[34..n]));
        let sp = SluicePacket::parse(&buf[42..n]).unwrap();
        prop_assert_eq!(sp.hops().collect::<Vec<_>>(), hops);
        prop_assert_eq!(sp.payload, &payload[..]);
    }

    #[test]
    fn parsers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), len in 0usize..300, mtu in 0usize..2000) {
        let _ = Frame::parse(&bytes);
        let _ = SluicePacket::parse(&bytes);
        let _ = Ipv4Header::parse(&bytes);
        let _ = udp::UdpHeader::parse(&bytes);
        let mut copy = bytes.clone();
        let _ = frame::set_ce(&mut copy);
        let _ = frame::append_int(&mut copy, len, mtu, &IntRecord::default());
        let _ = sluice::append_hop(&mut copy, len, &IntRecord::default());
        let _ = frame::set_signal(&mut copy, len, 1, 1);
        let _ = sluice::set_signal(&mut copy, 1, 1);
    }

    #[test]
    fn signal_writes_keep_the_rest_and_checksums(h in header(), value in any::<u64>(), writers in any::<u8>(),
                                                 hops in prop::collection::vec(hop(), 0..3),
                                                 payload in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut inner = vec![0u8; 1024];
        let p = sluice::encode(&h, &hops, &payload, &mut inner).unwrap();
        let mut buf = vec![0u8; 2048];
        let eth = EthHeader { dst: [1; 6], src: [2; 6], ethertype: 0 };
        let n = frame::write_udp(&mut buf, &eth, &ip(Ecn::Ect0, 0, 1), (7, 9), &inner[..p]).unwrap();
        let before = buf.clone();
        let wrote = frame::set_signal(&mut buf, n, value, writers);
        match h.signal {
            None => {
                prop_assert_eq!(wrote, Err(sluice_wire::WireError::NoSignalField));
                prop_assert_eq!(&buf, &before);
            }
            Some(_) => {
                prop_assert_eq!(wrote, Ok(()));
                let f = Frame::parse(&buf[..n]).unwrap();
                prop_assert!(udp::verify(f.ip.src, f.ip.dst, &buf[34..n]));
                let sp = SluicePacket::parse(&buf[42..n]).unwrap();
                prop_assert_eq!(sp.header.signal, Some(SignalField { value, hops: writers }));
                let expect = SluiceHeader { signal: sp.header.signal, int_hops: hops.len() as u8,
                                            payload_len: payload.len() as u32, ..h };
                prop_assert_eq!(sp.header, expect);
                prop_assert_eq!(sp.hops().collect::<Vec<_>>(), hops);
                prop_assert_eq!(sp.payload, &payload[..]);
            }
        }
    }

    #[test]
    fn udp_frames_round_trip(e in ecn(), dscp in 0u8..64, id in any::<u16>(), ports in any::<(u16, u16)>(),
                             payload in prop::collection::vec(any::<u8>(), 0..100)) {
        let mut buf = vec![0u8; 256];
        let eth = EthHeader { dst: [3; 6], src: [4; 6], ethertype: 0 };
        let n = frame::write_udp(&mut buf, &eth, &ip(e, dscp, id), ports, &payload).unwrap();
        let f = Frame::parse(&buf[..n]).unwrap();
        prop_assert_eq!(f.len(), n);
        prop_assert_eq!((f.ip.ecn, f.ip.dscp, f.ip.id), (e, dscp, id));
        let t = f.five_tuple();
        prop_assert_eq!((t.src_port, t.dst_port, t.protocol), (ports.0, ports.1, 17));
    }
}
