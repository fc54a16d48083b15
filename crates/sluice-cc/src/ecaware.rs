//! `ec_aware`: the EC-aware DACK/IACK policy against endpoint congestion (Chong and Krishnan,
//! "Addressing Endpoint-induced Congestion for Accelerator Scale-Out in a Medium-Scale Domain", section
//! II), both ends: the target decides how to acknowledge from its processing-queue occupancy, the
//! initiator paces itself by the kind of acknowledgment it receives.
//!
//! Acknowledgments: an IACK (incremented ACK) carries a cumulative sequence greater than the previous
//! one; a DACK (duplicate ACK) repeats it. Loss is signalled by NACKs (go-back-N), never by DACKs.
//!
//! **Target** ([`EcTarget`], section II-D). The target is congested while its processing-queue occupancy
//! exceeds the policy threshold.
//! - A packet accepted into an uncongested queue is acknowledged at once with an IACK.
//! - A packet that arrives to a congested queue gets an immediate standalone DACK; its IACK waits until
//!   it moves to or below the threshold position in the queue (Fig. 1), and then carries the highest
//!   sequence number below the threshold, not the highest received. If the queue is still congested at
//!   that moment, a DACK goes just before the IACK.
//! - After a drop (the queue was full, or a packet arrived out of order behind a drop) the go-back-N
//!   NACK acknowledges everything accepted, including packets still queued above the threshold. Those
//!   packets, which "arrived before the packet drop", get a DACK when they finish processing instead of
//!   an IACK when they cross the threshold (section II-F); the DACKs pace the initiator's resend, and
//!   until the last of them is processed the target sends no other DACK (one packet per processed one).
//! - Fairness (section II-H): every `sample_interval` the target samples each stream's accepted packets;
//!   a stream that accepted more than `1 + fairness_margin` times the slowest one has its IACKs
//!   coalesced (every other threshold-crossing IACK is skipped, the next one covers it), a stream that
//!   accepted less than the fastest one divided by `1 + fairness_margin` has its DACKs suppressed.
//!
//! **Initiator** ([`EcInitiator`], section II-E, Fig. 2). States `H∞` (unthrottled: the fixed
//! outstanding threshold of [`crate::opt`] only), `H(-1)`, `H0`, `H1`:
//! - a DACK in any state moves to `H(-1)` and sends nothing;
//! - an IACK in `H(-1)` moves to `H0` and sends one packet; in `H0` moves to `H1`, resets the counter
//!   and sends two; in `H1` increments the counter and sends two, or returns to `H∞` when the counter
//!   reaches `counter_threshold` (default 6);
//! - after a NACK (or timeout) the initiator resends one packet at once and then one per DACK (section
//!   II-F); the first IACK, which acknowledges resent data the target accepted, returns it to `H(-1)`
//!   (and, being an IACK, on to `H0` with one packet).
//!
//! "Sends k packets" is a window: `cwnd = in_flight + unspent + k * mss`, capped at the outstanding
//! threshold, so exactly `k` more full-sized packets may leave. A folded report (reporting less often
//! than per ACK) is replayed as its DACKs followed by its IACKs.
//!
//! Interpretations where the paper is silent are marked in the parameter docs and in
//! `docs/endpoint-congestion.md`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_US};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, Needs};
use crate::opt::OptConfig;
use crate::receiver::{AckKind, Arrival, QueueMove, ReceiverControl, RxCtx, RxEvents, StreamSample};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};

/// EC-aware policy parameters (`[cc.params]` with `cc.algorithm = "ec_aware"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcAwareConfig {
    /// The initiator's outstanding threshold in `H∞`, as for [`OptConfig::outstanding_bdps`] (section
    /// III-A: "under non-EC conditions, our scheme operates identically to the OPT scheme"). Default 2.
    pub outstanding_bdps: f64,
    /// Target queue occupancy above which the target is congested, bytes. Default 9 KB (9216 bytes):
    /// section III-A, "target queue occupancy threshold at 9KB".
    pub queue_threshold: u64,
    /// IACKs in `H1` before returning to `H∞`. Default 6: section II-E ("empirically ... 6").
    pub counter_threshold: u32,
    /// Period of the target's per-stream sampling for fairness (0 = off). Default 8 us: one round trip
    /// of the paper's setup (section III-B, about 8 us); the paper does not give the period.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub sample_interval: Time,
    /// How much faster than another a stream must be to count as "significantly" faster (section
    /// II-H), as a fraction. Default 0.25; the paper gives no value.
    pub fairness_margin: f64,
}

impl Default for EcAwareConfig {
    fn default() -> Self {
        EcAwareConfig {
            outstanding_bdps: OptConfig::default().outstanding_bdps,
            queue_threshold: 9 * 1024,
            counter_threshold: 6,
            sample_interval: 8 * PS_PER_US,
            fairness_margin: 0.25,
        }
    }
}

impl EcAwareConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<EcAwareConfig, ParamError> {
        let config = merge_params(&EcAwareConfig::default(), params)?;
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(config.outstanding_bdps.is_finite() && config.outstanding_bdps > 0.0) {
            return err("outstanding_bdps", "must be positive");
        }
        if config.queue_threshold == 0 {
            return err("queue_threshold", "must be at least 1 byte");
        }
        if config.counter_threshold == 0 {
            return err("counter_threshold", "must be at least 1");
        }
        if !(config.fairness_margin.is_finite() && config.fairness_margin >= 0.0) {
            return err("fairness_margin", "must be a non-negative fraction");
        }
        Ok(config)
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "ec_aware",
    summary: "EC-aware DACK/IACK (Chong & Krishnan): target ACKs by processing-queue occupancy, H-state initiator",
    control: Control::Window,
    needs: Needs { receiver: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    Ok(Arc::new(EcAwareFactory { config: EcAwareConfig::resolve(params)? }))
}

/// Builds both ends of the policy.
#[derive(Debug)]
pub struct EcAwareFactory {
    /// The resolved parameters.
    pub config: EcAwareConfig,
}

impl Factory for EcAwareFactory {
    fn create(&self, _flow: &FlowInfo) -> Box<dyn CongestionControl> {
        Box::new(EcInitiator::new(self.config.clone()))
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn receiver(&self, _flow: &FlowInfo) -> Option<Box<dyn ReceiverControl>> {
        Some(Box::new(EcTarget::new(self.config.clone())))
    }
}

/// The initiator's halt state (Fig. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// `H∞`: not throttled.
    Unthrottled,
    /// `H(-1)`: one packet per IACK; entered on every DACK.
    Minus1,
    /// `H0`: one IACK seen since the last DACK.
    Zero,
    /// `H1`: two packets per IACK, counting IACKs toward `H∞`.
    One,
    /// Resending after a NACK or timeout: one packet per DACK.
    Retransmit,
}

/// What an acknowledgment lets the initiator send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Permit {
    /// The outstanding threshold alone.
    Open,
    /// `k` more packets (0 = halt).
    Send(u64),
}

/// The initiator side of one stream.
#[derive(Debug, Clone)]
pub struct EcInitiator {
    config: EcAwareConfig,
    mss: u64,
    window: u64,
    cwnd: u64,
    state: Halt,
    counter: u32,
}

impl EcInitiator {
    /// An initiator with `config`; set up by [`CongestionControl::on_start`].
    pub fn new(config: EcAwareConfig) -> EcInitiator {
        EcInitiator { config, mss: 1, window: u64::MAX, cwnd: u64::MAX, state: Halt::Unthrottled, counter: 0 }
    }

    /// The halt state.
    pub fn state(&self) -> Halt {
        self.state
    }

    /// The `H1` counter.
    pub fn counter(&self) -> u32 {
        self.counter
    }

    /// The window in force, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn on_dack(&mut self) -> Permit {
        if self.state == Halt::Retransmit {
            return Permit::Send(1);
        }
        self.state = Halt::Minus1;
        self.counter = 0;
        Permit::Send(0)
    }

    fn on_iack(&mut self) -> Permit {
        match self.state {
            Halt::Unthrottled => Permit::Open,
            Halt::Minus1 => {
                self.state = Halt::Zero;
                Permit::Send(1)
            }
            Halt::Zero => {
                self.state = Halt::One;
                self.counter = 0;
                Permit::Send(2)
            }
            Halt::One => {
                self.counter += 1;
                if self.counter >= self.config.counter_threshold {
                    self.state = Halt::Unthrottled;
                    self.counter = 0;
                    Permit::Open
                } else {
                    Permit::Send(2)
                }
            }
            Halt::Retransmit => {
                // The target accepted resent data again: back to throttled transmission (section II-F).
                self.state = Halt::Minus1;
                self.on_iack()
            }
        }
    }

    /// Sets the window for `permit`, given the in-flight bytes after the acknowledgment and the unspent
    /// allowance before it.
    fn apply(&mut self, permit: Permit, in_flight: u64, unspent: u64) -> u64 {
        self.cwnd = match permit {
            Permit::Open => self.window,
            Permit::Send(0) => in_flight,
            Permit::Send(k) => (in_flight + unspent + k * self.mss).min(self.window),
        };
        self.cwnd
    }
}

impl CongestionControl for EcInitiator {
    fn name(&self) -> &'static str {
        "ec_aware"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.mss = flow.mss as u64;
        let opt = OptConfig { outstanding_bdps: self.config.outstanding_bdps, ..OptConfig::default() };
        self.window = opt.window(flow);
        self.cwnd = self.window;
        ctx.set_cwnd(self.cwnd);
        ctx.set_rate(flow.line_rate);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let throttled = self.state != Halt::Unthrottled;
        let mut unspent = if throttled { self.cwnd.saturating_sub(ack.in_flight + ack.acked_bytes) } else { 0 };
        let dacks = ack.dup_acks.min(ack.acks);
        for _ in 0..dacks {
            let permit = self.on_dack();
            unspent = self.apply(permit, ack.in_flight, unspent).saturating_sub(ack.in_flight);
        }
        for _ in dacks..ack.acks {
            let permit = self.on_iack();
            unspent = self.apply(permit, ack.in_flight, unspent).saturating_sub(ack.in_flight);
        }
        ctx.set_cwnd(self.cwnd.max(1));
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        self.state = Halt::Retransmit;
        self.counter = 0;
        self.apply(Permit::Send(1), loss.in_flight, 0);
        ctx.set_cwnd(self.cwnd.max(1));
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        let state = match self.state {
            Halt::Unthrottled => f64::INFINITY,
            Halt::Minus1 => -1.0,
            Halt::Zero => 0.0,
            Halt::One => 1.0,
            Halt::Retransmit => -2.0,
        };
        out("state", state);
        out("counter", self.counter as f64);
        out("cwnd", self.cwnd as f64);
    }
}

/// The target's fairness action on one stream (section II-H).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fairness {
    /// No action.
    Neutral,
    /// The stream is slower than the others: its DACKs are suppressed.
    SuppressDacks,
    /// The stream is faster than the others: every other IACK is coalesced into the next.
    CoalesceIacks,
}

/// The target side of one stream.
#[derive(Debug, Clone)]
pub struct EcTarget {
    config: EcAwareConfig,
    fairness: Fairness,
    /// The receiver's next expected byte at the latest drop: the NACK acknowledged everything below it,
    /// so packets below it get a DACK when processed instead of an IACK when crossing.
    covered_until: u64,
    /// End of the latest of this flow's packets that finished processing.
    processed_end: u64,
    /// Under coalescing: the next crossing IACK is skipped.
    skip_next: bool,
}

impl EcTarget {
    /// A target with `config`.
    pub fn new(config: EcAwareConfig) -> EcTarget {
        EcTarget { config, fairness: Fairness::Neutral, covered_until: 0, processed_end: 0, skip_next: true }
    }

    /// The fairness action in force.
    pub fn fairness(&self) -> Fairness {
        self.fairness
    }

    /// Packets ending at or below this sequence arrived before the latest drop (NACK).
    pub fn covered_until(&self) -> u64 {
        self.covered_until
    }

    /// Whether packets that arrived before the latest drop are still being processed: their DACKs pace
    /// the initiator's resend, and no other DACK is sent meanwhile.
    pub fn recovering(&self) -> bool {
        self.processed_end < self.covered_until
    }

    fn congested(&self, queue_bytes: u64) -> bool {
        queue_bytes > self.config.queue_threshold
    }

    fn dack_allowed(&self) -> bool {
        self.fairness != Fairness::SuppressDacks
    }
}

impl ReceiverControl for EcTarget {
    fn name(&self) -> &'static str {
        "ec_aware"
    }

    fn events(&self) -> RxEvents {
        RxEvents::DATA | RxEvents::PROCESSED | RxEvents::CROSSED | RxEvents::SAMPLE
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut RxCtx) {
        ctx.watch_queue(self.config.queue_threshold);
        if self.config.sample_interval > 0 {
            ctx.sample_streams(self.config.sample_interval);
        }
    }

    fn on_data(&mut self, arrival: &Arrival, ctx: &mut RxCtx) {
        if !arrival.accepted {
            // Dropped (queue full) or out of order behind a drop: the datapath NACKs it.
            self.covered_until = self.covered_until.max(arrival.rcv_nxt);
            ctx.ack(AckKind::Withhold);
            return;
        }
        if !self.congested(arrival.queue_bytes) {
            ctx.ack_upto(AckKind::Immediate, arrival.rcv_nxt);
        } else if self.dack_allowed() && !self.recovering() {
            ctx.ack(AckKind::Delayed);
        } else {
            ctx.ack(AckKind::Withhold);
        }
    }

    fn on_crossed(&mut self, moved: &QueueMove, ctx: &mut RxCtx) {
        if moved.seq + moved.bytes as u64 <= self.covered_until {
            ctx.ack(AckKind::Withhold);
            return;
        }
        if self.fairness == Fairness::CoalesceIacks {
            self.skip_next = !self.skip_next;
            if !self.skip_next {
                ctx.ack(AckKind::Withhold);
                return;
            }
        }
        if self.congested(moved.queue_bytes) && self.dack_allowed() && !self.recovering() {
            ctx.dack_first();
        }
        ctx.ack_upto(AckKind::Immediate, moved.seq + moved.bytes as u64);
    }

    fn on_processed(&mut self, moved: &QueueMove, ctx: &mut RxCtx) {
        let end = moved.seq + moved.bytes as u64;
        self.processed_end = self.processed_end.max(end);
        if end <= self.covered_until {
            ctx.ack(AckKind::Delayed);
        }
    }

    fn on_sample(&mut self, sample: &StreamSample, _ctx: &mut RxCtx) {
        let factor = 1.0 + self.config.fairness_margin;
        let own = sample.packets as f64;
        self.fairness = if sample.streams < 2 {
            Fairness::Neutral
        } else if own > factor * sample.min_packets as f64 {
            Fairness::CoalesceIacks
        } else if own * factor < sample.max_packets as f64 {
            Fairness::SuppressDacks
        } else {
            Fairness::Neutral
        };
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("covered_until", self.covered_until as f64);
        out("fairness", self.fairness as u8 as f64);
    }
}
