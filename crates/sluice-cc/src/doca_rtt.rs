//! `doca_rtt`: the RTT-probe algorithm NVIDIA ships as the reference user algorithm of DOCA PCC
//! (BlueField-3's programmable congestion control; the `rtt_template` example of the DOCA SDK).
//!
//! It measures the round trip with probe packets, not with ACKs: the sender keeps one RTT request in
//! flight, the receiver answers it at once, and each answer updates the rate:
//! - a NACK since the last answer and a round trip at or above `max_delay`: the rate falls by
//!   `5 x update_factor`;
//! - else a CNP since the last answer, or a round trip at or above `max_delay`: by `2 x update_factor`;
//! - else a round trip above `base_rtt`: by `update_factor`;
//! - else it rises by `ai` of the line rate;
//!
//! always within `[min_rate, line rate]`. Then the next request leaves. As on the RoCE NICs the template
//! runs on, switches mark ECN and receivers answer marks with CNPs, which the next answer counts. A request unanswered for
//! `abort_time` (doubled at each abort in a row) is given up and sent again, so a lost probe does not
//! stall the flow. A new flow starts at `new_flow_rate` of the line rate.
//!
//! The DOCA template keeps rates as fractions of the line rate in 20-bit fixed point and factors in
//! 16-bit fixed point; sluice computes in bit/s with the same fractions.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS};

use crate::api::{CongestionControl, Ctx, Events, FlowInfo, Loss, Needs, TimerId};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};

/// The timer that gives up an unanswered RTT request.
pub const ABORT_TIMER: TimerId = TimerId(0);

/// The algorithm's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocaRttConfig {
    /// Multiplicative decrease step (of the rate) for a round trip above `base_rtt`.
    pub update_factor: f64,
    /// Additive increase per answer with a round trip at or below `base_rtt`, as a fraction of the
    /// line rate.
    pub ai: f64,
    /// The round trip above which the rate falls.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub base_rtt: Time,
    /// The round trip at or above which the rate falls as for a CNP.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub max_delay: Time,
    /// A new flow's rate, as a fraction of the line rate.
    pub new_flow_rate: f64,
    /// The lowest rate, as a fraction of the line rate.
    pub min_rate: f64,
    /// How long a request may go unanswered before it is sent again (doubled at each abort in a row).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub abort_time: Time,
    /// Receivers send at most one CNP per flow per this interval.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub cnp_interval: Time,
}

impl Default for DocaRttConfig {
    fn default() -> DocaRttConfig {
        DocaRttConfig {
            // rtt_template_algo_params.h: UPDATE_FACTOR = (1 << 16) * 10 / 100, 10% in 16-bit fixed point.
            update_factor: 0.10,
            // rtt_template_algo_params.h: AI = (1 << 20) * 5 / 100, 5% of the line rate (20-bit fixed point).
            ai: 0.05,
            // rtt_template_algo_params.h: BASE_RTT = 13000 ns.
            base_rtt: 13_000 * PS_PER_NS,
            // rtt_template_algo_params.h: MAX_DELAY = 150000 ns.
            max_delay: 150_000 * PS_PER_NS,
            // rtt_template_algo_params.h: NEW_FLOW_RATE = 1 << 20, the line rate.
            new_flow_rate: 1.0,
            // rtt_template_algo_params.h: MIN_RATE = 1 << (20 - 14), 1/16384 of the line rate.
            min_rate: 1.0 / 16384.0,
            // rtt_template.c: ABORT_TIME = 300000 ns, shifted left by the count of aborts in a row.
            abort_time: 300_000 * PS_PER_NS,
            // The RoCE notification point the template's NICs pair it with is DCQCN's (Zhu et al.
            // SIGCOMM'15): at most one CNP per flow per N = 50 us, as sluice's `dcqcn` paper variant.
            cnp_interval: 50_000 * PS_PER_NS,
        }
    }
}

impl DocaRttConfig {
    /// The defaults with `params` overlaid, checked.
    pub fn resolve(params: &toml::Table) -> Result<DocaRttConfig, ParamError> {
        let config: DocaRttConfig = merge_params(&DocaRttConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges: the largest decrease (`5 x update_factor`) must leave a positive rate.
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.update_factor > 0.0 && self.update_factor < 0.2) {
            return err("update_factor", "must be above 0 and below 0.2 (a NACK cuts 5 times as much)");
        }
        if !(self.ai > 0.0 && self.ai <= 1.0) {
            return err("ai", "must be above 0 and at most 1 (a fraction of the line rate)");
        }
        if !(self.min_rate > 0.0 && self.min_rate <= self.new_flow_rate) {
            return err("min_rate", "must be above 0 and at most new_flow_rate");
        }
        if !(self.new_flow_rate > 0.0 && self.new_flow_rate <= 1.0) {
            return err("new_flow_rate", "must be above 0 and at most 1 (a fraction of the line rate)");
        }
        if self.max_delay <= self.base_rtt {
            return err("max_delay", "must be above base_rtt");
        }
        if self.abort_time == 0 {
            return err("abort_time", "must be positive");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "doca_rtt",
    summary: "DOCA PCC's reference RTT algorithm (NVIDIA BlueField-3): one RTT probe in flight; rate \
              down by 10% when the probe's round trip is above 13 us, up by 5% of line rate otherwise",
    control: Control::Rate,
    // The template runs on RoCE NICs, whose receivers answer ECN marks with CNPs: it counts them.
    needs: Needs { ecn: true, cnp: true, probe: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    Ok(Arc::new(DocaRttFactory { config: DocaRttConfig::resolve(params)? }))
}

struct DocaRttFactory {
    config: DocaRttConfig,
}

impl Factory for DocaRttFactory {
    fn create(&self, _flow: &FlowInfo) -> Box<dyn CongestionControl> {
        Box::new(DocaRtt::new(self.config.clone()))
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn cnp_interval(&self) -> Option<Time> {
        Some(self.config.cnp_interval)
    }
}

/// One flow's sender.
#[derive(Debug, Clone)]
pub struct DocaRtt {
    config: DocaRttConfig,
    line_rate: f64,
    rate: f64,
    /// The latest probe's round trip.
    rtt: Option<Time>,
    /// A NACK or loss since the last answer.
    was_nack: bool,
    /// A CNP since the last answer.
    was_cnp: bool,
    /// Requests given up in a row (each doubles the wait for the next).
    aborts: u32,
    /// Answers handled.
    probes: u64,
}

impl DocaRtt {
    /// A sender with `config`; its rate is set by [`CongestionControl::on_start`].
    pub fn new(config: DocaRttConfig) -> DocaRtt {
        DocaRtt { config, line_rate: 0.0, rate: 0.0, rtt: None, was_nack: false, was_cnp: false, aborts: 0, probes: 0 }
    }

    /// The sending rate (bit/s).
    pub fn rate(&self) -> Rate {
        self.rate as Rate
    }

    /// Sends the next RTT request, and arms the timer that gives it up.
    fn request(&mut self, ctx: &mut Ctx) {
        ctx.request_probe();
        let wait = self.config.abort_time.saturating_mul(1 << self.aborts.min(16));
        ctx.set_timer(ABORT_TIMER, ctx.now().saturating_add(wait));
    }

    /// The rate after an answer with round trip `rtt` (the template's `algorithm_core`).
    fn updated_rate(&mut self, rtt: Time) -> f64 {
        let c = &self.config;
        let late = rtt >= c.max_delay;
        let rate = if self.was_nack && late {
            self.was_nack = false;
            self.rate * (1.0 - 5.0 * c.update_factor)
        } else if self.was_cnp || late {
            self.was_cnp = false;
            self.rate * (1.0 - 2.0 * c.update_factor)
        } else if rtt > c.base_rtt {
            self.rate * (1.0 - c.update_factor)
        } else {
            self.rate + c.ai * self.line_rate
        };
        rate.clamp(c.min_rate * self.line_rate, self.line_rate)
    }
}

impl CongestionControl for DocaRtt {
    fn name(&self) -> &'static str {
        "doca_rtt"
    }

    fn events(&self) -> Events {
        Events::PROBE | Events::CNP | Events::LOSS | Events::TIMER
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.line_rate = flow.line_rate as f64;
        self.rate = self.config.new_flow_rate * self.line_rate;
        ctx.set_rate(self.rate());
        self.request(ctx);
    }

    fn on_probe(&mut self, rtt: Time, ctx: &mut Ctx) {
        self.rtt = Some(rtt);
        self.probes += 1;
        self.aborts = 0;
        self.rate = self.updated_rate(rtt);
        ctx.set_rate(self.rate());
        self.request(ctx);
    }

    fn on_cnp(&mut self, _ctx: &mut Ctx) {
        self.was_cnp = true;
    }

    fn on_loss(&mut self, _loss: &Loss, _ctx: &mut Ctx) {
        self.was_nack = true;
    }

    fn on_timer(&mut self, id: TimerId, ctx: &mut Ctx) {
        if id == ABORT_TIMER {
            self.aborts += 1;
            self.request(ctx);
        }
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("rate_bps", self.rate);
        // Unset until the first answer: the trace writes it empty.
        out("rtt_ns", self.rtt.map_or(u64::MAX as f64, |t| t as f64 / PS_PER_NS as f64));
        out("probes", self.probes as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LossKind;
    use sluice_core::PS_PER_US;

    fn started() -> (DocaRtt, Rate) {
        let flow = crate::test_flows::fabric_flow();
        let mut cc = DocaRtt::new(DocaRttConfig::default());
        let mut ctx = Ctx::new(0);
        cc.on_start(&flow, &mut ctx);
        assert_eq!(ctx.decisions().rate, Some(flow.line_rate), "a new flow starts at line rate");
        assert!(ctx.decisions().probe, "and asks for its first round trip");
        (cc, flow.line_rate)
    }

    fn answer(cc: &mut DocaRtt, rtt: Time) -> Ctx {
        let mut ctx = Ctx::new(1);
        cc.on_probe(rtt, &mut ctx);
        assert!(ctx.decisions().probe, "every answer sends the next request");
        ctx
    }

    #[test]
    fn the_round_trip_steers_the_rate() {
        let (mut cc, line) = started();
        answer(&mut cc, 20 * PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.9) as Rate, "above base_rtt: 10% down");
        answer(&mut cc, 10 * PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.95) as Rate, "at or below base_rtt: 5% of line rate up");
        answer(&mut cc, 200 * PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.95 * 0.8) as Rate, "past max_delay: 20% down");
        for _ in 0..10 {
            answer(&mut cc, PS_PER_US);
        }
        assert_eq!(cc.rate(), line, "never above line rate");
    }

    #[test]
    fn cnps_and_losses_deepen_the_next_cut() {
        let (mut cc, line) = started();
        cc.on_cnp(&mut Ctx::new(1));
        answer(&mut cc, PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.8) as Rate, "a CNP since the last answer: 20% down");
        let loss = Loss { kind: LossKind::Nack, count: 1, in_flight: 0, snd_nxt: 0 };
        cc.on_loss(&loss, &mut Ctx::new(2));
        answer(&mut cc, 10 * PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.8 + line as f64 * 0.05) as Rate, "a NACK alone cuts nothing");
        answer(&mut cc, 200 * PS_PER_US);
        assert_eq!(cc.rate(), (line as f64 * 0.85 * 0.5) as Rate, "a NACK with a late answer: 50% down");
        for _ in 0..200 {
            answer(&mut cc, 200 * PS_PER_US);
        }
        assert_eq!(cc.rate(), (line as f64 / 16384.0) as Rate, "held at min_rate");
    }

    #[test]
    fn an_unanswered_request_is_sent_again_after_a_growing_wait() {
        let (mut cc, _) = started();
        let mut ctx = Ctx::new(300 * PS_PER_US);
        cc.on_timer(ABORT_TIMER, &mut ctx);
        assert!(ctx.decisions().probe);
        assert_eq!(ctx.decisions().set_timers[0], Some(900 * PS_PER_US), "600 us after the first abort");
        let ctx = answer(&mut cc, 5 * PS_PER_US);
        assert_eq!(ctx.decisions().set_timers[0], Some(1 + 300 * PS_PER_US), "an answer resets the wait");
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let params: toml::Table = toml::from_str("update_factor = 0.5").unwrap();
        assert_eq!(DocaRttConfig::resolve(&params).unwrap_err().key.as_deref(), Some("update_factor"));
        let params: toml::Table = toml::from_str("max_delay = \"5us\"").unwrap();
        assert_eq!(DocaRttConfig::resolve(&params).unwrap_err().key.as_deref(), Some("max_delay"));
    }
}
