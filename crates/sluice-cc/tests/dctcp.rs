//! DCTCP driven directly with hand-built ACKs and losses; expected values are derived in the comments.

mod common;

use common::{ack, flow, loss, trace, G100, MSS};
use sluice_cc::dctcp::{Dctcp, DctcpConfig};
use sluice_cc::{CongestionControl, Ctx, Events, LossKind};

const G: f64 = 1.0 / 16.0;

fn config(init_cwnd: u32, init_ssthresh: Option<u32>, init_alpha: f64) -> DctcpConfig {
    DctcpConfig {
        init_cwnd_packets: init_cwnd,
        init_ssthresh_packets: init_ssthresh,
        init_alpha,
        ..DctcpConfig::default()
    }
}

fn started(config: DctcpConfig) -> Dctcp {
    let mut cc = Dctcp::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(cc.cwnd()));
    cc
}

/// Feeds one ACK and returns the window decision it produced.
fn on_ack(cc: &mut Dctcp, acked: u64, snd_una: u64, snd_nxt: u64, ece: bool) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_ack(&ack(acked, snd_una, snd_nxt, ece), &mut ctx);
    ctx.decisions().cwnd
}

fn on_loss(cc: &mut Dctcp, kind: LossKind, in_flight: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_loss(&loss(kind, in_flight, snd_nxt), &mut ctx);
    ctx.decisions().cwnd
}

#[test]
fn starts_with_the_configured_window_and_binds_ack_and_loss() {
    let cc = started(DctcpConfig::default());
    assert_eq!(cc.cwnd(), 10 * MSS, "RFC 6928 initial window");
    assert_eq!(cc.ssthresh(), u64::MAX);
    assert_eq!(cc.alpha(), 1.0);
    assert_eq!(cc.events(), Events::ACK | Events::LOSS);
    let names: Vec<&str> = trace(&cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["cwnd", "ssthresh", "alpha"]);
    assert_eq!(trace(&started(config(1, Some(64), 1.0)))[1].1, 64_000.0);
}

#[test]
fn slow_start_adds_at_most_one_mss_per_ack_and_stops_at_ssthresh() {
    let mut cc = started(config(10, Some(12), 1.0));
    assert_eq!(on_ack(&mut cc, 1000, 1000, 10_000, false), Some(11_000));
    // A stretch ACK of 3 segments still adds one MSS (min(acked, mss)).
    assert_eq!(on_ack(&mut cc, 3000, 4000, 11_000, false), Some(12_000));
    // At ssthresh (12 segments) growth is congestion avoidance: 12000 + 1000*1000/12000 = 12083.
    assert_eq!(on_ack(&mut cc, 1000, 5000, 12_000, false), Some(12_083));

    // Slow start stops exactly at ssthresh: from 2500 an ACK adds min(1000, 3000 - 2500) = 500.
    let mut cc = started(config(2, Some(3), 1.0));
    on_ack(&mut cc, 500, 500, 2000, false);
    assert_eq!(cc.cwnd(), 2500);
    on_ack(&mut cc, 1000, 1500, 2500, false);
    assert_eq!(cc.cwnd(), 3000);
}

#[test]
fn congestion_avoidance_carries_the_fraction_exactly() {
    // cwnd = ssthresh = 10 segments: every ACK is congestion avoidance.
    let mut cc = started(config(10, Some(10), 1.0));
    // cwnd += (1000 * 1000 + remainder) / cwnd, remainder = the rest of that division:
    // 1000000 / 10000 = 100 r 0; 1000000 / 10100 = 99 r 100; 1000100 / 10199 = 98 r 598; ...
    let expected = [10_100, 10_199, 10_297, 10_394, 10_490, 10_585, 10_680, 10_773, 10_866, 10_958];
    for (i, want) in expected.iter().enumerate() {
        let una = (i as u64 + 1) * MSS;
        assert_eq!(on_ack(&mut cc, MSS, una, 10_000, false), Some(*want), "ACK {}", i + 1);
    }
    // One window acknowledged by per-packet ACKs adds a little under one MSS (cwnd grows within the
    // window); one ACK for a whole window adds exactly one MSS: 1000 * 10000 / 10000.
    let mut whole = started(config(10, Some(10), 1.0));
    assert_eq!(on_ack(&mut whole, 10_000, 10_000, 10_000, false), Some(11_000));
}

#[test]
fn alpha_decays_by_one_minus_g_per_window_without_marks() {
    let mut cc = started(DctcpConfig::default());
    // Window 1 is the first ACK (window_end starts at snd_nxt = 0, RFC 8257 / Linux).
    on_ack(&mut cc, MSS, 1000, 10_000, false);
    assert_eq!(cc.alpha(), 15.0 / 16.0);
    // Window 2 ends when snd_una reaches 10000, the snd_nxt recorded at the first update.
    for una in (2000..10_000).step_by(1000) {
        on_ack(&mut cc, MSS, una, 10_000, false);
        assert_eq!(cc.alpha(), 15.0 / 16.0, "no update inside the window");
    }
    on_ack(&mut cc, MSS, 10_000, 20_000, false);
    assert_eq!(cc.alpha(), (15.0f64 / 16.0).powi(2));
    // Window 3 ends at 20000.
    on_ack(&mut cc, 10_000, 20_000, 30_000, false);
    assert_eq!(cc.alpha(), (15.0f64 / 16.0).powi(3));
    assert!((cc.alpha() - 0.823_974_609_375).abs() < 1e-15);
}

#[test]
fn alpha_follows_the_marked_fraction_of_a_window() {
    let mut cc = started(config(10, None, 0.0));
    on_ack(&mut cc, MSS, 1000, 4000, false);
    assert_eq!(cc.alpha(), 0.0);
    // Window [1000, 4000): 3000 bytes acknowledged, 1000 marked: F = 1/3, alpha = g/3 = 1/48.
    on_ack(&mut cc, MSS, 2000, 4000, true);
    on_ack(&mut cc, MSS, 3000, 4000, false);
    on_ack(&mut cc, MSS, 4000, 5000, false);
    assert!((cc.alpha() - 1.0 / 48.0).abs() < 1e-15, "alpha = {}", cc.alpha());
    // Next window fully marked: alpha = (15/16)(1/48) + 1/16.
    on_ack(&mut cc, MSS, 5000, 6000, true);
    assert!((cc.alpha() - (15.0 / 16.0 / 48.0 + 1.0 / 16.0)).abs() < 1e-15);
}

#[test]
fn ece_cuts_by_alpha_half_once_per_window() {
    let mut cc = started(config(10, None, 0.5));
    // The first ACK closes window 1 with F = 1: alpha = (15/16)(1/2) + 1/16 = 0.53125, then the ECE
    // cuts: 10000 - floor(10000 * 0.53125 / 2) = 10000 - 2656 = 7344.
    assert_eq!(on_ack(&mut cc, MSS, 1000, 10_000, true), Some(7344));
    assert_eq!(cc.alpha(), 0.53125);
    assert_eq!(cc.ssthresh(), 7344);
    assert!(cc.in_cwr());
    // More ECEs before snd_una reaches 10000 (snd_nxt at the cut): no second cut, no growth.
    for una in (2000..10_000).step_by(1000) {
        assert_eq!(on_ack(&mut cc, MSS, una, 10_000, true), None, "snd_una {una}");
    }
    assert_eq!(cc.cwnd(), 7344);
    // The ACK reaching 10000 ends CWR; unmarked, it grows: 7344 + 1000000 / 7344 = 7480.
    assert_eq!(on_ack(&mut cc, MSS, 10_000, 17_000, false), Some(7480));
    assert!(!cc.in_cwr());
    // An ECE in the new window cuts again with the current alpha.
    let alpha = cc.alpha();
    let want = 7480 - (7480.0 * alpha / 2.0) as u64;
    assert_eq!(on_ack(&mut cc, MSS, 11_000, 17_000, true), Some(want));
}

#[test]
fn ecn_cut_never_goes_below_two_segments() {
    let mut cc = started(config(3, None, 1.0));
    // alpha = 1 (F = 1): 3000 - 1500 = 1500, floored at 2 * MSS.
    assert_eq!(on_ack(&mut cc, MSS, 1000, 3000, true), Some(2000));
}

#[test]
fn fast_retransmit_halves_in_flight_and_holds_the_window_until_recovered() {
    let mut cc = started(config(10, None, 1.0));
    on_ack(&mut cc, MSS, 1000, 10_000, false); // slow start: 11000
                                               // 10000 bytes in flight at the loss, snd_nxt 11000: ssthresh = cwnd = 5000 (no 3-MSS inflation).
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 10_000, 11_000), Some(5000));
    assert_eq!(cc.ssthresh(), 5000);
    assert!(cc.in_fast_recovery());
    // Within the recovery window: no growth, no ECN cut, no second loss reduction.
    assert_eq!(on_ack(&mut cc, MSS, 2000, 11_000, false), None);
    assert_eq!(on_ack(&mut cc, MSS, 3000, 11_000, true), None);
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 8000, 11_000), None);
    assert_eq!(cc.cwnd(), 5000);
    // snd_una reaches 11000: recovery ends and the ACK grows the window: 5000 + 1000000 / 5000.
    assert_eq!(on_ack(&mut cc, MSS, 11_000, 11_000, false), Some(5200));
    assert!(!cc.in_fast_recovery());
    // A NACK in a later window reduces again, floored at 2 MSS: max(3000 / 2, 2000).
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 3000, 14_000), Some(2000));
}

#[test]
fn loss_counts_the_data_outstanding_before_a_go_back_n_rewind() {
    let mut cc = started(config(30, Some(10), 1.0));
    on_ack(&mut cc, MSS, 1000, 30_000, false);
    // A go-back-N datapath rewinds snd_nxt to the hole before reporting: in_flight 0, snd_nxt 1000. The
    // flight is still the 29000 bytes sent beyond the ACK point: ssthresh = cwnd = 14500, not 2 MSS.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 0, 1000), Some(14_500));
    // The loss window runs to 30000, the highest byte sent: the NACKs of the same window do not cut again.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 0, 2000), None);
    assert_eq!(on_ack(&mut cc, 28_000, 29_000, 29_000, false), None);
    assert!(cc.in_fast_recovery());
    on_ack(&mut cc, MSS, 30_000, 31_000, false);
    assert!(!cc.in_fast_recovery());
}

#[test]
fn loss_reduces_even_in_cwr() {
    let mut cc = started(config(10, None, 1.0));
    assert_eq!(on_ack(&mut cc, MSS, 1000, 10_000, true), Some(5000)); // alpha 1: halve
    assert!(cc.in_cwr());
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 9000, 10_000), Some(4500));
    assert!(!cc.in_cwr());
}

#[test]
fn timeout_restarts_from_one_segment() {
    let mut cc = started(DctcpConfig { clamp_alpha_on_loss: true, ..config(10, None, 1.0) });
    on_ack(&mut cc, MSS, 1000, 10_000, false);
    let alpha = cc.alpha();
    assert!(alpha < 1.0);
    // ssthresh = max(9000 / 2, 2000) = 4500; cwnd = 1 MSS; alpha clamped to 1.
    assert_eq!(on_loss(&mut cc, LossKind::Timeout, 9000, 10_000), Some(1000));
    assert_eq!(cc.ssthresh(), 4500);
    assert_eq!(cc.alpha(), 1.0);
    // Slow start resumes at once; a fast retransmit of data sent before the timeout does not reduce.
    assert_eq!(on_ack(&mut cc, MSS, 2000, 10_000, false), Some(2000));
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 8000, 10_000), None);
    assert_eq!(on_ack(&mut cc, MSS, 3000, 10_000, false), Some(3000));

    let mut plain = started(config(10, None, 1.0));
    on_ack(&mut plain, MSS, 1000, 10_000, false);
    on_loss(&mut plain, LossKind::Timeout, 9000, 10_000);
    assert_eq!(plain.alpha(), alpha, "alpha kept without clamp_alpha_on_loss");
}

/// An ACK-clocked sender: packets leave while they fit in the window; the ACK of the oldest outstanding
/// packet arrives next, so one window of ACKs is one round trip.
struct Sender {
    cc: Dctcp,
    snd_una: u64,
    snd_nxt: u64,
}

impl Sender {
    fn new(config: DctcpConfig) -> Sender {
        let mut s = Sender { cc: started(config), snd_una: 0, snd_nxt: 0 };
        s.fill();
        s
    }

    fn fill(&mut self) {
        while self.snd_nxt + MSS <= self.snd_una + self.cc.cwnd() {
            self.snd_nxt += MSS;
        }
    }

    fn ack(&mut self, ece: bool) {
        self.snd_una += MSS;
        on_ack(&mut self.cc, MSS, self.snd_una, self.snd_nxt, ece);
        self.fill();
    }

    fn loss(&mut self) -> u64 {
        let in_flight = self.snd_nxt - self.snd_una;
        on_loss(&mut self.cc, LossKind::FastRetransmit, in_flight, self.snd_nxt);
        in_flight
    }

    fn state(&self) -> (u64, u64, f64) {
        (self.cc.cwnd(), self.cc.ssthresh(), self.cc.alpha())
    }
}

/// The single-flow trace test of the Marlin paper (EuroSys'25 §7.1): initial cwnd 1 segment, initial
/// ssthresh 64 segments; slow start, congestion avoidance, a loss at A (before ACK 200), ECN marks on
/// ACKs 330-334 at B, a loss at C (before ACK 450).
#[test]
fn marlin_style_trace() {
    let mut s = Sender::new(config(1, Some(64), 1.0));
    let decay = |windows: i32| (15.0f64 / 16.0).powi(windows);
    let mut windows = 0;
    let mut alpha;
    // ACKs at which a window closes (snd_una reaches the snd_nxt of the previous close): the first ACK,
    // then one window per round trip as slow start doubles 2, 4, 8, ... segments.
    let closes = [1, 2, 3, 5, 9, 17, 33, 65, 128, 191];
    for n in 1..200u64 {
        s.ack(false);
        if closes.contains(&n) {
            windows += 1;
        }
        let cwnd = match n {
            // Slow start: one MSS per ACK, exactly to ssthresh.
            1..=63 => (n + 1) * MSS,
            // Congestion avoidance: 64000 + 1000000/64000 = 64015 (r 40000), + 1040000/64015 = 64031.
            64 => 64_015,
            65 => 64_031,
            _ => s.cc.cwnd(),
        };
        assert_eq!(s.state(), (cwnd, 64_000, decay(windows)), "ACK {n}");
    }
    assert_eq!(windows, 10);
    assert_eq!(s.state().0, 66_091, "about one MSS per window in avoidance");

    // A: 66 segments in flight. ssthresh = cwnd = 33000, held through the window (ACKs 200-264).
    assert_eq!(s.loss(), 66_000);
    let recover = s.snd_nxt;
    assert_eq!(recover, 265_000);
    for n in 200..265 {
        s.ack(false);
        if n == 255 {
            windows += 1; // window [191 000, 255 000) closes with F = 0
        }
        assert_eq!(s.state(), (33_000, 33_000, decay(windows)), "ACK {n}");
    }
    // ACK 265 reaches the recovery point: avoidance again, 33000 + 1000000/33000 = 33030.
    s.ack(false);
    assert_eq!(s.state(), (33_030, 33_000, decay(11)));
    for _ in 266..330 {
        s.ack(false);
    }
    windows = 13; // windows closed at ACKs 287 and 319
    assert_eq!(s.state(), (34_914, 33_000, decay(windows)));

    // B: the first marked ACK cuts with alpha = (15/16)^13 = 0.43214...:
    // 34914 - floor(34914 * 0.43214 / 2) = 34914 - 7543 = 27371.
    s.ack(true);
    alpha = decay(windows);
    assert_eq!(s.state(), (27_371, 27_371, alpha));
    let cwr_end = s.snd_nxt;
    assert_eq!(cwr_end, 363_000);
    // ACKs 331-334 are marked too: no second cut inside CWR; the window is held until ACK 363.
    for n in 331..363 {
        s.ack((331..335).contains(&n));
        if n == 352 {
            // Window [319 000, 352 000): 33 segments, 5 marked: F = 5/33.
            alpha = (1.0 - G) * alpha + G * (5.0 / 33.0);
        }
        assert_eq!(s.state(), (27_371, 27_371, alpha), "ACK {n}");
    }
    assert!((alpha - 0.414_602_929_839_292_3).abs() < 1e-12);
    // ACK 363 ends CWR: 27371 + 1000000/27371 = 27407.
    s.ack(false);
    assert_eq!(s.state(), (27_407, 27_371, alpha));
    for _ in 364..450 {
        s.ack(false);
    }
    alpha *= decay(3); // windows closed at ACKs 378, 404, 431
    assert_eq!(s.state(), (30_385, 27_371, alpha));

    // C: 30 segments in flight: ssthresh = cwnd = 15000 until snd_una reaches 479000.
    assert_eq!(s.loss(), 30_000);
    for n in 450..479 {
        s.ack(false);
        if n == 459 {
            alpha *= 15.0 / 16.0;
        }
        assert_eq!(s.state(), (15_000, 15_000, alpha), "ACK {n}");
    }
    // ACK 479 ends recovery and closes a window: 15000 + 1000000/15000 = 15066.
    s.ack(false);
    alpha *= 15.0 / 16.0;
    assert_eq!(s.state(), (15_066, 15_000, alpha));
    // Alpha only rose at B: over the whole run it fell from 1 to about 0.30.
    assert!((alpha - 0.300_253_963_324_272_8).abs() < 1e-12);
}
