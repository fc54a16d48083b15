//! Reads one results directory (`sluice run --out DIR`) into the series the charts need.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::csv::Table;
use crate::error::ReportError;

/// What the report shows of one run.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The results directory.
    pub dir: PathBuf,
    /// Size in bytes and slowdown of every finished flow that has a size (long-lived flows have none).
    pub flows: Vec<(f64, f64)>,
    /// The flow-size buckets of `summary.json`, then its `overall` entry.
    pub buckets: Vec<BucketRow>,
    /// A few of `summary.json`'s totals, named for a table, as text (`–` where absent).
    pub totals: Vec<(String, String)>,
    /// Throughput series of `throughput.csv`, in file order.
    pub throughput: Vec<Series>,
    /// Whether `throughput.csv` has the `queue_bytes` column.
    pub has_queue_column: bool,
    /// Traced congestion-control variables: variable name, then one series per flow.
    pub traces: BTreeMap<String, Vec<Series>>,
    /// `scenario.resolved.toml`, parsed; `None` when the directory has none.
    pub scenario: Option<toml::Table>,
}

/// One row of the per-bucket table.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketRow {
    /// The bucket's label (`<10KB`, `overall`).
    pub label: String,
    /// Flows in the bucket.
    pub count: u64,
    /// Flows that had not finished when the run ended.
    pub unfinished: u64,
    /// Average, p50, p99 and p99.9 slowdown; `None` where the bucket had no finished flow.
    pub slowdown: [Option<f64>; 4],
}

/// A point of a series: x, and y or `None` for a gap.
pub type Point = (f64, Option<f64>);

/// A named series of `(x, y)` points; `y = None` is a gap (an unset value).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The series' name (`flow 0`, `tor0:p2`).
    pub label: String,
    /// `payload` or `wire` for throughput; empty otherwise.
    pub kind: String,
    /// The points, in time order.
    pub points: Vec<(f64, Option<f64>)>,
    /// Port queue occupancy in bytes at the same times (throughput rows that carry `queue_bytes`).
    pub queue: Vec<(f64, Option<f64>)>,
}

impl RunData {
    /// Reads the results directory `dir`: `summary.json` and `fct.csv` must be there; `throughput.csv`,
    /// `trace.csv` and `scenario.resolved.toml` are read when present.
    pub fn read(dir: &Path) -> Result<RunData, ReportError> {
        let summary_path = dir.join("summary.json");
        if !summary_path.is_file() {
            return Err(ReportError::at(dir, "not a results directory: no summary.json (and no sweep.json)"));
        }
        let summary = read_json(&summary_path)?;
        let (throughput, has_queue_column) = read_throughput(&dir.join("throughput.csv"))?;
        Ok(RunData {
            dir: dir.to_path_buf(),
            flows: read_flows(&dir.join("fct.csv"))?,
            buckets: read_buckets(&summary_path, &summary)?,
            totals: totals(&summary),
            throughput,
            has_queue_column,
            traces: read_traces(&dir.join("trace.csv"))?,
            scenario: read_scenario(&dir.join("scenario.resolved.toml"))?,
        })
    }
}

/// `fct.csv`: size and slowdown of the flows that have a slowdown.
fn read_flows(path: &Path) -> Result<Vec<(f64, f64)>, ReportError> {
    let table = Table::read(path)?;
    let (size, slowdown) = (table.require("size_bytes")?, table.require("slowdown")?);
    let mut flows = Vec::new();
    for row in table.rows() {
        if let Some(s) = table.number(row, slowdown)? {
            flows.push((table.required_number(row, size)?, s));
        }
    }
    Ok(flows)
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> Result<Value, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::at(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| ReportError::at_line(path, e.line(), format!("not valid JSON: {e}")))
}

/// The totals shown under the bucket table: (column name, JSON pointer into `summary.json`).
const TOTALS: [(&str, &str); 6] = [
    ("flows", "/totals/flows"),
    ("goodput (Gbps)", "/totals/goodput_gbps"),
    ("max link utilisation", "/totals/link_utilisation/max"),
    ("drops", "/totals/drops"),
    ("ECN marks", "/totals/ecn_marks"),
    ("PFC pauses", "/totals/pfc_pauses"),
];

fn totals(summary: &Value) -> Vec<(String, String)> {
    TOTALS
        .iter()
        .map(|(name, pointer)| {
            let value = summary.pointer(pointer).filter(|v| v.is_number()).map_or("–".into(), Value::to_string);
            (name.to_string(), value)
        })
        .collect()
}

/// The bucket table of `summary.json`.
fn read_buckets(path: &Path, summary: &Value) -> Result<Vec<BucketRow>, ReportError> {
    let buckets = summary.get("buckets").and_then(Value::as_array);
    let (Some(buckets), Some(overall)) = (buckets, summary.get("overall")) else {
        return Err(ReportError::at(path, "expected `buckets` (a list) and `overall`"));
    };
    let mut rows: Vec<BucketRow> =
        buckets.iter().map(|b| bucket_row(b, None)).collect::<Option<_>>().unwrap_or_default();
    if rows.len() != buckets.len() {
        return Err(ReportError::at(path, "a bucket lacks `label`, `count` or `unfinished`"));
    }
    rows.push(bucket_row(overall, Some("overall")).ok_or_else(|| ReportError::at(path, "`overall` lacks `count`"))?);
    Ok(rows)
}

fn bucket_row(bucket: &Value, label: Option<&str>) -> Option<BucketRow> {
    let label = label.or_else(|| bucket.get("label")?.as_str())?.to_string();
    let stat = |name: &str| bucket.get("slowdown")?.get(name)?.as_f64();
    Some(BucketRow {
        label,
        count: bucket.get("count")?.as_u64()?,
        unfinished: bucket.get("unfinished")?.as_u64()?,
        slowdown: [stat("avg"), stat("p50"), stat("p99"), stat("p999")],
    })
}

/// `throughput.csv` (absent: no series), grouped by label in order of first appearance.
fn read_throughput(path: &Path) -> Result<(Vec<Series>, bool), ReportError> {
    if !path.exists() {
        return Ok((Vec::new(), false));
    }
    let table = Table::read(path)?;
    let (label, time, gbps) = (table.require("label")?, table.require("time_ns")?, table.require("gbps")?);
    let kind = table.require("bytes_kind")?;
    let queue = table.column("queue_bytes");
    let mut series: Vec<Series> = Vec::new();
    for row in table.rows() {
        let name = table.text(row, label);
        let index = match series.iter().position(|s| s.label == name) {
            Some(index) => index,
            None => {
                let kind = table.text(row, kind).to_string();
                series.push(Series { label: name.to_string(), kind, points: Vec::new(), queue: Vec::new() });
                series.len() - 1
            }
        };
        let t = table.required_number(row, time)?;
        series[index].points.push((t, table.number(row, gbps)?));
        if let Some(q) = queue.map(|q| table.number(row, q)).transpose()?.flatten() {
            series[index].queue.push((t, Some(q)));
        }
    }
    Ok((series, queue.is_some()))
}

/// `trace.csv` (absent: no traces), long form (`time_ns,flow,variable,value`) or wide form (`time_ns,flow`
/// and one column per variable).
fn read_traces(path: &Path) -> Result<BTreeMap<String, Vec<Series>>, ReportError> {
    let mut traces: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    if !path.exists() {
        return Ok(traces);
    }
    let table = Table::read(path)?;
    let (time, flow) = (table.require("time_ns")?, table.require("flow")?);
    let long = table.column("variable").zip(table.column("value"));
    for row in table.rows() {
        let t = table.required_number(row, time)?;
        let label = format!("flow {}", table.text(row, flow));
        let mut add = |variable: &str, value: Option<f64>| {
            push_point(traces.entry(variable.to_string()).or_default(), &label, t, value)
        };
        match long {
            Some((variable, value)) => add(table.text(row, variable), table.number(row, value)?),
            None => {
                for column in (0..table.header().len()).filter(|&c| c != time && c != flow) {
                    add(&table.header()[column], table.number(row, column)?);
                }
            }
        }
    }
    Ok(traces)
}

fn push_point(series: &mut Vec<Series>, label: &str, t: f64, value: Option<f64>) {
    match series.iter_mut().find(|s| s.label == label) {
        Some(s) => s.points.push((t, value)),
        None => series.push(Series {
            label: label.to_string(),
            kind: String::new(),
            points: vec![(t, value)],
            queue: Vec::new(),
        }),
    }
}

/// `scenario.resolved.toml`, or `None` when the directory has none.
fn read_scenario(path: &Path) -> Result<Option<toml::Table>, ReportError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::at(path, format!("cannot read: {e}")))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |span| text[..span.start].matches('\n').count() + 1);
        ReportError::at_line(path, line, e.message())
    })?;
    Ok(Some(table))
}
