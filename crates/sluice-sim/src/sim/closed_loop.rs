//! Closed-loop workloads during a run: when a slot's flow finishes, the slot's next flow is made and
//! started at once (Marlin, EuroSys'25, section 7.5), until the loop's end. New flows take the next ids,
//! in the order their slots free up, so a run stays deterministic. A run's flows are bounded by what
//! its hosts carry in the loops' windows, which `sluice check`'s estimate counts before the run.

use sluice_workload::{ClosedLoop, FlowSpec};

use super::arrivals::FirstFlows;
use super::build::RunSettings;
use crate::engine::{Core, Event};
use crate::host::Host;
use crate::transport::table::FlowTable;

/// How many sizes of each closed loop's distribution the token transport sees when it sets Homa's
/// cutoffs and overcommitment, in place of the sizes the loop will draw during the run.
pub(super) const SIZE_SAMPLE: usize = 10_000;

/// The run's closed loops and the slots their flows run in.
#[derive(Debug, Default)]
pub(super) struct Loops {
    loops: Vec<ClosedLoop>,
    /// Slot id (a flow's [`crate::transport::flow::Flow::slot`]) -> (loop, slot within it).
    slots: Vec<(u32, u32)>,
}

impl Loops {
    /// Numbers the slots of `loops`.
    pub(super) fn new(loops: Vec<ClosedLoop>) -> Loops {
        let mut slots = Vec::new();
        for (l, lp) in loops.iter().enumerate() {
            slots.extend((0..lp.slots.len()).map(|j| (l as u32, j as u32)));
        }
        Loops { loops, slots }
    }

    /// Each slot's first flow and the slot, sorted by flow id: the workload's flows that start a slot.
    pub(super) fn first_flows(&self) -> FirstFlows {
        let slots = self.loops.iter().flat_map(|lp| &lp.slots);
        let mut first: FirstFlows = slots.enumerate().map(|(id, slot)| (slot.first_flow, id as u32)).collect();
        first.sort_unstable();
        first
    }

    /// Starts the next flow of every slot whose flow finished during the event just handled, unless the
    /// slot's loop has ended. Each new flow is made like the workload's flows, joins its sender's flows,
    /// and starts now.
    pub(super) fn refill(
        &mut self,
        core: &mut Core,
        settings: &RunSettings,
        flows: &mut FlowTable,
        hosts: &mut [Host],
    ) {
        let mut freed = std::mem::take(&mut core.freed_slots);
        for &slot in &freed {
            let (l, j) = self.slots[slot as usize];
            let lp = &mut self.loops[l as usize];
            if core.now >= lp.end {
                continue;
            }
            let size = lp.next_size(j as usize);
            let (src, dst) = (lp.slots[j as usize].src, lp.slots[j as usize].dst);
            let spec = FlowSpec { src, dst, size, start: core.now, stop: None, group: lp.group, algorithm: 0 };
            let id = flows.ids() as u32;
            let mut flow = settings.make(id, &spec);
            flow.slot = Some(slot);
            flows.push_later(flow);
            hosts[src as usize].senders.push_later(id);
            if !core.flow_src.is_empty() {
                core.flow_src.push(src);
            }
            core.queue.ties_mut().add_flow(id, src, dst);
            core.schedule(core.now, Event::FlowStart { flow: id });
        }
        freed.clear();
        core.freed_slots = freed;
    }
}
