//! Congestion test after Marlin (Chen et al., section 7.3): flows join a bottleneck one by one and then
//! leave one by one; at every step the active flows share the bottleneck evenly and keep it full.
//!
//! Setting: a star of 5 hosts around `sw0`, every link 100 Gbps and 1 us, as Marlin's tester (every flow
//! forwarded through one switch to the same destination port). Flow `i` (0..4) runs from host `i + 1` to
//! host 0 over `[i P, (7 - i) P)`, so the seven phases of length `P` have 1, 2, 3, 4, 3, 2, 1 active
//! flows, and the bottleneck is `sw0`'s port towards host 0 (port 0). A star rather than a dumbbell: one
//! switch hop as in Marlin, and the shortest base RTT (about 4.2 us, a bandwidth-delay product of about
//! 52 KB). The fabric is lossless (PFC on, the default), so the figures measure the congestion
//! controller, not loss recovery.
//!
//! Per phase, over its last half (the first half is left for convergence), from throughput samples every
//! 100 us:
//! - each active flow's goodput (acknowledged payload) as a share of the fair rate `capacity / n`, where
//!   the payload capacity of the bottleneck is `100 Gbps x 1000 / 1082` (1000 B payload and 82 B headers
//!   per packet on the wire);
//! - the bottleneck's utilization: its transmitted wire bytes over `rate x window`.
//!
//! Asserted for DCTCP, DCQCN, HPCC, Swift and Bolt: every active flow within 10% of the fair rate and
//! utilization at least 90% in every phase, and no drops. TIMELY is known not to converge to a fair share
//! (its RTT-gradient rule has infinitely many fixed points; Zhu et al., CoNEXT 2016): its figures are
//! printed and only that every active flow makes progress in every phase is asserted.
//!
//! Scenario settings, per algorithm (each algorithm's own parameters are its defaults unless said):
//! - Phase length: 20 ms, except DCQCN 150 ms. DCQCN's default rate recovery is timer-driven (one step of
//!   at most `R_HAI` = 200 Mb/s per 300 us), so a flow left alone needs tens of milliseconds to take back
//!   the bandwidth others released.
//! - DCTCP marks on enqueue: DCTCP marks a packet when the queue it finds on arrival exceeds `K`
//!   (Alizadeh et al., SIGCOMM 2010, section 3.1). With the switch default, marking at dequeue, DCTCP
//!   settles into unequal splits (see [`dctcp_with_dequeue_marking_shares_fairly_as_flows_join_and_leave`]).
//! - HPCC: `rate_ai` = 1 Gb/s instead of 40 Mb/s. HPCC's guidance is that the additive increase of the
//!   `N` flows sharing a link stays below `(1 - eta) BDP`, i.e. `rate_ai <= (1 - eta) C / N`; the default
//!   provisions for `N` = 125 flows, which makes the additive increase, the only part of HPCC that moves
//!   the flows towards equal shares, about 0.2% of the window per round trip here: with the default, a
//!   flow is still 26% below its fair rate after 10 ms. 1 Gb/s provisions for `N` = 5, above this test's
//!   4 flows.
//! - Swift keeps its default 25 us base target, sized for real NIC stacks: it is fair and fills the link
//!   here, with a standing queue of about 220 KB (about 18 us, set by the target delay).
//! - Bolt runs with its switch defaults (10 KB notification threshold) and 60 ns of host transmit jitter,
//!   see [`bolt_shares_fairly_as_flows_join_and_leave`].

mod common;

use common::{bytes_in, port, series, star, time, Run};
use sluice_core::{Time, PS_PER_S};
use sluice_sim::{MarkAt, Observe, SimOutput, StopRule, SwitchConfig};

/// Flows, each from its own sender.
const FLOWS: u32 = 4;
/// Phases: `FLOWS` joining, then `FLOWS - 1` leaving.
const PHASES: u32 = 2 * FLOWS - 1;
/// Bottleneck rate (bit/s).
const RATE: f64 = 100e9;
/// Payload and wire bytes of a full data packet (the default link settings).
const PAYLOAD: f64 = 1000.0;
const WIRE: f64 = 1082.0;
/// Largest relative deviation of a flow's goodput from the fair rate.
const FAIRNESS_TOLERANCE: f64 = 0.10;
/// Smallest bottleneck utilization.
const MIN_UTILIZATION: f64 = 0.90;
/// The bottleneck: `sw0` is node `FLOWS + 1` (after the hosts), and its port 0 leads to host 0.
const BOTTLENECK: (u32, u16) = (FLOWS + 1, 0);

/// One algorithm's run of the test.
struct Case {
    algorithm: &'static str,
    /// `[cc.params]`.
    params: toml::Table,
    /// Phase length `P`.
    phase: Time,
    /// Where switches decide ECN marks.
    mark_at: MarkAt,
    /// Hosts' transmit jitter (`host.tx_jitter`).
    jitter: Time,
}

impl Case {
    /// `algorithm` with its default parameters and the switch's default marking point.
    fn new(algorithm: &'static str, phase: &str) -> Case {
        let mark_at = SwitchConfig::default().ecn.mark_at;
        Case { algorithm, params: toml::Table::new(), phase: time(phase), mark_at, jitter: 0 }
    }
}

/// What one phase measured.
struct Phase {
    /// Active flows, by id.
    active: Vec<u32>,
    /// Goodput of each active flow (bit/s).
    rates: Vec<f64>,
    /// Bottleneck utilization.
    utilization: f64,
}

impl Phase {
    /// The fair goodput of each active flow.
    fn fair(&self) -> f64 {
        RATE * PAYLOAD / WIRE / self.active.len() as f64
    }

    /// Each active flow's goodput over the fair rate.
    fn shares(&self) -> Vec<f64> {
        self.rates.iter().map(|r| r / self.fair()).collect()
    }
}

/// Flows active during phase `k` (`[k P, (k + 1) P)`): flow `i` runs over `[i P, (7 - i) P)`.
fn active(k: u32) -> Vec<u32> {
    (0..=k.min(PHASES - 1 - k)).collect()
}

/// Runs `case` through the seven phases.
fn simulate(case: &Case) -> SimOutput {
    let mut run = Run::new(star(FLOWS + 1, "100Gbps", "1us"), case.algorithm).with_needs();
    run.params = case.params.clone();
    run.switch.ecn.mark_at = case.mark_at;
    run.host.tx_jitter = case.jitter;
    for i in 0..FLOWS {
        run = run.long_flow(i + 1, 0, i as Time * case.phase, (PHASES - i) as Time * case.phase);
    }
    let end = PHASES as Time * case.phase;
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe = Observe {
        throughput_flows: (0..FLOWS).collect(),
        throughput_ports: vec![BOTTLENECK],
        sample_interval: time("100us"),
        ..Observe::default()
    };
    run.run()
}

/// Phase `k`'s figures over its last half.
fn measure(out: &SimOutput, phase: Time, k: u32) -> Phase {
    let to = (k + 1) as Time * phase;
    let from = to - phase / 2;
    let seconds = (to - from) as f64 / PS_PER_S as f64;
    let active = active(k);
    let rates =
        active.iter().map(|i| bytes_in(series(out, &format!("flow {i}")), from, to) as f64 * 8.0 / seconds).collect();
    let tx = bytes_in(series(out, &port(out, "sw0", BOTTLENECK.1).label()), from, to);
    Phase { active, rates, utilization: tx as f64 * 8.0 / (RATE * seconds) }
}

/// Prints one row per phase.
fn print_table(case: &Case, out: &SimOutput, phases: &[Phase]) {
    let bottleneck = port(out, "sw0", BOTTLENECK.1);
    let needs = sluice_cc::lookup(case.algorithm).expect("algorithm registered").needs;
    let marking = if needs.ecn || needs.cnp { format!(", ECN marks at {:?}", case.mark_at) } else { String::new() };
    println!(
        "{}{marking}: phase {} ms, measured over its last half; bottleneck max queue {} B, avg queue {:.0} B, \
         ECN marks {}; PFC pauses {}, drops {}",
        case.algorithm,
        case.phase as f64 / 1e9,
        bottleneck.max_queue,
        bottleneck.avg_queue,
        bottleneck.ecn_marks,
        out.run.pfc_pauses,
        out.run.drops,
    );
    println!("  phase  flows  goodput per flow (Gbps)        share of fair rate            utilization");
    for (k, p) in phases.iter().enumerate() {
        let rates: Vec<String> = p.rates.iter().map(|r| format!("{:6.2}", r / 1e9)).collect();
        let shares: Vec<String> = p.shares().iter().map(|s| format!("{s:5.3}")).collect();
        println!(
            "  {k:5}  {:5}  {:<30} {:<29} {:6.2}%",
            p.active.len(),
            rates.join(" "),
            shares.join(" "),
            p.utilization * 100.0
        );
    }
}

/// Runs `case`, prints its table and returns the phases.
fn run_case(case: &Case) -> Vec<Phase> {
    let out = simulate(case);
    let phases: Vec<Phase> = (0..PHASES).map(|k| measure(&out, case.phase, k)).collect();
    print_table(case, &out, &phases);
    assert_eq!(out.run.drops, 0, "{}: the lossless fabric dropped packets", case.algorithm);
    phases
}

/// Every violation of the fairness and utilization bounds.
fn violations(phases: &[Phase]) -> Vec<String> {
    let mut found = Vec::new();
    for (k, p) in phases.iter().enumerate() {
        for (flow, share) in p.active.iter().zip(p.shares()) {
            if (share - 1.0).abs() > FAIRNESS_TOLERANCE {
                found.push(format!("phase {k}: flow {flow} at {share:.3} of its fair rate"));
            }
        }
        if p.utilization < MIN_UTILIZATION {
            found.push(format!("phase {k}: utilization {:.2}%", p.utilization * 100.0));
        }
    }
    found
}

/// Asserts fair shares and a full bottleneck in every phase of `case`.
fn check(case: Case) {
    let found = violations(&run_case(&case));
    assert!(found.is_empty(), "{}: {}", case.algorithm, found.join("; "));
}

#[test]
fn dctcp_shares_fairly_as_flows_join_and_leave() {
    check(Case { mark_at: MarkAt::Enqueue, ..Case::new("dctcp", "20ms") });
}

/// The switch default, dequeue marking, with DCTCP: two flows of equal RTT settle into lasting unequal
/// splits (star of 3 hosts, K = 30 KB: 79 / 13 Gbps for 100 ms; enqueue marking: 46 / 46 Gbps).
#[test]
#[ignore = "DCTCP with dequeue ECN marking settles into unequal splits (up to 0.71 / 1.41 of the fair rate here)"]
fn dctcp_with_dequeue_marking_shares_fairly_as_flows_join_and_leave() {
    check(Case::new("dctcp", "20ms"));
}

#[test]
fn dcqcn_shares_fairly_as_flows_join_and_leave() {
    check(Case::new("dcqcn", "150ms"));
}

#[test]
fn hpcc_shares_fairly_as_flows_join_and_leave() {
    // rate_ai <= (1 - eta) C / N with N = 5 >= the 4 flows here (see the module documentation).
    let mut params = toml::Table::new();
    params.insert("rate_ai".into(), "1Gbps".into());
    check(Case { params, ..Case::new("hpcc", "20ms") });
}

#[test]
fn swift_shares_fairly_as_flows_join_and_leave() {
    check(Case::new("swift", "20ms"));
}

/// Bolt's notifications and window increments are decided per packet against a queue threshold. Without
/// timing noise the packets of 4 flows fall into a fixed order at the switch and some flows keep finding
/// the queue above the threshold more often than others (0.87 / 1.16 of the fair rate with 4 flows); real
/// hosts' timing noise breaks such phase locks, so this case gives hosts up to 60 ns of transmit jitter
/// (below one packet's 86.6 ns serialization, so no reordering).
#[test]
fn bolt_shares_fairly_as_flows_join_and_leave() {
    check(Case { jitter: time("60ns"), ..Case::new("bolt", "20ms") });
}

/// TIMELY: figures printed; every active flow makes progress in every phase.
#[test]
fn timely_makes_progress_as_flows_join_and_leave() {
    let phases = run_case(&Case::new("timely", "20ms"));
    for (k, p) in phases.iter().enumerate() {
        for (flow, rate) in p.active.iter().zip(&p.rates) {
            assert!(*rate > 0.0, "timely: flow {flow} delivered nothing in phase {k}");
        }
    }
}
