//! Memory and time of one sender endpoint with many flows, without system calls: opens FLOWS streams
//! (default 65,536) of DCTCP to one receiver endpoint and carries PACKETS packets (default 2,000,000)
//! through the pair in memory, then prints the resident memory per flow and the time per packet.
//!
//! `cargo run --release -p sluice-udp --example many_flows -- [FLOWS] [PACKETS]`

use std::time::Instant;

use sluice_cc::registry::lookup;
use sluice_plane::PlaneConfig;
use sluice_udp::{Endpoint, FlowSpec, TransportConfig};
use sluice_wire::Ecn;

/// Resident memory of this process, bytes (Linux `/proc/self/statm`).
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let flows = args.next().unwrap_or(65_536) as u32;
    let packets = args.next().unwrap_or(2_000_000);
    let config = TransportConfig { mtu: 1084, line_rate: 100_000_000_000, ..TransportConfig::default() };
    let before = resident();
    let mut sender = Endpoint::new(config, PlaneConfig::default(), 0);
    let dctcp = lookup("dctcp").expect("registered");
    let factory = (dctcp.build)(&toml::Table::new(), config.line_rate).expect("defaults");
    for id in 0..flows {
        let spec = FlowSpec { id, peer: 1, size: None, factory: factory.clone(), needs: dctcp.needs };
        sender.open(spec, 0).expect("fresh id");
    }
    let mut receiver = Endpoint::new(config, PlaneConfig::default(), 0);
    let (mut data, mut ack) = (vec![0u8; 9000], vec![0u8; 9000]);
    let mut now = 0u64;
    let start = Instant::now();
    let mut carried = 0u64;
    while carried < packets {
        now += 80_000;
        sender.advance(now);
        let Some(t) = sender.poll_transmit(now, &mut data) else { continue };
        receiver.handle(now, 0, Ecn::Ect0, &data[..t.len]).expect("well formed");
        while let Some(a) = receiver.poll_transmit(now, &mut ack) {
            sender.handle(now + 1, 1, Ecn::NotEct, &ack[..a.len]).expect("well formed");
        }
        carried += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let used = resident().saturating_sub(before);
    println!(
        "{flows} flows: {:.0} bytes resident per flow (sender and receiver state), {:.0} ns per packet, {} flows received",
        used as f64 / flows as f64,
        elapsed * 1e9 / packets as f64,
        receiver.received().count()
    );
}
