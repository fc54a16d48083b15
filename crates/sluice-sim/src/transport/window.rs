//! The window transport of sender-driven algorithms: the sender builds data packets within its window
//! and pacing rate, handles ACKs, NACKs and its retransmission timeout (go-back-N or selective repeat),
//! and tells its algorithm; the receiver delivers in order, holds or NACKs what arrives out of order,
//! acknowledges (every N packets or bytes), echoes CE marks and sends CNPs. The host's NIC decides when
//! a flow sends; these functions decide what.

use sluice_cc::api::PATH_FLAGS_MASK;
use sluice_cc::{Ack, Events, Feedback, IntHop, Loss, LossKind, Sent, SignalOrigin};
use sluice_core::{Rate, Time};

use crate::config::LossRecovery;
use crate::engine::packet::{Kind, Packet, FLAG_CE, FLAG_ECE, FLAG_ECT, MAX_INT_HOPS, PATH_FLAGS, PATH_SHIFT};
use crate::engine::{Core, Event};
use crate::transport::cc;
use crate::transport::flow::Flow;
use crate::transport::{HostEnv, HostIo};

/// Sends flow `id`'s next data packet on its host's NIC; it reaches the next hop `jitter` later than
/// the link alone would bring it (the host's transmit jitter).
pub fn send(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, jitter: Time) {
    let (pkt, payload, wire, retransmit) = data_packet(io.core, env, f, id);
    io.nic.transmit_delayed(io.core, pkt, wire, jitter);
    sent(io, env, f, id, (payload, wire), retransmit);
}

/// Builds flow `id`'s next data packet and stores it; returns its id and its payload and wire bytes and
/// whether it is a retransmission.
fn data_packet(core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) -> (u32, u32, u32, bool) {
    let (seq, payload, retransmit) = f.take_next_seq(env.link.mtu);
    let wire = payload + env.link.header_bytes;
    let mut flags = if f.ect { FLAG_ECT } else { 0 };
    if f.events().contains(Events::PACKET_FLAGS) {
        let bytes_left = if f.stop.is_some() { u64::MAX } else { f.size.saturating_sub(seq) };
        if let Some(cc) = f.driver.as_deref_mut().and_then(|d| d.cc_mut()) {
            flags |= (cc.packet_flags(seq, bytes_left) & PATH_FLAGS_MASK) << PATH_SHIFT;
        }
    }
    let packet = Packet {
        seq,
        sent_at: core.now,
        delivered: f.snd_una,
        payload,
        flags,
        ..Packet::new(Kind::Data, id, f.dst, wire, env.data_queue)
    };
    (core.arena.alloc(packet), payload, wire, retransmit)
}

/// Flow `id` put a data packet of `payload` (`wire`) bytes on the wire: counts it, spaces the next one by
/// the pacing rate, tells an algorithm that binds TX, and arms the retransmission timeout.
fn sent(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, (payload, wire): (u32, u32), retransmit: bool) {
    let core = &mut *io.core;
    core.counters.bytes_sent += payload as u64;
    if retransmit {
        f.retransmitted += payload as u64;
        core.counters.retransmitted_bytes += payload as u64;
    }
    f.next_tx =
        if f.rate >= io.nic.rate { core.now } else { core.now + sluice_core::serialization_ps(wire as u64, f.rate) };
    if f.events().contains(Events::TX) {
        let sent = Sent {
            bytes: payload as u64,
            packets: 1,
            retransmitted_bytes: if retransmit { payload as u64 } else { 0 },
        };
        cc::on_sent(io, env, f, id, &sent);
    }
    if !f.rto_pending {
        f.rto_pending = true;
        io.core.schedule(io.core.now + rto(env, f), Event::Rto { flow: id });
    }
}

/// A data packet of flow `f` arrived at its receiver: CNPs for marked packets (spaced by the flow's CNP
/// interval) and the CE echo of the next ACK. What becomes of the payload is [`receive_data`]'s (or a
/// host model's) call.
pub fn data_arrived(io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
    let now = io.core.now;
    let ce = p.flags & FLAG_CE != 0;
    if ce && f.cnp && f.cnp_interval > 0 && f.last_cnp.is_none_or(|t| now - t >= f.cnp_interval) {
        f.last_cnp = Some(now);
        io.core.counters.cnps += 1;
        let cnp = env.control_packet(Kind::Cnp, p.flow, f.src, 0);
        io.queue_control(env, cnp);
    }
    f.rcv_ce |= ce;
}

/// The receiver takes data packet `pkt`: in order, out of order (held or NACKed), or a duplicate
/// (acknowledged again).
pub fn receive_data(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    if p.seq == f.rcv_nxt {
        accept_in_order(io, env, f, pkt, p);
    } else if p.seq > f.rcv_nxt {
        out_of_order(io, env, f, p);
    } else {
        send_ack(io, env, f, pkt, p);
    }
}

/// The receiver accepts in-order packet `pkt` (and what it held behind it) and acknowledges when due.
pub fn accept_in_order(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    f.rcv_nxt += p.payload as u64;
    f.rcv_pkts += 1;
    f.rcv_bytes += p.payload as u64;
    while f.ooo.first() == Some(&f.rcv_nxt) {
        f.ooo.pop_first();
        f.rcv_nxt += f.payload_at(f.rcv_nxt, env.link.mtu) as u64;
    }
    let cfg = env.config;
    let due = f.rcv_pkts >= cfg.ack_every_packets
        || (cfg.ack_every_bytes > 0 && f.rcv_bytes >= cfg.ack_every_bytes)
        || f.rcv_nxt >= f.size
        || !f.ooo.is_empty();
    if due {
        send_ack(io, env, f, pkt, p);
    }
}

/// Sends a cumulative ACK for data packet `pkt` (echoing its timestamps, path flags, CE and INT).
pub fn send_ack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    let mut ack = env.control_packet(Kind::Ack, p.flow, f.src, f.rcv_nxt);
    ack.sent_at = p.sent_at;
    ack.delivered = p.delivered;
    ack.sack = io.core.now;
    ack.flags |= p.flags & PATH_FLAGS;
    if f.rcv_ce {
        ack.flags |= FLAG_ECE;
    }
    f.rcv_pkts = 0;
    f.rcv_bytes = 0;
    f.rcv_ce = false;
    let id = io.queue_control(env, ack);
    io.core.arena.copy_int(pkt, id);
}

/// A packet arrived past the next expected byte: selective repeat holds it and reports it; go-back-N
/// NACKs the expected byte (at most once per `nack_interval` for the same byte).
pub fn out_of_order(io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
    let now = io.core.now;
    let selective = env.config.loss_recovery == LossRecovery::Selective;
    if selective {
        f.ooo.insert(p.seq);
    } else {
        let repeat = f.last_nack.is_some_and(|(seq, at)| seq == f.rcv_nxt && now - at < env.config.nack_interval);
        if repeat {
            return;
        }
    }
    f.last_nack = Some((f.rcv_nxt, now));
    let mut nack = env.control_packet(Kind::Nack, p.flow, f.src, f.rcv_nxt);
    nack.sack = p.seq;
    nack.sent_at = p.sent_at;
    io.queue_control(env, nack);
}

/// Advances the ACK point of `f` to `seq` at `now`; returns the newly acknowledged bytes.
pub fn advance(now: Time, f: &mut Flow, seq: u64) -> u64 {
    if seq <= f.snd_una {
        return 0;
    }
    let newly = seq - f.snd_una;
    f.snd_una = seq;
    f.last_progress = now;
    f.rto_timeouts = 0;
    f.snd_nxt = f.snd_nxt.max(seq);
    f.rtx_high = f.rtx_high.max(seq);
    if !f.sacked.is_empty() {
        f.sacked = f.sacked.split_off(&seq);
    }
    newly
}

/// An ACK (packet `pkt`) reached the sender of `f`: the ACK point advances, the algorithm hears of a
/// newer sample of the receiving host's signals the ACK carries, then of the ACK with its RTT, delivery
/// rate, ECN echo, INT, path flags and whether it revealed reordering.
pub fn receive_ack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    if f.finish.is_some() || !f.started {
        return;
    }
    let now = io.core.now;
    let newly = advance(now, f, p.seq);
    let reordered = p.sent_at < f.latest_echo;
    f.latest_echo = f.latest_echo.max(p.sent_at);
    crate::transport::token::heard(f);
    receiving_host(io, env, f, pkt, p.flow);
    let ece = p.flags & FLAG_ECE != 0;
    let cnp = ece && f.cnp && f.cnp_interval == 0 && f.events().contains(Events::CNP);
    if f.events().contains(Events::ACK) || cnp {
        let mut int = [IntHop::default(); MAX_INT_HOPS];
        let hops = io.core.arena.int(pkt);
        int[..hops.len()].copy_from_slice(hops);
        let n = hops.len();
        let rtt = now - p.sent_at;
        let packets = newly.div_ceil(env.link.mtu as u64) as u32;
        let mut ack = Ack::single(newly, packets, ece, Some(rtt), f.snd_una, f.snd_nxt, f.in_flight(), now);
        let samples = [rtt];
        ack.rtt_samples = &samples;
        ack.delivery_rate = delivery_rate(f.snd_una - p.delivered.min(f.snd_una), rtt);
        ack.remote_delay = Some(p.host_delay as Time);
        ack.int = &int[..n];
        ack.path_flags = (p.flags & PATH_FLAGS) >> PATH_SHIFT;
        ack.reordered = reordered as u32;
        cc::on_ack(io, env, f, p.flow, &ack, cnp);
    }
    if p.signal_hops > 0 {
        path_signal(io, env, f, pkt, p);
    }
    if f.snd_una >= f.size {
        f.finish(io.core, p.flow);
    }
}

/// Hands the algorithm of `f` (flow `id`) the receiving host's sample ACK `pkt` carries, if it is newer
/// than the last one it had.
fn receiving_host(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, id: u32) {
    let Some(sample) = io.core.arena.host(pkt) else { return };
    if sample.at > f.host_seen && f.events().contains(Events::HOST) {
        f.host_seen = sample.at;
        cc::on_host(io, env, f, id, sample);
    }
}

/// A NACK reached the sender of `f` (whose ACK point it has advanced): go-back-N resends from the
/// hole; selective repeat queues the holes it reveals; the algorithm hears of a loss.
pub fn receive_nack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
    let lost = match env.config.loss_recovery {
        LossRecovery::GoBackN => go_back(f, p.seq),
        LossRecovery::Selective => queue_holes(f, p.sack, env.link.mtu),
    };
    if lost && f.events().contains(Events::LOSS) {
        let loss = Loss { kind: LossKind::Nack, count: 1, in_flight: f.in_flight(), snd_nxt: f.snd_nxt };
        cc::on_loss(io, env, f, p.flow, &loss);
    }
    if f.snd_una >= f.size {
        f.finish(io.core, p.flow);
    }
}

/// The retransmission-timeout check of flow `id` fired. Returns whether it timed out: then the flow
/// resends from its ACK point and the host must queue it again.
pub fn on_rto(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) -> bool {
    f.rto_pending = false;
    if f.finish.is_some() || f.snd_una >= f.max_sent {
        return false;
    }
    let core = &mut *io.core;
    let deadline = f.last_progress + rto(env, f);
    if core.now < deadline {
        f.rto_pending = true;
        core.schedule(deadline, Event::Rto { flow: id });
        return false;
    }
    core.counters.timeouts += 1;
    f.last_progress = core.now;
    if env.config.rto_backoff {
        f.rto_timeouts = f.rto_timeouts.saturating_add(1);
    }
    f.snd_nxt = f.snd_una;
    f.sacked.clear();
    f.rtx.clear();
    f.rtx_high = f.snd_una;
    f.next_tx = core.now;
    if f.events().contains(Events::LOSS) {
        let loss = Loss { kind: LossKind::Timeout, count: 1, in_flight: f.max_sent - f.snd_una, snd_nxt: f.snd_nxt };
        cc::on_loss(io, env, f, id, &loss);
    }
    true
}

/// Flow `f`'s retransmission timeout: the minimum, backed off by its timeouts in a row when the run
/// backs off.
fn rto(env: &HostEnv, f: &Flow) -> Time {
    sluice_cc::rto::backed_off(env.config.rto_min, f.rto_timeouts.into())
}

/// A control packet for the sender of `f` that only its algorithm reads: a probe's echo, a CNP, a
/// switch's queue notification or a switch signal's feedback packet.
pub fn receive_signal(io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
    match p.kind {
        Kind::ProbeAck => {
            if f.finish.is_none() && f.events().contains(Events::PROBE) {
                let rtt = io.core.now - p.sent_at;
                cc::on_probe(io, env, f, p.flow, rtt);
            }
        }
        Kind::Cnp => {
            if f.finish.is_none() && f.events().contains(Events::CNP) {
                cc::on_cnp(io, env, f, p.flow);
            }
        }
        Kind::Notify => {
            if f.finish.is_none() && f.started && f.events().contains(Events::FEEDBACK) {
                let fb = Feedback::QueueNotification {
                    queue: p.seq,
                    link_rate: p.sack,
                    at: p.delivered,
                    sent_at: p.sent_at,
                };
                cc::on_feedback(io, env, f, p.flow, fb);
            }
        }
        Kind::Signal => {
            if f.finish.is_none() && f.started && f.events().contains(Events::FEEDBACK) {
                let origin = SignalOrigin::Switch(p.sack as u32);
                let fb = Feedback::Signal { value: p.seq, origin, at: p.delivered, sent_at: p.sent_at };
                cc::on_feedback(io, env, f, p.flow, fb);
            }
        }
        _ => unreachable!("{:?} is not a signal for the sender's algorithm", p.kind),
    }
}

/// The signal value the switches wrote into the data packet that ACK `pkt` answers, echoed by the
/// receiver: the algorithm hears of it as feedback after the ACK.
#[cold]
fn path_signal(io: &mut HostIo, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
    let Some(value) = io.core.arena.signal(pkt) else { return };
    if f.finish.is_none() && f.events().contains(Events::FEEDBACK) {
        let origin = SignalOrigin::Path(p.signal_hops);
        let fb = Feedback::Signal { value, origin, at: io.core.now, sent_at: p.sent_at };
        cc::on_feedback(io, env, f, p.flow, fb);
    }
}

/// The receiver of `f` echoes an RTT probe to its sender.
pub fn echo_probe(io: &mut HostIo, env: &HostEnv, f: &Flow, p: &Packet) {
    let mut echo = env.control_packet(Kind::ProbeAck, p.flow, f.src, 0);
    echo.sent_at = p.sent_at;
    io.queue_control(env, echo);
}

/// Go-back-N: resend from `seq` if anything past it was sent. Returns whether data was lost.
fn go_back(f: &mut Flow, seq: u64) -> bool {
    if f.snd_nxt <= seq {
        return false;
    }
    f.snd_nxt = seq.max(f.snd_una);
    true
}

/// Selective repeat: `sack` arrived out of order; every unsacked packet between the last queued hole and
/// `sack` is resent. Returns whether a new hole was found.
fn queue_holes(f: &mut Flow, sack: u64, mtu: u32) -> bool {
    f.sacked.insert(sack);
    let mut seq = f.rtx_high.max(f.snd_una);
    let mut found = false;
    while seq < sack {
        if !f.sacked.contains(&seq) {
            f.rtx.push_back(seq);
            found = true;
        }
        seq += f.payload_at(seq, mtu) as u64;
    }
    f.rtx_high = f.rtx_high.max(sack + f.payload_at(sack, mtu) as u64);
    found
}

/// Bytes delivered over `interval`, as a rate (None for an empty interval).
fn delivery_rate(bytes: u64, interval: Time) -> Option<Rate> {
    (interval > 0).then(|| (bytes as u128 * 8 * sluice_core::PS_PER_S as u128 / interval as u128) as u64)
}
