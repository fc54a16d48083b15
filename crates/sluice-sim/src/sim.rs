//! The simulation: builds switches, hosts and flows from a topology and settings, runs the event loop,
//! and reports records.

use std::sync::Arc;

use sluice_cc::token::TokenTransport;
use sluice_cc::{CongestionControl, Factory, FlowInfo, Needs};
use sluice_core::{serialization_ps, Time};
use sluice_plane::{PlaneConfig, PlaneCounters};
use sluice_results::{BytesKind, FlowRecord, PortRecord, RunInfo, SwitchRecord, ThroughputSeries};
use sluice_topo::{NodeKind, Routes, Topology};
use sluice_workload::FlowSpec;

use crate::config::{EcnThresholds, FaultConfig, HostConfig, LinkConfig, RdEnv, SwitchConfig};
use crate::engine::queue::EventQueue;
use crate::engine::trace::{PacketTraceConfig, PacketTracer};
use crate::engine::{Core, Event, HostModelEvent, PlaneEvent, TokenEvent};
use crate::host::Host;
use crate::net::fault::PortFaults;
use crate::net::port::Port;
use crate::net::switch::Switch;
use crate::net::tokens::TokenSwitch;
use crate::net::Fabric;
use crate::stats::{Counters, FaultStats};
use crate::transport::flow::{Flow, FlowTrace};
use crate::transport::token::TokenHost;
use crate::transport::HostEnv;

/// What to record beyond per-flow completion times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observe {
    /// Flows whose CC variables are traced.
    pub trace_flows: Vec<u32>,
    /// Minimum spacing of trace rows per flow (0 = every change).
    pub trace_interval: Time,
    /// Flows whose delivered bytes are sampled.
    pub throughput_flows: Vec<u32>,
    /// Ports (node, port) whose transmitted bytes are sampled.
    pub throughput_ports: Vec<(u32, u16)>,
    /// Sampling interval.
    pub sample_interval: Time,
    /// The packet trace (`packets.csv`), if any.
    pub packet_trace: Option<PacketTraceConfig>,
}

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopRule {
    /// Stop at this time even if flows are unfinished (`None`: when every flow has finished).
    pub duration: Option<Time>,
    /// Without a duration, give up at this time (unfinished flows are reported).
    pub time_limit: Time,
}

/// Everything a run needs.
pub struct SimInput {
    /// The network.
    pub topology: Topology,
    /// Its routes.
    pub routes: Routes,
    /// Packet sizes.
    pub link: LinkConfig,
    /// Switch settings (ECN thresholds filled per port speed; Bolt's switch logic is turned on when
    /// `needs.bolt`).
    pub switch: SwitchConfig,
    /// Host settings.
    pub host: HostConfig,
    /// Flows.
    pub flows: Vec<FlowSpec>,
    /// The CC algorithm.
    pub factory: Arc<dyn Factory>,
    /// What the algorithm needs from the datapath.
    pub needs: Needs,
    /// Receiver CNP spacing (0 = flag every ACK of a marked packet).
    pub cnp_interval: Time,
    /// Scenario seed.
    pub seed: u64,
    /// End of the run.
    pub stop: StopRule,
    /// Extra recording.
    pub observe: Observe,
    /// Where the CC algorithm runs and what moving it off the datapath costs.
    pub plane: PlaneConfig,
    /// Faults injected at switch ports (`[[fault]]`).
    pub faults: Vec<FaultConfig>,
    /// Other algorithms that some flows run (coexistence): the flows of workload entry `g` run
    /// `mix[group_algorithm[g] - 1]`, or the run's algorithm when that is 0 or `g` is past the list.
    /// Token algorithms do not mix (their transport is the run's).
    pub mix: Vec<FlowAlgorithm>,
    /// Per workload entry: 0 for the run's algorithm, `k` for `mix[k - 1]`.
    pub group_algorithm: Vec<u8>,
}

/// An algorithm that flows run: its controllers and what it needs from the datapath.
#[derive(Clone)]
pub struct FlowAlgorithm {
    /// Builds one controller per flow.
    pub factory: Arc<dyn Factory>,
    /// What it needs from the datapath (ECN-capable packets, CNPs, INT, Bolt's switches).
    pub needs: Needs,
    /// Its receivers' CNP spacing (0 = flag every ACK of a marked packet).
    pub cnp_interval: Time,
}

impl std::fmt::Debug for FlowAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowAlgorithm").field("needs", &self.needs).field("cnp_interval", &self.cnp_interval).finish()
    }
}

/// A snapshot for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Simulated time reached.
    pub now: Time,
    /// Where the run will stop at the latest.
    pub end: Time,
    /// Events handled so far.
    pub events: u64,
    /// Flows finished.
    pub flows_finished: u64,
    /// Flows in the run.
    pub flows: u64,
}

/// What a run produced.
#[derive(Debug)]
pub struct SimOutput {
    /// One record per flow, in flow-id order.
    pub flows: Vec<FlowRecord>,
    /// One record per switch port.
    pub ports: Vec<PortRecord>,
    /// One record per switch.
    pub switches: Vec<SwitchRecord>,
    /// Sampled throughput series.
    pub throughput: Vec<ThroughputSeries>,
    /// CC traces.
    pub traces: Vec<sluice_results::FlowTrace>,
    /// Run-wide figures (wall time left 0 for the caller to fill).
    pub run: RunInfo,
    /// Engine counters.
    pub counters: Counters,
    /// Most packets in flight at once.
    pub peak_packets: usize,
    /// What the CC plane did, summed over hosts.
    pub plane: PlaneCounters,
    /// What each injected fault did, in the order of [`SimInput::faults`].
    pub faults: Vec<FaultStats>,
    /// The packet trace, when [`Observe::packet_trace`] asked for one.
    pub packet_trace: Option<sluice_results::PacketTrace>,
}

#[derive(Debug, Clone, Copy)]
enum NodeRef {
    Host(u32),
    Switch(u32),
}

/// A simulation ready to run.
pub struct Simulation {
    core: Core,
    switches: Vec<Switch>,
    hosts: Vec<Host>,
    flows: Vec<Flow>,
    node_ref: Vec<NodeRef>,
    topology: Topology,
    routes: Routes,
    link: LinkConfig,
    switch_config: SwitchConfig,
    host_config: HostConfig,
    /// The algorithms flows run: the run's first (whose factory also sets up a token transport and the
    /// host models), then [`SimInput::mix`].
    algorithms: Vec<FlowAlgorithm>,
    seed: u64,
    stop: StopRule,
    observe: Observe,
    plane: PlaneConfig,
    samples: Sampler,
    /// Sending host of each flow (only with Bolt's switch logic).
    flow_src: Vec<u32>,
    /// Receiver-driven transport settings, when a token algorithm runs.
    rd: Option<crate::config::RdEnv>,
    /// How many faults the scenario injects.
    fault_count: usize,
}

#[derive(Debug, Default)]
struct Sampler {
    last_flow_bytes: Vec<u64>,
    last_port_bytes: Vec<u64>,
    series: Vec<ThroughputSeries>,
    /// Time of the last sample taken.
    last_time: Time,
}

/// What [`Sampler::take`] reads: the observed flows and ports and the nodes they live in.
struct Sampled<'a> {
    observe: &'a Observe,
    flows: &'a [Flow],
    switches: &'a [Switch],
    hosts: &'a [Host],
    node_ref: &'a [NodeRef],
}

impl Sampler {
    /// Appends one sample at `now` to every series: the bytes counted since the previous sample.
    fn take(&mut self, now: Time, of: &Sampled) {
        for (i, f) in of.observe.throughput_flows.iter().enumerate() {
            let flow = &of.flows[*f as usize];
            // A receiver-driven flow's sender hears only of the last byte: count what the receiver has.
            let acked = if flow.rd.is_some() { flow.rcv_nxt.max(flow.snd_una) } else { flow.snd_una };
            self.series[i].samples.push((now, acked - self.last_flow_bytes[i]));
            self.last_flow_bytes[i] = acked;
        }
        let offset = of.observe.throughput_flows.len();
        for (i, (node, port)) in of.observe.throughput_ports.iter().enumerate() {
            let sampled = match of.node_ref[*node as usize] {
                NodeRef::Switch(sw) => &of.switches[sw as usize].ports[*port as usize],
                NodeRef::Host(h) => &of.hosts[h as usize].nic,
            };
            let tx = sampled.stats.tx_bytes;
            let series = &mut self.series[offset + i];
            series.samples.push((now, tx - self.last_port_bytes[i]));
            series.queue_bytes.push(sampled.bytes);
            self.last_port_bytes[i] = tx;
        }
        self.last_time = now;
    }
}

impl Simulation {
    /// Builds the network and schedules every flow's start.
    pub fn new(input: SimInput) -> Simulation {
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
        let queues = switch.queues.max(switch.control_queue + 1).max(switch.data_queue + 1);
        let make_port =
            |p: &sluice_topo::Port| Port::new(p.rate, p.delay, p.peer, p.peer_port, queues, ecn_for(&switch, p.rate));
        let mut node_ref = Vec::with_capacity(topology.nodes.len());
        let mut switches = Vec::new();
        let mut hosts = Vec::new();
        let fabric = Fabric { config: &switch, link: &link, routes: &routes, flow_src: &[], rd: None };
        for (id, node) in topology.nodes.iter().enumerate() {
            let ports: Vec<Port> = topology.ports[id].iter().map(make_port).collect();
            match node.kind {
                NodeKind::Host => {
                    node_ref.push(NodeRef::Host(hosts.len() as u32));
                    let nic = ports.into_iter().next().expect("a host has one port");
                    hosts.push(Host::new(id as u32, nic, seed));
                }
                NodeKind::Switch => {
                    node_ref.push(NodeRef::Switch(switches.len() as u32));
                    let mut sw = Switch::new(id as u32, ports, &fabric, seed);
                    sw.faults = PortFaults::for_switch(id as u32, &faults, seed);
                    switches.push(sw);
                }
            }
        }
        for h in &mut hosts {
            h.enable_models(&host, &link, factory.as_ref());
        }
        // Bolt's notifications and NDP's return-to-sender need each flow's sender at the switches.
        let trimming = token_transport.as_ref().is_some_and(|t| t.trimming);
        let flow_src = if switch.bolt.enabled || trimming { flows.iter().map(|f| f.src).collect() } else { Vec::new() };
        if let Some(config) = &observe.packet_trace {
            let ports: Vec<usize> = topology.ports.iter().map(Vec::len).collect();
            core.packet_trace = Some(Box::new(PacketTracer::new(config, &ports, flows.len())));
        }
        let mut flows = build_flows(&topology, &routes, &link, &flows, &observe, &mut core);
        for f in &mut flows {
            let index = group_algorithm.get(f.group as usize).copied().unwrap_or(0);
            let algorithm = &algorithms[index as usize];
            f.algorithm = index;
            f.ect = algorithm.needs.ecn || algorithm.needs.cnp;
            f.cnp = algorithm.needs.cnp;
            f.cnp_interval = algorithm.cnp_interval;
        }
        for (id, f) in flows.iter().enumerate() {
            hosts[f.src as usize].senders.push(id as u32);
        }
        let rd = token_transport.map(|t| setup_tokens(t, &link, &flows, &mut hosts, &mut switches, seed));
        let mut sim = Simulation {
            core,
            switches,
            hosts,
            flows,
            node_ref,
            topology,
            routes,
            link,
            switch_config: switch,
            host_config: host,
            algorithms,
            seed,
            stop,
            observe,
            plane,
            samples: Sampler::default(),
            flow_src,
            rd,
            fault_count: faults.len(),
        };
        sim.start_sampling();
        sim
    }

    fn start_sampling(&mut self) {
        let o = &self.observe;
        if o.sample_interval == 0 || (o.throughput_flows.is_empty() && o.throughput_ports.is_empty()) {
            return;
        }
        let s = &mut self.samples;
        s.last_flow_bytes = vec![0; o.throughput_flows.len()];
        s.last_port_bytes = vec![0; o.throughput_ports.len()];
        for f in &o.throughput_flows {
            s.series.push(ThroughputSeries {
                label: format!("flow {f}"),
                kind: BytesKind::Payload,
                interval: o.sample_interval,
                samples: Vec::new(),
                queue_bytes: Vec::new(),
            });
        }
        for (node, port) in &o.throughput_ports {
            let label = format!("{}:p{port}", self.topology.nodes[*node as usize].name);
            s.series.push(ThroughputSeries {
                label,
                kind: BytesKind::Wire,
                interval: o.sample_interval,
                samples: Vec::new(),
                queue_bytes: Vec::new(),
            });
        }
        self.core.schedule(o.sample_interval, Event::Sample);
    }

    /// Samples the interval from the last sample to the end of the run, if the run ended between samples,
    /// so that the series covers the whole run.
    fn sample_last_partial_interval(&mut self, end: Time) {
        if self.samples.series.is_empty() || end <= self.samples.last_time {
            return;
        }
        let of = Sampled {
            observe: &self.observe,
            flows: &self.flows,
            switches: &self.switches,
            hosts: &self.hosts,
            node_ref: &self.node_ref,
        };
        self.samples.take(end, &of);
    }

    /// The time the run stops at the latest.
    pub fn end_time(&self) -> Time {
        self.stop.duration.unwrap_or(self.stop.time_limit)
    }

    /// Runs to the end, calling `progress` about every million events.
    pub fn run(self, progress: &mut dyn FnMut(&Progress)) -> SimOutput {
        match self.run_until(progress, &|| false) {
            Ok(output) => output,
            Err(_) => unreachable!("a run that is never asked to stop runs to its end"),
        }
    }

    /// Like [`Simulation::run`], but asks `stop` at each progress report (about every million events) and
    /// abandons the run when it says so, returning how far the run got instead of an output.
    pub fn run_until(
        mut self,
        progress: &mut dyn FnMut(&Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<SimOutput, Progress> {
        let end = self.end_time();
        let total = self.flows.len() as u64;
        let until_done = self.stop.duration.is_none();
        // The settings every handler reads are borrowed once for the whole run.
        let fabric = Fabric {
            config: &self.switch_config,
            link: &self.link,
            routes: &self.routes,
            flow_src: &self.flow_src,
            rd: self.rd.as_ref(),
        };
        let env = HostEnv {
            config: &self.host_config,
            link: &self.link,
            needs: self.algorithms[0].needs,
            control_queue: self.switch_config.control_queue,
            data_queue: self.switch_config.data_queue,
            plane: &self.plane,
            rd: self.rd.as_ref(),
        };
        let mut parts = Parts {
            core: &mut self.core,
            switches: &mut self.switches,
            hosts: &mut self.hosts,
            flows: &mut self.flows,
            samples: &mut self.samples,
            node_ref: &self.node_ref,
            observe: &self.observe,
            link: &self.link,
            factory: self.algorithms[0].factory.as_ref(),
            algorithms: &self.algorithms,
        };
        let mut past_end = false;
        while let Some((time, event)) = parts.core.queue.pop() {
            if time > end {
                past_end = true;
                break;
            }
            parts.core.now = time;
            parts.core.counters.events += 1;
            parts.dispatch(event, &fabric, &env);
            if until_done && parts.core.counters.flows_finished == total {
                break;
            }
            if parts.core.counters.events & 0xF_FFFF == 0 {
                let c = &parts.core.counters;
                let now = Progress { now: time, end, events: c.events, flows_finished: c.flows_finished, flows: total };
                progress(&now);
                if stop() {
                    return Err(now);
                }
            }
        }
        if self.stop.duration.is_some() {
            self.core.now = self.core.now.max(end);
        }
        let hit_time_limit = until_done && past_end && self.core.counters.flows_finished < total;
        Ok(self.finish(hit_time_limit))
    }

    fn finish(mut self, hit_time_limit: bool) -> SimOutput {
        let end = self.core.now;
        self.sample_last_partial_interval(end);
        let names = |n: u32| self.topology.nodes[n as usize].name.clone();
        let flows = self.flows.iter().enumerate().map(|(i, f)| flow_record(i, f)).collect();
        let mut ports = Vec::new();
        let mut switches = Vec::new();
        for sw in &self.switches {
            for (i, p) in sw.ports.iter().enumerate() {
                ports.push(port_record(&names(sw.node), i as u16, names(p.peer), p, end));
            }
            let area = sw.buffer.area + sw.used as u128 * (end - sw.buffer.last_change) as u128;
            let avg = if end == 0 { 0.0 } else { area as f64 / end as f64 };
            switches.push(SwitchRecord { node: names(sw.node), max_buffer: sw.buffer.max, avg_buffer: avg });
        }
        let traces = collect_traces(&self.flows);
        let mut plane_counters = PlaneCounters::default();
        for h in &self.hosts {
            plane_counters.add(&h.plane.counters);
        }
        let c = self.core.counters.clone();
        let pause_time = ports.iter().map(|p: &PortRecord| p.pfc_paused_time).sum::<Time>()
            + self.hosts.iter().map(|h| h.nic.stats.paused_time).sum::<Time>();
        let run = RunInfo {
            seed: self.seed,
            sim_time: end,
            events: c.events,
            packet_hops: c.packet_hops,
            wall_seconds: 0.0,
            bytes_sent: c.bytes_sent,
            bytes_delivered: c.bytes_delivered,
            bytes_dropped: c.bytes_dropped,
            retransmitted_bytes: c.retransmitted_bytes,
            pfc_pauses: c.pfc_pauses,
            pfc_pause_time: pause_time,
            drops: c.drops,
            data_drops: c.data_drops,
            hit_time_limit,
        };
        SimOutput {
            flows,
            ports,
            switches,
            throughput: self.samples.series,
            traces,
            run,
            counters: c,
            peak_packets: self.core.arena.peak(),
            plane: plane_counters,
            faults: crate::net::fault::collect(
                self.fault_count,
                self.switches.iter().filter_map(|s| s.faults.as_deref()),
            ),
            packet_trace: self
                .core
                .packet_trace
                .take()
                .map(|t| t.finish(|node, port| format!("{}:p{port}", names(node)))),
        }
    }
}

/// The mutable elements of a running simulation and the read-only pieces their handlers need.
struct Parts<'a> {
    core: &'a mut Core,
    switches: &'a mut [Switch],
    hosts: &'a mut [Host],
    flows: &'a mut [Flow],
    samples: &'a mut Sampler,
    node_ref: &'a [NodeRef],
    observe: &'a Observe,
    link: &'a LinkConfig,
    factory: &'a dyn Factory,
    algorithms: &'a [FlowAlgorithm],
}

impl Parts<'_> {
    /// Hands `event` to the element it concerns.
    #[inline(always)]
    fn dispatch(&mut self, event: Event, fabric: &Fabric, env: &HostEnv) {
        let core = &mut *self.core;
        let flows = &mut *self.flows;
        match event {
            Event::Arrive { node, port, pkt } => match self.node_ref[node as usize] {
                NodeRef::Switch(s) => self.switches[s as usize].receive(core, fabric, port, pkt),
                NodeRef::Host(h) => self.hosts[h as usize].receive(core, env, flows, pkt),
            },
            Event::PortFree { node, port } => match self.node_ref[node as usize] {
                NodeRef::Switch(s) => self.switches[s as usize].port_free(core, fabric, port),
                NodeRef::Host(h) => self.hosts[h as usize].on_port_free(core, env, flows),
            },
            Event::Pfc { node, port, queue, pause } => match self.node_ref[node as usize] {
                NodeRef::Switch(s) => self.switches[s as usize].pfc(core, fabric, port, queue, pause),
                NodeRef::Host(h) => self.hosts[h as usize].on_pfc(core, env, flows, queue, pause),
            },
            Event::HostWake { host } => {
                let NodeRef::Host(h) = self.node_ref[host as usize] else { unreachable!("wake for a switch") };
                self.hosts[h as usize].on_wake(core, env, flows);
            }
            Event::FlowStart { flow } => {
                let src = flows[flow as usize].src as usize;
                let line_rate = self.hosts[src].nic.rate;
                let factory = &*self.algorithms[flows[flow as usize].algorithm as usize].factory;
                let f = &mut flows[flow as usize];
                let info = f.info(flow, self.link, line_rate, core.now);
                let cc = start_flow_state(core, line_rate, factory, f, &info);
                crate::transport::cc::start(&mut self.hosts[src].io(core), env, f, flow, cc, &info);
                if let Some(rd) = env.rd {
                    let f = &mut flows[flow as usize];
                    crate::transport::token::attach(f, flow, self.factory, self.link, line_rate, core.now, rd);
                    self.hosts[src].start_token_flow(core, env, f, flow);
                }
                self.hosts[src].start_flow(core, env, flows, flow);
            }
            Event::FlowStop { flow } => {
                let f = &mut flows[flow as usize];
                f.size = f.max_sent.max(f.snd_una);
                if f.snd_una >= f.size && f.finish.is_none() {
                    f.finish(core);
                }
                if f.rd.is_some() {
                    let dst = f.dst as usize;
                    self.hosts[dst].token_stream_stopped(core, env, flows, flow);
                }
            }
            Event::CcTimer { flow, id, gen } => {
                let src = flows[flow as usize].src as usize;
                self.hosts[src].on_cc_timer(core, env, flows, flow, id, gen);
            }
            Event::Rto { flow } => {
                let src = flows[flow as usize].src as usize;
                self.hosts[src].on_rto(core, env, flows, flow);
            }
            Event::Sample => self.sample(),
            Event::Plane(e) => {
                let host = match e {
                    PlaneEvent::Flush { flow } => flows[flow as usize].src as usize,
                    PlaneEvent::Batch { host }
                    | PlaneEvent::Arrive { host }
                    | PlaneEvent::Done { host }
                    | PlaneEvent::Decision { host } => host_of(self.node_ref, host),
                };
                self.hosts[host].on_plane_event(core, env, flows, e);
            }
            Event::Token(TokenEvent::Release { node, port }) => {
                let NodeRef::Switch(s) = self.node_ref[node as usize] else { unreachable!("token limiter at a host") };
                self.switches[s as usize].on_token_release(core, fabric, port);
            }
            Event::Token(e) => {
                let host = match e {
                    TokenEvent::Pace { host } => host_of(self.node_ref, host),
                    TokenEvent::Tick { flow, .. } | TokenEvent::RxTimer { flow, .. } | TokenEvent::RxCheck { flow } => {
                        flows[flow as usize].dst as usize
                    }
                    TokenEvent::TxCheck { flow } => flows[flow as usize].src as usize,
                    TokenEvent::Release { .. } => unreachable!("handled above"),
                };
                self.hosts[host].on_token_event(core, env, flows, e);
            }
            Event::HostModel(e) => {
                let host = match e {
                    HostModelEvent::EndpointDone { host }
                    | HostModelEvent::EndpointSample { host }
                    | HostModelEvent::BusDma { host }
                    | HostModelEvent::BusSample { host } => host_of(self.node_ref, host),
                };
                self.hosts[host].on_host_model_event(core, env, flows, e);
            }
        }
    }

    fn sample(&mut self) {
        let now = self.core.now;
        let o = self.observe;
        let of = Sampled {
            observe: o,
            flows: self.flows,
            switches: self.switches,
            hosts: self.hosts,
            node_ref: self.node_ref,
        };
        self.samples.take(now, &of);
        self.core.schedule(now + o.sample_interval, Event::Sample);
    }
}

/// The host index of host node `node`.
fn host_of(node_ref: &[NodeRef], node: u32) -> usize {
    match node_ref[node as usize] {
        NodeRef::Host(h) => h as usize,
        NodeRef::Switch(_) => unreachable!("a host event for switch node {node}"),
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

/// Creates flow state with each flow's path figures, and schedules starts and stops.
fn build_flows(
    topology: &Topology,
    routes: &Routes,
    link: &LinkConfig,
    descs: &[FlowSpec],
    observe: &Observe,
    core: &mut Core,
) -> Vec<Flow> {
    let packet_wire = (link.mtu + link.header_bytes) as u64;
    let mut flows = Vec::with_capacity(descs.len());
    for (i, d) in descs.iter().enumerate() {
        let size = if d.stop.is_some() { u64::MAX / 4 } else { d.size.max(1) };
        let mut f = Flow::new(d.src, d.dst, size, d.start, d.stop, d.group);
        let path = topology.path_profile(routes, d.src, d.dst);
        let per_hop: Time = path.link_rates.iter().map(|r| serialization_ps(packet_wire, *r)).sum();
        let ack_per_hop: Time = path.link_rates.iter().map(|r| serialization_ps(link.control_bytes as u64, *r)).sum();
        let base = 2 * path.prop_delay + per_hop;
        f.base_rtt = base + ack_per_hop;
        f.hops = path.switches;
        // A long-lived flow has no size and so no ideal completion time.
        if d.stop.is_none() {
            let packets = d.size.max(1).div_ceil(link.mtu as u64);
            let wire_bytes = d.size.max(1).saturating_add(packets.saturating_mul(link.header_bytes as u64));
            f.ideal_fct = sluice_results::ideal_fct(base, wire_bytes, path.bottleneck);
        }
        if observe.trace_flows.contains(&(i as u32)) {
            f.trace = Some(Box::new(FlowTrace::new(observe.trace_interval)));
        }
        core.schedule(d.start, Event::FlowStart { flow: i as u32 });
        if let Some(stop) = d.stop {
            core.schedule(stop, Event::FlowStop { flow: i as u32 });
        }
        flows.push(f);
    }
    flows
}

/// Creates a flow's controller and readies the flow for it (line rate, started); the host starts it.
fn start_flow_state(
    core: &Core,
    line_rate: u64,
    factory: &dyn Factory,
    f: &mut Flow,
    info: &FlowInfo,
) -> Box<dyn CongestionControl> {
    let cc = factory.create(info);
    // Token algorithms keep their receiver controller in the receiver-driven transport (`rd::attach`).
    if factory.token_transport().is_none() {
        f.rx = factory.receiver(info);
    }
    f.rate = line_rate;
    f.started = true;
    f.last_progress = core.now;
    cc
}

fn flow_record(id: usize, f: &Flow) -> FlowRecord {
    let delivered = if f.rd.is_some() { f.rcv_nxt.max(f.snd_una) } else { f.snd_una };
    FlowRecord {
        id: id as u64,
        src: f.src,
        dst: f.dst,
        size: if f.stop.is_some() { delivered } else { f.size },
        delivered,
        start: f.start,
        finish: f.finish,
        ideal_fct: f.ideal_fct,
        retransmitted_bytes: f.retransmitted,
        long_lived: f.stop.is_some(),
        group: f.group,
        received: f.rcv_nxt.min(f.size),
        started: f.started,
    }
}

fn port_record(node: &str, port: u16, peer: String, p: &Port, end: Time) -> PortRecord {
    let paused = p.stats.paused_time + p.stats.paused_since.map_or(0, |since| end.saturating_sub(since));
    PortRecord {
        node: node.to_string(),
        port,
        peer,
        rate: p.rate,
        tx_bytes: p.stats.tx_bytes,
        max_queue: p.stats.max_queue,
        avg_queue: p.average_queue(end),
        drops: p.stats.drops,
        data_drops: p.stats.data_drops,
        dropped_bytes: p.stats.dropped_bytes,
        ecn_marks: p.stats.ecn_marks,
        pfc_pauses_sent: p.stats.pauses_sent,
        pfc_paused_time: paused,
    }
}

fn collect_traces(flows: &[Flow]) -> Vec<sluice_results::FlowTrace> {
    let mut out = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let Some(t) = &f.trace else { continue };
        out.push(t.to_trace(i as u64));
    }
    out
}

/// Builds the run's transport settings and the per-host and per-switch state.
fn setup_tokens(
    transport: TokenTransport,
    link: &LinkConfig,
    flows: &[Flow],
    hosts: &mut [Host],
    switches: &mut [Switch],
    seed: u64,
) -> RdEnv {
    let sizes: Vec<u64> = flows.iter().filter(|f| f.stop.is_none()).map(|f| f.size).collect();
    let line_rate = hosts.first().map_or(0, |h| h.nic.rate);
    let base_rtt = flows.iter().map(|f| f.base_rtt).max().unwrap_or(0);
    let env = RdEnv::new(transport, link.mtu, &sizes, line_rate, base_rtt);
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
