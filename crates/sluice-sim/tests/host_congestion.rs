//! Host congestion (TAURUS section 5.3; hostCC): local memory traffic slows the receiving NIC's writes
//! into memory; only a host-aware policy sees it and acts.

mod common;

use common::{star, time, Run};
use sluice_sim::SimOutput;

/// Two senders stream to h0 for 1 ms while a local load demands `load_gbps` of h0's memory bandwidth.
fn host_run(algorithm: &'static str, load_gbps: u64) -> SimOutput {
    host_run_with(algorithm, load_gbps, toml::Table::new())
}

/// [`host_run`] with the algorithm's `params`.
fn host_run_with(algorithm: &'static str, load_gbps: u64, params: toml::Table) -> SimOutput {
    let mut run = Run::new(star(3, "100Gbps", "1us"), algorithm);
    run.params = params;
    run.switch.pfc.enabled = false;
    run.host.bus.enabled = true;
    run.host.bus.local_load = load_gbps * 1_000_000_000;
    run.stop.duration = Some(time("1ms"));
    run.long_flow(1, 0, 0, time("1ms")).long_flow(2, 0, 0, time("1ms")).run()
}

fn delivered(out: &SimOutput) -> u64 {
    out.flows.iter().map(|f| f.delivered).sum()
}

#[test]
fn host_aware_policy_beats_dctcp_alone_under_local_load() {
    let hostcc = host_run("hostcc", 450);
    let dctcp = host_run("dctcp", 450);
    let (h, d) = (delivered(&hostcc), delivered(&dctcp));
    assert!(h > d + d / 10, "hostcc {h} bytes, dctcp {d} bytes");
    assert!(hostcc.counters.host_ecn_marks > 0, "hostCC's network response marks");
    assert_eq!(dctcp.counters.host_ecn_marks, 0);
}

#[test]
fn senders_reading_the_receivers_host_signals_respond_as_marking_on_receive_does() {
    let dctcp_host = host_run("dctcp_host", 450);
    let marking: toml::Table = toml::from_str("throttle = false").unwrap();
    let hostcc_marking = host_run_with("hostcc", 450, marking);
    let dctcp = host_run("dctcp", 450);
    let (s, r, d) = (delivered(&dctcp_host), delivered(&hostcc_marking), delivered(&dctcp));
    // The receiver marks nothing: the senders back off from the samples its ACKs carry.
    assert_eq!(dctcp_host.counters.host_ecn_marks, 0);
    assert!(hostcc_marking.counters.host_ecn_marks > 0);
    assert!(s > d + d / 10, "dctcp_host {s} bytes, dctcp {d} bytes");
    assert_eq!(dctcp_host.counters.host_drops, 0, "the NIC buffer never overflows");
    // Both take hostCC's network response, one at the receiver and one at the senders.
    assert!(s.abs_diff(r) <= r / 50, "dctcp_host {s} bytes, hostcc marking on receive {r} bytes");
}

#[test]
fn fabric_only_rate_control_cannot_see_host_congestion() {
    let dcqcn = host_run("dcqcn", 450);
    // DCQCN's signal comes from the switch (the two senders share h0's link): it settles on the link's
    // share, which the host cannot absorb; nothing marks at the host, the NIC buffer overflows instead.
    assert_eq!(dcqcn.counters.host_ecn_marks, 0);
    assert!(dcqcn.counters.host_drops > 0);
    assert!(delivered(&dcqcn) < delivered(&host_run("hostcc", 450)));
}

#[test]
fn without_local_load_the_host_is_not_a_bottleneck() {
    let out = host_run("dctcp", 0);
    assert_eq!(out.counters.host_drops, 0);
    // 1 ms at 100 Gbps of 1082-byte packets carrying 1000 bytes, less the start.
    let line = 100e9 / 8.0 * 1e-3 * 1000.0 / 1082.0;
    assert!(delivered(&out) as f64 > 0.9 * line, "{}", delivered(&out));
}
