//! Writing output directories: contents, atomic replacement, failures and reproducibility.

use std::cell::Cell;
use std::fs;
use std::path::{Path, PathBuf};

use sluice_results::FILE_NAMES;
use sluice_results::{
    render_outputs, write_outputs, write_outputs_unless, write_rendered, Buckets, BytesKind, FlowRecord, FlowTrace,
    Outputs, PortRecord, RunInfo, Summary, SwitchRecord, ThroughputSeries,
};

/// A fresh, empty scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice-results").join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn flows(n: u64) -> Vec<FlowRecord> {
    (0..n)
        .map(|i| FlowRecord {
            id: i,
            src: (i % 16) as u32,
            dst: ((i + 1) % 16) as u32,
            size: 1_000 + i * 37,
            delivered: 1_000 + i * 37,
            start: i * 1_234_567,
            finish: (i % 10 != 9).then_some(i * 1_234_567 + 5_000_000 + i * 13),
            ideal_fct: 2_000_000 + i,
            retransmitted_bytes: i % 3 * 1000,
            long_lived: false,
            group: 0,
            received: 1_000 + i * 37,
            started: true,
        })
        .collect()
}

struct Data {
    flows: Vec<FlowRecord>,
    ports: Vec<PortRecord>,
    switches: Vec<SwitchRecord>,
    throughput: Vec<ThroughputSeries>,
    traces: Vec<FlowTrace>,
    summary: Summary,
}

fn data(n: u64) -> Data {
    let flows = flows(n);
    let ports = vec![PortRecord {
        node: "sw0".into(),
        port: 1,
        peer: "h1".into(),
        rate: 100_000_000_000,
        tx_bytes: 5_000_000,
        max_queue: 64_000,
        avg_queue: 1_000.0 / 3.0,
        drops: 2,
        data_drops: 2,
        dropped_bytes: 2_000,
        ecn_marks: 9,
        pfc_pauses_sent: 0,
        pfc_paused_time: 0,
    }];
    let switches = vec![SwitchRecord { node: "sw0".into(), max_buffer: 70_000, avg_buffer: 512.25 }];
    let throughput = vec![ThroughputSeries {
        label: "flow 0".into(),
        kind: BytesKind::Payload,
        interval: 1_000_000,
        samples: vec![(1_000_000, 9_000)],
        queue_bytes: Vec::new(),
    }];
    let mut trace = FlowTrace::new(0, vec!["cwnd"]);
    trace.push(1_000, &[1.0 / 3.0]);
    let run = RunInfo { seed: 1, sim_time: 50_000_000, events: 1_000, wall_seconds: 0.123, ..RunInfo::default() };
    let summary = Summary::compute(&flows, &ports, &switches, &run, &Buckets::default());
    Data { flows, ports, switches, throughput, traces: vec![trace], summary }
}

fn outputs<'a>(d: &'a Data, scenario: &'a str) -> Outputs<'a> {
    Outputs {
        summary: &d.summary,
        flows: &d.flows,
        ports: &d.ports,
        switches: &d.switches,
        throughput: &d.throughput,
        traces: &d.traces,
        scenario_toml: scenario,
        packets: None,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn writes_every_file() {
    let root = scratch("writes_every_file");
    let out = root.join("run");
    let d = data(3);
    write_outputs(&out, &outputs(&d, "seed = 1\n")).unwrap();
    let mut expected: Vec<String> = FILE_NAMES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(entries(&out), expected);
    assert_eq!(entries(&root), ["run"], "no temporary directory is left behind");
    assert_eq!(fs::read_to_string(out.join("scenario.resolved.toml")).unwrap(), "seed = 1\n");
    let queues = fs::read_to_string(out.join("queues.csv")).unwrap();
    assert!(
        queues.contains("\nport,sw0,1,h1,100000000000,5000000,64000,333.333333,2,2000,9,0,0.000,2,0\n"),
        "{queues}"
    );
    assert!(queues.ends_with("\nswitch,sw0,,,,,70000,512.250000,,,,,,,\n"), "{queues}");
    assert_eq!(
        fs::read_to_string(out.join("trace.csv")).unwrap(),
        "time_ns,flow,variable,value\n1.000,0,cwnd,0.3333333333333333\n"
    );
    let json = fs::read_to_string(out.join("summary.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["overall"]["count"], 3);
    assert_eq!(value["run"]["seed"], 1);
    assert!(!json.contains("wall"), "wall time never goes into files");
    let back: Summary = serde_json::from_str(&json).unwrap();
    assert_eq!(back.overall, d.summary.overall);
}

#[test]
fn writing_twice_replaces_the_directory() {
    let root = scratch("writing_twice_replaces");
    let out = root.join("run");
    let d = data(5);
    write_outputs(&out, &outputs(&d, "first\n")).unwrap();
    write_outputs(&out, &outputs(&d, "second\n")).unwrap();
    assert_eq!(fs::read_to_string(out.join("scenario.resolved.toml")).unwrap(), "second\n");
    assert_eq!(entries(&root), ["run"], "no temporary or backup directory is left behind");
}

#[test]
fn a_directory_holding_other_files_is_never_replaced() {
    let root = scratch("foreign_files");
    let out = root.join("run");
    let d = data(5);
    write_outputs(&out, &outputs(&d, "first\n")).unwrap();
    fs::write(out.join("notes.txt"), "the user's").unwrap();
    let err = write_outputs(&out, &outputs(&d, "second\n")).unwrap_err();
    assert!(err.to_string().contains("notes.txt"), "the error names the foreign file: {err}");
    assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "the user's");
    assert_eq!(fs::read_to_string(out.join("scenario.resolved.toml")).unwrap(), "first\n");
    assert_eq!(entries(&root), ["run"], "no temporary directory is left behind");
}

#[test]
fn failure_when_the_parent_is_a_file_leaves_nothing() {
    let root = scratch("parent_is_a_file");
    let blocker = root.join("blocker");
    fs::write(&blocker, "not a directory").unwrap();
    let out = blocker.join("run");
    let d = data(2);
    let err = write_outputs(&out, &outputs(&d, "")).unwrap_err();
    assert!(err.to_string().contains("blocker"), "the error names the path: {err}");
    assert_eq!(entries(&root), ["blocker"]);
    assert_eq!(fs::read_to_string(&blocker).unwrap(), "not a directory");
}

#[test]
fn an_existing_file_is_not_replaced() {
    let root = scratch("existing_file");
    let out = root.join("run");
    fs::write(&out, "keep me").unwrap();
    let d = data(2);
    let err = write_outputs(&out, &outputs(&d, "")).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    assert!(err.to_string().contains("run"), "{err}");
    assert_eq!(entries(&root), ["run"], "the completed temporary directory is removed");
    assert_eq!(fs::read_to_string(&out).unwrap(), "keep me");
}

#[test]
fn identical_input_gives_identical_bytes() {
    let root = scratch("identical_bytes");
    let (a, b) = (root.join("a"), root.join("b"));
    let d1 = data(100);
    let mut d2 = data(100);
    d2.summary.wall_seconds = 99.0;
    write_outputs(&a, &outputs(&d1, "x = 1\n")).unwrap();
    write_outputs(&b, &outputs(&d2, "x = 1\n")).unwrap();
    for name in FILE_NAMES {
        assert_eq!(fs::read(a.join(name)).unwrap(), fs::read(b.join(name)).unwrap(), "{name} differs");
    }
}

#[test]
fn rendered_files_are_the_written_bytes() {
    let out = scratch("rendered_files").join("run");
    let d = data(50);
    let files = outputs(&d, "seed = 1\n");
    write_outputs(&out, &files).unwrap();
    let rendered = render_outputs(&files);
    let names: Vec<&str> = rendered.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, FILE_NAMES);
    for (name, bytes) in rendered {
        assert!(!bytes.is_empty(), "{name} is empty");
        assert_eq!(fs::read(out.join(name)).unwrap(), bytes, "{name} differs");
    }
}

#[test]
fn rendered_files_written_elsewhere_are_the_same_directory() {
    let root = scratch("write_rendered");
    let d = data(20);
    let files = outputs(&d, "seed = 1\n");
    write_outputs(&root.join("direct"), &files).unwrap();
    let rendered: Vec<(String, Vec<u8>)> =
        render_outputs(&files).into_iter().map(|(n, b)| (n.to_string(), b)).collect();
    write_rendered(&root.join("relayed"), &rendered).unwrap();
    for name in FILE_NAMES {
        assert_eq!(
            fs::read(root.join("direct").join(name)).unwrap(),
            fs::read(root.join("relayed").join(name)).unwrap()
        );
    }
    let stray = vec![("../escape".to_string(), b"x".to_vec())];
    let err = write_rendered(&root.join("stray"), &stray).unwrap_err();
    assert!(err.to_string().contains("not an output file's name"), "{err}");
    assert!(!root.join("stray").exists() && !root.join("escape").exists());
}

#[test]
fn fct_csv_for_100k_flows_has_a_row_each() {
    let root = scratch("many_flows");
    let d = data(100_000);
    write_outputs(&root.join("run"), &outputs(&d, "")).unwrap();
    let text = fs::read_to_string(root.join("run").join("fct.csv")).unwrap();
    assert_eq!(text.lines().count(), 100_001);
}

#[test]
fn a_stopped_write_leaves_the_previous_directory_and_no_temporary_one() {
    let root = scratch("stopped_write");
    let out = root.join("run");
    let d = data(4);
    write_outputs(&out, &outputs(&d, "first\n")).unwrap();
    let asked = Cell::new(0);
    let stop_at_third = || {
        asked.set(asked.get() + 1);
        asked.get() >= 3
    };
    let err = write_outputs_unless(&out, &outputs(&d, "second\n"), &stop_at_third).unwrap_err();
    assert_eq!(err.source.kind(), std::io::ErrorKind::Interrupted, "{err}");
    assert_eq!(asked.get(), 3);
    assert_eq!(fs::read_to_string(out.join("scenario.resolved.toml")).unwrap(), "first\n");
    assert_eq!(entries(&root), ["run"], "the temporary directory is removed");
}

/// The id of a process that has exited.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn leftovers_of_a_dead_writer_are_cleaned_up() {
    let root = scratch("dead_writer");
    let pid = dead_pid();
    let tmp = root.join(format!(".run.tmp-{pid}"));
    fs::create_dir_all(tmp.join("half")).unwrap();
    let other = root.join(format!(".other.tmp-{pid}"));
    fs::create_dir(&other).unwrap();
    let d = data(2);
    write_outputs(&root.join("run"), &outputs(&d, "new\n")).unwrap();
    assert_eq!(entries(&root), [format!(".other.tmp-{pid}"), "run".to_string()], "only run's leftovers go");
}

#[test]
fn a_previous_output_moved_aside_by_a_dead_writer_is_put_back_first() {
    let root = scratch("dead_writer_backup");
    let out = root.join("run");
    let d = data(2);
    write_outputs(&out, &outputs(&d, "previous\n")).unwrap();
    let backup = root.join(format!(".run.old-{}", dead_pid()));
    fs::rename(&out, &backup).unwrap();
    let err = write_outputs_unless(&out, &outputs(&d, "new\n"), &|| true).unwrap_err();
    assert_eq!(err.source.kind(), std::io::ErrorKind::Interrupted);
    assert_eq!(fs::read_to_string(out.join("scenario.resolved.toml")).unwrap(), "previous\n");
    assert_eq!(entries(&root), ["run"]);
}
