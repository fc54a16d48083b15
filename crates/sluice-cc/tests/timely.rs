//! TIMELY driven with hand-built ACKs carrying RTT samples; expected rates are derived in the comments.
//! At 100 Gb/s the defaults are delta = 100 Mb/s, HAI step 5 delta = 500 Mb/s and min_rate = 1 Gb/s.

mod common;

use common::{flow, trace, us, G100};
use sluice_cc::timely::{Timely, TimelyConfig, ALGORITHM};
use sluice_cc::{Ack, CongestionControl, Ctx, Decisions, Events, ReportPolicy};
use sluice_core::{Rate, Time};

const GBPS: Rate = 1_000_000_000;
const MBPS: Rate = 1_000_000;

fn defaults() -> TimelyConfig {
    TimelyConfig::for_line_rate(G100)
}

/// Feeds ACKs that each complete an update period (per-RTT cadence): every ACK acknowledges data sent
/// after the previous one's `snd_nxt`.
struct Driver {
    cc: Timely,
    seq: u64,
}

impl Driver {
    fn new(config: TimelyConfig) -> Driver {
        let mut cc = Timely::new(config);
        let mut ctx = Ctx::new(0);
        cc.on_start(&flow(G100), &mut ctx);
        assert_eq!(ctx.decisions().rate, Some(G100), "TIMELY starts at line rate");
        assert_eq!(ctx.decisions().cwnd, Some(u64::MAX), "and is not window-limited");
        Driver { cc, seq: 0 }
    }

    /// A new flow whose first RTT sample (which only initializes `prev_rtt`) is `first_us`.
    fn started(config: TimelyConfig, first_us: u64) -> Driver {
        let mut d = Driver::new(config);
        assert_eq!(d.rtt(first_us).rate, None, "the first sample only initializes");
        d
    }

    /// One ACK with an RTT of `rtt_us` microseconds.
    fn rtt(&mut self, rtt_us: u64) -> Decisions {
        let ack = rtt_ack(1000, self.seq + 1000, self.seq + 100_000, us(rtt_us));
        self.seq += 100_000;
        on_ack(&mut self.cc, &ack)
    }
}

fn rtt_ack(acked: u64, snd_una: u64, snd_nxt: u64, rtt: Time) -> Ack<'static> {
    Ack::single(acked, 1, false, Some(rtt), snd_una, snd_nxt, snd_nxt - snd_una, 0)
}

fn on_ack(cc: &mut Timely, ack: &Ack<'_>) -> Decisions {
    let mut ctx = Ctx::new(0);
    cc.on_ack(ack, &mut ctx);
    *ctx.decisions()
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

#[test]
fn declares_rate_control_on_acks_reported_per_ack() {
    let d = Driver::new(defaults());
    assert_eq!(d.cc.events(), Events::ACK);
    assert_eq!(d.cc.report_policy(), ReportPolicy::default());
    let names: Vec<&str> = trace(&d.cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["rate_bps", "rtt_diff_ns", "gradient"]);
    assert_eq!(ALGORITHM.name, "timely");
    assert_eq!(ALGORITHM.control, sluice_cc::Control::Rate);
    assert_eq!(ALGORITHM.needs, sluice_cc::Needs::default());
}

#[test]
fn defaults_scale_with_the_line_rate() {
    let c = defaults();
    assert_eq!((c.t_low, c.t_high, c.min_rtt), (us(50), us(500), us(20)));
    assert_eq!((c.beta, c.ewma_alpha), (0.8, 0.875));
    assert_eq!((c.delta, c.min_rate), (100 * MBPS, GBPS));
    assert_eq!((c.hai_threshold, c.hai_factor, c.segment_bytes), (5, 5, None));
    // The paper's 10 Mb/s at 10 Gb/s.
    let c = TimelyConfig::for_line_rate(10 * GBPS);
    assert_eq!((c.delta, c.min_rate), (10 * MBPS, 100 * MBPS));
}

#[test]
fn rtt_above_t_high_cuts_and_below_t_low_adds_delta() {
    let mut d = Driver::started(defaults(), 40);
    // 1000 us > T_high: R = 100G (1 - 0.8 (1 - 500/1000)) = 100G x 0.6.
    assert_eq!(d.rtt(1000).rate, Some(60 * GBPS));
    // rtt_diff = 0.875 x 960 us = 840 us.
    assert_eq!(d.cc.rtt_diff(), us(840) as f64);
    // 40 us < T_low: + delta, whatever the (negative) gradient.
    assert_eq!(d.rtt(40).rate, Some(60_100 * MBPS));
    // 2000 us: R = 60.1G (1 - 0.8 (1 - 1/4)) = 60.1G x 0.4.
    assert_eq!(d.rtt(2000).rate, Some(24_040 * MBPS));
}

#[test]
fn positive_gradient_cuts_by_beta_times_the_smoothed_gradient() {
    let mut d = Driver::started(defaults(), 100);
    // new_diff = 10 us, rtt_diff = 0.875 x 10 us = 8.75 us, gradient = 8.75 / 20 = 0.4375,
    // R = 100G (1 - 0.8 x 0.4375) = 65G.
    assert_eq!(d.rtt(110).rate, Some(65 * GBPS));
    assert_eq!(d.cc.rtt_diff(), 8_750_000.0);
    assert_eq!(d.cc.gradient(), 0.4375);
    // new_diff = 6 us, rtt_diff = 0.125 x 8.75 + 0.875 x 6 = 6.34375 us, gradient = 0.3171875,
    // R = 65G (1 - 0.8 x 0.3171875) = 65G x 0.74625 = 48.50625G.
    assert_eq!(d.rtt(116).rate, Some(48_506_250_000));
    assert_eq!(d.cc.rtt_diff(), 6_343_750.0);
    assert!((d.cc.gradient() - 0.3171875).abs() < 1e-12);
    let t = trace(&d.cc);
    assert_eq!(t[0], ("rate_bps", 48_506_250_000.0));
    assert_eq!(t[1], ("rtt_diff_ns", 6_343.75));
}

#[test]
fn negative_gradient_adds_delta_then_hai_after_five_updates() {
    let mut d = Driver::started(defaults(), 400);
    // new_diff = 20 us, rtt_diff = 17.5 us, gradient = 0.875: R = 100G x 0.3 = 30G.
    assert_eq!(d.rtt(420).rate, Some(30 * GBPS));
    // RTTs fall by 10 us per update: rtt_diff = 0.125 x 17.5 - 8.75 = -6.5625 us, then stays negative.
    let mut rtt = 420;
    let mut want = 30 * GBPS;
    for k in 1..=7 {
        rtt -= 10;
        // Five updates of + delta; from the sixth (five negative updates before it) + 5 delta.
        want += if k <= 5 { 100 * MBPS } else { 500 * MBPS };
        assert_eq!(d.rtt(rtt).rate, Some(want), "update {k}");
        assert!(d.cc.gradient() < 0.0);
        assert_eq!(d.cc.negative_streak(), k);
    }
    assert_eq!(want, 31_500 * MBPS);
    // A positive gradient ends the streak: new_diff = 40 us, rtt_diff = 0.125 x (about -10 us) + 35 us,
    // a cut; the next negative update adds a single delta again.
    d.rtt(rtt + 40);
    assert_eq!(d.cc.negative_streak(), 0);
    let cut = d.cc.rate();
    assert!(cut < want);
    assert_eq!(d.rtt(rtt).rate, Some(cut + 100 * MBPS));
    assert_eq!(d.cc.negative_streak(), 1);
}

#[test]
fn rate_stays_within_min_rate_and_line_rate() {
    let mut d = Driver::started(defaults(), 100);
    // At line rate an increase changes nothing.
    assert_eq!(d.rtt(30).rate, None);
    assert_eq!(d.cc.rate(), G100);
    // rtt_diff = 0.125 x (-61.25 us) + 0.875 x 170 us, gradient > 1.25: the factor 1 - 0.8 g is negative,
    // floored at 0, and the rate clamped to min_rate.
    assert_eq!(d.rtt(200).rate, Some(GBPS));
    // A further T_high cut stays at min_rate.
    assert_eq!(d.rtt(5000).rate, None);
    assert_eq!(d.cc.rate(), GBPS);

    // min_rate above the line rate is capped at the line rate.
    let mut d = Driver::started(TimelyConfig { min_rate: 200 * GBPS, ..defaults() }, 100);
    assert_eq!(d.rtt(1000).rate, None);
    assert_eq!(d.cc.rate(), G100);
}

#[test]
fn hai_is_capped_at_line_rate() {
    let config = TimelyConfig { hai_threshold: 0, delta: 10 * GBPS, ..defaults() };
    let mut d = Driver::started(config, 400);
    // 420 us: 30G. Then with hai_threshold 0 every negative update adds 5 x 10G.
    d.rtt(420);
    assert_eq!(d.rtt(410).rate, Some(80 * GBPS));
    assert_eq!(d.rtt(400).rate, Some(G100));
}

#[test]
fn updates_at_most_once_per_round_trip() {
    let mut cc = Driver::new(defaults()).cc;
    // First sample at snd_nxt = 100 kB: the next update waits for an ACK beyond 100 kB.
    on_ack(&mut cc, &rtt_ack(1000, 1000, 100_000, us(100)));
    for una in (2000..=100_000).step_by(1000) {
        let d = on_ack(&mut cc, &rtt_ack(1000, una, 150_000, us(1000)));
        assert_eq!(d.rate, None, "snd_una {una} is within the round trip");
    }
    assert_eq!(cc.rate(), G100);
    // 101 kB acknowledges data sent after the first sample: T_high cut to 60G; the round trip now ends
    // at snd_nxt = 150 kB.
    assert_eq!(on_ack(&mut cc, &rtt_ack(1000, 101_000, 150_000, us(1000))).rate, Some(60 * GBPS));
    assert_eq!(on_ack(&mut cc, &rtt_ack(49_000, 150_000, 200_000, us(2000))).rate, None);
    // An ACK without an RTT sample does nothing.
    assert_eq!(on_ack(&mut cc, &Ack::single(1000, 1, false, None, 151_000, 200_000, 0, 0)).rate, None);
    // rtt_diff = 0.125 x 787.5 + 0.875 x 1000 = 973.4375 us; RTT 2000 us > T_high: x 0.4 = 24G.
    assert_eq!(on_ack(&mut cc, &rtt_ack(1000, 152_000, 200_000, us(2000))).rate, Some(24 * GBPS));
}

#[test]
fn segment_cadence_updates_once_per_segment_of_acked_bytes() {
    let mut cc = Driver::new(TimelyConfig { segment_bytes: Some(16_000), ..defaults() }).cc;
    let mut acked = 0;
    let mut ack = |cc: &mut Timely, rtt_us: u64| {
        acked += 1000;
        on_ack(cc, &rtt_ack(1000, acked, acked + 50_000, us(rtt_us))).rate
    };
    // The first ACK's sample initializes; 15 more ACKs complete the first 16 kB.
    assert_eq!(ack(&mut cc, 100), None);
    for _ in 2..16 {
        assert_eq!(ack(&mut cc, 1000), None);
    }
    // 16 kB acknowledged: T_high cut, x 0.6.
    assert_eq!(ack(&mut cc, 1000), Some(60 * GBPS));
    for _ in 17..32 {
        assert_eq!(ack(&mut cc, 1000), None);
    }
    assert_eq!(ack(&mut cc, 1000), Some(36 * GBPS));
}

#[test]
fn parameters_overlay_and_unknown_ones_are_rejected() {
    let c = TimelyConfig::resolve(&params("segment_bytes = \"64KB\"\nt_low = \"30us\"\nhai_factor = 3"), G100);
    let c = c.unwrap();
    assert_eq!((c.segment_bytes, c.t_low, c.hai_factor, c.delta), (Some(64_000), us(30), 3, 100 * MBPS));
    assert_eq!(TimelyConfig::resolve(&toml::Table::new(), G100).unwrap(), defaults());

    let e = TimelyConfig::resolve(&params("alpha = 0.5"), G100).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("alpha"));
    assert!(e.message.contains("ewma_alpha") && e.message.contains("segment_bytes"), "{e}");
    for (text, key) in [
        ("beta = 0.0", "beta"),
        ("ewma_alpha = 1.5", "ewma_alpha"),
        ("t_low = \"600us\"", "t_low"),
        ("min_rtt = \"0us\"", "min_rtt"),
        ("segment_bytes = 0", "segment_bytes"),
        ("delta = 10", "delta"),
        ("hai_factor = 0", "hai_factor"),
    ] {
        let e = match (ALGORITHM.build)(&params(text), G100) {
            Ok(_) => panic!("`{text}` was accepted"),
            Err(e) => e,
        };
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
    let factory = (ALGORITHM.build)(&params("beta = 0.5"), G100).unwrap();
    assert_eq!(factory.resolved().get("beta"), Some(&toml::Value::Float(0.5)));
    assert_eq!(factory.create(&flow(G100)).name(), "timely");
}
