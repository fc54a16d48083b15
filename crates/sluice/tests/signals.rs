//! End-to-end tests of switch signals with RoCC (`scenarios/signals/rocc_incast.toml`): the switches'
//! fair rate reaches the senders, in feedback packets or on the ACKs; the flows converge to equal rates
//! with the receiver's port busy and its queue near RoCC's reference; runs repeat byte for byte; bad
//! parameters are refused where they are written; kernel TCP, which has no signal hook, refuses the algorithm.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_cc::contract::{check, Capabilities};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
const G100: f64 = 100e9;

fn scratch(tag: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("signals-{tag}"));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).unwrap();
    path
}

fn bundled() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/signals/rocc_incast.toml")
}

fn run(out: &Path, args: &[&str]) -> Output {
    let output =
        Command::new(SLUICE).arg("run").arg(bundled()).arg("--out").arg(out).arg("--quiet").args(args).output();
    output.unwrap()
}

fn run_ok(out: &Path, args: &[&str]) {
    let output = run(out, args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The receiver's port samples of throughput.csv: (end of interval in ns, Gbps, queue bytes).
fn port_samples(dir: &Path) -> Vec<(f64, f64, f64)> {
    let text = fs::read_to_string(dir.join("throughput.csv")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("sw0:p0,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].parse().unwrap(), f[3].parse().unwrap(), f[6].parse().unwrap())
        })
        .collect()
}

/// trace.csv's values of `variable` for `flow`, in time order: (time in ns, value).
fn trace(dir: &Path, flow: u32, variable: &str) -> Vec<(f64, f64)> {
    let text = fs::read_to_string(dir.join("trace.csv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1] == flow.to_string() && f[2] == variable).then(|| (f[0].parse().unwrap(), f[3].parse().unwrap()))
        })
        .collect()
}

/// After the late flows joined and the loop settled (from 3 ms on): the port runs at line rate with
/// its queue near RoCC's 150 KB reference, and the eight flows share it equally.
fn assert_converged(dir: &Path, what: &str) {
    let settled: Vec<(f64, f64, f64)> = port_samples(dir).into_iter().filter(|s| s.0 > 3e6).collect();
    assert!(settled.len() >= 25, "{what}: {} samples", settled.len());
    let mean = |f: fn(&(f64, f64, f64)) -> f64| settled.iter().map(f).sum::<f64>() / settled.len() as f64;
    let (gbps, queue) = (mean(|s| s.1), mean(|s| s.2));
    assert!(gbps > 99.0, "{what}: the port ran at {gbps} Gbps");
    assert!((100e3..200e3).contains(&queue), "{what}: mean queue {queue} B, reference 150 KB");
    let worst = settled.iter().map(|s| s.2).fold(0.0, f64::max);
    assert!(worst < 400e3, "{what}: the queue reached {worst} B after settling");
    let s = summary(dir);
    let jain = s["long_lived"]["jain_fairness"].as_f64().unwrap();
    assert!(jain > 0.99, "{what}: Jain {jain}");
    // The two flows that joined at 2 ms get the same share as the six before them by the end.
    for flow in [0, 6] {
        let rate = trace(dir, flow, "rate_bps").last().unwrap().1;
        assert!((rate - G100 / 8.0).abs() < 0.1 * G100 / 8.0, "{what}: flow {flow} ends at {rate} bit/s");
    }
}

#[test]
fn rocc_converges_to_fair_rates_with_the_queue_at_its_reference() {
    let dir = scratch("switch");
    run_ok(&dir, &[]);
    assert_converged(&dir, "feedback packets");
    let s = summary(&dir);
    assert_eq!(s["totals"]["drops"], 0, "no packet lost");
    // Once per 40 us interval to each queued flow: about 25 per interval over 6 ms.
    let told = notifications(&s);
    assert!((1_000..8 * 150 + 1).contains(&told), "{told} feedback packets");
}

/// The feedback packets switches sent (summary.json's `extra.switch_notifications`).
fn notifications(summary: &serde_json::Value) -> u64 {
    summary["extra"]["switch_notifications"].as_u64().expect("switch_notifications")
}

#[test]
fn the_switch_signal_reaches_the_senders_algorithm() {
    let dir = scratch("reach");
    run_ok(&dir, &[]);
    // Flow 0 starts at line rate; the switch's first fair rate (40 us in) cuts it, and the sender
    // follows the switch (node 9 of the star: hosts are 0 to 8) from then on.
    let rates = trace(&dir, 0, "rate_bps");
    assert_eq!(rates[0].1, G100);
    let first_cut = rates.iter().find(|r| r.1 < G100).expect("a fair rate below line rate");
    assert!(first_cut.0 > 40e3 && first_cut.0 < 60e3, "the first rate came at {} ns", first_cut.0);
    assert!(rates.iter().all(|r| r.1 % 10e6 == 0.0), "fair rates are whole 10 Mbps units");
    let from = trace(&dir, 0, "from_switch");
    assert_eq!(from[0].1, -1.0);
    assert_eq!(from.last().unwrap().1, 9.0);
    assert!(notifications(&summary(&dir)) > 1_000);
}

#[test]
fn the_fair_rate_carried_on_the_acks_converges_too() {
    let dir = scratch("path");
    run_ok(&dir, &["--set", "cc.params.feedback=path"]);
    assert_converged(&dir, "rates on the ACKs");
    // The path's value comes back on ACKs: no switch sends a feedback packet, and no sender records one.
    assert_eq!(notifications(&summary(&dir)), 0);
    assert!(trace(&dir, 0, "from_switch").iter().all(|r| r.1 == -1.0));
    assert!(trace(&dir, 0, "rate_bps").iter().any(|r| r.1 < G100));
}

#[test]
fn runs_repeat_byte_for_byte() {
    let (a, b) = (scratch("again-a"), scratch("again-b"));
    for dir in [&a, &b] {
        run_ok(dir, &["--set", "simulation.duration=1ms"]);
    }
    for file in ["fct.csv", "queues.csv", "throughput.csv", "trace.csv"] {
        assert_eq!(fs::read(a.join(file)).unwrap(), fs::read(b.join(file)).unwrap(), "{file}");
    }
    let strip = |dir: &Path| {
        let mut s = summary(dir);
        s["run"].as_object_mut().unwrap().retain(|k, _| !k.contains("wall"));
        s
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn bad_parameters_are_refused_where_they_are_set() {
    let dir = scratch("bad");
    let cases: BTreeMap<&str, &str> = [
        ("cc.params.q_max=100KB", "q_max"),
        ("cc.params.feedback=pigeon", "feedback"),
        ("cc.params.update_interval=0us", "update_interval"),
        ("cc.params.alpha_bar=-1", "alpha_bar"),
    ]
    .into_iter()
    .collect();
    for (set, key) in cases {
        let output = run(&dir.join("out"), &["--set", set]);
        let message = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{set}: {message}");
        assert!(message.contains(&format!("--set {set}")), "{set}: {message}");
        assert!(message.contains(&format!("cc.params.{key}: ")), "{set}: {message}");
        assert!(!dir.join("out").exists(), "{set}: nothing written");
    }
}

/// Kernel TCP has no switch that runs the hook and refuses RoCC; the UDP datapath, whose software switch
/// runs it, takes RoCC (`crates/sluice/tests/bed_datapaths.rs` runs it on the bed).
#[test]
fn kernel_tcp_refuses_rocc_and_the_udp_datapath_takes_it() {
    let rocc = sluice_cc::lookup("rocc").unwrap();
    assert_eq!(check(rocc, &Capabilities::SIMULATOR), Ok(()));
    assert_eq!(check(rocc, &Capabilities::UDP), Ok(()));
    let message = check(rocc, &Capabilities::KERNEL_TCP).unwrap_err().to_string();
    assert_eq!(
        message,
        "algorithm `rocc` needs switches that compute its per-hop signal and send it back to the sender; \
         kernel TCP does not provide it"
    );
}

/// Three flows cross a 25 Gbps bottleneck between two switches of 100 Gbps hosts: each flow takes its
/// bottleneck's fair rate, whether the bottleneck switch tells it (it follows that switch, sw0) or the
/// rates of both switches on its path come back on the ACKs (their minimum: the receiver's port at sw1
/// is not congested).
#[test]
fn each_flow_takes_its_bottlenecks_rate() {
    let dir = scratch("dumbbell");
    let scenario = dir.join("dumbbell.toml");
    fs::write(
        &scenario,
        r#"name = "rocc_dumbbell"
[simulation]
duration = "4ms"
[topology]
kind = "dumbbell"
left = 3
right = 3
host_rate = "100Gbps"
bottleneck_rate = "25Gbps"
delay = "1us"
[[workload]]
kind = "long_lived"
flows = [{ src = 0, dst = 3, stop = "4ms" }, { src = 1, dst = 4, stop = "4ms" }, { src = 2, dst = 5, stop = "4ms" }]
[cc]
algorithm = "rocc"
[output]
trace_flows = [0, 1, 2]
trace_interval = "10us"
throughput_ports = ["sw0:p3"]
sample_interval = "100us"
"#,
    )
    .unwrap();
    for (feedback, follows) in [("switch", 6.0), ("path", -1.0)] {
        let out = dir.join(feedback);
        let output = Command::new(SLUICE)
            .arg("run")
            .arg(&scenario)
            .args(["--set", &format!("cc.params.feedback={feedback}"), "--quiet", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        for flow in 0..3 {
            let rate = trace(&out, flow, "rate_bps").last().unwrap().1;
            assert!((rate - 25e9 / 3.0).abs() < 0.05 * 25e9 / 3.0, "{feedback}: flow {flow} at {rate} bit/s");
            assert_eq!(trace(&out, flow, "from_switch").last().unwrap().1, follows, "{feedback}: flow {flow}");
        }
        let text = fs::read_to_string(out.join("throughput.csv")).unwrap();
        let last: Vec<&str> = text.lines().rfind(|l| l.starts_with("sw0:p3,")).unwrap().split(',').collect();
        let (gbps, queue): (f64, f64) = (last[3].parse().unwrap(), last[6].parse().unwrap());
        assert!(gbps > 24.5, "{feedback}: the bottleneck ran at {gbps} Gbps");
        assert!((100e3..200e3).contains(&queue), "{feedback}: its queue held {queue} B");
    }
}
