//! The size of a run before it runs: the memory it will take and the packets and events it will
//! simulate, so that a run too large for the machine is refused before it allocates anything.
//!
//! The model counts what grows with the scenario: route tables ([`sluice_topo::Routes::heap_bytes`],
//! held twice: the resolved scenario's and the simulator's copy), per-flow state (the generated flow,
//! the simulator's input and its `Flow`, the result row), per-port state, the event queue (its timing
//! wheel, and every flow's start queued at once), packets alive at once, the sampled and traced output
//! rows, and what huge pages add when the run asks for them. Packets are the largest part of a big run;
//! how many are alive at once follows from how many flows send at once and how many of them converge on
//! one receiver (`Concurrency` below). Constants are calibrated against the peak RSS and the packets
//! alive at the peak that `sluice bench` reports for the bundled scenarios in a release build: the
//! estimate is 0.8 to 1.55 times the peak RSS of each, from 6.9 MB (`endpoint/incast.toml`) to 31 MB
//! (`receiver/study160_incast.toml`), and 0.95 and 1.33 times that of the scale scenarios (57 MB at
//! 1,024 hosts, 197 MB at 8,192, in huge pages); `crates/sluice/tests/estimate.rs` keeps the packets
//! within a small factor of the measured peak.

use std::mem::size_of;

use sluice_core::{format_size, Time, PS_PER_S};
use sluice_scenario::{HugePages, Resolved, HUGE_PAGES_FROM};
use sluice_sim::footprint::{
    EVENT_ENTRY_BYTES, FLOW_STATE_BYTES, HOST_BYTES, INT_STACK_BYTES, PACKET_BYTES, PORT_BYTES, SIGNAL_BYTES,
};
use sluice_sim::queue::SLOTS;
use sluice_workload::UNBOUNDED_SIZE;

/// Bytes of the one queue and its deficit counter that another part's host NIC allocates, with the
/// allocator's headers.
const NIC_QUEUE_BYTES: u64 = 64;

/// What each part of a partitioned run holds beyond its hosts and its wheel: its workload stream, the
/// keys of simultaneous events (a peer per port), its switches' records and its thread. Calibrated: at
/// k=32 (8,192 hosts) with 20 us of arrivals, each part beyond the first added 6.5, 7.9 and 8.9 MB of
/// peak RSS on 2, 4 and 8 threads, against 8.0 MB (7.6 MiB) of hosts and wheel here.
const PART_BYTES: u64 = 1 << 20;

/// Resident memory of the process before the scenario adds anything: code, the allocator's arenas, the
/// builtin CDFs and the output writer's buffers. Calibrated: `host/fabric-incast.toml` (9 hosts, 8 flows)
/// peaks at 6.6-7.2 MB (6.3-6.9 MiB) in a release build.
pub const PROCESS_BASE_BYTES: u64 = 13 << 19;

/// What huge pages add to a run's resident memory: the heap's touched regions rounded up to 2 MiB, and
/// its top kept for the next growth. Calibrated: 7.0 MB more peak RSS for k16_websearch, 9.8-10.3 MB for
/// k32_websearch, 1.6-4.8 MB for k=32 with 100 or 500 us of arrivals (BENCHMARKS.md, "Huge pages for a
/// large run's heap").
pub const HUGE_PAGE_BYTES: u64 = 8 << 20;

/// Bytes per egress port beyond the `Port` record (which holds its queues' ring headers): the switch's
/// per-port ingress, headroom and pause state, the scheduler's deficits and the port's result row. An
/// engineering figure (four `[u64; 8]` tables come to about 256 B); ports are a small part of every
/// bundled scenario.
pub const PORT_STATE_BYTES: u64 = 256;

/// Bytes per sample of a throughput series and per row of a CC trace, in memory until written: an
/// engineering figure, a row's time and values plus the vector's slack from growing by doubling.
pub const ROW_BYTES: u64 = 48;

/// Events per packet-hop: a packet's arrival and its transmitter freeing up, plus the timers, ACK
/// processing and flow starts that ride on them. Calibrated with `sluice bench`'s counts: 1.3 (web
/// search on fat-trees) to 2.5 (incast, with PFC pauses and timers).
pub const EVENTS_PER_HOP: f64 = 1.5;

/// Packets alive per packet of a sending flow's first window (at most a bandwidth-delay product): the
/// window itself, its ACKs, and the queues congestion control lets build behind it. Calibrated with
/// the peak that `sluice bench` reports ("packets alive at the peak") for the bundled scenarios: 1.1
/// (an eight-flow incast) to 4.7 (`ws128.toml`) on unloaded paths.
pub const ALIVE_PER_WINDOW: f64 = 3.0;

/// Packets alive per packet of the first windows that converge on a receiver at once, beyond the one
/// its link carries: the overshoot queued before congestion control (or PFC) holds the senders back.
/// Calibrated: `incast128.toml` (127 senders, DCQCN and PFC) peaks at 149,022 packets, 3.6 per such
/// packet beyond the windows' own.
pub const ALIVE_PER_FAN_IN: f64 = 4.0;

/// Events pending at the peak per packet alive then, as estimated: a packet on a wire has its arrival
/// pending, a queued one nothing, and the flows' timers come on top. Calibrated with a build that
/// counted the timing wheel's most entries at once: 0.29 of the packets estimated alive for
/// `ws128.toml`, 0.27 for `fat320.toml`, 0.25 and 0.24 for k=32 with 100 and 200 us of arrivals, and
/// 0.03 for `incast128.toml`, whose packets wait in paused queues.
pub const EVENTS_PER_ALIVE_PACKET: f64 = 0.3;

/// Bytes a flow holds while it is in progress, beyond its result row: its transport state (`Flow`), its
/// algorithm and plane state, its receiver's state and, for a receiver-driven algorithm, the token
/// transport's grants and logs. Calibrated on `scenarios/receiver/study160.toml` with 100 and 400 us of
/// arrivals (2,563 and 10,280 flows, nearly all in progress at once on its oversubscribed fabric): peak
/// RSS grows by 2.4 KB per flow with ToCC, 1.7-2.0 KB with Homa, ExpressPass and NDP, 2.6 KB with DCQCN.
pub const ACTIVE_FLOW_BYTES: u64 = 2_600;

/// The highest offered load per host the estimate's queueing term takes (the load's slowdown grows
/// without bound towards 1).
pub const LOAD_CAP: f64 = 0.8;

/// What a run is expected to take.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEstimate {
    /// Memory by part, in bytes: `("routes", ...)`, `("flows", ...)` and so on.
    pub memory: Vec<(&'static str, u64)>,
    /// Packets alive at once at the peak (data and ACKs, on the wire and queued), which the packet
    /// memory is sized for.
    pub alive_packets: u64,
    /// Data packets the flows need at least (no retransmissions).
    pub data_packets: u64,
    /// Packets put on links: data and ACKs, every hop.
    pub packet_hops: u64,
    /// Events the simulator handles.
    pub events: u64,
    /// The run asks for huge pages (`simulation.huge_pages`; [`asks_for_huge_pages`]).
    pub huge_pages: bool,
}

impl RunEstimate {
    /// Total memory, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory.iter().map(|(_, bytes)| bytes).fold(0, |a, b| a.saturating_add(*b))
    }

    /// One line for people: total memory with its largest parts, packets alive at the peak, data packets,
    /// packet-hops and events.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.memory.iter().filter(|(_, b)| *b > 0).map(|(name, b)| format!("{name} {}", human(*b))).collect();
        format!(
            "estimated run size: memory about {} ({}); {} packets alive at the peak, {} data packets, {} packet-hops, \
             {} events; huge pages {}",
            human(self.memory_bytes()),
            parts.join(", "),
            self.alive_packets,
            self.data_packets,
            self.packet_hops,
            self.events,
            if self.huge_pages { "on" } else { "off" }
        )
    }
}

/// Sizes in binary units with one decimal, for messages (`"45.2 MiB"`).
fn human(bytes: u64) -> String {
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|(_, shift)| bytes >= 1 << shift) {
        Some((name, shift)) => format!("{:.1} {name}", bytes as f64 / (1u64 << shift) as f64),
        None => format_size(bytes),
    }
}

/// Estimates the memory, packets and events of running `resolved`.
pub fn estimate(resolved: &Resolved) -> RunEstimate {
    let traffic = Traffic::of(resolved);
    let events = (traffic.packet_hops as f64 * EVENTS_PER_HOP) as u64 + 4 * run_flows(resolved);
    let routes = 2 * resolved.routes.heap_bytes() as u64;
    let ports = port_bytes(resolved);
    let alive = alive_packets(resolved, &traffic);
    let (queued, packets) = (event_bytes(resolved, events, alive), packet_bytes(resolved, alive));
    let network_state = ports.saturating_add(queued).saturating_add(packets);
    let huge_pages = asks_for_huge_pages(resolved.scenario.simulation.huge_pages, network_state);
    let mut memory = vec![
        ("base", PROCESS_BASE_BYTES),
        ("routes", routes),
        ("flows", flow_bytes(resolved)),
        ("flows in progress", active_flow_bytes(resolved, &traffic)),
        ("ports", ports),
        ("events", queued),
        ("packets", packets),
        ("samples", row_bytes(resolved, &traffic)),
        ("parts", part_bytes(resolved)),
    ];
    if huge_pages {
        memory.push(("huge pages", HUGE_PAGE_BYTES));
    }
    RunEstimate {
        memory,
        alive_packets: alive,
        data_packets: traffic.data_packets,
        packet_hops: traffic.packet_hops,
        events,
        huge_pages,
    }
}

/// Whether a run whose setting is `setting` and whose network state (ports, pending events, packets
/// alive: what it touches at random) comes to `network_state` bytes asks for huge pages.
pub fn asks_for_huge_pages(setting: HugePages, network_state: u64) -> bool {
    match setting {
        HugePages::On => true,
        HugePages::Off => false,
        HugePages::Auto => network_state >= HUGE_PAGES_FROM,
    }
}

/// What a run on several threads adds. The parts share the topology and routes, and each builds the
/// ports of its own switches only, so ports are counted once; but every part beyond the first keeps a
/// record of every host (another part's with a one-queue NIC), its own event wheel and workload stream
/// ([`PART_BYTES`]). No flow is retired, so every flow's state stays, in the parts of both its hosts.
fn part_bytes(resolved: &Resolved) -> u64 {
    let threads = resolved.scenario.simulation.threads as u64;
    if threads <= 1 {
        return 0;
    }
    let hosts = resolved.topology.num_hosts() as u64;
    let per_part = hosts * (HOST_BYTES as u64 + NIC_QUEUE_BYTES) + (SLOTS * EVENT_ENTRY_BYTES) as u64 + PART_BYTES;
    let flows = run_flows(resolved).saturating_mul(2 * FLOW_STATE_BYTES as u64 + 4 * threads);
    (threads - 1).saturating_mul(per_part).saturating_add(flows)
}

/// The flows a run holds at its end: those generated before it, and those closed loops are expected to
/// start during it (at most what their hosts carry over the mean size).
fn run_flows(resolved: &Resolved) -> u64 {
    let later: u64 = resolved.closed_loops.iter().map(|c| c.later_flows).sum();
    (resolved.flows.len() as u64).saturating_add(later)
}

/// Per-flow memory: the result row, kept to the end, and three 4-byte entries per flow id (its slot, its
/// packets alive, its place in its sender's list). A flow's state (`Flow`), its algorithm with its plane
/// state and its receiver state live only while it is in progress and are left out: a finished flow is
/// retired once no packet of it is left. The rows are counted twice, for the growth of the vector that
/// holds the retired flows' rows. Calibrated: a Poisson memcached load on `quickstart.toml` grows peak
/// RSS by about 143 B per flow (48.4 MB at 162 K flows, 104.0 MB at 650 K), against 188 B per flow
/// here.
fn flow_bytes(resolved: &Resolved) -> u64 {
    let per_flow = 2 * size_of::<sluice_results::FlowRecord>() + 3 * size_of::<u32>();
    run_flows(resolved).saturating_mul(per_flow as u64)
}

/// The state of the flows in progress at the peak ([`ACTIVE_FLOW_BYTES`] each). A receiver-driven
/// algorithm's flows keep their state to the end of the run (late tokens and NACKs still find it), so
/// all of them count; otherwise those sending at once, stretched by the load's queueing as the packets
/// alive are ([`Traffic::active_flows`]).
fn active_flow_bytes(resolved: &Resolved, traffic: &Traffic) -> u64 {
    let flows = if resolved.factory.token_transport().is_some() {
        run_flows(resolved)
    } else {
        traffic.active_flows.min(run_flows(resolved) as f64) as u64
    };
    flows.saturating_mul(ACTIVE_FLOW_BYTES)
}

/// The event queue. Its timing wheel has [`SLOTS`] slot headers; buffers go to the slots that hold
/// events at the moment, so the entries that need memory are those pending at the peak, doubled for
/// the buffers' growth slack. A busy link direction has about one packet arrival pending per
/// serialization time along its propagation delay (plus the one being sent), so every direction counted
/// busy bounds them; so do [`EVENTS_PER_ALIVE_PACKET`] per packet alive at the peak (`alive`), which
/// counts only the busy ones, and the run's `events` (a large network with little traffic). The
/// workload's flow starts are not queued ahead (they arrive one at a time).
fn event_bytes(resolved: &Resolved, events: u64, alive: u64) -> u64 {
    let s = &resolved.scenario;
    let entry = EVENT_ENTRY_BYTES as f64;
    let wire = (s.link.mtu + s.link.header_bytes) as u64;
    let pending: f64 = resolved
        .topology
        .links
        .iter()
        .map(|l| {
            let serialization = sluice_core::serialization_ps(wire, l.rate.max(1)).max(1) as f64;
            2.0 * (1.0 + l.delay as f64 / serialization)
        })
        .sum();
    let pending = pending.min(events as f64).min(EVENTS_PER_ALIVE_PACKET * alive as f64);
    let wheel = SLOTS as f64 * entry + 2.0 * entry * pending;
    wheel as u64
}

/// Per-port memory: the topology's two copies of each port and the simulator's port with its state.
fn port_bytes(resolved: &Resolved) -> u64 {
    let ports = 2 * resolved.topology.links.len() as u64;
    let per_port = 2 * size_of::<sluice_topo::Port>() + PORT_BYTES;
    ports * (per_port as u64 + PORT_STATE_BYTES)
}

/// Packets alive at the peak ([`Traffic::alive_packets`]), never more than the data itself and one per
/// host.
fn alive_packets(resolved: &Resolved, traffic: &Traffic) -> u64 {
    let hosts = resolved.topology.num_hosts() as u64;
    (traffic.alive_packets.ceil() as u64).min(traffic.data_packets + hosts)
}

/// The packets alive at the peak, each a packet record (and an INT stack with INT on, a signal value with
/// a switch signal), doubled for the arena's growth.
fn packet_bytes(resolved: &Resolved, alive: u64) -> u64 {
    let s = &resolved.scenario;
    let needs = resolved.mix.as_ref().map_or(resolved.algorithm.needs, |m| m.needs(resolved.algorithm.needs));
    let record =
        PACKET_BYTES + if s.switch.int { INT_STACK_BYTES } else { 0 } + if needs.signal { SIGNAL_BYTES } else { 0 };
    2 * alive * record as u64
}

/// Sampled throughput rows and traced CC rows, held until the run ends.
fn row_bytes(resolved: &Resolved, traffic: &Traffic) -> u64 {
    let out = &resolved.scenario.output;
    let series = (out.throughput_flows.count(resolved.flows.len()) + out.throughput_ports.len()) as u64;
    let samples = series.saturating_mul(traffic.end / out.sample_interval.max(1));
    let per_trace = (traffic.end / out.trace_interval.max(1)).min(traffic.data_packets).min(out.trace_max_rows);
    samples.saturating_add((out.trace_flows.len() as u64).saturating_mul(per_trace)).saturating_mul(ROW_BYTES)
}

/// The traffic a run carries, from the flows and their paths.
struct Traffic {
    /// When the run is expected to end: `simulation.duration`, else when its traffic has drained (at
    /// most `simulation.time_limit`).
    end: Time,
    data_packets: u64,
    packet_hops: u64,
    /// Packets alive at the peak: data and ACKs on the wire and queued ([`Concurrency::alive_packets`]).
    alive_packets: f64,
    /// Flows in progress at the peak ([`Concurrency::active_flows`]).
    active_flows: f64,
}

impl Traffic {
    fn of(resolved: &Resolved) -> Traffic {
        let s = &resolved.scenario;
        let limit = s.simulation.duration.unwrap_or(s.simulation.time_limit);
        let mtu = s.link.mtu.max(1) as u64;
        let (mut data_packets, mut data_hops, mut ack_hops, mut links) = (0u64, 0u64, 0u64, 0u64);
        let mut load = HostLoad::new(resolved.topology.num_hosts() as usize);
        // One pass over the flows (they are generated as they are read).
        for f in &resolved.flows {
            let hops = path_hops(resolved, f.src, f.dst);
            let bytes = flow_bytes_sent(&f, resolved.line_rate, limit);
            load.add(&f, bytes);
            let packets = bytes.div_ceil(mtu).max(1);
            let acks = packets.div_ceil(s.host.ack_every_packets.max(1) as u64);
            data_packets = data_packets.saturating_add(packets);
            data_hops = data_hops.saturating_add(packets.saturating_mul(hops));
            ack_hops = ack_hops.saturating_add(acks.saturating_mul(hops));
            links += hops;
        }
        let mut counted = resolved.flows.len() as u64;
        for lp in &resolved.closed_loops {
            let slots = lp.slots.len().max(1) as u64;
            let slot_hops: u64 = lp.slots.iter().map(|slot| path_hops(resolved, slot.src, slot.dst)).sum();
            let packets = lp.carried_bytes.div_ceil(mtu);
            let acks = packets.div_ceil(s.host.ack_every_packets.max(1) as u64);
            data_packets = data_packets.saturating_add(packets);
            data_hops = data_hops.saturating_add(packets.saturating_mul(slot_hops) / slots);
            ack_hops = ack_hops.saturating_add(acks.saturating_mul(slot_hops) / slots);
            links += slot_hops;
            counted += slots;
        }
        let mean_hops = links as f64 / counted.max(1) as f64;
        let nic = &resolved.topology.nic(0);
        let wire = (s.link.mtu + s.link.header_bytes) as u64;
        let per_hop = nic.delay + sluice_core::serialization_ps(wire, nic.rate.max(1));
        let base_rtt = 2.0 * mean_hops * per_hop as f64;
        let bdp = (resolved.line_rate as f64 / 8.0 * base_rtt / PS_PER_S as f64 / mtu as f64).max(1.0);
        let end = s.simulation.duration.unwrap_or_else(|| load.drain_time(resolved).min(limit));
        let concurrency = Concurrency::of(resolved, load.span(), bdp, limit);
        Traffic {
            end,
            data_packets,
            packet_hops: data_hops.saturating_add(ack_hops),
            alive_packets: concurrency.alive_packets(),
            active_flows: concurrency.active_flows(),
        }
    }
}

/// How many flows send at once, and how many converge on one receiver: a second pass over the flows,
/// once the span of their starts is known. A flow that takes `t` at its NIC's rate, among flows arriving
/// over a span `T`, sends a share `t / (T + t)` of the time (Little's law for `t` much shorter than `T`;
/// 1 when all start together). Its window is its size, at most a bandwidth-delay product.
struct Concurrency {
    /// Σ over flows of the share: the flows sending at once at their NICs' rate.
    sending: f64,
    /// Σ over flows of the share times the window, in packets.
    windows: f64,
    /// Σ over receivers of the windows of the flows beyond the first one that send to it at once.
    fan_in: f64,
    /// The mean offered load per host over the span, at most [`LOAD_CAP`] (0 when all flows start at
    /// once: they have no arrival process to queue behind).
    load: f64,
    /// The offered load of the busiest edge switch's links to other switches over the span
    /// ([`EdgeLoad`]), uncapped.
    edge_load: f64,
}

impl Concurrency {
    fn of(resolved: &Resolved, span: Time, bdp_packets: f64, limit: Time) -> Concurrency {
        let hosts = resolved.topology.num_hosts() as usize;
        let mtu = resolved.scenario.link.mtu.max(1) as u64;
        let (mut senders, mut windows) = (vec![0.0; hosts], vec![0.0; hosts]);
        let (mut total, mut busy_time, mut sending) = (0.0, 0.0, 0.0);
        let mut edges = EdgeLoad::new(&resolved.topology);
        for f in &resolved.flows {
            let bytes = flow_bytes_sent(&f, resolved.line_rate, limit);
            edges.add(&resolved.topology, f.src, f.dst, bytes);
            let time = sluice_core::serialization_ps(bytes, resolved.line_rate.max(1)) as f64;
            let share = if span == 0 { 1.0 } else { time / (span as f64 + time) };
            let window = share * (bytes.div_ceil(mtu).max(1) as f64).min(bdp_packets);
            senders[f.dst as usize] += share;
            windows[f.dst as usize] += window;
            total += window;
            busy_time += time;
            sending += share;
        }
        let fan_in = (0..hosts).filter(|&r| senders[r] > 1.0).map(|r| windows[r] * (1.0 - 1.0 / senders[r])).sum();
        let load = match span {
            0 => 0.0,
            _ => (busy_time / (span as f64 * hosts.max(1) as f64)).min(LOAD_CAP),
        };
        Concurrency { sending, windows: total, fan_in, load, edge_load: edges.busiest(span) }
    }

    /// Flows in progress at the peak: those sending at once, stretched by the queueing of the busier of
    /// the hosts' links and the edge switches' links to the rest of the fabric. Where an edge switch is
    /// offered more than those links carry (an oversubscribed fabric), flows pile up as they start and
    /// every one is in progress at the end.
    fn active_flows(&self) -> f64 {
        if self.edge_load >= 1.0 {
            return f64::INFINITY;
        }
        self.sending / (1.0 - self.load.max(self.edge_load).min(LOAD_CAP))
    }

    /// Packets alive at the peak: [`ALIVE_PER_WINDOW`] per packet of the windows, stretched by the
    /// load's queueing (a processor-sharing queue's mean slowdown, `1 / (1 - load)`), and
    /// [`ALIVE_PER_FAN_IN`] per packet converging on a receiver beyond its link's share.
    fn alive_packets(&self) -> f64 {
        ALIVE_PER_WINDOW * self.windows / (1.0 - self.load) + ALIVE_PER_FAN_IN * self.fan_in
    }
}

/// What the hosts behind each edge switch (the switch a host's NIC leads to) send to and receive from
/// hosts behind other switches, against the rate of the edge switch's ports that lead to switches.
struct EdgeLoad {
    /// Per node: bytes up (from its hosts to other edges) and down (to its hosts from other edges).
    up: Vec<u64>,
    down: Vec<u64>,
    /// Per node: the rate of its ports that lead to switches, bit/s (0 for a host).
    capacity: Vec<f64>,
}

impl EdgeLoad {
    fn new(topology: &sluice_topo::Topology) -> EdgeLoad {
        let is_switch = |node: u32| topology.nodes[node as usize].kind == sluice_topo::NodeKind::Switch;
        let capacity = (0..topology.nodes.len())
            .map(|n| match is_switch(n as u32) {
                true => topology.ports[n].iter().filter(|p| is_switch(p.peer)).map(|p| p.rate as f64).sum(),
                false => 0.0,
            })
            .collect();
        EdgeLoad { up: vec![0; topology.nodes.len()], down: vec![0; topology.nodes.len()], capacity }
    }

    /// A flow from host `src` to host `dst` of `bytes`; a host's edge switch is its NIC's peer.
    fn add(&mut self, topology: &sluice_topo::Topology, src: u32, dst: u32, bytes: u64) {
        let (from, to) = (topology.nic(src).peer as usize, topology.nic(dst).peer as usize);
        if from != to {
            self.up[from] = self.up[from].saturating_add(bytes);
            self.down[to] = self.down[to].saturating_add(bytes);
        }
    }

    /// The highest load of an edge switch's links to other switches over `span` (0 for a span of 0).
    fn busiest(&self, span: Time) -> f64 {
        if span == 0 {
            return 0.0;
        }
        let seconds = span as f64 / PS_PER_S as f64;
        let bytes = self.up.iter().zip(&self.down).map(|(&up, &down)| up.max(down) as f64);
        let loads = bytes.zip(&self.capacity).filter(|(_, &c)| c > 0.0).map(|(b, &c)| b * 8.0 / (c * seconds));
        loads.fold(0.0, f64::max)
    }
}

/// The bytes each host sends and receives, and the first and last start.
struct HostLoad {
    sent: Vec<u64>,
    received: Vec<u64>,
    last_start: Time,
    first_start: Time,
}

impl HostLoad {
    fn new(hosts: usize) -> HostLoad {
        HostLoad { sent: vec![0; hosts], received: vec![0; hosts], last_start: 0, first_start: Time::MAX }
    }

    /// How long the flows take to arrive: from the first start to the last (0 when all start at once).
    fn span(&self) -> Time {
        self.last_start.saturating_sub(self.first_start)
    }

    /// Flow `f`, which sends `bytes`.
    fn add(&mut self, f: &sluice_workload::FlowSpec, bytes: u64) {
        self.sent[f.src as usize] = self.sent[f.src as usize].saturating_add(bytes);
        self.received[f.dst as usize] = self.received[f.dst as usize].saturating_add(bytes);
        self.last_start = self.last_start.max(f.start);
        self.first_start = self.first_start.min(f.start);
    }

    /// When a run without a fixed duration is expected to end: after the last start (of a flow or a
    /// closed loop's window), once the busiest host has sent or received all its bytes at its NIC rate.
    fn drain_time(&self, resolved: &Resolved) -> Time {
        let busiest = self.sent.iter().chain(&self.received).max().copied().unwrap_or(0);
        let loops_end = resolved.closed_loops.iter().map(|c| c.end).max().unwrap_or(0);
        let last_start = self.last_start.max(loops_end);
        last_start.saturating_add(sluice_core::serialization_ps(busiest, resolved.line_rate.max(1)))
    }
}

/// Payload bytes a flow sends: its size, or for a long-lived flow its NIC rate until it stops (or the
/// run ends).
fn flow_bytes_sent(f: &sluice_workload::FlowSpec, rate: sluice_core::Rate, end: Time) -> u64 {
    if f.size != UNBOUNDED_SIZE {
        return f.size;
    }
    let stop = f.stop.unwrap_or(end).min(end);
    (rate as f64 / 8.0 * stop.saturating_sub(f.start) as f64 / PS_PER_S as f64) as u64
}

/// Links on the first ECMP path from host `src` to host `dst`.
fn path_hops(resolved: &Resolved, src: u32, dst: u32) -> u64 {
    let topology = &resolved.topology;
    let (mut node, target) = (topology.hosts[src as usize], topology.hosts[dst as usize]);
    let mut hops = 0;
    while node != target && hops < topology.nodes.len() as u64 {
        let Some(&port) = resolved.routes.next_hops(node, dst).first() else {
            break;
        };
        node = topology.ports[node as usize][port as usize].peer;
        hops += 1;
    }
    hops
}

/// The memory this machine has available (`MemAvailable` of /proc/meminfo), or `None` where it cannot be
/// read. `SLUICE_MEM_AVAILABLE` (bytes) replaces the figure, so that tests can fix it.
pub fn available_memory() -> Option<u64> {
    if let Ok(text) = std::env::var("SLUICE_MEM_AVAILABLE") {
        return text.trim().parse().ok();
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuses a run whose estimated memory exceeds `available` (unknown: nothing is refused).
pub fn check_memory(estimate: &RunEstimate, available: Option<u64>) -> Result<(), String> {
    match available {
        Some(available) if estimate.memory_bytes() > available => Err(format!(
            "the run would need about {} of memory, more than the {} available ({}); shrink the scenario, or \
             give --force to run anyway",
            human(estimate.memory_bytes()),
            human(available),
            estimate.describe()
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(bytes: u64) -> RunEstimate {
        RunEstimate {
            memory: vec![("base", bytes / 2), ("flows", bytes - bytes / 2)],
            alive_packets: 4,
            data_packets: 1,
            packet_hops: 2,
            events: 3,
            huge_pages: false,
        }
    }

    #[test]
    fn memory_is_refused_only_above_what_is_available() {
        assert!(check_memory(&sized(3 << 20), Some(3 << 20)).is_ok());
        let err = check_memory(&sized((3 << 20) + 1), Some(3 << 20)).unwrap_err();
        assert!(
            err.starts_with("the run would need about 3.0 MiB of memory, more than the 3.0 MiB available"),
            "{err}"
        );
        assert!(check_memory(&sized(u64::MAX), None).is_ok(), "an unknown figure refuses nothing");
    }

    #[test]
    fn the_description_lists_the_parts() {
        assert_eq!(
            sized(4 << 30).describe(),
            "estimated run size: memory about 4.0 GiB (base 2.0 GiB, flows 2.0 GiB); 4 packets alive at the peak, 1 data \
             packets, 2 packet-hops, 3 events; huge pages off"
        );
    }

    /// `"auto"` asks from [`HUGE_PAGES_FROM`] of network state on; `"on"` and `"off"` whatever the size.
    #[test]
    fn huge_pages_follow_the_setting_and_for_auto_the_network_state() {
        assert!(!asks_for_huge_pages(HugePages::Auto, HUGE_PAGES_FROM - 1));
        assert!(asks_for_huge_pages(HugePages::Auto, HUGE_PAGES_FROM));
        assert!(asks_for_huge_pages(HugePages::On, 0));
        assert!(!asks_for_huge_pages(HugePages::Off, u64::MAX));
    }
}
