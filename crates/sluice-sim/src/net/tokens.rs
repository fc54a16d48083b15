//! Switch features of the receiver-driven (token) transport, run before a packet's normal admission:
//! - token queues with rate limiters (ExpressPass; ToCC with ECN marking of tokens) per egress port;
//! - payload trimming to a header forwarded at control priority (NDP, as csg-htsim's `CompositeQueue`:
//!   a full data queue trims the arriving packet or its last queued packet, chosen at random; the header
//!   queue has its own limit, and a trimmed header that finds it full returns to its sender);
//! - selective dropping of unscheduled packets above a small queue (Aeolus).
//!
//! The state lives in [`TokenSwitch`], one per switch; the switch calls [`TokenSwitch::arrive`] for each
//! arriving packet and [`TokenSwitch::release`] when a limiter's gap has passed. What the features need
//! of their switch (its ports, admission, routing, drops) is the [`Forwarder`] trait.

use std::collections::VecDeque;

use sluice_core::{Rate, Rng, Time};
use sluice_results::PacketEvent;

use crate::config::RdEnv;
use crate::engine::packet::{Kind, FLAG_CE, FLAG_ECT, RD_BOUNCED, RD_RELEASED, RD_TRIMMED, RD_UNSCHEDULED};
use crate::engine::trace::Site;
use crate::engine::{Core, Event, TokenEvent};
use crate::net::port::Port;
use crate::net::Fabric;

/// A packet at a switch: the port it arrived on, the egress port it is headed for, and its id.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    /// Ingress port.
    pub in_port: u16,
    /// Egress port.
    pub out: usize,
    /// The packet.
    pub id: u32,
}

/// What the switch does with an arriving packet after the receiver-driven checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Continue with normal forwarding (the packet may have been trimmed).
    Forward,
    /// The packet was dropped or is held by a token limiter.
    Consumed,
}

/// A port's token limiter: tokens wait here and leave one per gap.
#[derive(Debug, Default)]
struct TokenPort {
    queue: VecDeque<u32>,
    next_free: Time,
    release_pending: bool,
}

/// A switch's token-transport state.
#[derive(Debug)]
pub struct TokenSwitch {
    ports: Vec<TokenPort>,
    rng: Rng,
    /// Picks which packet a full NDP data queue trims (its own stream, so trimming does not shift the
    /// token-marking draws).
    trim_rng: Rng,
}

/// What the token features need of the switch they run in.
pub trait Forwarder {
    /// The switch's node id.
    fn node(&self) -> u32;
    /// Egress port `out`.
    fn port(&mut self, out: usize) -> &mut Port;
    /// Admits packet `id`, arrived on `in_port`, to port `out` as any packet (or drops it).
    fn forward(&mut self, core: &mut Core, fabric: &Fabric, in_port: u16, out: usize, id: u32);
    /// The egress port toward host `dst` for a packet of `flow`.
    fn route(&mut self, fabric: &Fabric, flow: u32, dst: u32) -> u16;
    /// Returns `wire` bytes of a packet that arrived on `in_port` in queue `queue` to the buffer.
    fn release(&mut self, core: &mut Core, fabric: &Fabric, in_port: usize, queue: usize, wire: u64);
    /// Drops packet `id` at port `out`, counting it.
    fn drop_packet(&mut self, core: &mut Core, out: usize, id: u32);
}

impl TokenSwitch {
    /// State for a switch `node` with `ports` egress ports.
    pub fn new(node: u32, ports: usize, seed: u64) -> TokenSwitch {
        TokenSwitch {
            ports: (0..ports).map(|_| TokenPort::default()).collect(),
            rng: Rng::named(seed, &format!("switch.{node}.tokens")),
            trim_rng: Rng::named(seed, &format!("switch.{node}.ndp-trim")),
        }
    }
}

/// Trims data packet `id` to its header, moved to the control queue (NDP).
fn trim(core: &mut Core, fabric: &Fabric, id: u32) {
    let q = core.arena.get_mut(id);
    q.wire = fabric.link.header_bytes;
    q.payload = 0;
    q.rd |= RD_TRIMMED;
    q.queue = fabric.config.control_queue;
    core.counters.rd.trimmed += 1;
}

/// Token-queue RED thresholds in token bytes: the data thresholds scaled by token size / data size
/// (ToCC section V).
fn token_marking(env: &RdEnv, header_bytes: u32) -> (f64, f64, f64) {
    let t = &env.transport;
    let scale = t.token_wire as f64 / (env.token_bytes + header_bytes as u64) as f64;
    (t.token_kmin as f64 * scale, t.token_kmax as f64 * scale, t.token_pmax)
}

impl TokenSwitch {
    /// The token checks for a packet arriving at switch `sw` (`hop`: its ports and id).
    pub fn arrive(
        &mut self,
        sw: &mut impl Forwarder,
        core: &mut Core,
        fabric: &Fabric,
        env: &RdEnv,
        hop: Hop,
    ) -> Verdict {
        let Hop { out, id, .. } = hop;
        let p = *core.arena.get(id);
        match p.kind {
            Kind::Token if env.transport.token_limiter => {
                if p.rd & RD_RELEASED != 0 {
                    core.arena.get_mut(id).rd &= !RD_RELEASED;
                    return Verdict::Forward;
                }
                self.limit_token(sw, core, fabric, env, hop)
            }
            Kind::Data => self.data(sw, core, fabric, env, hop),
            // Requests obey the header queue as headers do (NDP carries no separate request; its first
            // packets' headers announce the flow), but cannot return: a lost request is the sender
            // timer's case. ACKs, NACKs and pulls are always admitted.
            Kind::Rts if env.transport.trimming => {
                if header_queue_full(sw.port(out), fabric, env, p.wire) {
                    core.counters.rd.header_drops += 1;
                    sw.drop_packet(core, out, id);
                    return Verdict::Consumed;
                }
                Verdict::Forward
            }
            _ => Verdict::Forward,
        }
    }

    /// A header (trimmed here or upstream) for port `out`: queued at control priority if the header
    /// queue has room; otherwise returned toward its sender, once, or dropped.
    #[allow(clippy::only_used_in_recursion)]
    fn header(&mut self, sw: &mut impl Forwarder, core: &mut Core, fabric: &Fabric, env: &RdEnv, hop: Hop) {
        let Hop { in_port, out, id } = hop;
        let p = *core.arena.get(id);
        if !header_queue_full(sw.port(out), fabric, env, p.wire) {
            sw.forward(core, fabric, in_port, out, id);
            return;
        }
        if p.rd & RD_BOUNCED == 0 && !core.flow_src.is_empty() {
            let sender = core.flow_src.of(p.flow);
            let q = core.arena.get_mut(id);
            q.rd |= RD_BOUNCED;
            q.dst = sender;
            core.counters.rd.bounced += 1;
            let back = sw.route(fabric, p.flow, sender) as usize;
            self.header(sw, core, fabric, env, Hop { out: back, ..hop });
            return;
        }
        core.counters.rd.header_drops += 1;
        sw.drop_packet(core, out, id);
    }

    /// NDP: a data packet that finds the data queue of port `out` full. As csg-htsim's
    /// `CompositeQueue::receivePacket`, with probability 1/2 the last queued packet is trimmed and the
    /// arriving one takes its place; otherwise the arriving packet is trimmed.
    fn trim(&mut self, sw: &mut impl Forwarder, core: &mut Core, fabric: &Fabric, env: &RdEnv, hop: Hop) -> Verdict {
        let Hop { out, id, .. } = hop;
        let queue = core.arena.get(id).queue as usize;
        let node = sw.node();
        let take_queued = self.trim_rng.next_f64() < 0.5;
        if take_queued {
            if let Some(&last) = sw.port(out).queues[queue].back() {
                let booted = *core.arena.get(last);
                sw.port(out).remove_last(core.now, queue, booted.wire);
                sw.release(core, fabric, booted.ingress as usize, queue, booted.wire as u64);
                trim(core, fabric, last);
                let bytes = sw.port(out).bytes;
                core.trace_packet(|| Site::packet(PacketEvent::Trim, node, out as u16, last), || bytes);
                core.counters.rd.trimmed_queued += 1;
                self.header(sw, core, fabric, env, Hop { in_port: booted.ingress, out, id: last });
                return Verdict::Forward;
            }
        }
        trim(core, fabric, id);
        let bytes = sw.port(out).bytes;
        core.trace_packet(|| Site::packet(PacketEvent::Trim, node, out as u16, id), || bytes);
        self.header(sw, core, fabric, env, hop);
        Verdict::Consumed
    }

    /// A data packet: Aeolus drops an unscheduled one above its threshold; NDP trims one that finds the
    /// data queue full, and queues headers at control priority.
    fn data(&mut self, sw: &mut impl Forwarder, core: &mut Core, fabric: &Fabric, env: &RdEnv, hop: Hop) -> Verdict {
        let Hop { out, id, .. } = hop;
        let t = &env.transport;
        let p = *core.arena.get(id);
        let queued = sw.port(out).queue_bytes[p.queue as usize];
        if t.aeolus && p.rd & RD_UNSCHEDULED != 0 && queued >= t.aeolus_threshold {
            let stats = &mut sw.port(out).stats;
            stats.drops += 1;
            stats.data_drops += 1;
            stats.dropped_bytes += p.payload as u64;
            core.counters.drops += 1;
            core.counters.data_drops += 1;
            core.counters.bytes_dropped += p.payload as u64;
            core.counters.rd.unscheduled_dropped += 1;
            core.arena.free(id);
            return Verdict::Consumed;
        }
        if !t.trimming {
            return Verdict::Forward;
        }
        let full = (fabric.link.mtu + fabric.link.header_bytes) as u64;
        if p.payload > 0 && queued + p.wire as u64 > t.trim_queue as u64 * full {
            return self.trim(sw, core, fabric, env, hop);
        }
        if p.rd & RD_TRIMMED != 0 {
            // A header trimmed upstream (or returning to its sender) obeys this switch's header queue.
            self.header(sw, core, fabric, env, hop);
            return Verdict::Consumed;
        }
        Verdict::Forward
    }

    /// A token for port `out` meets the port's limiter: dropped when its queue is full, ECN-marked by
    /// the queue's length (ToCC), sent at once when the gap since the last token has passed, or held.
    fn limit_token(
        &mut self,
        sw: &mut impl Forwarder,
        core: &mut Core,
        fabric: &Fabric,
        env: &RdEnv,
        hop: Hop,
    ) -> Verdict {
        let Hop { in_port, out, id } = hop;
        let node = sw.node();
        let gap = env.token_gap(sw.port(out).rate, fabric.link.header_bytes);
        let marking = env.transport.token_ecn.then(|| token_marking(env, fabric.link.header_bytes));
        let capacity = env.transport.limiter_capacity as usize;
        let wire = env.transport.token_wire as f64;
        let port = &mut self.ports[out];
        if port.queue.len() >= capacity {
            core.counters.rd.tokens_dropped += 1;
            let egress = sw.port(out);
            egress.stats.drops += 1;
            core.counters.drops += 1;
            let bytes = egress.bytes;
            core.trace_packet(|| Site::packet(PacketEvent::Drop, node, out as u16, id), || bytes);
            core.arena.free(id);
            return Verdict::Consumed;
        }
        if let Some((kmin, kmax, pmax)) = marking {
            let q = port.queue.len() as f64 * wire;
            let p = if q <= kmin {
                0.0
            } else if q > kmax {
                1.0
            } else {
                pmax * (q - kmin) / (kmax - kmin).max(1.0)
            };
            let packet = core.arena.get_mut(id);
            if p > 0.0 && packet.flags & FLAG_ECT != 0 && (p >= 1.0 || self.rng.next_f64() < p) {
                packet.flags |= FLAG_CE;
                core.counters.rd.tokens_marked += 1;
                let bytes = sw.port(out).bytes;
                core.trace_packet(|| Site::packet(PacketEvent::Mark, node, out as u16, id), || bytes);
            }
        }
        if port.queue.is_empty() && port.next_free <= core.now {
            port.next_free = core.now + gap;
            return Verdict::Forward;
        }
        core.arena.get_mut(id).ingress = in_port;
        port.queue.push_back(id);
        if !port.release_pending {
            port.release_pending = true;
            core.schedule(port.next_free.max(core.now), Event::Token(TokenEvent::Release { node, port: out as u16 }));
        }
        Verdict::Consumed
    }

    /// The token limiter of port `port` (of switch `node`, at `rate`) releases its next token: returns
    /// it with the port it arrived on, for the switch to take in again.
    pub fn release(
        &mut self,
        core: &mut Core,
        env: &RdEnv,
        fabric: &Fabric,
        node: u32,
        port: u16,
        rate: Rate,
    ) -> Option<(u16, u32)> {
        let gap = env.token_gap(rate, fabric.link.header_bytes);
        let tp = &mut self.ports[port as usize];
        tp.release_pending = false;
        let id = tp.queue.pop_front()?;
        tp.next_free = core.now + gap;
        if !tp.queue.is_empty() {
            tp.release_pending = true;
            core.schedule(tp.next_free, Event::Token(TokenEvent::Release { node, port }));
        }
        let packet = core.arena.get_mut(id);
        packet.rd |= RD_RELEASED;
        Some((packet.ingress, id))
    }
}

/// Whether `wire` more bytes would overflow the header (control) queue of `port` at a trimming switch.
fn header_queue_full(port: &Port, fabric: &Fabric, env: &RdEnv, wire: u32) -> bool {
    let full = (fabric.link.mtu + fabric.link.header_bytes) as u64;
    let queued = port.queue_bytes[fabric.config.control_queue as usize];
    queued + wire as u64 > env.transport.header_queue_bytes(full)
}
