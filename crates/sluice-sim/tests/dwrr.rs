//! Deficit weighted round robin shares a port among backlogged queues in proportion to their weights,
//! counted in bytes.
//!
//! The byte shares of backlogged queues are checked on an egress port directly, in the port's unit
//! tests (`net/port.rs`). End to end, DWRR also serves the control queue (ACKs) beside a backlogged data queue: a short flow
//! whose ACKs cross a congested port must not wait for that port's data queue to drain.

mod common;

use common::{star, time, Run};
use sluice_sim::config::Scheduler;

/// Hosts 1 and 2 each send 4 MB to host 0 (the switch port towards host 0 holds a growing data queue);
/// meanwhile host 0 sends 100 KB to host 1, whose ACKs cross that port in the control queue. Under DWRR
/// the ACKs get their turn each round, so the short flow finishes about as fast as under strict
/// priority (within 2x) instead of waiting ~0.7 ms for the data queue to drain.
#[test]
fn dwrr_serves_acks_beside_a_backlogged_data_queue() {
    let short_fct = |scheduler: Scheduler| {
        let mut run = Run::new(star(3, "100Gbps", "1us"), "none")
            .flow(1, 0, 4_000_000, time("10us"))
            .flow(2, 0, 4_000_000, time("10us"))
            .flow(0, 1, 100_000, time("20us"));
        run.switch.scheduler = scheduler;
        let out = run.run();
        assert!(out.flows.iter().all(|f| f.finish.is_some()));
        out.flows[2].fct().expect("finishes")
    };
    let strict = short_fct(Scheduler::Strict);
    // Data queue 3 weight 2: its quantum (2000 B) covers a full packet (1082 B).
    let dwrr = short_fct(Scheduler::Dwrr { weights: vec![1, 1, 1, 2, 1, 1, 1, 1] });
    println!("100 KB flow against the ACK direction: FCT {strict} ps (strict), {dwrr} ps (DWRR)");
    assert!(dwrr <= 2 * strict, "DWRR: {dwrr} ps, strict priority: {strict} ps");
}
