//! `vegas`: TCP Vegas (Brakmo, O'Malley, Peterson, SIGCOMM'94; as in Linux `net/ipv4/tcp_vegas.c`).
//!
//! Window-based and delay-driven. Once per round trip Vegas compares the window with the data the path
//! would hold at the base RTT and moves the window by one segment to keep between `alpha` and `beta`
//! segments queued in the network. Losses are handled as Reno ([`crate::reno`]).
//!
//! RTT samples (every sample of every ACK, the ACK's own included, before the decision it takes part in):
//! `BaseRTT` is the minimum ever seen; a round's `RTT` is the minimum sample in that round (Linux
//! `minRTT`: the minimum filters out delayed-ACK inflation).
//!
//! Per ACK that acknowledges new data, outside a loss window:
//! - When `snd_una` passes the `snd_nxt` recorded at the start of the round (strictly, as Linux
//!   `after(ack, beg_snd_nxt)`), the round ends and the next begins at the current highest `snd_nxt`. If
//!   the round had fewer than [`VegasConfig::min_rtt_samples`] samples, this ACK grows the window as Reno
//!   does (Linux: `cntRTT <= 2`). Otherwise, with `cwnd` in segments,
//!   `diff = cwnd (RTT - BaseRTT) / RTT` (the paper's `(Expected - Actual) BaseRTT`, which is
//!   `cwnd - cwnd BaseRTT / RTT`; Linux divides by `BaseRTT` instead):
//!   - in slow start: if `diff > gamma`, `cwnd = min(cwnd, cwnd BaseRTT / RTT + 1 mss)` and
//!     `ssthresh = min(ssthresh, cwnd)`, leaving slow start; else slow start as Reno for this ACK;
//!   - in congestion avoidance: `diff > beta`: `cwnd -= 1 mss`, `ssthresh = min(ssthresh, cwnd)`;
//!     `diff < alpha`: `cwnd += 1 mss`; otherwise hold;
//!   - `cwnd` never goes below `min_cwnd` (Linux: 2 segments).
//! - Inside a round: slow start as Reno while `cwnd < ssthresh`; no growth in congestion avoidance.
//!
//! Slow start grows every round trip, as Linux does, not every other one as the paper's modified slow start.
//!
//! Losses (Reno, RFC 5681/6582, as Linux `tcp_vegas` keeps `tcp_reno_ssthresh`):
//! `ssthresh = max(FlightSize / 2, min_cwnd)`; `cwnd = ssthresh` held until the loss window is
//! acknowledged, or `cwnd = 1 mss` after a timeout. Vegas runs only outside loss windows (Linux enables it
//! in the Open state only): after a timeout the window grows as Reno until the data outstanding at the
//! timeout is acknowledged, and when a loss window ends a fresh round starts. `BaseRTT` is kept.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, Needs};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};
use crate::reno::{RenoWindow, WindowParams};

/// Vegas parameters (`[cc.params]` of a scenario with `cc.algorithm = "vegas"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VegasConfig {
    /// Grow by one segment per round trip while fewer than this many segments are queued (`diff < alpha`).
    /// Default 2: Linux `tcp_vegas.c` module parameter `alpha = 2` (the paper uses 1).
    pub alpha: f64,
    /// Shrink by one segment per round trip while more than this many are queued (`diff > beta`; >= alpha).
    /// Default 4: Linux `beta = 4` (the paper uses 3).
    pub beta: f64,
    /// Leave slow start once more than this many segments are queued (`diff > gamma`).
    /// Default 1: Linux `gamma = 1`.
    pub gamma: f64,
    /// RTT samples a round needs for a Vegas decision; with fewer the round's last ACK grows as Reno.
    /// Default 3: Linux (`cntRTT <= 2` means only delayed ACKs were seen).
    pub min_rtt_samples: u32,
    /// Initial congestion window in full-sized segments (at least 1).
    /// Default 10: RFC 6928 and Linux `TCP_INIT_CWND`.
    pub init_cwnd_packets: u32,
    /// Initial slow-start threshold in full-sized segments; absent means unlimited.
    /// Default absent: RFC 5681 §3.1 and Linux `TCP_INFINITE_SSTHRESH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_ssthresh_packets: Option<u32>,
    /// Floor of the window and of `ssthresh` after a loss, in segments (at least 1).
    /// Default 2: Linux `tcp_vegas_cong_avoid` (`cwnd < 2` clamped to 2) and RFC 5681 eq. 4.
    pub min_cwnd_packets: u32,
    /// Slow-start byte-counting limit `L` per ACK, in segments (at least 1).
    /// Default 2: RFC 3465 §2.2 (as for `reno`).
    pub abc_limit_packets: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            alpha: 2.0,
            beta: 4.0,
            gamma: 1.0,
            min_rtt_samples: 3,
            init_cwnd_packets: 10,
            init_ssthresh_packets: None,
            min_cwnd_packets: 2,
            abc_limit_packets: 2,
        }
    }
}

impl VegasConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<VegasConfig, ParamError> {
        let config = merge_params(&VegasConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.alpha >= 0.0 && self.alpha.is_finite()) {
            return err("alpha", "must be a finite number >= 0");
        }
        if !(self.beta >= self.alpha && self.beta.is_finite()) {
            return err("beta", "must be a finite number >= alpha");
        }
        if !(self.gamma >= 0.0 && self.gamma.is_finite()) {
            return err("gamma", "must be a finite number >= 0");
        }
        if self.min_rtt_samples == 0 {
            return err("min_rtt_samples", "must be at least 1");
        }
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
    name: "vegas",
    summary: "TCP Vegas (Brakmo'94, Linux): +/-1 MSS per RTT to keep 2-4 segments queued above the base RTT",
    control: Control::Window,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = VegasConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Vegas::new(c.clone())), cnp_interval: None }))
}

/// The Vegas controller of one flow. Window quantities are bytes.
#[derive(Debug, Clone)]
pub struct Vegas {
    config: VegasConfig,
    window: RenoWindow,
    base_rtt: Option<Time>,
    /// The round ends when `snd_una` passes this (Linux `beg_snd_nxt`).
    round_end: u64,
    round_min_rtt: Option<Time>,
    round_samples: u32,
    /// `diff` of the last Vegas decision, in segments.
    diff: f64,
}

impl Vegas {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: VegasConfig) -> Vegas {
        let window = RenoWindow::new(config.window(), 1);
        Vegas { config, window, base_rtt: None, round_end: 0, round_min_rtt: None, round_samples: 0, diff: 0.0 }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd()
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.window.ssthresh()
    }

    /// The minimum RTT ever seen, if any.
    pub fn base_rtt(&self) -> Option<Time> {
        self.base_rtt
    }

    /// The minimum RTT of the current round, if it has a sample.
    pub fn round_min_rtt(&self) -> Option<Time> {
        self.round_min_rtt
    }

    /// `diff` of the last Vegas decision in segments (0 before the first).
    pub fn diff(&self) -> f64 {
        self.diff
    }

    /// Whether the flow is in fast recovery after a fast retransmit or NACK.
    pub fn in_fast_recovery(&self) -> bool {
        self.window.in_fast_recovery()
    }

    fn start_round(&mut self) {
        self.round_end = self.window.high_sent();
        self.round_min_rtt = None;
        self.round_samples = 0;
    }

    fn sample(&mut self, ack: &Ack<'_>) {
        let samples: &[Time] = if ack.rtt_samples.is_empty() { ack.rtt.as_slice() } else { ack.rtt_samples };
        for &rtt in samples {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.round_samples += 1;
        }
    }

    fn grow(&mut self, ack: &Ack<'_>) {
        if self.window.in_loss_window() {
            self.window.grow(ack.acked_bytes, ack.acks);
        } else if ack.snd_una > self.round_end {
            self.end_round(ack);
        } else if self.window.in_slow_start() {
            self.window.slow_start(ack.acked_bytes, ack.acks);
        }
    }

    fn end_round(&mut self, ack: &Ack<'_>) {
        let (samples, rtt) = (self.round_samples, self.round_min_rtt);
        self.start_round();
        match (rtt, self.base_rtt) {
            (Some(rtt), Some(base)) if samples >= self.config.min_rtt_samples => self.adjust(rtt, base, ack),
            _ => self.window.grow(ack.acked_bytes, ack.acks),
        }
    }

    /// The once-per-round Vegas decision (Linux `tcp_vegas_cong_avoid`).
    fn adjust(&mut self, rtt: Time, base: Time, ack: &Ack<'_>) {
        let rtt = rtt.max(base).max(1);
        let cwnd = self.window.cwnd();
        let mss = self.window.mss();
        self.diff = cwnd as f64 * (rtt - base) as f64 / (rtt as f64 * mss as f64);
        if self.window.in_slow_start() {
            if self.diff > self.config.gamma {
                let target = (cwnd as u128 * base as u128 / rtt as u128) as u64;
                self.set_cwnd(cwnd.min(target + mss));
                self.window.set_ssthresh(self.window.ssthresh().min(self.window.cwnd()));
            } else {
                self.window.slow_start(ack.acked_bytes, ack.acks);
            }
        } else if self.diff > self.config.beta {
            self.set_cwnd(cwnd.saturating_sub(mss));
            self.window.set_ssthresh(self.window.ssthresh().min(self.window.cwnd()));
        } else if self.diff < self.config.alpha {
            self.set_cwnd(cwnd + mss);
        }
    }

    fn set_cwnd(&mut self, cwnd: u64) {
        self.window.set_cwnd(cwnd.max(self.window.min_cwnd()));
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Vegas::new(self.config.clone());
        self.window = RenoWindow::new(self.config.window(), flow.mss);
        ctx.set_cwnd(self.window.cwnd());
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let before = self.window.cwnd();
        let was_in_loss_window = self.window.in_loss_window();
        let may_grow = self.window.on_ack(ack);
        if was_in_loss_window && !self.window.in_loss_window() {
            self.start_round();
        }
        self.sample(ack);
        if may_grow && ack.acked_bytes > 0 {
            self.grow(ack);
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

    /// `cwnd` and `ssthresh` in bytes (`ssthresh` is `u64::MAX` while unset), `base_rtt` in picoseconds
    /// (0 before the first sample), then `diff` in segments.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.window.cwnd() as f64);
        out("ssthresh", self.window.ssthresh() as f64);
        out("base_rtt_ns", self.base_rtt.unwrap_or(0) as f64 / PS_PER_NS as f64);
        out("diff", self.diff);
    }
}
