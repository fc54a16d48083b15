//! The sweep file: a base scenario, fixed settings, axes, seeds, an optional sample and an optional
//! objective, read with located errors.
//!
//! ```toml
//! scenario = "../scenarios/ws128.toml"   # relative to this file
//! seeds = 3                              # or a list: [1, 7, 9]
//! best = "p99(slowdown, <10KB)"          # optional; --best overrides it
//! subject_to = ["unfinished == 0"]
//!
//! [set]                                  # applied to every run, like --set
//! "cc.algorithm" = "dctcp"
//!
//! [[axis]]                               # a list of values
//! key = "cc.params.g"
//! values = [0.0625, 0.125]
//!
//! [[axis]]                               # a range: count (linear or log) or step
//! key = "workload.0.load"
//! range = { start = 0.3, stop = 0.8, step = 0.1 }
//!
//! [[axis]]                               # zipped: several keys move together
//! name = "algorithm"
//! zip = { "cc.algorithm" = ["dcqcn", "hpcc"], "host.rto_min" = ["1ms", "100us"] }
//!
//! [sample]                               # optional: N points instead of the whole grid
//! method = "latin_hypercube"             # or "random"
//! points = 20
//! seed = 1
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::error::{line_of, SweepError};

/// The sweep file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// The sweep's name (default: the file stem); names the default output directory.
    pub name: Option<String>,
    /// The base scenario, relative to the sweep file.
    pub scenario: Spanned<PathBuf>,
    /// Settings applied to every run, as `--set` would (dotted keys, quoted or nested).
    #[serde(default)]
    pub set: toml::Table,
    /// Repetitions: a count (the scenario's seed and the next ones) or a list of seeds.
    pub seeds: Option<Spanned<Seeds>>,
    /// The axes; their values combine as a grid unless `[sample]` picks points.
    #[serde(default)]
    pub axis: Vec<Spanned<AxisSpec>>,
    /// Sample points instead of running the whole grid.
    pub sample: Option<Spanned<SampleSpec>>,
    /// The objective that picks the best configuration (see [`crate::pick`]).
    pub best: Option<String>,
    /// Constraints the best configuration must satisfy.
    #[serde(default)]
    pub subject_to: Vec<String>,
}

/// Repetitions of every point.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Seeds {
    /// This many runs per point, seeded with the scenario's seed, the next, and so on.
    Count(u64),
    /// One run per point for each of these seeds.
    List(Vec<u64>),
}

/// One `[[axis]]` entry: `key` with `values` or `range`, or `zip` over several keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// The scenario key (a `--set` path) this axis varies.
    pub key: Option<String>,
    /// The values, in order.
    pub values: Option<Vec<Value>>,
    /// A numeric range.
    pub range: Option<RangeSpec>,
    /// Several keys that move together: a list of values per key, all of one length.
    pub zip: Option<toml::Table>,
    /// A label for a zipped axis (default: its keys joined with `+`).
    pub name: Option<String>,
}

/// A numeric range: `start` to `stop` inclusive, in `count` points or steps of `step`; without either it
/// is continuous and only a `[sample]` can draw from it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeSpec {
    /// First value.
    pub start: Value,
    /// Last value (inclusive).
    pub stop: Value,
    /// Number of points, `start` and `stop` included.
    pub count: Option<u64>,
    /// Distance between points (linear scale only).
    pub step: Option<Value>,
    /// `linear` (default) or `log` spacing.
    #[serde(default)]
    pub scale: Scale,
    /// A unit appended to every value (`"KB"` gives `"20KB"`), for keys that take sizes, rates or times.
    pub unit: Option<String>,
}

/// Spacing of a range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Evenly spaced values.
    #[default]
    Linear,
    /// Evenly spaced logarithms (`start` and `stop` must be positive).
    Log,
}

/// How `[sample]` picks points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Independent uniform draws (distinct grid points when every axis is discrete).
    Random,
    /// Latin-hypercube sampling: each axis is cut into `points` strata and each stratum is used once.
    LatinHypercube,
}

/// `[sample]`: draw `points` points instead of the whole grid.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleSpec {
    /// Random or Latin hypercube.
    pub method: Method,
    /// Number of points.
    pub points: u64,
    /// Seed of the draws (default 1): the same seed draws the same points.
    #[serde(default = "one")]
    pub seed: u64,
}

fn one() -> u64 {
    1
}

/// A sweep file, read.
#[derive(Debug, Clone)]
pub struct SweepSource {
    /// The sweep file's path, as given.
    pub path: PathBuf,
    /// Its text (error lines refer to it).
    pub text: String,
    /// Its content.
    pub file: SweepFile,
}

impl SweepSource {
    /// Reads and parses the sweep file at `path`.
    pub fn read(path: &Path) -> Result<SweepSource, SweepError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SweepError::in_file(path, format!("cannot read the sweep file: {e}")))?;
        SweepSource::parse(path, text)
    }

    /// Parses sweep text; `path` names it in errors and anchors relative paths.
    pub fn parse(path: &Path, text: String) -> Result<SweepSource, SweepError> {
        let file: SweepFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(1, |span| line_of(&text, span.start));
            SweepError::at_line(path, line, e.message().trim().to_string())
        })?;
        Ok(SweepSource { path: path.to_path_buf(), text, file })
    }

    /// The line of a byte offset of the text.
    pub fn line(&self, offset: usize) -> usize {
        line_of(&self.text, offset)
    }

    /// The sweep's name: `name`, else the file stem.
    pub fn name(&self) -> String {
        self.file.name.clone().unwrap_or_else(|| {
            self.path.file_stem().map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned())
        })
    }

    /// The base scenario's path, relative paths taken from the sweep file's directory.
    pub fn scenario_path(&self) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        dir.join(self.file.scenario.get_ref())
    }
}

/// A table of settings flattened to dotted keys: `{ cc = { algorithm = "x" } }` and
/// `{ "cc.algorithm" = "x" }` both give `cc.algorithm = "x"`. Arrays and scalars are leaves.
pub fn flatten(table: &toml::Table) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    flatten_into(table, "", &mut out);
    out
}

fn flatten_into(table: &toml::Table, prefix: &str, out: &mut BTreeMap<String, Value>) {
    for (key, value) in table {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Table(inner) => flatten_into(inner, &path, out),
            leaf => {
                out.insert(path, leaf.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SweepSource, SweepError> {
        SweepSource::parse(Path::new("s.toml"), text.to_string())
    }

    #[test]
    fn unknown_keys_are_located() {
        let err = parse("scenario = \"x.toml\"\n[[axis]]\nkey = \"a\"\nvalus = [1]\n").unwrap_err();
        assert_eq!(err.location, "s.toml:4", "{err}");
        assert!(err.message.contains("unknown field `valus`"), "{err}");
    }

    #[test]
    fn settings_flatten_either_way() {
        let s = parse("scenario = \"x.toml\"\n[set]\n\"cc.algorithm\" = \"dctcp\"\nhost = { rto_min = \"1ms\" }\n")
            .unwrap();
        let flat = flatten(&s.file.set);
        assert_eq!(flat["cc.algorithm"].as_str(), Some("dctcp"));
        assert_eq!(flat["host.rto_min"].as_str(), Some("1ms"));
    }

    #[test]
    fn the_scenario_is_found_beside_the_sweep_file() {
        let s = SweepSource::parse(Path::new("sweeps/a.toml"), "scenario = \"../scenarios/q.toml\"".into()).unwrap();
        assert_eq!(s.scenario_path(), Path::new("sweeps/../scenarios/q.toml"));
        assert_eq!(s.name(), "a");
    }
}
