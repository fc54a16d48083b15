//! Every bundled scenario takes every algorithm of `sluice list` with `--set cc.algorithm=X` alone:
//! `sluice check` passes for the whole matrix, and a sample of it runs to completion. A scenario that
//! mixes algorithms (`cc.workloads`) takes every sender-driven one; a token algorithm, which runs its own
//! transport, must be refused there with the reason. An algorithm that reads its receiving host's
//! signals needs hosts that sample them: a scenario without the host interconnect model refuses it at
//! `host.bus.enabled` and takes it with `--set host.bus.enabled=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every scenario file under scenarios/, sorted.
fn scenarios() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![root().join("scenarios")];
    while let Some(folder) = folders.pop() {
        for path in std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()) {
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `sluice list`'s congestion-control section, one per algorithm.
fn algorithm_lines() -> Vec<String> {
    let output = Command::new(SLUICE).arg("list").output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let section = text.split("\n\n").find(|s| s.starts_with("Congestion control")).expect("an algorithm section");
    section.lines().skip(1).map(str::to_string).collect()
}

/// The algorithms `sluice list` names: the first word of each line of its congestion-control section.
fn algorithms() -> Vec<String> {
    algorithm_lines().iter().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

/// The token algorithms, which `sluice list` marks "(token-based)".
fn token_algorithms() -> Vec<String> {
    let lines = algorithm_lines();
    lines
        .iter()
        .filter(|l| l.contains("(token-based)"))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// Whether the scenario mixes algorithms (a `workloads = [...]` line, as `[cc]` writes it).
fn mixes(scenario: &Path) -> bool {
    std::fs::read_to_string(scenario).unwrap().lines().any(|l| l.starts_with("workloads = ["))
}

/// Whether `algorithm` reads its receiving host's signals, which hosts sample only with `host.bus`.
fn reads_host_signals(algorithm: &str) -> bool {
    sluice_cc::lookup(algorithm).is_some_and(|a| a.needs.host_signal)
}

/// `sluice check SCENARIO --set cc.algorithm=ALGORITHM` with `extra` arguments.
fn check(scenario: &Path, algorithm: &str, extra: &[&str]) -> std::process::Output {
    Command::new(SLUICE)
        .arg("check")
        .arg(scenario)
        .args(["--set", &format!("cc.algorithm={algorithm}")])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn every_scenario_checks_with_every_algorithm() {
    let algorithms = algorithms();
    assert!(algorithms.len() >= 21, "{algorithms:?}");
    let scenarios = scenarios();
    assert!(scenarios.len() >= 16, "{scenarios:?}");
    let tokens = token_algorithms();
    assert!(tokens.len() >= 6, "{tokens:?}");
    let mut failures = Vec::new();
    for scenario in &scenarios {
        for algorithm in &algorithms {
            let mut output = check(scenario, algorithm, &[]);
            if reads_host_signals(algorithm) && !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let needs = format!("host.bus.enabled: algorithm `{algorithm}` needs the receiving host's");
                if output.status.code() != Some(2) || !stderr.contains(&needs) {
                    failures
                        .push(format!("{} with {algorithm}: not refused at host.bus: {stderr}", scenario.display()));
                }
                output = check(scenario, algorithm, &["--set", "host.bus.enabled=true"]);
            }
            let resolved = String::from_utf8_lossy(&output.stdout);
            if mixes(scenario) && tokens.contains(algorithm) {
                let stderr = String::from_utf8_lossy(&output.stderr);
                if output.status.code() != Some(2) || !stderr.contains("cannot share a network") {
                    failures.push(format!("{} with {algorithm}: not refused as a mix: {}", scenario.display(), stderr));
                }
                continue;
            }
            if !output.status.success() || !resolved.contains(&format!("algorithm = \"{algorithm}\"")) {
                let stderr = String::from_utf8_lossy(&output.stderr);
                failures.push(format!("{} with {algorithm}: {}", scenario.display(), stderr.trim()));
            }
        }
    }
    assert!(failures.is_empty(), "{} combinations fail:\n{}", failures.len(), failures.join("\n"));
}

/// The bundled scenarios that run in well under a second.
const SMALL: [&str; 9] = [
    "endpoint/incast.toml",
    "endpoint/unicast.toml",
    "host/fabric-incast.toml",
    "host/host-congestion.toml",
    "incast8.toml",
    "offload/aggregation400.toml",
    "quickstart.toml",
    "receiver/converge8.toml",
    "receiver/fairness8.toml",
];

#[test]
fn a_sample_of_the_matrix_runs() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("algorithm-matrix");
    let _ = std::fs::remove_dir_all(&out);
    let mut failures = Vec::new();
    // Each algorithm on two small scenarios, rotating so that every scenario meets several algorithms.
    for (i, algorithm) in algorithms().iter().enumerate() {
        for scenario in [SMALL[i % SMALL.len()], SMALL[(i + 4) % SMALL.len()]] {
            let dir = out.join(format!("{algorithm}-{}", scenario.replace('/', "-")));
            let host_bus: &[&str] =
                if reads_host_signals(algorithm) { &["--set", "host.bus.enabled=true"] } else { &[] };
            let output = Command::new(SLUICE)
                .arg("run")
                .arg(root().join("scenarios").join(scenario))
                .args(["--set", &format!("cc.algorithm={algorithm}"), "--quiet", "--out"])
                .arg(&dir)
                .args(host_bus)
                .output()
                .unwrap();
            let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap_or_default();
            let summary: serde_json::Value = serde_json::from_str(&summary).unwrap_or_default();
            if !output.status.success() || summary["totals"]["goodput_bytes"].as_u64().unwrap_or(0) == 0 {
                let stderr = String::from_utf8_lossy(&output.stderr);
                failures.push(format!("{scenario} with {algorithm}: {:?} {}", output.status, stderr.trim()));
            }
        }
    }
    assert!(failures.is_empty(), "{} runs fail or deliver nothing:\n{}", failures.len(), failures.join("\n"));
}
