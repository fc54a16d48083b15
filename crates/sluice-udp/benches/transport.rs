//! The UDP datapath's user-space cost per packet on one core, without system calls: a sender endpoint
//! and a receiver endpoint exchange datagrams through memory. One iteration carries one data packet
//! (1000 B of payload) from the sender's pacer to the receiver and its ACK back through the sender's
//! CC plane and algorithm (DCTCP, native mode, one report per ACK; or offload mode, where the reports
//! cross the plane's modelled channel on the endpoint's clock) or with no algorithm (`none`).
//! The socket layer's cost comes on top and is measured by `sluice udp send` (BENCHMARKS.md).

// `criterion_main!` generates an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice_cc::registry::lookup;
use sluice_plane::{Mode, PlaneConfig};
use sluice_udp::{Endpoint, FlowSpec, TransportConfig};
use sluice_wire::Ecn;

/// A sender of `flows` streams and its receiver, with the clock.
struct Pair {
    sender: Endpoint,
    receiver: Endpoint,
    now: u64,
    data: Vec<u8>,
    ack: Vec<u8>,
}

impl Pair {
    fn new(algorithm: &str, flows: u32, mode: Mode) -> Pair {
        // 1084-byte MTU: 1000 bytes of payload after the IP, UDP and sluice headers.
        let config = TransportConfig { mtu: 1084, line_rate: 100_000_000_000, ..TransportConfig::default() };
        let mut sender = Endpoint::new(config, PlaneConfig { mode, ..PlaneConfig::default() }, 0);
        let a = lookup(algorithm).unwrap();
        let factory = (a.build)(&toml::Table::new(), config.line_rate).unwrap();
        for id in 0..flows {
            let spec = FlowSpec { id, peer: 1, size: None, factory: factory.clone(), needs: a.needs };
            sender.open(spec, 0).unwrap();
        }
        let receiver = Endpoint::new(config, PlaneConfig::default(), 0);
        Pair { sender, receiver, now: 0, data: vec![0; 9000], ack: vec![0; 9000] }
    }

    /// One data packet out, in, and its ACK back; the clock moves 80 ns (100 Gbps of 1000-byte packets).
    fn step(&mut self) {
        self.now += 80_000;
        self.sender.advance(self.now);
        let Some(t) = self.sender.poll_transmit(self.now, &mut self.data) else { return };
        assert_eq!(t.len, 1056);
        self.receiver.handle(self.now, 0, Ecn::Ect0, &self.data[..t.len]).unwrap();
        let a = self.receiver.poll_transmit(self.now, &mut self.ack).unwrap();
        self.sender.handle(self.now + 1, 1, Ecn::NotEct, &self.ack[..a.len]).unwrap();
    }
}

fn per_packet(c: &mut Criterion) {
    let mut group = c.benchmark_group("udp_transport");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(3));
    let cases = [
        ("none", 1, Mode::Native),
        ("dctcp", 1, Mode::Native),
        ("dctcp", 1024, Mode::Native),
        ("dctcp-offload", 1, Mode::Offload),
    ];
    for (name, flows, mode) in cases {
        let mut pair = Pair::new(name.trim_end_matches("-offload"), flows, mode);
        for _ in 0..10_000 {
            pair.step();
        }
        group.bench_function(BenchmarkId::new(name, flows), |b| b.iter(|| pair.step()));
    }
    group.finish();
}

criterion_group!(benches, per_packet);
criterion_main!(benches);
