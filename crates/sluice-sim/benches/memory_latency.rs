//! The machine's latency for one dependent load from a working set of a given size: a walk along a
//! random cycle through `MiB` of 64-byte records, each load waiting for the one before, so that neither
//! the out-of-order core nor the hardware prefetchers can overlap them.
//!
//! It says where a large run's records stop fitting the caches on the machine at hand. A packet-hop
//! reads a packet's record and its egress port's, in no order the prefetchers can follow: once the
//! packets alive and the ports outgrow the size where this latency jumps, each of those reads costs
//! about a load from memory (BENCHMARKS.md, "What a load costs on this machine").
//!
//! ```text
//! cargo bench -p sluice-sim --bench memory_latency
//! ```

// `criterion_main!` generates an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice_core::Rng;

/// Working-set sizes in MiB: inside the first- and second-level caches, around the third level's, and
/// far beyond it.
const SIZES_MIB: [usize; 8] = [1, 2, 4, 8, 12, 16, 32, 64];

/// One record per cache line: the next record's index, then padding.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Record {
    next: u32,
    _pad: [u32; 15],
}

/// `mib` MiB of records, each linked to the next in a random order and the last back to the first: one
/// cycle, so that a walk visits every record before it repeats.
fn cycle(mib: usize) -> Vec<Record> {
    let n = mib * (1 << 20) / std::mem::size_of::<Record>();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = Rng::new(mib as u64, 0x1A7E);
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut records = vec![Record { next: 0, _pad: [0; 15] }; n];
    for (k, &at) in order.iter().enumerate() {
        records[at as usize].next = order[(k + 1) % n];
    }
    records
}

fn dependent_loads(c: &mut Criterion) {
    let mut group = c.benchmark_group("dependent_load");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    for mib in SIZES_MIB {
        let records = cycle(mib);
        let mut at = 0u32;
        group.bench_with_input(BenchmarkId::new("MiB", mib), &mib, |b, _| {
            b.iter(|| {
                at = records[at as usize].next;
                black_box(at)
            })
        });
    }
    group.finish();
}

/// The walk visits every record once per lap.
fn check_cycle() {
    let records = cycle(1);
    let mut seen = vec![false; records.len()];
    let mut at = 0u32;
    for _ in 0..records.len() {
        assert!(!seen[at as usize], "record {at} visited twice in one lap");
        seen[at as usize] = true;
        at = records[at as usize].next;
    }
    assert_eq!(at, 0, "the walk returns to its start after one lap");
}

fn benches(c: &mut Criterion) {
    check_cycle();
    dependent_loads(c);
}

criterion_group!(memory_latency, benches);
criterion_main!(memory_latency);
