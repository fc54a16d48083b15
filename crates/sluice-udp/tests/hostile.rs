//! Whatever arrives, an endpoint neither panics nor keeps state for it: malformed, truncated, spoofed
//! and stale packets are refused and counted.

use proptest::prelude::*;
use sluice_cc::registry::lookup;
use sluice_cc::Needs;
use sluice_plane::PlaneConfig;
use sluice_udp::{Endpoint, FlowSpec, Refused, TransportConfig};
use sluice_wire::sluice::{encode, Kind, SluiceHeader};
use sluice_wire::{Ecn, WireError};

fn sender() -> Endpoint {
    let mut e = Endpoint::new(TransportConfig::default(), PlaneConfig::default(), 0);
    let factory = (lookup("dctcp").unwrap().build)(&toml::Table::new(), 10_000_000_000).unwrap();
    let spec = FlowSpec { id: 7, peer: 1, size: Some(100_000), factory, needs: Needs::default() };
    e.open(spec, 0).unwrap();
    let mut buf = [0u8; 1500];
    while e.poll_transmit(0, &mut buf).is_some() {}
    e
}

fn packet(header: SluiceHeader) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let n = encode(&header, &[], &[], &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn each_kind_of_bad_packet_is_refused_and_counted() {
    let mut e = sender();
    let ack = |flow, seq| SluiceHeader { seq, ..SluiceHeader::new(Kind::Ack, flow) };
    assert_eq!(
        e.handle(1, 1, Ecn::NotEct, b"hello"),
        Err(Refused::Malformed(WireError::Truncated { need: 56, have: 5 }))
    );
    assert_eq!(e.handle(1, 1, Ecn::NotEct, &packet(ack(8, 0))), Err(Refused::UnknownFlow));
    assert_eq!(e.handle(1, 2, Ecn::NotEct, &packet(ack(7, 0))), Err(Refused::WrongPeer));
    assert_eq!(e.handle(1, 1, Ecn::NotEct, &packet(ack(7, 1 << 40))), Err(Refused::OutOfWindow));
    let token = SluiceHeader::new(Kind::Token, 7);
    assert_eq!(e.handle(1, 1, Ecn::NotEct, &packet(token)), Err(Refused::UnexpectedKind));
    let far = SluiceHeader { seq: 1 << 40, payload_len: 0, ..SluiceHeader::new(Kind::Data, 3) };
    assert_eq!(e.handle(1, 1, Ecn::NotEct, &packet(far)), Err(Refused::OutOfWindow));
    let c = e.counters;
    assert_eq!((c.malformed, c.unknown_flow, c.wrong_peer, c.out_of_window, c.unexpected_kind), (1, 1, 1, 2, 1));
    assert_eq!(c.received, 6);
    assert_eq!(
        e.handle(1, 1, Ecn::NotEct, &packet(ack(7, 1416))),
        Ok(()),
        "a real ACK of the one packet sent still goes through"
    );
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), peer in 0u32..3) {
        let mut e = sender();
        let _ = e.handle(5, peer, Ecn::Ce, &bytes);
        prop_assert_eq!(e.counters.received, 1);
    }

    #[test]
    fn mutated_acks_never_panic(seq in any::<u64>(), offset in any::<u64>(), bytes in any::<u32>(), echo in any::<u64>()) {
        let mut e = sender();
        let h = SluiceHeader { seq, offset, bytes, echo_ns: echo, ce_bytes: bytes, ..SluiceHeader::new(Kind::Ack, 7) };
        let _ = e.handle(5, 1, Ecn::NotEct, &packet(h));
        let mut buf = [0u8; 1500];
        e.advance(1_000_000_000);
        while e.poll_transmit(1_000_000_000, &mut buf).is_some() {}
    }

    #[test]
    fn data_at_any_offset_never_panics(seq in any::<u64>(), len in 0u32..2000, flow in any::<u32>()) {
        let mut e = sender();
        let h = SluiceHeader { seq, ..SluiceHeader::new(Kind::Data, flow) };
        let mut buf = vec![0u8; 56 + len as usize];
        let n = encode(&h, &[], &vec![0u8; len as usize], &mut buf).unwrap();
        let _ = e.handle(5, 1, Ecn::Ce, &buf[..n]);
        let mut out = [0u8; 1500];
        while e.poll_transmit(5, &mut out).is_some() {}
    }
}
