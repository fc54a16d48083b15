//! End-to-end tests of the `sluice` binary: `run`, `check`, `list` and `bench` on small scenarios
//! written into temporary directories, the files a run writes, determinism, `--set` and `--seed`
//! overrides, and the messages (and absence of output) for bad input.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// The files every successful run writes into its output directory.
const OUTPUT_FILES: [&str; 6] =
    ["fct.csv", "summary.json", "queues.csv", "throughput.csv", "trace.csv", "scenario.resolved.toml"];

/// A k=4 fat-tree (16 hosts) with Poisson arrivals of Facebook web-server flows (mean 63 KB) for
/// 100 us: about a hundred flows, random in their sizes, endpoints and start times.
const POISSON: &str = r#"# A small fat-tree scenario.
name = "poisson"
seed = 1

[topology]
kind = "fat_tree"
k = 4
host_rate = "100Gbps"
delay = "1us"

[[workload]]
kind = "poisson"
cdf = "webserver"
load = 0.3
duration = "100us"

[cc]
algorithm = "dcqcn"

[output]
trace_flows = [0]
trace_interval = "1us"
throughput_flows = [0]
throughput_ports = ["tor0:0"]
sample_interval = "10us"
"#;

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
trace_flows = [0, 1]
throughput_flows = [0, 1, 2, 3]
throughput_ports = ["sw0:0"]
sample_interval = "5us"
"#;

/// A fresh directory under the system temporary directory, removed with everything in it when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("sluice-cli-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        Scratch { path }
    }

    /// `name` inside the directory.
    fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `text` to `name` inside the directory.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, text).unwrap();
        path
    }

    /// The names directly inside the directory (hidden ones included), sorted.
    fn entries(&self) -> Vec<String> {
        self.entries_of(".")
    }

    /// The names in the folder `sub` of this one, sorted.
    fn entries_of(&self, sub: &str) -> Vec<String> {
        let dir = self.path.join(sub);
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// What one invocation of the binary did.
#[derive(Debug)]
struct Outcome {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// Asserts a zero exit status.
    fn ok(self) -> Outcome {
        assert_eq!(
            self.code,
            Some(0),
            "sluice {:?} failed:\nstderr:\n{}\nstdout:\n{}",
            self.args,
            self.stderr,
            self.stdout
        );
        self
    }

    /// Asserts a non-zero exit status and an `error: ` line on stderr; returns that line without the prefix.
    fn error(&self) -> String {
        assert!(
            matches!(self.code, Some(c) if c != 0),
            "sluice {:?} should fail, exit status {:?}:\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.code,
            self.stdout,
            self.stderr
        );
        let line = self.stderr.lines().find(|l| l.starts_with("error: "));
        let line =
            line.unwrap_or_else(|| panic!("no `error: ` line on stderr of sluice {:?}:\n{}", self.args, self.stderr));
        line["error: ".len()..].to_string()
    }
}

/// Runs the binary in `dir` with `args`.
fn sluice(dir: &Path, args: &[&str]) -> Outcome {
    sluice_with_env(dir, args, &[])
}

/// Runs the binary in `dir` with `args` and the environment variables `env` set.
fn sluice_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let output = Command::new(SLUICE)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {SLUICE}: {e}"));
    Outcome {
        args: args.iter().map(|a| a.to_string()).collect(),
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Every file of an output directory, by name.
fn read_dir_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), fs::read(e.path()).unwrap())
        })
        .collect()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The 1-based line of `text` containing `needle` (which must occur exactly once).
fn line_of(text: &str, needle: &str) -> usize {
    let lines: Vec<usize> = text.lines().enumerate().filter(|(_, l)| l.contains(needle)).map(|(i, _)| i + 1).collect();
    assert_eq!(lines.len(), 1, "{needle:?} should be on exactly one line of:\n{text}");
    lines[0]
}

/// `text` with `from` (which must occur exactly once) replaced by `to`.
fn replace(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "{from:?} should occur once in:\n{text}");
    text.replacen(from, to, 1)
}

/// The data rows of a CSV file (the header excluded).
fn csv_rows(text: &str) -> Vec<&str> {
    text.lines().skip(1).filter(|l| !l.is_empty()).collect()
}

/// A resolved TOML text without its leading comment lines (which name the file it came from).
fn toml_body(text: &str) -> String {
    let body: Vec<&str> = text.lines().skip_while(|l| l.starts_with('#') || l.trim().is_empty()).collect();
    assert!(!body.is_empty(), "no TOML after the comments:\n{text}");
    body.join("\n")
}

#[test]
fn run_writes_every_output_file_and_prints_the_summary() {
    let dir = Scratch::new("run");
    dir.write("poisson.toml", POISSON);
    let run = sluice(&dir.path, &["run", "poisson.toml", "--out", "out"]).ok();

    let out = dir.join("out");
    let mut written: Vec<String> = read_dir_files(&out).into_keys().collect();
    written.sort();
    let mut expected: Vec<String> = OUTPUT_FILES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(written, expected, "files in the output directory");
    assert_eq!(dir.entries(), ["out", "poisson.toml"], "nothing else is left next to the output directory");

    for label in ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB", "all", "p99", "p50", "flow size"] {
        assert!(run.stdout.contains(label), "the summary table lacks {label:?}:\n{}", run.stdout);
    }
    assert!(run.stdout.contains("results: out"), "{}", run.stdout);
    assert!(run.stderr.contains("16 hosts"), "the run header names the topology:\n{}", run.stderr);

    let fct = read(&out.join("fct.csv"));
    assert!(fct.starts_with("id,src,dst,size_bytes,start_ns,finish_ns,fct_ns"), "{fct}");
    let rows = csv_rows(&fct);
    assert!(rows.len() > 20, "a hundred-odd Poisson flows expected, got {}", rows.len());
    for (i, row) in rows.iter().enumerate() {
        assert!(row.starts_with(&format!("{i},")), "flow ids are row numbers: {row}");
    }

    let summary: serde_json::Value =
        serde_json::from_str(&read(&out.join("summary.json"))).expect("summary.json parses");
    assert_eq!(summary["totals"]["flows"].as_u64(), Some(rows.len() as u64), "flow count in summary.json");
    assert_eq!(summary["overall"]["count"].as_u64(), Some(rows.len() as u64), "no long-lived flows here");
    assert_eq!(summary["run"]["seed"].as_u64(), Some(1));
    let labels: Vec<&str> =
        summary["buckets"].as_array().unwrap().iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"]);
    let in_buckets: u64 = summary["buckets"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(in_buckets, rows.len() as u64);

    assert!(!csv_rows(&read(&out.join("queues.csv"))).is_empty());
    let throughput = read(&out.join("throughput.csv"));
    assert!(throughput.contains("flow 0,"), "throughput of flow 0 is sampled:\n{throughput}");
    let trace = read(&out.join("trace.csv"));
    assert!(csv_rows(&trace).iter().any(|r| r.split(',').nth(1) == Some("0")), "flow 0 is traced:\n{trace}");
    let resolved: toml::Table =
        read(&out.join("scenario.resolved.toml")).parse().expect("the resolved scenario is TOML");
    assert_eq!(resolved["name"].as_str(), Some("poisson"));
    assert_eq!(resolved["cc"]["algorithm"].as_str(), Some("dcqcn"));
}

#[test]
fn incast_on_a_star_finishes_every_flow() {
    let dir = Scratch::new("incast");
    dir.write("incast.toml", INCAST);
    sluice(&dir.path, &["run", "incast.toml", "--out", "out", "--quiet"]).ok();
    let fct = read(&dir.join("out/fct.csv"));
    let rows = csv_rows(&fct);
    assert_eq!(rows.len(), 4, "{fct}");
    for row in rows {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!((cols[2], cols[3]), ("0", "100000"), "every flow sends 100 KB to host 0: {row}");
        assert!(!cols[5].is_empty(), "the flow finished: {row}");
    }
    let summary: serde_json::Value = serde_json::from_str(&read(&dir.join("out/summary.json"))).unwrap();
    assert_eq!(summary["overall"]["unfinished"].as_u64(), Some(0));
    let throughput = read(&dir.join("out/throughput.csv"));
    for flow in 0..4 {
        assert!(throughput.contains(&format!("flow {flow},")), "{throughput}");
    }
}

#[test]
fn quiet_runs_print_nothing() {
    let dir = Scratch::new("quiet");
    dir.write("incast.toml", INCAST);
    let run = sluice(&dir.path, &["run", "incast.toml", "--out", "out", "-q"]).ok();
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
    assert!(dir.join("out/fct.csv").is_file());
}

#[test]
fn without_out_results_go_to_the_scenarios_output_dir_or_results_name() {
    let dir = Scratch::new("default-dir");
    dir.write("incast.toml", INCAST);
    let run = sluice(&dir.path, &["run", "incast.toml"]).ok();
    assert!(run.stdout.contains("results: results/incast"), "{}", run.stdout);
    assert!(dir.join("results/incast/fct.csv").is_file());

    dir.write("elsewhere.toml", &format!("{INCAST}dir = \"runs/mine\"\n"));
    sluice(&dir.path, &["run", "elsewhere.toml", "-q"]).ok();
    for file in OUTPUT_FILES {
        assert!(dir.join("runs/mine").join(file).is_file(), "{file} in output.dir");
    }
}

#[test]
fn the_same_seed_gives_identical_files() {
    let dir = Scratch::new("same-seed");
    dir.write("poisson.toml", POISSON);
    sluice(&dir.path, &["run", "poisson.toml", "--out", "a", "-q"]).ok();
    sluice(&dir.path, &["run", "poisson.toml", "--out", "b", "-q"]).ok();
    let (a, b) = (read_dir_files(&dir.join("a")), read_dir_files(&dir.join("b")));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs between two runs with one seed");
    }
    // An explicit --seed equal to the file's seed is the same run.
    sluice(&dir.path, &["run", "poisson.toml", "--out", "c", "-q", "--seed", "1"]).ok();
    let c = read_dir_files(&dir.join("c"));
    assert!(c["fct.csv"] == a["fct.csv"]);
    assert!(c["summary.json"] == a["summary.json"]);
}

#[test]
fn another_seed_gives_other_flows() {
    let dir = Scratch::new("other-seed");
    dir.write("poisson.toml", POISSON);
    sluice(&dir.path, &["run", "poisson.toml", "--out", "s1", "-q"]).ok();
    sluice(&dir.path, &["run", "poisson.toml", "--out", "s2", "-q", "--seed", "2"]).ok();
    let (s1, s2) = (fs::read(dir.join("s1/fct.csv")).unwrap(), fs::read(dir.join("s2/fct.csv")).unwrap());
    assert!(s1 != s2, "--seed 2 should change the Poisson flows");
    let summary: serde_json::Value = serde_json::from_str(&read(&dir.join("s2/summary.json"))).unwrap();
    assert_eq!(summary["run"]["seed"].as_u64(), Some(2));
    let resolved: toml::Table = read(&dir.join("s2/scenario.resolved.toml")).parse().unwrap();
    assert_eq!(resolved["seed"].as_integer(), Some(2), "the resolved scenario records the seed in force");
}

#[test]
fn set_changes_the_topology() {
    let dir = Scratch::new("set-k");
    dir.write("small.toml", &replace(POISSON, "k = 4", "k = 2"));
    let check = sluice(&dir.path, &["check", "small.toml"]).ok();
    let table: toml::Table = check.stdout.parse().expect("check prints TOML");
    assert_eq!(table["topology"]["k"].as_integer(), Some(2));
    let check = sluice(&dir.path, &["check", "small.toml", "--set", "topology.k=4"]).ok();
    let table: toml::Table = check.stdout.parse().expect("check prints TOML");
    assert_eq!(table["topology"]["k"].as_integer(), Some(4));

    let run = sluice(&dir.path, &["run", "small.toml", "--out", "k2"]).ok();
    assert!(run.stderr.contains("k=2: 2 hosts"), "{}", run.stderr);
    let run = sluice(&dir.path, &["run", "small.toml", "--out", "k4", "--set", "topology.k=4"]).ok();
    assert!(run.stderr.contains("k=4: 16 hosts"), "{}", run.stderr);
    let hosts = |out: &str| -> usize {
        let fct = read(&dir.join(out).join("fct.csv"));
        let mut seen: Vec<usize> =
            csv_rows(&fct).iter().flat_map(|r| r.split(',').skip(1).take(2).map(|h| h.parse().unwrap())).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.last().map_or(0, |h| h + 1)
    };
    assert_eq!(hosts("k2"), 2);
    assert!(hosts("k4") > 2 && hosts("k4") <= 16, "{}", hosts("k4"));
}

#[test]
fn set_changes_the_algorithm() {
    let dir = Scratch::new("set-cc");
    dir.write("poisson.toml", POISSON);
    let check = sluice(&dir.path, &["check", "poisson.toml", "--set", "cc.algorithm=dctcp"]).ok();
    let table: toml::Table = check.stdout.parse().expect("check prints TOML");
    assert_eq!(table["cc"]["algorithm"].as_str(), Some("dctcp"));
    assert!(check.stdout.contains("of dctcp in force"), "{}", check.stdout);
    let dcqcn: toml::Table = sluice(&dir.path, &["check", "poisson.toml"]).ok().stdout.parse().unwrap();
    assert!(table["cc"]["dctcp"]["g"].is_float(), "DCTCP's parameters in force: {}", check.stdout);
    assert!(table["cc"].get("dcqcn").is_none(), "{}", check.stdout);
    assert!(dcqcn["cc"]["dcqcn"]["variant"].is_str(), "DCQCN's parameters in force");

    let run = sluice(&dir.path, &["run", "poisson.toml", "--out", "out", "--set", "cc.algorithm=dctcp"]).ok();
    assert!(run.stderr.contains("dctcp"), "{}", run.stderr);
    let resolved: toml::Table = read(&dir.join("out/scenario.resolved.toml")).parse().unwrap();
    assert_eq!(resolved["cc"]["algorithm"].as_str(), Some("dctcp"));

    // Several overrides at once, with an array index.
    let check =
        sluice(&dir.path, &["check", "poisson.toml", "--set", "workload.0.load=0.5", "--set", "cc.params.g=0.01"]).ok();
    let table: toml::Table = check.stdout.parse().unwrap();
    assert_eq!(table["workload"][0]["load"].as_float(), Some(0.5));
    assert_eq!(table["cc"]["dcqcn"]["g"].as_float(), Some(0.01));
}

#[test]
fn check_output_loads_again() {
    let dir = Scratch::new("round-trip");
    dir.write("poisson.toml", POISSON);
    let first = sluice(&dir.path, &["check", "poisson.toml", "--set", "cc.algorithm=dctcp", "--seed", "9"]).ok();
    assert!(first.stdout.contains("seed = 9"), "{}", first.stdout);
    // Written elsewhere (relative paths in it must not depend on the directory it lies in).
    dir.write("sub/resolved.toml", &first.stdout);
    let second = sluice(&dir.join("sub"), &["check", "resolved.toml"]).ok();
    assert_eq!(toml_body(&second.stdout), toml_body(&first.stdout), "check of check's output is a fixed point");
    let a: toml::Table = first.stdout.parse().unwrap();
    let b: toml::Table = second.stdout.parse().unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_resolved_scenario_reruns_identically() {
    let dir = Scratch::new("rerun");
    dir.write("poisson.toml", POISSON);
    sluice(&dir.path, &["run", "poisson.toml", "--out", "first", "-q", "--seed", "3", "--set", "workload.0.load=0.4"])
        .ok();
    fs::copy(dir.join("first/scenario.resolved.toml"), dir.write("sub/again.toml", "")).unwrap();
    sluice(&dir.join("sub"), &["run", "again.toml", "--out", "../second", "-q"]).ok();
    let (first, second) = (read_dir_files(&dir.join("first")), read_dir_files(&dir.join("second")));
    assert!(first["fct.csv"] == second["fct.csv"], "fct.csv differs after re-running scenario.resolved.toml");
    assert!(first["summary.json"] == second["summary.json"], "summary.json differs after re-running");
    let (a, b) = (
        String::from_utf8_lossy(&first["scenario.resolved.toml"]),
        String::from_utf8_lossy(&second["scenario.resolved.toml"]),
    );
    assert_eq!(toml_body(&a), toml_body(&b), "the resolved scenario resolves to itself");
}

#[test]
fn runs_cut_short_report_unfinished_flows() {
    let dir = Scratch::new("cut");
    dir.write("poisson.toml", POISSON);
    let run = sluice(&dir.path, &["run", "poisson.toml", "--out", "out", "--set", "simulation.duration=50us"]).ok();
    assert!(run.stdout.contains("unfinished"), "{}", run.stdout);
    let fct = read(&dir.join("out/fct.csv"));
    let rows = csv_rows(&fct);
    let unfinished = rows.iter().filter(|r| r.split(',').nth(5) == Some("")).count();
    assert!(unfinished > 0 && unfinished < rows.len(), "{unfinished} of {} flows unfinished", rows.len());
    for row in rows.iter().filter(|r| r.split(',').nth(5) == Some("")) {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!((cols[6], cols[8]), ("", ""), "an unfinished flow has no FCT and no slowdown: {row}");
    }
    let summary: serde_json::Value = serde_json::from_str(&read(&dir.join("out/summary.json"))).unwrap();
    assert_eq!(summary["totals"]["flows"].as_u64(), Some(rows.len() as u64));
    assert_eq!(summary["overall"]["unfinished"].as_u64(), Some(unfinished as u64));
    assert_eq!(summary["run"]["sim_time_ns"].as_f64(), Some(50_000.0), "the run stops at the duration");
}

#[test]
fn every_bundled_scenario_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut names: Vec<PathBuf> = fs::read_dir(root.join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for path in names {
        let check = sluice(&root, &["check", path.to_str().unwrap()]).ok();
        let table: toml::Table = check.stdout.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(table["name"].as_str(), Some(stem), "{}", path.display());
    }
}

#[test]
fn usage_errors_exit_non_zero() {
    let dir = Scratch::new("usage");
    let none = sluice(&dir.path, &[]);
    assert!(matches!(none.code, Some(c) if c != 0), "{none:?}");
    assert!(none.stderr.contains("Usage"), "{}", none.stderr);
    let unknown = sluice(&dir.path, &["simulate", "x.toml"]);
    assert!(matches!(unknown.code, Some(c) if c != 0), "{unknown:?}");
    let version = sluice(&dir.path, &["--version"]).ok();
    assert!(version.stdout.starts_with("sluice "), "{}", version.stdout);
    assert!(dir.entries().is_empty());
}

#[test]
fn list_names_algorithms_workloads_and_topologies() {
    let dir = Scratch::new("list");
    let list = sluice(&dir.path, &["list"]).ok();
    for name in
        ["dctcp", "dcqcn", "none", "websearch", "poisson", "incast", "flow_list", "fat_tree", "star", "leaf_spine"]
    {
        assert!(list.stdout.contains(name), "`sluice list` lacks {name}:\n{}", list.stdout);
    }
}

#[test]
fn bench_times_runs_and_writes_nothing() {
    let dir = Scratch::new("bench");
    dir.write("incast.toml", INCAST);
    let bench = sluice(&dir.path, &["bench", "incast.toml", "--repeat", "2"]).ok();
    for needle in ["run 1:", "run 2:", "events", "flows finished 4/4", "best wall"] {
        assert!(bench.stdout.contains(needle), "{needle:?} missing:\n{}", bench.stdout);
    }
    assert_eq!(dir.entries(), ["incast.toml"], "bench writes no files");
}

/// A workload of about 160,000 memcached flows on the quickstart fat-tree: the flows are generated as the
/// run reaches them and a finished flow keeps only its small state (its algorithm and plane state are
/// released), so peak memory stays near 90 MB where holding every flow's full state took 242 MB.
#[test]
fn a_run_holds_no_more_than_its_flows_need() {
    let dir = Scratch::new("memory");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quickstart.toml");
    let scenario = scenario.to_str().unwrap();
    // Peak RSS in MB of a memcached load over `duration`, with the flows it finished.
    let peak_of = |duration: &str| {
        // Small pages: the figures are the simulator's own, without huge pages' rounding of the heap.
        let duration = format!("workload.0.duration={duration}");
        let sets = ["--set", "workload.0.cdf=memcached", "--set", &duration, "--set", "simulation.huge_pages=off"];
        let bench = sluice(&dir.path, &[&["bench", scenario][..], &sets].concat()).ok();
        let field = |name: &str| bench.stdout.split(name).nth(1)?.split([' ', '/']).next()?.parse().ok();
        let peak: f64 = field("peak RSS ").unwrap_or_else(|| panic!("no peak RSS:\n{}", bench.stdout));
        let flows: f64 = field("flows finished ").unwrap_or_else(|| panic!("no flow count:\n{}", bench.stdout));
        (peak, flows)
    };
    let (small, small_flows) = peak_of("500us");
    let (large, large_flows) = peak_of("1ms");
    assert_eq!((small_flows, large_flows), (162_308.0, 325_337.0));
    // Finished flows are retired: a flow adds its result row and a few ids (about 143 B measured; 459 B
    // while finished flows kept their state, 1,352 B while every flow was made before the run).
    let per_flow = (large - small) * 1e6 / (large_flows - small_flows);
    assert!(per_flow < 250.0, "{per_flow:.0} B per flow: {small} MB for 162,308 flows, {large} MB for 325,337");
    assert!(small < 60.0, "peak RSS {small} MB for 162,308 flows");
}

// ---------------------------------------------------------------------------------------------------
// Bad input: a specific message, a non-zero exit status, and no output directory.

/// Writes `text` as `bad.toml`, runs `run bad.toml --out out` (plus `extra` arguments) and `check` on it,
/// asserts that both fail with the same error and that nothing but the scenario file is left in the
/// directory; returns the error (without `error: `).
fn rejected(text: &str, extra: &[&str]) -> String {
    let dir = Scratch::new("bad");
    dir.write("bad.toml", text);
    let mut args = vec!["run", "bad.toml", "--out", "out"];
    args.extend_from_slice(extra);
    let run = sluice(&dir.path, &args);
    let message = run.error();
    assert_eq!(run.stdout, "", "a rejected run prints no table");
    assert_eq!(dir.entries(), ["bad.toml"], "a rejected run creates no output directory: {message}");
    let mut args = vec!["check", "bad.toml"];
    args.extend_from_slice(extra);
    let check = sluice(&dir.path, &args);
    assert_eq!(check.error(), message, "check and run report the same error");
    assert_eq!(check.stdout, "");
    message
}

/// Asserts that `message` starts with `prefix` and contains each of `parts`.
fn assert_message(message: &str, prefix: &str, parts: &[&str]) {
    assert!(message.starts_with(prefix), "expected a message starting with {prefix:?}, got:\n{message}");
    for part in parts {
        assert!(message.contains(part), "expected {part:?} in:\n{message}");
    }
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let text = replace(POISSON, "k = 4\n", "k = 4\nkk = 3\n");
    let line = line_of(&text, "kk = 3");
    let message = rejected(&text, &[]);
    assert_message(&message, &format!("bad.toml:{line}: topology.kk: "), &["unknown field `kk`", "`k`", "`host_rate`"]);

    let text = replace(POISSON, "[cc]\n", "[cc]\nalgoritm = \"dctcp\"\n");
    let line = line_of(&text, "algoritm");
    let message = rejected(&text, &[]);
    assert_message(&message, &format!("bad.toml:{line}: cc.algoritm: "), &["unknown key", "`algorithm`", "dctcp"]);
}

#[test]
fn unknown_keys_set_on_the_command_line_blame_the_argument() {
    let message = rejected(POISSON, &["--set", "topology.kk=3"]);
    assert_message(&message, "--set topology.kk=3: topology.kk: ", &["unknown field `kk`", "`k`"]);
    let message = rejected(POISSON, &["--set", "cc.params.gee=1"]);
    assert_message(&message, "--set cc.params.gee=1: cc.params.gee: ", &["unknown parameter"]);
}

#[test]
fn wrong_types_name_the_key_and_line() {
    let text = replace(POISSON, "k = 4", "k = \"four\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: topology.k: ", line_of(&text, "four")),
        &["invalid type", "\"four\""],
    );

    let text = replace(POISSON, "load = 0.3", "load = \"high\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: workload.0.load: ", line_of(&text, "high")),
        &["invalid type", "\"high\""],
    );
}

#[test]
fn misspelled_rates_show_the_accepted_form() {
    let text = replace(POISSON, "\"100Gbps\"", "\"100Gpbs\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: topology.host_rate: ", line_of(&text, "100Gpbs")),
        &["\"100Gpbs\"", "\"100Gbps\""],
    );
    let message = rejected(POISSON, &["--set", "topology.host_rate=100Gpbs"]);
    assert_message(&message, "--set topology.host_rate=100Gpbs: topology.host_rate: ", &["\"100Gpbs\"", "\"100Gbps\""]);
}

#[test]
fn odd_fat_tree_arity_is_rejected() {
    let text = replace(POISSON, "k = 4", "k = 7");
    let message = rejected(&text, &[]);
    assert_message(&message, &format!("bad.toml:{}: topology.k: ", line_of(&text, "k = 7")), &["even", "7"]);
    let message = rejected(POISSON, &["--set", "topology.k=5"]);
    assert_message(&message, "--set topology.k=5: topology.k: ", &["even", "5"]);
}

#[test]
fn zero_rates_are_rejected() {
    let text = replace(POISSON, "\"100Gbps\"", "\"0Gbps\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: topology.host_rate: ", line_of(&text, "0Gbps")),
        &["positive", "got 0"],
    );
}

#[test]
fn loads_above_one_are_rejected() {
    let text = replace(POISSON, "load = 0.3", "load = 1.5");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: workload.0.load: ", line_of(&text, "load = 1.5")),
        &["at most 1", "1.5"],
    );
}

#[test]
fn missing_cdf_files_are_named() {
    let text = replace(POISSON, "cdf = \"webserver\"", "cdf = \"cdfs/missing.cdf\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: workload.0.cdf: ", line_of(&text, "missing.cdf")),
        &["cdfs/missing.cdf", "not found"],
    );
}

#[test]
fn unknown_algorithms_list_the_registered_ones() {
    let text = replace(POISSON, "algorithm = \"dcqcn\"", "algorithm = \"hpcx\"");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: cc.algorithm: ", line_of(&text, "\"hpcx\"")),
        &["\"hpcx\"", "dcqcn", "dctcp"],
    );
    let message = rejected(POISSON, &["--set", "cc.algorithm=kubic"]);
    assert_message(&message, "--set cc.algorithm=kubic: cc.algorithm: ", &["\"kubic\"", "dcqcn", "cubic"]);
}

#[test]
fn bad_algorithm_parameters_name_the_parameter() {
    let text = replace(POISSON, "algorithm = \"dcqcn\"\n", "algorithm = \"dcqcn\"\n[cc.params]\ng = 2.0\n");
    let message = rejected(&text, &[]);
    assert_message(&message, &format!("bad.toml:{}: cc.params.g: ", line_of(&text, "g = 2.0")), &["dcqcn"]);

    let text = replace(POISSON, "algorithm = \"dcqcn\"\n", "algorithm = \"dcqcn\"\n[cc.params]\ngee = 0.1\n");
    let message = rejected(&text, &[]);
    assert_message(
        &message,
        &format!("bad.toml:{}: cc.params.gee: ", line_of(&text, "gee")),
        &["unknown parameter", "g"],
    );

    let message = rejected(POISSON, &["--set", "cc.params.g=2"]);
    assert_message(&message, "--set cc.params.g=2: cc.params.g: ", &["dcqcn"]);
}

#[test]
fn bad_token_transport_parameters_are_located() {
    let params = "algorithm = \"tocc\"\n[cc.params]\nunscheduled = \"lots\"\n";
    let text = replace(POISSON, "algorithm = \"dcqcn\"\n", params);
    let message = rejected(&text, &[]);
    let at = format!("bad.toml:{}: cc.params.unscheduled: ", line_of(&text, "unscheduled"));
    assert_message(&message, &at, &["none", "bdp"]);

    let text = replace(POISSON, "algorithm = \"dcqcn\"\n", "algorithm = \"homa\"\n[cc.params]\novercommit = 7\n");
    let message = rejected(&text, &[]);
    let at = format!("bad.toml:{}: cc.params.overcommit: ", line_of(&text, "overcommit"));
    assert_message(&message, &at, &["unscheduled"]);

    let text = replace(POISSON, "algorithm = \"dcqcn\"\n", "algorithm = \"tocc\"\n[cc.params]\ntoken_data = \"4KB\"\n");
    let message = rejected(&text, &[]);
    let at = format!("bad.toml:{}: cc.params.token_data: ", line_of(&text, "token_data"));
    assert_message(&message, &at, &["flagged"]);

    let message = rejected(POISSON, &["--set", "cc.algorithm=ndp", "--set", "cc.params.trim_queue=0"]);
    assert_message(&message, "--set cc.params.trim_queue=0: cc.params.trim_queue: ", &["trimming"]);
}

#[test]
fn malformed_set_arguments_are_named() {
    let message = rejected(POISSON, &["--set", "topology.k"]);
    assert_message(&message, "--set topology.k: ", &["KEY=VALUE"]);
    let message = rejected(POISSON, &["--set", "=4"]);
    assert_message(&message, "--set =4: ", &["empty"]);
    let message = rejected(POISSON, &["--set", "workload.3.load=0.5"]);
    assert_message(&message, "--set workload.3.load=0.5: workload.3.load: ", &["out of range"]);
}

#[test]
fn too_large_seeds_are_rejected() {
    let message = rejected(POISSON, &["--seed", "18446744073709551615"]);
    assert_message(&message, "--seed 18446744073709551615: ", &["too large"]);
}

#[test]
fn syntax_errors_give_line_and_column() {
    let text = replace(POISSON, "[cc]", "[cc");
    let message = rejected(&text, &[]);
    assert_message(&message, &format!("bad.toml:{}: ", line_of(&text, "[cc")), &["TOML syntax error", "column"]);
}

#[test]
fn missing_scenario_files_are_named() {
    let dir = Scratch::new("missing");
    for command in ["run", "check", "bench"] {
        let outcome = sluice(&dir.path, &[command, "missing.toml"]);
        let message = outcome.error();
        assert_message(&message, "missing.toml: ", &["cannot read"]);
        assert_eq!(outcome.stdout, "");
    }
    assert!(dir.entries().is_empty(), "nothing is created: {:?}", dir.entries());
}

#[test]
fn a_failed_run_leaves_the_previous_output_intact() {
    let dir = Scratch::new("keep");
    dir.write("incast.toml", INCAST);
    sluice(&dir.path, &["run", "incast.toml", "--out", "out", "-q"]).ok();
    let before = read_dir_files(&dir.join("out"));
    assert_eq!(before.len(), OUTPUT_FILES.len());

    dir.write("bad.toml", &replace(INCAST, "hosts = 5", "hosts = 5\nhostz = 6"));
    sluice(&dir.path, &["run", "bad.toml", "--out", "out", "-q"]).error();
    sluice(&dir.path, &["run", "incast.toml", "--out", "out", "-q", "--set", "topology.rate=fast"]).error();
    sluice(&dir.path, &["run", "missing.toml", "--out", "out", "-q"]).error();
    assert!(read_dir_files(&dir.join("out")) == before, "the earlier results were changed by failed runs");
    assert_eq!(dir.entries(), ["bad.toml", "incast.toml", "out"], "no temporary directories are left");
}

#[test]
fn unwritable_output_directories_are_reported() {
    let dir = Scratch::new("unwritable");
    dir.write("incast.toml", INCAST);
    dir.write("plain", "a file, not a directory");
    let message = sluice(&dir.path, &["run", "incast.toml", "--out", "plain/out", "-q"]).error();
    assert!(message.contains("plain"), "{message}");
    assert_eq!(read(&dir.join("plain")), "a file, not a directory");
    assert_eq!(dir.entries(), ["incast.toml", "plain"]);
}

#[test]
fn an_output_directory_holding_other_files_is_not_wiped() {
    let dir = Scratch::new("foreign");
    dir.write("incast.toml", INCAST);
    dir.write("mine/notes.txt", "keep me");
    dir.write("mine/older/fct.csv", "id\n");
    let run = sluice(&dir.path, &["run", "incast.toml", "--out", "mine", "-q"]);
    // Refusing the directory or writing next to the files are both acceptable; deleting them is not.
    assert!(dir.join("mine/notes.txt").is_file(), "notes.txt was deleted (exit {:?}, stderr {})", run.code, run.stderr);
    assert_eq!(read(&dir.join("mine/notes.txt")), "keep me");
    assert!(dir.join("mine/older/fct.csv").is_file(), "a subdirectory was deleted");
    assert_ne!(run.code, Some(0), "the run must refuse a directory holding foreign files");
    assert!(run.stderr.contains("did not write"), "stderr: {}", run.stderr);
}

// ---------------------------------------------------------------------------------------------------
// Run size: the estimate `check` prints, and runs refused for want of memory.

#[test]
fn check_prints_the_estimated_run_size_on_stderr() {
    let dir = Scratch::new("estimate");
    dir.write("incast.toml", INCAST);
    let check = sluice(&dir.path, &["check", "incast.toml"]).ok();
    let line = check.stderr.lines().find(|l| l.starts_with("estimated run size: memory about ")).unwrap_or_else(|| {
        panic!("no estimate on stderr:\n{}", check.stderr);
    });
    // Four 100 KB flows of 1000 B packets over two links each, with one ACK per packet.
    assert!(line.ends_with("400 data packets, 1600 packet-hops, 2416 events; huge pages off"), "{line}");
    assert!(toml::from_str::<toml::Table>(&check.stdout).is_ok(), "stdout stays TOML");
}

/// `check` says whether a run would ask for huge pages and `bench` whether it did: not by default for a
/// run this small (`"auto"` asks from 24 MiB of network state), always with `"on"` (where the kernel's
/// advice exists: Linux with the GNU C library), never with `"off"`.
#[test]
fn check_and_bench_say_whether_a_run_uses_huge_pages() {
    let dir = Scratch::new("huge-pages");
    dir.write("incast.toml", INCAST);
    let supported = cfg!(all(target_os = "linux", target_env = "gnu"));
    let on = if supported { "on" } else { "off" };
    for (value, wanted, used) in [("auto", "off", "off"), ("on", "on", on), ("off", "off", "off")] {
        let set = format!("simulation.huge_pages={value}");
        let check = sluice(&dir.path, &["check", "incast.toml", "--set", &set]).ok();
        assert!(check.stderr.contains(&format!("; huge pages {wanted}\n")), "{value}: {}", check.stderr);
        let bench = sluice(&dir.path, &["bench", "incast.toml", "--set", &set]).ok();
        assert!(bench.stdout.trim_end().ends_with(&format!("| huge pages {used}")), "{value}: {}", bench.stdout);
    }
    let check = sluice(&dir.path, &["check", "incast.toml", "--set", "simulation.huge_pages=off"]).ok();
    assert!(check.stdout.contains("huge_pages = \"off\""), "the resolved scenario keeps it:\n{}", check.stdout);
    // 8,192 hosts: the ports alone come to 42 MiB.
    dir.write("poisson.toml", POISSON);
    let sets = ["--set", "topology.k=32", "--set", "workload.0.duration=1us"];
    let check = sluice(&dir.path, &[&["check", "poisson.toml"][..], &sets].concat()).ok();
    assert!(
        check.stderr.contains("huge pages 8.0 MiB") && check.stderr.contains("; huge pages on\n"),
        "{}",
        check.stderr
    );
}

/// The event queue's estimate is bounded by the run's events: a 27,648-host fat-tree with a microsecond
/// of arrivals needs megabytes, not the gigabytes its links could queue if they were all busy.
#[test]
fn a_large_network_with_little_traffic_is_estimated_small() {
    let dir = Scratch::new("estimate-large");
    dir.write("poisson.toml", POISSON);
    let sets = ["--set", "topology.k=48", "--set", "workload.0.duration=1us"];
    let check = sluice(&dir.path, &[&["check", "poisson.toml"][..], &sets].concat()).ok();
    let line = check.stderr.lines().find(|l| l.starts_with("estimated run size: ")).expect("an estimate");
    assert!(line.starts_with("estimated run size: memory about ") && line.contains(" MiB ("), "{line}");
}

#[test]
fn runs_larger_than_the_available_memory_are_refused_unless_forced() {
    let dir = Scratch::new("memory");
    dir.write("incast.toml", INCAST);
    let tight = [("SLUICE_MEM_AVAILABLE", "1048576")];
    for args in [&["run", "incast.toml", "--out", "out"][..], &["bench", "incast.toml"][..]] {
        let refused = sluice_with_env(&dir.path, args, &tight);
        let message = refused.error();
        assert_eq!(refused.code, Some(2));
        assert!(message.starts_with("the run would need about "), "{message}");
        assert!(message.contains("of memory, more than the 1.0 MiB available"), "{message}");
        assert!(message.contains("give --force to run anyway"), "{message}");
        assert_eq!(dir.entries(), ["incast.toml"], "a refused run writes nothing");
    }
    let forced = sluice_with_env(&dir.path, &["run", "incast.toml", "--out", "out", "--quiet", "--force"], &tight);
    forced.ok();
    assert_eq!(dir.entries(), ["incast.toml", "out"]);
    let roomy = [("SLUICE_MEM_AVAILABLE", "100000000000")];
    sluice_with_env(&dir.path, &["bench", "incast.toml"], &roomy).ok();
}

#[test]
fn absurd_sizes_are_refused_before_anything_runs() {
    let message =
        rejected(&replace(INCAST, "size = \"100KB\"", "size = \"100KB\"\nrepeats = 1000000000\nperiod = \"1us\""), &[]);
    assert_message(&message, "bad.toml:", &["workload.0.repeats: this entry would generate 4000000000 flows"]);
    let message = rejected(&replace(POISSON, "sample_interval = \"10us\"", "sample_interval = \"1ps\""), &[]);
    assert_message(&message, "bad.toml:", &["output.sample_interval: 2 sampled series every 1ps", "limit of 10000000"]);
    let message = rejected(POISSON, &["--set", "topology.k=1000000"]);
    assert_message(&message, "--set topology.k=1000000: topology.k: k = 1000000: ", &[]);
    let message = rejected(INCAST, &["--set", "switch.buffer=1B"]);
    assert_message(&message, "--set switch.buffer=1B: switch.buffer: 1B is too small", &[]);
    let message = rejected(INCAST, &["--set", "host.rto_min=0us"]);
    assert_message(&message, "--set host.rto_min=0us: host.rto_min: 0ps is shorter than the shortest round trip", &[]);
}

#[test]
fn compare_sets_two_runs_side_by_side_and_names_bad_input() {
    let dir = Scratch::new("compare");
    dir.write("poisson.toml", POISSON);
    sluice(&dir.path, &["run", "poisson.toml", "--quiet", "--out", "a"]).ok();
    sluice(&dir.path, &["run", "poisson.toml", "--quiet", "--seed", "2", "--out", "b"]).ok();
    let table = sluice(&dir.path, &["compare", "a", "b", "--label", "one", "--label", "two"]).ok().stdout;
    let head = table.lines().next().unwrap();
    assert!(head.contains("one") && head.contains("two") && head.contains("difference"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("datapath") && l.contains("simulator")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("slowdown p99")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("trace 0 ")), "traced flow 0 lines up:\n{table}");
    let labels = sluice(&dir.path, &["compare", "a", "b", "--label", "one"]).error();
    assert!(labels.contains("1 --label for 2 directories"), "{labels}");
    fs::create_dir_all(dir.join("empty")).unwrap();
    let empty = sluice(&dir.path, &["compare", "a", "empty"]).error();
    assert!(empty.contains("empty") && empty.contains("not a results directory"), "{empty}");
}

#[test]
fn udp_send_names_bad_input_and_exits_2() {
    let dir = Scratch::new("udp-bad");
    let to = sluice(&dir.path, &["udp", "send", "--to", "nowhere"]);
    assert_eq!(to.code, Some(2));
    assert!(to.error().contains("--to \"nowhere\": expected an IPv4 address and port"), "{}", to.stderr);
    dir.write("flows.csv", "id,src,dst,to,size_bytes,start_ns,stop_ns,ideal_fct_ns,group\n1,0,1,10.0.0.1:1,0,0,,,0\n");
    let list = sluice(&dir.path, &["udp", "send", "--flow-list", "flows.csv"]).error();
    assert!(list.contains("flows.csv:2: size_bytes must be positive"), "{list}");
    let bolt = sluice(&dir.path, &["udp", "send", "--to", "127.0.0.1:9", "--algorithm", "bolt"]).error();
    assert!(bolt.contains("the UDP datapath"), "{bolt}");
    let plane = sluice(&dir.path, &["udp", "send", "--to", "127.0.0.1:9", "--plane", "mood=offload"]).error();
    assert!(plane.contains("--plane") && plane.contains("mood"), "{plane}");
    let ring = ["udp", "send", "--to", "127.0.0.1:9", "--plane", "mode=offload", "--plane", "ring_capacity=0"];
    let ring = sluice(&dir.path, &ring).error();
    assert!(ring.contains("--plane ring_capacity: must be at least 1"), "{ring}");
    let recv_rate = sluice(&dir.path, &["udp", "recv", "--bind", "127.0.0.1:0", "--line-rate", "fast"]).error();
    assert!(recv_rate.contains("--line-rate \"fast\""), "{recv_rate}");
    let orphan = sluice(&dir.path, &["udp", "recv", "--bind", "127.0.0.1:0", "--param", "overcommit=2"]);
    assert_eq!(orphan.code, Some(2), "--param needs --algorithm: {}", orphan.stderr);
    let bad = ["udp", "recv", "--bind", "127.0.0.1:0", "--algorithm", "homa", "--param", "overcommit=lots"];
    let bad = sluice(&dir.path, &bad).error();
    assert!(bad.contains("--param") && bad.contains("overcommit"), "{bad}");
    let rate = sluice(&dir.path, &["udp", "send", "--to", "127.0.0.1:9", "--line-rate", "fast"]).error();
    assert!(rate.contains("--line-rate \"fast\""), "{rate}");
    assert!(dir.entries() == ["flows.csv"], "no output written: {:?}", dir.entries());
}

/// A `sluice udp recv` on a free loopback port with `args`, given 300 ms to bind; returns its address.
fn udp_receiver(args: &[&str]) -> (String, std::process::Child) {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let to = format!("127.0.0.1:{port}");
    let receiver = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["udp", "recv", "--bind", &to])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    (to, receiver)
}

#[test]
fn udp_send_runs_its_algorithm_off_the_datapath_with_plane_offload() {
    let dir = Scratch::new("udp-offload");
    let (to, mut receiver) = udp_receiver(&["--duration", "30s"]);
    let send = ["udp", "send", "--to", &to, "--flows", "2", "--size", "500KB", "--plane", "mode=offload"];
    let send = sluice(&dir.path, &[&send[..], &["--plane", "latency=5us", "--out", "out"]].concat());
    receiver.kill().unwrap();
    receiver.wait().unwrap();
    assert_eq!(send.code, Some(0), "{}", send.stderr);
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["delivered_bytes"], 1_000_000);
    let plane = &summary["plane"];
    assert!(plane["batches"].as_u64().unwrap() > 0, "reports crossed the channel: {plane}");
    assert!(plane["decision_messages"].as_u64().unwrap() > 0, "decisions came back: {plane}");
}

#[test]
fn udp_threads_shard_the_flows_and_share_the_receivers_port() {
    let dir = Scratch::new("udp-threads");
    let stats = dir.join("recv.json");
    let (to, mut receiver) = udp_receiver(&["--threads", "2", "--duration", "4s", "--stats", stats.to_str().unwrap()]);
    let send = ["udp", "send", "--to", &to, "--flows", "12", "--size", "200KB", "--threads", "4", "--out", "out"];
    let send = sluice(&dir.path, &send);
    assert_eq!(send.code, Some(0), "{}", send.stderr);
    assert!(receiver.wait().unwrap().success());
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["delivered_bytes"], 12 * 200_000);
    let threads = summary["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 4, "{summary}");
    for t in threads {
        assert_eq!(t["flows"], 3, "flows dealt evenly: {t}");
        assert!(t["data_packets"].as_u64().unwrap() >= 3 * 137, "each thread sent its flows: {t}");
    }
    let fct = fs::read_to_string(dir.join("out/fct.csv")).unwrap();
    let ids: std::collections::BTreeSet<&str> = fct.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(ids.len(), 12, "one row per flow, ids distinct:\n{fct}");
    let received: serde_json::Value = serde_json::from_str(&fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(received["bytes"], 12 * 200_000, "{received}");
    assert_eq!(received["flows"], 12, "{received}");
    let per_thread = received["threads"].as_array().unwrap();
    assert_eq!(per_thread.len(), 2, "{received}");
    // Four sender threads on consecutive ports, steered by source port: two to each receiver thread.
    for t in per_thread {
        assert_eq!(t["flows"], 6, "each receiver thread took two senders' flows: {received}");
    }
}

#[test]
fn udp_threads_are_checked() {
    let dir = Scratch::new("udp-threads-bad");
    let zero = sluice(&dir.path, &["udp", "send", "--to", "127.0.0.1:9", "--threads", "0"]);
    assert_eq!(zero.code, Some(2));
    assert!(zero.error().contains("--threads 0: expected 1 to 1024"), "{}", zero.stderr);
    let tokens = ["udp", "recv", "--bind", "127.0.0.1:0", "--threads", "2", "--algorithm", "homa"];
    let tokens = sluice(&dir.path, &tokens).error();
    assert!(tokens.contains("--threads with --algorithm"), "{tokens}");
    assert!(dir.entries().is_empty(), "no output written: {:?}", dir.entries());
}

#[test]
fn udp_send_streams_a_row_for_every_change_of_a_traced_flow() {
    let dir = Scratch::new("udp-trace-stream");
    let (to, mut receiver) = udp_receiver(&["--duration", "30s"]);
    let send = ["udp", "send", "--to", &to, "--flows", "2", "--size", "300KB", "--threads", "2"];
    let trace = ["--trace-flows", "1", "--trace-interval", "0ns", "--out", "out"];
    let send = sluice(&dir.path, &[&send[..], &trace[..]].concat());
    receiver.kill().unwrap();
    receiver.wait().unwrap();
    assert_eq!(send.code, Some(0), "{}", send.stderr);
    assert_eq!(dir.entries_of("out"), ["fct.csv", "summary.json", "trace.csv"], "the partial file became trace.csv");
    let text = fs::read_to_string(dir.join("out/trace.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ns,flow,variable,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r[1] == "1"), "only the traced flow:\n{text}");
    let cwnd: Vec<(f64, &str)> =
        rows.iter().filter(|r| r[2] == "cwnd").map(|r| (r[0].parse::<f64>().unwrap(), r[3])).collect();
    assert!(cwnd.len() > 2, "the window changed as the flow went:\n{text}");
    for pair in cwnd.windows(2) {
        assert!(pair[0].0 <= pair[1].0, "in time order: {pair:?}");
        assert_ne!(pair[0].1, pair[1].1, "a row only when the value changed: {pair:?}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trace"]["rows"], rows.len() as u64, "{summary}");
    assert_eq!(summary["trace"]["dropped"], 0, "a 300 KB flow fits its ring of 1,024 records: {summary}");
}

#[test]
fn udp_send_stops_at_sigint_and_writes_what_it_measured_marked_partial() {
    let dir = Scratch::new("udp-sigint");
    let (to, mut receiver) = udp_receiver(&["--duration", "30s"]);
    let sender = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["udp", "send", "--to", &to, "--flows", "3", "--duration", "30s", "--line-rate", "100Mbps", "--out"])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let asked = std::time::Instant::now();
    // SAFETY: kill(2) with a child's pid and SIGINT touches nothing of this process.
    assert_eq!(unsafe { libc::kill(sender.id() as libc::pid_t, libc::SIGINT) }, 0);
    let output = sender.wait_with_output().unwrap();
    let took = asked.elapsed();
    receiver.kill().unwrap();
    receiver.wait().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(took < std::time::Duration::from_secs(3), "stopped at once, not at --duration: {took:?}");
    assert!(stderr.contains("interrupted: traffic stopped") && stderr.contains("marked partial"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"], true, "{summary}");
    let fct = fs::read_to_string(dir.join("out/fct.csv")).unwrap();
    let rows: Vec<Vec<&str>> = fct.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "the three streams, as far as they got:\n{fct}");
    assert!(rows.iter().all(|r| r[3].parse::<u64>().unwrap() > 0), "each delivered something:\n{fct}");
}
