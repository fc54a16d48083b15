//! Regenerates the CC-plane tables of docs/plane.md: native against offloaded congestion control on
//! the fat320 mix, message aggregation at 400 Gbps, and a sweep of the datapath-plane latency.
//!
//! ```text
//! cargo run --release -p sluice --example plane_sweep -- mix
//! cargo run --release -p sluice --example plane_sweep -- aggregation
//! cargo run --release -p sluice --example plane_sweep -- latency
//! cargo run --release -p sluice --example plane_sweep -- latency --algorithms dctcp,hpcc --latencies 1us,20us
//! ```
//!
//! Options: `--jobs N` (parallel runs; default: the available cores), `--seed N` (default: the
//! scenario's), `--algorithms a,b,...`, `--latencies 0.5us,1us,...`, `--set key=value` (added to every
//! run). Runs are independent and deterministic, so the tables do not depend on `--jobs`. Algorithms
//! that are not registered (such as `bolt` before it lands) are left out with a note.
//!
//! Markdown goes to stdout; one line per finished run goes to stderr.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use sluice_results::Summary;

/// Overrides every run of `algorithm` gets on the fat-tree mixes. Swift's default 25 us base target is
/// sized for real NIC and host stacks; on this simulated fabric (1 us links, no host delay, base RTTs
/// of about 4, 8 and 12 us over 1, 3 and 5 switches) its target of 26-30 us (plus flow scaling) lets
/// 18-22 us of queueing build before Swift reacts, so the mixes use 10 us: targets of 11, 13 and 15 us,
/// 3-7 us above each path's base RTT.
pub fn algorithm_sets(algorithm: &str) -> Vec<String> {
    let mut sets = vec![format!("cc.algorithm={algorithm}")];
    if algorithm == "swift" {
        sets.push("cc.params.base_target=10us".to_string());
    }
    sets
}

/// One run: a label, the scenario file, its `--set` overrides.
struct Job {
    key: (String, String),
    path: PathBuf,
    sets: Vec<String>,
}

/// What a run produced.
struct Done {
    key: (String, String),
    summary: Summary,
    wall: f64,
    /// The plane core's time per message, ps (to turn busy time into handled messages).
    service_time: u64,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run_one(job: &Job, seed: Option<u64>) -> Result<Done, String> {
    let scenario = sluice_scenario::load(&job.path, &job.sets, seed).map_err(|e| e.to_string())?;
    let resolved = sluice_scenario::resolve(&scenario).map_err(|e| e.to_string())?;
    let service_time = resolved.scenario.plane.service_time;
    let started = Instant::now();
    let outcome = sluice::run_scenario(&resolved, None, &mut |_| {})?;
    Ok(Done { key: job.key.clone(), summary: outcome.summary, wall: started.elapsed().as_secs_f64(), service_time })
}

/// Runs `jobs` on `threads` threads; results come back in job order.
fn run_all(jobs: Vec<Job>, threads: usize, seed: Option<u64>) -> Vec<Done> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Done)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                match run_one(job, seed) {
                    Ok(d) => {
                        eprintln!("{} {}: {:.1} s", d.key.0, d.key.1, d.wall);
                        done.lock().expect("no panics while held").push((i, d));
                    }
                    Err(e) => panic!("{} {} ({}): {e}", job.key.0, job.key.1, job.sets.join(" ")),
                }
            });
        }
    });
    let mut done = done.into_inner().expect("no panics while held");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, d)| d).collect()
}

fn plane(summary: &Summary) -> &serde_json::Value {
    &summary.extra["plane"]
}

fn counter(summary: &Summary, name: &str) -> f64 {
    plane(summary)[name].as_f64().unwrap_or(0.0)
}

fn avg(summary: &Summary) -> f64 {
    summary.overall.slowdown.map_or(f64::NAN, |s| s.avg)
}

fn p99(summary: &Summary) -> f64 {
    summary.overall.slowdown.map_or(f64::NAN, |s| s.p99)
}

fn bucket_cells(summary: &Summary) -> Vec<String> {
    summary
        .buckets
        .iter()
        .map(|b| b.slowdown.map_or("-".to_string(), |s| format!("{:.3} ({:.2})", s.avg, s.p99)))
        .collect()
}

fn bucket_header(summary: &Summary) -> Vec<String> {
    summary.buckets.iter().map(|b| format!("{} avg (p99)", b.label)).collect()
}

fn pct(new: f64, base: f64) -> String {
    format!("{:+.2}%", 100.0 * (new / base - 1.0))
}

fn unfinished(summary: &Summary) -> String {
    let o = &summary.overall;
    if o.unfinished == 0 {
        format!("{}", o.count)
    } else {
        format!("{} ({} unfinished)", o.count, o.unfinished)
    }
}

/// The algorithms asked for that are registered; the others are reported on stderr and stdout.
fn registered(algorithms: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    for a in algorithms {
        if sluice_cc::lookup(a).is_some() {
            kept.push(a.clone());
        } else {
            println!("> `{a}` is not registered in this build (`sluice list`); left out.\n");
            eprintln!("{a}: not registered, left out");
        }
    }
    kept
}

fn mix(opts: &Options) {
    let path = repo_root().join("scenarios/offload/fat320_mix.toml");
    let algorithms = registered(&opts.algorithms(&["dctcp", "swift", "hpcc", "bolt"]));
    let mut jobs = Vec::new();
    for a in &algorithms {
        for mode in ["native", "offload"] {
            let mut sets = algorithm_sets(a);
            sets.push(format!("plane.mode={mode}"));
            sets.extend(opts.sets.iter().cloned());
            jobs.push(Job { key: (a.clone(), mode.to_string()), path: path.clone(), sets });
        }
    }
    let done = run_all(jobs, opts.jobs, opts.seed);
    let Some(first) = done.first() else { return };
    println!("### FCT slowdown, native vs offload (latency 1 us)\n");
    let header = bucket_header(&first.summary);
    println!("| algorithm | mode | flows | {} | all avg | all p99 | avg vs native |", header.join(" | "));
    println!("|---|---|---|{}---|---|---|", "---|".repeat(header.len()));
    for pair in done.chunks(2) {
        let base = avg(&pair[0].summary);
        for d in pair {
            println!(
                "| {} | {} | {} | {} | {:.4} | {:.3} | {} |",
                d.key.0,
                d.key.1,
                unfinished(&d.summary),
                bucket_cells(&d.summary).join(" | "),
                avg(&d.summary),
                p99(&d.summary),
                if d.key.1 == "native" { "-".to_string() } else { pct(avg(&d.summary), base) }
            );
        }
    }
    println!("\n### Plane counters (all hosts)\n");
    println!(
        "| algorithm | mode | signals | reports | batches | E | decisions | decision msgs | filtered dup | \
         filtered boundary | overflows | merges | evictions | busy fraction | wall s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for d in &done {
        let s = &d.summary;
        println!(
            "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {:.4} | {:.1} |",
            d.key.0,
            d.key.1,
            counter(s, "signals"),
            counter(s, "reports"),
            counter(s, "batches"),
            counter(s, "efficiency"),
            counter(s, "decisions"),
            counter(s, "decision_messages"),
            counter(s, "filtered_duplicate"),
            counter(s, "filtered_boundary"),
            counter(s, "overflows"),
            counter(s, "merges"),
            counter(s, "evictions"),
            counter(s, "busy_fraction"),
            d.wall
        );
    }
}

/// The aggregation settings of the 400 Gbps study: a label and the overrides.
fn aggregation_configs() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("(a) per ACK, no batching", vec!["plane.report.every=ack", "plane.batch_bytes=1"]),
        ("per ACK, 256 B batching", vec!["plane.report.every=ack"]),
        ("(b) 8 ACKs, 256 B batching", vec!["plane.report.every=acks", "plane.report.n=8"]),
        ("4 ACKs, 256 B batching", vec!["plane.report.every=acks", "plane.report.n=4"]),
        ("1 us interval, 256 B batching", vec!["plane.report.every=interval", "plane.report.period=1us"]),
        ("2 us interval, 256 B batching", vec!["plane.report.every=interval", "plane.report.period=2us"]),
        ("once per RTT, 256 B batching", vec!["plane.report.every=rtt"]),
    ]
}

fn aggregation(opts: &Options) {
    let path = repo_root().join("scenarios/offload/aggregation400.toml");
    let jobs = aggregation_configs()
        .into_iter()
        .map(|(label, sets)| {
            let mut sets: Vec<String> = sets.into_iter().map(String::from).collect();
            sets.extend(opts.sets.iter().cloned());
            Job { key: (label.to_string(), String::new()), path: path.clone(), sets }
        })
        .collect();
    let done = run_all(jobs, opts.jobs, opts.seed);
    let Some(first) = done.first() else { return };
    let rate = |s: &Summary, name: &str| counter(s, name) / (s.run.sim_time_ns * 1e-9) / 1e6;
    let base = rate(&first.summary, "batches");
    // Two of the three hosts send; the receiver's plane core is idle.
    let senders = 2.0;
    println!("### Aggregation at 400 Gbps (DCTCP, offload, 1 ms)\n");
    println!(
        "| setting | signals M/s | messages M/s | transfers M/s | transfers vs (a) | E | busy per sender core | \
         decisions | decision msgs | filtered dup (savings) | handled reports | handled without update | overflows | \
         merges | back-pressure | goodput Gbps |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for d in &done {
        let s = &d.summary;
        let sim = s.run.sim_time_ns;
        let decisions = counter(s, "decisions");
        let dup = counter(s, "filtered_duplicate");
        // Every message (and timer) the plane core handled cost one service time.
        let handled = (counter(s, "busy_time_ns") * 1e3 / d.service_time.max(1) as f64).round();
        let messages = counter(s, "decision_messages");
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {} | {:.3} | {:.1}% | {} | {} | {} ({:.1}%) | {} | {:.1}% | {} | {} | {} \
             | {:.1} |",
            d.key.0,
            rate(s, "signals"),
            rate(s, "reports"),
            rate(s, "batches"),
            pct(rate(s, "batches"), base),
            counter(s, "efficiency"),
            100.0 * counter(s, "busy_time_ns") / (sim * senders),
            decisions,
            messages,
            dup,
            if decisions > 0.0 { 100.0 * dup / decisions } else { 0.0 },
            handled,
            if handled > 0.0 { 100.0 * (1.0 - messages / handled) } else { 0.0 },
            counter(s, "overflows"),
            counter(s, "merges"),
            counter(s, "backpressure_events"),
            s.totals.goodput_gbps
        );
    }
}

fn latency(opts: &Options) {
    let path = repo_root().join("scenarios/offload/fat320_mix.toml");
    let algorithms =
        registered(&opts.algorithms(&["dctcp", "dcqcn", "timely", "hpcc", "swift", "bolt", "reno", "cubic", "bbr"]));
    let latencies = opts
        .latencies
        .clone()
        .unwrap_or_else(|| ["0.5us", "1us", "5us", "20us", "100us"].iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let mut columns = vec!["native".to_string()];
    columns.extend(latencies.iter().cloned());
    let mut jobs = Vec::new();
    for a in &algorithms {
        for c in &columns {
            let mut sets = algorithm_sets(a);
            if c == "native" {
                sets.push("plane.mode=native".to_string());
            } else {
                sets.push("plane.mode=offload".to_string());
                sets.push(format!("plane.latency={c}"));
            }
            sets.extend(opts.sets.iter().cloned());
            jobs.push(Job { key: (a.clone(), c.clone()), path: path.clone(), sets });
        }
    }
    let done = run_all(jobs, opts.jobs, opts.seed);
    let Some(first) = done.first() else { return };
    let n = columns.len();
    println!("### Overall FCT slowdown: avg (p99) against the one-way plane latency\n");
    println!("| algorithm | {} |", columns.join(" | "));
    println!("|---|{}", "---|".repeat(n));
    for row in done.chunks(n) {
        let cells: Vec<String> =
            row.iter().map(|d| format!("{:.3} ({:.2})", avg(&d.summary), p99(&d.summary))).collect();
        println!("| {} | {} |", row[0].key.0, cells.join(" | "));
    }
    println!("\n### Overall average slowdown relative to native\n");
    println!("| algorithm | {} |", columns[1..].join(" | "));
    println!("|---|{}", "---|".repeat(n - 1));
    for row in done.chunks(n) {
        let base = avg(&row[0].summary);
        let cells: Vec<String> = row[1..].iter().map(|d| pct(avg(&d.summary), base)).collect();
        println!("| {} | {} |", row[0].key.0, cells.join(" | "));
    }
    println!("\n### Average slowdown per size bucket\n");
    let labels: Vec<String> = first.summary.buckets.iter().map(|b| b.label.clone()).collect();
    println!("| algorithm | latency | {} | flows |", labels.join(" | "));
    println!("|---|---|{}---|", "---|".repeat(labels.len()));
    for d in &done {
        let cells: Vec<String> =
            d.summary.buckets.iter().map(|b| b.slowdown.map_or("-".to_string(), |s| format!("{:.3}", s.avg))).collect();
        println!("| {} | {} | {} | {} |", d.key.0, d.key.1, cells.join(" | "), unfinished(&d.summary));
    }
    println!("\n### Plane load at each latency (reports, decision messages, busy fraction, ring overflows)\n");
    println!("| algorithm | latency | reports | batches | E | decision msgs | busy fraction | overflows | wall s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for d in done.iter().filter(|d| d.key.1 != "native") {
        let s = &d.summary;
        println!(
            "| {} | {} | {} | {} | {:.3} | {} | {:.4} | {} | {:.1} |",
            d.key.0,
            d.key.1,
            counter(s, "reports"),
            counter(s, "batches"),
            counter(s, "efficiency"),
            counter(s, "decision_messages"),
            counter(s, "busy_fraction"),
            counter(s, "overflows"),
            d.wall
        );
    }
}

struct Options {
    jobs: usize,
    seed: Option<u64>,
    algorithms: Option<Vec<String>>,
    latencies: Option<Vec<String>>,
    sets: Vec<String>,
}

impl Options {
    fn algorithms(&self, default: &[&str]) -> Vec<String> {
        self.algorithms.clone().unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect())
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: plane_sweep mix|aggregation|latency [--jobs N] [--seed N] [--algorithms a,b] \
         [--latencies 1us,5us] [--set key=value]..."
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(experiment) = args.next() else { usage() };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut opts = Options { jobs: cores, seed: None, algorithms: None, latencies: None, sets: Vec::new() };
    let list = |v: String| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else { usage() };
        match flag.as_str() {
            "--jobs" => opts.jobs = value.parse().unwrap_or_else(|_| usage()),
            "--seed" => opts.seed = Some(value.parse().unwrap_or_else(|_| usage())),
            "--algorithms" => opts.algorithms = Some(list(value)),
            "--latencies" => opts.latencies = Some(list(value)),
            "--set" => opts.sets.push(value),
            _ => usage(),
        }
    }
    let started = Instant::now();
    match experiment.as_str() {
        "mix" => mix(&opts),
        "aggregation" => aggregation(&opts),
        "latency" => latency(&opts),
        _ => usage(),
    }
    eprintln!("total {:.0} s with {} jobs", started.elapsed().as_secs_f64(), opts.jobs);
}
