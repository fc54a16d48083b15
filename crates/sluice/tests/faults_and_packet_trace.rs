//! End-to-end tests of fault injection (`[[fault]]`) and the packet trace (`[output.packet_trace]`):
//! Marlin's CC correctness test on the bundled scenario (losses at A and C, marks at B, and the cwnd and
//! alpha trace each must leave), a link taken down and up again, a random loss fraction that is
//! reproducible, packets.csv's rows for chosen flows and ports (faulted packets among them, PFC pauses,
//! the row bound), and bad entries refused with located errors.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A directory under the system temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("sluice-faults-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.0.join(name)).unwrap_or_else(|e| panic!("cannot read {name}: {e}"))
    }

    fn summary(&self, out: &str) -> Value {
        serde_json::from_str(&self.read(&format!("{out}/summary.json"))).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `sluice run SCENARIO --out OUT --quiet ARGS...` in `dir`.
fn sluice_run(dir: &Scratch, scenario: &Path, out: &str, args: &[&str]) -> Output {
    Command::new(SLUICE)
        .arg("run")
        .arg(scenario)
        .args(["--out", out, "--quiet"])
        .args(args)
        .current_dir(&dir.0)
        .output()
        .unwrap()
}

fn run_ok(dir: &Scratch, scenario: &Path, out: &str, args: &[&str]) {
    let output = sluice_run(dir, scenario, out, args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// The rows of trace.csv for `variable`: (time ns, value).
fn trace(dir: &Scratch, out: &str, variable: &str) -> Vec<(f64, f64)> {
    let text = dir.read(&format!("{out}/trace.csv"));
    let mut rows = Vec::new();
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[2] == variable {
            rows.push((cells[0].parse().unwrap(), cells[3].parse().unwrap()));
        }
    }
    rows
}

/// Each drop of a traced value: (value before, value after), in time order.
fn cuts(values: &[(f64, f64)]) -> Vec<(f64, f64)> {
    values.windows(2).filter(|w| w[1].1 < w[0].1).map(|w| (w[0].1, w[1].1)).collect()
}

#[test]
fn marlin_correctness_test_shows_slow_start_two_halvings_and_one_ecn_cut() {
    let dir = Scratch::new("marlin");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/faults/marlin_dctcp.toml");
    run_ok(&dir, &scenario, "out", &[]);
    let summary = dir.summary("out");
    let faults = summary["extra"]["faults"].as_array().unwrap();
    let did: Vec<(u64, u64)> =
        faults.iter().map(|f| (f["dropped"].as_u64().unwrap(), f["marked"].as_u64().unwrap())).collect();
    assert_eq!(did, [(1, 0), (0, 10), (1, 0)], "{faults:?}");
    assert_eq!(faults[0]["port"], "sw0:p1", "a flow's faults default to the port into its receiver");
    assert_eq!(summary["totals"]["data_drops"], 2);
    assert_eq!(summary["totals"]["ecn_marks"], 10, "the switch queue stays empty: every mark is injected");

    let cwnd = trace(&dir, "out", "cwnd");
    assert_eq!(cwnd[0].1, 1000.0, "the window starts at one packet");
    // Slow start doubles up to ssthresh (64 packets), then the window grows by less than a packet per ACK.
    let past = cwnd.iter().position(|&(_, c)| c > 64_000.0).unwrap();
    assert_eq!(cwnd[past - 1].1, 64_000.0, "slow start ends at ssthresh");
    assert!(cwnd[past].1 - 64_000.0 < 1000.0, "congestion avoidance grows by less than one packet per ACK");

    // A and C: losses halve the window (ssthresh = in flight / 2, RFC 5681); B: a cut by alpha / 2.
    let cut_times: Vec<f64> = cwnd.windows(2).filter(|w| w[1].1 < w[0].1).map(|w| w[1].0).collect();
    let cuts = cuts(&cwnd);
    assert_eq!(cuts.len(), 3, "one cut per fault: {cuts:?}");
    for (i, &(before, after)) in cuts.iter().enumerate() {
        let ratio = after / before;
        match i {
            0 | 2 => assert!((0.3..0.6).contains(&ratio), "loss {i}: {before} -> {after}"),
            _ => assert!((0.9..1.0).contains(&ratio), "ECN cut: {before} -> {after}"),
        }
    }
    // Alpha decays from 1 throughout, except at B: the updates of the one or two windows of data that
    // held the marked packets (a few microseconds apart) raise it.
    let alpha = trace(&dir, "out", "alpha");
    let rises: Vec<f64> = alpha.windows(2).filter(|w| w[1].1 > w[0].1).map(|w| w[1].0).collect();
    assert!((1..=2).contains(&rises.len()), "alpha rises at B only: {rises:?}");
    assert!(rises.iter().all(|&t| (t - cut_times[1]).abs() < 10_000.0), "rises {rises:?}, B at {}", cut_times[1]);
    assert!(alpha.last().unwrap().1 < 0.05);
}

/// Two senders to one receiver of a star, with a long flow each; `faults` appended.
fn star(faults: &str) -> String {
    format!(
        r#"name = "star"
[topology]
kind = "star"
hosts = 3
rate = "100Gbps"
delay = "1us"

[[workload]]
kind = "incast"
receiver = 2
senders = 2
size = "2MB"
start = "0us"

[host]
rto_min = "20us"

[cc]
algorithm = "dctcp"

[output]
throughput_ports = ["sw0:p2"]
sample_interval = "10us"
{faults}"#
    )
}

/// The star's link to the receiver down from `from` until `until`.
fn link_down(from: &str, until: &str) -> String {
    format!("[[fault]]\nkind = \"link_down\"\nport = \"sw0:p2\"\nfrom = \"{from}\"\nuntil = \"{until}\"\n")
}

#[test]
fn a_link_down_carries_nothing_until_it_comes_back_and_the_flows_still_finish() {
    let dir = Scratch::new("link");
    let scenario = dir.write("down.toml", &star(&link_down("50us", "150us")));
    run_ok(&dir, &scenario, "out", &[]);
    let summary = dir.summary("out");
    assert_eq!(summary["overall"]["unfinished"], 0);
    assert!(summary["extra"]["faults"][0]["dropped"].as_u64().unwrap() > 0);
    // throughput.csv: label,time_ns,bytes,gbps,...; the samples ending within the downtime carry nothing.
    let samples: Vec<(f64, u64)> = dir
        .read("out/throughput.csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect();
    let during: Vec<u64> =
        samples.iter().filter(|(t, _)| (60_000.0..=150_000.0).contains(t)).map(|&(_, b)| b).collect();
    assert!(!during.is_empty() && during.iter().all(|&b| b == 0), "{during:?}");
    let after: u64 = samples.iter().filter(|(t, _)| *t > 160_000.0).map(|&(_, b)| b).sum();
    assert!(after > 0, "the link carries traffic again");

    run_ok(&dir, &dir.write("clean.toml", &star("")), "clean", &[]);
    let slower = |s: &Value| {
        s["buckets"].as_array().unwrap().iter().map(|b| b["fct_ns"]["avg"].as_f64().unwrap_or(0.0)).sum::<f64>()
    };
    assert!(slower(&summary) > slower(&dir.summary("clean")) + 100_000.0, "the downtime delays the flows");
}

/// A link down for a millisecond with a 20 us minimum RTO: each sender times out every 20 us while it
/// is down, or, backing off (`host.rto_backoff`), at 20, 40, 80, 160, 320 and 640 us after the last
/// progress (about 50 us in): six times, the last at about 1,310 us, after the link came back at 1,050.
#[test]
fn backing_off_the_retransmission_timer_doubles_it_while_a_link_is_down() {
    let dir = Scratch::new("backoff");
    let scenario = dir.write("down.toml", &star(&link_down("50us", "1050us")));
    run_ok(&dir, &scenario, "fixed", &[]);
    run_ok(&dir, &scenario, "backoff", &["--set", "host.rto_backoff=true"]);
    let timeouts = |out: &str| dir.summary(out)["totals"]["timeouts"].as_u64().expect("totals.timeouts");
    let finishes = |out: &str| -> Vec<f64> {
        dir.read(&format!("{out}/fct.csv"))
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(5).unwrap().parse().unwrap())
            .collect()
    };
    assert!(timeouts("fixed") >= 90, "{} timeouts at a fixed 20 us", timeouts("fixed"));
    assert_eq!(timeouts("backoff"), 12, "six doublings per sender");
    for (fixed, backed_off) in finishes("fixed").into_iter().zip(finishes("backoff")) {
        assert!(fixed < 1_400_000.0, "a fixed timer resends within 20 us of the link's return ({fixed} ns)");
        assert!(backed_off > 1_310_000.0, "the backed-off timer waits until about 1,310 us ({backed_off} ns)");
    }
    assert_eq!(dir.summary("backoff")["overall"]["unfinished"], 0);
}

#[test]
fn a_random_loss_fraction_is_reproducible_and_near_its_share() {
    let dir = Scratch::new("fraction");
    let lossy = "[[fault]]\nkind = \"drop\"\nport = \"sw0:p2\"\nfraction = 0.02\n";
    let scenario = dir.write("lossy.toml", &star(lossy));
    run_ok(&dir, &scenario, "a", &[]);
    run_ok(&dir, &scenario, "b", &[]);
    assert_eq!(dir.read("a/fct.csv"), dir.read("b/fct.csv"), "the same seed gives the same losses");
    let summary = dir.summary("a");
    let dropped = summary["extra"]["faults"][0]["dropped"].as_u64().unwrap() as f64;
    let packets = 4_000.0; // 4 MB in 1000-byte packets, before retransmissions and ACKs
    assert!(dropped > 0.005 * packets && dropped < 0.05 * packets, "{dropped} dropped");
    assert_eq!(summary["overall"]["unfinished"], 0);
    run_ok(&dir, &scenario, "c", &["--seed", "2"]);
    assert_ne!(dir.read("a/fct.csv"), dir.read("c/fct.csv"), "another seed draws other losses");
}

/// Runs each scenario text and checks that it is refused (exit 2, nothing written) with an error
/// located in the file that names the key at fault and says what is wrong.
fn assert_each_refused(dir: &Scratch, cases: &[(String, &str, &str)]) {
    for (i, (text, key, says)) in cases.iter().enumerate() {
        let scenario = dir.write(&format!("bad{i}.toml"), text);
        let output = sluice_run(dir, &scenario, "out", &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains(says), "{text}: {stderr}");
        assert!(stderr.contains(&format!("bad{i}.toml:")), "located in the file: {stderr}");
        assert!(!dir.0.join("out").exists(), "nothing written");
    }
}

#[test]
fn bad_fault_entries_are_refused_with_the_line_at_fault() {
    let cases = [
        ("kind = \"drop\"\nflow = 7\npackets = [1]", "fault.0.flow", "there is no flow 7"),
        ("kind = \"drop\"\nport = \"h0:p0\"\nfraction = 0.1", "fault.0.port", "\"sw0:p0\""),
        ("kind = \"link_down\"\nport = \"sw0:p9\"", "fault.0.port", "has 3 ports"),
        ("kind = \"mark\"\nport = \"sw0:p1\"\nfraction = 2.0", "fault.0.fraction", "outside (0, 1]"),
        ("kind = \"drop\"\nflow = 0", "fault.0.packets", "list the flow's packets"),
        ("kind = \"delay\"", "fault.0.kind", "unknown variant"),
    ];
    let cases: Vec<(String, &str, &str)> =
        cases.iter().map(|&(fault, key, says)| (star(&format!("[[fault]]\n{fault}\n")), key, says)).collect();
    assert_each_refused(&Scratch::new("bad"), &cases);
}

/// packets.csv as rows of cells (header left out).
fn packets(dir: &Scratch, out: &str) -> Vec<Vec<String>> {
    let text = dir.read(&format!("{out}/packets.csv"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ns,event,port,queue,flow,kind,seq,payload_bytes,wire_bytes,ecn,queue_bytes"));
    lines.map(|l| l.split(',').map(String::from).collect()).collect()
}

#[test]
fn the_packet_trace_follows_one_flow_at_one_port_and_shows_its_faults() {
    let dir = Scratch::new("trace");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/faults/marlin_dctcp.toml");
    let args = ["--set", "output.packet_trace.ports=[\"sw0:p1\"]"];
    run_ok(&dir, &scenario, "out", &args);
    let rows = packets(&dir, "out");
    assert!(rows.iter().all(|r| r[2] == "sw0:p1" && r[4] == "0"), "one flow at one port");
    let times: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "rows in time order");
    // Every data packet the port handled: sent, or dropped by fault A or C (positions 600 and 3000).
    let data = |event: &str| rows.iter().filter(|r| r[1] == event && r[5] == "data").count();
    let drops: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == "drop").collect();
    assert_eq!(drops.len(), 2);
    assert_eq!(drops[0][6], "600000", "the 600th data packet (from 0) carries byte 600000");
    let marks: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == "mark").collect();
    assert_eq!(marks.len(), 10);
    assert!(marks.iter().all(|r| r[9] == "ce"));
    let summary = dir.summary("out");
    let retransmitted = summary["totals"]["retransmitted_bytes"].as_u64().unwrap() / 1000;
    assert_eq!(data("send") as u64 + 2, 4000 + retransmitted, "4 MB in 1000-byte packets, plus resends");
    assert_eq!(summary["extra"]["packet_trace"]["rows"].as_u64().unwrap(), rows.len() as u64);
    assert_eq!(summary["extra"]["packet_trace"]["skipped"], 0);

    run_ok(&dir, &scenario, "again", &args);
    assert_eq!(dir.read("out/packets.csv"), dir.read("again/packets.csv"), "deterministic");
    run_ok(&dir, &scenario, "plain", &[]);
    assert!(!dir.0.join("plain/packets.csv").exists(), "no trace unless asked");
    assert_eq!(dir.read("out/fct.csv"), dir.read("plain/fct.csv"), "tracing changes nothing");
}

#[test]
fn the_packet_trace_keeps_at_most_its_rows_and_records_pfc_pauses() {
    let dir = Scratch::new("bound");
    // A lossless 2:1 incast into a small buffer: the receiver's switch pauses its senders.
    let text = star("")
        .replace("[cc]\nalgorithm = \"dctcp\"", "[switch]\nbuffer = \"200KB\"\n\n[cc]\nalgorithm = \"none\"")
        + "\n[output.packet_trace]\nports = [\"sw0:p0\", \"sw0:p1\"]\n";
    let scenario = dir.write("pfc.toml", &text);
    run_ok(&dir, &scenario, "out", &[]);
    let rows = packets(&dir, "out");
    let pauses: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == "pause_sent").collect();
    assert!(!pauses.is_empty(), "the switch paused the senders' links");
    assert!(pauses.iter().all(|r| r[4..10].iter().all(String::is_empty)), "a pause names no packet");
    assert!(rows.iter().any(|r| r[1] == "resume_sent"));

    // Between switches: three senders into one host of a two-rack leaf-spine; the receiver's ToR pauses
    // the spine's port toward it, whose transmitter shows the pause.
    let fabric = "name = \"ls\"\n[topology]\nkind = \"leaf_spine\"\nhosts_per_tor = 2\ntors = 2\nspines = 1\n\
                  host_rate = \"100Gbps\"\n\n[[workload]]\nkind = \"incast\"\nreceiver = 3\nsender_list = [0, 1, 2]\n\
                  size = \"2MB\"\nstart = \"0us\"\n\n[switch]\nbuffer = \"300KB\"\n\n[cc]\nalgorithm = \"none\"\n\n\
                  [output.packet_trace]\nports = [\"spine0:p1\"]\n";
    run_ok(&dir, &dir.write("fabric.toml", fabric), "fabric", &[]);
    let at_spine = packets(&dir, "fabric");
    let paused = at_spine.iter().filter(|r| r[1] == "paused").count();
    assert!(paused > 0 && paused == at_spine.iter().filter(|r| r[1] == "resumed").count(), "{paused} pauses");
    assert!(at_spine.iter().all(|r| r[2] == "spine0:p1"));

    run_ok(&dir, &scenario, "bounded", &["--set", "output.packet_trace.max_rows=25"]);
    assert_eq!(packets(&dir, "bounded").len(), 25);
    let section = &dir.summary("bounded")["extra"]["packet_trace"];
    assert_eq!(section["rows"], 25);
    assert_eq!(section["skipped"].as_u64().unwrap(), rows.len() as u64 - 25);
}

#[test]
fn bad_packet_trace_settings_are_refused_with_the_key_at_fault() {
    let cases = [
        ("flows = 9", "output.packet_trace.flows", "invalid"),
        ("flows = [7]", "output.packet_trace.flows.0", "flow 7 does not exist"),
        ("flows = []", "output.packet_trace.flows", "lists no flow"),
        ("ports = [\"h0:p0\"]", "output.packet_trace.ports.0", "\"sw0:p0\""),
        ("max_rows = 0", "output.packet_trace.max_rows", "between 1 and"),
        ("rows = 5", "output.packet_trace.rows", "unknown field"),
    ];
    let cases: Vec<(String, &str, &str)> = cases
        .iter()
        .map(|&(setting, key, says)| (star("") + "\n[output.packet_trace]\n" + setting + "\n", key, says))
        .collect();
    assert_each_refused(&Scratch::new("badtrace"), &cases);
}
