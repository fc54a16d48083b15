//! The `sluice` binary at the edges of its terminal: a reader that closes the pipe early, a full disk
//! behind standard output or standard error, and SIGINT or SIGTERM in the middle of a run.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Two long-lived flows through a star for ten simulated seconds: minutes of wall time, so a signal
/// always lands in the middle of the run.
const LONG: &str = r#"name = "long"

[topology]
kind = "star"
hosts = 3
rate = "100Gbps"

[[workload]]
kind = "long_lived"
flows = [{ src = 1, dst = 0, start = "0us", stop = "10s" }, { src = 2, dst = 0, start = "0us", stop = "10s" }]

[simulation]
duration = "10s"
"#;

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice-terminal").join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn dev_full() -> fs::File {
    fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full")
}

/// Runs `sluice args` with standard output into a pipe whose reader is already gone.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(SLUICE).args(args).stdout(writer).stderr(Stdio::piped()).spawn().unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    for args in [&["list"][..], &["check", "../../scenarios/quickstart.toml"], &["--help"]] {
        let output = into_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "sluice {args:?}: {:?}\n{stderr}", output.status);
        assert!(!stderr.contains("error") && !stderr.contains("panic"), "sluice {args:?} printed: {stderr}");
    }
}

#[test]
fn a_full_disk_behind_standard_output_is_an_error() {
    let output = Command::new(SLUICE).args(["list"]).stdout(dev_full()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cannot write to standard output: No space left on device"), "{stderr}");
}

#[test]
fn a_full_standard_error_does_not_stop_a_run() {
    let dir = scratch("full_stderr");
    let out = dir.join("run");
    let output = Command::new(SLUICE)
        .args(["run", "../../scenarios/incast8.toml", "--out"])
        .arg(&out)
        .stderr(dev_full())
        .output()
        .unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    assert!(String::from_utf8_lossy(&output.stdout).contains("results: "));
    assert!(out.join("fct.csv").is_file());
}

/// Starts a long run into `out`, waits until it simulates, sends `signal` and returns what it printed.
fn interrupt_a_run(dir: &Path, out: &Path, signal: &str) -> (Option<i32>, String) {
    let scenario = dir.join("long.toml");
    fs::write(&scenario, LONG).unwrap();
    let mut child = Command::new(SLUICE)
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(out)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut header = String::new();
    stderr.read_line(&mut header).unwrap();
    assert!(header.starts_with("long: "), "{header}");
    // The run checks for a signal about every million events, a fraction of a second.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    (child.wait().unwrap().code(), rest)
}

#[test]
fn sigint_and_sigterm_stop_a_run_and_leave_the_previous_results() {
    for signal in ["-INT", "-TERM"] {
        let dir = scratch(&format!("signal{signal}"));
        let out = dir.join("run");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("fct.csv"), "previous\n").unwrap();
        let (code, stderr) = interrupt_a_run(&dir, &out, signal);
        assert_eq!(code, Some(130), "{signal}: {stderr}");
        assert!(stderr.contains("interrupted after"), "{stderr}");
        assert!(stderr.contains("of 2 flows finished"), "the message says how far the run got: {stderr}");
        assert!(stderr.contains("is as it was before the run"), "{stderr}");
        assert_eq!(fs::read_to_string(out.join("fct.csv")).unwrap(), "previous\n");
        assert_eq!(entries(&dir), ["long.toml", "run"], "no temporary directory is left");
    }
}
