//! End-to-end tests of what the figures in a run's output files mean: goodput counts each delivered
//! byte once, drops are split into data and control packets, a run that hits its time limit says so,
//! unset trace values are empty, a trace keeps at most `trace_max_rows` samples and counts the rest, and
//! throughput samples cover the whole run with their kind of bytes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Four senders each send 100 KB to host 0 of a five-host star at time 0; nothing random.
const INCAST: &str = r#"name = "incast"

[topology]
kind = "star"
hosts = 5
rate = "100Gbps"
delay = "1us"

[[workload]]
kind = "incast"
receiver = 0
senders = 4
size = "100KB"
start = "0us"

[output]
trace_flows = [0]
throughput_flows = [0, 1, 2, 3]
throughput_ports = ["sw0:p0"]
sample_interval = "7us"
"#;

/// A fresh directory under the system temporary directory, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("sluice-outputs-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Scratch { path }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path.join(name);
        fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, name: &str) -> String {
        let path = self.path.join(name);
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    fn summary(&self) -> Value {
        serde_json::from_str(&self.read("out/summary.json")).expect("summary.json is JSON")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Exit status and stderr of one invocation.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

/// Runs `sluice run SCENARIO --out out --quiet ARGS...` in `dir`; asserts a zero exit status.
fn run(dir: &Scratch, scenario: &Path, args: &[&str]) -> Outcome {
    let output = Command::new(SLUICE)
        .arg("run")
        .arg(scenario)
        .args(["--out", "out", "--quiet"])
        .args(args)
        .current_dir(&dir.path)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {SLUICE}: {e}"));
    let outcome =
        Outcome { code: output.status.code(), stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8") };
    assert_eq!(outcome.code, Some(0), "sluice run {} {args:?} failed:\n{}", scenario.display(), outcome.stderr);
    outcome
}

/// A bundled scenario.
fn bundled(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(path)
}

fn u64_at(value: &Value, path: &[&str]) -> u64 {
    let v = path.iter().fold(value, |v, key| &v[key]);
    v.as_u64().unwrap_or_else(|| panic!("{path:?} is not an unsigned integer: {v}"))
}

fn f64_at(value: &Value, path: &[&str]) -> f64 {
    let v = path.iter().fold(value, |v, key| &v[key]);
    v.as_f64().unwrap_or_else(|| panic!("{path:?} is not a number: {v}"))
}

/// The rows of a CSV file as maps from header to field (no quoted fields in the files read here).
fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines.map(|l| header.iter().map(|h| h.to_string()).zip(l.split(',').map(str::to_string)).collect()).collect()
}

#[test]
fn goodput_counts_each_delivered_byte_once() {
    let dir = Scratch::new("goodput");
    // DCQCN resends a lot here: host drops make go-back-N send whole windows again.
    run(&dir, &bundled("host/host-congestion.toml"), &["--set", "cc.algorithm=dcqcn"]);
    let s = dir.summary();
    let t = &s["totals"];
    let goodput = u64_at(t, &["goodput_bytes"]);
    assert!(u64_at(t, &["retransmitted_bytes"]) > 0, "the scenario resends: {t}");
    assert!(u64_at(t, &["bytes_delivered"]) > 2 * goodput, "duplicates reached the receiver but are not goodput: {t}");
    let acked: u64 =
        s["long_lived"]["flows"].as_array().unwrap().iter().map(|f| f["delivered_bytes"].as_u64().unwrap()).sum();
    // The receiver holds at least what its sender heard of, and at most one window more.
    assert!(goodput >= acked && goodput - acked < 1_000_000, "goodput {goodput} B, acknowledged {acked} B");
    let seconds = f64_at(&s, &["run", "sim_time_ns"]) * 1e-9;
    let expected = goodput as f64 * 8.0 / seconds / 1e9;
    assert!((f64_at(t, &["goodput_gbps"]) - expected).abs() < 1e-5, "goodput_gbps is goodput_bytes over time: {t}");
}

#[test]
fn a_finished_incast_reports_its_bytes_utilisation_and_samples() {
    let dir = Scratch::new("incast");
    let scenario = dir.write("incast.toml", INCAST);
    run(&dir, &scenario, &[]);
    let s = dir.summary();
    let t = &s["totals"];
    assert_eq!(u64_at(t, &["goodput_bytes"]), 400_000, "four flows of 100 KB: {t}");
    assert_eq!(s["run"]["hit_time_limit"], false);
    // Every flow is active from 0 to its finish, so the union ends at the last finish: the run's end.
    assert_eq!(f64_at(t, &["active_time_ns"]), f64_at(&s, &["run", "sim_time_ns"]));
    let util = &t["link_utilisation"];
    assert_eq!(util["max_at"], "sw0:p0", "the port into the receiver is the busiest: {util}");
    let max = f64_at(util, &["max"]);
    assert!(max > 0.8 && max <= 1.0, "the incast keeps the receiver's link busy: {util}");
    assert!(f64_at(util, &["mean"]) < max, "{util}");

    let rows = csv_rows(&dir.read("out/throughput.csv"));
    let sim_end_ns = f64_at(&s, &["run", "sim_time_ns"]);
    for flow in 0..4 {
        let label = format!("flow {flow}");
        let series: Vec<_> = rows.iter().filter(|r| r["label"] == label).collect();
        assert!(series.iter().all(|r| r["bytes_kind"] == "payload"), "{label} counts payload");
        let bytes: u64 = series.iter().map(|r| r["bytes"].parse::<u64>().unwrap()).sum();
        assert_eq!(bytes, 100_000, "{label}: the samples cover the whole run, the last partial interval included");
        let last = series.last().unwrap();
        assert_eq!(last["time_ns"].parse::<f64>().unwrap(), sim_end_ns, "{label} ends with the run");
        let length: f64 = last["interval_ns"].parse().unwrap();
        assert!(length > 0.0 && length < 7000.0, "the run ends between samples: {last:?}");
    }
    let port: Vec<_> = rows.iter().filter(|r| r["label"] == "sw0:p0").collect();
    assert!(!port.is_empty() && port.iter().all(|r| r["bytes_kind"] == "wire"), "ports count wire bytes");
    let queue: Vec<u64> = port.iter().map(|r| r["queue_bytes"].parse().unwrap()).collect();
    assert!(queue.iter().any(|&q| q > 10_000), "four senders into one port build a queue: {queue:?}");
    assert_eq!(queue.last(), Some(&0), "the queue has drained when the last flow finishes: {queue:?}");
    assert!(rows.iter().filter(|r| r["bytes_kind"] == "payload").all(|r| r["queue_bytes"].is_empty()));
    for r in &rows {
        let (bytes, length): (f64, f64) = (r["bytes"].parse().unwrap(), r["interval_ns"].parse().unwrap());
        let gbps: f64 = r["gbps"].parse().unwrap();
        assert!((gbps - bytes * 8.0 / length).abs() < 1e-5, "gbps is bytes over the row's own interval: {r:?}");
    }
}

#[test]
fn token_drops_are_control_drops() {
    let dir = Scratch::new("tokens");
    run(&dir, &bundled("quickstart.toml"), &["--set", "cc.algorithm=expresspass"]);
    let t = &dir.summary()["totals"];
    let (drops, data, control) = (u64_at(t, &["drops"]), u64_at(t, &["data_drops"]), u64_at(t, &["control_drops"]));
    assert!(control > 0, "ExpressPass drops credits at the switches: {t}");
    assert_eq!(data, 0, "and no data: {t}");
    assert_eq!(drops, data + control);
    assert_eq!(u64_at(t, &["bytes_dropped"]), 0);
    let queues = csv_rows(&dir.read("out/queues.csv"));
    let ports: Vec<_> = queues.iter().filter(|r| r["kind"] == "port").collect();
    let column = |name: &str| ports.iter().map(|r| r[name].parse::<u64>().unwrap()).sum::<u64>();
    assert_eq!((column("drops"), column("data_drops"), column("control_drops")), (drops, data, control));
}

#[test]
fn a_run_stopped_by_its_time_limit_warns_and_says_so() {
    let dir = Scratch::new("limit");
    let late = "\n[[workload]]\nkind = \"incast\"\nreceiver = 1\nsenders = 2\nsize = \"10KB\"\nstart = \"50us\"\n";
    let scenario = dir.write("incast.toml", &INCAST.replace("[output]", &format!("{late}\n[output]")));
    let outcome = run(&dir, &scenario, &["--set", "simulation.time_limit=20us"]);
    let s = dir.summary();
    assert_eq!(s["run"]["hit_time_limit"], true);
    let overall = &s["overall"];
    assert_eq!(u64_at(overall, &["count"]), 6);
    assert_eq!(u64_at(overall, &["not_started"]), 2, "the flows starting at 50 us never started: {overall}");
    assert_eq!(u64_at(overall, &["unfinished"]), 6, "400 KB into one 100 Gbps link take 32 us: {overall}");
    let warning = outcome.stderr.lines().find(|l| l.starts_with("warning: ")).unwrap_or_else(|| {
        panic!("a warning even with --quiet:\n{}", outcome.stderr);
    });
    assert!(warning.contains("time limit") && warning.contains("0.020 ms"), "{warning}");
    assert!(warning.contains("6 of 6 flows unfinished (2 of them never started)"), "{warning}");
}

#[test]
fn a_run_that_finishes_prints_no_warning() {
    let dir = Scratch::new("no-limit");
    let scenario = dir.write("incast.toml", INCAST);
    let outcome = run(&dir, &scenario, &[]);
    assert_eq!(outcome.stderr, "", "a quiet run that finishes prints nothing");
}

#[test]
fn an_unset_ssthresh_is_an_empty_trace_value() {
    let dir = Scratch::new("trace");
    let scenario = dir.write("incast.toml", INCAST);
    run(&dir, &scenario, &["--set", "cc.algorithm=dctcp"]);
    let rows = csv_rows(&dir.read("out/trace.csv"));
    let ssthresh: Vec<_> = rows.iter().filter(|r| r["variable"] == "ssthresh").collect();
    assert!(!ssthresh.is_empty(), "DCTCP traces ssthresh");
    assert!(ssthresh.iter().any(|r| r["value"].is_empty()), "unset before the first window cut: {ssthresh:?}");
    for r in &rows {
        let value = r.get("value").map_or("", String::as_str);
        assert!(value.is_empty() || value.parse::<f64>().unwrap() < 1e18, "no u64::MAX leaks: {r:?}");
    }
}

/// Token algorithms keep their state at the receiver; traces show it, with units in the names.
#[test]
fn token_algorithms_trace_their_receivers() {
    let dir = Scratch::new("token-trace");
    let scenario = dir.write("incast.toml", INCAST);
    for (algorithm, variable) in [("expresspass", "credit_rate_bps"), ("homa", "token_window"), ("tocc", "alpha")] {
        run(&dir, &scenario, &["--set", &format!("cc.algorithm={algorithm}"), "--set", "switch.pfc.enabled=false"]);
        let rows = csv_rows(&dir.read("out/trace.csv"));
        let values: Vec<f64> =
            rows.iter().filter(|r| r["variable"] == variable).map(|r| r["value"].parse().unwrap()).collect();
        assert!(values.len() > 1, "{algorithm} traces {variable} over time: {rows:?}");
        assert!(rows.iter().all(|r| r["flow"] == "0"), "only the traced flow");
    }
    run(&dir, &scenario, &["--set", "cc.algorithm=expresspass", "--set", "switch.pfc.enabled=false"]);
    let rows = csv_rows(&dir.read("out/trace.csv"));
    let rtt: f64 = rows.iter().find(|r| r["variable"] == "rtt_ns").unwrap()["value"].parse().unwrap();
    assert!((4_000.0..100_000.0).contains(&rtt), "a star's RTT in nanoseconds, not picoseconds: {rtt}");
}

#[test]
fn throughput_flows_all_samples_every_flow() {
    let dir = Scratch::new("all");
    let scenario =
        dir.write("incast.toml", &INCAST.replace("throughput_flows = [0, 1, 2, 3]", "throughput_flows = \"all\""));
    run(&dir, &scenario, &["--set", "workload.0.senders=3"]);
    let rows = csv_rows(&dir.read("out/throughput.csv"));
    let mut labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str()).collect();
    labels.dedup();
    assert_eq!(labels, ["flow 0", "flow 1", "flow 2", "sw0:p0"]);
    assert!(dir.read("out/scenario.resolved.toml").contains("throughput_flows = \"all\""), "kept as written");
}

#[test]
fn throughput_flows_refuses_other_words_with_a_located_error() {
    let dir = Scratch::new("not-all");
    let scenario =
        dir.write("incast.toml", &INCAST.replace("throughput_flows = [0, 1, 2, 3]", "throughput_flows = \"every\""));
    let output = Command::new(SLUICE).arg("check").arg(&scenario).current_dir(&dir.path).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("incast.toml:18: output.throughput_flows:"), "{stderr}");
    assert!(stderr.contains("expected a list of flow ids or \"all\""), "{stderr}");
}

/// `scenario.resolved.toml` names the scenario's directory relative to itself, so a results tree moved
/// together with the scenario's data files still re-runs to the same results.
#[test]
fn the_resolved_scenario_moves_with_its_files() {
    let dir = Scratch::new("portable");
    fs::create_dir_all(dir.path.join("study/flows")).unwrap();
    dir.write("study/flows/list.csv", "src,dst,size_bytes,start_ns\n1,0,30000,0\n2,0,20000,1000\n");
    let scenario = dir.write(
        "study/list.toml",
        "[topology]\nkind = \"star\"\nhosts = 3\nrate = \"100Gbps\"\n\
         [[workload]]\nkind = \"flow_list\"\npath = \"flows/list.csv\"\n",
    );
    run(&dir, &scenario, &[]);
    let resolved = dir.read("out/scenario.resolved.toml");
    assert!(resolved.contains("base_dir = \"../study\""), "relative to the results directory:\n{resolved}");

    let moved = Scratch::new("portable-moved");
    fs::remove_dir_all(&moved.path).unwrap();
    fs::rename(&dir.path, &moved.path).unwrap();
    let output = Command::new(SLUICE)
        .args(["run", "out/scenario.resolved.toml", "--out", "again", "--quiet"])
        .current_dir(&moved.path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(moved.read("again/fct.csv"), moved.read("out/fct.csv"));
}

#[test]
fn a_trace_keeps_its_most_samples_and_says_how_many_it_left_out() {
    let dir = Scratch::new("trace-cap");
    let scenario = dir.write("incast.toml", INCAST);
    let every = ["--set", "cc.algorithm=dctcp", "--set", "output.trace_interval=0ps"];
    let whole = run(&dir, &scenario, &every);
    assert!(!whole.stderr.contains("trace samples were left out"), "{}", whole.stderr);
    assert!(dir.summary()["extra"].get("trace").is_none(), "no section when nothing was left out");
    // A sample is a line per variable in trace.csv, all at its time.
    let samples =
        |text: &str| csv_rows(text).iter().map(|r| r["time_ns"].clone()).collect::<std::collections::BTreeSet<_>>();
    let all = samples(&dir.read("out/trace.csv")).len() as u64;
    assert!(all > 40, "every change of flow 0's DCTCP window: {all} samples");

    let capped = run(&dir, &scenario, &[&every[..], &["--set", "output.trace_max_rows=40"]].concat());
    assert!(capped.stderr.contains("trace samples were left out"), "{}", capped.stderr);
    assert_eq!(samples(&dir.read("out/trace.csv")).len(), 40, "the first 40 samples are kept");
    let summary = dir.summary();
    assert_eq!(u64_at(&summary, &["extra", "trace", "max_rows_per_flow"]), 40);
    assert_eq!(u64_at(&summary, &["extra", "trace", "skipped_rows"]), all - 40, "every other row is counted");
    assert_eq!(summary["extra"]["trace"]["capped_flows"][0]["flow"], 0);
    assert!(dir.read("out/scenario.resolved.toml").contains("trace_max_rows = 40"));

    let refused = Command::new(SLUICE)
        .arg("run")
        .arg(&scenario)
        .args(["--set", "output.trace_max_rows=0", "--out", "none", "--quiet"])
        .current_dir(&dir.path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("output.trace_max_rows") && stderr.contains("between 1 and"), "{stderr}");
}
