//! `timely`: TIMELY (Mittal et al., SIGCOMM 2015), rate control on the RTT gradient.
//!
//! Rate-based; the only signal is the RTT (NIC timestamps in the paper), so switches need nothing. The
//! flow starts at line rate. At each update, with the latest RTT sample `rtt` and the sample of the
//! previous update `prev_rtt` (the paper's Algorithm 1):
//!
//! - `rtt_diff = (1 - a) rtt_diff + a (rtt - prev_rtt)`, `gradient = rtt_diff / min_rtt`;
//! - `rtt < t_low`: `R += delta`;
//! - else `rtt > t_high`: `R *= 1 - beta (1 - t_high / rtt)`;
//! - else `gradient <= 0`: `R += N delta`, with `N = hai_factor` once the `hai_threshold` previous updates
//!   all took this branch (hyper-active increase, HAI), else `N = 1`;
//! - else `R *= 1 - beta gradient` (the factor is floored at 0, as the HPCC artifact does);
//! - then `R` is clamped to `[min_rate, line_rate]`. Rates are integer bit/s; a cut is computed in `f64`
//!   and rounded.
//!
//! The HAI streak counts consecutive updates that took the gradient branch with `gradient <= 0`; any
//! other branch resets it. The `t_low` branch adds a single `delta` (the paper returns from it before the
//! HAI rule).
//!
//! Cadence ([`TimelyConfig::segment_bytes`]): the paper updates once per completion event of a 16-64 KB
//! segment; the HPCC artifact (alibaba-edu/High-Precision-Congestion-Control, `rdma-hw.cc`
//! `HandleAckTimely` / `UpdateRateTimely`) once per round trip, when the cumulative ACK passes the
//! `snd_nxt` recorded at the previous update (`m_lastUpdateSeq`). Both run here on per-ACK reports: with
//! `segment_bytes` absent (the default) an update happens on the first ACK with `snd_una` beyond the
//! `snd_nxt` of the previous update; with it set, once per that many acknowledged bytes. The first RTT
//! sample only records `prev_rtt` and starts the cadence, as in the artifact (no gradient exists yet).
//! `prev_rtt` is the sample of the previous update, so the RTT difference spans one update period.
//!
//! Paper and code disagree in places (see the defaults of [`TimelyConfig::for_line_rate`]): HAI is
//! `N delta` in the paper and a separate `RATE_HAI = 5 bw Mb/s` (equal to `5 delta`) after five increase
//! stages in the HPCC artifact; the ns-3 code of the DCQCN authors (bobzhuyb/ns3-rdma `timely-sender.cc`)
//! has no HAI and clamps the rate to `[0.01 C, 0.96 C]`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_US};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Needs, ReportPolicy};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// TIMELY parameters (`[cc.params]` with `cc.algorithm = "timely"`). Defaults scale with the host line
/// rate; see [`TimelyConfig::for_line_rate`], where each default cites its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelyConfig {
    /// Below this RTT the rate grows by `delta` whatever the gradient (T_low).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub t_low: Time,
    /// Above this RTT the rate is cut by `beta (1 - t_high / rtt)` whatever the gradient (T_high).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub t_high: Time,
    /// The RTT that normalizes the gradient (`minRTT`).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub min_rtt: Time,
    /// Multiplicative-decrease factor `beta`, in (0, 1].
    pub beta: f64,
    /// EWMA weight `a` of the NEW RTT difference in `rtt_diff = (1 - a) rtt_diff + a new_diff`, in (0, 1].
    pub ewma_alpha: f64,
    /// Additive-increase step `delta`.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub delta: Rate,
    /// Consecutive negative-gradient updates after which the increase becomes `hai_factor * delta`.
    pub hai_threshold: u32,
    /// The HAI multiplier `N`.
    pub hai_factor: u32,
    /// Floor of the rate (capped at the line rate).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub min_rate: Rate,
    /// Update once per this many acknowledged bytes (the paper's completion segment); absent means once
    /// per round trip (the HPCC artifact).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_size")]
    pub segment_bytes: Option<u64>,
}

impl TimelyConfig {
    /// The defaults for a host whose NIC runs at `line_rate`; each value cites its source.
    ///
    /// `delta` and `min_rate` scale with the line rate: the paper's 10 Mb/s at 10 Gb/s and the HPCC
    /// artifact's `RATE_AI = bw Mb/s` (bw in Gb/s) are both `C / 1000`; the ns-3 code's floor `0.01 C`
    /// equals the artifact's `MIN_RATE = 1 Gb/s` at 100 Gb/s.
    pub fn for_line_rate(line_rate: Rate) -> TimelyConfig {
        TimelyConfig {
            t_low: 50 * PS_PER_US,              // HPCC artifact; ns3-rdma: T_low = 50 us
            t_high: 500 * PS_PER_US,            // HPCC artifact; ns3-rdma: T_high = 500 us
            min_rtt: 20 * PS_PER_US,            // HPCC artifact; ns3-rdma: minRTT = 20 us
            beta: 0.8,                          // HPCC artifact; ns3-rdma: beta = 0.8
            ewma_alpha: 0.875,                  // HPCC artifact; ns3-rdma: a = 0.875 (new sample)
            delta: (line_rate / 1000).max(1),   // paper 10 Mb/s at 10G; HPCC artifact bw Mb/s
            hai_threshold: 5,                   // paper: HAI after five negative-gradient events
            hai_factor: 5,                      // paper: N = 5 (artifact: RATE_HAI = 5 x RATE_AI)
            min_rate: (line_rate / 100).max(1), // ns3-rdma 0.01 C (HPCC artifact 1 Gb/s at 100G)
            segment_bytes: None,                // HPCC artifact: once per RTT
        }
    }

    /// Overlays `[cc.params]` on the defaults for `line_rate` and checks the ranges.
    pub fn resolve(params: &toml::Table, line_rate: Rate) -> Result<TimelyConfig, ParamError> {
        let config = merge_params(&TimelyConfig::for_line_rate(line_rate), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if self.t_high == 0 {
            return err("t_high", "must be positive");
        }
        if self.t_low > self.t_high {
            return err("t_low", "must not exceed t_high");
        }
        if self.min_rtt == 0 {
            return err("min_rtt", "must be positive");
        }
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return err("beta", "must be in (0, 1]");
        }
        if !(self.ewma_alpha > 0.0 && self.ewma_alpha <= 1.0) {
            return err("ewma_alpha", "must be in (0, 1]");
        }
        if self.delta == 0 {
            return err("delta", "must be positive");
        }
        if self.hai_factor == 0 {
            return err("hai_factor", "must be at least 1");
        }
        if self.min_rate == 0 {
            return err("min_rate", "must be positive");
        }
        if self.segment_bytes == Some(0) {
            return err("segment_bytes", "must be positive");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "timely",
    summary: "TIMELY (Mittal et al. SIGCOMM'15): rate control on the RTT gradient with T_low/T_high guards",
    control: Control::Rate,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = TimelyConfig::resolve(params, line_rate)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Timely::new(c.clone())), cnp_interval: None }))
}

/// The TIMELY controller of one flow.
#[derive(Debug, Clone)]
pub struct Timely {
    config: TimelyConfig,
    line_rate: Rate,
    min_rate: Rate,
    rate: Rate,
    /// The RTT sample of the previous update; `None` until the first sample.
    prev_rtt: Option<Time>,
    /// EWMA of RTT differences, picoseconds.
    rtt_diff: f64,
    gradient: f64,
    /// Consecutive updates that took the `gradient <= 0` branch.
    negative_streak: u32,
    /// `snd_nxt` at the previous update (per-RTT cadence).
    last_update_seq: u64,
    /// Acknowledged bytes since the previous update (segment cadence).
    bytes_since_update: u64,
}

impl Timely {
    /// A controller with `config`; the rate is set up by [`CongestionControl::on_start`].
    pub fn new(config: TimelyConfig) -> Timely {
        Timely {
            config,
            line_rate: 0,
            min_rate: 0,
            rate: 0,
            prev_rtt: None,
            rtt_diff: 0.0,
            gradient: 0.0,
            negative_streak: 0,
            last_update_seq: 0,
            bytes_since_update: 0,
        }
    }

    /// Current rate (bit/s).
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The EWMA of RTT differences, picoseconds.
    pub fn rtt_diff(&self) -> f64 {
        self.rtt_diff
    }

    /// The normalized gradient of the last update.
    pub fn gradient(&self) -> f64 {
        self.gradient
    }

    /// Consecutive negative-gradient updates so far.
    pub fn negative_streak(&self) -> u32 {
        self.negative_streak
    }

    /// Whether this ACK completes an update period.
    fn update_due(&self, ack: &Ack<'_>) -> bool {
        match self.config.segment_bytes {
            Some(segment) => self.bytes_since_update >= segment,
            None => ack.snd_una > self.last_update_seq,
        }
    }

    /// Starts the next update period at this ACK.
    fn restart_period(&mut self, ack: &Ack<'_>) {
        self.last_update_seq = ack.snd_nxt;
        self.bytes_since_update = match self.config.segment_bytes {
            Some(segment) => self.bytes_since_update % segment,
            None => 0,
        };
    }

    /// One TIMELY update with the RTT sample `rtt` against `prev_rtt` (the paper's Algorithm 1).
    fn update(&mut self, rtt: Time, prev_rtt: Time) {
        let a = self.config.ewma_alpha;
        let new_diff = rtt as f64 - prev_rtt as f64;
        self.rtt_diff = (1.0 - a) * self.rtt_diff + a * new_diff;
        self.gradient = self.rtt_diff / self.config.min_rtt as f64;
        if rtt < self.config.t_low {
            self.negative_streak = 0;
            self.increase(self.config.delta);
        } else if rtt > self.config.t_high {
            self.negative_streak = 0;
            let factor = 1.0 - self.config.beta * (1.0 - self.config.t_high as f64 / rtt as f64);
            self.decrease(factor);
        } else if self.gradient <= 0.0 {
            let n = if self.negative_streak >= self.config.hai_threshold { self.config.hai_factor } else { 1 };
            self.negative_streak = self.negative_streak.saturating_add(1);
            self.increase(self.config.delta.saturating_mul(n as Rate));
        } else {
            self.negative_streak = 0;
            self.decrease(1.0 - self.config.beta * self.gradient);
        }
    }

    fn increase(&mut self, step: Rate) {
        self.rate = self.rate.saturating_add(step).clamp(self.min_rate, self.line_rate);
    }

    /// `R *= factor` (factor floored at 0), rounded to whole bit/s, then clamped.
    fn decrease(&mut self, factor: f64) {
        let rate = (self.rate as f64 * factor.max(0.0)).round() as Rate;
        self.rate = rate.clamp(self.min_rate, self.line_rate);
    }
}

impl CongestionControl for Timely {
    fn name(&self) -> &'static str {
        "timely"
    }

    fn events(&self) -> Events {
        Events::ACK
    }

    /// Starts at line rate with an unlimited window.
    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Timely::new(self.config.clone());
        self.line_rate = flow.line_rate;
        self.min_rate = self.config.min_rate.min(flow.line_rate);
        self.rate = flow.line_rate;
        ctx.set_rate(self.rate);
        ctx.set_cwnd(u64::MAX);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        self.bytes_since_update = self.bytes_since_update.saturating_add(ack.acked_bytes);
        let Some(rtt) = ack.rtt else {
            return;
        };
        let Some(prev_rtt) = self.prev_rtt else {
            self.prev_rtt = Some(rtt);
            self.restart_period(ack);
            return;
        };
        if !self.update_due(ack) {
            return;
        }
        self.restart_period(ack);
        let before = self.rate;
        self.update(rtt, prev_rtt);
        self.prev_rtt = Some(rtt);
        if self.rate != before {
            ctx.set_rate(self.rate);
        }
    }

    /// Per ACK, losses urgent: TIMELY keeps its own cadence (per RTT or per segment, see the module
    /// docs) on top of per-ACK reports, so each update acts on the RTT sample of the ACK that completes
    /// the period.
    fn report_policy(&self) -> ReportPolicy {
        ReportPolicy::default()
    }

    /// `rate` in bit/s, `rtt_diff` in picoseconds, then the normalized `gradient`.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("rate_bps", self.rate as f64);
        out("rtt_diff_ns", self.rtt_diff / PS_PER_NS as f64);
        out("gradient", self.gradient);
    }
}
