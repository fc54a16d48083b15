//! Names overlaid runs by what differs between their `scenario.resolved.toml` files.

use std::collections::BTreeMap;

/// Scenario keys that say where a run was made, not what was simulated.
const IGNORED: [&str; 2] = ["base_dir", "output.dir"];

/// Scenario tables that resolving fills in from other keys (the ECN thresholds follow the algorithm):
/// their differences name runs only when nothing else differs.
const DERIVED: [&str; 1] = ["switch.ecn.thresholds."];

/// At most this many differing keys name a run; more are summarised as `+N more`.
const MAX_KEYS: usize = 3;

/// Flattens a TOML table to dotted keys (`cc.params.k`, `workload.0.load`) and their values as TOML text.
pub fn flatten(table: &toml::Table) -> BTreeMap<String, String> {
    let mut keys = BTreeMap::new();
    for (key, value) in table {
        flatten_into(key, value, &mut keys);
    }
    keys
}

fn flatten_into(prefix: &str, value: &toml::Value, keys: &mut BTreeMap<String, String>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                flatten_into(&format!("{prefix}.{key}"), value, keys);
            }
        }
        toml::Value::Array(items) if items.iter().any(toml::Value::is_table) => {
            for (index, value) in items.iter().enumerate() {
                flatten_into(&format!("{prefix}.{index}"), value, keys);
            }
        }
        toml::Value::String(text) => {
            keys.insert(prefix.to_string(), text.clone());
        }
        other => {
            keys.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// One label per run: `key=value` for the keys that every run has and whose values differ (derived ones
/// only when nothing else differs), shallowest keys first, at most three, then `+N more`.
/// Runs without a scenario, or identical ones, are named `run 1`, `run 2`, ...
pub fn difference_labels(scenarios: &[Option<BTreeMap<String, String>>]) -> Vec<String> {
    let fallback = || (1..=scenarios.len()).map(|i| format!("run {i}")).collect();
    let Some(all) = scenarios.iter().map(Option::as_ref).collect::<Option<Vec<_>>>() else {
        return fallback();
    };
    let Some(first) = all.first() else {
        return Vec::new();
    };
    let mut differing: Vec<&String> = first
        .keys()
        .filter(|key| !IGNORED.contains(&key.as_str()))
        .filter(|key| all.iter().all(|s| s.contains_key(*key)))
        .filter(|key| all.iter().any(|s| s[*key] != first[*key]))
        .collect();
    if differing.is_empty() {
        return fallback();
    }
    let derived = |key: &&String| DERIVED.iter().any(|prefix| key.starts_with(prefix));
    if differing.iter().any(|key| !derived(key)) {
        differing.retain(|key| !derived(key));
    }
    differing.sort_by_key(|key| (key.matches('.').count(), key.as_str()));
    all.iter().map(|s| label_of(s, &differing)).collect()
}

fn label_of(scenario: &BTreeMap<String, String>, differing: &[&String]) -> String {
    let mut parts: Vec<String> =
        differing.iter().take(MAX_KEYS).map(|key| format!("{key}={}", scenario[*key])).collect();
    if differing.len() > MAX_KEYS {
        parts.push(format!("+{} more", differing.len() - MAX_KEYS));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Option<BTreeMap<String, String>> {
        Some(flatten(&text.parse().unwrap()))
    }

    #[test]
    fn labels_name_the_shallowest_differences() {
        let a = scenario("base_dir = \"/a\"\n[cc]\nalgorithm = \"dcqcn\"\n[cc.dcqcn]\ng = 0.1\n[[switch.t]]\nk = 1\n");
        let b = scenario("base_dir = \"/b\"\n[cc]\nalgorithm = \"dctcp\"\n[cc.dctcp]\ng = 0.2\n[[switch.t]]\nk = 2\n");
        assert_eq!(
            difference_labels(&[a, b]),
            ["cc.algorithm=dcqcn, switch.t.0.k=1", "cc.algorithm=dctcp, switch.t.0.k=2"]
        );
    }

    #[test]
    fn many_differences_are_summarised_and_equal_runs_numbered() {
        let a = scenario("a = 1\nb = 1\nc = 1\nd = 1\n");
        let b = scenario("a = 2\nb = 2\nc = 2\nd = 2\n");
        assert_eq!(difference_labels(&[a.clone(), b]), ["a=1, b=1, c=1, +1 more", "a=2, b=2, c=2, +1 more"]);
        assert_eq!(difference_labels(&[a.clone(), a.clone()]), ["run 1", "run 2"]);
        assert_eq!(difference_labels(&[a, None]), ["run 1", "run 2"]);
    }
}
