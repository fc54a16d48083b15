//! Deficit weighted round robin shares a port among backlogged queues in proportion to their weights,
//! counted in bytes.
//!
//! Every flow's data goes to one queue (`SwitchConfig::data_queue`), so two flows cannot be put in
//! different queues through the simulation API; the scheduler is therefore checked on an egress
//! [`Port`] directly: queues 1 and 2 are kept backlogged, weights 1 and 3, and the bytes the scheduler
//! picks from each are counted. DWRR (Shreedhar and Varghese, SIGCOMM'95) serves each queue within one
//! quantum plus one packet of `weight x quantum` per round, so over many rounds the byte shares tend to
//! the weight ratio whatever the packet sizes.
//!
//! End to end, DWRR also serves the control queue (ACKs) beside a backlogged data queue: a short flow
//! whose ACKs cross a congested port must not wait for that port's data queue to drain.

mod common;

use common::{star, time, Run};
use sluice_sim::config::Scheduler;
use sluice_sim::packet::{Arena, Kind, Packet};
use sluice_sim::port::Port;
use sluice_sim::EcnThresholds;

const MTU: u32 = 1000;

fn packet(queue: u8, wire: u32) -> Packet {
    Packet { payload: wire.saturating_sub(82), ..Packet::new(Kind::Data, queue as u32, 0, wire, queue) }
}

/// Serves `picks` packets from a port whose queues 1 and 2 hold packets of `wire1` and `wire2` bytes and
/// are refilled as they drain; returns the bytes served per queue.
fn serve(weights: Vec<u32>, wire1: u32, wire2: u32, picks: usize) -> [u64; 2] {
    let no_ecn = EcnThresholds { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 };
    let mut port = Port::new(100_000_000_000, 1_000_000, 0, 0, 4, no_ecn);
    let mut arena = Arena::new(false);
    let scheduler = Scheduler::Dwrr { weights };
    let mut served = [0u64; 2];
    let backlog = 8;
    for (queue, wire) in [(1u8, wire1), (2, wire2)] {
        for _ in 0..backlog {
            let id = arena.alloc(packet(queue, wire));
            port.enqueue(0, queue, id, wire);
        }
    }
    for _ in 0..picks {
        let queue = port.select(&scheduler, MTU, &arena).expect("both queues are backlogged");
        assert!(queue == 1 || queue == 2, "picked empty queue {queue}");
        let head = port.queues[queue][0];
        let wire = arena.get(head).wire;
        let id = port.dequeue(0, queue, wire);
        arena.free(id);
        served[queue - 1] += wire as u64;
        let refill = arena.alloc(packet(queue as u8, wire));
        port.enqueue(0, queue as u8, refill, wire);
    }
    served
}

fn check(wire1: u32, wire2: u32) {
    let served = serve(vec![1, 1, 3, 1], wire1, wire2, 20_000);
    let ratio = served[1] as f64 / served[0] as f64;
    println!(
        "packets {wire1} B and {wire2} B, weights 1:3: served {} B and {} B, ratio {ratio:.3}",
        served[0], served[1]
    );
    assert!((ratio - 3.0).abs() < 0.05, "byte ratio {ratio:.3}, expected 3 (served {served:?})");
}

#[test]
fn dwrr_weights_one_to_three_share_bytes_one_to_three() {
    check(1082, 1082);
    check(1082, 300);
    check(300, 1082);
}

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
