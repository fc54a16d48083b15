//! sluice scenario files: the TOML a user writes to describe a run, read into a [`Scenario`] and
//! resolved into everything the simulator needs ([`Resolved`]).
//!
//! ```toml
//! name = "quickstart"          # default: the file stem
//! seed = 1                     # default 1
//! [simulation]
//! duration = "20ms"            # stop here; absent: run until every flow finishes (bounded by time_limit)
//! time_limit = "1s"            # default 1 s simulated
//! [topology]                   # sluice_topo::TopologySpec
//! kind = "fat_tree"
//! k = 4
//! host_rate = "100Gbps"
//! [link]                       # sluice_sim::config::LinkConfig
//! [switch]                     # sluice_sim::config::SwitchConfig; ECN thresholds as an array of tables:
//! [[switch.ecn.thresholds]]    # absent: filled per link rate from the algorithm
//! rate = "100Gbps"
//! kmin = "400KB"
//! kmax = "1600KB"
//! pmax = 0.2
//! [host]                       # sluice_sim::config::HostConfig
//! [[workload]]                 # sluice_workload::WorkloadSpec, at least one
//! kind = "poisson"
//! cdf = "websearch"
//! load = 0.3
//! duration = "1ms"
//! [cc]
//! algorithm = "dcqcn"          # default "dcqcn"
//! [cc.params]                  # checked by the algorithm
//! [output]
//! dir = "results/quickstart"   # default results/<name>
//! buckets = ["10KB", "100KB", "1MB"]
//! trace_flows = [0]
//! trace_interval = "1us"
//! throughput_flows = [0]
//! throughput_ports = ["tor0:p0"]
//! sample_interval = "10us"
//! ```
//!
//! [`load`] reads a file and applies `--set key=value` overrides (dotted keys, numeric array indices)
//! to the TOML document before deserializing, so overrides pass the same checks as file content.
//! Every error names the file and line, or the `--set` argument, and the dotted key at fault:
//! `scenarios/x.toml:12: topology.k: must be even and at least 2 (got 7)`.
//! [`resolve`] builds the topology, flows and algorithm; [`resolved_toml`] writes the scenario back with
//! every default filled in.
//!
//! ```
//! use std::path::Path;
//!
//! let text = r#"
//! [topology]
//! kind = "star"
//! hosts = 9
//! rate = "100Gbps"
//!
//! [[workload]]
//! kind = "incast"
//! receiver = 0
//! size = "64KB"
//! "#;
//! let sets = ["workload.0.size=1MB".to_string()];
//! let scenario = sluice_scenario::load_str(text, "incast.toml", Path::new("."), &sets)?;
//! let resolved = sluice_scenario::resolve(&scenario)?;
//! assert_eq!(resolved.flows.len(), 8);
//! assert!(resolved.flows.iter().all(|f| f.size == 1_000_000));
//! assert!(sluice_scenario::resolved_toml(&resolved).contains("size = \"1MB\""));
//!
//! let bad = sluice_scenario::load_str(text, "incast.toml", Path::new("."), &["topology.hosts=0".into()])
//!     .and_then(|s| sluice_scenario::resolve(&s))
//!     .unwrap_err();
//! assert_eq!(bad.to_string(), "--set topology.hosts=0: topology.hosts: must be at least 1 (got 0)");
//! # Ok::<(), sluice_scenario::ScenarioError>(())
//! ```

#![warn(missing_docs)]

mod contract;
mod error;
mod fault;
mod generate;
mod limits;
mod list;
mod load;
mod locate;
mod mix;
mod overrides;
mod program;
mod resolve;
mod scenario;
mod schema;
mod validate;

pub use error::{Location, ScenarioError};
pub use fault::{FaultSpec, FaultWhat};
pub use list::list_text;
pub use load::{apply_sets, load, load_str, override_seed};
pub use mix::Mix;
pub use resolve::{
    canonical, resolve, resolve_with_progress, resolved_identity, resolved_toml, resolved_toml_at, Resolved,
};
pub use scenario::Scenario;
pub use schema::{
    CcSpec, FlowSelection, HugePages, OutputSpec, PacketTraceSpec, PortRef, SimulationSpec, DEFAULT_ALGORITHM,
    DEFAULT_BUCKETS, DEFAULT_PACKET_TRACE_ROWS, DEFAULT_SAMPLE_INTERVAL, DEFAULT_SEED, DEFAULT_TIME_LIMIT,
    DEFAULT_TRACE_INTERVAL, HUGE_PAGES_FROM, MAX_PACKET_TRACE_ROWS,
};
pub use validate::{MAX_FRAME_BYTES, MAX_SAMPLES};

pub(crate) use generate::workload_kinds;
