//! `none`: no congestion control. The flow sends at line rate with an unlimited window; used to check
//! ideal flow completion times.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{CongestionControl, Ctx, Events, FlowInfo, Needs};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// `none` has no parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoneConfig {}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "none",
    summary: "no congestion control: line rate, unlimited window (ideal-FCT checks)",
    control: Control::None,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = merge_params(&NoneConfig::default(), params)?;
    Ok(Arc::new(ConfigFactory { config, make: |_, _| Box::new(LineRate), cnp_interval: None }))
}

/// The controller: sets line rate once.
#[derive(Debug)]
pub struct LineRate;

impl CongestionControl for LineRate {
    fn name(&self) -> &'static str {
        "none"
    }

    fn events(&self) -> Events {
        Events::default()
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        ctx.set_rate(flow.line_rate);
        ctx.set_cwnd(u64::MAX);
    }
}
