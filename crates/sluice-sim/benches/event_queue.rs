//! The event queues on a hold model: `n` events stay pending while the loop repeatedly pops the earliest
//! and schedules a new one a random delay after it, as the simulator's event loop does.
//!
//! Delays mix the two time scales of a datacenter run: 80% are short (0 to 100 ns, like serialization
//! and switch hops at 100 Gbps) and 20% long (1 to 100 us, like propagation, pacing and congestion-control
//! timers). Payloads are 16 bytes, the size class of the engine's `Event`. One benchmark iteration is one
//! pop plus one push, so the reported time is nanoseconds per pop+push.
//!
//! ```text
//! cargo bench -p sluice-sim --bench event_queue
//! ```

// `criterion_main!` generates an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice_core::{Rng, Time};
use sluice_sim::queue::{EventQueue, HeapQueue, RadixQueue, WheelQueue};

/// A 16-byte event payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Payload {
    node: u32,
    port: u32,
    pkt: u32,
    kind: u32,
}

const _: () = assert!(std::mem::size_of::<Payload>() == 16);

/// Pending-event counts.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// Pre-drawn delays, cycled through so that the measurement holds queue work only.
const DELAYS: usize = 1 << 16;

/// Picoseconds per nanosecond and per microsecond.
const NS: Time = 1_000;
const US: Time = 1_000_000;

/// The delay mix: 80% uniform in [0, 100 ns], 20% uniform in [1 us, 100 us], in picoseconds.
fn delays(seed: u64) -> Vec<Time> {
    let mut rng = Rng::new(seed, 0xE7E7);
    (0..DELAYS).map(|_| if rng.below(10) < 8 { rng.below(100 * NS + 1) } else { US + rng.below(99 * US + 1) }).collect()
}

/// A queue holding `n` events, run through `10 n` hold operations so that the pending times have the
/// steady-state spread of the delay mix.
struct Hold<Q> {
    queue: Q,
    delays: Vec<Time>,
    next: usize,
}

impl<Q: EventQueue<Payload>> Hold<Q> {
    fn new(mut queue: Q, n: usize) -> Self {
        let delays = delays(n as u64);
        for (i, &d) in delays.iter().cycle().take(n).enumerate() {
            let i = i as u32;
            queue.push(d, Payload { node: i, port: i & 0xFF, pkt: i.wrapping_mul(7), kind: i % 9 });
        }
        let mut hold = Hold { queue, delays, next: n };
        for _ in 0..10 * n {
            hold.step();
        }
        hold
    }

    /// One pop of the earliest event and one push of its successor.
    #[inline]
    fn step(&mut self) -> Time {
        let (now, mut event) = self.queue.pop().expect("the hold model keeps n events pending");
        let delay = self.delays[self.next & (DELAYS - 1)];
        self.next = self.next.wrapping_add(1);
        event.pkt = event.pkt.wrapping_add(1);
        self.queue.push(now + delay, event);
        now
    }
}

fn hold_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("hold");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let mut radix = Hold::new(RadixQueue::new(), n);
        group.bench_with_input(BenchmarkId::new("radix", n), &n, |b, _| b.iter(|| black_box(radix.step())));
        let mut heap = Hold::new(HeapQueue::default(), n);
        group.bench_with_input(BenchmarkId::new("heap", n), &n, |b, _| b.iter(|| black_box(heap.step())));
        let mut wheel = Hold::new(WheelQueue::new(), n);
        group.bench_with_input(BenchmarkId::new("wheel", n), &n, |b, _| b.iter(|| black_box(wheel.step())));
        assert_eq!(wheel.queue.len(), n);
        assert_eq!(radix.queue.len(), n);
        assert_eq!(heap.queue.len(), n);
    }
    group.finish();
}

/// All queues pop the same times in the same order on the same hold sequence.
fn check_agreement() {
    let n = 1_000;
    let mut radix = Hold::new(RadixQueue::new(), n);
    let mut heap = Hold::new(HeapQueue::default(), n);
    let mut wheel = Hold::new(WheelQueue::new(), n);
    let mut last = 0;
    for _ in 0..10 * n {
        let (a, b, w) = (radix.step(), heap.step(), wheel.step());
        assert_eq!(a, b, "radix and heap queues disagree");
        assert_eq!(a, w, "radix and wheel queues disagree");
        assert!(a >= last, "time went backwards");
        last = a;
    }
}

fn benches(c: &mut Criterion) {
    check_agreement();
    hold_model(c);
}

criterion_group!(event_queue, benches);
criterion_main!(event_queue);
