//! Closed-loop workloads during a run: when a slot's flow finishes, the slot's next flow is made and
//! started at once (Marlin, EuroSys'25, section 7.5), until the loop's end. A new flow's id names its
//! slot and generation ([`LoopIds`]) and its size is the slot's stream's next draw, so both depend on
//! the slot's own history only: a run stays deterministic, and the parts of a partitioned run number
//! and size a flow as a run in one piece does. A run's flows are bounded by what its hosts carry in the
//! loops' windows, which `sluice check`'s estimate counts before the run.
//!
//! In a partitioned run the slot's sender's part starts the flow and tells the receiver's part, which
//! makes the flow's receiving half when the parts next meet: before any packet of the flow can reach
//! it, since a packet takes at least the run's lookahead to cross.

use sluice_core::Time;
use sluice_workload::{ClosedLoop, FlowSpec, LoopIds};

use super::arrivals::FirstFlows;
use super::build::RunSettings;
use crate::engine::partition::Mail;
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
    /// Each slot's generation so far (its first flow is generation 0).
    generations: Vec<u32>,
    /// Flows the loops started here (as their sender).
    started: u64,
    /// How later flows are numbered.
    ids: LoopIds,
}

impl Loops {
    /// Numbers the slots of `loops`, whose later flows are numbered as `ids` says.
    pub(super) fn new(loops: Vec<ClosedLoop>, ids: LoopIds) -> Loops {
        let mut slots = Vec::new();
        for (l, lp) in loops.iter().enumerate() {
            slots.extend((0..lp.slots.len()).map(|j| (l as u32, j as u32)));
        }
        let generations = vec![0; slots.len()];
        Loops { loops, slots, generations, started: 0, ids }
    }

    /// How many flows the loops started here, as their sender.
    pub(super) fn started(&self) -> u64 {
        self.started
    }

    /// Each slot's first flow and the slot, sorted by flow id: the workload's flows that start a slot.
    pub(super) fn first_flows(&self) -> FirstFlows {
        let slots = self.loops.iter().flat_map(|lp| &lp.slots);
        let mut first: FirstFlows = slots.enumerate().map(|(id, slot)| (slot.first_flow, id as u32)).collect();
        first.sort_unstable();
        first
    }

    /// The latest end of a loop with a slot that `sends` says this part sends: its slots start no flow
    /// from then on (0 without one).
    pub(super) fn last_end(&self, sends: impl Fn(u32) -> bool) -> Time {
        let ends = self.loops.iter().filter(|lp| lp.slots.iter().any(|s| sends(s.src))).map(|lp| lp.end);
        ends.max().unwrap_or(0)
    }

    /// Slot `slot`'s next flow, starting at `start`: its id and spec, or `None` when the ids have no room
    /// for it (the slot then stops, and the run counts it).
    pub(super) fn next_flow(&mut self, slot: u32, start: Time) -> Option<(u32, FlowSpec)> {
        let (l, j) = self.slots[slot as usize];
        let generation = self.generations[slot as usize] + 1;
        let id = self.ids.id(slot, generation)?;
        self.generations[slot as usize] = generation;
        let lp = &mut self.loops[l as usize];
        let size = lp.next_size(j as usize);
        let (src, dst) = (lp.slots[j as usize].src, lp.slots[j as usize].dst);
        Some((id, FlowSpec { src, dst, size, start, stop: None, group: lp.group, algorithm: 0 }))
    }

    /// Starts the next flow of every slot whose flow finished during the event just handled, unless the
    /// slot's loop has ended. Each new flow is made like the workload's flows, joins its sender's flows,
    /// and starts now; in a partitioned run its receiver's part hears of it.
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
            let lp = &self.loops[l as usize];
            // A slot's flows start in its sender's part only.
            let sender = hosts[lp.slots[j as usize].src as usize].node;
            if core.now >= lp.end || core.partition.as_deref().is_some_and(|p| !p.owns(sender)) {
                continue;
            }
            let Some((id, spec)) = self.next_flow(slot, core.now) else {
                core.counters.loop_slots_out_of_ids += 1;
                continue;
            };
            self.started += 1;
            let mut flow = settings.make(id, &spec);
            flow.slot = Some(slot);
            flows.push_later(id, flow);
            hosts[spec.src as usize].senders.push_later(id);
            core.schedule(core.now, Event::FlowStart { flow: id });
            let receiver = hosts[spec.dst as usize].node;
            if let Some(partition) = core.partition.as_deref_mut().filter(|p| !p.owns(receiver)) {
                partition.send(partition.part_of(receiver), Mail::LoopFlow { flow: id, at: core.now });
            }
        }
        freed.clear();
        core.freed_slots = freed;
    }
}
