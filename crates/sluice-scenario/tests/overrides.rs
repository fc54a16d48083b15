//! `--set key=value` overrides change the scenario exactly as editing the file would.

use std::path::{Path, PathBuf};

use sluice_core::PS_PER_MS;
use sluice_scenario::{load, load_str, override_seed, Scenario};
use sluice_topo::TopologySpec;
use sluice_workload::WorkloadSpec;

const TEXT: &str = "\
name = \"base\"
[topology]
kind = \"fat_tree\"
k = 8
host_rate = \"100Gbps\"

[[workload]]
kind = \"poisson\"
cdf = \"websearch\"
load = 0.3
duration = \"1ms\"

[[workload]]
kind = \"incast\"
receiver = 0
size = \"64KB\"
";

fn with_sets(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str(TEXT, "base.toml", Path::new("."), &sets).unwrap_or_else(|e| panic!("{e}"))
}

fn poisson_load(s: &Scenario) -> f64 {
    match &s.workloads[0] {
        WorkloadSpec::Poisson { load, .. } => *load,
        other => panic!("not poisson: {other:?}"),
    }
}

#[test]
fn without_overrides_the_file_is_read_as_written() {
    let s = with_sets(&[]);
    assert_eq!(s.topology, TopologySpec::fat_tree(8, 100_000_000_000));
    assert_eq!(poisson_load(&s), 0.3);
    assert_eq!(s.output.dir, PathBuf::from("results/base"));
    assert!(s.switch.pfc.enabled);
    assert_eq!(s.cc.algorithm, "dcqcn");
    assert!(s.cc.params.is_empty());
}

#[test]
fn the_documented_examples_apply() {
    let s = with_sets(&[
        "topology.k=4",
        "cc.params.g=0.01",
        "workload.0.load=0.5",
        "switch.pfc.enabled=false",
        "topology.host_rate=25Gbps",
    ]);
    assert_eq!(s.topology, TopologySpec::fat_tree(4, 25_000_000_000));
    assert_eq!(s.cc.params.get("g").and_then(|v| v.as_float()), Some(0.01));
    assert_eq!(poisson_load(&s), 0.5);
    assert!(!s.switch.pfc.enabled);
}

#[test]
fn missing_tables_are_created_and_later_overrides_win() {
    let s = with_sets(&[
        "simulation.duration=5ms",
        "output.trace_flows=[0, 2]",
        "switch.ecn.mark_at=enqueue",
        "seed=9",
        "seed=10",
    ]);
    assert_eq!(s.simulation.duration, Some(5 * PS_PER_MS));
    assert_eq!(s.output.trace_flows, vec![0, 2]);
    assert_eq!(s.switch.ecn.mark_at, sluice_sim::config::MarkAt::Enqueue);
    assert_eq!(s.seed, 10);
}

#[test]
fn quoted_values_stay_strings_and_names_move_the_output_dir() {
    let s = with_sets(&["name=\"42\"", "cc.algorithm=dctcp"]);
    assert_eq!(s.name, "42");
    assert_eq!(s.output.dir, PathBuf::from("results/42"));
    assert_eq!(s.cc.algorithm, "dctcp");
}

#[test]
fn overrides_equal_the_edited_file() {
    let edited = TEXT.replace("k = 8", "k = 4").replace("load = 0.3", "load = 0.5");
    let from_file = load_str(&edited, "base.toml", Path::new("."), &[]).unwrap();
    assert_eq!(with_sets(&["topology.k=4", "workload.0.load=0.5"]), from_file);
}

#[test]
fn the_seed_override_of_text_scenarios_is_checked_like_the_command_line() {
    let s = load_str(TEXT, "text.toml", Path::new("."), &[]).unwrap();
    assert_eq!(override_seed(s.clone(), 5).unwrap().seed, 5);
    let err = override_seed(s, u64::MAX).unwrap_err();
    assert!(
        err.to_string().starts_with("--seed 18446744073709551615: seed 18446744073709551615 is too large"),
        "{err}"
    );
}

#[test]
fn load_applies_overrides_and_the_seed_override() {
    let dir = std::env::temp_dir().join(format!("sluice-scenario-{}-overrides", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.toml");
    std::fs::write(&path, TEXT.replace("name = \"base\"\n", "")).unwrap();
    let s = load(&path, &["workload.1.size=1MB".to_string()], Some(77)).unwrap();
    assert_eq!(s.name, "run", "the name defaults to the file stem");
    assert_eq!(s.seed, 77);
    assert!(matches!(s.workloads[1], WorkloadSpec::Incast { size: 1_000_000, .. }));
    assert_eq!(s.source, path);
    assert_eq!(s.base_dir, dir);
    std::fs::remove_dir_all(&dir).unwrap();
}
