//! The per-flow controller API: what a datapath tells an algorithm, and what the algorithm decides.
//!
//! An algorithm is a [`CongestionControl`] object, one per flow. The datapath (simulator host, kernel
//! agent, user-space transport) calls its handlers for the events it [binds](Events), and reads the
//! [`Decisions`] the handler wrote into its [`Ctx`]. Nothing here names a datapath type: times are
//! picoseconds, rates bit/s, sizes bytes.

use sluice_core::{Rate, Time};

/// Static facts about a flow, given to the algorithm when the flow starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowInfo {
    /// Datapath-wide flow id.
    pub flow_id: u64,
    /// Payload bytes per full-sized packet (maximum segment size).
    pub mss: u32,
    /// Header and framing bytes added to every packet on the wire.
    pub header_bytes: u32,
    /// The sender's NIC line rate.
    pub line_rate: Rate,
    /// Round-trip propagation plus serialization delay of the path when idle.
    pub base_rtt: Time,
    /// Number of switch hops on the path.
    pub hops: u32,
    /// Flow size in bytes when the datapath knows it (simulated messages); `None` for byte streams.
    pub size: Option<u64>,
    /// When the flow started.
    pub start: Time,
}

impl FlowInfo {
    /// Bandwidth-delay product of the path at line rate, in bytes.
    pub fn bdp(&self) -> u64 {
        (self.line_rate as u128 * self.base_rtt as u128 / 8 / sluice_core::PS_PER_S as u128) as u64
    }
}

/// One hop's in-band telemetry (INT) record, as stamped by a switch at dequeue (HPCC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntHop {
    /// When the packet left the egress port.
    pub ts: Time,
    /// Cumulative bytes transmitted by the egress port.
    pub tx_bytes: u64,
    /// Egress queue length in bytes when the packet left.
    pub qlen: u64,
    /// Egress link rate.
    pub rate: Rate,
}

/// An acknowledgment that advanced (or duplicated) the flow's cumulative ACK point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ack<'a> {
    /// Newly acknowledged payload bytes (0 for a duplicate ACK).
    pub acked_bytes: u64,
    /// Newly acknowledged packets.
    pub acked_packets: u32,
    /// The ACK echoes an ECN Congestion Experienced mark (ECE).
    pub ecn_echo: bool,
    /// RTT sample from the packet this ACK answers, if the datapath measured one.
    pub rtt: Option<Time>,
    /// Cumulative ACK point after this ACK (first unacknowledged byte).
    pub snd_una: u64,
    /// Next byte the sender will send for the first time.
    pub snd_nxt: u64,
    /// In-flight bytes after this ACK.
    pub in_flight: u64,
    /// INT records of the acknowledged data packet, in path order (empty without INT).
    pub int: &'a [IntHop],
}

/// What kind of loss the datapath detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// Three duplicate ACKs or a selective-ACK gap (fast retransmit).
    FastRetransmit,
    /// The receiver sent a NACK (go-back-N or selective).
    Nack,
    /// The retransmission timer expired.
    Timeout,
}

/// A detected loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss {
    /// How the loss was detected.
    pub kind: LossKind,
    /// Bytes in flight when the loss was detected.
    pub in_flight: u64,
    /// Next byte the sender will send for the first time.
    pub snd_nxt: u64,
}

/// Bytes handed to the wire for this flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Payload bytes of the packet.
    pub bytes: u32,
    /// Whether it was a retransmission.
    pub retransmit: bool,
}

/// A timer an algorithm owns; each id has at most one pending deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub u8);

/// How many distinct timers one controller may hold.
pub const MAX_TIMERS: usize = 4;

/// Bit set of the events an algorithm binds. The datapath only calls handlers whose bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Events(pub u32);

impl Events {
    /// ACKs ([`CongestionControl::on_ack`]).
    pub const ACK: Events = Events(1);
    /// Congestion notification packets ([`CongestionControl::on_cnp`]).
    pub const CNP: Events = Events(1 << 1);
    /// Losses ([`CongestionControl::on_loss`]).
    pub const LOSS: Events = Events(1 << 2);
    /// Every packet sent ([`CongestionControl::on_sent`]).
    pub const TX: Events = Events(1 << 3);
    /// Timers ([`CongestionControl::on_timer`]).
    pub const TIMER: Events = Events(1 << 4);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Events) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Events {
    type Output = Events;
    fn bitor(self, rhs: Events) -> Events {
        Events(self.0 | rhs.0)
    }
}

/// What a datapath must provide for an algorithm to work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// Switches mark ECN and receivers echo it on ACKs.
    pub ecn: bool,
    /// Receivers send congestion notification packets (DCQCN's notification point).
    pub cnp: bool,
    /// Switches stamp INT records and ACKs carry them back.
    pub int: bool,
}

/// The decisions an algorithm made while handling one event.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Decisions {
    /// New congestion window in bytes, if changed.
    pub cwnd: Option<u64>,
    /// New pacing rate in bit/s, if changed.
    pub rate: Option<Rate>,
    /// Timer requests: `Some(t)` arms (or re-arms) the timer for time `t`, `None` leaves it.
    pub set_timers: [Option<Time>; MAX_TIMERS],
    /// Timers to cancel.
    pub cancel_timers: [bool; MAX_TIMERS],
}

/// The handle an algorithm gets with each event: the current time and a place for its decisions.
#[derive(Debug)]
pub struct Ctx {
    now: Time,
    decisions: Decisions,
}

impl Ctx {
    /// A context for an event at `now`.
    pub fn new(now: Time) -> Ctx {
        Ctx { now, decisions: Decisions::default() }
    }

    /// The time of the event being handled.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Sets the congestion window (bytes).
    #[inline]
    pub fn set_cwnd(&mut self, cwnd: u64) {
        self.decisions.cwnd = Some(cwnd);
    }

    /// Sets the pacing rate (bit/s).
    #[inline]
    pub fn set_rate(&mut self, rate: Rate) {
        self.decisions.rate = Some(rate);
    }

    /// Arms timer `id` to fire at absolute time `at`, replacing any pending deadline.
    pub fn set_timer(&mut self, id: TimerId, at: Time) {
        let i = id.0 as usize;
        assert!(i < MAX_TIMERS, "timer id {} out of range (max {})", id.0, MAX_TIMERS - 1);
        self.decisions.set_timers[i] = Some(at);
        self.decisions.cancel_timers[i] = false;
    }

    /// Cancels timer `id` if pending.
    pub fn cancel_timer(&mut self, id: TimerId) {
        let i = id.0 as usize;
        assert!(i < MAX_TIMERS, "timer id {} out of range (max {})", id.0, MAX_TIMERS - 1);
        self.decisions.set_timers[i] = None;
        self.decisions.cancel_timers[i] = true;
    }

    /// The decisions written so far; the datapath applies them after the handler returns.
    pub fn decisions(&self) -> &Decisions {
        &self.decisions
    }
}

/// A congestion-control algorithm instance controlling one flow.
///
/// Handlers default to doing nothing; an algorithm overrides those it [binds](CongestionControl::events).
pub trait CongestionControl: Send {
    /// The registered algorithm name (`"dctcp"`).
    fn name(&self) -> &'static str;

    /// Which handlers the datapath must call.
    fn events(&self) -> Events;

    /// Called once when the flow starts; sets the initial window and/or rate.
    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx);

    /// An ACK arrived.
    fn on_ack(&mut self, _ack: &Ack<'_>, _ctx: &mut Ctx) {}

    /// A congestion notification packet arrived.
    fn on_cnp(&mut self, _ctx: &mut Ctx) {}

    /// A loss was detected.
    fn on_loss(&mut self, _loss: &Loss, _ctx: &mut Ctx) {}

    /// A packet was sent.
    fn on_sent(&mut self, _sent: &Sent, _ctx: &mut Ctx) {}

    /// Timer `id` fired.
    fn on_timer(&mut self, _id: TimerId, _ctx: &mut Ctx) {}

    /// Reports the algorithm's state variables for per-flow traces, as `(name, value)` pairs in a fixed
    /// order (the first call fixes the column set).
    fn trace(&self, _out: &mut dyn FnMut(&'static str, f64)) {}
}
