//! `reno`: TCP NewReno congestion control (RFC 5681, RFC 6582) with appropriate byte counting (RFC 3465).
//!
//! Window-based and loss-driven. The datapath reports cumulative ACKs and the losses it detected (a fast
//! retransmit, a receiver NACK, or a retransmission timeout). Loss detection is the datapath's, so there
//! is no duplicate-ACK counting and no per-duplicate window inflation here: a loss report is the
//! fast-retransmit event, and an ACK of no new data changes nothing.
//!
//! Per ACK that acknowledges new data (`acked` bytes, folded over `acks` ACKs):
//! - Slow start while `cwnd < ssthresh` (RFC 5681 §3.1 with RFC 3465 §2.2 byte counting):
//!   `cwnd += min(acked, acks * L * mss)`, stopping exactly at `ssthresh`; bytes acknowledged beyond the
//!   point where `cwnd` reaches `ssthresh` feed congestion avoidance (as Linux `tcp_slow_start` returns
//!   them to `tcp_cong_avoid_ai`). `L` is [`RenoConfig::abc_limit_packets`] (RFC 3465 §2.2), and 1 in
//!   the slow start that follows a timeout until the data outstanding at the timeout is acknowledged
//!   (RFC 3465 §2.3). A folded report's bound `acks * L * mss` equals the sum of the per-ACK bounds
//!   `min(N_i, L * mss)` when every folded ACK acknowledged at most `L * mss` bytes (the usual case) or
//!   every one at least that much; otherwise it is their upper bound, the closest the folded report allows.
//! - Congestion avoidance (RFC 3465 §2.1, exact byte counting): `bytes_acked += acked`; each time it
//!   reaches `cwnd`, subtract `cwnd` and add one MSS, so the window grows by exactly one MSS per window of
//!   acknowledged data whatever the ACK pattern. A folded report spanning several windows adds one MSS per
//!   window of the window at the report (Linux `tcp_cong_avoid_ai`).
//!
//! On loss (RFC 5681 §3.2, RFC 6582):
//! - fast retransmit or NACK: `ssthresh = max(FlightSize / 2, min_cwnd)`, `cwnd = ssthresh` (no 3-MSS
//!   inflation), then fast recovery until the highest sequence sent at the loss (RFC 6582 `recover`) is
//!   cumulatively acknowledged. The window is held during recovery (what NewReno's partial-ACK deflation
//!   amounts to without duplicate-ACK inflation) and further losses of that window do not reduce it again.
//! - timeout: the same `ssthresh`, `cwnd = 1 mss` (RFC 5681 §3.1 loss window), then slow start; losses of
//!   data sent before the timeout do not reduce again (RFC 6582 §4 sets `recover` on a timeout too). A
//!   timeout always reduces; a repeated one before the ACK point moves finds the same FlightSize and so
//!   keeps `ssthresh`, as RFC 5681 §3.1 asks for a segment already resent by the retransmission timer.
//!
//! FlightSize is the data sent and not cumulatively acknowledged (RFC 5681 §2): the larger of the loss
//! report's `in_flight` and the highest `snd_nxt` seen minus the ACK point, so a datapath that rewinds
//! `snd_nxt` for a go-back-N resend before reporting the loss still halves the data that was outstanding.
//! The reduced window applies at once; the datapath stops sending while `in_flight >= cwnd`.
//!
//! [`RenoWindow`] holds this window and recovery state; `cubic` and `vegas` reuse it and change only how
//! the window grows and how far a loss cuts it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, LossKind, Needs};
use crate::program::{library, Program, ProgramReport};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// Reno parameters (`[cc.params]` of a scenario with `cc.algorithm = "reno"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenoConfig {
    /// Initial congestion window in full-sized segments (at least 1).
    /// Default 10: RFC 6928 and Linux `TCP_INIT_CWND`.
    pub init_cwnd_packets: u32,
    /// Initial slow-start threshold in full-sized segments; absent means unlimited.
    /// Default absent: RFC 5681 §3.1 ("arbitrarily high"), Linux `TCP_INFINITE_SSTHRESH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_ssthresh_packets: Option<u32>,
    /// Floor of `ssthresh` after a loss, in segments (at least 1).
    /// Default 2: RFC 5681 eq. 4 (`2 * SMSS`) and Linux `tcp_reno_ssthresh` (`max(..., 2U)`).
    pub min_cwnd_packets: u32,
    /// Slow-start byte-counting limit `L`: at most this many segments of growth per ACK (at least 1).
    /// Default 2: RFC 3465 §2.2 (`L = 2 * SMSS`, the most it allows; a window still doubles per round
    /// trip when the receiver acknowledges every other segment). 1 is RFC 5681 §3.1's `min(N, SMSS)`.
    pub abc_limit_packets: u32,
    /// Report through a datapath program ([`crate::program::library`]) that folds ACKs and losses as
    /// the fixed engines do: the same results, computed by a program every datapath with programs runs.
    /// Default absent (false): the fixed fold and reporting policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<bool>,
}

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            init_cwnd_packets: 10,
            init_ssthresh_packets: None,
            min_cwnd_packets: 2,
            abc_limit_packets: 2,
            program: None,
        }
    }
}

impl RenoConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<RenoConfig, ParamError> {
        let config = merge_params(&RenoConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.window().validate()
    }

    /// The window settings.
    pub fn window(&self) -> WindowParams {
        WindowParams {
            init_cwnd_packets: self.init_cwnd_packets,
            init_ssthresh_packets: self.init_ssthresh_packets,
            min_cwnd_packets: self.min_cwnd_packets,
            abc_limit_packets: self.abc_limit_packets,
        }
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "reno",
    summary: "TCP NewReno (RFC 5681/6582): slow start, +1 MSS per window, halve on loss, 1 MSS after a timeout",
    control: Control::Window,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = RenoConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Reno::new(c.clone())), cnp_interval: None }))
}

/// The window settings of a loss-based window controller, in full-sized segments (the fields of the
/// same names in [`RenoConfig`], `CubicConfig` and `VegasConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowParams {
    /// Initial congestion window.
    pub init_cwnd_packets: u32,
    /// Initial slow-start threshold; `None` is unlimited.
    pub init_ssthresh_packets: Option<u32>,
    /// Floor of `ssthresh` after a loss.
    pub min_cwnd_packets: u32,
    /// Slow-start byte-counting limit `L` per ACK (RFC 3465 §2.2).
    pub abc_limit_packets: u32,
}

impl WindowParams {
    /// Checks that every count is at least 1, naming the offending parameter.
    pub fn validate(&self) -> Result<(), ParamError> {
        let checks = [
            ("init_cwnd_packets", self.init_cwnd_packets),
            ("init_ssthresh_packets", self.init_ssthresh_packets.unwrap_or(1)),
            ("min_cwnd_packets", self.min_cwnd_packets),
            ("abc_limit_packets", self.abc_limit_packets),
        ];
        match checks.iter().find(|(_, value)| *value == 0) {
            Some((key, _)) => Err(ParamError { key: Some((*key).into()), message: "must be at least 1".into() }),
            None => Ok(()),
        }
    }
}

/// Reno's window and loss-recovery state in bytes (RFC 5681, RFC 6582, RFC 3465): slow start, additive
/// increase, and when a loss reduces the window. See the module documentation for the rules.
#[derive(Debug, Clone)]
pub struct RenoWindow {
    mss: u64,
    min_cwnd: u64,
    abc_limit: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Congestion-avoidance bytes acknowledged toward the next MSS of growth (RFC 3465 `bytes_acked`).
    bytes_acked: u64,
    snd_una: u64,
    /// Highest `snd_nxt` seen (`snd_max`).
    high_sent: u64,
    /// RFC 6582 `recover`: the highest sequence sent when the last reduction happened.
    recover: u64,
    fast_recovery: bool,
    /// Slow start after a timeout, until `recover` is acknowledged (RFC 3465 §2.3: `L = 1`).
    after_timeout: bool,
}

impl RenoWindow {
    /// The initial window of a flow with `mss`-byte segments.
    pub fn new(params: WindowParams, mss: u32) -> RenoWindow {
        let mss = mss.max(1) as u64;
        RenoWindow {
            mss,
            min_cwnd: params.min_cwnd_packets.max(1) as u64 * mss,
            abc_limit: params.abc_limit_packets.max(1) as u64,
            cwnd: params.init_cwnd_packets.max(1) as u64 * mss,
            ssthresh: params.init_ssthresh_packets.map_or(u64::MAX, |p| p as u64 * mss),
            bytes_acked: 0,
            snd_una: 0,
            high_sent: 0,
            recover: 0,
            fast_recovery: false,
            after_timeout: false,
        }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Bytes per full-sized segment.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// The smallest `ssthresh` a loss leaves, in bytes.
    pub fn min_cwnd(&self) -> u64 {
        self.min_cwnd
    }

    /// The cumulative ACK point seen so far.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// The highest sequence sent so far (`snd_max`), as seen in ACK and loss reports.
    pub fn high_sent(&self) -> u64 {
        self.high_sent
    }

    /// Replaces the congestion window (at least one byte); growth credit is kept.
    pub fn set_cwnd(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(1);
    }

    /// Replaces the slow-start threshold.
    pub fn set_ssthresh(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh;
    }

    /// Whether the window is below `ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Whether the flow is in fast recovery after a fast retransmit or NACK (the window is held).
    pub fn in_fast_recovery(&self) -> bool {
        self.fast_recovery
    }

    /// Whether data sent before the last reduction is still unacknowledged (losses do not reduce again).
    pub fn in_loss_window(&self) -> bool {
        self.snd_una < self.recover
    }

    /// Records the ACK's sequence points and ends a finished recovery; returns whether the window may
    /// grow on this ACK (not in fast recovery).
    pub fn on_ack(&mut self, ack: &Ack<'_>) -> bool {
        self.snd_una = self.snd_una.max(ack.snd_una);
        self.high_sent = self.high_sent.max(ack.snd_nxt).max(self.snd_una);
        if !self.in_loss_window() {
            self.fast_recovery = false;
            self.after_timeout = false;
        }
        !self.fast_recovery
    }

    /// Reno growth for `acked` new bytes over `acks` ACKs: slow start, then congestion avoidance with
    /// whatever slow start did not use.
    pub fn grow(&mut self, acked: u64, acks: u32) {
        let rest = self.slow_start(acked, acks);
        self.additive_increase(rest);
    }

    /// Slow start (RFC 5681 §3.1, RFC 3465 §2.2): grows by `min(acked, acks * L * mss)` up to `ssthresh`.
    /// Returns the acknowledged bytes left for congestion avoidance: all of them when `cwnd` was already
    /// at `ssthresh`, those beyond the growth that reached it, and none while still below it.
    pub fn slow_start(&mut self, acked: u64, acks: u32) -> u64 {
        let limit = acks.max(1) as u64 * self.slow_start_limit() * self.mss;
        let growth = acked.min(limit).min(self.ssthresh.saturating_sub(self.cwnd));
        self.cwnd += growth;
        if self.in_slow_start() {
            0
        } else {
            acked - growth
        }
    }

    /// Congestion avoidance with exact byte counting (RFC 3465 §2.1): one MSS per `cwnd` bytes acknowledged.
    pub fn additive_increase(&mut self, acked: u64) {
        self.bytes_acked += acked;
        if self.bytes_acked >= self.cwnd {
            let windows = self.bytes_acked / self.cwnd;
            self.bytes_acked -= windows * self.cwnd;
            self.cwnd += windows * self.mss;
        }
    }

    /// Records the loss's sequence points; returns the FlightSize (bytes) when the loss should reduce the
    /// window, `None` for a fast retransmit or NACK within the current loss window.
    pub fn loss_flight(&mut self, loss: &Loss) -> Option<u64> {
        self.high_sent = self.high_sent.max(loss.snd_nxt);
        let flight = loss.in_flight.max(self.high_sent - self.snd_una);
        self.high_sent = self.high_sent.max(self.snd_una + loss.in_flight);
        (loss.kind == LossKind::Timeout || !self.in_loss_window()).then_some(flight)
    }

    /// Reduces for a loss of `kind` that [`RenoWindow::loss_flight`] accepted: `ssthresh` becomes
    /// `max(ssthresh, min_cwnd)`, `cwnd` becomes `ssthresh` (fast recovery) or one MSS (timeout), and the
    /// loss window runs to the highest sequence sent.
    pub fn reduce(&mut self, kind: LossKind, ssthresh: u64) {
        let timeout = kind == LossKind::Timeout;
        self.ssthresh = ssthresh.max(self.min_cwnd);
        self.bytes_acked = 0;
        self.recover = self.high_sent;
        self.cwnd = if timeout { self.mss } else { self.ssthresh };
        self.fast_recovery = !timeout;
        self.after_timeout = timeout;
    }

    fn slow_start_limit(&self) -> u64 {
        if self.after_timeout {
            1
        } else {
            self.abc_limit
        }
    }
}

/// The Reno controller of one flow. Window quantities are bytes.
#[derive(Debug, Clone)]
pub struct Reno {
    config: RenoConfig,
    window: RenoWindow,
}

impl Reno {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: RenoConfig) -> Reno {
        let window = RenoWindow::new(config.window(), 1);
        Reno { config, window }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd()
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.window.ssthresh()
    }

    /// Whether the flow is in fast recovery after a fast retransmit or NACK.
    pub fn in_fast_recovery(&self) -> bool {
        self.window.in_fast_recovery()
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.window = RenoWindow::new(self.config.window(), flow.mss);
        ctx.set_cwnd(self.window.cwnd());
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let before = self.window.cwnd();
        if self.window.on_ack(ack) && ack.acked_bytes > 0 {
            self.window.grow(ack.acked_bytes, ack.acks);
        }
        if self.window.cwnd() != before {
            ctx.set_cwnd(self.window.cwnd());
        }
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        if let Some(flight) = self.window.loss_flight(loss) {
            self.window.reduce(loss.kind, flight / 2);
            ctx.set_cwnd(self.window.cwnd());
        }
    }

    /// With `program = true`: the per-signal program of [`library`].
    fn programs(&self) -> Vec<Arc<Program>> {
        library::per_signal_when(self.config.program)
    }

    fn on_report(&mut self, report: &ProgramReport<'_>, ctx: &mut Ctx) {
        library::deliver(self, report, ctx);
    }

    /// `cwnd` and `ssthresh` in bytes (`ssthresh` is `u64::MAX` while unset).
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.window.cwnd() as f64);
        out("ssthresh", self.window.ssthresh() as f64);
    }
}
