//! The receiver-driven (token-based) transport: each mechanism on a small network, with figures checked
//! against what the mechanism must do.

mod common;

use common::{bytes_in, dumbbell, port, series, star, time, Run};
use sluice_core::{Time, PS_PER_S};
use sluice_results::jain_fairness;
use sluice_sim::stats::RdCounters;
use sluice_sim::{Observe, SimOutput, StopRule};

const MTU: u64 = 1000;
const WIRE: u64 = 1082;
const TOKEN: u64 = 84;

fn params(pairs: &[(&str, toml::Value)]) -> toml::Table {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn rd(out: &SimOutput) -> &RdCounters {
    &out.counters.rd
}

fn all_finished(out: &SimOutput) {
    let unfinished = out.flows.iter().filter(|f| f.finish.is_none()).count();
    assert_eq!(unfinished, 0, "{unfinished} flows did not finish");
}

/// One sender, four receivers pulling at full rate each: the switch port toward the sender lets tokens
/// through at no more than token/(token + data) of its rate, drops the excess, and the data the tokens
/// release fills but does not exceed the sender's link.
#[test]
fn switch_token_limiter_caps_tokens_to_the_link_share() {
    let end = time("2ms");
    let mut run = Run::new(star(5, "100Gbps", "1us"), "expresspass");
    for r in 1..5 {
        run = run.long_flow(0, r, 0, end + time("1ms"));
    }
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe = Observe { throughput_ports: vec![(5, 0)], sample_interval: time("100us"), ..Observe::default() };
    let out = run.run();
    let c = rd(&out);
    assert!(c.tokens_dropped > 0, "four receivers' tokens exceed one link's share: {c:?}");
    // Tokens reaching the sender over the last millisecond, from the data port toward it (tokens only).
    let window = (time("1ms"), end);
    let tx = bytes_in(series(&out, "sw0:p0"), window.0, window.1);
    let tokens_per_s = (tx / TOKEN) as f64 / ((window.1 - window.0) as f64 / PS_PER_S as f64);
    let limit = 100e9 / ((TOKEN + WIRE) as f64 * 8.0);
    assert!(tokens_per_s <= limit * 1.001, "tokens {tokens_per_s:.0}/s above the limiter's {limit:.0}/s");
    assert!(tokens_per_s >= limit * 0.95, "tokens {tokens_per_s:.0}/s well below the limiter's {limit:.0}/s");
    let sender_port = port(&out, "sw0", 0);
    assert_eq!(sender_port.tx_bytes % TOKEN, 0, "only tokens travel toward the sender");
}

/// The receiver NIC's token pacer: one receiver, one flow, pacer on: the data rate is the link's data
/// share, and tokens leave the receiver exactly one gap apart.
#[test]
fn host_token_limiter_paces_tokens() {
    let size = 2_000_000;
    let out = Run::new(star(2, "100Gbps", "1us"), "tocc_nounsched").flow(0, 1, size, 0).run();
    all_finished(&out);
    let fct = out.flows[0].finish.unwrap() as f64 / PS_PER_S as f64;
    let data_rate = size as f64 * 8.0 / fct;
    let share = 100e9 * MTU as f64 / (TOKEN + WIRE) as f64;
    assert!(data_rate <= share * 1.001, "goodput {data_rate:.3e} above the limiter share {share:.3e}");
    assert!(data_rate >= share * 0.95, "goodput {data_rate:.3e} well below the limiter share {share:.3e}");
}

/// NDP: an 8:1 incast overflows the 8-packet data queue; the switch trims payloads instead of dropping,
/// every trimmed packet is resent once on a pull, nothing is lost, and the data queue stays at 8 packets.
#[test]
fn ndp_trims_overflow_to_headers_and_resends_them() {
    let mut run = Run::new(star(9, "100Gbps", "1us"), "ndp");
    for s in 1..9 {
        run = run.flow(s, 0, 500_000, 0);
    }
    let out = run.run();
    all_finished(&out);
    let c = rd(&out);
    assert!(c.trimmed > 100, "an 8:1 incast trims: {c:?}");
    assert_eq!(out.run.drops, 0, "trimming loses no packet");
    assert_eq!(out.run.retransmitted_bytes, c.trimmed * MTU, "each trimmed packet is resent once");
    let bottleneck = port(&out, "sw0", 0);
    // 8 data packets, plus the headers queued ahead of them and the one admitted at the limit.
    assert!(bottleneck.max_queue <= 9 * WIRE + 8 * 82, "data queue {} B above 8 packets", bottleneck.max_queue);
}

/// Aeolus: unscheduled packets that meet a queue above 8 KB are dropped; the probe after each burst
/// makes the receiver ask for them, and they arrive as scheduled packets. Without selective dropping the
/// same bursts queue at the bottleneck.
#[test]
fn aeolus_drops_unscheduled_above_threshold_and_recovers() {
    let build = |algorithm| {
        let mut run = Run::new(star(9, "100Gbps", "1us"), algorithm);
        if algorithm == "expresspass" {
            run.params = params(&[("unscheduled", "bdp".into())]);
        }
        for s in 1..9 {
            run = run.flow(s, 0, 200_000, 0);
        }
        run.run()
    };
    let aeolus = build("ep_aeolus");
    all_finished(&aeolus);
    let c = rd(&aeolus);
    assert!(c.unscheduled_dropped > 0, "{c:?}");
    assert_eq!(c.probes, 8, "one probe per flow");
    assert_eq!(aeolus.run.retransmitted_bytes, c.unscheduled_dropped * MTU, "each dropped packet is resent once");
    let passive = build("expresspass");
    all_finished(&passive);
    assert_eq!(rd(&passive).unscheduled_dropped, 0);
    let (qa, qp) = (port(&aeolus, "sw0", 0).max_queue, port(&passive, "sw0", 0).max_queue);
    println!("max queue: aeolus {qa} B, passive {qp} B");
    assert!(qa < 40_000, "Aeolus keeps the queue within a few packets of its 8 KB threshold: {qa} B");
    assert!(qp > 4 * qa, "passive unscheduled bursts queue more: {qp} B vs {qa} B");
}

/// Total volume control: the receiver stops granting once its grants cover the flow, so no token is
/// wasted; without it, tokens keep coming for the last round trip and the sender wastes them.
#[test]
fn volume_control_stops_tokens_once_the_flow_is_covered() {
    let run = |vc: bool| {
        let mut r = Run::new(star(2, "100Gbps", "1us"), "tocc_nounsched").flow(0, 1, 300_000, 0);
        r.params = params(&[
            ("volume_control", vc.into()),
            ("volume_by_flag", false.into()),
            ("token_cc", false.into()),
            ("token_ecn", false.into()),
        ]);
        r.run()
    };
    let with = run(true);
    all_finished(&with);
    assert_eq!(rd(&with).tokens_wasted, 0, "{:?}", rd(&with));
    assert_eq!(rd(&with).tokens_issued, 300, "one token per packet, no more");
    let without = run(false);
    all_finished(&without);
    assert!(
        rd(&without).tokens_wasted > 10,
        "about a window of tokens arrives after the last byte: {:?}",
        rd(&without)
    );
}

/// ToCC's flag-driven volume control: the receiver never reads the flow size, only the first window its
/// request announces and the "more than one BDP unsent" flag on data. For sizes on and off packet
/// boundaries, below one BDP, with and without the unscheduled phase, it issues exactly the tokens the
/// size-based control issues or fewer (one per scheduled packet: the size-based control also grants the
/// packet that straddles the unscheduled boundary), wastes none and never stalls into a timeout.
#[test]
fn flag_driven_volume_control_grants_exactly_the_scheduled_packets() {
    let run = |algorithm: &'static str, size: u64, by_flag: bool| {
        let mut r = Run::new(star(2, "100Gbps", "1us"), algorithm).flow(0, 1, size, 0);
        r.params = params(&[("volume_by_flag", by_flag.into())]);
        r.run()
    };
    for algorithm in ["tocc", "tocc_nounsched"] {
        for size in [20_000, 62_700, 300_000, 300_500, 1_234_567] {
            let flag = run(algorithm, size, true);
            all_finished(&flag);
            let c = rd(&flag);
            let scheduled_packets = c.scheduled_bytes.div_ceil(MTU);
            assert_eq!(c.tokens_issued, scheduled_packets, "{algorithm} {size}: {c:?}");
            assert_eq!((c.tokens_wasted, c.tokens_stale, c.rx_timeouts), (0, 0, 0), "{algorithm} {size}: {c:?}");
            let sized = run(algorithm, size, false);
            assert!(c.tokens_issued <= rd(&sized).tokens_issued, "{algorithm} {size}: never more than by size");
        }
    }
}

/// Flag-driven volume control under token congestion control: one sender to eight receivers, whose tokens
/// meet in the token queue toward the sender; it marks, so windows shrink and grants wait for room; every
/// flow still gets
/// exactly its tokens (none wasted, no loss timeout) and finishes.
#[test]
fn flag_driven_volume_control_holds_under_token_window_cuts() {
    let mut r = Run::new(star(9, "100Gbps", "1us"), "tocc_nounsched");
    let sizes: Vec<u64> = (1..9u64).map(|i| 200_000 + 13_001 * i).collect();
    for (i, &size) in sizes.iter().enumerate() {
        r = r.flow(0, i as u32 + 1, size, i as Time * time("3us"));
    }
    let out = r.run();
    all_finished(&out);
    let c = rd(&out);
    assert!(c.tokens_marked > 0, "the token queue must mark for this test to cut windows: {c:?}");
    let packets: u64 = sizes.iter().map(|s| s.div_ceil(MTU)).sum();
    assert_eq!(c.tokens_issued, packets, "{c:?}");
    assert_eq!((c.tokens_wasted, c.rx_timeouts), (0, 0), "{c:?}");
}

/// ExpressPass: four flows share a 100 Gbps bottleneck; credit drops at the bottleneck's credit limiter
/// drive each receiver's credit rate to a fair share that fills the link.
#[test]
fn expresspass_feedback_converges_to_fair_share() {
    const FLOWS: u32 = 4;
    let end = time("4ms");
    let (from, to) = (time("2ms"), end);
    let mut run = Run::new(dumbbell(FLOWS, "100Gbps", "100Gbps"), "expresspass");
    for i in 0..FLOWS {
        run = run.long_flow(i, FLOWS + i, i as Time * time("10us"), end + time("1ms"));
    }
    run.stop = StopRule { duration: Some(end), time_limit: end };
    run.observe =
        Observe { throughput_flows: (0..FLOWS).collect(), sample_interval: time("100us"), ..Observe::default() };
    let out = run.run();
    let secs = (to - from) as f64 / PS_PER_S as f64;
    let rates: Vec<f64> =
        (0..FLOWS).map(|i| bytes_in(series(&out, &format!("flow {i}")), from, to) as f64 * 8.0 / secs).collect();
    let total: f64 = rates.iter().sum();
    let jain = jain_fairness(&rates);
    assert!(rd(&out).tokens_dropped > 0, "the credit limiter drops the excess credits");
    assert!(jain > 0.98, "Jain {jain:.4}, rates {rates:?}");
    let share = 100e9 * MTU as f64 / (TOKEN + WIRE) as f64;
    assert!(total > 0.9 * share && total <= share * 1.001, "total {total:.3e} vs link data share {share:.3e}");
    assert_eq!(out.run.drops - rd(&out).tokens_dropped, 0, "no data is lost");
}

/// ExpressPass's credit jitter (ns2-xpass: +-10% on credit spacing): two long flows through one credit
/// limiter for 1 ms. The jitter changes the credit schedule (and so the run) but keeps the mean credit
/// rate: the credits issued stay within 5% of the unjittered run, and the jittered run is deterministic.
#[test]
fn expresspass_credit_jitter_keeps_the_mean_rate() {
    let run = |jitter: f64| {
        let end = time("1ms");
        let mut r = Run::new(star(3, "100Gbps", "1us"), "expresspass");
        r.params = params(&[("token_jitter", jitter.into())]);
        r = r.long_flow(0, 2, 0, end + time("1ms")).long_flow(1, 2, 0, end + time("1ms"));
        r.stop = StopRule { duration: Some(end), time_limit: end };
        r.run()
    };
    let (plain, jittered, again) = (run(0.0), run(0.1), run(0.1));
    assert_ne!(plain.counters, jittered.counters, "the jitter must change the credit schedule");
    assert_eq!(jittered.counters, again.counters, "deterministic");
    let (a, b) = (rd(&plain).tokens_issued as f64, rd(&jittered).tokens_issued as f64);
    assert!(a > 1000.0 && (b / a - 1.0).abs() < 0.05, "{a} vs {b}");
}

/// Homa: three messages to one receiver with overcommitment 1 finish shortest first.
#[test]
fn homa_grants_in_srpt_order() {
    let mut run = Run::new(star(4, "100Gbps", "1us"), "homa");
    run.params = params(&[("overcommit", 1.into())]);
    let run = run.flow(1, 0, 600_000, 0).flow(2, 0, 400_000, 0).flow(3, 0, 200_000, 0);
    let out = run.run();
    all_finished(&out);
    let fin: Vec<Time> = out.flows.iter().map(|f| f.finish.unwrap()).collect();
    assert!(fin[2] < fin[1] && fin[1] < fin[0], "shortest first: {fin:?}");
    // SRPT serves one message at a time: the shortest finishes near its own ideal time, not shared.
    assert!(out.flows[2].finish.unwrap() < 2 * out.flows[2].ideal_fct, "{fin:?}");
}

/// Homa's priorities: unscheduled packets use the size-based levels and scheduled ones the rank levels;
/// a short message arriving behind a long one overtakes it at the switch.
#[test]
fn homa_priorities_let_short_messages_overtake() {
    let build = |priorities: bool| {
        let mut run = Run::new(star(3, "100Gbps", "1us"), "homa");
        run.params = params(&[("priorities", priorities.into())]);
        run.flow(1, 0, 2_000_000, 0).flow(2, 0, 3_000, time("30us")).run()
    };
    let (with, without) = (build(true), build(false));
    all_finished(&with);
    all_finished(&without);
    let short = |o: &SimOutput| o.flows[1].finish.unwrap() - o.flows[1].start;
    assert!(short(&with) < short(&without), "priorities: {} ps, none: {} ps", short(&with), short(&without));
}

/// Same scenario and seed, same results — with spraying's random path choices too.
#[test]
fn receiver_driven_runs_are_deterministic() {
    for algorithm in ["ndp", "tocc", "ep_aeolus", "homa"] {
        let build = || {
            let mut run = Run::new(common::fat_tree(4, "100Gbps"), algorithm);
            for i in 0..16u32 {
                run = run.flow(i, (i * 5 + 3) % 16, 50_000 + 37_000 * i as u64, i as Time * time("2us"));
            }
            run.run()
        };
        let (a, b) = (build(), build());
        all_finished(&a);
        assert_eq!(a.counters, b.counters, "{algorithm}");
        let fin = |o: &SimOutput| o.flows.iter().map(|f| f.finish).collect::<Vec<_>>();
        assert_eq!(fin(&a), fin(&b), "{algorithm}");
    }
}

/// Stale tokens: two receivers pace credits at full rate to one sender with no switch limiter, so the
/// sender gets twice what it can send and its held tokens age; tokens held past the timeout are
/// discarded (and none are with the timeout off), and so are tokens beyond one BDP of grants per flow.
#[test]
fn stale_tokens_are_discarded_by_age_or_beyond_one_bdp() {
    let run = |extra: &[(&str, toml::Value)]| {
        let end = time("1ms");
        let mut r = Run::new(star(3, "100Gbps", "1us"), "expresspass");
        let mut p = vec![("token_limiter", false.into())];
        p.extend(extra.iter().cloned());
        r.params = params(&p);
        r = r.long_flow(0, 1, 0, end + time("1ms")).long_flow(0, 2, 0, end + time("1ms"));
        r.stop = StopRule { duration: Some(end), time_limit: end };
        r.run()
    };
    let aged = run(&[("stale_timeout", "50us".into())]);
    assert!(rd(&aged).tokens_stale > 100, "{:?}", rd(&aged));
    let kept = run(&[("stale_timeout", "0us".into())]);
    assert_eq!(rd(&kept).tokens_stale, 0);
    let bounded = run(&[("stale_timeout", "0us".into()), ("stale_bdp", true.into())]);
    assert!(rd(&bounded).tokens_stale > 100, "{:?}", rd(&bounded));
    // Discarded credits look lost to the receivers (gaps in the credit sequence), so ExpressPass's
    // feedback slows the credit rate: fewer credits are issued than when the sender hoards them.
    assert!(rd(&aged).tokens_issued < rd(&kept).tokens_issued, "{:?} vs {:?}", rd(&aged), rd(&kept));
}

/// Long-lived flows of token algorithms that stop: each delivers what it sent and finishes, also when
/// every byte had reached its receiver before the stop. Four flows share a 100 Mbps bottleneck behind
/// 10 Gbps hosts, so a flow sends a packet every 320 ns of line rate and then waits about 320 us for its
/// next token: at the stop most flows have nothing in flight to carry the end.
#[test]
fn stopped_streams_finish_even_with_nothing_in_flight() {
    for algorithm in ["expresspass", "tocc"] {
        let mut run = Run::new(dumbbell(4, "10Gbps", "100Mbps"), algorithm);
        for k in 0..4 {
            run = run.long_flow(k, 4 + k, 0, time("20ms"));
        }
        run.stop = StopRule { duration: None, time_limit: time("200ms") };
        let out = run.run();
        all_finished(&out);
        for f in &out.flows {
            assert!(f.delivered > 20_000, "{algorithm}: flow sent for 20 ms: {}", f.delivered);
        }
    }
}
