//! What a scenario asks of the UDP datapath's sender: the options `sluice udp send` takes for a host's
//! flows (algorithm and parameters, line rate, base RTT, timers, traced and sampled flows). The bed
//! (`sluice bed run --datapath udp`) hands them to each host's sender, and a two-machine `sluice test`
//! to its one sender.

use sluice_core::PS_PER_NS;
use sluice_scenario::Resolved;

use crate::udp_plan::{path_round_trip, Planned};

/// Payload of a full packet at a 1500-byte MTU on the UDP datapath, and the bytes it takes on the wire
/// beyond that: a sluice header (56) on UDP (8), IPv4 (20) and Ethernet (14).
pub const UDP_FRAMING: (u64, u64) = (1416, 98);

/// The sender's options from the scenario: algorithm and parameters, line rate, the longest unloaded
/// round trip of its flows, ACK spacing, minimum RTO and time limit.
pub fn sender_options(resolved: &Resolved, flows: &[Planned]) -> Vec<String> {
    let s = &resolved.scenario;
    let mut args = vec!["--algorithm".to_string(), resolved.algorithm.name.to_string()];
    for (key, value) in algorithm_params(resolved) {
        args.extend(["--param".to_string(), format!("{key}={value}")]);
    }
    let base = flows.iter().map(|f| path_round_trip(resolved, f.src, f.dst, UDP_FRAMING)).max().unwrap_or(0);
    args.extend(["--line-rate".into(), format!("{}bps", resolved.line_rate)]);
    args.extend(["--base-rtt".into(), format!("{}ns", base / PS_PER_NS)]);
    args.extend(["--ack-every".into(), s.host.ack_every_packets.to_string()]);
    for (key, value) in toml::Table::try_from(&s.plane).unwrap_or_default() {
        args.extend(["--plane".to_string(), format!("{key}={value}")]);
    }
    args.extend(["--rto-min".into(), format!("{}ns", s.host.rto_min / PS_PER_NS)]);
    if s.host.rto_backoff {
        args.push("--rto-backoff".into());
    }
    args.extend(["--duration".into(), format!("{}ns", s.simulation.time_limit / PS_PER_NS)]);
    let traced: Vec<String> =
        flows.iter().filter(|f| s.output.trace_flows.contains(&(f.id as u64))).map(|f| f.id.to_string()).collect();
    if !traced.is_empty() {
        args.extend(["--trace-flows".into(), traced.join(",")]);
        args.extend(["--trace-interval".into(), format!("{}ns", s.output.trace_interval / PS_PER_NS)]);
    }
    let selected = s.output.throughput_flows.ids(resolved.flows.len());
    let sampled: Vec<String> =
        (flows.iter()).filter(|f| selected.contains(&(f.id as u64))).map(|f| f.id.to_string()).collect();
    if !sampled.is_empty() {
        args.extend(["--throughput-flows".into(), sampled.join(",")]);
        args.extend(["--sample-interval".into(), format!("{}ns", s.output.sample_interval / PS_PER_NS)]);
    }
    args
}

/// The algorithm's parameters in force (`[cc.<algorithm>]` of the resolved scenario), as text.
pub fn algorithm_params(resolved: &Resolved) -> Vec<(String, String)> {
    let Some(toml::Value::Table(params)) = resolved.scenario.cc.tables.get(resolved.algorithm.name) else {
        return Vec::new();
    };
    params
        .iter()
        .map(|(key, value)| {
            let text = match value {
                toml::Value::String(v) => v.clone(),
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect()
}
