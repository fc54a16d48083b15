//! The sizes of the simulator's per-element records, for estimating a run's memory before it runs
//! (`sluice check`), without making the records themselves public.

use std::mem::size_of;

use sluice_core::Time;

use crate::engine::packet::{IntStack, Packet};
use crate::engine::Event;
use crate::host::Host;
use crate::net::port::Port;
use crate::transport::flow::Flow;

/// Bytes of one pending event in the event queue (its time and the event).
pub const EVENT_ENTRY_BYTES: usize = size_of::<(Time, Event)>();
/// Bytes of one packet record in the packet arena.
pub const PACKET_BYTES: usize = size_of::<Packet>();
/// Bytes of one packet's INT stack (kept only when switches stamp INT).
pub const INT_STACK_BYTES: usize = size_of::<IntStack>();
/// Bytes of one packet's switch-signal value (kept only when an algorithm has a switch signal).
pub const SIGNAL_BYTES: usize = size_of::<u64>();
/// Bytes of one egress port, before its queues' contents.
pub const PORT_BYTES: usize = size_of::<Port>();
/// Bytes of one host's record with its NIC: what every part of a partitioned run keeps for each host,
/// its own or another part's.
pub const HOST_BYTES: usize = size_of::<Host>();
/// Bytes of one flow's state (`Flow`), without its algorithm's, which a partitioned run keeps for
/// finished flows too, in the parts of both its hosts.
pub const FLOW_STATE_BYTES: usize = size_of::<Flow>();
