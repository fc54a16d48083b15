//! Runs are reproducible: the same scenario and seed give identical records, and the seed reaches the
//! results only through random decisions.
//!
//! The scenario: a k = 4 fat-tree (16 hosts, 100 Gbps, 1 us links) carrying 48 flows of 10 KB to 1 MB
//! between random host pairs with exponential inter-arrival times (mean 4 us), under DCQCN with RED
//! marking. The flow list is drawn once from a fixed generator, independent of the run's seed.

mod common;

use common::{fat_tree, Run};
use sluice_core::{Rng, Time, PS_PER_US};
use sluice_sim::{LoadBalance, Observe, SimOutput};

const HOSTS: u64 = 16;
const FLOWS: usize = 48;

/// `(src, dst, size, start)` of every flow.
fn flow_list() -> Vec<(u32, u32, u64, Time)> {
    let mut rng = Rng::new(2024, 7);
    let sizes = [10_000, 50_000, 200_000, 1_000_000];
    let mut start = 0.0;
    (0..FLOWS)
        .map(|_| {
            start += rng.exponential(4.0 * PS_PER_US as f64);
            let src = rng.below(HOSTS) as u32;
            let dst = (src + 1 + rng.below(HOSTS - 1) as u32) % HOSTS as u32;
            let size = sizes[rng.below(sizes.len() as u64) as usize];
            (src, dst, size, start as Time)
        })
        .collect()
}

fn run(algorithm: &'static str, load_balance: LoadBalance, seed: u64) -> SimOutput {
    let mut run = Run::new(fat_tree(4, "100Gbps"), algorithm);
    for (src, dst, size, start) in flow_list() {
        run = run.flow(src, dst, size, start);
    }
    run.switch.load_balance = load_balance;
    run.seed = seed;
    run.observe = Observe {
        throughput_flows: vec![0, 1, 2],
        throughput_ports: vec![(16, 2), (16, 3)],
        sample_interval: 10 * PS_PER_US,
        ..Observe::default()
    };
    let out = run.run();
    assert!(out.flows.iter().all(|f| f.finish.is_some()), "every flow finishes");
    out
}

fn finish_times(out: &SimOutput) -> Vec<Time> {
    out.flows.iter().map(|f| f.finish.expect("finished")).collect()
}

fn assert_identical(a: &SimOutput, b: &SimOutput) {
    assert_eq!(a.flows, b.flows, "flow records differ");
    assert_eq!(a.counters, b.counters, "counters differ");
    assert_eq!(a.ports, b.ports, "port records differ");
    assert_eq!(a.switches, b.switches, "switch records differ");
    assert_eq!(a.throughput, b.throughput, "throughput series differ");
    assert_eq!(a.run, b.run, "run figures differ");
}

fn summary(label: &str, out: &SimOutput) {
    let fcts: Vec<Time> = out.flows.iter().filter_map(|f| f.fct()).collect();
    let mean = fcts.iter().sum::<Time>() as f64 / fcts.len() as f64 / 1e6;
    println!(
        "{label}: mean FCT {mean:.3} us, last finish {} ps, events {}, ECN marks {}, retransmitted {} B of {} B",
        finish_times(out).iter().max().unwrap(),
        out.run.events,
        out.counters.ecn_marks,
        out.run.retransmitted_bytes,
        out.flows.iter().map(|f| f.size).sum::<u64>(),
    );
}

#[test]
fn same_seed_gives_identical_results() {
    let a = run("dcqcn", LoadBalance::PacketSpray, 1);
    let b = run("dcqcn", LoadBalance::PacketSpray, 1);
    summary("dcqcn, spraying, seed 1 (first)", &a);
    summary("dcqcn, spraying, seed 1 (second)", &b);
    assert_identical(&a, &b);
}

#[test]
fn another_seed_changes_sprayed_paths() {
    let a = run("dcqcn", LoadBalance::PacketSpray, 1);
    let b = run("dcqcn", LoadBalance::PacketSpray, 2);
    summary("dcqcn, spraying, seed 1", &a);
    summary("dcqcn, spraying, seed 2", &b);
    let (fa, fb) = (finish_times(&a), finish_times(&b));
    let differ = fa.iter().zip(&fb).filter(|(x, y)| x != y).count();
    println!("  finish times differ for {differ} of {FLOWS} flows");
    assert!(differ > 0, "packet spraying with another seed changed no finish time");
}

/// With flow hashing and DCTCP's single threshold (marking probability 0 or 1) no decision is random, so
/// the seed must not change anything.
#[test]
fn seed_only_matters_through_random_decisions() {
    let a = run("dctcp", LoadBalance::FlowHash, 1);
    let b = run("dctcp", LoadBalance::FlowHash, 99);
    summary("dctcp, flow hash, seed 1", &a);
    summary("dctcp, flow hash, seed 99", &b);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.ports, b.ports);
}

/// Spraying a flow's packets over the fabric's paths reorders them, and the algorithms hear it: ACKs
/// that answer a packet sent before one an earlier ACK answered reach the plane as `Ack::reordered`.
/// One path per flow reorders nothing.
#[test]
fn packet_spraying_reorders_and_the_algorithms_hear_of_it() {
    let sprayed = run("dcqcn", LoadBalance::PacketSpray, 1);
    let hashed = run("dcqcn", LoadBalance::FlowHash, 1);
    assert!(sprayed.plane.reordered > 0, "{:?}", sprayed.plane);
    assert!(sprayed.plane.reordered < sprayed.plane.signals, "{:?}", sprayed.plane);
    assert_eq!(hashed.plane.reordered, 0, "{:?}", hashed.plane);
}
