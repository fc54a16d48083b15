//! A sweep read and checked: the base scenario, the fixed settings, the axes, every run's point, and
//! what picks the best configuration. Everything a user wrote is checked here, before any run starts.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sluice_scenario::{canonical, load_str, resolve, resolved_identity, Resolved, Scenario};

use crate::axes::{axes, Axis};
use crate::error::SweepError;
use crate::metrics;
use crate::pick::{self, Constraint, Objective};
use crate::plan::{self, Point};
use crate::spec::{flatten, SweepSource};

/// Sweeps with more runs than this need the user's confirmation (`--yes`).
pub const LARGE_SWEEP: u64 = 10_000;

/// What the command line adds to the sweep file.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// The objective, overriding the file's `best`.
    pub best: Option<String>,
    /// Constraints, overriding the file's `subject_to` when any is given.
    pub subject_to: Vec<String>,
    /// Run a sweep larger than [`LARGE_SWEEP`].
    pub yes: bool,
}

/// A checked sweep, ready to run.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The sweep file.
    pub source: SweepSource,
    /// The sweep's name.
    pub name: String,
    /// The base scenario's path and text.
    pub scenario_path: PathBuf,
    /// The base scenario's text, read once so that every run sees the same file.
    pub scenario_text: String,
    /// The fixed settings as `--set` arguments.
    pub fixed: Vec<String>,
    /// The axes.
    pub axes: Vec<Axis>,
    /// Every run, in table order.
    pub points: Vec<Point>,
    /// The objective, if any.
    pub objective: Option<Objective>,
    /// The constraints on the best configuration.
    pub constraints: Vec<Constraint>,
    /// The scenario's directory for relative file names (absolute).
    pub base_dir: PathBuf,
    /// The metric columns of the table.
    pub metric_names: Vec<String>,
}

/// A point resolved to the scenario it runs, and the hash that names its run directory.
#[derive(Debug)]
pub struct Prepared {
    /// The resolved scenario.
    pub resolved: Resolved,
    /// The first 16 hex digits of the SHA-256 of [`resolved_identity`].
    pub hash: String,
}

impl Sweep {
    /// Reads the sweep file at `path` and checks everything in it: the axes, every axis value against
    /// the base scenario, the objective's columns, and the size.
    pub fn load(path: &Path, options: &SweepOptions) -> Result<Sweep, SweepError> {
        let source = SweepSource::read(path)?;
        let scenario_path = source.scenario_path();
        let scenario_line = source.line(source.file.scenario.span().start);
        let scenario_text = std::fs::read_to_string(&scenario_path).map_err(|e| {
            SweepError::at_line(path, scenario_line, format!("scenario: cannot read {}: {e}", scenario_path.display()))
        })?;
        let fixed: Vec<String> = flatten(&source.file.set).iter().map(|(k, v)| format!("{k}={v}")).collect();
        let axes = axes(&source)?;
        let mut sweep = Sweep {
            name: source.name(),
            scenario_path,
            scenario_text,
            fixed,
            axes,
            points: Vec::new(),
            objective: None,
            constraints: Vec::new(),
            base_dir: PathBuf::new(),
            metric_names: Vec::new(),
            source,
        };
        let base = sweep.scenario(&[], None).map_err(|e| SweepError::in_file(path, format!("[set]: {e}")))?;
        sweep.base_dir = base.base_dir.clone();
        sweep.check_sample()?;
        sweep.plan(base.seed, options.yes)?;
        sweep.check_axis_values()?;
        let first = sweep.prepare(0).map_err(|e| SweepError::in_file(path, format!("the first run: {e}")))?;
        sweep.metric_names = metrics::names(&bucket_labels(&first.resolved));
        sweep.pick_rules(options)?;
        Ok(sweep)
    }

    /// The base scenario with the fixed settings, then `sets`, and `seed` if given.
    pub fn scenario(&self, sets: &[String], seed: Option<u64>) -> Result<Scenario, String> {
        let all: Vec<String> = self.fixed.iter().chain(sets).cloned().collect();
        let dir = self.scenario_path.parent().unwrap_or(Path::new(""));
        let origin = self.scenario_path.to_string_lossy();
        let mut scenario = load_str(&self.scenario_text, &origin, dir, &all).map_err(|e| e.to_string())?;
        if let Some(seed) = seed {
            scenario.seed = seed;
        }
        Ok(scenario)
    }

    /// Resolves run `index` and names it.
    pub fn prepare(&self, index: usize) -> Result<Prepared, String> {
        let point = &self.points[index];
        let scenario = self.scenario(&point.sets(), point.seed)?;
        let resolved = resolve(&scenario).map_err(|e| e.to_string())?;
        let digest = Sha256::digest(resolved_identity(&resolved).as_bytes());
        let hash = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Ok(Prepared { resolved, hash })
    }

    /// The table's columns a pick may read: the swept keys, `seed`, and the metrics.
    pub fn columns(&self) -> Vec<String> {
        let mut columns = self.axis_columns();
        columns.push("seed".into());
        columns.extend(self.metric_names.iter().cloned());
        columns
    }

    /// The swept keys, in axis order.
    pub fn axis_columns(&self) -> Vec<String> {
        self.axes.iter().flat_map(|a| a.keys.iter().cloned()).collect()
    }

    fn check_sample(&self) -> Result<(), SweepError> {
        let continuous = self.axes.iter().find(|a| a.positions().is_none());
        match (&self.source.file.sample, continuous) {
            (Some(s), _) if s.get_ref().points == 0 => Err(SweepError::at_line(
                &self.source.path,
                self.source.line(s.span().start),
                "[sample]: `points` must be at least 1",
            )),
            (None, Some(axis)) => Err(SweepError::at_line(
                &self.source.path,
                axis.line,
                format!("[[axis]]: `{}`: a range without `count` or `step` is continuous; give one, or draw points from it with [sample]", axis.label),
            )),
            _ => Ok(()),
        }
    }

    fn plan(&mut self, scenario_seed: u64, yes: bool) -> Result<(), SweepError> {
        let seeds = plan::seeds(&self.source, scenario_seed)?;
        let sample = self.source.file.sample.as_ref().map(|s| s.get_ref().clone());
        let runs = plan::count(&self.axes, sample.as_ref(), seeds.len());
        if runs > LARGE_SWEEP && !yes {
            let shown = if runs == u64::MAX { "more than 18 x 10^18".to_string() } else { runs.to_string() };
            return Err(SweepError::in_file(
                &self.source.path,
                format!(
                    "{shown} runs; a sweep of more than {LARGE_SWEEP} runs needs --yes (or a [sample] of fewer points)"
                ),
            ));
        }
        if runs > usize::MAX as u64 / 2 {
            return Err(SweepError::in_file(
                &self.source.path,
                format!("{runs} runs cannot be listed on this machine"),
            ));
        }
        self.points = plan::points(&self.axes, sample.as_ref(), &seeds);
        Ok(())
    }

    /// Every value of every axis must make a valid scenario on its own (a grid or continuous range is
    /// checked at its ends), so a typo fails before any run, at the axis that holds it.
    fn check_axis_values(&self) -> Result<(), SweepError> {
        for axis in &self.axes {
            let positions: Vec<Vec<toml::Value>> = match axis.positions() {
                Some(len) if matches!(axis.domain, crate::axes::Domain::List(_)) => {
                    (0..len).map(|i| axis.at(i)).collect()
                }
                _ => vec![axis.at_fraction(0.0), axis.at_fraction(1.0)],
            };
            for values in positions {
                let sets: Vec<String> = axis.keys.iter().zip(&values).map(|(k, v)| format!("{k}={v}")).collect();
                let checked =
                    self.scenario(&sets, None).and_then(|s| resolve(&s).map(|_| ()).map_err(|e| e.to_string()));
                checked.map_err(|e| {
                    SweepError::at_line(&self.source.path, axis.line, format!("[[axis]] {}: {e}", sets.join(" ")))
                })?;
            }
        }
        Ok(())
    }

    fn pick_rules(&mut self, options: &SweepOptions) -> Result<(), SweepError> {
        let file = &self.source.file;
        let from_file = format!("{}: best", self.source.path.display());
        let (best, best_arg) = match (&options.best, &file.best) {
            (Some(text), _) => (Some(text.clone()), "--best".to_string()),
            (None, Some(text)) => (Some(text.clone()), from_file),
            (None, None) => (None, String::new()),
        };
        let (constraints, constraint_arg) = match options.subject_to.is_empty() {
            false => (options.subject_to.clone(), "--subject-to".to_string()),
            true => (file.subject_to.clone(), format!("{}: subject_to", self.source.path.display())),
        };
        self.objective = best.map(|text| pick::objective(&text, &best_arg)).transpose()?;
        self.constraints =
            constraints.iter().map(|text| pick::constraint(text, &constraint_arg)).collect::<Result<_, _>>()?;
        let columns = self.columns();
        let objective = self.objective.iter().map(|o| (&o.expr, format!("{best_arg} \"{}\"", o.text)));
        let sides = self.constraints.iter().flat_map(|c| {
            let argument = format!("{constraint_arg} \"{}\"", c.text);
            [(&c.left, argument.clone()), (&c.right, argument)]
        });
        pick::check_columns(objective.chain(sides), &columns)
    }

    /// Where results go by default: `results/<name>`.
    pub fn default_out(&self) -> PathBuf {
        Path::new("results").join(&self.name)
    }

    /// The scenario's base directory as seen from `dir`, for files written there.
    pub fn base_dir_from(&self, dir: &Path) -> PathBuf {
        pathdiff::diff_paths(canonical(&self.base_dir), canonical(dir)).unwrap_or_else(|| self.base_dir.clone())
    }
}

fn bucket_labels(resolved: &Resolved) -> Vec<String> {
    sluice_results::Buckets::new(resolved.scenario.output.buckets.clone()).map(|b| b.labels()).unwrap_or_default()
}
