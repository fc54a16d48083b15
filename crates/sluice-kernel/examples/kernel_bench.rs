//! The kernel datapath's costs (BENCHMARKS.md): for 1, 2, 4, 8, 16 and 32 flows saturating a 1 Gbps
//! tbf bottleneck between two network namespaces, under the agent's Cubic: the BPF side's run time per
//! ACK (`kernel.bpf_stats_enabled`, run_time_ns / run_cnt of the cong_control programs), reports per
//! second through the ring buffer, and the agent's CPU (its loop thread's getrusage). Right before each
//! row the same flows run under the floor program (`bpf/floor.bpf.c`: a `cong_control` that only runs
//! the kernel's Reno), whose cost per ACK is the floor under the same load.
//!
//! Run as root: `cargo run --release -p sluice-kernel --example kernel_bench [-- SECONDS [GSO_SEGMENTS
//! [DEADLINE [FLOWS [RATE [ALGORITHM]]]]]]`; GSO_SEGMENTS caps the segments per offloaded packet (0: no cap), DEADLINE
//! replaces the 1 ms report deadline (e.g. 4ms; `-`: the default), FLOWS is a comma-separated list of flow
//! counts (`-`: 1 to 32), RATE is the bottleneck's tbf rate (default 1gbit; e.g. 10gbit to measure at
//! the highest ACK rates the machine reaches), ALGORITHM is the agent's algorithm with its parameters
//! (`dctcp`, `dctcp:program=true` to run DCTCP's reporting as a datapath program on the BPF side,
//! `dctcp_burst`; default cubic). Built with `SLUICE_BPF_CFLAGS=-DSLK_PROFILE=1`, the BPF side times its rare parts (reading a
//! decision, sending a report) and each row is followed by what they cost.

use std::time::Duration;

use sluice_kernel::config::AgentConfig;
use sluice_kernel::loader::{read_profile, registered_names, BpfRunTime, Floor, FLOOR_NAME};
use sluice_kernel::runtime::{request_stop, run, RunOptions, RunSummary};
use sluice_testbed::{exclusive, unavailable, TestBed};

const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";

fn main() {
    if let Some(why) = unavailable() {
        eprintln!("kernel_bench cannot run: {why}");
        std::process::exit(2);
    }
    let _lock = exclusive().expect("the kernel test-bed lock");
    let seconds: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let flow_counts: Vec<u32> = std::env::args()
        .nth(4)
        .filter(|t| t != "-")
        .map(|list| list.split(',').map(|n| n.trim().parse().expect("FLOWS: comma-separated numbers")).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16, 32]);
    let old_stats = std::fs::read_to_string(STATS).unwrap_or_else(|_| "0".into());
    std::fs::write(STATS, "1").expect("enable kernel.bpf_stats_enabled");
    let rate = std::env::args().nth(5).unwrap_or_else(|| "1gbit".into());
    let bed = TestBed::new("bn", &rate, "1mb").expect("test bed");
    println!(
        "bottleneck: tbf {rate}; algorithm {}",
        std::env::args().nth(6).filter(|t| t != "-").unwrap_or("cubic".into())
    );
    if let Some(segments) = std::env::args().nth(2).and_then(|s| s.parse().ok()).filter(|&s: &u32| s > 0) {
        bed.limit_gso(segments).expect("gso_max_segs");
        println!("sender GSO capped at {segments} segments per packet");
    }
    println!(
        "| flows | throughput | ACKs/s | BPF ns per ACK | floor ns per ACK (ACKs/s) | BPF ns per call (all ops) | \
         reports/s | agent CPU (% of one core) | fallbacks | ring full |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for flows in flow_counts {
        let floor = floor_cost(&bed, flows, seconds);
        row(&bed, flows, seconds, floor);
    }
    drop(bed);
    let _ = std::fs::write(STATS, old_stats.trim());
}

/// The floor program's ns per ACK and ACKs per second for `flows` flows.
fn floor_cost(bed: &TestBed, flows: u32, seconds: u32) -> (f64, f64) {
    let floor = Floor::register().expect("register the floor program");
    let before = BpfRunTime::read_floor();
    bed.transfer(5401, FLOOR_NAME, flows, seconds).expect("iperf3 under the floor program");
    let cost = BpfRunTime::read_floor().since(&before);
    drop(floor);
    (cost.ns_per_ack(), cost.acks as f64 / seconds as f64)
}

fn row(bed: &TestBed, flows: u32, seconds: u32, floor: (f64, f64)) {
    let mut config = AgentConfig { pin_dir: "/sys/fs/bpf/slk-bench".into(), ..AgentConfig::default() };
    if let Some(text) = std::env::args().nth(3).filter(|t| t != "-") {
        config.deadline = AgentConfig::parse_duration_arg("deadline", &text).expect("deadline");
    }
    if let Some(choice) = std::env::args().nth(6).filter(|t| t != "-") {
        let (name, params) = choice.split_once(':').unwrap_or((&choice, ""));
        config.default = name.to_string();
        for param in params.split(',').filter(|p| !p.is_empty()) {
            config.add_param_arg(&format!("{name}.{param}")).expect("ALGORITHM: NAME[:KEY=VALUE,...]");
        }
    }
    let resolved = config.resolve("kernel_bench").expect("settings");
    let agent = std::thread::spawn(move || run(resolved, &RunOptions::default(), &mut |_| {}));
    while registered_names().len() < 8 {
        if agent.is_finished() {
            let outcome = agent.join().expect("agent thread");
            panic!("the agent stopped before registering: {:?}", outcome.err());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = BpfRunTime::read();
    let transfer = bed.transfer(5401, "sluice", flows, seconds).expect("iperf3");
    let after = BpfRunTime::read();
    let profile = read_profile();
    std::thread::sleep(Duration::from_millis(300));
    request_stop();
    let summary: RunSummary = agent.join().expect("agent thread").expect("agent");
    let cost = after.since(&before);
    println!(
        "| {flows} | {:.3} Gbps | {:.0} | {:.0} | {:.0} ({:.0}) | {:.0} | {:.0} | {:.2} | {} | {} |",
        transfer.received_bps / 1e9,
        cost.acks as f64 / seconds as f64,
        cost.ns_per_ack(),
        floor.0,
        floor.1,
        cost.ns_per_call(),
        summary.messages_per_second,
        summary.cpu_fraction * 100.0,
        summary.kernel.fallbacks,
        summary.kernel.ringbuf_full
    );
    let k = &summary.kernel;
    if k.fallbacks + k.stale + k.malformed > 0 {
        let lag = &summary.agent.answer_lag;
        println!(
            "({flows} flows: {} fallbacks, {} to Cubic; {} answers past the watchdog, longest {} us; longest gap \
             between drains {} us (SCHED_FIFO: {}); decisions rejected {} stale, {} malformed)",
            k.fallbacks,
            k.fallbacks_to_cubic,
            lag.over_watchdog,
            lag.max_us,
            summary.longest_drain_gap_us,
            summary.realtime,
            k.stale,
            k.malformed
        );
    }
    if let Some(sections) = profile {
        let parts: Vec<String> = sections
            .iter()
            .map(|(name, runs, ns)| format!("{name} {runs} x {:.0} ns", *ns as f64 / (*runs).max(1) as f64))
            .collect();
        println!("profile ({flows} flows): {}", parts.join(", "));
    }
    let _ = std::fs::remove_dir_all("/sys/fs/bpf/slk-bench");
}
