//! The closed-form routes of generated layouts agree exactly with the breadth-first route table, and
//! graphs that only resemble a layout get the table.

use std::path::{Path, PathBuf};

use sluice_topo::{build, Topology, TopologySpec};

const G100: u64 = 100_000_000_000;

fn generate(spec: &TopologySpec) -> Topology {
    build(spec, Path::new(".")).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

/// Asserts that `topo.routes()` is in closed form (or not) and equals the searched table for every node
/// and destination host.
fn assert_routes_match_search(topo: &Topology, closed: bool) {
    let routes = topo.routes();
    assert_eq!(routes.is_closed_form(), closed, "{}", topo.describe());
    let table = topo.routes_by_search();
    for node in 0..topo.nodes.len() as u32 {
        for dst in 0..topo.num_hosts() {
            assert_eq!(
                routes.next_hops(node, dst),
                table.next_hops(node, dst),
                "{}: node {node} ({}) toward host {dst}",
                topo.describe(),
                topo.nodes[node as usize].name
            );
        }
    }
}

fn fat_tree(k: u32, overrides: [Option<u32>; 5], oversubscription: u32) -> TopologySpec {
    let [pods, tors_per_pod, aggs_per_pod, hosts_per_tor, cores] = overrides;
    TopologySpec::FatTree {
        k,
        pods,
        tors_per_pod,
        aggs_per_pod,
        hosts_per_tor,
        cores,
        oversubscription,
        host_rate: G100,
        tor_agg_rate: None,
        agg_core_rate: None,
        delay: sluice_topo::DEFAULT_DELAY,
    }
}

#[test]
fn canonical_fat_trees() {
    for k in [2, 4, 6, 8] {
        assert_routes_match_search(&generate(&TopologySpec::fat_tree(k, G100)), true);
    }
}

#[test]
fn fat_trees_with_overrides() {
    let mut checked = 0;
    for pods in [None, Some(1), Some(3)] {
        for tors in [None, Some(1), Some(3)] {
            for aggs in [Some(1), Some(2), Some(3)] {
                for hosts in [None, Some(1), Some(5)] {
                    for cores_per_agg in [1, 2] {
                        let cores = aggs.map(|a| a * cores_per_agg);
                        let spec = fat_tree(4, [pods, tors, aggs, hosts, cores], 1);
                        assert_routes_match_search(&generate(&spec), true);
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 3 * 3 * 3 * 2);
}

#[test]
fn oversubscribed_and_bundled_fat_trees() {
    assert_routes_match_search(&generate(&fat_tree(4, [None; 5], 3)), true);
    assert_routes_match_search(&generate(&fat_tree(6, [None, None, None, None, Some(3)], 2)), true);
    // fat320: 5 pods of 4 ToRs x 16 hosts, 4 aggregation switches per pod, 16 cores.
    assert_routes_match_search(&generate(&fat_tree(8, [Some(5), None, None, Some(16), None], 1)), true);
}

#[test]
fn leaf_spines() {
    for hosts_per_tor in [1, 2, 5] {
        for tors in [1, 2, 7] {
            for spines in [1, 3] {
                let spec = TopologySpec::leaf_spine(hosts_per_tor, tors, spines, G100);
                assert_routes_match_search(&generate(&spec), true);
            }
        }
    }
    assert_routes_match_search(&generate(&TopologySpec::leaf_spine(16, 10, 4, G100)), true);
}

#[test]
fn stars_and_dumbbells() {
    for hosts in [1, 2, 9] {
        assert_routes_match_search(&generate(&TopologySpec::star(hosts, G100)), true);
    }
    for (left, right) in [(1, 1), (3, 2), (2, 5), (8, 8)] {
        assert_routes_match_search(&generate(&TopologySpec::dumbbell(left, right, G100, G100)), true);
    }
}

#[test]
fn closed_forms_take_memory_in_ports_not_hosts_squared() {
    let big = generate(&fat_tree(8, [Some(5000), None, None, None, None], 1));
    assert_eq!(big.num_hosts(), 5000 * 16);
    let routes = big.routes();
    assert!(routes.is_closed_form());
    // 20 bytes per node, and one port number per port of the widest switch (a core, one port per pod).
    assert_eq!(big.nodes.len(), 80_000 + 20_000 + 20_000 + 16);
    assert_eq!(routes.heap_bytes(), big.nodes.len() * 20 + 5000 * 2);
    assert_eq!(routes.next_hops(big.num_hosts(), 79_999), &[4, 5, 6, 7], "ToR 0 to the last pod: uplinks");
    let last_core = big.nodes.len() as u32 - 1;
    assert_eq!(routes.next_hops(last_core, 79_999), &[4999], "a core's port p leads to pod p");
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

#[test]
fn files_get_the_closed_form_only_when_numbered_like_a_generator() {
    let load = |path: &str| build(&TopologySpec::File { path: path.into() }, &data_dir()).unwrap();
    // Both are leaf-spines of 2 ToRs (2 and 1 spines), numbered as the generator numbers one.
    assert_routes_match_search(&load("data/diamond.toml"), true);
    assert_routes_match_search(&load("data/hpcc_topology.txt"), true);
    let ring = load("data/triangle.toml");
    assert_routes_match_search(&ring, false);
    assert_eq!(ring.routes().next_hops(3, 2), &[2], "s0 reaches h2 over its direct link to s2");
}

#[test]
fn a_rewired_fat_tree_falls_back_to_the_table() {
    let mut topo = generate(&TopologySpec::fat_tree(4, G100));
    let tor0 = topo.num_hosts() as usize;
    // Swapping two uplinks' order keeps the counts and degrees but breaks the numbering.
    topo.ports[tor0].swap(2, 3);
    assert_routes_match_search(&topo, false);
    assert_eq!(topo.routes().next_hops(tor0 as u32, 15), &[2, 3]);
}

#[test]
fn routes_search_reports_progress_per_destination() {
    let mut topo = generate(&TopologySpec::fat_tree(4, G100));
    let mut seen = Vec::new();
    topo.routes_with_progress(&mut |p| seen.push((p.done, p.total)));
    assert!(seen.is_empty(), "a closed form needs no search");
    let tor0 = topo.num_hosts() as usize;
    topo.ports[tor0].swap(2, 3);
    topo.routes_with_progress(&mut |p| seen.push((p.done, p.total)));
    assert_eq!(seen, (1..=16).map(|done| (done, 16)).collect::<Vec<_>>());
}

#[test]
fn the_widest_star_routes_every_port() {
    let star = generate(&TopologySpec::star(65_536, G100));
    let routes = star.routes();
    assert!(routes.is_closed_form());
    assert_eq!(routes.next_hops(65_536, 65_535), &[65_535], "the switch's last port");
    assert_eq!(routes.next_hops(65_536, 0), &[0]);
    assert_eq!(routes.next_hops(7, 65_535), &[0], "a host sends on its NIC");
    assert_eq!(routes.next_hops(7, 7), &[] as &[u16]);
}

#[test]
fn a_table_toward_some_hosts_holds_only_their_columns_and_agrees_with_the_full_one() {
    let mut topo = generate(&TopologySpec::fat_tree(4, G100));
    let tor0 = topo.num_hosts() as usize;
    topo.ports[tor0].swap(2, 3);
    let full = topo.routes();
    let mut seen = Vec::new();
    let some = topo.routes_to(&[3, 15], &mut |p| seen.push((p.done, p.total)));
    assert!(!some.is_closed_form());
    assert_eq!(seen, [(1, 2), (2, 2)], "one search per destination asked for");
    for node in 0..topo.nodes.len() as u32 {
        for dst in [3, 15] {
            assert_eq!(some.next_hops(node, dst), full.next_hops(node, dst), "node {node} toward host {dst}");
        }
    }
    assert_eq!(some.next_hops(tor0 as u32, 7), &[] as &[u16], "no route was computed toward host 7");
    assert!(some.heap_bytes() * 3 < full.heap_bytes(), "{} bytes against {}", some.heap_bytes(), full.heap_bytes());
    // A closed form routes to every host whatever was asked.
    let closed = generate(&TopologySpec::fat_tree(4, G100)).routes_to(&[3], &mut |_| {});
    assert!(closed.is_closed_form());
    assert_eq!(closed.next_hops(16, 7), generate(&TopologySpec::fat_tree(4, G100)).routes().next_hops(16, 7));
}
