//! `sluice list`: what a scenario may name.

use std::fmt::Write;

use sluice_cc::{Algorithm, Control, Needs};

/// A text listing of everything a scenario can name: congestion-control algorithms (with what each
/// controls and needs from the network), workload generator kinds, builtin flow-size distributions, and
/// topology kinds.
pub fn list_text() -> String {
    let algorithms: Vec<(&str, String)> = sluice_cc::registry().iter().map(|a| (a.name, describe(a))).collect();
    let workloads = crate::workload_kinds().iter().map(|(k, d)| (*k, d.to_string())).collect();
    let cdfs = sluice_workload::builtin_names().iter().map(|(n, d)| (*n, d.to_string())).collect();
    let topologies = sluice_topo::kinds().iter().map(|(k, d)| (*k, d.to_string())).collect();
    let sections = [
        ("Congestion control ([cc] algorithm = \"...\")", algorithms),
        ("Workload generators ([[workload]] kind = \"...\")", workloads),
        ("Builtin flow-size distributions (poisson workloads: cdf = \"...\", or a file path)", cdfs),
        ("Topology kinds ([topology] kind = \"...\")", topologies),
    ];
    let blocks: Vec<String> = sections.iter().map(|(title, rows)| section(title, rows)).collect();
    blocks.join("\n")
}

/// A titled, two-column block: names padded to one width, then their descriptions.
fn section(title: &str, rows: &[(&str, String)]) -> String {
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let mut out = format!("{title}:\n");
    for (name, description) in rows {
        let _ = writeln!(out, "  {name:width$}  {description}");
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
    let list: Vec<&str> = [(n.ecn, "ECN"), (n.cnp, "CNP"), (n.int, "INT"), (n.bolt, "Bolt switches")]
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
