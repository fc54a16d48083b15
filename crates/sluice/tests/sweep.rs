//! `sluice sweep` end to end: the table and the best configuration, resuming, the same results for
//! any number of jobs, runs that fail without stopping the sweep, bad input refused before anything is
//! written, and an interrupted sweep that keeps its finished runs.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice-sweep").join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn quickstart() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quickstart.toml");
    fs::canonicalize(path).unwrap().display().to_string()
}

/// A sweep file over the quickstart scenario, shortened to 200 us of arrivals.
fn sweep_file(dir: &Path, body: &str) -> PathBuf {
    let text = format!(
        "scenario = {:?}\n{body}\n[set]\n\"workload.0.duration\" = \"200us\"\n\"output.throughput_flows\" = []\n",
        quickstart()
    );
    let path = dir.join("sweep.toml");
    fs::write(&path, text).unwrap();
    path
}

fn sluice(dir: &Path, args: &[&str]) -> Output {
    Command::new(SLUICE).args(args).current_dir(dir).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines().map(|l| l.split(',').map(str::to_string).collect()).collect()
}

const G_AND_ALGORITHM: &str = "seeds = 2\n\
    [[axis]]\nkey = \"cc.algorithm\"\nvalues = [\"dcqcn\", \"dctcp\"]\n\
    [[axis]]\nkey = \"host.ack_every_packets\"\nvalues = [1, 4]\n";

#[test]
fn a_sweep_writes_one_row_per_run_and_the_best_configuration() {
    let dir = scratch("table");
    sweep_file(&dir, G_AND_ALGORITHM);
    let o = sluice(
        &dir,
        &[
            "sweep",
            "sweep.toml",
            "--out",
            "out",
            "--jobs",
            "2",
            "--best",
            "p99(slowdown)",
            "--subject-to",
            "unfinished == 0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("8 runs: 8 ran, 0 reused, 0 failed"), "{}", stdout(&o));
    let rows = csv_rows(&fs::read_to_string(dir.join("out/sweep.csv")).unwrap());
    let header = &rows[0];
    assert_eq!(header[..7], ["run", "hash", "status", "error", "cc.algorithm", "host.ack_every_packets", "seed"]);
    assert_eq!(rows.len(), 9, "a header and eight runs");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!((rows[1][col("cc.algorithm")].as_str(), rows[1][col("seed")].as_str()), ("dcqcn", "1"));
    assert_eq!((rows[2][col("seed")].as_str(), rows[8][col("cc.algorithm")].as_str()), ("2", "dctcp"));
    for row in &rows[1..] {
        assert_eq!(row[col("status")], "ok");
        assert!(dir.join("out/runs").join(&row[col("hash")]).join("fct.csv").is_file());
        assert!(row[col("slowdown_p99")].parse::<f64>().unwrap() >= 1.0);
        let small = &row[col("slowdown_p99:<10KB")];
        match row[col("count:<10KB")].as_str() {
            "0" => assert_eq!(small, "", "no small flows, no statistic"),
            _ => assert!(small.parse::<f64>().unwrap() >= 1.0),
        }
    }
    let parquet = fs::read(dir.join("out/sweep.parquet")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));

    // The best configuration has the smallest p99 slowdown averaged over its two seeds.
    let mean = |alg: &str, ack: &str| {
        let values: Vec<f64> = rows[1..]
            .iter()
            .filter(|r| r[col("cc.algorithm")] == alg && r[col("host.ack_every_packets")] == ack)
            .map(|r| r[col("slowdown_p99")].parse().unwrap())
            .collect();
        values.iter().sum::<f64>() / values.len() as f64
    };
    let configs = [("dcqcn", "1"), ("dcqcn", "4"), ("dctcp", "1"), ("dctcp", "4")];
    let (alg, ack) = configs.iter().min_by(|a, b| mean(a.0, a.1).total_cmp(&mean(b.0, b.1))).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/sweep.json")).unwrap()).unwrap();
    assert_eq!(json["best"]["settings"]["cc.algorithm"], *alg, "{json}");
    assert_eq!(json["best"]["settings"]["host.ack_every_packets"].to_string(), *ack, "{json}");
    assert_eq!(json["best"]["runs"].as_array().unwrap().len(), 2, "both seeds");

    // best.toml runs the best configuration: the same results as its first run.
    let best = &json["best"];
    let o = sluice(&dir, &["run", "out/best.toml", "--out", "again", "--quiet", "--seed", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = dir.join("out/runs").join(best["hash"].as_str().unwrap());
    assert_eq!(fs::read(dir.join("again/fct.csv")).unwrap(), fs::read(first.join("fct.csv")).unwrap());
}

#[test]
fn a_second_sweep_resumes_and_any_job_count_gives_the_same_files() {
    let dir = scratch("resume");
    sweep_file(&dir, G_AND_ALGORITHM);
    let one = sluice(&dir, &["sweep", "sweep.toml", "--out", "one", "--jobs", "1"]);
    assert!(one.status.success(), "{}", stderr(&one));
    let two = sluice(&dir, &["sweep", "sweep.toml", "--out", "two", "--jobs", "2"]);
    assert!(two.status.success(), "{}", stderr(&two));
    for file in ["sweep.csv", "sweep.parquet", "sweep.json"] {
        assert_eq!(
            fs::read(dir.join("one").join(file)).unwrap(),
            fs::read(dir.join("two").join(file)).unwrap(),
            "{file}"
        );
    }
    // Remove one run: a second sweep runs it alone and reuses the rest.
    let runs: Vec<PathBuf> = fs::read_dir(dir.join("two/runs")).unwrap().map(|e| e.unwrap().path()).collect();
    fs::remove_dir_all(&runs[0]).unwrap();
    let again = sluice(&dir, &["sweep", "sweep.toml", "--out", "two"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("8 runs: 1 ran, 7 reused, 0 failed"), "{}", stdout(&again));
    assert_eq!(fs::read(dir.join("one/sweep.csv")).unwrap(), fs::read(dir.join("two/sweep.csv")).unwrap());
    // A run directory of another format (an older sluice's summary.json) is run again, not reused.
    fs::write(runs[1].join("summary.json"), "{\"run\": {\"sim_time_ps\": 1}}").unwrap();
    let newer = sluice(&dir, &["sweep", "sweep.toml", "--out", "two"]);
    assert!(stdout(&newer).contains("8 runs: 1 ran, 7 reused, 0 failed"), "{}", stdout(&newer));
    assert_eq!(fs::read(dir.join("one/sweep.csv")).unwrap(), fs::read(dir.join("two/sweep.csv")).unwrap());
}

#[test]
fn a_failed_run_is_recorded_and_the_others_finish() {
    let dir = scratch("failed");
    // Each value is valid alone; the endpoint model needs go-back-N, so one combination fails.
    sweep_file(
        &dir,
        "[[axis]]\nkey = \"host.loss_recovery\"\nvalues = [\"go_back_n\", \"selective\"]\n\
         [[axis]]\nkey = \"host.endpoint.enabled\"\nvalues = [false, true]\n",
    );
    let o = sluice(&dir, &["sweep", "sweep.toml", "--out", "out"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 of 4 runs failed:\n  run 3: "), "{}", stderr(&o));
    let rows = csv_rows(&fs::read_to_string(dir.join("out/sweep.csv")).unwrap());
    let statuses: Vec<&str> = rows[1..].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(statuses, ["ok", "ok", "ok", "failed"]);
    assert!(rows[4][3].contains("go_back_n"), "the error names the cause: {:?}", rows[4]);
}

#[test]
fn bad_sweeps_are_refused_with_located_errors_and_nothing_written() {
    let dir = scratch("bad");
    let cases: [(&str, &[&str], &str); 7] = [
        ("[[axis]]\nkey = \"cc.params.nope\"\nvalues = [1]\n", &[], "sweep.toml:2: [[axis]] cc.params.nope=1: "),
        ("[[axis]]\nkey = \"topology.k\"\nvalues = [\"four\"]\n", &[], "sweep.toml:2: [[axis]] topology.k=\"four\""),
        (
            "[[axis]]\nkey = \"topology.k\"\nvalues = []\n",
            &[],
            "sweep.toml:2: [[axis]]: `topology.k`: `values` is empty",
        ),
        (
            "[[axis]]\nkey = \"seed\"\nrange = { start = 1, stop = 1000000000, step = 1 }\n",
            &[],
            "1000000000 runs; a sweep of more than 10000 runs needs --yes",
        ),
        ("", &["--best", "p99(slowdown, <5KB)"], "--best \"p99(slowdown, <5KB)\": unknown metric `slowdown_p99:<5KB`"),
        ("", &["--subject-to", "unfinshed == 0"], "unknown metric `unfinshed`"),
        ("[sweep]\n", &[], "sweep.toml:2: unknown field `sweep`"),
    ];
    for (body, args, expected) in cases {
        sweep_file(&dir, body);
        let mut all = vec!["sweep", "sweep.toml", "--out", "out"];
        all.extend_from_slice(args);
        let o = sluice(&dir, &all);
        assert_eq!(o.status.code(), Some(2), "{body} {args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{body} {args:?}: expected {expected:?} in:\n{}", stderr(&o));
        assert!(!dir.join("out").exists(), "{body}: nothing is written");
    }
}

#[test]
fn a_job_count_of_zero_is_refused() {
    let dir = scratch("jobs0");
    sweep_file(&dir, "");
    let o = sluice(&dir, &["sweep", "sweep.toml", "--out", "out", "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid value '0' for '--jobs <JOBS>'"), "{}", stderr(&o));
    assert!(!dir.join("out").exists());
}

#[test]
fn a_dry_run_lists_the_runs() {
    let dir = scratch("dry");
    sweep_file(&dir, "[[axis]]\nkey = \"workload.0.load\"\nrange = { start = 0.2, stop = 0.4, step = 0.1 }\n");
    let o = sluice(&dir, &["sweep", "sweep.toml", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(": 3 runs of"), "{text}");
    assert!(text.contains("2: --set 'workload.0.load=0.4'"), "{text}");
    assert!(!dir.join("results").exists());
}

#[test]
fn an_interrupted_sweep_keeps_finished_runs_and_resumes() {
    let dir = scratch("interrupt");
    // Four runs of ws128, seconds each: the signal lands while the second is running.
    let ws128 = fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ws128.toml")).unwrap();
    let text = format!(
        "scenario = {:?}\n[[axis]]\nkey = \"cc.algorithm\"\nvalues = [\"dcqcn\", \"dctcp\", \"hpcc\", \"timely\"]\n",
        ws128.display().to_string()
    );
    fs::write(dir.join("sweep.toml"), text).unwrap();
    let mut child = Command::new(SLUICE)
        .args(["sweep", "sweep.toml", "--out", "out", "--jobs", "1"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.by_ref().map(Result::unwrap).find(|l| l.starts_with("[1/4]"));
    assert!(first.is_some(), "the first run finishes");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("sweep interrupted with 1 of 4 runs complete")), "{rest:?}");
    assert!(!dir.join("out/sweep.csv").exists(), "no table of a partial sweep");
    let runs: Vec<String> = fs::read_dir(dir.join("out/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs.len(), 1, "only the finished run, no half-written directory: {runs:?}");
    assert!(dir.join("out/runs").join(&runs[0]).join("summary.json").is_file(), "complete, so a re-run reuses it");
}
