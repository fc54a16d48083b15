//! sluice's packet-level datacenter network simulator, the embedded default datapath.
//!
//! Discrete events in integer picoseconds on a timing-wheel queue ([`queue::WheelQueue`]); packets live
//! in an arena; output-queued shared-buffer switches with priority queues, RED/ECN, PFC, INT and Bolt's
//! programmable egress queue; hosts whose NICs arbitrate among flows held to the window and rate their
//! congestion controller (a [`sluice_cc::CongestionControl`]) decides, one algorithm for every flow or
//! one per workload ([`SimInput::mix`]). Faults ([`fault`]) and a packet trace ([`packet_trace`]) plug in
//! at the switch ports. The same scenario and seed always give the same results.
//!
//! Elements do one job each: [`port::Port`] serializes and queues, [`switch::Switch`] forwards and
//! admits, [`host::Host`] sends and receives, [`sim::Simulation`] wires them and runs the loop.

pub mod config;
pub mod endpoint;
pub mod engine;
pub mod fault;
pub mod flow;
pub mod host;
pub mod hostbus;
pub mod packet;
pub mod packet_trace;
pub mod plane;
pub mod port;
pub mod queue;
pub mod rd;
pub mod rd_switch;
pub mod sim;
pub mod switch;

pub use config::{
    BoltSwitchConfig, EcnConfig, EcnThresholds, HostConfig, LinkConfig, LoadBalance, LossRecovery, MarkAt, NonEct,
    PfcConfig, Scheduler, SwitchConfig,
};
pub use engine::Counters;
pub use sim::{FlowAlgorithm, FlowDesc, Observe, Progress, SimInput, SimOutput, Simulation, StopRule};
