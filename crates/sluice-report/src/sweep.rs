//! Reads a sweep directory (`sweep.json`, `sweep.csv`, `runs/<hash>/`) and draws its metric against the
//! axes, a heat map over the first two axes and the table of runs, with the best configuration marked.
//!
//! Runs that differ only in their seed are one configuration: like `sluice sweep`'s own choice of the
//! best, a configuration's value is the objective over its runs' columns averaged, and a configuration
//! with a failed run has none.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sluice_sweep::pick::{objective as parse_objective, Objective};

use crate::charts::chart;
use crate::csv::Table;
use crate::error::ReportError;
use crate::html::{self, Kind, Part, Section};
use crate::run::read_json;
use crate::svg::{self, color, number, render_heatmap, Axis, HeatMap, Highlight, Line, Plot, Scale};

/// The metric shown when the sweep has no objective, if `sweep.csv` has it.
const DEFAULT_METRIC: &str = "slowdown_p99";

/// Metric columns the table of runs shows besides the one charted, when `sweep.csv` has them.
const TABLE_METRICS: [&str; 4] = ["slowdown_p99", "goodput_gbps", "utilisation_max", "drops"];

/// Swept keys that move together (a zipped axis), named by `label`; a plain axis is one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisGroup {
    /// The name in titles and legends.
    pub label: String,
    /// The `sweep.csv` columns of its keys.
    pub keys: Vec<String>,
}

/// The runs of one point of the sweep (one per seed).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The value of each axis group, its keys' values joined by ` / `.
    pub settings: Vec<String>,
    /// Its rows in `sweep.csv`.
    pub rows: Vec<usize>,
    /// The charted value; `None` when a run failed or a column it needs is empty.
    pub value: Option<f64>,
}

/// What is charted: the sweep's objective, or one metric column.
enum Measure {
    Objective(Objective),
    Column(String),
}

impl Measure {
    fn columns(&self) -> Vec<&str> {
        match self {
            Measure::Objective(objective) => objective.expr.columns(),
            Measure::Column(name) => vec![name.as_str()],
        }
    }
}

/// A sweep, read and checked.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The sweep directory.
    pub dir: PathBuf,
    /// The axes.
    pub groups: Vec<AxisGroup>,
    /// What the charted value is: `objective p99(slowdown, <10KB)` or a column's name.
    pub metric_title: String,
    /// Whether the charted value is a slowdown (drawn on a log axis).
    pub slowdown: bool,
    /// Whether a lower value is better.
    pub lower_is_better: bool,
    /// `sweep.csv`.
    pub table: Table,
    /// The configurations, in order of their first run.
    pub configs: Vec<Config>,
    /// The index of the best configuration in `configs`.
    pub best: Option<usize>,
    /// The `sweep.csv` columns the table of runs shows.
    pub shown: Vec<usize>,
}

impl Sweep {
    /// Reads the sweep directory `dir`.
    pub fn read(dir: &Path) -> Result<Sweep, ReportError> {
        let json_path = dir.join("sweep.json");
        let json = read_json(&json_path)?;
        let located = |message: String| ReportError::at(&json_path, message);
        let axes = string_list(&json, "axes").ok_or_else(|| located("`axes` must be a list of names".into()))?;
        let metrics =
            string_list(&json, "metrics").ok_or_else(|| located("`metrics` must be a list of names".into()))?;
        let groups = axis_groups(&json, &axes).map_err(located)?;
        let objective = objective(&json).map_err(located)?;
        let csv_path = dir.join("sweep.csv");
        let table = Table::read(&csv_path)?;
        for column in ["run", "hash", "status", "error"].iter().copied().chain(axes.iter().map(String::as_str)) {
            table.require(column)?;
        }
        let lower_is_better = objective.as_ref().is_none_or(|o| o.1);
        let measure =
            match objective {
                Some((objective, _)) => Measure::Objective(objective),
                None => Measure::Column(default_metric(&table, &metrics).ok_or_else(|| {
                    ReportError::at_line(&csv_path, 1, "no metric column to chart (and no objective)")
                })?),
            };
        if let Some(missing) = measure.columns().into_iter().find(|c| table.column(c).is_none()) {
            return Err(located(format!("the objective reads `{missing}`, which sweep.csv lacks")));
        }
        let mut configs = configurations(&table, &groups)?;
        for config in &mut configs {
            config.value = evaluate(&measure, &table, &config.rows)?;
        }
        let best = best_config(&json, &table, &configs, lower_is_better);
        let metric_title = match &measure {
            Measure::Objective(objective) => format!("objective {}", objective.expr_text()),
            Measure::Column(name) => name.clone(),
        };
        let slowdown = measure.columns().iter().all(|c| c.starts_with("slowdown"));
        let shown = shown_columns(&table, &axes, &measure);
        Ok(Sweep {
            dir: dir.to_path_buf(),
            groups,
            metric_title,
            slowdown,
            lower_is_better,
            table,
            configs,
            best,
            shown,
        })
    }
}

fn string_list(json: &Value, key: &str) -> Option<Vec<String>> {
    json.get(key)?.as_array()?.iter().map(|v| v.as_str().map(str::to_string)).collect()
}

/// `axis_groups` when `sweep.json` has them (zipped keys move together), else one group per axis.
fn axis_groups(json: &Value, axes: &[String]) -> Result<Vec<AxisGroup>, String> {
    let Some(groups) = json.get("axis_groups").filter(|g| !g.is_null()) else {
        return Ok(axes.iter().map(|a| AxisGroup { label: a.clone(), keys: vec![a.clone()] }).collect());
    };
    let invalid = || "`axis_groups` must be a list of {\"label\": name, \"keys\": [names]}".to_string();
    let groups = groups.as_array().ok_or_else(invalid)?;
    groups
        .iter()
        .map(|g| {
            let label = g.get("label").and_then(Value::as_str).ok_or_else(invalid)?;
            let keys = string_list(g, "keys").filter(|k| !k.is_empty()).ok_or_else(invalid)?;
            match keys.iter().find(|k| !axes.contains(k)) {
                Some(key) => Err(format!("`axis_groups` names `{key}`, which is not in `axes`")),
                None => Ok(AxisGroup { label: label.to_string(), keys }),
            }
        })
        .collect()
}

/// The objective and whether it is minimised; `None` when `objective` is null or absent.
fn objective(json: &Value) -> Result<Option<(Objective, bool)>, String> {
    let Some(objective) = json.get("objective").filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    let expr = objective.get("expr").and_then(Value::as_str).ok_or("`objective.expr` must be a string")?;
    let lower_is_better = match objective.get("goal").and_then(Value::as_str) {
        Some("min") => true,
        Some("max") => false,
        _ => return Err("`objective.goal` must be \"min\" or \"max\"".into()),
    };
    let parsed = parse_objective(expr, "objective").map_err(|e| e.to_string())?;
    Ok(Some((parsed, lower_is_better)))
}

/// The default metric if `sweep.csv` has it, else the first listed metric it has.
fn default_metric(table: &Table, metrics: &[String]) -> Option<String> {
    let names = std::iter::once(DEFAULT_METRIC).chain(metrics.iter().map(String::as_str));
    names.into_iter().find(|m| table.column(m).is_some()).map(str::to_string)
}

/// Groups the rows by their axis values, in order of first appearance.
fn configurations(table: &Table, groups: &[AxisGroup]) -> Result<Vec<Config>, ReportError> {
    let columns: Vec<Vec<usize>> =
        groups.iter().map(|g| g.keys.iter().map(|k| table.require(k)).collect()).collect::<Result<_, _>>()?;
    let mut configs: Vec<Config> = Vec::new();
    for (index, row) in table.rows().iter().enumerate() {
        let settings: Vec<String> = columns
            .iter()
            .map(|keys| keys.iter().map(|&c| table.text(row, c)).collect::<Vec<_>>().join(" / "))
            .collect();
        match configs.iter_mut().find(|c| c.settings == settings) {
            Some(config) => config.rows.push(index),
            None => configs.push(Config { settings, rows: vec![index], value: None }),
        }
    }
    Ok(configs)
}

/// The measure over the mean of each column across `rows`; `None` if a run failed or a cell is empty.
fn evaluate(measure: &Measure, table: &Table, rows: &[usize]) -> Result<Option<f64>, ReportError> {
    let error = table.require("error")?;
    if rows.iter().any(|&r| !table.text(&table.rows()[r], error).is_empty()) {
        return Ok(None);
    }
    let mut means = Vec::new();
    for name in measure.columns() {
        let column = table.require(name)?;
        let values: Vec<Option<f64>> =
            rows.iter().map(|&r| table.number(&table.rows()[r], column)).collect::<Result<_, _>>()?;
        let mean = values.iter().copied().sum::<Option<f64>>().map(|sum| sum / rows.len() as f64);
        means.push((name.to_string(), mean));
    }
    let value = |name: &str| means.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v);
    Ok(match measure {
        Measure::Objective(objective) => objective.expr.eval(&value),
        Measure::Column(name) => value(name),
    }
    .filter(|v| v.is_finite()))
}

/// The configuration of the run `sweep.json` names as best, else the one with the best value (the
/// earlier one on a tie).
fn best_config(json: &Value, table: &Table, configs: &[Config], lower_is_better: bool) -> Option<usize> {
    if let Some(best) = json.get("best").filter(|b| !b.is_null()) {
        let run = best.get("run").map(Value::to_string);
        let hash = best.get("hash").and_then(Value::as_str);
        let (run_column, hash_column) = (table.column("run")?, table.column("hash")?);
        let row = table.rows().iter().position(|row| {
            Some(table.text(row, run_column)) == run.as_deref() || Some(table.text(row, hash_column)) == hash
        })?;
        return configs.iter().position(|c| c.rows.contains(&row));
    }
    let mut best: Option<(usize, f64)> = None;
    for (index, value) in configs.iter().enumerate().filter_map(|(i, c)| Some((i, c.value?))) {
        let better = best.is_none_or(|(_, b)| if lower_is_better { value < b } else { value > b });
        if better {
            best = Some((index, value));
        }
    }
    best.map(|(index, _)| index)
}

/// The columns of the table of runs: identity, axes, seed, what the chart reads and a few key metrics.
fn shown_columns(table: &Table, axes: &[String], measure: &Measure) -> Vec<usize> {
    let names = ["run", "hash", "status", "error"]
        .into_iter()
        .chain(axes.iter().map(String::as_str))
        .chain(["seed"])
        .chain(measure.columns())
        .chain(TABLE_METRICS);
    let mut shown: Vec<usize> = Vec::new();
    for column in names.filter_map(|name| table.column(name)) {
        if !shown.contains(&column) {
            shown.push(column);
        }
    }
    shown
}

/// The values one axis group takes, in order, and whether they are all numbers.
struct AxisValues {
    values: Vec<String>,
    numeric: bool,
}

impl AxisValues {
    fn of(configs: &[Config], group: usize, keys: usize) -> AxisValues {
        let mut values: Vec<String> = Vec::new();
        for config in configs {
            if !values.contains(&config.settings[group]) {
                values.push(config.settings[group].clone());
            }
        }
        let numeric = keys == 1 && values.iter().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite));
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

    fn index(&self, value: &str) -> usize {
        self.values.iter().position(|v| v == value).expect("a configuration's own value")
    }

    fn axis(&self, title: &str) -> Axis {
        if !self.numeric {
            let ticks = self.values.iter().enumerate().map(|(i, v)| (i as f64, v.clone())).collect();
            return Axis::new(title, Scale::Linear).with_ticks(ticks).with_range(-0.5, self.values.len() as f64 - 0.5);
        }
        let (low, high) = (parse(&self.values[0]), parse(self.values.last().expect("an axis has values")));
        let ticks = self.values.iter().map(|v| (parse(v), v.clone())).collect();
        if low > 0.0 && high >= 100.0 * low {
            return Axis::new(title, Scale::Log).with_ticks(ticks);
        }
        // A margin keeps the end points off the frame.
        let margin = if high > low { (high - low) * 0.08 } else { low.abs().max(1.0) * 0.5 };
        Axis::new(title, Scale::Linear).with_ticks(ticks).with_range(low - margin, high + margin)
    }
}

fn parse(value: &str) -> f64 {
    value.parse().unwrap_or(f64::NAN)
}

/// The report of a sweep: the header lines and the parts.
pub fn parts(sweep: &Sweep) -> (Vec<String>, Vec<Part>) {
    let labels: Vec<&str> = sweep.groups.iter().map(|g| g.label.as_str()).collect();
    let mut header = vec![format!(
        "<code>{}</code>: {} runs, {} configurations over {}; charting {} ({} is better)",
        svg::escape(&sweep.dir.display().to_string()),
        sweep.table.rows().len(),
        sweep.configs.len(),
        svg::escape(&labels.join(", ")),
        svg::escape(&sweep.metric_title),
        if sweep.lower_is_better { "lower" } else { "higher" }
    )];
    if let Some(best) = sweep.best {
        header.push(format!("best: {}", svg::escape(&describe(sweep, best))));
    }
    let mut parts: Vec<Part> = (0..sweep.groups.len()).map(|group| metric_chart(sweep, group)).collect();
    parts.push(heat_map(sweep));
    parts.push(runs_table(sweep));
    (header, parts)
}

/// `algorithm=dctcp / false, workload.0.load=0.3 (runs 6, 7): objective ... = 4.5`.
fn describe(sweep: &Sweep, index: usize) -> String {
    let config = &sweep.configs[index];
    let settings: Vec<String> =
        sweep.groups.iter().zip(&config.settings).map(|(g, v)| format!("{}={v}", g.label)).collect();
    let run = sweep.table.column("run").expect("checked when read");
    let runs: Vec<&str> = config.rows.iter().map(|&r| sweep.table.text(&sweep.table.rows()[r], run)).collect();
    let value = config.value.map_or("–".into(), number);
    let plural = if runs.len() == 1 { "run" } else { "runs" };
    format!("{} ({plural} {}): {} = {value}", settings.join(", "), runs.join(", "), sweep.metric_title)
}

fn y_axis(sweep: &Sweep) -> Axis {
    Axis::new(sweep.metric_title.as_str(), if sweep.slowdown { Scale::Log } else { Scale::Linear })
}

/// The value against axis group `group`, one line per combination of the other groups' values.
fn metric_chart(sweep: &Sweep, group: usize) -> Part {
    let values = AxisValues::of(&sweep.configs, group, sweep.groups[group].keys.len());
    let others = |settings: &[String]| -> String {
        let parts: Vec<String> = sweep
            .groups
            .iter()
            .zip(settings)
            .enumerate()
            .filter(|(i, _)| *i != group)
            .map(|(_, (g, v))| format!("{}={v}", g.label))
            .collect();
        if parts.is_empty() {
            sweep.metric_title.clone()
        } else {
            parts.join(", ")
        }
    };
    let mut lines: Vec<Line> = Vec::new();
    for config in &sweep.configs {
        let name = others(&config.settings);
        let point = (values.position(&config.settings[group]), config.value);
        match lines.iter_mut().find(|l| l.name == name) {
            Some(line) => line.points.push(point),
            None => {
                let mut line = Line::new(name, color(lines.len()), vec![point]);
                line.dots = true;
                lines.push(line);
            }
        }
    }
    lines.iter_mut().for_each(|line| line.points.sort_by(|a, b| a.0.total_cmp(&b.0)));
    let highlights = sweep
        .best
        .map(|b| &sweep.configs[b])
        .and_then(|c| Some((values.position(&c.settings[group]), c.value?)))
        .map(|at| Highlight { at, label: "best".into() })
        .into_iter()
        .collect();
    let plot = Plot { x: values.axis(&sweep.groups[group].label), y: y_axis(sweep), lines, highlights };
    let note = "Each point averages a configuration's runs (its seeds); failed configurations have no point; \
                the best is ringed."
        .into();
    chart(&format!("{} vs {}", sweep.metric_title, sweep.groups[group].label), note, plot)
}

/// The value over the first two axis groups; with more groups each cell shows the best over the others.
fn heat_map(sweep: &Sweep) -> Part {
    if sweep.groups.len() < 2 {
        return Part::Missing("The heat map needs two axes; this sweep has one.".into());
    }
    let xs = AxisValues::of(&sweep.configs, 0, sweep.groups[0].keys.len());
    let ys = AxisValues::of(&sweep.configs, 1, sweep.groups[1].keys.len());
    let mut cells = vec![vec![None; xs.values.len()]; ys.values.len()];
    for config in &sweep.configs {
        let cell: &mut Option<f64> = &mut cells[ys.index(&config.settings[1])][xs.index(&config.settings[0])];
        if let Some(v) = config.value {
            if cell.is_none_or(|c| if sweep.lower_is_better { v < c } else { v > c }) {
                *cell = Some(v);
            }
        }
    }
    let best = sweep.best.map(|b| &sweep.configs[b]).map(|c| (ys.index(&c.settings[1]), xs.index(&c.settings[0])));
    let map = HeatMap {
        x_title: sweep.groups[0].label.clone(),
        y_title: sweep.groups[1].label.clone(),
        x_labels: xs.values,
        y_labels: ys.values,
        values: cells,
        best,
    };
    let note = if sweep.groups.len() > 2 { "Each cell is the best configuration over the other axes. " } else { "" };
    Part::Box(Section {
        kind: Kind::Chart,
        title: format!("{} over {} and {}", sweep.metric_title, sweep.groups[0].label, sweep.groups[1].label),
        note: format!("{note}The best configuration is outlined in red; grey cells have no value."),
        body: render_heatmap(&map),
    })
}

/// Every run of `sweep.csv` (a selection of its columns), the best configuration's runs highlighted.
fn runs_table(sweep: &Sweep) -> Part {
    let header: Vec<&str> = sweep.shown.iter().map(|&c| sweep.table.header()[c].as_str()).collect();
    let rows: Vec<Vec<String>> = sweep
        .table
        .rows()
        .iter()
        .map(|row| sweep.shown.iter().map(|&c| svg::escape(sweep.table.text(row, c))).collect())
        .collect();
    let highlighted = sweep.best.map_or(&[][..], |b| sweep.configs[b].rows.as_slice());
    let note = format!(
        "{} of the {} columns of sweep.csv; the best configuration's runs are highlighted. Each run's results \
         are in runs/<hash>/.",
        header.len(),
        sweep.table.header().len()
    );
    Part::Box(Section { kind: Kind::Table, title: "Runs".into(), note, body: html::table(&header, &rows, highlighted) })
}
