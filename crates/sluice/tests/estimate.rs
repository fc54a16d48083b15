//! The run-size estimate (`sluice check`, crates/sluice/src/estimate.rs) against what runs take: the
//! packets it expects alive at once, which size the largest part of a big run's memory, stay within a
//! small factor of the peak the simulator's packet arena reaches, on bundled scenarios of every shape
//! (a Poisson load, an incast with PFC, a closed loop that converges on one receiver, a trace of flows).

use std::path::Path;

/// The estimate may be this many times the measured peak: it sizes memory to refuse runs that cannot
/// fit, so it errs high (`quickstart.toml`, with few flows in a short span, is 2.7 times).
const OVER: f64 = 4.0;
/// The estimate may be this fraction of the measured peak at least (`closed_loop/ncast4.toml`, twenty
/// flows converging at line rate, is 0.75).
const UNDER: f64 = 0.5;

fn resolve(name: &str) -> sluice_scenario::Resolved {
    resolve_with(name, &[])
}

fn resolve_with(name: &str, sets: &[&str]) -> sluice_scenario::Resolved {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = sluice_scenario::load(&path, &sets, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    sluice_scenario::resolve(&scenario).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Estimated and measured packets alive at the peak of `name`.
fn alive(name: &str) -> (u64, usize) {
    let resolved = resolve(name);
    let estimate = sluice::estimate(&resolved);
    let outcome = sluice::run_scenario(&resolved, None, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    (estimate.alive_packets, outcome.output.peak_packets)
}

#[test]
fn packets_alive_at_the_peak_are_estimated_within_a_small_factor() {
    let names = ["quickstart.toml", "incast8.toml", "incast128.toml", "closed_loop/ncast4.toml", "ws128.toml"];
    let mut report = Vec::new();
    for name in names {
        let (estimated, measured) = alive(name);
        let ratio = estimated as f64 / measured.max(1) as f64;
        report.push(format!("{name}: estimated {estimated}, measured {measured} ({ratio:.2}x)"));
        assert!((UNDER..=OVER).contains(&ratio), "{}", report.join("\n"));
    }
}

/// The estimated state of flows in progress, in flows.
fn in_progress(resolved: &sluice_scenario::Resolved) -> u64 {
    let memory = sluice::estimate(resolved).memory;
    let bytes = memory.iter().find(|(part, _)| *part == "flows in progress").expect("a part for flows in progress").1;
    bytes / sluice::estimate::ACTIVE_FLOW_BYTES
}

/// Every flow counts in progress where flows pile up: on the anatomy study's 4:1 oversubscribed fabric
/// at 0.8 load (its ToRs' uplinks are offered about three times what they carry, and its peak RSS grows
/// by 2.6 KB per flow with DCQCN), and in any receiver-driven run, whose flows keep their state to the
/// end. A non-blocking fat-tree at 30% load has a small fraction of its flows in progress at once.
#[test]
fn flows_in_progress_count_every_flow_where_flows_pile_up() {
    let study = resolve_with("receiver/study160.toml", &["cc.algorithm=dcqcn"]);
    assert_eq!(in_progress(&study), study.flows.len() as u64, "the oversubscribed fabric");
    let tokens = resolve_with("quickstart.toml", &["cc.algorithm=homa"]);
    assert_eq!(in_progress(&tokens), tokens.flows.len() as u64, "a receiver-driven run");
    let ws128 = resolve("ws128.toml");
    let (active, flows) = (in_progress(&ws128), ws128.flows.len() as u64);
    assert!(active > 0 && active < flows / 2, "ws128: {active} of {flows} flows in progress");
}
