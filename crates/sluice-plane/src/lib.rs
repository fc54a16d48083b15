//! The plane between a datapath and a congestion-control algorithm (TAURUS sections 3.3-3.5; CCP).
//!
//! Signals a datapath collects (ACKs, ECN echoes, losses, sent bytes, custom feedback, probe results)
//! are folded per flow by three aggregation engines ([`fold::Fold`]: accumulable sums, coalescent flags,
//! raw samples) until the algorithm's reporting policy ([`trigger::Trigger`]) says a report is due;
//! urgent signals bypass the wait. A report is handed to the algorithm's bound handlers
//! ([`fold::Report::deliver`]), and its decisions pass the boundary and duplicate filters
//! ([`filter::Filters`]) on their way back.
//!
//! Off the datapath ([`config::Mode::Offload`]) reports travel as messages: they are batched until a
//! byte threshold or a deadline ([`channel::Batcher`]), cross a bounded ring with a one-way latency and
//! a per-transfer header, and wait for a plane core that spends a service time on each
//! ([`channel::PlaneCore`]). A full ring lengthens aggregation periods (back-pressure), merges what can
//! be merged and evicts the oldest of the rest. [`counters::PlaneCounters`] records all of it.
//!
//! [`driver::FlowDriver`] ties these together for one flow, the same way on every datapath (simulator,
//! kernel agent, UDP transport): a datapath implements the small [`driver::Datapath`] trait (the time,
//! wakes, applying decisions, and the channel in offload mode) and feeds the driver its signals.
//! [`offload::HostChannel`] runs one host's end of the channel for event-driven datapaths (the
//! simulator and the UDP transport).
//!
//! Nothing here knows a datapath: times are picoseconds handed in by the caller, and the caller turns
//! the deadlines this crate returns into its own timers or events.

pub mod channel;
pub mod config;
pub mod counters;
pub mod driver;
pub mod filter;
pub mod fold;
pub mod offload;
pub mod trigger;

pub use channel::{Batcher, Message, PlaneCore};
pub use config::{Mode, PlaneConfig};
pub use counters::PlaneCounters;
pub use driver::{Datapath, FlowDriver, Wake};
pub use filter::Filters;
pub use fold::{Fold, Report};
pub use offload::{ChannelEvent, HostChannel};
pub use trigger::Trigger;
