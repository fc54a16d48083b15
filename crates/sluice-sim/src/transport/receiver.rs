//! The receiver of a sender-driven flow whose algorithm decides at the receiver
//! ([`sluice_cc::ReceiverControl`]), or whose host processes data slower than its link (the endpoint
//! model): it reports each arrival (with the processing queue's occupancy), each of the flow's packets
//! that finishes processing or crosses the position the controller watches, and periodic per-stream
//! samples, and sends the acknowledgments the controller chooses (IACK with an explicit sequence, DACK,
//! NACK, or none). The processing queue itself is the host's ([`Processing`] is what this module needs
//! of it).

use sluice_cc::{AckKind, Arrival, FlowInfo, QueueMove, RxCtx, RxDecisions, RxEvents, StreamSample};
use sluice_core::{Rate, Time};

use crate::engine::packet::{Kind, Packet, FLAG_ECE};
use crate::engine::Core;
use crate::transport::flow::Flow;
use crate::transport::window;
use crate::transport::{HostEnv, HostIo};

/// What the receiver needs of its host's processing queue (the endpoint model).
pub trait Processing {
    /// Whether `wire` more bytes fit.
    fn has_room(&self, wire: u32) -> bool;
    /// Occupancy in bytes on the wire.
    fn bytes(&self) -> u64;
    /// Takes accepted data packet `p` of flow `id` at host node `node` (and starts draining it).
    fn take(&mut self, core: &mut Core, node: u32, id: u32, p: &Packet);
    /// Follows a controller's settings: the position it watches and its sampling period.
    fn follow(&mut self, d: &RxDecisions);
}

/// A flow's static facts as its receiver sees them.
fn flow_info(f: &Flow, id: u32, env: &HostEnv, line_rate: Rate) -> FlowInfo {
    FlowInfo {
        flow_id: id as u64,
        mss: env.link.mtu,
        header_bytes: env.link.header_bytes,
        line_rate,
        base_rtt: f.base_rtt,
        hops: f.hops,
        size: f.stop.is_none().then_some(f.size),
        start: f.start,
    }
}

/// A data packet arrived for flow `id` (`f`) at a host with a processing queue (`queue`) or for a flow
/// with a receiver controller. Kept out of line: the receive path of runs without these stays as it was.
#[cold]
#[inline(never)]
pub fn receive_data<P: Processing>(
    io: &mut HostIo,
    env: &HostEnv,
    f: &mut Flow,
    pkt: u32,
    p: &Packet,
    mut queue: Option<&mut P>,
) {
    let id = p.flow;
    start(io, env, f, id, queue.as_deref_mut());
    if p.seq < f.rcv_nxt {
        // A resend of accepted data: acknowledge what is accepted (or repeat the last ACK).
        match f.rx.is_some() {
            true => send_rx_ack(io, env, f, id, f.rx_acked, p.sent_at),
            false => window::send_ack(io, env, f, pkt, p),
        }
        return;
    }
    let in_order = p.seq == f.rcv_nxt;
    let room = queue.as_deref().is_none_or(|q| q.has_room(p.wire));
    let accepted = in_order && room;
    if in_order && !room {
        io.core.counters.endpoint_drops += 1;
    }
    if !in_order {
        window::out_of_order(io, env, f, p);
        // The NACK acknowledged everything accepted: a later ACK below it is a duplicate.
        f.rx_acked = f.rx_acked.max(f.rcv_nxt);
    }
    if accepted {
        accept(io, env, f, id, p, queue.as_deref_mut());
    }
    if f.rx.is_none() {
        if accepted {
            default_ack(io, env, f, pkt, p);
        }
        return;
    }
    if !f.rx_events.contains(RxEvents::DATA) {
        return;
    }
    let queue_bytes = queue.as_deref().map_or(0, |q| q.bytes());
    let now = io.core.now;
    let arrival = Arrival { accepted, rcv_nxt: f.rcv_nxt, queue_bytes, ..p.arrival(now) };
    let mut ctx = RxCtx::new(now);
    f.rx.as_mut().expect("checked").on_data(&arrival, &mut ctx);
    let d = *ctx.decisions();
    apply(io, env, f, id, &d, p.sent_at, queue);
    if d.ack == AckKind::Default && accepted {
        default_ack(io, env, f, pkt, p);
        if f.rcv_pkts == 0 {
            f.rx_acked = f.rx_acked.max(f.rcv_nxt);
        }
    }
}

/// Starts the flow's receiver controller at its first arrival.
fn start<P: Processing>(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, queue: Option<&mut P>) {
    if f.rx_started || f.rx.is_none() {
        return;
    }
    f.rx_started = true;
    f.rx_events = f.rx.as_ref().expect("checked").events();
    let info = flow_info(f, id, env, io.nic.rate);
    let mut ctx = RxCtx::new(io.core.now);
    f.rx.as_mut().expect("checked").on_start(&info, &mut ctx);
    let d = *ctx.decisions();
    apply(io, env, f, id, &d, 0, queue);
}

/// Accepts `p` in order and puts it in the processing queue, if any.
fn accept<P: Processing>(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, p: &Packet, queue: Option<&mut P>) {
    f.rcv_nxt += p.payload as u64;
    // Selective repeat (without a processing queue) may hold data past this packet.
    while f.ooo.first() == Some(&f.rcv_nxt) {
        f.ooo.pop_first();
        f.rcv_nxt += f.payload_at(f.rcv_nxt, env.link.mtu) as u64;
    }
    if let Some(q) = queue {
        q.take(io.core, io.node, id, p);
    }
}

/// The datapath's own acknowledgment of an accepted packet: one ACK per `ack_every_packets` packets
/// or `ack_every_bytes` bytes, and for the flow's last packet.
fn default_ack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    f.rcv_pkts += 1;
    f.rcv_bytes += p.payload as u64;
    let cfg = env.config;
    let due = f.rcv_pkts >= cfg.ack_every_packets
        || (cfg.ack_every_bytes > 0 && f.rcv_bytes >= cfg.ack_every_bytes)
        || f.rcv_nxt >= f.size;
    if due {
        window::send_ack(io, env, f, pkt, p);
    }
}

/// Applies a receiver controller's decisions: settings first, then the acknowledgments it chose
/// (`Default` is the caller's: the datapath's own acknowledgment of an accepted arrival, else none).
fn apply<P: Processing>(
    io: &mut HostIo,
    env: &HostEnv,
    f: &mut Flow,
    id: u32,
    d: &RxDecisions,
    sent_at: Time,
    queue: Option<&mut P>,
) {
    if let Some(q) = queue {
        q.follow(d);
    }
    for _ in 0..d.dacks_before {
        send_rx_ack(io, env, f, id, f.rx_acked, sent_at);
    }
    match d.ack {
        AckKind::Immediate => {
            let seq = d.ack_seq.unwrap_or(f.rcv_nxt).min(f.rcv_nxt).max(f.rx_acked);
            send_rx_ack(io, env, f, id, seq, sent_at);
        }
        AckKind::Delayed => send_rx_ack(io, env, f, id, f.rx_acked, sent_at),
        AckKind::Negative => {
            let mut nack = env.control_packet(Kind::Nack, id, f.src, f.rcv_nxt);
            nack.sack = f.rcv_nxt;
            nack.sent_at = sent_at;
            io.queue_control(env, nack);
        }
        AckKind::Default | AckKind::Withhold => {}
    }
}

/// Sends an ACK of flow `id` carrying cumulative sequence `seq` (a DACK when it repeats the last).
fn send_rx_ack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, seq: u64, sent_at: Time) {
    let mut ack = env.control_packet(Kind::Ack, id, f.src, seq);
    ack.sent_at = sent_at;
    ack.sack = io.core.now;
    if f.rcv_ce {
        ack.flags |= FLAG_ECE;
    }
    f.rcv_ce = false;
    f.rx_acked = f.rx_acked.max(seq);
    io.queue_control(env, ack);
}

/// Tells the controller of flow `id` (`f`) that its packet `moved` finished processing (`which` =
/// [`RxEvents::PROCESSED`]) or crossed the watched position ([`RxEvents::CROSSED`]); `sent_at` is when
/// the packet left its sender.
pub fn queue_moved(
    io: &mut HostIo,
    env: &HostEnv,
    f: &mut Flow,
    id: u32,
    (moved, sent_at): (QueueMove, Time),
    which: RxEvents,
    queue: &mut impl Processing,
) {
    if f.rx.is_none() || !f.rx_events.contains(which) {
        return;
    }
    let mut ctx = RxCtx::new(io.core.now);
    let rx = f.rx.as_mut().expect("checked");
    if which == RxEvents::PROCESSED {
        rx.on_processed(&moved, &mut ctx);
    } else {
        rx.on_crossed(&moved, &mut ctx);
    }
    let d = *ctx.decisions();
    apply(io, env, f, id, &d, sent_at, Some(queue));
}

/// Reports a sampling period of the processing queue to flow `id`'s controller, if it asked for
/// samples.
pub fn sampled(
    io: &mut HostIo,
    env: &HostEnv,
    f: &mut Flow,
    id: u32,
    sample: &StreamSample,
    queue: &mut impl Processing,
) {
    if f.rx.is_none() || !f.rx_events.contains(RxEvents::SAMPLE) {
        return;
    }
    let mut ctx = RxCtx::new(io.core.now);
    f.rx.as_mut().expect("checked").on_sample(sample, &mut ctx);
    let d = *ctx.decisions();
    apply(io, env, f, id, &d, 0, Some(queue));
}
