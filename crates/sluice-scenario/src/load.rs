//! Reading a scenario: TOML syntax, `--set` overrides, deserialization and the checks that need
//! neither the topology nor the algorithm.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, ImDocument};

use crate::error::{Location, ScenarioError};
use crate::locate::{self, KeyPath};
use crate::overrides::{self, SetArg};
use crate::scenario::{Provenance, Scenario};
use crate::schema::ScenarioFile;
use crate::validate;

/// Reads the scenario file at `path`, applies `overrides` (`--set key=value` arguments, without the
/// `--set`), and checks it. `seed_override` (the command line's `--seed`) replaces the file's seed.
///
/// Relative file names inside the scenario resolve against the file's directory; the run's name
/// defaults to the file stem.
pub fn load(path: &Path, overrides: &[String], seed_override: Option<u64>) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::new(Location::File(path.to_path_buf()), None, format!("cannot read the scenario file: {e}"))
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let scenario = read(&text, path, dir, overrides)?;
    match seed_override {
        Some(seed) => override_seed(scenario, seed),
        None => Ok(scenario),
    }
}

/// Replaces the scenario's seed, as `--seed` does (errors name the argument: `--seed 5`); for scenarios
/// read with [`load_str`].
pub fn override_seed(mut scenario: Scenario, seed: u64) -> Result<Scenario, ScenarioError> {
    validate::seed(seed).map_err(|m| ScenarioError::new(Location::Argument(format!("--seed {seed}")), None, m))?;
    scenario.seed = seed;
    Ok(scenario)
}

/// Reads a scenario from `text`. `origin_name` names it in error messages (and gives the default run
/// name, its file stem); relative file names resolve against `base_dir`.
pub fn load_str(
    text: &str,
    origin_name: &str,
    base_dir: &Path,
    overrides: &[String],
) -> Result<Scenario, ScenarioError> {
    read(text, Path::new(origin_name), base_dir, overrides)
}

/// `text` with `overrides` (`--set` arguments) applied, comments and layout kept: what a scenario file
/// holding those settings looks like. Errors name `origin` (syntax) or the override at fault; the result
/// is not checked beyond that (load it to check it).
pub fn apply_sets(text: &str, origin: &Path, overrides: &[String]) -> Result<String, ScenarioError> {
    let sets = overrides.iter().map(|arg| overrides::parse(arg)).collect::<Result<Vec<SetArg>, _>>()?;
    apply_overrides(text, origin, &sets)
}

fn read(text: &str, source: &Path, dir: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let sets = overrides.iter().map(|arg| overrides::parse(arg)).collect::<Result<Vec<SetArg>, _>>()?;
    let provenance = Provenance { text: text.into(), sets };
    let effective = apply_overrides(text, source, &provenance.sets)?;
    let file: ScenarioFile =
        toml::from_str(&effective).map_err(|e| deserialize_error(&e, &effective, source, &provenance))?;
    let scenario = into_scenario(file, source, dir, provenance);
    validate::scenario(&scenario)?;
    Ok(scenario)
}

/// Parses the text (reporting syntax errors) and returns it with the overrides applied.
fn apply_overrides(text: &str, source: &Path, sets: &[SetArg]) -> Result<String, ScenarioError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| syntax_error(&e, text, source))?;
    if sets.is_empty() {
        return Ok(text.to_string());
    }
    for set in sets {
        overrides::apply(&mut doc, set)?;
    }
    Ok(doc.to_string())
}

fn syntax_error(e: &toml_edit::TomlError, text: &str, source: &Path) -> ScenarioError {
    let detail: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let (location, message) = match e.span() {
        Some(span) => {
            let line = locate::line_of(text, span.start);
            let column = span.start - text[..span.start].rfind('\n').map_or(0, |i| i + 1) + 1;
            let location = Location::Line { file: source.to_path_buf(), line };
            (location, format!("TOML syntax error at column {column}: {}", detail.join("; ")))
        }
        None => (Location::File(source.to_path_buf()), format!("TOML syntax error: {}", detail.join("; "))),
    };
    ScenarioError::new(location, None, message)
}

/// Locates a serde error: the key path at its span (narrowed by the message when serde blamed a whole
/// table), then the line or `--set` that wrote that key.
fn deserialize_error(e: &toml::de::Error, effective: &str, source: &Path, provenance: &Provenance) -> ScenarioError {
    let path: KeyPath = match (ImDocument::parse(effective), e.span()) {
        (Ok(doc), Some(span)) => locate::refine(&doc, &locate::path_at(&doc, &span), e.message()),
        _ => Vec::new(),
    };
    let message = explain(e.message(), &path);
    if path.is_empty() && provenance.sets.is_empty() {
        let location = match e.span() {
            Some(span) if span.start > 0 => {
                Location::Line { file: source.to_path_buf(), line: locate::line_of(effective, span.start) }
            }
            _ => Location::File(source.to_path_buf()),
        };
        return ScenarioError::new(location, None, message);
    }
    provenance.error(source, &path, message)
}

/// Rewords serde messages where the raw one would puzzle a newcomer.
fn explain(message: &str, path: &[String]) -> String {
    match (message, path.is_empty()) {
        ("missing field `topology`", true) => {
            "missing [topology] table: every scenario describes its network, e.g. kind = \"fat_tree\", k = 4, \
             host_rate = \"100Gbps\""
                .to_string()
        }
        _ => message.to_string(),
    }
}

fn into_scenario(file: ScenarioFile, source: &Path, dir: &Path, provenance: Provenance) -> Scenario {
    let name = file.name.unwrap_or_else(|| stem(source));
    let mut output = file.output;
    if output.dir.as_os_str().is_empty() {
        output.dir = Path::new("results").join(&name);
    }
    let base_dir = absolute(&match file.base_dir {
        Some(base) => dir.join(base),
        None => dir.to_path_buf(),
    });
    let ecn_algorithms = file.switch.ecn.thresholds.iter().map(|t| t.algorithm.clone()).collect();
    Scenario {
        name,
        seed: file.seed,
        simulation: file.simulation,
        topology: file.topology,
        link: file.link,
        switch: file.switch.into(),
        ecn_algorithms,
        ecn_unused: Vec::new(),
        host: file.host,
        workloads: file.workload,
        cc: file.cc,
        plane: file.plane,
        output,
        faults: file.fault,
        source: source.to_path_buf(),
        base_dir,
        provenance,
    }
}

/// The file stem, or `"scenario"` when the origin has none.
fn stem(source: &Path) -> String {
    source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario".to_string())
}

/// `dir` made absolute against the current directory (without resolving links).
fn absolute(dir: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}
