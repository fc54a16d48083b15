//! Fuzz targets for every parser a user or a peer feeds sluice: scenario TOML with `--set` overrides (then
//! resolution), flow-list CSV, topology files (sluice TOML and the HPCC `topology.txt`), flow-size CDF
//! files, the kernel agent's settings and message codec, the packet formats of the software switch (`sluice-wire`), and
//! the UDP datapath's endpoint fed datagrams from peers (`sluice-udp`), datapath programs as text
//! and as bytecode (`sluice_cc::program`), and the two-machine test's control channel.
//!
//! Each target is a function of raw bytes that panics only on a defect. `scripts/fuzz.sh` runs them
//! under libFuzzer (the `libfuzzer` feature builds one binary per target); `tests/replay.rs` runs them
//! over the committed corpora (`corpus/<target>/`) and the saved crashes (`regressions/<target>/`), so
//! regressions are checked by a plain `cargo test`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod agent;
pub mod cdf;
pub mod codec;
pub mod control;
pub mod flowlist;
pub mod program;
pub mod scenario;
pub mod topology;
pub mod udp;
pub mod wire;

// The kernel agent's test algorithm, which its settings ([`agent`]) name as `crate::fixed`; compiled from
// `sluice-kernel`'s source file as the settings are.
#[allow(dead_code, rustdoc::broken_intra_doc_links)]
#[path = "../../sluice-kernel/src/fixed.rs"]
mod fixed;

/// A fuzz target: a name (its corpus folder) and the function run on each input.
pub struct Target {
    /// Name of the target and of its folders under `corpus/` and `regressions/`.
    pub name: &'static str,
    /// Runs one input; panics on a defect.
    pub run: fn(&[u8]),
}

/// Every target, in the order `scripts/fuzz.sh` runs them.
pub const TARGETS: [Target; 10] = [
    Target { name: "scenario", run: scenario::run },
    Target { name: "flowlist", run: flowlist::run },
    Target { name: "topology", run: topology::run },
    Target { name: "cdf", run: cdf::run },
    Target { name: "codec", run: codec::run },
    Target { name: "wire", run: wire::run },
    Target { name: "udp", run: udp::run },
    Target { name: "agent", run: agent::run },
    Target { name: "program", run: program::run },
    Target { name: "control", run: control::run },
];

/// This crate's folder (corpora, regressions and the data files scenarios may name).
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder that relative file names in fuzzed scenarios resolve against: small topology files, flow
/// lists and CDF files, so inputs can reach the file readers without touching the rest of the disk.
pub fn data_dir() -> PathBuf {
    crate_dir().join("data")
}

/// Writes `text` to a fresh scratch file ending in `.{extension}`, runs `f` on its path and removes it.
/// The parsers of topology and CDF files take paths; the name is unique per process and call so that
/// fuzzers and replay tests running in parallel do not share a file.
pub(crate) fn with_scratch_file<T>(extension: &str, text: &str, f: impl FnOnce(&Path) -> T) -> T {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join("sluice-fuzz");
    std::fs::create_dir_all(&dir).expect("the temporary folder is writable");
    let unique = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let path = dir.join(format!("input-{unique}.{extension}"));
    std::fs::write(&path, text).expect("the temporary folder is writable");
    let out = f(&path);
    let _ = std::fs::remove_file(&path);
    out
}

/// Whether `path` stays inside the folder it is relative to (no root, no `..`), so a fuzzed scenario
/// can only name the files of [`data_dir`].
pub(crate) fn is_contained(path: &str) -> bool {
    Path::new(path).components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
}
