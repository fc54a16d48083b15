//! `aimd`: the TCP-like baseline of the endpoint-congestion study (Chong and Krishnan, section III-A):
//! an additive-increase, multiplicative-decrease window (RFC 5681) driven by ACKs and NACKs, with no slow
//! start ("the congestion window grows linearly and shrinks in half").
//!
//! - Start: the RFC 5681 §3.1 initial window (eq. 1: 2 segments above 2190-byte segments, 3 above 1095,
//!   else 4).
//! - Per ACK of new data: congestion avoidance, `cwnd += mss * acked / cwnd` (RFC 5681 eq. 3), the
//!   remainder carried in integer bytes; capped at the outstanding threshold of [`crate::opt`] (the
//!   paper's baselines share the fixed outstanding limit).
//! - On a NACK or timeout: `cwnd = max(flight / 2, 2 mss)` (RFC 5681 eq. 4), once per window of data
//!   (no further cut until the highest byte sent at the cut is acknowledged, RFC 6582 `recover`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, Needs};
use crate::opt::OptConfig;
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// AIMD parameters (`[cc.params]` with `cc.algorithm = "aimd"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AimdConfig {
    /// Initial window in segments; absent means RFC 5681 §3.1 eq. 1 for the flow's segment size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_cwnd_packets: Option<u32>,
    /// Floor of the window after a cut, in segments. Default 2: RFC 5681 eq. 4 (`2 * SMSS`).
    pub min_cwnd_packets: u32,
    /// Ceiling of the window as a multiple of the path's BDP at line rate. Default 2: the OPT
    /// threshold ([`OptConfig::outstanding_bdps`]), which the paper's policies share.
    pub max_cwnd_bdps: f64,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            init_cwnd_packets: None,
            min_cwnd_packets: 2,
            max_cwnd_bdps: OptConfig::default().outstanding_bdps,
        }
    }
}

impl AimdConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<AimdConfig, ParamError> {
        let config = merge_params(&AimdConfig::default(), params)?;
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if config.init_cwnd_packets == Some(0) {
            return err("init_cwnd_packets", "must be at least 1");
        }
        if config.min_cwnd_packets == 0 {
            return err("min_cwnd_packets", "must be at least 1");
        }
        if !(config.max_cwnd_bdps.is_finite() && config.max_cwnd_bdps > 0.0) {
            return err("max_cwnd_bdps", "must be positive");
        }
        Ok(config)
    }
}

/// RFC 5681 §3.1 eq. 1: the initial window in segments for segments of `mss` bytes.
pub fn rfc5681_initial_segments(mss: u32) -> u32 {
    match mss {
        m if m > 2190 => 2,
        m if m > 1095 => 3,
        _ => 4,
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "aimd",
    summary: "TCP-like AIMD window (endpoint-congestion baseline): +1 MSS per window, halve on NACK",
    control: Control::Window,
    needs: Needs::NOTHING,
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = AimdConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Aimd::new(c.clone())), cnp_interval: None }))
}

/// The AIMD controller of one flow (bytes).
#[derive(Debug, Clone)]
pub struct Aimd {
    config: AimdConfig,
    mss: u64,
    cwnd: u64,
    max_cwnd: u64,
    remainder: u64,
    /// Highest `snd_nxt` seen (the data outstanding before a go-back-N rewind).
    high: u64,
    /// No cut until the ACK point reaches this.
    recover: u64,
}

impl Aimd {
    /// A controller with `config`; the window is set by [`CongestionControl::on_start`].
    pub fn new(config: AimdConfig) -> Aimd {
        Aimd { config, mss: 1, cwnd: 0, max_cwnd: u64::MAX, remainder: 0, high: 0, recover: 0 }
    }

    /// The window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
}

impl CongestionControl for Aimd {
    fn name(&self) -> &'static str {
        "aimd"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.mss = flow.mss as u64;
        let init = self.config.init_cwnd_packets.unwrap_or_else(|| rfc5681_initial_segments(flow.mss));
        self.max_cwnd = ((flow.bdp() as f64 * self.config.max_cwnd_bdps) as u64).max(self.mss);
        self.cwnd = (init as u64 * self.mss).min(self.max_cwnd);
        ctx.set_cwnd(self.cwnd);
        ctx.set_rate(flow.line_rate);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        self.high = self.high.max(ack.snd_nxt);
        if ack.acked_bytes == 0 {
            return;
        }
        let grow = self.mss * ack.acked_bytes + self.remainder;
        let inc = grow / self.cwnd;
        self.remainder = grow - inc * self.cwnd;
        self.cwnd = (self.cwnd + inc).min(self.max_cwnd);
        ctx.set_cwnd(self.cwnd);
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        let snd_una = loss.snd_nxt.saturating_sub(loss.in_flight);
        if snd_una < self.recover {
            return;
        }
        let flight = loss.in_flight.max(self.high.saturating_sub(snd_una));
        self.cwnd = (flight / 2).max(self.config.min_cwnd_packets as u64 * self.mss).min(self.max_cwnd);
        self.remainder = 0;
        self.recover = self.high.max(loss.snd_nxt);
        ctx.set_cwnd(self.cwnd);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.cwnd as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LossKind;

    fn start(mss: u32) -> Aimd {
        let mut a = Aimd::new(AimdConfig::default());
        a.on_start(&crate::test_flows::endpoint_flow(mss), &mut Ctx::new(0));
        a
    }

    fn ack(a: &mut Aimd, acked: u64, snd_una: u64, snd_nxt: u64) {
        let ack = Ack::single(acked, 1, false, None, snd_una, snd_nxt, snd_nxt - snd_una, 0);
        a.on_ack(&ack, &mut Ctx::new(0));
    }

    #[test]
    fn grows_by_mss_squared_over_cwnd_and_halves_once_per_window() {
        let mut a = start(2048);
        assert_eq!(a.cwnd(), 3 * 2048, "RFC 5681 eq. 1: 3 segments of 2 KB");
        // 2048 * 2048 / 6144 = 682 rem 4096 (in 1/6144 bytes).
        ack(&mut a, 2048, 2048, 6144);
        assert_eq!(a.cwnd(), 6826);
        // (4194304 + 4096) / 6826 = 615 rem 410; (4194304 + 410) / 7441 = 563.
        ack(&mut a, 2048, 4096, 8192);
        assert_eq!(a.cwnd(), 7441);
        ack(&mut a, 2048, 6144, 8192);
        assert_eq!(a.cwnd(), 8004);
        // A NACK with 8 KB outstanding before the go-back-N rewind halves to 4 KB.
        ack(&mut a, 0, 6144, 14_336);
        let nack = Loss { kind: LossKind::Nack, count: 1, in_flight: 0, snd_nxt: 6144 };
        a.on_loss(&nack, &mut Ctx::new(0));
        assert_eq!(a.cwnd(), 4096);
        // A second NACK of the same window does not cut again.
        a.on_loss(&nack, &mut Ctx::new(0));
        assert_eq!(a.cwnd(), 4096);
    }
}
