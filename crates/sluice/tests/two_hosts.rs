//! `sluice test SCENARIO --peer` against `sluice test serve`: a scenario's flows between two hosts over
//! whatever network joins them, agreed over a control connection that only holders of the shared key
//! can use. Over loopback everywhere; across two network namespaces joined by a plain veth pair where
//! the tests may create namespaces (root; in CI they must).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::Duration;

mod common;

use common::fct_rows;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Two senders of 1 MB each to a third host, DCTCP; a plain network marks nothing, so DCTCP runs on
/// losses alone.
const SCENARIO: &str = r#"
name = "two_hosts"
[topology]
kind = "star"
hosts = 3
rate = "1Gbps"
delay = "10us"
[[workload]]
kind = "incast"
receiver = 2
senders = 2
size = "1MB"
[cc]
algorithm = "dctcp"
[host]
rto_min = "5ms"
[simulation]
time_limit = "10s"
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("two_hosts.toml"), SCENARIO).unwrap();
    dir
}

/// A key file of mode 600 holding `key`.
fn key_file(dir: &Path, name: &str, key: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    fs::write(&path, key).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn serve(prefix: &[&str], bind: &str, key: &Path) -> Child {
    serve_with(prefix, bind, key, &[])
}

/// [`serve`] with `extra` options.
fn serve_with(prefix: &[&str], bind: &str, key: &Path, extra: &[&str]) -> Child {
    let mut c = Command::new(prefix.first().copied().unwrap_or(SLUICE));
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg(SLUICE);
    }
    let child = c
        .args(["test", "serve", "--bind", bind, "--once", "--key"])
        .arg(key)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(300));
    child
}

/// Runs `sluice test` of the scenario in `dir` against `peer` with `key`, writing into `out`, behind
/// `prefix` (a namespace's `ip netns exec NAME`), with `extra` options.
fn client(prefix: &[&str], dir: &Path, peer: &str, key: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut c = Command::new(prefix.first().copied().unwrap_or(SLUICE));
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg(SLUICE);
    }
    c.arg("test").arg(dir.join("two_hosts.toml")).args(["--peer", peer]).args(extra);
    c.arg("--key").arg(key).arg("--out").arg(out).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Checks a finished test's files: both flows complete, the receiver's count of their bytes.
fn check_results(out: &Path) {
    let fct = fs::read_to_string(out.join("fct.csv")).unwrap();
    let rows: Vec<&str> = fct.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{fct}");
    for row in &rows {
        let c: Vec<&str> = row.split(',').collect();
        assert_eq!(c[3], "1000000", "{row}");
        assert!(!c[5].is_empty(), "flow finished: {row}");
    }
    let receiver: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("receiver.json")).unwrap()).unwrap();
    assert_eq!(receiver["bytes"], 2_000_000, "{receiver}");
    assert_eq!(receiver["flows"], 2, "{receiver}");
}

/// Runs the scenario in `dir` between a server and a client on loopback with two sender threads; returns
/// the results' folder and the server's output once the test succeeded.
fn over_loopback(dir: &Path) -> (PathBuf, Output) {
    let key = key_file(dir, "key", "a shared key of the two hosts\n");
    let bind = format!("127.0.0.1:{}", free_port());
    let server = serve(&[], &bind, &key);
    let out = dir.join("out");
    let test = client(&[], dir, &bind, &key, &out, &["--threads", "2"]);
    let served = server.wait_with_output().unwrap();
    assert!(test.status.success(), "{}\nserver: {}", text(&test), text(&served));
    (out, served)
}

#[test]
fn a_test_runs_between_two_hosts_that_share_a_key() {
    let dir = scratch("two-hosts-loopback");
    let (out, served) = over_loopback(&dir);
    assert!(served.status.success(), "{}", text(&served));
    assert!(text(&served).contains("received 2000000 bytes in 2 flows"), "{}", text(&served));
    check_results(&out);
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["threads"].as_array().unwrap().len(), 2, "{summary}");
}

/// Both hosts poll their sockets when asked (`--busy-poll` on the client and on `serve`), and the test
/// completes as one that sleeps; a duration that does not parse stops `serve` before it listens, and the
/// client before it connects.
#[test]
fn a_test_between_two_hosts_runs_with_polling_sockets() {
    let dir = scratch("two-hosts-busy-poll");
    let key = key_file(&dir, "key", "a shared key of the two hosts\n");
    let bind = format!("127.0.0.1:{}", free_port());
    let server = serve_with(&[], &bind, &key, &["--busy-poll", "200us"]);
    let out = dir.join("out");
    let test = client(&[], &dir, &bind, &key, &out, &["--busy-poll", "200us"]);
    let served = server.wait_with_output().unwrap();
    assert!(test.status.success(), "{}\nserver: {}", text(&test), text(&served));
    assert!(text(&served).contains("received 2000000 bytes in 2 flows"), "{}", text(&served));
    check_results(&out);
    let bad = serve_with(&[], &format!("127.0.0.1:{}", free_port()), &key, &["--busy-poll", "5xs"]);
    let refused = bad.wait_with_output().unwrap();
    assert!(!refused.status.success() && text(&refused).contains("--busy-poll"), "{}", text(&refused));
    // The client refuses it before it reaches any peer, and writes nothing.
    let nowhere = dir.join("nowhere");
    let refused = client(&[], &dir, "127.0.0.1:9", &key, &nowhere, &["--busy-poll", "5xs"]);
    assert!(!refused.status.success() && text(&refused).contains("--busy-poll"), "{}", text(&refused));
    assert!(!nowhere.exists(), "nothing written");
}

#[test]
fn a_host_without_the_key_cannot_start_a_test_and_garbage_is_refused_with_a_reason() {
    let dir = scratch("two-hosts-refused");
    let key = key_file(&dir, "key", "a shared key of the two hosts\n");
    let other = key_file(&dir, "other", "a key of a stray host nearby\n");
    let bind = format!("127.0.0.1:{}", free_port());
    let server = serve(&[], &bind, &key);
    let test = client(&[], &dir, &bind, &other, &dir.join("out"), &[]);
    let served = server.wait_with_output().unwrap();
    assert_eq!(test.status.code(), Some(2), "{}", text(&test));
    assert!(text(&test).contains("failed authentication"), "{}", text(&test));
    assert!(!dir.join("out").exists(), "no output for a refused test");
    assert!(
        text(&served).contains("refused 127.0.0.1:") && text(&served).contains("failed authentication"),
        "{}",
        text(&served)
    );

    let server = serve(&[], &bind, &key);
    let mut stray = std::net::TcpStream::connect(&bind).unwrap();
    std::io::Write::write_all(&mut stray, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let served = server.wait_with_output().unwrap();
    assert!(text(&served).contains("more than the 65536 allowed"), "{}", text(&served));

    let world = dir.join("world");
    fs::write(&world, "a shared key of the two hosts\n").unwrap();
    let loose = Command::new(SLUICE).args(["test", "serve", "--key"]).arg(&world).output().unwrap();
    assert_eq!(loose.status.code(), Some(2));
    assert!(text(&loose).contains("chmod 600"), "{}", text(&loose));
}

/// Closed loops between two hosts: the scenario's two senders keep one web-search flow each (sizes
/// scaled to 1%) toward the third host for 300 ms, all sent from the test's host on two threads. Each
/// slot draws the simulator's sizes in the simulator's order and starts its next flow when its flow
/// completes; a later flow's id names its slot and generation, so each id names the simulator's flow.
#[test]
fn closed_loops_run_between_two_hosts_as_in_the_simulator() {
    let dir = scratch("two-hosts-closed-loop");
    let closed = SCENARIO.replace(
        "kind = \"incast\"\nreceiver = 2\nsenders = 2\nsize = \"1MB\"\n",
        "kind = \"closed_loop\"\ncdf = \"websearch\"\nsize_scale = 0.01\nflows_per_pair = 1\nreceivers = [2]\n\
         duration = \"300ms\"\n",
    );
    assert_ne!(closed, SCENARIO, "the shared scenario's workload changed");
    fs::write(dir.join("two_hosts.toml"), closed).unwrap();
    let sim = dir.join("sim");
    let run =
        Command::new(SLUICE).arg("run").arg(dir.join("two_hosts.toml")).args(["--quiet", "--out"]).arg(&sim).output();
    let run = run.unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let (out, _) = over_loopback(&dir);
    assert!(out.join("scenario.resolved.toml").exists(), "the resolved scenario beside the results");
    let (sim_rows, udp_rows) = (fct_rows(&sim), fct_rows(&out));
    common::check_ids_name_the_same_flows(&sim_rows, &udp_rows, 40);
    common::check_closed_loop_slots(&sim_rows, &udp_rows, &[0, 1], 20, 300e6);
    // The simulator's summary keeps it under `extra`; the UDP sender's summary is flat.
    let loops = |dir: &Path, pointer: &str| -> serde_json::Value {
        let summary: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
        summary.pointer(pointer).cloned().unwrap_or_default()
    };
    let (sim_loop, udp_loop) = (loops(&sim, "/extra/closed_loops/0"), loops(&out, "/closed_loops/0"));
    assert_eq!(udp_loop["slots"], 2, "{udp_loop}");
    assert_eq!(udp_loop["flows"], udp_rows.len(), "{udp_loop}");
    assert_eq!(udp_loop["finished"], udp_rows.len(), "{udp_loop}");
    for key in ["fct_ns", "fair_share_fct_ns", "slowdown_vs_fair_share"] {
        for stat in ["avg", "p50", "p99"] {
            let (s, u) = (sim_loop[key][stat].as_f64().unwrap(), udp_loop[key][stat].as_f64().unwrap());
            assert!(u > 0.0 && s > 0.0, "{key}.{stat}: simulator {s}, udp {u}");
        }
    }
}

/// Marlin's comprehensive test (section 7.5), `scenarios/tester/comprehensive.toml`, between two hosts
/// over loopback with DCTCP and DCQCN: 65,536 closed-loop slots, each of which starts a flow at once and
/// its next when that one completes. Every slot runs (65,536 flows or more, all finished, none failed),
/// and the closed-loop summary puts their completion times next to the ideal under fair sharing.
#[test]
fn marlins_comprehensive_test_keeps_65536_closed_loop_flows_between_two_hosts() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tester/comprehensive.toml");
    for algorithm in ["dctcp", "dcqcn"] {
        let dir = scratch(&format!("two-hosts-comprehensive-{algorithm}"));
        let text = fs::read_to_string(&scenario)
            .unwrap()
            .replace("algorithm = \"dctcp\"", &format!("algorithm = \"{algorithm}\""));
        fs::write(dir.join("two_hosts.toml"), text).unwrap();
        let (out, _) = over_loopback(&dir);
        let summary: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["algorithm"], algorithm, "{summary}");
        assert_eq!(summary["failed"], 0, "{summary}");
        let loops = &summary["closed_loops"][0];
        assert_eq!(loops["slots"], 65_536, "{loops}");
        let flows = loops["flows"].as_u64().unwrap();
        assert!(flows > 65_536, "{algorithm}: every slot started a flow and some a second: {loops}");
        assert_eq!(loops["finished"], flows, "{loops}");
        for stat in ["avg", "p50", "p99"] {
            let fair = loops["fair_share_fct_ns"][stat].as_f64().unwrap();
            let measured = loops["fct_ns"][stat].as_f64().unwrap();
            assert!(fair > 0.0 && measured > 0.0, "{algorithm} {stat}: {loops}");
        }
        assert_eq!(fct_rows(&out).len() as u64, flows, "a row per flow");
    }
}

/// Whether this process may create network namespaces; in CI it must.
fn namespaces_allowed() -> bool {
    let uid = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let root = uid.unwrap_or(false);
    let ip = Command::new("ip").arg("-V").output().is_ok();
    if root && ip {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the two-namespace test must run in CI, but root: {root}, ip: {ip}");
    }
    eprintln!("skipped: creating network namespaces needs root and iproute2 (root: {root}, ip: {ip})");
    false
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", text(&o));
}

/// Two namespaces joined by a veth pair; removed when dropped.
struct Pair;

impl Pair {
    fn up() -> Pair {
        Pair::remove();
        ip(&["netns", "add", "sltest-a"]);
        ip(&["netns", "add", "sltest-b"]);
        ip(&[
            "link", "add", "sltva", "netns", "sltest-a", "type", "veth", "peer", "name", "sltvb", "netns", "sltest-b",
        ]);
        for (ns, dev, addr) in [("sltest-a", "sltva", "10.78.0.1/24"), ("sltest-b", "sltvb", "10.78.0.2/24")] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        Pair
    }

    fn remove() {
        for ns in ["sltest-a", "sltest-b"] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        Pair::remove();
    }
}

#[test]
fn a_test_runs_across_two_namespaces_joined_by_a_veth_pair() {
    if !namespaces_allowed() {
        return;
    }
    let dir = scratch("two-hosts-netns");
    let key = key_file(&dir, "key", "a shared key of the two hosts\n");
    let _pair = Pair::up();
    let server = serve(&["ip", "netns", "exec", "sltest-b"], "10.78.0.2:5400", &key);
    let out = dir.join("out");
    let test = client(&["ip", "netns", "exec", "sltest-a"], &dir, "10.78.0.2:5400", &key, &out, &[]);
    let served = server.wait_with_output().unwrap();
    assert!(test.status.success(), "{}\nserver: {}", text(&test), text(&served));
    assert!(text(&served).contains("test from 10.78.0.1:"), "{}", text(&served));
    check_results(&out);
}

/// An algorithm that needs the switches' per-hop signal is refused before anything starts: no switch
/// between two plain hosts computes it. It runs on the bed.
#[test]
fn a_switch_signal_algorithm_is_refused_between_two_hosts() {
    let dir = scratch("two-hosts-signal");
    let key = key_file(&dir, "key", "a shared key of the two hosts\n");
    let test = client(&[], &dir, "127.0.0.1:9", &key, &dir.join("out"), &["--set", "cc.algorithm=rocc"]);
    assert_eq!(test.status.code(), Some(2), "{}", text(&test));
    let message = text(&test);
    assert!(message.contains("cc.algorithm \"rocc\" needs switches that compute its per-hop signal"), "{message}");
    assert!(message.contains("run it on the bed"), "{message}");
    assert!(!dir.join("out").exists(), "no output for a refused test");
}
