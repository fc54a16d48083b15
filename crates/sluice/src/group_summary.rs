//! The `groups` entry of `summary.json` for a run that mixes algorithms (`cc.workloads`): per workload
//! entry, its algorithm and what its flows got, and how evenly the groups shared the network.

use sluice_results::{jain_fairness, round6, Buckets, FlowRecord, Summary};
use sluice_scenario::Resolved;
use sluice_sim::SimOutput;

/// The groups' figures, or `None` when every flow runs the same algorithm.
///
/// Per group: `workload` (the entry's index), `algorithm`, `flows`, `unfinished`, the slowdown of its
/// sized flows (`slowdown_avg`, `slowdown_p50`, `slowdown_p99`, `null` without finished ones),
/// `goodput_bytes` (received in order, each byte once) and its `goodput_share` of all groups', its
/// long-lived flows' `long_lived_gbps` and `long_lived_jain` (within the group). Across groups:
/// `jain_per_flow_goodput`, Jain's index over each group's goodput per flow (1 when every group's flows
/// got the same on average).
pub fn group_summary(resolved: &Resolved, output: &SimOutput, buckets: &Buckets) -> Option<serde_json::Value> {
    let mix = resolved.mix.as_ref()?;
    let names: Vec<&str> =
        std::iter::once(resolved.algorithm.name).chain(mix.others.iter().map(|(a, _)| a.name)).collect();
    let total: u64 = output.flows.iter().map(|f| f.received).sum();
    let mut per_flow = Vec::with_capacity(mix.of_workload.len());
    let groups: Vec<serde_json::Value> = mix
        .of_workload
        .iter()
        .enumerate()
        .map(|(workload, &algorithm)| {
            let flows: Vec<FlowRecord> =
                output.flows.iter().filter(|f| f.group as usize == workload).cloned().collect();
            let s = Summary::compute(&flows, &output.ports, &output.switches, &output.run, buckets);
            let goodput: u64 = flows.iter().map(|f| f.received).sum();
            per_flow.push(goodput as f64 / flows.len().max(1) as f64);
            let slowdown = s.overall.slowdown.as_ref();
            serde_json::json!({
                "workload": workload,
                "algorithm": names[algorithm as usize],
                "flows": flows.len(),
                "unfinished": s.overall.unfinished,
                "slowdown_avg": slowdown.map(|x| x.avg),
                "slowdown_p50": slowdown.map(|x| x.p50),
                "slowdown_p99": slowdown.map(|x| x.p99),
                "goodput_bytes": goodput,
                "goodput_share": round6(goodput as f64 / total.max(1) as f64),
                "long_lived_gbps": s.long_lived.total_gbps,
                "long_lived_jain": s.long_lived.jain_fairness,
            })
        })
        .collect();
    Some(serde_json::json!({
        "groups": groups,
        "jain_per_flow_goodput": round6(jain_fairness(&per_flow)),
    }))
}
