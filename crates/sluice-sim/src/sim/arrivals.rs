//! The workload's flows arriving during a run. They come from the workload's stream one at a time, when
//! the run reaches their start, so a run never holds its whole workload: a flow's state is made when it
//! starts. Long-lived flows' stops wait here too.
//!
//! One [`Event::Arrival`] waits in the event queue for the next arrival (a start or a stop), ahead of
//! every event of its time. That is the order the engine gave when every start and stop was queued
//! before the run began: they were the first events pushed, in flow-id order with each flow's start
//! before its stop, and events of equal time leave the queue in the order they were pushed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sluice_core::Time;
use sluice_workload::{FlowSource, FlowSpec, FlowStream};

use crate::engine::{Core, Event};

/// What arrives.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arrival {
    /// Flow `id`, described by the spec, starts.
    Start(u32, FlowSpec),
    /// Long-lived flow `id` stops.
    Stop(u32),
}

/// The arrivals still to come.
pub(super) struct Arrivals {
    stream: FlowStream,
    /// The next flow to start and its id.
    next: Option<(u32, FlowSpec)>,
    /// Stops of long-lived flows that have started: (time, flow).
    stops: BinaryHeap<Reverse<(Time, u32)>>,
    /// When the next arrival is due.
    due: Time,
}

/// The closed-loop slot of each slot's first flow: (flow id, slot id), sorted by flow id.
pub(super) type FirstFlows = Vec<(u32, u32)>;

impl Arrivals {
    /// The arrivals of every flow of `flows`.
    pub(super) fn new(flows: &FlowSource) -> Arrivals {
        let mut stream = flows.iter();
        let next = stream.next().map(|f| (0, f));
        let mut arrivals = Arrivals { stream, next, stops: BinaryHeap::new(), due: 0 };
        arrivals.update_due();
        arrivals
    }

    /// Queues the [`Event::Arrival`] of the next arrival, if any is left.
    pub(super) fn schedule_next(&self, core: &mut Core) {
        if self.due != Time::MAX {
            core.schedule_first(self.due, Event::Arrival);
        }
    }

    fn update_due(&mut self) {
        let start = self.next.map_or(Time::MAX, |(_, f)| f.start);
        let stop = self.stops.peek().map_or(Time::MAX, |Reverse((t, _))| *t);
        self.due = start.min(stop);
    }

    /// The next arrival and its time. Of a start and a stop at one time, the lower flow id goes first, and
    /// a start before a stop of the same id.
    pub(super) fn pop(&mut self) -> Option<(Time, Arrival)> {
        let popped = self.take();
        self.update_due();
        popped
    }

    fn take(&mut self) -> Option<(Time, Arrival)> {
        let stop = self.stops.peek().map(|Reverse(s)| *s);
        match (self.next, stop) {
            (Some((id, f)), Some((t, stopping))) if (t, stopping) < (f.start, id) => {
                self.stops.pop();
                Some((t, Arrival::Stop(stopping)))
            }
            (Some((id, f)), _) => {
                if let Some(stop) = f.stop {
                    self.stops.push(Reverse((stop, id)));
                }
                self.next = self.stream.next().map(|g| (id + 1, g));
                Some((f.start, Arrival::Start(id, f)))
            }
            (None, Some((t, stopping))) => {
                self.stops.pop();
                Some((t, Arrival::Stop(stopping)))
            }
            (None, None) => None,
        }
    }

    /// The started long-lived flows that stop at `at`, in id order.
    pub(super) fn stopping_at(&self, at: Time) -> Vec<u32> {
        let mut ids: Vec<u32> =
            self.stops.iter().filter(|Reverse((t, _))| *t == at).map(|Reverse((_, id))| *id).collect();
        ids.sort_unstable();
        ids
    }

    /// Whether a flow of the workload is still to start.
    pub(super) fn has_starts(&self) -> bool {
        self.next.is_some()
    }

    /// Takes the flows that never started, with their ids, in id order (the run is over).
    pub(super) fn not_started(&mut self) -> impl Iterator<Item = (u32, FlowSpec)> + '_ {
        let first = self.next.take();
        self.due = Time::MAX;
        let after = first.map_or(0, |(id, _)| id + 1);
        first.into_iter().chain(self.stream.by_ref().enumerate().map(move |(k, f)| (after + k as u32, f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(start: Time, stop: Option<Time>) -> FlowSpec {
        FlowSpec { src: 0, dst: 1, size: 1000, start, stop, group: 0, algorithm: 0 }
    }

    /// Starts come in id order; a stop goes before a later flow's start of its time, and a flow's start
    /// before its own stop: the order of the queue when every start and stop was pushed before the run.
    #[test]
    fn arrivals_come_in_time_then_flow_then_start_before_stop_order() {
        let source = FlowSource::from(vec![flow(10, Some(30)), flow(30, None), flow(30, Some(30)), flow(40, None)]);
        let mut arrivals = Arrivals::new(&source);
        let mut order = Vec::new();
        while let Some((time, arrival)) = arrivals.pop() {
            order.push(match arrival {
                Arrival::Start(id, f) => {
                    assert_eq!(f.start, time);
                    (time, id, "start")
                }
                Arrival::Stop(id) => (time, id, "stop"),
            });
        }
        let expected =
            [(10, 0, "start"), (30, 0, "stop"), (30, 1, "start"), (30, 2, "start"), (30, 2, "stop"), (40, 3, "start")];
        assert_eq!(order, expected);
        assert_eq!(arrivals.due, Time::MAX);
    }

    #[test]
    fn the_flows_a_run_never_reached_keep_their_ids() {
        let source = FlowSource::from((0..5).map(|i| flow(10 * i, None)).collect::<Vec<_>>());
        let mut arrivals = Arrivals::new(&source);
        arrivals.pop();
        arrivals.pop();
        let rest: Vec<(u32, Time)> = arrivals.not_started().map(|(id, f)| (id, f.start)).collect();
        assert_eq!(rest, [(2, 20), (3, 30), (4, 40)]);
        assert_eq!(arrivals.due, Time::MAX);
    }
}
