//! Switch-side signals: a per-hop value that a switch computes for an algorithm, datapath-neutral.
//!
//! A design (RoCC's fair rate, a power signal, a switch-computed rate) has two halves. Its switch side
//! is a [`SwitchSignal`]: for every egress port a switch builds one [`PortSignal`], which keeps its own
//! state and is called when a packet is enqueued at the port and when it is dequeued, with the port's
//! state ([`PortView`]). For a data packet the hook may write a value into the packet's signal field,
//! where the switches of the path combine their values by the design's [`Combine`] rule and the
//! receiver echoes the result on the ACK, and it may send a value straight back to the sender in a
//! feedback packet. Its algorithm side receives either as [`crate::Feedback::Signal`] through
//! [`crate::CongestionControl::on_feedback`], folded by the plane like other raw feedback.
//!
//! An algorithm declares the switch side in its registry entry ([`crate::Needs::signal`]) and builds it
//! from its parameters ([`crate::Factory::switch_signal`]); datapaths without a signal hook refuse it
//! through the capability contract ([`crate::contract::Capability::Signal`]). A switch knows a design
//! only through these traits: nothing in a datapath names one.

use std::fmt;

use sluice_core::{Rate, Time};

/// How the switches of a path combine their values in a packet's signal field (the first hop's value
/// is taken as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// The smallest value on the path (a bottleneck rate).
    Min,
    /// The largest value on the path (the most congested hop).
    Max,
    /// The sum over the path (a total delay or cost).
    Sum,
    /// The last hop's value.
    Last,
}

impl Combine {
    /// `so_far` (the value of the hops before) combined with this hop's `value`.
    #[inline]
    pub fn apply(self, so_far: u64, value: u64) -> u64 {
        match self {
            Combine::Min => so_far.min(value),
            Combine::Max => so_far.max(value),
            Combine::Sum => so_far.saturating_add(value),
            Combine::Last => value,
        }
    }
}

/// An egress port as a signal hook sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortView {
    /// The current time.
    pub now: Time,
    /// The switch's node id.
    pub node: u32,
    /// The port's number at the switch.
    pub port: u16,
    /// Bytes waiting in the port's queues (all priorities): at enqueue, what the arriving packet finds;
    /// at dequeue, what is left behind the departing packet.
    pub queue_bytes: u64,
    /// The port's link rate.
    pub rate: Rate,
    /// Wire bytes the port has transmitted so far (the departing packet not included).
    pub tx_bytes: u64,
    /// Bytes held in the switch's shared buffer.
    pub buffer_used: u64,
    /// The switch's buffer size.
    pub buffer_size: u64,
}

/// A packet as a signal hook sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketView {
    /// The flow it belongs to.
    pub flow: u64,
    /// A data packet (only data packets carry a signal field and trigger feedback).
    pub data: bool,
    /// Bytes on the wire.
    pub wire_bytes: u32,
    /// The value earlier hops wrote into its signal field, if any did.
    pub signal: Option<u64>,
}

/// What a hook does with the packet it was called for; ignored for packets other than data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Combine this value into the packet's signal field (by the design's [`Combine`] rule).
    pub write: Option<u64>,
    /// Send this value back to the packet's sender in a feedback packet.
    pub feedback: Option<u64>,
}

impl Stamp {
    /// Leave the packet as it is.
    pub const NONE: Stamp = Stamp { write: None, feedback: None };
}

/// A design's state at one egress port. Both hooks default to doing nothing; a design overrides the
/// points where it acts.
pub trait PortSignal: Send + fmt::Debug {
    /// A packet routed to the port, before the switch admits it (it may still be dropped).
    fn on_enqueue(&mut self, _port: &PortView, _packet: &PacketView) -> Stamp {
        Stamp::NONE
    }

    /// A packet leaving the port (after it left the queue, before it is on the wire).
    fn on_dequeue(&mut self, _port: &PortView, _packet: &PacketView) -> Stamp {
        Stamp::NONE
    }

    /// The port's current value, for traces and tests.
    fn value(&self) -> u64;
}

/// A design's switch side: what a switch needs to run it.
pub trait SwitchSignal: Send + Sync + fmt::Debug {
    /// The design's name (`"rocc"`), for messages and listings.
    fn name(&self) -> &'static str;

    /// How the hops of a path combine the values they write.
    fn combine(&self) -> Combine;

    /// The state of an egress port whose link runs at `rate`.
    fn port(&self, rate: Rate) -> Box<dyn PortSignal>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_combine_hop_values() {
        assert_eq!(Combine::Min.apply(40, 25), 25);
        assert_eq!(Combine::Max.apply(40, 25), 40);
        assert_eq!(Combine::Sum.apply(40, 25), 65);
        assert_eq!(Combine::Sum.apply(u64::MAX, 1), u64::MAX);
        assert_eq!(Combine::Last.apply(40, 25), 25);
    }
}
