//! The receiver-driven (token-based) transport at hosts: requests to send, the unscheduled phase, token
//! generation by the receiver's [`sluice_cc::ReceiverControl`] (grants, a token rate or a token window), the
//! receiver NIC's token pacer, SRPT grant ranking with overcommitment and Homa priorities, volume
//! control, stale tokens, trimmed headers and Aeolus probes, and the receiver's loss timeout.
//!
//! Settings come from the algorithm's [`TokenTransport`]; a run without a token algorithm never builds
//! any of this, and the hot path only tests `Flow::rd` and `HostEnv::rd`.

use std::collections::VecDeque;

use sluice_cc::token::{jittered, more_than_bdp, TokenTransport};
use sluice_cc::{Arrival, Request, RxCtx, RxDecisions, RxEvents, TimerId};
use sluice_core::{serialization_ps, Rng, Time};

use crate::config::RdEnv;
use crate::engine::packet::{
    Kind, Packet, FLAG_CE, FLAG_ECT, RD_BOUNCED, RD_ECHO, RD_MORE_BDP, RD_PROBE, RD_SCHEDULED, RD_TRIMMED,
    RD_UNSCHEDULED,
};
use crate::engine::{Core, Event, TokenEvent};
use crate::host::Host;
use crate::transport::flow::Flow;
use crate::transport::token::{accept, Held};
use crate::transport::window;
use crate::transport::HostEnv;

impl Host {
    /// Sends flow `id`'s next packet: an Aeolus probe, an unscheduled packet, or a scheduled one that
    /// spends a token.
    pub(crate) fn rd_send_packet(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let renv = env.rd.expect("receiver-driven run");
        let mtu = env.link.mtu;
        if f.rd.as_deref().is_some_and(|r| r.probe_due) {
            self.rd_send_probe(core, env, f, id);
            return;
        }
        let stale = f.rd.as_deref_mut().expect("rd flow").expire(core.now, &renv.transport);
        core.counters.rd.tokens_stale += stale;
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
            let (seq, first) = rd.spend();
            token = seq;
            core.counters.rd.tokens_used += u64::from(first);
            core.counters.rd.scheduled_bytes += payload as u64;
            flags_rd |= RD_SCHEDULED;
            if rd.scheduled_queue != u64::MAX {
                queue = rd.scheduled_queue as u8;
            }
        } else {
            core.counters.rd.unscheduled_bytes += payload as u64;
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
            sent_at: core.now,
            delivered: f.snd_una,
            payload,
            flags: if env.needs.ecn { FLAG_ECT } else { 0 },
            token,
            rd: flags_rd,
            ..Packet::new(Kind::Data, id, f.dst, payload + env.link.header_bytes, queue)
        };
        self.rd_transmit(core, f, packet);
        core.counters.bytes_sent += payload as u64;
        if retransmit {
            f.retransmitted += payload as u64;
            core.counters.retransmitted_bytes += payload as u64;
        }
    }

    fn rd_send_probe(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.probe_due = false;
        core.counters.rd.probes += 1;
        let packet = Packet {
            seq: rd.unscheduled_end,
            sent_at: core.now,
            rd: RD_PROBE,
            ..Packet::new(Kind::Data, id, f.dst, env.link.header_bytes, env.data_queue)
        };
        self.rd_transmit(core, f, packet);
    }

    /// Puts a receiver-driven data packet on the NIC. No sender timeout is armed: the receiver detects
    /// what is missing (`on_rx_check`).
    fn rd_transmit(&mut self, core: &mut Core, f: &mut Flow, packet: Packet) {
        let wire = packet.wire;
        let pkt = core.arena.alloc(packet);
        self.nic.transmit(core, pkt, wire);
        f.next_tx = core.now;
    }

    /// Flow `id` starts at this (sending) host: it announces itself to the receiver.
    pub(crate) fn rd_start(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        if let Some(rd) = f.rd.as_deref_mut() {
            // The early stop's round trip runs from the first request (a receiver already sending
            // tokens ignores a repeated one, so timing from it would understate the round trip).
            rd.tx.request_at = core.now;
        }
        self.rd_request(core, env, f, id);
        let timeout = env.rd.expect("rd run").transport.tx_timeout;
        if timeout > 0 {
            core.schedule(core.now + timeout, Event::Token(TokenEvent::TxCheck { flow: id }));
        }
    }

    /// Sends flow `id`'s request to send; `token` numbers the attempt (0: the first).
    fn rd_request(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut rts = env.control_packet(Kind::Rts, id, f.dst, f.size);
        rts.delivered = rd.unscheduled_end;
        // ToCC's first window: the unsent bytes, at most one BDP (never the flow size beyond that).
        rts.sack = f.size.min(rd.bdp);
        rts.wire = env.rd.expect("rd run").transport.token_wire;
        rts.token = rd.tx.retries;
        core.counters.rd.requests += 1;
        self.io(core).queue_control(env, rts);
    }

    /// The sender's timer of flow `id`: a flow that heard nothing since its request sends it again (its
    /// request and unscheduled data may all have been lost, and then the receiver does not know of it);
    /// a flow that stopped its tokens early but still has data and no credit asks for tokens again
    /// (ns2-xpass `handle_sender_retransmit`).
    pub fn on_tx_check(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let timeout = env.rd.expect("rd run").transport.tx_timeout;
        let f = &mut flows[id as usize];
        let Some(rd) = f.rd.as_deref_mut() else { return };
        if f.finish.is_some() {
            return;
        }
        if rd.tx.stop_sent {
            let left = f.snd_nxt < f.size || !f.rtx.is_empty();
            if left && rd.credit == 0 {
                rd.tx.stop_sent = false;
                rd.tx.retries += 1;
                self.rd_request(core, env, f, id);
            }
            return;
        }
        if rd.tx.heard || f.snd_una > 0 {
            return;
        }
        core.counters.rd.tx_timeouts += 1;
        rd.tx.retries += 1;
        // Each silent round doubles the wait (as TCP's SYN retries), so that a receiver slow to start
        // a crowd of flows is not flooded with requests.
        let wait = timeout.saturating_mul(1 << rd.tx.retries.min(10));
        self.rd_request(core, env, f, id);
        core.schedule(core.now + wait, Event::Token(TokenEvent::TxCheck { flow: id }));
        self.try_send(core, env, flows);
    }

    /// Early CREDIT_STOP (ns2-xpass `recv_credit`): once per request-to-first-token time, if the tokens
    /// of that round cover the packets left beyond the held credit, or nothing is left, the sender tells
    /// the receiver to stop.
    fn rd_early_stop(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let mss = env.link.mtu as u64;
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let tx = &mut rd.tx;
        tx.round_tokens += 1;
        let rtt = match tx.rtt {
            Some(rtt) => rtt,
            None => {
                tx.round_start = core.now;
                *tx.rtt.insert(core.now.saturating_sub(tx.request_at))
            }
        };
        let unsent = f.size.saturating_sub(f.snd_nxt).div_ceil(mss) + f.rtx.len() as u64;
        let left = unsent.saturating_sub(rd.credit);
        let round_over = core.now.saturating_sub(tx.round_start) >= rtt;
        let stop = left == 0 || (round_over && tx.round_tokens >= left);
        if round_over {
            tx.round_tokens = 0;
            tx.round_start = core.now;
        }
        if !stop {
            return;
        }
        tx.stop_sent = true;
        core.counters.rd.early_stops += 1;
        let mut stop = env.control_packet(Kind::TokenStop, id, f.dst, f.snd_nxt);
        stop.wire = env.rd.expect("rd run").transport.token_wire;
        self.io(core).queue_control(env, stop);
        // Tokens lost after the stop would leave data unsent: ask again after two round trips.
        core.schedule(core.now + 2 * rtt.max(1), Event::Token(TokenEvent::TxCheck { flow: id }));
    }

    /// The sender's CREDIT_STOP reached the receiver: it issues no more tokens unless it finds data
    /// missing (its loss timeout) or the sender asks again.
    pub(crate) fn rd_receive_stop(&mut self, f: &mut Flow) {
        if let Some(rd) = f.rd.as_deref_mut() {
            rd.stop_requested = !rd.done;
        }
    }

    /// A trimmed header came back to this (sending) host from a full header queue (NDP return-to-sender):
    /// the packet goes again at once on the grant it already used. csg-htsim's sender (`NdpSrc::processRTS`)
    /// waits for a pull unless it expects none; here the receiver counts the packet as still in flight,
    /// so no pull would come for it.
    fn rd_returned(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], p: &Packet) {
        let f = &mut flows[p.flow as usize];
        let Some(rd) = f.rd.as_deref_mut() else { return };
        if f.finish.is_some() || p.seq < f.snd_una || f.rtx.contains(&p.seq) {
            return;
        }
        f.rtx.push_front(p.seq);
        rd.tx.free_resends += 1;
        self.activate(flows, p.flow, core.now, env.link.mtu);
    }

    /// A token for flow `p.flow` reached its sender.
    pub(crate) fn rd_receive_token(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, p: &Packet) {
        if env.rd.is_some_and(|r| r.transport.early_stop)
            && f.finish.is_none()
            && f.rd.as_deref().is_some_and(|r| !r.tx.stop_sent)
        {
            self.rd_early_stop(core, env, f, p.flow);
        }
        let Some(rd) = f.rd.as_deref_mut() else { return };
        rd.tx.heard = true;
        // A token for a flow with nothing unsent is still held: a NACK it overtook may need it. Tokens
        // held when the flow finishes count as wasted (`held_tokens`).
        if f.finish.is_some() {
            core.counters.rd.tokens_wasted += 1;
            return;
        }
        let packets = p.delivered.div_ceil(rd.info.mss as u64).max(1) as u32;
        rd.held.push_back(Held { at: core.now, seq: p.token, packets, used: false });
        rd.credit += packets as u64;
        rd.echo |= p.flags & FLAG_CE != 0;
        if p.sack != 0 {
            rd.scheduled_queue = p.sack;
        }
    }

    /// A NACK for a receiver-driven flow: the packet at `p.sack` is queued for resending on a token.
    /// After an early stop, the sender asks for tokens again (ns2-xpass `recv_nack`).
    pub(crate) fn rd_receive_nack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, p: &Packet) {
        let seq = p.sack;
        if f.finish.is_none() && seq >= f.snd_una && seq < f.max_sent && !f.rtx.contains(&seq) {
            f.rtx.push_back(seq);
        }
        let Some(rd) = f.rd.as_deref_mut() else { return };
        rd.tx.heard = true;
        if std::mem::take(&mut rd.tx.stop_sent) {
            rd.tx.retries += 1;
            self.rd_request(core, env, f, p.flow);
        }
    }

    /// A request to send reached this (receiving) host.
    pub(crate) fn rd_receive_request(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], p: &Packet) {
        let id = p.flow;
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if std::mem::replace(&mut rd.request_seen, true) {
            // A request sent again: the receiver already has it; the sender wants tokens again after
            // an early stop, or lost what came back.
            rd.stop_requested = false;
            self.rd_request_again(core, env, flows, id);
            return;
        }
        self.rd_learn(core, env, flows, id);
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        if env.rd.is_some_and(|r| r.transport.volume_by_flag) {
            rd.owed += p.sack.saturating_sub(p.delivered);
        }
        if rd.rx_events.contains(RxEvents::REQUEST) {
            let request = Request { at: core.now, size: rd.info.size, unscheduled_bytes: p.delivered };
            let mut ctx = RxCtx::new(core.now);
            if let Some(rx) = rd.rx.as_mut() {
                rx.on_request(&request, &mut ctx);
            }
            self.rd_apply(core, env, flows, id, ctx.decisions());
        }
        self.rd_refill(core, env, flows, id);
    }

    /// A request of flow `id` the receiver already had: the receiver acknowledges what it has, so that
    /// the sender stops asking (Homa's BUSY answer to a RESEND; for a finished flow, its last ACK
    /// again), and tops up the grants of an unfinished flow.
    fn rd_request_again(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        let ack = env.control_packet(Kind::Ack, id, f.src, f.rcv_nxt);
        self.io(core).queue_control(env, ack);
        if !f.rd.as_deref().is_some_and(|r| r.done) {
            self.rd_refill(core, env, flows, id);
        }
    }

    /// Stream `id` stopped, and every byte it sent had already reached this (receiving) host: no data
    /// packet is left to carry the end, so the receiver acknowledges the stream's last byte at once (its
    /// sender's stop is known here without a message) and its controller stops. The UDP datapath sends
    /// the stop as a request to send with the final size.
    pub(crate) fn rd_stream_stopped(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &flows[id as usize];
        if f.finish.is_some() || f.rcv_nxt < f.size || f.rd.as_deref().is_none_or(|r| r.done || !r.known) {
            return;
        }
        let ack = env.control_packet(Kind::Ack, id, f.src, f.rcv_nxt);
        self.io(core).queue_control(env, ack);
        self.rd_receiver_done(core, env, flows, id);
        self.try_send(core, env, flows);
    }

    /// The receiver learns of flow `id` (its request or first packet): starts its controller.
    fn rd_learn(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        if rd.known {
            return;
        }
        rd.known = true;
        rd.last_activity = core.now;
        rd.outstanding = rd.unscheduled_end;
        let info = rd.info.clone();
        let mut ctx = RxCtx::new(core.now);
        if let Some(rx) = rd.rx.as_mut() {
            rx.on_start(&info, &mut ctx);
        }
        if let Some(h) = self.rd.as_deref_mut() {
            h.incoming.push(id);
        }
        self.rd_apply(core, env, flows, id, ctx.decisions());
        self.rd_arm_check(core, env, flows, id);
    }

    /// A data packet (or trimmed header, or probe) of a receiver-driven flow reached its receiver.
    pub(crate) fn rd_receive_data(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], pkt: u32, p: &Packet) {
        let id = p.flow;
        if p.rd & RD_BOUNCED != 0 {
            return self.rd_returned(core, env, flows, p);
        }
        self.rd_learn(core, env, flows, id);
        let mtu = env.link.mtu;
        let f = &mut flows[id as usize];
        f.rd.as_deref_mut().expect("rd flow").last_activity = core.now;
        if p.rd & RD_PROBE != 0 {
            self.rd_probe_arrived(core, env, f, p);
            self.rd_refill(core, env, flows, id);
            return;
        }
        let trimmed = p.rd & RD_TRIMMED != 0;
        let mut accepted = false;
        if trimmed {
            let lost = f.payload_at(p.seq, mtu) as u64;
            let rd = f.rd.as_deref_mut().expect("rd flow");
            rd.outstanding = rd.outstanding.saturating_sub(lost);
            self.rd_nack(core, env, f, id, p.seq);
        } else {
            accepted = accept(f, p, mtu);
            let rd = f.rd.as_deref_mut().expect("rd flow");
            if accepted {
                rd.received += p.payload as u64;
                rd.outstanding = rd.outstanding.saturating_sub(p.payload as u64);
                let flagged = p.rd & RD_MORE_BDP != 0 && env.rd.is_some_and(|r| r.transport.volume_by_flag);
                if flagged || rd.recovering.is_some() {
                    rd.owed += p.payload as u64;
                }
            }
            self.rd_recover_next(core, env, f, id);
        }
        let decisions = self.rd_on_data(core, f, p, trimmed, accepted);
        let every = env.rd.expect("rd run").transport.ack_every_packet;
        let ack = match decisions.ack {
            sluice_cc::AckKind::Withhold => false,
            sluice_cc::AckKind::Default => every || f.rcv_nxt >= f.size,
            _ => true,
        };
        if !trimmed && ack {
            window::send_ack(&mut self.io(core), env, f, pkt, p);
        }
        self.rd_apply(core, env, flows, id, &decisions);
        let f = &mut flows[id as usize];
        if f.rcv_nxt >= f.size {
            self.rd_receiver_done(core, env, flows, id);
            return;
        }
        self.rd_refill(core, env, flows, id);
    }

    fn rd_on_data(&mut self, core: &mut Core, f: &mut Flow, p: &Packet, trimmed: bool, accepted: bool) -> RxDecisions {
        let rcv_nxt = f.rcv_nxt;
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut ctx = RxCtx::new(core.now);
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
                token_rtt: if scheduled { rd.token_rtt(p.token, core.now) } else { None },
                ..p.arrival(core.now)
            };
            if let Some(rx) = rd.rx.as_mut() {
                rx.on_data(&arrival, &mut ctx);
            }
        }
        *ctx.decisions()
    }

    /// A receiver timeout of a flag-driven flow: asks for every hole below the highest packet received
    /// (or the next missing one) and owes a token for each, then recovers packet by packet
    /// ([`Host::rd_recover_next`]).
    fn rd_recover_holes(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
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
            self.rd_nack(core, env, f, id, seq);
        }
        // The timeout already owes one token for the first hole.
        let first = if f.rcv_nxt < f.size { f.payload_at(f.rcv_nxt, mtu) as u64 } else { 0 };
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.owed += owed.saturating_sub(first);
        rd.recovering = asked.last().copied().or(rd.recovering);
    }

    /// A flag-driven flow in recovery got a packet: once the holes asked for are filled, asks for the
    /// next missing packet (the sender ignores a request for data it has not sent yet).
    fn rd_recover_next(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let Some(asked) = rd.recovering else { return };
        if f.rcv_nxt > asked && f.rcv_nxt < f.size {
            rd.recovering = Some(f.rcv_nxt);
            self.rd_nack(core, env, f, id, f.rcv_nxt);
        }
    }

    /// An Aeolus probe arrived: every unscheduled packet before it that is missing was dropped; the
    /// receiver asks for each again (to be resent against tokens).
    fn rd_probe_arrived(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, p: &Packet) {
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
            self.rd_nack(core, env, f, p.flow, seq);
        }
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.outstanding = rd.outstanding.saturating_sub(lost);
    }

    fn rd_nack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, seq: u64) {
        let mut nack = env.control_packet(Kind::Nack, id, f.src, f.rcv_nxt);
        nack.sack = seq;
        self.io(core).queue_control(env, nack);
    }

    /// Applies a receiver controller's decisions for flow `id`.
    fn rd_apply(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32, d: &RxDecisions) {
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        // The receiver's controller holds a token algorithm's state: it is what a trace shows.
        if let (Some(trace), Some(rx)) = (f.trace.as_mut(), rd.rx.as_deref()) {
            trace.record(core.now, &mut |out| rx.trace(out));
        }
        if d.stop_tokens {
            rd.stopped = true;
        }
        if let Some(w) = d.token_window {
            rd.window = Some(w);
        }
        for (i, t) in d.set_timers.iter().enumerate() {
            if let Some(at) = t {
                rd.timer_gen[i] = rd.timer_gen[i].wrapping_add(1);
                core.schedule(*at, Event::Token(TokenEvent::RxTimer { flow: id, id: i as u8, gen: rd.timer_gen[i] }));
            } else if d.cancel_timers[i] {
                rd.timer_gen[i] = rd.timer_gen[i].wrapping_add(1);
            }
        }
        if let Some(rate) = d.token_rate {
            let restart = rd.token_rate == 0;
            rd.token_rate = rate;
            if restart && rate > 0 {
                rd.tick_gen = rd.tick_gen.wrapping_add(1);
                core.schedule(core.now, Event::Token(TokenEvent::Tick { flow: id, gen: rd.tick_gen }));
            }
        }
        for _ in 0..d.grant {
            if !self.rd_issue(core, env, flows, id) {
                break;
            }
        }
        if d.token_window.is_some() {
            self.rd_refill(core, env, flows, id);
        }
    }

    /// Whether flow `id` may get another token now (not done or stopped, volume control, SRPT rank).
    fn rd_may_grant(&self, env: &HostEnv, flows: &[Flow], id: u32) -> bool {
        let transport = &env.rd.expect("rd run").transport;
        let f = &flows[id as usize];
        let rd = f.rd.as_deref().expect("rd flow");
        if rd.done || rd.stopped || rd.stop_requested || !rd.known {
            return false;
        }
        if transport.volume_by_flag {
            if rd.owed == 0 {
                return false;
            }
        } else if transport.volume_control && rd.outstanding >= f.size.saturating_sub(rd.received) {
            return false;
        }
        !transport.srpt || self.rd_rank(flows, id) < transport.overcommit as usize
    }

    /// Flow `id`'s SRPT rank among this receiver's unfinished flows (0 = fewest bytes left).
    fn rd_rank(&self, flows: &[Flow], id: u32) -> usize {
        let Some(h) = self.rd.as_deref() else { return 0 };
        let left = |i: u32| {
            let f = &flows[i as usize];
            (f.size.saturating_sub(f.rd.as_deref().map_or(0, |r| r.received)), i)
        };
        let mine = left(id);
        h.incoming.iter().filter(|&&other| other != id && left(other) < mine).count()
    }

    /// Issues one token of flow `id` if allowed; the NIC's token pacer sends it. Returns whether it did.
    fn rd_issue(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) -> bool {
        if !self.rd_may_grant(env, flows, id) {
            return false;
        }
        let k = env.rd.expect("rd run").token_bytes;
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        if env.rd.is_some_and(|r| r.transport.volume_by_flag) {
            // Without the flow size, a token is expected to bring the bytes it earned.
            let earned = rd.owed.min(k);
            rd.owed -= earned;
            rd.outstanding += earned;
        } else {
            // A token brings at most the bytes still missing (a flow's last packet may be short).
            let missing = f.size.saturating_sub(rd.received + rd.outstanding);
            rd.outstanding += if missing > 0 { k.min(missing) } else { k };
        }
        let h = self.rd.as_deref_mut().expect("rd host");
        h.queue.push_back(id);
        self.rd_pace(core, env, flows);
        true
    }

    /// Tops flow `id`'s outstanding grants up to its token window.
    fn rd_refill(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let k = env.rd.expect("rd run").token_bytes;
        loop {
            let rd = flows[id as usize].rd.as_deref().expect("rd flow");
            let Some(window) = rd.window else { return };
            let room = rd.outstanding + k <= window || rd.outstanding == 0;
            if !room || !self.rd_issue(core, env, flows, id) {
                return;
            }
        }
    }

    /// Sends queued tokens as the NIC's token pacer allows.
    pub(crate) fn rd_pace(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let renv = env.rd.expect("rd run");
        let gap = if renv.transport.host_limiter { renv.token_gap(self.nic.rate, env.link.header_bytes) } else { 0 };
        loop {
            let h = self.rd.as_deref_mut().expect("rd host");
            if h.queue.is_empty() {
                return;
            }
            if h.next_at > core.now {
                if !h.pace_pending {
                    h.pace_pending = true;
                    core.schedule(h.next_at, Event::Token(TokenEvent::Pace { host: self.node }));
                }
                return;
            }
            let id = h.queue.pop_front().expect("non-empty");
            let f = &flows[id as usize];
            let rd = f.rd.as_deref().expect("rd flow");
            if rd.done {
                continue;
            }
            h.next_at = core.now + gap;
            self.rd_send_token(core, env, flows, id);
        }
    }

    /// The token pacer's wake-up.
    pub fn on_token_pace(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        if let Some(h) = self.rd.as_deref_mut() {
            h.pace_pending = false;
        }
        self.rd_pace(core, env, flows);
        self.try_send(core, env, flows);
    }

    fn rd_send_token(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let renv = env.rd.expect("rd run");
        let rank = if renv.transport.srpt { self.rd_rank(flows, id) } else { 0 };
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        let mut token = env.control_packet(Kind::Token, id, f.src, 0);
        token.wire = renv.transport.token_wire;
        token.token = rd.next_token;
        token.delivered = renv.token_bytes;
        token.sack = if renv.transport.priorities { renv.scheduled_queue(rank) } else { 0 };
        token.sent_at = core.now;
        if renv.transport.token_ecn {
            token.flags |= FLAG_ECT;
        }
        if rd.rx_events.contains(RxEvents::DATA) {
            rd.token_times.push_back((rd.next_token, core.now));
        }
        rd.next_token = rd.next_token.wrapping_add(1);
        core.counters.rd.tokens_issued += 1;
        self.io(core).queue_control(env, token);
    }

    /// Flow `id`'s rate-based token generator fired.
    pub fn on_token_tick(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32, gen: u32) {
        let rd = flows[id as usize].rd.as_deref().expect("rd flow");
        if rd.tick_gen != gen || rd.token_rate == 0 || rd.done {
            return;
        }
        let renv = env.rd.expect("rd run");
        let mut gap = serialization_ps(renv.token_bytes + env.link.header_bytes as u64, rd.token_rate);
        if let Some(rng) = self.rd.as_deref_mut().and_then(|h| h.jitter.as_mut()) {
            gap = jittered(gap, renv.transport.token_jitter, rng.next_f64());
        }
        self.rd_issue(core, env, flows, id);
        core.schedule(core.now + gap.max(1), Event::Token(TokenEvent::Tick { flow: id, gen }));
        self.try_send(core, env, flows);
    }

    /// A receiver-side timer of flow `id` fired.
    pub fn on_rx_timer(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32, timer: u8, gen: u32) {
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if rd.done || rd.timer_gen[timer as usize] != gen || !rd.rx_events.contains(RxEvents::TIMER) {
            return;
        }
        let mut ctx = RxCtx::new(core.now);
        if let Some(rx) = rd.rx.as_mut() {
            rx.on_timer(TimerId(timer), &mut ctx);
        }
        let d = *ctx.decisions();
        self.rd_apply(core, env, flows, id, &d);
        self.try_send(core, env, flows);
    }

    fn rd_arm_check(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let timeout = env.rd.expect("rd run").transport.rx_timeout;
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        if timeout > 0 && !rd.check_pending {
            rd.check_pending = true;
            // Never in the past: a flow waiting for grants is checked again one timeout later.
            let due = rd.last_activity + timeout;
            let at = if due > core.now { due } else { core.now + timeout };
            core.schedule(at, Event::Token(TokenEvent::RxCheck { flow: id }));
        }
    }

    /// The receiver's loss check of flow `id`: after `rx_timeout` without arrivals while grants or
    /// unscheduled bytes are outstanding, it asks for the next missing packet and forgets the grants that
    /// brought nothing (ToCC's token retransmission).
    pub fn on_rx_check(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let timeout = env.rd.expect("rd run").transport.rx_timeout;
        let f = &mut flows[id as usize];
        let rd = f.rd.as_deref_mut().expect("rd flow");
        rd.check_pending = false;
        if rd.done {
            return;
        }
        let by_flag = env.rd.is_some_and(|r| r.transport.volume_by_flag);
        // A flow with nothing granted or announced outstanding is waiting for its turn (SRPT) or for its
        // window (flag-driven grants owed), not loss.
        let idle = rd.outstanding == 0 && (rd.window.is_some() || rd.token_rate > 0);
        // A receiver stopped early by its sender is not waiting for its own grants.
        let waiting_for_grants = idle && (!by_flag || rd.owed > 0) && !rd.stop_requested;
        if core.now >= rd.last_activity + timeout && !waiting_for_grants {
            core.counters.rd.rx_timeouts += 1;
            rd.stop_requested = false;
            if by_flag {
                // The grants that brought nothing are owed again; a stalled flow (its flagged data lost)
                // gets one token to pull the missing packet.
                let k = env.rd.expect("rd run").token_bytes;
                rd.owed += rd.outstanding.max(k);
            }
            rd.outstanding = 0;
            rd.last_activity = core.now;
            let seq = f.rcv_nxt;
            if by_flag {
                self.rd_recover_holes(core, env, f, id);
            } else if seq < f.size {
                self.rd_nack(core, env, f, id, seq);
            }
            self.rd_refill(core, env, flows, id);
            if flows[id as usize].rd.as_deref().is_some_and(|r| r.token_rate == 0 && r.window.is_none()) {
                self.rd_issue(core, env, flows, id);
            }
        }
        self.rd_arm_check(core, env, flows, id);
        self.try_send(core, env, flows);
    }

    /// Flow `id` delivered everything: its receiver stops, and flows ranked behind it may get grants.
    fn rd_receiver_done(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let rd = flows[id as usize].rd.as_deref_mut().expect("rd flow");
        rd.done = true;
        rd.rx = None;
        rd.token_times = VecDeque::new();
        let Some(h) = self.rd.as_deref_mut() else { return };
        h.incoming.retain(|&i| i != id);
        if env.rd.is_some_and(|r| r.transport.srpt) {
            let waiting: Vec<u32> = h.incoming.clone();
            for other in waiting {
                self.rd_refill(core, env, flows, other);
            }
        }
    }
}

/// Per-host state of the transport: the NIC's token pacer and the flows this host receives.
#[derive(Debug, Default)]
pub struct RdHost {
    /// The stream that jitters rate-based token spacing (`token_jitter` > 0 only).
    jitter: Option<Rng>,
    queue: VecDeque<u32>,
    next_at: Time,
    pace_pending: bool,
    incoming: Vec<u32>,
}

/// Builds the run's transport settings and the per-host and per-switch state.
pub(crate) fn setup(
    transport: TokenTransport,
    link: &crate::config::LinkConfig,
    flows: &[Flow],
    hosts: &mut [Host],
    switches: &mut [crate::net::switch::Switch],
    seed: u64,
) -> RdEnv {
    let sizes: Vec<u64> = flows.iter().filter(|f| f.stop.is_none()).map(|f| f.size).collect();
    let line_rate = hosts.first().map_or(0, |h| h.nic.rate);
    let base_rtt = flows.iter().map(|f| f.base_rtt).max().unwrap_or(0);
    let env = RdEnv::new(transport, link.mtu, &sizes, line_rate, base_rtt);
    for h in hosts.iter_mut() {
        let jitter =
            (env.transport.token_jitter > 0.0).then(|| Rng::named(seed, &format!("host.{}.token_jitter", h.node)));
        h.rd = Some(Box::new(RdHost { jitter, ..RdHost::default() }));
    }
    let t = &env.transport;
    if t.token_limiter || t.trimming || t.aeolus {
        for s in switches.iter_mut() {
            s.tokens = Some(Box::new(crate::net::tokens::TokenSwitch::new(s.node, s.ports.len(), seed)));
        }
    }
    env
}

impl Host {
    /// SRPT at the sender: the ready flow with the fewest bytes left goes first.
    pub(crate) fn rd_srpt_first(&mut self, flows: &[Flow]) {
        let left = |i: u32| {
            let f = &flows[i as usize];
            (f.size.saturating_sub(f.snd_nxt), i)
        };
        if let Some(pos) = (0..self.ready.len()).min_by_key(|&k| left(self.ready[k])) {
            self.ready.rotate_left(pos);
        }
    }
}
