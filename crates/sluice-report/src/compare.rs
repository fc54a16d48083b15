//! `sluice compare`: results directories side by side, whatever datapath wrote them. Every datapath
//! writes `fct.csv`, `queues.csv` and `throughput.csv` in the same columns (the simulator, `sluice bed
//! run --datapath udp`, `sluice udp send --out`), so every figure here is computed from those files
//! alone, the same way for each column: flows, completion-time slowdowns overall and per size bucket,
//! each sampled port's busy throughput and queue, the switches' marks and drops, and traced flows'
//! algorithm variables (time means, aligned by flow id and variable).

use std::path::Path;

use sluice_results::{mean, percentile, Buckets};

use crate::csv::Table;
use crate::error::ReportError;

/// The figures of one results directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The column's name.
    pub label: String,
    /// Which datapath wrote it.
    pub datapath: String,
    /// (metric, value) rows in print order; a missing value is `None`.
    pub rows: Vec<(String, Option<f64>)>,
}

/// Reads `dir` into its figures under `label`.
pub fn figures(dir: &Path, label: &str) -> Result<Figures, ReportError> {
    let mut rows = Vec::new();
    let fct = dir.join("fct.csv");
    if fct.is_file() {
        flow_rows(&Table::read(&fct)?, &mut rows)?;
    }
    let throughput = dir.join("throughput.csv");
    if throughput.is_file() {
        port_rows(&Table::read(&throughput)?, &mut rows)?;
    }
    let queues = dir.join("queues.csv");
    if queues.is_file() {
        switch_rows(&Table::read(&queues)?, &mut rows)?;
    }
    let trace = dir.join("trace.csv");
    if trace.is_file() {
        trace_rows(&Table::read(&trace)?, &mut rows)?;
    }
    if rows.is_empty() {
        return Err(ReportError::at(dir, "no fct.csv, throughput.csv or queues.csv: not a results directory"));
    }
    if let Ok(summary) = crate::run::read_json(&dir.join("summary.json")) {
        token_rows(&summary, &mut rows);
    }
    Ok(Figures { label: label.to_string(), datapath: datapath(dir), rows })
}

/// The datapath that wrote `dir`: `summary.json`'s `datapath`, else the simulator when the resolved
/// scenario is there, else the software switch's bed.
fn datapath(dir: &Path) -> String {
    let summary = crate::run::read_json(&dir.join("summary.json")).ok();
    if let Some(name) = summary.as_ref().and_then(|s| s.get("datapath")).and_then(|d| d.as_str()) {
        return name.to_string();
    }
    if dir.join("scenario.resolved.toml").is_file() {
        "simulator".into()
    } else {
        "bed".into()
    }
}

/// Flows: how many ended, goodput, long flows' rates and fairness, and sized flows' slowdowns.
fn flow_rows(t: &Table, rows: &mut Vec<(String, Option<f64>)>) -> Result<(), ReportError> {
    let (size, fct, slowdown) = (t.require("size_bytes")?, t.require("fct_ns")?, t.require("slowdown")?);
    let (start, finish, ideal) = (t.require("start_ns")?, t.require("finish_ns")?, t.require("ideal_fct_ns")?);
    let mut all = 0;
    let mut ended = 0;
    let mut bytes = 0.0;
    let (mut first, mut last) = (f64::MAX, 0.0f64);
    let mut long_rates = Vec::new();
    let mut done: Vec<(u64, f64, f64)> = Vec::new();
    for row in t.rows() {
        all += 1;
        let Some(f) = t.number(row, fct)? else { continue };
        let b = t.required_number(row, size)?;
        ended += 1;
        bytes += b;
        first = first.min(t.required_number(row, start)?);
        last = last.max(t.number(row, finish)?.unwrap_or(0.0));
        if t.number(row, ideal)?.is_none() && f > 0.0 {
            long_rates.push(b * 8.0 / f * 1e3);
        }
        if let Some(s) = t.number(row, slowdown)? {
            done.push((b as u64, f, s));
        }
    }
    let slowdowns = sorted(done.iter().map(|d| d.2));
    rows.push(("flows".into(), Some(all as f64)));
    rows.push(("flows finished".into(), Some(ended as f64)));
    rows.push(("goodput (Mbps)".into(), (last > first).then(|| bytes * 8.0 / (last - first) * 1e3)));
    if !long_rates.is_empty() {
        rows.push(("long flows, mean (Mbps)".into(), mean(&long_rates)));
        rows.push(("long flows, Jain".into(), Some(sluice_results::jain_fairness(&long_rates))));
    }
    rows.push(("FCT mean (ms)".into(), mean(&done.iter().map(|d| d.1 / 1e6).collect::<Vec<_>>())));
    rows.push(("slowdown mean".into(), mean(&slowdowns)));
    rows.push(("slowdown p50".into(), percentile(&slowdowns, 500)));
    rows.push(("slowdown p99".into(), percentile(&slowdowns, 990)));
    let buckets = Buckets::default();
    for b in 0..buckets.len() {
        let inside = sorted(done.iter().filter(|d| buckets.index(d.0) == b).map(|d| d.2));
        if !inside.is_empty() {
            rows.push((format!("slowdown p99, {}", buckets.label(b)), percentile(&inside, 990)));
        }
    }
    Ok(())
}

/// Per sampled port: mean throughput and queue over the samples in which it sent, and its largest queue.
fn port_rows(t: &Table, rows: &mut Vec<(String, Option<f64>)>) -> Result<(), ReportError> {
    let (label, gbps) = (t.require("label")?, t.require("gbps")?);
    let queue = t.require("queue_bytes").ok();
    let mut labels: Vec<&str> = t.rows().iter().map(|r| t.text(r, label)).collect();
    labels.dedup();
    labels.sort_unstable();
    labels.dedup();
    for name in labels {
        let mut busy = Vec::new();
        let mut queues = Vec::new();
        let mut peak: Option<f64> = None;
        for row in t.rows().iter().filter(|r| t.text(r, label) == name) {
            let q = match queue {
                Some(c) => t.number(row, c)?,
                None => None,
            };
            peak = match (peak, q) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if t.number(row, gbps)?.is_some_and(|g| g > 0.0) {
                busy.push(t.required_number(row, gbps)?);
                queues.extend(q);
            }
        }
        rows.push((format!("{name} busy Gbps"), mean(&busy)));
        rows.push((format!("{name} busy queue (KB)"), mean(&queues).map(|q| q / 1e3)));
        rows.push((format!("{name} max queue (KB)"), peak.map(|q| q / 1e3)));
    }
    Ok(())
}

/// ECN marks and drops summed over every port of `queues.csv`.
fn switch_rows(t: &Table, rows: &mut Vec<(String, Option<f64>)>) -> Result<(), ReportError> {
    let (kind, marks, drops) = (t.require("kind")?, t.require("ecn_marks")?, t.require("drops")?);
    let ports: Vec<_> = t.rows().iter().filter(|r| t.text(r, kind) == "port").collect();
    let sum = |column| -> Result<f64, ReportError> {
        ports.iter().map(|r| t.number(r, column).map(|v| v.unwrap_or(0.0))).sum()
    };
    rows.push(("ECN marks".into(), Some(sum(marks)?)));
    rows.push(("drops".into(), Some(sum(drops)?)));
    Ok(())
}

/// A token transport's figures from summary.json's `extra.receiver_driven` (the simulator's and the
/// bed's alike): tokens issued, marked and dropped by the switches' token limiters, and the receivers'
/// loss checks that fired.
fn token_rows(summary: &serde_json::Value, rows: &mut Vec<(String, Option<f64>)>) {
    let tokens = &summary["extra"]["receiver_driven"];
    if !tokens.is_object() {
        return;
    }
    let names = [
        ("tokens issued", "tokens_issued"),
        ("tokens marked", "tokens_marked"),
        ("tokens dropped", "tokens_dropped"),
        ("receiver loss checks fired", "rx_timeouts"),
    ];
    for (label, key) in names {
        rows.push((label.into(), tokens[key].as_f64()));
    }
}

/// A traced flow's id and a variable's name, as `trace.csv` writes them.
type TraceKey = (String, String);

/// Per traced flow and variable, the time-weighted mean of the variable over the flow's trace: the same
/// flow's algorithm state on each datapath, aligned by flow id and variable name.
fn trace_rows(t: &Table, rows: &mut Vec<(String, Option<f64>)>) -> Result<(), ReportError> {
    let (time, flow, variable, value) =
        (t.require("time_ns")?, t.require("flow")?, t.require("variable")?, t.require("value")?);
    let mut series: Vec<(TraceKey, Vec<(f64, f64)>)> = Vec::new();
    for row in t.rows() {
        let key = (t.text(row, flow).to_string(), t.text(row, variable).to_string());
        // An empty value is an unset variable (an ssthresh before the first loss): no point.
        let Some(v) = t.number(row, value)? else { continue };
        let point = (t.required_number(row, time)?, v);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, points)) => points.push(point),
            None => series.push((key, vec![point])),
        }
    }
    for ((flow, variable), points) in series {
        rows.push((format!("trace {flow} {variable} (time mean)"), time_mean(&points)));
    }
    Ok(())
}

/// The time-weighted mean of a step series (each value holds until the next point); the plain mean of
/// a single point.
fn time_mean(points: &[(f64, f64)]) -> Option<f64> {
    let (first, last) = (points.first()?.0, points.last()?.0);
    if last <= first {
        return mean(&points.iter().map(|p| p.1).collect::<Vec<_>>());
    }
    let weighted: f64 = points.windows(2).map(|w| w[0].1 * (w[1].0 - w[0].0)).sum();
    Some(weighted / (last - first))
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The figures of several directories as one text table: a row per metric any of them has a value for,
/// a column per directory, and for two columns the second's difference from the first in percent.
pub fn render(columns: &[Figures]) -> String {
    let mut metrics: Vec<&str> = Vec::new();
    for c in columns {
        for (name, _) in &c.rows {
            if !metrics.contains(&name.as_str()) {
                metrics.push(name);
            }
        }
    }
    let mut table: Vec<Vec<String>> =
        vec![std::iter::once("".to_string()).chain(columns.iter().map(|c| c.label.clone())).collect()];
    table.push(std::iter::once("datapath".to_string()).chain(columns.iter().map(|c| c.datapath.clone())).collect());
    let two = columns.len() == 2;
    if two {
        table[0].push("difference".into());
        table[1].push(String::new());
    }
    for m in metrics {
        let values: Vec<Option<f64>> =
            columns.iter().map(|c| c.rows.iter().find(|(n, _)| n == m).and_then(|(_, v)| *v)).collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        let mut line: Vec<String> = std::iter::once(m.to_string()).chain(values.iter().map(|v| number(*v))).collect();
        if two {
            line.push(match (values[0], values[1]) {
                (Some(a), Some(b)) if a != 0.0 => format!("{:+.1}%", (b - a) / a.abs() * 100.0),
                _ => "–".into(),
            });
        }
        table.push(line);
    }
    align(&table)
}

fn number(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn align(table: &[Vec<String>]) -> String {
    let width = |k: usize| table.iter().map(|r| r.get(k).map_or(0, |c| c.chars().count())).max().unwrap_or(0);
    let widths: Vec<usize> = (0..table[0].len()).map(width).collect();
    let mut out = String::new();
    for row in table {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(k, c)| if k == 0 { format!("{c:<w$}", w = widths[k]) } else { format!("{c:>w$}", w = widths[k]) })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory under the system's temporary one, removed when the test ends, passed or failed.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!("sluice-compare-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str, fct: &str, throughput: &str) -> Scratch {
        let d = Scratch::new(name);
        std::fs::write(d.join("fct.csv"), fct).unwrap();
        std::fs::write(d.join("throughput.csv"), throughput).unwrap();
        d
    }

    const FCT_HEAD: &str =
        "id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,ideal_fct_ns,slowdown,retransmitted_bytes,group\n";
    const TP_HEAD: &str = "label,time_ns,bytes,gbps,interval_ns,bytes_kind,queue_bytes\n";

    #[test]
    fn two_runs_line_up_with_their_difference() {
        let a = dir(
            "a",
            &format!("{FCT_HEAD}0,0,2,1000,0,20,20,10,2.0,0,0\n1,1,2,1000,0,40,40,10,4.0,0,0\n"),
            &format!("{TP_HEAD}p,10,0,0.0,10,wire,0\np,20,100,0.08,10,wire,3000\np,30,100,0.1,10,wire,1000\n"),
        );
        let b = dir(
            "b",
            &format!("{FCT_HEAD}0,0,2,1000,0,22,22,10,2.2,0,0\n1,1,2,1000,0,,,10,,0,0\n2,1,2,5000,0,50,50,,,0,0\n"),
            &format!("{TP_HEAD}p,10,100,0.1,10,wire,2000\n"),
        );
        let fa = figures(&a, "sim").unwrap();
        let fb = figures(&b, "udp").unwrap();
        let value = |f: &Figures, m: &str| f.rows.iter().find(|(n, _)| n == m).and_then(|(_, v)| *v);
        assert_eq!(value(&fa, "slowdown mean"), Some(3.0));
        assert_eq!(value(&fa, "goodput (Mbps)"), Some(400_000.0), "2000 B in 40 ns");
        assert_eq!(value(&fb, "long flows, Jain"), Some(1.0), "one flow without an ideal FCT: long");
        assert_eq!(value(&fb, "flows finished"), Some(2.0));
        assert_eq!(value(&fa, "p busy Gbps"), Some(0.09), "idle samples left out");
        assert_eq!(value(&fa, "p busy queue (KB)"), Some(2.0));
        assert_eq!(value(&fa, "p max queue (KB)"), Some(3.0));
        let text = render(&[fa, fb]);
        assert!(text.lines().next().unwrap().contains("difference"));
        let line = text.lines().find(|l| l.starts_with("slowdown mean")).unwrap();
        assert!(line.ends_with("-26.7%"), "{line}");
        assert!(text.contains("bed"), "no summary, no resolved scenario: the bed");
    }

    #[test]
    fn traces_align_by_flow_and_variable_as_time_means() {
        let d = dir(
            "trace",
            &format!("{FCT_HEAD}0,0,2,1000,0,20,20,10,2.0,0,0\n"),
            &format!("{TP_HEAD}p,10,0,0.0,10,wire,0\n"),
        );
        let trace = "time_ns,flow,variable,value\n0,3,cwnd,10\n10,3,cwnd,20\n40,3,cwnd,99\n0,3,alpha,0.5\n";
        std::fs::write(d.join("trace.csv"), trace).unwrap();
        let f = figures(&d, "x").unwrap();
        let value = |m: &str| f.rows.iter().find(|(n, _)| n == m).and_then(|(_, v)| *v);
        assert_eq!(value("trace 3 cwnd (time mean)"), Some(17.5), "10 for 10 ns, 20 for 30 ns");
        assert_eq!(value("trace 3 alpha (time mean)"), Some(0.5));
    }

    /// A token transport's counts come from summary.json's `extra.receiver_driven`, whichever datapath
    /// wrote it; a summary without that section adds no rows.
    #[test]
    fn token_counts_come_from_the_receiver_driven_section() {
        let d = dir(
            "tokens",
            &format!("{FCT_HEAD}0,0,2,1000,0,20,20,10,2.0,0,0\n"),
            &format!("{TP_HEAD}p,10,0,0.0,10,wire,0\n"),
        );
        let summary = r#"{"extra": {"receiver_driven": {"tokens_issued": 40, "tokens_marked": 30, "tokens_dropped": 2, "rx_timeouts": 1}}}"#;
        std::fs::write(d.join("summary.json"), summary).unwrap();
        let f = figures(&d, "x").unwrap();
        let value = |m: &str| f.rows.iter().find(|(n, _)| n == m).and_then(|(_, v)| *v);
        assert_eq!(value("tokens issued"), Some(40.0));
        assert_eq!(value("tokens marked"), Some(30.0));
        assert_eq!(value("tokens dropped"), Some(2.0));
        assert_eq!(value("receiver loss checks fired"), Some(1.0));
        std::fs::write(d.join("summary.json"), r#"{"extra": {}}"#).unwrap();
        let without = figures(&d, "x").unwrap();
        assert!(without.rows.iter().all(|(n, _)| !n.starts_with("tokens")), "{:?}", without.rows);
    }

    #[test]
    fn a_directory_without_results_is_refused() {
        let d = Scratch::new("empty");
        let e = figures(&d, "x").unwrap_err().to_string();
        assert!(e.contains("not a results directory"), "{e}");
    }
}
