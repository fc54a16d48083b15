//! Leaf-spine, star and dumbbell shapes, and the specification's TOML form.

use std::path::Path;

use sluice_core::PS_PER_US;
use sluice_topo::{build, kinds, TopologySpec, DEFAULT_DELAY};

const G100: u64 = 100_000_000_000;

#[test]
fn leaf_spine_160_hosts() {
    let spec: TopologySpec = toml::from_str(
        r#"kind = "leaf_spine"
        hosts_per_tor = 16
        tors = 10
        spines = 4
        host_rate = "100Gbps""#,
    )
    .unwrap();
    assert_eq!(spec, TopologySpec::leaf_spine(16, 10, 4, G100));
    let topo = build(&spec, Path::new(".")).unwrap();
    assert_eq!((topo.num_hosts(), topo.num_switches()), (160, 14));
    // 160 host links + 10 ToRs x 4 spines.
    assert_eq!(topo.links.len(), 200);
    assert_eq!(topo.racks.len(), 10);
    assert_eq!(topo.rack_of[159], 9);
    // 16 x 100 Gbps down, 4 x 100 Gbps up: 4:1 oversubscribed.
    let tor = topo.racks[3] as usize;
    assert_eq!(topo.ports[tor].len(), 20);
    let spine = topo.nodes.iter().position(|n| n.name == "spine0").unwrap();
    assert_eq!((topo.nodes[spine].tier, topo.ports[spine].len()), (2, 10));
    assert_eq!(topo.describe(), "leaf-spine 10 ToRs x 16 hosts, 4 spines: 160 hosts, 14 switches, 200 links");
}

#[test]
fn star_for_incast() {
    let spec: TopologySpec =
        toml::from_str("kind = \"star\"\nhosts = 16\nrate = \"25Gbps\"\ndelay = \"500ns\"").unwrap();
    let topo = build(&spec, Path::new(".")).unwrap();
    assert_eq!((topo.num_hosts(), topo.num_switches(), topo.links.len()), (16, 1, 16));
    assert!(topo.links.iter().all(|l| l.rate == 25_000_000_000 && l.delay == 500_000));
    assert!(topo.rack_of.iter().all(|&r| r == 0));
    let routes = topo.routes();
    assert_eq!(routes.next_hops(16, 9), &[9], "host i is on switch port i");
    let profile = topo.path_profile(&routes, 1, 2);
    assert_eq!((profile.hops, profile.switches, profile.prop_delay), (2, 1, 1_000_000));
}

#[test]
fn dumbbell_layout() {
    let topo = build(&TopologySpec::dumbbell(4, 2, G100, 40_000_000_000), Path::new(".")).unwrap();
    assert_eq!((topo.num_hosts(), topo.num_switches(), topo.links.len()), (6, 2, 7));
    assert_eq!(topo.rack_of, vec![0, 0, 0, 0, 1, 1]);
    assert_eq!(topo.nodes[topo.racks[1] as usize].name, "sw1");
    let bottleneck = topo.links.last().unwrap();
    assert_eq!((bottleneck.rate, bottleneck.delay), (40_000_000_000, DEFAULT_DELAY));
}

#[test]
fn specs_round_trip_through_toml() {
    let specs = [
        TopologySpec::fat_tree(8, G100),
        TopologySpec::FatTree {
            k: 8,
            pods: Some(5),
            tors_per_pod: None,
            aggs_per_pod: None,
            hosts_per_tor: Some(16),
            cores: None,
            oversubscription: 1,
            host_rate: G100,
            tor_agg_rate: Some(4 * G100),
            agg_core_rate: Some(4 * G100),
            delay: 2 * PS_PER_US,
        },
        TopologySpec::leaf_spine(16, 10, 4, G100),
        TopologySpec::star(8, G100),
        TopologySpec::dumbbell(2, 3, G100, G100 / 10),
        TopologySpec::File { path: "topo.toml".into() },
    ];
    for spec in specs {
        let text = toml::to_string(&spec).unwrap();
        assert_eq!(toml::from_str::<TopologySpec>(&text).unwrap(), spec, "{text}");
    }
    let text = toml::to_string(&TopologySpec::fat_tree(4, G100)).unwrap();
    assert_eq!(text, "kind = \"fat_tree\"\nk = 4\nhost_rate = \"100Gbps\"\ndelay = \"1us\"\n");
}

#[test]
fn unknown_keys_and_kinds_are_rejected() {
    let typo = toml::from_str::<TopologySpec>("kind = \"star\"\nhosts = 4\nrate = \"100Gbps\"\nrates = 1");
    assert!(typo.unwrap_err().to_string().contains("rates"));
    let kind = toml::from_str::<TopologySpec>("kind = \"torus\"\nhosts = 4");
    assert!(kind.unwrap_err().to_string().contains("torus"));
    let unit = toml::from_str::<TopologySpec>("kind = \"star\"\nhosts = 4\nrate = \"100Gpbs\"");
    assert!(unit.unwrap_err().to_string().contains("100Gbps"), "the expected form is shown");
}

#[test]
fn kinds_list_every_variant() {
    let names: Vec<&str> = kinds().iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["fat_tree", "leaf_spine", "star", "dumbbell", "file"]);
    assert!(kinds().iter().all(|(_, text)| !text.is_empty() && !text.contains('\n')));
}
