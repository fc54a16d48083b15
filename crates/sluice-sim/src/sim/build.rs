//! Building a run: ports, switches and hosts from the topology, flows with their path figures and
//! their algorithms, the token transport's state, the host models, and the first events.

use std::sync::Arc;

use sluice_cc::token::TokenTransport;
use sluice_core::{serialization_ps, Time};
use sluice_topo::{NodeKind, Routes, Topology};
use sluice_workload::{FlowSpec, LoopIds};

use super::arrivals::Arrivals;
use super::closed_loop::{Loops, SIZE_SAMPLE};
use super::{FlowAlgorithm, NodeRef, Observe, SimInput, Simulation};
use crate::config::{EcnThresholds, LinkConfig, NonEct, RdEnv, SwitchConfig};
use crate::engine::partition::Partition;
use crate::engine::trace::PacketTracer;
use crate::engine::{Core, EventTies, FlowSenders};
use crate::host::Host;
use crate::net::fault::PortFaults;
use crate::net::port::Port;
use crate::net::signal::SignalPorts;
use crate::net::switch::Switch;
use crate::net::tokens::TokenSwitch;
use crate::net::Fabric;
use crate::transport::flow::{Flow, FlowTrace};
use crate::transport::table::FlowTable;
use crate::transport::token::TokenHost;

impl Simulation {
    /// Builds the network; the workload's flows arrive as the run reaches their starts.
    pub fn new(input: SimInput) -> Simulation {
        Simulation::build(input, None)
    }

    /// Builds the network, or with `partition` one part of it: the part's own switches get their ports
    /// and the others none, and the other parts' hosts a one-queue NIC, since a part never handles
    /// another's nodes. So a run on N threads holds the network's ports about once, not N times.
    pub(super) fn build(input: SimInput, partition: Option<Box<Partition>>) -> Simulation {
        let SimInput {
            topology,
            routes,
            link,
            mut switch,
            host,
            flows,
            factory,
            needs,
            cnp_interval,
            seed,
            stop,
            observe,
            plane,
            faults,
            mix,
            group_algorithm,
            row_algorithm,
            closed_loops,
        } = input;
        let mut algorithms = vec![FlowAlgorithm { factory: factory.clone(), needs, cnp_interval }];
        algorithms.extend(mix);
        // An algorithm that needs Bolt's switches gets them, whoever built the settings.
        switch.bolt.enabled |= algorithms.iter().any(|a| a.needs.bolt);
        let token_transport = factory.token_transport();
        assert!(
            algorithms.len() == 1 || algorithms.iter().all(|a| a.factory.token_transport().is_none()),
            "token algorithms do not mix with others"
        );
        if token_transport.as_ref().is_some_and(|t| t.spray) {
            switch.load_balance = crate::config::LoadBalance::PacketSpray;
        }
        let mut core = Core::new(switch.int);
        core.partition = partition;
        // An algorithm with a switch signal has its switch side at every egress port.
        let signals: Vec<_> = algorithms.iter().filter_map(|a| a.factory.switch_signal()).collect();
        assert!(signals.len() <= 1, "algorithms with switch signals do not mix");
        let signal = signals.into_iter().next();
        if signal.is_some() {
            core.arena.enable_signal();
        }
        // ACKs carry their receiving host's samples when hosts take them and an algorithm reads them.
        if host.bus.enabled && algorithms.iter().any(|a| a.needs.host_signal) {
            core.arena.enable_host_echo();
        }
        let queues = switch.queues.max(switch.control_queue + 1).max(switch.data_queue + 1);
        let make_port = |p: &sluice_topo::Port, queues: u8| {
            Port::new(p.rate, p.delay, p.peer, p.peer_port, queues, ecn_for(&switch, p.rate))
        };
        let owns = |node: usize| core.partition.as_deref().is_none_or(|p| p.owns(node as u32));
        let mut node_ref = Vec::with_capacity(topology.nodes.len());
        let mut switches = Vec::new();
        let mut hosts = Vec::new();
        let fabric = Fabric { config: &switch, link: &link, routes: &routes, rd: None };
        for (id, node) in topology.nodes.iter().enumerate() {
            match node.kind {
                NodeKind::Host => {
                    node_ref.push(NodeRef::Host(hosts.len() as u32));
                    let p = topology.ports[id].first().expect("a host has one port");
                    // Another part's host keeps its NIC's rate and link, which flows it receives read.
                    let nic = make_port(p, if owns(id) { queues } else { 1 });
                    hosts.push(Host::new(id as u32, nic, seed));
                }
                NodeKind::Switch => {
                    node_ref.push(NodeRef::Switch(switches.len() as u32));
                    let ports: Vec<Port> = if owns(id) {
                        topology.ports[id].iter().map(|p| make_port(p, queues)).collect()
                    } else {
                        Vec::new()
                    };
                    let mut sw = Switch::new(id as u32, ports, &fabric, seed);
                    // A fault acts where its switch runs: another part's switch carries no packets here.
                    if owns(id) {
                        sw.set_faults(PortFaults::for_switch(id as u32, &faults, seed));
                    }
                    sw.set_signal(signal.as_deref().map(|s| Box::new(SignalPorts::new(s, &sw.ports))));
                    switches.push(sw);
                }
            }
        }
        for h in &mut hosts {
            h.enable_models(&host, &link, factory.as_ref());
        }
        // Bolt's notifications, NDP's return-to-sender and signal feedback need each flow's sender at the
        // switches.
        let generated = u32::try_from(flows.len()).expect("flow ids fit in 32 bits (the workload bounds them)");
        let slot_hosts: Vec<(u32, u32)> =
            closed_loops.iter().flat_map(|c| c.slots.iter().map(|s| (s.src, s.dst))).collect();
        let loop_ids = LoopIds::for_loops(generated, &closed_loops);
        core.arena.set_loop_ids(loop_ids);
        let trimming = token_transport.as_ref().is_some_and(|t| t.trimming);
        if switch.bolt.enabled || trimming || signal.is_some() {
            let slot_src = slot_hosts.iter().map(|&(src, _)| src).collect();
            core.flow_src = FlowSenders::new(loop_ids, flows.iter().map(|f| f.src).collect(), slot_src);
        }
        if let Some(config) = &observe.packet_trace {
            let ports: Vec<usize> = topology.ports.iter().map(Vec::len).collect();
            core.packet_trace = Some(Box::new(PacketTracer::new(config, &ports, flows.len())));
        }
        let peers: Vec<Vec<u32>> = topology.ports.iter().map(|ports| ports.iter().map(|p| p.peer).collect()).collect();
        let host_node = hosts.iter().map(|h| h.node).collect();
        *core.queue.ties_mut() = EventTies::new(&peers, host_node, loop_ids, &slot_hosts);
        let retired = super::retire::Retired::new(&observe.throughput_flows);
        let large = topology.ports.iter().map(Vec::len).sum::<usize>() >= super::run::LARGE_NETWORK_PORTS;
        let settings = RunSettings { topology, routes, link, observe, algorithms, group_algorithm, row_algorithm };
        let rd = token_transport.map(|t| {
            // Homa's cutoffs and overcommitment follow every flow's size, and a sample of what closed loops
            // will draw; the token pacer, the longest base round trip.
            let mut sizes: Vec<u64> = flows.iter().filter(|f| f.stop.is_none()).map(|f| f.size.max(1)).collect();
            sizes.extend(closed_loops.iter().flat_map(|c| c.size_sample(seed, SIZE_SAMPLE)));
            let base_rtt = flows.iter().map(|f| settings.path(&f).base_rtt).max().unwrap_or(0);
            setup_tokens(t, &settings.link, base_rtt, &sizes, &mut hosts, &mut switches, seed)
        });
        // With every feature set up, switches that none acts at take their hops without testing for them.
        let plain_run = !switch.int
            && switch.ecn.non_ect != NonEct::Drop
            && core.packet_trace.is_none()
            && core.partition.is_none();
        for s in &mut switches {
            s.settle_plain(plain_run);
        }
        let loops = Loops::new(closed_loops, loop_ids);
        let first_flows = loops.first_flows();
        let arrivals = Arrivals::new(&flows);
        arrivals.schedule_next(&mut core);
        let mut sim = Simulation {
            core,
            switches,
            hosts,
            flows: FlowTable::new(loop_ids),
            arrivals,
            first_flows,
            node_ref,
            settings,
            switch_config: switch,
            host_config: host,
            seed,
            stop,
            plane,
            samples: Default::default(),
            rd,
            fault_count: faults.len(),
            loops,
            retired,
            part: None,
            large,
        };
        sim.start_sampling();
        sim
    }
}

/// ECN thresholds of a port at `rate`.
fn ecn_for(switch: &SwitchConfig, rate: sluice_core::Rate) -> EcnThresholds {
    if switch.ecn.enabled {
        switch.ecn.for_rate(rate)
    } else {
        EcnThresholds { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 }
    }
}

/// The run's fixed settings, which its handlers read and its flows are made from: the network and its
/// routes, packet sizes, what to record, the algorithms, and which algorithm each workload entry's
/// flows, and each algorithm single flows name, run.
pub(super) struct RunSettings {
    pub(super) topology: Arc<Topology>,
    pub(super) routes: Arc<Routes>,
    pub(super) link: LinkConfig,
    pub(super) observe: Observe,
    /// The algorithms flows run: the run's first (whose factory also sets up a token transport and the
    /// host models), then [`super::SimInput::mix`].
    pub(super) algorithms: Vec<FlowAlgorithm>,
    /// Per workload entry: the index in `algorithms` of the algorithm its flows run.
    pub(super) group_algorithm: Vec<u8>,
    /// Per algorithm named by single flows: its index in `algorithms`.
    pub(super) row_algorithm: Vec<u8>,
}

impl RunSettings {
    /// The path figures of flow `d`.
    pub(super) fn path(&self, d: &FlowSpec) -> PathFigures {
        let link = &self.link;
        let packet_wire = (link.mtu + link.header_bytes) as u64;
        let path = self.topology.path_profile(&self.routes, d.src, d.dst);
        let per_hop: Time = path.link_rates.iter().map(|r| serialization_ps(packet_wire, *r)).sum();
        let ack_per_hop: Time = path.link_rates.iter().map(|r| serialization_ps(link.control_bytes as u64, *r)).sum();
        let ideal_base = 2 * path.prop_delay + per_hop;
        PathFigures { ideal_base, base_rtt: ideal_base + ack_per_hop, hops: path.switches, bottleneck: path.bottleneck }
    }

    /// The state of flow `id` described by `d`, with its path figures and its algorithm's settings.
    pub(super) fn make(&self, id: u32, d: &FlowSpec) -> Flow {
        let link = &self.link;
        let size = if d.stop.is_some() { u64::MAX / 4 } else { d.size.max(1) };
        let mut f = Flow::new(d.src, d.dst, size, d.start, d.stop, d.group);
        let path = self.path(d);
        f.base_rtt = path.base_rtt;
        f.hops = path.hops;
        // A long-lived flow has no size and so no ideal completion time.
        if d.stop.is_none() {
            let packets = d.size.max(1).div_ceil(link.mtu as u64);
            let wire_bytes = d.size.max(1).saturating_add(packets.saturating_mul(link.header_bytes as u64));
            f.ideal_fct = sluice_results::ideal_fct(path.ideal_base, wire_bytes, path.bottleneck);
        }
        if self.observe.trace_flows.contains(&id) {
            let recorder = FlowTrace::new(self.observe.trace_interval);
            let max_rows = self.observe.trace_max_rows;
            f.trace = Some(Box::new(if max_rows > 0 { recorder.with_max_rows(max_rows) } else { recorder }));
        }
        let index = match d.algorithm {
            0 => self.group_algorithm.get(f.group as usize).copied().unwrap_or(0),
            k => self.row_algorithm[k as usize - 1],
        };
        let algorithm = &self.algorithms[index as usize];
        f.algorithm = index;
        f.ect = algorithm.needs.ecn || algorithm.needs.cnp;
        f.cnp = algorithm.needs.cnp;
        f.cnp_interval = algorithm.cnp_interval;
        f
    }
}

/// A flow's path figures.
pub(super) struct PathFigures {
    /// Twice the propagation delay plus one full packet's serialization at every hop: the ideal
    /// completion time's base (HPCC artifact definition).
    pub(super) ideal_base: Time,
    /// The idle round trip: `ideal_base` and an acknowledgment's serialization at every hop.
    pub(super) base_rtt: Time,
    /// Switches on the path.
    pub(super) hops: u32,
    /// The slowest link's rate.
    pub(super) bottleneck: sluice_core::Rate,
}

/// Builds the run's transport settings and the per-host and per-switch state.
/// `sizes` are the run's flow sizes (with a sample of those closed loops will draw), which Homa's
/// cutoffs and overcommitment follow; `base_rtt` is the longest base round trip of the run's flows.
fn setup_tokens(
    transport: TokenTransport,
    link: &LinkConfig,
    base_rtt: Time,
    sizes: &[u64],
    hosts: &mut [Host],
    switches: &mut [Switch],
    seed: u64,
) -> RdEnv {
    let line_rate = hosts.first().map_or(0, |h| h.nic.rate);
    let env = RdEnv::new(transport, link.mtu, sizes, line_rate, base_rtt);
    for h in hosts.iter_mut() {
        h.tokens = Some(Box::new(TokenHost::new(&env, h.node, seed)));
    }
    let t = &env.transport;
    if t.token_limiter || t.trimming || t.aeolus {
        for s in switches.iter_mut() {
            s.tokens = Some(Box::new(TokenSwitch::new(s.node, s.ports.len(), seed)));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FaultAction, FaultConfig, FaultKind};
    use crate::engine::trace::PacketTraceConfig;
    use crate::sim::test_inputs::fat_tree_input;

    /// The run loop takes the switch hop that tests for no optional feature only when none acts at any
    /// switch; each feature, run-wide or at one switch, turns it off, and a switch with a fault is not
    /// plain while the others are (a part of a partitioned run: `parallel.rs`).
    #[test]
    fn switch_hops_are_plain_only_where_no_feature_acts() {
        assert!(Simulation::new(fat_tree_input()).plain(), "a run with no optional feature");
        type Feature = (&'static str, fn(&mut SimInput));
        let features: [Feature; 4] = [
            ("INT", |i| i.switch.int = true),
            ("early drop of non-ECT packets", |i| i.switch.ecn.non_ect = NonEct::Drop),
            ("Bolt's switches", |i| i.switch.bolt.enabled = true),
            ("a packet trace", |i| {
                i.observe.packet_trace = Some(PacketTraceConfig { flows: None, ports: None, max_rows: 10 })
            }),
        ];
        for (name, set) in features {
            let mut input = fat_tree_input();
            set(&mut input);
            let sim = Simulation::new(input);
            assert!(!sim.plain(), "a run with {name}");
            assert!(sim.switches.iter().all(|s| !s.is_plain()), "a switch with {name}");
        }
        let mut input = fat_tree_input();
        let faulty = input.topology.nodes.iter().position(|n| n.kind == NodeKind::Switch).expect("a switch") as u32;
        let kind = FaultKind::Packets { flow: 0, packets: vec![0], action: FaultAction::Drop };
        input.faults.push(FaultConfig { node: faulty, port: 0, kind });
        let sim = Simulation::new(input);
        assert!(!sim.plain(), "a run with a fault");
        for s in &sim.switches {
            assert_eq!(s.is_plain(), s.node != faulty, "switch {} (the fault is at {faulty})", s.node);
        }
    }
}
