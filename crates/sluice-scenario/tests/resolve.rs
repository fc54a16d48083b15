//! Resolution fills the defaults that depend on the topology and the algorithm, and the resolved TOML
//! loads back to the same scenario.

use std::path::Path;

use sluice_scenario::{load_str, resolve, resolved_toml, HugePages, Resolved};
use sluice_sim::config::EcnThresholds;

const G: u64 = 1_000_000_000;

fn resolved(text: &str, sets: &[&str]) -> Resolved {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = load_str(text, "t.toml", Path::new("."), &sets).unwrap_or_else(|e| panic!("{e}"));
    resolve(&scenario).unwrap_or_else(|e| panic!("{e}"))
}

/// A 320-host fat-tree with 100 Gbps hosts and 400 Gbps fabric, no ECN thresholds given.
const MIXED: &str = "\
[topology]
kind = \"fat_tree\"
k = 8
pods = 5
tors_per_pod = 4
aggs_per_pod = 4
hosts_per_tor = 16
cores = 16
host_rate = \"100Gbps\"
tor_agg_rate = \"400Gbps\"

[[workload]]
kind = \"permutation\"
size = \"100KB\"
";

#[test]
fn red_thresholds_are_filled_for_every_link_rate() {
    let r = resolved(MIXED, &[]);
    let thresholds = &r.scenario.switch.ecn.thresholds;
    assert_eq!(
        thresholds,
        &vec![(100 * G, EcnThresholds::red_for_rate(100 * G)), (400 * G, EcnThresholds::red_for_rate(400 * G))]
    );
    assert_eq!((thresholds[0].1.kmin, thresholds[0].1.kmax), (400_000, 1_600_000));
    assert_eq!((thresholds[1].1.kmin, thresholds[1].1.kmax), (1_600_000, 6_400_000));
    assert_eq!(r.line_rate, 100 * G);
    assert_eq!(r.flows.len(), 320);
}

#[test]
fn dctcp_gets_its_single_threshold() {
    let r = resolved(MIXED, &["cc.algorithm=dctcp"]);
    let thresholds = &r.scenario.switch.ecn.thresholds;
    assert_eq!(thresholds[0], (100 * G, EcnThresholds::dctcp_for_rate(100 * G)));
    assert_eq!((thresholds[0].1.kmin, thresholds[0].1.kmax, thresholds[0].1.pmax), (300_000, 300_000, 1.0));
    assert_eq!(r.algorithm.name, "dctcp");
}

#[test]
fn given_thresholds_are_kept() {
    let text = format!(
        "{MIXED}[[switch.ecn.thresholds]]\nrate = \"100Gbps\"\nkmin = \"5KB\"\nkmax = \"200KB\"\npmax = 0.01\n"
    );
    let r = resolved(&text, &[]);
    let only = EcnThresholds { kmin: 5_000, kmax: 200_000, pmax: 0.01 };
    assert_eq!(r.scenario.switch.ecn.thresholds, vec![(100 * G, only)]);
}

#[test]
fn algorithm_parameters_are_resolved_at_the_host_rate() {
    let r = resolved(MIXED, &["cc.params.g=0.0625"]);
    assert!(r.scenario.cc.params.is_empty(), "the parameters in force go into the algorithm's own table");
    let params = r.scenario.cc.tables["dcqcn"].as_table().unwrap();
    assert_eq!(params.get("g").and_then(|v| v.as_float()), Some(0.0625));
    assert_eq!(params.get("rate_ai").and_then(|v| v.as_str()), Some("20Mbps"), "5 Mb/s x 100G/25G: {params:?}");
    assert_eq!(params.get("variant").and_then(|v| v.as_str()), Some("hpcc"));
}

/// Parameters of DCQCN and DCTCP side by side: either runs by choosing it alone.
const TWO_TABLES: &str = "[cc.dcqcn]\nvariant = \"paper\"\ng = 0.0625\n[cc.dctcp]\ng = 0.125\n";

fn float(r: &Resolved, algorithm: &str, key: &str) -> Option<f64> {
    r.scenario.cc.tables[algorithm].as_table().unwrap().get(key).and_then(|v| v.as_float())
}

#[test]
fn each_algorithm_takes_its_own_table() {
    let text = format!("{MIXED}{TWO_TABLES}");
    let r = resolved(&text, &[]);
    assert_eq!(r.algorithm.name, "dcqcn");
    assert_eq!(float(&r, "dcqcn", "g"), Some(0.0625));
    let r = resolved(&text, &["cc.algorithm=dctcp"]);
    assert_eq!(r.algorithm.name, "dctcp");
    assert_eq!(float(&r, "dctcp", "g"), Some(0.125));
    assert_eq!(r.scenario.cc.tables["dcqcn"].as_table().unwrap().len(), 2, "unused tables stay as written");
    let r = resolved(&text, &["cc.algorithm=dctcp", "cc.params.g=0.5"]);
    assert_eq!(float(&r, "dctcp", "g"), Some(0.5), "cc.params is laid over the chosen table");
    let r = resolved(&text, &["cc.algorithm=reno"]);
    assert_eq!(r.algorithm.name, "reno");
}

#[test]
fn the_resolved_scenario_runs_again_with_another_algorithm() {
    let r = resolved(&format!("{MIXED}{TWO_TABLES}"), &["cc.params.g=0.25"]);
    let text = resolved_toml(&r);
    assert!(!text.contains("[cc.params]"), "{text}");
    let again = resolved(&text, &["cc.algorithm=dctcp"]);
    assert_eq!(float(&again, "dctcp", "g"), Some(0.125));
    let again = resolved(&text, &[]);
    assert_eq!(float(&again, "dcqcn", "g"), Some(0.25));
}

/// RED thresholds written for DCQCN alone.
const DCQCN_RED: &str = "[[switch.ecn.thresholds]]\nalgorithm = \"dcqcn\"\nrate = \"100Gbps\"\nkmin = \"5KB\"\n\
                         kmax = \"200KB\"\npmax = 0.01\n";

#[test]
fn ecn_thresholds_written_for_one_algorithm_serve_it_alone() {
    let text = format!("{MIXED}{DCQCN_RED}");
    let only = EcnThresholds { kmin: 5_000, kmax: 200_000, pmax: 0.01 };
    assert_eq!(resolved(&text, &[]).scenario.switch.ecn.thresholds, vec![(100 * G, only)]);
    let dctcp = resolved(&text, &["cc.algorithm=dctcp"]);
    let thresholds = &dctcp.scenario.switch.ecn.thresholds;
    assert_eq!(thresholds[0], (100 * G, EcnThresholds::dctcp_for_rate(100 * G)), "DCTCP gets its own step K");
    assert_eq!(dctcp.scenario.ecn_unused, vec![(Some("dcqcn".to_string()), 100 * G, only)]);
    let text = resolved_toml(&dctcp);
    let back = resolved(&text, &[]);
    assert_eq!(back.scenario.switch.ecn.thresholds, thresholds.clone(), "DCTCP's filled thresholds are its own");
    let dcqcn = resolved(&text, &["cc.algorithm=dcqcn"]);
    assert_eq!(dcqcn.scenario.switch.ecn.thresholds, vec![(100 * G, only)], "DCQCN's entry survives the round trip");
}

#[test]
fn a_resolved_scenario_rerun_with_another_algorithm_takes_that_algorithms_thresholds() {
    let text = resolved_toml(&resolved(MIXED, &[]));
    let dctcp = resolved(&text, &["cc.algorithm=dctcp"]);
    assert_eq!(dctcp.scenario.switch.ecn.thresholds[0], (100 * G, EcnThresholds::dctcp_for_rate(100 * G)));
}

#[test]
fn ports_resolve_to_node_ids() {
    let r = resolved(MIXED, &["output.throughput_ports=[\"tor0:p16\", \"core15:4\", \"h3:p0\"]"]);
    let id = |name: &str| r.topology.nodes.iter().position(|n| n.name == name).unwrap() as u32;
    assert_eq!(r.throughput_ports, vec![(id("tor0"), 16), (id("core15"), 4), (id("h3"), 0)]);
}

/// Many settings away from their defaults, some of them by `--set`.
const BUSY: &str = "\
name = \"busy\"
seed = 42
[simulation]
duration = \"3ms\"
time_limit = \"50ms\"
[topology]
kind = \"leaf_spine\"
hosts_per_tor = 4
tors = 3
spines = 2
host_rate = \"25Gbps\"
uplink_rate = \"100Gbps\"
delay = \"500ns\"
[link]
mtu = 4000
[switch]
buffer = \"16MiB\"
queues = 4
scheduler = { kind = \"dwrr\", weights = [1, 2, 3, 4] }
load_balance = \"packet_spray\"
[switch.pfc]
enabled = false
headroom = \"100KB\"
[host]
ack_every_packets = 2
cnp_interval = \"50us\"
[[workload]]
kind = \"poisson\"
cdf = \"fb_hadoop\"
load = 0.4
duration = \"500us\"
destinations = \"inter_rack\"
[[workload]]
kind = \"incast\"
receiver = 3
senders = 5
size = \"200KB\"
start = \"100us\"
period = \"200us\"
repeats = 3
[[workload]]
kind = \"long_lived\"
flows = [{ src = 0, dst = 11, stop = \"1ms\" }]
[cc]
algorithm = \"dcqcn\"
[cc.params]
variant = \"paper\"
byte_counter = \"1MB\"
[output]
dir = \"out/busy\"
buckets = [\"1KB\", \"64KiB\", \"1MB\", \"10MB\"]
trace_flows = [0, 3]
trace_interval = \"0ps\"
throughput_flows = [1]
throughput_ports = [\"tor0:4\"]
sample_interval = \"2us\"
";

#[test]
fn the_resolved_text_loads_back_to_the_same_scenario() {
    let r = resolved(BUSY, &["workload.1.size=300KB", "cc.params.g=0.01"]);
    let text = resolved_toml(&r);
    let again = load_str(&text, "elsewhere/resolved.toml", Path::new("/somewhere/else"), &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again, r.scenario, "{text}");
    let r2 = resolve(&again).unwrap();
    assert_eq!(r2.scenario, r.scenario);
    assert_eq!(r2.flows, r.flows);
    let body = |t: &str| t.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&resolved_toml(&r2)), body(&text));
    for expected in
        ["[[switch.ecn.thresholds]]", "rate = \"100Gbps\"", "byte_counter = \"1MB\"", "g = 0.01", "base_dir = \"/"]
    {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
}

#[test]
fn the_resolved_text_is_commented_and_names_its_source() {
    let r = resolved(BUSY, &[]);
    let text = resolved_toml(&r);
    assert!(text.starts_with("# Scenario \"busy\" (from t.toml) with every default filled in"), "{text}");
}

#[test]
fn resolving_twice_is_stable() {
    let r = resolved(BUSY, &[]);
    let again = resolve(&r.scenario).unwrap();
    assert_eq!(again.scenario, r.scenario);
}

#[test]
fn byte_counts_take_units_or_bare_numbers() {
    let with_units = resolved(MIXED, &["host.ack_every_bytes=\"64KB\""]);
    assert_eq!(with_units.scenario.host.ack_every_bytes, 64_000);
    let bare = resolved(MIXED, &["host.ack_every_bytes=64000"]);
    assert_eq!(bare.scenario.host, with_units.scenario.host);
}

/// `simulation.huge_pages` defaults to `"auto"`, which the resolved text leaves out (so that resolved
/// files of runs that never named it stay as they were); a value given is kept and loads back.
#[test]
fn huge_pages_default_to_auto_and_a_given_value_is_kept() {
    let r = resolved(BUSY, &[]);
    assert_eq!(r.scenario.simulation.huge_pages, HugePages::Auto);
    assert!(!resolved_toml(&r).contains("huge_pages"), "{}", resolved_toml(&r));
    for (value, expected) in [("on", HugePages::On), ("off", HugePages::Off), ("auto", HugePages::Auto)] {
        let r = resolved(BUSY, &[&format!("simulation.huge_pages={value}")]);
        assert_eq!(r.scenario.simulation.huge_pages, expected);
        let again = load_str(&resolved_toml(&r), "r.toml", Path::new("."), &[]).unwrap();
        assert_eq!(again.simulation.huge_pages, expected, "{value} loads back");
    }
}
