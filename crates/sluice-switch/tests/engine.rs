//! The forwarding engine on an explicit clock: shaping, delay, priority, tail drop, ECN marking, INT,
//! impairments and routing, each checked against the times and counts it must give exactly.

use sluice_core::{serialization_ps, PS_PER_NS, PS_PER_US};
use sluice_sim::config::{EcnConfig, EcnThresholds, LoadBalance, MarkAt, NonEct};
use sluice_switch::config::{IP_MTU, WIRE_OVERHEAD};
use sluice_switch::{Fabric, FabricConfig, HostAddr, ImpairAction, Impairment, Pick, Sampling, SwitchParams};
use sluice_topo::{build, TopologySpec};
use sluice_wire::eth::EthHeader;
use sluice_wire::frame::{self, Frame, L4};
use sluice_wire::ipv4::{Ecn, Ipv4Header};
use sluice_wire::sluice::{self as sl, Flags, Kind, SluiceHeader, SluicePacket};

const GBPS: u64 = 1_000_000_000;
const DELAY: u64 = 10 * PS_PER_US;

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

fn fabric(spec: TopologySpec, switch: SwitchParams, impairments: Vec<Impairment>) -> Fabric {
    let topology = build(&spec, std::path::Path::new(".")).unwrap();
    let routes = topology.routes();
    let hosts = (0..topology.num_hosts()).map(HostAddr::numbered).collect();
    Fabric::new(FabricConfig {
        topology,
        routes,
        hosts,
        switch,
        impairments,
        sampling: Sampling::default(),
        seed: 7,
        slots: 4096,
        signal: None,
    })
}

fn star(hosts: u32, switch: SwitchParams) -> Fabric {
    fabric(TopologySpec::Star { hosts, rate: GBPS, delay: DELAY }, switch, Vec::new())
}

/// A UDP frame of `len` bytes from host `src` to host `dst` (source port `sport`).
fn udp(src: u32, dst: u32, len: usize, ecn: Ecn, dscp: u8, sport: u16) -> Vec<u8> {
    let payload = vec![0xab; len - 42];
    build_frame(src, dst, ecn, dscp, sport, &payload)
}

fn build_frame(src: u32, dst: u32, ecn: Ecn, dscp: u8, sport: u16, payload: &[u8]) -> Vec<u8> {
    let (s, d) = (HostAddr::numbered(src), HostAddr::numbered(dst));
    let eth = EthHeader { dst: s.gateway_mac, src: s.mac, ethertype: 0 };
    let ip = Ipv4Header {
        header_len: 20,
        dscp,
        ecn,
        total_len: 0,
        id: 0,
        flags_fragment: 0x4000,
        ttl: 64,
        protocol: 0,
        src: s.ip,
        dst: d.ip,
    };
    let mut buf = vec![0u8; 2048];
    let n = frame::write_udp(&mut buf, &eth, &ip, (sport, 9000), payload).unwrap();
    buf.truncate(n);
    buf
}

/// Runs the fabric to `until_ns`, collecting (time ns, host, frame) of every delivery.
fn run(f: &mut Fabric, until_ns: u64) -> Vec<(u64, u32, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(t) = f.next_event_ns().filter(|&t| t <= until_ns) {
        f.advance(t, &mut |h, bytes| out.push((t, h, bytes.to_vec())));
    }
    f.advance(until_ns, &mut |h, bytes| out.push((until_ns, h, bytes.to_vec())));
    out
}

fn ser_ps(frame: usize) -> u64 {
    serialization_ps((frame as u32 + WIRE_OVERHEAD) as u64, GBPS)
}

#[test]
fn one_packet_takes_both_serialisations_and_both_delays() {
    let mut f = star(3, params());
    f.receive(0, 0, &udp(0, 2, 1000, Ecn::NotEct, 0, 1));
    let out = run(&mut f, 1_000_000);
    assert_eq!(out.len(), 1);
    let expected_ps = 2 * ser_ps(1000) + 2 * DELAY;
    assert_eq!(out[0].0, expected_ps.div_ceil(PS_PER_NS));
    assert_eq!(out[0].1, 2);
    let eth = EthHeader::parse(&out[0].2).unwrap();
    assert_eq!((eth.dst, eth.src), (HostAddr::numbered(2).mac, HostAddr::numbered(2).gateway_mac));
}

#[test]
fn a_burst_leaves_at_exactly_the_link_rate() {
    let mut f = star(3, params());
    for i in 0..500 {
        f.receive(0, 0, &udp(0, 2, 1500, Ecn::NotEct, 0, i));
    }
    let out = run(&mut f, 100_000_000);
    assert_eq!(out.len(), 500);
    let gaps: Vec<u64> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let ser_ns = ser_ps(1500) as f64 / PS_PER_NS as f64;
    assert!(gaps.iter().all(|&g| (g as f64 - ser_ns).abs() <= 1.0), "gaps {:?}", &gaps[..5]);
    let span_ns = (out[499].0 - out[0].0) as f64;
    let rate = 499.0 * (1500 + WIRE_OVERHEAD) as f64 * 8.0 / (span_ns * 1e-9);
    assert!((rate / GBPS as f64 - 1.0).abs() < 1e-3, "rate {rate}");
    let host_link = f.port(f.config().topology.hosts[0], 0);
    assert_eq!(host_link.stats.tx_bytes, 500 * (1500 + WIRE_OVERHEAD as u64));
    assert_eq!(f.packets_held(), 0);
}

#[test]
fn strict_priority_serves_the_higher_class_first() {
    let mut f = star(3, params());
    for i in 0..10 {
        f.receive(0, 0, &udp(0, 2, 1000, Ecn::NotEct, 0, i));
    }
    // DSCP CS5 (class 5) goes to queue 2, ahead of class 0's data queue 3.
    f.receive(0, 0, &udp(0, 2, 1000, Ecn::NotEct, 40, 99));
    let out = run(&mut f, 10_000_000);
    let order: Vec<u16> = out.iter().map(|o| Frame::parse(&o.2).unwrap().five_tuple().src_port).collect();
    assert_eq!(order[0], 0, "the first packet was already on the wire");
    assert_eq!(order[1], 99);
    assert_eq!(order.len(), 11);
}

/// Hosts 0 and 1 send `n` frames each at their line rate to host 2: the switch port to host 2 gets twice
/// what it can send.
fn overload(f: &mut Fabric, n: u16, len: usize, ecn: Ecn) -> Vec<(u64, u32, Vec<u8>)> {
    let gap_ns = ser_ps(len) / PS_PER_NS + 1;
    let mut out = Vec::new();
    for i in 0..n {
        let t = i as u64 * gap_ns;
        f.advance(t, &mut |h, b| out.push((t, h, b.to_vec())));
        f.receive(t, 0, &udp(0, 2, len, ecn, 0, i));
        f.receive(t, 1, &udp(1, 2, len, ecn, 0, 1000 + i));
    }
    out.extend(run(f, 1_000_000_000));
    out
}

#[test]
fn tail_drop_holds_the_queue_within_the_buffer() {
    let buffer = 30_000;
    let mut f = star(3, SwitchParams { buffer, ..params() });
    let out = overload(&mut f, 200, 1500, Ecn::NotEct);
    let sw = f.config().topology.nodes.iter().position(|n| n.name == "sw0").unwrap() as u32;
    let port = f.port(sw, 2);
    assert!(port.stats.drops > 0);
    assert_eq!(out.len() as u64 + port.stats.drops, 400);
    assert!(port.stats.max_queue <= buffer, "queue {} above the buffer", port.stats.max_queue);
    // Dynamic threshold with alpha 1 on one queue: admitted while q + wire <= free = buffer - q.
    assert!(port.stats.max_queue >= buffer / 2 - 2 * 1524, "queue {}", port.stats.max_queue);
    let (_, b) = f.buffers().find(|(n, _)| *n == sw).unwrap();
    assert!(b.max <= buffer);
    assert_eq!(f.packets_held(), 0);
}

fn marks(out: &[(u64, u32, Vec<u8>)]) -> Vec<bool> {
    out.iter().map(|o| Frame::parse(&o.2).expect("checksum still valid").ip.ecn == Ecn::Ce).collect()
}

fn ecn(kmin: u64, kmax: u64, pmax: f64, mark_at: MarkAt) -> EcnConfig {
    EcnConfig {
        enabled: true,
        mark_at,
        thresholds: vec![(GBPS, EcnThresholds { kmin, kmax, pmax })],
        non_ect: NonEct::Pass,
    }
}

#[test]
fn step_marking_starts_when_the_queue_passes_k() {
    let k = 15_000;
    let mut f = star(3, SwitchParams { ecn: ecn(k, k, 1.0, MarkAt::Dequeue), ..params() });
    let out = overload(&mut f, 100, 1500, Ecn::Ect0);
    let m = marks(&out);
    let first = m.iter().position(|&x| x).expect("some packet is marked");
    let last = m.iter().rposition(|&x| x).unwrap();
    assert!(m[first..=last].iter().all(|&x| x), "while the queue stays above K every packet leaving is marked");
    // The queue grows by one frame per frame sent; it passes K = 15 KB after about ten frames, and once
    // the senders stop it drains below K with about ten frames left.
    let wire = 1524;
    let frames_in_k = (k / wire) as usize;
    assert!(frames_in_k <= first && first <= frames_in_k + 3, "first mark at {first}");
    let unmarked_tail = m.len() - 1 - last;
    assert!(frames_in_k - 1 <= unmarked_tail && unmarked_tail <= frames_in_k + 1, "tail {unmarked_tail}");
    let sw = f.config().topology.nodes.iter().position(|n| n.name == "sw0").unwrap() as u32;
    assert_eq!(f.port(sw, 2).stats.ecn_marks as usize, m.iter().filter(|&&x| x).count());
    // Not-ECT packets are never marked.
    let mut g = star(3, SwitchParams { ecn: ecn(k, k, 1.0, MarkAt::Dequeue), ..params() });
    assert!(!marks(&overload(&mut g, 100, 1500, Ecn::NotEct)).iter().any(|&x| x));
}

#[test]
fn enqueue_marking_uses_the_queue_found_on_arrival() {
    let k = 15_000;
    let mut f = star(3, SwitchParams { ecn: ecn(k, k, 1.0, MarkAt::Enqueue), ..params() });
    let m = marks(&overload(&mut f, 100, 1500, Ecn::Ect1));
    let first = m.iter().position(|&x| x).expect("some packet is marked");
    let last = m.iter().rposition(|&x| x).unwrap();
    assert!(m[first..=last].iter().all(|&x| x));
    // The queue passes K = 15 KB (about ten frames) after about ten departures; the first packet marked
    // on arrival then leaves behind the ten frames ahead of it, about twenty departures in.
    assert!((19..=23).contains(&first), "first mark at {first}");
}

#[test]
fn red_marks_between_kmin_and_kmax_reproducibly() {
    let run_red = || {
        let mut f = star(3, SwitchParams { ecn: ecn(6_000, 600_000, 0.2, MarkAt::Dequeue), ..params() });
        marks(&overload(&mut f, 150, 1500, Ecn::Ect0))
    };
    let a = run_red();
    let b = run_red();
    assert_eq!(a, b, "the same seed marks the same packets");
    let first = a.iter().position(|&x| x).expect("some packet is marked");
    assert!(first >= 3, "nothing is marked below kmin");
    // Below kmax the probability stays under pmax = 0.2 (the queue reaches about 230 KB here).
    let fraction = a.iter().filter(|&&x| x).count() as f64 / a.len() as f64;
    assert!(fraction > 0.01 && fraction < 0.2, "fraction {fraction}");
}

fn sluice_frame(src: u32, dst: u32, flags: u16, payload: usize) -> Vec<u8> {
    let header = SluiceHeader { flags: Flags(flags), ..SluiceHeader::new(Kind::Data, 1) };
    let mut inner = vec![0u8; 2048];
    let n = sl::encode(&header, &[], &vec![1u8; payload], &mut inner).unwrap();
    build_frame(src, dst, Ecn::Ect0, 0, 5, &inner[..n])
}

fn hops(frame: &[u8]) -> Vec<sl::IntRecord> {
    let f = Frame::parse(frame).unwrap();
    let L4::Udp { .. } = f.l4 else { panic!("not UDP") };
    SluicePacket::parse(&frame[42..f.len()]).unwrap().hops().collect()
}

#[test]
fn int_records_are_appended_per_switch_hop() {
    let spec = TopologySpec::Dumbbell { left: 2, right: 2, host_rate: GBPS, bottleneck_rate: GBPS / 2, delay: DELAY };
    let mut f = fabric(spec, SwitchParams { int: true, ..params() }, Vec::new());
    f.receive(0, 0, &sluice_frame(0, 3, Flags::INT_REQUEST, 500));
    f.receive(0, 0, &sluice_frame(0, 3, 0, 500));
    let out = run(&mut f, 10_000_000);
    assert_eq!(out.len(), 2);
    let stamped = hops(&out[0].2);
    assert_eq!(stamped.len(), 2, "two switches on the path");
    assert_eq!(stamped[0].rate, GBPS / 2, "sw0's egress is the bottleneck");
    assert_eq!(stamped[1].rate, GBPS);
    assert!(stamped[1].ts_ns > stamped[0].ts_ns + DELAY / PS_PER_NS);
    assert_eq!(stamped[0].tx_bytes, 0, "the first packet through the port");
    assert!(hops(&out[1].2).is_empty(), "no record without the INT request flag");
    // A frame at the MTU has no room: counted, forwarded unchanged.
    let full = sluice_frame(0, 3, Flags::INT_REQUEST, IP_MTU as usize - 28 - sl::HEADER_LEN);
    f.receive(10_000_000, 0, &full);
    let out = run(&mut f, 20_000_000);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].2.len(), full.len());
    let no_room: u64 = f.ports().iter().map(|p| p.stats.int_no_room).sum();
    assert_eq!(no_room, 2);
}

#[test]
fn impairments_drop_and_mark_the_chosen_packets_of_a_flow() {
    let flow = Frame::parse(&udp(0, 2, 200, Ecn::Ect0, 0, 7)).unwrap().five_tuple();
    let rules = vec![
        Impairment { flow, sluice_flow: None, action: ImpairAction::Drop, pick: Pick::Packets(vec![3, 5]) },
        Impairment {
            flow: Frame::parse(&udp(1, 2, 200, Ecn::Ect0, 0, 8)).unwrap().five_tuple(),
            sluice_flow: None,
            action: ImpairAction::Mark,
            pick: Pick::Packets(vec![0, 1]),
        },
    ];
    let mut f = fabric(TopologySpec::Star { hosts: 3, rate: GBPS, delay: DELAY }, params(), rules);
    for _ in 0..8 {
        f.receive(0, 0, &udp(0, 2, 200, Ecn::Ect0, 0, 7));
        f.receive(0, 1, &udp(1, 2, 200, Ecn::Ect0, 0, 8));
        f.receive(0, 1, &udp(1, 2, 200, Ecn::Ect0, 0, 9));
    }
    let out = run(&mut f, 100_000_000);
    let of = |port: u16| out.iter().filter(move |o| Frame::parse(&o.2).unwrap().five_tuple().src_port == port);
    assert_eq!(of(7).count(), 6, "packets 3 and 5 of the flow are dropped");
    let marked: Vec<bool> = of(8).map(|o| Frame::parse(&o.2).unwrap().ip.ecn == Ecn::Ce).collect();
    assert_eq!(marked, [true, true, false, false, false, false, false, false]);
    assert!(of(9).all(|o| Frame::parse(&o.2).unwrap().ip.ecn == Ecn::Ect0), "other flows pass");
    assert_eq!((f.counters().impaired_drops, f.counters().impaired_marks), (2, 2));
}

/// A sluice data frame of flow `flow` from host `src` to host `dst`, ECN-capable unless `ecn` says not.
fn sluice_flow_frame(src: u32, dst: u32, flow: u32, ecn: Ecn) -> Vec<u8> {
    let header = SluiceHeader::new(Kind::Data, flow);
    let mut inner = vec![0u8; 2048];
    let n = sl::encode(&header, &[], &[1u8; 200], &mut inner).unwrap();
    build_frame(src, dst, ecn, 0, 5, &inner[..n])
}

#[test]
fn rules_on_one_sluice_flow_each_count_its_packets_and_the_first_to_pick_decides() {
    let rule = |text: &str| text.parse::<Impairment>().unwrap();
    let rules = vec![
        rule("drop sluice 10.77.0.1 10.77.0.3 flow=4 packets=2"),
        rule("mark sluice 10.77.0.1 10.77.0.3 flow=4 packets=2,3,4"),
        rule("drop sluice 10.77.0.1 10.77.0.3 flow=4 packets=6"),
    ];
    let mut f = fabric(TopologySpec::Star { hosts: 3, rate: GBPS, delay: DELAY }, params(), rules);
    // Flows 4 and 5 share one socket (one 5-tuple); only the id tells them apart.
    for _ in 0..8 {
        f.receive(0, 0, &sluice_flow_frame(0, 2, 4, Ecn::Ect0));
        f.receive(0, 0, &sluice_flow_frame(0, 2, 5, Ecn::Ect0));
    }
    let out = run(&mut f, 100_000_000);
    let of = |flow: u32| {
        out.iter()
            .filter(move |o| SluiceHeader::parse(&o.2[42..]).unwrap().flow == flow)
            .map(|o| Frame::parse(&o.2).unwrap().ip.ecn == Ecn::Ce)
    };
    // Packet 2: the drop comes first; 3 and 4 marked; 6 dropped by the third rule, which counted 2 too.
    assert_eq!(of(4).collect::<Vec<_>>(), [false, false, true, true, false, false]);
    assert!(of(5).all(|ce| !ce) && of(5).count() == 8, "the socket's other flow passes");
    let did = f.impairment_stats();
    assert_eq!(did.iter().map(|s| (s.dropped, s.marked)).collect::<Vec<_>>(), [(1, 0), (0, 2), (1, 0)]);
    // A mark leaves a packet that is not ECN-capable alone.
    let rules = vec![rule("mark sluice 10.77.0.1 10.77.0.3 flow=4 packets=0")];
    let mut f = fabric(TopologySpec::Star { hosts: 3, rate: GBPS, delay: DELAY }, params(), rules);
    f.receive(0, 0, &sluice_flow_frame(0, 2, 4, Ecn::NotEct));
    assert_eq!(run(&mut f, 100_000_000).len(), 1);
    assert_eq!(f.impairment_stats()[0].marked, 0);
}

#[test]
fn a_fraction_impairment_is_seeded() {
    let flow = Frame::parse(&udp(0, 2, 200, Ecn::Ect0, 0, 7)).unwrap().five_tuple();
    let count = || {
        let rule = Impairment { flow, sluice_flow: None, action: ImpairAction::Drop, pick: Pick::Fraction(0.25) };
        let mut f = fabric(TopologySpec::Star { hosts: 3, rate: GBPS, delay: DELAY }, params(), vec![rule]);
        for _ in 0..400 {
            f.receive(0, 0, &udp(0, 2, 200, Ecn::Ect0, 0, 7));
        }
        run(&mut f, 1_000_000_000).len()
    };
    let delivered = count();
    assert_eq!(delivered, count());
    assert!((260..=340).contains(&delivered), "{delivered} of 400 delivered with a quarter dropped");
}

#[test]
fn a_dumbbell_routes_across_the_bottleneck_only_when_it_must() {
    let spec = TopologySpec::Dumbbell { left: 2, right: 2, host_rate: GBPS, bottleneck_rate: GBPS, delay: DELAY };
    let mut f = fabric(spec, params(), Vec::new());
    f.receive(0, 0, &udp(0, 1, 300, Ecn::NotEct, 0, 1));
    let out = run(&mut f, 10_000_000);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), [1]);
    let topo = &f.config().topology;
    let sw0 = topo.nodes.iter().position(|n| n.name == "sw0").unwrap() as u32;
    let bottleneck = topo.ports[sw0 as usize].len() as u16 - 1;
    assert_eq!(f.port(sw0, bottleneck).stats.tx_packets, 0);
    f.receive(10_000_000, 1, &udp(1, 3, 300, Ecn::NotEct, 0, 2));
    let out = run(&mut f, 20_000_000);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), [3]);
    assert_eq!(f.port(sw0, bottleneck).stats.tx_packets, 1);
    // Three links of 10 us and three serialisations.
    assert_eq!(out[0].0, 10_000_000 + (3 * ser_ps(300) + 3 * DELAY).div_ceil(PS_PER_NS));
}

#[test]
fn frames_to_unknown_hosts_and_non_ip_frames_are_counted_and_dropped() {
    let mut f = star(3, params());
    let mut arp = udp(0, 2, 100, Ecn::NotEct, 0, 1);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    f.receive(0, 0, &arp);
    let mut stray = udp(0, 2, 100, Ecn::NotEct, 0, 1);
    stray[30..34].copy_from_slice(&[192, 0, 2, 1]);
    f.receive(0, 0, &stray);
    // A host index the fabric does not have (a caller's mistake) is counted too, not a panic.
    f.receive(0, 99, &udp(0, 2, 100, Ecn::NotEct, 0, 1));
    assert!(run(&mut f, 1_000_000).is_empty());
    assert_eq!(f.counters().unroutable, 3);
    assert_eq!(f.packets_held(), 0);
}

#[test]
fn packet_spray_and_flow_hash_use_every_spine() {
    let spec = TopologySpec::LeafSpine {
        hosts_per_tor: 2,
        tors: 2,
        spines: 2,
        host_rate: GBPS,
        uplink_rate: None,
        delay: DELAY,
    };
    let mut f = fabric(spec, params(), Vec::new());
    for port in 0..64 {
        f.receive(0, 0, &udp(0, 3, 200, Ecn::NotEct, 0, port));
    }
    let out = run(&mut f, 100_000_000);
    assert_eq!(out.len(), 64);
    let topo = &f.config().topology;
    let spines: Vec<u64> = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.tier == 2)
        .map(|(i, _)| f.ports().iter().filter(|p| p.node == i as u32).map(|p| p.stats.tx_packets).sum())
        .collect();
    assert_eq!(spines.len(), 2);
    assert!(spines.iter().all(|&n| n > 10), "ECMP spreads 64 flows over both spines: {spines:?}");
}

fn token_frame(src: u32, dst: u32, ecn: Ecn) -> Vec<u8> {
    let header = SluiceHeader { bytes: 1416, ..SluiceHeader::new(Kind::Token, 1) };
    let mut inner = vec![0u8; 128];
    let n = sl::encode(&header, &[], &[], &mut inner).unwrap();
    build_frame(src, dst, ecn, 0, 5, &inner[..n])
}

#[test]
fn token_limiters_space_tokens_and_drop_what_overflows() {
    use sluice_switch::tokens::TokenLimits;
    let limits = TokenLimits { capacity: 2, token_wire: 122, data_wire: 1538, ecn: None };
    let mut f = star(3, SwitchParams { token_limiter: Some(limits), ..params() });
    // Five tokens at once from host 0 to host 2: one leaves, two wait, two are dropped.
    for _ in 0..5 {
        f.receive(0, 0, &token_frame(0, 2, Ecn::NotEct));
    }
    // Data is not limited.
    f.receive(0, 1, &udp(1, 2, 1000, Ecn::NotEct, 0, 9));
    let out = run(&mut f, 10_000_000);
    let tokens: Vec<u64> = out.iter().filter(|(_, _, b)| b.len() < 200).map(|(t, _, _)| *t).collect();
    assert_eq!(tokens.len(), 3, "two of five dropped at the full token queue");
    assert_eq!(f.token_counts(), (2, 0));
    // The limiter lets one token go per gap; the port may hold one behind data for a while.
    let gap = limits.gap(GBPS) / PS_PER_NS;
    assert!(tokens[2] - tokens[0] >= 2 * gap, "tokens at {tokens:?}, the gap is {gap} ns");
    assert_eq!(out.iter().filter(|(_, _, b)| b.len() >= 200).count(), 1, "the data frame passed");
}

#[test]
fn token_ecn_marks_tokens_that_find_a_long_token_queue() {
    use sluice_switch::tokens::TokenLimits;
    let limits = TokenLimits { capacity: 8, token_wire: 122, data_wire: 1538, ecn: Some((0, 1, 1.0)) };
    let mut f = star(3, SwitchParams { token_limiter: Some(limits), ..params() });
    for _ in 0..4 {
        f.receive(0, 0, &token_frame(0, 2, Ecn::Ect0));
    }
    let out = run(&mut f, 10_000_000);
    let ce: Vec<bool> = marks(&out);
    assert_eq!(ce, [false, false, true, true], "marked once a token waits ahead of them");
    assert_eq!(f.token_counts(), (0, 2));
    // The limiter counts its marks; the port's ECN marks are the data queue's, as in the simulator.
    let sw = f.config().topology.nodes.iter().position(|n| n.name == "sw0").unwrap() as u32;
    assert_eq!(f.port(sw, 2).stats.ecn_marks, 0);
}
