//! The modelled channel of an off-datapath plane: message batching in the datapath (queue- and
//! deadline-driven, TAURUS section 3.4), a bounded ring toward the plane, and a plane core that handles
//! one message at a time (the message handler of section 3.5: back-pressure, merging, eviction).

use std::collections::VecDeque;

use sluice_core::Time;

use crate::config::PlaneConfig;
use crate::counters::PlaneCounters;
use crate::fold::Fold;

/// One report on its way to the plane.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The flow it reports on.
    pub flow: u32,
    /// The folded signals.
    pub report: Fold,
    /// When the datapath generated it.
    pub created: Time,
}

/// Messages waiting in the datapath for a transfer.
#[derive(Debug, Default)]
pub struct Batcher {
    pending: Vec<Message>,
    bytes: u32,
    oldest: Option<Time>,
}

impl Batcher {
    /// Queues `message`; returns whether the batch has reached its byte threshold and should go now.
    pub fn push(&mut self, message: Message, config: &PlaneConfig, counters: &mut PlaneCounters) -> bool {
        let size = message.report.message_bytes();
        counters.reports += 1;
        counters.message_bytes += size as u64;
        self.bytes += size;
        self.oldest.get_or_insert(message.created);
        self.pending.push(message);
        self.bytes >= config.batch_bytes
    }

    /// When the oldest waiting message reaches its deadline, if any waits.
    pub fn deadline(&self, config: &PlaneConfig) -> Option<Time> {
        self.oldest.map(|t| t + config.batch_deadline)
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Takes the waiting messages as one transfer.
    pub fn take(&mut self, config: &PlaneConfig, counters: &mut PlaneCounters) -> Vec<Message> {
        counters.batches += 1;
        counters.header_bytes += config.header_bytes as u64;
        self.bytes = 0;
        self.oldest = None;
        std::mem::take(&mut self.pending)
    }
}

/// Back-pressure stretches aggregation periods at most this much.
const MAX_STRETCH: u32 = 64;

/// The ring toward the plane and the plane core that drains it.
#[derive(Debug)]
pub struct PlaneCore {
    ring: VecDeque<Message>,
    /// When the core finishes the work it has taken on.
    pub busy_until: Time,
    stretch: u32,
}

impl Default for PlaneCore {
    fn default() -> Self {
        PlaneCore { ring: VecDeque::new(), busy_until: 0, stretch: 1 }
    }
}

impl PlaneCore {
    /// A transfer reached the plane. Messages that find the ring full merge into an older message of
    /// their flow when both are mergeable, or else push out the oldest message. An overflow doubles the
    /// aggregation stretch; the new stretch is returned so the datapath can apply it.
    pub fn arrive(&mut self, batch: Vec<Message>, config: &PlaneConfig, counters: &mut PlaneCounters) -> Option<u32> {
        let capacity = config.ring_capacity.max(1) as usize;
        let mut overflowed = false;
        for message in batch {
            if self.ring.len() < capacity {
                self.ring.push_back(message);
                continue;
            }
            overflowed = true;
            if message.report.mergeable() {
                let older = self.ring.iter_mut().rev().find(|m| m.flow == message.flow && m.report.mergeable());
                if let Some(older) = older {
                    older.report.merge(message.report);
                    counters.merges += 1;
                    continue;
                }
            }
            self.ring.pop_front();
            counters.evictions += 1;
            self.ring.push_back(message);
        }
        if !overflowed {
            return None;
        }
        counters.overflows += 1;
        if self.stretch < MAX_STRETCH {
            self.stretch *= 2;
            counters.backpressure_events += 1;
            return Some(self.stretch);
        }
        None
    }

    /// Takes on the next message: returns when the core will have handled it, or `None` if the ring is
    /// empty.
    pub fn start_next(&mut self, now: Time, config: &PlaneConfig, counters: &mut PlaneCounters) -> Option<Time> {
        if self.ring.is_empty() {
            return None;
        }
        self.busy_until = self.busy_until.max(now) + config.service_time;
        counters.busy_time += config.service_time;
        Some(self.busy_until)
    }

    /// The message the core just handled.
    pub fn finish(&mut self) -> Option<Message> {
        self.ring.pop_front()
    }

    /// Charges the core for work outside the ring (a timer handler) at `now`.
    pub fn charge(&mut self, now: Time, config: &PlaneConfig, counters: &mut PlaneCounters) -> Time {
        self.busy_until = self.busy_until.max(now) + config.service_time;
        counters.busy_time += config.service_time;
        self.busy_until
    }

    /// Ends back-pressure once the ring has drained below a quarter; returns the restored stretch.
    pub fn relieve(&mut self, config: &PlaneConfig) -> Option<u32> {
        if self.stretch > 1 && self.ring.len() < (config.ring_capacity as usize).div_ceil(4) {
            self.stretch = 1;
            return Some(1);
        }
        None
    }

    /// Messages in the ring.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cc::{Ack, Feedback};

    fn message(flow: u32, bytes: u64, at: Time) -> Message {
        let mut report = Fold::default();
        report.add_ack(&Ack::single(bytes, 1, false, None, bytes, bytes, 0, at), at);
        Message { flow, report, created: at }
    }

    #[test]
    fn a_flows_reports_are_handled_in_the_order_the_datapath_made_them() {
        // One FIFO ring and one core: TAURUS's ordering requirement holds by construction, also when a
        // full ring merges a report into the newest queued one of its flow or evicts the oldest.
        let config = PlaneConfig { ring_capacity: 4, ..PlaneConfig::default() };
        let mut counters = PlaneCounters::default();
        let mut core = PlaneCore::default();
        let mut handled: Vec<(u32, Time)> = Vec::new();
        let mut state = 12345u64;
        for round in 0..200u64 {
            let batch: Vec<Message> = (0..3)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    message((state >> 33) as u32 % 3, 1000, round * 10 + i)
                })
                .collect();
            core.arrive(batch, &config, &mut counters);
            if round % 2 == 0 && core.start_next(round * 10, &config, &mut counters).is_some() {
                let m = core.finish().unwrap();
                handled.push((m.flow, m.created));
            }
        }
        while core.start_next(0, &config, &mut counters).is_some() {
            let m = core.finish().unwrap();
            handled.push((m.flow, m.created));
        }
        assert!(counters.merges > 0 && counters.evictions > 0, "the ring overflowed both ways");
        for flow in 0..3 {
            let times: Vec<Time> = handled.iter().filter(|(f, _)| *f == flow).map(|&(_, t)| t).collect();
            assert!(times.windows(2).all(|w| w[0] < w[1]), "flow {flow} handled out of order: {times:?}");
        }
    }

    #[test]
    fn batches_go_at_the_threshold_or_the_deadline() {
        let config = PlaneConfig { batch_bytes: 100, ..PlaneConfig::default() };
        let mut counters = PlaneCounters::default();
        let mut b = Batcher::default();
        // Each per-ACK message is 32 bytes: 16 header + 16 ACK sums.
        assert!(!b.push(message(1, 1000, 10), &config, &mut counters));
        assert!(!b.push(message(2, 1000, 20), &config, &mut counters));
        assert_eq!(b.deadline(&config), Some(10 + config.batch_deadline));
        assert!(!b.push(message(3, 1000, 30), &config, &mut counters));
        assert!(b.push(message(4, 1000, 40), &config, &mut counters), "128 bytes >= 100");
        let batch = b.take(&config, &mut counters);
        assert_eq!(batch.len(), 4);
        assert!(b.is_empty() && b.deadline(&config).is_none());
        assert_eq!(
            (counters.reports, counters.message_bytes, counters.batches, counters.header_bytes),
            (4, 128, 1, 16)
        );
        assert!((counters.efficiency() - 128.0 / 144.0).abs() < 1e-12);
    }

    #[test]
    fn a_full_ring_merges_evicts_and_pushes_back() {
        let config = PlaneConfig { ring_capacity: 2, service_time: 10, ..PlaneConfig::default() };
        let mut counters = PlaneCounters::default();
        let mut core = PlaneCore::default();
        assert_eq!(core.arrive(vec![message(1, 100, 0), message(2, 100, 0)], &config, &mut counters), None);
        // Flow 1 merges into its older message; flow 3 (with raw feedback) evicts the oldest.
        let mut unmergeable = message(3, 100, 1);
        unmergeable.report.add_feedback(Feedback::QueueNotification { queue: 1, link_rate: 1, at: 1, sent_at: 0 }, 1);
        let stretch = core.arrive(vec![message(1, 50, 1), unmergeable], &config, &mut counters);
        assert_eq!(stretch, Some(2));
        assert_eq!((counters.merges, counters.evictions, counters.overflows), (1, 1, 1));
        assert_eq!(core.len(), 2);
        assert_eq!(core.start_next(5, &config, &mut counters), Some(15));
        let first = core.finish().unwrap();
        assert_eq!(first.flow, 2, "flow 1's merged message was the oldest and was evicted");
        assert_eq!(core.start_next(5, &config, &mut counters), Some(25), "the core works one message at a time");
        assert_eq!(core.relieve(&config), None, "one message left of two is not below a quarter");
        core.finish();
        assert_eq!(core.relieve(&config), Some(1));
        assert_eq!(counters.busy_time, 20);
    }
}
