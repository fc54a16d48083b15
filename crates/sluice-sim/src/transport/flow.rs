//! Per-flow transport state: the sender (window, pacing, loss recovery, its CC controller) and the
//! receiver (in-order delivery, ACK/NACK/CNP generation).

use std::collections::{BTreeSet, VecDeque};

use sluice_core::{Rate, Time};

use crate::engine::Core;

/// A traced flow's CC variables (the recorder every datapath shares).
pub type FlowTrace = sluice_results::TraceRecorder;

/// What a flow may do when its host's NIC is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendState {
    /// Send a packet now.
    Send,
    /// The window is full; an ACK will reopen it.
    WindowFull,
    /// Paced: the next packet may leave at this time.
    PacedUntil(Time),
    /// Nothing to send (finished, not started, or all data in flight and the window open).
    Idle,
}

/// One flow, sender and receiver side.
pub struct Flow {
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// Bytes to deliver (for a long-lived flow: unbounded until it stops).
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Stop time of a long-lived flow.
    pub stop: Option<Time>,
    /// Workload entry that produced it.
    pub group: u16,
    /// The closed-loop slot it runs in, which starts its next flow when this one finishes.
    pub slot: Option<u32>,
    /// Its algorithm: 0 is the run's, `k` the `k`-th of [`crate::SimInput::mix`].
    pub algorithm: u8,
    /// Its data packets are ECN-capable (its algorithm reacts to ECN or CNPs).
    pub ect: bool,
    /// Its receiver answers CE marks with CNPs (DCQCN).
    pub cnp: bool,
    /// Spacing of its receiver's CNPs (0: flag every ACK of a marked packet instead).
    pub cnp_interval: Time,
    /// Ideal completion time (HPCC artifact definition).
    pub ideal_fct: Time,
    /// Idle round-trip time of its path.
    pub base_rtt: Time,
    /// Switch hops on its path.
    pub hops: u32,

    /// First unacknowledged byte.
    pub snd_una: u64,
    /// Next byte to send (rewinds on go-back-N).
    pub snd_nxt: u64,
    /// Highest byte ever sent.
    pub max_sent: u64,
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Pacing rate.
    pub rate: Rate,
    /// Earliest time the pacer lets the next packet go.
    pub next_tx: Time,
    /// The flow's algorithm with its plane state (fold, trigger, filters, timers), from its start to its
    /// finish: a finished flow's late signals reach no algorithm, and its state (most of a flow's
    /// memory) is released.
    pub driver: Option<Box<sluice_plane::FlowDriver>>,
    /// An RTO check is scheduled.
    pub rto_pending: bool,
    /// Retransmission timeouts in a row without the ACK point moving (the back-off's exponent).
    pub rto_timeouts: u8,
    /// Last time the ACK point advanced (or the flow started or timed out).
    pub last_progress: Time,
    /// The latest data send time an ACK echoed: an ACK echoing an earlier one reveals reordering.
    pub latest_echo: Time,
    /// When the receiving host took the latest sample an ACK brought (0: none yet).
    pub host_seen: Time,
    /// When the last byte was acknowledged.
    pub finish: Option<Time>,
    /// Payload bytes sent more than once.
    pub retransmitted: u64,
    /// Queued in its host's ready list.
    pub in_ready: bool,
    /// Waiting in its host's pacing heap.
    pub in_pacing: bool,
    /// Started.
    pub started: bool,
    /// Selective repeat: sequences the receiver holds out of order.
    pub sacked: BTreeSet<u64>,
    /// Selective repeat: sequences to resend.
    pub rtx: VecDeque<u64>,
    /// Selective repeat: sequences below this were already queued for resending in this episode.
    pub rtx_high: u64,

    /// Receiver: next byte expected.
    pub rcv_nxt: u64,
    /// Receiver: packets accepted since the last ACK.
    pub rcv_pkts: u32,
    /// Receiver: bytes accepted since the last ACK.
    pub rcv_bytes: u64,
    /// Receiver: a CE mark arrived since the last ACK.
    pub rcv_ce: bool,
    /// Receiver: when the last CNP went out.
    pub last_cnp: Option<Time>,
    /// Receiver: the sequence the last NACK asked for, and when.
    pub last_nack: Option<(u64, Time)>,
    /// Receiver (selective repeat): sequences held out of order.
    pub ooo: BTreeSet<u64>,

    /// CC variable trace, for traced flows.
    pub trace: Option<Box<FlowTrace>>,
    /// The algorithm asked for an RTT probe that has not gone out yet.
    pub probe_requested: bool,
    /// Receiver-driven transport state, for flows of a token algorithm.
    pub rd: Option<Box<crate::transport::token::RdFlow>>,
    /// Receiver side: the algorithm's receiver controller, for algorithms that decide at the receiver.
    pub rx: Option<Box<dyn sluice_cc::ReceiverControl>>,
    /// Receiver side: the handlers `rx` binds.
    pub rx_events: sluice_cc::RxEvents,
    /// Receiver side: `rx` has been started (at the flow's first arrival).
    pub rx_started: bool,
    /// Receiver side: the cumulative sequence of the latest ACK sent through `rx` (what a DACK repeats).
    pub rx_acked: u64,
}

impl Flow {
    /// A flow that has not started.
    pub fn new(src: u32, dst: u32, size: u64, start: Time, stop: Option<Time>, group: u16) -> Flow {
        Flow {
            src,
            dst,
            size,
            start,
            stop,
            group,
            slot: None,
            algorithm: 0,
            ect: false,
            cnp: false,
            cnp_interval: 0,
            ideal_fct: 0,
            base_rtt: 0,
            hops: 0,
            snd_una: 0,
            snd_nxt: 0,
            max_sent: 0,
            cwnd: u64::MAX,
            rate: 0,
            next_tx: 0,
            driver: None,
            rto_pending: false,
            rto_timeouts: 0,
            last_progress: start,
            latest_echo: 0,
            host_seen: 0,
            finish: None,
            retransmitted: 0,
            in_ready: false,
            in_pacing: false,
            started: false,
            sacked: BTreeSet::new(),
            rtx: VecDeque::new(),
            rtx_high: 0,
            rcv_nxt: 0,
            rcv_pkts: 0,
            rcv_bytes: 0,
            rcv_ce: false,
            last_cnp: None,
            last_nack: None,
            ooo: BTreeSet::new(),
            trace: None,
            probe_requested: false,
            rd: None,
            rx: None,
            rx_events: sluice_cc::RxEvents::default(),
            rx_started: false,
            rx_acked: 0,
        }
    }

    /// What the flow's algorithm is told about it when it starts at `now` (flow `id`, NIC rate `line_rate`).
    pub(crate) fn info(
        &self,
        id: u32,
        link: &crate::config::LinkConfig,
        line_rate: Rate,
        now: Time,
    ) -> sluice_cc::FlowInfo {
        sluice_cc::FlowInfo {
            flow_id: id as u64,
            mss: link.mtu,
            header_bytes: link.header_bytes,
            line_rate,
            base_rtt: self.base_rtt,
            hops: self.hops,
            size: self.stop.is_none().then_some(self.size),
            start: now,
        }
    }

    /// Records that flow `id` has delivered everything and releases its controller; a flow that nothing
    /// observes beyond its result row waits in [`Core::finished`] to be retired.
    pub fn finish(&mut self, core: &mut Core, id: u32) {
        core.counters.flows_finished += 1;
        if let Some(rd) = self.rd.as_deref() {
            core.counters.rd.tokens_wasted += rd.held_tokens();
        }
        self.finish = Some(core.now);
        self.driver = None;
        // Nothing is resent once everything is acknowledged.
        self.rtx = VecDeque::new();
        if let Some(slot) = self.slot {
            core.freed_slots.push(slot);
        }
        // A token flow's receiver, a receiver controller (which hears of the flow's data leaving a
        // processing queue after the last ACK) and a traced flow's trace outlive its finish.
        if self.rd.is_none() && self.rx.is_none() && self.trace.is_none() {
            core.finished.push(id);
        }
    }

    /// The handlers the flow's algorithm binds (none before its start and after its finish).
    #[inline]
    pub fn events(&self) -> sluice_cc::Events {
        self.driver.as_ref().map_or_else(sluice_cc::Events::default, |d| d.events())
    }

    /// Payload bytes of the packet starting at `seq`.
    #[inline]
    pub fn payload_at(&self, seq: u64, mtu: u32) -> u32 {
        (self.size - seq).min(mtu as u64) as u32
    }

    /// Bytes sent and not yet acknowledged.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        self.snd_nxt.saturating_sub(self.snd_una)
    }

    /// Drops resend entries that the receiver already has.
    fn prune_rtx(&mut self) {
        while let Some(&s) = self.rtx.front() {
            if s < self.snd_una || self.sacked.contains(&s) {
                self.rtx.pop_front();
            } else {
                break;
            }
        }
    }

    /// What the flow may do at `now`.
    pub fn send_state(&mut self, now: Time, mtu: u32) -> SendState {
        if !self.started || self.finish.is_some() {
            return SendState::Idle;
        }
        if self.rd.is_some() {
            return crate::transport::token::send_state(self, now);
        }
        self.prune_rtx();
        let resend = !self.rtx.is_empty();
        if !resend {
            if self.snd_nxt >= self.size {
                return SendState::Idle;
            }
            let in_flight = self.in_flight();
            if in_flight > 0 && in_flight + self.payload_at(self.snd_nxt, mtu) as u64 > self.cwnd {
                return SendState::WindowFull;
            }
        }
        if self.next_tx > now {
            return SendState::PacedUntil(self.next_tx);
        }
        SendState::Send
    }

    /// The next sequence to send and whether it is a retransmission; advances `snd_nxt` for in-order data.
    pub fn take_next_seq(&mut self, mtu: u32) -> (u64, u32, bool) {
        if let Some(seq) = self.rtx.pop_front() {
            return (seq, self.payload_at(seq, mtu), true);
        }
        let seq = self.snd_nxt;
        let payload = self.payload_at(seq, mtu);
        self.snd_nxt += payload as u64;
        let retransmit = seq < self.max_sent;
        self.max_sent = self.max_sent.max(self.snd_nxt);
        (seq, payload, retransmit)
    }
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("size", &self.size)
            .field("snd_una", &self.snd_una)
            .field("finish", &self.finish)
            .finish()
    }
}
