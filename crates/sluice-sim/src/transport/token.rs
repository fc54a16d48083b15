//! Per-flow state of the receiver-driven (token) transport: the sender's held tokens and unscheduled
//! allowance, and the receiver's controller, grants and loss check.

use std::collections::VecDeque;

use sluice_cc::api::MAX_TIMERS;
use sluice_cc::token::TokenTransport;
use sluice_cc::{FlowInfo, ReceiverControl, RxEvents};
use sluice_core::{Rate, Time};

use crate::config::RdEnv;
use crate::engine::packet::Packet;
use crate::transport::flow::{Flow, SendState};

/// One held token at a sender.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    pub(crate) at: Time,
    pub(crate) seq: u32,
    /// Packets it still lets the sender send (a token of K bytes grants K/MTU packets, rounded up).
    pub(crate) packets: u32,
    /// Some of its packets were sent.
    pub(crate) used: bool,
}

/// Per-flow state of the transport: the sender's tokens and the receiver's controller and grants.
pub struct RdFlow {
    pub(crate) info: FlowInfo,
    pub(crate) bdp: u64,
    // Sender.
    pub(crate) unscheduled_end: u64,
    pub(crate) held: VecDeque<Held>,
    pub(crate) credit: u64,
    pub(crate) echo: bool,
    pub(crate) probe_due: bool,
    pub(crate) scheduled_queue: u64,
    // Receiver.
    pub(crate) rx: Option<Box<dyn ReceiverControl>>,
    pub(crate) rx_events: RxEvents,
    pub(crate) known: bool,
    pub(crate) done: bool,
    pub(crate) stopped: bool,
    pub(crate) token_rate: Rate,
    pub(crate) tick_gen: u32,
    pub(crate) window: Option<u64>,
    /// Bytes the receiver expects (unscheduled bytes announced plus granted bytes) that have not arrived.
    pub(crate) outstanding: u64,
    pub(crate) received: u64,
    pub(crate) next_token: u32,
    pub(crate) timer_gen: [u32; MAX_TIMERS],
    pub(crate) last_activity: Time,
    pub(crate) check_pending: bool,
    /// Flag-driven volume control: grant bytes earned (first window, flagged data) and not yet issued.
    pub(crate) owed: u64,
    /// Sequence numbers and departure times of tokens whose data has not arrived (for `token_rtt`).
    pub(crate) token_times: VecDeque<(u32, Time)>,
    /// Sender retransmission timer and early stop ([`TxState`]).
    pub(crate) tx: TxState,
    /// The receiver got the flow's request to send.
    pub(crate) request_seen: bool,
    /// The sender asked the receiver to stop issuing tokens (early CREDIT_STOP).
    pub(crate) stop_requested: bool,
    /// Flag-driven volume control after a receiver timeout: the highest sequence number asked for again.
    /// Until the flow completes, every arrival earns a token and the next hole is asked for, since an
    /// unflagged tail earns no tokens of its own (`Host::rd_recover_next`).
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
    /// Request-to-first-token time (ns2-xpass's sender `rtt_`).
    pub(crate) rtt: Option<Time>,
    /// Start of the current early-stop round and the tokens received in it.
    pub(crate) round_start: Time,
    pub(crate) round_tokens: u64,
    /// An early stop was sent and no new request since.
    pub(crate) stop_sent: bool,
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
            held: VecDeque::new(),
            credit: 0,
            echo: false,
            probe_due: false,
            scheduled_queue: u64::MAX,
            rx,
            rx_events,
            known: false,
            done: false,
            stopped: false,
            token_rate: 0,
            tick_gen: 0,
            window: None,
            outstanding: 0,
            received: 0,
            next_token: 0,
            timer_gen: [0; MAX_TIMERS],
            last_activity: 0,
            check_pending: false,
            owed: 0,
            token_times: VecDeque::new(),
            tx: TxState::default(),
            request_seen: false,
            stop_requested: false,
            recovering: None,
        }
    }

    /// Tokens the sender holds without having spent any of them.
    pub fn held_tokens(&self) -> u64 {
        self.held.iter().filter(|h| !h.used).count() as u64
    }

    /// The credit-to-data round trip of token `seq` whose data arrived at `now`, the first time it is
    /// asked; forgets tokens issued before it (lost, or stale at the sender).
    pub(crate) fn token_rtt(&mut self, seq: u32, now: Time) -> Option<Time> {
        while let Some(&(s, at)) = self.token_times.front() {
            let behind = (s.wrapping_sub(seq) as i32) < 0;
            if !behind && s != seq {
                return None;
            }
            self.token_times.pop_front();
            if s == seq {
                return Some(now.saturating_sub(at));
            }
        }
        None
    }

    /// Drops held tokens that are stale at `now`; returns how many.
    pub(crate) fn expire(&mut self, now: Time, transport: &TokenTransport) -> u64 {
        let mut dropped = 0;
        while let Some(h) = self.held.front() {
            let old = transport.stale_timeout > 0 && now.saturating_sub(h.at) > transport.stale_timeout;
            let granted = self.credit * self.info.mss as u64;
            let beyond = transport.stale_bdp && granted > self.bdp.max(h.packets as u64 * self.info.mss as u64);
            if !(old || beyond) {
                break;
            }
            self.credit -= h.packets as u64;
            dropped += u64::from(!h.used);
            self.held.pop_front();
        }
        dropped
    }

    /// Spends one packet of credit; returns the sequence number of the token it came from and whether
    /// this is the token's first packet.
    pub(crate) fn spend(&mut self) -> (u32, bool) {
        let Some(front) = self.held.front_mut() else { return (0, false) };
        let (seq, first) = (front.seq, !front.used);
        front.used = true;
        front.packets -= 1;
        self.credit -= 1;
        if front.packets == 0 {
            self.held.pop_front();
        }
        (seq, first)
    }
}

/// What a receiver-driven flow may do at `now` (replaces the window check of sender-driven flows).
pub fn send_state(f: &mut Flow, now: Time) -> SendState {
    let (probe_due, unscheduled_end, credit, free_resends) = {
        let rd = f.rd.as_deref().expect("a receiver-driven flow");
        (rd.probe_due, rd.unscheduled_end, rd.credit, rd.tx.free_resends)
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
