//! Reno driven directly with hand-built ACKs and losses; expected values are derived in the comments.

mod common;

use common::{ack, flow, loss, trace, G100, MSS};
use sluice_cc::reno::{self, Reno, RenoConfig};
use sluice_cc::{Ack, CongestionControl, Control, Ctx, Events, LossKind, Needs};

fn config(init_cwnd: u32, init_ssthresh: Option<u32>) -> RenoConfig {
    RenoConfig { init_cwnd_packets: init_cwnd, init_ssthresh_packets: init_ssthresh, ..RenoConfig::default() }
}

fn started(config: RenoConfig) -> Reno {
    let mut cc = Reno::new(config);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!(ctx.decisions().cwnd, Some(cc.cwnd()));
    cc
}

/// Feeds one report of `acks` ACKs and returns the window decision it produced.
fn on_acks(cc: &mut Reno, acks: u32, acked: u64, snd_una: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_ack(&Ack { acks, ..ack(acked, snd_una, snd_nxt, false) }, &mut ctx);
    ctx.decisions().cwnd
}

fn on_ack(cc: &mut Reno, acked: u64, snd_una: u64, snd_nxt: u64) -> Option<u64> {
    on_acks(cc, 1, acked, snd_una, snd_nxt)
}

fn on_loss(cc: &mut Reno, kind: LossKind, in_flight: u64, snd_nxt: u64) -> Option<u64> {
    let mut ctx = Ctx::new(0);
    cc.on_loss(&loss(kind, in_flight, snd_nxt), &mut ctx);
    ctx.decisions().cwnd
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

/// An ACK-clocked sender: packets leave while they fit in the window; the ACK of the oldest outstanding
/// packet arrives next, so one window of ACKs is one round trip.
struct Sender {
    cc: Reno,
    snd_una: u64,
    snd_nxt: u64,
}

impl Sender {
    fn new(config: RenoConfig) -> Sender {
        let mut s = Sender { cc: started(config), snd_una: 0, snd_nxt: 0 };
        s.fill();
        s
    }

    fn fill(&mut self) {
        while self.snd_nxt + MSS <= self.snd_una + self.cc.cwnd() {
            self.snd_nxt += MSS;
        }
    }

    fn ack(&mut self) {
        self.snd_una += MSS;
        on_ack(&mut self.cc, MSS, self.snd_una, self.snd_nxt);
        self.fill();
    }

    /// Acknowledges the window outstanding now (one round trip).
    fn round_trip(&mut self) {
        for _ in 0..(self.snd_nxt - self.snd_una) / MSS {
            self.ack();
        }
    }
}

#[test]
fn registers_as_a_window_algorithm_and_starts_with_ten_segments() {
    assert_eq!(reno::ALGORITHM.name, "reno");
    assert_eq!(reno::ALGORITHM.control, Control::Window);
    assert_eq!(reno::ALGORITHM.needs, Needs::default());
    let cc = started(RenoConfig::default());
    assert_eq!(cc.name(), "reno");
    assert_eq!(cc.cwnd(), 10 * MSS, "RFC 6928 initial window");
    assert_eq!(cc.ssthresh(), u64::MAX);
    assert_eq!(cc.events(), Events::ACK | Events::LOSS);
    assert_eq!(trace(&cc), [("cwnd", 10_000.0), ("ssthresh", u64::MAX as f64)]);
    assert_eq!(trace(&started(config(1, Some(64))))[1].1, 64_000.0);
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    // One MSS per ACKed segment: a round trip of 10 ACKs adds 10 segments, then 20, then 40.
    let mut s = Sender::new(RenoConfig::default());
    for want in [20_000, 40_000, 80_000, 160_000] {
        s.round_trip();
        assert_eq!(s.cc.cwnd(), want);
        assert_eq!(s.snd_nxt - s.snd_una, want, "the whole window is in flight again");
    }
}

#[test]
fn slow_start_counts_bytes_up_to_l_segments_per_ack() {
    let mut cc = started(RenoConfig::default());
    // A stretch ACK of 3 segments adds L = 2 segments (RFC 3465 §2.2).
    assert_eq!(on_ack(&mut cc, 3000, 3000, 10_000), Some(12_000));
    // Three ACKs of one segment folded into one report add all 3000 bytes: min(3000, 3 * 2 * 1000).
    assert_eq!(on_acks(&mut cc, 3, 3000, 6000, 12_000), Some(15_000));
    // Two stretch ACKs of 3 segments each, folded: min(6000, 2 * 2 * 1000) = 4000.
    assert_eq!(on_acks(&mut cc, 2, 6000, 12_000, 15_000), Some(19_000));
    // A duplicate ACK (no new data) does nothing.
    assert_eq!(on_ack(&mut cc, 0, 12_000, 19_000), None);

    // With L = 1 (RFC 5681 §3.1) the stretch ACK adds one segment.
    let mut one = started(RenoConfig { abc_limit_packets: 1, ..RenoConfig::default() });
    assert_eq!(on_ack(&mut one, 3000, 3000, 10_000), Some(11_000));
}

#[test]
fn slow_start_stops_at_ssthresh_and_passes_the_rest_to_avoidance() {
    let mut cc = started(config(9, Some(10)));
    // 5 ACKs folded, 5000 bytes: slow start adds only 1000 to reach ssthresh = 10000; the other 4000 bytes
    // count toward congestion avoidance.
    assert_eq!(on_acks(&mut cc, 5, 5000, 5000, 10_000), Some(10_000));
    // 4000 + 6000 = one window of 10000 bytes: +1 MSS.
    assert_eq!(on_acks(&mut cc, 6, 6000, 11_000, 20_000), Some(11_000));
    assert_eq!(on_ack(&mut cc, 1000, 12_000, 20_000), None);
}

#[test]
fn congestion_avoidance_adds_one_segment_per_window_of_acknowledged_bytes() {
    let mut cc = started(config(10, Some(10)));
    // cwnd = ssthresh = 10000: nine ACKs of 1000 bytes leave the window; the tenth completes a window.
    for i in 1..10 {
        assert_eq!(on_ack(&mut cc, MSS, i * MSS, 10_000), None, "ACK {i}");
    }
    assert_eq!(on_ack(&mut cc, MSS, 10_000, 11_000), Some(11_000));
    // The next increase needs a full 11000 bytes.
    for i in 11..21 {
        assert_eq!(on_ack(&mut cc, MSS, i * MSS, 21_000), None, "ACK {i}");
    }
    assert_eq!(on_ack(&mut cc, MSS, 21_000, 22_000), Some(12_000));
    // A folded report of 25000 bytes spans two windows of 12000: +2 MSS, 1000 bytes carried.
    assert_eq!(on_acks(&mut cc, 25, 25_000, 46_000, 60_000), Some(14_000));
    // 1000 carried + 13000 = one window of 14000.
    assert_eq!(on_acks(&mut cc, 13, 13_000, 59_000, 60_000), Some(15_000));

    // ACK-clocked: one segment per round trip, whatever the window.
    let mut s = Sender::new(config(10, Some(10)));
    for k in 1..=5 {
        s.round_trip();
        assert_eq!(s.cc.cwnd(), (10 + k) * MSS, "round trip {k}");
    }
}

#[test]
fn loss_halves_the_flight_once_per_window() {
    let mut cc = started(config(20, None));
    assert_eq!(on_ack(&mut cc, MSS, 1000, 21_000), Some(21_000));
    // 20000 bytes in flight: ssthresh = cwnd = 10000, no 3-MSS inflation.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 20_000, 21_000), Some(10_000));
    assert_eq!(cc.ssthresh(), 10_000);
    assert!(cc.in_fast_recovery());
    // Until snd_una reaches 21000 (snd_nxt at the loss): no further cut and no growth.
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 19_000, 21_000), None);
    assert_eq!(on_ack(&mut cc, MSS, 2000, 21_000), None);
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 18_000, 21_000), None);
    assert_eq!(on_ack(&mut cc, MSS, 3000, 21_000), None);
    assert_eq!(cc.cwnd(), 10_000);
    // The retransmission fills the hole: the ACK point jumps to 21000 (18000 bytes) and recovery ends;
    // congestion avoidance counts the 18000 bytes: one window of 10000, 8000 carried.
    assert_eq!(on_ack(&mut cc, 18_000, 21_000, 31_000), Some(11_000));
    assert!(!cc.in_fast_recovery());
    // A loss in the next window cuts again: 10000 in flight -> 5000.
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 10_000, 31_000), Some(5000));
    assert_eq!(trace(&cc), [("cwnd", 5000.0), ("ssthresh", 5000.0)]);
}

#[test]
fn loss_counts_the_data_outstanding_before_a_go_back_n_rewind() {
    let mut cc = started(config(30, None));
    on_ack(&mut cc, MSS, 1000, 30_000);
    // A go-back-N datapath rewinds snd_nxt to the hole before reporting: in_flight 0, snd_nxt 1000. The
    // flight is still the 29000 bytes sent beyond the ACK point: ssthresh = 14500.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 0, 1000), Some(14_500));
    // The loss window still runs to 30000, the highest byte sent.
    assert_eq!(on_loss(&mut cc, LossKind::Nack, 0, 1000), None);
    assert_eq!(on_ack(&mut cc, 28_000, 29_000, 29_000), None);
    assert!(cc.in_fast_recovery());
    assert_eq!(on_ack(&mut cc, 1000, 30_000, 31_000), None, "recovery ends; 1000 bytes toward avoidance");
    assert!(!cc.in_fast_recovery());
}

#[test]
fn timeout_restarts_from_one_segment_and_counts_one_segment_per_ack_until_recovered() {
    let mut cc = started(config(20, None));
    on_ack(&mut cc, MSS, 1000, 20_000);
    // ssthresh = 19000 / 2 = 9500; cwnd = the 1-segment loss window (RFC 5681 §3.1).
    assert_eq!(on_loss(&mut cc, LossKind::Timeout, 19_000, 20_000), Some(1000));
    assert_eq!(cc.ssthresh(), 9500);
    assert!(!cc.in_fast_recovery());
    // Slow start at once; a stretch ACK adds one segment while data sent before the timeout is
    // outstanding (RFC 3465 §2.3: L = 1).
    assert_eq!(on_ack(&mut cc, MSS, 2000, 3000), Some(2000));
    assert_eq!(on_ack(&mut cc, 3000, 5000, 7000), Some(3000));
    // A fast retransmit of data sent before the timeout does not reduce again.
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 2000, 7000), None);
    // Once 20000 (highest sent at the timeout) is acknowledged, L = 2 again.
    assert_eq!(on_ack(&mut cc, 15_000, 20_000, 22_000), Some(5000));
    assert_eq!(on_ack(&mut cc, 3000, 23_000, 26_000), Some(7000));
    // A fast retransmit now reduces; 3000 in flight: max(1500, 2 MSS) = 2000.
    assert_eq!(on_loss(&mut cc, LossKind::FastRetransmit, 3000, 26_000), Some(2000));
    assert_eq!(cc.ssthresh(), 2000);
}

#[test]
fn parameters_overlay_the_defaults_and_unknown_ones_are_rejected() {
    assert_eq!(RenoConfig::resolve(&toml::Table::new()).unwrap(), RenoConfig::default());
    let c = RenoConfig::resolve(&params("init_ssthresh_packets = 64\nabc_limit_packets = 1")).unwrap();
    assert_eq!(c, RenoConfig { init_ssthresh_packets: Some(64), abc_limit_packets: 1, ..RenoConfig::default() });

    let e = RenoConfig::resolve(&params("init_window = 4")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("init_window"));
    assert!(e.message.contains("init_cwnd_packets") && e.message.contains("init_ssthresh_packets"), "{e}");
    let e = (reno::ALGORITHM.build)(&params("beta = 0.5"), G100).err().expect("rejected");
    assert_eq!(e.key.as_deref(), Some("beta"));
    for (text, key) in [
        ("init_cwnd_packets = 0", "init_cwnd_packets"),
        ("init_ssthresh_packets = 0", "init_ssthresh_packets"),
        ("min_cwnd_packets = 0", "min_cwnd_packets"),
        ("abc_limit_packets = 0", "abc_limit_packets"),
        ("abc_limit_packets = \"2\"", "abc_limit_packets"),
    ] {
        let e = (reno::ALGORITHM.build)(&params(text), G100).err().expect(text);
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
}

#[test]
fn resolved_parameters_build_the_same_controller_again() {
    let factory = (reno::ALGORITHM.build)(&params("init_cwnd_packets = 4"), G100).unwrap();
    let resolved = factory.resolved();
    assert_eq!(resolved["init_cwnd_packets"].as_integer(), Some(4));
    assert!(!resolved.contains_key("init_ssthresh_packets"), "unset threshold stays absent");
    let again = (reno::ALGORITHM.build)(&resolved, G100).unwrap();
    assert_eq!(again.resolved(), resolved);
    let mut cc = again.create(&flow(G100));
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(G100), &mut ctx);
    assert_eq!((cc.name(), ctx.decisions().cwnd), ("reno", Some(4000)));
}
