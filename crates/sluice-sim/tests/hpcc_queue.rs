//! HPCC keeps the bottleneck queue near zero in steady state while running the link near its target
//! utilization `eta` (Li et al., SIGCOMM 2019: HPCC controls inflight bytes so that the bottleneck runs at
//! `eta` = 95% with the queue drained).
//!
//! Setting: a star around `sw0`, every link 100 Gbps and 1 us; `n` long HPCC flows (hosts `1..=n` to host
//! 0, started 10 us apart) share `sw0`'s port towards host 0, with HPCC's default parameters and INT
//! stamping on. The first `WARMUP` (5 ms) is left for the flows' line-rate start and convergence; the
//! steady state is the window `(WARMUP, END]` (20 ms).
//!
//! Figures over the steady-state window:
//! - the exact time-averaged queue: the simulation is deterministic, so a run stopped at `WARMUP` is the
//!   prefix of the run stopped at `END`, and `(avg_END x END - avg_WARMUP x WARMUP) / (END - WARMUP)` is the
//!   average over the window alone ([`PortRecord::avg_queue`] averages from time 0);
//! - the queue sampled every `SAMPLE` (1.08656 us, one link delay plus one data packet's serialization):
//!   a data byte a sender's NIC starts at `t` joins the bottleneck queue at `t + SAMPLE`, so the queue at
//!   sample `k` is what the senders had started by sample `k - 1` less what the bottleneck had started by
//!   sample `k` (up to a packet per flow when an event falls on a sample instant);
//! - utilization: the bottleneck's transmitted wire bytes over `rate x window`.
//!
//! Asserted, for 2 and 4 flows: the time-averaged queue below `n` full packets (a packet of every flow
//! waiting at all times would already be a standing queue, which HPCC's `qlen / (B T)` term drains), no
//! sampled queue above `n` packets (at most one packet of each flow waiting: paced flows colliding, no
//! standing queue), the sampled mean within 10% (or 100 B) of the exact average (the sampling sees the
//! queue the port records), utilization within `[0.90, 0.99]` around `eta`, no drops.
//!
//! [`PortRecord::avg_queue`]: sluice_results::PortRecord::avg_queue

mod common;

use common::{bytes_in, port, series, star, time, Run};
use sluice_core::{Time, PS_PER_MS, PS_PER_S};
use sluice_sim::{Observe, SimOutput, StopRule};

/// End of the start-up transient.
const WARMUP: Time = 5 * PS_PER_MS;
/// End of the run.
const END: Time = 25 * PS_PER_MS;
/// Wire bytes of a full data packet (1000 B payload + 82 B headers).
const WIRE: u64 = 1082;
/// Bottleneck rate, bit/s.
const RATE: u64 = 100_000_000_000;
/// Link delay plus a data packet's serialization at 100 Gbps (86.56 ns), in picoseconds.
const SAMPLE: Time = 1_000_000 + WIRE as Time * 8 * PS_PER_S / RATE as Time;

/// What the steady-state window measured.
struct Steady {
    /// Exact time-averaged queue (bytes).
    avg_queue: f64,
    /// Mean of the sampled queue (bytes).
    sampled_mean: f64,
    /// Largest sampled queue (bytes).
    sampled_max: u64,
    /// Bottleneck utilization.
    utilization: f64,
}

/// `n` HPCC flows into host 0, stopped at `end`; with `sample`, the senders' NICs and the bottleneck port
/// are sampled every [`SAMPLE`].
fn run(n: u32, end: Time, sample: bool) -> SimOutput {
    let mut run = Run::new(star(n + 1, "100Gbps", "1us"), "hpcc").with_needs();
    for i in 0..n {
        run = run.long_flow(i + 1, 0, time("10us") * (i as Time + 1), END + time("1ms"));
    }
    run.stop = StopRule { duration: Some(end), time_limit: end };
    if sample {
        // Hosts are nodes 0..=n, `sw0` is node n + 1; its port 0 leads to host 0.
        let mut ports: Vec<(u32, u16)> = (1..=n).map(|h| (h, 0)).collect();
        ports.push((n + 1, 0));
        run.observe = Observe { throughput_ports: ports, sample_interval: SAMPLE, ..Observe::default() };
    }
    run.run()
}

/// Running totals of a series' per-interval bytes: entry `k` is the bytes up to sample `k + 1`. Only
/// whole intervals count: the run's last, partial interval would break the one-interval alignment.
fn cumulative(out: &SimOutput, label: &str) -> Vec<u64> {
    series(out, label)
        .samples
        .iter()
        .filter(|(time, _)| time % SAMPLE == 0)
        .scan(0u64, |total, (_, bytes)| {
            *total += bytes;
            Some(*total)
        })
        .collect()
}

/// The queue of `sw0:p0` at each sample instant after `from`, from the senders' and the bottleneck's
/// transmitted bytes (see the module documentation).
fn sampled_queue(out: &SimOutput, n: u32, from: Time) -> Vec<u64> {
    let senders: Vec<Vec<u64>> = (1..=n).map(|h| cumulative(out, &format!("h{h}:p0"))).collect();
    let bottleneck = cumulative(out, "sw0:p0");
    let first = (from / SAMPLE) as usize;
    (first.max(1)..bottleneck.len())
        .map(|k| {
            let arrived: u64 = senders.iter().map(|c| c[k - 1]).sum();
            arrived.saturating_sub(bottleneck[k])
        })
        .collect()
}

/// The steady-state figures of `n` flows, printed.
fn steady(n: u32) -> Steady {
    let warm = run(n, WARMUP, false);
    let out = run(n, END, true);
    assert_eq!(out.run.drops, 0, "the lossless fabric dropped packets");
    let (early, whole) = (port(&warm, "sw0", 0), port(&out, "sw0", 0));
    let avg_queue = (whole.avg_queue * END as f64 - early.avg_queue * WARMUP as f64) / (END - WARMUP) as f64;
    let queue = sampled_queue(&out, n, WARMUP);
    let sampled_mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    let sampled_max = queue.iter().copied().max().unwrap_or(0);
    // Whole sampling intervals: from the last sample at or before WARMUP to the last sample of the run.
    let to = END / SAMPLE * SAMPLE;
    let from = WARMUP / SAMPLE * SAMPLE;
    let tx = bytes_in(series(&out, "sw0:p0"), from, to);
    let utilization = tx as f64 * 8.0 * PS_PER_S as f64 / (RATE as f64 * (to - from) as f64);
    println!(
        "hpcc, {n} flows, steady state ({} ms, {} ms]: time-averaged queue {avg_queue:.0} B, sampled queue mean \
         {sampled_mean:.0} B and max {sampled_max} B over {} samples, utilization {:.2}%; whole run: max queue {} B, \
         avg queue {:.0} B, PFC pauses {}",
        WARMUP / PS_PER_MS,
        END / PS_PER_MS,
        queue.len(),
        utilization * 100.0,
        whole.max_queue,
        whole.avg_queue,
        out.run.pfc_pauses,
    );
    Steady { avg_queue, sampled_mean, sampled_max, utilization }
}

/// Asserts a near-empty queue and utilization near `eta` for `n` flows.
fn check(n: u32) {
    let s = steady(n);
    let packets = n as u64 * WIRE;
    assert!(
        s.avg_queue < packets as f64,
        "{n} flows: time-averaged queue {:.0} B is not below {n} packets ({packets} B)",
        s.avg_queue
    );
    assert!(
        (s.sampled_mean - s.avg_queue).abs() <= (0.1 * s.avg_queue).max(100.0),
        "{n} flows: sampled queue mean {:.0} B does not match the time average {:.0} B",
        s.sampled_mean,
        s.avg_queue
    );
    assert!(s.sampled_max <= packets, "{n} flows: sampled queue reached {} B, above {n} packets", s.sampled_max);
    assert!(
        (0.90..=0.99).contains(&s.utilization),
        "{n} flows: utilization {:.2}% outside [90%, 99%] (eta 95%)",
        s.utilization * 100.0
    );
}

#[test]
fn two_hpcc_flows_keep_the_queue_near_zero_at_eta() {
    check(2);
}

#[test]
fn four_hpcc_flows_keep_the_queue_near_zero_at_eta() {
    check(4);
}
