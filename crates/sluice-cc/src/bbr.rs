//! `bbr`: BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016;
//! Linux `net/ipv4/tcp_bbr.c`).
//!
//! Window and rate. BBR keeps a model of the path, the bottleneck bandwidth `BtlBw` and the round-trip
//! propagation time `RTprop`, and paces at `pacing_gain × BtlBw` with a window of
//! `cwnd_gain × BtlBw × RTprop` plus a small quantum. Loss is no congestion signal for the model.
//!
//! **Model.**
//! - Rounds: a round ends on the first ACK of data sent after the round began: `snd_una > round_end`,
//!   where `round_end` is the `snd_nxt` reported by the ACK that began the round (the byte-sequence form
//!   of Linux's `prior_delivered >= next_rtt_delivered`). An ACK acknowledging nothing new ends no round.
//!   Entering loss recovery and starting the PROBE_RTT hold begin a round there and then, as in Linux.
//! - `BtlBw` is the windowed maximum of the delivery-rate samples ([`Ack::delivery_rate`]) over
//!   `bw_window_rounds` rounds, kept as Linux `lib/minmax.c` keeps it (best, second and third best
//!   samples; a sample taken in round `r` counts through round `r + bw_window_rounds`). A folded report
//!   contributes its latest sample.
//! - `RTprop` is the least RTT sample (the least of a report's raw samples) seen in the last
//!   `min_rtt_window`; when that estimate is older than the window the next sample replaces it. It starts
//!   at [`FlowInfo::base_rtt`], which plays the role of Linux's handshake RTT.
//! - Samples taken while the flow is held in PROBE_RTT, up to the ACK of the data sent then, are
//!   app-limited (Linux marks them so): they enter the filter only if they raise it, and STARTUP's growth
//!   check skips them. The API carries no other app-limited flag, so every other sample counts.
//!
//! **Targets.** `bdp(g) = ceil(g × BtlBw × RTprop / (8 × mss))` packets (`init_cwnd_packets` while `RTprop` is
//! unknown); the in-flight target is `inflight(g) = even(bdp(g) + 3 × send_quantum_packets)`, plus 2
//! packets in the first PROBE_BW phase (Linux `bbr_quantization_budget`: room for three send bursts,
//! rounded up to an even count, and enough to exceed the BDP in the probing phase). Windows are bytes,
//! whole packets of `mss`.
//!
//! **States** (traced as 0..3):
//! - STARTUP (0): pacing and window gain `high_gain` (2/ln 2). At each round start, if `BtlBw` grew by
//!   at least `full_bw_growth` (25%) over the value recorded at the last growth, record it; else count a
//!   round without growth. After `full_bw_rounds` (3) such rounds the pipe is full: DRAIN.
//! - DRAIN (1): pacing gain `drain_gain` (1/2.885), window gain `high_gain`, until
//!   `in_flight <= inflight(1)`, then PROBE_BW (checked on the ACK that leaves STARTUP too).
//! - PROBE_BW (2): window gain `cwnd_gain` (2), pacing gains `cycle_gains` ([1.25, 0.75, 1, 1, 1, 1, 1,
//!   1]), one phase per `RTprop`. Linux starts at a random phase other than the 0.75 one; here the k-th
//!   start of a flow draws `r` from a SplitMix64 stream seeded with the flow id and starts at phase
//!   `(8 - r mod 7) mod 8` (Linux: `cycle_idx = 7 - random(7)`, then one advance), so never at phase 1.
//! - PROBE_RTT (3): entered from any state once the `RTprop` estimate is older than `min_rtt_window`;
//!   pacing gain 1, window at most `min_cwnd_packets`. Once `in_flight` has fallen to that window the
//!   flow holds it for at least `probe_rtt_duration` and one round, then refreshes the estimate's age,
//!   restores the window saved on entry and returns to PROBE_BW (new start phase) or, if the pipe was
//!   never filled, STARTUP.
//!
//! **Window** (per ACK acknowledging new data, Linux `bbr_set_cwnd`): once the pipe is full,
//! `cwnd = min(cwnd + acked, inflight(cwnd_gain))`; before, `cwnd += acked` while below that target or
//! while fewer than `init_cwnd_packets` have been delivered; never below `min_cwnd_packets` (which lifts
//! the 1-packet window of a timeout to 4 packets on the next ACK, as in Linux); capped at
//! `min_cwnd_packets` in PROBE_RTT, losses included.
//!
//! **Pacing** (Linux `bbr_set_pacing_rate`): `pacing_gain × BtlBw × (1 - pacing_margin_percent/100)`,
//! capped at the line rate; in STARTUP only raised, never lowered. Initially
//! `high_gain × init_cwnd × mss / base_rtt` (Linux `bbr_init_pacing_rate_from_rtt`; with no `base_rtt`,
//! a nominal 1 ms until the first RTT sample, as Linux).
//!
//! **Loss** (Linux's window handling around its loss states, not part of the model):
//! - fast retransmit or NACK, outside a recovery: save the window, then packet conservation for one
//!   round (`cwnd = in_flight - count × mss`, then `cwnd = max(cwnd, in_flight + acked)` per ACK); afterwards the
//!   usual growth toward the target. Each further loss signal takes `count` packets off the window.
//! - timeout: save the window, `cwnd = 1 packet`, then the usual growth (slow start toward the target);
//!   the bandwidth-growth reference of STARTUP is reset (Linux `bbr_set_state(TCP_CA_Loss)`).
//! - Both end when `snd_una` reaches the highest sequence known sent at the loss; the window is then
//!   `max(cwnd, saved)`. The window saved is the current one, or the larger of the two when a loss or
//!   PROBE_RTT had already cut it (Linux `bbr_save_cwnd`).
//! - Left out: Linux's long-term bandwidth sampling for policers (`lt_bw`), ACK-aggregation window
//!   extra, and restart from idle: the API reports neither idle starts nor app-limited periods.
//!
//! **Reporting.** STARTUP, DRAIN and PROBE_RTT want every ACK ([`ReportPolicy::default`]). On entering
//! PROBE_BW the controller asks for one report per `RTprop` ([`ReportEvery::Interval`]), as CCP's BBR
//! control program does with `Wait(rtprop)`, and asks again when `RTprop` moved by more than 1/8 from
//! the interval in force; leaving PROBE_BW restores per-ACK reports. A phase ends on the first report
//! at least `min(RTprop, interval in force)` after the phase began ([`Ctx::now`]): each interval report
//! closes one phase, and a datapath that keeps reporting every ACK gets phases of one `RTprop`. With
//! `inflight_phase_checks` the 1.25 phase also waits until a loss or `in_flight >= inflight(1.25)`, and
//! the 0.75 phase ends early once `in_flight <= inflight(1)` (Linux `bbr_is_next_cycle_phase`, with
//! `in_flight + acked` standing for the in-flight before the ACK, and any loss of the phase counting).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_MS, PS_PER_NS, PS_PER_S};

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, LossKind, Needs, ReportEvery, ReportPolicy};
use crate::program::{library, Install, Program, ProgramReport};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// With `program = true`: the per-ACK program's number in [`Bbr`]'s programs.
const PROGRAM_PER_ACK: u8 = 0;
/// With `program = true`: the per-`RTprop` program's number.
const PROGRAM_INTERVAL: u8 = 1;

/// Phases of the PROBE_BW gain cycle (Linux `CYCLE_LEN`).
pub const CYCLE_LEN: usize = 8;

/// The phase a PROBE_BW start never picks (the 0.75 phase of the default cycle, as in Linux).
const SKIPPED_START_PHASE: usize = 1;

/// `RTprop` may drift this fraction from the reporting interval in force before it is declared again.
const REDECLARE_FRACTION: u64 = 8;

/// Nominal RTT for the initial pacing rate when the flow has no RTT estimate (Linux `USEC_PER_MSEC`).
const NOMINAL_RTT: Time = PS_PER_MS;

/// BBR parameters (`[cc.params]` of a scenario with `cc.algorithm = "bbr"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BbrConfig {
    /// STARTUP pacing and window gain, DRAIN window gain.
    /// Default 2/ln 2 = 2.885: ACM Queue 2016 (the least gain that doubles the sending rate each round);
    /// Linux `bbr_high_gain` (2885/1000 in 1/256 fixed point).
    pub high_gain: f64,
    /// DRAIN pacing gain. Default ln 2 / 2 = 1/2.885: ACM Queue 2016; Linux `bbr_drain_gain`.
    pub drain_gain: f64,
    /// PROBE_BW window gain. Default 2: ACM Queue 2016; Linux `bbr_cwnd_gain`.
    pub cwnd_gain: f64,
    /// PROBE_BW pacing gains, one per phase. Default [1.25, 0.75, 1, 1, 1, 1, 1, 1]: ACM Queue 2016;
    /// Linux `bbr_pacing_gain`. A start never picks phase 1.
    pub cycle_gains: [f64; CYCLE_LEN],
    /// Rounds of the `BtlBw` max filter. Default 10: ACM Queue 2016; Linux `bbr_bw_rtts` (`CYCLE_LEN + 2`).
    pub bw_window_rounds: u32,
    /// Age at which the `RTprop` estimate expires and PROBE_RTT starts.
    /// Default 10 s: ACM Queue 2016; Linux `bbr_min_rtt_win_sec`.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub min_rtt_window: Time,
    /// Least time PROBE_RTT holds the minimum window. Default 200 ms: Linux `bbr_probe_rtt_mode_ms`.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub probe_rtt_duration: Time,
    /// `BtlBw` growth per round that keeps STARTUP going. Default 1.25: Linux `bbr_full_bw_thresh`.
    pub full_bw_growth: f64,
    /// Rounds without that growth that end STARTUP. Default 3: Linux `bbr_full_bw_cnt`.
    pub full_bw_rounds: u32,
    /// Initial window in packets. Default 10: RFC 6928, Linux `TCP_INIT_CWND`.
    pub init_cwnd_packets: u32,
    /// Least window, and the PROBE_RTT window, in packets. Default 4: Linux `bbr_cwnd_min_target`.
    pub min_cwnd_packets: u32,
    /// Packets per send burst; the in-flight target has room for three (Linux `bbr_tso_segs_goal`, its
    /// TSO burst size). Default 1: the datapaths hand single packets to the wire.
    pub send_quantum_packets: u32,
    /// Pacing below the model by this percentage, in [0, 100). Default 0: the paper's
    /// `pacing_gain × BtlBw`; later Linux versions use 1 (`bbr_pacing_margin_percent`).
    pub pacing_margin_percent: f64,
    /// Add Linux's in-flight conditions to the phase timing of PROBE_BW (see the module documentation).
    /// Default false: phases of one `RTprop`, as the paper and CCP's BBR.
    pub inflight_phase_checks: bool,
    /// Report through a datapath program ([`crate::program::library`]) that folds ACKs and losses as
    /// the fixed engines do: the same results, computed by a program every datapath with programs runs.
    /// Per-ACK reports are [`library::per_signal`], one report per `RTprop` is
    /// [`library::per_interval`] with its interval set at install. Default absent (false): the fixed fold
    /// and reporting policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<bool>,
}

impl Default for BbrConfig {
    fn default() -> Self {
        let high_gain = 2.0 / std::f64::consts::LN_2;
        BbrConfig {
            high_gain,
            drain_gain: 1.0 / high_gain,
            cwnd_gain: 2.0,
            cycle_gains: [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            bw_window_rounds: 10,
            min_rtt_window: 10 * PS_PER_S,
            probe_rtt_duration: 200 * PS_PER_MS,
            full_bw_growth: 1.25,
            full_bw_rounds: 3,
            init_cwnd_packets: 10,
            min_cwnd_packets: 4,
            send_quantum_packets: 1,
            pacing_margin_percent: 0.0,
            inflight_phase_checks: false,
            program: None,
        }
    }
}

impl BbrConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<BbrConfig, ParamError> {
        let config = merge_params(&BbrConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        let positive = |x: f64| x.is_finite() && x > 0.0;
        for (key, gain) in
            [("high_gain", self.high_gain), ("drain_gain", self.drain_gain), ("cwnd_gain", self.cwnd_gain)]
        {
            if !positive(gain) {
                return err(key, "must be a positive number");
            }
        }
        if !self.cycle_gains.iter().all(|g| positive(*g)) {
            return err("cycle_gains", "must all be positive numbers");
        }
        if !(self.full_bw_growth.is_finite() && self.full_bw_growth >= 1.0) {
            return err("full_bw_growth", "must be at least 1");
        }
        if !(0.0..100.0).contains(&self.pacing_margin_percent) {
            return err("pacing_margin_percent", "must be in [0, 100)");
        }
        for (key, value) in [
            ("bw_window_rounds", self.bw_window_rounds),
            ("full_bw_rounds", self.full_bw_rounds),
            ("init_cwnd_packets", self.init_cwnd_packets),
            ("min_cwnd_packets", self.min_cwnd_packets),
        ] {
            if value == 0 {
                return err(key, "must be at least 1");
            }
        }
        if self.min_rtt_window == 0 {
            return err("min_rtt_window", "must be positive");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "bbr",
    summary: "BBR v1 (ACM Queue 2016, Linux tcp_bbr.c): pacing and window from max delivery rate and min RTT",
    control: Control::WindowAndRate,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = BbrConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Bbr::new(c.clone())), cnp_interval: None }))
}

/// The BBR state machine (Linux `enum bbr_mode`; the discriminant is the traced `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrMode {
    /// Doubling the rate each round to find the bottleneck bandwidth.
    Startup = 0,
    /// Draining the queue STARTUP built.
    Drain = 1,
    /// Cycling the pacing gain around the bottleneck bandwidth.
    ProbeBw = 2,
    /// Holding a minimal window to measure the propagation delay.
    ProbeRtt = 3,
}

/// Linux's congestion states as far as BBR's window cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LossState {
    /// No loss being repaired.
    Open,
    /// Fast retransmit or NACK: until `snd_una` reaches this sequence.
    Fast(u64),
    /// Retransmission timeout: until `snd_una` reaches this sequence.
    Timeout(u64),
}

impl LossState {
    fn until(self) -> Option<u64> {
        match self {
            LossState::Open => None,
            LossState::Fast(end) | LossState::Timeout(end) => Some(end),
        }
    }
}

/// Windowed running maximum over rounds (Kathleen Nichols' algorithm as Linux `lib/minmax.c`): the best,
/// second and third best `(round, value)` samples of the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct MaxFilter {
    s: [(u64, u64); 3],
}

impl MaxFilter {
    fn best(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    /// Linux `minmax_running_max`.
    fn update(&mut self, window: u64, t: u64, v: u64) {
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) > window {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        self.update_subwindows(window, t, v);
    }

    /// Linux `minmax_subwin_update`: ages the choices so the window never holds only stale samples.
    fn update_subwindows(&mut self, window: u64, t: u64, v: u64) {
        let dt = t.saturating_sub(self.s[0].0);
        if dt > window {
            self.shift(t, v);
            if t.saturating_sub(self.s[0].0) > window {
                self.shift(t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > window / 4 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > window / 2 {
            self.s[2] = (t, v);
        }
    }

    fn shift(&mut self, t: u64, v: u64) {
        self.s[0] = self.s[1];
        self.s[1] = self.s[2];
        self.s[2] = (t, v);
    }
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): the per-flow stream of PROBE_BW start phases.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The least RTT sample of a report: its raw samples and its latest one.
fn min_rtt_sample(ack: &Ack<'_>) -> Option<Time> {
    ack.rtt_samples.iter().copied().chain(ack.rtt).min()
}

/// The BBR controller of one flow. Windows are bytes, rates bit/s, times picoseconds.
#[derive(Debug, Clone)]
pub struct Bbr {
    config: BbrConfig,
    mss: u64,
    line_rate: Rate,
    mode: BbrMode,
    // Model.
    bw: MaxFilter,
    rtprop: Option<Time>,
    rtprop_stamp: Time,
    // Rounds and sequence.
    rounds: u64,
    round_end: u64,
    round_start: bool,
    delivered: u64,
    snd_una: u64,
    high_seq: u64,
    /// Samples are app-limited while `snd_una` has not passed this sequence.
    app_limited_until: Option<u64>,
    // STARTUP.
    full_bw: Rate,
    full_bw_count: u32,
    full_bw_reached: bool,
    // PROBE_BW.
    cycle_index: usize,
    phase_start: Time,
    phase_loss: bool,
    start_draws: u64,
    // PROBE_RTT.
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    // Loss.
    recovery: LossState,
    packet_conservation: bool,
    prior_cwnd: u64,
    // Outputs.
    cwnd: u64,
    pacing_rate: Rate,
    has_seen_rtt: bool,
    /// The interval of the report policy asked for, while interval reports are in force.
    declared: Option<Time>,
}

impl Bbr {
    /// A controller with `config`; the flow is set up by [`CongestionControl::on_start`].
    pub fn new(config: BbrConfig) -> Bbr {
        Bbr {
            config,
            mss: 1,
            line_rate: 0,
            mode: BbrMode::Startup,
            bw: MaxFilter::default(),
            rtprop: None,
            rtprop_stamp: 0,
            rounds: 0,
            round_end: 0,
            round_start: false,
            delivered: 0,
            snd_una: 0,
            high_seq: 0,
            app_limited_until: None,
            full_bw: 0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_index: 0,
            phase_start: 0,
            phase_loss: false,
            start_draws: 0,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            recovery: LossState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
            cwnd: 0,
            pacing_rate: 0,
            has_seen_rtt: false,
            declared: None,
        }
    }

    /// The state.
    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The bottleneck bandwidth estimate `BtlBw` (bit/s; 0 before the first sample).
    pub fn btl_bw(&self) -> Rate {
        self.bw.best()
    }

    /// The propagation delay estimate `RTprop`, if any RTT is known.
    pub fn rtprop(&self) -> Option<Time> {
        self.rtprop
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Pacing rate in bit/s.
    pub fn pacing_rate(&self) -> Rate {
        self.pacing_rate
    }

    /// The pacing gain of the current state (and phase).
    pub fn pacing_gain(&self) -> f64 {
        match self.mode {
            BbrMode::Startup => self.config.high_gain,
            BbrMode::Drain => self.config.drain_gain,
            BbrMode::ProbeBw => self.config.cycle_gains[self.cycle_index],
            BbrMode::ProbeRtt => 1.0,
        }
    }

    /// The window gain of the current state.
    pub fn cwnd_gain(&self) -> f64 {
        match self.mode {
            BbrMode::Startup | BbrMode::Drain => self.config.high_gain,
            BbrMode::ProbeBw => self.config.cwnd_gain,
            BbrMode::ProbeRtt => 1.0,
        }
    }

    /// The PROBE_BW phase (index into `cycle_gains`).
    pub fn cycle_index(&self) -> usize {
        self.cycle_index
    }

    /// Rounds counted since the flow started.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Whether STARTUP found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// The window saved before the last loss or PROBE_RTT, restored after it (bytes).
    pub fn prior_cwnd(&self) -> u64 {
        self.prior_cwnd
    }

    /// Whether a loss is being repaired (fast recovery or after a timeout).
    pub fn in_recovery(&self) -> bool {
        self.recovery != LossState::Open
    }

    /// The in-flight target `inflight(gain)` for bandwidth `bw`, in bytes (see the module documentation).
    pub fn inflight_target(&self, bw: Rate, gain: f64) -> u64 {
        let bdp = match self.rtprop {
            None => self.config.init_cwnd_packets as u64,
            Some(rtprop) => {
                let packets = gain * bw as f64 * rtprop as f64 / (8.0 * PS_PER_S as f64 * self.mss as f64);
                // Absorbs float rounding at whole packets before rounding up.
                (packets * (1.0 - 1e-12)).ceil() as u64
            }
        };
        let mut packets = bdp + 3 * self.config.send_quantum_packets as u64;
        packets += packets % 2;
        if self.mode == BbrMode::ProbeBw && self.cycle_index == 0 {
            packets += 2;
        }
        packets * self.mss
    }

    fn min_cwnd(&self) -> u64 {
        self.config.min_cwnd_packets as u64 * self.mss
    }

    /// `gain × bw` less the margin, capped at the line rate.
    fn rate_for(&self, bw: Rate, gain: f64) -> Rate {
        let rate = (gain * bw as f64 * (1.0 - self.config.pacing_margin_percent / 100.0)) as Rate;
        if self.line_rate > 0 {
            rate.min(self.line_rate)
        } else {
            rate
        }
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: `high_gain × cwnd / rtt`.
    fn init_pacing_rate(&mut self, rtt: Time) {
        let bw = (self.cwnd as u128 * 8 * PS_PER_S as u128 / rtt.max(1) as u128) as Rate;
        self.pacing_rate = self.rate_for(bw, self.config.high_gain);
    }

    fn note_ack(&mut self, ack: &Ack<'_>) {
        self.snd_una = self.snd_una.max(ack.snd_una);
        self.high_seq = self.high_seq.max(ack.snd_nxt);
        self.delivered += ack.acked_bytes;
    }

    /// Whether this report's rate sample is app-limited (taken in or just after PROBE_RTT).
    fn app_limited(&mut self, ack: &Ack<'_>) -> bool {
        if self.mode == BbrMode::ProbeRtt {
            self.app_limited_until = Some(ack.snd_nxt.max(self.app_limited_until.unwrap_or(0)));
        }
        match self.app_limited_until {
            Some(until) if ack.snd_una <= until => true,
            _ => {
                self.app_limited_until = None;
                false
            }
        }
    }

    /// Linux `bbr_update_bw`: round counting and the `BtlBw` filter.
    fn update_bw(&mut self, ack: &Ack<'_>, app_limited: bool) {
        self.round_start = false;
        if ack.acked_bytes > 0 && ack.snd_una > self.round_end {
            self.round_end = ack.snd_nxt;
            self.rounds += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        if let Some(rate) = ack.delivery_rate {
            if !app_limited || rate >= self.btl_bw() {
                self.bw.update(self.config.bw_window_rounds as u64, self.rounds, rate);
            }
        }
    }

    /// The time a PROBE_BW phase lasts: `RTprop`, or the reporting interval in force if shorter.
    fn phase_length(&self) -> Time {
        let rtprop = self.rtprop.unwrap_or(Time::MAX);
        self.declared.map_or(rtprop, |interval| rtprop.min(interval))
    }

    /// Linux `bbr_is_next_cycle_phase`.
    fn phase_done(&self, ack: &Ack<'_>, now: Time) -> bool {
        let full_length = now.saturating_sub(self.phase_start) >= self.phase_length();
        if !self.config.inflight_phase_checks {
            return full_length;
        }
        let gain = self.pacing_gain();
        let prior_in_flight = ack.in_flight + ack.acked_bytes;
        if gain > 1.0 {
            full_length && (self.phase_loss || prior_in_flight >= self.inflight_target(self.btl_bw(), gain))
        } else if gain < 1.0 {
            full_length || prior_in_flight <= self.inflight_target(self.btl_bw(), 1.0)
        } else {
            full_length
        }
    }

    fn advance_phase(&mut self, now: Time) {
        self.cycle_index = (self.cycle_index + 1) % CYCLE_LEN;
        self.phase_start = now;
        self.phase_loss = false;
    }

    fn update_cycle_phase(&mut self, ack: &Ack<'_>, now: Time) {
        if self.mode == BbrMode::ProbeBw && self.phase_done(ack, now) {
            self.advance_phase(now);
        }
    }

    /// Linux `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let bw = self.btl_bw();
        if bw as f64 >= self.full_bw as f64 * self.config.full_bw_growth {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= self.config.full_bw_rounds;
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, ack: &Ack<'_>, now: Time) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
        }
        if self.mode == BbrMode::Drain && ack.in_flight <= self.inflight_target(self.btl_bw(), 1.0) {
            self.enter_probe_bw(now);
        }
    }

    /// Linux `bbr_reset_probe_bw_mode`: a start phase other than [`SKIPPED_START_PHASE`].
    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = BbrMode::ProbeBw;
        let draw = (splitmix64(&mut self.start_draws) % (CYCLE_LEN as u64 - 1)) as usize;
        self.cycle_index = CYCLE_LEN - 1 - draw;
        self.advance_phase(now);
        debug_assert_ne!(self.cycle_index, SKIPPED_START_PHASE);
    }

    /// Linux `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.recovery == LossState::Open && self.mode != BbrMode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    /// Linux `bbr_update_min_rtt`: the `RTprop` filter and PROBE_RTT.
    fn update_min_rtt(&mut self, ack: &Ack<'_>, now: Time) {
        let expired = now > self.rtprop_stamp.saturating_add(self.config.min_rtt_window);
        if let Some(rtt) = min_rtt_sample(ack) {
            if expired || self.rtprop.is_none_or(|r| rtt < r) {
                self.rtprop = Some(rtt);
                self.rtprop_stamp = now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            self.save_cwnd();
            self.mode = BbrMode::ProbeRtt;
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            self.probe_rtt_step(ack, now);
        }
    }

    fn probe_rtt_step(&mut self, ack: &Ack<'_>, now: Time) {
        match self.probe_rtt_done {
            None if ack.in_flight <= self.min_cwnd() => {
                self.probe_rtt_done = Some(now + self.config.probe_rtt_duration);
                self.probe_rtt_round_done = false;
                self.round_end = ack.snd_nxt;
            }
            None => {}
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && now > done {
                    self.exit_probe_rtt(now);
                }
            }
        }
    }

    /// Linux `bbr_check_probe_rtt_done`.
    fn exit_probe_rtt(&mut self, now: Time) {
        self.rtprop_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.probe_rtt_done = None;
        if self.full_bw_reached {
            self.enter_probe_bw(now);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// Linux `bbr_set_pacing_rate`.
    fn update_pacing(&mut self, ack: &Ack<'_>) {
        if !self.has_seen_rtt {
            if let Some(rtt) = min_rtt_sample(ack) {
                self.has_seen_rtt = true;
                self.init_pacing_rate(rtt);
            }
        }
        let rate = self.rate_for(self.btl_bw(), self.pacing_gain());
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// The end of a loss repair (Linux: leaving Recovery or Loss restores the saved window).
    fn end_recovery(&mut self) {
        if self.recovery.until().is_some_and(|end| self.snd_una >= end) {
            self.recovery = LossState::Open;
            self.packet_conservation = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
    }

    /// Linux `bbr_set_cwnd`.
    fn update_cwnd(&mut self, ack: &Ack<'_>) {
        let acked = ack.acked_bytes;
        if acked > 0 {
            self.end_recovery();
            if self.packet_conservation {
                self.cwnd = self.cwnd.max(ack.in_flight + acked);
            } else {
                self.grow_cwnd(acked);
            }
        }
        self.cap_in_probe_rtt();
    }

    fn cap_in_probe_rtt(&mut self) {
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_cwnd());
        }
    }

    fn grow_cwnd(&mut self, acked: u64) {
        let target = self.inflight_target(self.btl_bw(), self.cwnd_gain());
        let init = self.config.init_cwnd_packets as u64 * self.mss;
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + acked).min(target);
        } else if self.cwnd < target || self.delivered < init {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(self.min_cwnd());
    }

    /// Asks for one report per `RTprop` in PROBE_BW and per-ACK reports elsewhere.
    fn sync_report(&mut self, ctx: &mut Ctx) {
        match (self.mode, self.declared, self.rtprop) {
            (BbrMode::ProbeBw, declared, Some(rtprop)) if rtprop > 0 => {
                let stale = declared.is_none_or(|d| rtprop.abs_diff(d) * REDECLARE_FRACTION > d);
                if stale {
                    self.declared = Some(rtprop);
                    if self.config.program == Some(true) {
                        ctx.install(Install::program(PROGRAM_INTERVAL).with(library::reg::INTERVAL, rtprop));
                    } else {
                        ctx.set_report(ReportPolicy {
                            every: ReportEvery::Interval(rtprop),
                            ..ReportPolicy::default()
                        });
                    }
                }
            }
            (BbrMode::ProbeBw, _, _) => {}
            (_, Some(_), _) => {
                self.declared = None;
                if self.config.program == Some(true) {
                    ctx.install(Install::program(PROGRAM_PER_ACK));
                } else {
                    ctx.set_report(ReportPolicy::default());
                }
            }
            (_, None, _) => {}
        }
    }

    /// The highest sequence known sent when a loss is detected: its repair ends when that is acknowledged.
    fn recovery_point(&self, loss: &Loss) -> u64 {
        loss.snd_nxt.max(self.high_seq).max(self.snd_una + loss.in_flight)
    }

    /// Fast retransmit or NACK (Linux: entering Recovery, then `rs->losses` per further loss).
    fn on_fast_loss(&mut self, loss: &Loss) {
        let lost = loss.count as u64 * self.mss;
        if self.recovery == LossState::Open {
            self.save_cwnd();
            let end = self.recovery_point(loss);
            self.recovery = LossState::Fast(end);
            self.packet_conservation = true;
            self.round_end = end;
            self.cwnd = loss.in_flight.saturating_sub(lost).max(self.mss);
        } else {
            self.cwnd = self.cwnd.saturating_sub(lost).max(self.mss);
        }
    }

    /// Retransmission timeout (Linux `tcp_enter_loss` and `bbr_set_state(TCP_CA_Loss)`).
    fn on_timeout(&mut self, loss: &Loss) {
        self.save_cwnd();
        self.recovery = LossState::Timeout(self.recovery_point(loss));
        self.packet_conservation = false;
        self.full_bw = 0;
        self.cwnd = self.mss;
    }

    fn publish(&self, cwnd: u64, rate: Rate, ctx: &mut Ctx) {
        if self.cwnd != cwnd {
            ctx.set_cwnd(self.cwnd);
        }
        if self.pacing_rate != rate {
            ctx.set_rate(self.pacing_rate);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Bbr::new(self.config.clone());
        self.mss = flow.mss.max(1) as u64;
        self.line_rate = flow.line_rate;
        self.start_draws = flow.flow_id;
        self.rtprop = (flow.base_rtt > 0).then_some(flow.base_rtt);
        self.rtprop_stamp = ctx.now();
        self.has_seen_rtt = flow.base_rtt > 0;
        self.cwnd = self.config.init_cwnd_packets as u64 * self.mss;
        self.init_pacing_rate(self.rtprop.unwrap_or(NOMINAL_RTT));
        ctx.set_cwnd(self.cwnd);
        ctx.set_rate(self.pacing_rate);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let (cwnd, rate, now) = (self.cwnd, self.pacing_rate, ctx.now());
        self.note_ack(ack);
        let app_limited = self.app_limited(ack);
        self.update_bw(ack, app_limited);
        self.update_cycle_phase(ack, now);
        self.check_full_bw_reached(app_limited);
        self.check_drain(ack, now);
        self.update_min_rtt(ack, now);
        self.update_pacing(ack);
        self.update_cwnd(ack);
        self.sync_report(ctx);
        self.publish(cwnd, rate, ctx);
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        let (cwnd, rate) = (self.cwnd, self.pacing_rate);
        self.phase_loss = true;
        match loss.kind {
            LossKind::FastRetransmit | LossKind::Nack => self.on_fast_loss(loss),
            LossKind::Timeout => self.on_timeout(loss),
        }
        self.cap_in_probe_rtt();
        self.publish(cwnd, rate, ctx);
    }

    /// With `program = true`: per-ACK reports ([`library::per_signal`]) and one report per `RTprop`
    /// ([`library::per_interval`]).
    fn programs(&self) -> Vec<Arc<Program>> {
        match self.config.program {
            Some(true) => vec![library::per_signal(), library::per_interval()],
            _ => Vec::new(),
        }
    }

    fn on_report(&mut self, report: &ProgramReport<'_>, ctx: &mut Ctx) {
        library::deliver(self, report, ctx);
    }

    /// `btl_bw` (bit/s), `rtprop` (ps, 0 while unknown), `pacing_gain`, `pacing_rate` (bit/s), `cwnd`
    /// (bytes), `state` (0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT).
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("btl_bw_bps", self.btl_bw() as f64);
        out("rtprop_ns", self.rtprop.unwrap_or(0) as f64 / PS_PER_NS as f64);
        out("pacing_gain", self.pacing_gain());
        out("pacing_rate_bps", self.pacing_rate as f64);
        out("cwnd", self.cwnd as f64);
        out("state", self.mode as u8 as f64);
    }
}
