//! Vegas driven directly with hand-built ACKs and losses; expected values are derived in the comments.
//!
//! `diff = cwnd (RTT - BaseRTT) / RTT` segments, with `RTT` the smallest sample of the round; defaults
//! `alpha = 2`, `beta = 4`, `gamma = 1`. A round ends at the first ACK whose `snd_una` passes the highest
//! `snd_nxt` seen when the round began.

mod common;

use common::{ack, flow, loss, trace, us, G100, MSS};
use sluice_cc::vegas::{self, Vegas, VegasConfig};
use sluice_cc::{Ack, CongestionControl, Control, Ctx, Events, LossKind, Needs};
use sluice_core::Time;

fn config(init_cwnd: u32, init_ssthresh: Option<u32>) -> VegasConfig {
    VegasConfig { init_cwnd_packets: init_cwnd, init_ssthresh_packets: init_ssthresh, ..VegasConfig::default() }
}

fn started(config: VegasConfig) -> Vegas {
    let mut cc = Vegas::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(cc.cwnd()));
    cc
}

/// Feeds one ACK with an RTT sample of `rtt` and returns the window decision it produced.
fn on_ack(cc: &mut Vegas, acked: u64, snd_una: u64, snd_nxt: u64, rtt: Time) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_ack(&Ack { rtt: Some(rtt), ..ack(acked, snd_una, snd_nxt, false) }, &mut ctx);
    ctx.decisions().cwnd
}

fn on_loss(cc: &mut Vegas, kind: LossKind, in_flight: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_loss(&loss(kind, in_flight, snd_nxt), &mut ctx);
    ctx.decisions().cwnd
}

/// One-segment ACKs from `from` up to `to` (inclusive), all with `rtt` and `snd_nxt`, expecting no window
/// change (congestion avoidance inside a round).
fn acks_within_round(cc: &mut Vegas, from: u64, to: u64, snd_nxt: u64, rtt: Time) {
    for una in (from..=to).step_by(MSS as usize) {
        assert_eq!(on_ack(cc, MSS, una, snd_nxt, rtt), None, "snd_una {una}");
    }
}

/// A flow in congestion avoidance at 10 segments with BaseRTT 10 us whose round ends when snd_una
/// passes 10000.
fn in_avoidance() -> Vegas {
    let mut cc = started(config(10, Some(10)));
    // The first ACK passes the initial mark (0) and ends round 0 with one sample: too few for Vegas, so
    // it grows as Reno (1000 of 10000 bytes toward +1 MSS).
    assert_eq!(on_ack(&mut cc, MSS, 1000, 10_000, us(10)), None);
    assert_eq!(cc.base_rtt(), Some(us(10)));
    cc
}

#[test]
fn registers_as_a_window_algorithm_and_starts_with_ten_segments() {
    assert_eq!(vegas::ALGORITHM.name, "vegas");
    assert_eq!(vegas::ALGORITHM.control, Control::Window);
    assert_eq!(vegas::ALGORITHM.needs, Needs::default());
    let cc = started(VegasConfig::default());
    assert_eq!((cc.name(), cc.events(), cc.cwnd()), ("vegas", Events::ACK | Events::LOSS, 10 * MSS));
    assert_eq!(trace(&cc), [("cwnd", 10_000.0), ("ssthresh", u64::MAX as f64), ("base_rtt_ns", 0.0), ("diff", 0.0)]);
}

#[test]
fn adds_a_segment_below_alpha_holds_between_and_removes_one_above_beta() {
    let mut cc = in_avoidance();
    // Round 1, RTT 11 us: diff = 10 (11 - 10) / 11 = 0.909 < alpha = 2: +1 MSS at the ACK passing 10000.
    acks_within_round(&mut cc, 2000, 10_000, 20_000, us(11));
    assert_eq!(on_ack(&mut cc, MSS, 11_000, 20_000, us(11)), Some(11_000));
    assert!((cc.diff() - 10.0 / 11.0).abs() < 1e-12);
    // Round 2 (to 20000), RTT 13.5 us: diff = 11 x 3.5 / 13.5 = 2.852, between alpha and beta: hold.
    acks_within_round(&mut cc, 12_000, 20_000, 31_000, us(27) / 2);
    assert_eq!(on_ack(&mut cc, MSS, 21_000, 31_000, us(27) / 2), None);
    assert!((cc.diff() - 11.0 * 3.5 / 13.5).abs() < 1e-12);
    assert_eq!(cc.cwnd(), 11_000);
    // Round 3 (to 31000), RTT 20 us: diff = 11 x 10 / 20 = 5.5 > beta = 4: -1 MSS, ssthresh follows.
    acks_within_round(&mut cc, 22_000, 31_000, 41_000, us(20));
    assert_eq!(on_ack(&mut cc, MSS, 32_000, 41_000, us(20)), Some(10_000));
    assert_eq!((cc.ssthresh(), cc.diff()), (10_000, 5.5));
    assert_eq!(trace(&cc), [("cwnd", 10_000.0), ("ssthresh", 10_000.0), ("base_rtt_ns", 1e4), ("diff", 5.5)]);
}

#[test]
fn base_rtt_is_the_smallest_sample_ever_and_rtt_the_smallest_of_the_round() {
    let mut cc = in_avoidance();
    // Round 1 samples 30, 12 and 25 us: RTT = 12 us, BaseRTT stays 10 us:
    // diff = 10 x 2 / 12 = 1.667 < 2: +1.
    on_ack(&mut cc, MSS, 2000, 20_000, us(30));
    on_ack(&mut cc, MSS, 3000, 20_000, us(12));
    acks_within_round(&mut cc, 4000, 10_000, 20_000, us(25));
    assert_eq!(cc.round_min_rtt(), Some(us(12)));
    assert_eq!(on_ack(&mut cc, MSS, 11_000, 20_000, us(25)), Some(11_000));
    assert!((cc.diff() - 20.0 / 12.0).abs() < 1e-12);
    assert_eq!((cc.base_rtt(), cc.round_min_rtt()), (Some(us(10)), None), "a new round starts empty");
    // Round 2: a sample of 8 us lowers BaseRTT, and is the round's RTT too: diff = 0: +1.
    acks_within_round(&mut cc, 12_000, 19_000, 30_000, us(40));
    on_ack(&mut cc, MSS, 20_000, 30_000, us(8));
    assert_eq!(cc.base_rtt(), Some(us(8)));
    assert_eq!(on_ack(&mut cc, MSS, 21_000, 30_000, us(40)), Some(12_000));
    assert_eq!(cc.diff(), 0.0);
    // Folded samples count one by one: a report of 3 ACKs with samples 9, 16 and 20 us ends round 3
    // (snd_una passes 30000): RTT = 9 us, diff = 12 x 1 / 9 = 1.333: +1.
    let mut ctx = Ctx::new(0);
    let samples = [us(9), us(16), us(20)];
    let report = Ack { acks: 3, rtt_samples: &samples, rtt: Some(us(20)), ..ack(3000, 31_000, 40_000, false) };
    cc.on_ack(&report, &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(13_000));
    assert!((cc.diff() - 12.0 / 9.0).abs() < 1e-12);
    assert_eq!(cc.base_rtt(), Some(us(8)));
}

#[test]
fn rounds_with_too_few_samples_grow_as_reno() {
    let mut cc = started(config(2, None));
    // Round 0 ends at the first ACK (one sample): Reno slow start, 2000 -> 3000. Next mark: 2000.
    assert_eq!(on_ack(&mut cc, MSS, 1000, 2000, us(10)), Some(3000));
    // Round 1 has two samples of 20 us. Within it slow start goes on (3000 -> 4000); the ACK passing
    // 2000 ends it with only 2 samples, so although diff would be 4 x 10 / 20 = 2 > gamma, it grows as
    // Reno: 5000.
    assert_eq!(on_ack(&mut cc, MSS, 2000, 5000, us(20)), Some(4000));
    assert_eq!(on_ack(&mut cc, MSS, 3000, 7000, us(20)), Some(5000));
    assert_eq!(cc.diff(), 0.0, "no Vegas decision yet");
    // With min_rtt_samples = 2 the same round ends slow start: target = 4000 x 10 / 20 + 1000 = 3000.
    let mut two = started(VegasConfig { min_rtt_samples: 2, ..config(2, None) });
    on_ack(&mut two, MSS, 1000, 2000, us(10));
    on_ack(&mut two, MSS, 2000, 5000, us(20));
    assert_eq!(on_ack(&mut two, MSS, 3000, 7000, us(20)), Some(3000));
    assert_eq!((two.ssthresh(), two.diff()), (3000, 2.0));
}

#[test]
fn slow_start_ends_once_diff_exceeds_gamma() {
    for (rtt, want, ssthresh) in [(us(12), 17_666, 17_666), (us(21) / 2, 21_000, u64::MAX)] {
        let mut cc = started(config(10, None));
        // Round 0 ends at once (one sample): slow start, 11000.
        assert_eq!(on_ack(&mut cc, MSS, 1000, 10_000, us(10)), Some(11_000));
        // Within round 1 slow start adds one MSS per ACK: 9 ACKs, 20000.
        for (i, una) in (2000..=10_000).step_by(1000).enumerate() {
            assert_eq!(on_ack(&mut cc, MSS, una, 30_000, rtt), Some(12_000 + i as u64 * MSS));
        }
        // The ACK passing 10000 ends round 1 (10 samples).
        // RTT 12 us: diff = 20 x 2 / 12 = 3.33 > gamma = 1: cwnd = min(20000, 20000 x 10 / 12 + 1000)
        // = 17666, ssthresh = 17666: congestion avoidance.
        // RTT 10.5 us: diff = 20 x 0.5 / 10.5 = 0.95 <= gamma: slow start goes on, 21000.
        assert_eq!(on_ack(&mut cc, MSS, 11_000, 30_000, rtt), Some(want));
        assert_eq!(cc.ssthresh(), ssthresh);
    }
}

#[test]
fn losses_are_handled_as_reno_and_vegas_resumes_after_recovery() {
    let mut cc = in_avoidance();
    // 9000 in flight: ssthresh = cwnd = 4500, held until 10000 is acknowledged.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 9000, 10_000), Some(4500));
    assert!(cc.in_fast_recovery());
    assert_eq!(on_ack(&mut cc, MSS, 2000, 10_000, us(30)), None);
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 8000, 10_000), None);
    // The ACK point passes the old round's mark (10000) inside recovery: no Vegas decision.
    assert_eq!(on_ack(&mut cc, 8000, 10_000, 14_000, us(30)), None);
    assert_eq!(cc.diff(), 0.0);
    assert!(!cc.in_fast_recovery());
    // Recovery ended with that ACK and a fresh round started (mark 14000) with its 30 us sample; the
    // others are 10 us: RTT = BaseRTT, diff = 0 < alpha: +1 at the ACK passing 14000.
    acks_within_round(&mut cc, 11_000, 14_000, 14_500, us(10));
    assert_eq!(on_ack(&mut cc, MSS, 15_000, 19_000, us(10)), Some(5500));

    // A timeout with 8000 in flight: ssthresh 4000, 1 segment; Reno slow start (one segment per ACK, and
    // no gamma exit however large the RTT) until the data sent before the timeout (to 19000) is
    // acknowledged.
    assert_eq!(on_loss(&mut cc, LossKind::Timeout, 8000, 19_000), Some(1000));
    assert_eq!(cc.ssthresh(), 4000);
    assert_eq!(on_ack(&mut cc, MSS, 16_000, 17_000, us(50)), Some(2000));
    assert_eq!(on_ack(&mut cc, 2000, 18_000, 19_000, us(50)), Some(3000));
    assert_eq!(cc.diff(), 0.0);
}

#[test]
fn parameters_overlay_the_defaults_and_unknown_ones_are_rejected() {
    let d = VegasConfig::default();
    assert_eq!((d.alpha, d.beta, d.gamma, d.min_rtt_samples), (2.0, 4.0, 1.0, 3));
    assert_eq!(VegasConfig::resolve(&toml::Table::new()).unwrap(), d);
    let params = |text: &str| -> toml::Table { text.parse().unwrap() };
    let paper = VegasConfig::resolve(&params("alpha = 1.0\nbeta = 3.0")).unwrap();
    assert_eq!((paper.alpha, paper.beta, paper.gamma), (1.0, 3.0, 1.0));

    let e = VegasConfig::resolve(&params("delta = 1.0")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("delta"));
    assert!(e.message.contains("gamma") && e.message.contains("init_ssthresh_packets"), "{e}");
    for (text, key) in [
        ("alpha = -1.0", "alpha"),
        ("beta = 1.0", "beta"),
        ("gamma = -0.5", "gamma"),
        ("min_rtt_samples = 0", "min_rtt_samples"),
        ("abc_limit_packets = 0", "abc_limit_packets"),
        ("alpha = \"2\"", "alpha"),
        ("base_rtt = \"10us\"", "base_rtt"),
    ] {
        let e = (vegas::ALGORITHM.build)(&params(text), G100).err().expect(text);
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
    let factory = (vegas::ALGORITHM.build)(&params("gamma = 2.0"), G100).unwrap();
    let again = (vegas::ALGORITHM.build)(&factory.resolved(), G100).unwrap();
    assert_eq!(again.resolved(), factory.resolved());
    assert_eq!(again.create(&flow(G100)).name(), "vegas");
}
