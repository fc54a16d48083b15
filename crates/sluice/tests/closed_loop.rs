//! End-to-end tests of closed-loop workloads: the bundled n-cast-1 keeps every slot busy for its whole
//! window (each flow starts the instant its slot's previous flow completes), starts none after it, runs
//! the same way twice, mixes with other entries and algorithms, reports its completion times beside the
//! ideal under fair sharing, and refuses bad entries with located errors.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn scratch(tag: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("sluice-closed-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).unwrap();
    path
}

fn bundled() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/closed_loop/ncast4.toml")
}

fn run(scenario: &Path, out: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(SLUICE);
    command.arg("run").arg(scenario).arg("--out").arg(out).arg("--quiet").args(args);
    command.output().unwrap()
}

/// One row of fct.csv: (src, dst, start, finish, group), times as written (ns with 3 decimals).
struct Row {
    src: u32,
    dst: u32,
    start: String,
    finish: String,
    group: u32,
}

fn rows(dir: &Path) -> Vec<Row> {
    let text = fs::read_to_string(dir.join("fct.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (src, dst, start, finish, group) = (col("src"), col("dst"), col("start_ns"), col("finish_ns"), col("group"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            Row {
                src: f[src].parse().unwrap(),
                dst: f[dst].parse().unwrap(),
                start: f[start].to_string(),
                finish: f[finish].to_string(),
                group: f[group].parse().unwrap(),
            }
        })
        .collect()
}

fn ns(text: &str) -> f64 {
    text.parse().unwrap()
}

#[test]
fn every_slot_stays_busy_until_the_window_ends() {
    let dir = scratch("ncast");
    let output = run(&bundled(), &dir, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = rows(&dir);
    let window_end = 10e6;
    assert!(rows.len() > 100, "20 slots over 10 ms at 100 Gb/s run many web-search flows: {}", rows.len());
    assert!(rows.iter().all(|r| r.dst == 0 && (1..=4).contains(&r.src) && !r.finish.is_empty()), "all finished");
    for src in 1..=4 {
        let pair: Vec<&Row> = rows.iter().filter(|r| r.src == src).collect();
        // Five flows start at 0; every later start is the finish of one of the pair's flows, and every
        // finish inside the window is a later start: five flows are active at every instant.
        let first = pair.iter().filter(|r| ns(&r.start) == 0.0).count();
        assert_eq!(first, 5, "host {src}");
        let mut later: Vec<&str> = pair.iter().filter(|r| ns(&r.start) > 0.0).map(|r| r.start.as_str()).collect();
        let mut freed: Vec<&str> =
            pair.iter().filter(|r| ns(&r.finish) < window_end).map(|r| r.finish.as_str()).collect();
        later.sort_unstable();
        freed.sort_unstable();
        assert_eq!(later, freed, "host {src}: starts follow completions one for one");
        assert!(pair.iter().all(|r| ns(&r.start) < window_end), "host {src}: no start after the window");
        let after = pair.iter().filter(|r| ns(&r.finish) >= window_end).count();
        assert_eq!(after, 5, "host {src}: the five flows running at the end of the window finish");
    }
    let again = dir.join("again");
    assert!(run(&bundled(), &again, &[]).status.success());
    assert_eq!(fs::read(dir.join("fct.csv")).unwrap(), fs::read(again.join("fct.csv")).unwrap(), "deterministic");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn closed_loops_mix_with_open_loop_entries_and_other_algorithms() {
    let dir = scratch("mix");
    let scenario = dir.join("mix.toml");
    fs::write(
        &scenario,
        r#"name = "closed_mix"
[topology]
kind = "star"
hosts = 4
rate = "10Gbps"
delay = "1us"

[[workload]]
kind = "incast"
receiver = 0
sender_list = [1, 2]
size = "200KB"
start = "100us"

[[workload]]
kind = "closed_loop"
cdf = "websearch"
flows_per_pair = 2
receivers = [0]
senders = [3]
duration = "2ms"
size_scale = 0.1

[[workload]]
kind = "closed_loop"
cdf = "websearch"
flows_per_pair = 1
receivers = [1]
senders = [2, 3]
duration = "1ms"
size_scale = 0.1

[cc]
algorithm = "dctcp"
workloads = ["dctcp", "dctcp", "cubic"]
"#,
    )
    .unwrap();
    let output = run(&scenario, &dir.join("out"), &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = rows(&dir.join("out"));
    let mut per_group: BTreeMap<u32, Vec<&Row>> = BTreeMap::new();
    rows.iter().for_each(|r| per_group.entry(r.group).or_default().push(r));
    assert_eq!(per_group[&0].len(), 2, "the incast's flows");
    assert!(per_group[&0].iter().all(|r| r.dst == 0 && r.start == "100000.000"));
    assert!(per_group[&1].len() > 2 && per_group[&1].iter().all(|r| (r.src, r.dst) == (3, 0)));
    assert!(per_group[&2].len() > 2 && per_group[&2].iter().all(|r| r.dst == 1 && [2, 3].contains(&r.src)));
    assert!(rows.iter().all(|r| !r.finish.is_empty()));
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap();
    let groups = summary["extra"]["mix"]["groups"].as_array().unwrap();
    let counted: Vec<(String, u64)> =
        groups.iter().map(|g| (g["algorithm"].as_str().unwrap().to_string(), g["flows"].as_u64().unwrap())).collect();
    let expected: Vec<(String, u64)> =
        (0..3).map(|g| (["dctcp", "dctcp", "cubic"][g].to_string(), per_group[&(g as u32)].len() as u64)).collect();
    assert_eq!(counted, expected, "the mix counts every flow a loop started under its entry's algorithm");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bad_closed_loops_are_refused_with_their_key() {
    let dir = scratch("bad");
    let cases = [
        ("flows_per_pair = 0", "workload.0.flows_per_pair", "at least 1"),
        ("flows_per_pair = 1\nreceivers = [7]", "workload.0.receivers", "host 7 does not exist"),
        ("flows_per_pair = 1\nreceivers = [1]\nsenders = [1]", "workload.0.senders", "no sender has a receiver"),
    ];
    for (i, (keys, key, needle)) in cases.iter().enumerate() {
        let scenario = dir.join(format!("bad{i}.toml"));
        let text = format!(
            "name = \"bad\"\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
             [[workload]]\nkind = \"closed_loop\"\ncdf = \"websearch\"\nduration = \"1ms\"\n{keys}\n"
        );
        fs::write(&scenario, text).unwrap();
        let out = dir.join(format!("out{i}"));
        let output = run(&scenario, &out, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(stderr.contains(key) && stderr.contains(needle), "{key}: {stderr}");
        assert!(!out.exists(), "no output for a refused scenario");
    }
    let _ = fs::remove_dir_all(&dir);
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn the_summary_sets_completion_times_beside_the_ideal_under_fair_sharing() {
    let dir = scratch("fair");
    let output = run(&bundled(), &dir, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let loops = &summary(&dir)["extra"]["closed_loops"];
    let rows = rows(&dir);
    assert_eq!(loops[0]["slots"], 20);
    assert_eq!(loops[0]["flows"].as_u64().unwrap(), rows.len() as u64);
    assert_eq!(loops[0]["finished"].as_u64().unwrap(), rows.len() as u64);
    // Twenty slots share the receiver's 100 Gb/s: a median web-search flow's fair share is 5 Gb/s.
    let fair_p50 = loops[0]["fair_share_fct_ns"]["p50"].as_f64().unwrap();
    let fct_p50 = loops[0]["fct_ns"]["p50"].as_f64().unwrap();
    assert!(fair_p50 > 0.0 && fct_p50 > 0.0, "{loops}");

    // One slot alone on its path: its fair share is the whole link, so the ideal under fair sharing is
    // the unloaded ideal, and the slowdown against it is fct.csv's slowdown.
    let alone = dir.join("alone.toml");
    let text = fs::read_to_string(bundled()).unwrap().replace("flows_per_pair = 5", "flows_per_pair = 1");
    fs::write(&alone, text.replace("receivers = [0]", "receivers = [0]\nsenders = [1]")).unwrap();
    let out = dir.join("alone");
    assert!(run(&alone, &out, &[]).status.success());
    let loops = &summary(&out)["extra"]["closed_loops"];
    let text = fs::read_to_string(out.join("fct.csv")).unwrap();
    // fct_ns over ideal_fct_ns (fct.csv's slowdown column is the same ratio held at 1 and above).
    let ratio = |l: &str| {
        let f: Vec<f64> = l.split(',').skip(6).take(2).map(|v| v.parse().unwrap()).collect();
        f[0] / f[1]
    };
    let ratios: Vec<f64> = text.lines().skip(1).map(ratio).collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let against_fair = loops[0]["slowdown_vs_fair_share"]["avg"].as_f64().unwrap();
    assert!((against_fair - mean).abs() < 1e-4 * mean, "{against_fair} against fct.csv's mean fct / ideal {mean}");
    assert_eq!(loops[0]["slots"], 1);
    let _ = fs::remove_dir_all(&dir);
}
