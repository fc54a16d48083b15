//! Fabric configurations from scenarios: what is honoured, and the key named for what is not.

use std::path::Path;

use sluice_switch::{fabric_config, records, Fabric, ImpairAction, Pick};

const BASE: &str = r#"
[topology]
kind = "star"
hosts = 3
rate = "1Gbps"
delay = "50us"
[[workload]]
kind = "incast"
receiver = 2
senders = 2
size = "100KB"
[cc]
algorithm = "dctcp"
[switch]
buffer = "1MB"
[switch.pfc]
enabled = false
[output]
throughput_ports = ["sw0:p2"]
sample_interval = "100us"
"#;

fn config(sets: &[&str]) -> Result<sluice_switch::FabricConfig, String> {
    config_with("", sets)
}

/// The fabric of [`BASE`] with `extra` appended and `sets` applied.
fn config_with(extra: &str, sets: &[&str]) -> Result<sluice_switch::FabricConfig, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = format!("{BASE}{extra}");
    let scenario = sluice_scenario::load_str(&text, "bed.toml", Path::new("."), &sets).map_err(|e| e.to_string())?;
    let resolved = sluice_scenario::resolve(&scenario).map_err(|e| e.to_string())?;
    fabric_config(&resolved).map_err(|e| e.to_string())
}

#[test]
fn a_star_scenario_gives_its_buffer_thresholds_and_sampling() {
    let c = config(&[]).unwrap();
    assert_eq!(c.hosts.len(), 3);
    assert_eq!(c.switch.buffer, 1_000_000);
    assert!(c.switch.ecn.enabled);
    // DCTCP's step threshold at 1 Gbit/s: K = 30 KB x 1G/10G (HPCC artifact run.py).
    let t = c.switch.ecn.for_rate(1_000_000_000);
    assert_eq!((t.kmin, t.kmax, t.pmax), (3_000, 3_000, 1.0));
    assert_eq!(c.sampling.interval, 100_000_000);
    assert_eq!(c.sampling.ports.len(), 1);
}

#[test]
fn settings_the_fabric_cannot_honour_are_named() {
    let cases: [(&[&str], &str); 5] = [
        (&["switch.pfc.enabled=true"], "`switch.pfc.enabled`"),
        (&["topology.delay=1us"], "`topology.delay`"),
        (&["topology.rate=100Gbps"], "`topology.rate`"),
        (&["switch.bolt.enabled=true"], "`switch.bolt.enabled`"),
        (&["topology.hosts=100", "workload.0.senders=99"], "`topology`"),
    ];
    for (sets, key) in cases {
        let err = config(sets).expect_err(key);
        assert!(err.starts_with(key), "{sets:?}: {err}");
    }
}

#[test]
fn a_flows_faults_become_impairments_of_its_sluice_packets() {
    let faults = r#"
[[fault]]
kind = "drop"
flow = 1
packets = [40, 7]
[[fault]]
kind = "mark"
flow = 0
packets = [3]
port = "sw0:p2"
"#;
    let c = config_with(faults, &[]).unwrap();
    let rules: Vec<String> = c.impairments.iter().map(|i| format!("{i:?}")).collect();
    assert_eq!(c.impairments.len(), 2, "{rules:?}");
    let (drop, mark) = (&c.impairments[0], &c.impairments[1]);
    assert_eq!((drop.action, drop.sluice_flow), (ImpairAction::Drop, Some(1)));
    assert_eq!(drop.pick, Pick::Packets(vec![7, 40]), "positions sorted, as the simulator keeps them");
    assert_eq!((drop.flow.dst, drop.flow.protocol), ([10, 77, 0, 3], 17), "to host 2 over UDP");
    assert_eq!((mark.action, mark.sluice_flow), (ImpairAction::Mark, Some(0)));
    assert_ne!(drop.flow.src, mark.flow.src, "each flow from its own sender");
}

#[test]
fn faults_the_switch_cannot_apply_are_named() {
    let cases = [
        ("kind = \"drop\"\nport = \"sw0:p2\"\nfraction = 0.1", "`fault.0`"),
        ("kind = \"link_down\"\nport = \"sw0:p2\"\nfrom = \"1ms\"\nuntil = \"2ms\"", "`fault.0`"),
        ("kind = \"drop\"\nflow = 0\npackets = [1]\nport = \"sw0:p0\"", "`fault.0.port`"),
    ];
    for (fault, key) in cases {
        let err = config_with(&format!("[[fault]]\n{fault}\n"), &[]).expect_err(key);
        assert!(err.starts_with(key), "{fault}: {err}");
    }
}

#[test]
fn receiver_driven_design_points_the_switch_lacks_are_named() {
    let cases: [(&str, &str); 4] = [
        ("ndp", "`cc.ndp.trimming`"),
        ("homa", "`cc.homa.priorities`"),
        ("ep_aeolus", "`cc.ep_aeolus.aeolus`"),
        ("ndp --set cc.ndp.trimming=false", "`cc.ndp.spray`"),
    ];
    for (algorithm, key) in cases {
        let mut sets = vec![format!("cc.algorithm={}", algorithm.split(' ').next().unwrap())];
        sets.extend(algorithm.split(" --set ").skip(1).map(str::to_string));
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let err = config(&sets).expect_err(key);
        assert!(err.starts_with(key) && err.ends_with("set it to false"), "{algorithm}: {err}");
    }
    let ndp = config(&["cc.algorithm=ndp", "cc.ndp.trimming=false", "cc.ndp.spray=false"]).unwrap();
    assert_eq!(ndp.switch.token_limiter, None, "NDP's pulls need no switch limiter");
}

#[test]
fn token_limiters_follow_the_algorithms_transport() {
    let ep = config(&["cc.algorithm=expresspass"]).unwrap().switch.token_limiter.expect("ExpressPass's limiter");
    // A token is a sluice header in a UDP datagram (98 B frame) and releases one 1514 B frame; each takes
    // 24 B more on the wire.
    assert_eq!((ep.capacity, ep.token_wire, ep.data_wire, ep.ecn), (8, 122, 1538, None));
    let tocc = config(&["cc.algorithm=tocc"]).unwrap().switch.token_limiter.expect("ToCC's limiter");
    assert_eq!(tocc.ecn, Some((22_000, 85_000, 0.2)), "ToCC marks tokens (its appendix B thresholds)");
    assert_eq!(config(&[]).unwrap().switch.token_limiter, None, "no tokens, no limiter");
}

#[test]
fn results_have_the_simulator_columns() {
    let c = config(&[]).unwrap();
    let mut fabric = Fabric::new(c);
    let dir = std::env::temp_dir().join(format!("sluice-switch-results-{}", std::process::id()));
    fabric.advance(1_000_000, &mut |_, _| {});
    records::write_results(&mut fabric, &dir, 1_000_000_000).unwrap();
    let queues = std::fs::read_to_string(dir.join("queues.csv")).unwrap();
    assert!(queues.starts_with(sluice_results::csv::QUEUES_HEADER));
    assert!(queues.contains("\nport,sw0,2,h2,1000000000,0,0,"), "{queues}");
    assert!(queues.contains("\nswitch,sw0,"));
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let rows: Vec<&str> = throughput.lines().collect();
    assert_eq!(rows[0], sluice_results::csv::THROUGHPUT_HEADER);
    assert_eq!(rows.len(), 11, "ten samples of 100 us in 1 ms");
    assert!(rows[1].starts_with("sw0:p2,100000.000,0,"), "{}", rows[1]);
    let _ = std::fs::remove_dir_all(dir);
}

/// An algorithm with a switch signal gets its switch side at the fabric, built from its parameters; one
/// without gets none.
#[test]
fn the_algorithms_switch_signal_is_built_from_its_parameters() {
    assert!(config(&[]).unwrap().signal.is_none(), "DCTCP has no switch signal");
    let rocc = config(&["cc.algorithm=rocc"]).unwrap().signal.expect("RoCC's switch side");
    assert_eq!(rocc.name(), "rocc");
    // RoCC's port starts at the link rate in whole rate units: the parameters reached it.
    let start = |sets: &[&str]| config(sets).unwrap().signal.unwrap().port(1_000_000_000).value();
    assert_eq!(start(&["cc.algorithm=rocc"]), 1_000_000_000, "100 units of 10 Mbps");
    assert_eq!(start(&["cc.algorithm=rocc", "cc.params.rate_unit=300Mbps", "cc.params.min_rate=300Mbps"]), 900_000_000);
}
