//! The `[host.endpoint]` and `[host.bus]` sections: bad values give located errors, and the shipped
//! endpoint and host-congestion scenarios resolve.

use std::path::{Path, PathBuf};

use sluice_scenario::{load, load_str, resolve};

/// A valid lossy scenario (lines 1-12); extra lines start at 13.
const BASE: &str = "\
[topology]
kind = \"star\"
hosts = 4
rate = \"100Gbps\"

[switch.pfc]
enabled = false

[[workload]]
kind = \"incast\"
receiver = 0
size = \"10KB\"
";

fn error(extra: &str) -> String {
    let text = format!("{BASE}{extra}");
    let result = load_str(&text, "bad.toml", Path::new("."), &[]).and_then(|s| resolve(&s).map(|_| ()));
    match result {
        Ok(()) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn endpoint_values_are_checked_where_written() {
    assert_eq!(
        error("[host.endpoint]\nenabled = true\ndrain = 0.0\n"),
        "bad.toml:15: host.endpoint.drain: must be a positive fraction of the NIC rate (got 0)"
    );
    assert_eq!(
        error("[host.endpoint]\nenabled = true\nqueue = \"0B\"\n"),
        "bad.toml:15: host.endpoint.queue: must be positive, such as \"81KB\" (got 0)"
    );
    let err = error("[host]\nloss_recovery = \"selective\"\n[host.endpoint]\nenabled = true\n");
    assert!(err.starts_with("bad.toml:14: host.loss_recovery: the endpoint model drops out-of-order data"), "{err}");
    let err = error(
        "[host.endpoint]\nenabled = true\nschedule = [{ at = \"2us\", drain = 0.5 }, { at = \"1us\", drain = 1.0 }]\n",
    );
    assert_eq!(err, "bad.toml:15: host.endpoint.schedule: step 1: times must increase");
}

#[test]
fn bus_values_are_checked_where_written() {
    assert_eq!(
        error("[host.bus]\nenabled = true\nthrottle_levels = [1.0, 2.0]\n"),
        "bad.toml:15: host.bus.throttle_levels: each level is a fraction in [0, 1] (got 2)"
    );
    assert_eq!(
        error("[host.bus]\nenabled = true\nsample_interval = \"0us\"\n"),
        "bad.toml:15: host.bus.sample_interval: must be positive, such as \"1us\""
    );
    let err = error("[host.bus]\nenabled = true\nlocal_lod = \"1Gbps\"\n");
    assert!(err.starts_with("bad.toml:15: host.bus.local_lod: unknown field"), "{err}");
}

fn shipped(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenario folder exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn shipped_endpoint_and_host_scenarios_resolve_with_their_models_on() {
    for dir in ["endpoint", "host"] {
        let files = shipped(dir);
        assert!(files.len() >= 2, "scenarios/{dir}: {files:?}");
        for path in files {
            let scenario = load(&path, &[], None).unwrap_or_else(|e| panic!("{e}"));
            let resolved = resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
            let host = &resolved.scenario.host;
            assert!(host.endpoint.enabled || host.bus.enabled, "{}: no host model on", path.display());
            assert!(!resolved.scenario.switch.pfc.enabled, "{}: the experiments run lossy", path.display());
        }
    }
}
