//! Workloads for sluice: flow-size distributions and the generators that turn a scenario's workload
//! entries into one deterministic list of flows.
//!
//! * [`SizeCdf`] reads the published flow-size distributions (nine are built in, see [`builtin_names`]) and
//!   samples them exactly as the simulators that published them do.
//! * [`WorkloadSpec`] is one workload entry as written in a scenario file (Poisson arrivals, incast,
//!   permutation, all-to-all, long-lived flows, closed loops, or an explicit flow list).
//! * [`generate`] validates the entries against the topology ([`WorkloadContext`]) and returns the flows
//!   ([`FlowSpec`]) sorted by start time; the same seed always gives the same flows.
//! * [`generate_workload`] gives the flows as a [`FlowSource`], which generates them in order as they are
//!   read (memory follows the hosts, not the flows), and adds the [`ClosedLoop`]s, which start further
//!   flows during a run as flows complete.

#![warn(missing_docs)]

mod algorithms;
pub mod cdf;
mod closed_loop;
mod count;
mod error;
mod flowlist;
mod generator;
mod poisson;
mod sizes;
mod spec;
mod stream;

pub use algorithms::RowAlgorithm;
pub use cdf::{builtin_names, SizeCdf, DCTCP_PACKET_BYTES};
pub use closed_loop::{ClosedLoop, LoopIds, LoopSlot};
pub use count::MAX_FLOWS;
pub use error::WorkloadError;
pub use flowlist::parse_flow_list;
pub use generator::{generate, generate_workload, FlowSpec, Workload, WorkloadContext, UNBOUNDED_SIZE};
pub use sizes::FlowSizes;
pub use spec::{Destinations, LongLivedFlow, WorkloadSpec};
pub use stream::{FlowSource, FlowStream};
