//! sluice's congestion-control API and algorithm library.
//!
//! An algorithm is written once against [`api::CongestionControl`] and runs on every sluice datapath.
//! Each algorithm lives in its own module with a config struct whose defaults cite their source; the
//! [`registry`](mod@registry) maps scenario names to constructors. What an algorithm requires of a datapath
//! and what each datapath provides meet in one check, [`contract::check`].
//!
//! Adding an algorithm: write `src/myalgo.rs` with a config struct (`Deserialize`, `Serialize`,
//! `deny_unknown_fields`, documented defaults) and a controller implementing
//! [`api::CongestionControl`], then add one [`registry::Algorithm`] entry in `src/registry.rs`.

pub mod api;
pub mod contract;
pub mod hostctl;
pub mod periodic;
pub mod program;
pub mod receiver;
pub mod registry;
pub mod rto;
pub mod signal;

pub mod aimd;
pub mod bbr;
pub mod bolt;
pub mod cubic;
pub mod dcqcn;
pub mod dctcp;
pub mod dctcp_burst;
pub mod dctcp_host;
pub mod doca_rtt;
pub mod ecaware;
pub mod hostcc;
pub mod hpcc;
pub mod none;
pub mod opt;
pub mod reno;
pub mod rocc;
pub mod rocc_switch;
pub mod swift;
pub mod timely;
pub mod vegas;

pub mod expresspass;
pub mod grants;
pub mod homa;
pub mod ndp;
pub mod tocc;
pub mod token;

#[cfg(test)]
mod test_flows;

pub use api::{
    Ack, CongestionControl, Ctx, Decisions, Events, Feedback, FlowInfo, HostSignal, IntHop, Loss, LossKind, Needs,
    ReportEvery, ReportPolicy, Sent, SignalOrigin, TimerId,
};
pub use contract::{Capabilities, Capability, CapabilitySet, Missing};
pub use hostctl::{HostControl, HostCtx, HostDecisions, HostInfo};
pub use program::{Install, Program, ProgramError, ProgramReport};
pub use receiver::{AckKind, Arrival, QueueMove, ReceiverControl, Request, RxCtx, RxDecisions, RxEvents, StreamSample};
pub use registry::{lookup, registry, Algorithm, Control, Factory, ParamError};
pub use token::{TokenTransport, Unscheduled};
