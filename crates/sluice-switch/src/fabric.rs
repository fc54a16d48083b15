//! The fabric: every switch of a topology in one process, driven by an explicit clock.
//!
//! Frames enter from hosts ([`Fabric::receive`]) and leave toward hosts through the callback of
//! [`Fabric::advance`]. In between, each frame crosses its host's link (serialised at the host's rate,
//! delayed by the link's propagation delay; the veth itself delivers at memory speed), then, switch by
//! switch along the topology's shortest paths (ECMP over the 5-tuple), an egress port: admission to
//! the switch's shared buffer (dynamic threshold, tail drop), RED or step ECN marking at enqueue or
//! dequeue, strict priority among up to eight queues, serialisation at the link rate, and the link's
//! delay line. Internal links are simulated; the last hop ends on the destination host's veth.
//!
//! Times inside are picoseconds, as in the simulator; the clock the caller passes is in nanoseconds.
//! Events of one port are taken in time order across ports, so a caller that falls behind replays
//! departures at their exact times and the link still runs at its rate.

use std::collections::HashMap;

use sluice_core::{Rng, Time, PS_PER_NS};
use sluice_sim::config::{LoadBalance, MarkAt, NonEct};
use sluice_topo::{NodeId, NodeKind, PortNo};
use sluice_wire::eth;
use sluice_wire::frame::{self, FiveTuple, Frame, L4};
use sluice_wire::sluice::{Flags, IntRecord, Kind};

use crate::config::{FabricConfig, ImpairAction, Pick};
use crate::pool::{Meta, Pool};
use crate::port::{Buffer, Peer, Port, MAX_QUEUES};
use crate::signal::{At, Hook, SignalCounters, Signals};
use crate::tokens::{Limiter, Verdict};

/// Fabric-wide counters (per-port ones are in [`crate::port::PortStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received from hosts.
    pub received: u64,
    /// Frames delivered to hosts.
    pub delivered: u64,
    /// Frames dropped because they are not IPv4 to a known host (ARP, IPv6, strays).
    pub unroutable: u64,
    /// Frames dropped because every packet slot was in use.
    pub no_slot: u64,
    /// Packets an impairment dropped.
    pub impaired_drops: u64,
    /// Packets an impairment marked.
    pub impaired_marks: u64,
}

/// One impairment rule's state.
#[derive(Debug, Default)]
struct Rule {
    /// Data packets of its flow it has seen leave the last switch.
    seen: u64,
    /// What it did.
    stats: ImpairStats,
}

/// What one impairment did, as the simulator counts a fault's work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairStats {
    /// Packets it dropped.
    pub dropped: u64,
    /// Packets it marked CE.
    pub marked: u64,
}

/// Which event is next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A port's delay line delivers or its transmitter frees.
    Port(usize),
    /// Throughput samples are due.
    Sample,
    /// A port's token limiter releases a token.
    Token(usize),
}

/// The fabric's state.
#[derive(Debug)]
pub struct Fabric {
    cfg: FabricConfig,
    pool: Pool,
    ports: Vec<Port>,
    /// Per node, per port number, the index into `ports` (a host's port 0 is its link).
    port_of: Vec<Vec<usize>>,
    buffers: Vec<Buffer>,
    /// The node of each buffer (a switch, or a host for its link).
    buffer_node: Vec<NodeId>,
    hosts_by_ip: HashMap<[u8; 4], u32>,
    rules: Vec<Rule>,
    red: Rng,
    spray: Rng,
    impair: Rng,
    counters: Counters,
    now: Time,
    sampler: crate::records::Sampler,
    tokens: Option<Limiter>,
    /// The run's switch signal at every switch port, when its algorithm has one.
    signals: Option<Box<Signals>>,
    /// Where a hook writes a signal packet before it is stored.
    feedback: Box<[u8; crate::pool::SLOT_BYTES]>,
}

/// Mixes 64 bits (SplitMix64's finaliser, Steele et al. OOPSLA 2014).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash of a 5-tuple.
fn tuple_hash(t: &FiveTuple) -> u64 {
    let addrs = (u32::from_be_bytes(t.src) as u64) << 32 | u32::from_be_bytes(t.dst) as u64;
    let rest = (t.protocol as u64) << 32 | (t.src_port as u64) << 16 | t.dst_port as u64;
    mix(mix(addrs) ^ rest)
}

impl Fabric {
    /// Builds the fabric: a port for each switch port and for each host link.
    pub fn new(cfg: FabricConfig) -> Fabric {
        let topo = &cfg.topology;
        let mut ports = Vec::new();
        let mut port_of = vec![Vec::new(); topo.nodes.len()];
        let mut buffers = Vec::new();
        let mut buffer_node = Vec::new();
        for (node, node_ports) in topo.ports.iter().enumerate() {
            let switch = topo.nodes[node].kind == NodeKind::Switch;
            buffers.push(Buffer { size: cfg.switch.buffer, ..Buffer::default() });
            buffer_node.push(node as NodeId);
            for (no, p) in node_ports.iter().enumerate() {
                let peer = match topo.host_of[p.peer as usize] {
                    Some(h) => Peer::Host(h),
                    None => Peer::Switch(p.peer),
                };
                let mut port =
                    Port::new(node as NodeId, no as PortNo, buffers.len() - 1, switch, peer, p.rate, p.delay);
                if switch && cfg.switch.ecn.enabled {
                    port.ecn = cfg.switch.ecn.for_rate(p.rate);
                }
                port_of[node].push(ports.len());
                ports.push(port);
            }
        }
        let hosts_by_ip = cfg.hosts.iter().enumerate().map(|(i, h)| (h.ip, i as u32)).collect();
        let seed = cfg.seed;
        let rules = cfg.impairments.iter().map(|_| Rule::default()).collect();
        let sampler = crate::records::Sampler::new(&cfg.sampling, |node, port| port_of[node as usize][port as usize]);
        let tokens = cfg.switch.token_limiter.map(|limits| Limiter::new(limits, ports.len(), seed));
        let signals = cfg.signal.clone().map(|design| Box::new(Signals::new(design, &ports)));
        Fabric {
            pool: Pool::new(cfg.slots),
            cfg,
            ports,
            port_of,
            buffers,
            buffer_node,
            hosts_by_ip,
            rules,
            red: Rng::named(seed, "switch.red"),
            spray: Rng::named(seed, "switch.spray"),
            impair: Rng::named(seed, "switch.impair"),
            counters: Counters::default(),
            now: 0,
            sampler,
            tokens,
            signals,
            feedback: Box::new([0; crate::pool::SLOT_BYTES]),
        }
    }

    /// What the switch signal's hooks did (`None` when the run has no signal).
    pub fn signal_counters(&self) -> Option<SignalCounters> {
        self.signals.as_ref().map(|s| s.counters)
    }

    /// The switch signal's current value at port `port` of switch `node` (`None` without a signal or at
    /// a host link).
    pub fn signal_value(&self, node: NodeId, port: PortNo) -> Option<u64> {
        self.signals.as_ref()?.value(self.port_of[node as usize][port as usize])
    }

    /// The configuration.
    pub fn config(&self) -> &FabricConfig {
        &self.cfg
    }

    /// Fabric-wide counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// What each impairment did, in the order of [`FabricConfig::impairments`].
    pub fn impairment_stats(&self) -> Vec<ImpairStats> {
        self.rules.iter().map(|r| r.stats).collect()
    }

    /// All ports: switch ports and host links, in node order.
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    /// The port `port` of node `node` (a host's port 0 is its link into the fabric).
    pub fn port(&self, node: NodeId, port: PortNo) -> &Port {
        &self.ports[self.port_of[node as usize][port as usize]]
    }

    /// Buffers with their nodes: one per switch and one per host link.
    pub fn buffers(&self) -> impl Iterator<Item = (NodeId, &Buffer)> {
        self.buffer_node.iter().copied().zip(&self.buffers)
    }

    /// Tokens the token limiters dropped and marked.
    pub fn token_counts(&self) -> (u64, u64) {
        self.tokens.as_ref().map_or((0, 0), |l| (l.dropped, l.marked))
    }

    /// Packet slots in use (queued or on a delay line).
    pub fn packets_held(&self) -> usize {
        self.pool.in_use()
    }

    /// The clock of the last call, ns.
    pub fn now_ns(&self) -> u64 {
        self.now / PS_PER_NS
    }

    /// The time of the next event, ns (rounded up), or `None` when nothing is queued or in flight.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.next().map(|(t, _)| t.div_ceil(PS_PER_NS))
    }

    fn next(&self) -> Option<(Time, Next)> {
        let mut best: Option<(Time, Next)> = self.sampler.due().map(|t| (t, Next::Sample));
        if let Some((t, port)) = self.tokens.as_ref().and_then(Limiter::next_release) {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, Next::Token(port)));
            }
        }
        for (i, port) in self.ports.iter().enumerate() {
            if let Some(t) = port.next_event(&self.pool) {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, Next::Port(i)));
                }
            }
        }
        best
    }

    /// Takes a frame that host `host` sent at `now_ns` (call [`Fabric::advance`] up to `now_ns`
    /// first). Frames that are not IPv4 to a known host are counted and dropped.
    pub fn receive(&mut self, now_ns: u64, host: u32, frame: &[u8]) {
        let now = (now_ns * PS_PER_NS).max(self.now);
        self.counters.received += 1;
        let Some(meta) = self.classify(frame) else {
            self.counters.unroutable += 1;
            return;
        };
        let Some(id) = self.pool.store(frame) else {
            self.counters.no_slot += 1;
            return;
        };
        let len = self.pool.meta(id).len;
        *self.pool.meta_mut(id) = Meta { len, ..meta };
        let node = self.cfg.topology.hosts.get(host as usize).copied();
        let Some(&link) = node.and_then(|n| self.port_of[n as usize].first()) else {
            self.pool.release(id);
            self.counters.unroutable += 1;
            return;
        };
        self.offer(link, id, now);
    }

    /// Runs every event up to `now_ns`, handing each frame that reaches a host to `emit` (host index,
    /// frame) with its MAC addresses set for that host's link.
    pub fn advance(&mut self, now_ns: u64, emit: &mut dyn FnMut(u32, &[u8])) {
        let limit = now_ns * PS_PER_NS;
        while let Some((t, next)) = self.next() {
            if t > limit {
                break;
            }
            self.now = self.now.max(t);
            match next {
                Next::Sample => self.sampler.sample(t, &self.ports),
                Next::Port(p) => self.port_event(p, t, emit),
                Next::Token(p) => self.release_token(p, t),
            }
        }
        self.now = self.now.max(limit);
    }

    fn port_event(&mut self, p: usize, t: Time, emit: &mut dyn FnMut(u32, &[u8])) {
        if let Some(id) = self.ports[p].arrived(&mut self.pool, t) {
            let due = self.pool.meta(id).due;
            match self.ports[p].peer {
                Peer::Host(h) => self.deliver(h, id, emit),
                Peer::Switch(node) => self.forward(node, id, due),
            }
            return;
        }
        if self.ports[p].ready(t) {
            self.start_next(p, t);
        }
    }

    /// Reads what forwarding needs from a frame: `None` unless it is IPv4 to a known host.
    fn classify(&self, bytes: &[u8]) -> Option<Meta> {
        let f = Frame::parse(bytes).ok()?;
        let dst = *self.hosts_by_ip.get(&f.ip.dst)?;
        let params = &self.cfg.switch;
        let (data, control, int) = match f.l4 {
            L4::Tcp { payload_len, .. } => (payload_len > 0, payload_len == 0, false),
            L4::Udp { sluice: Some(h), .. } => {
                (h.kind == Kind::Data, h.kind != Kind::Data, h.flags.has(Flags::INT_REQUEST))
            }
            L4::Udp { sluice: None, .. } => (true, false, false),
            L4::Other => (false, false, false),
        };
        let last = params.queues.clamp(1, MAX_QUEUES as u8) - 1;
        let queue = if control {
            params.control_queue
        } else {
            match f.ip.dscp >> 3 {
                0 => params.data_queue,
                class => 7 - class,
            }
        };
        let sluice_flow = match f.l4 {
            L4::Udp { sluice: Some(h), .. } => Some(h.flow),
            _ => None,
        };
        let tuple = f.five_tuple();
        let impair = self.cfg.impairments.iter().position(|r| r.matches(&tuple, sluice_flow)).map(|i| i as u16);
        let token = matches!(f.l4, L4::Udp { sluice: Some(h), .. } if h.kind == Kind::Token);
        Some(Meta {
            queue: queue.min(last),
            ect: f.ip.ecn.is_ect(),
            data,
            int,
            token,
            dst,
            hash: tuple_hash(&f.five_tuple()),
            impair,
            ..Meta::default()
        })
    }

    fn wire(&self, id: u32) -> u64 {
        self.pool.meta(id).len as u64 + self.cfg.switch.wire_overhead as u64
    }

    /// A packet reached switch `node` at `t`: picks its egress port and offers it there.
    fn forward(&mut self, node: NodeId, id: u32, t: Time) {
        let meta = *self.pool.meta(id);
        let hops = self.cfg.routes.next_hops(node, meta.dst);
        let pick = match hops.len() {
            0 => {
                self.counters.unroutable += 1;
                self.pool.release(id);
                return;
            }
            1 => 0,
            n => match self.cfg.switch.load_balance {
                LoadBalance::FlowHash => (mix(meta.hash ^ node as u64) % n as u64) as usize,
                LoadBalance::PacketSpray => self.spray.below(n as u64) as usize,
            },
        };
        let port = self.port_of[node as usize][hops[pick] as usize];
        if meta.token && self.tokens.is_some() {
            return self.limit_token(port, id, t);
        }
        self.offer(port, id, t);
    }

    /// A token bound for switch port `p` meets the port's token limiter.
    fn limit_token(&mut self, p: usize, id: u32, t: Time) {
        let limiter = self.tokens.as_mut().expect("a token limiter");
        match limiter.offer(p, self.ports[p].rate, id, self.pool.meta(id).ect, t) {
            // The limiter counts the tokens it marks (the simulator's `tokens_marked`); the port's
            // `ecn_marks` count data and control marks only, as the simulator's do.
            Verdict::Pass { mark } => {
                if mark {
                    self.set_ce(id);
                }
                self.offer(p, id, t);
            }
            Verdict::Held { mark } => {
                if mark {
                    self.set_ce(id);
                }
            }
            Verdict::Drop => self.drop_at(p, id),
        }
    }

    /// Port `p`'s token limiter lets its next token go at `t`.
    fn release_token(&mut self, p: usize, t: Time) {
        let rate = self.ports[p].rate;
        if let Some(id) = self.tokens.as_mut().and_then(|l| l.release(p, rate, t)) {
            self.offer(p, id, t);
        }
    }

    /// Packet `id` arrives at egress port `p` at `t`: sent at once by an idle port with empty queues
    /// (no occupancy, so no mark, as in the simulator), else admitted to its queue or dropped.
    fn offer(&mut self, p: usize, id: u32, t: Time) {
        if self.signals.is_some() && self.ports[p].switch {
            self.signal_hook(Hook::Enqueue, p, id, t);
        }
        let meta = *self.pool.meta(id);
        let wire = self.wire(id);
        let queue = meta.queue as usize;
        if self.ports[p].is_empty() && self.ports[p].busy_until <= t {
            self.send(p, id, t);
            return;
        }
        let marking = self.ports[p].switch && self.cfg.switch.ecn.enabled;
        if marking && self.cfg.switch.ecn.non_ect == NonEct::Drop && meta.data && !meta.ect {
            let q = self.ports[p].queue_bytes[queue];
            if self.red_picks(p, q) {
                self.drop_at(p, id);
                return;
            }
        }
        if !self.admit(p, queue, wire, t) {
            self.drop_at(p, id);
            return;
        }
        if marking && self.cfg.switch.ecn.mark_at == MarkAt::Enqueue {
            let q = self.ports[p].queue_bytes[queue];
            self.maybe_mark(p, id, q);
        }
        self.ports[p].enqueue(&mut self.pool, t, queue, id, wire);
    }

    /// Buffer admission: the buffer's capacity, and for a switch the dynamic threshold on the queue
    /// (the simulator's lossy admission).
    fn admit(&mut self, p: usize, queue: usize, wire: u64, t: Time) -> bool {
        let port = &self.ports[p];
        let buffer = &self.buffers[port.buffer];
        if buffer.used + wire > buffer.size {
            return false;
        }
        if port.switch {
            let free = (buffer.size - buffer.used) as f64;
            if (port.queue_bytes[queue] + wire) as f64 > self.cfg.switch.dt_alpha * free {
                return false;
            }
        }
        self.buffers[port.buffer].account(t, wire as i64);
        true
    }

    /// Whether RED picks a packet at queue length `q` on port `p` (probability from the port's
    /// thresholds; certain at and above `kmax`, never at or below `kmin`).
    fn red_picks(&mut self, p: usize, q: u64) -> bool {
        let probability = self.ports[p].ecn.probability(q);
        probability > 0.0 && (probability >= 1.0 || self.red.next_f64() < probability)
    }

    fn maybe_mark(&mut self, p: usize, id: u32, q: u64) {
        if !self.pool.meta(id).ect || !self.red_picks(p, q) {
            return;
        }
        self.mark(p, id);
    }

    fn mark(&mut self, p: usize, id: u32) {
        if self.set_ce(id) {
            self.ports[p].stats.ecn_marks += 1;
        }
    }

    /// Sets Congestion Experienced on frame `id`; whether it was ECN-capable (and so is marked now).
    fn set_ce(&mut self, id: u32) -> bool {
        let marked = frame::set_ce(self.pool.bytes_mut(id));
        if marked {
            self.pool.meta_mut(id).ect = false;
        }
        marked
    }

    fn drop_at(&mut self, p: usize, id: u32) {
        let meta = *self.pool.meta(id);
        self.ports[p].count_drop(meta.len as u64, meta.data);
        self.pool.release(id);
    }

    /// The transmitter of `p` is free at `t` with packets waiting: dequeues the next (strict
    /// priority), releases its buffer, marks at dequeue from the bytes left behind, and sends it.
    fn start_next(&mut self, p: usize, t: Time) {
        let overhead = self.cfg.switch.wire_overhead as u64;
        let Some((id, queue)) =
            self.ports[p].dequeue(&mut self.pool, t, |pool, id| pool.meta(id).len as u64 + overhead)
        else {
            return;
        };
        let wire = self.wire(id);
        let buffer = self.ports[p].buffer;
        self.buffers[buffer].account(t, -(wire as i64));
        if self.ports[p].switch && self.cfg.switch.ecn.enabled && self.cfg.switch.ecn.mark_at == MarkAt::Dequeue {
            let left = self.ports[p].queue_bytes[queue];
            self.maybe_mark(p, id, left);
        }
        self.send(p, id, t);
    }

    /// Puts packet `id` on port `p`'s wire at `t`, after the impairments of the last hop and the INT
    /// record of a switch port.
    fn send(&mut self, p: usize, id: u32, t: Time) {
        let meta = *self.pool.meta(id);
        let port = &self.ports[p];
        if port.switch && port.peer == Peer::Host(meta.dst) && meta.data {
            if let Some(rule) = meta.impair {
                if self.impaired(p, id, rule as usize) {
                    return;
                }
            }
        }
        if self.ports[p].switch && self.cfg.switch.int && meta.int {
            self.stamp_int(p, id, t);
        }
        if self.signals.is_some() && self.ports[p].switch {
            self.signal_hook(Hook::Dequeue, p, id, t);
        }
        let wire = self.wire(id);
        self.ports[p].send(&mut self.pool, t, id, wire);
    }

    /// Runs the switch signal's `hook` at switch port `p` for packet `id` at `t`: the value it writes
    /// goes into the packet, and a signal packet it sends is routed from this switch toward the data
    /// packet's sender (the simulator routes it as if it arrived with the data packet).
    fn signal_hook(&mut self, hook: Hook, p: usize, id: u32, t: Time) {
        let Some(signals) = self.signals.as_deref_mut() else { return };
        let port = &self.ports[p];
        let buffer = &self.buffers[port.buffer];
        let len = self.pool.meta(id).len as usize;
        let wire = len as u64 + self.cfg.switch.wire_overhead as u64;
        let at = At { index: p, port, buffer_used: buffer.used, buffer_size: buffer.size, now: t, wire };
        let Some(n) = signals.run(hook, at, self.pool.bytes_mut(id), len, &mut self.feedback[..]) else { return };
        let Some(meta) = self.classify(&self.feedback[..n]) else { return };
        let Some(fid) = self.pool.store(&self.feedback[..n]) else {
            self.counters.no_slot += 1;
            return;
        };
        *self.pool.meta_mut(fid) = Meta { len: n as u32, ..meta };
        let node = self.ports[p].node;
        self.forward(node, fid, t);
    }

    /// Applies the impairments of packet `id`'s flow, from rule `first` (the first that names the flow)
    /// on, to the packet leaving `p`: each counts the packet, the first that picks it decides. `true`
    /// when one dropped it.
    fn impaired(&mut self, p: usize, id: u32, first: usize) -> bool {
        let mut verdict = None;
        for rule in first..self.rules.len() {
            if rule != first && !self.cfg.impairments[rule].same_flow(&self.cfg.impairments[first]) {
                continue;
            }
            let seen = self.rules[rule].seen;
            self.rules[rule].seen += 1;
            let picked = match &self.cfg.impairments[rule].pick {
                Pick::Packets(list) => list.binary_search(&seen).is_ok(),
                Pick::Fraction(f) => self.impair.next_f64() < *f,
            };
            if picked && verdict.is_none() {
                let action = self.cfg.impairments[rule].action;
                // A mark picks only ECN-capable packets; others pass, and later rules may still act.
                if action == ImpairAction::Drop || self.pool.meta(id).ect {
                    verdict = Some((rule, action));
                }
            }
        }
        match verdict {
            Some((rule, ImpairAction::Drop)) => {
                self.rules[rule].stats.dropped += 1;
                self.counters.impaired_drops += 1;
                self.drop_at(p, id);
                true
            }
            Some((rule, ImpairAction::Mark)) => {
                self.mark(p, id);
                self.rules[rule].stats.marked += 1;
                self.counters.impaired_marks += 1;
                false
            }
            None => false,
        }
    }

    /// Appends port `p`'s INT record (the simulator's `IntHop`: time, cumulative transmitted bytes,
    /// queue length, rate) to the sluice packet `id`, or counts that it did not fit.
    fn stamp_int(&mut self, p: usize, id: u32, t: Time) {
        let port = &self.ports[p];
        let hop = IntRecord { ts_ns: t / PS_PER_NS, tx_bytes: port.stats.tx_bytes, qlen: port.bytes, rate: port.rate };
        let len = self.pool.meta(id).len as usize;
        let mtu = self.cfg.switch.ip_mtu as usize;
        match frame::append_int(self.pool.bytes_mut(id), len, mtu, &hop) {
            Ok(grown) => self.pool.meta_mut(id).len = grown as u32,
            Err(_) => self.ports[p].stats.int_no_room += 1,
        }
    }

    fn deliver(&mut self, host: u32, id: u32, emit: &mut dyn FnMut(u32, &[u8])) {
        let addr = self.cfg.hosts[host as usize];
        eth::set_addresses(self.pool.bytes_mut(id), addr.mac, addr.gateway_mac);
        emit(host, self.pool.frame(id));
        self.counters.delivered += 1;
        self.pool.release(id);
    }

    /// The sampler's series so far.
    pub fn sampler(&self) -> &crate::records::Sampler {
        &self.sampler
    }
}

impl Fabric {
    /// Closes the sampler's last interval at `end` (ps).
    pub fn finish_sampling(&mut self, end: Time) {
        self.sampler.finish(end, &self.ports);
    }
}
