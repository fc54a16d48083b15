//! Retiring finished flows changes nothing but memory. A flow whose throughput the run samples keeps its
//! state to the end, so the same run with every flow sampled retires none, and sampling only reads: both
//! runs must give the same rows and port counters. The load is lossy (a small buffer without PFC) so
//! that retransmissions, late duplicates and their ACKs reach flows that have finished.

mod common;

use common::{fat_tree, Run};
use sluice_core::{Rng, Time, PS_PER_US};
use sluice_sim::{LossRecovery, Observe, SimOutput};

const HOSTS: u64 = 16;
const FLOWS: u32 = 1500;

/// 1,500 flows of 2-200 KB between random host pairs, one every 0.2 us on average.
fn run(algorithm: &'static str, recovery: LossRecovery, sampled: Vec<u32>) -> SimOutput {
    let mut rng = Rng::new(7, 11);
    let mut run = Run::new(fat_tree(4, "100Gbps"), algorithm);
    let mut start = 0.0;
    for _ in 0..FLOWS {
        start += rng.exponential(0.2 * PS_PER_US as f64);
        let src = rng.below(HOSTS) as u32;
        let dst = (src + 1 + rng.below(HOSTS - 1) as u32) % HOSTS as u32;
        run = run.flow(src, dst, 2_000 + rng.below(198_000), start as Time);
    }
    run.switch.pfc.enabled = false;
    run.switch.buffer = 300_000;
    run.host.loss_recovery = recovery;
    run.observe = Observe { throughput_flows: sampled, sample_interval: 50 * PS_PER_US, ..Observe::default() };
    run.run()
}

fn same_results(algorithm: &'static str, recovery: LossRecovery) {
    let retiring = run(algorithm, recovery, Vec::new());
    let keeping = run(algorithm, recovery, (0..FLOWS).collect());
    assert!(retiring.counters.drops > 0, "{algorithm}: the load drops packets");
    assert!(retiring.counters.retransmitted_bytes > 0, "{algorithm}: and resends them");
    assert_eq!(retiring.flows.len(), FLOWS as usize);
    assert!(retiring.flows.iter().all(|f| f.finish.is_some()), "{algorithm}: every flow finishes");
    assert!(retiring.flows.iter().enumerate().all(|(i, f)| f.id == i as u64), "rows in id order");
    assert_eq!(retiring.flows, keeping.flows, "{algorithm}: the same rows");
    assert_eq!(retiring.ports, keeping.ports, "{algorithm}: the same port counters");
    assert_eq!(retiring.counters.bytes_delivered, keeping.counters.bytes_delivered);
    assert_eq!(retiring.peak_packets, keeping.peak_packets);
}

#[test]
fn retiring_finished_flows_leaves_go_back_n_results_as_they_were() {
    same_results("dctcp", LossRecovery::GoBackN);
    same_results("dcqcn", LossRecovery::GoBackN);
}

#[test]
fn retiring_finished_flows_leaves_selective_repeat_results_as_they_were() {
    same_results("dctcp", LossRecovery::Selective);
}
