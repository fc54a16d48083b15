//! The bridge to the workload generators.

use sluice_topo::Topology;
use sluice_workload::{FlowSpec, WorkloadContext, WorkloadError};

use crate::scenario::Scenario;

/// Every flow of the scenario's workloads on `topology`, Poisson loads taken as fractions of host 0's NIC
/// rate.
pub(crate) fn flows(s: &Scenario, topology: &Topology) -> Result<Vec<FlowSpec>, WorkloadError> {
    let ctx = WorkloadContext {
        n_hosts: topology.num_hosts(),
        host_rate: topology.nic(0).rate,
        rack_of: &topology.rack_of,
        seed: s.seed,
        base_dir: &s.base_dir,
    };
    sluice_workload::generate(&s.workloads, &ctx)
}

/// The `kind`s a `[[workload]]` entry accepts, in the order the workload crate declares them.
pub(crate) const WORKLOAD_KINDS: [&str; 6] = ["poisson", "incast", "permutation", "all_to_all", "long_lived", "flow_list"];

/// The workload generator kinds, for `sluice list`.
pub(crate) fn workload_kinds() -> &'static [&'static str] {
    &WORKLOAD_KINDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_workload::WorkloadSpec;

    /// The list matches what the workload deserializer accepts: its "unknown variant" message names
    /// exactly these kinds.
    #[test]
    fn kinds_match_the_deserializer() {
        let mut probe = toml::Table::new();
        probe.insert("kind".into(), toml::Value::String("no_such_kind".into()));
        let err = toml::Value::Table(probe).try_into::<WorkloadSpec>().unwrap_err().message().to_string();
        let listed: Vec<&str> = err.split('`').skip(3).step_by(2).collect();
        assert_eq!(listed, WORKLOAD_KINDS, "{err}");
    }
}
