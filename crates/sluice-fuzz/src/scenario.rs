//! Scenario TOML with `--set key=value` overrides, loaded, checked and resolved (topology built, flows
//! generated, algorithm built).
//!
//! Input layout: the scenario text, then each override after a NUL byte
//! (`TEXT\0topology.k=4\0cc.algorithm=hpcc`).

use std::path::Path;

use sluice_scenario::{load_str, resolve, resolved_toml, Location, Resolved, Scenario, ScenarioError};

use crate::data_dir;

mod bounds;

pub use bounds::{MAX_FLOWS, MAX_NODES};

/// The name fuzzed scenarios are loaded under (errors name it).
const ORIGIN: &str = "fuzz.toml";

/// Most overrides taken from one input.
const MAX_OVERRIDES: usize = 16;

/// Loads and resolves the input. Errors must be located; a resolved scenario must write a
/// `scenario.resolved.toml` that loads back to the same scenario and resolves to the same flows, as the
/// README promises.
pub fn run(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let mut parts = input.split('\0');
    let text = parts.next().unwrap_or_default();
    let overrides: Vec<String> = parts.take(MAX_OVERRIDES).map(String::from).collect();
    let dir = data_dir();
    let scenario = match load_str(text, ORIGIN, &dir, &overrides) {
        Ok(scenario) => scenario,
        Err(e) => return check_located(&e, text, &overrides),
    };
    if !bounds::within(&scenario, &dir) {
        return;
    }
    match resolve(&scenario) {
        Ok(resolved) => check_round_trip(&resolved, &dir),
        Err(e) => check_located(&e, text, &overrides),
    }
}

/// Errors name where the fault was written, as the README promises (`file:line: key: message`, or the
/// `--set` argument): the scenario, one of its lines, or one of the overrides given.
fn check_located(e: &ScenarioError, text: &str, overrides: &[String]) {
    let shown = e.to_string();
    assert!(!e.message.trim().is_empty(), "an error without a message: {shown}");
    match &e.location {
        Location::Line { file, line } => {
            assert_eq!(file, Path::new(ORIGIN), "{shown}");
            let lines = text.lines().count().max(1);
            assert!((1..=lines + 1).contains(line), "line {line} of a {lines}-line scenario: {shown}");
        }
        Location::File(file) => assert_eq!(file, Path::new(ORIGIN), "{shown}"),
        Location::Argument(arg) => {
            let named = arg.strip_prefix("--set ").is_some_and(|set| overrides.iter().any(|o| o == set));
            assert!(named, "the error names an argument that was not given: {shown}");
        }
    }
}

fn check_round_trip(resolved: &Resolved, dir: &Path) {
    let text = resolved_toml(resolved);
    let again: Scenario = load_str(&text, "fuzz.resolved.toml", dir, &[])
        .unwrap_or_else(|e| panic!("the resolved scenario does not load again: {e}\n{text}"));
    assert!(again == resolved.scenario, "the resolved scenario loads back different:\n{text}");
    let flows =
        resolve(&again).unwrap_or_else(|e| panic!("the resolved scenario does not resolve again: {e}\n{text}")).flows;
    assert!(flows == resolved.flows, "the resolved scenario generates other flows:\n{text}");
}
