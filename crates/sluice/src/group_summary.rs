//! The `groups` entry of `summary.json` for a run that mixes algorithms (`cc.workloads`, or flows that
//! name their own): per workload entry and algorithm, what its flows got, and how evenly the groups
//! shared the network.

use sluice_results::{jain_fairness, round6, Buckets, FlowRecord, Summary};
use sluice_scenario::{Mix, Resolved};
use sluice_sim::SimOutput;

/// The groups' figures, or `None` when every flow runs the same algorithm.
///
/// A group is the flows of one workload entry that run one algorithm: one per entry unless some of its
/// flows name their own algorithms, in entry order, then in the order of the run's algorithms.
///
/// Per group: `workload` (the entry's index), `algorithm`, `flows`, `unfinished`, the slowdown of its
/// sized flows (`slowdown_avg`, `slowdown_p50`, `slowdown_p99`, `null` without finished ones) overall and
/// per size bucket (`buckets`: `label`, `count`, `slowdown_avg`, `slowdown_p99`),
/// `goodput_bytes` (received in order, each byte once) and its `goodput_share` of all groups', the rate
/// its flows got (`mean_flow_gbps`: each started flow's received bytes over the time from its start to
/// its finish, or to the end of the run) and Jain's index over those rates (`jain_flow_gbps`), and its
/// long-lived flows' `long_lived_gbps`. Across groups: `jain_mean_flow_gbps`, Jain's index over the
/// groups' mean flow rates (1 when every algorithm's flows got the same rate on average).
pub fn group_summary(resolved: &Resolved, output: &SimOutput, buckets: &Buckets) -> Option<serde_json::Value> {
    let mix = resolved.mix.as_ref()?;
    let names: Vec<&str> =
        std::iter::once(resolved.algorithm.name).chain(mix.others.iter().map(|(a, _)| a.name)).collect();
    let total: u64 = output.flows.iter().map(|f| f.received).sum();
    // Records come in id order, the workload's flows first, as the workload streams them.
    let mut named = resolved.flows.iter().map(|spec| spec.algorithm);
    let of_flow: Vec<u8> = output.flows.iter().map(|f| algorithm_of(mix, f, named.next().unwrap_or(0))).collect();
    let mut means = Vec::with_capacity(mix.of_workload.len());
    let groups: Vec<serde_json::Value> = groups(mix, &output.flows, &of_flow)
        .into_iter()
        .map(|(workload, algorithm)| {
            let flows: Vec<FlowRecord> = output
                .flows
                .iter()
                .zip(&of_flow)
                .filter(|(f, &a)| f.group as usize == workload && a == algorithm)
                .map(|(f, _)| f.clone())
                .collect();
            let s = Summary::compute(&flows, &output.ports, &output.switches, &output.run, buckets);
            let goodput: u64 = flows.iter().map(|f| f.received).sum();
            let rates: Vec<f64> =
                flows.iter().filter(|f| f.started).map(|f| flow_gbps(f, output.run.sim_time)).collect();
            let mean = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
            means.push(mean);
            let slowdown = s.overall.slowdown.as_ref();
            let per_bucket: Vec<serde_json::Value> = s
                .buckets
                .iter()
                .map(|b| {
                    let slowdown = b.slowdown.as_ref();
                    serde_json::json!({
                        "label": b.label,
                        "count": b.count,
                        "slowdown_avg": slowdown.map(|x| x.avg),
                        "slowdown_p99": slowdown.map(|x| x.p99),
                    })
                })
                .collect();
            serde_json::json!({
                "workload": workload,
                "algorithm": names[algorithm as usize],
                "flows": flows.len(),
                "unfinished": s.overall.unfinished,
                "slowdown_avg": slowdown.map(|x| x.avg),
                "slowdown_p50": slowdown.map(|x| x.p50),
                "slowdown_p99": slowdown.map(|x| x.p99),
                "buckets": per_bucket,
                "goodput_bytes": goodput,
                "goodput_share": round6(goodput as f64 / total.max(1) as f64),
                "mean_flow_gbps": round6(mean),
                "jain_flow_gbps": round6(jain_fairness(&rates)),
                "long_lived_gbps": s.long_lived.total_gbps,
            })
        })
        .collect();
    Some(serde_json::json!({
        "groups": groups,
        "jain_mean_flow_gbps": round6(jain_fairness(&means)),
    }))
}

/// The index of the algorithm flow `f` ran among the run's (0: `cc.algorithm`, `k`: `mix.others[k - 1]`):
/// the one it names itself (`named`, 0 for none), else its entry's. Flows a closed loop started during the
/// run name none.
fn algorithm_of(mix: &Mix, f: &FlowRecord, named: u16) -> u8 {
    match named {
        0 => mix.of_workload.get(f.group as usize).copied().unwrap_or(0),
        k => mix.of_row[k as usize - 1],
    }
}

/// The (workload entry, algorithm) pairs that have flows, each entry's in algorithm order; an entry
/// without flows keeps the group of its own algorithm.
fn groups(mix: &Mix, flows: &[FlowRecord], of_flow: &[u8]) -> Vec<(usize, u8)> {
    let mut present: Vec<std::collections::BTreeSet<u8>> = vec![Default::default(); mix.of_workload.len()];
    for (f, &a) in flows.iter().zip(of_flow) {
        if let Some(set) = present.get_mut(f.group as usize) {
            set.insert(a);
        }
    }
    let mut out = Vec::new();
    for (workload, set) in present.into_iter().enumerate() {
        if set.is_empty() {
            out.push((workload, mix.of_workload[workload]));
        }
        out.extend(set.into_iter().map(|a| (workload, a)));
    }
    out
}

/// The rate a started flow got: its received bytes over the time from its start to its finish (or to
/// `end`, the end of the run, when it did not finish), in Gbps.
fn flow_gbps(f: &FlowRecord, end: sluice_core::Time) -> f64 {
    let span = f.finish.unwrap_or(end).saturating_sub(f.start).max(1);
    f.received as f64 * 8.0 / (span as f64 / sluice_core::PS_PER_S as f64) / 1e9
}
