//! Bolt driven with hand-built ACKs (path flags), queue notifications and losses; expected windows are
//! derived in the comments. The test flow has 1000 B segments, 48 B headers (1048 B on the wire), a
//! 100 Gb/s NIC and a 10 us base RTT: its BDP is 100e9 x 10e-6 / 8 = 125 000 B.

mod common;

use common::{flow, loss, trace, us, G100, MSS};
use sluice_cc::api::{PATH_AI, PATH_DECWIN, PATH_FIRST, PATH_INCWIN, PATH_LAST};
use sluice_cc::bolt::{Bolt, BoltConfig, ALGORITHM};
use sluice_cc::{
    Ack, CongestionControl, Control, Ctx, Decisions, Events, Feedback, FlowInfo, LossKind, Needs, ReportPolicy,
};
use sluice_core::Time;

const BDP: u64 = 125_000;
const WIRE: u64 = 1048;

fn with_cwnd(init: u64) -> BoltConfig {
    BoltConfig { init_cwnd: Some(init), ..BoltConfig::default() }
}

fn started(config: BoltConfig) -> (Bolt, Decisions) {
    let mut cc = Bolt::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    (cc, *ctx.decisions())
}

/// An ACK at `now` echoing `flags`, with RTT sample `rtt`.
fn ack(cc: &mut Bolt, now: Time, flags: u8, rtt: Option<Time>) -> Decisions {
    let mut a = Ack::single(MSS, 1, false, rtt, 0, 0, 0, now);
    a.path_flags = flags;
    let mut ctx = Ctx::new(now);
    cc.on_ack(&a, &mut ctx);
    *ctx.decisions()
}

/// A notification arriving at `now` about a packet sent at `sent_at` that met `queue` bytes at a
/// 100 Gb/s port.
fn notify(cc: &mut Bolt, now: Time, queue: u64, sent_at: Time) -> Decisions {
    let fb = Feedback::QueueNotification { queue, link_rate: G100, at: now - 1, sent_at };
    let mut ctx = Ctx::new(now);
    cc.on_feedback(&fb, &mut ctx);
    *ctx.decisions()
}

fn lose(cc: &mut Bolt, now: Time, kind: LossKind) -> Decisions {
    let mut ctx = Ctx::new(now);
    cc.on_loss(&loss(kind, 0, 0), &mut ctx);
    *ctx.decisions()
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

#[test]
fn registry_entry_events_and_trace() {
    assert_eq!(ALGORITHM.name, "bolt");
    assert_eq!(ALGORITHM.control, Control::WindowAndRate);
    assert_eq!(ALGORITHM.needs, Needs { bolt: true, ..Needs::NOTHING });
    assert!(sluice_cc::lookup("bolt").is_some());
    let (cc, _) = started(BoltConfig::default());
    assert_eq!(cc.events(), Events::ACK | Events::FEEDBACK | Events::LOSS | Events::PACKET_FLAGS);
    assert_eq!(cc.report_policy(), ReportPolicy::default());
    assert_eq!(trace(&cc), vec![("cwnd", BDP as f64), ("src_queue", 0.0), ("rtt_ns", 0.0)]);
}

#[test]
fn starts_at_the_bdp_at_line_rate() {
    let (cc, d) = started(BoltConfig::default());
    assert_eq!(cc.cwnd(), BDP);
    assert_eq!(d.cwnd, Some(BDP));
    assert_eq!(d.rate, Some(G100));
    // An explicit initial window is clamped to the largest window, the BDP by default.
    let (cc, _) = started(with_cwnd(200_000));
    assert_eq!(cc.cwnd(), BDP);
    let (cc, _) = started(BoltConfig { init_cwnd: Some(200_000), max_cwnd: Some(300_000), ..BoltConfig::default() });
    assert_eq!(cc.cwnd(), 200_000);
}

#[test]
fn packet_flags_follow_the_window_position() {
    let (mut cc, _) = started(with_cwnd(50_000));
    // First window: FIRST; the flow's first packet also carries the AI marker, the next one does not.
    assert_eq!(cc.packet_flags(0, 1_000_000), PATH_FIRST | PATH_AI);
    assert_eq!(cc.packet_flags(1000, 999_000), PATH_FIRST);
    // A first-window packet within one window of the end is also LAST.
    assert_eq!(cc.packet_flags(960_000, 40_000), PATH_FIRST | PATH_LAST);
    ack(&mut cc, us(10), 0, Some(us(10)));
    // After the first ACK: INCWIN while cwnd (50 000) < bytes left, LAST once cwnd >= bytes left.
    assert_eq!(cc.packet_flags(2000, 998_000), PATH_INCWIN);
    assert_eq!(cc.packet_flags(950_000, 50_000), PATH_LAST);
    assert_eq!(cc.packet_flags(999_000, 1000), PATH_LAST);
    // A flow without a known end never sends LAST.
    assert_eq!(cc.packet_flags(5000, u64::MAX), PATH_INCWIN);
}

#[test]
fn the_ai_marker_is_sent_once_per_round_trip() {
    let (mut cc, _) = started(with_cwnd(50_000));
    assert!(cc.ai_pending());
    assert_eq!(cc.packet_flags(0, u64::MAX) & PATH_AI, PATH_AI);
    assert!(!cc.ai_pending());
    // Plain ACKs neither grow the window nor re-arm the marker.
    let d = ack(&mut cc, us(10), 0, Some(us(10)));
    assert_eq!(d.cwnd, None);
    assert_eq!(cc.packet_flags(1000, u64::MAX) & PATH_AI, 0);
    // The marker's ACK: cwnd += ai x mss = 51 000, and the next packet carries it again.
    let d = ack(&mut cc, us(11), PATH_AI, Some(us(10)));
    assert_eq!(d.cwnd, Some(51_000));
    assert_eq!(cc.packet_flags(2000, u64::MAX) & PATH_AI, PATH_AI);
    // ai = 2.5: 50 000 + 2 500.
    let (mut cc, _) = started(BoltConfig { ai: 2.5, ..with_cwnd(50_000) });
    ack(&mut cc, us(10), PATH_AI, Some(us(10)));
    assert_eq!(cc.cwnd(), 52_500);
}

#[test]
fn incwin_kept_by_the_switches_grows_the_window_by_one_packet() {
    let (mut cc, _) = started(with_cwnd(50_000));
    ack(&mut cc, us(10), PATH_INCWIN, Some(us(10)));
    assert_eq!(cc.cwnd(), 51_000);
    // DECWIN: a switch notified about this packet, no growth (switches strip INCWIN then anyway).
    ack(&mut cc, us(11), PATH_INCWIN | PATH_DECWIN, Some(us(10)));
    assert_eq!(cc.cwnd(), 51_000);
    // INCWIN and AI together: + 1 000 + 1 000.
    ack(&mut cc, us(12), PATH_INCWIN | PATH_AI, Some(us(10)));
    assert_eq!(cc.cwnd(), 53_000);
    // Never past the largest window (the BDP).
    let (mut cc, _) = started(BoltConfig::default());
    let d = ack(&mut cc, us(10), PATH_INCWIN | PATH_AI, Some(us(10)));
    assert_eq!((cc.cwnd(), d.cwnd), (BDP, None));
}

#[test]
fn a_notification_removes_one_packet_per_interval() {
    let (mut cc, _) = started(with_cwnd(50_000));
    ack(&mut cc, us(10), 0, Some(us(10)));
    // share = (50 000 x 8 / 10 us) / 100 Gb/s = 40 Gb/s / 100 Gb/s = 0.4; q_pkts = 20 960 / 1048 = 20;
    // rtt_src = 5 us: interval = 5 us / (20 x 0.4) = 0.625 us, long passed since the start.
    let now = us(100);
    let d = notify(&mut cc, now, 20 * WIRE, now - us(5));
    assert_eq!(d.cwnd, Some(49_000));
    assert_eq!((cc.last_decrease(), cc.last_queue()), (now, 20 * WIRE));
    // share = 49 000 x 8 / 10 us / 100 Gb/s = 0.392: interval = 5 / (20 x 0.392) = 0.6378 us.
    // 0.5 us later: too early.
    let d = notify(&mut cc, now + 500_000, 20 * WIRE, now + 500_000 - us(5));
    assert_eq!((d.cwnd, cc.cwnd()), (None, 49_000));
    // 0.7 us after the decrease: 48 000.
    let d = notify(&mut cc, now + 700_000, 20 * WIRE, now + 700_000 - us(5));
    assert_eq!(d.cwnd, Some(48_000));
    assert_eq!(trace(&cc)[1], ("src_queue", (20 * WIRE) as f64));
}

#[test]
fn the_interval_scales_with_the_queue_beyond_the_target() {
    // target 10 480 B (10 packets): a 20-packet queue counts q_pkts = 10, interval = 5 / (10 x 0.4)
    // = 1.25 us.
    let (mut cc, _) = started(BoltConfig { target_queue: 10 * WIRE, ..with_cwnd(50_000) });
    ack(&mut cc, us(10), 0, Some(us(10)));
    let now = us(100);
    notify(&mut cc, now, 20 * WIRE, now - us(5));
    assert_eq!(cc.cwnd(), 49_000);
    // share 0.392: interval = 5 / (10 x 0.392) = 1.2755 us; 1.2 us is too early, 1.3 us is not.
    notify(&mut cc, now + 1_200_000, 20 * WIRE, now + 1_200_000 - us(5));
    assert_eq!(cc.cwnd(), 49_000);
    notify(&mut cc, now + 1_300_000, 20 * WIRE, now + 1_300_000 - us(5));
    assert_eq!(cc.cwnd(), 48_000);
    // A queue at or below the target changes nothing.
    notify(&mut cc, now + us(50), 10 * WIRE, now + us(45));
    assert_eq!(cc.cwnd(), 48_000);
}

#[test]
fn before_any_rtt_sample_the_share_is_the_line_rate_over_the_link_rate() {
    // A flow starting at 100 us, congested at a 400 Gb/s port: share = 100 / 400 = 0.25; q_pkts = 10,
    // rtt_src = 5 us: interval = 5 / (10 x 0.25) = 2 us, counted from the flow's start.
    let mut cc = Bolt::new(with_cwnd(50_000));
    cc.on_start(&FlowInfo { start: us(100), ..flow(G100) }, &mut Ctx::new(us(100)));
    let at = |now: Time| Feedback::QueueNotification {
        queue: 10 * WIRE,
        link_rate: 4 * G100,
        at: now,
        sent_at: now - us(5),
    };
    cc.on_feedback(&at(us(101) + 500_000), &mut Ctx::new(us(101) + 500_000));
    assert_eq!(cc.cwnd(), 50_000);
    cc.on_feedback(&at(us(102) + 500_000), &mut Ctx::new(us(102) + 500_000));
    assert_eq!(cc.cwnd(), 49_000);
}

#[test]
fn at_one_packet_or_less_every_notification_halves_the_window_and_paces() {
    let (mut cc, _) = started(with_cwnd(MSS));
    // cwnd <= mss: x (1 - 0.5) at once, no interval: 1000 -> 500 -> 250.
    let d = notify(&mut cc, us(1), 20 * WIRE, 0);
    assert_eq!(d.cwnd, Some(500));
    // Paced at cwnd/mss wire packets per RTT (the base RTT before any sample):
    // 0.5 x 1048 x 8 bit / 10 us = 419.2 Mb/s.
    assert_eq!(d.rate, Some(419_200_000));
    notify(&mut cc, us(1) + 1, 20 * WIRE, 0);
    assert_eq!(cc.cwnd(), 250);
    // The floor: 15 B.
    for i in 0..10 {
        notify(&mut cc, us(2) + i, 20 * WIRE, 0);
    }
    assert_eq!(cc.cwnd(), 15);
    // Back above one packet: line rate again (15 + 1000 + 1000 = 2015 B).
    let d = ack(&mut cc, us(20), PATH_INCWIN | PATH_AI, Some(us(10)));
    assert_eq!((d.cwnd, d.rate), (Some(2015), Some(G100)));
}

#[test]
fn losses_halve_the_window_at_most_once_per_rtt() {
    let (mut cc, _) = started(with_cwnd(50_000));
    ack(&mut cc, us(10), 0, Some(us(10)));
    cc.packet_flags(0, u64::MAX);
    assert!(!cc.ai_pending());
    // 20 us since the start >= rtt 10 us: 25 000; the marker is re-armed.
    let d = lose(&mut cc, us(20), LossKind::Nack);
    assert_eq!(d.cwnd, Some(25_000));
    assert!(cc.ai_pending());
    // 5 us later: within one RTT of the cut.
    lose(&mut cc, us(25), LossKind::Timeout);
    assert_eq!(cc.cwnd(), 25_000);
    // 10 us after the cut: 12 500.
    lose(&mut cc, us(30), LossKind::Timeout);
    assert_eq!(cc.cwnd(), 12_500);
}

#[test]
fn a_nack_ends_the_first_window_and_a_timeout_does_not() {
    let (mut cc, _) = started(with_cwnd(50_000));
    lose(&mut cc, us(20), LossKind::Timeout);
    assert_eq!(cc.packet_flags(0, u64::MAX) & PATH_FIRST, PATH_FIRST);
    lose(&mut cc, us(40), LossKind::Nack);
    assert_eq!(cc.packet_flags(0, u64::MAX) & PATH_FIRST, 0);
}

#[test]
fn parameters_resolve_and_are_checked() {
    let c = BoltConfig::resolve(&params("ai = 2.0\nmax_md = 0.25\ntarget_queue = 5000\nmax_cwnd = 90000")).unwrap();
    assert_eq!(
        c,
        BoltConfig { ai: 2.0, max_md: 0.25, target_queue: 5000, max_cwnd: Some(90_000), ..BoltConfig::default() }
    );
    for (text, key) in [
        ("max_md = 1.0", "max_md"),
        ("max_md = 0.0", "max_md"),
        ("ai = -1.0", "ai"),
        ("min_cwnd = 0", "min_cwnd"),
        ("init_cwnd = 0", "init_cwnd"),
        ("max_cwnd = 10", "max_cwnd"),
        ("beta = 0.5", "beta"),
    ] {
        let err = BoltConfig::resolve(&params(text)).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{text}: {err}");
    }
    let factory = (ALGORITHM.build)(&toml::Table::new(), G100).unwrap();
    let resolved = factory.resolved();
    assert_eq!(resolved.get("ai").and_then(|v| v.as_float()), Some(1.0));
    assert_eq!(resolved.get("min_cwnd").and_then(|v| v.as_integer()), Some(15));
    assert!(!resolved.contains_key("init_cwnd") && !resolved.contains_key("max_cwnd"));
}
