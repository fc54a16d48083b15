//! Where a run's flows live, by id. A flow's state is made when the flow starts and can be retired once
//! it has finished and no packet of it is left, so a run holds the flows in progress, not its whole
//! workload. Ids `0..generated` are the workload's flows, which start in id order; ids from `generated`
//! on are the flows closed loops start during the run, numbered by slot and generation
//! ([`LoopIds`]), each slot's in generation order.
//!
//! Each id names a slot in one slab; a retired flow's slot is reused by the next flow made, and its id
//! then names the tombstone, slot 0: a flow that has finished and sends nothing. Events a retired flow
//! left behind (a retransmission-timeout check, a CC timer, an entry in its host's send queues) find the
//! tombstone and do nothing, as they would for the finished flow itself.

use std::collections::VecDeque;
use std::ops::{Index, IndexMut};

use sluice_workload::LoopIds;

use crate::transport::flow::Flow;

/// The slot of the tombstone.
const TOMBSTONE: u32 = 0;

/// The flows of a run that have started (or are starting) and are not retired, by id.
#[derive(Debug)]
pub struct FlowTable {
    /// How the closed loops' later flows are numbered (and how many workload flows there are).
    ids: LoopIds,
    /// Slots of the workload's flows made so far: ids `0..first.len()`.
    first: Vec<u32>,
    /// Each closed-loop slot's later flows, by generation.
    later: Vec<SlotFlows>,
    /// Later flows made so far.
    later_made: u64,
    /// The flows; slot 0 is the tombstone.
    slots: Vec<Flow>,
    /// Slots of retired flows, for the next flows made.
    free: Vec<u32>,
}

/// The later flows of one closed-loop slot that are not retired yet, from generation `since` on (the
/// ones before are retired; a retired flow among later ones names the tombstone until they go too).
#[derive(Debug, Default)]
struct SlotFlows {
    since: u32,
    slots: VecDeque<u32>,
}

impl FlowTable {
    /// An empty table for a workload numbered as `ids` says.
    pub fn new(ids: LoopIds) -> FlowTable {
        let later = (0..ids.slots()).map(|_| SlotFlows { since: 1, slots: VecDeque::new() }).collect();
        FlowTable { ids, first: Vec::new(), later, later_made: 0, slots: vec![tombstone()], free: Vec::new() }
    }

    /// Adds the workload's next flow (its id is the number made so far), returning its id.
    pub fn push_generated(&mut self, flow: Flow) -> u32 {
        debug_assert!((self.first.len() as u32) < self.ids.generated(), "more flows than the workload generated");
        let slot = self.place(flow);
        self.first.push(slot);
        self.first.len() as u32 - 1
    }

    /// Gives the workload's next flow an id without state here: a part of a partitioned run that neither
    /// sends nor receives it. Its id names the tombstone.
    pub fn push_absent(&mut self) -> u32 {
        debug_assert!((self.first.len() as u32) < self.ids.generated(), "more flows than the workload generated");
        self.first.push(TOMBSTONE);
        self.first.len() as u32 - 1
    }

    /// Adds later flow `id`, a closed-loop slot's next generation.
    pub fn push_later(&mut self, id: u32, flow: Flow) {
        let (s, generation) = self.ids.split(id);
        let entry = self.place(flow);
        let at = &mut self.later[s as usize];
        debug_assert_eq!(generation, at.since + at.slots.len() as u32, "slot {s}'s flows in generation order");
        at.slots.push_back(entry);
        self.later_made += 1;
    }

    fn place(&mut self, flow: Flow) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = flow;
                slot
            }
            None => {
                self.slots.push(flow);
                self.slots.len() as u32 - 1
            }
        }
    }

    /// The slot of id `id`: `None` if its flow has not been made here, the tombstone once retired.
    #[inline(always)]
    fn slot(&self, id: u32) -> Option<u32> {
        if !self.ids.is_later(id) {
            return self.first.get(id as usize).copied();
        }
        let (s, generation) = self.ids.split(id);
        let at = self.later.get(s as usize)?;
        match generation.checked_sub(at.since) {
            Some(k) => at.slots.get(k as usize).copied(),
            None => Some(TOMBSTONE),
        }
    }

    /// The slot of id `id`, whose flow has been made here.
    #[inline(always)]
    fn made(&self, id: usize) -> usize {
        match self.slot(id as u32) {
            Some(slot) => slot as usize,
            None => panic!("flow {id} has not been made"),
        }
    }

    /// The flow with id `id`, if it has been made and is not retired.
    pub fn get(&self, id: u32) -> Option<&Flow> {
        self.slot(id).filter(|&s| s != TOMBSTONE).map(|s| &self.slots[s as usize])
    }

    /// Retires flow `id`, which has been made and has finished, returning its state; its id names the
    /// tombstone from now on.
    pub fn retire(&mut self, id: u32) -> Flow {
        let slot = if self.ids.is_later(id) {
            let (s, generation) = self.ids.split(id);
            let at = &mut self.later[s as usize];
            let entry = &mut at.slots[(generation - at.since) as usize];
            let slot = std::mem::replace(entry, TOMBSTONE);
            while at.slots.front() == Some(&TOMBSTONE) {
                at.slots.pop_front();
                at.since += 1;
            }
            slot
        } else {
            std::mem::replace(&mut self.first[id as usize], TOMBSTONE)
        };
        assert_ne!(slot, TOMBSTONE, "flow {id} retired twice");
        debug_assert!(self.slots[slot as usize].finish.is_some(), "flow {id} retired before it finished");
        self.free.push(slot);
        std::mem::replace(&mut self.slots[slot as usize], tombstone())
    }

    /// How many flows the run has made here: the workload's (made or still to come) and the later flows
    /// started so far.
    pub fn ids(&self) -> u64 {
        u64::from(self.ids.generated()) + self.later_made
    }

    /// How many of the workload's flows have been made (retired ones included): ids `0..made`.
    pub fn generated_made(&self) -> u32 {
        self.first.len() as u32
    }

    /// Ids of the closed loops' later flows made here and not retired, slot by slot.
    pub fn later_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.later.iter().enumerate().flat_map(move |(s, at)| {
            let live = at.slots.iter().enumerate().filter(|&(_, &slot)| slot != TOMBSTONE);
            live.filter_map(move |(k, _)| self.ids.id(s as u32, at.since + k as u32))
        })
    }

    /// How the closed loops' later flows are numbered.
    pub fn loop_ids(&self) -> LoopIds {
        self.ids
    }
}

/// A flow that has finished and has nothing to send.
fn tombstone() -> Flow {
    let mut f = Flow::new(0, 0, 1, 0, None, 0);
    f.started = true;
    f.finish = Some(0);
    f.snd_una = 1;
    f.snd_nxt = 1;
    f.max_sent = 1;
    f.rcv_nxt = 1;
    f
}

impl Index<usize> for FlowTable {
    type Output = Flow;

    #[inline(always)]
    fn index(&self, id: usize) -> &Flow {
        &self.slots[self.made(id)]
    }
}

impl IndexMut<usize> for FlowTable {
    #[inline(always)]
    fn index_mut(&mut self, id: usize) -> &mut Flow {
        let slot = self.made(id);
        &mut self.slots[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(src: u32) -> Flow {
        Flow::new(src, 9, 1000, 0, None, 0)
    }

    #[test]
    fn a_retired_flows_slot_goes_to_the_next_flow_and_its_id_to_the_tombstone() {
        let mut table = FlowTable::new(LoopIds::new(2, 1));
        assert_eq!(table.push_generated(flow(10)), 0);
        assert_eq!(table.push_generated(flow(11)), 1);
        table[0].finish = Some(5);
        let retired = table.retire(0);
        assert_eq!((retired.src, retired.finish), (10, Some(5)));
        assert!(table.get(0).is_none(), "a retired flow is gone");
        assert!(table[0].finish.is_some() && table[0].snd_una >= table[0].size, "its id finds the tombstone");
        table.push_later(2, flow(12));
        assert_eq!(table.slots.len(), 3, "the later flow took the retired flow's slot");
        assert_eq!((table[1].src, table[2].src), (11, 12));
        assert_eq!(table.get(1).map(|f| f.src), Some(11));
        assert_eq!((table.ids(), table.generated_made()), (3, 2));
        assert_eq!(table.later_ids().collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn a_slots_later_flows_retire_in_any_order_and_find_the_tombstone_after() {
        let ids = LoopIds::new(1, 3);
        let mut table = FlowTable::new(ids);
        let id = |slot, generation| ids.id(slot, generation).expect("room");
        for generation in 1..=3 {
            table.push_later(id(1, generation), flow(10 + generation));
        }
        table.push_later(id(2, 1), flow(20));
        assert_eq!(table.ids(), 5, "one workload flow and four later ones");
        assert_eq!(table[id(1, 2) as usize].src, 12);
        for generation in [2, 1] {
            table[id(1, generation) as usize].finish = Some(9);
            table.retire(id(1, generation));
        }
        assert_eq!(table.later[1].since, 3, "the retired front goes");
        assert!(table.get(id(1, 1)).is_none() && table.get(id(1, 2)).is_none());
        assert!(table[id(1, 1) as usize].finish.is_some(), "a retired flow's id finds the tombstone");
        assert_eq!(table.get(id(1, 3)).map(|f| f.src), Some(13));
        assert!(table.get(id(1, 4)).is_none() && table.get(id(0, 1)).is_none(), "not made");
        let mut live: Vec<u32> = table.later_ids().collect();
        live.sort_unstable();
        assert_eq!(live, [id(2, 1), id(1, 3)], "ids 3 and 10: slot 2 first, then slot 1 generation 3");
    }
}
