//! DCQCN driven directly with hand-fired CNPs, timers and sends; expected values are derived in the
//! comments. Alpha is brought up to date at CNPs and cuts; tests that need exact halvings give it a
//! one-second update period.

mod common;

use common::{flow, trace, us, G100};
use sluice_cc::dcqcn::{Dcqcn, DcqcnConfig, DcqcnVariant, DECREASE_TIMER, INCREASE_TIMER};
use sluice_cc::{CongestionControl, Decisions, Events, Sent, TimerId};
use sluice_core::{Rate, Time, PS_PER_NS};

const GBPS: Rate = 1_000_000_000;
const MBPS: Rate = 1_000_000;

fn hpcc() -> DcqcnConfig {
    DcqcnConfig::for_line_rate(DcqcnVariant::Hpcc, G100)
}

fn paper() -> DcqcnConfig {
    DcqcnConfig::for_line_rate(DcqcnVariant::Paper, G100)
}

fn started(config: DcqcnConfig, line_rate: Rate) -> Dcqcn {
    let mut cc = Dcqcn::new(config);
    let mut ctx = sluice_cc::Ctx::new(0);
    cc.on_start(&flow(line_rate), &mut ctx);
    assert_eq!(ctx.decisions().rate, Some(line_rate), "DCQCN starts at line rate");
    cc
}

fn cnp(cc: &mut Dcqcn, at: Time) -> Decisions {
    let mut ctx = sluice_cc::Ctx::new(at);
    cc.on_cnp(&mut ctx);
    *ctx.decisions()
}

fn fire(cc: &mut Dcqcn, id: TimerId, at: Time) -> Decisions {
    let mut ctx = sluice_cc::Ctx::new(at);
    cc.on_timer(id, &mut ctx);
    *ctx.decisions()
}

fn sent(cc: &mut Dcqcn, bytes: u32) -> Decisions {
    let mut ctx = sluice_cc::Ctx::new(0);
    cc.on_sent(&Sent { bytes: bytes.into(), packets: 1, retransmitted_bytes: 0 }, &mut ctx);
    *ctx.decisions()
}

fn timer(d: &Decisions, id: TimerId) -> Option<Time> {
    d.set_timers[id.0 as usize]
}

fn rates(cc: &Dcqcn) -> (Rate, Rate) {
    (cc.rate(), cc.target())
}

#[test]
fn starts_at_line_rate_with_an_unlimited_or_bdp_window() {
    let mut cc = Dcqcn::new(hpcc());
    let mut ctx = sluice_cc::Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(u64::MAX));
    assert_eq!(ctx.decisions().set_timers, [None; 4], "no timer before the first CNP");
    assert_eq!(cc.events(), Events::CNP | Events::TIMER);
    assert_eq!(Dcqcn::new(paper()).events(), Events::CNP | Events::TIMER | Events::TX);

    let mut cc = Dcqcn::new(DcqcnConfig { window_bdp: true, ..hpcc() });
    let mut ctx = sluice_cc::Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    // 100 Gb/s x 10 us / 8 = 125000 bytes.
    assert_eq!(ctx.decisions().cwnd, Some(125_000));
    let names: Vec<&str> = trace(&cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["rate_bps", "target_bps", "alpha"]);
}

#[test]
fn hpcc_first_cnp_arms_the_check_and_the_cut_waits_for_it() {
    let mut cc = started(hpcc(), G100);
    let d = cnp(&mut cc, us(10));
    assert_eq!(d.rate, None, "the cut happens at the next decrease check");
    assert_eq!(timer(&d, DECREASE_TIMER), Some(us(14) + PS_PER_NS), "4 us + 1 ns: after the alpha update");
    assert_eq!(timer(&d, INCREASE_TIMER), None);
    assert_eq!(d.set_timers.iter().flatten().count(), 1, "alpha needs no timer");
    assert_eq!(cc.alpha(), 1.0);

    // Alpha updates at 11, 12, 13 and 14 us. 11: no CNP since the first (which does not count), 255/256.
    // A CNP in (11, 12] counts at 12: (255/256)^2 + 1/256 = 65281/65536; the check it would arm is
    // armed already. 13 and 14 without CNPs: 65281/65536 (255/256)^2 = 4244897025/2^32 = 0.98834...
    let d = cnp(&mut cc, us(11) + 500_000);
    assert_eq!(cc.alpha(), 255.0 / 256.0, "brought up to date to 11 us");
    assert_eq!(d.set_timers, [None; 4]);

    // The check at 14 us + 1 ns brings alpha up to date and cuts: 100 Gb/s (1 - 0.98834/2) =
    // 50582894671.24 -> 50582894671 bit/s. Stage 0 and no target clamping: Rt stays at 100 Gb/s.
    let at = us(14) + PS_PER_NS;
    let d = fire(&mut cc, DECREASE_TIMER, at);
    assert_eq!(cc.alpha(), 4_244_897_025.0 / 4_294_967_296.0);
    assert_eq!(d.rate, Some(50_582_894_671));
    assert_eq!(rates(&cc), (50_582_894_671, G100));
    assert_eq!(timer(&d, DECREASE_TIMER), None, "no CNP is waiting: no check");
    assert_eq!(timer(&d, INCREASE_TIMER), Some(at + us(300)));

    // The next CNP arms the check that ends its period on the checks' grid (4 us apart from 14 us + 1 ns).
    let d = cnp(&mut cc, at + us(5));
    assert_eq!(timer(&d, DECREASE_TIMER), Some(at + us(8)));
    assert_eq!(d.rate, None);
    // A CNP at the instant of a check is too late for it: the next one takes it.
    fire(&mut cc, DECREASE_TIMER, at + us(8));
    let d = cnp(&mut cc, at + us(12));
    assert_eq!(timer(&d, DECREASE_TIMER), Some(at + us(16)));
}

/// Alpha brought up to date at CNPs and checks equals alpha updated every microsecond by a ticking
/// timer, for CNPs at arbitrary times (some exactly on update boundaries, which a CNP takes).
#[test]
fn hpcc_alpha_brought_up_to_date_equals_a_ticking_alpha() {
    let g = 1.0 / 256.0;
    let mut rng = sluice_core::Rng::new(7, 1);
    for _ in 0..200 {
        let mut cc = started(hpcc(), G100);
        cnp(&mut cc, 0);
        // The CNPs after the first, in time order, some on a microsecond boundary.
        let mut times: Vec<Time> = (0..rng.below(40))
            .map(|_| if rng.below(4) == 0 { us(1 + rng.below(200)) } else { 1 + rng.below(us(200)) })
            .collect();
        times.sort_unstable();
        let check = us(200) + PS_PER_NS;
        for &t in &times {
            cnp(&mut cc, t);
        }
        // The ticking reference: an update at every microsecond k takes the CNPs in (k - 1, k].
        let mut alpha: f64 = 1.0;
        for k in 1..=200u64 {
            let flagged = times.iter().any(|&t| t > us(k - 1) && t <= us(k));
            alpha = (1.0 - g) * alpha + if flagged { g } else { 0.0 };
        }
        fire(&mut cc, DECREASE_TIMER, check);
        assert_eq!(cc.alpha(), alpha, "CNPs at {times:?}");
    }
}

/// A check fired late (a user-space host loop wakes after the period) still cuts once, with alpha
/// brought up to date to the moment it fires.
#[test]
fn hpcc_a_late_check_cuts_once_with_alpha_up_to_date() {
    let mut cc = started(hpcc(), G100);
    cnp(&mut cc, 0);
    fire(&mut cc, DECREASE_TIMER, us(50));
    let ticked = (0..50).fold(1.0f64, |alpha, _| alpha * (255.0 / 256.0));
    assert_eq!(cc.alpha(), ticked, "50 updates, one multiplication each");
    let cut = (G100 as f64 * (1.0 - cc.alpha() / 2.0)) as Rate;
    assert_eq!(rates(&cc), (cut, G100));
}

/// Alpha stays 1 with a one-second update period, so every cut below halves exactly.
fn hpcc_fixed_alpha() -> DcqcnConfig {
    DcqcnConfig { alpha_interval: 1_000_000 * us(1), ..hpcc() }
}

#[test]
fn hpcc_fast_recovery_then_additive_then_hyper_increase() {
    let mut cc = started(hpcc_fixed_alpha(), G100);
    cnp(&mut cc, 0);
    let check = us(4) + PS_PER_NS;
    fire(&mut cc, DECREASE_TIMER, check);
    assert_eq!(rates(&cc), (50 * GBPS, 100 * GBPS));
    // Stage 0 < F = 1: fast recovery, Rc = (50 + 100) / 2.
    let t1 = check + us(300);
    let d = fire(&mut cc, INCREASE_TIMER, t1);
    assert_eq!(d.rate, Some(75 * GBPS));
    assert_eq!(timer(&d, INCREASE_TIMER), Some(t1 + us(300)));

    // A CNP after an increase (stage 1 > 0): the check at the end of its period sets Rt = Rc = 75G, then
    // Rc = 37.5G, and restarts the increase timer, replacing the deadline at t1 + 300 us.
    let d = cnp(&mut cc, t1 + us(1));
    let check2 = check + us(304);
    assert_eq!(timer(&d, DECREASE_TIMER), Some(check2));
    let d = fire(&mut cc, DECREASE_TIMER, check2);
    assert_eq!(rates(&cc), (37_500 * MBPS, 75 * GBPS));
    assert_eq!(timer(&d, INCREASE_TIMER), Some(check2 + us(300)));

    let mut at = check2 + us(300);
    let mut step = |cc: &mut Dcqcn| {
        let d = fire(cc, INCREASE_TIMER, at);
        at += us(300);
        assert_eq!(timer(&d, INCREASE_TIMER), Some(at));
        rates(cc)
    };
    // Stage 0: fast recovery, (37.5 + 75) / 2.
    assert_eq!(step(&mut cc), (56_250 * MBPS, 75 * GBPS));
    // Stage 1 = F: additive, Rt += 20 Mb/s (5 Mb/s x 100/25), Rc = (56.25 + 75.02) / 2.
    assert_eq!(step(&mut cc), (65_635 * MBPS, 75_020 * MBPS));
    // Stage 2 > F: hyper, Rt += 200 Mb/s, Rc = (65.635 + 75.22) / 2.
    assert_eq!(step(&mut cc), (70_427_500_000, 75_220 * MBPS));
    // Stage 3: hyper adds R_HAI once more (not 2 R_HAI).
    assert_eq!(step(&mut cc), (72_923_750_000, 75_420 * MBPS));
}

/// An increase timer fired three periods late applies the three increase events, as three timely
/// firings would, and stays on its grid.
#[test]
fn a_late_increase_timer_applies_every_period_that_ended() {
    let mut timely = started(hpcc_fixed_alpha(), G100);
    let mut late = started(hpcc_fixed_alpha(), G100);
    for cc in [&mut timely, &mut late] {
        cnp(cc, 0);
        fire(cc, DECREASE_TIMER, us(4) + PS_PER_NS);
    }
    let first = us(304) + PS_PER_NS;
    for k in 0..3 {
        fire(&mut timely, INCREASE_TIMER, first + k * us(300));
    }
    let d = fire(&mut late, INCREASE_TIMER, first + us(600) + 5);
    assert_eq!(rates(&late), rates(&timely));
    assert_eq!(timer(&d, INCREASE_TIMER), Some(first + us(900)));
    // Long after, the rates have climbed as far as they go: the target to line rate, the rate halfway to
    // it rounded down, one bit/s short.
    let d = fire(&mut late, INCREASE_TIMER, first + us(300_000_000));
    assert_eq!(rates(&late), (G100 - 1, G100));
    assert_eq!(timer(&d, INCREASE_TIMER), Some(first + us(300_000_300)));
}

#[test]
fn hpcc_target_stays_at_line_rate_and_rate_stays_above_rmin() {
    let mut cc = started(hpcc_fixed_alpha(), G100);
    cnp(&mut cc, 0);
    fire(&mut cc, DECREASE_TIMER, us(4) + PS_PER_NS);
    fire(&mut cc, INCREASE_TIMER, us(304) + PS_PER_NS); // fast recovery: 75G
    fire(&mut cc, INCREASE_TIMER, us(604) + PS_PER_NS); // additive: Rt capped at 100G
    assert_eq!(rates(&cc), (87_500 * MBPS, G100));

    // 4 Gb/s NIC, Rmin 1 Gb/s: 4 -> 2 -> 1 -> 1 (0.5 clamped).
    let mut cc = started(hpcc_fixed_alpha(), 4 * GBPS);
    let mut at = 0;
    for want in [2 * GBPS, GBPS, GBPS] {
        cnp(&mut cc, at);
        at += us(4) + PS_PER_NS;
        fire(&mut cc, DECREASE_TIMER, at);
        assert_eq!(cc.rate(), want);
    }
    // Rmin above the line rate is capped at the line rate.
    let mut cc = started(DcqcnConfig { min_rate: 10 * GBPS, ..hpcc_fixed_alpha() }, 4 * GBPS);
    cnp(&mut cc, 0);
    fire(&mut cc, DECREASE_TIMER, us(4) + PS_PER_NS);
    assert_eq!(cc.rate(), 4 * GBPS);
}

#[test]
fn hpcc_clamp_target_rate_sets_the_target_on_every_cut() {
    let mut cc = started(DcqcnConfig { clamp_target_rate: true, ..hpcc_fixed_alpha() }, G100);
    cnp(&mut cc, 0);
    fire(&mut cc, DECREASE_TIMER, us(4) + PS_PER_NS);
    cnp(&mut cc, us(5));
    fire(&mut cc, DECREASE_TIMER, us(8) + PS_PER_NS);
    // Without an increase in between: Rt = Rc = 50G anyway, Rc = 25G.
    assert_eq!(rates(&cc), (25 * GBPS, 50 * GBPS));
}

#[test]
fn paper_cnp_cuts_at_once_and_restarts_the_increase_timer() {
    let mut cc = started(paper(), G100);
    let d = cnp(&mut cc, us(100));
    // Rt = Rc = 100G, Rc = 100G (1 - 1/2), alpha = (1 - g) 1 + g = 1.
    assert_eq!(d.rate, Some(50 * GBPS));
    assert_eq!(rates(&cc), (50 * GBPS, 100 * GBPS));
    assert_eq!(cc.alpha(), 1.0);
    assert_eq!(timer(&d, INCREASE_TIMER), Some(us(155)));
    assert_eq!(d.set_timers.iter().flatten().count(), 1, "alpha needs no timer");

    // Ti: T = 1 < F = 5: fast recovery, (50 + 100) / 2.
    let d = fire(&mut cc, INCREASE_TIMER, us(155));
    assert_eq!(d.rate, Some(75 * GBPS));
    assert_eq!(timer(&d, INCREASE_TIMER), Some(us(210)));

    // The next CNP cuts with alpha decayed once (K = 55 us passed at 155 us): Rt = 75G,
    // Rc = 75G (1 - 255/512) = 37646484375, alpha = (255/256)^2 + 1/256.
    let d = cnp(&mut cc, us(180));
    assert_eq!(rates(&cc), (37_646_484_375, 75 * GBPS));
    assert_eq!(cc.alpha(), 65281.0 / 65536.0);
    assert_eq!(timer(&d, INCREASE_TIMER), Some(us(235)));

    // Three periods from 180 us end at 235, 290 and 345 us; a CNP at 345 us comes after the third decay.
    let before = cc.alpha();
    cnp(&mut cc, us(345));
    let decayed = before * (255.0 / 256.0) * (255.0 / 256.0) * (255.0 / 256.0);
    assert_eq!(cc.alpha(), (1.0 - 1.0 / 256.0) * decayed + 1.0 / 256.0);
}

#[test]
fn paper_byte_counter_advances_its_own_stage() {
    let config = DcqcnConfig { byte_counter: Some(10_000), ..paper() };
    let mut cc = started(config, G100);
    // Before the first CNP nothing is counted.
    for _ in 0..20 {
        assert_eq!(sent(&mut cc, 1000).rate, None);
    }
    cnp(&mut cc, 0); // 50G, target 100G
    for _ in 0..9 {
        assert_eq!(sent(&mut cc, 1000).rate, None);
    }
    // The 10th kB: BC = 1 < F, fast recovery to 75G; 10 kB more: 87.5G.
    assert_eq!(sent(&mut cc, 1000).rate, Some(75 * GBPS));
    for _ in 0..10 {
        sent(&mut cc, 1000);
    }
    assert_eq!(cc.rate(), 87_500 * MBPS);
    // A CNP resets the byte counter: 5 kB before and 5 kB after it do not make an event.
    for _ in 0..5 {
        sent(&mut cc, 1000);
    }
    cnp(&mut cc, us(1));
    for _ in 0..5 {
        assert_eq!(sent(&mut cc, 1000).rate, None);
    }
}

/// F = 1, B = 1000 bytes, R_AI = 40 Mb/s, R_HAI = 200 Mb/s; alpha stays 1.
#[test]
fn paper_stages_follow_the_timer_and_byte_counts() {
    let config = DcqcnConfig { byte_counter: Some(1000), fast_recovery_stages: 1, ..paper() };
    let mut cc = started(config, G100);
    cnp(&mut cc, 0); // Rc 50G, Rt 100G
    cnp(&mut cc, us(1)); // Rt = 50G, Rc = 25G, T = BC = 0
    assert_eq!(rates(&cc), (25 * GBPS, 50 * GBPS));
    let mut at = us(1);
    let mut tick = |cc: &mut Dcqcn| {
        at += us(55);
        fire(cc, INCREASE_TIMER, at);
        rates(cc)
    };
    // T=1, BC=0: max = 1 is not < F, min = 0 is not > F: additive. Rt 50.04G, Rc (25 + 50.04) / 2.
    assert_eq!(tick(&mut cc), (37_520 * MBPS, 50_040 * MBPS));
    // T=1, BC=1: additive. Rt 50.08G, Rc (37.52 + 50.08) / 2.
    sent(&mut cc, 1000);
    assert_eq!(rates(&cc), (43_800 * MBPS, 50_080 * MBPS));
    // T=2, BC=1: additive. Rt 50.12G, Rc (43.8 + 50.12) / 2.
    assert_eq!(tick(&mut cc), (46_960 * MBPS, 50_120 * MBPS));
    // T=2, BC=2: min 2 > F: hyper with i = 2 - 1 = 1. Rt 50.32G, Rc (46.96 + 50.32) / 2.
    sent(&mut cc, 1000);
    assert_eq!(rates(&cc), (48_640 * MBPS, 50_320 * MBPS));
    // T=3, BC=2: hyper, i = 1. Rt 50.52G, Rc (48.64 + 50.52) / 2.
    assert_eq!(tick(&mut cc), (49_580 * MBPS, 50_520 * MBPS));
    // T=3, BC=3: hyper, i = 2: Rt += 400 Mb/s = 50.92G, Rc (49.58 + 50.92) / 2.
    sent(&mut cc, 1000);
    assert_eq!(rates(&cc), (50_250 * MBPS, 50_920 * MBPS));
}

/// Default F = 5 with only the timer advancing (BC stays 0).
#[test]
fn paper_timer_alone_gives_five_fast_recovery_steps_then_additive() {
    let mut cc = started(paper(), G100);
    cnp(&mut cc, 0);
    cnp(&mut cc, us(1)); // Rt = 50G, Rc = 25G
    let want = [
        (37_500 * MBPS, 50 * GBPS),      // T=1: (25 + 50) / 2
        (43_750 * MBPS, 50 * GBPS),      // T=2
        (46_875 * MBPS, 50 * GBPS),      // T=3
        (48_437_500_000, 50 * GBPS),     // T=4
        (49_238_750_000, 50_040 * MBPS), // T=5: max(T, BC) = F: additive, +40 Mb/s
        (49_659_375_000, 50_080 * MBPS), // T=6: min(T, BC) = 0 is not > F: still additive
    ];
    for (k, w) in want.iter().enumerate() {
        fire(&mut cc, INCREASE_TIMER, us(1) + us(55) * (k as u64 + 1));
        assert_eq!(rates(&cc), *w, "T = {}", k + 1);
    }
}

#[test]
fn paper_rate_stays_above_rmin() {
    let config = DcqcnConfig { min_rate: 30 * GBPS, ..paper() };
    let mut cc = started(config, G100);
    cnp(&mut cc, 0);
    assert_eq!(cc.rate(), 50 * GBPS);
    cnp(&mut cc, us(1));
    assert_eq!(rates(&cc), (30 * GBPS, 50 * GBPS), "25G clamped to Rmin");
}

#[test]
fn unknown_timers_are_ignored() {
    let mut cc = started(paper(), G100);
    cnp(&mut cc, 0);
    let d = fire(&mut cc, DECREASE_TIMER, us(1));
    assert_eq!(d, Decisions::default(), "the paper variant has no decrease check");
    let d = fire(&mut cc, TimerId(3), us(1));
    assert_eq!(d, Decisions::default());
}
