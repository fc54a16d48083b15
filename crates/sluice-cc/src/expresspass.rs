//! `expresspass` and `ep_aeolus`: ExpressPass (Cho, Jang and Han, SIGCOMM'17), credit-scheduled
//! receiver-driven transport with rate-based credit generation and credit-loss feedback.
//!
//! The receiver paces credits (tokens) at a rate; each credit lets the sender send one data packet.
//! Switches limit credits per port to token / (token + data) of the link rate with a small credit queue
//! (P3), so that credits in excess of a bottleneck's capacity are dropped; the receiver learns the drops
//! from gaps in the credit sequence numbers that data packets echo. Once per update period the feedback
//! control (the authors' ns-2 code, kaist-ina/ns2-xpass `xpass/xpass.cc` `credit_feedback_control`)
//! runs with `loss` = credits lost / credits sent in the period and a target loss
//! `target = (1 - cur/max) x target_loss`:
//! - `loss > target`: `cur = delivered credit rate x (1 + target)` (never above `cur`), `w = max(w/2, w_min)`;
//! - otherwise: `w = min(w + w_step, w_max)` when the previous period also increased,
//!   then `cur = w x max + (1 - w) x cur`;
//!
//! with `cur` clamped to [one credit per period, `max`]. `max` is the line rate's data share
//! data / (data + token). A new flow starts at `initial_fraction x max` (x remaining/40 for flows under
//! 40 packets, `xpass.cc` `credit_request`).
//!
//! `ep_aeolus` (EP+Aeolus, Hu et al. SIGCOMM'20) adds a one-BDP unscheduled phase with selective
//! dropping at switches.

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_S, PS_PER_US};

use crate::api::{FlowInfo, Needs, TimerId};
use crate::receiver::{Arrival, ReceiverControl, RxCtx, RxEvents};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};
use crate::token::{token_factory, TokenFactory, TokenTransport, Unscheduled};

/// The feedback-update timer.
pub const UPDATE_TIMER: TimerId = TimerId(0);

/// ExpressPass parameters; transport settings ([`TokenTransport`]) sit next to them in `[cc.params]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpressPassConfig {
    /// Initial credit rate as a fraction of the maximum. Default 0.5 (ns2-xpass `tcl/lib/ns-default.tcl`
    /// `alpha_ 0.5`).
    pub initial_fraction: f64,
    /// Initial aggressiveness w. Default 0.5 (ns-default.tcl `w_init_ 0.5`).
    pub w_init: f64,
    /// Floor of w. Default 0.01 (ns-default.tcl `min_w_ 0.01`).
    pub w_min: f64,
    /// Ceiling of w. Default 0.5 (xpass.cc: w capped at 0.5).
    pub w_max: f64,
    /// Increase of w after two increasing periods. Default 0.05 (xpass.cc `w_ + 0.05`).
    pub w_step: f64,
    /// Target loss at zero rate; the target scales with (1 - cur/max). Default 0.125 (ns-default.tcl
    /// `target_loss_scaling_ 0.125`).
    pub target_loss: f64,
    /// Feedback period in RTTs: the credit-to-data round trip the receiver measures, an EWMA with gain
    /// `rtt_gain` over each data packet's credit (starting from the path's base RTT). Default 1 (xpass.cc
    /// updates once per measured RTT).
    pub update_rtts: f64,
    /// Weight of a new credit-to-data RTT sample. Default 0.2 (xpass.cc: `rtt = 0.8 rtt + 0.2 sample`).
    pub rtt_gain: f64,
    /// The token transport.
    #[serde(flatten)]
    pub transport: TokenTransport,
}

impl ExpressPassConfig {
    /// ExpressPass's transport: no unscheduled phase, rate-based credits, switch and host credit limiters
    /// with a credit queue of 8 (section 3.1), no volume control (the sender's CREDIT_STOP ends the
    /// flow), credits expire after the 200 us, credit spacing jittered by +-10% (ns2-xpass
    /// `xpass.cc`, as in the authors' simulations), the sender's early CREDIT_STOP (ns2-xpass
    /// `early_credit_stop_`) and a credit-request timer of 2 ms. ns2-xpass resends the request every
    /// 100 us until the first credit, but here a receiver's NIC paces the credits of all its flows, and at
    /// 0.8 load a flow's first credit can wait hundreds of microseconds behind the others' (the 100 us
    /// timer fired for 40,018 of 86,398 memcached flows at 100 Gbps, none lost). 2 ms, the Homa and ToCC
    /// presets' value, fires in no run of the study without loss.
    pub fn defaults() -> ExpressPassConfig {
        ExpressPassConfig {
            initial_fraction: 0.5,
            w_init: 0.5,
            w_min: 0.01,
            w_max: 0.5,
            w_step: 0.05,
            target_loss: 0.125,
            update_rtts: 1.0,
            rtt_gain: 0.2,
            transport: TokenTransport {
                unscheduled: Unscheduled::None,
                token_limiter: true,
                host_limiter: true,
                volume_control: false,
                token_jitter: 0.1,
                early_stop: true,
                tx_timeout: 2_000 * PS_PER_US,
                ..TokenTransport::default()
            },
        }
    }

    /// EP+Aeolus: ExpressPass with a one-BDP unscheduled phase that switches drop above 8 KB.
    pub fn aeolus_defaults() -> ExpressPassConfig {
        let mut c = Self::defaults();
        c.transport.unscheduled = Unscheduled::Bdp;
        c.transport.aeolus = true;
        c
    }

    fn validate(self) -> Result<ExpressPassConfig, ParamError> {
        let err = |k: &str, m: &str| Err(ParamError { key: Some(k.into()), message: m.into() });
        if !(self.initial_fraction > 0.0 && self.initial_fraction <= 1.0) {
            return err("initial_fraction", "must be within (0, 1]");
        }
        if !(self.w_min > 0.0 && self.w_min <= self.w_max && self.w_max <= 1.0) {
            return err("w_min", "need 0 < w_min <= w_max <= 1");
        }
        if !(self.w_init >= self.w_min && self.w_init <= self.w_max) {
            return err("w_init", "must be within [w_min, w_max]");
        }
        if !(self.rtt_gain > 0.0 && self.rtt_gain <= 1.0) {
            return err("rtt_gain", "must be within (0, 1]");
        }
        if self.update_rtts <= 0.0 {
            return err("update_rtts", "must be positive");
        }
        if !(0.0..1.0).contains(&self.target_loss) {
            return err("target_loss", "must be within [0, 1)");
        }
        Ok(self)
    }
}

const NEEDS: Needs = Needs { token_transport: true, receiver: true, ..Needs::NOTHING };

/// The `expresspass` registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "expresspass",
    summary: "ExpressPass: receiver-paced credits, switch credit limiters, credit-loss feedback (token-based)",
    control: Control::Rate,
    needs: NEEDS,
    build: |p, r| build(p, r, ExpressPassConfig::defaults(), "expresspass"),
};

/// The `ep_aeolus` registry entry.
pub const ALGORITHM_AEOLUS: Algorithm = Algorithm {
    name: "ep_aeolus",
    summary: "ExpressPass with Aeolus: one-BDP unscheduled burst, selective dropping, probe (token-based)",
    control: Control::Rate,
    needs: NEEDS,
    build: |p, r| build(p, r, ExpressPassConfig::aeolus_defaults(), "ep_aeolus"),
};

fn build(
    params: &toml::Table,
    _line_rate: Rate,
    defaults: ExpressPassConfig,
    name: &'static str,
) -> Result<std::sync::Arc<dyn Factory>, ParamError> {
    let config = merge_params(&defaults, params)?.validate()?;
    token_factory(TokenFactory {
        name,
        config,
        make: |c, f| Box::new(ExpressPass::new(c, f)),
        transport: |c| &c.transport,
    })
}

/// The receiver's credit controller of one flow.
#[derive(Debug, Clone)]
pub struct ExpressPass {
    config: ExpressPassConfig,
    max_rate: Rate,
    cur: Rate,
    w: f64,
    /// The current feedback period (the one the pending update timer covers).
    period: Time,
    /// Measured credit-to-data RTT (EWMA), in ps.
    rtt: f64,
    token_bytes: u64,
    last_increase: bool,
    /// Highest credit sequence number echoed so far (+1), and its value at the last update.
    seq_high: u64,
    seq_at_update: u64,
    /// Credits echoed by data since the last update.
    echoed: u64,
}

impl ExpressPass {
    /// A controller for `flow`.
    pub fn new(config: &ExpressPassConfig, flow: &FlowInfo) -> ExpressPass {
        let data_wire = (flow.mss + flow.header_bytes) as u128;
        let token_wire = config.transport.token_wire as u128;
        let max_rate = (flow.line_rate as u128 * data_wire / (data_wire + token_wire)) as Rate;
        let period = ((flow.base_rtt as f64 * config.update_rtts) as Time).max(1);
        ExpressPass {
            config: config.clone(),
            max_rate,
            cur: max_rate,
            w: config.w_init,
            period,
            rtt: flow.base_rtt as f64,
            token_bytes: config.transport.token_bytes(flow.mss),
            last_increase: false,
            seq_high: 0,
            seq_at_update: 0,
            echoed: 0,
        }
    }

    /// The current credit rate (data bit/s the credits grant).
    pub fn rate(&self) -> Rate {
        self.cur
    }

    fn floor(&self) -> Rate {
        (self.token_bytes as u128 * 8 * PS_PER_S as u128 / self.period as u128) as Rate
    }

    /// One feedback update from the credits echoed in the last period.
    fn update(&mut self) {
        let sent = self.seq_high - self.seq_at_update;
        self.seq_at_update = self.seq_high;
        let echoed = std::mem::take(&mut self.echoed).min(sent);
        if sent == 0 {
            return;
        }
        let loss = 1.0 - echoed as f64 / sent as f64;
        let target = (1.0 - self.cur as f64 / self.max_rate as f64) * self.config.target_loss;
        if loss > target {
            let delivered = echoed as f64 * self.token_bytes as f64 * 8.0 * PS_PER_S as f64 / self.period as f64;
            self.cur = ((delivered * (1.0 + target)) as Rate).min(self.cur);
            self.w = (self.w / 2.0).max(self.config.w_min);
            self.last_increase = false;
        } else {
            if self.last_increase {
                self.w = (self.w + self.config.w_step).min(self.config.w_max);
            }
            self.cur = (self.w * self.max_rate as f64 + (1.0 - self.w) * self.cur as f64) as Rate;
            self.last_increase = true;
        }
        self.cur = self.cur.clamp(self.floor().min(self.max_rate), self.max_rate);
    }
}

impl ReceiverControl for ExpressPass {
    fn name(&self) -> &'static str {
        "expresspass"
    }

    fn events(&self) -> RxEvents {
        RxEvents::DATA | RxEvents::TIMER
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut RxCtx) {
        let mut fraction = self.config.initial_fraction;
        if let Some(size) = flow.size {
            let packets = size.div_ceil(flow.mss as u64);
            if packets < 40 {
                fraction *= packets as f64 / 40.0;
            }
        }
        self.cur = ((self.max_rate as f64 * fraction) as Rate).max(self.floor().min(self.max_rate));
        ctx.set_token_rate(self.cur);
        ctx.set_timer(UPDATE_TIMER, ctx.now() + self.period);
    }

    fn on_data(&mut self, arrival: &Arrival, _ctx: &mut RxCtx) {
        if let Some(sample) = arrival.token_rtt {
            self.rtt = (1.0 - self.config.rtt_gain) * self.rtt + self.config.rtt_gain * sample as f64;
        }
        if let Some(seq) = arrival.token_seq {
            self.echoed += 1;
            self.seq_high = self.seq_high.max(seq + 1);
        }
    }

    fn on_timer(&mut self, _id: TimerId, ctx: &mut RxCtx) {
        self.update();
        // The next period follows the measured RTT; `update` needs the one that just elapsed.
        self.period = ((self.rtt * self.config.update_rtts) as Time).max(1);
        ctx.set_token_rate(self.cur);
        ctx.set_timer(UPDATE_TIMER, ctx.now() + self.period);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("credit_rate_bps", self.cur as f64);
        out("w", self.w);
        out("rtt_ns", self.rtt / PS_PER_NS as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_flows::fabric_flow as flow;

    #[test]
    fn loss_above_target_cuts_to_the_delivered_rate() {
        let mut ep = ExpressPass::new(&ExpressPassConfig::defaults(), &flow());
        ep.cur = ep.max_rate;
        // 100 credits sent in one RTT, 50 echoed: half lost.
        ep.seq_high = 100;
        ep.echoed = 50;
        ep.update();
        let delivered = 50.0 * 1000.0 * 8.0 / 5e-6;
        assert!((ep.cur as f64 - delivered).abs() / delivered < 0.01, "cur {} vs {delivered}", ep.cur);
        assert_eq!(ep.w, 0.25);
    }

    #[test]
    fn the_feedback_period_follows_the_measured_credit_rtt() {
        let mut ep = ExpressPass::new(&ExpressPassConfig::defaults(), &flow());
        let mut ctx = RxCtx::new(0);
        ep.on_start(&flow(), &mut ctx);
        assert_eq!(ctx.decisions().set_timers[0], Some(5_000_000), "first period: the base RTT");
        // Credits come back 25 us after they left (queuing): the EWMA (gain 0.2) approaches 25 us.
        for seq in 0..40 {
            let arrival = Arrival { token_seq: Some(seq), token_rtt: Some(25_000_000), ..Arrival::default() };
            ep.on_data(&arrival, &mut ctx);
        }
        let mut ctx = RxCtx::new(5_000_000);
        ep.on_timer(UPDATE_TIMER, &mut ctx);
        let next = ctx.decisions().set_timers[0].expect("rearmed") - 5_000_000;
        assert!((24_900_000..=25_000_000).contains(&next), "next period {next} ps");
        // The update that fired covered the 5 us period that elapsed: 40 credits in 5 us, no loss.
        assert!(ep.last_increase);
    }

    #[test]
    fn no_loss_moves_toward_max() {
        let mut ep = ExpressPass::new(&ExpressPassConfig::defaults(), &flow());
        ep.cur = ep.max_rate / 4;
        ep.seq_high = 10;
        ep.echoed = 10;
        ep.update();
        let expect = 0.5 * ep.max_rate as f64 + 0.5 * (ep.max_rate / 4) as f64;
        assert!((ep.cur as f64 - expect).abs() < 2.0);
        assert!(ep.last_increase);
    }
}
