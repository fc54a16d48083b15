//! The receiver-driven (token) transport: requests to send, the unscheduled phase, token generation by
//! the receiver's [`sluice_cc::ReceiverControl`] (grants, a token rate or a token window), the receiver
//! NIC's token pacer, SRPT grant ranking with overcommitment and Homa priorities, volume control, stale
//! tokens, trimmed headers and Aeolus probes, the receiver's loss timeout, and the sender's request timer
//! and early stop.
//!
//! Per-flow state is [`RdFlow`] (on `Flow::rd`), per-host state [`TokenHost`]; settings come from the
//! algorithm's [`TokenTransport`]. The bookkeeping every datapath keeps alike (held tokens, a flow's
//! grants and its controller's timers and token rate, the loss check, the early stop, the log of issued
//! tokens, SRPT ranks) is [`sluice_cc::grants`]. A run without a token algorithm builds none of this,
//! and the hot path only tests `Flow::rd` and `HostEnv::rd`.

use std::collections::VecDeque;

use sluice_cc::grants::{loss_check_at, srpt_rank, Arm, EarlyStop, Grants, HeldTokens, TokenLog};
use sluice_cc::token::{jittered, more_than_bdp, TokenTransport};
use sluice_cc::{Arrival, FlowInfo, ReceiverControl, Request, RxCtx, RxDecisions, RxEvents, TimerId};
use sluice_core::{Rate, Rng, Time};

use crate::config::RdEnv;
use crate::engine::packet::{
    Kind, Packet, FLAG_CE, FLAG_ECT, RD_BOUNCED, RD_ECHO, RD_MORE_BDP, RD_PROBE, RD_SCHEDULED, RD_TRIMMED,
    RD_UNSCHEDULED,
};
use crate::engine::{Event, TokenEvent};
use crate::transport::flow::{Flow, SendState};
use crate::transport::table::FlowTable;
use crate::transport::window;
use crate::transport::{HostEnv, HostIo};

/// Per-flow state of the transport: the sender's tokens and the receiver's controller and grants.
pub struct RdFlow {
    pub(crate) info: FlowInfo,
    pub(crate) bdp: u64,
    // Sender.
    pub(crate) unscheduled_end: u64,
    /// The tokens the sender holds.
    pub(crate) tokens: HeldTokens,
    pub(crate) echo: bool,
    pub(crate) probe_due: bool,
    pub(crate) scheduled_queue: u64,
    // Receiver.
    pub(crate) rx: Option<Box<dyn ReceiverControl>>,
    pub(crate) rx_events: RxEvents,
    pub(crate) known: bool,
    /// The receiver's grants.
    pub(crate) grants: Grants,
    pub(crate) next_token: u32,
    pub(crate) last_activity: Time,
    pub(crate) check_pending: bool,
    /// Tokens issued whose data has not arrived (the credit-to-data round trip).
    pub(crate) log: TokenLog,
    /// Sender retransmission timer and early stop ([`TxState`]).
    pub(crate) tx: TxState,
    /// The receiver got the flow's request to send.
    pub(crate) request_seen: bool,
    /// Flag-driven volume control after a receiver timeout: the highest sequence number asked for again.
    /// Until the flow completes, every arrival earns a token and the next hole is asked for, since an
    /// unflagged tail earns no tokens of its own ([`TokenHost::recover_next`]).
    pub(crate) recovering: Option<u64>,
}

/// The sender's side of the retransmission timer, the early CREDIT_STOP and NDP's return-to-sender.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TxState {
    /// When the first request to send left.
    pub(crate) request_at: Time,
    /// Requests sent again after a timeout.
    pub(crate) retries: u32,
    /// A token, ACK or NACK of the flow reached the sender.
    pub(crate) heard: bool,
    /// The early CREDIT_STOP's rounds, and whether a stop was sent since the last request.
    pub(crate) early: EarlyStop,
    /// Returned packets to resend without a new token (their grant or unscheduled allowance was spent).
    pub(crate) free_resends: u32,
}

impl RdFlow {
    /// State for a flow starting now; `rx` is the algorithm's receiver controller.
    pub fn new(info: FlowInfo, rx: Option<Box<dyn ReceiverControl>>, env: &RdEnv) -> RdFlow {
        let bdp = sluice_cc::token::bdp_bytes(&info);
        let unscheduled_end = env.transport.unscheduled.bytes(info.size, bdp);
        let rx_events = rx.as_ref().map_or(RxEvents::default(), |r| r.events());
        RdFlow {
            info,
            bdp,
            unscheduled_end,
            tokens: HeldTokens::default(),
            echo: false,
            probe_due: false,
            scheduled_queue: u64::MAX,
            rx,
            rx_events,
            known: false,
            grants: Grants::default(),
            next_token: 0,
            last_activity: 0,
            check_pending: false,
            log: TokenLog::default(),
            tx: TxState::default(),
            request_seen: false,
            recovering: None,
        }
    }

    /// Tokens the sender holds without having spent any of them.
    pub fn held_tokens(&self) -> u64 {
        self.tokens.unused()
    }

    /// Drops held tokens that are stale at `now`; returns how many.
    pub(crate) fn expire(&mut self, now: Time, transport: &TokenTransport) -> u64 {
        self.tokens.expire(now, transport, self.info.mss as u64, self.bdp)
    }
}

/// What a receiver-driven flow may do at `now` (replaces the window check of sender-driven flows).
pub fn send_state(f: &mut Flow, now: Time) -> SendState {
    let (probe_due, unscheduled_end, credit, free_resends) = {
        let rd = f.rd.as_deref().expect("a receiver-driven flow");
        (rd.probe_due, rd.unscheduled_end, rd.tokens.credit(), rd.tx.free_resends)
    };
    while f.rtx.front().is_some_and(|&s| s < f.snd_una) {
        f.rtx.pop_front();
    }
    let resend = !f.rtx.is_empty();
    let new_data = f.snd_nxt < f.size;
    if !probe_due && !resend && !new_data {
        return SendState::Idle;
    }
    let unscheduled = !resend && new_data && f.snd_nxt < unscheduled_end;
    let returned = resend && free_resends > 0;
    if !probe_due && !unscheduled && credit == 0 && !returned {
        return SendState::WindowFull;
    }
    if f.next_tx > now {
        return SendState::PacedUntil(f.next_tx);
    }
    SendState::Send
}

/// An acknowledgment of flow `f` reached its sender: the receiver knows of the flow.
#[inline]
pub(crate) fn heard(f: &mut Flow) {
    if let Some(rd) = f.rd.as_deref_mut() {
        rd.tx.heard = true;
    }
}

/// Receiver-side delivery of a full data packet: in order, buffered out of order, or a duplicate.
/// Returns whether it brought new bytes.
pub(crate) fn accept(f: &mut Flow, p: &Packet, mtu: u32) -> bool {
    if p.seq == f.rcv_nxt {
        f.rcv_nxt += p.payload as u64;
        while f.ooo.first() == Some(&f.rcv_nxt) {
            f.ooo.pop_first();
            f.rcv_nxt += f.payload_at(f.rcv_nxt, mtu) as u64;
        }
        true
    } else if p.seq > f.rcv_nxt {
        f.ooo.insert(p.seq)
    } else {
        false
    }
}

/// Gives flow `f` (id `id`), starting now, its transport state and its receiver controller.
pub(crate) fn attach(
    f: &mut Flow,
    id: u32,
    factory: &dyn sluice_cc::Factory,
    link: &crate::config::LinkConfig,
    line_rate: Rate,
    now: Time,
    env: &RdEnv,
) {
    let info = f.info(id, link, line_rate, now);
    let rx = factory.receiver(&info);
    f.rd = Some(Box::new(RdFlow::new(info, rx, env)));
}

/// A host's token-transport state: the NIC's token pacer and the flows this host receives; its methods
/// are the transport's sender and receiver logic, run on the host through [`HostIo`].
#[derive(Debug, Default)]
pub struct TokenHost {
    /// The stream that jitters rate-based token spacing (`token_jitter` > 0 only).
    jitter: Option<Rng>,
    queue: VecDeque<u32>,
    next_at: Time,
    pace_pending: bool,
    incoming: Vec<u32>,
}

impl TokenHost {
    /// State for host node `node`; `seed` seeds its token jitter when the transport has one.
    pub fn new(env: &RdEnv, node: u32, seed: u64) -> TokenHost {
        let jitter = (env.transport.token_jitter > 0.0).then(|| Rng::named(seed, &format!("host.{node}.token_jitter")));
        TokenHost { jitter, ..TokenHost::default() }
    }
}

impl TokenHost {
    /// Sends flow `id`'s next packet: an Aeolus probe, an unscheduled packet, or a scheduled one that
    /// spends a token.
    pub fn send_packet(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let renv = env.rd.expect("receiver-driven run");
        let mtu = env.link.mtu;
        if f.rd.as_deref().is_some_and(|r| r.probe_due) {
            self.send_probe(io, env, f, id);
            return;
        }
        let stale = f.rd.as_deref_mut().expect("rd flow").expire(io.core.now, &renv.transport);
        io.core.counters.rd.tokens_stale += stale;
        let (seq, payload, retransmit) = f.take_next_seq(mtu);
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let scheduled = retransmit || seq >= rd.unscheduled_end;
        let mut flags_rd = 0;
        let mut token = 0;
        let mut queue = env.data_queue;
        if retransmit && rd.tx.free_resends > 0 {
            // A returned packet goes again on the grant (or unscheduled allowance) it already used.
            rd.tx.free_resends -= 1;
        } else if scheduled {
            let (seq, first) = rd.tokens.spend().unwrap_or((0, false));
            token = seq;
            io.core.counters.rd.tokens_used += u64::from(first);
            io.core.counters.rd.scheduled_bytes += payload as u64;
            flags_rd |= RD_SCHEDULED;
            if rd.scheduled_queue != u64::MAX {
                queue = rd.scheduled_queue as u8;
            }
        } else {
            io.core.counters.rd.unscheduled_bytes += payload as u64;
            flags_rd |= RD_UNSCHEDULED;
            queue = renv.unscheduled_queue(f.size, env.data_queue);
            if renv.transport.aeolus && f.snd_nxt >= rd.unscheduled_end {
                rd.probe_due = true;
            }
        }
        if std::mem::take(&mut rd.echo) {
            flags_rd |= RD_ECHO;
        }
        if more_than_bdp(f.size, seq, rd.bdp, rd.info.mss as u64) {
            flags_rd |= RD_MORE_BDP;
        }
        let packet = Packet {
            seq,
            sent_at: io.core.now,
            delivered: f.snd_una,
            payload,
            flags: if env.needs.ecn { FLAG_ECT } else { 0 },
            token,
            rd: flags_rd,
            ..Packet::new(Kind::Data, id, f.dst, payload + env.link.header_bytes, queue)
        };
        self.transmit(io, f, packet);
        io.core.counters.bytes_sent += payload as u64;
        if retransmit {
            f.retransmitted += payload as u64;
            io.core.counters.retransmitted_bytes += payload as u64;
        }
    }

    fn send_probe(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.probe_due = false;
        io.core.counters.rd.probes += 1;
        let packet = Packet {
            seq: rd.unscheduled_end,
            sent_at: io.core.now,
            rd: RD_PROBE,
            ..Packet::new(Kind::Data, id, f.dst, env.link.header_bytes, env.data_queue)
        };
        self.transmit(io, f, packet);
    }

    /// Puts a receiver-driven data packet on the NIC. No sender timeout is armed: the receiver detects
    /// what is missing (`on_rx_check`).
    fn transmit(&mut self, io: &mut HostIo, f: &mut Flow, packet: Packet) {
        let wire = packet.wire;
        let pkt = io.core.arena.alloc(packet);
        io.nic.transmit(io.core, pkt, wire);
        f.next_tx = io.core.now;
    }

    /// Flow `id` starts at this (sending) host: it announces itself to the receiver.
    pub fn start(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        if let Some(rd) = f.rd.as_deref_mut() {
            // The early stop's round trip runs from the first request (a receiver already sending
            // tokens ignores a repeated one, so timing from it would understate the round trip).
            rd.tx.request_at = io.core.now;
        }
        self.request(io, env, f, id);
        let timeout = env.rd.expect("rd run").transport.tx_timeout;
        if timeout > 0 {
            io.core.schedule(io.core.now + timeout, Event::Token(TokenEvent::TxCheck { flow: id }));
        }
    }

    /// Sends flow `id`'s request to send; `token` numbers the attempt (0: the first).
    fn request(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut rts = env.control_packet(Kind::Rts, id, f.dst, f.size);
        rts.delivered = rd.unscheduled_end;
        // ToCC's first window: the unsent bytes, at most one BDP (never the flow size beyond that).
        rts.sack = f.size.min(rd.bdp);
        rts.wire = env.rd.expect("rd run").transport.token_wire;
        rts.token = rd.tx.retries;
        io.core.counters.rd.requests += 1;
        io.queue_control(env, rts);
    }

    /// The sender's timer of flow `id`: a flow that heard nothing since its request sends it again (its
    /// request and unscheduled data may all have been lost, and then the receiver does not know of it);
    /// a flow that stopped its tokens early but still has data and no credit asks for tokens again
    /// (ns2-xpass `handle_sender_retransmit`).
    pub fn on_tx_check(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) -> bool {
        let timeout = env.rd.expect("rd run").transport.tx_timeout;
        let f = &mut flows[id as usize];
        let Some(rd) = f.rd.as_deref_mut() else { return false };
        if f.finish.is_some() {
            return false;
        }
        if rd.tx.early.sent {
            let left = f.snd_nxt < f.size || !f.rtx.is_empty();
            if left && rd.tokens.credit() == 0 {
                rd.tx.early.sent = false;
                rd.tx.retries += 1;
                self.request(io, env, f, id);
            }
            return false;
        }
        if rd.tx.heard || f.snd_una > 0 {
            return false;
        }
        io.core.counters.rd.tx_timeouts += 1;
        rd.tx.retries += 1;
        // Each silent round doubles the wait (as TCP's SYN retries), so that a receiver slow to start
        // a crowd of flows is not flooded with requests.
        let wait = timeout.saturating_mul(1 << rd.tx.retries.min(10));
        self.request(io, env, f, id);
        io.core.schedule(io.core.now + wait, Event::Token(TokenEvent::TxCheck { flow: id }));
        true
    }

    /// Early CREDIT_STOP (ns2-xpass `recv_credit`): once per request-to-first-token time, if the tokens
    /// of that round cover the packets left beyond the held credit, or nothing is left, the sender tells
    /// the receiver to stop.
    fn early_stop(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let mss = env.link.mtu as u64;
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let unsent = f.size.saturating_sub(f.snd_nxt).div_ceil(mss) + f.rtx.len() as u64;
        let left = unsent.saturating_sub(rd.tokens.credit());
        if !rd.tx.early.on_token(io.core.now, rd.tx.request_at, left) {
            return;
        }
        let rtt = rd.tx.early.rtt().expect("set by a token");
        io.core.counters.rd.early_stops += 1;
        let mut stop = env.control_packet(Kind::TokenStop, id, f.dst, f.snd_nxt);
        stop.wire = env.rd.expect("rd run").transport.token_wire;
        io.queue_control(env, stop);
        // Tokens lost after the stop would leave data unsent: ask again after two round trips.
        io.core.schedule(io.core.now + 2 * rtt.max(1), Event::Token(TokenEvent::TxCheck { flow: id }));
    }

    /// A trimmed header came back to this (sending) host from a full header queue (NDP return-to-sender):
    /// the packet goes again at once on the grant it already used. csg-htsim's sender (`NdpSrc::processRTS`)
    /// waits for a pull unless it expects none; here the receiver counts the packet as still in flight,
    /// so no pull would come for it.
    fn returned(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, p: &Packet) {
        let f = &mut flows[p.flow as usize];
        let Some(rd) = f.rd.as_deref_mut() else { return };
        if f.finish.is_some() || p.seq < f.snd_una || f.rtx.contains(&p.seq) {
            return;
        }
        f.rtx.push_front(p.seq);
        rd.tx.free_resends += 1;
        io.activate(f, p.flow, env.link.mtu);
    }

    /// A token for flow `p.flow` reached its sender.
    pub fn receive_token(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
        if env.rd.is_some_and(|r| r.transport.early_stop)
            && f.finish.is_none()
            && f.rd.as_deref().is_some_and(|r| !r.tx.early.sent)
        {
            self.early_stop(io, env, f, p.flow);
        }
        let Some(rd) = f.rd.as_deref_mut() else { return };
        rd.tx.heard = true;
        // A token for a flow with nothing unsent is still held: a NACK it overtook may need it. Tokens
        // held when the flow finishes count as wasted (`held_tokens`).
        if f.finish.is_some() {
            io.core.counters.rd.tokens_wasted += 1;
            return;
        }
        rd.tokens.hold(p.token, p.delivered, rd.info.mss as u64, io.core.now);
        rd.echo |= p.flags & FLAG_CE != 0;
        if p.sack != 0 {
            rd.scheduled_queue = p.sack;
        }
    }

    /// A NACK for a receiver-driven flow: the packet at `p.sack` is queued for resending on a token.
    /// After an early stop, the sender asks for tokens again (ns2-xpass `recv_nack`).
    pub fn receive_nack(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
        let seq = p.sack;
        if f.finish.is_none() && seq >= f.snd_una && seq < f.max_sent && !f.rtx.contains(&seq) {
            f.rtx.push_back(seq);
        }
        let Some(rd) = f.rd.as_deref_mut() else { return };
        rd.tx.heard = true;
        if std::mem::take(&mut rd.tx.early.sent) {
            rd.tx.retries += 1;
            self.request(io, env, f, p.flow);
        }
    }

    /// A request to send reached this (receiving) host.
    pub fn receive_request(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, p: &Packet) {
        let id = p.flow;
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if std::mem::replace(&mut rd.request_seen, true) {
            // A request sent again: the receiver already has it; the sender wants tokens again after
            // an early stop, or lost what came back.
            rd.grants.stop_requested = false;
            self.request_again(io, env, flows, id);
            return;
        }
        self.learn(io, env, flows, id);
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        if env.rd.is_some_and(|r| r.transport.volume_by_flag) {
            rd.grants.owed += p.sack.saturating_sub(p.delivered);
        }
        if rd.rx_events.contains(RxEvents::REQUEST) {
            let request = Request { at: io.core.now, size: rd.info.size, unscheduled_bytes: p.delivered };
            let mut ctx = RxCtx::new(io.core.now);
            if let Some(rx) = rd.rx.as_mut() {
                rx.on_request(&request, &mut ctx);
            }
            self.apply(io, env, flows, id, ctx.decisions());
        }
        self.refill(io, env, flows, id);
    }

    /// A request of flow `id` the receiver already had: the receiver acknowledges what it has, so that
    /// the sender stops asking (Homa's BUSY answer to a RESEND; for a finished flow, its last ACK
    /// again), and tops up the grants of an unfinished flow.
    fn request_again(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let f = &mut flows[id as usize];
        let ack = env.control_packet(Kind::Ack, id, f.src, f.rcv_nxt);
        io.queue_control(env, ack);
        if !f.rd.as_deref().is_some_and(|r| r.grants.done) {
            self.refill(io, env, flows, id);
        }
    }

    /// Stream `id` stopped, and every byte it sent had already reached this (receiving) host: no data
    /// packet is left to carry the end, so the receiver acknowledges the stream's last byte at once (its
    /// sender's stop is known here without a message) and its controller stops. The UDP datapath sends
    /// the stop as a request to send with the final size.
    pub fn stream_stopped(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) -> bool {
        let f = &flows[id as usize];
        if f.finish.is_some() || f.rcv_nxt < f.size || f.rd.as_deref().is_none_or(|r| r.grants.done || !r.known) {
            return false;
        }
        let ack = env.control_packet(Kind::Ack, id, f.src, f.rcv_nxt);
        io.queue_control(env, ack);
        self.receiver_done(io, env, flows, id);
        true
    }

    /// The receiver learns of flow `id` (its request or first packet): starts its controller.
    fn learn(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        if rd.known {
            return;
        }
        rd.known = true;
        rd.last_activity = io.core.now;
        rd.grants.outstanding = rd.unscheduled_end;
        let info = rd.info.clone();
        let mut ctx = RxCtx::new(io.core.now);
        if let Some(rx) = rd.rx.as_mut() {
            rx.on_start(&info, &mut ctx);
        }
        self.incoming.push(id);
        self.apply(io, env, flows, id, ctx.decisions());
        self.arm_check(io, env, flows, id);
    }

    /// A data packet (or trimmed header, or probe) of a receiver-driven flow reached its receiver.
    pub fn receive_data(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, pkt: u32, p: &Packet) {
        let id = p.flow;
        if p.rd & RD_BOUNCED != 0 {
            return self.returned(io, env, flows, p);
        }
        self.learn(io, env, flows, id);
        let mtu = env.link.mtu;
        let f = &mut flows[id as usize];
        f.rd.as_deref_mut().expect("rd flow").last_activity = io.core.now;
        if p.rd & RD_PROBE != 0 {
            self.probe_arrived(io, env, f, p);
            self.refill(io, env, flows, id);
            return;
        }
        let trimmed = p.rd & RD_TRIMMED != 0;
        let mut accepted = false;
        if trimmed {
            let lost = f.payload_at(p.seq, mtu) as u64;
            let rd = f.rd.as_deref_mut().expect("rd flow");
            rd.grants.outstanding = rd.grants.outstanding.saturating_sub(lost);
            self.nack(io, env, f, id, p.seq);
        } else {
            accepted = accept(f, p, mtu);
            let rd = f.rd.as_deref_mut().expect("rd flow");
            if accepted {
                rd.grants.received += p.payload as u64;
                rd.grants.outstanding = rd.grants.outstanding.saturating_sub(p.payload as u64);
                let flagged = p.rd & RD_MORE_BDP != 0 && env.rd.is_some_and(|r| r.transport.volume_by_flag);
                if flagged || rd.recovering.is_some() {
                    rd.grants.owed += p.payload as u64;
                }
            }
            self.recover_next(io, env, f, id);
        }
        let decisions = self.on_data(io, f, p, trimmed, accepted);
        let every = env.rd.expect("rd run").transport.ack_every_packet;
        let ack = match decisions.ack {
            sluice_cc::AckKind::Withhold => false,
            sluice_cc::AckKind::Default => every || f.rcv_nxt >= f.size,
            _ => true,
        };
        if !trimmed && ack {
            window::send_ack(io, env, f, pkt, p);
        }
        self.apply(io, env, flows, id, &decisions);
        let f = &mut flows[id as usize];
        if f.rcv_nxt >= f.size {
            self.receiver_done(io, env, flows, id);
            return;
        }
        self.refill(io, env, flows, id);
    }

    fn on_data(&mut self, io: &mut HostIo, f: &mut Flow, p: &Packet, trimmed: bool, accepted: bool) -> RxDecisions {
        let rcv_nxt = f.rcv_nxt;
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut ctx = RxCtx::new(io.core.now);
        if rd.rx_events.contains(RxEvents::DATA) {
            let scheduled = p.rd & RD_SCHEDULED != 0;
            let arrival = Arrival {
                scheduled,
                trimmed,
                token_echo: p.rd & RD_ECHO != 0,
                more_than_bdp: p.rd & RD_MORE_BDP != 0,
                token_seq: scheduled.then_some(p.token as u64),
                accepted,
                rcv_nxt,
                token_rtt: if scheduled { rd.log.rtt(p.token, io.core.now) } else { None },
                ..p.arrival(io.core.now)
            };
            if let Some(rx) = rd.rx.as_mut() {
                rx.on_data(&arrival, &mut ctx);
            }
        }
        *ctx.decisions()
    }

    /// A receiver timeout of a flag-driven flow: asks for every hole below the highest packet received
    /// (or the next missing one) and owes a token for each, then recovers packet by packet
    /// ([`TokenHost::recover_next`]).
    fn recover_holes(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let mtu = env.link.mtu;
        let end = f.ooo.last().copied().unwrap_or(f.rcv_nxt).min(f.size);
        let mut seq = f.rcv_nxt;
        let mut asked = Vec::new();
        while seq < end || (asked.is_empty() && seq < f.size) {
            if !f.ooo.contains(&seq) {
                asked.push(seq);
            }
            seq += f.payload_at(seq, mtu) as u64;
        }
        let mut owed = 0;
        for &seq in &asked {
            owed += f.payload_at(seq, mtu) as u64;
            self.nack(io, env, f, id, seq);
        }
        // The timeout already owes one token for the first hole.
        let first = if f.rcv_nxt < f.size { f.payload_at(f.rcv_nxt, mtu) as u64 } else { 0 };
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.grants.owed += owed.saturating_sub(first);
        rd.recovering = asked.last().copied().or(rd.recovering);
    }

    /// A flag-driven flow in recovery got a packet: once the holes asked for are filled, asks for the
    /// next missing packet (the sender ignores a request for data it has not sent yet).
    fn recover_next(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let Some(asked) = rd.recovering else { return };
        if f.rcv_nxt > asked && f.rcv_nxt < f.size {
            rd.recovering = Some(f.rcv_nxt);
            self.nack(io, env, f, id, f.rcv_nxt);
        }
    }

    /// An Aeolus probe arrived: every unscheduled packet before it that is missing was dropped; the
    /// receiver asks for each again (to be resent against tokens).
    fn probe_arrived(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, p: &Packet) {
        let mtu = env.link.mtu;
        let mut seq = f.rcv_nxt;
        let mut missing = Vec::new();
        while seq < p.seq.min(f.size) {
            if !f.ooo.contains(&seq) {
                missing.push(seq);
            }
            seq += f.payload_at(seq, mtu) as u64;
        }
        let mut lost = 0;
        for seq in missing {
            lost += f.payload_at(seq, mtu) as u64;
            self.nack(io, env, f, p.flow, seq);
        }
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.grants.outstanding = rd.grants.outstanding.saturating_sub(lost);
    }

    fn nack(&mut self, io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, seq: u64) {
        let mut nack = env.control_packet(Kind::Nack, id, f.src, f.rcv_nxt);
        nack.sack = seq;
        io.queue_control(env, nack);
    }

    /// Applies a receiver controller's decisions for flow `id`.
    fn apply(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32, d: &RxDecisions) {
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        // The receiver's controller holds a token algorithm's state: it is what a trace shows.
        if let (Some(trace), Some(rx)) = (f.trace.as_mut(), rd.rx.as_deref()) {
            trace.record(io.core.now, &mut |out| rx.trace(out));
        }
        let core = &mut *io.core;
        rd.grants.adopt(d, |arm| match arm {
            Arm::Timer { id: timer, at, gen } => {
                core.schedule(at, Event::Token(TokenEvent::RxTimer { flow: id, id: timer, gen }))
            }
            Arm::Ticks { gen } => core.schedule(core.now, Event::Token(TokenEvent::Tick { flow: id, gen })),
        });
        for _ in 0..d.grant {
            if !self.issue(io, env, flows, id) {
                break;
            }
        }
        if d.token_window.is_some() {
            self.refill(io, env, flows, id);
        }
    }

    /// Whether flow `id` may get another token now (known, not done or stopped, volume control, SRPT
    /// rank).
    fn may_grant(&self, env: &HostEnv, flows: &FlowTable, id: u32) -> bool {
        let transport = &env.rd.expect("rd run").transport;
        let f = &flows[id as usize];
        let rd = f.rd.as_deref().expect("rd flow");
        rd.known && rd.grants.may_grant(transport, f.size, || self.rank(flows, id))
    }

    /// Flow `id`'s SRPT rank among this receiver's unfinished flows (0 = fewest bytes left).
    fn rank(&self, flows: &FlowTable, id: u32) -> usize {
        let left = |i: u32| {
            let f = &flows[i as usize];
            (f.rd.as_deref().map_or(f.size, |r| r.grants.left(f.size)), i)
        };
        srpt_rank(left(id), self.incoming.iter().map(|&i| left(i)))
    }

    /// Issues one token of flow `id` if allowed; the NIC's token pacer sends it. Returns whether it did.
    fn issue(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) -> bool {
        if !self.may_grant(env, flows, id) {
            return false;
        }
        let renv = env.rd.expect("rd run");
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.grants.issue(&renv.transport, f.size, renv.token_bytes);
        self.queue.push_back(id);
        self.pace(io, env, flows);
        true
    }

    /// Tops flow `id`'s outstanding grants up to its token window.
    fn refill(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let k = env.rd.expect("rd run").token_bytes;
        loop {
            let rd = flows[id as usize].rd.as_deref().expect("rd flow");
            if rd.grants.window_room(k) != Some(true) || !self.issue(io, env, flows, id) {
                return;
            }
        }
    }

    /// Sends queued tokens as the NIC's token pacer allows.
    fn pace(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable) {
        let renv = env.rd.expect("rd run");
        let gap = if renv.transport.host_limiter { renv.token_gap(io.nic.rate, env.link.header_bytes) } else { 0 };
        loop {
            if self.queue.is_empty() {
                return;
            }
            if self.next_at > io.core.now {
                if !self.pace_pending {
                    self.pace_pending = true;
                    io.core.schedule(self.next_at, Event::Token(TokenEvent::Pace { host: io.node }));
                }
                return;
            }
            let id = self.queue.pop_front().expect("non-empty");
            let f = &flows[id as usize];
            let rd = f.rd.as_deref().expect("rd flow");
            if rd.grants.done {
                continue;
            }
            self.next_at = io.core.now + gap;
            self.send_token(io, env, flows, id);
        }
    }

    /// The token pacer's wake-up.
    pub fn on_token_pace(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable) -> bool {
        self.pace_pending = false;
        self.pace(io, env, flows);
        true
    }

    fn send_token(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let renv = env.rd.expect("rd run");
        let rank = if renv.transport.srpt { self.rank(flows, id) } else { 0 };
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut token = env.control_packet(Kind::Token, id, f.src, 0);
        token.wire = renv.transport.token_wire;
        token.token = rd.next_token;
        token.delivered = renv.token_bytes;
        token.sack = if renv.transport.priorities { renv.scheduled_queue(rank) } else { 0 };
        token.sent_at = io.core.now;
        if renv.transport.token_ecn {
            token.flags |= FLAG_ECT;
        }
        if rd.rx_events.contains(RxEvents::DATA) {
            rd.log.issued(rd.next_token, io.core.now);
        }
        rd.next_token = rd.next_token.wrapping_add(1);
        io.core.counters.rd.tokens_issued += 1;
        io.queue_control(env, token);
    }

    /// Flow `id`'s rate-based token generator fired.
    pub fn on_token_tick(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32, gen: u32) -> bool {
        let rd = flows[id as usize].rd.as_deref().expect("rd flow");
        let renv = env.rd.expect("rd run");
        let Some(mut gap) = rd.grants.tick_gap(gen, renv.token_bytes, env.link.header_bytes) else { return false };
        if let Some(rng) = self.jitter.as_mut() {
            gap = jittered(gap, renv.transport.token_jitter, rng.next_f64());
        }
        self.issue(io, env, flows, id);
        io.core.schedule(io.core.now + gap.max(1), Event::Token(TokenEvent::Tick { flow: id, gen }));
        true
    }

    /// A receiver-side timer of flow `id` fired.
    pub fn on_rx_timer(
        &mut self,
        io: &mut HostIo,
        env: &HostEnv,
        flows: &mut FlowTable,
        id: u32,
        timer: u8,
        gen: u32,
    ) -> bool {
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if !rd.grants.timer_current(timer, gen) || !rd.rx_events.contains(RxEvents::TIMER) {
            return false;
        }
        let mut ctx = RxCtx::new(io.core.now);
        if let Some(rx) = rd.rx.as_mut() {
            rx.on_timer(TimerId(timer), &mut ctx);
        }
        let d = *ctx.decisions();
        self.apply(io, env, flows, id, &d);
        true
    }

    fn arm_check(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let timeout = env.rd.expect("rd run").transport.rx_timeout;
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if timeout > 0 && !rd.check_pending {
            rd.check_pending = true;
            let at = loss_check_at(rd.last_activity, timeout, io.core.now);
            io.core.schedule(at, Event::Token(TokenEvent::RxCheck { flow: id }));
        }
    }

    /// The receiver's loss check of flow `id`: after `rx_timeout` without arrivals while grants or
    /// unscheduled bytes are outstanding, it asks for the next missing packet and forgets the grants that
    /// brought nothing (ToCC's token retransmission).
    pub fn on_rx_check(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) -> bool {
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.check_pending = false;
        if rd.grants.done {
            return false;
        }
        let renv = env.rd.expect("rd run");
        if rd.grants.loss_check(&renv.transport, renv.token_bytes, rd.last_activity, io.core.now) {
            io.core.counters.rd.rx_timeouts += 1;
            rd.last_activity = io.core.now;
            let seq = f.rcv_nxt;
            if renv.transport.volume_by_flag {
                self.recover_holes(io, env, f, id);
            } else if seq < f.size {
                self.nack(io, env, f, id, seq);
            }
            self.refill(io, env, flows, id);
            if flows[id as usize].rd.as_deref().is_some_and(|r| r.grants.on_demand()) {
                self.issue(io, env, flows, id);
            }
        }
        self.arm_check(io, env, flows, id);
        true
    }

    /// Flow `id` delivered everything: its receiver stops, and flows ranked behind it may get grants.
    fn receiver_done(&mut self, io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        rd.grants.done = true;
        rd.rx = None;
        rd.log.clear();
        self.incoming.retain(|&i| i != id);
        if env.rd.is_some_and(|r| r.transport.srpt) {
            let waiting: Vec<u32> = self.incoming.clone();
            for other in waiting {
                self.refill(io, env, flows, other);
            }
        }
    }
}

/// The sender's CREDIT_STOP reached the receiver: it issues no more tokens unless it finds data
/// missing (its loss timeout) or the sender asks again.
pub fn receive_stop(f: &mut Flow) {
    if let Some(rd) = f.rd.as_deref_mut() {
        rd.grants.stop_requested = !rd.grants.done;
    }
}
