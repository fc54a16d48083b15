//! `dcqcn`: DCQCN (Zhu et al., SIGCOMM 2015), the rate-based congestion control of RoCEv2 NICs.
//!
//! Switches mark ECN (RED); the receiver (notification point, NP) turns marks into congestion notification
//! packets (CNPs); the sender (reaction point, RP, this controller) keeps a current rate `Rc`, a target rate
//! `Rt` and a congestion estimate `alpha`. Flows start at line rate and nothing runs until the first CNP.
//! Two variants (`variant` parameter):
//!
//! **`paper`**: the rules of the paper.
//! - On a CNP: `Rt = Rc`; `Rc = max(Rmin, Rc (1 - alpha/2))`; `alpha = (1-g) alpha + g`; the timer count
//!   `T`, byte count `BC` and byte counter are reset and both periods restart.
//! - Alpha decay, every `alpha_interval` = K since the last CNP: `alpha = (1-g) alpha`.
//! - Rate-increase events: the increase timer ([`INCREASE_TIMER`], every `increase_interval` = Ti) does
//!   `T += 1`; every `byte_counter` (B) bytes sent does `BC += 1`. Each event then, with the counts after
//!   the increment: if `max(T, BC) < F` fast recovery; else if `min(T, BC) > F` hyper increase
//!   `Rt += (min(T, BC) - F) R_HAI`; else additive increase `Rt += R_AI`; and in all cases
//!   `Rc = (Rt + Rc) / 2`.
//! - With `clamp_target_rate = false` a CNP sets `Rt = Rc` only if an increase event came since the
//!   previous CNP. The byte counter counts every byte handed to the wire (retransmissions too) and
//!   restarts from zero at each expiry.
//!
//! **`hpcc`**: the "Mlx" version of the HPCC artifact (alibaba-edu/High-Precision-Congestion-Control,
//! `rdma-hw.cc`, settings from its `run.py`). No byte counter; CNPs only set flags.
//! - First CNP: `alpha = 1`, `Rt = Rc`; alpha updates fall every `alpha_interval` from then, and decrease
//!   checks every `rate_decrease_interval` from `rate_decrease_interval` + 1 ns on (the artifact's offset
//!   so that a check falling on an alpha update runs after it).
//! - Alpha update: `alpha = (1-g) alpha + g` if a CNP arrived since the last update, else `(1-g) alpha`.
//! - Decrease check: if a CNP arrived since the last check, `Rt = Rc` only when `clamp_target_rate` or
//!   `stage > 0`, `Rc = max(Rmin, Rc (1 - alpha/2))`, `stage = 0`, and the increase timer restarts
//!   (now + `increase_interval`).
//! - Increase timer: `stage < F` fast recovery; `stage == F` additive (`Rt += R_AI`); `stage > F` hyper
//!   (`Rt += R_HAI`, once, not `i R_HAI`); `Rc = (Rt + Rc) / 2`; then `stage += 1`.
//!
//! Rates are integer bit/s: `Rt` is clamped to the line rate, averages round down, and the cut
//! `Rc (1 - alpha/2)` is computed in `f64` once per cut and truncated. `alpha` is an `f64` EWMA.
//!
//! **Events, not ticks.** A NIC updates alpha every period (1 us in the artifact) and checks for a cut
//! every 4 us, whether or not anything happened. Only a cut reads alpha, and a check without a CNP does
//! nothing, so this controller keeps no timer for either: alpha is brought up to date, one update per
//! elapsed period with the same arithmetic, when a CNP comes or a cut reads it, and a decrease check
//! ([`DECREASE_TIMER`]) is armed only for a period that had a CNP, at that period's end on the checks'
//! grid. At every CNP and cut the controller's state is what ticking timers would have made it. What
//! changes is the cost: a flow that has seen a CNP no longer costs one event per microsecond for the
//! rest of its life (in the simulator), and a user-space host loop no longer spins on 1 us timers (on
//! the UDP datapath, four DCQCN senders took 17 CPU seconds for 14 s of traffic, seven times DCTCP's,
//! and starved a 2-core bed). The simulator's results moved slightly all the same, because each timer
//! firing used to re-run its host's send loop: ws128's mean slowdown went from 1.805 to 1.814 and its
//! p99 from 5.93 to 5.57, fat320's mean from 1.598 to 1.591. `alpha` as traced is the value the last
//! CNP or cut brought up to date.
//!
//! The increase timer stands for a periodic clock too ([`Periodic`]): fired late, as a user-space host
//! loop fires it, it applies every period that ended meanwhile and re-arms on the period grid.
//!
//! CNP generation is the receiver's job: [`cnp_interval`] gives the datapath the interval to use.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_US};

use crate::api::{CongestionControl, Ctx, Events, FlowInfo, Needs, Sent, TimerId};
use crate::periodic::Periodic;
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// The rate-increase timer (paper: Ti; hpcc: the RP timer).
pub const INCREASE_TIMER: TimerId = TimerId(1);
/// The rate-decrease check of a period that had a CNP (hpcc only).
pub const DECREASE_TIMER: TimerId = TimerId(2);

/// Which DCQCN rule set runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DcqcnVariant {
    /// Zhu et al. SIGCOMM'15: byte counter and timer, immediate cut on each CNP.
    Paper,
    /// The HPCC artifact's "Mlx" version: periodic alpha update and decrease check, timer-only increase.
    /// The default, with the artifact's `run.py --cc dcqcn` settings.
    #[default]
    Hpcc,
}

/// DCQCN parameters (`[cc.params]` with `cc.algorithm = "dcqcn"`). Defaults depend on `variant` and on the
/// host line rate; see [`DcqcnConfig::for_line_rate`], where each default cites its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcqcnConfig {
    /// The rule set: `"paper"` or `"hpcc"` (default).
    pub variant: DcqcnVariant,
    /// EWMA gain `g` of alpha, in (0, 1].
    pub g: f64,
    /// Alpha update period (paper: K, the no-CNP decay interval; hpcc: `ALPHA_RESUME_INTERVAL`).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub alpha_interval: Time,
    /// Rate-increase timer period (paper: Ti; hpcc: `RP_TIMER`).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub increase_interval: Time,
    /// Period of the rate-decrease check (`RATE_DECREASE_INTERVAL`); hpcc only.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_duration")]
    pub rate_decrease_interval: Option<Time>,
    /// Bytes sent per byte-counter event (B); paper only.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_size")]
    pub byte_counter: Option<u64>,
    /// Fast-recovery stages F (`FAST_RECOVERY_TIMES`).
    pub fast_recovery_stages: u32,
    /// Additive-increase step R_AI.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_ai: Rate,
    /// Hyper-increase step R_HAI.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_hai: Rate,
    /// Floor of the current rate, Rmin (capped at the line rate).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub min_rate: Rate,
    /// Set `Rt = Rc` on every cut; when false, only on cuts after a rate increase since the previous cut
    /// (`CLAMP_TARGET_RATE`).
    pub clamp_target_rate: bool,
    /// Receiver side: the least time between two CNPs to one flow; 0 sends one on every ACK of a marked
    /// packet. Read by the datapath through [`cnp_interval`].
    #[serde(with = "sluice_core::serde_units::duration")]
    pub cnp_interval: Time,
    /// Also cap the window at the flow's bandwidth-delay product (the HPCC artifact's `HAS_WIN`, there with
    /// the largest BDP of the topology; here the flow's own); otherwise the window is unlimited.
    pub window_bdp: bool,
}

/// `run.py RATE_DECREASE_INTERVAL 4` (us).
const HPCC_RATE_DECREASE_INTERVAL: Time = 4 * PS_PER_US;

const HPCC_ONLY: &[&str] = &["rate_decrease_interval"];
const PAPER_ONLY: &[&str] = &["byte_counter"];

impl DcqcnConfig {
    /// The defaults of `variant` for a host whose NIC runs at `line_rate`; each value cites its source.
    ///
    /// `hpcc` follows the HPCC artifact's `run.py` for `--cc dcqcn` (its rates scale as `x bw/25G`:
    /// R_AI 20 Mb/s and R_HAI 200 Mb/s at 100G). `paper` takes the parameters of Zhu et al. (SIGCOMM'15,
    /// from a 40G testbed), filled in from the authors' ns-3 code (bobzhuyb/ns3-rdma) where the paper
    /// gives none; they are absolute and do not scale with `line_rate`.
    pub fn for_line_rate(variant: DcqcnVariant, line_rate: Rate) -> DcqcnConfig {
        match variant {
            DcqcnVariant::Hpcc => Self::hpcc_defaults(line_rate),
            DcqcnVariant::Paper => Self::paper_defaults(),
        }
    }

    fn hpcc_defaults(line_rate: Rate) -> DcqcnConfig {
        DcqcnConfig {
            variant: DcqcnVariant::Hpcc,
            g: 1.0 / 256.0,                     // run.py EWMA_GAIN 0.00390625
            alpha_interval: PS_PER_US,          // run.py ALPHA_RESUME_INTERVAL 1 (us)
            increase_interval: 300 * PS_PER_US, // run.py RP_TIMER 300 (us)
            rate_decrease_interval: Some(HPCC_RATE_DECREASE_INTERVAL),
            byte_counter: None,                     // the Mlx version has no byte counter
            fast_recovery_stages: 1,                // run.py FAST_RECOVERY_TIMES 1
            rate_ai: scale(5_000_000, line_rate),   // run.py RATE_AI 5 Mb/s x bw/25
            rate_hai: scale(50_000_000, line_rate), // run.py RATE_HAI 50 Mb/s x bw/25
            min_rate: 1_000_000_000,                // run.py MIN_RATE 1000Mb/s
            clamp_target_rate: false,               // run.py CLAMP_TARGET_RATE 0
            cnp_interval: 0,                        // rdma-hw.cc ReceiveUdp: CNP flag on every ACK of a marked packet
            window_bdp: false,                      // run.py HAS_WIN 0 for dcqcn
        }
    }

    fn paper_defaults() -> DcqcnConfig {
        DcqcnConfig {
            variant: DcqcnVariant::Paper,
            g: 1.0 / 256.0,                    // paper: g = 1/256
            alpha_interval: 55 * PS_PER_US,    // paper: K = 55 us
            increase_interval: 55 * PS_PER_US, // paper: timer T = 55 us
            rate_decrease_interval: None,      // the paper cuts on each CNP
            byte_counter: Some(10_000_000),    // paper: B = 10 MB
            fast_recovery_stages: 5,           // paper: F = 5
            rate_ai: 40_000_000,               // paper: R_AI = 40 Mb/s
            rate_hai: 200_000_000,             // authors' ns-3 mix/config.txt RATE_HAI (uet-htsim: C/10)
            min_rate: 100_000_000,             // authors' ns-3 qbb-net-device.cc MinRate default
            clamp_target_rate: true,           // paper: Rt = Rc on every CNP (ns-3 CLAMP_TARGET_RATE 1)
            cnp_interval: 50 * PS_PER_US,      // paper: NP sends at most one CNP per N = 50 us
            window_bdp: false,                 // the paper has no window
        }
    }

    /// Reads `variant` from `params` (default `hpcc`), takes that variant's defaults for `line_rate`,
    /// overlays the other parameters and checks them.
    pub fn resolve(params: &toml::Table, line_rate: Rate) -> Result<DcqcnConfig, ParamError> {
        let variant = variant_of(params)?;
        let exclusive = match variant {
            DcqcnVariant::Hpcc => PAPER_ONLY,
            DcqcnVariant::Paper => HPCC_ONLY,
        };
        if let Some(key) = exclusive.iter().find(|k| params.contains_key(**k)) {
            let message = format!("not used by variant \"{}\"", variant_name(variant));
            return Err(ParamError { key: Some(key.to_string()), message });
        }
        let config = merge_params(&DcqcnConfig::for_line_rate(variant, line_rate), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges, and that each variant has its own settings (`resolve` does this; a config built
    /// in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        match self.variant {
            DcqcnVariant::Hpcc if self.rate_decrease_interval.is_none() => {
                return err("rate_decrease_interval", "required by variant \"hpcc\"");
            }
            DcqcnVariant::Paper if self.byte_counter.is_none() => {
                return err("byte_counter", "required by variant \"paper\"");
            }
            _ => {}
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return err("g", "must be in (0, 1]");
        }
        if self.alpha_interval == 0 {
            return err("alpha_interval", "must be positive");
        }
        if self.increase_interval == 0 {
            return err("increase_interval", "must be positive");
        }
        if self.rate_decrease_interval == Some(0) {
            return err("rate_decrease_interval", "must be positive");
        }
        if self.byte_counter == Some(0) {
            return err("byte_counter", "must be positive");
        }
        if self.min_rate == 0 {
            return err("min_rate", "must be positive");
        }
        Ok(())
    }
}

/// `base` per 25 Gb/s of `line_rate` (the HPCC artifact's `x bw / 25` scaling), in bit/s.
fn scale(base: Rate, line_rate: Rate) -> Rate {
    (base as u128 * line_rate as u128 / 25_000_000_000) as Rate
}

fn variant_name(variant: DcqcnVariant) -> &'static str {
    match variant {
        DcqcnVariant::Paper => "paper",
        DcqcnVariant::Hpcc => "hpcc",
    }
}

fn variant_of(params: &toml::Table) -> Result<DcqcnVariant, ParamError> {
    match params.get("variant") {
        None => Ok(DcqcnVariant::default()),
        Some(value) => value
            .clone()
            .try_into::<DcqcnVariant>()
            .map_err(|e| ParamError { key: Some("variant".into()), message: e.message().to_string() }),
    }
}

/// The receiver's CNP interval for DCQCN flows with these parameters: at most one CNP per flow per
/// interval, 0 for a CNP on every ACK of a marked packet. The datapath's receiver reads it with the same
/// `[cc.params]` and line rate it gives [`ALGORITHM`]'s `build`, so both sides see one resolved config.
pub fn cnp_interval(params: &toml::Table, line_rate: Rate) -> Result<Time, ParamError> {
    DcqcnConfig::resolve(params, line_rate).map(|c| c.cnp_interval)
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "dcqcn",
    summary: "DCQCN (Zhu et al. SIGCOMM'15): CNP-driven rate control; variants \"hpcc\" (default) and \"paper\"",
    control: Control::Rate,
    needs: Needs { ecn: true, cnp: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = DcqcnConfig::resolve(params, line_rate)?;
    Ok(Arc::new(ConfigFactory {
        config,
        make: |c, _| Box::new(Dcqcn::new(c.clone())),
        cnp_interval: Some(|c| c.cnp_interval),
    }))
}

/// The DCQCN reaction point of one flow.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    config: DcqcnConfig,
    line_rate: Rate,
    min_rate: Rate,
    rc: Rate,
    rt: Rate,
    alpha: f64,
    /// The alpha update `alpha` is current to: the next falls `alpha_interval` after it.
    alpha_at: Time,
    /// A CNP has arrived; alpha and the timers run.
    started: bool,
    /// hpcc: a CNP arrived since the last alpha update.
    alpha_cnp: bool,
    /// hpcc: a CNP arrived since the last decrease check.
    decrease_cnp: bool,
    /// hpcc: a decrease check is armed.
    check_armed: bool,
    /// hpcc: rate-increase events since the last cut.
    stage: u32,
    /// paper: increase-timer expiries since the last CNP (T).
    timer_count: u32,
    /// paper: byte-counter expiries since the last CNP (BC).
    byte_count_stage: u32,
    /// paper: bytes sent since the last byte-counter expiry.
    bytes_sent: u64,
    /// The rate-increase timer's period grid.
    increase_timer: Periodic,
    /// hpcc: the decrease checks' period grid.
    decrease_timer: Periodic,
}

impl Dcqcn {
    /// A controller with `config`; rates are set up by [`CongestionControl::on_start`].
    pub fn new(config: DcqcnConfig) -> Dcqcn {
        Dcqcn {
            config,
            line_rate: 0,
            min_rate: 0,
            rc: 0,
            rt: 0,
            alpha: 1.0,
            alpha_at: 0,
            started: false,
            alpha_cnp: false,
            decrease_cnp: false,
            check_armed: false,
            stage: 0,
            timer_count: 0,
            byte_count_stage: 0,
            bytes_sent: 0,
            increase_timer: Periodic::default(),
            decrease_timer: Periodic::default(),
        }
    }

    /// Current rate Rc (bit/s).
    pub fn rate(&self) -> Rate {
        self.rc
    }

    /// Target rate Rt (bit/s).
    pub fn target(&self) -> Rate {
        self.rt
    }

    /// The congestion estimate.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn g(&self) -> f64 {
        self.config.g
    }

    /// The hpcc decrease-check period; a config without one (not validated) uses the default.
    fn decrease_interval(&self) -> Time {
        self.config.rate_decrease_interval.unwrap_or(HPCC_RATE_DECREASE_INTERVAL)
    }

    /// `Rc (1 - alpha/2)`, not below Rmin.
    fn cut(&self) -> Rate {
        ((self.rc as f64 * (1.0 - self.alpha / 2.0)) as Rate).max(self.min_rate)
    }

    /// Raises the target by `step` (capped at line rate) and moves Rc halfway to it.
    fn increase(&mut self, step: Rate) {
        self.rt = self.rt.saturating_add(step).min(self.line_rate);
        self.rc = ((self.rc as u128 + self.rt as u128) / 2) as Rate;
    }

    fn apply_rate(&self, before: Rate, ctx: &mut Ctx) {
        if self.rc != before {
            ctx.set_rate(self.rc);
        }
    }

    fn paper_cnp(&mut self, ctx: &mut Ctx) {
        if self.started {
            // A decay due at this very instant comes first: its timer was armed a period ago.
            self.catch_up_alpha(ctx.now(), Boundary::Included);
        }
        if self.config.clamp_target_rate || self.timer_count > 0 || self.byte_count_stage > 0 {
            self.rt = self.rc;
        }
        self.rc = self.cut();
        self.alpha = (1.0 - self.g()) * self.alpha + self.g();
        self.timer_count = 0;
        self.byte_count_stage = 0;
        self.bytes_sent = 0;
        self.started = true;
        self.alpha_at = ctx.now();
        self.increase_timer.arm(ctx, INCREASE_TIMER, ctx.now() + self.config.increase_interval);
    }

    /// One paper rate-increase event, with T and BC already counted.
    fn paper_increase(&mut self) {
        let f = self.config.fast_recovery_stages;
        let (t, bc) = (self.timer_count, self.byte_count_stage);
        let step = if t.max(bc) < f {
            0
        } else if t.min(bc) > f {
            self.config.rate_hai.saturating_mul((t.min(bc) - f) as Rate)
        } else {
            self.config.rate_ai
        };
        self.increase(step);
    }

    fn hpcc_cnp(&mut self, ctx: &mut Ctx) {
        if !self.started {
            self.started = true;
            self.alpha = 1.0;
            self.alpha_at = ctx.now();
            self.rt = self.rc;
            self.decrease_cnp = true;
            self.check_armed = true;
            self.decrease_timer.arm(ctx, DECREASE_TIMER, ctx.now() + self.decrease_interval() + PS_PER_NS);
            return;
        }
        // The update due at this very instant takes this CNP: the CNP's arrival was scheduled before the
        // update's timer would have been (a link's delay ahead against one alpha period).
        self.catch_up_alpha(ctx.now(), Boundary::Excluded);
        self.alpha_cnp = true;
        self.decrease_cnp = true;
        if !self.check_armed {
            // A check due at this very instant has run already: it was armed a period ago.
            self.check_armed = true;
            self.decrease_timer.arm_after(ctx, DECREASE_TIMER, self.decrease_interval());
        }
    }

    /// Applies the alpha updates that fell since the last one, up to `now` (`now` itself as `boundary`
    /// says): the first takes the CNP flag, the rest only decay, each with the arithmetic of one update.
    fn catch_up_alpha(&mut self, now: Time, boundary: Boundary) {
        let interval = self.config.alpha_interval.max(1);
        let last = match boundary {
            Boundary::Included => now,
            Boundary::Excluded => now.saturating_sub(1),
        };
        if last < self.alpha_at.saturating_add(interval) {
            return;
        }
        let periods = (last - self.alpha_at) / interval;
        self.alpha_at += periods * interval;
        let g = self.g();
        let gain = if self.alpha_cnp { g } else { 0.0 };
        self.alpha_cnp = false;
        match self.config.variant {
            DcqcnVariant::Paper => self.alpha *= 1.0 - g,
            DcqcnVariant::Hpcc => self.alpha = (1.0 - g) * self.alpha + gain,
        }
        // An alpha that reached zero stays there: a flow idle for seconds does not loop for each period.
        for _ in 1..periods {
            if self.alpha == 0.0 {
                break;
            }
            self.alpha *= 1.0 - g;
        }
    }

    /// One cut per check, however late it fires: the flag does not say in how many periods CNPs came.
    fn hpcc_decrease_check(&mut self, ctx: &mut Ctx) {
        self.check_armed = false;
        if !self.decrease_cnp {
            return;
        }
        self.catch_up_alpha(ctx.now(), Boundary::Included);
        if self.config.clamp_target_rate || self.stage > 0 {
            self.rt = self.rc;
        }
        self.rc = self.cut();
        self.stage = 0;
        self.decrease_cnp = false;
        self.increase_timer.arm(ctx, INCREASE_TIMER, ctx.now() + self.config.increase_interval);
    }

    fn hpcc_increase(&mut self) {
        let f = self.config.fast_recovery_stages;
        let step = match self.stage.cmp(&f) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => self.config.rate_ai,
            std::cmp::Ordering::Greater => self.config.rate_hai,
        };
        self.increase(step);
        self.stage = self.stage.saturating_add(1);
    }

    /// The rate-increase events of every period that ended. Once the target is at line rate and an event
    /// leaves the rate where it was (halfway to the target, rounded down), every later one does too: the
    /// rest only count, and are counted at once.
    fn on_increase_timer(&mut self, ctx: &mut Ctx) {
        let periods = self.increase_timer.fire(ctx, INCREASE_TIMER, self.config.increase_interval);
        for done in 1..=periods {
            let before = (self.rc, self.rt);
            self.increase_event();
            if self.rt == self.line_rate && (self.rc, self.rt) == before {
                let rest = u32::try_from(periods - done).unwrap_or(u32::MAX);
                match self.config.variant {
                    DcqcnVariant::Paper => self.timer_count = self.timer_count.saturating_add(rest),
                    DcqcnVariant::Hpcc => self.stage = self.stage.saturating_add(rest),
                }
                break;
            }
        }
    }

    /// One rate-increase event of the increase timer.
    fn increase_event(&mut self) {
        match self.config.variant {
            DcqcnVariant::Paper => {
                self.timer_count = self.timer_count.saturating_add(1);
                self.paper_increase();
            }
            DcqcnVariant::Hpcc => self.hpcc_increase(),
        }
    }
}

/// Whether an alpha update that falls exactly at the time of the event catching up counts as past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    Included,
    Excluded,
}

impl CongestionControl for Dcqcn {
    fn name(&self) -> &'static str {
        "dcqcn"
    }

    fn events(&self) -> Events {
        match self.config.variant {
            DcqcnVariant::Paper => Events::CNP | Events::TIMER | Events::TX,
            DcqcnVariant::Hpcc => Events::CNP | Events::TIMER,
        }
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Dcqcn::new(self.config.clone());
        self.line_rate = flow.line_rate;
        self.min_rate = self.config.min_rate.min(flow.line_rate);
        self.rc = flow.line_rate;
        self.rt = flow.line_rate;
        ctx.set_rate(self.rc);
        let window = if self.config.window_bdp { flow.bdp().max(flow.mss as u64) } else { u64::MAX };
        ctx.set_cwnd(window);
    }

    fn on_cnp(&mut self, ctx: &mut Ctx) {
        let before = self.rc;
        match self.config.variant {
            DcqcnVariant::Paper => self.paper_cnp(ctx),
            DcqcnVariant::Hpcc => self.hpcc_cnp(ctx),
        }
        self.apply_rate(before, ctx);
    }

    fn on_sent(&mut self, sent: &Sent, ctx: &mut Ctx) {
        let Some(b) = self.config.byte_counter else {
            return;
        };
        if !self.started || self.config.variant != DcqcnVariant::Paper {
            return;
        }
        self.bytes_sent += sent.bytes;
        if self.bytes_sent < b {
            return;
        }
        let before = self.rc;
        self.bytes_sent = 0;
        self.byte_count_stage = self.byte_count_stage.saturating_add(1);
        self.paper_increase();
        self.apply_rate(before, ctx);
    }

    fn on_timer(&mut self, id: TimerId, ctx: &mut Ctx) {
        let before = self.rc;
        match id {
            INCREASE_TIMER => self.on_increase_timer(ctx),
            DECREASE_TIMER if self.config.variant == DcqcnVariant::Hpcc => self.hpcc_decrease_check(ctx),
            _ => {}
        }
        self.apply_rate(before, ctx);
    }

    /// `rate` (Rc) and `target` (Rt) in bit/s, then `alpha`.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("rate_bps", self.rc as f64);
        out("target_bps", self.rt as f64);
        out("alpha", self.alpha);
    }
}
