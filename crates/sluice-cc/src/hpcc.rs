//! `hpcc`: HPCC, High Precision Congestion Control (Li et al., SIGCOMM 2019, Algorithm 1).
//!
//! Window-based with pacing. Every switch on a data packet's path stamps an INT record at dequeue
//! (timestamp, cumulative bytes its egress port transmitted, queue length, link rate) and the ACK echoes
//! the records. From two consecutive records of one hop the sender knows that link's utilization, queue
//! included, and sets its window so that the bottleneck runs at the target utilization `eta`.
//!
//! State: the window `W`, the reference window `Wc`, the utilization estimate `U`, the additive-increase
//! stage `incStage`, `lastUpdateSeq`, and the last INT record `L[i]` of every hop. `T` is the base RTT.
//!
//! Per ACK carrying INT:
//! 1. **MeasureInflight.** For each hop `i`, against the stored record `L[i]`:
//!    `txRate = (txBytes_i - L[i].txBytes) * 8 / (ts_i - L[i].ts)` and
//!    `u' = min(qlen_i, L[i].qlen) * 8 / (B_i T) + txRate / B_i` (`B_i` the hop's link rate). The hop with
//!    the largest `u'` gives `u'` and `tau = ts_i - L[i].ts`; `tau = min(tau, T)`;
//!    `U = (1 - tau/T) U + (tau/T) u'`; then `L = ack.L`.
//! 2. **ComputeWind(U, updateWc).** If `U >= eta` or `incStage >= maxStage`: `W = Wc / (U/eta) + W_AI`
//!    (multiplicative), and on an update `incStage = 0, Wc = W`. Otherwise `W = Wc + W_AI` (additive), and on
//!    an update `incStage += 1, Wc = W`.
//! 3. **NewAck.** If `snd_una > lastUpdateSeq`, the ACK covers data sent after the last reference update:
//!    ComputeWind with `updateWc`, then `lastUpdateSeq = snd_nxt` (once per RTT). Otherwise ComputeWind
//!    without `updateWc`: the per-ACK fast reaction, always from `Wc`, which stays put within the RTT.
//!    The pacing rate is `R = W / T`.
//!
//! Choices where Algorithm 1 is silent, following the HPCC artifact (alibaba-edu/High-Precision-Congestion-Control,
//! `rdma-hw.cc` `HandleAckHp`/`UpdateRateHp`, `rdma-queue-pair.cc`, settings from `run.py`) unless said:
//! - The first ACK with INT only stores the records and sets `lastUpdateSeq = snd_nxt` (artifact's
//!   first-RTT branch). `U` starts at 1 (artifact `hp.u = 1`), `W = Wc = W_init = C T`.
//! - "Passes" is strict: `snd_una > lastUpdateSeq` (artifact `ack_seq > m_lastUpdateSeq` with the
//!   cumulative ACK; the paper's `ack.seq > lastUpdateSeq`). `lastUpdateSeq` never moves back.
//! - The bottleneck hop is the one with the largest `u'`, the first of equals, so `tau` is set even when every
//!   hop reports `u' = 0`. (The artifact's strict `u > U` from `U = 0` leaves its `dt = 0` then, so an idle
//!   path would never lower `U`.)
//! - A hop whose record is not newer than the stored one (`ts_i <= L[i].ts`: a duplicate or reordered ACK)
//!   gives no sample and its stored record is kept; a hop reporting link rate 0 gives no sample. An ACK with
//!   no fresh sample on any hop changes nothing (no window, no `lastUpdateSeq`): reacting twice to the same
//!   information would count it twice. (The artifact divides by a zero time delta there.) A port counter
//!   that went backwards counts as 0 bytes.
//! - A changed path (another number of hops, or some hop reporting another link rate) makes the ACK's
//!   records the new baseline, as on the first ACK, without a reaction. An ACK without INT is ignored.
//! - The window is clamped to `[one full packet on the wire, C T]`. `C T` is `W_init` and the artifact's
//!   ceiling too (with `VAR_WIN` its window is `maxBdp R / C` with `R <= C`); without it an idle path
//!   (`U` near 0) would make `Wc / (U/eta)` unbounded. The floor keeps one packet in flight; the
//!   artifact instead floors its rate at `MIN_RATE` (1 Gb/s).
//! - With `fast_react = false`, ACKs that do not pass `lastUpdateSeq` are ignored entirely, INT included,
//!   so the reference update measures over the whole RTT (artifact `FAST_REACT 0`).
//!
//! Units: `W`, `Wc`, `W_AI` and `C T` are wire bytes (INT counts wire bytes; the pacing rate is a wire
//! rate), so `R = 8 W / T` bit/s, capped at the line rate. The datapath counts payload bytes in flight, so
//! the window it gets is `W mss / (mss + header_bytes)`, rounded, at least one `mss`. (The artifact
//! compares payload in flight with a wire-byte window, a few percent looser.)
//!
//! The artifact's rate-based form (`R = Rc / (U/eta) + R_AI`, window `maxBdp R / C`) is this window form
//! scaled by `8 / T`, with `R_AI = 8 W_AI / T`, so no separate variant exists. What remains different there:
//! `T` is the largest base RTT of the topology (`GLOBAL_T 1`; set `t` here for that), `run.py` uses
//! `MI_THRESH 0` (`max_stage = 0`: always the multiplicative branch), the rate floor above, and INT
//! fields quantized to hardware widths (a datapath matter). `multi_hop_max = false` is the artifact's
//! `MULTI_RATE 1`: one `U`, `Wc` and `incStage` per hop, and the smallest per-hop window wins.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_S};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, IntHop, Needs};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// HPCC parameters (`[cc.params]` of a scenario with `cc.algorithm = "hpcc"`). See
/// [`HpccConfig::for_line_rate`] for the defaults and their sources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HpccConfig {
    /// Target utilization `eta` of the bottleneck link, in (0, 1].
    pub eta: f64,
    /// Additive-increase rounds before a multiplicative step when below `eta` (`maxStage`).
    pub max_stage: u32,
    /// Additive increase as a rate: `W_AI = rate_ai T / 8` bytes, unless `w_ai` is given.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_ai: Rate,
    /// Additive increase `W_AI` in bytes, replacing `rate_ai` (give one or the other).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_size")]
    pub w_ai: Option<u64>,
    /// Base RTT `T`; absent means the flow's own base RTT.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_duration")]
    pub t: Option<Time>,
    /// React on every ACK from the reference window (fast reaction); otherwise only once per RTT.
    pub fast_react: bool,
    /// Take the most utilized hop into one `U`; otherwise keep one `U`, `Wc`, `incStage` per hop and use
    /// the smallest per-hop window.
    pub multi_hop_max: bool,
}

impl HpccConfig {
    /// The defaults for a host whose NIC runs at `line_rate`.
    ///
    /// - `eta = 0.95`: the paper and the artifact's `run.py` (`U_TARGET 0.95`).
    /// - `max_stage = 5`: the paper and the artifact's `MiThresh` attribute default (its `run.py` uses 0,
    ///   see the module documentation).
    /// - `rate_ai = 10 Mb/s` per 25 Gb/s of line rate (40 Mb/s at 100G): the artifact's `run.py`
    ///   (`ai = 10 * bw / 25`), converted to a window `W_AI = rate_ai T / 8` (50 bytes at 100G and 10 us).
    ///   The paper's guidance is that the AI of all `N` flows sharing a link stay below `(1 - eta) BDP`; at
    ///   any line rate this default allows `N < (1 - eta) C / rate_ai = 125` flows.
    /// - `w_ai` absent (use `rate_ai`); `t` absent (the flow's base RTT, the paper's `T`).
    /// - `fast_react = true`: the paper (per-ACK reaction) and `run.py` (`FAST_REACT 1`).
    /// - `multi_hop_max = true`: the paper (max over hops) and `run.py` (`MULTI_RATE 0`).
    pub fn for_line_rate(line_rate: Rate) -> HpccConfig {
        HpccConfig {
            eta: 0.95,
            max_stage: 5,
            rate_ai: (10_000_000u128 * line_rate as u128 / 25_000_000_000) as Rate,
            w_ai: None,
            t: None,
            fast_react: true,
            multi_hop_max: true,
        }
    }

    /// Overlays `[cc.params]` on the defaults for `line_rate` and checks them.
    pub fn resolve(params: &toml::Table, line_rate: Rate) -> Result<HpccConfig, ParamError> {
        if params.contains_key("w_ai") && params.contains_key("rate_ai") {
            let message = "give either `w_ai` (bytes) or `rate_ai`, not both".to_string();
            return Err(ParamError { key: Some("w_ai".into()), message });
        }
        let config = merge_params(&HpccConfig::for_line_rate(line_rate), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.eta > 0.0 && self.eta <= 1.0) {
            return err("eta", "must be in (0, 1]");
        }
        if self.t == Some(0) {
            return err("t", "must be positive");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "hpcc",
    summary: "HPCC (Li et al. SIGCOMM'19): INT-measured link utilization sets a window W and pacing rate W/T",
    control: Control::WindowAndRate,
    needs: Needs { int: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = HpccConfig::resolve(params, line_rate)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Hpcc::new(c.clone())), cnp_interval: None }))
}

/// What the controller keeps per hop of the path.
#[derive(Debug, Clone, Copy)]
struct HopState {
    /// The last INT record `L[i]`.
    last: IntHop,
    /// This ACK's sample of the hop: `(u', tau)`, if it had a fresh one.
    sample: Option<(f64, Time)>,
    /// Per-hop mode: the hop's utilization estimate.
    u: f64,
    /// Per-hop mode: the hop's reference window.
    wc: f64,
    /// Per-hop mode: the hop's additive-increase stage.
    inc_stage: u32,
}

/// The HPCC controller of one flow. Window quantities are wire bytes (see the module documentation).
#[derive(Debug, Clone)]
pub struct Hpcc {
    config: HpccConfig,
    /// `T` in picoseconds (at least 1).
    t: Time,
    line_rate: Rate,
    mss: u64,
    header: u64,
    w_ai: f64,
    w_min: f64,
    w_max: f64,
    w: f64,
    wc: f64,
    u: f64,
    inc_stage: u32,
    last_update_seq: u64,
    /// Empty until the first ACK with INT.
    hops: Vec<HopState>,
    cwnd: u64,
    rate: Rate,
}

impl Hpcc {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: HpccConfig) -> Hpcc {
        Hpcc {
            config,
            t: 1,
            line_rate: 0,
            mss: 1,
            header: 0,
            w_ai: 0.0,
            w_min: 1.0,
            w_max: 1.0,
            w: 0.0,
            wc: 0.0,
            u: 1.0,
            inc_stage: 0,
            last_update_seq: 0,
            hops: Vec::new(),
            cwnd: 0,
            rate: 0,
        }
    }

    /// The window `W` in wire bytes.
    pub fn window(&self) -> f64 {
        self.w
    }

    /// The reference window `Wc` in wire bytes (per-hop mode: the smallest per-hop one).
    pub fn reference_window(&self) -> f64 {
        self.wc
    }

    /// The utilization estimate `U` (per-hop mode: the largest per-hop one).
    pub fn utilization(&self) -> f64 {
        self.u
    }

    /// The additive-increase stage `incStage` (per-hop mode: that of the hop with the smallest `Wc`).
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }

    /// `lastUpdateSeq`: the next reference update comes with the first ACK past it.
    pub fn last_update_seq(&self) -> u64 {
        self.last_update_seq
    }

    /// The window handed to the datapath, in payload bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The pacing rate `8 W / T` in bit/s, capped at the line rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The additive increase `W_AI` of this flow, in wire bytes.
    pub fn w_ai(&self) -> f64 {
        self.w_ai
    }

    fn t_f64(&self) -> f64 {
        self.t as f64
    }

    /// Bytes sent at `rate` in `T`.
    fn bytes_in_t(&self, rate: Rate) -> f64 {
        rate as f64 * self.t_f64() / (8 * PS_PER_S) as f64
    }

    fn clamp(&self, w: f64) -> f64 {
        w.min(self.w_max).max(self.w_min)
    }

    /// ComputeWind: the window for `u` from reference `wc` at `stage`, and the stage an update would set.
    fn compute_wind(&self, u: f64, wc: f64, stage: u32) -> (f64, u32) {
        let eta = self.config.eta;
        if u >= eta || stage >= self.config.max_stage {
            let scaled = if u > 0.0 { wc / (u / eta) } else { f64::INFINITY };
            (self.clamp(scaled + self.w_ai), 0)
        } else {
            (self.clamp(wc + self.w_ai), stage.saturating_add(1))
        }
    }

    /// Whether the ACK's records describe another path than the stored ones.
    fn path_changed(&self, int: &[IntHop]) -> bool {
        int.len() != self.hops.len() || int.iter().zip(&self.hops).any(|(new, old)| new.rate != old.last.rate)
    }

    /// Makes `int` the baseline; per-hop estimates start from the flow's.
    fn store(&mut self, int: &[IntHop]) {
        let (u, wc) = (self.u, self.wc);
        self.hops.clear();
        self.hops.extend(int.iter().map(|&last| HopState { last, sample: None, u, wc, inc_stage: 0 }));
    }

    /// Samples every hop against its stored record and stores the fresh records; whether any was fresh.
    fn sample_hops(&mut self, int: &[IntHop]) -> bool {
        let t = self.t_f64();
        let mut fresh = false;
        for (hop, now) in self.hops.iter_mut().zip(int) {
            hop.sample = sample(&hop.last, now, t);
            if hop.sample.is_some() {
                hop.last = *now;
                fresh = true;
            }
        }
        fresh
    }

    /// MeasureInflight over the most utilized hop.
    fn measure_max(&mut self) {
        let samples = self.hops.iter().filter_map(|h| h.sample);
        let best = samples.reduce(|best, s| if s.0 > best.0 { s } else { best });
        if let Some((u, tau)) = best {
            self.u = ewma(self.u, u, tau, self.t);
        }
    }

    /// Both modes' reaction to one ACK with fresh samples.
    fn react(&mut self, update: bool) {
        if self.config.multi_hop_max {
            self.measure_max();
            let (w, stage) = self.compute_wind(self.u, self.wc, self.inc_stage);
            self.w = w;
            if update {
                self.wc = w;
                self.inc_stage = stage;
            }
        } else {
            self.react_per_hop(update);
        }
    }

    /// The artifact's `MULTI_RATE` mode: per-hop estimates and windows, the smallest window wins.
    fn react_per_hop(&mut self, update: bool) {
        let mut w = f64::INFINITY;
        for i in 0..self.hops.len() {
            let hop = self.hops[i];
            let Some((u, tau)) = hop.sample else {
                w = w.min(hop.wc);
                continue;
            };
            let u = ewma(hop.u, u, tau, self.t);
            let (w_i, stage) = self.compute_wind(u, hop.wc, hop.inc_stage);
            w = w.min(w_i);
            let hop = &mut self.hops[i];
            hop.u = u;
            if update {
                hop.wc = w_i;
                hop.inc_stage = stage;
            }
        }
        self.w = w;
        self.summarize_hops();
    }

    /// Flow-level `U`, `Wc` and `incStage` from the per-hop ones (for the trace).
    fn summarize_hops(&mut self) {
        self.u = self.hops.iter().map(|h| h.u).fold(0.0, f64::max);
        if let Some(min) = self.hops.iter().min_by(|a, b| a.wc.total_cmp(&b.wc)) {
            self.wc = min.wc;
            self.inc_stage = min.inc_stage;
        }
    }

    /// Publishes the window and rate when they changed.
    fn publish(&mut self, ctx: &mut Ctx) {
        let cwnd = ((self.w * self.mss as f64 / (self.mss + self.header) as f64).round() as u64).max(self.mss);
        if cwnd != self.cwnd {
            self.cwnd = cwnd;
            ctx.set_cwnd(cwnd);
        }
        let rate = ((self.w * 8.0 * PS_PER_S as f64 / self.t_f64()).round() as Rate).min(self.line_rate);
        if rate != self.rate {
            self.rate = rate;
            ctx.set_rate(rate);
        }
    }
}

/// One hop's `(u', tau)` against its stored record, `None` without a positive time delta or link rate.
/// `t` is `T` in picoseconds.
fn sample(last: &IntHop, now: &IntHop, t: f64) -> Option<(f64, Time)> {
    if now.ts <= last.ts || now.rate == 0 {
        return None;
    }
    let tau = now.ts - last.ts;
    let ps = PS_PER_S as f64;
    let tx_rate = now.tx_bytes.saturating_sub(last.tx_bytes) as f64 * 8.0 * ps / tau as f64;
    let queue_rate = now.qlen.min(last.qlen) as f64 * 8.0 * ps / t;
    Some(((queue_rate + tx_rate) / now.rate as f64, tau))
}

/// `U = (1 - tau/T) U + (tau/T) u'` with `tau` capped at `T`.
fn ewma(u: f64, sample: f64, tau: Time, t: Time) -> f64 {
    let weight = tau.min(t) as f64 / t as f64;
    (1.0 - weight) * u + weight * sample
}

impl CongestionControl for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }

    fn events(&self) -> Events {
        Events::ACK
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Hpcc::new(self.config.clone());
        self.t = self.config.t.unwrap_or(flow.base_rtt).max(1);
        self.line_rate = flow.line_rate;
        self.mss = flow.mss.max(1) as u64;
        self.header = flow.header_bytes as u64;
        self.w_ai = self.config.w_ai.map_or_else(|| self.bytes_in_t(self.config.rate_ai), |w| w as f64);
        self.w_min = (self.mss + self.header) as f64;
        self.w_max = self.bytes_in_t(flow.line_rate);
        self.w = self.clamp(self.w_max);
        self.wc = self.w;
        self.publish(ctx);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        if ack.int.is_empty() {
            return;
        }
        let update = ack.snd_una > self.last_update_seq;
        if !update && !self.config.fast_react {
            return;
        }
        if self.hops.is_empty() {
            self.store(ack.int);
            self.last_update_seq = ack.snd_nxt;
            return;
        }
        if self.path_changed(ack.int) {
            self.store(ack.int);
            return;
        }
        if !self.sample_hops(ack.int) {
            return;
        }
        self.react(update);
        if update {
            self.last_update_seq = self.last_update_seq.max(ack.snd_nxt);
        }
        self.publish(ctx);
    }

    /// `window` and `reference_window` (`W`, `Wc`, wire bytes), `utilization` (`U`), `inc_stage`.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("window", self.w);
        out("reference_window", self.wc);
        out("utilization", self.u);
        out("inc_stage", self.inc_stage as f64);
    }
}
