//! A sender and a receiver on real sockets over loopback: flows complete, every byte arrives once,
//! and a receiver that is gone ends the sender's flows with an error.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use sluice_cc::registry::lookup;
use sluice_core::PS_PER_MS;
use sluice_plane::PlaneConfig;
use sluice_udp::io::Socket;
use sluice_udp::{Endpoint, FlowResult, FlowSpec, TransportConfig, UdpHost};

fn host() -> UdpHost {
    let socket = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    UdpHost::new(socket, Endpoint::new(TransportConfig::default(), PlaneConfig::default(), 0))
}

fn open(sender: &mut UdpHost, to: SocketAddrV4, flows: u32, size: u64, algorithm: &str) {
    let a = lookup(algorithm).unwrap();
    let factory = (a.build)(&toml::Table::new(), 10_000_000_000).unwrap();
    let peer = sender.peer(to);
    let now = sender.now();
    for id in 0..flows {
        let spec = FlowSpec { id, peer, size: Some(size), factory: factory.clone(), needs: a.needs };
        sender.endpoint.open(spec, now).unwrap();
    }
}

/// Sends `flows` DCTCP flows of `size` bytes from a fresh host to `receiver`, run on a thread of its
/// own, for at most 20 s; returns the flows' results and both hosts.
fn transfer(mut receiver: UdpHost, flows: u32, size: u64) -> (Vec<FlowResult>, UdpHost, UdpHost) {
    let to = receiver.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_rx = stop.clone();
    let rx = thread::spawn(move || {
        receiver.run(|_, _| stop_rx.load(Ordering::Relaxed)).unwrap();
        receiver
    });
    let mut sender = host();
    open(&mut sender, to, flows, size, "dctcp");
    let mut results = Vec::new();
    sender
        .run(|e, now| {
            results.extend(e.take_finished());
            e.active() == 0 || now > 20_000 * PS_PER_MS
        })
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    (results, sender, rx.join().unwrap())
}

/// Every flow ended within 20 s with all of its bytes, and the receiver took each byte once.
fn check_delivered(results: &[FlowResult], receiver: &UdpHost, flows: u32, size: u64) {
    assert_eq!(results.len(), flows as usize, "every flow ended within 20 s");
    for r in results {
        assert_eq!((r.size, r.error.as_deref()), (size, None), "flow {}", r.id);
    }
    let delivered: u64 = receiver.endpoint.received().map(|(_, bytes)| bytes).sum();
    assert_eq!(delivered, flows as u64 * size, "each byte once");
}

#[test]
fn flows_complete_over_loopback_sockets() {
    let (results, sender, receiver) = transfer(host(), 4, 1_000_000);
    check_delivered(&results, &receiver, 4, 1_000_000);
    assert_eq!(receiver.endpoint.counters.malformed + sender.endpoint.counters.malformed, 0);
    assert!(sender.io.send_calls > 0 && receiver.io.recv_calls > 0);
}

#[test]
fn a_receiver_that_never_answers_fails_the_flow() {
    let silent = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    let to = silent.local_addr().unwrap();
    let config = TransportConfig { peer_timeout: 200 * PS_PER_MS, ..TransportConfig::default() };
    let socket = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    let mut sender = UdpHost::new(socket, Endpoint::new(config, PlaneConfig::default(), 0));
    open(&mut sender, to, 1, 1_000_000, "reno");
    let mut results = Vec::new();
    sender
        .run(|e, now| {
            results.extend(e.take_finished());
            e.active() == 0 || now > 5_000 * PS_PER_MS
        })
        .unwrap();
    assert_eq!(results.len(), 1, "the flow ended instead of hanging");
    assert!(results[0].error.as_deref().is_some_and(|e| e.contains("gone")));
    drop(silent);
}

/// A host that moves nothing sleeps on its socket at once by default; with `busy_poll` it keeps
/// polling for that long after it last moved a datagram (here, since it started), then sleeps.
#[test]
fn busy_polling_spins_for_its_window_then_sleeps() {
    let idle_for = |busy_poll, run_for| {
        let socket = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let config = TransportConfig { busy_poll, ..TransportConfig::default() };
        let mut host = UdpHost::new(socket, Endpoint::new(config, PlaneConfig::default(), 0));
        host.run(|_, now| now > run_for).unwrap();
        host.io.waits
    };
    assert!(idle_for(0, 20 * PS_PER_MS) >= 1, "no busy polling: it sleeps");
    assert_eq!(idle_for(1_000 * PS_PER_MS, 20 * PS_PER_MS), 0, "within its window it never sleeps");
    assert!(idle_for(5 * PS_PER_MS, 60 * PS_PER_MS) >= 1, "past its window it sleeps");
}

/// Flows complete as well with a receiver that polls its socket instead of sleeping on it.
#[test]
fn flows_complete_with_a_busy_polling_receiver() {
    let socket = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    let config = TransportConfig { busy_poll: 200 * sluice_core::PS_PER_US, ..TransportConfig::default() };
    let receiver = UdpHost::new(socket, Endpoint::new(config, PlaneConfig::default(), 0));
    let (results, _, receiver) = transfer(receiver, 64, 100_000);
    check_delivered(&results, &receiver, 64, 100_000);
}
