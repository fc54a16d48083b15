//! `sluice list`: what a scenario may name.

use std::fmt::Write;

use sluice_cc::{Algorithm, Control, Needs};

/// A text listing of everything a scenario can name: congestion-control algorithms (with what each
/// controls and needs from the network), workload generator kinds, builtin flow-size distributions, and
/// topology kinds.
pub fn list_text() -> String {
    let mut out = String::new();
    out.push_str("Congestion control ([cc] algorithm = \"...\"):\n");
    let algorithms = sluice_cc::registry();
    let width = algorithms.iter().map(|a| a.name.len()).max().unwrap_or(0);
    for a in algorithms {
        let _ = writeln!(out, "  {:width$}  {}", a.name, describe(a));
    }
    out.push_str("\nWorkload generators ([[workload]] kind = \"...\"):\n");
    for kind in crate::workload_kinds() {
        let _ = writeln!(out, "  {kind}");
    }
    out.push_str("\nBuiltin flow-size distributions (poisson workloads: cdf = \"...\", or a file path):\n");
    let builtins = sluice_workload::builtin_names();
    let width = builtins.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, summary) in builtins {
        let _ = writeln!(out, "  {name:width$}  {summary}");
    }
    out.push_str("\nTopology kinds ([topology] kind = \"...\"):\n");
    let kinds = sluice_topo::kinds();
    let width = kinds.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (kind, summary) in kinds {
        let _ = writeln!(out, "  {kind:width$}  {summary}");
    }
    out
}

/// `summary [controls: rate; needs: ECN, CNP]`.
fn describe(a: &Algorithm) -> String {
    let control = match a.control {
        Control::Window => "window",
        Control::Rate => "rate",
        Control::WindowAndRate => "window and rate",
        Control::None => "nothing",
    };
    format!("{} [controls: {control}; needs: {}]", a.summary, needs(&a.needs))
}

fn needs(n: &Needs) -> String {
    let list: Vec<&str> = [(n.ecn, "ECN"), (n.cnp, "CNP"), (n.int, "INT")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    if list.is_empty() {
        "nothing".to_string()
    } else {
        list.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_names_every_algorithm_and_kind() {
        let text = list_text();
        for a in sluice_cc::registry() {
            assert!(text.contains(a.name), "{text}");
        }
        for (kind, _) in sluice_topo::kinds() {
            assert!(text.contains(kind), "{text}");
        }
        assert!(text.contains("flow_list"), "{text}");
    }
}
