//! `dctcp`: Data Center TCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) on a Reno window (RFC 5681, RFC 6582).
//!
//! Window-based. Switches mark ECN Congestion Experienced above a queue threshold and the receiver echoes
//! every mark (ECE). Once per window of data the sender updates `alpha`, a moving average of the fraction
//! of acknowledged bytes that carried a mark, and on the first echoed mark of a window it cuts the window
//! by `alpha / 2` instead of Reno's half.
//!
//! Per ACK, in this order:
//! 1. Count acknowledged and marked bytes. When the cumulative ACK point reaches `window_end` (the
//!    `snd_nxt` recorded at the previous update), set `F = marked / acked`,
//!    `alpha = (1 - g) alpha + g F`, reset the counters and set `window_end = snd_nxt`. (RFC 8257 §3.3;
//!    "reaches" is `snd_una >= window_end` as in Linux `dctcp_update_alpha`.)
//! 2. Leave CWR, or fast recovery, once `snd_una` reaches the `snd_nxt` recorded when it began.
//! 3. On an ECE while neither in CWR nor within a loss window:
//!    `cwnd = max(cwnd - floor(cwnd alpha / 2), min_cwnd)`, `ssthresh = cwnd`, and CWR until
//!    `snd_una >= snd_nxt` at the cut (RFC 8257 §3.3; RFC 3168 §6.1.2: once per window).
//! 4. Otherwise, unless in CWR or fast recovery (where the window is held, as Linux and ns-3 do),
//!    grow like Reno: slow start `cwnd = min(cwnd + min(acked, mss), ssthresh)` while `cwnd < ssthresh`
//!    (RFC 5681 §3.1, capped at ssthresh as Linux `tcp_slow_start`); congestion avoidance
//!    `cwnd += mss * acked / cwnd` (RFC 5681 eq. 3) in integer bytes with the remainder carried to the
//!    next ACK, so no fraction is lost and no float accumulates.
//!
//! On loss (RFC 5681 §3.2, RFC 6582):
//! - fast retransmit or NACK: `ssthresh = max(FlightSize / 2, min_cwnd)`, `cwnd = ssthresh` (no
//!   3-MSS dup-ACK inflation: the datapath does not inflate the window per duplicate ACK), then fast
//!   recovery until the highest byte sent before the loss is acknowledged; further losses in that
//!   window are ignored. FlightSize is the bytes sent beyond the cumulative ACK point, also on a
//!   go-back-N datapath that has already rewound its next byte to the hole when it reports the loss. A loss ends CWR: loss is the stronger signal and reduces even right after an ECN cut, as
//!   in Linux.
//! - timeout: `ssthresh = max(FlightSize / 2, min_cwnd)`, `cwnd = 1 mss`, then slow start; losses of data
//!   sent before the timeout do not reduce again (RFC 6582 `recover`). With `clamp_alpha_on_loss`,
//!   alpha is set to 1 (Linux `dctcp_clamp_alpha_on_loss`, applied on entering the Loss state, i.e. on
//!   timeout).
//!
//! The window never reduces on an ECE within a loss window (one reduction per window whatever the
//! signal). The reduced window applies at once (no proportional rate reduction): the datapath simply
//! stops sending while `in_flight >= cwnd`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, LossKind, Needs};
use crate::program::{library, Program, ProgramReport};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};
use crate::reno::{RenoWindow, WindowParams};

/// DCTCP parameters (`[cc.params]` of a scenario with `cc.algorithm = "dctcp"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpConfig {
    /// EWMA gain `g` of the marked-fraction estimate, in (0, 1].
    /// Default 1/16: Alizadeh et al. SIGCOMM'10 and RFC 8257 §3.3 (Linux `dctcp_shift_g = 4`).
    pub g: f64,
    /// Initial `alpha`, in [0, 1].
    /// Default 1: RFC 8257 §3.3 (cautious start) and Linux `dctcp_alpha_on_init = 1024` (of 1024).
    pub init_alpha: f64,
    /// Initial congestion window in full-sized segments (at least 1).
    /// Default 10: RFC 6928 and Linux `TCP_INIT_CWND`.
    pub init_cwnd_packets: u32,
    /// Initial slow-start threshold in full-sized segments; absent means unlimited.
    /// Default absent: RFC 5681 §3.1 ("arbitrarily high"), Linux `TCP_INFINITE_SSTHRESH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_ssthresh_packets: Option<u32>,
    /// Floor of the window after an ECN cut and of `ssthresh` after a loss, in segments (at least 1).
    /// Default 2: Linux `dctcp_ssthresh` (`max(..., 2U)`) and RFC 5681 eq. 4 (`2 * SMSS`).
    pub min_cwnd_packets: u32,
    /// Set `alpha = 1` on a retransmission timeout.
    /// Default false: Linux module parameter `dctcp_clamp_alpha_on_loss` (default 0).
    pub clamp_alpha_on_loss: bool,
    /// Report through a datapath program ([`crate::program::library`]) that folds ACKs and losses as
    /// the fixed engines do: the same results, computed by a program every datapath with programs runs.
    /// Default absent (false): the fixed fold and reporting policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<bool>,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            g: 1.0 / 16.0,
            init_alpha: 1.0,
            init_cwnd_packets: 10,
            init_ssthresh_packets: None,
            min_cwnd_packets: 2,
            clamp_alpha_on_loss: false,
            program: None,
        }
    }
}

impl DctcpConfig {
    /// The Reno window's settings: slow start grows by at most one MSS per ACK (`L = 1`; RFC 5681 §3.1,
    /// Linux `tcp_slow_start` counts one segment per ACK without ABC).
    pub fn window(&self) -> WindowParams {
        WindowParams {
            init_cwnd_packets: self.init_cwnd_packets,
            init_ssthresh_packets: self.init_ssthresh_packets,
            min_cwnd_packets: self.min_cwnd_packets,
            abc_limit_packets: 1,
        }
    }

    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<DctcpConfig, ParamError> {
        let config = merge_params(&DctcpConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.g > 0.0 && self.g <= 1.0) {
            return err("g", "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.init_alpha) {
            return err("init_alpha", "must be in [0, 1]");
        }
        if self.init_cwnd_packets == 0 {
            return err("init_cwnd_packets", "must be at least 1");
        }
        if self.init_ssthresh_packets == Some(0) {
            return err("init_ssthresh_packets", "must be at least 1");
        }
        if self.min_cwnd_packets == 0 {
            return err("min_cwnd_packets", "must be at least 1");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "dctcp",
    summary: "DCTCP (RFC 8257): window cut by the ECN-marked fraction alpha/2, Reno growth and loss recovery",
    control: Control::Window,
    needs: Needs { ecn: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = DctcpConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Dctcp::new(c.clone())), cnp_interval: None }))
}

/// The DCTCP controller of one flow. Window quantities are bytes.
#[derive(Debug, Clone)]
pub struct Dctcp {
    config: DctcpConfig,
    /// Reno's window state, slow start and loss recovery (as Cubic and Vegas use it).
    window: RenoWindow,
    /// Congestion-avoidance growth not yet applied, in units of 1/cwnd byte.
    ca_remainder: u64,
    alpha: f64,
    bytes_acked: u64,
    bytes_marked: u64,
    window_end: u64,
    /// `snd_nxt` at the last ECN cut while in CWR.
    cwr_end: Option<u64>,
}

impl Dctcp {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: DctcpConfig) -> Dctcp {
        let alpha = config.init_alpha;
        let window = RenoWindow::new(config.window(), 1);
        Dctcp { config, window, ca_remainder: 0, alpha, bytes_acked: 0, bytes_marked: 0, window_end: 0, cwr_end: None }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd()
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.window.ssthresh()
    }

    /// The marked-fraction estimate.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether the flow is in Congestion Window Reduced after an ECN cut.
    pub fn in_cwr(&self) -> bool {
        self.cwr_end.is_some()
    }

    /// Whether the flow is in fast recovery after a fast retransmit or NACK.
    pub fn in_fast_recovery(&self) -> bool {
        self.window.in_fast_recovery()
    }

    /// RFC 8257 §3.3: counts the ACK and updates alpha once per window.
    fn update_alpha(&mut self, ack: &Ack<'_>) {
        self.bytes_acked += ack.acked_bytes;
        self.bytes_marked += ack.ecn_bytes;
        if ack.acked_bytes == 0 || ack.snd_una < self.window_end {
            return;
        }
        let fraction = self.bytes_marked as f64 / self.bytes_acked as f64;
        let g = self.config.g;
        self.alpha = ((1.0 - g) * self.alpha + g * fraction).clamp(0.0, 1.0);
        self.bytes_acked = 0;
        self.bytes_marked = 0;
        self.window_end = ack.snd_nxt;
    }

    /// RFC 8257 §3.3: the window cut on an echoed mark.
    fn ecn_cut(&mut self, snd_nxt: u64) {
        let cwnd = self.window.cwnd();
        let reduction = (cwnd as f64 * self.alpha / 2.0) as u64;
        let cwnd = cwnd.saturating_sub(reduction).max(self.window.min_cwnd());
        self.window.set_cwnd(cwnd);
        self.window.set_ssthresh(cwnd);
        self.ca_remainder = 0;
        self.cwr_end = Some(snd_nxt);
    }

    /// Slow start by at most one MSS per ACK (RFC 5681 §3.1), else congestion avoidance by
    /// `mss * acked / cwnd` in integer bytes with the remainder carried to the next ACK.
    fn grow(&mut self, acked: u64) {
        if acked == 0 {
            return;
        }
        if self.window.in_slow_start() {
            self.window.slow_start(acked, 1);
            return;
        }
        let cwnd = self.window.cwnd();
        let numerator = self.window.mss() as u128 * acked as u128 + self.ca_remainder as u128;
        self.ca_remainder = (numerator % cwnd as u128) as u64;
        self.window.set_cwnd(cwnd + (numerator / cwnd as u128) as u64);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Dctcp::new(self.config.clone());
        self.window = RenoWindow::new(self.config.window(), flow.mss);
        ctx.set_cwnd(self.window.cwnd());
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        let before = self.window.cwnd();
        let may_grow = self.window.on_ack(ack);
        self.update_alpha(ack);
        if self.cwr_end.is_some_and(|end| self.window.snd_una() >= end) {
            self.cwr_end = None;
        }
        if ack.ecn_echo && self.cwr_end.is_none() && !self.window.in_loss_window() {
            self.ecn_cut(ack.snd_nxt);
        } else if self.cwr_end.is_none() && may_grow {
            self.grow(ack.acked_bytes);
        }
        if self.window.cwnd() != before {
            ctx.set_cwnd(self.window.cwnd());
        }
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        let Some(flight) = self.window.loss_flight(loss) else {
            return;
        };
        // A loss ends CWR: it is the stronger signal and reduces even right after an ECN cut.
        self.cwr_end = None;
        self.ca_remainder = 0;
        self.window.reduce(loss.kind, flight / 2);
        if loss.kind == LossKind::Timeout && self.config.clamp_alpha_on_loss {
            self.alpha = 1.0;
        }
        ctx.set_cwnd(self.window.cwnd());
    }

    /// With `program = true`: the per-signal program of [`library`].
    fn programs(&self) -> Vec<Arc<Program>> {
        library::per_signal_when(self.config.program)
    }

    fn on_report(&mut self, report: &ProgramReport<'_>, ctx: &mut Ctx) {
        library::deliver(self, report, ctx);
    }

    /// `cwnd` and `ssthresh` in bytes (`ssthresh` is `u64::MAX` while unset), then `alpha`.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.window.cwnd() as f64);
        out("ssthresh", self.window.ssthresh() as f64);
        out("alpha", self.alpha);
    }
}
