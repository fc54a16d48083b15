//! One run on several threads (`simulation.threads`, crates/sluice-sim/src/sim/parallel.rs): the bundled
//! scenarios give byte-identical result files on 1, 2 and 4 threads, and a run that cannot be cut is
//! refused with a message that says why.

use std::path::{Path, PathBuf};

/// A fresh directory for one test's runs, removed when dropped.
struct Scratch(PathBuf);

/// Scratch directories made so far: tests that run side by side may run one scenario each.
static SCRATCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let n = SCRATCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("sluice-threads-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a scratch directory");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name)
}

fn resolve(name: &str, sets: &[String]) -> sluice_scenario::Resolved {
    let path = scenario(name);
    let scenario = sluice_scenario::load(&path, sets, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    sluice_scenario::resolve(&scenario).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `name` with `sets` on `threads` threads into `dir`.
fn run_into(name: &str, sets: &[&str], threads: usize, dir: &Path) {
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push(format!("simulation.threads={threads}"));
    let resolved = resolve(name, &sets);
    sluice::run_scenario(&resolved, Some(dir), &mut |_| {})
        .unwrap_or_else(|e| panic!("{name}, {threads} threads: {e}"));
}

/// summary.json without what differs from run to run on any machine (wall time and rates per second).
fn summary_without_wall(dir: &Path) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|k, _| !k.contains("wall") && !k.ends_with("per_s") && !k.contains("per_second"));
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("summary.json is JSON");
    strip(&mut value);
    value
}

/// Runs `name` on 1 thread and on each of `threads`, and compares every result file with the first.
fn same_results(name: &str, sets: &[&str], threads: &[usize]) {
    let root = Scratch::new(&name.replace(['/', '.'], "-"));
    let one = root.0.join("threads-1");
    run_into(name, sets, 1, &one);
    let files = ["fct.csv", "queues.csv", "throughput.csv", "trace.csv", "packets.csv"];
    assert!(one.join("fct.csv").exists(), "{name}: no fct.csv");
    for &n in threads {
        let dir = root.0.join(format!("threads-{n}"));
        run_into(name, sets, n, &dir);
        for file in files {
            let expected = std::fs::read(one.join(file)).ok();
            let got = std::fs::read(dir.join(file)).ok();
            assert!(expected == got, "{name}: {file} on {n} threads differs from one thread's");
        }
        assert_eq!(summary_without_wall(&dir), summary_without_wall(&one), "{name}: summary.json on {n} threads");
    }
}

#[test]
fn the_quickstart_gives_the_same_files_on_1_2_and_4_threads() {
    same_results("quickstart.toml", &[], &[2, 4]);
}

#[test]
fn ws128_gives_the_same_files_on_1_2_and_4_threads() {
    same_results("ws128.toml", &[], &[2, 4]);
}

#[test]
fn a_leaf_spine_and_an_incast_give_the_same_files_on_1_2_and_4_threads() {
    same_results("leafspine160.toml", &["workload.0.duration=300us"], &[2, 4]);
    same_results("incast8.toml", &[], &[2, 4]);
}

/// Long-lived flows of two algorithms, sampled ports and traced flows (dctcp_cubic), HPCC's INT beside
/// DCQCN in a run of fixed duration (dcqcn_hpcc_ws128), a switch signal (rocc_incast), the endpoint and
/// host-interconnect models, and the CC plane offloaded behind a channel.
#[test]
fn mixes_signals_host_models_and_the_offloaded_plane_give_the_same_files_on_several_threads() {
    same_results("mix/dctcp_cubic.toml", &[], &[2, 4]);
    same_results("mix/dcqcn_hpcc_ws128.toml", &["simulation.duration=300us"], &[2]);
    same_results("signals/rocc_incast.toml", &[], &[2, 4]);
    same_results("endpoint/incast.toml", &[], &[2]);
    same_results("host/fabric-incast.toml", &[], &[2]);
    same_results("host/host-congestion.toml", &[], &[2]);
    same_results("offload/aggregation400.toml", &[], &[2]);
}

/// The balance of a partitioned run (the events of each window's busiest part) is counted window by
/// window, the same on every run, and bounds the speed-up between 1 and the number of parts; a run in
/// one piece has none.
#[test]
fn a_partitioned_run_counts_how_evenly_its_parts_shared_the_windows() {
    let outcome = |threads: usize| {
        let resolved = resolve("ws128.toml", &[format!("simulation.threads={threads}")]);
        sluice::run_scenario(&resolved, None, &mut |_| {}).expect("ws128 runs").output
    };
    assert_eq!(outcome(1).balance, None, "a run in one piece has no parts");
    let (first, again) = (outcome(4), outcome(4));
    let balance = first.balance.expect("a partitioned run counts its balance");
    assert_eq!(again.balance, Some(balance), "the counts depend on the scenario, not on the run");
    assert_eq!(balance.parts, 4);
    assert!(balance.windows > 1_000, "ws128 runs 9.3 ms in windows of 1 us, not {}", balance.windows);
    let bound = balance.bound(first.counters.events);
    assert!(bound > 1.5 && bound < 4.0, "four parts of a fat-tree bound the speed-up at {bound:.2}x");
}

/// The error of running `name` with `sets` on `threads` threads, which must write nothing.
fn refusal(name: &str, sets: &[&str], threads: usize) -> String {
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push(format!("simulation.threads={threads}"));
    let resolved = resolve(name, &sets);
    let root = Scratch::new(&format!("refused-{}", name.replace(['/', '.'], "-")));
    let dir = root.0.join("out");
    let error = sluice::run_scenario(&resolved, Some(&dir), &mut |_| {}).expect_err("refused");
    assert!(!dir.exists(), "{name}: a refused run wrote {}", dir.display());
    error
}

/// Chosen packets dropped and marked on a star (each host a part of its own), and a random loss and a
/// link down in a loaded fat-tree, with each fault's counts in summary.json.
#[test]
fn faults_give_the_same_files_and_counts_on_several_threads() {
    same_results("faults/marlin_dctcp.toml", &[], &[2]);
    same_results("faults/fat_tree_faults.toml", &[], &[2, 4]);
}

/// The packet trace of every flow at every port, whose rows come from the parts that own the ports: in
/// full on the quickstart, and bound to 200,000 of the 236,520 rows of ws128's first 200 us: the bound
/// falls between two of the three rows of one instant, at two ports (agg10:p3 and agg14:p5), which
/// settle in port order on any number of threads.
#[test]
fn the_packet_trace_gives_the_same_rows_on_several_threads() {
    same_results("quickstart.toml", &["output.packet_trace.flows=\"all\""], &[2, 4]);
    same_results(
        "ws128.toml",
        &["output.packet_trace.flows=\"all\"", "output.packet_trace.max_rows=200000", "simulation.duration=200us"],
        &[2, 4],
    );
}

/// Receiver-driven algorithms, whose flows keep their grants at the receiver's part and their tokens at
/// the sender's: Homa and ExpressPass with Aeolus on the quickstart (the traced flow's token window is
/// the receiver's), NDP's trimming on an incast, ToCC on the anatomy study's fabric with incasts, and
/// ExpressPass's token limiter on a dumbbell.
#[test]
fn receiver_driven_algorithms_give_the_same_files_on_several_threads() {
    let all_flows = "output.throughput_flows=\"all\"";
    same_results("quickstart.toml", &["cc.algorithm=homa", all_flows], &[2, 4]);
    same_results("quickstart.toml", &["cc.algorithm=ep_aeolus"], &[2]);
    same_results("incast8.toml", &["cc.algorithm=ndp"], &[2, 4]);
    same_results("receiver/study160_incast.toml", &["cc.algorithm=tocc", "workload.0.duration=50us"], &[2]);
    same_results("receiver/fairness8.toml", &[], &[2]);
}

/// Closed loops, whose slots start flows in their sender's part and tell the receiver's part: ncast4 on
/// a star (its receiver alone in a part on 4 threads), with Homa (the receiver's token state made from
/// the notice) and NDP (switches return trimmed headers to later flows' senders); n-cast on the
/// quickstart's fat-tree; Marlin's flow-fidelity test; and its comprehensive test cut to 1,024 slots.
#[test]
fn closed_loops_give_the_same_files_on_several_threads() {
    same_results("closed_loop/ncast4.toml", &[], &[2, 4]);
    same_results("closed_loop/ncast4.toml", &["cc.algorithm=homa", "workload.0.duration=3ms"], &[2]);
    same_results("closed_loop/ncast4.toml", &["cc.algorithm=ndp", "workload.0.duration=3ms"], &[2]);
    same_results("closed_loop/fat_tree_ncast.toml", &[], &[2, 4]);
    same_results("tester/flow_fidelity.toml", &["workload.0.duration=20ms"], &[2]);
    let slots = ["workload.0.flows_per_pair=64", "workload.0.duration=300us"];
    same_results("tester/comprehensive.toml", &slots, &[2]);
}

/// Long-lived flows whose receivers read the size their senders set at the stop, on RoCC's incast run
/// 2 ms past its 6 ms stops: Homa and ExpressPass (each receiver learns where its stream ends) and
/// DCTCP acknowledging every third packet (the receiver acknowledges a stopped flow's last packet at
/// once); and DCTCP with Cubic acknowledging every 3 KB. Each stop is a window's end, where the sender's
/// part tells the receiver's part what the flow sent; without that, the first three cases differ on 2
/// threads.
#[test]
fn long_lived_flows_whose_receivers_read_their_stop_give_the_same_files_on_several_threads() {
    let past_the_stops = "simulation.duration=8ms";
    same_results("signals/rocc_incast.toml", &["cc.algorithm=homa", past_the_stops], &[2, 4]);
    same_results("signals/rocc_incast.toml", &["cc.algorithm=expresspass", past_the_stops], &[2]);
    let delayed = ["cc.algorithm=dctcp", "host.ack_every_packets=3", past_the_stops];
    same_results("signals/rocc_incast.toml", &delayed, &[2, 4]);
    same_results("mix/dctcp_cubic.toml", &["host.ack_every_bytes=\"3KB\""], &[2]);
}

/// What cannot be cut: more threads than hosts, and links without propagation delay (no lookahead).
#[test]
fn runs_that_cannot_be_cut_are_refused_with_the_reason() {
    let hosts = refusal("bed/star3.toml", &[], 4);
    assert!(hosts.contains("4 threads need at least as many hosts; the topology has 3"), "{hosts}");
    let delay = refusal("quickstart.toml", &["topology.delay=\"0ns\""], 2);
    assert!(delay.contains("simulation.threads = 2") && delay.contains("without propagation delay"), "{delay}");
}

#[test]
fn a_thread_count_out_of_range_is_a_scenario_error() {
    for threads in ["0", "1025"] {
        let path = scenario("quickstart.toml");
        let error = sluice_scenario::load(&path, &[format!("simulation.threads={threads}")], None)
            .and_then(|s| sluice_scenario::resolve(&s).map(|_| ()))
            .expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("simulation.threads") && text.contains("1 to 1024"), "{text}");
    }
}
