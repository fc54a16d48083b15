//! The receiver-driven study's scenarios (`scenarios/receiver/`) load and resolve under every algorithm
//! the study runs, and their resolved form loads back to the same scenario.

use std::path::{Path, PathBuf};

use sluice_scenario::{load, load_str, resolve, resolved_toml};

fn receiver_scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/receiver");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("scenarios/receiver exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

const SCHEMES: [&str; 9] =
    ["expresspass", "ep_aeolus", "homa", "ndp", "tocc", "tocc_nounsched", "dcqcn", "timely", "hpcc"];

#[test]
fn study_scenarios_resolve_under_every_scheme_and_round_trip() {
    let files = receiver_scenarios();
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        for scheme in SCHEMES {
            let overrides = vec![format!("cc.algorithm={scheme}")];
            let scenario = load(&path, &overrides, None).unwrap_or_else(|e| panic!("{scheme}: {e}"));
            let resolved = resolve(&scenario).unwrap_or_else(|e| panic!("{scheme}: {e}"));
            assert!(!resolved.flows.is_empty(), "{}: no flows", path.display());
            let text = resolved_toml(&resolved);
            let again = load_str(&text, "resolved.toml", Path::new("/nonexistent"), &[])
                .unwrap_or_else(|e| panic!("{scheme}: {e}\n{text}"));
            assert_eq!(again, resolved.scenario, "{} with {scheme}", path.display());
        }
    }
}

#[test]
fn the_incast_mix_adds_a_fifth_of_the_hosts_capacity() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/receiver/study160_incast.toml");
    let resolved = resolve(&load(&path, &[], None).unwrap()).unwrap();
    // Incast flows are the 35 KB ones: 10 receivers x 16 senders x 14 rounds.
    let incast: Vec<_> = resolved.flows.iter().filter(|f| f.size == 35_000 && f.group > 0).collect();
    assert_eq!(incast.len(), 10 * 16 * 14);
    let bytes: u64 = incast.iter().map(|f| f.size).sum();
    // Over the 14 rounds' 196 us: 0.2 x 160 hosts x 100 Gbps.
    let rate = bytes as f64 * 8.0 / 196e-6;
    assert!((rate / (0.2 * 160.0 * 100e9) - 1.0).abs() < 0.01, "{rate:e}");
}
