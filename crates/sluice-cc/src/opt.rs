//! `opt`: Outstanding Packet Threshold, the first baseline of the endpoint-congestion study (Chong and
//! Krishnan, "Addressing Endpoint-induced Congestion for Accelerator Scale-Out in a Medium-Scale Domain",
//! section III-A).
//!
//! The initiator sends as long as its outstanding (sent, unacknowledged) data stays within a fixed
//! threshold of bytes and packets; there is no rate control, and retransmissions after a NACK (go-back-N)
//! follow the same threshold. The window is set once and never changes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{CongestionControl, Ctx, Events, FlowInfo, Needs};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// OPT parameters (`[cc.params]` with `cc.algorithm = "opt"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptConfig {
    /// Outstanding data threshold as a multiple of the path's bandwidth-delay product at line rate.
    /// Default 2: the paper gives no value (section III-A: "a specified threshold for data size and
    /// packet count"); two BDPs keep one stream at line rate while ACKs return, with the headroom a
    /// go-back-N resend needs. Ignored when `outstanding_bytes` is set.
    pub outstanding_bdps: f64,
    /// Outstanding data threshold in bytes; absent means `outstanding_bdps` of the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outstanding_bytes: Option<u64>,
    /// Outstanding packet threshold; absent means no packet limit beyond the byte threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outstanding_packets: Option<u32>,
}

impl Default for OptConfig {
    fn default() -> Self {
        OptConfig { outstanding_bdps: 2.0, outstanding_bytes: None, outstanding_packets: None }
    }
}

impl OptConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<OptConfig, ParamError> {
        let config = merge_params(&OptConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if !(self.outstanding_bdps.is_finite() && self.outstanding_bdps > 0.0) {
            return err("outstanding_bdps", "must be positive");
        }
        if self.outstanding_bytes == Some(0) {
            return err("outstanding_bytes", "must be at least 1 byte");
        }
        if self.outstanding_packets == Some(0) {
            return err("outstanding_packets", "must be at least 1");
        }
        Ok(())
    }

    /// The outstanding threshold in bytes for a flow: the byte threshold, capped by the packet threshold,
    /// never below one full-sized packet.
    pub fn window(&self, flow: &FlowInfo) -> u64 {
        let mss = flow.mss as u64;
        let bytes = self.outstanding_bytes.unwrap_or((flow.bdp() as f64 * self.outstanding_bdps) as u64);
        let packets = self.outstanding_packets.map_or(u64::MAX, |p| p as u64 * mss);
        bytes.min(packets).max(mss)
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "opt",
    summary: "OPT (endpoint-congestion baseline): fixed outstanding byte/packet threshold, no rate control",
    control: Control::Window,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = OptConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Opt { config: c.clone() }), cnp_interval: None }))
}

/// The OPT controller: one fixed window.
#[derive(Debug, Clone)]
pub struct Opt {
    config: OptConfig,
}

impl CongestionControl for Opt {
    fn name(&self) -> &'static str {
        "opt"
    }

    fn events(&self) -> Events {
        Events::default()
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        ctx.set_cwnd(self.config.window(flow));
        ctx.set_rate(flow.line_rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_flows::endpoint_flow as flow;

    #[test]
    fn window_is_two_bdps_by_default_and_capped_by_packets() {
        let c = OptConfig::default();
        // 100 Gbps x 8 us = 100 000 bytes.
        assert_eq!(c.window(&flow(2048)), 200_000);
        let c = OptConfig { outstanding_packets: Some(4), ..c };
        assert_eq!(c.window(&flow(2048)), 8192);
        let c = OptConfig { outstanding_bytes: Some(100), outstanding_packets: None, ..c };
        assert_eq!(c.window(&flow(2048)), 2048, "never below one packet");
    }

    #[test]
    fn rejects_bad_thresholds() {
        let mut t = toml::Table::new();
        t.insert("outstanding_packets".into(), toml::Value::Integer(0));
        assert_eq!(OptConfig::resolve(&t).unwrap_err().key.as_deref(), Some("outstanding_packets"));
        let mut t = toml::Table::new();
        t.insert("outstanding_bdps".into(), toml::Value::Float(-1.0));
        assert_eq!(OptConfig::resolve(&t).unwrap_err().key.as_deref(), Some("outstanding_bdps"));
    }
}
