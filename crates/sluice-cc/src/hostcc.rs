//! `hostcc`: DCTCP senders with a hostCC-like host policy at every host (Agarwal et al., "Host Congestion
//! Control", SIGCOMM'23; the TAURUS host-congestion experiment, section 5.3).
//!
//! Senders run [`crate::dctcp`] with its defaults. Each host runs [`HostccPolicy`] on its host signals
//! (sampled by the datapath, see [`crate::hostctl`]):
//! - host congestion is the NIC-to-memory (IIO) buffer occupancy above `iio_threshold`;
//! - network response: while congested, mark ECN CE on received data packets, so the DCTCP senders back
//!   off as they would for a congested switch;
//! - host-local response: while congested and the NIC's interconnect bandwidth is below
//!   `target_rate` (the network's guaranteed share), raise the local-traffic throttle level one step per
//!   sample (MBA-like); after `release_samples` samples in a row without congestion (or at once when the
//!   network is idle, below 1% of the target), lower it one step; otherwise hold it. Releasing one
//!   sample after congestion ends would hand the bandwidth back while the senders are still recovering
//!   from the marks, and the host would swing between levels every few microseconds.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{CongestionControl, FlowInfo, HostSignal, Needs};
use crate::dctcp::{Dctcp, DctcpConfig};
use crate::hostctl::{HostControl, HostCtx, HostInfo};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};

/// hostCC parameters (`[cc.params]` with `cc.algorithm = "hostcc"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostccConfig {
    /// IIO write-occupancy threshold above which the host is congested, bytes. Default 4480: the hostCC
    /// code's `iio_wr` threshold 70, read as 70 occupancy units of one 64-byte cache line each (the
    /// unit is our reading; see docs/host-congestion.md).
    #[serde(with = "sluice_core::serde_units::size")]
    pub iio_threshold: u64,
    /// The network's target interconnect bandwidth: below it, a congested host throttles its local
    /// traffic further. Default 84 Gbps: the hostCC code's `pcie` threshold 84 (Gbps of PCIe write
    /// bandwidth for its 100 Gbps NIC).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub target_rate: Rate,
    /// Apply the network response (ECN marking on receive). Default true (hostCC).
    pub mark_ecn: bool,
    /// Apply the host-local response (throttle local traffic). Default true (hostCC).
    pub throttle: bool,
    /// Consecutive uncongested samples before the throttle is lowered one level. Default 100 (100 us at
    /// the default 1 us sampling, about ten round trips); an interpretation: hostcc.md gives no value.
    pub release_samples: u32,
}

impl Default for HostccConfig {
    fn default() -> Self {
        HostccConfig {
            iio_threshold: 70 * 64,
            target_rate: 84_000_000_000,
            mark_ecn: true,
            throttle: true,
            release_samples: 100,
        }
    }
}

impl HostccConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<HostccConfig, ParamError> {
        let config = merge_params(&HostccConfig::default(), params)?;
        if config.target_rate == 0 {
            return Err(ParamError { key: Some("target_rate".into()), message: "must be positive".into() });
        }
        Ok(config)
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "hostcc",
    summary: "DCTCP + hostCC-like host policy: ECN marking on receive and MBA-like local throttling",
    control: Control::Window,
    needs: Needs { ecn: true, host_policy: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    Ok(Arc::new(HostccFactory { config: HostccConfig::resolve(params)? }))
}

/// Builds DCTCP senders and hostCC host policies.
#[derive(Debug)]
pub struct HostccFactory {
    /// The resolved host-policy parameters.
    pub config: HostccConfig,
}

impl Factory for HostccFactory {
    fn create(&self, _flow: &FlowInfo) -> Box<dyn CongestionControl> {
        Box::new(Dctcp::new(DctcpConfig::default()))
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn host_policy(&self, host: &HostInfo) -> Option<Box<dyn HostControl>> {
        Some(Box::new(HostccPolicy::new(self.config.clone(), host)))
    }
}

/// The host policy of one host.
#[derive(Debug, Clone)]
pub struct HostccPolicy {
    config: HostccConfig,
    interconnect_rate: Rate,
    max_level: u8,
    level: u8,
    marking: bool,
    /// Consecutive samples without congestion.
    calm: u32,
}

impl HostccPolicy {
    /// A policy for `host`.
    pub fn new(config: HostccConfig, host: &HostInfo) -> HostccPolicy {
        HostccPolicy {
            config,
            interconnect_rate: host.interconnect_rate,
            max_level: host.max_throttle_level,
            level: 0,
            marking: false,
            calm: 0,
        }
    }

    /// The throttle level in force.
    pub fn level(&self) -> u8 {
        self.level
    }
}

impl HostControl for HostccPolicy {
    fn name(&self) -> &'static str {
        "hostcc"
    }

    fn on_host(&mut self, signal: &HostSignal, ctx: &mut HostCtx) {
        let congested = signal.iio_occupancy > self.config.iio_threshold;
        if self.config.mark_ecn && congested != self.marking {
            self.marking = congested;
            ctx.mark_ecn(congested);
        }
        if !self.config.throttle {
            return;
        }
        let nic_rate = signal.pcie_utilization * self.interconnect_rate as f64;
        let target = self.config.target_rate as f64;
        let network_idle = nic_rate < 0.01 * target;
        self.calm = if congested { 0 } else { self.calm.saturating_add(1) };
        let level = if congested && nic_rate < target {
            (self.level + 1).min(self.max_level)
        } else if !congested && (self.calm >= self.config.release_samples || network_idle) {
            self.calm = 0;
            self.level.saturating_sub(1)
        } else {
            self.level
        };
        if level != self.level {
            self.level = level;
            ctx.set_throttle_level(level);
        }
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("level", self.level as f64);
        out("marking", self.marking as u8 as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(iio: u64, util: f64) -> HostSignal {
        HostSignal { iio_occupancy: iio, pcie_utilization: util, at: 0 }
    }

    #[test]
    fn marks_and_throttles_while_congested_and_releases_after() {
        let info = HostInfo {
            line_rate: 100_000_000_000,
            interconnect_rate: 128_000_000_000,
            max_throttle_level: 3,
            sample_interval: 1,
        };
        let mut p = HostccPolicy::new(HostccConfig::default(), &info);
        let mut ctx = HostCtx::new(0);
        // 50% of 128 Gbps = 64 Gbps < 84 Gbps target, occupancy above 4480 B: mark and throttle one step.
        p.on_host(&signal(10_000, 0.5), &mut ctx);
        assert_eq!(ctx.decisions().mark_ecn, Some(true));
        assert_eq!(ctx.decisions().throttle_level, Some(1));
        for _ in 0..5 {
            p.on_host(&signal(10_000, 0.5), &mut HostCtx::new(0));
        }
        assert_eq!(p.level(), 3, "capped at the host's highest level");
        // Congested but the NIC already gets 90% of 128 Gbps: hold the level.
        let mut ctx = HostCtx::new(0);
        p.on_host(&signal(10_000, 0.9), &mut ctx);
        assert_eq!((ctx.decisions().throttle_level, p.level()), (None, 3));
        // Not congested: stop marking, hold the level for 99 more samples, release on the 100th.
        let mut ctx = HostCtx::new(0);
        p.on_host(&signal(1000, 0.9), &mut ctx);
        assert_eq!(ctx.decisions().mark_ecn, Some(false));
        for _ in 0..98 {
            p.on_host(&signal(1000, 0.9), &mut HostCtx::new(0));
        }
        assert_eq!(p.level(), 3);
        let mut ctx = HostCtx::new(0);
        p.on_host(&signal(1000, 0.9), &mut ctx);
        assert_eq!(ctx.decisions().throttle_level, Some(2));
        // An idle network releases at once.
        p.on_host(&signal(0, 0.0), &mut HostCtx::new(0));
        assert_eq!(p.level(), 1);
    }
}
