//! Fat-tree shapes: the canonical k=8 and k=16 trees and the 320-host benchmark variant.

use std::path::Path;

use sluice_core::PS_PER_US;
use sluice_topo::{build, NodeKind, Topology, TopologySpec};

const G100: u64 = 100_000_000_000;
const G400: u64 = 400_000_000_000;

fn fat_tree(k: u32) -> Topology {
    build(&TopologySpec::fat_tree(k, G100), Path::new(".")).unwrap()
}

/// The 320-host benchmark topology (ws320 in the shared benchmark README).
fn bench320() -> Topology {
    let spec: TopologySpec = toml::from_str(
        r#"
        kind = "fat_tree"
        k = 8
        pods = 5
        hosts_per_tor = 16
        host_rate = "100Gbps"
        tor_agg_rate = "400Gbps"
        agg_core_rate = "400Gbps"
        "#,
    )
    .unwrap();
    build(&spec, Path::new(".")).unwrap()
}

fn count_tier(topo: &Topology, tier: u8) -> usize {
    topo.nodes.iter().filter(|n| n.tier == tier).count()
}

fn degrees_of_tier(topo: &Topology, tier: u8) -> Vec<usize> {
    let mut degrees: Vec<usize> =
        (0..topo.nodes.len()).filter(|&n| topo.nodes[n].tier == tier).map(|n| topo.ports[n].len()).collect();
    degrees.dedup();
    degrees
}

#[test]
fn k8_counts_match_the_paper() {
    let topo = fat_tree(8);
    assert_eq!(topo.num_hosts(), 128);
    assert_eq!(topo.num_switches(), 80);
    assert_eq!(count_tier(&topo, 1), 32, "ToRs");
    assert_eq!(count_tier(&topo, 2), 32, "aggregation switches");
    assert_eq!(count_tier(&topo, 3), 16, "cores");
    // 128 host links + 32 ToRs x 4 uplinks + 32 aggs x 4 core links.
    assert_eq!(topo.links.len(), 384);
    assert_eq!(topo.describe(), "fat-tree k=8: 128 hosts, 80 switches, 384 links");
    assert_eq!(degrees_of_tier(&topo, 0), vec![1]);
    assert_eq!(degrees_of_tier(&topo, 1), vec![8]);
    assert_eq!(degrees_of_tier(&topo, 2), vec![8]);
    assert_eq!(degrees_of_tier(&topo, 3), vec![8]);
}

#[test]
fn k8_host_numbering_matches_the_benchmark() {
    let topo = fat_tree(8);
    // Host h is node h, under ToR h / 4, which is node 128 + h / 4.
    assert_eq!(topo.hosts[5], 5);
    assert_eq!(topo.rack_of[5], 1);
    assert_eq!(topo.nic(5).peer, 129);
    assert_eq!(topo.nodes[129].name, "tor1");
    assert_eq!(topo.racks[1], 129);
    assert_eq!(topo.rack_of[33], 8);
    assert_eq!(topo.rack_of[127], 31);
    assert!(topo.hosts.iter().enumerate().all(|(i, &n)| i as u32 == n && topo.host_of[n as usize] == Some(n)));
    assert!(topo.hosts.iter().all(|&n| topo.nodes[n as usize].kind == NodeKind::Host));
    // ToR 1 port 1 leads to host 5, which sees it on its NIC port 0.
    let tor_port = &topo.ports[129][1];
    assert_eq!((tor_port.peer, tor_port.peer_port), (5, 0));
    assert_eq!(topo.nic(5).peer_port, 1);
}

#[test]
fn k8_wiring_follows_pods_and_core_groups() {
    let topo = fat_tree(8);
    let (tor0, agg0, core0) = (128u32, 160u32, 192u32);
    // ToR 5 (pod 1) uplinks go to aggs 4..8, in order, on ports 4..8.
    let uplinks: Vec<u32> = topo.ports[(tor0 + 5) as usize][4..].iter().map(|p| p.peer - agg0).collect();
    assert_eq!(uplinks, vec![4, 5, 6, 7]);
    // Agg j of pod 2 (agg 8 + j) reaches cores 4j..4j+3 on ports 4..8.
    let cores: Vec<u32> = topo.ports[(agg0 + 9) as usize][4..].iter().map(|p| p.peer - core0).collect();
    assert_eq!(cores, vec![4, 5, 6, 7]);
    // Core c's port p leads to pod p.
    let pods: Vec<u32> = topo.ports[(core0 + 6) as usize].iter().map(|p| (p.peer - agg0) / 4).collect();
    assert_eq!(pods, (0..8).collect::<Vec<_>>());
    for (index, link) in topo.links.iter().enumerate() {
        for (node, peer) in [(link.a, link.b), (link.b, link.a)] {
            let port = topo.ports[node as usize].iter().find(|p| p.link == index as u32).unwrap();
            assert_eq!(port.peer, peer);
            assert_eq!(topo.ports[peer as usize][port.peer_port as usize].peer, node);
        }
    }
}

#[test]
fn bench320_counts_degrees_and_rates() {
    let topo = bench320();
    assert_eq!(topo.num_hosts(), 320);
    assert_eq!(topo.num_switches(), 56);
    assert_eq!((count_tier(&topo, 1), count_tier(&topo, 2), count_tier(&topo, 3)), (20, 20, 16));
    // 320 host links + 20 ToRs x 4 uplinks + 20 aggs x 4 core links.
    assert_eq!(topo.links.len(), 480);
    assert_eq!(degrees_of_tier(&topo, 1), vec![20]);
    assert_eq!(degrees_of_tier(&topo, 2), vec![8]);
    assert_eq!(degrees_of_tier(&topo, 3), vec![5], "each core has one link to each of 5 pods");
    assert_eq!(topo.rack_of[100], 6, "host h under ToR h/16");
    let tor = topo.racks[0] as usize;
    assert!(topo.ports[tor][..16].iter().all(|p| p.rate == G100));
    assert!(topo.ports[tor][16..].iter().all(|p| p.rate == G400));
    let uplinks_of_rates = topo.links.iter().filter(|l| l.rate == G400).count();
    assert_eq!(uplinks_of_rates, 160);
    assert!(topo.links.iter().all(|l| l.delay == PS_PER_US));
    assert_eq!(
        topo.describe(),
        "fat-tree k=8 (5 pods x 4 ToRs x 16 hosts, 4 aggs/pod, 16 cores): 320 hosts, 56 switches, 480 links"
    );
}

#[test]
fn bench320_path_profiles() {
    let topo = bench320();
    let routes = topo.routes();
    let cross = topo.path_profile(&routes, 0, 319);
    assert_eq!(cross.hops, 6);
    assert_eq!(cross.switches, 5);
    assert_eq!(cross.prop_delay, 6 * PS_PER_US);
    assert_eq!(cross.link_rates, vec![G100, G400, G400, G400, G400, G100]);
    assert_eq!(cross.bottleneck, G100);
    assert_eq!(routes.next_hops(topo.racks[0], 319), &[16, 17, 18, 19]);
}

#[test]
fn oversubscription_multiplies_hosts_per_tor() {
    let mut spec = TopologySpec::fat_tree(4, G100);
    if let TopologySpec::FatTree { oversubscription, .. } = &mut spec {
        *oversubscription = 3;
    }
    let topo = build(&spec, Path::new(".")).unwrap();
    // k=4: 4 pods x 2 ToRs x (2 * 3) hosts.
    assert_eq!(topo.num_hosts(), 48);
    assert_eq!(topo.num_switches(), 8 + 8 + 4);
}

#[test]
fn smallest_fat_tree_k2() {
    let topo = fat_tree(2);
    // 2 pods of 1 ToR, 1 agg, 1 host; 1 core.
    assert_eq!((topo.num_hosts(), topo.num_switches(), topo.links.len()), (2, 5, 6));
    let routes = topo.routes();
    assert_eq!(topo.path_profile(&routes, 0, 1).hops, 6);
}

#[test]
fn building_is_deterministic() {
    assert_eq!(fat_tree(8), fat_tree(8));
    assert_eq!(bench320().routes(), bench320().routes());
}
