//! Where a run's flows live, by id. A flow's state is made when the flow starts and can be retired once
//! it has finished and no packet of it is left, so a run holds the flows in progress, not its whole
//! workload. Ids `0..generated` are the workload's flows, which start in id order; ids from `generated`
//! on are the flows closed loops start during the run, also in id order.
//!
//! Each id names a slot in one slab; a retired flow's slot is reused by the next flow made, and its id
//! then names the tombstone, slot 0: a flow that has finished and sends nothing. Events a retired flow
//! left behind (a retransmission-timeout check, a CC timer, an entry in its host's send queues) find the
//! tombstone and do nothing, as they would for the finished flow itself.

use std::ops::{Index, IndexMut};

use crate::transport::flow::Flow;

/// The slot of the tombstone.
const TOMBSTONE: u32 = 0;

/// The flows of a run that have started (or are starting) and are not retired, by id.
#[derive(Debug)]
pub struct FlowTable {
    /// How many flows the workload generated: the first id of a closed loop's later flows.
    generated: u32,
    /// Slots of the workload's flows made so far: ids `0..first.len()`.
    first: Vec<u32>,
    /// Slots of the closed loops' later flows: ids `generated..generated + later.len()`.
    later: Vec<u32>,
    /// The flows; slot 0 is the tombstone.
    slots: Vec<Flow>,
    /// Slots of retired flows, for the next flows made.
    free: Vec<u32>,
}

impl FlowTable {
    /// An empty table for a workload of `generated` flows.
    pub fn new(generated: u32) -> FlowTable {
        FlowTable { generated, first: Vec::new(), later: Vec::new(), slots: vec![tombstone()], free: Vec::new() }
    }

    /// Adds the workload's next flow (its id is the number made so far), returning its id.
    pub fn push_generated(&mut self, flow: Flow) -> u32 {
        debug_assert!((self.first.len() as u32) < self.generated, "more flows than the workload generated");
        let slot = self.place(flow);
        self.first.push(slot);
        self.first.len() as u32 - 1
    }

    /// Gives the workload's next flow an id without state here: a part of a partitioned run that neither
    /// sends nor receives it. Its id names the tombstone.
    pub fn push_absent(&mut self) -> u32 {
        debug_assert!((self.first.len() as u32) < self.generated, "more flows than the workload generated");
        self.first.push(TOMBSTONE);
        self.first.len() as u32 - 1
    }

    /// Adds a flow a closed loop starts, returning its id.
    pub fn push_later(&mut self, flow: Flow) -> u32 {
        let slot = self.place(flow);
        self.later.push(slot);
        self.generated + self.later.len() as u32 - 1
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

    /// The slot of id `id`, if its flow has been made.
    #[inline(always)]
    fn slot(&self, id: u32) -> Option<u32> {
        if id < self.generated {
            self.first.get(id as usize).copied()
        } else {
            self.later.get((id - self.generated) as usize).copied()
        }
    }

    /// The flow with id `id`, if it has been made and is not retired.
    pub fn get(&self, id: u32) -> Option<&Flow> {
        self.slot(id).filter(|&s| s != TOMBSTONE).map(|s| &self.slots[s as usize])
    }

    /// Retires flow `id`, which has been made and has finished, returning its state; its id names the
    /// tombstone from now on.
    pub fn retire(&mut self, id: u32) -> Flow {
        let entry = if id < self.generated {
            &mut self.first[id as usize]
        } else {
            &mut self.later[(id - self.generated) as usize]
        };
        let slot = std::mem::replace(entry, TOMBSTONE);
        assert_ne!(slot, TOMBSTONE, "flow {id} retired twice");
        debug_assert!(self.slots[slot as usize].finish.is_some(), "flow {id} retired before it finished");
        self.free.push(slot);
        std::mem::replace(&mut self.slots[slot as usize], tombstone())
    }

    /// Every id the run knows: the workload's flows and the later flows started so far.
    pub fn ids(&self) -> u64 {
        self.generated as u64 + self.later.len() as u64
    }

    /// How many of the workload's flows have been made (retired ones included): ids `0..made`.
    pub fn generated_made(&self) -> u32 {
        self.first.len() as u32
    }

    /// Ids of the closed loops' later flows started so far.
    pub fn later_ids(&self) -> std::ops::Range<u32> {
        self.generated..self.generated + self.later.len() as u32
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
        let slot = if id < self.generated as usize { self.first[id] } else { self.later[id - self.generated as usize] };
        &self.slots[slot as usize]
    }
}

impl IndexMut<usize> for FlowTable {
    #[inline(always)]
    fn index_mut(&mut self, id: usize) -> &mut Flow {
        let slot = if id < self.generated as usize { self.first[id] } else { self.later[id - self.generated as usize] };
        &mut self.slots[slot as usize]
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
        let mut table = FlowTable::new(2);
        assert_eq!(table.push_generated(flow(10)), 0);
        assert_eq!(table.push_generated(flow(11)), 1);
        table[0].finish = Some(5);
        let retired = table.retire(0);
        assert_eq!((retired.src, retired.finish), (10, Some(5)));
        assert!(table.get(0).is_none(), "a retired flow is gone");
        assert!(table[0].finish.is_some() && table[0].snd_una >= table[0].size, "its id finds the tombstone");
        assert_eq!(table.push_later(flow(12)), 2);
        assert_eq!(table.slots.len(), 3, "the later flow took the retired flow's slot");
        assert_eq!((table[1].src, table[2].src), (11, 12));
        assert_eq!(table.get(1).map(|f| f.src), Some(11));
        assert_eq!((table.ids(), table.generated_made(), table.later_ids()), (3, 2, 2..3));
    }
}
