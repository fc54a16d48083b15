//! `fixed`: a test algorithm that holds a configured window and/or pacing rate, so that the agent's
//! decisions can be checked in the kernel (`ss -ti` shows the window; the transfer rate shows the pacing).
//! It is an ordinary [`CongestionControl`]; only the agent offers it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_cc::registry::{merge_params, ConfigFactory, Factory, ParamError};
use sluice_cc::{CongestionControl, Ctx, Events, FlowInfo};
use sluice_core::Rate;

/// The algorithm's name in rules and configs.
pub const NAME: &str = "fixed";

/// `fixed` parameters (`[params.fixed]` of the agent config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedConfig {
    /// The window, in full-sized segments. Default 10: Linux `TCP_INIT_CWND` (RFC 6928).
    pub cwnd_packets: u32,
    /// The pacing rate; absent (default) means no pacing.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_core::serde_units::opt_rate")]
    pub rate: Option<Rate>,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig { cwnd_packets: 10, rate: None }
    }
}

/// The controller: sets its window and rate once, at the start.
#[derive(Debug)]
pub struct Fixed {
    cwnd: u64,
    rate: Option<Rate>,
}

impl CongestionControl for Fixed {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events(&self) -> Events {
        Events::ACK
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut Ctx) {
        ctx.set_cwnd(self.cwnd);
        if let Some(rate) = self.rate {
            ctx.set_rate(rate);
        }
    }
}

/// Builds the factory from `[params.fixed]`.
pub fn build(params: &toml::Table) -> Result<Arc<dyn Factory>, ParamError> {
    let config: FixedConfig = merge_params(&FixedConfig::default(), params)?;
    if config.cwnd_packets == 0 {
        return Err(ParamError { key: Some("cwnd_packets".into()), message: "must be at least 1".into() });
    }
    if config.rate == Some(0) {
        return Err(ParamError { key: Some("rate".into()), message: "must be positive".into() });
    }
    Ok(Arc::new(ConfigFactory {
        config,
        make: |c: &FixedConfig, flow: &FlowInfo| {
            Box::new(Fixed { cwnd: c.cwnd_packets as u64 * flow.mss as u64, rate: c.rate })
        },
        cnp_interval: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_its_window_and_rate() {
        let mut params = toml::Table::new();
        params.insert("cwnd_packets".into(), 20.into());
        params.insert("rate".into(), "200Mbps".into());
        let factory = build(&params).unwrap();
        let flow = FlowInfo {
            flow_id: 1,
            mss: 1448,
            header_bytes: 52,
            line_rate: 1_000_000_000,
            base_rtt: 100_000_000,
            hops: 1,
            size: None,
            start: 0,
        };
        let mut cc = factory.create(&flow);
        let mut ctx = Ctx::new(0);
        cc.on_start(&flow, &mut ctx);
        assert_eq!(ctx.decisions().cwnd, Some(20 * 1448));
        assert_eq!(ctx.decisions().rate, Some(200_000_000));
        params.insert("cwnd_packets".into(), 0.into());
        assert_eq!(build(&params).err().unwrap().key.as_deref(), Some("cwnd_packets"));
    }
}
