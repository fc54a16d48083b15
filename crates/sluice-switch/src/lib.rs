//! The sluice software switch's forwarding engine, as pure logic on an explicit clock: one
//! [`Fabric`] holds every switch of a topology, simulates the links between switches, and exchanges
//! frames with hosts through the caller (the bed's veths, or a test). Its switches have the meaning of
//! the simulator's (`[switch]`, `[switch.ecn]`): a shared buffer per switch with dynamic-threshold
//! admission and tail drop, up to eight strict-priority queues, serialisation at the link rate,
//! propagation delay, RED or step ECN marking at enqueue or dequeue, and INT records (here appended to
//! sluice packets that ask for them). Impairments drop or mark chosen packets of a flow. Token limiters
//! ([`tokens`]) pace the tokens of receiver-driven algorithms at switch ports. When the run's algorithm
//! has a per-hop switch signal, every switch port runs its hook ([`signal`]).
//!
//! [`scenario::fabric_config`] builds the configuration from a resolved scenario, or names the key the
//! fabric cannot honour. [`records`] writes `queues.csv` and `throughput.csv` as the simulator does.

pub mod config;
pub mod fabric;
pub mod impair;
pub mod pool;
pub mod port;
pub mod records;
pub mod scenario;
pub mod signal;
pub mod tokens;

pub use config::{FabricConfig, HostAddr, ImpairAction, Impairment, Pick, Sampling, SwitchParams};
pub use fabric::{Counters, Fabric, ImpairStats};
pub use scenario::{fabric_config, Unsupported};
