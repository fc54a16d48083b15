//! What the plane did, for summary.json.

use serde::{Deserialize, Serialize};
use sluice_core::Time;

/// Plane counters of a run (summed over hosts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlaneCounters {
    /// Signals the datapath collected and handed to the plane.
    pub signals: u64,
    /// ACKs among them that revealed reordering ([`sluice_cc::Ack::reordered`]).
    pub reordered: u64,
    /// Reports (messages) generated.
    pub reports: u64,
    /// Reports sent at once because of an urgent signal.
    pub urgent_reports: u64,
    /// Payload bytes of all messages.
    pub message_bytes: u64,
    /// Transfers (batches) from datapath to plane.
    pub batches: u64,
    /// Header bytes of all transfers.
    pub header_bytes: u64,
    /// Decisions the algorithms issued (window and rate counted separately).
    pub decisions: u64,
    /// Decisions the boundary filter changed.
    pub filtered_boundary: u64,
    /// Decisions the duplicate filter dropped.
    pub filtered_duplicate: u64,
    /// Decision messages sent from plane to datapath.
    pub decision_messages: u64,
    /// Batches that found the ring too full for all their messages.
    pub overflows: u64,
    /// Messages merged into an older message of the same flow in the ring.
    pub merges: u64,
    /// Messages evicted from the ring.
    pub evictions: u64,
    /// Times the aggregation periods were stretched because the ring filled.
    pub backpressure_events: u64,
    /// Time the plane cores spent handling messages and timers (summed over hosts).
    pub busy_time: Time,
}

impl PlaneCounters {
    /// Communication efficiency E = payload / (payload + headers) (TAURUS equation 2).
    pub fn efficiency(&self) -> f64 {
        let total = self.message_bytes + self.header_bytes;
        if total == 0 {
            0.0
        } else {
            self.message_bytes as f64 / total as f64
        }
    }

    /// Adds another host's counters.
    pub fn add(&mut self, o: &PlaneCounters) {
        self.signals += o.signals;
        self.reordered += o.reordered;
        self.reports += o.reports;
        self.urgent_reports += o.urgent_reports;
        self.message_bytes += o.message_bytes;
        self.batches += o.batches;
        self.header_bytes += o.header_bytes;
        self.decisions += o.decisions;
        self.filtered_boundary += o.filtered_boundary;
        self.filtered_duplicate += o.filtered_duplicate;
        self.decision_messages += o.decision_messages;
        self.overflows += o.overflows;
        self.merges += o.merges;
        self.evictions += o.evictions;
        self.backpressure_events += o.backpressure_events;
        self.busy_time += o.busy_time;
    }
}
