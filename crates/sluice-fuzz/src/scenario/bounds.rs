//! Size bounds that keep a fuzz input small: the scenario layer refuses only what would not fit the
//! machine, and a fuzzer spending seconds on one large but valid network finds nothing else.

use std::path::Path;

use sluice_core::Rate;
use sluice_scenario::Scenario;
use sluice_topo::TopologySpec;
use sluice_workload::{SizeCdf, WorkloadContext, WorkloadSpec};

use crate::is_contained;

/// Most nodes of a fuzzed topology.
pub const MAX_NODES: u64 = 512;
/// Most flows a fuzzed scenario may generate (an estimate for Poisson workloads).
pub const MAX_FLOWS: f64 = 20_000.0;
/// Hosts and host rate assumed for a topology file: the files in `data/` have fewer and slower.
const FILE_HOSTS: u64 = 16;
const FILE_HOST_RATE: Rate = 400_000_000_000;

/// Whether the scenario is small enough to resolve and names only files inside `dir`. Sizes come from the
/// layers that own them: the topology's [`TopologySpec::generated_size`] and each workload's
/// [`WorkloadSpec::flow_count`].
pub fn within(scenario: &Scenario, dir: &Path) -> bool {
    if scenario.base_dir != dir || !names_only_data_files(scenario) {
        return false;
    }
    let (nodes, hosts) = match scenario.topology {
        TopologySpec::File { .. } => (FILE_HOSTS * 2, FILE_HOSTS),
        // A fat-tree whose parameters do not check is refused by the resolver before anything is built.
        ref spec => spec.generated_size().unwrap_or((0, 0)),
    };
    if nodes > MAX_NODES {
        return false;
    }
    let ctx = WorkloadContext {
        n_hosts: hosts as u32,
        host_rate: host_rate(&scenario.topology),
        rack_of: &[],
        seed: scenario.seed,
        base_dir: dir,
    };
    let flows = scenario.workloads.iter().map(|w| expected_flows(w, &ctx)).fold(0.0, |sum, n| sum + n);
    // NaN (a NaN load or scale) fails the comparison with the bound: such inputs are skipped.
    flows <= MAX_FLOWS
}

/// The entry's flow count, Poisson's doubled for the drawn count's tail; an entry that does not check
/// counts none (the resolver refuses it before generating).
fn expected_flows(workload: &WorkloadSpec, ctx: &WorkloadContext) -> f64 {
    let tail = if matches!(workload, WorkloadSpec::Poisson { .. }) { 2.0 } else { 1.0 };
    workload.flow_count(ctx).map_or(0.0, |count| tail * count as f64)
}

/// Whether every file the scenario names (topology, CDF, flow list) lies inside the data folder: a path
/// such as `/dev/zero` would be read before any check.
fn names_only_data_files(scenario: &Scenario) -> bool {
    let topology = match &scenario.topology {
        TopologySpec::File { path } => is_contained(path),
        _ => true,
    };
    topology
        && scenario.workloads.iter().all(|w| match w {
            WorkloadSpec::Poisson { cdf, .. } | WorkloadSpec::ClosedLoop { cdf, .. } => {
                SizeCdf::builtin(cdf).is_ok() || is_contained(cdf)
            }
            WorkloadSpec::FlowList { path } => is_contained(path),
            _ => true,
        })
}

/// The NIC rate of the topology's hosts (for Poisson loads); an assumed one for topology files.
fn host_rate(spec: &TopologySpec) -> Rate {
    match *spec {
        TopologySpec::FatTree { host_rate, .. }
        | TopologySpec::LeafSpine { host_rate, .. }
        | TopologySpec::Dumbbell { host_rate, .. } => host_rate,
        TopologySpec::Star { rate, .. } => rate,
        TopologySpec::File { .. } => FILE_HOST_RATE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data_dir;

    fn within_bounds(topology: &str, workload: &str) -> bool {
        let text = format!("[topology]\n{topology}\n\n[[workload]]\n{workload}\n");
        let scenario = sluice_scenario::load_str(&text, "bounds.toml", &data_dir(), &[])
            .unwrap_or_else(|e| panic!("the test scenario loads: {e}\n{text}"));
        within(&scenario, &data_dir())
    }

    const STAR: &str = "kind = \"star\"\nhosts = 4\nrate = \"100Gbps\"";
    const INCAST: &str = "kind = \"incast\"\nreceiver = 0\nsize = \"1KB\"";

    #[test]
    fn small_networks_pass_and_large_ones_are_skipped() {
        assert!(within_bounds(STAR, INCAST));
        assert!(within_bounds("kind = \"fat_tree\"\nk = 4\nhost_rate = \"100Gbps\"", INCAST));
        assert!(!within_bounds("kind = \"fat_tree\"\nk = 16\nhost_rate = \"100Gbps\"", INCAST));
        assert!(!within_bounds("kind = \"star\"\nhosts = 60000\nrate = \"100Gbps\"", INCAST));
    }

    #[test]
    fn workloads_with_too_many_flows_are_skipped() {
        assert!(!within_bounds(STAR, &format!("{INCAST}\nperiod = \"1us\"\nrepeats = 4000000000")));
        let poisson = "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration = \"10us\"";
        assert!(within_bounds(STAR, poisson));
        assert!(!within_bounds(STAR, &format!("{poisson}\nsize_scale = 0.000001")));
        assert!(!within_bounds(STAR, "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration = \"1s\""));
    }

    #[test]
    fn only_files_of_the_data_folder_are_named() {
        assert!(within_bounds("kind = \"file\"\npath = \"diamond.toml\"", INCAST));
        assert!(!within_bounds("kind = \"file\"\npath = \"/dev/zero\"", INCAST));
        assert!(!within_bounds("kind = \"file\"\npath = \"../Cargo.toml\"", INCAST));
        assert!(!within_bounds(STAR, "kind = \"flow_list\"\npath = \"/etc/hostname\""));
        assert!(within_bounds(STAR, "kind = \"flow_list\"\npath = \"fairness8_flows.csv\""));
        let closed = "kind = \"closed_loop\"\nflows_per_pair = 2\nduration = \"10us\"";
        assert!(within_bounds(STAR, &format!("{closed}\ncdf = \"websearch\"")));
        assert!(!within_bounds(STAR, &format!("{closed}\ncdf = \"/dev/zero\"")));
    }
}
