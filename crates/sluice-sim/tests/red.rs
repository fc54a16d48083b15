//! RED/ECN marking follows `p(q) = Pmax (q - Kmin) / (Kmax - Kmin)` on Kmin < q <= Kmax (0 below, 1
//! above), checked on the formula itself and end to end on a queue whose length is known packet by
//! packet.
//!
//! The end-to-end setting: a star of 3 hosts at 100 Gbps; hosts 1 and 2 each send N = 4000 full packets
//! (4 MB) to host 0, starting at the same instant, at line rate. Every packet is 1082 wire bytes, so
//! every link carries one packet per T = 86.56 ns: in each step two packets reach the switch and one
//! leaves towards host 0, and the data queue there grows by exactly one packet (w = 1082 B) per step,
//! up to N w, then drains by one packet per step. That fixes the queue length each marking decision
//! sees, up to one packet for the order of simultaneous events (an arrival and a departure at the
//! same picosecond):
//!
//! - marking at enqueue: the two arrivals of step k (k = 0..N) see `(k - 1 + r) w` or `(k + r) w`,
//!   r = 0, 1 for the first and second;
//! - marking at dequeue: the departure of step k < N leaves behind between `(k - 1) w` and `(k + 1) w`;
//!   the N departures after the last arrival leave `(N - 1) w, ..., w, 0`.
//!
//! Marks are independent Bernoulli draws, so their count has mean `sum p(q_i)` and variance
//! `sum p(q_i) (1 - p(q_i))`; the test takes the lowest and highest mean over the one-packet
//! uncertainty and allows four standard deviations on either side. The thresholds (Kmin 500 KB, Kmax
//! 4.5 MB, Pmax 0.5) put most of the ramp in the linear region: about 1690 marks expected, standard
//! deviation 34.
//!
//! The packets must be ECN-capable while their senders ignore the marks: `none` does not ask for ECN,
//! so the senders run DCQCN with its minimum rate set to the line rate, which makes every rate cut a
//! no-op (`Rc = max(Rmin, Rc (1 - alpha/2))`) while the datapath still sets ECT and echoes marks. PFC
//! is off and the 32 MB buffer holds the 4.3 MB queue, so nothing pauses or drops the senders; the
//! test checks both, and that both flows finish exactly at line rate.

mod common;

use common::{port, star, time, Run};
use sluice_core::serialization_ps;
use sluice_sim::{EcnThresholds, MarkAt, SimOutput};

const PACKETS: u64 = 4000;
const PAYLOAD: u64 = 1000;
const WIRE: u64 = 1082;
const RATE: u64 = 100_000_000_000;

fn ramp(mark_at: MarkAt, thresholds: EcnThresholds, seed: u64) -> SimOutput {
    let mut run = Run::new(star(3, "100Gbps", "1us"), "dcqcn");
    run.params.insert("min_rate".into(), toml::Value::String("100Gbps".into()));
    run.switch.pfc.enabled = false;
    run.switch.ecn.mark_at = mark_at;
    run.switch.ecn.thresholds = vec![(RATE, thresholds)];
    run.seed = seed;
    run = run.flow(1, 0, PACKETS * PAYLOAD, time("10us")).flow(2, 0, PACKETS * PAYLOAD, time("10us"));
    let out = run.run();
    assert_eq!(out.run.drops, 0);
    assert_eq!(out.run.pfc_pauses, 0);
    assert_eq!(port(&out, "sw0", 0).max_queue, PACKETS * WIRE, "the queue did not ramp one packet per step");
    // Both flows are served at exactly half the line rate: the last packet of the later one leaves the
    // switch 2N packet times after the first arrived, so the senders never slowed down.
    let last = out.flows.iter().map(|f| f.fct().expect("finishes")).max().unwrap();
    let t = serialization_ps(WIRE, RATE);
    let ideal = out.flows[0].ideal_fct + PACKETS * t;
    assert!(last.abs_diff(ideal) <= t, "fct {last} ps, expected {ideal} ps: the senders reacted to marks");
    out
}

/// The expected mark count, as (lowest mean, highest mean, variance) over the one-packet uncertainty of
/// the queue lengths the decisions see (see the file comment).
fn expectation(mark_at: MarkAt, t: &EcnThresholds) -> (f64, f64, f64) {
    let p = |packets: u64| t.probability(packets * WIRE);
    let (mut low, mut high, mut variance) = (0.0, 0.0, 0.0);
    let mut add = |lo: u64, mid: u64, hi: u64| {
        low += p(lo).min(p(hi));
        high += p(lo).max(p(hi));
        variance += p(mid) * (1.0 - p(mid));
    };
    match mark_at {
        MarkAt::Enqueue => {
            for k in 0..PACKETS {
                for r in 0..2 {
                    let seen = k + r;
                    add(seen.saturating_sub(1), seen, seen);
                }
            }
        }
        MarkAt::Dequeue => {
            for k in 0..PACKETS {
                add(k.saturating_sub(1), k, k + 1);
            }
            for left in 0..PACKETS {
                add(left, left, left);
            }
        }
    }
    (low, high, variance)
}

fn check(mark_at: MarkAt, t: EcnThresholds, seed: u64) {
    let out = ramp(mark_at, t, seed);
    let marks = port(&out, "sw0", 0).ecn_marks;
    let (low, high, variance) = expectation(mark_at, &t);
    let sd = variance.sqrt();
    let mid = (low + high) / 2.0;
    let z = if sd > 0.0 { (marks as f64 - mid) / sd } else { 0.0 };
    println!(
        "{mark_at:?}, Kmin {} B, Kmax {} B, Pmax {}, seed {seed}: {marks} marks, expected {low:.1}..{high:.1} \
         (sd {sd:.1}, z {z:+.2})",
        t.kmin, t.kmax, t.pmax
    );
    assert_eq!(out.counters.ecn_marks, marks, "marks at other ports");
    let (lo, hi) = (low - 4.0 * sd, high + 4.0 * sd);
    assert!(
        (lo..=hi).contains(&(marks as f64)),
        "{mark_at:?}: {marks} marks outside {lo:.1}..{hi:.1} (expected {mid:.1}, sd {sd:.1})"
    );
}

#[test]
fn probability_is_linear_between_the_thresholds() {
    let t = EcnThresholds { kmin: 100_000, kmax: 500_000, pmax: 0.2 };
    assert_eq!(t.probability(0), 0.0);
    assert_eq!(t.probability(100_000), 0.0);
    assert!((t.probability(200_000) - 0.05).abs() < 1e-12);
    assert!((t.probability(300_000) - 0.1).abs() < 1e-12);
    assert!((t.probability(500_000) - 0.2).abs() < 1e-12);
    assert_eq!(t.probability(500_001), 1.0);
    let step = EcnThresholds::dctcp_for_rate(RATE);
    assert_eq!((step.kmin, step.kmax, step.pmax), (300_000, 300_000, 1.0));
    assert_eq!(step.probability(300_000), 0.0);
    assert_eq!(step.probability(300_001), 1.0);
}

#[test]
fn red_marks_match_the_ramp_expectation_at_enqueue() {
    let t = EcnThresholds { kmin: 500_000, kmax: 4_500_000, pmax: 0.5 };
    for seed in [1, 2] {
        check(MarkAt::Enqueue, t, seed);
    }
}

#[test]
fn red_marks_match_the_ramp_expectation_at_dequeue() {
    let t = EcnThresholds { kmin: 500_000, kmax: 4_500_000, pmax: 0.5 };
    for seed in [1, 2] {
        check(MarkAt::Dequeue, t, seed);
    }
}

/// A single threshold (DCTCP style, Pmax 1) marks deterministically: exactly the decisions that see
/// more than K bytes, up to the one-packet ordering uncertainty.
#[test]
fn step_threshold_marks_every_packet_above_k() {
    let t = EcnThresholds { kmin: 1_000_000, kmax: 1_000_000, pmax: 1.0 };
    for mark_at in [MarkAt::Enqueue, MarkAt::Dequeue] {
        check(mark_at, t, 1);
    }
}
