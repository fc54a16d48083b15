//! Runs every fuzz target over its committed corpus (`corpus/<target>/`) and its saved crashes
//! (`regressions/<target>/`), so that a plain `cargo test` checks what the fuzzer found.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use sluice_fuzz::{codec, crate_dir, udp, wire, Target, TARGETS};

/// The files of `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("readable folder").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `target` on every input of its corpus and regressions; returns how many ran and the failures.
fn replay(target: &Target) -> (usize, Vec<String>) {
    let mut ran = 0;
    let mut failures = Vec::new();
    for folder in ["corpus", "regressions"] {
        for path in inputs(&crate_dir().join(folder).join(target.name)) {
            let data = fs::read(&path).expect("readable input");
            if catch_unwind(AssertUnwindSafe(|| (target.run)(&data))).is_err() {
                failures.push(path.display().to_string());
            }
            ran += 1;
        }
    }
    (ran, failures)
}

fn check(name: &str) {
    let target = TARGETS.iter().find(|t| t.name == name).expect("a known target");
    let (ran, failures) = replay(target);
    assert!(ran > 0, "no corpus for target {name}");
    assert!(failures.is_empty(), "target {name} panicked on: {failures:#?}");
}

#[test]
fn scenario_corpus_and_regressions_pass() {
    check("scenario");
}

#[test]
fn flowlist_corpus_and_regressions_pass() {
    check("flowlist");
}

#[test]
fn topology_corpus_and_regressions_pass() {
    check("topology");
}

#[test]
fn cdf_corpus_and_regressions_pass() {
    check("cdf");
}

#[test]
fn codec_corpus_and_regressions_pass() {
    check("codec");
}

/// The codec's seeds are messages it encodes itself; the committed copies must match the current
/// layout. `SLUICE_FUZZ_WRITE_SEEDS=1` rewrites them after a layout change.
#[test]
fn codec_seeds_match_the_codec() {
    let dir = crate_dir().join("corpus").join("codec");
    for (name, bytes) in codec::seed_messages() {
        let path = dir.join(format!("seed-{name}"));
        if std::env::var_os("SLUICE_FUZZ_WRITE_SEEDS").is_some() {
            fs::create_dir_all(&dir).expect("writable corpus folder");
            fs::write(&path, &bytes).expect("writable corpus folder");
        }
        let committed = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(committed, bytes, "{} differs from the codec's encoding", path.display());
        assert!(codec::Message::parse(&committed).is_ok(), "{} does not parse", path.display());
    }
}

#[test]
fn wire_corpus_and_regressions_pass() {
    check("wire");
}

/// Checks that the committed seeds of `target` (`corpus/<target>/seed-<name>`) are what its encoders
/// write now, and replays them; `SLUICE_FUZZ_WRITE_SEEDS=1` rewrites them after a layout change.
fn seeds_match(target: &str, seeds: Vec<(String, Vec<u8>)>, run: fn(&[u8])) {
    let dir = crate_dir().join("corpus").join(target);
    for (name, bytes) in seeds {
        let path = dir.join(format!("seed-{name}"));
        if std::env::var_os("SLUICE_FUZZ_WRITE_SEEDS").is_some() {
            fs::create_dir_all(&dir).expect("writable corpus folder");
            fs::write(&path, &bytes).expect("writable corpus folder");
        }
        let committed = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(committed, bytes, "{} differs from the encoders' output", path.display());
        run(&committed);
    }
}

/// The wire target's seeds are packets its encoders write; the committed copies must match the current
/// layout.
#[test]
fn wire_seeds_match_the_encoders() {
    seeds_match("wire", wire::seed_messages(), wire::run);
}

#[test]
fn udp_corpus_and_regressions_pass() {
    check("udp");
}

#[test]
fn agent_corpus_and_regressions_pass() {
    check("agent");
}

/// The udp target's seeds are datagram sequences the encoders write.
#[test]
fn udp_seeds_match_the_encoders() {
    seeds_match("udp", udp::seed_messages(), udp::run);
}

#[test]
fn program_corpus_and_regressions_pass() {
    check("program");
}

#[test]
fn control_corpus_and_regressions_pass() {
    check("control");
}

/// Every target is replayed by one of the tests above.
#[test]
fn every_target_has_a_replay_test() {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        ["scenario", "flowlist", "topology", "cdf", "codec", "wire", "udp", "agent", "program", "control"]
    );
}
