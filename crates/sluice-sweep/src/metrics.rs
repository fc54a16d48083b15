//! The figures of merit of one run, flattened from its `summary.json` into named table cells.
//!
//! Overall figures are plain names (`slowdown_p99`, `goodput_gbps`); per-bucket ones append the
//! bucket's label after a colon (`slowdown_p99:<10KB`). Statistics over nothing (the slowdown of an empty
//! bucket, the fairness of no long-lived flows) are empty cells, never zero.

use sluice_results::{BucketStats, Summary};

/// One cell of the sweep table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Nothing to report (a failed run, a statistic over no flows).
    Null,
    /// An integer.
    Int(i64),
    /// A real number.
    Float(f64),
    /// A yes/no figure.
    Bool(bool),
    /// Text.
    Text(String),
}

impl Cell {
    /// The cell as a number, for picking; text and empty cells have none.
    pub fn number(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            Cell::Bool(b) => Some(f64::from(u8::from(*b))),
            Cell::Null | Cell::Text(_) => None,
        }
    }
}

fn int(value: u64) -> Cell {
    Cell::Int(i64::try_from(value).unwrap_or(i64::MAX))
}

fn float(value: Option<f64>) -> Cell {
    value.map_or(Cell::Null, Cell::Float)
}

/// The statistics reported for the overall row and for each bucket, by suffix-less name.
const BUCKET_FIGURES: [&str; 9] = [
    "count",
    "unfinished",
    "slowdown_avg",
    "slowdown_p50",
    "slowdown_p95",
    "slowdown_p99",
    "slowdown_p999",
    "fct_ns_avg",
    "fct_ns_p99",
];

/// The run-wide figures, by name, in table order.
pub const RUN_FIGURES: [&str; 25] = [
    "not_started",
    "goodput_gbps",
    "goodput_while_active_gbps",
    "offered_gbps",
    "goodput_bytes",
    "offered_bytes",
    "bytes_sent",
    "retransmitted_bytes",
    "utilisation_max",
    "utilisation_mean",
    "max_buffer_bytes",
    "max_queue_bytes",
    "drops",
    "data_drops",
    "control_drops",
    "ecn_marks",
    "pfc_pauses",
    "pfc_pause_time_ns",
    "long_lived_gbps",
    "jain",
    "flows",
    "sim_time_ns",
    "events",
    "hit_time_limit",
    "active_time_ns",
];

/// Every metric name a run of a scenario with these bucket labels has, in table order.
pub fn names(bucket_labels: &[String]) -> Vec<String> {
    let mut names: Vec<String> = BUCKET_FIGURES.iter().map(|s| s.to_string()).collect();
    names.extend(RUN_FIGURES.iter().map(|s| s.to_string()));
    for label in bucket_labels {
        names.extend(BUCKET_FIGURES.iter().map(|figure| format!("{figure}:{label}")));
    }
    names
}

/// The metrics of one run, named as [`names`] lists them.
pub fn metrics(summary: &Summary) -> Vec<(String, Cell)> {
    let mut cells: Vec<(String, Cell)> = bucket_cells(&summary.overall, "");
    let t = &summary.totals;
    let run: [Cell; 25] = [
        int(summary.overall.not_started),
        Cell::Float(t.goodput_gbps),
        Cell::Float(t.goodput_while_active_gbps),
        Cell::Float(t.offered_gbps),
        int(t.goodput_bytes),
        int(t.offered_bytes),
        int(t.bytes_sent),
        int(t.retransmitted_bytes),
        float(t.link_utilisation.as_ref().map(|u| u.max)),
        float(t.link_utilisation.as_ref().map(|u| u.mean)),
        t.max_switch_buffer.as_ref().map_or(Cell::Null, |p| int(p.bytes)),
        t.max_port_queue.as_ref().map_or(Cell::Null, |p| int(p.bytes)),
        int(t.drops),
        int(t.data_drops),
        int(t.control_drops),
        int(t.ecn_marks),
        int(t.pfc_pauses),
        Cell::Float(t.pfc_pause_time_ns),
        Cell::Float(summary.long_lived.total_gbps),
        float(summary.long_lived.jain_fairness),
        int(t.flows),
        Cell::Float(summary.run.sim_time_ns),
        int(summary.run.events),
        Cell::Bool(summary.run.hit_time_limit),
        Cell::Float(t.active_time_ns),
    ];
    cells.extend(RUN_FIGURES.iter().map(|s| s.to_string()).zip(run));
    for bucket in &summary.buckets {
        cells.extend(bucket_cells(bucket, &format!(":{}", bucket.label)));
    }
    cells.extend(extra_cells(summary));
    cells
}

/// The numbers of summary.json's further sections (`host`, `plane`, `receiver_driven`, `mix`, ...),
/// in the file's order: what only some runs report (the endpoint model's goodput, the token transport's
/// drop ratio, each algorithm's share of a mixed run). A number is named by its path, `section.key`;
/// a list of records adds the record's index (`mix.groups.1.goodput_share`, `faults.0.dropped`), and
/// lists inside those records (a group's buckets) are left to summary.json.
fn extra_cells(summary: &Summary) -> Vec<(String, Cell)> {
    let mut cells = Vec::new();
    for (section, value) in &summary.extra {
        flatten(section, value, false, &mut cells);
    }
    cells
}

/// Appends the numbers under `value`, named by their path from `name`; `in_list` once a list was
/// entered.
fn flatten(name: &str, value: &serde_json::Value, in_list: bool, cells: &mut Vec<(String, Cell)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                flatten(&format!("{name}.{key}"), value, in_list, cells);
            }
        }
        serde_json::Value::Array(items) if !in_list => {
            for (i, item) in items.iter().enumerate() {
                flatten(&format!("{name}.{i}"), item, true, cells);
            }
        }
        other => cells.extend(number(other).map(|cell| (name.to_string(), cell))),
    }
}

/// The sections of summary.json that only some runs have; their columns are known once a run reports
/// them, so picking rules may name any `section.key` of these.
pub const EXTRA_SECTIONS: [&str; 6] = ["host", "plane", "receiver_driven", "mix", "faults", "packet_trace"];

fn number(value: &serde_json::Value) -> Option<Cell> {
    match value {
        serde_json::Value::Number(n) => Some(n.as_i64().map_or_else(|| float(n.as_f64()), Cell::Int)),
        serde_json::Value::Bool(b) => Some(Cell::Bool(*b)),
        _ => None,
    }
}

fn bucket_cells(b: &BucketStats, suffix: &str) -> Vec<(String, Cell)> {
    let s = b.slowdown.as_ref();
    let f = b.fct_ns.as_ref();
    let values = [
        int(b.count),
        int(b.unfinished),
        float(s.map(|s| s.avg)),
        float(s.map(|s| s.p50)),
        float(s.map(|s| s.p95)),
        float(s.map(|s| s.p99)),
        float(s.map(|s| s.p999)),
        float(f.map(|f| f.avg)),
        float(f.map(|f| f.p99)),
    ];
    BUCKET_FIGURES.iter().map(|name| format!("{name}{suffix}")).zip(values).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_results::{Buckets, RunInfo};

    #[test]
    fn every_listed_name_has_a_cell_and_empty_statistics_are_null() {
        let buckets = Buckets::default();
        let summary = Summary::compute(&[], &[], &[], &RunInfo::default(), &buckets);
        let cells = metrics(&summary);
        let cell_names: Vec<&str> = cells.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(cell_names, names(&buckets.labels()));
        let get = |name: &str| &cells.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(get("slowdown_p99"), &Cell::Null, "no flows: no slowdown, not zero");
        assert_eq!(get("slowdown_p99:<10KB"), &Cell::Null);
        assert_eq!(get("count:<10KB"), &Cell::Int(0));
        assert_eq!(get("jain"), &Cell::Null);
        assert_eq!(get("hit_time_limit"), &Cell::Bool(false));
    }

    #[test]
    fn further_sections_become_dotted_columns() {
        let mut summary = Summary::compute(&[], &[], &[], &RunInfo::default(), &Buckets::default());
        let host = serde_json::json!({ "endpoint_goodput_gbps": 48.5, "endpoint_drops": 3, "mode": "native" });
        summary.extra.insert("host".into(), host);
        let cells = metrics(&summary);
        let get = |name: &str| cells.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
        assert_eq!(get("host.endpoint_goodput_gbps"), Some(Cell::Float(48.5)));
        assert_eq!(get("host.endpoint_drops"), Some(Cell::Int(3)));
        assert_eq!(get("host.mode"), None, "text is not a metric");
    }

    #[test]
    fn lists_of_records_are_named_by_index_one_level_deep() {
        let mut summary = Summary::compute(&[], &[], &[], &RunInfo::default(), &Buckets::default());
        let mix = serde_json::json!({
            "groups": [
                { "algorithm": "dctcp", "goodput_share": 0.25, "buckets": [{ "slowdown_avg": 2.0 }] },
                { "algorithm": "cubic", "goodput_share": 0.75 },
            ],
            "jain_mean_flow_gbps": 0.8,
        });
        summary.extra.insert("mix".into(), mix);
        summary.extra.insert("faults".into(), serde_json::json!([{ "dropped": 4, "marked": 0 }]));
        let cells = metrics(&summary);
        let get = |name: &str| cells.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
        assert_eq!(get("mix.groups.0.goodput_share"), Some(Cell::Float(0.25)));
        assert_eq!(get("mix.groups.1.goodput_share"), Some(Cell::Float(0.75)));
        assert_eq!(get("mix.jain_mean_flow_gbps"), Some(Cell::Float(0.8)));
        assert_eq!(get("faults.0.dropped"), Some(Cell::Int(4)));
        assert!(cells.iter().all(|(n, _)| !n.contains("buckets")), "lists inside records stay in summary.json");
    }
}
