//! Host-interconnect settings (`[host.bus]`, what [`crate::host::bus`] models).

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_US};

/// A change of the local memory load at a point in time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadStep {
    /// From this time on...
    #[serde(with = "sluice_core::serde_units::duration")]
    pub at: Time,
    /// ...local traffic demands this much memory bandwidth.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub load: Rate,
}

/// Host-interconnect settings (`[host.bus]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostBusConfig {
    /// Model every host's NIC-to-memory path. Default false (data reaches memory at once).
    pub enabled: bool,
    /// NIC receive buffer, bytes on the wire. Default 256 KB, an interpretation: hostCC reports the
    /// NIC buffer overflowing within tens of microseconds at 100 Gbps, which a buffer of this order gives.
    #[serde(with = "sluice_core::serde_units::size")]
    pub buffer: u64,
    /// Interconnect (PCIe) bandwidth toward memory. Default 126 Gbps: PCIe 3.0 x16 (8 GT/s x 16 lanes,
    /// 128b/130b encoding), the hostCC and TAURUS testbeds' NIC slot.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub interconnect_rate: Rate,
    /// Memory bandwidth shared by DMA and local traffic. Default 375 Gbps: two DDR4-2933 channels
    /// (JEDEC DDR4: 2933 MT/s x 8 bytes each), an interpretation of a socket's share.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub memory_rate: Rate,
    /// Local memory traffic demand (an MLC-like load) at time 0. Default 0.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub local_load: Rate,
    /// Local-load changes over time, in time order.
    pub load_schedule: Vec<LoadStep>,
    /// Fraction of its demand local traffic may use at each throttle level (level 0 first). Default
    /// `[1, 0.7, 0.5, 0.3, 0]`: hostCC's MBA levels 0-3 plus level 4, which pauses the local application
    /// (hostCC code); the fractions of levels 1-3 are an interpretation of MBA's 10%-step delay values.
    pub throttle_levels: Vec<f64>,
    /// Signal sampling period. Default 1 us (hostCC samples its counters at sub-RTT, microsecond scale).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub sample_interval: Time,
    /// Pause the ToR's port (PFC) instead of dropping when the buffer nears full. Default false (lossy).
    pub pfc: bool,
}

impl Default for HostBusConfig {
    fn default() -> Self {
        HostBusConfig {
            enabled: false,
            buffer: 256 * 1024,
            interconnect_rate: 126_000_000_000,
            memory_rate: 375_000_000_000,
            local_load: 0,
            load_schedule: Vec::new(),
            throttle_levels: vec![1.0, 0.7, 0.5, 0.3, 0.0],
            sample_interval: PS_PER_US,
            pfc: false,
        }
    }
}

impl HostBusConfig {
    /// Checks the settings; on failure, the key under `host.bus` and what is wrong.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let problem = |key: &str, message: String| Err((format!("host.bus.{key}"), message));
        if !self.enabled {
            return Ok(());
        }
        if self.buffer == 0 {
            return problem("buffer", "must be positive, such as \"256KB\" (got 0)".into());
        }
        if self.interconnect_rate == 0 {
            return problem("interconnect_rate", "must be positive, such as \"126Gbps\"".into());
        }
        if self.memory_rate == 0 {
            return problem("memory_rate", "must be positive, such as \"375Gbps\"".into());
        }
        if self.sample_interval == 0 {
            return problem("sample_interval", "must be positive, such as \"1us\"".into());
        }
        if self.throttle_levels.is_empty() || self.throttle_levels.len() > 256 {
            return problem("throttle_levels", "needs 1 to 256 levels, level 0 first".into());
        }
        if let Some(x) = self.throttle_levels.iter().find(|x| !(0.0..=1.0).contains(*x)) {
            return problem("throttle_levels", format!("each level is a fraction in [0, 1] (got {x})"));
        }
        for (i, step) in self.load_schedule.iter().enumerate() {
            if i > 0 && step.at <= self.load_schedule[i - 1].at {
                return problem("load_schedule", format!("step {i}: times must increase"));
            }
        }
        Ok(())
    }
}
