//! Faults a scenario injects at switch ports (what [`crate::net::fault`] carries out).

use sluice_core::Time;

/// What a fault does to the packets it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// The packet is lost.
    Drop,
    /// The packet's ECN field is set to CE when it is ECN-capable (a switch never marks a packet that
    /// is not, RFC 3168 section 5).
    Mark,
}

/// Which packets a fault picks.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Data packets of `flow` by their position among that flow's data packets leaving the port
    /// (0 is the first; a retransmission counts as another packet), in increasing order.
    Packets {
        /// The flow id.
        flow: u32,
        /// Positions, sorted, without repeats.
        packets: Vec<u64>,
        /// Drop or mark.
        action: FaultAction,
    },
    /// Each packet leaving the port between `from` and `until` with probability `fraction`, from the
    /// fault's own random stream (marks apply to ECN-capable data packets only).
    Fraction {
        /// Probability per packet, in (0, 1].
        fraction: f64,
        /// Drop or mark.
        action: FaultAction,
        /// Start of the window.
        from: Time,
        /// End of the window (exclusive).
        until: Time,
    },
    /// The link is down between `from` and `until`: every packet the switch sends on the port, and
    /// every packet arriving at the port from its peer, is lost.
    LinkDown {
        /// When the link goes down.
        from: Time,
        /// When it comes back up (exclusive).
        until: Time,
    },
}

/// One fault at one switch port, as the scenario gives it (node and port ids resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// The switch's node id.
    pub node: u32,
    /// Its egress port.
    pub port: u16,
    /// What the fault picks and does.
    pub kind: FaultKind,
}
