//! A long-lived flow sends from its start to its stop time at the rate its path allows, then finishes
//! as soon as its last bytes are acknowledged.
//!
//! Setting: a star of 2 hosts at 100 Gbps and 1 us, one long-lived flow from 1 ms to 3 ms, a 5 ms run.
//! Without congestion control the flow sends back to back, one 1082-byte packet per T = 86.56 ns, so by
//! the stop it has sent ceil(2 ms / T) = 23 106 packets of 1000 B payload. Under DCTCP the 10-packet
//! initial window and slow start cost a few round trips (the queue stays empty, so there are no marks).
//! Either way the last ACK is back within one idle round trip of the stop.

mod common;

use common::{star, time, Run};
use sluice_core::{serialization_ps, Time};
use sluice_sim::StopRule;

const RATE: u64 = 100_000_000_000;
const WIRE: u64 = 1082;
const PAYLOAD: u64 = 1000;

fn long_flow(algorithm: &'static str) -> sluice_results::FlowRecord {
    let mut run = Run::new(star(2, "100Gbps", "1us"), algorithm).long_flow(0, 1, time("1ms"), time("3ms"));
    run.stop = StopRule { duration: Some(time("5ms")), time_limit: time("5ms") };
    let out = run.run();
    assert_eq!(out.run.drops, 0);
    assert_eq!(out.run.retransmitted_bytes, 0);
    let f = out.flows[0].clone();
    assert!(f.long_lived);
    assert_eq!(f.size, f.delivered, "a finished long flow reports what it delivered as its size");
    f
}

/// Idle round trip: 2 links each way at 1 us, a data packet serialized on both links out and an ACK
/// (86 B) on both links back.
fn round_trip() -> Time {
    4 * time("1us") + 2 * serialization_ps(WIRE, RATE) + 2 * serialization_ps(86, RATE)
}

fn check(algorithm: &'static str, min_share: f64) {
    let f = long_flow(algorithm);
    let (start, stop) = (time("1ms"), time("3ms"));
    let packets = (stop - start).div_ceil(serialization_ps(WIRE, RATE));
    let line = packets * PAYLOAD;
    let finish = f.finish.expect("the flow finishes after its stop time");
    println!(
        "{algorithm}: delivered {} B ({:.3}% of line rate x 2 ms = {line} B), finished {:.3} us after the stop \
         (idle RTT {:.3} us)",
        f.delivered,
        f.delivered as f64 / line as f64 * 100.0,
        (finish - stop) as f64 / 1e6,
        round_trip() as f64 / 1e6,
    );
    assert!(f.delivered <= line, "{algorithm}: more than line rate");
    assert!(f.delivered as f64 >= min_share * line as f64, "{algorithm}: delivered {} B of {line} B", f.delivered);
    assert!(finish > stop, "{algorithm}: finished before its stop time");
    assert!(finish <= stop + round_trip(), "{algorithm}: finished {} ps after the stop", finish - stop);
}

#[test]
fn long_flow_without_cc_sends_at_line_rate_until_stopped() {
    check("none", 1.0);
}

#[test]
fn long_dctcp_flow_sends_at_line_rate_until_stopped() {
    check("dctcp", 0.99);
}
