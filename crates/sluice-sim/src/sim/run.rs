//! The event loop: pops events in time order (equal times by the node that made them, then in the order
//! that node made them: [`crate::engine::EventTies`]) and hands each to the switch or host it concerns.
//! A run that ends when its flows have finished handles the rest of the instant the last one finished.

use sluice_cc::{CongestionControl, Factory, FlowInfo};
use sluice_core::Time;

use super::arrivals::{Arrival, Arrivals, FirstFlows};
use super::build::RunSettings;
use super::report::{Sampled, Sampler};
use super::{NodeRef, Progress, SimOutput, Simulation};
use crate::engine::queue::EventQueue;
use crate::engine::{Core, Event, HostModelEvent, PlaneEvent, TokenEvent};
use crate::host::Host;
use crate::net::switch::Switch;
use crate::net::Fabric;
use crate::transport::flow::Flow;
use crate::transport::table::FlowTable;
use crate::transport::HostEnv;

/// Borrows a simulation's elements as [`Parts`] and the settings their handlers read, leaving its other
/// fields free.
macro_rules! split {
    ($sim:ident) => {{
        let fabric = Fabric {
            config: &$sim.switch_config,
            link: &$sim.settings.link,
            routes: &$sim.settings.routes,
            rd: $sim.rd.as_ref(),
        };
        let env = HostEnv {
            config: &$sim.host_config,
            link: &$sim.settings.link,
            needs: $sim.settings.algorithms[0].needs,
            control_queue: $sim.switch_config.control_queue,
            data_queue: $sim.switch_config.data_queue,
            plane: &$sim.plane,
            rd: $sim.rd.as_ref(),
        };
        let parts = Parts {
            core: &mut $sim.core,
            switches: &mut $sim.switches,
            hosts: &mut $sim.hosts,
            flows: &mut $sim.flows,
            arrivals: &mut $sim.arrivals,
            settings: &$sim.settings,
            first_flows: &$sim.first_flows,
            samples: &mut $sim.samples,
            node_ref: &$sim.node_ref,
            factory: $sim.settings.algorithms[0].factory.as_ref(),
            large: $sim.large,
        };
        (parts, fabric, env)
    }};
}
pub(super) use split;

impl Simulation {
    /// Like [`Simulation::run`], but asks `stop` at each progress report (about every million events) and
    /// abandons the run when it says so, returning how far the run got instead of an output.
    pub fn run_until(
        self,
        progress: &mut dyn FnMut(&Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<SimOutput, Progress> {
        if self.plain() {
            self.run_as::<true>(progress, stop)
        } else {
            self.run_as::<false>(progress, stop)
        }
    }

    /// Whether no optional feature acts at any switch ([`Switch::is_plain`]), so that the run loop's
    /// switch hops test for none.
    pub(super) fn plain(&self) -> bool {
        self.switches.iter().all(Switch::is_plain)
    }

    /// [`Simulation::run_until`]; `PLAIN` when [`Simulation::plain`].
    fn run_as<const PLAIN: bool>(
        mut self,
        progress: &mut dyn FnMut(&Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<SimOutput, Progress> {
        let end = self.end_time();
        let until_done = self.stop.duration.is_none();
        // The settings every handler reads are borrowed once for the whole run.
        let (mut parts, fabric, env) = split!(self);
        let mut past_end = false;
        // Flows finished as of the last check; none counted yet, so the first event checks (a run of no
        // flows ends there).
        let mut finished = u64::MAX;
        // The last instant the run handles: its end, or the instant its last flow finished.
        let mut last_instant = end;
        while let Some((time, event)) = parts.core.queue.pop() {
            if time > last_instant {
                past_end = time > end;
                break;
            }
            parts.core.now = time;
            parts.core.counters.events += 1;
            parts.prefetch_ahead();
            parts.dispatch::<PLAIN>(event, &fabric, &env);
            // Work for finished flows: their slots' next flows, their retirement, the end of the run.
            if parts.core.counters.flows_finished != finished {
                finished = parts.core.counters.flows_finished;
                if !parts.core.freed_slots.is_empty() {
                    self.loops.refill(parts.core, parts.settings, parts.flows, parts.hosts);
                }
                self.retired.sweep(parts.core, parts.flows);
                if until_done && finished == parts.flows.ids() {
                    last_instant = time;
                }
            }
            if parts.core.counters.events & 0xF_FFFF == 0 {
                let c = &parts.core.counters;
                let total = parts.flows.ids();
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
        let hit_time_limit = until_done && past_end && self.core.counters.flows_finished < self.flows.ids();
        Ok(self.finish(hit_time_limit))
    }
}

/// How many events ahead the run loop prefetches: far enough for a load from memory (about 100 ns) to
/// finish during the events between, near enough that the line is still in cache when its event comes.
const PREFETCH_AHEAD: usize = 2;

/// Packets alive from which the run loop prefetches ahead in a network of fewer than
/// [`LARGE_NETWORK_PORTS`] ports: 1 MiB of packet records, about what a core's L2 cache holds. Below it
/// the state a small network's run touches stays in the caches, and looking ahead only costs
/// instructions (ws128, at most 15,348 alive: 3.5% of its instructions); fat320 has 31,775 alive at
/// its peak.
const PREFETCH_FROM_PACKETS: usize = 1 << 14;

/// Egress ports from which a network's own state (ports, queues, flows) outgrows the caches, so that the
/// run loop prefetches ahead however few packets are alive (k=16 has 6,144, k=32 49,152).
pub(super) const LARGE_NETWORK_PORTS: usize = 4096;

/// The mutable elements of a running simulation and the read-only pieces their handlers need.
pub(super) struct Parts<'a> {
    pub(super) core: &'a mut Core,
    pub(super) switches: &'a mut [Switch],
    pub(super) hosts: &'a mut [Host],
    pub(super) flows: &'a mut FlowTable,
    pub(super) arrivals: &'a mut Arrivals,
    pub(super) settings: &'a RunSettings,
    pub(super) first_flows: &'a FirstFlows,
    pub(super) samples: &'a mut Sampler,
    pub(super) node_ref: &'a [NodeRef],
    pub(super) factory: &'a dyn Factory,
    /// The network has [`LARGE_NETWORK_PORTS`] ports or more.
    pub(super) large: bool,
}

impl Parts<'_> {
    /// The workload's next arrival is due: a starting flow's state is made (with its closed-loop slot, if
    /// it is a slot's first flow) and joins its sender's flows, then it starts as any flow does; a stop
    /// stops its flow. Then the arrival after it is queued.
    fn arrive(&mut self, env: &HostEnv) {
        let Some((_, arrival)) = self.arrivals.pop() else { return };
        self.arrivals.schedule_next(self.core);
        match arrival {
            Arrival::Start(id, spec) => {
                self.core.queue.ties_mut().add_flow(id, spec.src, spec.dst);
                // A part of a partitioned run keeps the flows it sends or receives.
                let owns =
                    |host: u32| self.core.partition.as_deref().is_none_or(|p| p.owns(self.hosts[host as usize].node));
                let (sends, receives) = (owns(spec.src), owns(spec.dst));
                if !sends && !receives {
                    self.flows.push_absent();
                    return;
                }
                let mut flow = self.settings.make(id, &spec);
                let first = self.first_flows.binary_search_by_key(&id, |&(flow, _)| flow);
                flow.slot = first.ok().map(|at| self.first_flows[at].1);
                let made = self.flows.push_generated(flow);
                debug_assert_eq!(made, id, "the workload's flows arrive in id order");
                if sends {
                    self.hosts[spec.src as usize].senders.push_generated(id);
                    self.start_flow(id, env);
                } else {
                    self.start_receiver(id, env, self.core.now);
                }
            }
            // The sender's part stops the flow; the receiver's part takes what the sender's part found
            // (told before this instant: `PartitionedRun`'s stop windows), and a receiver-driven receiver
            // learns there where its stream ends.
            Arrival::Stop(id) => {
                let Some(f) = self.flows.get(id) else { return };
                let (src, dst, rd) = (f.src as usize, f.dst as usize, f.rd.is_some());
                let owns = |host: usize| self.core.partition.as_deref().is_none_or(|p| p.owns(self.hosts[host].node));
                let (sends, receives) = (owns(src), owns(dst));
                if sends {
                    self.stop_flow(id);
                } else if receives {
                    self.take_told_stop(id);
                }
                if rd && receives {
                    self.hosts[dst].token_stream_stopped(self.core, env, self.flows, id);
                }
            }
        }
    }

    /// Flow `flow` starts: its controller is made and started, and its host takes it on.
    fn start_flow(&mut self, flow: u32, env: &HostEnv) {
        let core = &mut *self.core;
        let flows = &mut *self.flows;
        let src = flows[flow as usize].src as usize;
        let line_rate = self.hosts[src].nic.rate;
        let factory = &*self.settings.algorithms[flows[flow as usize].algorithm as usize].factory;
        let f = &mut flows[flow as usize];
        let info = f.info(flow, &self.settings.link, line_rate, core.now);
        let cc = start_flow_state(core, line_rate, factory, f, &info);
        crate::transport::cc::start(&mut self.hosts[src].io(core), env, f, flow, cc, &info);
        if let Some(rd) = env.rd {
            let f = &mut flows[flow as usize];
            crate::transport::token::attach(f, flow, self.factory, &self.settings.link, line_rate, core.now, rd);
            self.hosts[src].start_token_flow(core, env, f, flow);
        }
        self.hosts[src].start_flow(core, env, flows, flow);
    }

    /// Flow `flow` started at `start` at a sender in another part of a partitioned run: its receiver gets
    /// what [`start_flow_state`] gives it.
    pub(super) fn start_receiver(&mut self, flow: u32, env: &HostEnv, start: Time) {
        let f = &mut self.flows[flow as usize];
        let line_rate = self.hosts[f.src as usize].nic.rate;
        let factory = &*self.settings.algorithms[f.algorithm as usize].factory;
        match env.rd {
            None => f.rx = factory.receiver(&f.info(flow, &self.settings.link, line_rate, start)),
            Some(rd) => {
                crate::transport::token::attach(f, flow, self.factory, &self.settings.link, line_rate, start, rd)
            }
        }
    }

    /// Long-lived flow `flow`, sent from another part, stops here as its sender's part found it: its
    /// size is what it sent, and it finished if all of that was acknowledged (its receiver reads both,
    /// as it reads what the sender sets in a run in one piece). A flow whose receivers read neither was
    /// not told of and stays as it was.
    fn take_told_stop(&mut self, flow: u32) {
        let partition = self.core.partition.as_deref_mut().expect("a part of a partitioned run");
        let Some((size, finished)) = partition.take_stop(flow) else { return };
        let f = &mut self.flows[flow as usize];
        f.size = size;
        if finished {
            f.finish = Some(self.core.now);
        }
    }

    /// Long-lived flow `flow` stops offering new data.
    fn stop_flow(&mut self, flow: u32) {
        let f = &mut self.flows[flow as usize];
        f.size = f.max_sent.max(f.snd_una);
        if f.snd_una >= f.size && f.finish.is_none() {
            f.finish(self.core, flow);
        }
    }

    /// Starts loading what the event [`PREFETCH_AHEAD`] places on will read first, so that its cache misses
    /// overlap the events before it: the packet an arrival carries, the port a switch's transmitter frees.
    #[inline(always)]
    pub(super) fn prefetch_ahead(&self) {
        if !self.large && self.core.arena.live() < PREFETCH_FROM_PACKETS {
            return;
        }
        match self.core.queue.upcoming(PREFETCH_AHEAD) {
            Some(&Event::Arrive { pkt, .. }) => self.core.arena.prefetch(pkt),
            Some(&Event::PortFree { node, port }) => {
                if let NodeRef::Switch(s) = self.node_ref[node as usize] {
                    if let Some(port) = self.switches[s as usize].ports.get(port as usize) {
                        port.prefetch();
                    }
                }
            }
            _ => {}
        }
    }

    /// Hands `event` to the element it concerns; `PLAIN` only when every switch is plain.
    #[inline(always)]
    pub(super) fn dispatch<const PLAIN: bool>(&mut self, event: Event, fabric: &Fabric, env: &HostEnv) {
        let core = &mut *self.core;
        let flows = &mut *self.flows;
        match event {
            Event::Arrival => self.arrive(env),
            Event::Arrive { node, port, pkt } => match self.node_ref[node as usize] {
                NodeRef::Switch(s) => self.switches[s as usize].receive_as::<PLAIN>(core, fabric, port, pkt),
                NodeRef::Host(h) => self.hosts[h as usize].receive(core, env, flows, pkt),
            },
            Event::PortFree { node, port } => match self.node_ref[node as usize] {
                NodeRef::Switch(s) => self.switches[s as usize].port_free_as::<PLAIN>(core, fabric, port),
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
            Event::FlowStart { flow } => self.start_flow(flow, env),
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
        let o = &self.settings.observe;
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
