//! An output-queued switch with a shared buffer: ECMP forwarding, dynamic-threshold admission (lossy) or
//! PFC with headroom (lossless), RED/ECN marking at enqueue or dequeue, INT stamping, Bolt's
//! programmable egress queue (queue notifications, PRU tokens, supply matching) and an algorithm's
//! switch signal (`net/signal.rs`).

use sluice_cc::IntHop;
use sluice_core::Rng;
use sluice_results::PacketEvent;

use crate::config::{LoadBalance, MarkAt, NonEct};
use crate::engine::packet::{Kind, FLAG_CE, FLAG_ECT};
use crate::engine::trace::Site;
use crate::engine::{Core, Event};
use crate::net::bolt::Bolt;
use crate::net::fault::{PortFaults, Seen, Verdict};
use crate::net::port::Port;
use crate::net::signal::{At, SignalPorts};
use crate::net::tokens::{Forwarder, Hop, TokenSwitch, Verdict as TokenVerdict};
use crate::net::Fabric;

/// Shared-buffer occupancy statistics of a switch.
#[derive(Debug, Clone, Default)]
pub struct BufferStats {
    /// Largest occupancy seen.
    pub max: u64,
    /// Integral of occupancy over time (byte-picoseconds).
    pub area: u128,
    /// When occupancy last changed.
    pub last_change: u64,
}

/// A switch.
///
/// What every packet-hop reads (the ports, the node, the hooks' tests) fills the record's first cache
/// line, and the buffer accounting of a packet that waits the next two; records are aligned to a line.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Switch {
    /// Egress ports (port number = index).
    pub ports: Vec<Port>,
    /// Faults injected at this switch's ports, when the scenario has any here ([`Switch::set_faults`]).
    faults: Option<Box<PortFaults>>,
    /// The switch side of the algorithm's signal, when it has one ([`Switch::set_signal`]).
    signal: Option<Box<SignalPorts>>,
    /// Receiver-driven state (token limiters), when a token algorithm runs with them.
    pub(crate) tokens: Option<Box<TokenSwitch>>,
    /// Node id in the topology.
    pub node: u32,
    /// Bolt or a signal acts when a packet is routed to a port: one test on the way of every packet.
    enqueue_hooks: bool,
    /// Faults or a signal act when a packet leaves a port: one test on the way of every packet.
    egress_hooks: bool,
    /// No optional feature acts here ([`Switch::settle_plain`]): a hop tests for none of them.
    plain: bool,
    /// Bytes held in the shared buffer.
    pub used: u64,
    /// Bytes held per ingress port and queue outside headroom (PFC accounting).
    ingress: Vec<[u64; 8]>,
    /// Headroom bytes held per ingress port and queue.
    headroom_used: Vec<[u64; 8]>,
    /// Bytes above the per-queue reserve, over all ingress queues.
    shared_used: u64,
    /// Buffer left for the shared pool after headroom and reserves.
    pool: u64,
    /// Buffer statistics.
    pub buffer: BufferStats,
    /// Per ingress port: XOFF sent upstream, and which queues hold headroom bytes.
    pfc_flags: Vec<PfcFlags>,
    /// Headroom reserved per ingress port.
    headroom: Vec<u64>,
    /// Bolt's egress-queue state, when Bolt's switch logic is on.
    bolt: Option<Box<Bolt>>,
    rng: Rng,
}

/// The fields every hop reads share the first line; the buffer accounting starts the second.
const _: () = assert!(
    std::mem::offset_of!(Switch, used) < 64
        && std::mem::offset_of!(Switch, ingress) == 64
        && std::mem::offset_of!(Switch, pfc_flags) < 192
);

/// One ingress port's PFC state, a bit per queue in each field. Admission and release test these bits
/// before touching the port's `headroom_used` line, which most packets never need: at k=32 the two
/// `[u64; 8]` lines of PFC accounting per queued packet miss the caches.
#[derive(Clone, Copy, Debug, Default)]
struct PfcFlags {
    /// XOFF sent upstream.
    xoff: u8,
    /// Set iff the queue's `headroom_used` is above zero.
    in_headroom: u8,
}

/// Mixes a flow id and a switch id into an ECMP hash (SplitMix64 finalizer).
#[inline]
fn ecmp_hash(flow: u32, node: u32) -> u64 {
    let mut z = ((flow as u64) << 32 | node as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `hash % choices`, by a mask when `choices` is a power of two (a fat-tree's up ports): every packet's
/// route at a switch with several next hops asks for it, and a 64-bit division takes tens of cycles.
#[inline]
fn pick(hash: u64, choices: usize) -> u64 {
    let choices = choices as u64;
    if choices.is_power_of_two() {
        hash & (choices - 1)
    } else {
        hash % choices
    }
}

impl Switch {
    /// A switch at `node` with `ports`.
    pub fn new(node: u32, ports: Vec<Port>, fabric: &Fabric, seed: u64) -> Switch {
        let cfg = &fabric.config;
        let data_wire = (fabric.link.mtu + fabric.link.header_bytes) as u64;
        let headroom: Vec<u64> = ports.iter().map(|p| cfg.pfc.headroom_for(p.rate, p.delay, data_wire)).collect();
        let reserved = headroom.iter().sum::<u64>() + cfg.pfc.reserve * ports.len() as u64;
        let n = ports.len();
        Switch {
            node,
            ports,
            used: 0,
            buffer: BufferStats::default(),
            ingress: vec![[0; 8]; n],
            headroom_used: vec![[0; 8]; n],
            headroom,
            shared_used: 0,
            pfc_flags: vec![PfcFlags::default(); n],
            bolt: cfg.bolt.enabled.then(|| Box::new(Bolt::new(n))),
            pool: cfg.buffer.saturating_sub(reserved),
            rng: Rng::named(seed, &format!("switch.{node}")),
            tokens: None,
            faults: None,
            signal: None,
            enqueue_hooks: cfg.bolt.enabled,
            egress_hooks: false,
            plain: false,
        }
    }

    /// Injects faults at this switch's ports.
    pub(crate) fn set_faults(&mut self, faults: Option<Box<PortFaults>>) {
        self.plain = false;
        self.faults = faults;
        self.egress_hooks = self.faults.is_some() || self.signal.is_some();
    }

    /// Runs a signal's switch side at this switch's ports.
    pub(crate) fn set_signal(&mut self, signal: Option<Box<SignalPorts>>) {
        self.plain = false;
        self.signal = signal;
        self.enqueue_hooks = self.bolt.is_some() || self.signal.is_some();
        self.egress_hooks = self.faults.is_some() || self.signal.is_some();
    }

    /// Lets hops here skip the tests for the optional features when none acts: no faults, signal, token
    /// limiter or Bolt at this switch, and none of the run-wide ones (`plain_run`: no INT, no early drop
    /// of non-ECT packets, no packet trace, not a part of a partitioned run). Called once the switch and
    /// the run are set up; setting faults or a signal afterwards clears it.
    pub(crate) fn settle_plain(&mut self, plain_run: bool) {
        // The hooks' flags cover Bolt, the signal and the faults.
        self.plain = plain_run && self.tokens.is_none() && !self.enqueue_hooks && !self.egress_hooks;
    }

    /// Whether no optional feature acts here ([`Switch::settle_plain`]).
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
    }

    /// The faults injected here, if any.
    pub(crate) fn faults(&self) -> Option<&PortFaults> {
        self.faults.as_deref()
    }

    /// Handles packet `id` arriving on `in_port`.
    pub fn receive(&mut self, core: &mut Core, fabric: &Fabric, in_port: u16, id: u32) {
        self.receive_as::<false>(core, fabric, in_port, id);
    }

    /// [`Switch::receive`], inlined into the run loop, as [`Switch::port_free_as`] is: a call per
    /// packet-hop saved and restored registers for more than its own work. `PLAIN` only at a switch where
    /// no optional feature acts ([`Switch::is_plain`]): the tests for them drop out of the hop.
    #[inline(always)]
    pub(crate) fn receive_as<const PLAIN: bool>(&mut self, core: &mut Core, fabric: &Fabric, in_port: u16, id: u32) {
        debug_assert!(!PLAIN || self.plain, "a plain hop at switch {}, where a feature acts", self.node);
        if !PLAIN && self.faults.is_some() && self.lost_on_arrival(core, in_port, id) {
            return;
        }
        let p = *core.arena.get(id);
        let out = self.route::<PLAIN>(fabric, p.flow, p.dst) as usize;
        let rd = if PLAIN { None } else { fabric.rd };
        if let Some(env) = rd {
            if let Some(mut tokens) = self.tokens.take() {
                // The features run with their state taken out of the switch they call back into.
                let verdict = tokens.arrive(self, core, fabric, env, Hop { in_port, out, id });
                self.tokens = Some(tokens);
                if verdict == TokenVerdict::Consumed {
                    return;
                }
            }
        }
        self.forward::<PLAIN>(core, fabric, in_port, out, id);
    }

    /// Admits packet `id`, arrived on `in_port`, to egress port `out` (or sends it at once when the port
    /// is idle), or drops it. Inlined with [`Switch::route`] into [`Switch::receive`]: every packet-hop
    /// takes this path, and the calls' saving and restoring of registers cost more than their work.
    #[inline(always)]
    pub(crate) fn forward<const PLAIN: bool>(
        &mut self,
        core: &mut Core,
        fabric: &Fabric,
        in_port: u16,
        out: usize,
        id: u32,
    ) {
        let p = *core.arena.get(id);
        if !PLAIN && self.enqueue_hooks {
            self.on_enqueue(core, fabric, in_port, out, id);
        }
        let queue = p.queue as usize;
        if self.ports[out].bytes == 0 && self.ports[out].idle(core.now) && self.ports[out].paused & (1 << queue) == 0 {
            // An idle port with empty queues sends at once: the packet would be admitted and dequeued at
            // the same instant, with no occupancy and no mark (RED marks nothing at queue length 0).
            self.depart::<PLAIN>(core, fabric, out, id, p.kind, p.wire);
            return;
        }
        if !PLAIN && fabric.config.ecn.non_ect == NonEct::Drop && self.early_drop(core, fabric, out, queue, id) {
            return;
        }
        if !self.admit(core, fabric, in_port as usize, out, queue, p.wire) {
            self.drop_packet(core, out, id);
            return;
        }
        let cfg = fabric.config;
        if cfg.ecn.enabled && cfg.ecn.mark_at == MarkAt::Enqueue {
            let q = self.ports[out].queue_bytes[queue];
            self.maybe_mark(core, out, id, q);
        }
        core.arena.get_mut(id).ingress = in_port;
        self.ports[out].enqueue(core.now, p.queue, id, p.wire);
        if !PLAIN {
            core.trace_packet(
                || Site::packet(PacketEvent::Enqueue, self.node, out as u16, id),
                || self.ports[out].bytes,
            );
        }
        self.try_transmit::<PLAIN>(core, fabric, out as u16);
    }

    /// The egress port of a packet of `flow` toward host `dst`. `PLAIN` as for [`Switch::receive_as`]: a
    /// token limiter is one of the features a plain switch has none of.
    #[inline(always)]
    pub(crate) fn route<const PLAIN: bool>(&mut self, fabric: &Fabric, flow: u32, dst: u32) -> u16 {
        let hops = fabric.routes.next_hops(self.node, dst);
        debug_assert!(!hops.is_empty(), "switch {} has no route to host {dst}", self.node);
        match fabric.config.load_balance {
            // One next hop (down, toward the host) or several (up) is a coin toss from packet to packet,
            // and a mispredicted branch costs more than the hash: the hash is taken either way, and one
            // next hop is pick 0. Token transports with limiters need tokens and data on the same links
            // (symmetric ECMP): the same hash at every switch.
            LoadBalance::FlowHash => {
                let limiter = !PLAIN && fabric.rd.is_some_and(|r| r.transport.token_limiter);
                let salt = if limiter { 0 } else { self.node };
                hops[pick(ecmp_hash(flow, salt), hops.len()) as usize]
            }
            // A draw only where there is a choice: the random stream is the run's.
            LoadBalance::PacketSpray if hops.len() == 1 => hops[0],
            LoadBalance::PacketSpray => hops[self.rng.below(hops.len() as u64) as usize],
        }
    }

    /// Buffer admission. Lossless: the packet goes to the shared pool or, past the PFC threshold, to the
    /// ingress headroom (pausing upstream). Lossy: dynamic threshold on the egress queue.
    fn admit(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, out: usize, queue: usize, wire: u32) -> bool {
        let cfg = fabric.config;
        let wire = wire as u64;
        if self.used + wire > cfg.buffer {
            return false;
        }
        if cfg.pfc.enabled {
            if !self.admit_lossless(in_port, queue, wire, cfg.pfc.reserve, cfg.pfc.shift) {
                return false;
            }
            self.check_pause(core, fabric, in_port, queue);
        } else {
            let free = (cfg.buffer - self.used) as f64;
            if (self.ports[out].queue_bytes[queue] + wire) as f64 > cfg.dt_alpha * free {
                return false;
            }
        }
        self.account_buffer(core.now, wire as i64);
        true
    }

    /// The XOFF threshold for one ingress queue's shared bytes (HPCC artifact switch-mmu.cc).
    #[inline]
    fn pfc_threshold(&self, shift: u32) -> u64 {
        self.pool.saturating_sub(self.shared_used) >> shift
    }

    fn admit_lossless(&mut self, in_port: usize, queue: usize, wire: u64, reserve: u64, shift: u32) -> bool {
        let held = self.ingress[in_port][queue];
        let shared_before = held.saturating_sub(reserve);
        let shared_after = (held + wire).saturating_sub(reserve);
        if shared_after > shared_before && shared_after > self.pfc_threshold(shift) {
            let room = self.headroom[in_port];
            let used: u64 = self.headroom_used[in_port].iter().sum();
            if used + wire > room {
                return false;
            }
            self.headroom_used[in_port][queue] += wire;
            self.pfc_flags[in_port].in_headroom |= 1 << queue;
            return true;
        }
        self.ingress[in_port][queue] = held + wire;
        self.shared_used += shared_after - shared_before;
        true
    }

    fn check_pause(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, queue: usize) {
        let flags = self.pfc_flags[in_port];
        if flags.xoff & (1 << queue) != 0 {
            return;
        }
        let shared = self.ingress[in_port][queue].saturating_sub(fabric.config.pfc.reserve);
        if flags.in_headroom & (1 << queue) != 0 || shared >= self.pfc_threshold(fabric.config.pfc.shift) {
            self.pfc_flags[in_port].xoff |= 1 << queue;
            self.send_pfc(core, fabric, in_port, queue, true);
        }
    }

    fn check_resume(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, queue: usize) {
        let flags = self.pfc_flags[in_port];
        if flags.xoff & (1 << queue) == 0 || flags.in_headroom & (1 << queue) != 0 {
            return;
        }
        let pfc = &fabric.config.pfc;
        let shared = self.ingress[in_port][queue].saturating_sub(pfc.reserve);
        if shared == 0 || shared + pfc.resume_offset <= self.pfc_threshold(pfc.shift) {
            self.pfc_flags[in_port].xoff &= !(1 << queue);
            self.send_pfc(core, fabric, in_port, queue, false);
        }
    }

    /// Sends a PFC frame upstream through `port`; it reaches the peer after its serialization and the
    /// link's propagation delay. The frame does not wait for a data packet on the wire (802.1Qbb frames
    /// are small; the error is at most one MTU's serialization).
    fn send_pfc(&mut self, core: &mut Core, fabric: &Fabric, port: usize, queue: usize, pause: bool) {
        let event = if pause { PacketEvent::PauseSent } else { PacketEvent::ResumeSent };
        core.trace_packet(|| Site::pfc(event, self.node, port as u16, queue as u8), || self.ports[port].bytes);
        let p = &mut self.ports[port];
        let at = core.now + p.serialization(fabric.link.pause_bytes) + p.delay;
        core.schedule_across(at, Event::Pfc { node: p.peer, port: p.peer_port, queue: queue as u8, pause });
        if pause {
            p.stats.pauses_sent += 1;
            core.counters.pfc_pauses += 1;
        }
    }

    /// Returns a departing packet's bytes to the buffer and its ingress accounting.
    pub(crate) fn release(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, queue: usize, wire: u64) {
        self.account_buffer(core.now, -(wire as i64));
        if !fabric.config.pfc.enabled {
            return;
        }
        let from_headroom = self.release_headroom(in_port, queue, wire);
        let rest = wire - from_headroom;
        if rest > 0 {
            let reserve = fabric.config.pfc.reserve;
            let held = self.ingress[in_port][queue];
            let shared_before = held.saturating_sub(reserve);
            let after = held - rest.min(held);
            self.ingress[in_port][queue] = after;
            self.shared_used -= shared_before - after.saturating_sub(reserve);
        }
        self.check_resume(core, fabric, in_port, queue);
    }

    /// Takes up to `wire` bytes off the queue's headroom, when it holds any; returns how many.
    #[inline]
    fn release_headroom(&mut self, in_port: usize, queue: usize, wire: u64) -> u64 {
        if self.pfc_flags[in_port].in_headroom & (1 << queue) == 0 {
            debug_assert_eq!(self.headroom_used[in_port][queue], 0, "headroom bytes without their flag");
            return 0;
        }
        let held = &mut self.headroom_used[in_port][queue];
        let taken = (*held).min(wire);
        *held -= taken;
        if *held == 0 {
            self.pfc_flags[in_port].in_headroom &= !(1 << queue);
        }
        taken
    }

    fn account_buffer(&mut self, now: u64, delta: i64) {
        let b = &mut self.buffer;
        b.area += self.used as u128 * (now - b.last_change) as u128;
        b.last_change = now;
        self.used = (self.used as i64 + delta) as u64;
        b.max = b.max.max(self.used);
    }

    pub(crate) fn drop_packet(&mut self, core: &mut Core, out: usize, id: u32) {
        let p = core.arena.get(id);
        let stats = &mut self.ports[out].stats;
        stats.drops += 1;
        stats.dropped_bytes += p.payload as u64;
        core.counters.drops += 1;
        if p.kind == Kind::Data {
            stats.data_drops += 1;
            core.counters.data_drops += 1;
            core.counters.bytes_dropped += p.payload as u64;
        }
        core.trace_packet(|| Site::packet(PacketEvent::Drop, self.node, out as u16, id), || self.ports[out].bytes);
        core.arena.free(id);
    }

    /// RED's early drop of a data packet that is not ECN-capable, with the probability an ECN-capable
    /// one would be marked for the queue it finds (`[switch.ecn] non_ect = "drop"`); `true` when dropped.
    #[cold]
    #[inline(never)]
    fn early_drop(&mut self, core: &mut Core, fabric: &Fabric, out: usize, queue: usize, id: u32) -> bool {
        let p = core.arena.get(id);
        if !fabric.config.ecn.enabled || p.kind != Kind::Data || p.flags & FLAG_ECT != 0 {
            return false;
        }
        let probability = self.ports[out].ecn.probability(self.ports[out].queue_bytes[queue]);
        if probability > 0.0 && (probability >= 1.0 || self.rng.next_f64() < probability) {
            self.drop_packet(core, out, id);
            return true;
        }
        false
    }

    /// RED/ECN: marks an ECN-capable data packet with the port's probability for queue length `q`.
    #[inline]
    fn maybe_mark(&mut self, core: &mut Core, port: usize, id: u32, q: u64) {
        let p = core.arena.get_mut(id);
        if p.flags & FLAG_ECT == 0 || p.flags & FLAG_CE != 0 {
            return;
        }
        let probability = self.ports[port].ecn.probability(q);
        if probability > 0.0 && (probability >= 1.0 || self.rng.next_f64() < probability) {
            p.flags |= FLAG_CE;
            self.ports[port].stats.ecn_marks += 1;
            core.counters.ecn_marks += 1;
            core.trace_packet(|| Site::packet(PacketEvent::Mark, self.node, port as u16, id), || q);
        }
    }

    /// Stamps an INT record on a departing data packet when the fabric stamps INT (HPCC): time, the
    /// port's cumulative transmitted bytes, its queue length and its rate.
    #[inline(always)]
    fn stamp_int(&self, core: &mut Core, fabric: &Fabric, out: usize, id: u32, kind: Kind) {
        if fabric.config.int {
            self.stamp_data_int(core, out, id, kind);
        }
    }

    /// [`Switch::stamp_int`]'s work, out of line: inlined, the compiler tested the packet's kind before
    /// the fabric's setting, a branch as often one way as the other on every packet-hop of a run without
    /// INT (4 M of ws128's 53 M mispredicted branches).
    #[inline(never)]
    fn stamp_data_int(&self, core: &mut Core, out: usize, id: u32, kind: Kind) {
        if kind == Kind::Data {
            let port = &self.ports[out];
            let hop = IntHop { ts: core.now, tx_bytes: port.tx_bytes, qlen: port.bytes, rate: port.rate };
            core.arena.push_int(id, hop);
        }
    }

    /// Puts packet `id` on the wire of port `out` (stamping INT), unless a fault there drops it, which
    /// returns `false`; a fault may mark it CE first. `PLAIN` (no INT, trace, faults or signal, no other
    /// part: [`Switch::receive_as`]) puts it on the wire and no more.
    #[inline(always)]
    fn depart<const PLAIN: bool>(
        &mut self,
        core: &mut Core,
        fabric: &Fabric,
        out: usize,
        id: u32,
        kind: Kind,
        wire: u32,
    ) -> bool {
        if PLAIN {
            self.ports[out].transmit_within(core, id, wire);
            return true;
        }
        if self.egress_hooks {
            return self.depart_hooked(core, fabric, out, id, kind, wire);
        }
        self.stamp_int(core, fabric, out, id, kind);
        core.trace_packet(|| Site::packet(PacketEvent::Send, self.node, out as u16, id), || self.ports[out].bytes);
        self.ports[out].transmit(core, id, wire);
        true
    }

    /// [`Switch::depart`] with faults or a signal at this switch: the faults may drop or mark the
    /// packet first; the signal's dequeue hook runs once it is on the wire. Out of line: runs with
    /// neither never come here.
    #[cold]
    #[inline(never)]
    fn depart_hooked(&mut self, core: &mut Core, fabric: &Fabric, out: usize, id: u32, kind: Kind, wire: u32) -> bool {
        if self.faults.is_some() && self.dropped_by_fault(core, out, id, kind) {
            return false;
        }
        self.stamp_int(core, fabric, out, id, kind);
        core.trace_packet(|| Site::packet(PacketEvent::Send, self.node, out as u16, id), || self.ports[out].bytes);
        self.ports[out].transmit(core, id, wire);
        if let Some(signal) = self.signal.as_deref_mut() {
            let at = At { node: self.node, out, port: &self.ports[out], buffer_used: self.used };
            if let Some(feedback) = signal.on_dequeue(core, fabric, at, id, wire) {
                let in_port = core.arena.get(feedback).ingress;
                self.receive(core, fabric, in_port, feedback);
            }
        }
        true
    }

    /// Bolt's and the signal's enqueue hooks for packet `id`, arrived on `in_port`, at port `out`. Bolt
    /// may send a queue notification; the signal records the ingress port, so that a feedback packet
    /// sent at the packet's departure starts from there too. Out of line: runs with neither never come
    /// here.
    #[inline(never)]
    fn on_enqueue(&mut self, core: &mut Core, fabric: &Fabric, in_port: u16, out: usize, id: u32) {
        if let Some(bolt) = self.bolt.as_deref_mut() {
            let port = &self.ports[out];
            if let Some(notify) = bolt.on_enqueue(core, fabric, out, (port.rate, port.bytes), in_port, id) {
                self.receive(core, fabric, in_port, notify);
            }
        }
        if let Some(signal) = self.signal.as_deref_mut() {
            core.arena.get_mut(id).ingress = in_port;
            let at = At { node: self.node, out, port: &self.ports[out], buffer_used: self.used };
            if let Some(feedback) = signal.on_enqueue(core, fabric, at, id) {
                self.receive(core, fabric, in_port, feedback);
            }
        }
    }

    /// Asks the faults of this switch about packet `id` leaving port `out`: drops it (returning `true`)
    /// or marks it CE as they say. Out of line: runs without faults never come here.
    #[cold]
    #[inline(never)]
    fn dropped_by_fault(&mut self, core: &mut Core, out: usize, id: u32, kind: Kind) -> bool {
        let Some(faults) = self.faults.as_mut() else { return false };
        let p = core.arena.get(id);
        let markable = p.flags & FLAG_ECT != 0 && p.flags & FLAG_CE == 0;
        let seen = Seen { flow: p.flow, data: kind == Kind::Data, markable };
        match faults.on_egress(core.now, out as u16, seen) {
            Verdict::Drop => {
                self.drop_packet(core, out, id);
                return true;
            }
            Verdict::Mark => {
                core.arena.get_mut(id).flags |= FLAG_CE;
                self.ports[out].stats.ecn_marks += 1;
                core.counters.ecn_marks += 1;
                core.trace_packet(
                    || Site::packet(PacketEvent::Mark, self.node, out as u16, id),
                    || self.ports[out].bytes,
                );
            }
            Verdict::Pass => {}
        }
        false
    }

    /// Whether packet `id`, arriving on `in_port`, is lost on a link that a fault has taken down (then it
    /// is dropped here). Out of line: runs without faults never come here.
    #[cold]
    #[inline(never)]
    fn lost_on_arrival(&mut self, core: &mut Core, in_port: u16, id: u32) -> bool {
        let lost = self.faults.as_mut().is_some_and(|f| f.lost_on_arrival(core.now, in_port));
        if lost {
            self.drop_packet(core, in_port as usize, id);
        }
        lost
    }

    /// The token limiter of `port` may release its next token (a `TokenRelease` event).
    pub fn on_token_release(&mut self, core: &mut Core, fabric: &Fabric, port: u16) {
        let Some(env) = fabric.rd else { return };
        let (node, rate) = (self.node, self.ports[port as usize].rate);
        let tokens = self.tokens.as_deref_mut().expect("token limiter state");
        if let Some((in_port, id)) = tokens.release(core, env, fabric, node, port, rate) {
            self.receive(core, fabric, in_port, id);
        }
    }

    /// The transmitter of `port` freed (a `PortFree` event); `PLAIN` as for [`Switch::receive_as`].
    #[inline(always)]
    pub(crate) fn port_free_as<const PLAIN: bool>(&mut self, core: &mut Core, fabric: &Fabric, port: u16) {
        debug_assert!(!PLAIN || self.plain, "a plain hop at switch {}, where a feature acts", self.node);
        self.ports[port as usize].free_pending = false;
        self.try_transmit::<PLAIN>(core, fabric, port);
    }

    /// A PFC frame from the peer of `port` arrived.
    pub fn pfc(&mut self, core: &mut Core, fabric: &Fabric, port: u16, queue: u8, pause: bool) {
        self.ports[port as usize].set_paused(core.now, queue, pause);
        let event = if pause { PacketEvent::Paused } else { PacketEvent::Resumed };
        core.trace_packet(|| Site::pfc(event, self.node, port, queue), || self.ports[port as usize].bytes);
        if !pause {
            self.try_transmit::<false>(core, fabric, port);
        }
    }

    /// Starts the next packet on `port` if the transmitter is idle and a queue may send. Inlined: a
    /// packet queued behind a busy transmitter (the common case) only makes sure the port wakes.
    #[inline(always)]
    fn try_transmit<const PLAIN: bool>(&mut self, core: &mut Core, fabric: &Fabric, port: u16) {
        let out = port as usize;
        if !self.ports[out].idle(core.now) {
            if self.ports[out].has_eligible() {
                self.ports[out].wake_when_free(core, self.node, port);
            }
            return;
        }
        self.transmit_next::<PLAIN>(core, fabric, port);
    }

    /// [`Switch::try_transmit`] with the transmitter idle: dequeues and sends the next packet a queue
    /// may send, if any.
    #[inline(never)]
    fn transmit_next<const PLAIN: bool>(&mut self, core: &mut Core, fabric: &Fabric, port: u16) {
        let cfg = fabric.config;
        let out = port as usize;
        // A packet that a fault drops leaves the transmitter idle for the next one.
        loop {
            let Some(queue) = self.ports[out].select(&cfg.scheduler, fabric.link.mtu, &core.arena) else {
                return;
            };
            let head = self.ports[out].queues[queue][0];
            let p = *core.arena.get(head);
            let id = self.ports[out].dequeue(core.now, queue, p.wire);
            self.release(core, fabric, p.ingress as usize, queue, p.wire as u64);
            if cfg.ecn.enabled && cfg.ecn.mark_at == MarkAt::Dequeue {
                let left = self.ports[out].queue_bytes[queue];
                self.maybe_mark(core, out, id, left);
            }
            if self.depart::<PLAIN>(core, fabric, out, id, p.kind, p.wire) {
                break;
            }
        }
        if self.ports[out].has_eligible() {
            self.ports[out].prefetch_next(&core.arena);
            self.ports[out].wake_when_free(core, self.node, port);
        }
    }
}

impl Forwarder for Switch {
    fn node(&self) -> u32 {
        self.node
    }

    fn port(&mut self, out: usize) -> &mut Port {
        &mut self.ports[out]
    }

    fn forward(&mut self, core: &mut Core, fabric: &Fabric, in_port: u16, out: usize, id: u32) {
        Switch::forward::<false>(self, core, fabric, in_port, out, id);
    }

    fn route(&mut self, fabric: &Fabric, flow: u32, dst: u32) -> u16 {
        Switch::route::<false>(self, fabric, flow, dst)
    }

    fn release(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, queue: usize, wire: u64) {
        Switch::release(self, core, fabric, in_port, queue, wire);
    }

    fn drop_packet(&mut self, core: &mut Core, out: usize, id: u32) {
        Switch::drop_packet(self, core, out, id);
    }
}

#[cfg(test)]
mod tests {
    use super::{ecmp_hash, pick};

    /// A power of two of choices masks the hash, any other count takes the remainder: the same pick.
    #[test]
    fn pick_is_the_remainder() {
        for choices in 1..=40usize {
            for flow in 0..2_000u32 {
                let hash = ecmp_hash(flow, choices as u32);
                assert_eq!(pick(hash, choices), hash % choices as u64, "flow {flow}, {choices} choices");
            }
        }
    }
}
