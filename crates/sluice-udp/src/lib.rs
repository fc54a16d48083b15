//! The user-space UDP datapath of sluice: flows carried over UDP sockets with the sluice header
//! (`sluice-wire`), driven by the same CC plane (`sluice-plane`'s per-flow driver) and the same
//! algorithms (`sluice-cc`) as the simulator and the kernel datapath.
//!
//! Layers, lowest first:
//! - [`config`]: transport settings.
//! - [`flow_index`]: flow ids to slots, an array while ids are dense.
//! - [`prefetch`]: cache prefetch hints for the state of the flows served next.
//! - [`wheel`]: the timing wheel that paces flows and runs their timers.
//! - [`receiver`]: one flow's receiving state and ACK policy.
//! - [`sender`]: one flow's sending state: scoreboard, loss detection, RTT estimate.
//! - [`peer_clock`]: when each peer was last heard from (whether it is gone).
//! - [`token`]: the receiver-driven (token) transport at both ends: requests, tokens, grants, NACKs.
//! - [`trace_ring`]: streamed traces: a bounded ring per traced flow, drained by a writer thread.
//! - [`endpoint`]: a host's flows, without I/O (datagrams in, datagrams out, a clock).
//! - [`io`]: batched IPv4 UDP sockets that carry the ECN bits both ways.
//! - [`host`]: an endpoint on a socket, run on the monotonic clock.

pub mod config;
pub mod endpoint;
pub mod flow_index;
pub mod host;
pub mod io;
pub mod peer_clock;
pub mod prefetch;
pub mod receiver;
pub mod sender;
pub mod token;
pub mod trace_ring;
pub mod wheel;

/// A peer as the I/O layer numbers its addresses.
pub type PeerId = u32;

pub use config::TransportConfig;
pub use endpoint::{Endpoint, FlowResult, FlowSpec, Refused, Transmit, TransportCounters};
pub use host::{IoCounters, UdpHost};
pub use token::TokenCounters;
pub use trace_ring::{TapCounters, TraceStream, TraceWriter};
