//! Swift driven with hand-built ACKs (RTT and remote delay) and losses; expected windows are derived in
//! the comments. The test flow has 1000 B segments, 48 B headers, a 10 us base RTT and 2 hops.

mod common;

use common::{flow, loss, trace, us, G100, MSS};
use sluice_cc::swift::{Swift, SwiftConfig, ALGORITHM};
use sluice_cc::{Ack, CongestionControl, Control, Ctx, Decisions, Events, LossKind, Needs, ReportPolicy};
use sluice_core::Time;

const TOL: f64 = 1e-9;

fn defaults() -> SwiftConfig {
    SwiftConfig::default()
}

/// No flow scaling and an 18 us base: the fabric target is 18 + 2 x 1 = 20 us at any window.
fn flat(init_cwnd: f64) -> SwiftConfig {
    SwiftConfig { base_target: us(18), fs_range: 0, init_cwnd: Some(init_cwnd), ..defaults() }
}

fn started(config: SwiftConfig) -> (Swift, Decisions) {
    let mut cc = Swift::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    (cc, *ctx.decisions())
}

/// An ACK of `acked` bytes at `now` with an RTT of `rtt` and a receiver delay of `remote`.
fn ack(cc: &mut Swift, now: Time, acked: u64, rtt: Time, remote: Time) -> Decisions {
    let mut a = Ack::single(acked, acked.div_ceil(MSS) as u32, false, Some(rtt), 0, 0, 0, now);
    a.remote_delay = Some(remote);
    let mut ctx = Ctx::new(now);
    cc.on_ack(&a, &mut ctx);
    *ctx.decisions()
}

fn lose(cc: &mut Swift, now: Time, kind: LossKind) -> Decisions {
    let mut ctx = Ctx::new(now);
    cc.on_loss(&loss(kind, 0, 0), &mut ctx);
    *ctx.decisions()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * b.abs().max(1.0)
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

#[test]
fn registry_entry_events_and_trace() {
    assert_eq!(ALGORITHM.name, "swift");
    assert_eq!(ALGORITHM.control, Control::WindowAndRate);
    assert_eq!(ALGORITHM.needs, Needs::default());
    let (cc, _) = started(defaults());
    assert_eq!(cc.events(), Events::ACK | Events::LOSS);
    assert_eq!(cc.report_policy(), ReportPolicy::default());
    let names: Vec<&str> = trace(&cc).iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["fcwnd", "ecwnd", "target_delay_ns", "rtt_ns"]);
}

#[test]
fn starts_at_the_bdp_window_and_line_rate() {
    // 100 Gb/s x 10 us / 8 = 125000 B = 125 packets.
    let (cc, d) = started(defaults());
    assert_eq!((d.cwnd, d.rate), (Some(125_000), Some(G100)));
    assert_eq!((cc.fcwnd(), cc.ecwnd()), (125.0, 125.0));
    // A 1250-packet BDP is clamped to max_cwnd = 256.
    let mut cc = Swift::new(defaults());
    let mut ctx = Ctx::new(0);
    cc.on_start(&sluice_cc::FlowInfo { base_rtt: us(100), ..flow(G100) }, &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(256_000));
    // An explicit initial window.
    let (_, d) = started(SwiftConfig { init_cwnd: Some(10.0), ..defaults() });
    assert_eq!(d.cwnd, Some(10_000));
}

#[test]
fn target_delay_adds_hops_and_flow_scaling() {
    // fs window range [1, 100] pkts, fs_range 90 us: alpha = 90 / (1 - 1/10) = 100 us,
    // beta = -100 / 10 = -10 us; target = 25 + hops + clamp(100 / sqrt(cwnd) - 10, 0, 90) us.
    let c = SwiftConfig { fs_min_cwnd: 1.0, fs_max_cwnd: 100.0, fs_range: us(90), ..defaults() };
    assert!(close(c.fs_alpha(), us(100) as f64) && close(c.fs_beta(), -(us(10) as f64)));
    assert!(close(c.target_delay(4.0, 2), us(25 + 2 + 40) as f64)); // 100/2 - 10 = 40
    assert!(close(c.target_delay(25.0, 2), us(25 + 2 + 10) as f64)); // 100/5 - 10 = 10
    assert!(close(c.target_delay(0.25, 3), us(25 + 3 + 90) as f64)); // 200 - 10 = 190, clamped to 90
    assert!(close(c.target_delay(400.0, 0), us(25) as f64)); // 5 - 10 < 0, clamped to 0

    // Defaults: the scaling term spans [0, 100 us] over [0.1, 256] packets.
    let d = defaults();
    assert!(close(d.target_delay(0.1, 0), us(125) as f64));
    assert!(close(d.target_delay(256.0, 0), us(25) as f64));
    // At 1 packet: alpha + beta = alpha (1 - 1/16), alpha = 100 us / (1/sqrt(0.1) - 1/16).
    let at_one = 100e6 * (15.0 / 16.0) / (1.0 / 0.1f64.sqrt() - 1.0 / 16.0);
    assert!(close(d.target_delay(1.0, 3), us(28) as f64 + at_one));
    assert!((at_one - 30.244_11e6).abs() < 1e3, "about 30.24 us: {at_one}");

    // The controller uses its fabric window before the update and the flow's hop count (2).
    let (mut cc, _) = started(SwiftConfig { init_cwnd: Some(4.0), ..c });
    ack(&mut cc, us(1), 1000, us(30), 0);
    assert!(close(cc.target_delay(), us(67) as f64));
    assert_eq!(trace(&cc)[2], ("target_delay_ns", cc.target_delay() / 1000.0));
    assert_eq!(trace(&cc)[3], ("rtt_ns", 30_000.0));
}

#[test]
fn additive_increase_below_target() {
    let (mut cc, _) = started(flat(10.0));
    // Fabric delay 15 us < 20 us and endpoint delay 0 < 25 us: both windows + ai x 1 / 10.
    let d = ack(&mut cc, us(1), 1000, us(15), 0);
    assert!(close(cc.fcwnd(), 10.1) && close(cc.ecwnd(), 10.1));
    assert_eq!((d.cwnd, d.rate), (Some(10_100), None));
    // Two packets acknowledged at once: + 2 / 10.1.
    ack(&mut cc, us(2), 2000, us(15), 0);
    assert!(close(cc.fcwnd(), 10.1 + 2.0 / 10.1));

    // Below one packet the increase is ai per packet acknowledged: 0.25 + 0.5.
    let (mut cc, _) = started(flat(0.25));
    ack(&mut cc, us(1), 500, us(15), 0);
    assert!(close(cc.fcwnd(), 0.75));
    // Capped at max_cwnd.
    let (mut cc, _) = started(flat(256.0));
    assert_eq!(ack(&mut cc, us(1), 1000, us(15), 0).cwnd, None);
    assert_eq!(cc.fcwnd(), 256.0);
}

#[test]
fn multiplicative_decrease_above_target_is_bounded_by_max_mdf() {
    let (mut cc, _) = started(flat(100.0));
    // Fabric delay 25 us, target 20 us: x (1 - 0.8 x 5 / 25) = x 0.84.
    let d = ack(&mut cc, us(1), 1000, us(25), 0);
    assert!(close(cc.fcwnd(), 84.0));
    assert_eq!(d.cwnd, Some(84_000));

    let (mut cc, _) = started(flat(100.0));
    // Fabric delay 100 us: 1 - 0.8 x 80 / 100 = 0.36 < 1 - max_mdf: x 0.5.
    ack(&mut cc, us(1), 1000, us(100), 0);
    assert!(close(cc.fcwnd(), 50.0));
    // Clamped at min_cwnd.
    let (mut cc, _) = started(SwiftConfig { min_cwnd: 80.0, ..flat(100.0) });
    ack(&mut cc, us(1), 1000, us(100), 0);
    assert_eq!(cc.fcwnd(), 80.0);
}

#[test]
fn at_most_one_decrease_per_rtt() {
    let (mut cc, _) = started(flat(100.0));
    ack(&mut cc, us(10), 1000, us(25), 0); // x 0.84 at 10 us
    assert!(close(cc.fcwnd(), 84.0));
    // Within 25 us (the ACK's RTT) of the decrease: no further decrease.
    assert_eq!(ack(&mut cc, us(34), 1000, us(25), 0).cwnd, None);
    assert!(close(cc.fcwnd(), 84.0));
    // Increases are not held back.
    ack(&mut cc, us(34), 1000, us(15), 0);
    assert!(close(cc.fcwnd(), 84.0 + 1.0 / 84.0));
    // 25 us after the decrease: x 0.84 again.
    let w = cc.fcwnd();
    ack(&mut cc, us(35), 1000, us(25), 0);
    assert!(close(cc.fcwnd(), w * 0.84));
}

#[test]
fn loss_reactions_cut_the_fabric_window() {
    let (mut cc, _) = started(flat(100.0));
    // Fast retransmit: x (1 - max_mdf).
    assert_eq!(lose(&mut cc, us(1), LossKind::FastRetransmit).cwnd, Some(50_000));
    // A NACK within the (base, no sample yet) RTT of 10 us does not cut again.
    assert_eq!(lose(&mut cc, us(5), LossKind::Nack).cwnd, None);
    assert_eq!(lose(&mut cc, us(11), LossKind::Nack).cwnd, Some(25_000));
    // The endpoint window does not react to losses.
    assert_eq!(cc.ecwnd(), 100.0);

    // Timeouts: the first two cut by max_mdf (an RTT apart), the third resets to min_cwnd = 0.01.
    let (mut cc, _) = started(flat(100.0));
    lose(&mut cc, us(1), LossKind::Timeout);
    assert_eq!((cc.fcwnd(), cc.retransmit_count()), (50.0, 1));
    lose(&mut cc, us(20), LossKind::Timeout);
    assert_eq!((cc.fcwnd(), cc.retransmit_count()), (25.0, 2));
    let d = lose(&mut cc, us(21), LossKind::Timeout);
    assert_eq!((cc.fcwnd(), cc.retransmit_count()), (0.01, 3));
    // 0.01 packet: 10 B window; paced at 0.01 x 1048 B x 8 / 10 us = 8.384 Mb/s.
    assert_eq!((d.cwnd, d.rate), (Some(10), Some(8_384_000)));

    // An ACK resets the timeout count: the next timeout cuts instead of resetting.
    let (mut cc, _) = started(flat(100.0));
    lose(&mut cc, us(1), LossKind::Timeout);
    lose(&mut cc, us(20), LossKind::Timeout);
    ack(&mut cc, us(21), 1000, us(15), 0);
    assert_eq!(cc.retransmit_count(), 0);
    lose(&mut cc, us(60), LossKind::Timeout);
    assert_eq!(cc.retransmit_count(), 1);
    assert!(cc.fcwnd() > 10.0);
    // A fast retransmit also resets it.
    lose(&mut cc, us(61), LossKind::Timeout);
    lose(&mut cc, us(62), LossKind::FastRetransmit);
    assert_eq!(cc.retransmit_count(), 0);
}

#[test]
fn endpoint_window_limits_when_the_receiver_is_slow() {
    let (mut cc, _) = started(flat(100.0));
    // RTT 60 us of which 50 us at the receiver: fabric delay 10 us < 20 us, fcwnd + 1/100;
    // endpoint delay 50 us > 25 us: ecwnd x max(1 - 0.8 x 25 / 50, 0.5) = x 0.6.
    let d = ack(&mut cc, us(1), 1000, us(60), us(50));
    assert!(close(cc.fcwnd(), 100.01));
    assert!(close(cc.ecwnd(), 60.0));
    assert_eq!(d.cwnd, Some(60_000));
    let t = trace(&cc);
    assert_eq!((t[0].0, t[1]), ("fcwnd", ("ecwnd", cc.ecwnd())));
    // The endpoint window has its own decrease clock and floor (min_ecwnd = 1).
    ack(&mut cc, us(2), 1000, us(60), us(50));
    assert!(close(cc.ecwnd(), 60.0));
    for k in 1..=10 {
        ack(&mut cc, us(1 + 60 * k), 1000, us(60), us(50));
    }
    assert_eq!(cc.ecwnd(), 1.0);
    // Without a receiver delay measurement the RTT is all fabric delay.
    let (mut cc, _) = started(flat(100.0));
    let mut a = Ack::single(1000, 1, false, Some(us(60)), 0, 0, 0, 0);
    a.remote_delay = None;
    cc.on_ack(&a, &mut Ctx::new(us(1)));
    assert!(close(cc.fcwnd(), 50.0) && close(cc.ecwnd(), 100.01));
}

#[test]
fn paces_one_packet_per_rtt_over_cwnd_below_one_packet() {
    let (mut cc, d) = started(flat(0.5));
    // Before any RTT sample: the base RTT. 0.5 x 1048 B x 8 / 10 us = 419.2 Mb/s; 500 B window.
    assert_eq!((d.cwnd, d.rate), (Some(500), Some(419_200_000)));
    // RTT 40 us over target (20 us): x max(1 - 0.8 x 20 / 40, 0.5) = x 0.6 = 0.3 packet, paced over the
    // smoothed RTT (first sample, 40 us): 0.3 x 8384 / 40 us = 62.88 Mb/s.
    let d = ack(&mut cc, us(1), 1000, us(40), 0);
    assert!(close(cc.cwnd(), 0.3));
    assert_eq!((d.cwnd, d.rate), (Some(300), Some(62_880_000)));
    // An increase within the decrease's RTT: 0.3 + 1 packet (below one packet, ai per packet) = 1.3,
    // window-limited again at line rate. srtt = 0.75 x 40 + 0.25 x 16 = 34 us.
    let d = ack(&mut cc, us(2), 1000, us(16), 0);
    assert!(close(cc.cwnd(), 1.3));
    assert_eq!((d.cwnd, d.rate), (Some(1300), Some(G100)));
    assert_eq!(cc.srtt(), Some(us(34)));
}

#[test]
fn parameters_overlay_and_unknown_ones_are_rejected() {
    assert_eq!(SwiftConfig::resolve(&toml::Table::new()).unwrap(), defaults());
    let c = SwiftConfig::resolve(&params("base_target = \"5us\"\ninit_cwnd = 2.5\nendpoint_target = \"8us\""));
    let c = c.unwrap();
    assert_eq!((c.base_target, c.init_cwnd, c.endpoint_target), (us(5), Some(2.5), us(8)));

    let e = SwiftConfig::resolve(&params("target = \"10us\"")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target"));
    assert!(e.message.contains("base_target") && e.message.contains("init_cwnd"), "{e}");
    for (text, key) in [
        ("beta = 1.0", "beta"),
        ("max_mdf = 0.0", "max_mdf"),
        ("ai = 0.0", "ai"),
        ("min_cwnd = 0.0", "min_cwnd"),
        ("max_cwnd = 0.001", "max_cwnd"),
        ("fs_max_cwnd = 0.1", "fs_max_cwnd"),
        ("fs_min_cwnd = 0.0", "fs_min_cwnd"),
        ("init_cwnd = -1.0", "init_cwnd"),
        ("retx_reset_threshold = 0", "retx_reset_threshold"),
        ("rtt_smoothing = 1.0", "rtt_smoothing"),
        ("base_target = 25", "base_target"),
    ] {
        let e = match (ALGORITHM.build)(&params(text), G100) {
            Ok(_) => panic!("`{text}` was accepted"),
            Err(e) => e,
        };
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
    let factory = (ALGORITHM.build)(&params("per_hop = \"500ns\""), G100).unwrap();
    assert_eq!(factory.resolved().get("per_hop"), Some(&toml::Value::String("500ns".into())));
    assert_eq!(factory.create(&flow(G100)).name(), "swift");
}
