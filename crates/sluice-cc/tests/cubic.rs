//! CUBIC driven directly with hand-built ACKs and losses; expected values are derived in the comments.
//!
//! Windows are in segments of 1000 bytes in the comments; `C = 0.4`, `beta = 0.7`,
//! `alpha = 3 (1 - 0.7) / (1 + 0.7) = 0.529412`. A loss at `W_max = 100` leaves `cwnd = 70` and
//! `K = cbrt((100 - 70) / 0.4) = cbrt(75) = 4.217163 s`.

mod common;

use common::{ack, flow, loss, trace, us, G100, MSS};
use sluice_cc::cubic::{self, Cubic, CubicConfig};
use sluice_cc::{Ack, CongestionControl, Control, Ctx, Events, LossKind, Needs};
use sluice_core::{Time, PS_PER_MS, PS_PER_S};

/// The RTT every ACK reports.
const RTT: Time = 10 * sluice_core::PS_PER_US;
/// When the epoch after the first loss starts.
const T0: Time = PS_PER_MS;

fn k_100() -> f64 {
    (30.0f64 / 0.4).cbrt()
}

/// `W_cubic(t)` in bytes for `W_max = 100` segments after a loss, `t` seconds into the epoch.
fn w_100(t: f64) -> f64 {
    (0.4 * (t - k_100()).powi(3) + 100.0) * MSS as f64
}

fn started(config: CubicConfig) -> Cubic {
    let mut cc = Cubic::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(cc.cwnd()));
    cc
}

/// Feeds a report of `acks` ACKs at `now`, each with an RTT of 10 us; returns the window decision.
fn on_acks(cc: &mut Cubic, now: Time, acks: u32, acked: u64, snd_una: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(now);
    cc.on_ack(&Ack { acks, rtt: Some(RTT), ..ack(acked, snd_una, snd_nxt, false) }, &mut ctx);
    ctx.decisions().cwnd
}

fn on_loss(cc: &mut Cubic, kind: LossKind, in_flight: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_loss(&loss(kind, in_flight, snd_nxt), &mut ctx);
    ctx.decisions().cwnd
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

fn assert_near(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want}");
}

/// A flow in congestion avoidance at 100 segments that lost a packet with 100 segments in flight; the
/// ACK point is at 30000, in recovery.
fn after_loss_at_100(config: CubicConfig) -> Cubic {
    let mut cc = started(CubicConfig { init_cwnd_packets: 100, init_ssthresh_packets: Some(100), ..config });
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 100_000, 100_000), Some(70_000));
    assert_eq!(on_acks(&mut cc, T0 - RTT, 30, 30_000, 30_000, 100_000), None, "held in recovery");
    cc
}

/// Acknowledges the whole window in one report at `now`, moving the ACK point by `cwnd`.
fn ack_window(cc: &mut Cubic, now: Time, snd_una: &mut u64) {
    let cwnd = cc.cwnd();
    *snd_una += cwnd;
    on_acks(cc, now, cwnd.div_ceil(MSS) as u32, cwnd, *snd_una, *snd_una + cwnd);
}

#[test]
fn registers_as_a_window_algorithm_and_starts_with_ten_segments() {
    assert_eq!(cubic::ALGORITHM.name, "cubic");
    assert_eq!(cubic::ALGORITHM.control, Control::Window);
    assert_eq!(cubic::ALGORITHM.needs, Needs::default());
    let cc = started(CubicConfig::default());
    assert_eq!((cc.name(), cc.events()), ("cubic", Events::ACK | Events::LOSS));
    assert_eq!(cc.cwnd(), 10 * MSS);
    let names: Vec<&str> = trace(&cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["cwnd", "ssthresh", "wmax", "k_ns"]);
}

#[test]
fn loss_at_100_segments_leaves_70_and_k_is_4_217_seconds() {
    let mut cc = after_loss_at_100(CubicConfig::default());
    assert_eq!((cc.cwnd(), cc.ssthresh(), cc.w_max()), (70_000, 70_000, 100_000.0));
    assert!(cc.in_fast_recovery());
    // Further losses of the same window do not cut again.
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 70_000, 100_000), None);
    // The ACK that reaches 100000 ends recovery and starts the epoch at T0: K = cbrt(75) s.
    on_acks(&mut cc, T0, 70, 70_000, 100_000, 170_000);
    assert!(!cc.in_fast_recovery());
    assert_near(cc.k(), 4.217_163_326_508_746, 1e-12, "K");
    let t = trace(&cc);
    assert_eq!(t[2], ("wmax", 100_000.0));
    assert_eq!(t[3].0, "k_ns");
    assert_near(t[3].1, 4.217_163_326_508_746e9, 1e-3, "k in nanoseconds");
}

#[test]
fn window_follows_the_cubic_function_concave_then_convex() {
    let config = CubicConfig { reno_friendly: false, ..CubicConfig::default() };
    let mut cc = after_loss_at_100(config);
    let mut snd_una = 30_000;
    // Epoch start: target W(0 + 10 us) = 100 - 0.4 (4.217163 - 0.00001)^3 = 70.000213 segments = 70000 B.
    ack_window(&mut cc, T0, &mut snd_una);
    assert_eq!(cc.cwnd(), 70_000);
    // A report acknowledging the whole window moves cwnd by cwnd (target - cwnd) / cwnd = target - cwnd,
    // so every quarter second the window is exactly W(t + RTT), in whole bytes:
    // W(0.25) = 75.025, W(1) = 86.681, W(2) = 95.640, W(4) = 99.996, W(4.25) = 100.000, W(8.5) = 131.423.
    let mut last = cc.cwnd();
    let mut steps = Vec::new();
    for i in 1..=34u64 {
        let t = i as f64 * 0.25;
        ack_window(&mut cc, T0 + i * PS_PER_S / 4, &mut snd_una);
        let want = w_100(t + 1e-5).floor();
        assert_near(cc.cwnd() as f64, want, 1.0, &format!("t = {t}"));
        steps.push((t, cc.cwnd() - last));
        last = cc.cwnd();
    }
    // The hand-derived points (steps[i] ends at t = 0.25 (i + 1)).
    let window_at = |i: usize| 70_000 + steps[..=i].iter().map(|(_, d)| d).sum::<u64>();
    for (i, want) in [(0, 75_025.0), (3, 86_680.0), (7, 95_640.0), (15, 99_995.0), (16, 100_000.0)] {
        assert_near(window_at(i) as f64, want, 1.0, &format!("t = {}", steps[i].0));
    }
    assert_near(cc.cwnd() as f64, 131_423.0, 1.0, "W(8.5)");
    // Concave below K (the steps shrink), convex above it (they grow): a step covers (t - 0.25, t].
    for pair in steps.windows(2) {
        let ((t0, d0), (t1, d1)) = (pair[0], pair[1]);
        if t1 < k_100() {
            assert!(d1 < d0, "concave at {t0}-{t1}: {d0} then {d1}");
        } else if t0 - 0.25 > k_100() {
            assert!(d1 > d0, "convex at {t0}-{t1}: {d0} then {d1}");
        }
    }
}

#[test]
fn fast_convergence_lowers_w_max_when_a_loss_comes_below_the_previous_one() {
    for fast_convergence in [true, false] {
        let mut cc = after_loss_at_100(CubicConfig { fast_convergence, ..CubicConfig::default() });
        // The ACK ending recovery acknowledges 70000 bytes = 1 window at cwnd 70. Epoch start: W_cubic(0) = 70,
        // W_est = 70 + alpha 70/70 = 70.529412 > 70: Reno-friendly, cwnd = 70529.
        assert_eq!(on_acks(&mut cc, T0, 70, 70_000, 100_000, 170_000), Some(70_529));
        // The next loss comes at 70.529 segments, below W_max = 100: with fast convergence
        // W_max = 70.529 (1 + 0.7) / 2 = 59.95 segments, else 70.529. 70000 in flight: cwnd = 49000.
        assert_eq!(on_loss(&mut cc, LossKind::Nack, 70_000, 170_000), Some(49_000));
        let want = if fast_convergence { 70_529.0 * 0.85 } else { 70_529.0 };
        assert_near(cc.w_max(), want, 1e-6, "W_max");
    }
    // A loss at or above the previous W_max records the window itself (here the first loss, W_max = 0).
    let mut cc = started(CubicConfig { init_cwnd_packets: 120, ..CubicConfig::default() });
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 120_000, 120_000), Some(84_000));
    assert_eq!(cc.w_max(), 120_000.0);
}

#[test]
fn reno_friendly_region_dominates_at_datacenter_round_trip_times() {
    // One window acknowledged every 10 us round trip. W_cubic grows from 70 at its initial slope
    // 3 C K^2 = 21.3 segments per second: 0.0002 segments per round trip. W_est grows by alpha = 0.5294
    // per round trip until it reaches cwnd_prior = 100 (after 57 round trips: 70 + 57 alpha = 100.18),
    // then by 1.
    let mut cc = after_loss_at_100(CubicConfig::default());
    let mut snd_una = 30_000;
    let alpha = 0.9 / 1.7;
    let mut w_est = 70.0f64;
    for i in 0..60u64 {
        ack_window(&mut cc, T0 + i * RTT, &mut snd_una);
        w_est += if w_est >= 100.0 { 1.0 } else { alpha };
        assert_near(cc.cwnd() as f64, (w_est * MSS as f64).floor(), 1.0, &format!("round trip {}", i + 1));
    }
    assert_near(w_est, 70.0 + 57.0 * alpha + 3.0, 1e-9, "W_est");
    assert_near(cc.cwnd() as f64, 103_176.0, 1.0, "cwnd after 60 round trips");
    assert_near(cc.w_est().unwrap(), 103_176.47, 0.01, "W_est in bytes");

    // Without the Reno-friendly region the window follows W_cubic: W(60 x 10 us) = 70.0128 segments.
    let mut plain = after_loss_at_100(CubicConfig { reno_friendly: false, ..CubicConfig::default() });
    let mut snd_una = 30_000;
    for i in 0..60u64 {
        ack_window(&mut plain, T0 + i * RTT, &mut snd_una);
    }
    assert_near(plain.cwnd() as f64, w_100(60e-5).floor(), 1.0, "W(600 us)");
    assert_eq!(plain.cwnd(), 70_012);
}

#[test]
fn timeout_restarts_from_one_segment_and_the_next_epoch_starts_at_its_own_window() {
    let mut cc =
        started(CubicConfig { init_cwnd_packets: 100, init_ssthresh_packets: Some(100), ..Default::default() });
    // ssthresh = 0.7 x 100000 in flight; cwnd = 1 segment; W_max forgotten.
    assert_eq!(on_loss(&mut cc, LossKind::Timeout, 100_000, 100_000), Some(1000));
    assert_eq!((cc.ssthresh(), cc.w_max()), (70_000, 0.0));
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 50_000, 100_000), None, "data sent before the timeout");
    // 100 ACKs folded acknowledge everything sent before the timeout: slow start to 70 segments (L = 2,
    // limit 200 segments), and the 31000 bytes left start the epoch with K = 0, W_max = 70:
    // W_est = 70 + alpha 31/70 = 70.2345 > W_cubic(0) = 70, so cwnd = 70234.
    assert_eq!(on_acks(&mut cc, T0, 100, 100_000, 100_000, 170_000), Some(70_234));
    assert_eq!((cc.k(), cc.w_max()), (0.0, 70_000.0));
    // One second later, one window: W_cubic(1) = 0.4 + 70 = 70.4 < W_est = 70.2345 + alpha = 70.7639.
    assert_eq!(on_acks(&mut cc, T0 + PS_PER_S, 71, 70_234, 170_234, 240_468), Some(70_763));
    // Two seconds in, the convex curve is ahead: W_est = 71.2933 < W_cubic(2) = 0.4 x 8 + 70 = 73.2, and
    // the window moves to W_cubic(2 s + 10 us) = 73.2000 (one window acknowledged).
    on_acks(&mut cc, T0 + 2 * PS_PER_S, 71, 70_763, 240_997, 311_760);
    assert_near(cc.cwnd() as f64, 73_200.0, 1.0, "W(2 s)");
    assert_eq!(cc.min_rtt(), Some(us(10)));
}

#[test]
fn parameters_overlay_the_defaults_and_unknown_ones_are_rejected() {
    assert_eq!(CubicConfig::resolve(&toml::Table::new()).unwrap(), CubicConfig::default());
    let c = CubicConfig::resolve(&params("beta = 0.8\nfast_convergence = false")).unwrap();
    assert_eq!((c.beta, c.fast_convergence, c.c, c.reno_friendly), (0.8, false, 0.4, true));

    let e = CubicConfig::resolve(&params("tcp_friendliness = true")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("tcp_friendliness"));
    assert!(e.message.contains("reno_friendly") && e.message.contains("init_ssthresh_packets"), "{e}");
    for (text, key) in [
        ("c = 0.0", "c"),
        ("beta = 1.0", "beta"),
        ("beta = 0.0", "beta"),
        ("beta = \"0.7\"", "beta"),
        ("init_cwnd_packets = 0", "init_cwnd_packets"),
        ("min_cwnd_packets = 0", "min_cwnd_packets"),
        ("bogus = 1", "bogus"),
    ] {
        let e = (cubic::ALGORITHM.build)(&params(text), G100).err().expect(text);
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
    let factory = (cubic::ALGORITHM.build)(&params("c = 0.5"), G100).unwrap();
    let again = (cubic::ALGORITHM.build)(&factory.resolved(), G100).unwrap();
    assert_eq!(again.resolved(), factory.resolved());
    assert_eq!(again.create(&flow(G100)).name(), "cubic");
}
