//! A switch signal's hook in the software switch: each switch port calls it at enqueue (the queue the
//! packet finds, before admission) and dequeue (the queue it leaves), the hops' writes combine in the
//! data packet's signal field, and a feedback value reaches the data packet's sender as a well-formed
//! signal packet.

use std::sync::{Arc, Mutex};

use sluice_cc::signal::{Combine, PacketView, PortSignal, PortView, Stamp, SwitchSignal};
use sluice_core::{Rate, PS_PER_US};
use sluice_sim::config::{EcnConfig, LoadBalance};
use sluice_switch::config::{IP_MTU, WIRE_OVERHEAD};
use sluice_switch::{Fabric, FabricConfig, HostAddr, Sampling, SwitchParams};
use sluice_topo::{build, TopologySpec};
use sluice_wire::eth::EthHeader;
use sluice_wire::frame::{self, Frame, L4};
use sluice_wire::ipv4::{Ecn, Ipv4Header};
use sluice_wire::sluice::{self as sl, Kind, SignalField, SluiceHeader, SluicePacket};
use sluice_wire::udp;

const GBPS: u64 = 1_000_000_000;
const DELAY: u64 = 10 * PS_PER_US;

/// What a hook saw: (enqueue?, node, port, queue bytes, data?, the value earlier hops wrote).
type Seen = (bool, u32, u16, u64, bool, Option<u64>);

/// A design for the test: writes its port's rate in Mbps (the path keeps the minimum), and at the
/// switch `feedback_node` sends the queue a departing data packet leaves, plus one, back to the sender.
#[derive(Debug)]
struct Probe {
    seen: Arc<Mutex<Vec<Seen>>>,
    feedback_node: u32,
}

#[derive(Debug)]
struct ProbePort {
    seen: Arc<Mutex<Vec<Seen>>>,
    feedback_node: u32,
    rate: Rate,
}

impl ProbePort {
    fn log(&self, enqueue: bool, port: &PortView, packet: &PacketView) {
        let seen = (enqueue, port.node, port.port, port.queue_bytes, packet.data, packet.signal);
        self.seen.lock().unwrap().push(seen);
    }
}

impl PortSignal for ProbePort {
    fn on_enqueue(&mut self, port: &PortView, packet: &PacketView) -> Stamp {
        self.log(true, port, packet);
        Stamp { write: Some(self.rate / 1_000_000), feedback: None }
    }

    fn on_dequeue(&mut self, port: &PortView, packet: &PacketView) -> Stamp {
        self.log(false, port, packet);
        let feedback = (port.node == self.feedback_node).then_some(port.queue_bytes + 1);
        Stamp { write: None, feedback }
    }

    fn value(&self) -> u64 {
        self.rate / 1_000_000
    }
}

impl SwitchSignal for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn combine(&self) -> Combine {
        Combine::Min
    }

    fn port(&self, rate: Rate) -> Box<dyn PortSignal> {
        Box::new(ProbePort { seen: self.seen.clone(), feedback_node: self.feedback_node, rate })
    }
}

fn params() -> SwitchParams {
    SwitchParams {
        buffer: 32_000_000,
        dt_alpha: 1.0,
        queues: 8,
        data_queue: 3,
        control_queue: 0,
        ecn: EcnConfig { enabled: false, ..EcnConfig::default() },
        int: false,
        load_balance: LoadBalance::FlowHash,
        wire_overhead: WIRE_OVERHEAD,
        ip_mtu: IP_MTU,
        token_limiter: None,
    }
}

/// A dumbbell h0, h1 | sw0 = 500 Mbps = sw1 | h2, h3 whose switches run a [`Probe`] that sends feedback
/// at sw1; returns it with the hooks' log and sw0's and sw1's node ids.
fn dumbbell() -> (Fabric, Arc<Mutex<Vec<Seen>>>, u32, u32) {
    let spec = TopologySpec::Dumbbell { left: 2, right: 2, host_rate: GBPS, bottleneck_rate: GBPS / 2, delay: DELAY };
    let topology = build(&spec, std::path::Path::new(".")).unwrap();
    let node = |name: &str| topology.nodes.iter().position(|n| n.name == name).unwrap() as u32;
    let (sw0, sw1) = (node("sw0"), node("sw1"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let routes = topology.routes();
    let hosts = (0..topology.num_hosts()).map(HostAddr::numbered).collect();
    let fabric = Fabric::new(FabricConfig {
        topology,
        routes,
        hosts,
        switch: params(),
        impairments: Vec::new(),
        sampling: Sampling::default(),
        seed: 7,
        slots: 4096,
        signal: Some(Arc::new(Probe { seen: seen.clone(), feedback_node: sw1 })),
    });
    (fabric, seen, sw0, sw1)
}

/// A sluice data frame of flow 1 from host `src` to `dst` sent at 4,242 ns, with a signal field or not.
fn data(src: u32, dst: u32, signal: bool, payload: usize) -> Vec<u8> {
    let header = SluiceHeader {
        sent_ns: 4_242,
        signal: signal.then_some(SignalField::default()),
        ..SluiceHeader::new(Kind::Data, 1)
    };
    let mut inner = vec![0u8; 2048];
    let n = sl::encode(&header, &[], &vec![1u8; payload], &mut inner).unwrap();
    let (s, d) = (HostAddr::numbered(src), HostAddr::numbered(dst));
    let eth = EthHeader { dst: s.gateway_mac, src: s.mac, ethertype: 0 };
    let ip = Ipv4Header {
        header_len: 20,
        dscp: 0,
        ecn: Ecn::Ect0,
        total_len: 0,
        id: 0,
        flags_fragment: 0x4000,
        ttl: 64,
        protocol: 0,
        src: s.ip,
        dst: d.ip,
    };
    let mut buf = vec![0u8; 2048];
    let m = frame::write_udp(&mut buf, &eth, &ip, (40_000, 5_201), &inner[..n]).unwrap();
    buf.truncate(m);
    buf
}

/// Runs the fabric to `until_ns`, collecting (host, frame) of every delivery.
fn run(f: &mut Fabric, until_ns: u64) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(t) = f.next_event_ns().filter(|&t| t <= until_ns) {
        f.advance(t, &mut |h, bytes| out.push((h, bytes.to_vec())));
    }
    f.advance(until_ns, &mut |h, bytes| out.push((h, bytes.to_vec())));
    out
}

fn sluice_of(frame: &[u8]) -> (Frame, SluiceHeader) {
    let f = Frame::parse(frame).unwrap();
    let L4::Udp { sluice: Some(h), .. } = f.l4 else { panic!("not a sluice packet") };
    assert!(udp::verify(f.ip.src, f.ip.dst, &frame[34..f.len()]), "the UDP checksum verifies");
    (f, h)
}

#[test]
fn hops_combine_their_writes_and_the_last_switch_tells_the_sender() {
    let (mut f, _, _, sw1) = dumbbell();
    let sent = data(0, 3, true, 1000);
    f.receive(0, 0, &sent);
    let out = run(&mut f, 10_000_000);
    let to = |host: u32| out.iter().filter(|o| o.0 == host).map(|o| o.1.clone()).collect::<Vec<_>>();
    let (arrived, back) = (to(3), to(0));
    assert_eq!((arrived.len(), back.len(), out.len()), (1, 1, 2));
    let (_, h) = sluice_of(&arrived[0]);
    assert_eq!(h.signal, Some(SignalField { value: 500, hops: 2 }), "the path's minimum, written by both switches");
    assert_eq!(arrived[0].len(), sent.len(), "the field is written in place");
    let (fb, s) = sluice_of(&back[0]);
    assert_eq!(s.kind, Kind::Signal);
    assert_eq!((s.flow, s.seq, s.bytes, s.echo_ns), (1, 1, sw1, 4_242), "flow, value, switch, echoed send time");
    let (h0, h3) = (HostAddr::numbered(0), HostAddr::numbered(3));
    assert_eq!((fb.ip.src, fb.ip.dst), (h3.ip, h0.ip), "from the data packet's receiver to its sender");
    assert_eq!((fb.eth.dst, fb.eth.src), (h0.mac, h0.gateway_mac));
    let ports = fb.five_tuple();
    assert_eq!((ports.src_port, ports.dst_port), (5_201, 40_000));
    SluicePacket::parse(&back[0][42..fb.len()]).unwrap();
    let c = f.signal_counters().unwrap();
    assert_eq!((c.writes, c.feedback, c.no_field, c.no_feedback), (2, 1, 0, 0));
    assert_eq!(f.signal_value(sw1, 2), Some(500), "sw1's port toward sw0 runs at the bottleneck's rate");
}

#[test]
fn hooks_see_the_queue_found_at_enqueue_and_left_at_dequeue() {
    let (mut f, seen, sw0, sw1) = dumbbell();
    for _ in 0..3 {
        f.receive(0, 0, &data(0, 3, true, 1000));
    }
    let out = run(&mut f, 10_000_000);
    assert_eq!(out.iter().filter(|o| o.0 == 3).count(), 3);
    let seen = seen.lock().unwrap().clone();
    let at = |node: u32, enqueue: bool| -> Vec<(u64, Option<u64>)> {
        seen.iter().filter(|s| s.1 == node && s.0 == enqueue && s.4).map(|s| (s.3, s.5)).collect()
    };
    let wire = (data(0, 3, true, 1000).len() + WIRE_OVERHEAD as usize) as u64;
    // At the 500 Mbps port, the first packet goes at once, the second waits behind it with nothing
    // queued, the third finds the second; they leave behind the third, then nothing.
    let queues = |v: Vec<(u64, Option<u64>)>| v.into_iter().map(|s| s.0).collect::<Vec<_>>();
    assert_eq!(queues(at(sw0, true)), [0, 0, wire]);
    assert_eq!(queues(at(sw0, false)), [0, wire, 0]);
    assert!(at(sw0, true).iter().all(|s| s.1.is_none()), "no hop wrote before sw0");
    assert!(at(sw1, true).iter().all(|s| s.1 == Some(500)), "sw1 sees sw0's write");
    // Signal packets pass the hooks too, as packets other than data.
    assert!(seen.iter().any(|s| s.1 == sw1 && !s.4), "sw1 routed the signal packets back");
    assert_eq!(out.iter().filter(|o| o.0 == 0).count(), 3, "one signal packet per data packet");
}

#[test]
fn packets_without_a_field_are_counted_and_left_alone() {
    let (mut f, _, _, _) = dumbbell();
    let sent = data(0, 3, false, 800);
    f.receive(0, 0, &sent);
    let out = run(&mut f, 10_000_000);
    let arrived: Vec<&Vec<u8>> = out.iter().filter(|o| o.0 == 3).map(|o| &o.1).collect();
    assert_eq!(arrived.len(), 1);
    assert_eq!(sluice_of(arrived[0]).1.signal, None);
    assert_eq!(arrived[0][14..], sent[14..], "only the MAC addresses change");
    let c = f.signal_counters().unwrap();
    assert_eq!((c.writes, c.no_field, c.feedback), (0, 2, 1), "feedback needs no field");
}
