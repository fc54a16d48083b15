//! End-to-end checks of workload generation: offered load, destination rules, flow lists, errors and
//! determinism.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sluice_core::{PS_PER_MS, PS_PER_US};
use sluice_workload::{
    generate, Destinations, FlowSpec, LongLivedFlow, WorkloadContext, WorkloadError, WorkloadSpec, UNBOUNDED_SIZE,
};

const GBPS_100: u64 = 100_000_000_000;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Hosts `0..n`, `per_rack` to a rack, at 100 Gbps.
fn run(specs: &[WorkloadSpec], n_hosts: u32, per_rack: u32, seed: u64) -> Result<Vec<FlowSpec>, WorkloadError> {
    let racks: Vec<u32> = (0..n_hosts).map(|h| h / per_rack).collect();
    let base_dir = data_dir();
    let ctx = WorkloadContext { n_hosts, host_rate: GBPS_100, rack_of: &racks, seed, base_dir: &base_dir };
    generate(specs, &ctx)
}

fn poisson(cdf: &str, load: f64, duration: u64) -> WorkloadSpec {
    poisson_to(cdf, load, duration, Destinations::AllToAll, None)
}

fn poisson_to(
    cdf: &str,
    load: f64,
    duration: u64,
    destinations: Destinations,
    hosts: Option<Vec<u32>>,
) -> WorkloadSpec {
    WorkloadSpec::Poisson { cdf: cdf.to_string(), load, start: 0, duration, destinations, hosts, size_scale: None }
}

#[test]
fn poisson_offers_the_requested_load() {
    // 0.3 x 16 hosts x 100 Gb/s x 10 ms = 600 MB. Memcached sizes (mean 185.09 B, CV 3.2) give ~3.24M
    // flows, so one standard deviation of the offered bytes is about 0.2 % of the target.
    let flows = run(&[poisson("memcached", 0.3, 10 * PS_PER_MS)], 16, 4, 1).unwrap();
    let offered: u64 = flows.iter().map(|f| f.size).sum();
    let target = 0.3 * 16.0 * 100e9 / 8.0 * 0.010;
    assert!((offered as f64 / target - 1.0).abs() < 0.01, "offered {offered} B vs {target} B");
    assert!(flows.iter().all(|f| f.src != f.dst && f.dst < 16 && f.start < 10 * PS_PER_MS && f.stop.is_none()));
    assert!(flows.windows(2).all(|w| w[0].start <= w[1].start), "sorted by start");
}

#[test]
fn poisson_arrival_rate_follows_the_mean_size() {
    // Google RPC (mean 2891.14 B) at 0.3 load: 100e9 x 0.3 / 8 / 2891.14 x 10 ms x 16 hosts = 207,528
    // flows. Its bytes are too heavy-tailed (CV 22.6, so a 5 % standard deviation) for a tight byte check,
    // but the flow count is Poisson (standard deviation 0.2 %).
    let flows = run(&[poisson("google_rpc", 0.3, 10 * PS_PER_MS)], 16, 4, 2).unwrap();
    let expected = 100e9 * 0.3 / 8.0 / 2891.14 * 0.010 * 16.0;
    assert!((flows.len() as f64 / expected - 1.0).abs() < 0.01, "{} flows vs {expected}", flows.len());
    let senders: BTreeSet<u32> = flows.iter().map(|f| f.src).collect();
    assert_eq!(senders.len(), 16);
}

#[test]
fn poisson_honours_start_hosts_scale_and_file_cdfs() {
    let spec = WorkloadSpec::Poisson {
        cdf: "uniform_1k_3k.cdf".to_string(),
        load: 0.5,
        start: PS_PER_MS,
        duration: PS_PER_MS,
        destinations: Destinations::AllToAll,
        hosts: Some(vec![3, 5, 9]),
        size_scale: Some(10.0),
    };
    let flows = run(&[spec], 16, 4, 3).unwrap();
    let hosts = [3, 5, 9];
    assert!(flows.iter().all(|f| hosts.contains(&f.src) && hosts.contains(&f.dst) && f.src != f.dst));
    assert!(flows.iter().all(|f| (PS_PER_MS..2 * PS_PER_MS).contains(&f.start)));
    assert!(flows.iter().all(|f| (10_000..=30_000).contains(&f.size)), "sizes scaled by 10");
    // 3 hosts x 0.5 x 100 Gb/s x 1 ms / 20 KB mean = 937.5 flows expected.
    assert!((850..1030).contains(&flows.len()), "{} flows", flows.len());
}

#[test]
fn inter_rack_destinations_never_share_the_sender_rack() {
    let spec = poisson_to("webserver", 0.5, PS_PER_MS, Destinations::InterRack, None);
    let flows = run(&[spec], 16, 4, 4).unwrap();
    assert!(flows.len() > 1000, "{} flows", flows.len());
    assert!(flows.iter().all(|f| f.src / 4 != f.dst / 4));
    let destinations: BTreeSet<u32> = flows.iter().map(|f| f.dst).collect();
    assert_eq!(destinations.len(), 16, "every host is reached");
    let same_rack = poisson_to("webserver", 0.5, PS_PER_MS, Destinations::InterRack, Some(vec![0, 1, 2]));
    let err = run(&[same_rack], 16, 4, 4).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("destinations"));
    assert!(err.message.contains("rack 0"), "{err}");
}

#[test]
fn permutation_is_a_derangement() {
    for seed in 0..20 {
        let flows = run(&[WorkloadSpec::Permutation { size: 1_000_000, start: 0 }], 32, 4, seed).unwrap();
        assert_eq!(flows.len(), 32);
        let sources: BTreeSet<u32> = flows.iter().map(|f| f.src).collect();
        let destinations: BTreeSet<u32> = flows.iter().map(|f| f.dst).collect();
        assert_eq!((sources.len(), destinations.len()), (32, 32));
        assert!(flows.iter().all(|f| f.src != f.dst && f.size == 1_000_000));
    }
}

#[test]
fn incast_all_to_all_and_long_lived_make_the_listed_flows() {
    let incast = WorkloadSpec::Incast {
        receiver: 5,
        senders: Some(7),
        sender_list: None,
        size: 2_000_000,
        start: 0,
        period: Some(100 * PS_PER_US),
        repeats: 3,
    };
    let flows = run(&[incast], 16, 4, 5).unwrap();
    assert_eq!(flows.len(), 21);
    let senders: BTreeSet<u32> = flows.iter().map(|f| f.src).collect();
    assert_eq!(senders.len(), 7, "the same senders every round");
    assert!(!senders.contains(&5) && flows.iter().all(|f| f.dst == 5));
    let starts: BTreeSet<u64> = flows.iter().map(|f| f.start).collect();
    assert_eq!(starts.into_iter().collect::<Vec<_>>(), vec![0, 100 * PS_PER_US, 200 * PS_PER_US]);

    let all = WorkloadSpec::AllToAll { size: 1000, start: 0, hosts: None };
    assert_eq!(run(&[all], 8, 4, 5).unwrap().len(), 56);

    let long = WorkloadSpec::LongLived {
        flows: vec![LongLivedFlow { src: 1, dst: 2, start: 0, stop: PS_PER_MS, algorithm: None }],
    };
    let flows = run(&[long], 4, 4, 5).unwrap();
    assert_eq!((flows[0].size, flows[0].stop), (UNBOUNDED_SIZE, Some(PS_PER_MS)));
}

#[test]
fn the_benchmark_flow_list_has_543_flows() {
    let spec = WorkloadSpec::FlowList { path: "ws128_l30_2ms.flows.csv".to_string() };
    let flows = run(&[spec], 128, 4, 0).unwrap();
    assert_eq!(flows.len(), 543);
    let bytes: u64 = flows.iter().map(|f| f.size).sum();
    assert!((0.88e9..0.90e9).contains(&(bytes as f64)), "{bytes} B (0.89 GB by the benchmark's README)");
    assert_eq!(
        flows[0],
        FlowSpec { src: 13, dst: 15, size: 1_972_877, start: 962_000, stop: None, group: 0, algorithm: 0 }
    );
    assert!(flows.iter().all(|f| f.start < 2 * PS_PER_MS));

    let err = run(&[WorkloadSpec::FlowList { path: "ws128_l30_2ms.flows.csv".to_string() }], 64, 4, 0).unwrap_err();
    assert!(err.file.as_deref().unwrap().ends_with("ws128_l30_2ms.flows.csv"), "{err}");
    assert!(err.line.is_some() && err.message.contains("the topology has hosts 0 to 63"), "{err}");
}

#[test]
fn same_seed_same_flows_and_entries_do_not_disturb_each_other() {
    let specs = [poisson("websearch", 0.3, PS_PER_MS), WorkloadSpec::Permutation { size: 1000, start: 0 }];
    let a = run(&specs, 16, 4, 7).unwrap();
    assert_eq!(a, run(&specs, 16, 4, 7).unwrap());
    assert_ne!(a, run(&specs, 16, 4, 8).unwrap());
    let alone = run(&specs[..1], 16, 4, 7).unwrap();
    let group0: Vec<FlowSpec> = a.iter().copied().filter(|f| f.group == 0).collect();
    assert_eq!(alone, group0, "adding an entry leaves the first one's flows unchanged");
    assert!(a.iter().any(|f| f.group == 1));
}

/// Asserts that `spec` is rejected on 16 hosts with an error on `field` whose text contains `needle`.
fn assert_rejected(spec: WorkloadSpec, field: &str, needle: &str) {
    let err = run(&[spec], 16, 4, 0).unwrap_err();
    assert_eq!((err.entry, err.field.as_deref()), (Some(0), Some(field)), "{err}");
    assert!(err.to_string().contains(needle), "{err} should mention {needle:?}");
}

#[test]
fn impossible_values_are_rejected_with_the_key_named() {
    assert_rejected(poisson("websearch", 1.5, PS_PER_MS), "load", "got 1.5");
    assert_rejected(poisson("websearch", 0.0, PS_PER_MS), "load", "above 0");
    assert_rejected(poisson("websearch", 0.3, 0), "duration", "positive");
    assert_rejected(poisson("web_search", 0.3, PS_PER_MS), "cdf", "websearch, fb_hadoop, alistorage");
    assert_rejected(poisson("missing/file.txt", 0.3, PS_PER_MS), "cdf", "missing/file.txt not found");
    let hosts = poisson_to("websearch", 0.3, PS_PER_MS, Destinations::AllToAll, Some(vec![1, 16]));
    assert_rejected(hosts, "hosts", "host 16 does not exist");
    let incast = |senders, sender_list| WorkloadSpec::Incast {
        receiver: 3,
        senders,
        sender_list,
        size: 1000,
        start: 0,
        period: None,
        repeats: 1,
    };
    assert_rejected(incast(Some(16), None), "senders", "the 15 hosts other than the receiver, got 16");
    assert_rejected(incast(None, Some(vec![1, 3])), "sender_list", "the receiver 3 is among the senders");
    let stop = LongLivedFlow { src: 0, dst: 1, start: 2 * PS_PER_MS, stop: PS_PER_MS, algorithm: None };
    assert_rejected(
        WorkloadSpec::LongLived { flows: vec![stop] },
        "flows",
        "flows[0]: stop 1ms is not after start 2ms",
    );
    assert_rejected(WorkloadSpec::FlowList { path: "nope.csv".to_string() }, "path", "nope.csv not found");
}

#[test]
fn validate_alone_checks_against_the_host_count() {
    let spec = WorkloadSpec::Incast {
        receiver: 20,
        senders: None,
        sender_list: None,
        size: 1,
        start: 0,
        period: None,
        repeats: 1,
    };
    assert_eq!(spec.validate(16).unwrap_err().field.as_deref(), Some("receiver"));
    assert!(spec.validate(21).is_ok());
    let repeated = WorkloadSpec::Incast {
        receiver: 0,
        senders: None,
        sender_list: None,
        size: 1,
        start: 0,
        period: None,
        repeats: 2,
    };
    assert_eq!(repeated.validate(4).unwrap_err().field.as_deref(), Some("period"));
}

#[test]
fn entries_read_from_text_with_units_and_defaults() {
    let json = r#"[
        {"kind": "poisson", "cdf": "websearch", "load": 0.3, "duration": "2ms", "destinations": "inter_rack"},
        {"kind": "incast", "receiver": 0, "senders": 4, "size": "2MB", "period": "50us", "repeats": 2},
        {"kind": "long_lived", "flows": [{"src": 0, "dst": 1, "stop": "1ms"}]},
        {"kind": "all_to_all", "size": 1000}
    ]"#;
    let specs: Vec<WorkloadSpec> = serde_json::from_str(json).unwrap();
    let expected_poisson = poisson_to("websearch", 0.3, 2 * PS_PER_MS, Destinations::InterRack, None);
    assert_eq!(specs[0], expected_poisson);
    let WorkloadSpec::Incast { size, period, repeats, start, .. } = &specs[1] else { panic!("{:?}", specs[1]) };
    assert_eq!((*size, *period, *repeats, *start), (2_000_000, Some(50 * PS_PER_US), 2, 0));
    let text = serde_json::to_string(&specs).unwrap();
    assert!(text.contains(r#""duration":"2ms""#) && text.contains(r#""size":"2MB""#), "{text}");
    assert_eq!(serde_json::from_str::<Vec<WorkloadSpec>>(&text).unwrap(), specs, "round trip");
    let typo = r#"{"kind": "poisson", "cdf": "websearch", "laod": 0.3, "duration": "2ms"}"#;
    assert!(serde_json::from_str::<WorkloadSpec>(typo).unwrap_err().to_string().contains("laod"));
}

#[test]
fn flow_counts_are_known_before_generating() {
    let racks: Vec<u32> = (0..128).map(|h| h / 4).collect();
    let base_dir = data_dir();
    let ctx = WorkloadContext { n_hosts: 128, host_rate: GBPS_100, rack_of: &racks, seed: 1, base_dir: &base_dir };
    let incast = WorkloadSpec::Incast {
        receiver: 0,
        senders: Some(5),
        sender_list: None,
        size: 1,
        start: 0,
        period: Some(PS_PER_US),
        repeats: 3,
    };
    let exact = [
        incast,
        WorkloadSpec::Permutation { size: 1, start: 0 },
        WorkloadSpec::AllToAll { size: 1, start: 0, hosts: Some(vec![1, 2, 3]) },
        WorkloadSpec::FlowList { path: "ws128_l30_2ms.flows.csv".to_string() },
    ];
    for (spec, expected) in exact.iter().zip([15, 128, 6, 543]) {
        assert_eq!(spec.flow_count(&ctx).unwrap(), expected, "{spec:?}");
        assert_eq!(generate(std::slice::from_ref(spec), &ctx).unwrap().len() as u64, expected, "{spec:?}");
    }
    // Google RPC at 0.3 load on 128 hosts for 10 ms: 8 x 207,528 flows expected (see above).
    let expected = poisson("google_rpc", 0.3, 10 * PS_PER_MS).flow_count(&ctx).unwrap();
    assert!((expected as f64 / (8.0 * 207_528.0) - 1.0).abs() < 1e-4, "{expected}");
}

#[test]
fn absurd_flow_counts_are_refused_before_generating() {
    let incast = WorkloadSpec::Incast {
        receiver: 0,
        senders: None,
        sender_list: None,
        size: 1000,
        start: 0,
        period: Some(PS_PER_US),
        repeats: 1_000_000_000,
    };
    assert_rejected(incast, "repeats", "would generate 15000000000 flows, more than the limit of 16777216");
    // Web search at 30 % for 2000 s: about 4.7 M flows per host.
    assert_rejected(poisson("websearch", 0.3, 2_000 * 1_000 * PS_PER_MS), "duration", "more than the limit");
    let half = WorkloadSpec::AllToAll { size: 1, start: 0, hosts: None };
    let many = poisson("memcached", 0.3, 100 * PS_PER_MS);
    let err = run(&[half, many], 16, 4, 0).unwrap_err();
    assert_eq!((err.entry, err.field.as_deref()), (Some(1), Some("duration")), "{err}");
    assert!(err.message.contains("(after 240 flows of earlier entries)"), "{err}");
}

#[test]
fn empty_flow_lists_and_times_past_the_clock_are_refused() {
    let list = |path: &str| WorkloadSpec::FlowList { path: path.to_string() };
    assert_rejected(list("empty.flows.csv"), "path", "empty.flows.csv lists no flows");
    assert_rejected(list("late.flows.csv"), "path", "line 2: start_ns `2000000000000000` is beyond");
    let late = 2_000_000 * 1_000 * PS_PER_MS;
    assert_rejected(WorkloadSpec::Permutation { size: 1, start: late }, "start", "13.3 days");
    let mut window = poisson("websearch", 0.3, PS_PER_MS);
    if let WorkloadSpec::Poisson { start, .. } = &mut window {
        *start = late;
    }
    assert_rejected(window, "duration", "13.3 days");
    let stop = LongLivedFlow { src: 0, dst: 1, start: 0, stop: late, algorithm: None };
    assert_rejected(WorkloadSpec::LongLived { flows: vec![stop] }, "flows", "13.3 days");
}
