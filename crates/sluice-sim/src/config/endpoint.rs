//! Endpoint-model settings (`[host.endpoint]`, what [`crate::host::endpoint`] models).

use serde::{Deserialize, Serialize};
use sluice_core::Time;

use super::LossRecovery;

/// A change of the processing rate at a point in time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrainStep {
    /// From this time on...
    #[serde(with = "sluice_core::serde_units::duration")]
    pub at: Time,
    /// ...the queue drains at this fraction of the NIC rate.
    pub drain: f64,
}

/// Endpoint-model settings (`[host.endpoint]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointConfig {
    /// Give every host a processing queue. Default false (the host consumes data at any rate).
    pub enabled: bool,
    /// Queue depth in bytes on the wire. Default 81 KB (82 944 bytes): Chong and Krishnan section III-B,
    /// "target queue depth of 81KB" (KB read as 1024 bytes, nine of their 9 KB MSS).
    #[serde(with = "sluice_core::serde_units::size")]
    pub queue: u64,
    /// Processing bandwidth as a fraction of the host's NIC rate (bytes on the wire). Default 1.
    pub drain: f64,
    /// Processing-rate changes over time, in time order; before the first, `drain` applies.
    pub schedule: Vec<DrainStep>,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig { enabled: false, queue: 81 * 1024, drain: 1.0, schedule: Vec::new() }
    }
}

impl EndpointConfig {
    /// Checks the settings; on failure, the key under `host.endpoint` and what is wrong.
    pub fn validate(&self, loss_recovery: LossRecovery) -> Result<(), (String, String)> {
        let problem = |key: &str, message: String| Err((format!("host.endpoint.{key}"), message));
        if !self.enabled {
            return Ok(());
        }
        if self.queue == 0 {
            return problem("queue", "must be positive, such as \"81KB\" (got 0)".into());
        }
        if !(self.drain.is_finite() && self.drain > 0.0) {
            return problem("drain", format!("must be a positive fraction of the NIC rate (got {})", self.drain));
        }
        for (i, step) in self.schedule.iter().enumerate() {
            if !(step.drain.is_finite() && step.drain > 0.0) {
                return problem("schedule", format!("step {i}: drain must be positive (got {})", step.drain));
            }
            if i > 0 && step.at <= self.schedule[i - 1].at {
                return problem("schedule", format!("step {i}: times must increase"));
            }
        }
        if loss_recovery != LossRecovery::GoBackN {
            return Err((
                "host.loss_recovery".into(),
                "the endpoint model drops out-of-order data: it needs \"go_back_n\"".into(),
            ));
        }
        Ok(())
    }
}
