//! Retiring finished flows: a flow that has finished and has no packet left anywhere (queued, on a
//! wire, held by a host) can never be touched again but by the events it left behind, which find the
//! tombstone ([`crate::transport::table`]). Its state (most of a flow's memory) is dropped and its result
//! row kept, so memory follows the flows in progress rather than every flow the run has carried.
//! Flows the run samples for throughput keep their state to the end; token flows, flows with a
//! receiver controller and traced flows are never queued for retirement
//! ([`crate::transport::flow::Flow::finish`]).

use sluice_results::FlowRecord;

use crate::engine::Core;
use crate::transport::table::FlowTable;

/// The fewest finished flows that make a sweep worthwhile.
const SWEEP_MIN: usize = 256;

/// The result rows of retired flows, and when to look for more.
#[derive(Debug)]
pub(super) struct Retired {
    /// Rows of retired flows, in retirement order.
    rows: Vec<FlowRecord>,
    /// Flows whose state stays to the end (throughput series read it), sorted.
    kept: Vec<u32>,
    /// Sweep when this many finished flows wait.
    sweep_at: usize,
}

impl Retired {
    /// Nothing retired yet; `sampled` flows are never retired.
    pub(super) fn new(sampled: &[u32]) -> Retired {
        let mut kept = sampled.to_vec();
        kept.sort_unstable();
        Retired { rows: Vec::new(), kept, sweep_at: SWEEP_MIN }
    }

    /// Retires the finished flows that have no packet left, once enough wait; the others wait for the
    /// next sweep, which comes when their number has doubled, so flows whose packets linger are not
    /// looked at after every event.
    #[inline]
    pub(super) fn sweep(&mut self, core: &mut Core, flows: &mut FlowTable) {
        if core.finished.len() >= self.sweep_at {
            self.sweep_now(core, flows);
        }
    }

    #[cold]
    #[inline(never)]
    fn sweep_now(&mut self, core: &mut Core, flows: &mut FlowTable) {
        let arena = &core.arena;
        let (rows, kept) = (&mut self.rows, &self.kept);
        core.finished.retain(|&id| {
            if arena.packets_of(id) > 0 {
                return true;
            }
            if kept.binary_search(&id).is_err() {
                rows.push(super::report::flow_record(id as usize, &flows.retire(id)));
            }
            false
        });
        self.sweep_at = (2 * core.finished.len()).max(SWEEP_MIN);
    }

    /// The rows of retired flows, in retirement order.
    pub(super) fn take_rows(&mut self) -> Vec<FlowRecord> {
        std::mem::take(&mut self.rows)
    }
}
