//! Datapath programs in the simulator: Reno, DCTCP and BBR reporting through programs give the same
//! results as the fixed engines, byte for byte (`program = true`); `dctcp_burst`, whose trigger only a
//! program expresses, fires and changes the run; a bad program is refused with its line and column.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quickstart.toml")
}

fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("programs-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the quickstart scenario with `sets` into `dir/out`.
fn run(dir: &Path, out: &str, sets: &[&str]) -> Output {
    let mut command = Command::new(SLUICE);
    command.arg("run").arg(quickstart()).args(["--quiet", "--out"]).arg(dir.join(out));
    for set in sets {
        command.args(["--set", set]);
    }
    command.output().unwrap()
}

fn ran(dir: &Path, out: &str, sets: &[&str]) -> PathBuf {
    let output = run(dir, out, sets);
    assert!(output.status.success(), "{sets:?}: {}", String::from_utf8_lossy(&output.stderr));
    dir.join(out)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The files a run writes besides its summary and resolved scenario.
const FILES: [&str; 4] = ["fct.csv", "queues.csv", "throughput.csv", "trace.csv"];

#[test]
fn reno_dctcp_and_bbr_as_programs_match_the_fixed_engines_byte_for_byte() {
    let dir = scratch("identity");
    for algorithm in ["reno", "dctcp", "bbr"] {
        let set = format!("cc.algorithm={algorithm}");
        let fixed = ran(&dir, &format!("{algorithm}-fixed"), &[&set]);
        let program = ran(&dir, &format!("{algorithm}-program"), &[&set, "cc.params.program=true"]);
        for file in FILES {
            let (a, b) = (std::fs::read(fixed.join(file)).unwrap(), std::fs::read(program.join(file)).unwrap());
            assert!(a == b, "{algorithm}: {file} differs");
        }
        let (mut a, mut b) = (summary(&fixed), summary(&program));
        // A program's report is its registers (16 + 8 bytes each), a fold's its sums and samples: the
        // plane's message bytes differ where reports are messages (BBR's once-per-RTprop reports).
        let bytes = |s: &mut serde_json::Value| s["extra"]["plane"]["message_bytes"].take();
        let (bytes_a, bytes_b) = (bytes(&mut a), bytes(&mut b));
        assert_eq!(a, b, "{algorithm}: summary.json differs");
        if algorithm == "bbr" {
            assert!(a["extra"]["plane"]["reports"].as_u64().unwrap() > 0, "BBR's PROBE_BW reports are folded");
        } else {
            assert_eq!(bytes_a, bytes_b, "{algorithm}: per-ACK reports are no messages in native mode");
        }
    }
}

#[test]
fn dctcp_burst_fires_on_bursts_and_changes_the_run() {
    let dir = scratch("burst");
    // At 80% load many windows see a quarter of 16 ACKs marked (half of them only now and then: one
    // crossing in this run, during a round trip that had already cut).
    let load = "workload.0.load=0.8";
    let dctcp = ran(&dir, "dctcp", &["cc.algorithm=dctcp", load]);
    let flows = std::fs::read_to_string(dctcp.join("fct.csv")).unwrap().lines().count() - 1;
    let every = format!("output.trace_flows=[{}]", (0..flows).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
    let quarter = "cc.params.threshold_percent=25";
    let burst = ran(&dir, "burst", &["cc.algorithm=dctcp_burst", load, quarter, &every]);
    let s = summary(&burst);
    assert_eq!(s["overall"]["unfinished"], 0, "{s}");
    let urgent = s["extra"]["plane"]["urgent_reports"].as_u64().unwrap();
    assert!(urgent > 0, "the ECN-share trigger fired: {}", s["extra"]["plane"]);
    let trace = std::fs::read_to_string(burst.join("trace.csv")).unwrap();
    let cut = trace.lines().filter(|l| l.contains(",burst_cuts,")).any(|l| !l.ends_with(",0"));
    assert!(cut, "some flow cut on a burst");
    let fct = |d: &Path| std::fs::read(d.join("fct.csv")).unwrap();
    assert!(fct(&dctcp) != fct(&burst), "dctcp_burst is not dctcp");
}

#[test]
fn a_bad_program_is_refused_with_where_and_what() {
    let dir = scratch("bad");
    let bad = "cc.params.program=(def (Report (w_acked 0)))\n(when (+ 1) (report))";
    let output = run(&dir, "out", &["cc.algorithm=dctcp_burst", bad]);
    assert_eq!(output.status.code(), Some(2));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("cc.params.program"), "{message}");
    assert!(message.contains("2:7: `+` takes at least 2 operands, found 1"), "{message}");
    assert!(!dir.join("out").exists(), "nothing is written");
}

/// A `sluice udp recv` on a free loopback port, and its address.
fn receiver() -> (std::process::Child, String) {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let to = format!("127.0.0.1:{port}");
    let child = Command::new(SLUICE)
        .args(["udp", "recv", "--bind", &to, "--duration", "60s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    (child, to)
}

#[test]
fn the_udp_datapath_runs_programs_in_its_plane_driver() {
    let dir = scratch("udp");
    let (mut recv, to) = receiver();
    for (algorithm, param) in [("dctcp", "program=true"), ("bbr", "program=true"), ("dctcp_burst", "n_acks=8")] {
        let out = dir.join(algorithm);
        let args = ["udp", "send", "--to", &to, "--algorithm", algorithm, "--param", param, "--flows", "2"];
        let send = Command::new(SLUICE).args(args).args(["--size", "200KB", "--out"]).arg(&out).output().unwrap();
        assert!(send.status.success(), "{algorithm}: {}", String::from_utf8_lossy(&send.stderr));
        let s = summary(&out);
        assert_eq!((s["delivered_bytes"].as_u64(), s["failed"].as_u64()), (Some(400_000), Some(0)), "{algorithm}: {s}");
    }
    let bad = ["udp", "send", "--to", &to, "--algorithm", "dctcp_burst", "--param", "program=(def) (when)"];
    let send = Command::new(SLUICE).args(bad).output().unwrap();
    recv.kill().unwrap();
    recv.wait().unwrap();
    let message = String::from_utf8_lossy(&send.stderr);
    assert_eq!(send.status.code(), Some(2), "{message}");
    assert!(message.contains("1:7: `when` needs a condition"), "{message}");
}
