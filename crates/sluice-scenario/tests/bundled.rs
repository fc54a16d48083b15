//! Every scenario shipped in `scenarios/` loads, resolves, and writes a resolved form that loads back
//! to the same scenario.

use std::path::{Path, PathBuf};

use sluice_scenario::{load, load_str, resolve, resolved_toml};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn bundled() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_documented_scenarios_are_shipped() {
    let names: Vec<String> = bundled().iter().map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["quickstart", "ws128", "fat320", "leafspine160", "incast8"] {
        assert!(names.iter().any(|n| n == expected), "scenarios/{expected}.toml is missing: {names:?}");
    }
}

#[test]
fn every_bundled_scenario_resolves_and_round_trips() {
    for path in bundled() {
        let scenario = load(&path, &[], None).unwrap_or_else(|e| panic!("{e}"));
        let resolved = resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
        assert!(!resolved.flows.is_empty(), "{}: no flows", path.display());
        assert!(!resolved.scenario.switch.ecn.thresholds.is_empty(), "{}", path.display());
        let text = resolved_toml(&resolved);
        let again =
            load_str(&text, "resolved.toml", Path::new("/nonexistent"), &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again, resolved.scenario, "{}:\n{text}", path.display());
        let twice = resolve(&again).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved_toml(&twice).lines().skip(3).collect::<Vec<_>>(), text.lines().skip(3).collect::<Vec<_>>());
        assert_eq!(twice.flows, resolved.flows);
    }
}

#[test]
fn bundled_sizes_match_their_descriptions() {
    let hosts = |name: &str| {
        let scenario = load(&scenarios_dir().join(format!("{name}.toml")), &[], None).unwrap();
        let resolved = resolve(&scenario).unwrap();
        (resolved.topology.num_hosts(), resolved.flows.len())
    };
    assert_eq!(hosts("ws128"), (128, 543));
    assert_eq!(hosts("fat320"), (320, 3510));
    assert_eq!(hosts("incast8"), (9, 8));
    assert_eq!(hosts("quickstart").0, 16);
    assert_eq!(hosts("leafspine160").0, 160);
}
