//! `swift`: Swift (Kumar et al., SIGCOMM 2020, Algorithm 1), delay-targeting AIMD on a fractional window.
//!
//! Window-based, paced when the window falls below one packet. The signal is delay, split in two:
//! the fabric delay `rtt - remote_delay` (the ACK's RTT sample less the time the ACK waited at the
//! receiver, [`Ack::remote_delay`], 0 when the datapath does not measure it) drives the fabric window
//! `fcwnd`; the endpoint delay `remote_delay` drives the endpoint window `ecwnd`. The flow sends with
//! `cwnd = min(fcwnd, ecwnd)` (the paper's split of fabric and endpoint congestion). Windows are `f64`
//! packets of `mss` payload bytes.
//!
//! Fabric target delay (the paper's topology and flow-based scaling; isekai `GetTargetDelay`):
//! `target = base_target + hops per_hop + clamp(alpha_fs / sqrt(fcwnd) + beta_fs, 0, fs_range)` with
//! `alpha_fs = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))`, `beta_fs = -alpha_fs /
//! sqrt(fs_max_cwnd)`, so the flow-scaling term is `fs_range` at `fs_min_cwnd` and 0 at `fs_max_cwnd`.
//! `hops` is [`FlowInfo::hops`]; the window is the one before the update (as isekai). The endpoint target
//! is the fixed `endpoint_target`: no topology or flow scaling (as the paper prescribes).
//!
//! Per ACK, for each window against its own delay and target (Algorithm 1):
//! - `retransmit_count = 0`;
//! - `delay < target`: `w += ai acked / w` when `w >= 1`, else `w += ai acked` (`acked` = newly
//!   acknowledged bytes / mss);
//! - else, if `can_decrease`: `w *= max(1 - beta (delay - target) / delay, 1 - max_mdf)`.
//!
//! On loss, the fabric window only (drops are fabric congestion; isekai leaves its NIC window alone on
//! retransmissions):
//! - fast retransmit or NACK: `retransmit_count = 0`; if `can_decrease`, `fcwnd *= 1 - max_mdf`;
//! - timeout: `retransmit_count += 1`; if it reached `retx_reset_threshold`, `fcwnd = min_cwnd`, else if
//!   `can_decrease`, `fcwnd *= 1 - max_mdf`.
//!
//! Every change is clamped to the window's range; a window that ends below its previous value records
//! the time (`t_last_decrease`, one per window), and `can_decrease = now - t_last_decrease >= rtt` (true
//! before the first decrease). On an ACK `rtt` is the ACK's own sample, on a loss the smoothed RTT (as
//! isekai: `timing.rtt` for ACKs, `rtt_state` for retransmissions).
//!
//! Pacing (Algorithm 1's `pacing_delay = rtt / cwnd`): with `cwnd < 1` packet the flow sends one packet
//! per `srtt / cwnd`, i.e. at `cwnd (mss + header_bytes) 8 / srtt` bit/s (wire bytes, what the datapath
//! paces), where `srtt` is the smoothed RTT (the base RTT before the first sample); the window, rounded to
//! bytes, then admits a single packet at a time.
//! Otherwise the flow is window-limited and the rate is the line rate.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_S, PS_PER_US};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, LossKind, Needs, ReportPolicy};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// Swift parameters (`[cc.params]` with `cc.algorithm = "swift"`). Windows are in packets.
///
/// Defaults follow the Google isekai reference (falcon-transport/isekai, `rue/algorithm/swift.cc`
/// `DefaultConfiguration`), which the Bolt ns-3 code (serhatarslan-hub/bolt_cc_ns3, `CC_SWIFT`) shares
/// for the target delay. Its 25 us base target is sized for real NIC and host stacks; a simulated fabric
/// with microsecond links may want a smaller one (`base_target` in the scenario).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwiftConfig {
    /// Fixed part of the fabric target delay.
    /// Default 25 us: isekai `fabric_base_delay` 191 x 0.131072 us; Bolt ns-3 25 us.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub base_target: Time,
    /// Target delay added per switch hop.
    /// Default 1 us: isekai `topo_scaling_per_hop`; Bolt ns-3.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub per_hop: Time,
    /// Largest flow-scaling term (reached at `fs_min_cwnd`).
    /// Default 100 us: isekai `max_flow_scaling`; Bolt ns-3.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub fs_range: Time,
    /// Window (packets) at and below which flow scaling adds `fs_range`, > 0.
    /// Default 0.1: isekai `min_flow_scaling_window`; Bolt ns-3.
    pub fs_min_cwnd: f64,
    /// Window (packets) at and above which flow scaling adds nothing, > `fs_min_cwnd`.
    /// Default 256: isekai `max_flow_scaling_window` (its `max_fabric_congestion_window`); Bolt ns-3.
    pub fs_max_cwnd: f64,
    /// Additive increment `ai`, packets per window of ACKs, > 0.
    /// Default 1: isekai `fabric_additive_increment_factor`; Bolt ns-3.
    pub ai: f64,
    /// Multiplicative-decrease gain `beta`, in (0, 1).
    /// Default 0.8: isekai `fabric_multiplicative_decrease_factor`; Bolt ns-3.
    pub beta: f64,
    /// Largest decrease per step, `max_mdf`, in (0, 1).
    /// Default 0.5: isekai `max_fabric_multiplicative_decrease`; Bolt ns-3.
    pub max_mdf: f64,
    /// Smallest window (packets), > 0; also the window after `retx_reset_threshold` timeouts.
    /// Default 0.01: isekai `min_fabric_congestion_window`.
    pub min_cwnd: f64,
    /// Largest window (packets), both windows.
    /// Default 256: isekai `max_fabric_congestion_window` and `max_nic_congestion_window`.
    pub max_cwnd: f64,
    /// Smallest endpoint window (packets), > 0.
    /// Default 1: isekai `min_nic_congestion_window`.
    pub min_ecwnd: f64,
    /// Fixed target of the endpoint delay.
    /// Default 25 us: the paper fixes this target without a published value and isekai replaces the
    /// endpoint delay loop with a receive-buffer-level target, so the default reuses the fabric base
    /// target of isekai.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub endpoint_target: Time,
    /// Initial window (packets) of both windows, clamped to their ranges; absent means the flow's
    /// bandwidth-delay product at line rate.
    /// Default absent: Bolt ns-3 starts Swift at the BDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_cwnd: Option<f64>,
    /// Consecutive retransmission timeouts that reset the fabric window to `min_cwnd` (at least 1).
    /// Default 3: isekai `retransmit_limit` (Bolt ns-3 has none; csg-htsim 5).
    pub retx_reset_threshold: u32,
    /// Weight of the previous value in the smoothed RTT, `srtt = w srtt + (1 - w) rtt`, in [0, 1).
    /// Default 0.75: isekai `rtt_smoothing_alpha`.
    pub rtt_smoothing: f64,
}

impl Default for SwiftConfig {
    fn default() -> Self {
        SwiftConfig {
            base_target: 25 * PS_PER_US,
            per_hop: PS_PER_US,
            fs_range: 100 * PS_PER_US,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 256.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.01,
            max_cwnd: 256.0,
            min_ecwnd: 1.0,
            endpoint_target: 25 * PS_PER_US,
            init_cwnd: None,
            retx_reset_threshold: 3,
            rtt_smoothing: 0.75,
        }
    }
}

impl SwiftConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<SwiftConfig, ParamError> {
        let config = merge_params(&SwiftConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        let open_unit = |x: f64| x > 0.0 && x < 1.0;
        let positive = |x: f64| x > 0.0 && x.is_finite();
        if !positive(self.fs_min_cwnd) {
            return err("fs_min_cwnd", "must be positive");
        }
        if !positive(self.fs_max_cwnd - self.fs_min_cwnd) {
            return err("fs_max_cwnd", "must be finite and exceed fs_min_cwnd");
        }
        if !positive(self.ai) {
            return err("ai", "must be positive");
        }
        if !open_unit(self.beta) {
            return err("beta", "must be in (0, 1)");
        }
        if !open_unit(self.max_mdf) {
            return err("max_mdf", "must be in (0, 1)");
        }
        if !positive(self.min_cwnd) {
            return err("min_cwnd", "must be positive");
        }
        if !(self.max_cwnd >= self.min_cwnd && self.max_cwnd.is_finite()) {
            return err("max_cwnd", "must be finite and at least min_cwnd");
        }
        if !(self.min_ecwnd > 0.0 && self.min_ecwnd <= self.max_cwnd) {
            return err("min_ecwnd", "must be positive and at most max_cwnd");
        }
        if self.init_cwnd.is_some_and(|w| !positive(w)) {
            return err("init_cwnd", "must be positive");
        }
        if self.retx_reset_threshold == 0 {
            return err("retx_reset_threshold", "must be at least 1");
        }
        if !(0.0..1.0).contains(&self.rtt_smoothing) {
            return err("rtt_smoothing", "must be in [0, 1)");
        }
        Ok(())
    }

    /// `alpha_fs` of the flow-scaling term, picoseconds x sqrt(packets).
    pub fn fs_alpha(&self) -> f64 {
        self.fs_range as f64 / (1.0 / self.fs_min_cwnd.sqrt() - 1.0 / self.fs_max_cwnd.sqrt())
    }

    /// `beta_fs` of the flow-scaling term, picoseconds.
    pub fn fs_beta(&self) -> f64 {
        -self.fs_alpha() / self.fs_max_cwnd.sqrt()
    }

    /// The fabric target delay (picoseconds) of a flow over `hops` switches with fabric window `fcwnd`
    /// packets.
    pub fn target_delay(&self, fcwnd: f64, hops: u32) -> f64 {
        let scaling = (self.fs_alpha() / fcwnd.sqrt() + self.fs_beta()).clamp(0.0, self.fs_range as f64);
        self.base_target as f64 + hops as f64 * self.per_hop as f64 + scaling
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "swift",
    summary: "Swift (Kumar et al. SIGCOMM'20): delay-target AIMD on fabric and endpoint windows, paced below 1 packet",
    control: Control::WindowAndRate,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = SwiftConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Swift::new(c.clone())), cnp_interval: None }))
}

/// One of Swift's two windows: its value in packets, range, and last decrease.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Window {
    cwnd: f64,
    min: f64,
    max: f64,
    last_decrease: Option<Time>,
}

impl Window {
    fn new(init: f64, min: f64, max: f64) -> Window {
        Window { cwnd: init.clamp(min, max), min, max, last_decrease: None }
    }

    fn can_decrease(&self, now: Time, rtt: Time) -> bool {
        self.last_decrease.is_none_or(|t| now.saturating_sub(t) >= rtt)
    }

    /// Sets the window to `cwnd` clamped to the range; records a decrease.
    fn set(&mut self, cwnd: f64, now: Time) {
        let new = cwnd.clamp(self.min, self.max);
        if new < self.cwnd {
            self.last_decrease = Some(now);
        }
        self.cwnd = new;
    }

    /// Algorithm 1's ACK rule for a `delay` against `target` (picoseconds), `acked` packets.
    fn on_delay(&mut self, delay: f64, target: f64, acked: f64, rtt: Time, now: Time, c: &SwiftConfig) {
        if delay < target {
            let step = if self.cwnd >= 1.0 { c.ai * acked / self.cwnd } else { c.ai * acked };
            self.set(self.cwnd + step, now);
        } else if self.can_decrease(now, rtt) && delay > 0.0 {
            let factor = (1.0 - c.beta * (delay - target) / delay).max(1.0 - c.max_mdf);
            self.set(self.cwnd * factor, now);
        }
    }
}

/// The Swift controller of one flow.
#[derive(Debug, Clone)]
pub struct Swift {
    config: SwiftConfig,
    mss: f64,
    wire_bytes: f64,
    line_rate: Rate,
    base_rtt: Time,
    hops: u32,
    fabric: Window,
    endpoint: Window,
    retransmit_count: u32,
    srtt: Option<Time>,
    last_rtt: Option<Time>,
    target: f64,
    cwnd_set: u64,
    rate_set: Rate,
}

impl Swift {
    /// A controller with `config`; the windows are set up by [`CongestionControl::on_start`].
    pub fn new(config: SwiftConfig) -> Swift {
        let fabric = Window::new(1.0, config.min_cwnd, config.max_cwnd);
        let endpoint = Window::new(1.0, config.min_ecwnd, config.max_cwnd);
        Swift {
            config,
            mss: 1.0,
            wire_bytes: 1.0,
            line_rate: 0,
            base_rtt: 0,
            hops: 0,
            fabric,
            endpoint,
            retransmit_count: 0,
            srtt: None,
            last_rtt: None,
            target: 0.0,
            cwnd_set: 0,
            rate_set: 0,
        }
    }

    /// Fabric window, packets.
    pub fn fcwnd(&self) -> f64 {
        self.fabric.cwnd
    }

    /// Endpoint window, packets.
    pub fn ecwnd(&self) -> f64 {
        self.endpoint.cwnd
    }

    /// Effective window `min(fcwnd, ecwnd)`, packets.
    pub fn cwnd(&self) -> f64 {
        self.fabric.cwnd.min(self.endpoint.cwnd)
    }

    /// The fabric target delay of the last ACK (at start: for the initial window), picoseconds.
    pub fn target_delay(&self) -> f64 {
        self.target
    }

    /// Consecutive retransmission timeouts.
    pub fn retransmit_count(&self) -> u32 {
        self.retransmit_count
    }

    /// The smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }

    fn smooth(&mut self, rtt: Time) {
        let w = self.config.rtt_smoothing;
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (w * s as f64 + (1.0 - w) * rtt as f64).round() as Time,
        });
    }

    /// The RTT used for pacing and for `can_decrease` on losses.
    fn rtt_estimate(&self) -> Time {
        self.srtt.unwrap_or(self.base_rtt).max(1)
    }

    /// `cwnd` packets per `srtt` of wire bytes, bit/s.
    fn pacing_rate(&self, cwnd: f64) -> Rate {
        let bits = cwnd * self.wire_bytes * 8.0;
        ((bits * PS_PER_S as f64 / self.rtt_estimate() as f64).round() as Rate).clamp(1, self.line_rate.max(1))
    }

    /// Publishes the effective window (bytes) and the rate, where changed.
    fn apply(&mut self, ctx: &mut Ctx) {
        let cwnd = self.cwnd();
        let bytes = ((cwnd * self.mss).round() as u64).max(1);
        if bytes != self.cwnd_set {
            self.cwnd_set = bytes;
            ctx.set_cwnd(bytes);
        }
        let rate = if cwnd < 1.0 { self.pacing_rate(cwnd) } else { self.line_rate };
        if rate != self.rate_set {
            self.rate_set = rate;
            ctx.set_rate(rate);
        }
    }

    /// `fcwnd *= 1 - max_mdf` if the fabric window may decrease (loss reactions).
    fn loss_cut(&mut self, now: Time) {
        if self.fabric.can_decrease(now, self.rtt_estimate()) {
            self.fabric.set(self.fabric.cwnd * (1.0 - self.config.max_mdf), now);
        }
    }
}

impl CongestionControl for Swift {
    fn name(&self) -> &'static str {
        "swift"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Swift::new(self.config.clone());
        self.mss = flow.mss.max(1) as f64;
        self.wire_bytes = self.mss + flow.header_bytes as f64;
        self.line_rate = flow.line_rate;
        self.base_rtt = flow.base_rtt;
        self.hops = flow.hops;
        let c = &self.config;
        let init = c.init_cwnd.unwrap_or(flow.bdp() as f64 / self.mss);
        self.fabric = Window::new(init, c.min_cwnd, c.max_cwnd);
        self.endpoint = Window::new(init, c.min_ecwnd, c.max_cwnd);
        self.target = c.target_delay(self.fabric.cwnd, self.hops);
        self.apply(ctx);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        self.retransmit_count = 0;
        let Some(rtt) = ack.rtt else {
            return;
        };
        self.smooth(rtt);
        self.last_rtt = Some(rtt);
        let remote = ack.remote_delay.unwrap_or(0).min(rtt);
        let acked = ack.acked_bytes as f64 / self.mss;
        let now = ctx.now();
        self.target = self.config.target_delay(self.fabric.cwnd, self.hops);
        let fabric_delay = (rtt - remote) as f64;
        self.fabric.on_delay(fabric_delay, self.target, acked, rtt, now, &self.config);
        let endpoint_target = self.config.endpoint_target as f64;
        self.endpoint.on_delay(remote as f64, endpoint_target, acked, rtt, now, &self.config);
        self.apply(ctx);
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        let now = ctx.now();
        match loss.kind {
            LossKind::FastRetransmit | LossKind::Nack => {
                self.retransmit_count = 0;
                self.loss_cut(now);
            }
            LossKind::Timeout => {
                self.retransmit_count = self.retransmit_count.saturating_add(1);
                if self.retransmit_count >= self.config.retx_reset_threshold {
                    self.fabric.set(self.config.min_cwnd, now);
                } else {
                    self.loss_cut(now);
                }
            }
        }
        self.apply(ctx);
    }

    /// Per ACK (Algorithm 1 reacts to every ACK's delay), losses urgent.
    fn report_policy(&self) -> ReportPolicy {
        ReportPolicy::default()
    }

    /// `fcwnd` and `ecwnd` in packets, `target_delay` (fabric) and the latest `rtt` sample in picoseconds
    /// (0 before the first).
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("fcwnd", self.fabric.cwnd);
        out("ecwnd", self.endpoint.cwnd);
        out("target_delay_ns", self.target / PS_PER_NS as f64);
        out("rtt_ns", self.last_rtt.unwrap_or(0) as f64 / PS_PER_NS as f64);
    }
}
