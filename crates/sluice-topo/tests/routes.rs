//! ECMP route sets, path profiles and route-table memory.

use std::path::Path;

use sluice_core::PS_PER_US;
use sluice_topo::{build, Topology, TopologySpec};

const G100: u64 = 100_000_000_000;

fn fat_tree(k: u32) -> Topology {
    build(&TopologySpec::fat_tree(k, G100), Path::new(".")).unwrap()
}

#[test]
fn k8_ecmp_set_sizes() {
    let topo = fat_tree(8);
    let routes = topo.routes();
    let (tor0, agg0, core0) = (128u32, 160u32, 192u32);
    // Host 5: pod 0, ToR 1. Host 127: pod 7, ToR 31.
    assert_eq!(routes.next_hops(5, 127), &[0], "a host sends on its NIC");
    assert_eq!(routes.next_hops(5, 5), &[] as &[u16], "delivered");
    assert_eq!(routes.next_hops(tor0 + 1, 127), &[4, 5, 6, 7], "ToR toward a remote pod: 4 uplinks");
    assert_eq!(routes.next_hops(tor0 + 1, 2), &[4, 5, 6, 7], "ToR toward another ToR of its pod");
    assert_eq!(routes.next_hops(tor0 + 1, 5), &[1], "ToR toward its own host");
    assert_eq!(routes.next_hops(agg0 + 1, 127), &[4, 5, 6, 7], "agg toward a remote pod: 4 cores");
    assert_eq!(routes.next_hops(agg0 + 1, 5), &[1], "agg toward its pod: the host's ToR");
    assert_eq!(routes.next_hops(core0 + 3, 127), &[7], "core toward a pod: 1 port");
    assert_eq!(routes.next_hops(core0 + 3, 5), &[0]);
    // An agg of another pod reaches pod 0 through its cores, not back down.
    assert_eq!(routes.next_hops(agg0 + 4 * 7, 5), &[4, 5, 6, 7]);
}

#[test]
fn k8_path_profiles() {
    let topo = fat_tree(8);
    let routes = topo.routes();
    let cross_pod = topo.path_profile(&routes, 5, 127);
    assert_eq!(cross_pod.hops, 6);
    assert_eq!(cross_pod.switches, 5);
    assert_eq!(cross_pod.prop_delay, 6 * PS_PER_US);
    assert_eq!(cross_pod.bottleneck, G100);
    assert_eq!(cross_pod.link_rates, vec![G100; 6]);
    let same_tor = topo.path_profile(&routes, 4, 5);
    assert_eq!((same_tor.hops, same_tor.switches, same_tor.prop_delay), (2, 1, 2 * PS_PER_US));
    let same_pod = topo.path_profile(&routes, 0, 15);
    assert_eq!((same_pod.hops, same_pod.switches), (4, 3));
    let itself = topo.path_profile(&routes, 7, 7);
    assert_eq!((itself.hops, itself.prop_delay, itself.bottleneck), (0, 0, G100));
}

#[test]
fn every_pair_has_a_shortest_path() {
    let topo = fat_tree(4);
    let routes = topo.routes();
    for src in 0..topo.num_hosts() {
        for dst in 0..topo.num_hosts() {
            let hops = topo.path_profile(&routes, src, dst).hops;
            let expected = match (src / 2 == dst / 2, src / 4 == dst / 4) {
                _ if src == dst => 0,
                (true, _) => 2,
                (false, true) => 4,
                (false, false) => 6,
            };
            assert_eq!(hops, expected, "{src} -> {dst}");
        }
    }
}

#[test]
fn k16_route_tables_stay_small() {
    let topo = fat_tree(16);
    assert_eq!((topo.num_hosts(), topo.num_switches()), (1024, 320));
    let routes = topo.routes_by_search();
    assert!(routes.num_sets() < 200, "{} sets", routes.num_sets());
    // The empty set; single ports 0..8 (ToR and agg down-ports, cores toward pods 0..8); the uplink
    // group 8..16 (shared by ToRs and aggs); single ports 8..16 (cores toward pods 8..16).
    assert_eq!(routes.num_sets(), 1 + 8 + 1 + 8);
    // One u32 per switch and destination host dominates: 320 x 1024 x 4 bytes.
    assert!(routes.heap_bytes() < 1_400_000, "{} bytes", routes.heap_bytes());
    assert_eq!(routes.next_hops(1024, 1023).len(), 8);
    // The closed form stores 20 bytes per node and one port number per port of the widest switch (16).
    let closed = topo.routes();
    assert!(closed.is_closed_form());
    assert_eq!((closed.num_sets(), closed.heap_bytes()), (0, (1024 + 320) * 20 + 16 * 2));
}

#[test]
fn leaf_spine_and_dumbbell_routes() {
    let leaf_spine = build(&TopologySpec::leaf_spine(16, 10, 4, G100), Path::new(".")).unwrap();
    let routes = leaf_spine.routes();
    let tor0 = leaf_spine.racks[0];
    assert_eq!(routes.next_hops(tor0, 159), &[16, 17, 18, 19]);
    let profile = leaf_spine.path_profile(&routes, 0, 159);
    assert_eq!((profile.hops, profile.switches, profile.prop_delay), (4, 3, 4 * PS_PER_US));

    let dumbbell = build(&TopologySpec::dumbbell(3, 2, G100, 10_000_000_000), Path::new(".")).unwrap();
    let routes = dumbbell.routes();
    let profile = dumbbell.path_profile(&routes, 0, 4);
    assert_eq!(profile.link_rates, vec![G100, 10_000_000_000, G100]);
    assert_eq!(profile.bottleneck, 10_000_000_000);
    assert_eq!(routes.next_hops(dumbbell.racks[0], 3), &[3], "the bottleneck is the last port");
}
