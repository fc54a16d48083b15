//! Topology files: sluice TOML (`[[node]]`/`[[link]]`) and the HPCC artifact's `topology.txt`.

use std::path::Path;

use sluice_topo::{build, NodeKind, TopologySpec};

use crate::with_scratch_file;

/// Largest `node_num` of a `topology.txt` header that is built. The format lets three numbers ask for
/// up to `MAX_NODES` (2^24) nodes, gigabytes of memory for a few bytes of input; those inputs are
/// skipped rather than left to exhaust the fuzzer's memory.
pub const MAX_HPCC_NODES: u64 = 4096;

/// Largest topology whose routes are computed (the table has one entry per switch and host).
pub const MAX_ROUTED_NODES: usize = 512;

/// Builds the input as a `.toml` topology file and as a `topology.txt`; every topology accepted must
/// keep the documented invariants (hosts, each with one NIC to a switch; links with a rate) and have
/// routes.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    with_scratch_file("toml", text, check);
    if hpcc_header_nodes(text).is_none_or(|nodes| nodes <= MAX_HPCC_NODES) {
        with_scratch_file("txt", text, check);
    }
}

/// The `node_num` of a `topology.txt` header, when its first line starts with a number.
fn hpcc_header_nodes(text: &str) -> Option<u64> {
    let header = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    header.split_whitespace().next()?.parse().ok()
}

fn check(path: &Path) {
    let spec = TopologySpec::File { path: path.display().to_string() };
    let topology = match build(&spec, Path::new("")) {
        Ok(topology) => topology,
        Err(e) => return drop(e.to_string()),
    };
    assert!(topology.num_hosts() > 0, "a topology without hosts was accepted");
    for &host in &topology.hosts {
        let ports = &topology.ports[host as usize];
        assert_eq!(ports.len(), 1, "host node {host} has {} ports, not one NIC", ports.len());
        let switch = &topology.nodes[ports[0].peer as usize];
        assert_eq!(switch.kind, NodeKind::Switch, "host node {host} is not linked to a switch");
    }
    for link in &topology.links {
        assert!(link.rate > 0, "a link without rate was accepted: {link:?}");
    }
    drop(topology.describe());
    if topology.nodes.len() <= MAX_ROUTED_NODES {
        drop(topology.routes());
    }
}
