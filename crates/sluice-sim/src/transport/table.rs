//! Where a run's flows live, by id. A flow's state is made when the flow starts, so a run holds the
//! flows that have started, not its whole workload. Ids `0..generated` are the workload's flows, which
//! start in id order; ids from `generated` on are the flows closed loops start during the run, also in id
//! order. Two vectors hold them, so an id finds its flow with one comparison.

use std::ops::{Index, IndexMut};

use crate::transport::flow::Flow;

/// The flows of a run that have started (or are starting), by id.
#[derive(Debug, Default)]
pub struct FlowTable {
    /// How many flows the workload generated: the first id of a closed loop's later flows.
    generated: u32,
    /// The workload's flows made so far: ids `0..first.len()`.
    first: Vec<Flow>,
    /// The closed loops' later flows: ids `generated..generated + later.len()`.
    later: Vec<Flow>,
}

impl FlowTable {
    /// An empty table for a workload of `generated` flows.
    pub fn new(generated: u32) -> FlowTable {
        FlowTable { generated, first: Vec::new(), later: Vec::new() }
    }

    /// Adds the workload's next flow (its id is the number made so far), returning its id.
    pub fn push_generated(&mut self, flow: Flow) -> u32 {
        debug_assert!((self.first.len() as u32) < self.generated, "more flows than the workload generated");
        self.first.push(flow);
        self.first.len() as u32 - 1
    }

    /// Adds a flow a closed loop starts, returning its id.
    pub fn push_later(&mut self, flow: Flow) -> u32 {
        self.later.push(flow);
        self.generated + self.later.len() as u32 - 1
    }

    /// The flow with id `id`, if it has been made.
    pub fn get(&self, id: u32) -> Option<&Flow> {
        if id < self.generated {
            self.first.get(id as usize)
        } else {
            self.later.get((id - self.generated) as usize)
        }
    }

    /// Every id the run knows: the workload's flows and the later flows started so far.
    pub fn ids(&self) -> u64 {
        self.generated as u64 + self.later.len() as u64
    }

    /// The later flows with their ids.
    pub fn later(&self) -> impl Iterator<Item = (u32, &Flow)> {
        self.later.iter().enumerate().map(|(i, f)| (self.generated + i as u32, f))
    }

    /// The workload's flows made so far, in id order.
    pub fn generated_made(&self) -> &[Flow] {
        &self.first
    }
}

impl Index<usize> for FlowTable {
    type Output = Flow;

    #[inline(always)]
    fn index(&self, id: usize) -> &Flow {
        if id < self.generated as usize {
            &self.first[id]
        } else {
            &self.later[id - self.generated as usize]
        }
    }
}

impl IndexMut<usize> for FlowTable {
    #[inline(always)]
    fn index_mut(&mut self, id: usize) -> &mut Flow {
        if id < self.generated as usize {
            &mut self.first[id]
        } else {
            &mut self.later[id - self.generated as usize]
        }
    }
}
