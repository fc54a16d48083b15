//! The summary of a run: slowdown statistics per size bucket, long-lived flow throughput, run totals.
//!
//! Every float in a [`Summary`] is rounded to 6 decimals ([`round6`]) so that `summary.json` is stable.
//! Statistics over an empty set are `None` (written as `null`), never NaN.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_core::{Time, PS_PER_NS};

use crate::buckets::Buckets;
use crate::records::{FlowRecord, PortRecord, RunInfo, SwitchRecord};
use crate::stats::{jain_fairness, mean, percentile, round6};

/// Everything a finished run reports, ready to print or write as `summary.json`.
///
/// Long-lived flows are kept out of `buckets` and `overall` (their completion time is not meaningful)
/// and reported by throughput in `long_lived` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Run identity and size.
    pub run: RunSummary,
    /// Statistics of the non-long-lived flows per size bucket, in bucket order.
    pub buckets: Vec<BucketStats>,
    /// Statistics of all non-long-lived flows together (label `"all"`).
    pub overall: BucketStats,
    /// Throughput of the long-lived flows.
    pub long_lived: LongLivedSummary,
    /// Run-wide totals.
    pub totals: Totals,
    /// Further sections added by other parts of the simulator, by name (sorted in the file).
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Wall-clock seconds the run took; shown by [`crate::render_table`], never written to files.
    #[serde(skip)]
    pub wall_seconds: f64,
}

/// Run identity and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Seed of the run.
    pub seed: u64,
    /// End of simulated time, in nanoseconds (to the picosecond: three decimals).
    pub sim_time_ns: f64,
    /// Events processed.
    pub events: u64,
    /// Packet transmissions over links.
    pub packet_hops: u64,
    /// The run stopped at its time limit with flows unfinished.
    pub hit_time_limit: bool,
}

/// Statistics of the flows in one size bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketStats {
    /// Bucket label (`"<10KB"`, or `"all"` for the overall row).
    pub label: String,
    /// Smallest flow size in the bucket, in bytes (inclusive).
    pub min_bytes: u64,
    /// Upper size bound in bytes (exclusive); `None` when unbounded.
    pub max_bytes: Option<u64>,
    /// Flows in the bucket.
    pub count: u64,
    /// Flows that finished.
    pub finished: u64,
    /// Flows that had not finished when the run ended, those that never started included.
    pub unfinished: u64,
    /// Slowdown of the finished flows; `None` if none finished.
    pub slowdown: Option<SlowdownStats>,
    /// Completion time of the finished flows in nanoseconds; `None` if none finished.
    pub fct_ns: Option<FctStats>,
    /// The part of `unfinished` that never started: their start time lay beyond the end of the run.
    pub not_started: u64,
}

/// Mean and nearest-rank percentiles ([`percentile`]) of FCT slowdown.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlowdownStats {
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

/// Mean and 99th percentile (nearest rank) of flow completion time, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FctStats {
    /// Mean.
    pub avg: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Throughput of the long-lived flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LongLivedSummary {
    /// Number of long-lived flows.
    pub count: u64,
    /// Sum of their throughputs, in Gbps.
    pub total_gbps: f64,
    /// Jain's fairness index of their throughputs; `None` without long-lived flows.
    pub jain_fairness: Option<f64>,
    /// Each flow, in record order.
    pub flows: Vec<LongLivedFlow>,
}

/// One long-lived flow's delivered bytes and throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LongLivedFlow {
    /// Flow id.
    pub id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Workload group.
    pub group: u16,
    /// Payload bytes acknowledged by the end of the run.
    pub delivered_bytes: u64,
    /// `delivered_bytes` over the flow's lifetime (start to finish, or to the end of the run), in Gbps.
    pub gbps: f64,
}

/// Run-wide totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// All flow records, long-lived included.
    pub flows: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes of data packets that reached their destination hosts, duplicates included.
    pub bytes_delivered: u64,
    /// Bytes of dropped packets.
    pub bytes_dropped: u64,
    /// Payload bytes sent more than once.
    pub retransmitted_bytes: u64,
    /// Retransmission timeouts that fired at senders.
    #[serde(default)]
    pub timeouts: u64,
    /// `goodput_bytes` over the simulated time, in Gbps.
    pub goodput_gbps: f64,
    /// `bytes_sent` (retransmissions included) over the simulated time, in Gbps; the simulated time of a
    /// run without a fixed duration is its makespan (the last event).
    pub bytes_sent_over_sim_time_gbps: f64,
    /// Packets dropped, data and control.
    pub drops: u64,
    /// Packets ECN-marked, summed over ports.
    pub ecn_marks: u64,
    /// PFC pause frames sent.
    pub pfc_pauses: u64,
    /// Time transmitters spent paused by PFC, summed over ports, in nanoseconds.
    pub pfc_pause_time_ns: f64,
    /// Largest switch buffer occupancy; `None` without switch records.
    pub max_switch_buffer: Option<Peak>,
    /// Largest port queue; `None` without port records.
    pub max_port_queue: Option<Peak>,
    /// Payload bytes the receivers took in order, each once: what their applications got.
    pub goodput_bytes: u64,
    /// Length of the union of the flows' active intervals (start to finish, or to the end of the run),
    /// in nanoseconds.
    pub active_time_ns: f64,
    /// `goodput_bytes` over `active_time_ns`, in Gbps; 0 when no flow was active.
    pub goodput_while_active_gbps: f64,
    /// Data packets dropped.
    pub data_drops: u64,
    /// Control packets (ACKs, NACKs, CNPs, credits, tokens, ...) dropped.
    pub control_drops: u64,
    /// Utilisation of the switch ports that sent anything; `None` when none did.
    pub link_utilisation: Option<LinkUtilisation>,
    /// Payload bytes the workload offered within the run: the sizes of the flows that started, long-lived
    /// flows excepted (they have no size).
    #[serde(default)]
    pub offered_bytes: u64,
    /// `offered_bytes` over the simulated time, in Gbps: the same denominator as `goodput_gbps`, so
    /// `goodput_gbps / offered_gbps` is the fraction of the offered bytes that arrived.
    #[serde(default)]
    pub offered_gbps: f64,
}

/// Utilisation of switch ports: wire bytes sent over what the port could have sent in the simulated time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkUtilisation {
    /// Ports counted (switch ports with at least one byte sent).
    pub ports: u64,
    /// The busiest port's utilisation, a fraction of its rate.
    pub max: f64,
    /// The busiest port (the first in record order).
    pub max_at: String,
    /// Mean utilisation over the counted ports.
    pub mean: f64,
}

/// A maximum and where it occurred (the first such place in record order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peak {
    /// Switch name or port label (`"sw12:p2"`).
    pub at: String,
    /// The value in bytes.
    pub bytes: u64,
}

impl Summary {
    /// Summarizes a finished run. `extra` starts empty.
    pub fn compute(
        flows: &[FlowRecord],
        ports: &[PortRecord],
        switches: &[SwitchRecord],
        run: &RunInfo,
        buckets: &Buckets,
    ) -> Summary {
        let short: Vec<&FlowRecord> = flows.iter().filter(|f| !f.long_lived).collect();
        let mut per_bucket: Vec<Vec<&FlowRecord>> = vec![Vec::new(); buckets.len()];
        for flow in &short {
            per_bucket[buckets.index(flow.size)].push(flow);
        }
        let per_bucket_stats =
            per_bucket.iter().enumerate().map(|(i, fs)| bucket_stats(buckets.label(i), buckets.range(i), fs)).collect();
        Summary {
            run: RunSummary {
                seed: run.seed,
                sim_time_ns: ns(run.sim_time),
                events: run.events,
                packet_hops: run.packet_hops,
                hit_time_limit: run.hit_time_limit,
            },
            buckets: per_bucket_stats,
            overall: bucket_stats("all".to_string(), (0, None), &short),
            long_lived: long_lived_summary(flows, run.sim_time),
            totals: totals(flows, ports, switches, run),
            extra: BTreeMap::new(),
            wall_seconds: run.wall_seconds,
        }
    }
}

/// Statistics of one set of (non-long-lived) flows.
fn bucket_stats(label: String, (min_bytes, max_bytes): (u64, Option<u64>), flows: &[&FlowRecord]) -> BucketStats {
    let not_started = flows.iter().filter(|f| !f.started && f.finish.is_none()).count() as u64;
    let mut slowdowns = Vec::with_capacity(flows.len());
    let mut fcts_ns = Vec::with_capacity(flows.len());
    for flow in flows {
        if let (Some(fct), Some(slowdown)) = (flow.fct(), flow.slowdown()) {
            slowdowns.push(slowdown);
            fcts_ns.push(ns(fct));
        }
    }
    slowdowns.sort_by(f64::total_cmp);
    fcts_ns.sort_by(f64::total_cmp);
    let finished = slowdowns.len() as u64;
    BucketStats {
        label,
        min_bytes,
        max_bytes,
        count: flows.len() as u64,
        finished,
        unfinished: flows.len() as u64 - finished,
        slowdown: slowdown_stats(&slowdowns),
        fct_ns: fct_stats(&fcts_ns),
        not_started,
    }
}

fn slowdown_stats(sorted: &[f64]) -> Option<SlowdownStats> {
    let at = |per_mille| percentile(sorted, per_mille).map(round6);
    Some(SlowdownStats { avg: round6(mean(sorted)?), p50: at(500)?, p95: at(950)?, p99: at(990)?, p999: at(999)? })
}

fn fct_stats(sorted: &[f64]) -> Option<FctStats> {
    Some(FctStats { avg: round6(mean(sorted)?), p99: round6(percentile(sorted, 990)?) })
}

/// `ps` picoseconds in nanoseconds: every time in a summary is in nanoseconds, as in the CSV files.
fn ns(ps: Time) -> f64 {
    ps as f64 / PS_PER_NS as f64
}

/// Gbps of `bytes` transferred over `duration` picoseconds (0 for an empty duration).
fn gbps(bytes: u64, duration: Time) -> f64 {
    if duration == 0 {
        return 0.0;
    }
    // bits per picosecond are Tbps; times 1000 gives Gbps.
    bytes as f64 * 8.0 * 1000.0 / duration as f64
}

fn long_lived_summary(flows: &[FlowRecord], sim_time: Time) -> LongLivedSummary {
    let list: Vec<LongLivedFlow> =
        flows.iter().filter(|f| f.long_lived).map(|f| long_lived_flow(f, sim_time)).collect();
    let rates: Vec<f64> = list.iter().map(|f| f.gbps).collect();
    LongLivedSummary {
        count: list.len() as u64,
        total_gbps: round6(rates.iter().sum()),
        jain_fairness: (!rates.is_empty()).then(|| round6(jain_fairness(&rates))),
        flows: list,
    }
}

fn long_lived_flow(flow: &FlowRecord, sim_time: Time) -> LongLivedFlow {
    let end = flow.finish.unwrap_or(sim_time);
    LongLivedFlow {
        id: flow.id,
        src: flow.src,
        dst: flow.dst,
        group: flow.group,
        delivered_bytes: flow.delivered,
        gbps: round6(gbps(flow.delivered, end.saturating_sub(flow.start))),
    }
}

fn totals(flows: &[FlowRecord], ports: &[PortRecord], switches: &[SwitchRecord], run: &RunInfo) -> Totals {
    let goodput_bytes = flows.iter().map(|f| f.received).sum();
    let active_time_ps = active_time(flows, run.sim_time);
    let offered_bytes = flows.iter().filter(|f| f.started && !f.long_lived).map(|f| f.size).sum();
    Totals {
        flows: flows.len() as u64,
        bytes_sent: run.bytes_sent,
        bytes_delivered: run.bytes_delivered,
        bytes_dropped: run.bytes_dropped,
        retransmitted_bytes: run.retransmitted_bytes,
        timeouts: run.timeouts,
        goodput_gbps: round6(gbps(goodput_bytes, run.sim_time)),
        bytes_sent_over_sim_time_gbps: round6(gbps(run.bytes_sent, run.sim_time)),
        drops: run.drops,
        ecn_marks: ports.iter().map(|p| p.ecn_marks).sum(),
        pfc_pauses: run.pfc_pauses,
        pfc_pause_time_ns: ns(run.pfc_pause_time),
        max_switch_buffer: peak(switches.iter().map(|s| (s.node.clone(), s.max_buffer))),
        max_port_queue: peak(ports.iter().map(|p| (p.label(), p.max_queue))),
        goodput_bytes,
        active_time_ns: ns(active_time_ps),
        goodput_while_active_gbps: round6(gbps(goodput_bytes, active_time_ps)),
        data_drops: run.data_drops,
        control_drops: run.drops.saturating_sub(run.data_drops),
        link_utilisation: link_utilisation(ports, run.sim_time),
        offered_bytes,
        offered_gbps: round6(gbps(offered_bytes, run.sim_time)),
    }
}

/// Length of the union of the started flows' intervals `[start, finish or end]`.
fn active_time(flows: &[FlowRecord], end: Time) -> Time {
    let mut intervals: Vec<(Time, Time)> =
        flows.iter().filter(|f| f.started).map(|f| (f.start, f.finish.unwrap_or(end).max(f.start))).collect();
    intervals.sort_unstable();
    let mut total = 0;
    let mut covered_to = 0;
    for (start, stop) in intervals {
        let from = start.max(covered_to);
        if stop > from {
            total += stop - from;
            covered_to = stop;
        }
    }
    total
}

/// Utilisation of the switch ports that sent anything over `sim_time`.
fn link_utilisation(ports: &[PortRecord], sim_time: Time) -> Option<LinkUtilisation> {
    let busy: Vec<(String, f64)> = ports
        .iter()
        .filter(|p| p.tx_bytes > 0 && p.rate > 0 && sim_time > 0)
        .map(|p| (p.label(), gbps(p.tx_bytes, sim_time) * 1e9 / p.rate as f64))
        .collect();
    let (mut max_at, mut max) = busy.first()?.clone();
    for (at, utilisation) in &busy {
        if *utilisation > max {
            (max_at, max) = (at.clone(), *utilisation);
        }
    }
    let mean = busy.iter().map(|(_, u)| u).sum::<f64>() / busy.len() as f64;
    Some(LinkUtilisation { ports: busy.len() as u64, max: round6(max), max_at, mean: round6(mean) })
}

/// The first largest value of `items`.
fn peak(items: impl Iterator<Item = (String, u64)>) -> Option<Peak> {
    let mut best: Option<Peak> = None;
    for (at, bytes) in items {
        let better = match &best {
            None => true,
            Some(b) => bytes > b.bytes,
        };
        if better {
            best = Some(Peak { at, bytes });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Time = sluice_core::PS_PER_US;

    fn flow(id: u64, size: u64, fct_us: Option<u64>, ideal_us: u64) -> FlowRecord {
        FlowRecord {
            id,
            src: 0,
            dst: 1,
            size,
            delivered: if fct_us.is_some() { size } else { 0 },
            start: 10 * US,
            finish: fct_us.map(|f| 10 * US + f * US),
            ideal_fct: ideal_us * US,
            retransmitted_bytes: 0,
            long_lived: false,
            group: 0,
            received: if fct_us.is_some() { size } else { 0 },
            started: true,
        }
    }

    fn port(node: &str, port: u16, max_queue: u64, ecn_marks: u64) -> PortRecord {
        PortRecord {
            node: node.to_string(),
            port,
            peer: "h0".to_string(),
            rate: 100_000_000_000,
            tx_bytes: 0,
            max_queue,
            avg_queue: 0.0,
            drops: 0,
            data_drops: 0,
            dropped_bytes: 0,
            ecn_marks,
            pfc_pauses_sent: 0,
            pfc_paused_time: 0,
        }
    }

    fn sample() -> (Vec<FlowRecord>, Vec<PortRecord>, Vec<SwitchRecord>, RunInfo) {
        let mut long = flow(9, 0, None, 1);
        long.long_lived = true;
        long.delivered = 1_250_000; // 10 Mbit over 1 ms = 10 Gbps
        long.received = 1_250_000;
        let flows = vec![
            flow(1, 1_000, Some(2), 1),     // slowdown 2
            flow(2, 9_999, Some(4), 1),     // slowdown 4
            flow(3, 10_000, Some(3), 2),    // slowdown 1.5
            flow(4, 50_000, None, 2),       // unfinished
            flow(5, 2_000_000, Some(1), 2), // faster than ideal: slowdown 1
            long,
        ];
        let ports = vec![port("sw1", 0, 5_000, 3), port("sw1", 1, 9_000, 4), port("sw2", 0, 9_000, 0)];
        let switches = vec![SwitchRecord { node: "sw1".into(), max_buffer: 14_000, avg_buffer: 10.0 }];
        let run = RunInfo {
            seed: 42,
            sim_time: 1_010 * US,
            bytes_sent: 2_000_000,
            bytes_delivered: 1_262_500,
            pfc_pauses: 2,
            pfc_pause_time: 1_500_000,
            drops: 1,
            wall_seconds: 0.5,
            ..RunInfo::default()
        };
        (flows, ports, switches, run)
    }

    #[test]
    fn summary_of_a_small_run() {
        let (flows, ports, switches, run) = sample();
        let s = Summary::compute(&flows, &ports, &switches, &run, &Buckets::default());
        let counts: Vec<_> = s.buckets.iter().map(|b| (b.label.as_str(), b.count, b.finished, b.unfinished)).collect();
        assert_eq!(counts, [("<10KB", 2, 2, 0), ("10KB-100KB", 2, 1, 1), ("100KB-1MB", 0, 0, 0), (">=1MB", 1, 1, 0)]);
        let small = s.buckets[0].slowdown.unwrap();
        assert_eq!((small.avg, small.p50, small.p99, small.p999), (3.0, 2.0, 4.0, 4.0));
        assert_eq!(s.buckets[1].slowdown.unwrap().avg, 1.5);
        assert_eq!(s.buckets[2].slowdown, None);
        assert_eq!(s.buckets[3].slowdown.unwrap().p50, 1.0);
        assert_eq!((s.overall.count, s.overall.finished, s.overall.unfinished), (5, 4, 1));
        // Overall slowdowns sorted: 1, 1.5, 2, 4.
        let all = s.overall.slowdown.unwrap();
        assert_eq!((all.avg, all.p50, all.p95, all.p99), (2.125, 1.5, 4.0, 4.0));
        assert_eq!(s.overall.fct_ns, Some(FctStats { avg: 2_500.0, p99: 4_000.0 }));
    }

    #[test]
    fn long_lived_flows_and_totals() {
        let (flows, ports, switches, run) = sample();
        let s = Summary::compute(&flows, &ports, &switches, &run, &Buckets::default());
        assert_eq!(s.long_lived.count, 1);
        assert_eq!(s.long_lived.flows[0].gbps, 10.0);
        assert_eq!(s.long_lived.jain_fairness, Some(1.0));
        let t = &s.totals;
        assert_eq!(t.flows, 6);
        // 2 MB over 1.01 ms = 15.841584... Gbps.
        assert_eq!(t.bytes_sent_over_sim_time_gbps, 15.841584);
        // Unique in-order bytes: 1000 + 9999 + 10000 + 2 MB + 1.25 MB, over 1.01 ms.
        assert_eq!(t.goodput_bytes, 3_270_999);
        assert_eq!(t.goodput_gbps, 25.908903);
        assert_eq!(t.offered_bytes, 2_070_999, "the finite flows' sizes; the long-lived flow has none");
        assert_eq!(t.ecn_marks, 7);
        assert_eq!(t.pfc_pause_time_ns, 1_500.0);
        assert_eq!(t.max_port_queue, Some(Peak { at: "sw1:p1".into(), bytes: 9_000 }), "first maximum wins");
        assert_eq!(t.max_switch_buffer, Some(Peak { at: "sw1".into(), bytes: 14_000 }));
        assert_eq!(s.wall_seconds, 0.5);
    }

    #[test]
    fn goodput_counts_unique_in_order_bytes_not_duplicates() {
        let (flows, ports, switches, mut run) = sample();
        let unique = Summary::compute(&flows, &ports, &switches, &run, &Buckets::default()).totals;
        // Resent duplicates reach the receiver too; goodput must not change.
        run.bytes_delivered *= 3;
        let with_duplicates = Summary::compute(&flows, &ports, &switches, &run, &Buckets::default()).totals;
        assert_eq!(with_duplicates.goodput_gbps, unique.goodput_gbps);
        assert_eq!(with_duplicates.bytes_delivered, 3 * unique.bytes_delivered);
    }

    #[test]
    fn goodput_while_active_divides_by_the_union_of_active_intervals() {
        let mut a = flow(1, 125_000, Some(10), 1); // active 10..20 us
        a.received = 125_000;
        let mut b = flow(2, 125_000, Some(5), 1); // 15..20 us, inside a's interval
        b.start = 15 * US;
        b.finish = Some(20 * US);
        let mut c = flow(3, 250_000, None, 1); // 30 us to the end (40 us), unfinished
        c.start = 30 * US;
        c.received = 0;
        let run = RunInfo { sim_time: 40 * US, ..RunInfo::default() };
        let t = Summary::compute(&[a, b, c], &[], &[], &run, &Buckets::default()).totals;
        assert_eq!(t.active_time_ns, 20_000.0, "10..20 and 30..40 us");
        // 250 KB = 2 Mbit over 20 us = 100 Gbps; over the whole 40 us it is 50 Gbps.
        assert_eq!(t.goodput_while_active_gbps, 100.0);
        assert_eq!(t.goodput_gbps, 50.0);
    }

    #[test]
    fn flows_that_never_started_are_counted_apart() {
        let mut late = flow(7, 1_000, None, 1);
        late.started = false;
        let flows = [flow(1, 1_000, Some(2), 1), flow(2, 1_000, None, 1), late];
        let run = RunInfo { sim_time: 20 * US, hit_time_limit: true, ..RunInfo::default() };
        let s = Summary::compute(&flows, &[], &[], &run, &Buckets::default());
        assert_eq!((s.overall.count, s.overall.finished, s.overall.unfinished, s.overall.not_started), (3, 1, 2, 1));
        assert!(s.run.hit_time_limit);
        assert_eq!(s.totals.active_time_ns, 10_000.0, "the flow that never started is never active");
        assert_eq!(s.totals.offered_bytes, 2_000, "a flow that never started offered nothing");
        // 2 KB = 16 kbit over 20 us = 0.8 Gbps.
        assert_eq!(s.totals.offered_gbps, 0.8);
    }

    #[test]
    fn drops_are_split_into_data_and_control() {
        let run = RunInfo { drops: 10_493, data_drops: 3, ..RunInfo::default() };
        let t = Summary::compute(&[], &[], &[], &run, &Buckets::default()).totals;
        assert_eq!((t.drops, t.data_drops, t.control_drops), (10_493, 3, 10_490));
    }

    #[test]
    fn link_utilisation_covers_switch_ports_that_sent() {
        let mut busy = port("sw1", 0, 0, 0);
        busy.tx_bytes = 12_500_000; // 100 Mbit in 1 ms at 100 Gbps: 100%
        let mut half = port("sw1", 1, 0, 0);
        half.tx_bytes = 6_250_000;
        let idle = port("sw2", 0, 0, 0);
        let run = RunInfo { sim_time: 1_000 * US, ..RunInfo::default() };
        let t = Summary::compute(&[], &[idle.clone(), half, busy], &[], &run, &Buckets::default()).totals;
        let u = t.link_utilisation.unwrap();
        assert_eq!((u.ports, u.max, u.max_at.as_str(), u.mean), (2, 1.0, "sw1:p0", 0.75));
        let none = Summary::compute(&[], &[idle], &[], &run, &Buckets::default()).totals;
        assert_eq!(none.link_utilisation, None, "idle ports are left out");
    }

    #[test]
    fn empty_run_has_no_statistics() {
        let s = Summary::compute(&[], &[], &[], &RunInfo::default(), &Buckets::default());
        assert_eq!(s.overall.count, 0);
        assert_eq!(s.overall.slowdown, None);
        assert_eq!(s.long_lived.jain_fairness, None);
        assert_eq!(s.totals.goodput_gbps, 0.0);
        assert_eq!(s.totals.max_port_queue, None);
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("NaN") && !json.contains("wall") && !json.contains("-0.0"), "{json}");
        assert!(json.contains("\"total_gbps\":0.0"), "{json}");
        let order: Vec<_> = ["\"run\"", "\"buckets\"", "\"overall\"", "\"long_lived\"", "\"totals\"", "\"extra\""]
            .iter()
            .map(|key| json.find(key).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "sections in declaration order: {json}");
    }
}
