//! `sluice list`: what a scenario may name, and for each algorithm what it needs and where it runs.

use std::fmt::Write;

use sluice_cc::contract::{self, Capability, DATAPATHS};
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

/// `summary [controls: rate; needs: ECN, CNP; runs on: the simulator]`.
fn describe(a: &Algorithm) -> String {
    let control = match a.control {
        Control::Window => "window",
        Control::Rate => "rate",
        Control::WindowAndRate => "window and rate",
        Control::None => "nothing",
    };
    format!("{} [controls: {control}; needs: {}; runs on: {}]", a.summary, needs(&a.needs), datapaths(a))
}

/// What the algorithm needs beyond the control it applies (`sluice_cc::contract::requirements`).
fn needs(n: &Needs) -> String {
    let list: Vec<&str> = n.capabilities().iter().map(Capability::short).collect();
    if list.is_empty() {
        "nothing".to_string()
    } else {
        list.join(", ")
    }
}

/// The datapaths whose capabilities meet the algorithm's requirements.
fn datapaths(a: &Algorithm) -> String {
    let runs: Vec<&str> = DATAPATHS.iter().filter(|d| contract::check(a, d).is_ok()).map(|d| d.datapath).collect();
    runs.join(", ")
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

    fn line_of(text: &str, algorithm: &str) -> String {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(algorithm));
        line.unwrap_or_else(|| panic!("no line for {algorithm}:\n{text}")).to_string()
    }

    #[test]
    fn each_algorithm_shows_its_needs_and_the_datapaths_that_meet_them() {
        let text = list_text();
        let expected = [
            ("reno", "[controls: window; needs: nothing; runs on: the simulator, kernel TCP, the UDP datapath]"),
            ("dctcp", "[controls: window; needs: ECN; runs on: the simulator, kernel TCP, the UDP datapath]"),
            ("dcqcn", "[controls: rate; needs: ECN, CNP; runs on: the simulator, the UDP datapath]"),
            ("hpcc", "needs: INT; runs on: the simulator, the UDP datapath]"),
            ("bolt", "needs: Bolt switches; runs on: the simulator]"),
            ("ndp", "needs: token transport, receiver controller; runs on: the simulator, the UDP datapath]"),
            ("ec_aware", "needs: acknowledgment policy; runs on: the simulator]"),
            ("hostcc", "needs: ECN, host policy; runs on: the simulator]"),
            ("dctcp_host", "needs: ECN, receiving host's signals; runs on: the simulator]"),
            ("dctcp_burst", "needs: ECN, datapath programs; runs on: the simulator, kernel TCP, the UDP datapath]"),
            ("rocc", "[controls: rate; needs: switch signals; runs on: the simulator, the UDP datapath]"),
            ("none", "[controls: nothing; needs: nothing; runs on: the simulator, the UDP datapath]"),
        ];
        for (algorithm, shown) in expected {
            let line = line_of(&text, algorithm);
            assert!(line.ends_with(shown), "{algorithm}: {line}");
        }
    }
}
