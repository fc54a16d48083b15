//! The receiver-driven transport's recovery paths, each on a small network: NDP's choice of the packet
//! to trim, its header-queue limit with return-to-sender, ExpressPass's early CREDIT_STOP, and the
//! sender's request timer that recovers a flow whose request to send was lost.

mod common;

use common::{star, time, Run};
use sluice_core::Time;
use sluice_sim::stats::RdCounters;
use sluice_sim::{SimOutput, StopRule};

const MTU: u64 = 1000;

fn params(pairs: &[(&str, toml::Value)]) -> toml::Table {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn rd(out: &SimOutput) -> &RdCounters {
    &out.counters.rd
}

fn unfinished(out: &SimOutput) -> usize {
    out.flows.iter().filter(|f| f.finish.is_none()).count()
}

/// An NDP incast of `senders` flows of `size` bytes into host 0 of a star, with `extra` parameters.
fn ndp_incast(senders: u32, size: u64, extra: &[(&str, toml::Value)]) -> SimOutput {
    let mut run = Run::new(star(senders + 1, "100Gbps", "1us"), "ndp");
    run.params = params(extra);
    for s in 1..=senders {
        run = run.flow(s, 0, size, 0);
    }
    run.run()
}

/// csg-htsim's `CompositeQueue`: a full data queue trims the arriving packet or, with probability 1/2,
/// the last queued one, which the arriving packet replaces. Both happen about equally often, every
/// trimmed packet is resent once, the data queue never exceeds its 8 packets, and the choice is
/// deterministic per seed.
#[test]
fn ndp_trims_the_arriving_or_the_last_queued_packet_at_random() {
    let out = ndp_incast(8, 500_000, &[]);
    assert_eq!(unfinished(&out), 0);
    let c = rd(&out);
    assert!(c.trimmed > 200, "an 8:1 incast trims: {c:?}");
    let share = c.trimmed_queued as f64 / c.trimmed as f64;
    assert!((0.4..=0.6).contains(&share), "queued packets are {share:.3} of the trimmed ones: {c:?}");
    assert_eq!(out.run.drops, 0, "trimming loses no packet");
    assert_eq!(out.run.retransmitted_bytes, c.trimmed * MTU, "each trimmed packet is resent once");
    let again = ndp_incast(8, 500_000, &[]);
    assert_eq!(rd(&again), c, "same seed, same trimming choices");
    let mut other = Run::new(star(9, "100Gbps", "1us"), "ndp");
    other.seed = 2;
    for s in 1..=8 {
        other = other.flow(s, 0, 500_000, 0);
    }
    let other = other.run();
    assert_ne!(rd(&other).trimmed_queued, c.trimmed_queued, "another seed draws other choices");
}

/// The header queue has its own limit (default twice the data queue, csg-htsim's): an incast overflows
/// a small header queue, and the headers that find it full go back to their senders, which resend the
/// packets at once; every flow completes with each trimmed packet resent once. With the default limit the
/// same incast returns nothing.
#[test]
fn ndp_returns_headers_to_senders_when_the_header_queue_is_full() {
    let small = ndp_incast(8, 200_000, &[("header_queue", "1KB".into())]);
    println!("1 KB header queue: {:?}", rd(&small));
    assert_eq!(unfinished(&small), 0);
    let c = rd(&small);
    assert!(c.bounced > 10, "a 1 KB header queue overflows in an 8:1 incast: {c:?}");
    assert_eq!(c.header_drops, 0, "returned headers reach their senders: {c:?}");
    assert_eq!(small.run.retransmitted_bytes, c.trimmed * MTU, "each trimmed packet is resent once: {c:?}");
    let default = ndp_incast(8, 200_000, &[]);
    println!("default header queue: {:?}", rd(&default));
    assert_eq!(unfinished(&default), 0);
    assert!(rd(&default).trimmed > 0);
    assert_eq!(rd(&default).bounced, 0, "twice the data queue holds the headers: {:?}", rd(&default));
}

/// ExpressPass's early CREDIT_STOP (ns2-xpass): once the credits of one round trip cover what a sender
/// has left, it stops the receiver's credits, so fewer credits arrive after the last byte. Flows finish
/// as fast as without it.
#[test]
fn early_credit_stop_wastes_fewer_credits() {
    for algorithm in ["expresspass", "ep_aeolus"] {
        let run = |early: bool| {
            let mut run = Run::new(common::fat_tree(4, "100Gbps"), algorithm);
            run.params = params(&[("early_stop", early.into())]);
            for i in 0..16u32 {
                run = run.flow(i, (i * 5 + 3) % 16, 50_000 + 37_000 * i as u64, i as Time * time("2us"));
            }
            run.run()
        };
        let (with, without) = (run(true), run(false));
        assert_eq!(unfinished(&with), 0, "{algorithm}");
        assert_eq!(unfinished(&without), 0, "{algorithm}");
        let wasted = |o: &SimOutput| rd(o).tokens_wasted + rd(o).tokens_stale;
        assert!(rd(&with).early_stops >= 16, "{algorithm}: every flow stops early: {:?}", rd(&with));
        assert_eq!(rd(&without).early_stops, 0);
        assert!(
            (wasted(&with) as f64) < 0.75 * wasted(&without) as f64,
            "{algorithm}: wasted credits {} with early stop vs {} without",
            wasted(&with),
            wasted(&without)
        );
        let mean_fct = |o: &SimOutput| o.flows.iter().map(|f| (f.finish.unwrap() - f.start) as f64).sum::<f64>();
        assert!(mean_fct(&with) < 1.05 * mean_fct(&without), "{algorithm}: early stop must not slow flows");
    }
}

/// A lost request to send: with no unscheduled phase, a receiver that never got the request never learns
/// of the flow. A 100-byte header queue at the switch (trimming on, so the limit applies) keeps one of
/// eight simultaneous requests waiting and drops six. The sender's timer sends them again and every flow
/// completes; without the timer those flows never start.
#[test]
fn sender_timer_resends_a_lost_request_to_send() {
    let run = |tx_timeout: &str| {
        let mut run = Run::new(star(9, "100Gbps", "1us"), "tocc_nounsched");
        run.params =
            params(&[("trimming", true.into()), ("header_queue", "100B".into()), ("tx_timeout", tx_timeout.into())]);
        run.stop = StopRule { duration: None, time_limit: time("20ms") };
        for s in 1..9 {
            run = run.flow(s, 0, 100_000, 0);
        }
        run.run()
    };
    let timed = run("100us");
    let c = rd(&timed);
    assert!(c.header_drops >= 6, "six requests find the header queue full: {c:?}");
    assert_eq!(unfinished(&timed), 0, "{c:?}");
    assert!(c.tx_timeouts >= 6, "each lost request is sent again: {c:?}");
    assert!(c.requests >= 8 + 6, "{c:?}");
    let last_finish = timed.flows.iter().map(|f| f.finish.unwrap()).max().unwrap();
    assert!(last_finish > time("100us"), "the resent requests wait one timeout");
    let untimed = run("0us");
    assert!(unfinished(&untimed) >= 6, "without the timer the receiver never learns of those flows");
    assert_eq!(rd(&untimed).tx_timeouts, 0);
}

/// The sender's timer stays silent when requests arrive: normal runs of every preset fire none.
#[test]
fn sender_timer_does_not_fire_without_loss() {
    for algorithm in ["expresspass", "ep_aeolus", "homa", "ndp", "tocc", "tocc_nounsched"] {
        let mut run = Run::new(common::fat_tree(4, "100Gbps"), algorithm);
        for i in 0..16u32 {
            run = run.flow(i, (i * 7 + 1) % 16, 20_000 + 53_000 * i as u64, i as Time * time("1us"));
        }
        let out = run.run();
        assert_eq!(unfinished(&out), 0, "{algorithm}");
        assert_eq!(rd(&out).tx_timeouts, 0, "{algorithm}: {:?}", rd(&out));
        let again = rd(&out).requests - 16;
        assert!(again <= rd(&out).early_stops, "{algorithm}: requests beyond the first follow early stops");
    }
}

/// ToCC after a receiver timeout: an incast into a small lossy buffer drops unscheduled and flagged data
/// alike, including packets of the flows' unflagged last BDP, which earn no data-driven tokens. One
/// timeout asks for every hole the receiver knows and then recovers packet by packet, so each flow needs
/// about one timeout, not one per lost packet (2 ms each).
#[test]
fn tocc_recovers_every_lost_packet_after_one_timeout() {
    let mut run = Run::new(star(17, "100Gbps", "1us"), "tocc");
    run.switch.buffer = 200_000;
    run.switch.pfc.enabled = false;
    run.stop = StopRule { duration: None, time_limit: time("200ms") };
    for s in 1..=16 {
        run = run.flow(s, 0, 300_000, 0);
    }
    let out = run.run();
    let c = rd(&out);
    println!("drops {} (bytes {}), {c:?}", out.run.drops, out.run.retransmitted_bytes);
    assert_eq!(unfinished(&out), 0, "{c:?}");
    assert!(out.run.drops > 16, "the incast overflows the 200 KB buffer: {c:?}");
    assert!(c.rx_timeouts <= 2 * 16, "about one timeout a flow: {c:?}");
    let last_finish = out.flows.iter().map(|f| f.finish.unwrap()).max().unwrap();
    assert!(last_finish < time("10ms"), "all recovered within a few timeouts: {last_finish} ps");
}
