//! One part of a partitioned run: which nodes the part handles, and what it has for other parts (the
//! events its handlers make for their nodes, a packet or a PFC frame put on a link that leaves the part,
//! and what they must know of flows they share), held until the parts exchange them between two steps
//! of the run.
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
    /// Mail for other parts, by destination part, in the order it was made.
    outbox: Vec<Vec<Mail>>,
    /// Long-lived flows this part receives whose senders' parts told their stop: (flow, size, finished),
    /// until the stop is handled here.
    stops: Vec<(u32, u64, bool)>,
}

/// What one part hands another between two steps of the run.
// Each variant's doc names its fields.
#[allow(missing_docs)]
#[derive(Debug, Clone)]
pub enum Mail {
    /// An event for one of its nodes.
    Event(Remote),
    /// A closed loop started flow `flow` at `at`, which the other part receives.
    LoopFlow { flow: u32, at: Time },
    /// Long-lived flow `flow`, which the other part receives, stops after `size` bytes; all of them were
    /// acknowledged then if `finished`.
    Stopped { flow: u32, size: u64, finished: bool },
}

/// An event for a node of another part, with the packet it carries.
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
        Partition { part, part_of, outbox: (0..parts).map(|_| Vec::new()).collect(), stops: Vec::new() }
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

    /// Keeps what flow `flow`'s sender's part found at its stop (its size, and whether all of it was
    /// acknowledged) until the stop is handled here.
    pub fn hold_stop(&mut self, flow: u32, size: u64, finished: bool) {
        self.stops.push((flow, size, finished));
    }

    /// What flow `flow`'s sender's part found at its stop, if it told.
    pub fn take_stop(&mut self, flow: u32) -> Option<(u64, bool)> {
        let at = self.stops.iter().position(|s| s.0 == flow)?;
        let (_, size, finished) = self.stops.swap_remove(at);
        Some((size, finished))
    }

    /// Holds `mail` for part `to`.
    pub fn send(&mut self, to: u16, mail: Mail) {
        self.outbox[to as usize].push(mail);
    }

    /// Moves the mail held for part `to`, in the order it was made, to the end of `mailbox`. An empty
    /// mailbox trades lists with the outbox instead, so that both keep their buffers from window to
    /// window: a list made anew each window grew by copying, through the allocator, every time.
    pub fn post_to(&mut self, to: u16, mailbox: &mut Vec<Mail>) {
        let outbox = &mut self.outbox[to as usize];
        if mailbox.is_empty() {
            std::mem::swap(mailbox, outbox);
        } else {
            mailbox.append(outbox);
        }
    }
}
