//! Bolt's switch support end to end (Arslan et al. SIGCOMM'23 section 3): queue notifications (SRC)
//! hold a bottleneck queue near `CCthresh`, and proactive ramp-up (PRU) and supply matching (SM) hand
//! capacity that frees up to the remaining flows within a few round trips.
//!
//! Setting: stars around `sw0`, every link 100 Gbps and 1 us, lossless (PFC on, the default), the
//! default switch settings (`CCthresh` 10 KB, supply cap 10 KB, 256 PRU tokens). The base RTT of a
//! flow is 4 x 1 us of propagation plus two data and two ACK serializations, about 4.19 us, and its
//! BDP (the initial and largest window) 52.3 KB. The payload capacity of a 100 Gbps port is
//! `100 Gbps x 1000 / 1082` = 92.42 Gbps (1000 B payload and 82 B of headers per packet).

mod common;

use common::{bytes_in, port, series, star, time, Run};
use sluice_core::{Time, PS_PER_S};
use sluice_results::ThroughputSeries;
use sluice_sim::{Observe, SimOutput, StopRule};

/// Payload capacity of a 100 Gbps port, bit/s.
const CAPACITY: f64 = 100e9 * 1000.0 / 1082.0;
/// Base RTT of a flow across one switch of the 1 us stars, picoseconds (4 us + 2 x 86.56 ns + 2 x 6.88 ns).
const RTT: Time = 4_186_880;
/// The default `CCthresh`, bytes.
const CC_THRESH: u64 = 10_000;

/// Goodput (bit/s) of a series sampled every 1 us over the samples that end in `(from, to]`.
fn goodput(series: &ThroughputSeries, from: Time, to: Time) -> f64 {
    let window: Vec<u64> = series.samples.iter().filter(|(t, _)| *t > from && *t <= to).map(|(_, b)| *b).collect();
    assert!(!window.is_empty(), "no samples in ({from}, {to}]");
    window.iter().sum::<u64>() as f64 * 8.0 / (window.len() as Time * series.interval) as f64 * PS_PER_S as f64
}

/// Senders 0..8 of a 9-host star each start a long-lived flow to host 8, 20 us apart; the run lasts 2 ms.
fn incast(algorithm: &'static str) -> SimOutput {
    let senders = 8u32;
    let end = time("2ms");
    let mut run = Run::new(star(senders + 1, "100Gbps", "1us"), algorithm);
    for i in 0..senders {
        run = run.long_flow(i, senders, time("10us") + i as Time * time("20us"), end + time("1ms"));
    }
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe = Observe {
        trace_flows: (0..senders).collect(),
        throughput_flows: (0..senders).collect(),
        throughput_ports: vec![(senders + 1, senders as u16)],
        sample_interval: time("100us"),
        ..Observe::default()
    };
    run.run()
}

#[test]
fn notifications_hold_an_incast_queue_near_cc_thresh() {
    let out = incast("bolt");
    let bottleneck = port(&out, "sw0", 8);
    let (from, to) = (time("1ms"), time("2ms"));
    let tx = bytes_in(series(&out, &bottleneck.label()), from, to);
    let utilization = tx as f64 * 8.0 / (bottleneck.rate as f64 * (to - from) as f64 / PS_PER_S as f64);
    // The queue each notification reported: never below the threshold, and after every flow has joined
    // (the last at 150 us) and settled, within twice the threshold.
    let mut late_max = 0.0f64;
    let mut reported_min = f64::MAX;
    for trace in &out.traces {
        let queue = trace.names().iter().position(|n| *n == "src_queue").expect("bolt traces src_queue");
        for row in trace.rows() {
            let q = row.values[queue];
            if q > 0.0 {
                reported_min = reported_min.min(q);
            }
            if row.time > from {
                late_max = late_max.max(q);
            }
        }
    }
    println!(
        "bolt incast 8 -> 1: {} notifications, bottleneck max queue {} B, avg queue {:.0} B, queue in \
         notifications {reported_min:.0}..{late_max:.0} B after 1 ms, utilization {:.2}% over the last ms",
        out.counters.notifications,
        bottleneck.max_queue,
        bottleneck.avg_queue,
        utilization * 100.0
    );
    assert_eq!(out.run.drops, 0);
    assert!(out.counters.notifications > 0, "no notifications");
    assert!(reported_min >= CC_THRESH as f64, "a notification reported a queue of {reported_min} B");
    assert!(late_max > 0.0 && late_max <= 2.0 * CC_THRESH as f64, "queue reached {late_max} B after settling");
    assert!(bottleneck.avg_queue <= 2.0 * CC_THRESH as f64, "average queue {:.0} B", bottleneck.avg_queue);
    // The peak comes from a joining flow's first window (one BDP at line rate) meeting the standing queue.
    assert!(bottleneck.max_queue <= 52_336 + 2 * CC_THRESH, "max queue {} B", bottleneck.max_queue);
    assert!(utilization >= 0.99, "utilization {:.2}%", utilization * 100.0);
}

#[test]
fn switches_send_no_notifications_for_other_algorithms() {
    let out = incast("dctcp");
    assert_eq!(out.counters.notifications, 0);
}

/// Flow A (host 0 to host 2) runs throughout; flow B (host 1 to host 2) starts at 50 us and either
/// sends 1 MB (`sized`) or runs until it stops offering data at 150 us. Returns A's goodput over
/// `(fin + 2 RTT, fin + 6 RTT]` and `(fin + 6 RTT, fin + 10 RTT]`, where `fin` is when B's last byte
/// was acknowledged, as fractions of the capacity.
fn ramp(sized: bool, pru: bool, supply_matching: bool) -> (f64, f64) {
    let end = time("400us");
    let mut run = Run::new(star(3, "100Gbps", "1us"), "bolt").long_flow(0, 2, time("1us"), end + time("1ms"));
    run =
        if sized { run.flow(1, 2, 1_000_000, time("50us")) } else { run.long_flow(1, 2, time("50us"), time("150us")) };
    run.switch.bolt.pru = pru;
    run.switch.bolt.supply_matching = supply_matching;
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe = Observe { throughput_flows: vec![0], sample_interval: time("1us"), ..Observe::default() };
    let out = run.run();
    assert_eq!(out.run.drops, 0);
    let fin = out.flows[1].finish.expect("flow B finishes");
    let a = series(&out, "flow 0");
    let early = goodput(a, fin + 2 * RTT, fin + 6 * RTT) / CAPACITY;
    let late = goodput(a, fin + 6 * RTT, fin + 10 * RTT) / CAPACITY;
    println!(
        "bolt ramp ({}, PRU {pru}, SM {supply_matching}): B done at {:.1} us ({} notifications); A at \
         {:.1}% of capacity over 2-6 RTTs after, {:.1}% over 6-10 RTTs",
        if sized { "B sends 1 MB" } else { "B stops at 150 us" },
        fin as f64 / 1e6,
        out.counters.notifications,
        early * 100.0,
        late * 100.0
    );
    (early, late)
}

#[test]
fn a_flow_joining_an_idle_link_sends_at_line_rate_from_its_first_round_trip() {
    let start = time("10us");
    let mut run = Run::new(star(3, "100Gbps", "1us"), "bolt").flow(0, 2, 2_000_000, start);
    run.observe = Observe { throughput_flows: vec![0], sample_interval: time("1us"), ..Observe::default() };
    let out = run.run();
    // The window starts at the BDP: the second round trip's ACKs already come at line rate.
    let rate = goodput(series(&out, "flow 0"), start + RTT + time("1us"), start + 3 * RTT) / CAPACITY;
    println!("bolt: a flow joining an idle link: {:.1}% of capacity over its 2nd and 3rd RTT", rate * 100.0);
    assert!(rate >= 0.95, "{:.1}%", rate * 100.0);
}

#[test]
fn proactive_ramp_up_fills_the_capacity_a_finishing_flow_leaves_within_two_rtts() {
    // B's last window deposits PRU tokens that A's INCWIN packets take as B drains: A is at line rate
    // within 2 RTTs of B's last ACK (ACKs lag the bottleneck by about one RTT).
    let (pru, _) = ramp(true, true, false);
    assert!(pru >= 0.97, "with PRU: {:.1}%", pru * 100.0);
    let (both, _) = ramp(true, true, true);
    assert!(both >= 0.97, "with PRU and SM: {:.1}%", both * 100.0);
    // Without PRU and SM only the additive increase (one packet per RTT) is left.
    let (none, _) = ramp(true, false, false);
    assert!(none <= 0.70, "without PRU and SM: {:.1}%", none * 100.0);
}

#[test]
fn supply_matching_fills_the_capacity_a_stopped_flow_leaves_within_a_few_rtts() {
    // A long-lived flow that stops sends no LAST packets, so there are no PRU tokens: supply matching
    // grants INCWIN for the spare capacity, up to 10 KB at a time.
    let (early, late) = ramp(false, false, true);
    assert!(early >= 0.80 && late >= 0.97, "with SM: {:.1}%, {:.1}%", early * 100.0, late * 100.0);
    let (early, late) = ramp(false, true, true);
    assert!(early >= 0.80 && late >= 0.97, "with PRU and SM: {:.1}%, {:.1}%", early * 100.0, late * 100.0);
    let (_, none) = ramp(false, false, false);
    assert!(none <= 0.75, "without PRU and SM: {:.1}%", none * 100.0);
}

#[test]
fn bolt_runs_are_deterministic() {
    let a = incast("bolt");
    let b = incast("bolt");
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.flows, b.flows);
}
