//! Four long-lived flows sharing one 100 Gbps bottleneck converge to equal shares that fill the link.
//!
//! Setting: a dumbbell of 4 senders (hosts 0..4) and 4 receivers (hosts 4..8), every link 100 Gbps and
//! 1 us; flow `i` runs from host `i` to host `4 + i`, so all four meet at the bottleneck port of `sw0`
//! (its last port, 4). The fabric is lossless (PFC on, the default), so the figures measure the
//! congestion controller and not loss recovery. Over the last 5 ms of a 20 ms run the per-flow goodput
//! (acknowledged payload, sampled every 100 us) gives Jain's fairness index, and the bottleneck port's
//! transmitted wire bytes over `rate x window` give its utilization.

mod common;

use common::{bytes_in, dumbbell, port, series, time, Run};
use sluice_core::{Time, PS_PER_S};
use sluice_results::jain_fairness;
use sluice_sim::{Observe, StopRule};

const FLOWS: u32 = 4;
/// The bottleneck: `sw0` (node 8), port 4 (its link to `sw1`).
const BOTTLENECK: (u32, u16) = (2 * FLOWS, FLOWS as u16);

/// Per-flow goodput (bit/s) and bottleneck utilization over the window `(from, to]`.
struct Shares {
    rates: Vec<f64>,
    utilization: f64,
    jain: f64,
}

fn measure(algorithm: &'static str) -> Shares {
    let (start, end) = (time("100us"), time("20ms"));
    let (from, to) = (time("15ms"), end);
    let mut run = Run::new(dumbbell(FLOWS, "100Gbps", "100Gbps"), algorithm);
    for i in 0..FLOWS {
        // Staggered starts, so that the flows do not begin in lockstep.
        run = run.long_flow(i, FLOWS + i, start + i as Time * time("10us"), end + time("1ms"));
    }
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe = Observe {
        throughput_flows: (0..FLOWS).collect(),
        throughput_ports: vec![BOTTLENECK],
        sample_interval: time("100us"),
        ..Observe::default()
    };
    let out = run.run();
    assert_eq!(out.run.drops, 0, "{algorithm}: the lossless fabric dropped packets");

    let window_s = (to - from) as f64 / PS_PER_S as f64;
    let rates: Vec<f64> =
        (0..FLOWS).map(|i| bytes_in(series(&out, &format!("flow {i}")), from, to) as f64 * 8.0 / window_s).collect();
    let bottleneck = port(&out, "sw0", BOTTLENECK.1);
    let tx = bytes_in(series(&out, &bottleneck.label()), from, to);
    let utilization = tx as f64 * 8.0 / (bottleneck.rate as f64 * window_s);
    let jain = jain_fairness(&rates);
    let gbps: Vec<String> = rates.iter().map(|r| format!("{:.2}", r / 1e9)).collect();
    println!(
        "{algorithm}: goodput per flow [{}] Gbps, Jain {jain:.4}, bottleneck utilization {:.2}% \
         (max queue {} B, avg queue {:.0} B, ECN marks {}, PFC pauses {})",
        gbps.join(", "),
        utilization * 100.0,
        bottleneck.max_queue,
        bottleneck.avg_queue,
        bottleneck.ecn_marks,
        out.run.pfc_pauses,
    );
    Shares { rates, utilization, jain }
}

#[test]
fn dctcp_shares_a_bottleneck_fairly_and_fills_it() {
    let s = measure("dctcp");
    assert!(s.jain >= 0.98, "DCTCP Jain index {:.4} < 0.98 (rates {:?})", s.jain, s.rates);
    assert!(s.utilization >= 0.95, "DCTCP utilization {:.2}% < 95%", s.utilization * 100.0);
}

#[test]
fn dcqcn_shares_a_bottleneck_fairly_and_fills_it() {
    let s = measure("dcqcn");
    assert!(s.jain >= 0.98, "DCQCN Jain index {:.4} < 0.98 (rates {:?})", s.jain, s.rates);
    assert!(s.utilization >= 0.95, "DCQCN utilization {:.2}% < 95%", s.utilization * 100.0);
}
