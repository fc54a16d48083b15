//! The UDP datapath through the software switch (root, the `bed` feature): `sluice bed run` switches a
//! star of three hosts (100 Mbps links, 250 us each way, DCTCP's step marking at K = 30 KB), and
//! `sluice udp send` runs two flows from each of two hosts to the third, `sluice udp recv`, in the
//! hosts' namespaces. For each algorithm the bottleneck must be busy (at least 90% of the goodput its
//! rate allows) and shared fairly (Jain's index over the four flows at least 0.95); DCTCP must hold the
//! queue near K with marks and no drop, and every marked packet must reach the receiver as CE.
//!
//! The bundled `scenarios/bed/dumbbell4.toml` also runs whole: `sluice bed run --datapath udp` (and,
//! with the `kernel` feature, `--datapath kernel`, DCTCP run by `sluice agent`) against `sluice run` of
//! the same file, compared by `sluice compare`: throughput within 10%, fair, and the queue at K. So does
//! the receiver-driven ExpressPass on UDP, its tokens paced by the switch's token limiters. RoCC runs with
//! its switch side in the software switch (`scenarios/signals/rocc_incast_bed.toml`), against the
//! simulator's run of the same file.
//!
//! Elsewhere the tests say why they skip; in CI (`CI=true`, root) they must run.
#![cfg(feature = "bed")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::Duration;

mod common;

use common::fct_rows;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
/// Payload bytes of a 1500-byte packet (IP 20, UDP 8 and sluice 56 bytes of headers).
const PAYLOAD: f64 = 1416.0;
/// The bytes a 1500-byte packet takes on the wire: the packet, Ethernet's header (14) and FCS (4), and
/// the preamble (8) and gap (12) the bed's ports count as a real link does.
const WIRE: f64 = 1538.0;
/// Payload bytes of a 1500-byte packet over the bytes it takes on the wire: the goodput share a saturated
/// link gives.
const PAYLOAD_SHARE: f64 = PAYLOAD / WIRE;
const RATE: f64 = 100e6;
const K: f64 = 30_000.0;

const SCENARIO: &str = r#"
[topology]
kind = "star"
hosts = 3
rate = "100Mbps"
delay = "250us"
[[workload]]
kind = "incast"
receiver = 2
senders = 2
size = "1MB"
[host]
rto_min = "10ms"
[switch]
buffer = "1MB"
[switch.pfc]
enabled = false
[switch.ecn]
enabled = true
mark_at = "dequeue"
[[switch.ecn.thresholds]]
rate = "100Mbps"
kmin = "30KB"
kmax = "30KB"
pmax = 1.0
[output]
throughput_ports = ["sw0:p2"]
sample_interval = "10ms"
"#;

/// The tests share the bed's namespace names: one at a time.
static BED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip() -> bool {
    let Some(why) = sluice_bed::unavailable() else { return false };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the UDP bed test must run in CI, but: {why}");
    }
    eprintln!("skipped: {why}");
    true
}

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bed-udp");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("star3.toml"), SCENARIO).unwrap();
    dir
}

fn in_host(host: usize, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &format!("slsw-h{host}"), SLUICE]).args(args);
    c
}

/// What one algorithm's run gave: per-flow delivered bytes, the bottleneck's busy samples and port row.
struct Outcome {
    flows: Vec<f64>,
    seconds: f64,
    marks: u64,
    drops: u64,
    mean_queue: f64,
    ce_received: u64,
}

fn run(dir: &Path, algorithm: &str) -> Outcome {
    let out = dir.join(algorithm);
    // The switch is set up for the algorithm (INT for HPCC), as `sluice bed run` does for its flows.
    let set = format!("cc.algorithm={algorithm}");
    let bed = Command::new(SLUICE)
        .args(["bed", "run", "star3.toml", "--set", &set, "--duration", "8s", "--out"])
        .arg(&out)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_namespaces();
    let stats = out.join("receiver.json");
    let mut receiver = spawn(in_host(
        2,
        &["udp", "recv", "--bind", "10.77.0.3:5300", "--duration", "6s", "--stats", stats.to_str().unwrap()],
    ));
    sleep(Duration::from_millis(300));
    let senders: Vec<Child> = (0..2)
        .map(|h| {
            let dir = out.join(format!("h{h}"));
            let args =
                ["udp", "send", "--to", "10.77.0.3:5300", "--algorithm", algorithm, "--flows", "2", "--duration", "3s"];
            let more = ["--line-rate", "100Mbps", "--base-rtt", "1ms", "--out", dir.to_str().unwrap()];
            spawn(in_host(h, &[&args[..], &more[..], params(algorithm)].concat()))
        })
        .collect();
    let mut flows = Vec::new();
    let mut seconds: f64 = 0.0;
    for sender in senders {
        let output = sender.wait_with_output().unwrap();
        assert!(output.status.success(), "{algorithm}: {}", text(&output));
    }
    for h in 0..2 {
        let summary = json(&out.join(format!("h{h}/summary.json")));
        assert_eq!(summary["failed"], 0, "{algorithm}: {summary}");
        assert_eq!(summary["refused"].as_object().unwrap().values().filter(|v| *v != 0).count(), 0, "{summary}");
        let fct = std::fs::read_to_string(out.join(format!("h{h}/fct.csv"))).unwrap();
        for row in fct.lines().skip(1) {
            let cols: Vec<&str> = row.split(',').collect();
            let (size, start, finish): (f64, f64, f64) =
                (cols[3].parse().unwrap(), cols[4].parse().unwrap(), cols[5].parse().unwrap());
            flows.push(size);
            seconds = seconds.max((finish - start) / 1e9);
        }
    }
    receiver.wait().unwrap();
    let bed_out = bed.wait_with_output().unwrap();
    assert!(bed_out.status.success(), "bed: {}", text(&bed_out));
    let (marks, drops) = bottleneck_counters(&out.join("queues.csv"));
    Outcome {
        flows,
        seconds,
        marks,
        drops,
        mean_queue: busy_mean_queue(&out.join("throughput.csv")),
        ce_received: json(&stats)["ce_received"].as_u64().unwrap(),
    }
}

/// Parameters for the bed's round trip and rate:
/// - Swift's target delay must exceed the fabric's unloaded delay (Kumar et al. SIGCOMM'20 section 3.1
///   builds it from the base delay of the path), and its 25 us default is a datacenter's. Here that delay
///   is 1.19 ms: 4 x 250 us of propagation and a 1500-byte packet's serialisation twice at 100 Mbps.
/// - DCQCN (HPCC artifact variant) needs four changes for a 100 Mbps link with a 1.2 ms round trip, the
///   same in the simulator (four flows there: port 96% busy, 13 KB of queue on average, 54 KB at the
///   start, no drop; with the defaults, 493 KB and 26,632 drops):
///   - its floor rate of 1,000 Mb/s lies above the line rate, so it could never slow down; scaled as
///     `run.py` scales its other rates (x bw / 25G), it is 4 Mb/s;
///   - its 300 us rate-increase timer is shorter than the round trip, so it raises the rate several
///     times before a CNP can answer; 1.5 ms is above the round trip;
///   - without `clamp_target_rate` (the paper's Rt = Rc on every CNP, Zhu et al. SIGCOMM'15) fast
///     recovery climbs back to the line rate within a few timers;
///   - with the artifact's 1 us alpha period, alpha decays to about 15% in the 0.5 ms between a flow's
///     CNPs at 100 Mbps, so the cuts after the first are small and the start-up queue reached the port's
///     500 KB share (50-240 drops); with 5 us it peaks at 72-85 KB and the link stays 97% busy (longer
///     periods keep cuts deep and leave it 86-93% busy; docs/udp.md has the sweep).
/// - HPCC's additive increase scales with the line rate (10 Mb/s per 25 Gb/s: 40 kb/s here, 5 bytes per
///   round trip), too little for four flows to converge within the run (Jain 0.58 measured). The paper
///   bounds it by N W_AI < (1 - eta) BDP: 4 flows, eta 0.95 and a 15 KB BDP allow 187 B per round trip,
///   1.25 Mb/s; 1 Mb/s is used (the simulator: Jain 0.985, 0.4 KB of queue).
fn params(algorithm: &str) -> &'static [&'static str] {
    match algorithm {
        "swift" => &["--param", "base_target=1500us"],
        "hpcc" => &["--param", "rate_ai=1Mbps"],
        // docs/udp.md ("DCQCN") gives the reason for each of these at 100 Mbps.
        "dcqcn" => &[
            "--param",
            "min_rate=4Mbps",
            "--param",
            "increase_interval=1500us",
            "--param",
            "clamp_target_rate=true",
            "--param",
            "alpha_interval=5us",
        ],
        _ => &[],
    }
}

fn spawn(mut c: Command) -> Child {
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Waits up to 30 s for `sluice bed run` to make its namespaces (a loaded machine took 9 s).
fn wait_for_namespaces() {
    for _ in 0..300 {
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        if String::from_utf8_lossy(&list.stdout).contains("slsw-h2") {
            sleep(Duration::from_millis(500));
            return;
        }
        sleep(Duration::from_millis(100));
    }
    panic!("the bed did not come up");
}

/// ECN marks and drops of the bottleneck port sw0:p2 (towards h2).
fn bottleneck_counters(queues: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(queues).unwrap();
    let row = text.lines().find(|l| l.starts_with("port,sw0,2,")).expect("the bottleneck's row");
    let cols: Vec<&str> = row.split(',').collect();
    (cols[10].parse().unwrap(), cols[8].parse().unwrap())
}

/// The bottleneck's mean queue over the samples in which it sent.
fn busy_mean_queue(throughput: &Path) -> f64 {
    let text = std::fs::read_to_string(throughput).unwrap();
    let busy: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[3].parse::<f64>().unwrap() > 0.05)
        .map(|c| c[6].parse().unwrap())
        .collect();
    busy.iter().sum::<f64>() / busy.len().max(1) as f64
}

/// The mean rate of port `label` over its busy samples after the first two (the flows' first 20 ms
/// of ramp-up) and before the last (cut short by the flows' stop), bit/s.
fn steady_rate(throughput: &Path, label: &str) -> f64 {
    let text = std::fs::read_to_string(throughput).unwrap();
    let busy: Vec<f64> = text
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[0] == label && c[2].parse::<u64>().is_ok_and(|b| b > 0))
        .map(|c| c[3].parse::<f64>().unwrap() * 1e9)
        .collect();
    let steady = &busy[2.min(busy.len())..busy.len().saturating_sub(1).max(2.min(busy.len()))];
    steady.iter().sum::<f64>() / steady.len().max(1) as f64
}

fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    sum * sum / (xs.len() as f64 * xs.iter().map(|x| x * x).sum::<f64>())
}

#[test]
fn udp_flows_fill_and_share_the_bottleneck_and_dctcp_holds_the_queue_at_k() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let mut report = Vec::new();
    for algorithm in ["dctcp", "swift", "hpcc", "dcqcn"] {
        // Sixteen processes and the switch share two vCPUs in CI: a run the scheduler starved is tried
        // once more, and both runs are reported.
        let passed = (0..2).any(|_| check_algorithm(&dir, algorithm, &mut report));
        assert!(passed, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}

/// Runs `algorithm` on the star and checks it; returns whether the link was full and fairly shared.
/// Marks that do not reach the receiver, or DCTCP away from K, fail at once.
fn check_algorithm(dir: &Path, algorithm: &str, report: &mut Vec<String>) -> bool {
    let o = run(dir, algorithm);
    let goodput = o.flows.iter().sum::<f64>() * 8.0 / o.seconds;
    let share = goodput / (RATE * PAYLOAD_SHARE);
    let fairness = jain(&o.flows);
    report.push(format!(
        "{algorithm}: {:.1} Mbps ({:.1}% of what 100 Mbps carries), Jain {fairness:.3}, mean queue {:.0} B, \
         {} marks, {} drops",
        goodput / 1e6,
        share * 100.0,
        o.mean_queue,
        o.marks,
        o.drops
    ));
    assert_eq!(o.flows.len(), 4, "{algorithm}");
    assert_eq!(o.marks, o.ce_received, "{algorithm}: every mark reaches the receiver as CE");
    // With alpha decaying per 5 us DCQCN's start-up queue peaks at 72-85 KB (54 KB in the simulator), far
    // below the port's 500 KB share of the buffer, and nothing drops. A run whose senders and receivers
    // the scheduler starved reacts late to the first CNPs: one in CI held 41 KB on average and dropped
    // 186 packets (0.8%) at the start. Such a run is tried again; losses stay under 1% of the packets.
    let dropped = o.drops as f64 / (o.flows.iter().sum::<f64>() / PAYLOAD);
    if algorithm == "dcqcn" {
        assert!(o.marks > 0, "DCQCN slows down on CNPs: {}", report.join("\n"));
    }
    if algorithm == "dctcp" {
        assert!(o.marks > 0 && o.drops == 0, "{}", report.join("\n"));
        assert!((0.5 * K..1.5 * K).contains(&o.mean_queue), "{}", report.join("\n"));
    }
    if algorithm == "hpcc" {
        assert!(o.mean_queue < 5_000.0, "HPCC holds the queue near empty from INT: {}", report.join("\n"));
    }
    // HPCC aims at 95% of the link (eta) and its packets leave 160 B of room for INT records: about 90%
    // of what 1416-byte payloads carry (89.8% measured).
    let least = match algorithm {
        "hpcc" => 0.85,
        _ => 0.9,
    };
    share >= least && fairness >= 0.95 && (algorithm != "dcqcn" || dropped < 0.01)
}

/// One row of `sluice compare`'s table: its columns' values.
fn compared(table: &str, metric: &str) -> Vec<f64> {
    let line = table.lines().find(|l| l.starts_with(metric)).unwrap_or_else(|| panic!("no {metric:?} in\n{table}"));
    line[metric.len()..].split_whitespace().filter_map(|c| c.parse().ok()).collect()
}

/// The real datapaths this build has: UDP always, kernel TCP with the `kernel` feature.
fn real_datapaths() -> Vec<&'static str> {
    if cfg!(feature = "kernel") {
        vec!["udp", "kernel"]
    } else {
        vec!["udp"]
    }
}

#[test]
fn the_bundled_dumbbell_on_real_datapaths_matches_the_simulator() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let (scenario, dir) = bundled("bed/dumbbell4.toml", "bed-dumbbell4");
    let flows = "workload.0.flows=[{src=0,dst=4,stop=\"1s\"},{src=1,dst=5,stop=\"1s\"},{src=2,dst=6,stop=\"1s\"},{src=3,dst=7,stop=\"1s\"}]";
    let sim = dir.join("sim");
    let run =
        Command::new(SLUICE).args(["run", &scenario, "--quiet", "--set", flows, "--out"]).arg(&sim).output().unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let mut tables = Vec::new();
    for datapath in real_datapaths() {
        // As in the UDP test above: a run the scheduler starved (two vCPUs in CI) is tried once more.
        let agrees = (0..2).any(|attempt| {
            let out = dir.join(format!("{datapath}-{attempt}"));
            let table = bed_against_sim(&scenario, &["--set", flows], &sim, &out, datapath);
            let ok = agrees_with_sim(&table);
            tables.push(table);
            ok
        });
        assert!(
            agrees,
            "{datapath} within 10% of the simulator's throughput, fair, queue at K:\n{}",
            tables.join("\n")
        );
    }
    eprintln!("{}", tables.join("\n"));
}

/// Receiver-driven algorithms on the bundled dumbbell over UDP: the receivers issue tokens, the switch's
/// token limiters pace them to what the 100 Mbps bottleneck carries, and the data they release fills
/// it. A token and the data it releases take 122 + 1538 wire bytes, so the tokens leave at most 92.6%
/// of the link to data. The receivers' loss checks wait longer than their defaults (250 us, ToCC's
/// 2 ms), which are for 10-100 Gbps links where a flow's packets arrive microseconds apart:
/// ExpressPass's 5 ms (one flow's packets are 0.5 ms apart), ToCC's 20 ms, as its tokens queue at the
/// limiter for a round trip of about 10 ms (docs/udp.md, "ToCC's loss check on the bed"). Both datapaths' summaries count the
/// tokens, which `sluice compare` sets side by side.
#[test]
fn receiver_driven_algorithms_on_the_dumbbell_fill_the_bottleneck_from_tokens() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/bed/dumbbell4.toml");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bed-dumbbell4-tokens");
    let _ = std::fs::remove_dir_all(&dir);
    let one_second = "workload.0.flows=[{src=0,dst=4,stop=\"1s\"},{src=1,dst=5,stop=\"1s\"},{src=2,dst=6,stop=\"1s\"},{src=3,dst=7,stop=\"1s\"}]";
    let mut tables = Vec::new();
    // ToCC runs the scenario's 3 s: over 1 s one run in four left a flow at half its share (Jain 0.936).
    for (algorithm, timeout, flows) in [("expresspass", "5ms", Some(one_second)), ("tocc", "20ms", None)] {
        let settings = [format!("cc.algorithm={algorithm}"), format!("cc.{algorithm}.rx_timeout={timeout}")];
        let mut set: Vec<&str> = settings.iter().flat_map(|s| ["--set", s.as_str()]).collect();
        set.extend(flows.iter().flat_map(|f| ["--set", *f]));
        let sim = dir.join(format!("{algorithm}-sim"));
        let run = Command::new(SLUICE).args(["run", scenario, "--quiet"]).args(&set).arg("--out").arg(&sim).output();
        let run = run.unwrap();
        assert!(run.status.success(), "{}", text(&run));
        let ok = (0..2).any(|attempt| {
            let out = dir.join(format!("{algorithm}-udp-{attempt}"));
            let table = bed_against_sim(scenario, &set, &sim, &out, "udp");
            let rates = compared(&table, "sw0:p4 busy Gbps");
            let jain = compared(&table, "long flows, Jain");
            let (issued, checks) = (compared(&table, "tokens issued"), compared(&table, "receiver loss checks fired"));
            let utilisation = steady_rate(&out.join("throughput.csv"), "sw0:p4") / RATE;
            // In steady state ExpressPass filled 90.5-92.0% in six runs, ToCC 92-93% in seven; the check
            // asks 95% of the 92.6% ceiling. ToCC's bed runs fired no loss check in seven runs.
            tables.push(format!("{algorithm}: steady utilisation {utilisation:.3}\n{table}"));
            let fills = utilisation >= 0.88 && (rates[1] - rates[0]).abs() <= 0.1 * rates[0] && jain[1] >= 0.95;
            // Each flow's series counts what it delivered on both datapaths (the UDP sender, which hears
            // only of a flow's last byte, counts what it sent): near a quarter of the link each.
            let flows_agree = (0..4).all(|k| {
                let r = compared(&table, &format!("flow {k} busy Gbps"));
                (r[1] - r[0]).abs() <= 0.25 * r[0]
            });
            fills && flows_agree && issued.iter().all(|&n| n > 0.0) && (algorithm != "tocc" || checks[1] == 0.0)
        });
        assert!(ok, "{algorithm} fills the bottleneck fairly, within 10% of the simulator:\n{}", tables.join("\n"));
    }
    eprintln!("{}", tables.join("\n"));
}

/// Runs the scenario on `datapath` in the bed into `out` with the `--set` options `set`, and
/// `sluice compare`s it with `sim`.
fn bed_against_sim(scenario: &str, set: &[&str], sim: &Path, out: &Path, datapath: &str) -> String {
    let bed = Command::new(SLUICE)
        .args(["bed", "run", scenario, "--datapath", datapath])
        .args(set)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(bed.status.success(), "{datapath}: {}", text(&bed));
    let table = Command::new(SLUICE).arg("compare").arg(sim).arg(out).output().unwrap();
    assert!(table.status.success(), "{}", text(&table));
    String::from_utf8_lossy(&table.stdout).to_string()
}

/// Whether the second column of `sluice compare`'s table agrees with the first (the simulator):
/// throughput within 10%, Jain's index at least 0.95, and the mean queue within a factor of 1.5. Every
/// datapath holds the queue at DCTCP's K (30 KB): the bed's host stacks add jitter of a few packets, and
/// kernel TCP's ACK clocking a little slack.
fn agrees_with_sim(table: &str) -> bool {
    let rates = compared(table, "sw0:p4 busy Gbps");
    let queues = compared(table, "sw0:p4 busy queue (KB)");
    let jain = compared(table, "long flows, Jain");
    (rates[1] - rates[0]).abs() <= 0.1 * rates[0]
        && jain[1] >= 0.95
        && queues[1] / queues[0] < 1.5
        && queues[0] / queues[1] < 1.5
}

/// Kernel TCP's delay-based algorithms through the switch's delay line: before the bed, this kernel had
/// no way to add propagation delay, and Vegas and TIMELY ran on a bed without it (docs/kernel.md). With
/// a 1.2 ms round trip, Vegas and Swift (its target above that round trip) fill the 100 Mbps link with
/// a queue well under DCTCP's K.
#[cfg(feature = "kernel")]
#[test]
fn kernel_delay_based_algorithms_fill_the_link_with_a_short_queue() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let mut report = Vec::new();
    for (algorithm, params) in [("vegas", vec![]), ("swift", vec!["--set", "cc.params.base_target=1500us"])] {
        let out = dir.join(format!("kernel-{algorithm}"));
        let set = format!("cc.algorithm={algorithm}");
        let args = ["bed", "run", "star3.toml", "--datapath", "kernel", "--set", &set, "--set", "workload.0.size=4MB"];
        let args = [&args[..], &["--set", "simulation.time_limit=5s"]].concat();
        let bed =
            Command::new(SLUICE).args(args).args(&params).arg("--out").arg(&out).current_dir(&dir).output().unwrap();
        assert!(bed.status.success(), "{algorithm}: {}", text(&bed));
        let table = Command::new(SLUICE).arg("compare").arg(&out).output().unwrap();
        let table = String::from_utf8_lossy(&table.stdout).to_string();
        let goodput = compared(&table, "goodput (Mbps)")[0];
        let queue = compared(&table, "sw0:p2 busy queue (KB)")[0];
        report.push(format!("{algorithm}: {goodput:.1} Mbps, busy queue {queue:.1} KB"));
        // 1448 of 1538 bytes on the wire are payload: 94.1 Mbps at most.
        assert!(goodput >= 0.85 * RATE / 1e6 * 1448.0 / WIRE, "{}", report.join("\n"));
        assert!(queue < K / 1e3, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}

/// Closed-loop slots over UDP: two senders keep one web-search flow each (sizes scaled to 1%) toward a
/// third host for 300 ms. Each sender resolves the scenario as the simulator does, so every slot runs the
/// simulator's sizes in the simulator's order; each flow starts when its slot's previous one completes,
/// none after the window, and each of the merged fct.csv's ids names the simulator's flow of that id.
#[test]
fn closed_loop_slots_run_the_simulators_sizes_back_to_back_over_udp() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bed-closed-loop");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let closed = SCENARIO.replace(
        "[[workload]]\nkind = \"incast\"\nreceiver = 2\nsenders = 2\nsize = \"1MB\"\n",
        "[[workload]]\nkind = \"closed_loop\"\ncdf = \"websearch\"\nsize_scale = 0.01\nflows_per_pair = 1\n\
         receivers = [2]\nduration = \"300ms\"\n[cc]\nalgorithm = \"dctcp\"\n",
    );
    assert_ne!(closed, SCENARIO, "the shared scenario's workload changed");
    let scenario = dir.join("closed.toml");
    std::fs::write(&scenario, closed).unwrap();
    let sim = dir.join("sim");
    let run = Command::new(SLUICE).arg("run").arg(&scenario).args(["--quiet", "--out"]).arg(&sim).output().unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let bed = dir.join("udp");
    let out = Command::new(SLUICE)
        .arg("bed")
        .arg("run")
        .arg(&scenario)
        .args(["--datapath", "udp", "--out"])
        .arg(&bed)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (sim_rows, udp_rows) = (fct_rows(&sim), fct_rows(&bed));
    common::check_ids_name_the_same_flows(&sim_rows, &udp_rows, 40);
    common::check_closed_loop_slots(&sim_rows, &udp_rows, &[0, 1], 20, 300e6);
    let refused = |args: &[&str], key: &str| {
        let out = Command::new(SLUICE).arg("bed").arg("run").arg(&scenario).args(args).output().unwrap();
        assert!(!out.status.success() && text(&out).contains(key), "{args:?}: {}", text(&out));
    };
    // The real datapaths' hosts run one algorithm: a mix would run silently as that one.
    refused(&["--datapath", "udp", "--set", "cc.workloads=[\"cubic\"]"], "cc.workloads");
    if cfg!(feature = "kernel") {
        refused(&["--datapath", "kernel"], "workload.0");
    }
}

/// A bundled scenario's path (`scenarios/NAME`) and an emptied scratch folder for its runs.
fn bundled(name: &str, scratch: &str) -> (String, PathBuf) {
    let scenario = format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(scratch);
    let _ = std::fs::remove_dir_all(&dir);
    (scenario, dir)
}

/// Runs `scenario`'s flows on the bed over UDP into `out`.
fn bed_udp(scenario: &str, out: &Path) {
    bed_udp_with(scenario, out, &[]);
}

/// [`bed_udp`] with `--set KEY=VALUE` for each of `sets`.
fn bed_udp_with(scenario: &str, out: &Path, sets: &[&str]) {
    let mut bed = Command::new(SLUICE);
    bed.args(["bed", "run", scenario, "--datapath", "udp"]);
    for set in sets {
        bed.args(["--set", set]);
    }
    let bed = bed.arg("--out").arg(out).output().unwrap();
    assert!(bed.status.success(), "{}", text(&bed));
}

/// Marlin's flow-scheduling test (section 7.2), `scenarios/tester/flow_scheduling.toml` over UDP: 16 flows
/// from h0 share its 100 Mbps link evenly (Jain >= 0.99 over their goodputs) and together carry at least
/// 95% of what one flow gets through the same bed in the same run (the mean of the two single-flow
/// ports, which is what this bed carries); each single flow reaches at least 90% of its port's goodput
/// limit, 93.5 Mbps (Marlin asks for line rate; the switch and six host processes share two vCPUs in CI,
/// and a run the scheduler starved is tried once more).
#[test]
fn marlin_flow_scheduling_shares_one_port_evenly_and_fills_every_port() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let (scenario, dir) = bundled("tester/flow_scheduling.toml", "bed-flow-scheduling");
    let mut report = Vec::new();
    let passed = (0..2).any(|attempt| {
        let out = dir.join(format!("udp-{attempt}"));
        bed_udp(&scenario, &out);
        let goodput = |src: u32| -> Vec<f64> {
            let rows = fct_rows(&out);
            let mine = rows.iter().filter(|r| r.1 == src);
            mine.map(|r| r.2 as f64 * 8.0 / ((r.4.expect("stopped") - r.3) / 1e9)).collect()
        };
        let (shared, single) = (goodput(0), [goodput(2)[0], goodput(4)[0]]);
        assert_eq!(shared.len(), 16, "h0's flows");
        let carried = (single[0] + single[1]) / 2.0;
        let total: f64 = shared.iter().sum();
        report.push(format!(
            "attempt {attempt}: 16 flows {:.1} Mbps in all, Jain {:.4}; single flows {:.1} and {:.1} Mbps",
            total / 1e6,
            jain(&shared),
            single[0] / 1e6,
            single[1] / 1e6
        ));
        jain(&shared) >= 0.99 && total >= 0.95 * carried && single.iter().all(|&g| g >= 0.9 * RATE * PAYLOAD_SHARE)
    });
    assert!(passed, "{}", report.join("\n"));
    eprintln!("{}", report.join("\n"));
}

/// Per-flow series of a `throughput.csv`: flow id -> (end of sample in s, goodput in bit/s).
fn flow_series(dir: &Path) -> std::collections::BTreeMap<u32, Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let mut series = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("flow ")) {
        let c: Vec<&str> = line.split(',').collect();
        let id: u32 = c[0]["flow ".len()..].parse().unwrap();
        let rate = c[3].parse::<f64>().unwrap_or(0.0) * 1e9;
        series.entry(id).or_insert_with(Vec::new).push((c[1].parse::<f64>().unwrap() / 1e9, rate));
    }
    series
}

/// Marlin's congestion test (section 7.3), `scenarios/tester/congestion.toml` over UDP with DCTCP and
/// with DCQCN: four flows start 2 s apart and stop in the reverse order through one 100 Mbps port. The
/// flows' own throughput series (payload bytes acknowledged per 10 ms, as the simulator's
/// `throughput_flows`) must show each flow sending only while it runs, the port full (at least 90% of
/// its 92.1 Mbps goodput limit) in every interval, and every active flow near the interval's fair share
/// over the interval's second half. Marlin's own bound is 10%:
/// - DCQCN meets it (0.7% off at worst in the runs of BENCHMARKS.md) and is held to it.
/// - DCTCP meets it in some runs and not in others: the worst interval of four runs on this bed was
///   9.3%, 10.7%, 14.4% and 19.4% off (the simulator's DCTCP, deterministic, stays up to 45% off), so it
///   is held to 25%.
#[test]
fn marlin_congestion_test_flows_share_the_bottleneck_as_they_come_and_go() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    for (algorithm, bound) in [("dctcp", 0.25), ("dcqcn", 0.1)] {
        congestion_test(algorithm, bound);
    }
}

/// One algorithm's run of Marlin's congestion test, each active flow within `bound` of the fair share.
fn congestion_test(algorithm: &str, bound: f64) {
    let (scenario, dir) = bundled("tester/congestion.toml", &format!("bed-congestion-{algorithm}"));
    let (starts, stops) = ([0.0, 2.0, 4.0, 6.0], [14.0, 12.0, 10.0, 8.0]);
    let mut report = Vec::new();
    let passed = (0..2).any(|attempt| {
        let out = dir.join(format!("udp-{attempt}"));
        bed_udp_with(&scenario, &out, &[&format!("cc.algorithm={algorithm}")]);
        let series = flow_series(&out);
        assert_eq!(series.keys().copied().collect::<Vec<u32>>(), [0, 1, 2, 3], "a series per flow");
        let mut ok = true;
        for (f, samples) in &series {
            let (start, stop) = (starts[*f as usize], stops[*f as usize]);
            let idle = samples.iter().filter(|(t, _)| *t < start - 0.02 || *t > stop + 0.1);
            let stray = idle.map(|s| s.1).fold(0.0, f64::max);
            assert!(stray < 1e6, "flow {f} sent {stray} bit/s outside [{start}, {stop}] s");
        }
        for k in 0..7 {
            let (from, to) = (2.0 * k as f64 + 1.0, 2.0 * (k + 1) as f64 - 0.02);
            let active: Vec<usize> = (0..4).filter(|&f| starts[f] <= from && stops[f] >= to).collect();
            let means: Vec<f64> = (active.iter())
                .map(|f| {
                    let v: Vec<f64> =
                        series[&(*f as u32)].iter().filter(|(t, _)| *t > from && *t <= to).map(|s| s.1).collect();
                    v.iter().sum::<f64>() / v.len().max(1) as f64
                })
                .collect();
            let total: f64 = means.iter().sum();
            let fair = total / active.len() as f64;
            let worst = means.iter().map(|m| (m - fair).abs() / fair).fold(0.0, f64::max);
            report.push(format!(
                "{algorithm}, attempt {attempt}, {}-{} s, {} flows: {:.1} Mbps in all, {} Mbps, worst {:.1}% off \
                 the fair share",
                2 * k,
                2 * (k + 1),
                active.len(),
                total / 1e6,
                means.iter().map(|m| format!("{:.1}", m / 1e6)).collect::<Vec<_>>().join(" / "),
                100.0 * worst
            ));
            ok &= total >= 0.9 * RATE * PAYLOAD_SHARE && worst <= bound;
        }
        ok
    });
    assert!(passed, "{}", report.join("\n"));
    eprintln!("{}", report.join("\n"));
}

/// Marlin's flow-fidelity test (section 7.4), `scenarios/tester/flow_fidelity.toml` with DCTCP: twenty
/// closed-loop web-search flows into one 100 Mbps port, on the bed over UDP and in the simulator. The
/// bed must keep the port as busy (goodput within 10%) and give flows the simulator's slowdowns: mean
/// and median within 25%, and each size bucket's 99th percentile within a factor of 3 (the bed's host
/// stacks add tail latency to the smallest flows: +75%, +86% and +104% for flows under 10 KB in three
/// runs; BENCHMARKS.md has one).
#[test]
fn marlin_flow_fidelity_matches_the_simulators_slowdowns() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let (scenario, dir) = bundled("tester/flow_fidelity.toml", "bed-flow-fidelity");
    let sim = dir.join("sim");
    let run = Command::new(SLUICE).args(["run", &scenario, "--quiet", "--out"]).arg(&sim).output().unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let mut tables = Vec::new();
    let agrees = (0..2).any(|attempt| {
        let out = dir.join(format!("udp-{attempt}"));
        let table = bed_against_sim(&scenario, &[], &sim, &out, "udp");
        let within = |metric: &str, bound: f64| {
            let v = compared(&table, metric);
            (v[1] - v[0]).abs() <= bound * v[0]
        };
        let tails = ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"].iter().all(|bucket| {
            let v = compared(&table, &format!("slowdown p99, {bucket}"));
            v[1] <= 3.0 * v[0] && v[0] <= 3.0 * v[1]
        });
        let ok =
            within("goodput (Mbps)", 0.1) && within("slowdown mean", 0.25) && within("slowdown p50", 0.25) && tails;
        tables.push(table);
        ok
    });
    assert!(agrees, "the bed's slowdowns against the simulator's:\n{}", tables.join("\n"));
    eprintln!("{}", tables.join("\n"));
}

/// One traced variable of flow 0 in `dir/trace.csv`: (time in ns, value), in time order.
fn traced(dir: &Path, variable: &str) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    let rows = text.lines().skip(1).map(|l| l.split(',').collect::<Vec<_>>());
    let mine = rows.filter(|c| c[1] == "0" && c[2] == variable);
    mine.map(|c| (c[0].parse().unwrap(), c[3].parse().unwrap())).collect()
}

/// The cuts of a cwnd trace: (when, before, after).
fn window_cuts(cwnd: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    cwnd.windows(2).filter(|w| w[1].1 < w[0].1).map(|w| (w[1].0, w[0].1, w[1].1)).collect()
}

/// What Marlin's section 7.1 asks of one datapath's trace: the window starts at one packet, slow start
/// ends at ssthresh (64 packets), congestion avoidance grows it by less than a packet per ACK, the two
/// losses halve it and the marks cut it by alpha / 2 once, and alpha rises only at the marks. Returns
/// the cuts, or what was wrong.
fn marlin_shape(dir: &Path, mss: f64) -> Result<Vec<(f64, f64, f64)>, String> {
    let cwnd = traced(dir, "cwnd");
    if cwnd.first().map(|c| c.1) != Some(mss) {
        return Err(format!("the window starts at {:?}, not one packet", cwnd.first()));
    }
    let past = cwnd.iter().position(|&(_, c)| c > 64.0 * mss).ok_or("the window never passes ssthresh")?;
    if cwnd[past - 1].1 != 64.0 * mss || cwnd[past].1 - 64.0 * mss >= mss {
        return Err(format!("slow start ends at {} and grows to {}", cwnd[past - 1].1, cwnd[past].1));
    }
    let cuts = window_cuts(&cwnd);
    let ratios: Vec<f64> = cuts.iter().map(|c| c.2 / c.1).collect();
    let shaped = ratios.len() == 3
        && (0.3..0.6).contains(&ratios[0])
        && (0.9..1.0).contains(&ratios[1])
        && (0.3..0.6).contains(&ratios[2]);
    if !shaped {
        return Err(format!("cuts {cuts:?}: want a halving, a cut by alpha / 2 and a halving"));
    }
    let alpha = traced(dir, "alpha");
    let rises: Vec<f64> = alpha.windows(2).filter(|w| w[1].1 > w[0].1).map(|w| w[1].0).collect();
    // The first marked ACK cuts the window at once; alpha is updated once per window of data, so it
    // rises at the end of that window, about a round trip (8.25 ms idle, more with the bed's stacks)
    // after the cut: within three round trips here.
    if rises.is_empty() || rises.iter().any(|&t| !(0.0..25e6).contains(&(t - cuts[1].0))) {
        return Err(format!("alpha rises at {rises:?}, B's cut at {}", cuts[1].0));
    }
    Ok(cuts)
}

/// The `faults` section of `dir/summary.json` as (dropped, marked) per entry.
fn fault_counts(dir: &Path) -> Vec<(u64, u64)> {
    let summary = json(&dir.join("summary.json"));
    let faults = summary.get("faults").or_else(|| summary["extra"].get("faults")).cloned().unwrap_or_default();
    let entries = faults.as_array().cloned().unwrap_or_default();
    entries.iter().map(|f| (f["dropped"].as_u64().unwrap(), f["marked"].as_u64().unwrap())).collect()
}

/// Marlin's CC correctness test (section 7.1), `scenarios/tester/cc_correctness.toml`: one DCTCP flow
/// over UDP, the switch dropping two chosen packets and marking a chosen run of ten. The bed's trace
/// must have the test's shape, and the simulator's of the same file too; they must agree event for
/// event: the same cuts, the window at each within one packet. After a cut the bed's window has been up
/// to three packets off the simulator's (four are allowed): a loss halves what is in flight, and the
/// bed's host stacks lengthen the round trip enough to keep the whole window in flight, where the
/// simulator's path holds a few packets less (BENCHMARKS.md, "Marlin's tests on the bed").
#[test]
fn marlin_cc_correctness_cuts_at_the_same_windows_as_the_simulator() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let (scenario, dir) = bundled("tester/cc_correctness.toml", "bed-cc-correctness");
    let sim = dir.join("sim");
    let run = Command::new(SLUICE).args(["run", &scenario, "--quiet", "--out"]).arg(&sim).output().unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let mss = 1416.0;
    let expected = [(1, 0), (0, 10), (1, 0)];
    assert_eq!(fault_counts(&sim), expected, "the simulator's faults");
    let sim_cuts = marlin_shape(&sim, mss).unwrap_or_else(|e| panic!("the simulator's trace: {e}"));
    let mut report = Vec::new();
    let agrees = (0..2).any(|attempt| {
        let out = dir.join(format!("udp-{attempt}"));
        bed_udp(&scenario, &out);
        assert_eq!(fault_counts(&out), expected, "the switch's impairments");
        let cuts = match marlin_shape(&out, mss) {
            Ok(cuts) => cuts,
            Err(e) => {
                report.push(format!("attempt {attempt}: {e}"));
                return false;
            }
        };
        let pairs: Vec<String> = (cuts.iter().zip(&sim_cuts))
            .map(|(b, s)| format!("{:.0} -> {:.0} (sim {:.0} -> {:.0})", b.1, b.2, s.1, s.2))
            .collect();
        report.push(format!("attempt {attempt}: {}", pairs.join("; ")));
        cuts.iter().zip(&sim_cuts).all(|(b, s)| (b.1 - s.1).abs() <= mss && (b.2 - s.2).abs() <= 4.0 * mss)
    });
    assert!(agrees, "the bed's cuts against the simulator's:\n{}", report.join("\n"));
    eprintln!("{}", report.join("\n"));
    if cfg!(feature = "kernel") {
        // Kernel TCP's packets carry no flow id for the switch to pick them by.
        let out = Command::new(SLUICE).args(["bed", "run", &scenario, "--datapath", "kernel"]).output().unwrap();
        assert!(!out.status.success() && text(&out).contains("fault.0"), "{}", text(&out));
    }
}

/// What a RoCC run of `scenarios/signals/rocc_incast_bed.toml` gave over its settled window (1.5 to 3 s)
/// at the receiver's port sw0:p0 and for its eight flows.
#[derive(Debug)]
struct Settled {
    /// The port's mean rate, bit/s.
    port: f64,
    /// Jain's index over the flows' mean rates.
    jain: f64,
    /// The port's mean and largest queue sample, bytes.
    queue: (f64, f64),
}

fn settled(dir: &Path) -> Settled {
    let text = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let mut port = Vec::new();
    let mut flows: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        let t: f64 = c[1].parse().unwrap();
        if !(1.5e9 < t && t <= 3.0e9) {
            continue;
        }
        let rate = c[3].parse::<f64>().unwrap() * 1e9;
        match c[0] {
            "sw0:p0" => port.push((rate, c[6].parse::<f64>().unwrap())),
            flow => flows.entry(flow.to_string()).or_default().push(rate),
        }
    }
    assert_eq!((port.len(), flows.len()), (30, 8), "{}: the settled window's samples", dir.display());
    let means: Vec<f64> = flows.values().map(|v| v.iter().sum::<f64>() / v.len() as f64).collect();
    Settled {
        port: port.iter().map(|p| p.0).sum::<f64>() / port.len() as f64,
        jain: jain(&means),
        queue: (
            port.iter().map(|p| p.1).sum::<f64>() / port.len() as f64,
            port.iter().map(|p| p.1).fold(0.0, f64::max),
        ),
    }
}

/// RoCC on the bed (`scenarios/signals/rocc_incast_bed.toml`: eight flows into one 100 Mbps port, two
/// joining at 1 s), against the simulator's run of the same file.
///
/// With the switch's signal packets (RoCC's default), the fair rate must reach the senders (counted by
/// the senders and by the switch), and over the settled window (1.5 to 3 s) the port must run at least
/// at 90% of its rate, Jain's index over the flows must be at least 0.99, the mean queue must lie
/// between a quarter and 1.5 times the simulator's, and no sample may pass 200 KB. The simulator gives
/// 100 Mbps, Jain 1.000 and a mean queue of 71 KB, largest 81 KB. Nine bed runs gave 78.5 to 99.8 Mbps,
/// Jain at least 0.999, mean queues of 24 to 68 KB and samples up to 145 KB; the slow ones and the short
/// queues are runs the scheduler starved on two shared vCPUs, so there are three attempts
/// (docs/signals.md).
///
/// With the values on the ACKs (`feedback = "path"`), the switch must write them and the senders take
/// them, and the flows must share the port equally (Jain at least 0.99). Its rate is not checked: on the
/// bed the senders start some milliseconds after the switch's clock, the halvings come an update late,
/// and the PI step takes the fair rate to its minimum, from which the loop's small low-rate gains climb
/// slowly, with no self-rise while every ACK brings a value (4 of 5 runs ended near 27 Mbps;
/// docs/signals.md).
#[test]
fn rocc_on_the_bed_gives_fair_rates_with_a_bounded_queue_as_in_the_simulator() {
    if skip() {
        return;
    }
    let _one = BED.lock().unwrap_or_else(|e| e.into_inner());
    let (scenario, dir) = bundled("signals/rocc_incast_bed.toml", "bed-rocc");
    let mut report = Vec::new();
    for (mode, set) in [("switch", &[][..]), ("path", &["--set", "cc.params.feedback=path"][..])] {
        let sim = dir.join(format!("sim-{mode}"));
        let run =
            Command::new(SLUICE).args(["run", &scenario, "--quiet", "--out"]).arg(&sim).args(set).output().unwrap();
        assert!(run.status.success(), "{}", text(&run));
        let s = settled(&sim);
        let notifications = json(&sim.join("summary.json"))["extra"]["switch_notifications"].as_u64().unwrap();
        assert_eq!(notifications > 0, mode == "switch", "the simulator's signal packets");
        report.push(format!("{mode}, simulator: {s:?}, {notifications} signal packets"));
        let passed = (0..3).any(|attempt| {
            let out = dir.join(format!("udp-{mode}-{attempt}"));
            let bed = Command::new(SLUICE)
                .args(["bed", "run", &scenario, "--datapath", "udp", "--out"])
                .arg(&out)
                .args(set)
                .output()
                .unwrap();
            assert!(bed.status.success(), "{}", text(&bed));
            let summary = json(&out.join("summary.json"));
            let (totals, switch) = (&summary["totals"], &summary["switch_signal"]);
            let count = |v: &serde_json::Value| v.as_u64().unwrap();
            let (path, from_switch) = (count(&totals["signals_path"]), count(&totals["signals_switch"]));
            let (writes, feedback) = (count(&switch["writes"]), count(&switch["feedback"]));
            match mode {
                "switch" => {
                    assert!(from_switch > 0 && feedback >= from_switch && path == 0 && writes == 0, "{summary}")
                }
                _ => assert!(path > 0 && writes >= path && from_switch == 0 && feedback == 0, "{summary}"),
            }
            assert_eq!(count(&totals["failed"]), 0, "{summary}");
            let b = settled(&out);
            report.push(format!(
                "{mode}, bed attempt {attempt}: {b:?}; senders took {path} path and {from_switch} switch values, \
                 the switch wrote {writes} and sent {feedback}"
            ));
            match mode {
                "switch" => {
                    b.port >= 0.9 * RATE
                        && b.jain >= 0.99
                        && b.queue.0 <= 1.5 * s.queue.0
                        && b.queue.0 >= s.queue.0 / 4.0
                        && b.queue.1 <= 200e3
                }
                _ => b.jain >= 0.99 && b.queue.1 <= 200e3,
            }
        });
        assert!(passed, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}
