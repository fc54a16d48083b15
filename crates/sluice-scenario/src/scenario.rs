//! The loaded scenario, and how it points errors back at the text they came from.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_core::Rate;
use sluice_sim::config::{EcnThresholds, HostConfig, LinkConfig, SwitchConfig};
use sluice_topo::TopologySpec;
use sluice_workload::WorkloadSpec;
use toml_edit::ImDocument;

use crate::error::{Location, ScenarioError};
use crate::fault::FaultSpec;
use crate::locate::{self, dotted, KeyPath};
use crate::overrides::SetArg;
use crate::schema::{CcSpec, OutputSpec, SimulationSpec};

/// A scenario file, deserialized and checked, with every default that does not depend on the topology
/// or the algorithm filled in.
///
/// Equality compares the settings, not where they came from (`source` and the text are ignored), so the
/// scenario of a [`crate::Resolved`] equals the one loaded back from its [`crate::resolved_toml`] text.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Run name (`name`; default the file stem).
    pub name: String,
    /// Seed of every random stream (`seed`; default 1).
    pub seed: u64,
    /// `[simulation]`: when the run stops.
    pub simulation: SimulationSpec,
    /// `[topology]`.
    pub topology: TopologySpec,
    /// `[link]`: packet sizes on the wire.
    pub link: LinkConfig,
    /// `[switch]`. As loaded, `ecn.thresholds` holds every `[[switch.ecn.thresholds]]` entry of the file;
    /// [`crate::resolve`] keeps those of the chosen algorithm (filling them from its defaults when there are
    /// none) and moves the others to [`Scenario::ecn_unused`].
    pub switch: SwitchConfig,
    /// The algorithm each entry of `switch.ecn.thresholds` is for, entry for entry (`None`: every algorithm
    /// without entries of its own).
    pub ecn_algorithms: Vec<Option<String>>,
    /// After [`crate::resolve`]: the ECN threshold entries written for other algorithms, with the algorithm
    /// each is for; unused by the run, kept so that the resolved scenario still holds them.
    pub ecn_unused: Vec<(Option<String>, Rate, EcnThresholds)>,
    /// `[host]`.
    pub host: HostConfig,
    /// `[[workload]]` entries, in file order (at least one).
    pub workloads: Vec<WorkloadSpec>,
    /// `[cc]`.
    pub cc: CcSpec,
    /// `[plane]`: where the CC algorithm runs (native or offloaded) and the channel's costs.
    pub plane: sluice_plane::PlaneConfig,
    /// `[output]`, with `dir` filled in.
    pub output: OutputSpec,
    /// `[[fault]]` entries, in file order; after [`crate::resolve`], each with its port filled in.
    pub faults: Vec<FaultSpec>,
    /// The scenario file (or the origin name given to [`crate::load_str`]).
    pub source: PathBuf,
    /// Absolute directory that relative file names (flow lists, CDF files, topology files) resolve
    /// against: the scenario file's directory unless the file sets `base_dir`.
    pub base_dir: PathBuf,
    /// The text and overrides the scenario was read from, for locating later errors.
    pub(crate) provenance: Provenance,
}

impl PartialEq for Scenario {
    fn eq(&self, other: &Scenario) -> bool {
        self.name == other.name
            && self.seed == other.seed
            && self.simulation == other.simulation
            && self.topology == other.topology
            && self.link == other.link
            && self.switch_without_ecn_entries() == other.switch_without_ecn_entries()
            && self.ecn_entries() == other.ecn_entries()
            && self.host == other.host
            && self.workloads == other.workloads
            && self.cc == other.cc
            && self.output == other.output
            && self.faults == other.faults
            && self.base_dir == other.base_dir
    }
}

impl Scenario {
    /// Every ECN threshold entry with the algorithm it is for: those in force, then the unused ones.
    pub fn ecn_entries(&self) -> Vec<(Option<String>, Rate, EcnThresholds)> {
        let tags = self.ecn_algorithms.iter().cloned().chain(std::iter::repeat(None));
        let in_force = self.switch.ecn.thresholds.iter().zip(tags).map(|(&(rate, t), tag)| (tag, rate, t));
        in_force.chain(self.ecn_unused.iter().cloned()).collect()
    }

    fn switch_without_ecn_entries(&self) -> SwitchConfig {
        let mut switch = self.switch.clone();
        switch.ecn.thresholds.clear();
        switch
    }

    /// An error about the dotted key `key` (empty: the scenario as a whole), located at the line that
    /// wrote it or the `--set` that overrode it.
    pub fn error_at(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        let path: KeyPath = if key.is_empty() { Vec::new() } else { key.split('.').map(String::from).collect() };
        self.provenance.error(&self.source, &path, message)
    }
}

/// The text a scenario was read from and the overrides applied to it.
#[derive(Clone, Default)]
pub(crate) struct Provenance {
    /// The file's text before overrides.
    pub text: Arc<str>,
    /// The `--set` overrides, in the order applied.
    pub sets: Vec<SetArg>,
}

impl fmt::Debug for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sets: Vec<&str> = self.sets.iter().map(|s| s.arg.as_str()).collect();
        f.debug_struct("Provenance").field("text_bytes", &self.text.len()).field("sets", &sets).finish()
    }
}

impl Provenance {
    /// An error about `path`, located.
    pub fn error(&self, file: &Path, path: &[String], message: impl Into<String>) -> ScenarioError {
        let key = (!path.is_empty()).then(|| dotted(path));
        ScenarioError::new(self.locate(file, path), key, message)
    }

    /// Where `path` was written: the last `--set` of the key or of a table holding it; else the file line
    /// holding the key; else a `--set` of something inside the key; else the line of the nearest
    /// enclosing table the file has; else the file.
    pub fn locate(&self, file: &Path, path: &[String]) -> Location {
        if let Some(set) = self.sets.iter().rev().find(|s| path.starts_with(&s.path)) {
            return set.location();
        }
        let found = match ImDocument::parse(&*self.text) {
            Ok(doc) => locate::find(&doc, path),
            Err(_) => locate::Found { depth: 0, line: None },
        };
        if found.depth == path.len() && !path.is_empty() {
            if let Some(line) = found.line {
                return Location::Line { file: file.to_path_buf(), line };
            }
        }
        if let Some(set) = self.sets.iter().rev().find(|s| s.path.starts_with(path) && !path.is_empty()) {
            return set.location();
        }
        match found.line {
            Some(line) => Location::Line { file: file.to_path_buf(), line },
            None => Location::File(file.to_path_buf()),
        }
    }
}
