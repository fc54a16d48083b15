//! Switch features of the receiver-driven transport, run before a packet's normal admission:
//! - token queues with rate limiters (ExpressPass; ToCC with ECN marking of tokens) per egress port;
//! - payload trimming to a header forwarded at control priority (NDP, as csg-htsim's `CompositeQueue`:
//!   a full data queue trims the arriving packet or its last queued packet, chosen at random; the header
//!   queue has its own limit, and a trimmed header that finds it full returns to its sender);
//! - selective dropping of unscheduled packets above a small queue (Aeolus).

use std::collections::VecDeque;

use sluice_core::{Rng, Time};
use sluice_results::PacketEvent;

use crate::engine::{Core, Event};
use crate::packet::{Kind, FLAG_CE, FLAG_ECT, RD_BOUNCED, RD_RELEASED, RD_TRIMMED, RD_UNSCHEDULED};
use crate::packet_trace::Site;
use crate::rd::RdEnv;
use crate::switch::{Fabric, Switch};

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

/// A switch's receiver-driven state.
#[derive(Debug)]
pub struct RdSwitch {
    ports: Vec<TokenPort>,
    rng: Rng,
    /// Picks which packet a full NDP data queue trims (its own stream, so trimming does not shift the
    /// token-marking draws).
    trim_rng: Rng,
}

impl RdSwitch {
    /// State for a switch `node` with `ports` egress ports.
    pub fn new(node: u32, ports: usize, seed: u64) -> RdSwitch {
        RdSwitch {
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

impl Switch {
    /// The receiver-driven checks for packet `id` arriving on `in_port` for egress port `out`.
    pub(crate) fn rd_arrive(
        &mut self,
        core: &mut Core,
        fabric: &Fabric,
        env: &RdEnv,
        in_port: u16,
        out: usize,
        id: u32,
    ) -> Verdict {
        let p = *core.arena.get(id);
        match p.kind {
            Kind::Token if env.transport.token_limiter => {
                if p.rd & RD_RELEASED != 0 {
                    core.arena.get_mut(id).rd &= !RD_RELEASED;
                    return Verdict::Forward;
                }
                self.rd_limit_token(core, fabric, env, in_port, out, id)
            }
            Kind::Data => self.rd_data(core, fabric, env, in_port, out, id),
            // Requests obey the header queue as headers do (NDP carries no separate request; its first
            // packets' headers announce the flow), but cannot return: a lost request is the sender
            // timer's case. ACKs, NACKs and pulls are always admitted.
            Kind::Rts if env.transport.trimming => {
                if self.header_queue_full(fabric, env, out, p.wire) {
                    core.counters.rd.header_drops += 1;
                    self.drop_packet(core, out, id);
                    return Verdict::Consumed;
                }
                Verdict::Forward
            }
            _ => Verdict::Forward,
        }
    }

    /// Whether `wire` more bytes would overflow the header (control) queue of port `out` at a trimming
    /// switch.
    fn header_queue_full(&self, fabric: &Fabric, env: &RdEnv, out: usize, wire: u32) -> bool {
        let full = (fabric.link.mtu + fabric.link.header_bytes) as u64;
        let queued = self.ports[out].queue_bytes[fabric.config.control_queue as usize];
        queued + wire as u64 > env.transport.header_queue_bytes(full)
    }

    /// A header (trimmed here or upstream) for port `out`: queued at control priority if the header
    /// queue has room; otherwise returned toward its sender, once, or dropped.
    fn rd_header(&mut self, core: &mut Core, fabric: &Fabric, env: &RdEnv, in_port: u16, out: usize, id: u32) {
        let p = *core.arena.get(id);
        if !self.header_queue_full(fabric, env, out, p.wire) {
            self.forward(core, fabric, in_port, out, id);
            return;
        }
        if p.rd & RD_BOUNCED == 0 && !fabric.flow_src.is_empty() {
            let sender = fabric.flow_src[p.flow as usize];
            let q = core.arena.get_mut(id);
            q.rd |= RD_BOUNCED;
            q.dst = sender;
            core.counters.rd.bounced += 1;
            let back = self.route(fabric, p.flow, sender) as usize;
            self.rd_header(core, fabric, env, in_port, back, id);
            return;
        }
        core.counters.rd.header_drops += 1;
        self.drop_packet(core, out, id);
    }

    /// NDP: a data packet that finds the data queue of port `out` full. As csg-htsim's
    /// `CompositeQueue::receivePacket`, with probability 1/2 the last queued packet is trimmed and the
    /// arriving one takes its place; otherwise the arriving packet is trimmed.
    fn rd_trim(&mut self, core: &mut Core, fabric: &Fabric, env: &RdEnv, in_port: u16, out: usize, id: u32) -> Verdict {
        let queue = core.arena.get(id).queue as usize;
        let rd = self.rd.as_deref_mut().expect("trimming state");
        let take_queued = rd.trim_rng.next_f64() < 0.5;
        if take_queued {
            if let Some(&last) = self.ports[out].queues[queue].back() {
                let booted = *core.arena.get(last);
                self.ports[out].remove_last(core.now, queue, booted.wire);
                self.release(core, fabric, booted.ingress as usize, queue, booted.wire as u64);
                trim(core, fabric, last);
                core.trace_packet(Site::packet(PacketEvent::Trim, self.node, out as u16, last), || {
                    self.ports[out].bytes
                });
                core.counters.rd.trimmed_queued += 1;
                self.rd_header(core, fabric, env, booted.ingress, out, last);
                return Verdict::Forward;
            }
        }
        trim(core, fabric, id);
        core.trace_packet(Site::packet(PacketEvent::Trim, self.node, out as u16, id), || self.ports[out].bytes);
        self.rd_header(core, fabric, env, in_port, out, id);
        Verdict::Consumed
    }

    fn rd_data(&mut self, core: &mut Core, fabric: &Fabric, env: &RdEnv, in_port: u16, out: usize, id: u32) -> Verdict {
        let t = &env.transport;
        let p = *core.arena.get(id);
        let queued = self.ports[out].queue_bytes[p.queue as usize];
        if t.aeolus && p.rd & RD_UNSCHEDULED != 0 && queued >= t.aeolus_threshold {
            let stats = &mut self.ports[out].stats;
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
            return self.rd_trim(core, fabric, env, in_port, out, id);
        }
        if p.rd & RD_TRIMMED != 0 {
            // A header trimmed upstream (or returning to its sender) obeys this switch's header queue.
            self.rd_header(core, fabric, env, in_port, out, id);
            return Verdict::Consumed;
        }
        Verdict::Forward
    }

    fn rd_limit_token(
        &mut self,
        core: &mut Core,
        fabric: &Fabric,
        env: &RdEnv,
        in_port: u16,
        out: usize,
        id: u32,
    ) -> Verdict {
        let gap = env.token_gap(self.ports[out].rate, fabric.link.header_bytes);
        let marking = env.transport.token_ecn.then(|| token_marking(env, fabric.link.header_bytes));
        let capacity = env.transport.limiter_capacity as usize;
        let wire = env.transport.token_wire as f64;
        let rd = self.rd.as_deref_mut().expect("token limiter state");
        let port = &mut rd.ports[out];
        if port.queue.len() >= capacity {
            core.counters.rd.tokens_dropped += 1;
            self.ports[out].stats.drops += 1;
            core.counters.drops += 1;
            core.trace_packet(Site::packet(PacketEvent::Drop, self.node, out as u16, id), || self.ports[out].bytes);
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
            if p > 0.0 && packet.flags & FLAG_ECT != 0 && (p >= 1.0 || rd.rng.next_f64() < p) {
                packet.flags |= FLAG_CE;
                core.counters.rd.tokens_marked += 1;
                core.trace_packet(Site::packet(PacketEvent::Mark, self.node, out as u16, id), || self.ports[out].bytes);
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
            core.schedule(port.next_free.max(core.now), Event::TokenRelease { node: self.node, port: out as u16 });
        }
        Verdict::Consumed
    }

    /// The token limiter of `port` releases its next token.
    pub fn on_token_release(&mut self, core: &mut Core, fabric: &Fabric, port: u16) {
        let Some(env) = fabric.rd else { return };
        let gap = env.token_gap(self.ports[port as usize].rate, fabric.link.header_bytes);
        let rd = self.rd.as_deref_mut().expect("token limiter state");
        let tp = &mut rd.ports[port as usize];
        tp.release_pending = false;
        let Some(id) = tp.queue.pop_front() else { return };
        tp.next_free = core.now + gap;
        if !tp.queue.is_empty() {
            tp.release_pending = true;
            core.schedule(tp.next_free, Event::TokenRelease { node: self.node, port });
        }
        let packet = core.arena.get_mut(id);
        packet.rd |= RD_RELEASED;
        let in_port = packet.ingress;
        self.receive(core, fabric, in_port, id);
    }
}
