//! Switch signals through the UDP transport: a RoCC sender's data packets carry a signal field, the
//! receiver echoes what the switches wrote on its ACK, and the sender's algorithm takes the path's value
//! after the ACK and a switch's signal packet when it comes, and paces at the rate they give it.

use sluice_cc::registry::lookup;
use sluice_core::{PS_PER_NS, PS_PER_US};
use sluice_plane::PlaneConfig;
use sluice_udp::{Endpoint, FlowSpec, Refused, TransportConfig};
use sluice_wire::sluice::{encode, set_signal, Kind, SignalField, SluiceHeader, SluicePacket, HEADER_LEN, SIGNAL_LEN};
use sluice_wire::Ecn;

const GBPS: u64 = 1_000_000_000;
const SENDER: u32 = 0;
const RECEIVER: u32 = 1;

/// An endpoint sending flow 5 to the receiver with RoCC (`params`), or DCTCP for `rocc = false`.
fn sender(params: &str, rocc: bool) -> Endpoint {
    let config = TransportConfig { line_rate: 10 * GBPS, ..TransportConfig::default() };
    let mut e = Endpoint::new(config, PlaneConfig::default(), 0);
    let algorithm = lookup(if rocc { "rocc" } else { "dctcp" }).unwrap();
    let factory = (algorithm.build)(&params.parse::<toml::Table>().unwrap(), 10 * GBPS).unwrap();
    let spec = FlowSpec { id: 5, peer: RECEIVER, size: None, factory, needs: algorithm.needs };
    e.open(spec, 0).unwrap();
    e
}

/// Data packets `e` sends from `from` ps for `span` ps, polled every 100 ns (each as its bytes).
fn sent(e: &mut Endpoint, from: u64, span: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 9000];
    let mut now = from;
    while now < from + span {
        e.advance(now);
        while let Some(t) = e.poll_transmit(now, &mut buf) {
            out.push(buf[..t.len].to_vec());
        }
        now += 100 * PS_PER_NS;
    }
    out
}

fn header(bytes: &[u8]) -> SluiceHeader {
    SluicePacket::parse(bytes).unwrap().header
}

#[test]
fn the_path_value_comes_back_on_the_ack_and_sets_the_rate() {
    let mut tx = sender("feedback = \"path\"", true);
    let burst = sent(&mut tx, 0, 20 * PS_PER_US);
    let at_line_rate = burst.len();
    let mut first = burst[0].clone();
    let h = header(&first);
    assert_eq!(h.signal, Some(SignalField { value: 0, hops: 0 }), "data asks for the field, none wrote yet");
    assert_eq!(first.len(), HEADER_LEN + SIGNAL_LEN + h.payload_len as usize);
    // Two switches wrote the path's minimum, 1 Gbps.
    set_signal(&mut first, GBPS, 2).unwrap();
    let mut rx = Endpoint::new(TransportConfig::default(), PlaneConfig::default(), 0);
    rx.handle(25 * PS_PER_US, SENDER, Ecn::NotEct, &first).unwrap();
    let acks = sent(&mut rx, 25 * PS_PER_US, PS_PER_US);
    let ack = header(&acks[0]);
    assert_eq!(ack.kind, Kind::Ack);
    assert_eq!(ack.signal, Some(SignalField { value: GBPS, hops: 2 }), "echoed as it came");
    tx.handle(30 * PS_PER_US, RECEIVER, Ecn::NotEct, &acks[0]).unwrap();
    assert_eq!((tx.counters.signals_path, tx.counters.signals_switch), (1, 0));
    // At a tenth of the line rate, the next 20 us carry about a tenth of the packets.
    let slowed = sent(&mut tx, 40 * PS_PER_US, 20 * PS_PER_US).len();
    assert!(at_line_rate >= 15 && slowed * 5 <= at_line_rate, "{at_line_rate} packets, then {slowed}");
}

#[test]
fn a_switchs_signal_packet_reaches_the_algorithm() {
    let mut tx = sender("", true);
    let at_line_rate = sent(&mut tx, 0, 20 * PS_PER_US).len();
    let signal = SluiceHeader { seq: GBPS, bytes: 9, echo_ns: 1, sent_ns: 77, ..SluiceHeader::new(Kind::Signal, 5) };
    let mut buf = [0u8; 128];
    let n = encode(&signal, &[], &[], &mut buf).unwrap();
    // From another peer than the flow's receiver, or for another flow, it is refused.
    assert_eq!(tx.handle(25 * PS_PER_US, 7, Ecn::NotEct, &buf[..n]), Err(Refused::WrongPeer));
    let other = SluiceHeader { flow: 6, ..signal };
    let m = encode(&other, &[], &[], &mut buf).unwrap();
    assert_eq!(tx.handle(25 * PS_PER_US, RECEIVER, Ecn::NotEct, &buf[..m]), Err(Refused::UnknownFlow));
    let n = encode(&signal, &[], &[], &mut buf).unwrap();
    tx.handle(25 * PS_PER_US, RECEIVER, Ecn::NotEct, &buf[..n]).unwrap();
    assert_eq!((tx.counters.signals_path, tx.counters.signals_switch), (0, 1));
    let slowed = sent(&mut tx, 30 * PS_PER_US, 20 * PS_PER_US).len();
    assert!(at_line_rate >= 15 && slowed * 5 <= at_line_rate, "{at_line_rate} packets, then {slowed}");
}

#[test]
fn flows_without_a_signal_neither_ask_for_the_field_nor_take_signal_packets() {
    let mut tx = sender("", false);
    let data = sent(&mut tx, 0, 5 * PS_PER_US);
    assert_eq!(header(&data[0]).signal, None);
    let signal = SluiceHeader { seq: GBPS, bytes: 9, ..SluiceHeader::new(Kind::Signal, 5) };
    let mut buf = [0u8; 128];
    let n = encode(&signal, &[], &[], &mut buf).unwrap();
    assert_eq!(tx.handle(10 * PS_PER_US, RECEIVER, Ecn::NotEct, &buf[..n]), Err(Refused::UnexpectedKind));
    assert_eq!(tx.counters.unexpected_kind, 1);
    assert_eq!(tx.counters.signals_switch, 0);
}
