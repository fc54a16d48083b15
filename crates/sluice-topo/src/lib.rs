//! Datacenter network topologies for sluice: generated fat-trees, leaf-spines, stars and dumbbells,
//! topology files (sluice TOML and the HPCC ns-3 artifact's `topology.txt`), shortest-path ECMP routes
//! and the path profiles used for ideal flow completion times.
//!
//! ```
//! use sluice_topo::{build, TopologySpec};
//! let spec = TopologySpec::fat_tree(8, 100_000_000_000);
//! let topo = build(&spec, std::path::Path::new(".")).unwrap();
//! assert_eq!(topo.describe(), "fat-tree k=8: 128 hosts, 80 switches, 384 links");
//! let routes = topo.routes();
//! assert_eq!(topo.path_profile(&routes, 0, 127).hops, 6);
//! ```

#![warn(missing_docs)]

mod error;
mod file;
mod generate;
mod graph;
mod routes;
mod spec;

pub use error::TopoError;
pub use graph::{Link, Node, NodeId, NodeKind, Port, PortNo, Topology, MAX_NODES};
pub use routes::{PathProfile, RouteProgress, Routes};
pub use spec::{build, TopologySpec, DEFAULT_DELAY};

/// The topology kinds a specification's `kind` key accepts, each with a one-line description.
pub fn kinds() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "fat_tree",
            "k-ary fat-tree (Al-Fares et al.) with optional pod, ToR, aggregation, core and host-count overrides",
        ),
        ("leaf_spine", "two-tier leaf-spine: ToRs of hosts, each ToR linked once to every spine"),
        ("star", "one switch with every host attached (incast experiments)"),
        ("dumbbell", "two switches of hosts joined by a single bottleneck link"),
        ("file", "a topology file: sluice TOML (.toml) or the HPCC ns-3 artifact's topology.txt"),
    ]
}
