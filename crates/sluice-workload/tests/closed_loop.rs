//! Closed-loop entries (the slots' first flows, their numbering after the sort, the slots' own size
//! streams, the expected flow count, the checks of the entry's keys), and the algorithms single flows name.

use std::path::Path;

use sluice_core::{Rng, PS_PER_MS, PS_PER_US};
use sluice_workload::{generate_workload, SizeCdf, Workload, WorkloadContext, WorkloadError, WorkloadSpec};

const GBPS_10: u64 = 10_000_000_000;

fn run(specs: &[WorkloadSpec], n_hosts: u32, seed: u64) -> Result<Workload, WorkloadError> {
    let racks: Vec<u32> = (0..n_hosts).map(|h| h / 4).collect();
    let ctx = WorkloadContext { n_hosts, host_rate: GBPS_10, rack_of: &racks, seed, base_dir: Path::new(".") };
    generate_workload(specs, &ctx)
}

fn closed(flows_per_pair: u32, receivers: Option<Vec<u32>>, senders: Option<Vec<u32>>) -> WorkloadSpec {
    WorkloadSpec::ClosedLoop {
        cdf: "websearch".into(),
        flows_per_pair,
        receivers,
        senders,
        start: 10 * PS_PER_US,
        duration: PS_PER_MS,
        size_scale: None,
    }
}

#[test]
fn n_cast_one_gives_every_slot_a_first_flow_at_start() {
    // Marlin's n-cast-1: hosts 1..=4 send to host 0, 5 flows each.
    let w = run(&[closed(5, Some(vec![0]), None)], 5, 1).unwrap();
    assert_eq!(w.flows.len(), 20);
    assert_eq!(w.closed_loops.len(), 1);
    let lp = &w.closed_loops[0];
    assert_eq!((lp.group, lp.end, lp.slots.len()), (0, 10 * PS_PER_US + PS_PER_MS, 20));
    assert!(w.flows.iter().all(|f| f.dst == 0 && f.src >= 1 && f.start == 10 * PS_PER_US && f.stop.is_none()));
    // Slots go sender by sender; each names a distinct flow of its own pair.
    let srcs: Vec<u32> = lp.slots.iter().map(|s| s.src).collect();
    assert_eq!(srcs, [1, 2, 3, 4].iter().flat_map(|&s| [s; 5]).collect::<Vec<u32>>());
    let mut ids: Vec<u32> = lp.slots.iter().map(|s| s.first_flow).collect();
    for s in &lp.slots {
        let f = &w.flows.to_vec()[s.first_flow as usize];
        assert_eq!((f.src, f.dst), (s.src, s.dst));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 20, "every slot has a flow of its own");
}

#[test]
fn each_slot_draws_from_its_own_stream() {
    let cdf = SizeCdf::builtin("websearch").unwrap();
    let mut w = run(&[closed(2, Some(vec![0]), Some(vec![1, 2]))], 3, 7).unwrap();
    for j in 0..4 {
        let mut rng = Rng::named(7, &format!("workload.0.slot.{j}"));
        let first = cdf.sample(&mut rng);
        assert_eq!(w.flows.to_vec()[w.closed_loops[0].slots[j].first_flow as usize].size, first, "slot {j}");
        let later: Vec<u64> = (0..5).map(|_| cdf.sample(&mut rng)).collect();
        let drawn: Vec<u64> = (0..5).map(|_| w.closed_loops[0].next_size(j)).collect();
        assert_eq!(drawn, later, "slot {j}");
    }
}

#[test]
fn closed_loops_mix_with_other_entries_and_keep_their_numbering() {
    let incast = WorkloadSpec::Incast {
        receiver: 3,
        senders: None,
        sender_list: Some(vec![0, 1]),
        size: 1000,
        start: 10 * PS_PER_US,
        period: None,
        repeats: 1,
    };
    let a = run(&[incast.clone(), closed(3, None, None)], 4, 2).unwrap();
    // 2 incast flows, and 3 slots for each of the 12 ordered pairs.
    assert_eq!(a.flows.len(), 2 + 36);
    let lp = &a.closed_loops[0];
    assert_eq!(lp.group, 1);
    assert!(lp.slots.iter().all(|s| a.flows.to_vec()[s.first_flow as usize].group == 1));
    let b = run(&[incast, closed(3, None, None)], 4, 2).unwrap();
    assert_eq!(a.flows, b.flows, "the same seed gives the same flows");
    let firsts = |w: &Workload| w.closed_loops[0].slots.iter().map(|s| s.first_flow).collect::<Vec<u32>>();
    assert_eq!(firsts(&a), firsts(&b));
}

#[test]
fn the_expected_count_bounds_what_the_hosts_can_carry() {
    let racks = [0u32; 5];
    let ctx = WorkloadContext { n_hosts: 5, host_rate: GBPS_10, rack_of: &racks, seed: 1, base_dir: Path::new(".") };
    let spec = closed(5, Some(vec![0]), None);
    // One receiver bounds the bytes: 10 Gb/s x 1 ms = 1.25 MB, over websearch's mean size, plus 20 slots.
    let mean = SizeCdf::builtin("websearch").unwrap().mean();
    let expected = 20 + (1.25e6 / mean).ceil() as u64;
    assert_eq!(spec.flow_count(&ctx).unwrap(), expected);
}

fn rejected(spec: WorkloadSpec, n_hosts: u32, field: &str, needle: &str) {
    let e = run(&[spec], n_hosts, 1).unwrap_err();
    assert_eq!((e.entry, e.field.as_deref()), (Some(0), Some(field)), "{e}");
    assert!(e.message.contains(needle), "{e}");
}

#[test]
fn impossible_closed_loops_are_rejected_with_the_key_named() {
    rejected(closed(0, None, None), 4, "flows_per_pair", "at least 1");
    rejected(closed(1, Some(vec![]), None), 4, "receivers", "empty");
    rejected(closed(1, Some(vec![9]), None), 4, "receivers", "host 9 does not exist");
    rejected(closed(1, None, Some(vec![1, 1])), 4, "senders", "listed twice");
    rejected(closed(1, Some(vec![2]), Some(vec![2])), 4, "senders", "no sender has a receiver");
    let mut no_time = closed(1, None, None);
    if let WorkloadSpec::ClosedLoop { duration, .. } = &mut no_time {
        *duration = 0;
    }
    rejected(no_time, 4, "duration", "positive");
    let mut bad_cdf = closed(1, None, None);
    if let WorkloadSpec::ClosedLoop { cdf, .. } = &mut bad_cdf {
        *cdf = "nope".into();
    }
    rejected(bad_cdf, 4, "cdf", "nope");
}

#[test]
fn closed_loops_read_from_text_and_round_trip() {
    let text =
        r#"{"kind": "closed_loop", "cdf": "websearch", "flows_per_pair": 5, "receivers": [0], "duration": "2ms"}"#;
    let spec: WorkloadSpec = serde_json::from_str(text).unwrap();
    assert_eq!(
        spec,
        WorkloadSpec::ClosedLoop {
            cdf: "websearch".into(),
            flows_per_pair: 5,
            receivers: Some(vec![0]),
            senders: None,
            start: 0,
            duration: 2 * PS_PER_MS,
            size_scale: None,
        }
    );
    let back: WorkloadSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);
    let typo = r#"{"kind": "closed_loop", "cdf": "websearch", "flows_per_pairs": 5, "duration": "2ms"}"#;
    assert!(serde_json::from_str::<WorkloadSpec>(typo).unwrap_err().to_string().contains("flows_per_pairs"));
}

#[test]
fn single_flows_name_their_algorithms_in_order_of_appearance() {
    let flow = |src, algorithm: Option<&str>| sluice_workload::LongLivedFlow {
        src,
        dst: 0,
        start: 0,
        stop: PS_PER_MS,
        algorithm: algorithm.map(String::from),
    };
    let long = WorkloadSpec::LongLived { flows: vec![flow(1, Some("cubic")), flow(2, None), flow(3, Some("dctcp"))] };
    let again = WorkloadSpec::LongLived { flows: vec![flow(1, Some("dctcp"))] };
    let w = run(&[long, again], 4, 1).unwrap();
    let names: Vec<&str> = w.algorithms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["cubic", "dctcp"]);
    let by_flow: Vec<(u16, u32, u16)> = w.flows.iter().map(|f| (f.group, f.src, f.algorithm)).collect();
    assert_eq!(by_flow, [(0, 1, 1), (1, 1, 2), (0, 2, 0), (0, 3, 2)]);
    let first_dctcp = &w.algorithms[1];
    assert_eq!((first_dctcp.entry, first_dctcp.field.as_str()), (0, "flows.2.algorithm"));
    let e = first_dctcp.error("unknown");
    assert_eq!((e.entry, e.field.as_deref()), (Some(0), Some("flows.2.algorithm")));
}
