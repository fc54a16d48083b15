//! The `host` entry of `summary.json`: what the endpoint and host-interconnect models saw.

use sluice_scenario::Resolved;
use sluice_sim::SimOutput;

/// The models' figures, or `None` when neither model is on (the summary then stays as it was).
pub fn host_summary(resolved: &Resolved, output: &SimOutput) -> Option<serde_json::Value> {
    let host = &resolved.scenario.host;
    if !host.endpoint.enabled && !host.bus.enabled {
        return None;
    }
    let c = &output.counters;
    let seconds = output.run.sim_time.max(1) as f64 / sluice_core::PS_PER_S as f64;
    let mean_delay_ns =
        if c.host_dma_packets == 0 { 0.0 } else { c.host_dma_delay_sum as f64 / c.host_dma_packets as f64 / 1e3 };
    Some(serde_json::json!({
        "endpoint_processed_bytes": c.endpoint_processed_bytes,
        "endpoint_goodput_gbps": sluice_results::round6(c.endpoint_processed_bytes as f64 * 8.0 / seconds / 1e9),
        "endpoint_drops": c.endpoint_drops,
        "host_drops": c.host_drops,
        "host_ecn_marks": c.host_ecn_marks,
        "host_dma_packets": c.host_dma_packets,
        "host_mean_delay_ns": sluice_results::round6(mean_delay_ns),
    }))
}
