//! sluice's packet-level datacenter network simulator, the embedded default datapath.
//!
//! Discrete events in integer picoseconds on a timing-wheel queue; packets live in an arena;
//! output-queued shared-buffer switches with priority queues, RED/ECN, PFC, INT and Bolt's programmable
//! egress queue; hosts whose NICs arbitrate among flows held to the window and rate their congestion
//! controller (a [`sluice_cc::CongestionControl`]) decides, one algorithm for every flow or one per
//! workload ([`SimInput::mix`]). The same scenario and seed always give the same results.
//!
//! The crate is built in layers; a module imports only from layers below its own (a test checks this):
//!
//! | layer | modules | what it holds |
//! |---|---|---|
//! | 0 | `config`, `stats` | plain settings and counters |
//! | 1 | `engine` | the clock, the event queue, the packet arena, the packet trace |
//! | 2 | `net` | ports, switches and their features (faults, token limiters, trimming) |
//! | 3 | `transport` | per-flow sender and receiver state |
//! | 4 | `host` | the NIC, the CC plane, the host models and the transports' host logic |
//! | 5 | `sim` | the assembly of a run, the event loop and the records |
//!
//! docs/sim-architecture.md draws the layers and follows a packet through them.

pub mod config;
mod engine;
pub mod footprint;
mod host;
mod net;
mod sim;
pub mod stats;
mod transport;

pub use config::{
    BoltSwitchConfig, EcnConfig, EcnThresholds, HostConfig, LinkConfig, LoadBalance, LossRecovery, MarkAt, NonEct,
    PfcConfig, Scheduler, SwitchConfig,
};
pub use engine::queue;
pub use engine::trace::PacketTraceConfig;
pub use sim::{Balance, FlowAlgorithm, Observe, PartitionedRun, Progress, SimInput, SimOutput, Simulation, StopRule};
/// A flow to simulate, as the workload generators make it.
pub use sluice_workload::FlowSpec;
pub use stats::Counters;
