//! `rocc`: RoCC (Taheri et al., "RoCC: Robust Congestion Control for RDMA", CoNEXT'20): switches compute a
//! fair rate per egress port with a PI controller on the queue length ([`crate::rocc_switch`]) and the
//! sender sends at the rate the most constraining switch gave it.
//!
//! The sender (the authors' OMNeT++ model, `HostEtherQueue`'s `Channel`) starts at line rate. A fair
//! rate from a switch ([`Feedback::Signal`] with [`SignalOrigin::Switch`]) is taken when no switch has
//! set the rate yet, when it comes from the switch that set it, or when it is lower than the current
//! rate: so the flow follows its bottleneck, the switch with the smallest fair rate. A rate at or above
//! line rate lifts the limit. With no rate taken for `self_rise_interval`, the rate doubles (and again
//! each interval after), so a flow whose bottleneck went away recovers. With `feedback = "path"` the
//! switches write their fair rates into the data packets instead, the path's minimum comes back on each
//! ACK ([`SignalOrigin::Path`]), and the sender takes it as it is.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_US};

use crate::api::{CongestionControl, Ctx, Events, Feedback, FlowInfo, Needs, SignalOrigin, TimerId};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};
use crate::rocc_switch::RoccSwitch;
use crate::signal::SwitchSignal;

/// The self-rise timer.
pub const SELF_RISE_TIMER: TimerId = TimerId(0);

/// How the fair rate reaches the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoccFeedback {
    /// A feedback packet from the switch to each flow queued at a port, once per update interval (the
    /// paper's rate messages).
    #[default]
    Switch,
    /// The fair rate written into every data packet, the path's minimum echoed on its ACK.
    Path,
}

/// RoCC's settings, the switch side's and the sender's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoccConfig {
    /// How the fair rate reaches the sender.
    pub feedback: RoccFeedback,
    /// How often a port updates its fair rate (T).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub update_interval: Time,
    /// The fair rate's unit: rates are whole multiples of it.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub rate_unit: Rate,
    /// The queue's unit in the controller (queues are whole multiples of it).
    #[serde(with = "sluice_core::serde_units::size")]
    pub queue_unit: u64,
    /// The queue the PI controller steers to (Qref).
    #[serde(with = "sluice_core::serde_units::size")]
    pub q_ref: u64,
    /// Growth within one interval that halves the fair rate (Qmid).
    #[serde(with = "sluice_core::serde_units::size")]
    pub q_mid: u64,
    /// The queue that drops the fair rate to `min_rate` (Qmax).
    #[serde(with = "sluice_core::serde_units::size")]
    pub q_max: u64,
    /// The PI controller's proportional gain at full rate, per queue unit (alpha-bar).
    pub alpha_bar: f64,
    /// The PI controller's derivative gain at full rate, per queue unit (beta-bar).
    pub beta_bar: f64,
    /// The smallest fair rate a switch gives (Fmin).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub min_rate: Rate,
    /// With no rate taken for this long, the sender doubles its rate.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub self_rise_interval: Time,
}

impl RoccConfig {
    /// The defaults for hosts at `line_rate`.
    pub fn for_line_rate(_line_rate: Rate) -> RoccConfig {
        RoccConfig {
            // Paper and the authors' model: switches send their fair rate to the sources in rate messages.
            feedback: RoccFeedback::Switch,
            // Authors' model, SwitchEtherQueue.cc: T = 40000 ns.
            update_interval: 40 * PS_PER_US,
            // Authors' model, SwitchEtherQueue.cc: RATE_RESOLUTION = 10 Mbps.
            rate_unit: 10_000_000,
            // Authors' model, SwitchEtherQueue.cc: QUEUE_RESOLUTION = 600 bytes.
            queue_unit: 600,
            // The model takes Qref, Qmid and Qmax as parameters without published values: sluice's
            // choice, a reference of 150 KB, growth of twice that in one interval for the halving, and
            // 6 MB for the drop to the minimum, above what eight senders starting at line rate queue in
            // the first interval (a lower Qmax cuts them all to the minimum at once, and the PI loop's
            // small gains at low rates take milliseconds to recover; docs/signals.md).
            q_ref: 150_000,
            q_mid: 300_000,
            q_max: 6_000_000,
            // Authors' model, SwitchEtherQueue.cc autoTune: alphaBar 0.3, betaBar 1.5 (its inline values).
            alpha_bar: 0.3,
            beta_bar: 1.5,
            // The model's minRate parameter, without a published value: sluice's choice, DCQCN's minimum
            // rate in the authors' ns-3 model (qbb-net-device.cc MinRate), as sluice's `dcqcn` takes it.
            min_rate: 100_000_000,
            // Authors' model, HostEtherQueue.cc: SELF_RISE_INTERVAL = 55000 ns.
            self_rise_interval: 55 * PS_PER_US,
        }
    }

    /// The defaults for `line_rate` with `params` overlaid, checked.
    pub fn resolve(params: &toml::Table, line_rate: Rate) -> Result<RoccConfig, ParamError> {
        let config = merge_params(&RoccConfig::for_line_rate(line_rate), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges.
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if self.update_interval == 0 {
            return err("update_interval", "must be positive");
        }
        if self.self_rise_interval == 0 {
            return err("self_rise_interval", "must be positive");
        }
        if self.rate_unit == 0 {
            return err("rate_unit", "must be positive");
        }
        if self.queue_unit == 0 {
            return err("queue_unit", "must be positive");
        }
        if self.min_rate < self.rate_unit {
            return err("min_rate", "must be at least one rate_unit");
        }
        if !(self.alpha_bar > 0.0 && self.alpha_bar.is_finite()) {
            return err("alpha_bar", "must be positive");
        }
        if !(self.beta_bar >= 0.0 && self.beta_bar.is_finite()) {
            return err("beta_bar", "must be zero or positive");
        }
        if self.q_max <= self.q_ref {
            return err("q_max", "must be above q_ref");
        }
        if self.q_mid == 0 {
            return err("q_mid", "must be positive");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "rocc",
    summary: "RoCC (Taheri et al. CoNEXT'20): switches compute a fair rate per port with a PI controller on \
              the queue; senders take the bottleneck's rate",
    control: Control::Rate,
    needs: Needs { signal: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    Ok(Arc::new(RoccFactory { config: RoccConfig::resolve(params, line_rate)? }))
}

/// Builds RoCC's senders and its switch side from one config.
struct RoccFactory {
    config: RoccConfig,
}

impl Factory for RoccFactory {
    fn create(&self, _flow: &FlowInfo) -> Box<dyn CongestionControl> {
        Box::new(Rocc::new(self.config.clone()))
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn switch_signal(&self) -> Option<Arc<dyn SwitchSignal>> {
        Some(Arc::new(RoccSwitch::new(self.config.clone())))
    }
}

/// RoCC's sender for one flow.
#[derive(Debug, Clone)]
pub struct Rocc {
    config: RoccConfig,
    line_rate: Rate,
    rate: Rate,
    /// The switch whose rate the flow follows, once one has set it.
    from: Option<u32>,
}

impl Rocc {
    /// A sender with `config`; its rate is set by [`CongestionControl::on_start`].
    pub fn new(config: RoccConfig) -> Rocc {
        Rocc { config, line_rate: 0, rate: 0, from: None }
    }

    /// The sending rate (bit/s).
    pub fn rate(&self) -> Rate {
        self.rate
    }

    fn take(&mut self, rate: Rate, ctx: &mut Ctx) {
        self.rate = rate.clamp(1, self.line_rate);
        ctx.set_rate(self.rate);
        if self.rate < self.line_rate {
            ctx.set_timer(SELF_RISE_TIMER, ctx.now() + self.config.self_rise_interval);
        } else {
            ctx.cancel_timer(SELF_RISE_TIMER);
        }
    }
}

impl CongestionControl for Rocc {
    fn name(&self) -> &'static str {
        "rocc"
    }

    fn events(&self) -> Events {
        Events::FEEDBACK | Events::TIMER
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.line_rate = flow.line_rate;
        self.rate = flow.line_rate;
        ctx.set_rate(self.rate);
    }

    fn on_feedback(&mut self, feedback: &Feedback, ctx: &mut Ctx) {
        let Feedback::Signal { value, origin, .. } = *feedback else { return };
        match origin {
            SignalOrigin::Switch(node) => {
                if self.from.is_none() || self.from == Some(node) || value < self.rate {
                    self.from = Some(node);
                    self.take(value, ctx);
                }
            }
            SignalOrigin::Path(_) => self.take(value, ctx),
        }
    }

    fn on_timer(&mut self, id: TimerId, ctx: &mut Ctx) {
        if id == SELF_RISE_TIMER && self.rate < self.line_rate {
            // Each rise re-arms the timer: the rate doubles every interval until a switch answers.
            self.take(self.rate.saturating_mul(2), ctx);
        }
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("rate_bps", self.rate as f64);
        out("from_switch", self.from.map_or(-1.0, |n| n as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: Rate = 100_000_000_000;

    fn flow() -> FlowInfo {
        crate::test_flows::fabric_flow()
    }

    fn signal(value: Rate, origin: SignalOrigin) -> Feedback {
        Feedback::Signal { value, origin, at: 0, sent_at: 0 }
    }

    fn started() -> Rocc {
        let mut rocc = Rocc::new(RoccConfig::for_line_rate(G100));
        rocc.on_start(&flow(), &mut Ctx::new(0));
        rocc
    }

    #[test]
    fn the_flow_follows_its_bottleneck_switch() {
        let mut rocc = started();
        let mut ctx = Ctx::new(10);
        rocc.on_feedback(&signal(40_000_000_000, SignalOrigin::Switch(3)), &mut ctx);
        assert_eq!(ctx.decisions().rate, Some(40_000_000_000));
        let mut ctx = Ctx::new(20);
        rocc.on_feedback(&signal(60_000_000_000, SignalOrigin::Switch(5)), &mut ctx);
        assert_eq!(ctx.decisions().rate, None, "a higher rate from another switch is ignored");
        rocc.on_feedback(&signal(25_000_000_000, SignalOrigin::Switch(5)), &mut ctx);
        assert_eq!(rocc.rate(), 25_000_000_000, "a lower one is taken");
        rocc.on_feedback(&signal(30_000_000_000, SignalOrigin::Switch(5)), &mut ctx);
        assert_eq!(rocc.rate(), 30_000_000_000, "the bottleneck may raise it");
    }

    #[test]
    fn without_rates_the_flow_doubles_back_to_line_rate() {
        let mut rocc = started();
        let mut ctx = Ctx::new(0);
        rocc.on_feedback(&signal(20_000_000_000, SignalOrigin::Path(2)), &mut ctx);
        let rise = ctx.decisions().set_timers[0].expect("self-rise armed");
        assert_eq!(rise, 55 * PS_PER_US);
        let mut ctx = Ctx::new(rise);
        rocc.on_timer(SELF_RISE_TIMER, &mut ctx);
        assert_eq!(rocc.rate(), 40_000_000_000);
        for _ in 0..2 {
            rocc.on_timer(SELF_RISE_TIMER, &mut Ctx::new(rise));
        }
        assert_eq!(rocc.rate(), flow().line_rate, "capped at line rate");
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let params: toml::Table = toml::from_str("q_max = \"100KB\"").unwrap();
        let err = RoccConfig::resolve(&params, G100).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("q_max"), "{err}");
        let params: toml::Table = toml::from_str("feedback = \"carrier pigeon\"").unwrap();
        assert_eq!(RoccConfig::resolve(&params, G100).unwrap_err().key.as_deref(), Some("feedback"));
    }
}
