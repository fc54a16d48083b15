//! The per-flow controller API: what a datapath tells an algorithm, and what the algorithm decides.
//!
//! An algorithm is a [`CongestionControl`] object, one per flow. The datapath (simulator host, kernel
//! agent, user-space transport) calls its handlers for the events it [binds](Events), and reads the
//! [`Decisions`] the handler wrote into its [`Ctx`]. Nothing here names a datapath type: times are
//! picoseconds, rates bit/s, sizes bytes.

use std::sync::Arc;

use sluice_core::{Rate, Time};

use crate::program::{Install, Program, ProgramReport};

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

/// Acknowledgments: one ACK when the algorithm reports per ACK, or every ACK of a reporting period folded
/// together (accumulable fields summed, flags merged, raw samples listed) when it reports less often.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ack<'a> {
    /// ACKs folded into this report (1 when reporting per ACK).
    pub acks: u32,
    /// Newly acknowledged payload bytes (0 for a duplicate ACK).
    pub acked_bytes: u64,
    /// Newly acknowledged packets.
    pub acked_packets: u32,
    /// Newly acknowledged bytes whose ACK echoed an ECN Congestion Experienced mark (ECE).
    pub ecn_bytes: u64,
    /// Newly acknowledged packets whose ACK echoed ECE.
    pub ecn_packets: u32,
    /// Some folded ACK echoed ECE (`ecn_packets > 0` unless the ACK acknowledged nothing new).
    pub ecn_echo: bool,
    /// The latest RTT sample, if the datapath measured one.
    pub rtt: Option<Time>,
    /// Every RTT sample since the last report, oldest first (raw signal; `[rtt]` per ACK).
    pub rtt_samples: &'a [Time],
    /// Delivery rate of the latest ACK: bytes acknowledged between sending the acknowledged packet and
    /// its ACK, over that interval (the rate sample of BBR; Cardwell et al., ACM Queue 2016).
    pub delivery_rate: Option<Rate>,
    /// Cumulative ACK point after this ACK (first unacknowledged byte).
    pub snd_una: u64,
    /// Next byte the sender will send for the first time.
    pub snd_nxt: u64,
    /// In-flight bytes after this ACK.
    pub in_flight: u64,
    /// INT records of the latest acknowledged data packet, in path order (empty without INT).
    pub int: &'a [IntHop],
    /// Time the latest ACK spent at the receiver, from its data packet's arrival to its own departure
    /// (endpoint delay; Swift's remote-host component), if the datapath measures it.
    pub remote_delay: Option<Time>,
    /// When the first folded ACK reached the datapath (reports may be handled later than that).
    pub first_at: Time,
    /// Path flags ([`PATH_FIRST`], [`PATH_LAST`], [`PATH_INCWIN`], [`PATH_DECWIN`], [`PATH_AI`]) of the
    /// acknowledged data packet as it reached the receiver, echoed on the ACK: the bits the sender set
    /// through [`CongestionControl::packet_flags`] as the switches left them (Bolt's switches strip
    /// `PATH_INCWIN` and add `PATH_DECWIN`). When ACKs are folded, the union of their flags. 0 for
    /// algorithms that set none.
    pub path_flags: u8,
    /// Of the folded ACKs, the duplicate ones: those that acknowledged nothing new (DACKs, the
    /// endpoint-congestion signal of Chong and Krishnan). `acks - dup_acks` incremented the ACK point (IACKs).
    pub dup_acks: u32,
    /// Of the folded ACKs, those that revealed reordering: each answers a data packet sent before the
    /// packet an earlier ACK answered, so that packet was overtaken on its way (or its ACK was). A resent
    /// packet leaves later than what it follows and counts only when it is overtaken itself. On kernel
    /// TCP, the reorderings the kernel detected (`tcp_sock.reord_seen`). The out-of-order signal of
    /// CCP's datapaths (Narayan et al. SIGCOMM'18, `Ack.packets_misordered`).
    pub reordered: u32,
}

impl Ack<'_> {
    /// A report of one ACK (`acks = 1`); the other fields as given.
    #[allow(clippy::too_many_arguments)]
    pub fn single<'a>(
        acked_bytes: u64,
        acked_packets: u32,
        ecn_echo: bool,
        rtt: Option<Time>,
        snd_una: u64,
        snd_nxt: u64,
        in_flight: u64,
        at: Time,
    ) -> Ack<'a> {
        Ack {
            acks: 1,
            acked_bytes,
            acked_packets,
            ecn_bytes: if ecn_echo { acked_bytes } else { 0 },
            ecn_packets: if ecn_echo { acked_packets } else { 0 },
            ecn_echo,
            rtt,
            rtt_samples: &[],
            delivery_rate: None,
            snd_una,
            snd_nxt,
            in_flight,
            int: &[],
            remote_delay: None,
            first_at: at,
            path_flags: 0,
            dup_acks: (acked_bytes == 0) as u32,
            reordered: 0,
        }
    }
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

/// A detected loss (coalescent: losses of one reporting period arrive as one, with their count).
///
/// `in_flight` and `snd_nxt` are the datapath's after its own reaction. A go-back-N datapath (the
/// simulator's default recovery) has rewound its next byte to the hole when it reports a NACK, so
/// `snd_nxt` is the hole and nothing beyond it counts in flight: a window algorithm that halves the
/// flight at the loss (RFC 5681 FlightSize) takes the highest byte sent from its ACKs, as Reno, AIMD and
/// DCTCP do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss {
    /// How the loss was detected (the first one of the period).
    pub kind: LossKind,
    /// Loss signals merged into this one.
    pub count: u32,
    /// Bytes in flight when the loss was reported (after a go-back-N rewind: up to the hole).
    pub in_flight: u64,
    /// Next byte the sender will send (after a go-back-N rewind: the hole).
    pub snd_nxt: u64,
}

/// Data handed to the wire for this flow since the last report (one packet when reporting per event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Payload bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u32,
    /// Of `bytes`, those sent again.
    pub retransmitted_bytes: u64,
}

/// Feedback a switch or the receiver sent beyond ACKs (custom signals).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feedback {
    /// A switch whose queue passed its threshold tells the sender directly (Bolt's sub-RTT control
    /// packet; Arslan et al. SIGCOMM'23): the queue it saw and its egress link.
    QueueNotification {
        /// Queue length at the switch, bytes.
        queue: u64,
        /// Egress link rate of that queue.
        link_rate: Rate,
        /// When the switch generated it.
        at: Time,
        /// When the sender sent the data packet that triggered it (echoed by the switch), so that
        /// `now - sent_at` is the notification's round trip (Bolt's `rtt_src`).
        sent_at: Time,
    },
    /// A per-hop signal a switch computed for this flow ([`crate::signal`]): one switch's value sent back
    /// in a feedback packet, or the value the switches on the path wrote into the data packet, combined
    /// hop by hop by the design's rule and echoed on its ACK.
    Signal {
        /// The value; its unit is the design's (RoCC: a fair rate in bit/s).
        value: u64,
        /// Where it comes from.
        origin: SignalOrigin,
        /// When the switch sent it (a feedback packet) or the ACK reached the sender (a path value).
        at: Time,
        /// When the sender sent the data packet that carried or triggered it.
        sent_at: Time,
    },
}

/// Where a [`Feedback::Signal`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOrigin {
    /// A feedback packet from the switch with this node id.
    Switch(u32),
    /// The data packet's signal field as the receiver echoed it: this many switches wrote it.
    Path(u8),
}

/// A host congestion signal (TAURUS section 3.3 host signals; hostCC, Agarwal et al. SIGCOMM'23: IIO
/// occupancy and PCIe use), sampled by a host. A host policy ([`crate::HostControl`]) gets its own host's
/// samples; a flow's algorithm ([`CongestionControl::on_host`]) gets its receiving host's, carried back on
/// ACKs (TAURUS section 3.3: host signals "embedded into the remote feedback packets").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostSignal {
    /// Occupancy of the NIC-to-memory (IIO) buffer, bytes.
    pub iio_occupancy: u64,
    /// Utilization of the host interconnect (PCIe / memory) toward the NIC, 0 to 1.
    pub pcie_utilization: f64,
    /// When it was sampled.
    pub at: Time,
}

/// How often the datapath reports signals to the algorithm (the signal-level aggregation period).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportEvery {
    /// Every ACK (and every sent packet, for algorithms that bind TX).
    Ack,
    /// Every `n` ACKs.
    Acks(u32),
    /// Whenever this many bytes were acknowledged.
    Bytes(u64),
    /// Once per round trip (when the ACK point passes the data outstanding at the previous report).
    Rtt,
    /// Every interval (picoseconds).
    Interval(Time),
}

/// What an algorithm asks of the datapath's reporting (CCP's control program, TAURUS's report engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportPolicy {
    /// The aggregation period of accumulable and coalescent signals.
    pub every: ReportEvery,
    /// Report a loss or timeout at once, bypassing aggregation.
    pub urgent_loss: bool,
    /// Report an ECN echo or CNP at once, bypassing aggregation.
    pub urgent_ecn: bool,
}

impl Default for ReportPolicy {
    /// Per ACK; losses urgent (CCP: "urgent events" bypass batching).
    fn default() -> Self {
        ReportPolicy { every: ReportEvery::Ack, urgent_loss: true, urgent_ecn: false }
    }
}

/// A timer an algorithm owns; each id has at most one pending deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub u8);

/// How many distinct timers one controller may hold.
pub const MAX_TIMERS: usize = 4;

/// Records a timer request in a handler's decisions (sender and receiver sides alike): `Some(at)` arms timer
/// `id` for `at`, replacing any pending deadline; `None` cancels it.
pub(crate) fn request_timer(
    set: &mut [Option<Time>; MAX_TIMERS],
    cancel: &mut [bool; MAX_TIMERS],
    id: TimerId,
    at: Option<Time>,
) {
    let i = id.0 as usize;
    assert!(i < MAX_TIMERS, "timer id {} out of range (max {})", id.0, MAX_TIMERS - 1);
    set[i] = at;
    cancel[i] = at.is_none();
}

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
    /// Custom feedback ([`CongestionControl::on_feedback`]).
    pub const FEEDBACK: Events = Events(1 << 5);
    /// RTT probe results ([`CongestionControl::on_probe`]).
    pub const PROBE: Events = Events(1 << 6);
    /// Path flags on every data packet sent ([`CongestionControl::packet_flags`]).
    pub const PACKET_FLAGS: Events = Events(1 << 7);
    /// Host congestion signals of the flow's receiving host ([`CongestionControl::on_host`]).
    pub const HOST: Events = Events(1 << 8);

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

/// What a datapath must provide for an algorithm to work, besides the control it applies ([`crate::Control`]).
/// Declared in each algorithm's registry entry; [`crate::contract::check`] holds it against what a
/// datapath provides, and the registry's tests hold the last three against what the algorithm's factory
/// builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// Switches mark ECN and receivers echo it on ACKs.
    pub ecn: bool,
    /// Receivers send congestion notification packets (DCQCN's notification point).
    pub cnp: bool,
    /// Switches stamp INT records and ACKs carry them back.
    pub int: bool,
    /// Switches run Bolt's programmable egress queue (Arslan et al. SIGCOMM'23 section 3): they send a
    /// queue notification back to the sender of a data packet that finds the queue at or above its
    /// threshold (sub-RTT control), and keep or strip `PATH_INCWIN` on data packets by proactive
    /// ramp-up tokens and supply matching; receivers echo the path flags on ACKs.
    pub bolt: bool,
    /// The datapath runs the token (receiver-driven) transport: receivers issue pull packets that clock
    /// the senders ([`crate::Factory::token_transport`] is `Some`).
    pub token_transport: bool,
    /// The datapath runs the algorithm's receiver-side controller at every receiver
    /// ([`crate::Factory::receiver`] is `Some`).
    pub receiver: bool,
    /// The datapath runs the algorithm's host policy at every host ([`crate::Factory::host_policy`] is
    /// `Some`).
    pub host_policy: bool,
    /// The datapath runs the algorithm's datapath programs on every signal
    /// ([`CongestionControl::programs`]; [`crate::program`]).
    pub program: bool,
    /// Switches run the algorithm's switch-side signal ([`crate::Factory::switch_signal`] is `Some`): a
    /// per-port hook that computes a value at enqueue or dequeue and writes it into the data packet's
    /// signal field (echoed on ACKs) or sends it back in a feedback packet ([`Feedback::Signal`]).
    pub signal: bool,
    /// The datapath sends an RTT probe when the algorithm asks ([`Ctx::request_probe`]) and hands its
    /// round trip to [`CongestionControl::on_probe`].
    pub probe: bool,
    /// Receiving hosts sample their congestion signals and their ACKs carry the latest sample back to
    /// the sender ([`CongestionControl::on_host`], [`Events::HOST`]).
    pub host_signal: bool,
}

impl Needs {
    /// Nothing beyond the control the algorithm applies.
    pub const NOTHING: Needs = Needs {
        ecn: false,
        cnp: false,
        int: false,
        bolt: false,
        token_transport: false,
        receiver: false,
        host_policy: false,
        program: false,
        signal: false,
        probe: false,
        host_signal: false,
    };

    /// What `self` and `other` need together (algorithms sharing one network).
    pub const fn union(self, other: Needs) -> Needs {
        Needs {
            ecn: self.ecn || other.ecn,
            cnp: self.cnp || other.cnp,
            int: self.int || other.int,
            bolt: self.bolt || other.bolt,
            token_transport: self.token_transport || other.token_transport,
            receiver: self.receiver || other.receiver,
            host_policy: self.host_policy || other.host_policy,
            program: self.program || other.program,
            signal: self.signal || other.signal,
            probe: self.probe || other.probe,
            host_signal: self.host_signal || other.host_signal,
        }
    }
}

/// Path flag: the packet belongs to the flow's first window (no ACK had come back when it left).
pub const PATH_FIRST: u8 = 1;
/// Path flag: the packet belongs to the flow's last window (the flow will not send a new packet when it is
/// acknowledged).
pub const PATH_LAST: u8 = 1 << 1;
/// Path flag: the sender asks to grow its window by one packet; switches keep it only where there is
/// spare capacity.
pub const PATH_INCWIN: u8 = 1 << 2;
/// Path flag: a switch on the path already notified the sender about this packet (set by switches).
pub const PATH_DECWIN: u8 = 1 << 3;
/// Path flag: the sender's once-per-round-trip additive-increase marker.
pub const PATH_AI: u8 = 1 << 4;
/// Every path flag bit.
pub const PATH_FLAGS_MASK: u8 = PATH_FIRST | PATH_LAST | PATH_INCWIN | PATH_DECWIN | PATH_AI;

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
    /// Send an RTT probe now; the result arrives through [`CongestionControl::on_probe`].
    pub probe: bool,
    /// A new reporting policy, if changed.
    pub report: Option<ReportPolicy>,
    /// A datapath program to install, if changed ([`Ctx::install`]).
    pub install: Option<Install>,
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
        request_timer(&mut self.decisions.set_timers, &mut self.decisions.cancel_timers, id, Some(at));
    }

    /// Cancels timer `id` if pending.
    pub fn cancel_timer(&mut self, id: TimerId) {
        request_timer(&mut self.decisions.set_timers, &mut self.decisions.cancel_timers, id, None);
    }

    /// Asks the datapath to measure the RTT with a probe packet.
    pub fn request_probe(&mut self) {
        self.decisions.probe = true;
    }

    /// Changes how often signals are reported from now on.
    pub fn set_report(&mut self, policy: ReportPolicy) {
        self.decisions.report = Some(policy);
    }

    /// Installs one of the algorithm's declared programs ([`CongestionControl::programs`]) from the next
    /// signal on, with values for its control registers (CCP's `Install`). The program replaces the
    /// reporting policy while it is installed.
    pub fn install(&mut self, install: Install) {
        self.decisions.install = Some(install);
    }

    /// The decisions written so far; the datapath applies them after the handler returns.
    pub fn decisions(&self) -> &Decisions {
        &self.decisions
    }
}

/// A congestion-control algorithm instance controlling one flow.
///
/// Handlers default to doing nothing; an algorithm overrides those it [binds](CongestionControl::events).
///
/// Lifecycle: the datapath creates the controller through its algorithm's [`crate::Factory`] (setup),
/// calls [`CongestionControl::on_start`] once, then the bound handlers; each handler publishes its
/// decisions (result update) through the [`Ctx`]; dropping the controller tears it down.
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

    /// Custom feedback arrived.
    fn on_feedback(&mut self, _feedback: &Feedback, _ctx: &mut Ctx) {}

    /// An RTT probe came back after `rtt`.
    fn on_probe(&mut self, _rtt: Time, _ctx: &mut Ctx) {}

    /// A newer sample of the receiving host's congestion signals arrived on an ACK; the datapath calls
    /// this just before it hands over that ACK.
    fn on_host(&mut self, _signal: &HostSignal, _ctx: &mut Ctx) {}

    /// The path flags (`PATH_*` bits, within [`PATH_FLAGS_MASK`]) to stamp on the data packet about to
    /// leave, whose first payload byte is `seq`; `bytes_left` is the flow's bytes from `seq` to its end
    /// (`u64::MAX` when the flow has no known size). Called by the datapath for every data packet, new or
    /// resent, only for algorithms that bind [`Events::PACKET_FLAGS`]; it runs with the datapath as the
    /// packet leaves (in either plane mode) and makes no decisions. Default: no flags.
    fn packet_flags(&mut self, _seq: u64, _bytes_left: u64) -> u8 {
        0
    }

    /// How the datapath should report signals; asked once when the flow starts (change it later with
    /// [`Ctx::set_report`]).
    fn report_policy(&self) -> ReportPolicy {
        ReportPolicy::default()
    }

    /// The datapath programs this algorithm may install ([`crate::program`]), asked once when the flow
    /// starts; the first is installed with its initial values unless the start handler installs another
    /// ([`Ctx::install`]). Default: none, and the fold and reporting policy report signals.
    fn programs(&self) -> Vec<Arc<Program>> {
        Vec::new()
    }

    /// The installed program reported its registers. While a program is installed its reports replace
    /// the per-signal handlers (`on_ack`, `on_loss`, `on_sent`, `on_cnp`, `on_feedback`, `on_probe`,
    /// `on_host`), whose signals the program sees instead.
    fn on_report(&mut self, _report: &ProgramReport<'_>, _ctx: &mut Ctx) {}

    /// Reports the algorithm's state variables for per-flow traces, as `(name, value)` pairs in a fixed
    /// order (the first call fixes the column set). A name carries its unit when it has one: times in
    /// nanoseconds end in `_ns`, rates in bit/s end in `_bps`; windows (`cwnd`, `token_window`) are
    /// bytes; `u64::MAX` means unset.
    fn trace(&self, _out: &mut dyn FnMut(&'static str, f64)) {}
}
