//! Endpoint congestion (Chong and Krishnan): a target whose processing runs at half the link rate, on a
//! lossy 100 Gbps fat-tree with go-back-N NACKs.

mod common;

use common::{fat_tree, time, Run};
use sluice_sim::{HostConfig, LinkConfig, SimOutput};

const PAYLOAD: u32 = 2048;
const HEADER: u32 = 64;

/// A run of `algorithm` on a k = 4 fat-tree at 100 Gbps with 1 us links (h0 -> h2 crosses four links:
/// an 8 us round trip, as in the paper), PFC off, the target's queue at 81 KB draining at `drain`.
fn endpoint_run(algorithm: &'static str, drain: f64) -> Run {
    let mut run = Run::new(fat_tree(4, "100Gbps"), algorithm);
    run.link = LinkConfig { mtu: PAYLOAD, header_bytes: HEADER, ..LinkConfig::default() };
    run.switch.pfc.enabled = false;
    run.switch.ecn.enabled = false;
    run.host = HostConfig::default();
    run.host.endpoint.enabled = true;
    run.host.endpoint.drain = drain;
    run.stop.duration = Some(time("1ms"));
    run
}

fn retransmitted(out: &SimOutput) -> u64 {
    out.flows.iter().map(|f| f.retransmitted_bytes).sum()
}

/// Goodput the targets processed over the run, bit/s.
fn goodput(out: &SimOutput) -> f64 {
    out.counters.endpoint_processed_bytes as f64 * 8.0 / (out.run.sim_time as f64 / 1e12)
}

#[test]
fn ec_aware_unicast_at_half_processing_has_no_retransmissions_and_full_goodput() {
    let out = endpoint_run("ec_aware", 0.5).long_flow(0, 2, 0, time("1ms")).run();
    assert_eq!(retransmitted(&out), 0, "EC-aware must not retransmit");
    assert_eq!(out.counters.endpoint_drops, 0);
    // Processing bandwidth 50 Gbps of wire bytes, of which 2048 / 2112 is payload.
    let ideal = 50e9 * PAYLOAD as f64 / (PAYLOAD + HEADER) as f64;
    let got = goodput(&out);
    assert!((got - ideal).abs() <= 0.05 * ideal, "goodput {got:.3e} vs {ideal:.3e}");
}

#[test]
fn opt_and_aimd_retransmit_under_endpoint_congestion() {
    for algorithm in ["opt", "aimd"] {
        let out = endpoint_run(algorithm, 0.5).long_flow(0, 2, 0, time("1ms")).run();
        assert!(retransmitted(&out) > 0, "{algorithm}: no retransmissions");
        assert!(out.counters.endpoint_drops > 0, "{algorithm}: no drops at the target");
    }
}

#[test]
fn without_endpoint_congestion_every_policy_runs_at_line_rate() {
    for algorithm in ["ec_aware", "opt"] {
        let out = endpoint_run(algorithm, 1.0).long_flow(0, 2, 0, time("1ms")).run();
        assert_eq!(retransmitted(&out), 0, "{algorithm}");
        let ideal = 100e9 * PAYLOAD as f64 / (PAYLOAD + HEADER) as f64;
        assert!(goodput(&out) > 0.95 * ideal, "{algorithm}: {:.3e}", goodput(&out));
    }
}

/// The 8:1 incast: eight initiators in the other pods stream into h0.
fn incast(algorithm: &'static str, params: &[(&str, f64)]) -> SimOutput {
    let mut run = endpoint_run(algorithm, 0.5);
    for (k, v) in params {
        run.params.insert(k.to_string(), toml::Value::Float(*v));
    }
    for src in 8..16 {
        run = run.long_flow(src, 0, 0, time("1ms"));
    }
    run.run()
}

#[test]
fn ec_aware_incast_retransmits_less_than_a_third_of_opt_and_aimd() {
    let window = [("outstanding_bdps", 0.25)];
    let ec = retransmitted(&incast("ec_aware", &window));
    let opt = retransmitted(&incast("opt", &window));
    let aimd = retransmitted(&incast("aimd", &[("max_cwnd_bdps", 0.25)]));
    assert!(ec * 3 < opt && ec * 3 < aimd, "ec_aware {ec}, opt {opt}, aimd {aimd}");
}

#[test]
fn a_processing_schedule_changes_the_drain_rate() {
    let mut run = endpoint_run("ec_aware", 1.0);
    run.host.endpoint.schedule = vec![sluice_sim::config::DrainStep { at: time("500us"), drain: 0.25 }];
    let out = run.long_flow(0, 2, 0, time("1ms")).run();
    // The sudden 4x slowdown finds a full unthrottled window in flight: a few drops, then none.
    let delivered: u64 = out.flows.iter().map(|f| f.delivered).sum();
    assert!(retransmitted(&out) * 100 < delivered, "{} of {delivered}", retransmitted(&out));
    // Half the run at 100%, half at 25%: 62.5 Gbps of wire bytes on average.
    let ideal = 62.5e9 * PAYLOAD as f64 / (PAYLOAD + HEADER) as f64;
    let got = goodput(&out);
    assert!((got - ideal).abs() <= 0.05 * ideal, "goodput {got:.3e} vs {ideal:.3e}");
}

#[test]
fn endpoint_runs_are_deterministic() {
    let a = incast("ec_aware", &[]);
    let b = incast("ec_aware", &[]);
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.flows, b.flows);
}

#[test]
fn receivers_with_a_processing_queue_still_send_cnps() {
    // DCQCN's notification point runs before the endpoint model takes the packet.
    let mut run = endpoint_run("dcqcn", 1.0);
    run.switch.ecn.enabled = true;
    run.host.cnp_interval = Some(time("50us"));
    for src in 8..16 {
        run = run.long_flow(src, 0, 0, time("300us"));
    }
    run.stop.duration = Some(time("300us"));
    let out = run.run();
    assert!(out.counters.ecn_marks > 0, "the 8:1 incast marks at the switch");
    assert!(out.counters.cnps > 0, "marked packets into a host with a processing queue get CNPs");
}
