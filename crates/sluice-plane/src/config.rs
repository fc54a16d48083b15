//! Plane settings, with the sources of their defaults.

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_US};

/// Where the algorithm runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// In the datapath: reports reach the algorithm when due, at no cost (the baseline).
    #[default]
    Native,
    /// Off the datapath: reports and decisions cross a modelled channel to a plane core.
    Offload,
}

/// How often flows report, when the plane overrides what algorithms declare (for aggregation studies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "every", deny_unknown_fields)]
pub enum ReportOverride {
    /// Every ACK.
    Ack,
    /// Every `n` ACKs.
    Acks {
        /// ACKs per report.
        n: u32,
    },
    /// Every interval.
    Interval {
        /// The aggregation period.
        #[serde(with = "sluice_core::serde_units::duration")]
        period: Time,
    },
    /// Once per round trip.
    Rtt,
}

/// Plane settings (`[plane]` in a scenario).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlaneConfig {
    /// Native (default) or offload.
    pub mode: Mode,
    /// One-way latency between datapath and plane. Default 1 us, a PCIe round of a host NIC (Neugebauer
    /// et al. SIGCOMM'18 measure 0.9-1 us DMA latency).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub latency: Time,
    /// Header bytes per transfer. Default 16 B, a 4-DW PCIe TLP header (TAURUS section 3.4).
    pub header_bytes: u32,
    /// A batch of messages is sent once it holds this many bytes. Default 256 B (TAURUS: 128-512 B queue
    /// thresholds give high efficiency).
    pub batch_bytes: u32,
    /// ...or once its oldest message has waited this long. Default 1 us.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub batch_deadline: Time,
    /// Plane core time per message. Default 93 ns: TAURUS handles 10.8 M reports/s on 98% of one core
    /// without aggregation (section 5.2), 1/10.8 M = 92.6 ns.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub service_time: Time,
    /// Messages the ring toward the plane holds. Default 4096 entries.
    pub ring_capacity: u32,
    /// Replaces every algorithm's reporting period when set (aggregation studies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportOverride>,
    /// Longest a non-urgent signal waits in a flow's fold before it is reported anyway, as a multiple of
    /// the flow's base RTT (so that a flow waiting for a report cannot stall). Default 1.
    pub max_hold_rtts: f64,
    /// Boundary filter: lowest rate a decision may set. Default 100 Kbps (TAURUS section 3.5: "100 Kbps
    /// to 400 Gbps"; the top is each flow's line rate).
    #[serde(with = "sluice_core::serde_units::rate")]
    pub min_rate: Rate,
    /// Boundary filter: smallest window a decision may set, bytes. Default 1 B (any positive window; the
    /// datapath always lets one packet out).
    pub min_cwnd: u64,
    /// Boundary filter: largest window a decision may set, bytes; `None` (default) = no limit beyond what
    /// the algorithm sets.
    #[serde(default, with = "sluice_core::serde_units::opt_size", skip_serializing_if = "Option::is_none")]
    pub max_cwnd: Option<u64>,
    /// Drop decisions equal to the last one sent (TAURUS duplicate value filter). Default on.
    pub duplicate_filter: bool,
}

impl Default for PlaneConfig {
    fn default() -> Self {
        PlaneConfig {
            mode: Mode::Native,
            latency: PS_PER_US,
            header_bytes: 16,
            batch_bytes: 256,
            batch_deadline: PS_PER_US,
            service_time: 93 * PS_PER_NS,
            ring_capacity: 4096,
            report: None,
            max_hold_rtts: 1.0,
            min_rate: 100_000,
            min_cwnd: 1,
            max_cwnd: None,
            duplicate_filter: true,
        }
    }
}

impl PlaneConfig {
    /// Checks the settings; the error names the field.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |field: &str, message: &str| Err((field.to_string(), message.to_string()));
        if self.mode == Mode::Offload && self.ring_capacity == 0 {
            return bad("ring_capacity", "must be at least 1");
        }
        if self.batch_bytes == 0 {
            return bad("batch_bytes", "must be at least 1 byte");
        }
        if !(self.max_hold_rtts > 0.0 && self.max_hold_rtts.is_finite()) {
            return bad("max_hold_rtts", "must be a positive number");
        }
        if let Some(ReportOverride::Acks { n: 0 }) = self.report {
            return bad("report", "n must be at least 1");
        }
        if let Some(ReportOverride::Interval { period: 0 }) = self.report {
            return bad("report", "period must be positive");
        }
        if self.min_rate == 0 {
            return bad("min_rate", "must be positive");
        }
        if self.max_cwnd.is_some_and(|max| max < self.min_cwnd.max(1)) {
            return bad("max_cwnd", "must be at least min_cwnd");
        }
        Ok(())
    }
}
