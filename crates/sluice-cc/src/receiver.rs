//! The receiver-side controller API: what a datapath's receiving end tells a receiver algorithm, and what
//! that algorithm decides.
//!
//! Sender-driven CC needs only [`crate::CongestionControl`] at the sender. Two families of algorithms
//! decide at the receiver as well:
//! - receiver-driven (token-based) CC, where the receiver grants the sender permission to send: it paces
//!   tokens at a rate (ExpressPass), issues a token per data packet received (NDP, ToCC), or keeps a token
//!   window that its own congestion control adjusts (ToCC);
//! - endpoint-congestion policies, where the receiver (the target) chooses how to acknowledge each
//!   arrival — at once, delayed, coalesced or not at all — from its processing-queue occupancy.
//!
//! A receiver algorithm is a [`ReceiverControl`] object, one per flow at the flow's receiving host, built
//! by the same [`crate::Factory`] as the sender side ([`crate::Factory::receiver`]), so one algorithm name
//! covers both ends. The datapath calls the handlers bound in [`RxEvents`] and applies the
//! [`RxDecisions`] written into the [`RxCtx`]. As for the sender side, nothing here names a datapath
//! type: times are picoseconds, rates bit/s, sizes bytes.

use sluice_core::{Rate, Time};

use crate::api::{request_timer, FlowInfo, HostSignal, TimerId, MAX_TIMERS};

/// A sender's request to send (the first packet a receiver sees of a receiver-driven flow).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Request {
    /// When it arrived.
    pub at: Time,
    /// The flow's size in bytes, when the sender knows it.
    pub size: Option<u64>,
    /// Bytes the sender sends unscheduled (before any token), which need no grant.
    pub unscheduled_bytes: u64,
}

/// One data packet's arrival at the receiver. Fields a datapath cannot observe keep their default.
///
/// Construct with `Arrival { seq, bytes, .., ..Arrival::default() }` so that new fields stay compatible.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Arrival {
    /// When the packet arrived.
    pub at: Time,
    /// When the sender sent it (the sender's timestamp, echoed on acknowledgments).
    pub sent_at: Time,
    /// First payload byte.
    pub seq: u64,
    /// Payload bytes (0 for a trimmed packet).
    pub bytes: u32,
    /// Bytes on the wire, headers included.
    pub wire_bytes: u32,
    /// The packet carries an ECN Congestion Experienced mark.
    pub ce: bool,
    /// The packet was sent against a token (scheduled), not in the unscheduled phase.
    pub scheduled: bool,
    /// A switch trimmed the payload and forwarded only the header (NDP).
    pub trimmed: bool,
    /// The sender echoes a congestion mark it saw on a token (ToCC's token-CC echo).
    pub token_echo: bool,
    /// More than one BDP (rounded up to whole packets) of the flow is unsent from this packet on (ToCC's
    /// volume flag).
    pub more_than_bdp: bool,
    /// Sequence number of the token the sender spent on this packet, when it was scheduled.
    pub token_seq: Option<u64>,
    /// The receiver accepted the packet (in order, or buffered out of order); `false` when it dropped it.
    pub accepted: bool,
    /// The receiver's next expected byte after this arrival.
    pub rcv_nxt: u64,
    /// Occupancy in bytes of the receiver's processing queue after this arrival (0 without an endpoint
    /// model).
    pub queue_bytes: u64,
    /// Token-based transport: time from the departure of the token this packet spent (its first packet)
    /// at the receiver to this arrival, the credit-to-data round trip ExpressPass measures.
    pub token_rtt: Option<Time>,
}

/// How the receiver acknowledges an arrival (endpoint-congestion policies, Chong and Krishnan: IACK and DACK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AckKind {
    /// The datapath's own acknowledgment behaviour (an ACK every N packets or bytes).
    #[default]
    Default,
    /// An immediate acknowledgment (IACK).
    Immediate,
    /// A delayed acknowledgment that signals endpoint congestion (DACK).
    Delayed,
    /// A negative acknowledgment carrying the next expected byte.
    Negative,
    /// No acknowledgment for this arrival (coalesced into a later one, or suppressed).
    Withhold,
}

/// The decisions a receiver algorithm made while handling one event.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RxDecisions {
    /// How to acknowledge the arrival being handled (only meaningful in [`ReceiverControl::on_data`]).
    pub ack: AckKind,
    /// Tokens to issue now, each granting the sender one token's worth of data.
    pub grant: u32,
    /// New token pacing rate (bit/s of data the tokens grant), if changed.
    pub token_rate: Option<Rate>,
    /// New token window: granted-but-unused bytes the receiver allows outstanding, if changed.
    pub token_window: Option<u64>,
    /// Stop issuing tokens for this flow (its granted bytes cover it).
    pub stop_tokens: bool,
    /// Timer requests: `Some(t)` arms (or re-arms) the timer for time `t`.
    pub set_timers: [Option<Time>; MAX_TIMERS],
    /// Timers to cancel.
    pub cancel_timers: [bool; MAX_TIMERS],
    /// The cumulative sequence an [`AckKind::Immediate`] acknowledgment carries, when not the receiver's
    /// next expected byte (the DACK/IACK target acknowledges only what lies below its queue threshold).
    pub ack_seq: Option<u64>,
    /// Standalone DACKs to send before the acknowledgment chosen in `ack` (Chong and Krishnan: a DACK goes
    /// ahead of the IACK while the target stays congested).
    pub dacks_before: u32,
    /// Ask the datapath to report, through [`ReceiverControl::on_crossed`], each of this flow's packets
    /// whose end moves to or below this many bytes from the head of the processing queue.
    pub queue_watch: Option<u64>,
    /// Ask the datapath to sample every stream's accepted packets at its host every this often and report
    /// through [`ReceiverControl::on_sample`].
    pub sample_every: Option<Time>,
}

/// One of this flow's packets in the receiving host's processing queue: processed (left the queue) or
/// crossed the watched queue position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueMove {
    /// When it happened.
    pub at: Time,
    /// First payload byte of the packet.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u32,
    /// Occupancy of the processing queue afterwards, bytes on the wire.
    pub queue_bytes: u64,
}

/// A periodic sample of how many packets each stream had accepted at the receiving host (Chong and Krishnan
/// section II-H: the target samples per-stream packet counts to balance initiators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamSample {
    /// When it was taken.
    pub at: Time,
    /// Packets this flow had accepted during the sampling period.
    pub packets: u64,
    /// Fewest packets any stream active at the host had accepted during the period.
    pub min_packets: u64,
    /// Most packets any stream active at the host had accepted during the period.
    pub max_packets: u64,
    /// Streams that had packets accepted during the period.
    pub streams: u32,
}

/// The handle a receiver algorithm gets with each event: the current time and a place for decisions.
#[derive(Debug)]
pub struct RxCtx {
    now: Time,
    decisions: RxDecisions,
}

impl RxCtx {
    /// A context for an event at `now`.
    pub fn new(now: Time) -> RxCtx {
        RxCtx { now, decisions: RxDecisions::default() }
    }

    /// The time of the event being handled.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Chooses how the current arrival is acknowledged.
    #[inline]
    pub fn ack(&mut self, kind: AckKind) {
        self.decisions.ack = kind;
    }

    /// Issues `tokens` more tokens now (added to any issued earlier in this handler).
    #[inline]
    pub fn grant(&mut self, tokens: u32) {
        self.decisions.grant = self.decisions.grant.saturating_add(tokens);
    }

    /// Sets the token pacing rate.
    #[inline]
    pub fn set_token_rate(&mut self, rate: Rate) {
        self.decisions.token_rate = Some(rate);
    }

    /// Sets the token window in bytes.
    #[inline]
    pub fn set_token_window(&mut self, bytes: u64) {
        self.decisions.token_window = Some(bytes);
    }

    /// Stops issuing tokens for this flow.
    #[inline]
    pub fn stop_tokens(&mut self) {
        self.decisions.stop_tokens = true;
    }

    /// Arms timer `id` to fire at absolute time `at`, replacing any pending deadline.
    pub fn set_timer(&mut self, id: TimerId, at: Time) {
        request_timer(&mut self.decisions.set_timers, &mut self.decisions.cancel_timers, id, Some(at));
    }

    /// Cancels timer `id` if pending.
    pub fn cancel_timer(&mut self, id: TimerId) {
        request_timer(&mut self.decisions.set_timers, &mut self.decisions.cancel_timers, id, None);
    }

    /// Acknowledges with an explicit cumulative sequence `seq` (an IACK below the queue threshold).
    #[inline]
    pub fn ack_upto(&mut self, kind: AckKind, seq: u64) {
        self.decisions.ack = kind;
        self.decisions.ack_seq = Some(seq);
    }

    /// Sends one more standalone DACK ahead of the acknowledgment chosen with [`RxCtx::ack`].
    #[inline]
    pub fn dack_first(&mut self) {
        self.decisions.dacks_before += 1;
    }

    /// Watches queue position `bytes` (see [`RxDecisions::queue_watch`]).
    #[inline]
    pub fn watch_queue(&mut self, bytes: u64) {
        self.decisions.queue_watch = Some(bytes);
    }

    /// Asks for per-stream samples every `every` (see [`RxDecisions::sample_every`]).
    #[inline]
    pub fn sample_streams(&mut self, every: Time) {
        self.decisions.sample_every = Some(every);
    }

    /// The decisions written so far; the datapath applies them after the handler returns.
    pub fn decisions(&self) -> &RxDecisions {
        &self.decisions
    }
}

/// Bit set of the receiver events an algorithm binds. The datapath only calls handlers whose bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxEvents(pub u32);

impl RxEvents {
    /// Requests to send ([`ReceiverControl::on_request`]).
    pub const REQUEST: RxEvents = RxEvents(1);
    /// Data arrivals ([`ReceiverControl::on_data`]).
    pub const DATA: RxEvents = RxEvents(1 << 1);
    /// Timers ([`ReceiverControl::on_timer`]).
    pub const TIMER: RxEvents = RxEvents(1 << 2);
    /// Host congestion signals of the receiving host ([`ReceiverControl::on_host`]).
    pub const HOST: RxEvents = RxEvents(1 << 3);
    /// This flow's packets leaving the processing queue ([`ReceiverControl::on_processed`]).
    pub const PROCESSED: RxEvents = RxEvents(1 << 4);
    /// This flow's packets crossing the watched queue position ([`ReceiverControl::on_crossed`]).
    pub const CROSSED: RxEvents = RxEvents(1 << 5);
    /// Per-stream samples ([`ReceiverControl::on_sample`]).
    pub const SAMPLE: RxEvents = RxEvents(1 << 6);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: RxEvents) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for RxEvents {
    type Output = RxEvents;
    fn bitor(self, rhs: RxEvents) -> RxEvents {
        RxEvents(self.0 | rhs.0)
    }
}

/// A receiver algorithm instance for one flow, at the flow's receiving host.
///
/// Handlers default to doing nothing; an algorithm overrides those it [binds](ReceiverControl::events).
/// Lifecycle as for [`crate::CongestionControl`]: built by [`crate::Factory::receiver`], started once with
/// [`ReceiverControl::on_start`], torn down by drop.
pub trait ReceiverControl: Send {
    /// The registered algorithm name.
    fn name(&self) -> &'static str;

    /// Which handlers the datapath must call.
    fn events(&self) -> RxEvents;

    /// Called once when the receiver learns of the flow (its request or first packet).
    fn on_start(&mut self, _flow: &FlowInfo, _ctx: &mut RxCtx) {}

    /// A request to send arrived.
    fn on_request(&mut self, _request: &Request, _ctx: &mut RxCtx) {}

    /// A data packet arrived.
    fn on_data(&mut self, _arrival: &Arrival, _ctx: &mut RxCtx) {}

    /// Timer `id` fired.
    fn on_timer(&mut self, _id: TimerId, _ctx: &mut RxCtx) {}

    /// A host congestion signal of the receiving host was sampled.
    fn on_host(&mut self, _signal: &HostSignal, _ctx: &mut RxCtx) {}

    /// Reports the algorithm's state variables for per-flow traces, as `(name, value)` pairs in a fixed
    /// order (the first call fixes the column set). A name carries its unit when it has one: times in
    /// nanoseconds end in `_ns`, rates in bit/s end in `_bps`; windows (`cwnd`, `token_window`) are
    /// bytes; `u64::MAX` means unset.
    fn trace(&self, _out: &mut dyn FnMut(&'static str, f64)) {}

    /// One of this flow's packets finished processing and left the processing queue.
    fn on_processed(&mut self, _moved: &QueueMove, _ctx: &mut RxCtx) {}

    /// One of this flow's packets moved to or below the watched queue position.
    fn on_crossed(&mut self, _moved: &QueueMove, _ctx: &mut RxCtx) {}

    /// A per-stream sample of the receiving host.
    fn on_sample(&mut self, _sample: &StreamSample, _ctx: &mut RxCtx) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_accumulate_and_timers_replace_cancels() {
        let mut ctx = RxCtx::new(5);
        ctx.grant(2);
        ctx.grant(3);
        ctx.cancel_timer(TimerId(1));
        ctx.set_timer(TimerId(1), 40);
        ctx.ack(AckKind::Delayed);
        let d = ctx.decisions();
        assert_eq!(d.grant, 5);
        assert_eq!(d.set_timers[1], Some(40));
        assert!(!d.cancel_timers[1]);
        assert_eq!(d.ack, AckKind::Delayed);
        assert_eq!(ctx.now(), 5);
    }

    #[test]
    fn events_contain_their_bits() {
        let e = RxEvents::DATA | RxEvents::TIMER;
        assert!(e.contains(RxEvents::DATA));
        assert!(!e.contains(RxEvents::REQUEST));
    }
}
