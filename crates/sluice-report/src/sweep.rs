//! Reads a sweep directory (`sweep.json`, `sweep.csv`, `runs/<hash>/`) and draws its metric against the
//! axes, a heat map over the first two axes and the table of runs, with the best configuration marked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::charts::chart;
use crate::csv::Table;
use crate::error::ReportError;
use crate::html::{self, Kind, Part, Section};
use crate::run::read_json;
use crate::svg::{self, color, number, render_heatmap, Axis, HeatMap, Highlight, Line, Plot, Scale};

/// The metric shown when the sweep has no objective, if `sweep.csv` has it.
const DEFAULT_METRIC: &str = "slowdown_p99";

/// One run of a sweep: its axis values (text) and its metric value (`None` for a failed run or an empty
/// field).
pub type SweepRow = (Vec<String>, Option<f64>);

/// A sweep, read and checked.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The sweep directory.
    pub dir: PathBuf,
    /// The swept scenario keys, in order.
    pub axes: Vec<String>,
    /// The column shown, and what it is (the objective's expression, or the metric's name).
    pub metric: String,
    /// What the metric column means, for titles.
    pub metric_title: String,
    /// Whether a lower metric is better.
    pub lower_is_better: bool,
    /// The index (in `sweep.csv`'s rows) of the best run, if any run has a value.
    pub best: Option<usize>,
    /// `sweep.csv`.
    pub table: Table,
    /// Each row's axis values and metric value.
    pub rows: Vec<SweepRow>,
}

impl Sweep {
    /// Reads the sweep directory `dir`.
    pub fn read(dir: &Path) -> Result<Sweep, ReportError> {
        let json_path = dir.join("sweep.json");
        let json = read_json(&json_path)?;
        let axes =
            string_list(&json, "axes").ok_or_else(|| ReportError::at(&json_path, "`axes` must be a list of names"))?;
        let metrics = string_list(&json, "metrics")
            .ok_or_else(|| ReportError::at(&json_path, "`metrics` must be a list of names"))?;
        let objective = objective(&json).map_err(|e| ReportError::at(&json_path, e))?;
        let table = Table::read(&dir.join("sweep.csv"))?;
        for column in ["run", "hash", "status", "error"].iter().copied().chain(axes.iter().map(String::as_str)) {
            table.require(column)?;
        }
        let (metric, metric_title) = choose_metric(&table, &metrics, objective.as_ref())
            .ok_or_else(|| ReportError::at_line(&dir.join("sweep.csv"), 1, "no metric column to show"))?;
        let lower_is_better = objective.as_ref().is_none_or(|o| o.1);
        let rows = read_rows(&table, &axes, &metric)?;
        let best = best_row(&json, &table, &rows, lower_is_better);
        Ok(Sweep { dir: dir.to_path_buf(), axes, metric, metric_title, lower_is_better, best, table, rows })
    }
}

fn string_list(json: &Value, key: &str) -> Option<Vec<String>> {
    json.get(key)?.as_array()?.iter().map(|v| v.as_str().map(str::to_string)).collect()
}

/// The objective's expression and whether it is minimised; `None` when `objective` is null or absent.
fn objective(json: &Value) -> Result<Option<(String, bool)>, String> {
    let Some(objective) = json.get("objective").filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    let expr = objective.get("expr").and_then(Value::as_str).ok_or("`objective.expr` must be a string")?;
    match objective.get("goal").and_then(Value::as_str) {
        Some("min") => Ok(Some((expr.to_string(), true))),
        Some("max") => Ok(Some((expr.to_string(), false))),
        _ => Err("`objective.goal` must be \"min\" or \"max\"".into()),
    }
}

/// The objective's column (named by its expression, or `objective`), else the default metric, else the
/// first listed metric that `sweep.csv` has.
fn choose_metric(table: &Table, metrics: &[String], objective: Option<&(String, bool)>) -> Option<(String, String)> {
    if let Some((expr, _)) = objective {
        for column in [expr.as_str(), "objective"] {
            if table.column(column).is_some() {
                return Some((column.to_string(), format!("objective {expr}")));
            }
        }
    }
    let names = std::iter::once(DEFAULT_METRIC).chain(metrics.iter().map(String::as_str));
    names.into_iter().find(|m| table.column(m).is_some()).map(|m| (m.to_string(), m.to_string()))
}

fn read_rows(table: &Table, axes: &[String], metric: &str) -> Result<Vec<SweepRow>, ReportError> {
    let columns: Vec<usize> = axes.iter().map(|a| table.require(a)).collect::<Result<_, _>>()?;
    let (error, metric) = (table.require("error")?, table.require(metric)?);
    table
        .rows()
        .iter()
        .map(|row| {
            let values = columns.iter().map(|&c| table.text(row, c).to_string()).collect();
            // A run that failed has an error message; whatever metrics it left are not drawn.
            let ok = table.text(row, error).is_empty();
            Ok((values, if ok { table.number(row, metric)? } else { None }))
        })
        .collect()
}

/// The run `sweep.json` names as best, else the row with the best metric value.
fn best_row(json: &Value, table: &Table, rows: &[SweepRow], lower_is_better: bool) -> Option<usize> {
    if let Some(best) = json.get("best").filter(|b| !b.is_null()) {
        let run = best.get("run").map(|r| r.to_string());
        let hash = best.get("hash").and_then(Value::as_str);
        let (run_column, hash_column) = (table.column("run")?, table.column("hash")?);
        return table.rows().iter().position(|row| {
            Some(table.text(row, run_column)) == run.as_deref() || Some(table.text(row, hash_column)) == hash
        });
    }
    let valued = rows.iter().enumerate().filter_map(|(i, r)| Some((i, r.1?)));
    let better =
        |a: &(usize, f64), b: &(usize, f64)| if lower_is_better { b.1.total_cmp(&a.1) } else { a.1.total_cmp(&b.1) };
    valued.max_by(better).map(|(i, _)| i)
}

/// The values one axis takes, in order, and whether they are all numbers.
struct AxisValues {
    values: Vec<String>,
    numeric: bool,
}

impl AxisValues {
    fn of(rows: &[SweepRow], axis: usize) -> AxisValues {
        let mut values: Vec<String> = Vec::new();
        for row in rows {
            if !values.contains(&row.0[axis]) {
                values.push(row.0[axis].clone());
            }
        }
        let numeric = values.iter().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite));
        // Numbers in numeric order; anything else ("64KB", "dctcp") in the sweep's own order.
        if numeric {
            values.sort_by(|a, b| parse(a).total_cmp(&parse(b)));
        }
        AxisValues { values, numeric }
    }

    /// The x position of `value`: itself when numeric, else its index.
    fn position(&self, value: &str) -> f64 {
        if self.numeric {
            parse(value)
        } else {
            self.values.iter().position(|v| v == value).unwrap_or(0) as f64
        }
    }

    fn axis(&self, title: &str) -> Axis {
        if self.numeric {
            let positive = self.values.iter().all(|v| parse(v) > 0.0);
            let wide =
                positive && parse(self.values.last().expect("an axis has values")) >= 100.0 * parse(&self.values[0]);
            let ticks = self.values.iter().map(|v| (parse(v), v.clone())).collect();
            let scale = if wide { Scale::Log } else { Scale::Linear };
            let (low, high) = (parse(&self.values[0]), parse(self.values.last().expect("an axis has values")));
            // A margin keeps the end points off the frame.
            let margin = if high > low { (high - low) * 0.08 } else { low.abs().max(1.0) * 0.5 };
            let axis = Axis::new(title, scale).with_ticks(ticks);
            if wide {
                axis
            } else {
                axis.with_range(low - margin, high + margin)
            }
        } else {
            let ticks = self.values.iter().enumerate().map(|(i, v)| (i as f64, v.clone())).collect();
            Axis::new(title, Scale::Linear).with_ticks(ticks).with_range(-0.5, self.values.len() as f64 - 0.5)
        }
    }
}

fn parse(value: &str) -> f64 {
    value.parse().unwrap_or(f64::NAN)
}

/// The report of a sweep: the header lines and the parts.
pub fn parts(sweep: &Sweep) -> (Vec<String>, Vec<Part>) {
    let mut header = vec![format!(
        "<code>{}</code>: {} runs over {}; showing {}{}",
        svg::escape(&sweep.dir.display().to_string()),
        sweep.rows.len(),
        svg::escape(&sweep.axes.join(", ")),
        svg::escape(&sweep.metric_title),
        if sweep.lower_is_better { " (lower is better)" } else { " (higher is better)" }
    )];
    if let Some(best) = sweep.best {
        header.push(format!("best: {}", svg::escape(&describe(sweep, best))));
    }
    let mut parts: Vec<Part> = (0..sweep.axes.len()).map(|axis| metric_chart(sweep, axis)).collect();
    parts.push(heat_map(sweep));
    parts.push(runs_table(sweep));
    (header, parts)
}

/// `run 3 (hash): a=1, b=2: metric 4.5`.
fn describe(sweep: &Sweep, row: usize) -> String {
    let table_row = &sweep.table.rows()[row];
    let text = |name: &str| sweep.table.column(name).map_or("", |c| sweep.table.text(table_row, c));
    let settings: Vec<String> = sweep.axes.iter().zip(&sweep.rows[row].0).map(|(a, v)| format!("{a}={v}")).collect();
    let value = sweep.rows[row].1.map_or("–".into(), number);
    format!("run {} ({}): {}: {} = {value}", text("run"), text("hash"), settings.join(", "), sweep.metric)
}

/// The metric against axis `axis`, one line per combination of the other axes' values.
fn metric_chart(sweep: &Sweep, axis: usize) -> Part {
    let values = AxisValues::of(&sweep.rows, axis);
    let others = |settings: &[String]| -> String {
        let parts: Vec<String> = sweep
            .axes
            .iter()
            .zip(settings)
            .enumerate()
            .filter(|(i, _)| *i != axis)
            .map(|(_, (a, v))| format!("{a}={v}"))
            .collect();
        if parts.is_empty() {
            sweep.metric.clone()
        } else {
            parts.join(", ")
        }
    };
    let mut groups: BTreeMap<String, Vec<(f64, Option<f64>)>> = BTreeMap::new();
    for (settings, value) in &sweep.rows {
        groups.entry(others(settings)).or_default().push((values.position(&settings[axis]), *value));
    }
    let lines = groups
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut line = Line::new(name, color(i), points);
            line.dots = true;
            line
        })
        .collect();
    let highlights = sweep
        .best
        .and_then(|b| Some((values.position(&sweep.rows[b].0[axis]), sweep.rows[b].1?)))
        .map(|at| Highlight { at, label: "best".into() })
        .into_iter()
        .collect();
    let y_scale = if sweep.metric.starts_with("slowdown") { Scale::Log } else { Scale::Linear };
    let plot =
        Plot { x: values.axis(&sweep.axes[axis]), y: Axis::new(sweep.metric.as_str(), y_scale), lines, highlights };
    let note = "Failed runs have no point; the best run is ringed.".into();
    chart(&format!("{} vs {}", sweep.metric_title, sweep.axes[axis]), note, plot)
}

/// The metric over the first two axes; with more axes each cell shows the best over the others.
fn heat_map(sweep: &Sweep) -> Part {
    if sweep.axes.len() < 2 {
        return Part::Missing("The heat map needs two axes; this sweep has one.".into());
    }
    let (xs, ys) = (AxisValues::of(&sweep.rows, 0), AxisValues::of(&sweep.rows, 1));
    let index = |values: &AxisValues, v: &str| values.values.iter().position(|x| x == v).expect("value of a row");
    let mut cells = vec![vec![None; xs.values.len()]; ys.values.len()];
    for (settings, value) in &sweep.rows {
        let cell: &mut Option<f64> = &mut cells[index(&ys, &settings[1])][index(&xs, &settings[0])];
        if let Some(v) = value {
            let better = cell.is_none_or(|c| if sweep.lower_is_better { *v < c } else { *v > c });
            if better {
                *cell = Some(*v);
            }
        }
    }
    let best = sweep.best.map(|b| (index(&ys, &sweep.rows[b].0[1]), index(&xs, &sweep.rows[b].0[0])));
    let map = HeatMap {
        x_title: sweep.axes[0].clone(),
        y_title: sweep.axes[1].clone(),
        x_labels: xs.values.clone(),
        y_labels: ys.values.clone(),
        values: cells,
        best,
    };
    let note = if sweep.axes.len() > 2 { "Each cell is the best run over the other axes. " } else { "" };
    Part::Box(Section {
        kind: Kind::Chart,
        title: format!("{} over {} and {}", sweep.metric_title, sweep.axes[0], sweep.axes[1]),
        note: format!("{note}The best run is outlined in red; grey cells have no value."),
        body: render_heatmap(&map),
    })
}

/// Every run of `sweep.csv`, the best highlighted.
fn runs_table(sweep: &Sweep) -> Part {
    let header: Vec<&str> = sweep.table.header().iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = sweep
        .table
        .rows()
        .iter()
        .map(|row| (0..header.len()).map(|c| svg::escape(sweep.table.text(row, c))).collect())
        .collect();
    Part::Box(Section {
        kind: Kind::Table,
        title: "Runs".into(),
        note: "sweep.csv; the best run is highlighted. Each run's results are in runs/<hash>/.".into(),
        body: html::table(&header, &rows, sweep.best),
    })
}
