//! BBR v1 driven by hand-built ACK reports, then by a small model of a paced sender behind one bottleneck;
//! expected values are derived in the comments.

mod common;

use std::collections::VecDeque;
use std::f64::consts::LN_2;

use common::{flow, loss, trace, us, G100, MSS};
use sluice_cc::bbr::{self, Bbr, BbrConfig, BbrMode, CYCLE_LEN};
use sluice_cc::{
    Ack, CongestionControl, Control, Ctx, Decisions, Events, FlowInfo, Loss, LossKind, ReportEvery, ReportPolicy,
};
use sluice_core::{Rate, Time, PS_PER_MS, PS_PER_S};

const GBPS: Rate = 1_000_000_000;
/// The flows' RTT and base RTT: 10 us.
const RTT: Time = 10_000_000;
const HIGH_GAIN: f64 = 2.0 / LN_2;
const GAINS: [f64; CYCLE_LEN] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// BtlBw of the PROBE_BW fixtures: 80 Gb/s x 10 us = 100 000 B, a BDP of 100 packets.
const BW: Rate = 80 * GBPS;

fn started_on(config: BbrConfig, flow: &FlowInfo) -> (Bbr, Decisions) {
    let mut cc = Bbr::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(flow, &mut ctx);
    (cc, *ctx.decisions())
}

/// One ACK report with an RTT sample and, if given, a delivery-rate sample.
fn report(acked: u64, snd_una: u64, snd_nxt: u64, in_flight: u64, rtt: Time, rate: Option<Rate>) -> Ack<'static> {
    let mut ack = Ack::single(acked, acked.div_ceil(MSS) as u32, false, Some(rtt), snd_una, snd_nxt, in_flight, 0);
    ack.delivery_rate = rate;
    ack
}

fn deliver(cc: &mut Bbr, now: Time, ack: &Ack<'_>) -> Decisions {
    let mut ctx = Ctx::new(now);
    cc.on_ack(ack, &mut ctx);
    *ctx.decisions()
}

/// `n` full packets, in bytes.
fn packets(n: u64) -> u64 {
    n * MSS
}

/// Hand-fed ACK reports: each acknowledges `acked` bytes and reports `ahead` bytes sent beyond the new ACK
/// point; `in_flight` is reported as given.
struct Feed {
    cc: Bbr,
    una: u64,
}

impl Feed {
    fn new(config: BbrConfig) -> Feed {
        Feed { cc: started_on(config, &flow(G100)).0, una: 0 }
    }

    fn ack(&mut self, now: Time, acked: u64, ahead: u64, in_flight: u64, rtt: Time, rate: Option<Rate>) -> Decisions {
        self.una += acked;
        deliver(&mut self.cc, now, &report(acked, self.una, self.una + ahead, in_flight, rtt, rate))
    }

    /// An ACK that ends a round: it acknowledges data sent after the previous ACK (that ACK reported
    /// nothing sent beyond its ACK point).
    fn round(&mut self, now: Time, in_flight: u64, rate: Rate) -> Decisions {
        self.ack(now, 10 * MSS, 0, in_flight, RTT, Some(rate))
    }

    /// STARTUP at 80 Gb/s for 4 rounds (growth only in round 1: DRAIN at round 4), then an ACK at
    /// `4 RTT + 1 us` with the queue drained: PROBE_BW. Returns that ACK's decisions.
    fn probe_bw(config: BbrConfig) -> (Feed, Decisions) {
        let mut feed = Feed::new(config);
        for r in 1..=4 {
            feed.round(r * RTT, 1_000_000, BW);
        }
        assert_eq!(feed.cc.mode(), BbrMode::Drain);
        let d = feed.round(4 * RTT + us(1), 0, BW);
        assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
        (feed, d)
    }
}

#[test]
fn starts_with_ten_packets_paced_at_high_gain_over_the_base_rtt() {
    let (cc, d) = started_on(BbrConfig::default(), &flow(G100));
    assert_eq!(d.cwnd, Some(10_000));
    // 2/ln 2 x 10 packets x 8000 bit / 10 us = 2.885 x 8 Gb/s.
    assert_eq!(d.rate, Some((HIGH_GAIN * 8e9) as Rate));
    assert_eq!(cc.events(), Events::ACK | Events::LOSS);
    assert_eq!(cc.mode(), BbrMode::Startup);
    assert_eq!(cc.report_policy(), ReportPolicy::default(), "per-ACK reports in STARTUP");
    assert_eq!((cc.rtprop(), cc.btl_bw()), (Some(RTT), 0));
    let names: Vec<&str> = trace(&cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["btl_bw_bps", "rtprop_ns", "pacing_gain", "pacing_rate_bps", "cwnd", "state"]);
    assert_eq!(trace(&cc)[1].1, RTT as f64 / 1000.0, "the base RTT in ns");
    assert_eq!(trace(&cc)[2].1, HIGH_GAIN);
    assert_eq!(trace(&cc)[5].1, 0.0);

    // Without a base RTT: a nominal 1 ms (80 Mb/s x 2.885), then the first RTT sample sets it again.
    let (mut cc, d) = started_on(BbrConfig::default(), &FlowInfo { base_rtt: 0, ..flow(G100) });
    assert_eq!(d.rate, Some((HIGH_GAIN * 8e7) as Rate));
    assert_eq!(cc.rtprop(), None);
    let d = deliver(&mut cc, RTT, &report(MSS, MSS, 10 * MSS, 9 * MSS, RTT, Some(GBPS)));
    assert_eq!(d.rate, Some((HIGH_GAIN * 8e9) as Rate), "the 1 Gb/s sample paces slower: not taken");
    assert_eq!(cc.rtprop(), Some(RTT));
}

#[test]
fn startup_doubles_the_window_each_round_and_paces_at_high_gain() {
    let flow = FlowInfo { line_rate: 400 * GBPS, ..flow(G100) };
    let mut cc = started_on(BbrConfig::default(), &flow).0;
    // An ACK-clocked sender: each ACK acknowledges one packet of the oldest flight and the sender then
    // fills the window; a flight of F bytes is delivered in one RTT, so its samples read F / RTT.
    let (mut una, mut nxt, mut now) = (0, 10 * MSS, 0);
    for round in 1..=4 {
        let flight = nxt - una;
        let end = nxt;
        assert_eq!(cc.cwnd(), flight);
        let rate = flight * 8 * PS_PER_S / RTT;
        while una < end {
            now += RTT / (flight / MSS);
            una += MSS;
            deliver(&mut cc, now, &report(MSS, una, nxt, nxt - una, RTT, Some(rate)));
            while nxt + MSS <= una + cc.cwnd() {
                nxt += MSS;
            }
        }
        // Each acknowledged byte adds one (the target, 2.885 x F plus the quantum, stays above 2F).
        assert_eq!(cc.cwnd(), 2 * flight, "round {round}");
        assert_eq!(cc.rounds(), round, "a round starts with the first ACK of each flight");
        assert_eq!(cc.btl_bw(), rate);
        assert_eq!(cc.pacing_rate(), (HIGH_GAIN * rate as f64) as Rate);
        assert_eq!(cc.mode(), BbrMode::Startup);
    }
    assert_eq!(cc.cwnd(), 160 * MSS);
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_growth() {
    let mut feed = Feed::new(BbrConfig::default());
    // Round:    1   2   3   4   5   6   7 (Gb/s). Rounds 3, 5 and 6 grow less than 25% over the last
    // recorded growth (20, then 25); 25 is exactly 1.25 x 20 and resets the count; the third round
    // without growth (7) fills the pipe.
    let rates = [10, 20, 24, 25, 31, 31, 31];
    let full = [false, false, false, false, false, false, true];
    for (i, (rate, full)) in rates.iter().zip(full).enumerate() {
        feed.round((i as u64 + 1) * RTT, 1_000_000, rate * GBPS);
        assert_eq!(feed.cc.full_bw_reached(), full, "round {}", i + 1);
        let mode = if full { BbrMode::Drain } else { BbrMode::Startup };
        assert_eq!(feed.cc.mode(), mode, "round {}", i + 1);
    }
    // DRAIN: pacing at 1/2.885 of BtlBw, window gain still 2.885.
    assert_eq!(feed.cc.btl_bw(), 31 * GBPS);
    assert_eq!(feed.cc.pacing_rate(), (31e9 / HIGH_GAIN) as Rate);
    assert_eq!((feed.cc.pacing_gain(), feed.cc.cwnd_gain()), (1.0 / HIGH_GAIN, HIGH_GAIN));
    assert_eq!(trace(&feed.cc)[5].1, 1.0);
    // ACKs within a round do not count rounds: STARTUP's check runs at round starts only.
    let mut feed = Feed::new(BbrConfig::default());
    feed.ack(RTT, MSS, 100 * MSS, 1_000_000, RTT, Some(10 * GBPS));
    for i in 0..20 {
        feed.ack(RTT + i, MSS, 100 * MSS, 1_000_000, RTT, Some(10 * GBPS));
    }
    assert_eq!((feed.cc.rounds(), feed.cc.mode()), (1, BbrMode::Startup));
}

#[test]
fn drain_ends_when_in_flight_falls_to_the_bdp_and_probe_bw_asks_for_rtprop_reports() {
    let mut feed = Feed::new(BbrConfig::default());
    for r in 1..=4 {
        let d = feed.round(r * RTT, 1_000_000, BW);
        assert_eq!(d.report, None, "per-ACK reports through STARTUP and DRAIN");
    }
    assert_eq!(feed.cc.mode(), BbrMode::Drain);
    // inflight(1) = even(100 + 3 x 1) = 104 packets.
    assert_eq!(feed.cc.inflight_target(BW, 1.0), packets(104));
    feed.ack(4 * RTT + us(1), MSS, 0, packets(104) + 1, RTT, Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::Drain);
    let d = feed.ack(4 * RTT + us(2), MSS, 0, packets(104), RTT, Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
    let interval = ReportPolicy { every: ReportEvery::Interval(RTT), urgent_loss: true, urgent_ecn: false };
    assert_eq!(d.report, Some(interval));
    let phase = feed.cc.cycle_index();
    assert_ne!(phase, 1, "never starts in the 0.75 phase");
    assert_eq!(d.rate, Some((GAINS[phase] * BW as f64) as Rate));
    assert_eq!(feed.cc.cwnd_gain(), 2.0);
    assert_eq!(trace(&feed.cc)[5].1, 2.0);

    // Leaving STARTUP and DRAIN on one ACK when the queue is already small (Linux falls through).
    let mut feed = Feed::new(BbrConfig::default());
    for r in 1..=3 {
        feed.round(r * RTT, 1_000_000, BW);
    }
    feed.round(4 * RTT, packets(50), BW);
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
}

#[test]
fn probe_bw_start_phase_is_drawn_from_the_flow_id_never_the_drain_phase() {
    let start = |flow_id: u64| {
        let mut cc = started_on(BbrConfig::default(), &FlowInfo { flow_id, ..flow(G100) }).0;
        for r in 1..=4 {
            deliver(&mut cc, r * RTT, &report(MSS, r * MSS, r * MSS, 0, RTT, Some(BW)));
        }
        assert_eq!(cc.mode(), BbrMode::ProbeBw);
        cc.cycle_index()
    };
    let phases: Vec<usize> = (0..300).map(start).collect();
    let mut seen = [0; CYCLE_LEN];
    for p in &phases {
        seen[*p] += 1;
    }
    assert_eq!(seen[1], 0);
    for (p, n) in seen.iter().enumerate().filter(|(p, _)| *p != 1) {
        assert!(*n > 20, "phase {p} started {n} of 300 times");
    }
    assert_eq!(phases, (0..300).map(start).collect::<Vec<_>>(), "deterministic");
}

#[test]
fn probe_bw_cycles_the_gains_one_phase_per_rtprop_on_per_ack_reports() {
    let (mut feed, _) = Feed::probe_bw(BbrConfig::default());
    let t0 = 4 * RTT + us(1);
    let p0 = feed.cc.cycle_index();
    // The datapath keeps reporting every ACK, 4 ACKs per RTprop: the phase turns when RTprop has
    // elapsed since it began, at every 4th ACK.
    for k in 1..=64u64 {
        let now = t0 + k * RTT / 4;
        if k % 4 == 0 {
            // Just before the full RTprop: no change yet.
            feed.ack(now - 1, MSS, 0, packets(150), RTT, Some(BW));
            assert_eq!(feed.cc.cycle_index(), (p0 + (k as usize / 4) - 1) % CYCLE_LEN);
        }
        let d = feed.ack(now, MSS, 0, packets(150), RTT, Some(BW));
        let phase = (p0 + k as usize / 4) % CYCLE_LEN;
        assert_eq!(feed.cc.cycle_index(), phase, "ACK {k}");
        assert_eq!(feed.cc.pacing_gain(), GAINS[phase]);
        assert_eq!(feed.cc.pacing_rate(), (GAINS[phase] * BW as f64) as Rate, "ACK {k}");
        assert_eq!(d.report, None, "RTprop unchanged: no new report policy");
    }
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
}

#[test]
fn each_interval_report_closes_one_phase_and_rtprop_moves_redeclare() {
    let (mut feed, d) = Feed::probe_bw(BbrConfig::default());
    assert_eq!(d.report.map(|p| p.every), Some(ReportEvery::Interval(RTT)));
    let mut now = 4 * RTT + us(1);
    let mut phase = feed.cc.cycle_index();
    /// A report of 50 folded ACKs with their RTT samples.
    fn fold(una: u64, samples: &[Time]) -> Ack<'_> {
        let mut ack = report(50 * MSS, una, una, packets(150), *samples.last().unwrap(), Some(BW));
        ack.acks = 50;
        ack.acked_packets = 50;
        ack.rtt_samples = samples;
        ack
    }
    // Reports come a little after each interval (the first ACK of a period opens it): each closes a phase.
    for _ in 0..10 {
        now += RTT + 100_000;
        feed.una += 50 * MSS;
        let d = deliver(&mut feed.cc, now, &fold(feed.una, &[us(12), us(11), us(12)]));
        phase = (phase + 1) % CYCLE_LEN;
        assert_eq!((feed.cc.cycle_index(), d.report), (phase, None));
    }
    // A folded report's least sample lowers RTprop: 9.5 us is within 1/8 of the 10 us interval, so
    // reports stay as they are; phases now last min(RTprop, interval) = 9.5 us.
    now += RTT;
    feed.una += 50 * MSS;
    let d = deliver(&mut feed.cc, now, &fold(feed.una, &[us(12), 9_500_000, us(11)]));
    phase = (phase + 1) % CYCLE_LEN;
    assert_eq!((feed.cc.rtprop(), feed.cc.cycle_index(), d.report), (Some(9_500_000), phase, None));
    now += 9_500_000;
    feed.una += 50 * MSS;
    deliver(&mut feed.cc, now, &fold(feed.una, &[us(11)]));
    phase = (phase + 1) % CYCLE_LEN;
    assert_eq!(feed.cc.cycle_index(), phase);
    // 8 us is 20% below the interval: one report per 8 us is asked for.
    now += 9_500_000;
    feed.una += 50 * MSS;
    let d = deliver(&mut feed.cc, now, &fold(feed.una, &[us(8)]));
    assert_eq!(d.report, Some(ReportPolicy { every: ReportEvery::Interval(us(8)), ..ReportPolicy::default() }));
}

#[test]
fn steady_state_window_is_twice_the_bdp_plus_the_quantum() {
    for (quantum, base) in [(1, 204), (0, 200)] {
        let (mut feed, _) = Feed::probe_bw(BbrConfig { send_quantum_packets: quantum, ..BbrConfig::default() });
        let mut now = 4 * RTT + us(1);
        // Up from the 60 packets of DRAIN by what is acknowledged, then capped at the target.
        feed.ack(now, 100 * MSS, 0, packets(150), RTT, Some(BW));
        assert_eq!(feed.cc.cwnd(), packets(160));
        // 2 x 100 packets + 3 x quantum, rounded up to even; 2 more in the 1.25 phase.
        for _ in 0..2 * CYCLE_LEN {
            now += RTT;
            feed.ack(now, 100 * MSS, 0, packets(150), RTT, Some(BW));
            let want = if feed.cc.cycle_index() == 0 { base + 2 } else { base };
            assert_eq!(feed.cc.cwnd(), packets(want), "quantum {quantum}, phase {}", feed.cc.cycle_index());
            assert_eq!(trace(&feed.cc)[4].1, packets(want) as f64);
        }
        assert_eq!(feed.cc.cwnd_gain(), 2.0);
    }
}

#[test]
fn btl_bw_forgets_a_sample_ten_rounds_after_it() {
    let mut feed = Feed::new(BbrConfig::default());
    feed.round(RTT, 1_000_000, 50 * GBPS);
    feed.round(2 * RTT, 1_000_000, 100 * GBPS);
    assert_eq!((feed.cc.rounds(), feed.cc.btl_bw()), (2, 100 * GBPS));
    // The round-2 maximum counts through round 2 + 10 and is gone in round 13.
    for r in 3..=13 {
        feed.round(r * RTT, 1_000_000, 40 * GBPS);
        let want = if r <= 12 { 100 * GBPS } else { 40 * GBPS };
        assert_eq!(feed.cc.btl_bw(), want, "round {r}");
    }
    // A new maximum replaces it at once.
    feed.round(14 * RTT, 1_000_000, 45 * GBPS);
    assert_eq!(feed.cc.btl_bw(), 45 * GBPS);
}

#[test]
fn rtprop_keeps_the_minimum_for_ten_seconds_then_probe_rtt_holds_four_packets() {
    let (mut feed, _) = Feed::probe_bw(BbrConfig::default());
    let mut now = 5 * RTT;
    feed.ack(now, 100 * MSS, 0, packets(150), us(12), Some(BW));
    assert_eq!(feed.cc.rtprop(), Some(RTT), "a larger sample does not replace it");
    now += RTT;
    feed.ack(now, 100 * MSS, 0, packets(150), us(9), Some(BW));
    let t_min = now;
    now += RTT;
    feed.ack(now, 100 * MSS, 0, packets(150), us(11), Some(BW));
    assert_eq!(feed.cc.rtprop(), Some(us(9)));
    let cwnd = feed.cc.cwnd();
    // 2 x BDP at 80 Gb/s x 9 us = 180 packets, + 3, even: 184 (186 in the 1.25 phase).
    assert!(cwnd == packets(184) || cwnd == packets(186), "cwnd {cwnd}");

    // Exactly 10 s later the estimate is still valid; a picosecond later it expired: the sample
    // replaces it and PROBE_RTT starts, with the window at 4 packets and per-ACK reports.
    feed.ack(t_min + 10 * PS_PER_S, MSS, 0, packets(150), us(11), Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
    let cwnd = feed.cc.cwnd();
    let mut now = t_min + 10 * PS_PER_S + 1;
    let d = feed.ack(now, MSS, 0, packets(150), us(11), Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
    assert_eq!(feed.cc.rtprop(), Some(us(11)));
    assert_eq!(d.cwnd, Some(packets(4)));
    assert_eq!(d.report, Some(ReportPolicy::default()));
    assert_eq!((feed.cc.pacing_gain(), feed.cc.pacing_rate()), (1.0, BW));
    assert_eq!(feed.cc.prior_cwnd(), cwnd);
    assert_eq!(trace(&feed.cc)[5].1, 3.0);

    // In flight still above 4 packets: the hold has not begun. Samples of PROBE_RTT are app-limited and
    // leave BtlBw alone; its lower RTT samples lower RTprop.
    now += RTT;
    feed.ack(now, MSS, 0, packets(5), us(10), Some(BW / 20));
    assert_eq!((feed.cc.btl_bw(), feed.cc.rtprop()), (BW, Some(RTT)));
    // In flight down to 4 packets at t1: hold for 200 ms and one round (4 packets reported sent beyond).
    now += RTT;
    let t1 = now;
    feed.ack(t1, MSS, packets(4), packets(4), RTT, Some(BW / 20));
    let done = t1 + 200 * PS_PER_MS;
    // A round ends halfway; 200 ms have not passed.
    feed.ack(t1 + 100 * PS_PER_MS, packets(5), 0, packets(4), RTT, Some(BW / 20));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
    let d = feed.ack(done, MSS, 0, packets(4), RTT, Some(BW / 20));
    assert_eq!((feed.cc.mode(), d.cwnd), (BbrMode::ProbeRtt, None), "not past the deadline yet");
    assert_eq!(feed.cc.cwnd(), packets(4));
    // Past it: back to PROBE_BW with the saved window (capped at the target for RTprop 10 us: 204/206).
    let d = feed.ack(done + 1, MSS, 0, packets(4), RTT, Some(BW / 20));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
    assert_eq!(d.report, Some(ReportPolicy { every: ReportEvery::Interval(RTT), ..ReportPolicy::default() }));
    let target = if feed.cc.cycle_index() == 0 { 206 } else { 204 };
    assert_eq!(d.cwnd, Some(packets(target).min(cwnd + MSS)));
    assert_eq!(feed.cc.btl_bw(), BW);

    // The estimate's age restarted at the exit: no PROBE_RTT 10 s after it, but one after that.
    let exit = done + 1;
    feed.ack(exit + 10 * PS_PER_S, MSS, 0, packets(150), RTT, Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
    feed.ack(exit + 10 * PS_PER_S + 1, MSS, 0, packets(150), RTT, Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
}

#[test]
fn probe_rtt_waits_for_a_round_after_the_hold_time() {
    let (mut feed, _) = Feed::probe_bw(BbrConfig::default());
    let t = 10 * PS_PER_S + 1;
    feed.ack(t, MSS, 0, packets(150), RTT, Some(BW));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
    // A loss does not lift the PROBE_RTT window (in flight less the lost packet would be 99 packets).
    let mut ctx = Ctx::new(t);
    feed.cc.on_loss(&loss(LossKind::FastRetransmit, packets(100), feed.una + packets(100)), &mut ctx);
    assert_eq!((ctx.decisions().cwnd, feed.cc.cwnd()), (None, packets(4)));
    feed.ack(t + RTT, MSS, packets(8), packets(4), RTT, None);
    // 300 ms later, but no round ended (the ACK point stays within the 8 packets reported sent).
    feed.ack(t + 300 * PS_PER_MS, MSS, packets(7), packets(4), RTT, None);
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
    feed.ack(t + 301 * PS_PER_MS, packets(8), 0, packets(4), RTT, None);
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw);
}

#[test]
fn probe_rtt_returns_to_startup_when_the_pipe_was_never_full() {
    let mut feed = Feed::new(BbrConfig::default());
    feed.round(RTT, 1_000_000, BW);
    feed.round(10 * PS_PER_S + 1, packets(3), BW);
    assert_eq!(feed.cc.mode(), BbrMode::ProbeRtt);
    feed.round(10 * PS_PER_S + 2, packets(3), BW);
    feed.round(10 * PS_PER_S + 300 * PS_PER_MS, packets(3), BW);
    assert_eq!(feed.cc.mode(), BbrMode::Startup);
    assert_eq!(feed.cc.pacing_gain(), HIGH_GAIN);
}

#[test]
fn timeout_restarts_from_one_packet_and_restores_the_window_when_repaired() {
    let (mut feed, _) = Feed::probe_bw(BbrConfig { send_quantum_packets: 0, ..BbrConfig::default() });
    let mut now = 5 * RTT;
    feed.ack(now, 300 * MSS, 0, packets(150), RTT, Some(BW));
    let cwnd = feed.cc.cwnd();
    assert!(cwnd == packets(200) || cwnd == packets(202));
    // Timeout with 150 packets outstanding beyond the ACK point.
    let una = feed.una;
    let mut ctx = Ctx::new(now);
    feed.cc.on_loss(&loss(LossKind::Timeout, packets(150), una + packets(150)), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(MSS));
    assert!(feed.cc.in_recovery());
    assert_eq!(feed.cc.prior_cwnd(), cwnd);
    // Slow start: each acknowledged byte adds one, above the floor of 4 packets.
    for (k, n) in [4, 5, 6, 7].into_iter().enumerate() {
        now += RTT;
        let d = feed.ack(now, MSS, packets(150) - (k as u64 + 1) * MSS, packets(1), RTT, Some(BW));
        assert_eq!(d.cwnd, Some(packets(n)));
    }
    // The ACK point reaches the data outstanding at the timeout: the saved window is back.
    now += RTT;
    let rest = una + packets(150) - feed.una;
    feed.ack(now, rest, 0, 0, RTT, Some(BW));
    assert!(!feed.cc.in_recovery());
    assert_eq!(feed.cc.cwnd(), feed.cc.inflight_target(BW, 2.0));
    assert_eq!(feed.cc.mode(), BbrMode::ProbeBw, "loss does not change the model's state");
    assert_eq!(feed.cc.btl_bw(), BW);
}

#[test]
fn fast_retransmit_conserves_packets_for_a_round_then_restores() {
    let (mut feed, _) = Feed::probe_bw(BbrConfig { send_quantum_packets: 0, ..BbrConfig::default() });
    let mut now = 5 * RTT;
    feed.ack(now, 300 * MSS, 0, packets(150), RTT, Some(BW));
    let cwnd = feed.cc.cwnd();
    let una = feed.una;
    let end = una + packets(150);
    let mut ctx = Ctx::new(now);
    feed.cc.on_loss(&loss(LossKind::FastRetransmit, packets(150), end), &mut ctx);
    // The window falls to what is in flight less the lost packet.
    assert_eq!(ctx.decisions().cwnd, Some(packets(149)));
    // Packet conservation within the round: max(cwnd, in_flight + acked).
    now += us(1);
    feed.ack(now, MSS, packets(149) - MSS, packets(140), RTT, Some(BW));
    assert_eq!(feed.cc.cwnd(), packets(149));
    now += us(1);
    feed.ack(now, 2 * MSS, packets(149) - 3 * MSS, packets(150), RTT, Some(BW));
    assert_eq!(feed.cc.cwnd(), packets(152));
    // Another loss signal within the recovery takes its packets off.
    let mut ctx = Ctx::new(now);
    feed.cc.on_loss(&Loss { count: 2, ..loss(LossKind::Nack, packets(150), end) }, &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(packets(150)));
    // The round ends (the ACK point passes the data outstanding at the loss): conservation is over and the
    // window grows toward the target; the repair ended too, so the saved window is back.
    now += us(1);
    let rest = end - feed.una + MSS;
    feed.ack(now, rest, 0, packets(100), RTT, Some(BW));
    assert!(!feed.cc.in_recovery());
    assert_eq!(feed.cc.prior_cwnd(), cwnd);
    assert_eq!(feed.cc.cwnd(), feed.cc.inflight_target(BW, 2.0));
}

#[test]
fn registry_entry_and_parameters() {
    let algorithm = &bbr::ALGORITHM;
    assert_eq!((algorithm.name, algorithm.control), ("bbr", Control::WindowAndRate));
    assert_eq!(algorithm.needs, sluice_cc::Needs::default());
    let params = |text: &str| -> toml::Table { text.parse().unwrap() };
    let build_err = |text: &str| match (algorithm.build)(&params(text), G100) {
        Ok(_) => panic!("`{text}` was accepted"),
        Err(e) => e,
    };
    let e = build_err("probe_gain = 1.5");
    assert_eq!(e.key.as_deref(), Some("probe_gain"));
    assert!(e.message.contains("cycle_gains") && e.message.contains("min_rtt_window"), "{e}");
    for (text, key) in [
        ("high_gain = 0.0", "high_gain"),
        ("cwnd_gain = \"2\"", "cwnd_gain"),
        ("cycle_gains = [1.25, 0.75]", "cycle_gains"),
        ("cycle_gains = [1.25, -0.75, 1, 1, 1, 1, 1, 1]", "cycle_gains"),
        ("min_rtt_window = \"0s\"", "min_rtt_window"),
        ("min_rtt_window = 10", "min_rtt_window"),
        ("full_bw_growth = 0.9", "full_bw_growth"),
        ("full_bw_rounds = 0", "full_bw_rounds"),
        ("min_cwnd_packets = 0", "min_cwnd_packets"),
        ("pacing_margin_percent = 100.0", "pacing_margin_percent"),
    ] {
        assert_eq!(build_err(text).key.as_deref(), Some(key), "`{text}`");
    }
    assert_eq!(BbrConfig::resolve(&toml::Table::new()).unwrap(), BbrConfig::default());
    let c = BbrConfig::resolve(&params(
        "min_rtt_window = \"2ms\"\nprobe_rtt_duration = \"50us\"\ncycle_gains = [1.5, 0.5, 1, 1, 1, 1, 1, 1]",
    ))
    .unwrap();
    assert_eq!((c.min_rtt_window, c.probe_rtt_duration, c.cycle_gains[0]), (2 * PS_PER_MS, us(50), 1.5));
    let resolved = (algorithm.build)(&toml::Table::new(), G100).unwrap().resolved();
    assert_eq!(resolved["min_rtt_window"].as_str(), Some("10s"));
    assert_eq!(resolved.len(), 14);
    let d = BbrConfig::default();
    assert_eq!((d.cwnd_gain, d.bw_window_rounds, d.full_bw_rounds, d.min_cwnd_packets), (2.0, 10, 3, 4));
    assert!((d.high_gain - 2.885).abs() < 1e-3 && (d.drain_gain * d.high_gain - 1.0).abs() < 1e-15);
}

#[test]
fn pacing_margin_and_the_line_rate_cap() {
    let (feed, d) = Feed::probe_bw(BbrConfig { pacing_margin_percent: 1.0, ..BbrConfig::default() });
    let gain = GAINS[feed.cc.cycle_index()];
    assert_eq!(d.rate, Some((gain * BW as f64 * (1.0 - 1.0 / 100.0)) as Rate));
    // STARTUP at 2.885 x 50 Gb/s on a 100 Gb/s NIC paces at 100 Gb/s.
    let mut feed = Feed::new(BbrConfig::default());
    let d = feed.round(RTT, 1_000_000, 50 * GBPS);
    assert_eq!(d.rate, Some(G100));
}

/// [`Feed::probe_bw`] for the first flow (by id) whose PROBE_BW starts in the 1.25 phase.
fn probe_bw_in_first_phase(config: &BbrConfig) -> Feed {
    (0..)
        .map(|id| {
            let mut feed = Feed { cc: started_on(config.clone(), &FlowInfo { flow_id: id, ..flow(G100) }).0, una: 0 };
            for r in 1..=4 {
                feed.round(r * RTT, 1_000_000, BW);
            }
            feed.round(4 * RTT + us(1), 0, BW);
            feed
        })
        .find(|feed| feed.cc.cycle_index() == 0)
        .unwrap()
}

#[test]
fn inflight_phase_checks_follow_linux() {
    let config = BbrConfig { inflight_phase_checks: true, ..BbrConfig::default() };
    let mut feed = probe_bw_in_first_phase(&config);
    let t0 = 4 * RTT + us(1);
    // inflight(1.25) = even(125 + 3) + 2 = 130 packets: a full RTprop is not enough below it.
    assert_eq!(feed.cc.inflight_target(BW, 1.25), packets(130));
    feed.ack(t0 + RTT, MSS, 0, packets(128), RTT, Some(BW));
    assert_eq!(feed.cc.cycle_index(), 0);
    feed.ack(t0 + RTT + 1, MSS, 0, packets(129), RTT, Some(BW));
    assert_eq!(feed.cc.cycle_index(), 1, "in flight before the ACK reached 130 packets");
    // The 0.75 phase ends early once in flight is down to inflight(1) = 104 packets.
    let t1 = t0 + RTT + 1;
    feed.ack(t1 + us(1), MSS, 0, packets(110), RTT, Some(BW));
    assert_eq!(feed.cc.cycle_index(), 1);
    feed.ack(t1 + us(2), MSS, 0, packets(103), RTT, Some(BW));
    assert_eq!(feed.cc.cycle_index(), 2);
    // A loss lets the 1.25 phase end on time.
    let mut feed = probe_bw_in_first_phase(&config);
    feed.cc.on_loss(&loss(LossKind::Nack, packets(100), feed.una + packets(100)), &mut Ctx::new(t0));
    feed.ack(t0 + RTT, MSS, 0, packets(100), RTT, Some(BW));
    assert_eq!(feed.cc.cycle_index(), 1);
}

/// A paced sender behind one bottleneck link (infinite buffer, FIFO), each packet acknowledged on its
/// own after the two-way propagation delay. ACKs are reported one by one, or, when `fold` is set, folded
/// as the controller's report policy asks.
struct Model {
    cc: Bbr,
    /// Bottleneck rate.
    rate: Rate,
    /// Two-way propagation delay.
    prop: Time,
    fold: bool,
    policy: ReportEvery,
    now: Time,
    snd_una: u64,
    snd_nxt: u64,
    next_send: Time,
    link_free: Time,
    /// Outstanding packets: (end sequence, sent at, ACK point when sent, ACK arrives at).
    outstanding: VecDeque<(u64, Time, u64, Time)>,
    pending: Option<Pending>,
    log: Vec<Step>,
}

/// ACKs folded into the next report.
struct Pending {
    acks: u32,
    acked: u64,
    rtts: Vec<Time>,
    rate: Option<Rate>,
    first_at: Time,
}

/// What one report did.
#[derive(Debug, Clone, Copy)]
struct Step {
    at: Time,
    acks: u32,
    before: (BbrMode, usize),
    after: (BbrMode, usize),
    cwnd: u64,
    target: u64,
    in_flight: u64,
}

impl Model {
    fn new(config: BbrConfig, rate: Rate, prop: Time, fold: bool) -> Model {
        let tx = MSS * 8 * PS_PER_S / rate;
        let cc = started_on(config, &FlowInfo { base_rtt: prop + tx, ..flow(G100) }).0;
        Model {
            cc,
            rate,
            prop,
            fold,
            policy: ReportEvery::Ack,
            now: 0,
            snd_una: 0,
            snd_nxt: 0,
            next_send: 0,
            link_free: 0,
            outstanding: VecDeque::new(),
            pending: None,
            log: Vec::new(),
        }
    }

    fn run_until(&mut self, end: Time) {
        while self.now < end {
            let can_send = self.snd_nxt + MSS <= self.snd_una + self.cc.cwnd();
            let send_at = if can_send { self.next_send.max(self.now) } else { Time::MAX };
            let ack_at = self.outstanding.front().map_or(Time::MAX, |p| p.3);
            if send_at <= ack_at {
                self.send(send_at);
            } else {
                self.receive(ack_at);
            }
        }
    }

    fn send(&mut self, at: Time) {
        self.now = at;
        let depart = self.link_free.max(at) + MSS * 8 * PS_PER_S / self.rate;
        self.link_free = depart;
        self.snd_nxt += MSS;
        self.outstanding.push_back((self.snd_nxt, at, self.snd_una, depart + self.prop));
        self.next_send = at + MSS * 8 * PS_PER_S / self.cc.pacing_rate().max(1);
    }

    fn receive(&mut self, at: Time) {
        self.now = at;
        let (seq, sent_at, una_at_send, _) = self.outstanding.pop_front().unwrap();
        self.snd_una = seq;
        let rtt = at - sent_at;
        let rate = ((seq - una_at_send) * 8 * PS_PER_S).checked_div(rtt);
        let p = self.pending.get_or_insert(Pending { acks: 0, acked: 0, rtts: Vec::new(), rate: None, first_at: at });
        p.acks += 1;
        p.acked += MSS;
        p.rtts.push(rtt);
        p.rate = rate;
        let due = match self.policy {
            ReportEvery::Interval(t) if self.fold => at >= p.first_at + t,
            _ => true,
        };
        if due {
            let p = self.pending.take().unwrap();
            self.report(&p);
        }
    }

    fn report(&mut self, p: &Pending) {
        let in_flight = self.snd_nxt - self.snd_una;
        let mut ack = report(p.acked, self.snd_una, self.snd_nxt, in_flight, *p.rtts.last().unwrap(), p.rate);
        ack.acks = p.acks;
        ack.acked_packets = p.acks;
        ack.rtt_samples = &p.rtts;
        ack.first_at = p.first_at;
        let before = (self.cc.mode(), self.cc.cycle_index());
        let d = deliver(&mut self.cc, self.now, &ack);
        if let Some(policy) = d.report {
            self.policy = policy.every;
        }
        let target = self.cc.inflight_target(self.cc.btl_bw(), self.cc.cwnd_gain());
        let after = (self.cc.mode(), self.cc.cycle_index());
        let cwnd = self.cc.cwnd();
        self.log.push(Step { at: self.now, acks: p.acks, before, after, cwnd, target, in_flight });
    }
}

/// 40 Gb/s bottleneck behind a 100 Gb/s NIC, 10 us propagation: RTprop = 10 us + 200 ns serialization,
/// BDP = 40 Gb/s x 10.2 us = 51 000 B (51 packets). PROBE_RTT every 1 ms for 50 us, to see it in 4 ms.
fn run_model(fold: bool) -> Model {
    let config = BbrConfig { min_rtt_window: PS_PER_MS, probe_rtt_duration: us(50), ..BbrConfig::default() };
    let mut m = Model::new(config, 40 * GBPS, RTT, fold);
    m.run_until(4 * PS_PER_MS);
    m
}

fn check_model(m: &Model) {
    let rtprop = RTT + 200_000;
    assert_eq!(m.cc.rtprop(), Some(rtprop));
    let bw = m.cc.btl_bw();
    assert!((40 * GBPS..=42 * GBPS).contains(&bw), "BtlBw {bw}");
    // Throughput over the last 3 ms, PROBE_RTT dips included.
    let acked_late: u64 = m.log.iter().filter(|s| s.at >= PS_PER_MS).map(|s| s.acks as u64 * MSS).sum();
    let goodput = acked_late as f64 * 8.0 / 3e-3;
    assert!(goodput > 0.92 * 40e9, "goodput {:.2} Gb/s", goodput / 1e9);
    // Every state was visited, in order, and PROBE_RTT came back to PROBE_BW.
    let modes: Vec<BbrMode> = m.log.iter().map(|s| s.after.0).collect();
    let first = |mode| modes.iter().position(|m| *m == mode).unwrap();
    assert!(first(BbrMode::Startup) < first(BbrMode::Drain));
    assert!(first(BbrMode::Drain) < first(BbrMode::ProbeBw));
    assert!(first(BbrMode::ProbeBw) < first(BbrMode::ProbeRtt));
    let probe_rtts =
        m.log.windows(2).filter(|w| w[0].after.0 != BbrMode::ProbeRtt && w[1].after.0 == BbrMode::ProbeRtt);
    assert!(probe_rtts.count() >= 2);
    assert!(m.log.iter().skip(first(BbrMode::ProbeRtt)).any(|s| s.after.0 == BbrMode::ProbeBw));
    assert!(m.log.iter().filter(|s| s.after.0 == BbrMode::ProbeRtt).all(|s| s.cwnd == packets(4)));
    // In PROBE_BW, once the window has settled, it is the target, or up to 2 packets short right after the
    // target rose: 2 x 51 + 3, even: 106 packets (108 in the 1.25 phase), up to 2 more when a sample
    // counted one packet more than the link carries (BtlBw up to 41.6 Gb/s).
    let settled = m.log[first(BbrMode::ProbeBw)].at + us(200);
    let steady =
        m.log.iter().filter(|s| s.at >= settled && s.before.0 == BbrMode::ProbeBw && s.after.0 == BbrMode::ProbeBw);
    for s in steady {
        assert!(s.cwnd <= s.target && s.cwnd + 2 * MSS >= s.target, "{s:?}");
        assert!((packets(106)..=packets(110)).contains(&s.target), "{s:?}");
        assert!(s.in_flight <= s.target + 2 * MSS, "the window bounds what is in flight: {s:?}");
    }
}

#[test]
fn model_with_per_ack_reports_settles_at_two_bdp_with_rtprop_phases() {
    let m = run_model(false);
    check_model(&m);
    assert!(m.log.iter().all(|s| s.acks == 1));
    // Phases of one RTprop: each phase change comes at least RTprop after the previous one and within one
    // ACK gap (at 0.75 x 40 Gb/s, 267 ns) of it.
    let rtprop = m.cc.rtprop().unwrap();
    let changes: Vec<&Step> = m
        .log
        .iter()
        .filter(|s| s.before.0 == BbrMode::ProbeBw && s.after == (BbrMode::ProbeBw, (s.before.1 + 1) % 8))
        .collect();
    assert!(changes.len() > 100);
    for w in changes.windows(2) {
        let gap = w[1].at - w[0].at;
        let same_stretch =
            m.log.iter().filter(|s| s.at > w[0].at && s.at <= w[1].at).all(|s| s.after.0 == BbrMode::ProbeBw);
        if same_stretch {
            assert!(gap >= rtprop && gap < rtprop + 300_000, "phase of {gap} ps");
        }
    }
}

#[test]
fn model_with_interval_reports_closes_one_phase_per_report() {
    let m = run_model(true);
    check_model(&m);
    let in_probe_bw: Vec<&Step> =
        m.log.iter().filter(|s| s.before.0 == BbrMode::ProbeBw && s.after.0 == BbrMode::ProbeBw).collect();
    assert!(in_probe_bw.len() > 100);
    for s in &in_probe_bw {
        assert_eq!(s.after.1, (s.before.1 + 1) % CYCLE_LEN, "{s:?}");
    }
    // About one RTprop of ACKs per report (fewer right after PROBE_RTT, which ran at 4 packets).
    let acks: u32 = in_probe_bw.iter().map(|s| s.acks).sum();
    assert!(acks / in_probe_bw.len() as u32 > 40, "{acks} ACKs in {} reports", in_probe_bw.len());
    assert!(m.log.len() < 4_000, "{} reports for about 20 000 ACKs", m.log.len());
}
