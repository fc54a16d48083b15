//! One host's end of the offload channel, as a state machine any event-driven datapath runs: reports
//! of the host's flows are batched ([`Batcher`]), cross the channel's latency, wait in the ring of the
//! plane core ([`PlaneCore`]), are handled one at a time, and the decisions come back after the latency.
//!
//! The datapath keeps one [`HostChannel`] per host, calls its methods when its flows' drivers send
//! reports and decisions ([`crate::Datapath::send_report`], [`crate::Datapath::send_decisions`]), and
//! wakes it at the times it asks for ([`ChannelEvent`]). Each method schedules through a callback, in
//! a fixed order, so a deterministic datapath stays deterministic.

use std::collections::VecDeque;

use sluice_cc::Decisions;
use sluice_core::Time;

use crate::channel::{Batcher, Message, PlaneCore};
use crate::config::PlaneConfig;
use crate::counters::PlaneCounters;

/// A step of the channel the datapath must wake it for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChannelEvent {
    /// The batcher's deadline: [`HostChannel::on_batch_deadline`].
    BatchDeadline,
    /// A transfer reaches the plane: [`HostChannel::on_arrive`].
    Arrive,
    /// The plane core finished a message: [`HostChannel::on_core_done`].
    CoreDone,
    /// Decisions reach the datapath: [`HostChannel::take_decision`].
    Decision,
}

/// A host's batcher, transfers and decisions in flight, and its plane core.
#[derive(Debug, Default)]
pub struct HostChannel {
    batcher: Batcher,
    batch_deadline_at: Option<Time>,
    in_transit: VecDeque<Vec<Message>>,
    core: PlaneCore,
    core_scheduled: bool,
    decisions: VecDeque<(u32, Decisions)>,
    /// What this host's plane did.
    pub counters: PlaneCounters,
}

impl HostChannel {
    /// Flow `flow`'s report leaves the datapath at `now`: it joins the batch, which goes when full or at
    /// its deadline.
    pub fn send_report(
        &mut self,
        message: Message,
        now: Time,
        config: &PlaneConfig,
        schedule: &mut dyn FnMut(Time, ChannelEvent),
    ) {
        if self.batcher.push(message, config, &mut self.counters) {
            self.send_batch(now, config, schedule);
        } else if self.batch_deadline_at.is_none() {
            let at = self.batcher.deadline(config).expect("a message waits");
            self.batch_deadline_at = Some(at);
            schedule(at, ChannelEvent::BatchDeadline);
        }
    }

    fn send_batch(&mut self, now: Time, config: &PlaneConfig, schedule: &mut dyn FnMut(Time, ChannelEvent)) {
        let batch = self.batcher.take(config, &mut self.counters);
        self.in_transit.push_back(batch);
        schedule(now + config.latency, ChannelEvent::Arrive);
    }

    /// The batcher's deadline passed.
    pub fn on_batch_deadline(&mut self, now: Time, config: &PlaneConfig, schedule: &mut dyn FnMut(Time, ChannelEvent)) {
        self.batch_deadline_at = None;
        if self.batcher.is_empty() {
            return;
        }
        match self.batcher.deadline(config) {
            Some(at) if at > now => {
                self.batch_deadline_at = Some(at);
                schedule(at, ChannelEvent::BatchDeadline);
            }
            _ => self.send_batch(now, config, schedule),
        }
    }

    /// A transfer reached the plane; returns the aggregation stretch the host's flows take now, if the
    /// ring overflowed (back-pressure).
    pub fn on_arrive(
        &mut self,
        now: Time,
        config: &PlaneConfig,
        schedule: &mut dyn FnMut(Time, ChannelEvent),
    ) -> Option<u32> {
        let batch = self.in_transit.pop_front()?;
        let stretch = self.core.arrive(batch, config, &mut self.counters);
        self.schedule_core(now, config, schedule);
        stretch
    }

    fn schedule_core(&mut self, now: Time, config: &PlaneConfig, schedule: &mut dyn FnMut(Time, ChannelEvent)) {
        if self.core_scheduled {
            return;
        }
        if let Some(done) = self.core.start_next(now, config, &mut self.counters) {
            self.core_scheduled = true;
            schedule(done, ChannelEvent::CoreDone);
        }
    }

    /// The plane core finished a message: the datapath hands it to its flow's driver
    /// ([`crate::FlowDriver::deliver`]) and then calls [`HostChannel::after_core_done`].
    pub fn on_core_done(&mut self) -> Option<Message> {
        self.core_scheduled = false;
        self.core.finish()
    }

    /// After a finished message was delivered: back-pressure ends once the ring drained (the stretch
    /// returned is 1), and the core takes on the next message.
    pub fn after_core_done(
        &mut self,
        now: Time,
        config: &PlaneConfig,
        schedule: &mut dyn FnMut(Time, ChannelEvent),
    ) -> Option<u32> {
        let stretch = self.core.relieve(config);
        self.schedule_core(now, config, schedule);
        stretch
    }

    /// Flow `flow`'s decisions leave the plane core; they reach the datapath after the core's work and
    /// the channel's latency.
    pub fn send_decisions(
        &mut self,
        flow: u32,
        decisions: Decisions,
        now: Time,
        config: &PlaneConfig,
        schedule: &mut dyn FnMut(Time, ChannelEvent),
    ) {
        self.counters.decision_messages += 1;
        let at = self.core.busy_until.max(now) + config.latency;
        self.decisions.push_back((flow, decisions));
        schedule(at, ChannelEvent::Decision);
    }

    /// Decisions that reached the datapath, with their flow.
    pub fn take_decision(&mut self) -> Option<(u32, Decisions)> {
        self.decisions.pop_front()
    }

    /// The algorithm ran on the plane core outside a report (a timer fired) at `now`.
    pub fn charge_core(&mut self, now: Time, config: &PlaneConfig) {
        self.core.charge(now, config, &mut self.counters);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Fold;
    use sluice_cc::Ack;

    fn message(flow: u32, at: Time) -> Message {
        let mut report = Fold::default();
        report.add_ack(&Ack::single(1000, 1, false, None, 1000, 1000, 0, at), at);
        Message { flow, report, created: at }
    }

    #[test]
    fn a_report_crosses_the_channel_and_its_decisions_come_back() {
        let config = PlaneConfig { batch_bytes: 1 << 20, ..PlaneConfig::default() };
        let mut c = HostChannel::default();
        let mut wakes = Vec::new();
        c.send_report(message(3, 100), 100, &config, &mut |at, e| wakes.push((at, e)));
        assert_eq!(wakes, [(100 + config.batch_deadline, ChannelEvent::BatchDeadline)], "a batch waits");
        let t = 100 + config.batch_deadline;
        c.on_batch_deadline(t, &config, &mut |at, e| wakes.push((at, e)));
        assert_eq!(wakes[1], (t + config.latency, ChannelEvent::Arrive));
        let t = t + config.latency;
        assert_eq!(c.on_arrive(t, &config, &mut |at, e| wakes.push((at, e))), None);
        assert_eq!(wakes[2], (t + config.service_time, ChannelEvent::CoreDone));
        let t = t + config.service_time;
        let m = c.on_core_done().expect("the message");
        assert_eq!(m.flow, 3);
        c.send_decisions(3, Decisions::default(), t, &config, &mut |at, e| wakes.push((at, e)));
        assert_eq!(wakes[3], (t + config.latency, ChannelEvent::Decision));
        assert_eq!(c.after_core_done(t, &config, &mut |at, e| wakes.push((at, e))), None);
        assert_eq!(wakes.len(), 4, "the ring is empty: the core idles");
        assert_eq!(c.take_decision().map(|(flow, _)| flow), Some(3));
        assert_eq!((c.counters.reports, c.counters.batches, c.counters.decision_messages), (1, 1, 1));
    }
}
