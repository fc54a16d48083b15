//! The kernel agent's settings: its TOML file with the command-line options that add to it (`--rule`,
//! `--param`, `--watchdog`, `--fallback`), checked and resolved into the algorithms flows get.
//!
//! The settings are compiled here from `sluice-kernel`'s source files, as the codec is
//! ([`crate::codec`]): they are pure Rust, while depending on `sluice-kernel` would build its BPF
//! objects and libbpf.
//!
//! An input is text. Its leading lines that start with `--` are options (`--rule 5201=reno`, `--param
//! reno.beta=0.7`, `--watchdog 10ms`, `--fallback reno`); the rest is the settings file. Either may be
//! rejected, with an error that names where; an accepted set of settings must choose an algorithm for
//! any flow and build its controller.

// The settings' doc links point into `sluice-kernel` (its adapter) and resolve there; the test algorithm
// `fixed` is what the settings module names as `crate::fixed`.
#[allow(dead_code, rustdoc::broken_intra_doc_links)]
#[path = "../../sluice-kernel/src/config.rs"]
mod kernel;

pub use kernel::{AgentConfig, ConfigError, Fallback};

use sluice_cc::FlowInfo;

/// Runs one input; panics on a defect.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (options, file): (Vec<&str>, Vec<&str>) = split(text);
    let mut config = match toml::from_str::<AgentConfig>(&file.join("\n")) {
        Ok(config) => config,
        Err(e) => return drop(e.to_string()),
    };
    for option in options {
        if let Err(e) = apply(&mut config, option) {
            assert_named(&e);
            return;
        }
    }
    let mut resolved = match config.resolve("agent.toml") {
        Ok(resolved) => resolved,
        Err(e) => return assert_named(&e),
    };
    let flow = FlowInfo {
        flow_id: 1,
        mss: 1448,
        header_bytes: 66,
        line_rate: resolved.config.line_rate,
        base_rtt: resolved.config.base_rtt,
        hops: 1,
        size: None,
        start: 0,
    };
    let rule_ports: Vec<u16> = resolved.rules.iter().flat_map(|r| [r.lo, r.hi]).collect();
    for (slot, port) in [(None, 5201), (Some("sluice_reno"), 80), (Some("nope"), 0)] {
        let (name, factory) = resolved.choose(slot, port, port);
        assert!(!name.is_empty(), "a flow got an algorithm without a name");
        drop(factory.create(&flow));
    }
    for port in rule_ports {
        let (_, factory) = resolved.choose(None, port, 1);
        drop(factory.create(&flow));
    }
}

/// Splits the input into its leading option lines and the settings file after them.
fn split(text: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = text.lines().collect();
    let options = lines.iter().take_while(|l| l.starts_with("--")).count();
    (lines[..options].to_vec(), lines[options..].to_vec())
}

/// Applies one command-line option to the settings, as `sluice agent` does.
fn apply(config: &mut AgentConfig, option: &str) -> Result<(), ConfigError> {
    let (name, value) = option.split_once(' ').unwrap_or((option, ""));
    match name {
        "--rule" => config.add_rule_arg(value),
        "--param" => config.add_param_arg(value),
        "--watchdog" => AgentConfig::parse_duration_arg("watchdog", value).map(|t| config.watchdog = t),
        "--fallback" => Fallback::parse_arg(value).map(|f| config.fallback = f),
        _ => Ok(()),
    }
}

/// A rejection must say where the problem is and what it is.
fn assert_named(e: &ConfigError) {
    assert!(!e.place.is_empty() && !e.message.is_empty(), "an error without a place or a message: {e:?}");
}
