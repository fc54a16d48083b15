//! The `closed_loops` entry of `summary.json`, for runs with closed-loop workloads: per entry, what its
//! slots carried, and its completion times next to the ideal under fair sharing (Marlin, EuroSys'25,
//! section 7.5 and Figure 10: every flow gets an equal share of the bandwidth at all times).
//!
//! A closed loop keeps its slots' flows active, so each host's NIC is shared by the slots that cross it
//! at every instant: a flow's fair share is the smaller of its sender's NIC rate over the slots sending
//! there and its receiver's over the slots receiving there (the path's slowest link at most). Its ideal
//! completion time under fair sharing is its unloaded one ([`sluice_results::ideal_fct`]) with the
//! bottleneck's rate replaced by that share. Other workloads' traffic is not counted in the shares.

use std::collections::HashMap;

use serde_json::{json, Value};
use sluice_results::{mean, percentile, round6, FlowRecord};
use sluice_scenario::Resolved;
use sluice_workload::ClosedLoop;

/// The loops' figures, or `None` when the run has no closed loop (the summary then stays as it was).
///
/// Per loop: `workload` (the entry's index), `slots`, `flows` (started), `finished`, `delivered_bytes`,
/// `goodput_gbps` (its delivered bytes from its start to its last completion), and for its finished
/// flows `fct_ns`, `fair_share_fct_ns` and `slowdown_vs_fair_share` (each `avg`, `p50`, `p99`). The last
/// is not held at 1: a flow that ran while fewer slots were busy (after the window) beats its fair share.
/// `flows` are the run's records: the simulator's, or a UDP sender's (`sluice test --peer`, where one
/// host sends every slot's flows).
pub fn closed_loop_summary(resolved: &Resolved, flows: &[FlowRecord]) -> Option<Value> {
    if resolved.closed_loops.is_empty() {
        return None;
    }
    let loops: Vec<Value> = resolved.closed_loops.iter().map(|lp| one_loop(resolved, flows, lp)).collect();
    Some(Value::Array(loops))
}

fn one_loop(resolved: &Resolved, flows: &[FlowRecord], lp: &ClosedLoop) -> Value {
    let shares = FairShares::of(lp);
    let flows: Vec<&FlowRecord> = flows.iter().filter(|f| f.group == lp.group).collect();
    let finished: Vec<&FlowRecord> = flows.iter().copied().filter(|f| f.finish.is_some()).collect();
    let fct: Vec<f64> = finished.iter().map(|f| f.fct().unwrap_or(0) as f64).collect();
    let fair: Vec<f64> = finished.iter().map(|f| shares.fair_fct(resolved, f)).collect();
    let slowdown: Vec<f64> = fct.iter().zip(&fair).map(|(m, i)| m / i.max(1.0)).collect();
    let delivered: u64 = flows.iter().map(|f| f.received).sum();
    let start = flows.iter().map(|f| f.start).min().unwrap_or(0);
    let last = finished.iter().filter_map(|f| f.finish).max().unwrap_or(start);
    let seconds = (last - start).max(1) as f64 / sluice_core::PS_PER_S as f64;
    json!({
        "workload": lp.group,
        "slots": lp.slots.len(),
        "flows": flows.len(),
        "finished": finished.len(),
        "delivered_bytes": delivered,
        "goodput_gbps": round6(delivered as f64 * 8.0 / seconds / 1e9),
        "fct_ns": stats(&fct, 1e3),
        "fair_share_fct_ns": stats(&fair, 1e3),
        "slowdown_vs_fair_share": stats(&slowdown, 1.0),
    })
}

/// Average, median and 99th percentile of `values`, each divided by `unit` (`null` without values).
fn stats(values: &[f64], unit: f64) -> Value {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |per_mille| percentile(&sorted, per_mille).map(|v| round6(v / unit));
    json!({ "avg": mean(&sorted).map(|v| round6(v / unit)), "p50": at(500), "p99": at(990) })
}

/// How many of a loop's slots send from and receive at each host.
struct FairShares {
    sending: HashMap<u32, u64>,
    receiving: HashMap<u32, u64>,
}

impl FairShares {
    fn of(lp: &ClosedLoop) -> FairShares {
        let (mut sending, mut receiving) = (HashMap::new(), HashMap::new());
        for slot in &lp.slots {
            *sending.entry(slot.src).or_insert(0) += 1;
            *receiving.entry(slot.dst).or_insert(0) += 1;
        }
        FairShares { sending, receiving }
    }

    /// Flow `f`'s ideal completion time under fair sharing, picoseconds.
    fn fair_fct(&self, resolved: &Resolved, f: &FlowRecord) -> f64 {
        let topology = &resolved.topology;
        let path = topology.path_profile(&resolved.routes, f.src, f.dst);
        let out = topology.nic(f.src).rate as f64 / self.sending.get(&f.src).copied().unwrap_or(1) as f64;
        let inn = topology.nic(f.dst).rate as f64 / self.receiving.get(&f.dst).copied().unwrap_or(1) as f64;
        let share = out.min(inn).min(path.bottleneck as f64).max(1.0);
        let link = &resolved.scenario.link;
        let packets = f.size.max(1).div_ceil(link.mtu as u64);
        let wire_bits = (f.size.max(1) + packets * link.header_bytes as u64) as f64 * 8.0;
        let ps_per_bit = |rate: f64| sluice_core::PS_PER_S as f64 / rate;
        f.ideal_fct as f64 + wire_bits * (ps_per_bit(share) - ps_per_bit(path.bottleneck as f64))
    }
}
