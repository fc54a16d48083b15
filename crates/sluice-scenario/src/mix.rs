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
//! The switches give the mix what each member needs (ECN marking, INT, Bolt's logic). Token algorithms
//! carry their own transport and do not mix with other algorithms.

use std::sync::Arc;

use sluice_cc::{Algorithm, Factory, Needs};
use sluice_core::Rate;

use crate::error::ScenarioError;
use crate::scenario::Scenario;

/// The algorithms of a mixed run, resolved.
pub struct Mix {
    /// Each algorithm other than the run's that some workload runs, with its controllers' factory, in
    /// the order `cc.workloads` first names them.
    pub others: Vec<(&'static Algorithm, Arc<dyn Factory>)>,
    /// Per workload entry: 0 for the run's algorithm, `k` for `others[k - 1]`.
    pub of_workload: Vec<u8>,
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

/// Resolves `cc.workloads` (`None` when the scenario does not mix algorithms): one registered
/// algorithm per workload entry, built at `line_rate`, none of them a token algorithm unless all are
/// the same.
pub(crate) fn resolve(
    s: &Scenario,
    main: &'static Algorithm,
    main_factory: &Arc<dyn Factory>,
    line_rate: Rate,
) -> Result<Option<Mix>, ScenarioError> {
    let names = &s.cc.workloads;
    if names.is_empty() {
        return Ok(None);
    }
    if names.len() != s.workloads.len() {
        let message = format!(
            "names {} algorithms for {} workload entries: give one per [[workload]], in order",
            names.len(),
            s.workloads.len()
        );
        return Err(s.error_at("cc.workloads", message));
    }
    let mut mix = Mix { others: Vec::new(), of_workload: Vec::with_capacity(names.len()) };
    for (i, name) in names.iter().enumerate() {
        let key = format!("cc.workloads.{i}");
        let algorithm = sluice_cc::lookup(name)
            .ok_or_else(|| s.error_at(&key, format!("unknown algorithm {name:?} (`sluice list` names them)")))?;
        let index = if algorithm.name == main.name {
            0
        } else if let Some(k) = mix.others.iter().position(|(a, _)| a.name == algorithm.name) {
            k + 1
        } else {
            let factory = (algorithm.build)(&s.cc.params_for(algorithm.name), line_rate)
                .map_err(|e| crate::resolve::param_error(s, algorithm.name, e))?;
            mix.others.push((algorithm, factory));
            mix.others.len()
        };
        mix.of_workload.push(index as u8);
    }
    let token = |f: &Arc<dyn Factory>| f.token_transport().is_some();
    if !mix.others.is_empty() && (token(main_factory) || mix.others.iter().any(|(_, f)| token(f))) {
        let message = format!(
            "{} cannot share a network: token algorithms run their own transport, which other algorithms do not \
             speak; mix sender-driven algorithms only",
            mix.names(main.name)
        );
        return Err(s.error_at("cc.workloads", message));
    }
    Ok(Some(mix))
}
