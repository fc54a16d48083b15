//! `cc.workloads`: several algorithms in one network (coexistence). Entry `i` names the algorithm of
//! workload entry `i`'s flows; each takes its parameters from its `[cc.<algorithm>]` table (the run's
//! own algorithm, `cc.algorithm`, also takes `[cc.params]`).
//!
//! ```toml
//! [cc]
//! algorithm = "dctcp"              # the run's algorithm: its ECN thresholds, its host models
//! workloads = ["dctcp", "cubic"]   # workload 0's flows run DCTCP, workload 1's CUBIC
//! ```
//!
//! A single flow may name its own algorithm too: a long-lived flow's `algorithm` key, a flow list's
//! fifth column. It takes its parameters from its table the same way.
//!
//! The switches give the mix what each member needs (ECN marking, INT, Bolt's logic). Token algorithms
//! carry their own transport and do not mix with other algorithms.

use std::sync::Arc;

use sluice_cc::{Algorithm, Factory, Needs};
use sluice_core::Rate;

use sluice_workload::RowAlgorithm;

use crate::error::ScenarioError;
use crate::scenario::Scenario;

/// The algorithms of a mixed run, resolved.
pub struct Mix {
    /// Each algorithm other than the run's that some workload or flow runs, with its controllers'
    /// factory, in the order `cc.workloads` and then single flows first name them.
    pub others: Vec<(&'static Algorithm, Arc<dyn Factory>)>,
    /// Per workload entry: 0 for the run's algorithm, `k` for `others[k - 1]`.
    pub of_workload: Vec<u8>,
    /// Per algorithm single flows name (`FlowSpec::algorithm` `j` is entry `j - 1`): 0 for the run's
    /// algorithm, `k` for `others[k - 1]`.
    pub of_row: Vec<u8>,
}

impl Mix {
    /// What every algorithm of the run needs from the switches together with `main`'s.
    pub fn needs(&self, main: Needs) -> Needs {
        self.others.iter().fold(main, |n, (a, _)| n.union(a.needs))
    }

    /// The names of the run's algorithms, the run's first, for messages.
    pub fn names(&self, main: &str) -> String {
        std::iter::once(main).chain(self.others.iter().map(|(a, _)| a.name)).collect::<Vec<_>>().join(" + ")
    }
}

/// Resolves `cc.workloads` and the algorithms single flows name (`rows`; `None` when the scenario
/// does not mix algorithms): registered algorithms, built at `line_rate`, none of them a token algorithm
/// unless all are the same.
pub(crate) fn resolve(
    s: &Scenario,
    main: &'static Algorithm,
    main_factory: &Arc<dyn Factory>,
    line_rate: Rate,
    rows: &[RowAlgorithm],
) -> Result<Option<Mix>, ScenarioError> {
    let names = &s.cc.workloads;
    if names.is_empty() && rows.is_empty() {
        return Ok(None);
    }
    let mut mix = Mix { others: Vec::new(), of_workload: vec![0; s.workloads.len()], of_row: Vec::new() };
    if !names.is_empty() {
        mix.of_workload = per_workload(s, main, line_rate, &mut mix.others)?;
    }
    for row in rows {
        let unknown = || crate::resolve::workload_error(s, row.error(unknown_algorithm(&row.name)));
        let algorithm = sluice_cc::lookup(&row.name).ok_or_else(unknown)?;
        mix.of_row.push(mix_index(s, main, algorithm, line_rate, &mut mix.others)? as u8);
    }
    let token = |f: &Arc<dyn Factory>| f.token_transport().is_some();
    if !mix.others.is_empty() && (token(main_factory) || mix.others.iter().any(|(_, f)| token(f))) {
        let message = format!(
            "{} cannot share a network: token algorithms run their own transport, which other algorithms do not \
             speak; mix sender-driven algorithms only",
            mix.names(main.name)
        );
        if !names.is_empty() {
            return Err(s.error_at("cc.workloads", message));
        }
        let is_token = |row: &&RowAlgorithm| sluice_cc::lookup(&row.name).is_some_and(|a| a.needs.token_transport);
        let row = rows.iter().find(is_token).unwrap_or(&rows[0]);
        return Err(crate::resolve::workload_error(s, row.error(message)));
    }
    Ok(Some(mix))
}

fn unknown_algorithm(name: &str) -> String {
    format!("unknown algorithm {name:?} (`sluice list` names them)")
}

/// The index of `algorithm` in a mix whose other algorithms are `others` (0: the run's), adding it,
/// built from its table, when it is new.
fn mix_index(
    s: &Scenario,
    main: &'static Algorithm,
    algorithm: &'static Algorithm,
    line_rate: Rate,
    others: &mut Vec<(&'static Algorithm, Arc<dyn Factory>)>,
) -> Result<usize, ScenarioError> {
    if algorithm.name == main.name {
        return Ok(0);
    }
    if let Some(k) = others.iter().position(|(a, _)| a.name == algorithm.name) {
        return Ok(k + 1);
    }
    let factory = (algorithm.build)(&s.cc.params_for(algorithm.name), line_rate)
        .map_err(|e| crate::resolve::param_error(s, algorithm.name, e))?;
    others.push((algorithm, factory));
    Ok(others.len())
}

/// `cc.workloads`: one algorithm per workload entry.
fn per_workload(
    s: &Scenario,
    main: &'static Algorithm,
    line_rate: Rate,
    others: &mut Vec<(&'static Algorithm, Arc<dyn Factory>)>,
) -> Result<Vec<u8>, ScenarioError> {
    let names = &s.cc.workloads;
    if names.len() != s.workloads.len() {
        let message = format!(
            "names {} algorithms for {} workload entries: give one per [[workload]], in order",
            names.len(),
            s.workloads.len()
        );
        return Err(s.error_at("cc.workloads", message));
    }
    let mut of_workload = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let key = format!("cc.workloads.{i}");
        let algorithm = sluice_cc::lookup(name).ok_or_else(|| s.error_at(&key, unknown_algorithm(name)))?;
        of_workload.push(mix_index(s, main, algorithm, line_rate, others)? as u8);
    }
    Ok(of_workload)
}
