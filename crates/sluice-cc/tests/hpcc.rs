//! HPCC driven with hand-built INT records; expected values are derived in the comments.
//!
//! Every test uses the common flow: 100 Gb/s, T = 10 us, 1000 B payload + 48 B header per packet. So
//! `C T = 125000` wire bytes, `W_AI = 40 Mb/s x 10 us / 8 = 50` bytes, the window floor is one 1048 B
//! packet, and the datapath window is `W x 1000/1048` payload bytes. A port running at utilization `x` for
//! `T` moves `x 125000` bytes; a queue of `q` bytes adds `q / 125000` to `u'` (at 100 Gb/s and T).

mod common;

use common::{flow, trace, us, G100, MSS};
use sluice_cc::hpcc::{Hpcc, HpccConfig, ALGORITHM};
use sluice_cc::registry::merge_params;
use sluice_cc::{CongestionControl, Control, Ctx, Decisions, Events, IntHop, Needs};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_S};

const T: Time = 10_000_000;
const BDP: f64 = 125_000.0;
const W_AI: f64 = 50.0;
const ETA: f64 = 0.95;

fn assert_close(actual: f64, expected: f64, what: &str) {
    let tolerance = 1e-9 * expected.abs().max(1.0);
    assert!((actual - expected).abs() <= tolerance, "{what}: {actual} != {expected}");
}

fn defaults() -> HpccConfig {
    HpccConfig::for_line_rate(G100)
}

/// The datapath window of a wire window `w`.
fn cwnd_of(w: f64) -> u64 {
    (w * 1000.0 / 1048.0).round() as u64
}

/// The pacing rate of a wire window `w` at T = 10 us.
fn rate_of(w: f64) -> Rate {
    (w * 8.0 * PS_PER_S as f64 / T as f64).round() as Rate
}

/// A switch egress port that stamps INT records.
#[derive(Debug, Clone, Copy)]
struct Port {
    ts: Time,
    tx: u64,
    rate: Rate,
}

impl Port {
    fn new(rate: Rate) -> Port {
        Port { ts: us(100), tx: 7_000_000, rate }
    }

    /// Runs the port for `dt` at `util` of its rate, then stamps a record with a queue of `qlen` bytes.
    fn run(&mut self, dt: Time, util: f64, qlen: u64) -> IntHop {
        self.ts += dt;
        self.tx += (util * self.rate as f64 * dt as f64 / 8.0 / PS_PER_S as f64).round() as u64;
        IntHop { ts: self.ts, tx_bytes: self.tx, qlen, rate: self.rate }
    }
}

/// A flow's sender: its controller and ACK points.
struct Sender {
    cc: Hpcc,
    una: u64,
    nxt: u64,
}

impl Sender {
    fn start(config: HpccConfig) -> (Sender, Decisions) {
        let mut cc = Hpcc::new(config);
        let mut ctx = Ctx::new(0);
        cc.on_start(&flow(G100), &mut ctx);
        (Sender { cc, una: 0, nxt: 0 }, *ctx.decisions())
    }

    /// An ACK past `lastUpdateSeq` (a reference update); 1000 packets are then outstanding.
    fn update(&mut self, int: &[IntHop]) -> Decisions {
        self.una = self.nxt + MSS;
        self.nxt = self.una + 1000 * MSS;
        let d = self.ack(int);
        assert_eq!(self.cc.last_update_seq(), self.nxt);
        d
    }

    /// An ACK within the RTT: the ACK point moves but does not pass `lastUpdateSeq`.
    fn fast(&mut self, int: &[IntHop]) -> Decisions {
        self.una += MSS;
        assert!(self.una <= self.cc.last_update_seq(), "a fast ACK must not pass lastUpdateSeq");
        self.ack(int)
    }

    fn ack(&mut self, int: &[IntHop]) -> Decisions {
        let mut ack = common::ack(MSS, self.una, self.nxt, false);
        ack.int = int;
        let mut ctx = Ctx::new(0);
        self.cc.on_ack(&ack, &mut ctx);
        *ctx.decisions()
    }

    /// `(W, Wc, U, incStage)`.
    fn state(&self) -> (f64, f64, f64, u32) {
        (self.cc.window(), self.cc.reference_window(), self.cc.utilization(), self.cc.inc_stage())
    }

    fn assert_state(&self, w: f64, wc: f64, u: f64, stage: u32) {
        let (aw, awc, au, astage) = self.state();
        assert_close(aw, w, "W");
        assert_close(awc, wc, "Wc");
        assert_close(au, u, "U");
        assert_eq!(astage, stage, "incStage");
    }
}

/// Starts a flow on one 100G port and congests it once: a standing 112500 B queue (0.9) on a full link
/// gives u' = 1.9, U = 1.9 (tau = T), so W = Wc = 125000 / (1.9/0.95) + 50 = 62550 at stage 0.
fn congested_once(config: HpccConfig) -> (Sender, Port) {
    let (mut s, _) = Sender::start(config);
    let mut port = Port::new(G100);
    s.update(&[port.run(0, 0.0, 112_500)]);
    s.update(&[port.run(T, 1.0, 112_500)]);
    s.assert_state(62_550.0, 62_550.0, 1.9, 0);
    (s, port)
}

#[test]
fn starts_at_one_bdp_and_line_rate() {
    let (s, d) = Sender::start(defaults());
    // 125000 wire bytes = 119274.8 payload bytes.
    assert_eq!(d.cwnd, Some(119_275));
    assert_eq!(d.rate, Some(G100));
    assert_eq!(s.cc.w_ai(), W_AI);
    assert_eq!(s.cc.events(), Events::ACK);
    assert_eq!(s.cc.name(), "hpcc");
    assert_eq!(trace(&s.cc), [("window", BDP), ("reference_window", BDP), ("utilization", 1.0), ("inc_stage", 0.0)]);
}

#[test]
fn t_and_w_ai_defaults_and_overrides() {
    // 25 Gb/s: rate_ai = 10 Mb/s, W_AI = 10 Mb/s x 10 us / 8 = 12.5 bytes; W_init = 31250.
    let mut cc = Hpcc::new(HpccConfig::for_line_rate(25_000_000_000));
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow(25_000_000_000), &mut ctx);
    assert_eq!((cc.w_ai(), cc.window()), (12.5, 31_250.0));

    // T = 20 us: W_init = 250000, W_AI = 100; an explicit w_ai wins.
    let (s, _) = Sender::start(HpccConfig { t: Some(us(20)), ..defaults() });
    assert_eq!((s.cc.w_ai(), s.cc.window()), (100.0, 250_000.0));
    assert_eq!(s.cc.rate(), G100);
    let (s, _) = Sender::start(HpccConfig { w_ai: Some(1000), ..defaults() });
    assert_eq!(s.cc.w_ai(), 1000.0);
}

/// (d) The first ACK stores INT, reacts to nothing, and sets lastUpdateSeq = snd_nxt.
#[test]
fn first_ack_only_stores_int() {
    let (mut s, _) = Sender::start(defaults());
    let mut port = Port::new(G100);
    let before = trace(&s.cc);
    // A record showing a 1 MB queue: no reaction, whatever it says.
    let d = s.update(&[port.run(0, 0.0, 1_000_000)]);
    assert_eq!(d, Decisions::default());
    assert_eq!(trace(&s.cc), before);

    // The next ACK is measured against it: 125000 B in T at 100G, min(queue 0, 1 MB) = 0: u' = 1,
    // U = 1 (tau = T). Within the first RTT: W = 125000 / (1/0.95) + 50 = 118800, Wc unchanged.
    let d = s.fast(&[port.run(T, 1.0, 0)]);
    s.assert_state(118_800.0, BDP, 1.0, 0);
    assert_eq!(d.cwnd, Some(cwnd_of(118_800.0)));
    assert_eq!(d.rate, Some(rate_of(118_800.0)));
}

/// (a) On an idle link (u' = 0) the window grows by W_AI per reference update for maxStage updates,
/// then the multiplicative step Wc / (0/eta) is unbounded and the window reaches its cap C T.
#[test]
fn idle_link_additive_then_multiplicative_increase_to_the_cap() {
    let (mut s, mut port) = congested_once(defaults());
    // Queue gone (min(0, 112500) = 0), no traffic: u' = 0, U = 0 < eta.
    for stage in 1..=5 {
        s.update(&[port.run(T, 0.0, 0)]);
        let w = 62_550.0 + stage as f64 * W_AI;
        s.assert_state(w, w, 0.0, stage);
    }
    // incStage = maxStage: W = 62800 / (0/0.95) + 50, capped at 125000; incStage = 0.
    let d = s.update(&[port.run(T, 0.0, 0)]);
    s.assert_state(BDP, BDP, 0.0, 0);
    assert_eq!(d.cwnd, Some(119_275));
    assert_eq!(d.rate, Some(G100));
    // Additive increase at the cap stays at the cap.
    s.update(&[port.run(T, 0.0, 0)]);
    s.assert_state(BDP, BDP, 0.0, 1);
}

/// (a) On a half-loaded link (u' = 0.5 < eta) the same five additive rounds, then
/// W = Wc / (U/eta) + W_AI = 62800 / (0.5/0.95) + 50 = 119370.
#[test]
fn half_loaded_link_multiplicative_increase_follows_the_formula() {
    let (mut s, mut port) = congested_once(defaults());
    for stage in 1..=5 {
        s.update(&[port.run(T, 0.5, 0)]);
        let w = 62_550.0 + stage as f64 * W_AI;
        s.assert_state(w, w, 0.5, stage);
    }
    let d = s.update(&[port.run(T, 0.5, 0)]);
    let w = 62_800.0 / (0.5 / ETA) + W_AI;
    assert_close(w, 119_370.0, "hand-derived");
    s.assert_state(w, w, 0.5, 0);
    // 119370 x 8 / 10 us = 95.496 Gb/s.
    assert_eq!(d.rate, Some(95_496_000_000));
    assert_eq!(d.cwnd, Some(cwnd_of(w)));

    // max_stage = 0 (the artifact's run.py MI_THRESH 0): the multiplicative step at once.
    let (mut s, mut port) = congested_once(HpccConfig { max_stage: 0, ..defaults() });
    s.update(&[port.run(T, 0.5, 0)]);
    let w = 62_550.0 / (0.5 / ETA) + W_AI;
    s.assert_state(w, w, 0.5, 0);
}

/// (b) A full link with a standing queue of q = 25000 B: u' = 1 + 25000 x 8 / (100G x 10 us) = 1.2.
/// With one record every T/4, U = (3/4) U + (1/4) 1.2, so from U = 1: U_n = 1.2 - 0.2 (3/4)^n.
#[test]
fn standing_queue_drives_u_above_one_and_shrinks_the_window() {
    let (mut s, _) = Sender::start(defaults());
    let mut port = Port::new(G100);
    s.update(&[port.run(0, 0.0, 25_000)]);
    for n in 1..=100 {
        s.fast(&[port.run(T / 4, 1.0, 25_000)]);
        let u = 1.2 - 0.2 * 0.75f64.powi(n);
        // Fast reaction from Wc = 125000 (U >= eta: multiplicative).
        s.assert_state(BDP / (u / ETA) + W_AI, BDP, u, 0);
    }
    // U has converged to 1.2. Each reference update: W = Wc / (1.2/0.95) + 50.
    let mut w = BDP;
    for _ in 0..5 {
        s.update(&[port.run(T / 4, 1.0, 25_000)]);
        w = w / (1.2 / ETA) + W_AI;
        s.assert_state(w, w, 1.2, 0);
    }
    // By hand: 99008.33, 78431.60, 62141.68, 49245.50, 39036.02.
    assert!((s.cc.window() - 39_036.02).abs() < 0.01, "fifth update: {}", s.cc.window());
    // The fixed point 50 / (1 - 0.95/1.2) = 240 B is below one packet: W ends at the 1048 B floor.
    for _ in 0..100 {
        s.update(&[port.run(T / 4, 1.0, 25_000)]);
    }
    s.assert_state(1048.0, 1048.0, 1.2, 0);
    assert_eq!(s.cc.cwnd(), MSS);
    // 1048 x 8 / 10 us = 838.4 Mb/s.
    assert_eq!(s.cc.rate(), 838_400_000);
}

/// (c) The bottleneck is the hop with the largest u', and its own tau weighs the sample.
#[test]
fn bottleneck_is_the_most_utilized_of_two_hops() {
    // Hop a: half loaded, sampled over T/2 (u' = 0.5). Hop b: full with a 12500 B queue (0.1), sampled
    // over T/4 (u' = 1.1). U = (1 - 1/4) 1 + (1/4) 1.1 = 1.025 (hop a's tau would give 1.05).
    for b_first in [false, true] {
        let (mut s, _) = Sender::start(defaults());
        let (mut a, mut b) = (Port::new(G100), Port::new(G100));
        let mut path = [a.run(0, 0.0, 0), b.run(0, 0.0, 12_500)];
        if b_first {
            path.swap(0, 1);
        }
        s.update(&path);
        let mut path = [a.run(T / 2, 0.5, 0), b.run(T / 4, 1.0, 12_500)];
        if b_first {
            path.swap(0, 1);
        }
        s.fast(&path);
        s.assert_state(BDP / (1.025 / ETA) + W_AI, BDP, 1.025, 0);
    }

    // Now hop a is the bottleneck: u' = 1.5 over T/2; U = (1/2) 1 + (1/2) 1.5 = 1.25.
    let (mut s, _) = Sender::start(defaults());
    let (mut a, mut b) = (Port::new(G100), Port::new(G100));
    s.update(&[a.run(0, 0.0, 0), b.run(0, 0.0, 0)]);
    s.fast(&[a.run(T / 2, 1.5, 0), b.run(T / 4, 0.9, 0)]);
    assert_close(s.cc.utilization(), 1.25, "U");
}

/// u' is relative to each hop's own link rate: 100 Gb/s through a 400 Gb/s port is u' = 0.25.
#[test]
fn utilization_is_per_hop_link_rate() {
    let (mut s, _) = Sender::start(defaults());
    let mut port = Port::new(4 * G100);
    s.update(&[port.run(0, 0.0, 0)]);
    s.fast(&[port.run(T, 0.25, 0)]);
    assert_close(s.cc.utilization(), 0.25, "U");
    // A 50000 B queue at 400G: 50000 x 8 / (400G x 10 us) = 0.1.
    s.fast(&[port.run(T, 0.25, 50_000)]);
    assert_close(s.cc.utilization(), 0.25, "min(50000, 0) = 0");
    s.fast(&[port.run(T, 0.25, 50_000)]);
    assert_close(s.cc.utilization(), 0.35, "U");
}

/// `multi_hop_max = false` (the artifact's MULTI_RATE): one U, Wc and incStage per hop; the smallest
/// per-hop window wins.
#[test]
fn per_hop_mode_keeps_one_reference_per_hop() {
    let (mut s, _) = Sender::start(HpccConfig { multi_hop_max: false, ..defaults() });
    let (mut a, mut b) = (Port::new(G100), Port::new(G100));
    s.update(&[a.run(0, 0.0, 0), b.run(0, 0.0, 112_500)]);
    // a: u' = 0.5 (its queue is new: min(112500, 0) = 0), additive: min(125050, cap) = 125000, stage 1.
    // b: u' = 1.9: 62550, stage 0. W = 62550.
    s.update(&[a.run(T, 0.5, 112_500), b.run(T, 1.0, 112_500)]);
    s.assert_state(62_550.0, 62_550.0, 1.9, 0);
    // a: u' = 1.9: 125000 / 2 + 50 = 62550, stage 0. b: idle, U_b = 0: 62550 + 50, stage 1.
    // W = 62550 (one U over both hops would give 62550 / 2 + 50 = 31325).
    s.update(&[a.run(T, 1.0, 112_500), b.run(T, 0.0, 0)]);
    // Trace: the largest U (1.9), the smallest Wc (a's) and its stage.
    s.assert_state(62_550.0, 62_550.0, 1.9, 0);
    // A fast ACK where only hop b has a fresh record: b at u' = 1: 62600 / (1/0.95) + 50 = 59520;
    // a offers its Wc (62550), not a new reaction to its old U. W = 59520; the references stay.
    let stale_a = IntHop { ts: a.ts, tx_bytes: a.tx, qlen: 112_500, rate: G100 };
    s.fast(&[stale_a, b.run(T, 1.0, 0)]);
    s.assert_state(59_520.0, 62_550.0, 1.9, 0);
}

/// (e) Within an RTT every ACK reacts from Wc, and only the reference update moves Wc and incStage.
#[test]
fn fast_reaction_uses_the_reference_window() {
    let (mut s, mut port) = congested_once(defaults());
    // U = 1.9: W = 62550 / 2 + 50 = 31325, Wc stays 62550.
    let d = s.fast(&[port.run(T, 1.0, 112_500)]);
    s.assert_state(31_325.0, 62_550.0, 1.9, 0);
    assert_eq!(d.cwnd, Some(cwnd_of(31_325.0)));
    // 31325 x 8 / 10 us = 25.06 Gb/s.
    assert_eq!(d.rate, Some(25_060_000_000));
    // Again: 31325 again (from Wc), not 31325 / 2 + 50; nothing changed, nothing published.
    let d = s.fast(&[port.run(T, 1.0, 112_500)]);
    s.assert_state(31_325.0, 62_550.0, 1.9, 0);
    assert_eq!(d, Decisions::default());
    // U = 0.5 < eta: additive from Wc, 62600, incStage not advanced.
    s.fast(&[port.run(T, 0.5, 0)]);
    s.assert_state(62_600.0, 62_550.0, 0.5, 0);
    // The reference update: the same window, now also Wc, and incStage 1.
    s.update(&[port.run(T, 0.5, 0)]);
    s.assert_state(62_600.0, 62_600.0, 0.5, 1);
}

/// Without fast reaction ACKs within the RTT are ignored, INT included: the next update measures from
/// the record of the previous update.
#[test]
fn without_fast_react_only_reference_updates_count() {
    let (mut s, mut port) = congested_once(HpccConfig { fast_react: false, ..defaults() });
    let d = s.fast(&[port.run(T, 1.0, 112_500)]);
    assert_eq!(d, Decisions::default());
    s.assert_state(62_550.0, 62_550.0, 1.9, 0);
    // Over 2T since the update: 125000 + 0 bytes, so 0.5 on average; queue min(0, 112500) = 0.
    // tau = 2T, capped at T: U = 0.5. Additive: 62600, stage 1.
    s.update(&[port.run(T, 0.0, 0)]);
    s.assert_state(62_600.0, 62_600.0, 0.5, 1);
}

/// (f) R = 8 W / T, capped at the line rate (here by a window floor above C T).
#[test]
fn rate_is_window_over_t_capped_at_line_rate() {
    let (s, _) = congested_once(defaults());
    // 62550 x 8 / 10 us = 50.04 Gb/s.
    assert_eq!(s.cc.rate(), 50_040_000_000);
    assert_eq!(s.cc.cwnd(), cwnd_of(62_550.0));

    // T = 50 ns: C T = 625 B is below one 1048 B packet, so W = 1048 and 8 W / T = 167.68 Gb/s,
    // capped at 100 Gb/s.
    let (s, d) = Sender::start(HpccConfig { t: Some(50 * PS_PER_NS), ..defaults() });
    assert_eq!(s.cc.window(), 1048.0);
    assert_eq!(d.cwnd, Some(MSS));
    assert_eq!(d.rate, Some(G100));
}

#[test]
fn stale_and_duplicate_records_are_skipped() {
    let (mut s, mut port) = congested_once(defaults());
    let older = IntHop { ts: port.ts - T, tx_bytes: port.tx - 1, qlen: 0, rate: G100 };
    let same = IntHop { ts: port.ts, tx_bytes: port.tx, qlen: 0, rate: G100 };
    let state = s.state();
    assert_eq!(s.fast(&[older]), Decisions::default());
    assert_eq!(s.fast(&[same]), Decisions::default());
    // An update ACK without a fresh record waits: lastUpdateSeq stays.
    let seq = s.cc.last_update_seq();
    s.nxt = seq + 2 * MSS;
    s.una = seq + MSS;
    assert_eq!(s.ack(&[same]), Decisions::default());
    assert_eq!(s.cc.last_update_seq(), seq);
    assert_eq!(s.state(), state);
    // The next record is measured against the kept one: U = 0.5 over T, an update (snd_una > seq).
    s.nxt = s.una + 1000 * MSS;
    s.ack(&[port.run(T, 0.5, 0)]);
    s.assert_state(62_600.0, 62_600.0, 0.5, 1);
    // A port counter that went backwards counts as no bytes.
    let mut back = port.run(T, 0.0, 0);
    back.tx_bytes -= 1_000_000;
    s.fast(&[back]);
    assert_close(s.cc.utilization(), 0.0, "U");
}

#[test]
fn a_changed_path_restarts_the_baseline() {
    let (mut s, mut port) = congested_once(defaults());
    let state = s.state();
    // A second hop appears: the records become the baseline, no reaction.
    let mut extra = Port::new(G100);
    assert_eq!(s.fast(&[port.run(T, 1.0, 0), extra.run(T, 0.0, 0)]), Decisions::default());
    assert_eq!(s.state(), state);
    // Then measured as two hops: max(0.5, 0.25) = 0.5.
    s.fast(&[port.run(T, 0.5, 0), extra.run(T, 0.25, 0)]);
    assert_close(s.cc.utilization(), 0.5, "U");
    // Same length, another link rate on hop 2: a new path again.
    let mut fast_link = Port::new(4 * G100);
    let state = s.state();
    assert_eq!(s.fast(&[port.run(T, 1.0, 0), fast_link.run(T, 1.0, 0)]), Decisions::default());
    assert_eq!(s.state(), state);
    // An ACK without INT is ignored.
    assert_eq!(s.fast(&[]), Decisions::default());
    assert_eq!(s.state(), state);
}

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

fn build_err(text: &str) -> sluice_cc::ParamError {
    match (ALGORITHM.build)(&params(text), G100) {
        Ok(_) => panic!("`{text}` was accepted"),
        Err(e) => e,
    }
}

#[test]
fn registry_entry_and_factory() {
    assert_eq!(ALGORITHM.name, "hpcc");
    assert_eq!(ALGORITHM.control, Control::WindowAndRate);
    assert_eq!(ALGORITHM.needs, Needs { int: true, ..Needs::NOTHING });
    let factory = (ALGORITHM.build)(&toml::Table::new(), G100).unwrap();
    assert_eq!(factory.cnp_interval(), None);
    let cc = factory.create(&flow(G100));
    assert_eq!((cc.name(), cc.events()), ("hpcc", Events::ACK));
    let resolved = factory.resolved();
    assert_eq!(resolved["eta"].as_float(), Some(0.95));
    assert_eq!(resolved["max_stage"].as_integer(), Some(5));
    assert_eq!(resolved["rate_ai"].as_str(), Some("40Mbps"));
    assert_eq!(resolved["fast_react"].as_bool(), Some(true));
    assert_eq!(resolved["multi_hop_max"].as_bool(), Some(true));
    assert!(!resolved.contains_key("w_ai") && !resolved.contains_key("t"));
}

#[test]
fn defaults_scale_with_line_rate_and_overlay() {
    assert_eq!(HpccConfig::for_line_rate(25_000_000_000).rate_ai, 10_000_000);
    assert_eq!(HpccConfig::for_line_rate(4 * G100).rate_ai, 160_000_000);
    assert_eq!(HpccConfig::resolve(&toml::Table::new(), G100).unwrap(), defaults());
    let c = HpccConfig::resolve(&params("eta = 0.9\nw_ai = \"1KB\"\nt = \"12us\"\nfast_react = false"), G100).unwrap();
    assert_eq!((c.eta, c.w_ai, c.t, c.fast_react), (0.9, Some(1000), Some(us(12)), false));
    assert_eq!((c.max_stage, c.multi_hop_max, c.rate_ai), (5, true, 40_000_000));
}

#[test]
fn unknown_and_invalid_parameters_are_rejected() {
    let e = merge_params(&defaults(), &params("gamma = 1")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("gamma"));
    let e = build_err("max_stages = 3");
    assert_eq!(e.key.as_deref(), Some("max_stages"));
    assert!(e.message.ends_with("(known: eta, max_stage, rate_ai, w_ai, t, fast_react, multi_hop_max)"), "{e}");
    for (text, key) in [
        ("eta = 0.0", "eta"),
        ("eta = 1.5", "eta"),
        ("eta = \"high\"", "eta"),
        ("t = \"0us\"", "t"),
        ("t = 10", "t"),
        ("rate_ai = 40", "rate_ai"),
        ("w_ai = -1", "w_ai"),
        ("max_stage = -1", "max_stage"),
        ("fast_react = 1", "fast_react"),
        ("w_ai = 100\nrate_ai = \"40Mbps\"", "w_ai"),
    ] {
        let e = build_err(text);
        assert_eq!(e.key.as_deref(), Some(key), "`{text}`: {e}");
    }
}
