//! One part of a partitioned run: which nodes the part handles, and the events its handlers make for
//! nodes of other parts (a packet or a PFC frame put on a link that leaves the part), held with their
//! packets until the parts exchange them between two steps of the run.
//!
//! Such an event is due a link's propagation delay after it was made at the earliest, so a part can run
//! that far ahead of the others without missing one (the run's lookahead).

use std::sync::Arc;

use sluice_core::Time;

use super::packet::Parcel;
use super::Event;

/// The nodes a part handles and what it sends to the others.
#[derive(Debug)]
pub struct Partition {
    /// This part's index.
    part: u16,
    /// The part of every node, by node id.
    part_of: Arc<[u16]>,
    /// Events for other parts' nodes, by destination part, in the order they were made.
    outbox: Vec<Vec<Remote>>,
}

/// An event for a node of another part, with the packet it carries; or, as [`Event::FlowStart`], the
/// notice that a closed loop started a flow the other part receives.
#[derive(Debug, Clone)]
pub struct Remote {
    /// When it is due.
    pub at: Time,
    /// The event (an arrival's packet id is set where it is delivered).
    pub event: Event,
    /// An arrival's packet.
    pub parcel: Option<Parcel>,
}

impl Partition {
    /// Part `part` of a run whose node `n` belongs to part `part_of[n]`.
    pub fn new(part: u16, part_of: Arc<[u16]>) -> Partition {
        let parts = part_of.iter().copied().max().map_or(1, |m| m as usize + 1);
        Partition { part, part_of, outbox: (0..parts).map(|_| Vec::new()).collect() }
    }

    /// Whether node `node` is this part's.
    #[inline]
    pub fn owns(&self, node: u32) -> bool {
        self.part_of[node as usize] == self.part
    }

    /// The part node `node` belongs to.
    #[inline]
    pub fn part_of(&self, node: u32) -> u16 {
        self.part_of[node as usize]
    }

    /// The part `event` is for, when that is another part: arrivals and PFC frames cross links
    /// ([`super::Core::schedule_across`]); every other event is for the node that made it.
    #[inline]
    pub fn destination(&self, event: &Event) -> Option<u16> {
        match *event {
            Event::Arrive { node, .. } | Event::Pfc { node, .. } => {
                let to = self.part_of[node as usize];
                (to != self.part).then_some(to)
            }
            _ => None,
        }
    }

    /// Holds `remote` for part `to`.
    pub fn send(&mut self, to: u16, remote: Remote) {
        self.outbox[to as usize].push(remote);
    }

    /// The events held for part `to`, in the order they were made, leaving an empty list.
    pub fn take_outbox(&mut self, to: u16) -> Vec<Remote> {
        std::mem::take(&mut self.outbox[to as usize])
    }
}
