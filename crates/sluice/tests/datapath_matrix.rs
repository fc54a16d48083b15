//! Every registered algorithm on every datapath: accepted, or refused with a message that names every
//! capability it would miss there (`sluice_cc::contract`). The simulator runs each algorithm on a tiny
//! scenario, and refuses exactly the algorithms that need ECN marks when the scenario switches marking
//! off. Kernel TCP (the `kernel` feature) is tried through the agent's acceptance path: the check itself,
//! the settings file, the command-line options and `sluice agent`, which refuses before it loads anything.
//! The UDP datapath sends two flows of each algorithm it accepts over loopback to a `sluice udp recv`
//! (one that runs the algorithm's receiver side, for receiver-driven algorithms).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_cc::contract::{Capabilities, Capability};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Four hosts exchanging 20 KB each: every algorithm finishes it in a few milliseconds of simulated time.
const TINY: &str = "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"25Gbps\"\n\n\
                    [[workload]]\nkind = \"permutation\"\nsize = \"20KB\"\n";

fn names() -> Vec<&'static str> {
    sluice_cc::registry().iter().map(|a| a.name).collect()
}

/// A fresh directory for one test, holding the tiny scenario.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("datapath-matrix-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tiny.toml"), TINY).unwrap();
    dir
}

fn sluice(dir: &Path, args: &[&str]) -> Output {
    Command::new(SLUICE).current_dir(dir).args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}

/// Asserts that `message` names every capability of `missing` and no other.
fn names_exactly(algorithm: &str, message: &str, missing: &[Capability]) {
    for c in Capability::ALL {
        let named = message.contains(c.describe());
        assert_eq!(named, missing.contains(&c), "{algorithm}: {c:?} named: {named}, in {message:?}");
    }
    assert!(message.contains(&format!("algorithm `{algorithm}` needs")), "{message}");
}

#[test]
fn the_simulator_runs_every_algorithm() {
    let dir = scratch("simulator");
    let mut failures = Vec::new();
    for name in names() {
        let algorithm = sluice_cc::lookup(name).unwrap();
        assert_eq!(sluice_cc::contract::check(algorithm, &Capabilities::SIMULATOR), Ok(()), "{name}");
        let out = format!("out-{name}");
        let set = format!("cc.algorithm={name}");
        let mut args = vec!["run", "tiny.toml", "--set", &set, "--quiet", "--out", &out];
        // Receiving hosts sample their signals only with the host interconnect model on.
        if algorithm.needs.host_signal {
            args.extend(["--set", "host.bus.enabled=true"]);
        }
        let run = sluice(&dir, &args);
        let summary = std::fs::read_to_string(dir.join(&out).join("summary.json")).unwrap_or_default();
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap_or_default();
        let (offered, delivered) = (&summary["totals"]["offered_bytes"], &summary["totals"]["goodput_bytes"]);
        if !run.status.success() || offered.as_u64().unwrap_or(0) == 0 || offered != delivered {
            failures.push(format!("{name}: {:?}, {delivered} of {offered} bytes: {}", run.status, stderr(&run)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the simulator lacks with `switch.ecn.enabled = false`, per algorithm that needs it.
const REFUSED_WITHOUT_ECN: [(&str, &[Capability]); 8] = [
    ("dctcp", &[Capability::Ecn]),
    ("dctcp_burst", &[Capability::Ecn]),
    ("dcqcn", &[Capability::Ecn, Capability::Cnp]),
    ("tocc", &[Capability::Ecn]),
    ("tocc_nounsched", &[Capability::Ecn]),
    ("hostcc", &[Capability::Ecn]),
    ("dctcp_host", &[Capability::Ecn]),
    ("doca_rtt", &[Capability::Ecn, Capability::Cnp]),
];

#[test]
fn the_simulator_without_ecn_marks_refuses_exactly_the_algorithms_that_need_them() {
    let dir = scratch("no-ecn");
    let mut refused = Vec::new();
    for name in names() {
        let set = format!("cc.algorithm={name}");
        let check = sluice(&dir, &["check", "tiny.toml", "--set", &set, "--set", "switch.ecn.enabled=false"]);
        if check.status.success() {
            continue;
        }
        let message = stderr(&check);
        assert_eq!(check.status.code(), Some(2), "{name}: {message}");
        assert!(message.contains("--set switch.ecn.enabled=false: switch.ecn.enabled: "), "{name}: {message}");
        assert!(message.contains("the simulator with switch.ecn.enabled = false"), "{name}: {message}");
        let expected = REFUSED_WITHOUT_ECN.iter().find(|(n, _)| *n == name);
        let missing = expected.unwrap_or_else(|| panic!("{name} refused: {message}")).1;
        names_exactly(name, &message, missing);
        refused.push(name);
    }
    assert_eq!(refused, REFUSED_WITHOUT_ECN.map(|(n, _)| n));
}

#[cfg(feature = "kernel")]
mod kernel_tcp {
    use super::*;
    use sluice_kernel::config::{supported, AgentConfig};

    /// What kernel TCP lacks, per algorithm it refuses. It runs datapath programs (`dctcp_burst`, and
    /// Reno, DCTCP and BBR with `program = true`) on the BPF side.
    const REFUSED: [(&str, &[Capability]); 15] = [
        ("none", &[Capability::Uncontrolled]),
        ("dcqcn", &[Capability::Cnp]),
        ("hpcc", &[Capability::Int]),
        ("bolt", &[Capability::Bolt]),
        ("expresspass", &[Capability::TokenTransport, Capability::Receiver]),
        ("ep_aeolus", &[Capability::TokenTransport, Capability::Receiver]),
        ("homa", &[Capability::TokenTransport, Capability::Receiver]),
        ("ndp", &[Capability::TokenTransport, Capability::Receiver]),
        ("tocc", &[Capability::TokenTransport, Capability::Receiver]),
        ("tocc_nounsched", &[Capability::TokenTransport, Capability::Receiver]),
        ("ec_aware", &[Capability::AckPolicy]),
        ("hostcc", &[Capability::HostPolicy]),
        ("dctcp_host", &[Capability::HostSignal]),
        ("rocc", &[Capability::Signal]),
        ("doca_rtt", &[Capability::Cnp, Capability::Probe]),
    ];

    fn expected_missing(name: &str) -> Option<&'static [Capability]> {
        REFUSED.iter().find(|(n, _)| *n == name).map(|(_, missing)| *missing)
    }

    /// The algorithm as the settings file's default, as a port rule, and as a command-line rule.
    fn through_the_settings(name: &str) -> [Result<(), String>; 3] {
        let as_default = AgentConfig { default: name.to_string(), ..AgentConfig::default() };
        let file = format!("[[rule]]\nports = \"5201\"\nalgorithm = \"{name}\"\n");
        let as_rule: AgentConfig = toml::from_str(&file).unwrap();
        let mut as_option = AgentConfig::default();
        as_option.add_rule_arg(&format!("5201={name}")).unwrap();
        [
            as_default.resolve("agent.toml").map(drop).map_err(|e| e.to_string()),
            as_rule.resolve("agent.toml").map(drop).map_err(|e| e.to_string()),
            as_option.resolve("options").map(drop).map_err(|e| e.to_string()),
        ]
    }

    #[test]
    fn kernel_tcp_accepts_or_refuses_every_algorithm_naming_what_it_lacks() {
        let mut refused = Vec::new();
        for name in names() {
            let verdicts = through_the_settings(name);
            match (supported(name), expected_missing(name)) {
                (Ok(()), None) => {
                    for verdict in verdicts {
                        assert_eq!(verdict, Ok(()), "{name}");
                    }
                }
                (Err(message), Some(missing)) => {
                    names_exactly(name, &message, missing);
                    assert!(message.ends_with(if missing.len() == 1 {
                        "does not provide it"
                    } else {
                        "provides neither"
                    }));
                    for verdict in verdicts {
                        let error = verdict.expect_err(name);
                        assert!(error.ends_with(&message), "{name}: {error}");
                    }
                    refused.push(name);
                }
                (verdict, missing) => panic!("{name}: kernel TCP answered {verdict:?}, expected to miss {missing:?}"),
            }
        }
        assert_eq!(refused, REFUSED.map(|(n, _)| n));
        assert_eq!(supported("fixed"), Ok(()), "the kernel's own test algorithm");
    }

    #[test]
    fn sluice_agent_refuses_before_loading_anything() {
        let dir = scratch("agent");
        for (name, missing) in REFUSED {
            let out = sluice(&dir, &["agent", "--rule", &format!("5201={name}")]);
            let message = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{name}: {message}");
            assert!(message.contains("options: rule[1] (ports 5201): algorithm"), "{name}: {message}");
            assert!(message.contains("kernel TCP"), "{name}: {message}");
            names_exactly(name, &message, missing);
        }
    }
}

/// What the UDP datapath lacks, per algorithm it refuses.
const REFUSED_ON_UDP: [(&str, &[Capability]); 5] = [
    ("bolt", &[Capability::Bolt]),
    ("ec_aware", &[Capability::AckPolicy]),
    ("hostcc", &[Capability::HostPolicy]),
    ("dctcp_host", &[Capability::HostSignal]),
    ("doca_rtt", &[Capability::Probe]),
];

/// A free UDP port on loopback (bound and released, so a receiver can take it).
fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `sluice udp recv` on a free loopback port with `extra` options, and its address.
fn receiver(extra: &[&str]) -> (std::process::Child, String) {
    let to = format!("127.0.0.1:{}", free_port());
    let child = Command::new(SLUICE)
        .args(["udp", "recv", "--bind", &to, "--duration", "120s"])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    (child, to)
}

fn stop(mut child: std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_udp_datapath_runs_or_refuses_every_algorithm_naming_what_it_lacks() {
    let dir = scratch("udp");
    let (plain, plain_to) = receiver(&[]);
    let (mut refused, mut failures) = (Vec::new(), Vec::new());
    for name in names() {
        let out = format!("out-{name}");
        let token = sluice_cc::lookup(name).unwrap().needs.token_transport;
        let own = token.then(|| receiver(&["--algorithm", name]));
        let to = own.as_ref().map_or(plain_to.as_str(), |(_, to)| to.as_str());
        let args = ["udp", "send", "--to", to, "--algorithm", name, "--flows", "2", "--size", "200KB", "--out", &out];
        let send = sluice(&dir, &args);
        if let Some((child, _)) = own {
            stop(child);
        }
        let expected = REFUSED_ON_UDP.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
        match (send.status.success(), expected) {
            (true, None) => {
                let summary = std::fs::read_to_string(dir.join(&out).join("summary.json")).unwrap();
                let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
                if summary["delivered_bytes"] != 400_000 || summary["failed"] != 0 {
                    failures.push(format!("{name}: {summary}"));
                }
            }
            (false, Some(missing)) => {
                let message = stderr(&send);
                assert!(message.contains("the UDP datapath"), "{name}: {message}");
                names_exactly(name, &message, missing);
                refused.push(name);
            }
            (ok, _) => failures.push(format!("{name}: success {ok}: {}", stderr(&send))),
        }
    }
    stop(plain);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(refused, REFUSED_ON_UDP.map(|(n, _)| n));
}

#[test]
fn a_receiver_driven_sender_without_its_receiver_fails_naming_the_cause() {
    let dir = scratch("udp-no-receiver");
    let (plain, to) = receiver(&[]);
    let args = ["udp", "send", "--to", &to, "--algorithm", "ndp", "--size", "50KB", "--peer-timeout", "300ms"];
    let send = sluice(&dir, &args);
    stop(plain);
    let message = stderr(&send);
    assert_eq!(send.status.code(), Some(2), "{message}");
    assert!(message.contains("runs no receiver for this algorithm"), "{message}");
}

#[test]
fn a_receiver_refuses_an_algorithm_that_is_not_receiver_driven() {
    let dir = scratch("udp-recv-algorithm");
    let recv = sluice(&dir, &["udp", "recv", "--bind", "127.0.0.1:0", "--algorithm", "dctcp", "--duration", "1s"]);
    let message = stderr(&recv);
    assert_eq!(recv.status.code(), Some(2), "{message}");
    assert!(message.contains("--algorithm \"dctcp\": the algorithm is not receiver-driven"), "{message}");
    let recv = sluice(&dir, &["udp", "recv", "--bind", "127.0.0.1:0", "--algorithm", "bolt"]);
    assert!(stderr(&recv).contains("Bolt's programmable switches"), "{}", stderr(&recv));
}
