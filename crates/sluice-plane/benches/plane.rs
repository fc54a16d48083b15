//! Plane throughput on one core: DCTCP fed per-ACK signals through the plane, without and with
//! signal-level aggregation (TAURUS section 5.2 measures 10.8 M reports/s at 98% of a core without
//! aggregation).
//!
//! Each iteration is one raw ACK event: folded, checked against the trigger, and, when due, delivered
//! to DCTCP's handlers with its decisions filtered.
//!
//! `program_acks` measures a datapath program's share of the same per-ACK work: the signal's fields
//! gathered and the program run over them (and its volatile registers reset after a report), for the
//! programs Reno, DCTCP and BBR report through and for `dctcp_burst`'s.

// `criterion_main!` generates an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice_cc::program::{library, Input, Machine, Program};
use sluice_cc::{Ack, CongestionControl, Ctx, FlowInfo, ReportEvery, ReportPolicy};
use sluice_plane::trigger::Urgency;
use sluice_plane::{Filters, Fold, PlaneConfig, PlaneCounters, Trigger};

const MSS: u64 = 1000;

fn flow() -> FlowInfo {
    FlowInfo {
        flow_id: 1,
        mss: MSS as u32,
        header_bytes: 82,
        line_rate: 400_000_000_000,
        base_rtt: 8_000_000,
        hops: 3,
        size: None,
        start: 0,
    }
}

/// A DCTCP controller and everything the plane keeps for its flow.
struct Pipeline {
    cc: Box<dyn CongestionControl>,
    fold: Fold,
    trigger: Trigger,
    filters: Filters,
    counters: PlaneCounters,
    config: PlaneConfig,
    snd_una: u64,
    now: u64,
}

impl Pipeline {
    fn new(every: ReportEvery) -> Pipeline {
        let algorithm = sluice_cc::lookup("dctcp").expect("dctcp is registered");
        let factory = (algorithm.build)(&toml::Table::new(), 400_000_000_000).expect("defaults are valid");
        let info = flow();
        let mut cc = factory.create(&info);
        cc.on_start(&info, &mut Ctx::new(0));
        let policy = ReportPolicy { every, urgent_loss: true, urgent_ecn: false };
        Pipeline {
            cc,
            fold: Fold::default(),
            trigger: Trigger::new(policy, None),
            filters: Filters::default(),
            counters: PlaneCounters::default(),
            config: PlaneConfig::default(),
            snd_una: 0,
            now: 0,
        }
    }

    /// One ACK of one packet, every 32nd echoing ECE.
    fn ack(&mut self) {
        self.now += 20_000;
        self.snd_una += MSS;
        let ece = self.snd_una.is_multiple_of(32 * MSS);
        let samples = [8_000_000];
        let mut ack =
            Ack::single(MSS, 1, ece, Some(8_000_000), self.snd_una, self.snd_una + 64 * MSS, 64 * MSS, self.now);
        ack.rtt_samples = &samples;
        self.fold.add_ack(&ack, self.now);
        if !self.trigger.due(&self.fold, Urgency::Normal, self.now) {
            return;
        }
        self.trigger.reported(&self.fold);
        let mut ctx = Ctx::new(self.now);
        let events = self.cc.events();
        self.fold.deliver(self.cc.as_mut(), events, &mut ctx);
        let mut d = *ctx.decisions();
        self.filters.apply(&mut d, 400_000_000_000, &self.config, &mut self.counters);
        black_box(d);
        self.fold.clear();
    }
}

fn plane_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("dctcp_acks");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    let cases = [
        ("per_ack", ReportEvery::Ack),
        ("every_8_acks", ReportEvery::Acks(8)),
        ("every_32_acks", ReportEvery::Acks(32)),
        ("every_1us", ReportEvery::Interval(1_000_000)),
    ];
    for (name, every) in cases {
        let mut pipeline = Pipeline::new(every);
        group.bench_function(BenchmarkId::new("through_plane", name), |b| b.iter(|| pipeline.ack()));
    }
    group.finish();
}

fn program_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("program_acks");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    let burst = Arc::new(Program::parse(sluice_cc::dctcp_burst::PROGRAM).expect("the bundled program parses"));
    let cases = [
        ("per_signal", library::per_signal(), 0),
        ("per_interval", library::per_interval(), 8_000_000),
        ("dctcp_burst", burst, 0),
    ];
    let info = flow();
    for (name, program, interval) in cases {
        let mut machine = Machine::new(program, 0, &[(library::reg::INTERVAL, interval)]);
        let (mut now, mut snd_una) = (0u64, 0u64);
        group.bench_function(BenchmarkId::new("run", name), |b| {
            b.iter(|| {
                now += 20_000;
                snd_una += MSS;
                let ece = snd_una.is_multiple_of(32 * MSS);
                let samples = [8_000_000];
                let mut ack = Ack::single(MSS, 1, ece, Some(8_000_000), snd_una, snd_una + 64 * MSS, 64 * MSS, now);
                ack.rtt_samples = &samples;
                let outcome = machine.run(&Input::at(now, &info).ack(&ack, false));
                if outcome.report {
                    black_box(machine.registers());
                    machine.reset_volatile();
                }
                black_box(outcome)
            })
        });
    }
    group.finish();
}

criterion_group!(plane, plane_throughput, program_cost);
criterion_main!(plane);
