//! The report of the hand-made fixtures: a results directory with queue samples and a wide trace, and a
//! sweep; bad input fails with a located error and writes nothing.

use std::path::{Path, PathBuf};

use sluice_report::{render_report, write_report};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A fresh directory for one test, holding a copy of the run fixture under `run`.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-report-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("run")).unwrap();
    for entry in std::fs::read_dir(fixture("run")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join("run").join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_run_report_has_every_chart_and_no_external_reference() {
    let html = render_report(&[fixture("run")], &[]).unwrap();
    for title in [
        "FCT slowdown vs flow size",
        "Slowdown CDF",
        "FCT slowdown per flow-size bucket",
        "Flow throughput (payload bytes)",
        "Port throughput (wire bytes)",
        "Queue occupancy",
        "CC variable: cwnd",
        "CC variable: ssthresh",
    ] {
        assert!(html.contains(&format!("<h2>{title}</h2>")), "missing {title}");
    }
    assert!(html.contains("<title>sluice report: fixture</title>"));
    assert!(!html.contains("left out"), "every chart has data");
    assert!(!html.contains("<script") && !html.contains("http:") && !html.contains("https:"));
    // The unfinished flow and the long-lived one have no slowdown: four flows, four groups.
    assert_eq!(html.matches("<title>fixture p50: ").count(), 4);
}

#[test]
fn a_missing_queue_column_leaves_the_chart_out_with_a_note() {
    let dir = scratch("no-queue");
    let throughput = std::fs::read_to_string(dir.join("run/throughput.csv")).unwrap();
    let without: String = throughput.lines().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect();
    std::fs::write(dir.join("run/throughput.csv"), without).unwrap();
    let html = render_report(&[dir.join("run")], &[]).unwrap();
    assert!(!html.contains("<h2>Queue occupancy</h2>"));
    assert!(html.contains("throughput.csv has no queue_bytes column: the queue occupancy chart is left out."));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn overlaid_runs_are_named_by_their_differences_or_labels() {
    let dir = scratch("overlay");
    std::fs::create_dir(dir.join("other")).unwrap();
    for name in files_in(&dir.join("run")) {
        std::fs::copy(dir.join("run").join(&name), dir.join("other").join(&name)).unwrap();
    }
    let scenario = std::fs::read_to_string(dir.join("run/scenario.resolved.toml")).unwrap();
    std::fs::write(dir.join("other/scenario.resolved.toml"), scenario.replace("\"dctcp\"", "\"dcqcn\"")).unwrap();
    let dirs = [dir.join("run"), dir.join("other")];
    let html = render_report(&dirs, &[]).unwrap();
    assert!(html.contains("<title>sluice report: 2 runs</title>"));
    assert!(html.contains("cc.algorithm=dctcp p99") && html.contains("cc.algorithm=dcqcn p99"));
    let labelled = render_report(&dirs, &["A".into(), "B".into()]).unwrap();
    assert!(labelled.contains("A p50") && labelled.contains("B: tor0:p1"));
    let err = render_report(&dirs, &["A".into()]).unwrap_err();
    assert_eq!(err.to_string(), "1 --label for 2 directories: give one per directory, or none");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_sweep_report_marks_the_best_run() {
    let html = render_report(&[fixture("sweep")], &[]).unwrap();
    assert!(html.contains("<h2>objective slowdown_p99 vs cc.algorithm</h2>"));
    assert!(html.contains("<h2>objective slowdown_p99 vs workload.0.load</h2>"));
    assert!(html.contains("<h2>objective slowdown_p99 over cc.algorithm and workload.0.load</h2>"));
    assert!(html.contains("best: cc.algorithm=dctcp, workload.0.load=0.3 (run 3): objective slowdown_p99 = 3.12"));
    // A ring in each of the two axis charts, an outline in the heat map, one highlighted table row.
    assert_eq!(html.matches("<circle class=\"best\"").count(), 2);
    assert_eq!(html.matches("<rect class=\"best\"").count(), 1);
    assert_eq!(html.matches("<tr class=\"best\"><td>3</td>").count(), 1);
    assert!(html.contains("<td class=\"t\">time limit hit, 3 flows unfinished</td>"));
}

#[test]
fn reports_are_deterministic_and_written_atomically() {
    let dir = scratch("deterministic");
    let first = write_report(&[dir.join("run")], None, &[]).unwrap();
    assert_eq!(first, dir.join("run/report.html"));
    let bytes = std::fs::read(&first).unwrap();
    let out = dir.join("again.html");
    write_report(&[dir.join("run")], Some(&out), &[]).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    assert_eq!(files_in(&dir), ["again.html", "run"], "no temporary file is left");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_is_located_and_writes_nothing() {
    let dir = scratch("bad");
    let out = dir.join("out.html");
    let missing = dir.join("missing");
    let err = write_report(std::slice::from_ref(&missing), Some(&out), &[]).unwrap_err();
    assert_eq!(err.to_string(), format!("{}: no such directory", missing.display()));
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = write_report(std::slice::from_ref(&empty), Some(&out), &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: not a results directory: no summary.json (and no sweep.json)", empty.display())
    );
    let fct = dir.join("run/fct.csv");
    let text = std::fs::read_to_string(&fct).unwrap();
    std::fs::write(&fct, text.replace("1.000000,0,0", "fast,0,0")).unwrap();
    let err = write_report(&[dir.join("run")], Some(&out), &[]).unwrap_err();
    assert_eq!(err.to_string(), format!("{}:3: column `slowdown`: `fast` is not a number", fct.display()));
    let err = write_report(&[fixture("sweep"), dir.join("run")], Some(&out), &[]).unwrap_err();
    assert_eq!(err.to_string(), format!("{}: a sweep directory is reported on its own", fixture("sweep").display()));
    assert_eq!(files_in(&dir), ["empty", "run"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_one_axis_sweep_without_objective_marks_its_lowest_metric() {
    let dir = scratch("one-axis");
    let sweep = dir.join("sweep");
    std::fs::create_dir(&sweep).unwrap();
    let json = r#"{"axes": ["cc.params.k"], "metrics": ["slowdown_p99", "drops"], "objective": null, "best": null}"#;
    std::fs::write(sweep.join("sweep.json"), json).unwrap();
    let csv = "run,hash,status,error,cc.params.k,slowdown_p99,drops\n\
               0,aa,ok,,10KB,4.5,0\n1,bb,ok,,30KB,2.5,0\n2,cc,error,out of memory,60KB,1.5,0\n3,dd,ok,,90KB,3.0,1\n";
    std::fs::write(sweep.join("sweep.csv"), csv).unwrap();
    let html = render_report(&[sweep], &[]).unwrap();
    // The failed run's leftover value is not the best: run 1 is.
    assert!(html.contains("best: cc.params.k=30KB (run 1): slowdown_p99 = 2.5"), "{html}");
    assert_eq!(html.matches("<tr class=\"best\"><td>1</td>").count(), 1);
    assert!(html.contains("The heat map needs two axes; this sweep has one."));
    assert!(html.contains("<h2>slowdown_p99 vs cc.params.k</h2>"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_bad_sweep_file_is_located() {
    let dir = scratch("bad-sweep");
    let sweep = dir.join("sweep");
    std::fs::create_dir(&sweep).unwrap();
    let json = r#"{"axes": ["a"], "metrics": ["m"], "objective": {"expr": "m", "goal": "least"}, "best": null}"#;
    std::fs::write(sweep.join("sweep.json"), json).unwrap();
    let err = render_report(std::slice::from_ref(&sweep), &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: `objective.goal` must be \"min\" or \"max\"", sweep.join("sweep.json").display())
    );
    std::fs::write(sweep.join("sweep.json"), json.replace("least", "min")).unwrap();
    std::fs::write(sweep.join("sweep.csv"), "run,hash,status,error,a,m\n0,aa,ok,,1,2\n1,bb,ok,,2,lots\n").unwrap();
    let err = render_report(std::slice::from_ref(&sweep), &[]).unwrap_err();
    assert_eq!(err.to_string(), format!("{}:3: column `m`: `lots` is not a number", sweep.join("sweep.csv").display()));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn seeds_are_averaged_and_zipped_keys_are_one_axis() {
    let dir = scratch("seeds");
    let sweep = dir.join("sweep");
    std::fs::create_dir(&sweep).unwrap();
    let json = r#"{"axes": ["cc.algorithm", "switch.pfc.enabled", "workload.0.load"],
        "axis_groups": [{"label": "algorithm", "keys": ["cc.algorithm", "switch.pfc.enabled"]},
                        {"label": "workload.0.load", "keys": ["workload.0.load"]}],
        "metrics": ["slowdown_p99:<10KB"], "objective": {"expr": "p99(slowdown, <10KB)", "goal": "min"}, "best": null}"#;
    std::fs::write(sweep.join("sweep.json"), json).unwrap();
    let csv = "run,hash,status,error,cc.algorithm,switch.pfc.enabled,workload.0.load,seed,slowdown_p99:<10KB\n\
               0,a,ok,,dcqcn,true,0.3,1,2.0\n1,b,ok,,dcqcn,true,0.3,2,4.0\n\
               2,c,ok,,dctcp,false,0.3,1,1.0\n3,d,ok,,dctcp,false,0.3,2,4.0\n\
               4,e,ok,,dcqcn,true,0.5,1,1.0\n5,f,failed,no route,dcqcn,true,0.5,2,\n\
               6,g,ok,,dctcp,false,0.5,1,5.0\n7,h,ok,,dctcp,false,0.5,2,6.0\n";
    std::fs::write(sweep.join("sweep.csv"), csv).unwrap();
    let html = render_report(&[sweep], &[]).unwrap();
    // dctcp at 0.3 averages 2.5 over its seeds, below dcqcn's 3; dcqcn at 0.5 has a failed run.
    assert!(html.contains("8 runs, 4 configurations over algorithm, workload.0.load"));
    assert!(
        html.contains(
            "best: algorithm=dctcp / false, workload.0.load=0.3 (runs 2, 3): objective p99(slowdown, &lt;10KB) = 2.5"
        ),
        "{html}"
    );
    assert_eq!(html.matches("<tr class=\"best\">").count(), 2);
    assert!(html.contains("<h2>objective p99(slowdown, &lt;10KB) vs algorithm</h2>"));
    assert!(html.contains(">dctcp / false</text>"));
    assert!(html.contains("<title>algorithm=dcqcn / true: 3</title>"));
    std::fs::remove_dir_all(dir).unwrap();
}
