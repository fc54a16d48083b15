//! End-to-end tests of several algorithms in one network (`cc.workloads`): the bundled DCTCP-vs-CUBIC
//! scenario under both switch behaviours for packets that are not ECN-capable (the classic-vs-scalable
//! outcome flips), each flow's packets carrying its own algorithm's ECN codepoint, the resolved scenario
//! re-running the mix, single flows naming their own algorithms, and mixes that cannot run refused with
//! located errors.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn scratch(tag: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("sluice-mix-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).unwrap();
    path
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/mix/dctcp_cubic.toml")
}

fn sluice(args: &[&str], scenario: &Path, out: &Path) -> Output {
    Command::new(SLUICE).arg("run").arg(scenario).arg("--out").arg(out).arg("--quiet").args(args).output().unwrap()
}

/// Runs the scenario and returns summary.json's `mix` section.
fn mix(scenario: &Path, out: &Path, args: &[&str]) -> Value {
    let output = sluice(args, scenario, out);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    summary["extra"]["mix"].clone()
}

/// Each group's (algorithm, goodput share).
fn shares(mix: &Value) -> Vec<(String, f64)> {
    let groups = mix["groups"].as_array().unwrap();
    groups
        .iter()
        .map(|g| (g["algorithm"].as_str().unwrap().to_string(), g["goodput_share"].as_f64().unwrap()))
        .collect()
}

#[test]
fn who_wins_between_dctcp_and_cubic_depends_on_what_the_switch_does_with_non_ect_packets() {
    let dir = scratch("outcome");
    let passed = shares(&mix(&scenario(), &dir.join("pass"), &[]));
    assert_eq!(passed[0].0, "dctcp");
    assert_eq!(passed[1].0, "cubic");
    assert!(passed[1].1 > 0.8, "passed unmarked, CUBIC fills the queue DCTCP backs off from: {passed:?}");
    let dropped = mix(&scenario(), &dir.join("drop"), &["--set", "switch.ecn.non_ect=drop"]);
    let dropped_shares = shares(&dropped);
    assert!(dropped_shares[0].1 > 0.8, "dropped where DCTCP's are marked, CUBIC starves: {dropped_shares:?}");
    let jain = dropped["jain_mean_flow_gbps"].as_f64().unwrap();
    assert!(jain < 0.6, "one flow each: Jain near 1/2 when one starves, {jain}");
    assert!((passed.iter().map(|s| s.1).sum::<f64>() - 1.0).abs() < 1e-5);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn each_flow_carries_its_own_algorithms_ecn_codepoint_and_the_resolved_scenario_reruns_the_mix() {
    let dir = scratch("ecn");
    let trace = ["--set", "output.packet_trace.ports=[\"sw0:p2\"]", "--set", "output.packet_trace.max_rows=20000"];
    mix(&scenario(), &dir.join("out"), &trace);
    let packets = fs::read_to_string(dir.join("out/packets.csv")).unwrap();
    let codepoints = |flow: &str| -> Vec<String> {
        let rows = packets.lines().skip(1).map(|l| l.split(',').map(String::from).collect::<Vec<_>>());
        rows.filter(|r| r[4] == flow && r[5] == "data").map(|r| r[9].clone()).collect()
    };
    let (dctcp, cubic) = (codepoints("0"), codepoints("1"));
    assert!(!dctcp.is_empty() && dctcp.iter().all(|e| e == "ect" || e == "ce"), "DCTCP's packets are ECN-capable");
    assert!(dctcp.iter().any(|e| e == "ce"), "and get marked");
    assert!(!cubic.is_empty() && cubic.iter().all(|e| e == "not-ect"), "CUBIC's are not");

    let resolved = fs::read_to_string(dir.join("out/scenario.resolved.toml")).unwrap();
    assert!(resolved.contains("workloads = [\"dctcp\", \"cubic\"]") && resolved.contains("[cc.cubic]"));
    mix(&dir.join("out/scenario.resolved.toml"), &dir.join("again"), &[]);
    assert_eq!(fs::read(dir.join("out/fct.csv")).unwrap(), fs::read(dir.join("again/fct.csv")).unwrap());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mixes_that_cannot_run_are_refused_with_the_key_at_fault() {
    let dir = scratch("bad");
    let cases = [
        ("cc.workloads=[\"dctcp\"]", "cc.workloads", "names 1 algorithms for 2 workload entries"),
        ("cc.workloads=[\"dctcp\",\"cubc\"]", "cc.workloads.1", "unknown algorithm \"cubc\""),
        ("cc.workloads=[\"dctcp\",\"homa\"]", "cc.workloads", "token algorithms run their own transport"),
        ("cc.cubic.beta=3", "cc.cubic.beta", ""),
        ("switch.ecn.non_ect=maybe", "switch.ecn.non_ect", "expected `pass` or `drop`"),
    ];
    for (set, key, says) in cases {
        let output = sluice(&["--set", set], &scenario(), &dir.join("out"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{set}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains(says), "{set}: {stderr}");
        assert!(!dir.join("out").exists());
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_split_run_with_one_algorithm_is_the_unsplit_run() {
    let dir = scratch("split");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let split = root.join("mix/dcqcn_hpcc_ws128.toml");
    let halves = mix(&split, &dir.join("split"), &["--set", "cc.workloads=[\"dcqcn\",\"dcqcn\"]"]);
    let flows: Vec<u64> = halves["groups"].as_array().unwrap().iter().map(|g| g["flows"].as_u64().unwrap()).collect();
    assert_eq!(flows, [272, 271], "the even and the odd rows of ws128's 543 flows");
    let output = sluice(&[], &root.join("ws128.toml"), &dir.join("whole"));
    assert!(output.status.success());
    // fct.csv without its last column, the workload entry (two entries against one).
    let rows = |run: &str| -> Vec<String> {
        let text = fs::read_to_string(dir.join(run).join("fct.csv")).unwrap();
        text.lines().map(|l| l.rsplit_once(',').unwrap().0.to_string()).collect()
    };
    assert_eq!(rows("split"), rows("whole"), "the same flows in the same network give the same FCTs");
    let mixed = mix(&split, &dir.join("mixed"), &[]);
    let algorithms: Vec<&str> =
        mixed["groups"].as_array().unwrap().iter().map(|g| g["algorithm"].as_str().unwrap()).collect();
    assert_eq!(algorithms, ["dcqcn", "hpcc"]);
    assert_ne!(rows("mixed"), rows("whole"));
    let _ = fs::remove_dir_all(&dir);
}

/// The bundled DCTCP-vs-CUBIC scenario with both flows in one `long_lived` entry, the second naming
/// CUBIC itself instead of through `cc.workloads`.
fn one_entry_per_flow_names() -> String {
    let text = fs::read_to_string(scenario()).unwrap();
    let two_entries = "[[workload]]\nkind = \"long_lived\"\nflows = [{ src = 0, dst = 2, stop = \"50ms\" }]\n\n\
                       [[workload]]\nkind = \"long_lived\"\nflows = [{ src = 1, dst = 3, stop = \"50ms\" }]\n";
    let one_entry = "[[workload]]\nkind = \"long_lived\"\nflows = [{ src = 0, dst = 2, stop = \"50ms\" }, \
                     { src = 1, dst = 3, stop = \"50ms\", algorithm = \"cubic\" }]\n";
    assert!(text.contains(two_entries), "the bundled scenario's workloads changed");
    text.replace(two_entries, one_entry).replace("workloads = [\"dctcp\", \"cubic\"]\n", "")
}

#[test]
fn a_flow_that_names_its_algorithm_runs_it_as_a_workload_entry_would() {
    let dir = scratch("rows");
    let file = dir.join("rows.toml");
    fs::write(&file, one_entry_per_flow_names()).unwrap();
    let by_entry = mix(&scenario(), &dir.join("entries"), &[]);
    let by_flow = mix(&file, &dir.join("flows"), &[]);
    let groups = |m: &Value| -> Vec<(u64, String, u64)> {
        m["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let algorithm = g["algorithm"].as_str().unwrap().to_string();
                (g["workload"].as_u64().unwrap(), algorithm, g["goodput_bytes"].as_u64().unwrap())
            })
            .collect()
    };
    let (entries, flows) = (groups(&by_entry), groups(&by_flow));
    assert_eq!(flows.iter().map(|g| (g.0, g.1.as_str())).collect::<Vec<_>>(), [(0, "dctcp"), (0, "cubic")]);
    let goodputs = |g: &[(u64, String, u64)]| g.iter().map(|x| x.2).collect::<Vec<u64>>();
    assert_eq!(goodputs(&entries), goodputs(&flows), "the same flows under the same algorithms");
    for name in ["throughput.csv", "queues.csv"] {
        let read = |run: &str| fs::read(dir.join(run).join(name)).unwrap();
        assert_eq!(read("entries"), read("flows"), "{name}: the same run, grouped differently");
    }
    let resolved = fs::read_to_string(dir.join("flows/scenario.resolved.toml")).unwrap();
    assert!(resolved.contains("algorithm = \"cubic\"") && resolved.contains("[cc.cubic]"), "{resolved}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn flow_list_rows_name_algorithms_and_a_bad_name_is_refused_at_its_line() {
    let dir = scratch("list");
    let write = |list: &str| {
        fs::write(dir.join("flows.csv"), list).unwrap();
        let text = "name = \"rows\"\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"10Gbps\"\ndelay = \"1us\"\n\
                    [[workload]]\nkind = \"flow_list\"\npath = \"flows.csv\"\n[cc]\nalgorithm = \"dctcp\"\n";
        fs::write(dir.join("rows.toml"), text).unwrap();
    };
    write("src,dst,size_bytes,start_ns,algorithm\n1,0,200000,0,cubic\n2,0,200000,0\n3,0,200000,0,dcqcn\n");
    let m = mix(&dir.join("rows.toml"), &dir.join("out"), &[]);
    let algorithms: Vec<(&str, u64)> = m["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["algorithm"].as_str().unwrap(), g["flows"].as_u64().unwrap()))
        .collect();
    assert_eq!(algorithms, [("dctcp", 1), ("cubic", 1), ("dcqcn", 1)], "groups in the order of the run's algorithms");
    for (list, says) in [
        ("1,0,1000,0\n2,0,1000,0,cubc\n", "line 2: unknown algorithm \"cubc\""),
        ("1,0,1000,0,homa\n", "token algorithms run their own transport"),
    ] {
        write(list);
        let output = sluice(&[], &dir.join("rows.toml"), &dir.join("bad"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("workload.0.path") && stderr.contains(says), "{stderr}");
        assert!(!dir.join("bad").exists());
    }
    let _ = fs::remove_dir_all(&dir);
}
