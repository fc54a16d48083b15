//! `cubic`: CUBIC congestion control (Ha, Rhee, Xu, SIGOPS OSR 2008; RFC 9438, which obsoletes RFC 8312).
//!
//! Window-based and loss-driven. After a window reduction the window follows a cubic function of the
//! time since the congestion-avoidance epoch began, concave up to the window of the last loss `W_max`,
//! then convex beyond it. Slow start, loss detection and recovery are Reno's ([`crate::reno`]); HyStart++
//! is not used (RFC 9438 §4.10 makes it optional).
//!
//! Congestion avoidance, with windows in segments and time in seconds (RFC 9438 §4.2-§4.3):
//! - An epoch starts at the first congestion-avoidance ACK after a reduction or slow start, at
//!   `t_epoch = ctx.now()`, with `cwnd_epoch = cwnd`. If `cwnd_epoch < W_max`,
//!   `K = cbrt((W_max - cwnd_epoch) / C)` (RFC 9438 eq. 2; `cbrt(W_max (1 - beta) / C)` right after a loss
//!   reduction); otherwise `K = 0` and `W_max = cwnd_epoch` (Linux `bictcp_update`'s origin point, RFC 9438
//!   §4.8 after a timeout).
//! - `W_cubic(t) = C (t - K)^3 + W_max` (RFC 9438 eq. 1), `t = now - t_epoch`.
//! - Reno-friendly estimate (RFC 9438 §4.3): `W_est` starts at `cwnd_epoch` and grows per ACK by
//!   `alpha * segments_acked / cwnd`, `alpha = 3 (1 - beta) / (1 + beta)` until `W_est` reaches the window
//!   before the last reduction (`cwnd_prior`), 1 after. This is RFC 8312 §4.2's
//!   `W_max beta + alpha t / RTT` counted in acknowledged data instead of time. When
//!   `W_cubic(t) < W_est` the flow is in the Reno-friendly region and `cwnd = max(cwnd, W_est)`.
//! - Otherwise `target = W_cubic(t + RTT)` clamped to `[cwnd, 1.5 cwnd]` and, per ACK,
//!   `cwnd += (target - cwnd) / cwnd` segments (RFC 9438 §4.4-§4.5). For `acked` bytes this is
//!   `acked (target - cwnd) / cwnd` bytes, applied in integers with the remainder carried to the next ACK.
//!   `RTT` is the minimum RTT sample seen (Linux `delay_min`); 0 before the first sample.
//!
//! On a fast retransmit or NACK outside the current loss window (RFC 9438 §4.6-§4.7):
//! `W_max = cwnd`, or with fast convergence `cwnd (1 + beta) / 2` when `cwnd` is below the previous
//! `W_max`; `cwnd_prior = cwnd`; `ssthresh = max(FlightSize * beta, min_cwnd)` (rounded to the byte); `cwnd = ssthresh`, held
//! through recovery as in Reno; the epoch ends. On a timeout (RFC 9438 §4.8): the same `ssthresh`,
//! `cwnd = 1 mss`, `W_max` reset (Linux `bictcp_reset` on entering the Loss state), so the next epoch
//! starts with `K = 0` from the window at which slow start ends.
//!
//! A folded report uses one target for all the ACKs it folds.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_S};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, LossKind, Needs};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};
use crate::reno::{RenoWindow, WindowParams};

/// CUBIC parameters (`[cc.params]` of a scenario with `cc.algorithm = "cubic"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CubicConfig {
    /// Cubic scaling constant `C` in segments per second cubed (> 0).
    /// Default 0.4: RFC 9438 §5.1 (RFC 8312 §5.1) and Linux `bic_scale = 41` (41 * 10 / 1024).
    pub c: f64,
    /// Multiplicative decrease factor `beta_cubic`, in (0, 1).
    /// Default 0.7: RFC 9438 §4.6 and Linux `beta = 717` (of 1024).
    pub beta: f64,
    /// Lower `W_max` to `cwnd (1 + beta) / 2` on a loss below the previous `W_max`.
    /// Default true: RFC 9438 §4.7 and Linux `fast_convergence = 1`.
    pub fast_convergence: bool,
    /// Grow at least as fast as the Reno-friendly estimate `W_est` (TCP-friendly region).
    /// Default true: RFC 9438 §4.3 (RFC 8312 §4.2) and Linux `tcp_friendliness = 1`.
    pub reno_friendly: bool,
    /// Initial congestion window in full-sized segments (at least 1).
    /// Default 10: RFC 6928 and Linux `TCP_INIT_CWND`.
    pub init_cwnd_packets: u32,
    /// Initial slow-start threshold in full-sized segments; absent means unlimited.
    /// Default absent: RFC 5681 §3.1 and Linux `TCP_INFINITE_SSTHRESH` (RFC 9438 §4.10: standard slow start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_ssthresh_packets: Option<u32>,
    /// Floor of `ssthresh` after a loss, in segments (at least 1).
    /// Default 2: RFC 9438 §4.6 (`cwnd = max(ssthresh, 2)`) and Linux `bictcp_recalc_ssthresh` (`max(..., 2U)`).
    pub min_cwnd_packets: u32,
    /// Slow-start byte-counting limit `L` per ACK, in segments (at least 1).
    /// Default 2: RFC 3465 §2.2 (as for `reno`).
    pub abc_limit_packets: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
            init_cwnd_packets: 10,
            init_ssthresh_packets: None,
            min_cwnd_packets: 2,
            abc_limit_packets: 2,
        }
    }
}

impl CubicConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<CubicConfig, ParamError> {
        let config = merge_params(&CubicConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.c > 0.0 && self.c.is_finite()) {
            return err("c", "must be positive");
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return err("beta", "must be in (0, 1)");
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

    /// The Reno-friendly additive increase `3 (1 - beta) / (1 + beta)` (RFC 9438 §4.3).
    pub fn reno_alpha(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "cubic",
    summary: "CUBIC (RFC 9438): window a cubic function of time since the last loss, beta 0.7, Reno-friendly",
    control: Control::Window,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = CubicConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Cubic::new(c.clone())), cnp_interval: None }))
}

/// One congestion-avoidance epoch (windows in segments, times in seconds unless named otherwise).
#[derive(Debug, Clone, Copy)]
struct Epoch {
    /// When the epoch began (picoseconds).
    start: Time,
    /// Time from the epoch start to the plateau at `W_max`.
    k: f64,
    /// The Reno-friendly estimate `W_est`.
    w_est: f64,
}

/// The CUBIC controller of one flow. Window quantities are bytes unless named otherwise.
#[derive(Debug, Clone)]
pub struct Cubic {
    config: CubicConfig,
    window: RenoWindow,
    /// `W_max` in segments (0 before the first loss and after a timeout).
    w_max: f64,
    /// The window before the last reduction, in segments.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// `K` of the current or last epoch, in seconds.
    k: f64,
    min_rtt: Option<Time>,
    /// Cubic growth not yet applied, in units of 1/cwnd byte.
    remainder: u64,
}

impl Cubic {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: CubicConfig) -> Cubic {
        let window = RenoWindow::new(config.window(), 1);
        Cubic { config, window, w_max: 0.0, cwnd_prior: 0.0, epoch: None, k: 0.0, min_rtt: None, remainder: 0 }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd()
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.window.ssthresh()
    }

    /// `W_max` in bytes (0 before the first loss and after a timeout until the next epoch starts).
    pub fn w_max(&self) -> f64 {
        self.w_max * self.mss()
    }

    /// `K` of the current or last epoch, in seconds (0 before the first epoch).
    pub fn k(&self) -> f64 {
        self.k
    }

    /// The Reno-friendly estimate `W_est` of the current epoch in bytes, if an epoch runs.
    pub fn w_est(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_est * self.mss())
    }

    /// The minimum RTT seen, if any.
    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    /// Whether the flow is in fast recovery after a fast retransmit or NACK.
    pub fn in_fast_recovery(&self) -> bool {
        self.window.in_fast_recovery()
    }

    /// `W_cubic(t)` in segments for `t` seconds into an epoch with plateau time `k` (RFC 9438 eq. 1).
    pub fn w_cubic(&self, t: f64, k: f64) -> f64 {
        self.config.c * (t - k).powi(3) + self.w_max
    }

    fn mss(&self) -> f64 {
        self.window.mss() as f64
    }

    fn cwnd_segments(&self) -> f64 {
        self.window.cwnd() as f64 / self.mss()
    }

    fn update_min_rtt(&mut self, ack: &Ack<'_>) {
        let samples = ack.rtt_samples.iter().copied().chain(ack.rtt);
        if let Some(rtt) = samples.min() {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
    }

    /// Starts an epoch at `now` (RFC 9438 §4.2, Linux `bictcp_update`).
    fn start_epoch(&mut self, now: Time) -> Epoch {
        let cwnd = self.cwnd_segments();
        if cwnd < self.w_max {
            self.k = ((self.w_max - cwnd) / self.config.c).cbrt();
        } else {
            self.k = 0.0;
            self.w_max = cwnd;
        }
        self.remainder = 0;
        Epoch { start: now, k: self.k, w_est: cwnd }
    }

    fn congestion_avoidance(&mut self, acked: u64, now: Time) {
        let mut epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(now),
        };
        let t = now.saturating_sub(epoch.start) as f64 / PS_PER_S as f64;
        if self.config.reno_friendly && self.reno_friendly(&mut epoch, acked, t) {
            self.remainder = 0;
        } else {
            self.cubic_increase(acked, &epoch, t);
        }
        self.epoch = Some(epoch);
    }

    /// Updates `W_est`; when it exceeds `W_cubic(t)`, raises the window to it and returns true.
    fn reno_friendly(&mut self, epoch: &mut Epoch, acked: u64, t: f64) -> bool {
        let alpha = if epoch.w_est >= self.cwnd_prior { 1.0 } else { self.config.reno_alpha() };
        epoch.w_est += alpha * (acked as f64 / self.mss()) / self.cwnd_segments();
        if self.w_cubic(t, epoch.k) >= epoch.w_est {
            return false;
        }
        let w_est = (epoch.w_est * self.mss()) as u64;
        self.window.set_cwnd(self.window.cwnd().max(w_est));
        true
    }

    /// `cwnd += acked (target - cwnd) / cwnd` bytes toward `W_cubic(t + RTT)` (RFC 9438 §4.4-§4.5).
    fn cubic_increase(&mut self, acked: u64, epoch: &Epoch, t: f64) {
        let rtt = self.min_rtt.unwrap_or(0) as f64 / PS_PER_S as f64;
        let cwnd = self.window.cwnd();
        let target = (self.w_cubic(t + rtt, epoch.k) * self.mss()).clamp(cwnd as f64, 1.5 * cwnd as f64) as u64;
        let numerator = acked as u128 * (target - cwnd) as u128 + self.remainder as u128;
        self.remainder = (numerator % cwnd as u128) as u64;
        self.window.set_cwnd(cwnd + (numerator / cwnd as u128) as u64);
    }

    /// RFC 9438 §4.7: `W_max` at a loss, with fast convergence.
    fn record_w_max(&mut self) {
        let cwnd = self.cwnd_segments();
        let converge = self.config.fast_convergence && cwnd < self.w_max;
        self.w_max = if converge { cwnd * (1.0 + self.config.beta) / 2.0 } else { cwnd };
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Cubic::new(self.config.clone());
        self.window = RenoWindow::new(self.config.window(), flow.mss);
        ctx.set_cwnd(self.window.cwnd());
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let before = self.window.cwnd();
        self.update_min_rtt(ack);
        if self.window.on_ack(ack) && ack.acked_bytes > 0 {
            let mut acked = ack.acked_bytes;
            if self.window.in_slow_start() {
                acked = self.window.slow_start(acked, ack.acks);
            }
            if acked > 0 {
                self.congestion_avoidance(acked, ctx.now());
            }
        }
        if self.window.cwnd() != before {
            ctx.set_cwnd(self.window.cwnd());
        }
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        let Some(flight) = self.window.loss_flight(loss) else {
            return;
        };
        self.cwnd_prior = self.cwnd_segments();
        if loss.kind == LossKind::Timeout {
            self.w_max = 0.0;
        } else {
            self.record_w_max();
        }
        self.epoch = None;
        self.remainder = 0;
        self.window.reduce(loss.kind, (flight as f64 * self.config.beta).round() as u64);
        ctx.set_cwnd(self.window.cwnd());
    }

    /// `cwnd`, `ssthresh` (`u64::MAX` while unset) and `wmax` in bytes, then `k` in picoseconds.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.window.cwnd() as f64);
        out("ssthresh", self.window.ssthresh() as f64);
        out("wmax", self.w_max());
        out("k_ns", self.k * 1e9);
    }
}
