//! Topology files in both formats.

use std::path::{Path, PathBuf};

use sluice_core::{PS_PER_NS, PS_PER_US};
use sluice_topo::{build, NodeKind, Topology, TopologySpec};

const G100: u64 = 100_000_000_000;
const G400: u64 = 400_000_000_000;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn load(path: &str) -> Topology {
    build(&TopologySpec::File { path: path.into() }, &data_dir()).unwrap()
}

#[test]
fn sluice_toml_file() {
    let topo = load("data/diamond.toml");
    assert_eq!(topo.describe(), "diamond: 4 hosts, 4 switches, 8 links");
    assert_eq!(topo.hosts, vec![0, 1, 2, 3]);
    assert_eq!(topo.rack_of, vec![0, 0, 1, 1]);
    let tiers: Vec<u8> = topo.nodes.iter().map(|n| n.tier).collect();
    assert_eq!(tiers, vec![0, 0, 0, 0, 1, 1, 2, 2]);
    assert_eq!(topo.links[1].delay, PS_PER_US, "delay defaults to 1us");
    // tor1's ports follow link order: h2 (port 0), h3 (1), spine0 (2), spine1 (3).
    let peers: Vec<&str> = topo.ports[5].iter().map(|p| topo.nodes[p.peer as usize].name.as_str()).collect();
    assert_eq!(peers, ["h2", "h3", "spine0", "spine1"]);
    let routes = topo.routes();
    assert_eq!(routes.next_hops(4, 2), &[2, 3], "two spines: two equal-cost uplinks");
    let profile = topo.path_profile(&routes, 0, 3);
    assert_eq!(profile.link_rates, vec![G100, G400, G400, G100]);
    assert_eq!(profile.prop_delay, PS_PER_US + 4 * PS_PER_US + 500 * PS_PER_NS);
    assert_eq!(profile.switches, 3);
}

#[test]
fn hpcc_topology_txt() {
    let topo = load("data/hpcc_topology.txt");
    assert_eq!(topo.describe(), "file hpcc_topology.txt: 4 hosts, 3 switches, 6 links");
    assert_eq!(topo.nodes[4].kind, NodeKind::Switch);
    assert_eq!(topo.nodes[3].name, "n3");
    assert_eq!(topo.rack_of, vec![0, 0, 1, 1]);
    assert!(topo.links.iter().all(|l| l.delay == PS_PER_US), "0.001ms is 1us");
    let routes = topo.routes();
    let profile = topo.path_profile(&routes, 0, 2);
    assert_eq!((profile.hops, profile.bottleneck), (4, G100));
    assert_eq!(profile.link_rates, vec![G100, G400, G400, G100]);
}

#[test]
fn absolute_paths_ignore_the_base_dir() {
    let path = data_dir().join("data/diamond.toml");
    let spec = TopologySpec::File { path: path.to_string_lossy().into_owned() };
    assert_eq!(build(&spec, Path::new("/nonexistent")).unwrap().num_hosts(), 4);
}

/// Writes the 320-host benchmark fat-tree in the HPCC `topology.txt` format (node ids: hosts 0..320,
/// ToRs 320..340, aggs 340..360, cores 360..376), the layout of the HPCC artifact's own fat-tree file.
fn hpcc_fat320_text() -> String {
    let mut lines = vec!["376 56 480".to_string()];
    lines.push((320..376).map(|s| s.to_string()).collect::<Vec<_>>().join(" "));
    let mut link = |a: u32, b: u32, rate: &str| lines.push(format!("{a} {b} {rate} 1000ns 0.000000"));
    for h in 0..320 {
        link(h, 320 + h / 16, "100Gbps");
    }
    for tor in 0..20 {
        for j in 0..4 {
            link(320 + tor, 340 + tor / 4 * 4 + j, "400Gbps");
        }
    }
    for agg in 0..20 {
        for c in 0..4 {
            link(340 + agg, 360 + agg % 4 * 4 + c, "400Gbps");
        }
    }
    lines.join("\n") + "\n\n"
}

#[test]
fn hpcc_fat_tree_file_equals_the_generated_bench320() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice_topo_fat320.txt");
    std::fs::write(&path, hpcc_fat320_text()).unwrap();
    let from_file = load(path.to_str().unwrap());
    let spec: TopologySpec = toml::from_str(
        "kind = \"fat_tree\"\nk = 8\npods = 5\nhosts_per_tor = 16\nhost_rate = \"100Gbps\"\n\
         tor_agg_rate = \"400Gbps\"\nagg_core_rate = \"400Gbps\"",
    )
    .unwrap();
    let generated = build(&spec, Path::new(".")).unwrap();
    assert_eq!(from_file.links, generated.links);
    assert_eq!(from_file.ports, generated.ports);
    assert_eq!((&from_file.hosts, &from_file.rack_of), (&generated.hosts, &generated.rack_of));
    let tiers = |t: &Topology| t.nodes.iter().map(|n| n.tier).collect::<Vec<_>>();
    assert_eq!(tiers(&from_file), tiers(&generated));
}
