//! Size bounds that keep a fuzz input from asking for a huge network or billions of flows. Inputs over
//! them are skipped: the scenario layer itself does not bound these yet, and a fuzzer that runs out of
//! memory finds nothing else.

use std::path::Path;

use sluice_core::Rate;
use sluice_scenario::Scenario;
use sluice_topo::TopologySpec;
use sluice_workload::{SizeCdf, WorkloadSpec};

use crate::is_contained;

/// Most nodes of a fuzzed topology.
pub const MAX_NODES: u64 = 512;
/// Most flows a fuzzed scenario may generate (an estimate for Poisson workloads).
pub const MAX_FLOWS: f64 = 20_000.0;
/// Hosts and host rate assumed for a topology file: the files in `data/` have fewer and slower.
const FILE_HOSTS: u64 = 16;
const FILE_HOST_RATE: Rate = 400_000_000_000;

/// Whether the scenario is small enough to resolve and names only files inside `dir`.
pub fn within(scenario: &Scenario, dir: &Path) -> bool {
    let Some((nodes, hosts, rate)) = network_size(&scenario.topology) else { return false };
    if nodes > MAX_NODES || scenario.base_dir != dir {
        return false;
    }
    let mut flows = 0.0;
    for workload in &scenario.workloads {
        match workload_flows(workload, hosts, rate, dir) {
            Some(count) => flows += count,
            None => return false,
        }
    }
    flows <= MAX_FLOWS
}

/// Nodes, hosts and the host rate of the topology, or `None` for a file outside the data folder.
fn network_size(spec: &TopologySpec) -> Option<(u64, u64, Rate)> {
    let size = match *spec {
        TopologySpec::FatTree {
            k,
            pods,
            tors_per_pod,
            aggs_per_pod,
            hosts_per_tor,
            cores,
            oversubscription,
            host_rate,
            ..
        } => {
            let half = u64::from(k / 2);
            let pods = pods.map_or(u64::from(k), u64::from);
            let tors = tors_per_pod.map_or(half, u64::from);
            let aggs = aggs_per_pod.map_or(half, u64::from);
            let hosts = hosts_per_tor.map_or(half.saturating_mul(u64::from(oversubscription)), u64::from);
            let cores = cores.map_or(half.saturating_mul(half), u64::from);
            let tor_count = pods.saturating_mul(tors);
            let host_count = tor_count.saturating_mul(hosts);
            let nodes =
                host_count.saturating_add(tor_count).saturating_add(pods.saturating_mul(aggs)).saturating_add(cores);
            (nodes, host_count, host_rate)
        }
        TopologySpec::LeafSpine { hosts_per_tor, tors, spines, host_rate, .. } => {
            let hosts = u64::from(hosts_per_tor) * u64::from(tors);
            (hosts + u64::from(tors) + u64::from(spines), hosts, host_rate)
        }
        TopologySpec::Star { hosts, rate, .. } => (u64::from(hosts) + 1, u64::from(hosts), rate),
        TopologySpec::Dumbbell { left, right, host_rate, .. } => {
            let hosts = u64::from(left) + u64::from(right);
            (hosts + 2, hosts, host_rate)
        }
        TopologySpec::File { ref path } if is_contained(path) => (FILE_HOSTS * 2, FILE_HOSTS, FILE_HOST_RATE),
        TopologySpec::File { .. } => return None,
    };
    Some(size)
}

/// How many flows the entry generates (Poisson: the expected count, doubled for the tail), or `None`
/// when it names a file outside the data folder.
fn workload_flows(workload: &WorkloadSpec, hosts: u64, rate: Rate, dir: &Path) -> Option<f64> {
    let count = match workload {
        WorkloadSpec::Poisson { cdf, load, duration, hosts: list, size_scale, .. } => {
            let senders = list.as_ref().map_or(hosts, |l| l.len() as u64) as f64;
            let mean = cdf_mean(cdf, dir)? * size_scale.unwrap_or(1.0);
            let bytes = rate as f64 / 8.0 * load * (*duration as f64 / 1e12);
            2.0 * senders * bytes / mean
        }
        WorkloadSpec::Incast { senders, sender_list, repeats, .. } => {
            let count = sender_list.as_ref().map(|l| l.len() as u64).or(senders.map(u64::from));
            count.unwrap_or(hosts) as f64 * f64::from(*repeats)
        }
        WorkloadSpec::Permutation { .. } => hosts as f64,
        WorkloadSpec::AllToAll { hosts: list, .. } => {
            let n = list.as_ref().map_or(hosts, |l| l.len() as u64) as f64;
            n * n
        }
        WorkloadSpec::LongLived { flows } => flows.len() as f64,
        WorkloadSpec::FlowList { path } if is_contained(path) => 0.0,
        WorkloadSpec::FlowList { .. } => return None,
    };
    // NaN (a NaN load or scale) fails the comparison with the bound: such inputs are skipped.
    (count <= MAX_FLOWS).then_some(count)
}

/// The mean size of a builtin CDF or of a CDF file inside `dir`. An unreadable file gives an infinite
/// mean (no flows): the workload fails before generating any.
fn cdf_mean(cdf: &str, dir: &Path) -> Option<f64> {
    if let Ok(builtin) = SizeCdf::builtin(cdf) {
        return Some(builtin.mean());
    }
    if !is_contained(cdf) {
        return None;
    }
    Some(SizeCdf::from_file(dir.join(cdf)).map_or(f64::INFINITY, |c| c.mean()))
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
    }
}
