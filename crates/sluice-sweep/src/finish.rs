//! After the runs: the table of every run, the best configuration, and the files of a sweep directory.
//!
//! ```text
//! OUT/sweep.toml      the sweep file as run
//! OUT/sweep.csv       one row per run: run, hash, status, error, the swept keys, seed, the metrics
//! OUT/sweep.parquet   the same table
//! OUT/sweep.json      the axes, the metric names, the objective, constraints and the best run
//! OUT/best.toml       the best configuration as a scenario file, ready to run
//! OUT/runs/HASH/      each run's results directory
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use sluice_results::Summary;
use toml::Value;

use crate::exec::{run_dir, Outcome};
use crate::metrics::{metrics, Cell};
use crate::pick::Goal;
use crate::sweep::Sweep;
use crate::table::{write_atomically, write_parquet_atomically, Table};

/// The best configuration a pick found.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    /// Its first run (a row of the table).
    pub run: usize,
    /// That run's hash.
    pub hash: String,
    /// The objective's value (averaged over the configuration's seeds).
    pub value: f64,
    /// The swept keys' values.
    pub settings: Vec<(String, Value)>,
    /// Every run of the configuration (one per seed).
    pub runs: Vec<usize>,
}

/// A finished sweep.
#[derive(Debug, Clone)]
pub struct Finished {
    /// One row per run.
    pub table: Table,
    /// The best configuration, when an objective was given and a configuration qualifies.
    pub best: Option<Best>,
    /// Failed runs and why, in run order.
    pub failures: Vec<(usize, String)>,
}

/// Builds the table from the runs' results directories and picks the best configuration.
pub fn collect(sweep: &Sweep, outcomes: &[Outcome], out: &Path) -> Finished {
    let mut table = Table::default();
    let mut failures = Vec::new();
    for (index, outcome) in outcomes.iter().enumerate() {
        let summary =
            outcome.hash().filter(|_| !matches!(outcome, Outcome::Failed(..))).map(|hash| read_summary(out, hash));
        let (status, error, summary) = match (outcome, summary) {
            (Outcome::Failed(_, e), _) => ("failed", e.clone(), None),
            (_, Some(Ok(s))) => ("ok", String::new(), Some(s)),
            (_, Some(Err(e))) => ("failed", e, None),
            (_, None) => ("failed", "the sweep stopped before this run".to_string(), None),
        };
        if status == "failed" {
            failures.push((index, error.clone()));
        }
        table.push(row(sweep, index, outcome.hash(), status, error, summary.as_ref()));
    }
    let best = sweep.objective.as_ref().and_then(|_| pick_best(sweep, &table));
    Finished { table, best, failures }
}

fn read_summary(out: &Path, hash: &str) -> Result<Summary, String> {
    let path = run_dir(out, hash).join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn row(
    sweep: &Sweep,
    index: usize,
    hash: Option<&str>,
    status: &str,
    error: String,
    summary: Option<&Summary>,
) -> Vec<(String, Cell)> {
    let point = &sweep.points[index];
    let mut cells = vec![
        ("run".to_string(), Cell::Int(index as i64)),
        ("hash".to_string(), hash.map_or(Cell::Null, |h| Cell::Text(h.to_string()))),
        ("status".to_string(), Cell::Text(status.to_string())),
        ("error".to_string(), if error.is_empty() { Cell::Null } else { Cell::Text(error) }),
    ];
    cells.extend(point.settings.iter().map(|(key, value)| (key.clone(), cell_of(value))));
    let seed = summary.map(|s| s.run.seed).or(point.seed);
    cells.push(("seed".to_string(), seed.map_or(Cell::Null, |s| Cell::Int(s as i64))));
    match summary {
        Some(s) => cells.extend(metrics(s)),
        None => cells.extend(sweep.metric_names.iter().map(|name| (name.clone(), Cell::Null))),
    }
    cells
}

/// A swept value as a cell: numbers and booleans as such, strings as their text, anything else as TOML.
fn cell_of(value: &Value) -> Cell {
    match value {
        Value::Integer(i) => Cell::Int(*i),
        Value::Float(f) => Cell::Float(*f),
        Value::Boolean(b) => Cell::Bool(*b),
        Value::String(s) => Cell::Text(s.clone()),
        other => Cell::Text(other.to_string()),
    }
}

/// The configuration (the swept values, over all seeds) that satisfies every constraint with the best
/// objective; see [`crate::pick`].
fn pick_best(sweep: &Sweep, table: &Table) -> Option<Best> {
    let objective = sweep.objective.as_ref()?;
    let status = table.column("status")?;
    let mut groups: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
    let mut order = Vec::new();
    for (row, point) in sweep.points.iter().enumerate() {
        let key = point.sets();
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(row);
    }
    let mut best: Option<Best> = None;
    for key in order {
        let rows = &groups[&key];
        if rows.iter().any(|&r| table.rows[r][status] != Cell::Text("ok".into())) {
            continue;
        }
        let mean = |name: &str| -> Option<f64> {
            let column = table.column(name)?;
            let values: Option<Vec<f64>> = rows.iter().map(|&r| table.rows[r][column].number()).collect();
            values.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        };
        if !sweep.constraints.iter().all(|c| c.holds(&mean) == Some(true)) {
            continue;
        }
        let Some(value) = objective.expr.eval(&mean).filter(|v| v.is_finite()) else { continue };
        let better = best.as_ref().is_none_or(|b| match objective.goal {
            Goal::Min => value < b.value,
            Goal::Max => value > b.value,
        });
        if better {
            let run = rows[0];
            let hash = match &table.rows[run][table.column("hash")?] {
                Cell::Text(h) => h.clone(),
                _ => String::new(),
            };
            best = Some(Best { run, hash, value, settings: sweep.points[run].settings.clone(), runs: rows.clone() });
        }
    }
    best
}

/// Writes the sweep's files (all but the runs, which are written as they finish), each atomically.
pub fn write(sweep: &Sweep, finished: &Finished, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    write_atomically(&out.join("sweep.toml"), sweep.source.text.as_bytes())?;
    write_atomically(&out.join("sweep.csv"), &finished.table.to_csv()?)?;
    write_parquet_atomically(&finished.table, &out.join("sweep.parquet"))?;
    let description = serde_json::to_string_pretty(&describe(sweep, finished)).map_err(|e| e.to_string())? + "\n";
    write_atomically(&out.join("sweep.json"), description.as_bytes())?;
    let best_path = out.join("best.toml");
    match &finished.best {
        Some(best) => write_atomically(&best_path, best_scenario(sweep, best, out)?.as_bytes()),
        None => match std::fs::remove_file(&best_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("cannot remove {}: {e}", best_path.display()))
            }
            _ => Ok(()),
        },
    }
}

/// `sweep.json`: what a reader of the table needs to know about it.
fn describe(sweep: &Sweep, finished: &Finished) -> serde_json::Value {
    let objective = sweep.objective.as_ref().map(|o| json!({ "expr": o.text, "goal": o.goal.name() }));
    let best = finished.best.as_ref().map(|b| {
        let settings: serde_json::Map<String, serde_json::Value> =
            b.settings.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default())).collect();
        json!({ "run": b.run, "hash": b.hash, "value": b.value, "settings": settings, "runs": b.runs })
    });
    let axes: Vec<serde_json::Value> = sweep.axes.iter().map(|a| json!({ "label": a.label, "keys": a.keys })).collect();
    json!({
        "name": sweep.name,
        "scenario": sweep.source.file.scenario.get_ref(),
        "runs": finished.table.rows.len(),
        "failed": finished.failures.len(),
        "axes": sweep.axis_columns(),
        "axis_groups": axes,
        "metrics": sweep.metric_names,
        "objective": objective,
        "constraints": sweep.constraints.iter().map(|c| c.text.clone()).collect::<Vec<_>>(),
        "best": best,
    })
}

/// The base scenario with the fixed settings and the best configuration's values written in (comments
/// kept), and `base_dir` pointing back at the scenario's directory from `out`.
fn best_scenario(sweep: &Sweep, best: &Best, out: &Path) -> Result<String, String> {
    let base_dir = sweep.base_dir_from(out);
    let mut sets: Vec<String> = sweep.fixed.clone();
    sets.extend(best.settings.iter().map(|(k, v)| format!("{k}={v}")));
    sets.push(format!("base_dir={}", Value::String(base_dir.to_string_lossy().into_owned())));
    let text =
        sluice_scenario::apply_sets(&sweep.scenario_text, &sweep.scenario_path, &sets).map_err(|e| e.to_string())?;
    let objective = sweep.objective.as_ref().map_or(String::new(), |o| o.text.clone());
    let header = format!(
        "# The best configuration of sweep {:?}: {objective} = {} (run {}, runs/{}).\n\
         # `sluice run` this file to run it; file names in it resolve as in the base scenario.\n\n",
        sweep.name, best.value, best.run, best.hash
    );
    Ok(header + &text)
}
