//! The bridge to the workload generators.

use sluice_topo::Topology;
use sluice_workload::{Workload, WorkloadContext, WorkloadError};

use crate::scenario::Scenario;

/// Every flow of the scenario's workloads on `topology`, Poisson loads taken as fractions of host 0's NIC
/// rate, and the closed loops that add flows during a run.
pub(crate) fn workload(s: &Scenario, topology: &Topology) -> Result<Workload, WorkloadError> {
    let ctx = WorkloadContext {
        n_hosts: topology.num_hosts(),
        host_rate: topology.nic(0).rate,
        rack_of: &topology.rack_of,
        seed: s.seed,
        base_dir: &s.base_dir,
    };
    sluice_workload::generate_workload(&s.workloads, &ctx)
}

/// The `kind`s a `[[workload]]` entry accepts, in the order the workload crate declares them, each with
/// a one-line description (from the documentation of `sluice_workload::WorkloadSpec`).
pub(crate) const WORKLOAD_KINDS: [(&str, &str); 7] = [
    ("poisson", "open-loop Poisson arrivals at every host, sizes from a CDF, a load fraction of the NIC rate"),
    ("incast", "many senders to one receiver at once, optionally repeated every period"),
    ("permutation", "every host sends one flow to one other host and receives exactly one"),
    ("all_to_all", "every host sends one flow to every other host"),
    ("long_lived", "flows without a size that send from start until stop"),
    ("closed_loop", "each sender keeps N flows active toward each receiver, starting the next as one completes"),
    ("flow_list", "flows listed in a CSV file: src,dst,size_bytes,start_ns"),
];

/// The workload generator kinds and their descriptions, for `sluice list`.
pub(crate) fn workload_kinds() -> &'static [(&'static str, &'static str)] {
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
        let ours: Vec<&str> = WORKLOAD_KINDS.iter().map(|(kind, _)| *kind).collect();
        assert_eq!(listed, ours, "{err}");
    }
}
