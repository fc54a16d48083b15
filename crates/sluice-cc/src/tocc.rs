//! `tocc` and `tocc_nounsched`: ToCC (Zhang et al., "Anatomy of token-based congestion control", seed
//! 002, section V), token-oriented congestion control.
//!
//! Design choices (Table I, last row): a configurable unscheduled phase (one BDP, or none with a request
//! to send), data-driven token generation with a token window (the receiver issues the sender's first
//! window, at most a BDP, on its request and one token per arriving flagged data packet, keeping at most
//! the window outstanding),
//! in-network token rate limiters that let tokens queue rather than drop them, total volume control (the
//! sender flags data while its unsent bytes exceed one BDP and the receiver grants one token per flagged
//! packet, never learning the flow size: [`crate::token::TokenTransport::volume_by_flag`]), and
//! congestion control on tokens: switch token queues ECN-mark tokens at thresholds scaled by the
//! token/data size ratio, the sender echoes a mark in its next data packet, and the receiver runs
//! DCQCN's rules on its token window (here with the DCQCN paper's parameters, Zhu et al. SIGCOMM'15,
//! converted from rate to window by the flow's base RTT):
//! - on an echoed mark (or a marked unscheduled packet), at most once per `cut_interval`:
//!   `alpha = (1-g) alpha + g`, `W_target = W`, `W = max(one token, W (1 - alpha/2))`, stage = 0;
//! - alpha decay (every `alpha_interval` without a mark, from the request on): `alpha = (1-g) alpha`;
//! - increase timer (every `increase_interval`): stage < F: `W = (W + W_target)/2`; stage = F:
//!   `W_target += AI`; stage > F: `W_target += HAI`, then `W = (W + W_target)/2`; W at most the initial
//!   window.
//!
//! **Events, not ticks** (as DCQCN's, `dcqcn.rs`). Only a cut reads alpha, so alpha keeps no timer: a
//! cut first applies the decays of the periods that ended since the last one, each with the arithmetic
//! of one timer firing, the first taking the mark of its period. The increase timer stops once the
//! window and its target are back at the initial window, where further increases change nothing; the
//! next cut starts it again. Fired late (a user-space host loop), it applies every period that ended
//! ([`Periodic`]). In the simulator a run's flows complete exactly as with ticking timers; the traced
//! `alpha` is the value the last cut left.

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_S, PS_PER_US};

use crate::api::{FlowInfo, Needs, TimerId};
use crate::periodic::Periodic;
use crate::receiver::{Arrival, ReceiverControl, Request, RxCtx, RxEvents};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};
use crate::token::{bdp_bytes, token_factory, TokenFactory, TokenTransport, Unscheduled};

/// The window-increase timer. (Id 0 was an alpha-decay timer; alpha is now brought up to date at cuts.)
pub const INCREASE_TIMER: TimerId = TimerId(1);

/// ToCC parameters; transport settings sit next to them in `[cc.params]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToccConfig {
    /// Run congestion control on tokens (P5). Default true (ToCC section V).
    pub token_cc: bool,
    /// Initial (and largest) token window; 0 = one BDP of the flow's path (ToCC section V: the receiver
    /// initializes one BDP of tokens on RTS).
    #[serde(with = "sluice_core::serde_units::size")]
    pub window: u64,
    /// EWMA gain g of alpha. Default 1/256 (DCQCN paper).
    pub g: f64,
    /// Alpha decay period. Default 55 us (DCQCN paper K).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub alpha_interval: Time,
    /// Window-increase period. Default 55 us (DCQCN paper timer T).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub increase_interval: Time,
    /// At most one cut per this interval. Default 50 us (DCQCN paper: one CNP per 50 us).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub cut_interval: Time,
    /// Fast-recovery stages F. Default 5 (DCQCN paper).
    pub fast_recovery_stages: u32,
    /// Additive increase as a rate, converted to bytes of window by the base RTT. Default 40 Mb/s (DCQCN
    /// paper R_AI).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_ai: Rate,
    /// Hyper increase as a rate. Default 200 Mb/s (DCQCN authors' ns-3 mix/config.txt RATE_HAI).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_hai: Rate,
    /// The token transport.
    #[serde(flatten)]
    pub transport: TokenTransport,
}

impl ToccConfig {
    /// ToCC with a one-BDP unscheduled phase: switch token limiters whose queues hold tokens rather than
    /// drop them (section V: "ToCC lets tokens queue at the network bottleneck"; capacity 10,000 tokens,
    /// 840 KB, so that only pathological bursts of requests overflow it), token ECN marking, volume
    /// control, host limiter. Lost tokens are rare, so the receiver's loss timeout is long: 2 ms, above the
    /// longest token queue (10,000 tokens at the 100 Gbps limiter, 0.93 ms) plus the deepest data queue
    /// of the study (about 4 MB, 0.3 ms); the paper gives no value. The sender's request timer waits as
    /// long, since a first token can wait behind a full token queue.
    pub fn defaults() -> ToccConfig {
        ToccConfig {
            token_cc: true,
            window: 0,
            g: 1.0 / 256.0,
            alpha_interval: 55 * PS_PER_US,
            increase_interval: 55 * PS_PER_US,
            cut_interval: 50 * PS_PER_US,
            fast_recovery_stages: 5,
            rate_ai: 40_000_000,
            rate_hai: 200_000_000,
            transport: TokenTransport {
                unscheduled: Unscheduled::Bdp,
                token_limiter: true,
                limiter_capacity: 10_000,
                rx_timeout: 2_000 * PS_PER_US,
                tx_timeout: 2_000 * PS_PER_US,
                host_limiter: true,
                volume_control: true,
                volume_by_flag: true,
                token_ecn: true,
                ..TokenTransport::default()
            },
        }
    }

    /// ToCC (w/o unsch): the sender sends a request to send and waits for the receiver's first window.
    pub fn no_unscheduled_defaults() -> ToccConfig {
        let mut c = Self::defaults();
        c.transport.unscheduled = Unscheduled::None;
        c
    }

    fn validate(self) -> Result<ToccConfig, ParamError> {
        let err = |k: &str, m: &str| Err(ParamError { key: Some(k.into()), message: m.into() });
        if !(self.g > 0.0 && self.g <= 1.0) {
            return err("g", "must be within (0, 1]");
        }
        if self.alpha_interval == 0 || self.increase_interval == 0 {
            return err("increase_interval", "timer periods must be positive");
        }
        if self.token_cc && !self.transport.token_ecn {
            return err("token_ecn", "token_cc needs token queues that mark (token_ecn = true)");
        }
        Ok(self)
    }
}

/// The `tocc` registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "tocc",
    summary: "ToCC: one-BDP unscheduled, data-driven token window, token limiters, DCQCN on tokens (token-based)",
    control: Control::Window,
    needs: Needs { ecn: true, token_transport: true, receiver: true, ..Needs::NOTHING },
    build: |p, r| build(p, r, ToccConfig::defaults(), "tocc"),
};

/// The `tocc_nounsched` registry entry.
pub const ALGORITHM_NO_UNSCHEDULED: Algorithm = Algorithm {
    name: "tocc_nounsched",
    summary: "ToCC without unscheduled phase: request to send, first BDP of tokens, then as tocc (token-based)",
    control: Control::Window,
    needs: Needs { ecn: true, token_transport: true, receiver: true, ..Needs::NOTHING },
    build: |p, r| build(p, r, ToccConfig::no_unscheduled_defaults(), "tocc_nounsched"),
};

fn build(
    params: &toml::Table,
    _line_rate: Rate,
    defaults: ToccConfig,
    name: &'static str,
) -> Result<std::sync::Arc<dyn Factory>, ParamError> {
    let config = merge_params(&defaults, params)?.validate()?;
    token_factory(TokenFactory { name, config, make: |c, f| Box::new(Tocc::new(c, f)), transport: |c| &c.transport })
}

/// ToCC's receiver for one flow.
#[derive(Debug, Clone)]
pub struct Tocc {
    config: ToccConfig,
    max_window: f64,
    window: f64,
    target: f64,
    min_window: f64,
    alpha: f64,
    stage: u32,
    last_cut: Option<Time>,
    /// The last alpha period boundary applied (the request starts the grid); `None` before the request.
    alpha_at: Option<Time>,
    /// A cut fell in the current alpha period: its boundary does not decay alpha.
    marked_since_alpha: bool,
    increase_timer: Periodic,
    ai_bytes: f64,
    hai_bytes: f64,
    cuts: u64,
}

impl Tocc {
    /// A receiver for `flow`.
    pub fn new(config: &ToccConfig, flow: &FlowInfo) -> Tocc {
        let token = config.transport.token_bytes(flow.mss) as f64;
        let max_window = (if config.window == 0 { bdp_bytes(flow) } else { config.window } as f64).max(token);
        let to_bytes = |r: Rate| r as f64 * flow.base_rtt as f64 / 8.0 / PS_PER_S as f64;
        Tocc {
            config: config.clone(),
            max_window,
            window: max_window,
            target: max_window,
            min_window: token,
            alpha: 1.0,
            stage: 0,
            last_cut: None,
            alpha_at: None,
            marked_since_alpha: false,
            increase_timer: Periodic::default(),
            ai_bytes: to_bytes(config.rate_ai),
            hai_bytes: to_bytes(config.rate_hai),
            cuts: 0,
        }
    }

    /// The token window in bytes.
    pub fn window(&self) -> u64 {
        self.window.round() as u64
    }

    fn cut(&mut self, now: Time) -> bool {
        if self.last_cut.is_some_and(|t| now - t < self.config.cut_interval) {
            return false;
        }
        self.last_cut = Some(now);
        self.catch_up_alpha(now);
        self.alpha = (1.0 - self.config.g) * self.alpha + self.config.g;
        self.marked_since_alpha = true;
        self.target = self.window;
        self.window = (self.window * (1.0 - self.alpha / 2.0)).max(self.min_window);
        self.stage = 0;
        self.cuts += 1;
        true
    }

    /// Applies the alpha decays of the period boundaries up to `now`, `now` included (its timer would
    /// have been armed a period earlier than the arrival being handled): the first boundary after a cut
    /// only clears the mark, each other one decays alpha once.
    fn catch_up_alpha(&mut self, now: Time) {
        let Some(at) = self.alpha_at else { return };
        let interval = self.config.alpha_interval.max(1);
        if now < at.saturating_add(interval) {
            return;
        }
        let periods = (now - at) / interval;
        self.alpha_at = Some(at + periods * interval);
        let marked = std::mem::take(&mut self.marked_since_alpha);
        // An alpha that reached zero stays there: a flow idle for seconds does not loop for each period.
        for _ in u64::from(marked)..periods {
            if self.alpha == 0.0 {
                break;
            }
            self.alpha *= 1.0 - self.config.g;
        }
    }

    /// Whether the window and its target are at the initial window: increases change nothing more.
    fn settled(&self) -> bool {
        self.window >= self.max_window && self.target >= self.max_window
    }

    fn increase(&mut self) {
        let f = self.config.fast_recovery_stages;
        if self.stage == f {
            self.target += self.ai_bytes;
        } else if self.stage > f {
            self.target += self.hai_bytes;
        }
        self.target = self.target.min(self.max_window);
        self.window = ((self.window + self.target) / 2.0).min(self.max_window);
        self.stage += 1;
    }
}

impl ReceiverControl for Tocc {
    fn name(&self) -> &'static str {
        "tocc"
    }

    fn events(&self) -> RxEvents {
        RxEvents::REQUEST | RxEvents::DATA | RxEvents::TIMER
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut RxCtx) {
        ctx.set_token_window(self.window());
    }

    fn on_request(&mut self, _request: &Request, ctx: &mut RxCtx) {
        if self.config.token_cc {
            // A repeated request restarts the grid, after the boundaries that fell before it.
            self.catch_up_alpha(ctx.now());
            self.alpha_at = Some(ctx.now());
            self.increase_timer.arm(ctx, INCREASE_TIMER, ctx.now() + self.config.increase_interval);
        }
    }

    fn on_data(&mut self, arrival: &Arrival, ctx: &mut RxCtx) {
        let congested = arrival.token_echo || (arrival.ce && !arrival.scheduled);
        if self.config.token_cc && congested && self.cut(ctx.now()) {
            ctx.set_token_window(self.window());
            self.increase_timer.arm(ctx, INCREASE_TIMER, ctx.now() + self.config.increase_interval);
        }
    }

    fn on_timer(&mut self, id: TimerId, ctx: &mut RxCtx) {
        if id != INCREASE_TIMER {
            return;
        }
        let periods = self.increase_timer.elapse(ctx.now(), self.config.increase_interval);
        for _ in 0..periods {
            self.increase();
            if self.settled() {
                break;
            }
        }
        ctx.set_token_window(self.window());
        if !self.settled() {
            self.increase_timer.rearm(ctx, INCREASE_TIMER);
        }
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("token_window", self.window);
        out("alpha", self.alpha);
        out("cuts", self.cuts as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_flows::fabric_flow as flow;

    #[test]
    fn echoed_marks_cut_the_window_once_per_interval_and_timers_restore_it() {
        let mut t = Tocc::new(&ToccConfig::defaults(), &flow());
        let start = t.window();
        assert_eq!(start, 62_500);
        let mut ctx = RxCtx::new(0);
        t.on_data(&Arrival { token_echo: true, scheduled: true, ..Arrival::default() }, &mut ctx);
        assert_eq!(ctx.decisions().token_window, Some(31_250), "alpha starts at 1: the first cut halves");
        let mut ctx = RxCtx::new(10 * PS_PER_US);
        t.on_data(&Arrival { token_echo: true, scheduled: true, ..Arrival::default() }, &mut ctx);
        assert_eq!(ctx.decisions().token_window, None, "a second mark within 50 us does not cut");
        for i in 0..40 {
            let mut ctx = RxCtx::new((100 + i) * PS_PER_US);
            t.on_timer(INCREASE_TIMER, &mut ctx);
        }
        assert_eq!(t.window(), start, "fast recovery and increases return to the initial window");
    }

    fn marked(t: &mut Tocc, now: Time) -> RxCtx {
        let mut ctx = RxCtx::new(now);
        t.on_data(&Arrival { token_echo: true, scheduled: true, ..Arrival::default() }, &mut ctx);
        ctx
    }

    fn requested(now: Time) -> Tocc {
        let mut t = Tocc::new(&ToccConfig::defaults(), &flow());
        t.on_request(&Request { at: now, size: None, unscheduled_bytes: 0 }, &mut RxCtx::new(now));
        t
    }

    /// Alpha brought up to date at cuts equals alpha decayed by a timer every 55 us from the request,
    /// for cuts at arbitrary times (some exactly on a boundary, which the boundary precedes).
    #[test]
    fn alpha_brought_up_to_date_at_cuts_equals_a_ticking_alpha() {
        let (g, k) = (1.0 / 256.0, 55 * PS_PER_US);
        let mut rng = sluice_core::Rng::new(11, 1);
        for _ in 0..200 {
            let mut t = requested(0);
            // Cuts at least the 50 us cut interval apart, some on a boundary.
            let mut at = 0;
            let mut cuts = Vec::new();
            for _ in 0..rng.below(30) {
                let gap = 50 * PS_PER_US;
                at = if rng.below(3) == 0 {
                    ((at + gap) / k + 1 + rng.below(3)) * k
                } else {
                    at + gap + rng.below(k * 5)
                };
                cuts.push(at);
            }
            let (mut alpha, mut flag, mut boundary): (f64, bool, Time) = (1.0, false, k);
            for &c in &cuts {
                while boundary <= c {
                    if !std::mem::take(&mut flag) {
                        alpha *= 1.0 - g;
                    }
                    boundary += k;
                }
                alpha = (1.0 - g) * alpha + g;
                flag = true;
                assert!(marked(&mut t, c).decisions().token_window.is_some(), "a cut at {c}");
                assert_eq!(t.alpha, alpha, "cuts at {cuts:?}");
            }
        }
    }

    /// The increase timer stops once the window is back at the initial window, and a cut starts it.
    #[test]
    fn the_increase_timer_stops_when_settled_and_a_cut_restarts_it() {
        let mut t = requested(0);
        let k = 55 * PS_PER_US;
        let mut ctx = RxCtx::new(k);
        t.on_timer(INCREASE_TIMER, &mut ctx);
        assert_eq!(ctx.decisions().set_timers[INCREASE_TIMER.0 as usize], None, "already at the initial window");
        let ctx = marked(&mut t, 2 * k);
        assert_eq!(ctx.decisions().set_timers[INCREASE_TIMER.0 as usize], Some(3 * k));
        let mut at = 3 * k;
        loop {
            let mut ctx = RxCtx::new(at);
            t.on_timer(INCREASE_TIMER, &mut ctx);
            match ctx.decisions().set_timers[INCREASE_TIMER.0 as usize] {
                Some(next) => at = next,
                None => break,
            }
        }
        assert_eq!(t.window(), 62_500, "back at the initial window when it stopped");
    }

    /// An increase timer fired late applies every period that ended, as timely firings would.
    #[test]
    fn a_late_increase_timer_catches_up() {
        let k = 55 * PS_PER_US;
        let (mut on_time, mut late) = (requested(0), requested(0));
        marked(&mut on_time, k / 2);
        marked(&mut late, k / 2);
        for i in 1..=3 {
            on_time.on_timer(INCREASE_TIMER, &mut RxCtx::new(k / 2 + i * k));
        }
        let mut ctx = RxCtx::new(k / 2 + 3 * k + 7);
        late.on_timer(INCREASE_TIMER, &mut ctx);
        assert_eq!(late.window, on_time.window);
        assert_eq!(ctx.decisions().set_timers[INCREASE_TIMER.0 as usize], Some(k / 2 + 4 * k), "on the grid");
    }

    #[test]
    fn marked_scheduled_data_is_not_a_token_signal() {
        let mut t = Tocc::new(&ToccConfig::defaults(), &flow());
        let mut ctx = RxCtx::new(0);
        t.on_data(&Arrival { ce: true, scheduled: true, ..Arrival::default() }, &mut ctx);
        assert_eq!(ctx.decisions().token_window, None);
        t.on_data(&Arrival { ce: true, scheduled: false, ..Arrival::default() }, &mut ctx);
        assert!(ctx.decisions().token_window.is_some());
    }
}
