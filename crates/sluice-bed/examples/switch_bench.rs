//! Measures the software switch (root): frames per second through the fabric's logic alone, and on a
//! star of three hosts the rate the bottleneck delivers when two hosts flood it, for full-size (1514 B)
//! and minimum-size (60 B, 64 B with the FCS) frames, at several link rates.
//!
//!   cargo run --profile ci -p sluice-bed --example switch_bench [-- SECONDS]
//!
//! Flooding hosts send with AF_PACKET from threads that joined their namespaces; the receiving host's
//! interface counters (read in its namespace) give the delivered rate over wall-clock time.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use sluice_bed::ring::RxRing;
use sluice_bed::socket::{PacketSocket, TxBatch, BATCH};
use sluice_bed::{exclusive, run, run_rings, sockets, unavailable, Bed, Wait};
use sluice_core::PS_PER_US;
use sluice_sim::config::{EcnConfig, LoadBalance};
use sluice_switch::config::{DEFAULT_SLOTS, IP_MTU, WIRE_OVERHEAD};
use sluice_switch::{Fabric, FabricConfig, HostAddr, Sampling, SwitchParams};
use sluice_topo::{build, TopologySpec};
use sluice_wire::eth::EthHeader;
use sluice_wire::frame;
use sluice_wire::ipv4::{Ecn, Ipv4Header};

fn config(rate: u64) -> FabricConfig {
    let spec = TopologySpec::Star { hosts: 3, rate, delay: 10 * PS_PER_US };
    let topology = build(&spec, std::path::Path::new(".")).unwrap();
    let routes = topology.routes();
    FabricConfig {
        hosts: (0..3).map(HostAddr::numbered).collect(),
        topology,
        routes,
        switch: SwitchParams {
            buffer: 1_000_000,
            dt_alpha: 1.0,
            queues: 8,
            data_queue: 3,
            control_queue: 0,
            ecn: EcnConfig { enabled: false, ..EcnConfig::default() },
            int: false,
            load_balance: LoadBalance::FlowHash,
            wire_overhead: WIRE_OVERHEAD,
            ip_mtu: IP_MTU,
            token_limiter: None,
        },
        impairments: Vec::new(),
        sampling: Sampling::default(),
        seed: 1,
        slots: DEFAULT_SLOTS,
        signal: None,
    }
}

/// A UDP frame of `len` bytes (Ethernet header included, FCS not) from host `src` to host 2.
fn frame(src: u32, len: usize) -> Vec<u8> {
    let (s, d) = (HostAddr::numbered(src), HostAddr::numbered(2));
    let eth = EthHeader { dst: s.gateway_mac, src: s.mac, ethertype: 0 };
    let ip = Ipv4Header {
        header_len: 20,
        dscp: 0,
        ecn: Ecn::NotEct,
        total_len: 0,
        id: 0,
        flags_fragment: 0x4000,
        ttl: 64,
        protocol: 0,
        src: s.ip,
        dst: d.ip,
    };
    let mut buf = vec![0u8; 2048];
    let n = frame::write_udp(&mut buf, &eth, &ip, (4000, 9), &vec![0u8; len - 42]).unwrap();
    buf.truncate(n);
    buf
}

/// Frames per second through the fabric's logic alone (no sockets): two hosts at line rate into one.
fn engine_only(len: usize) -> f64 {
    let mut fabric = Fabric::new(config(10_000_000_000));
    let frames = [frame(0, len), frame(1, len)];
    let gap_ns = ((len + 24) * 8) as u64 / 10;
    let n = 2_000_000u64;
    let start = Instant::now();
    let mut delivered = 0u64;
    for i in 0..n / 2 {
        let t = i * gap_ns.max(1);
        fabric.advance(t, &mut |_, _| delivered += 1);
        fabric.receive(t, 0, &frames[0]);
        fabric.receive(t, 1, &frames[1]);
    }
    fabric.advance(u64::MAX / 2_000, &mut |_, _| delivered += 1);
    let seconds = start.elapsed().as_secs_f64();
    // Each frame is handled twice: the host link, then the switch port.
    (n as f64 + delivered as f64) / 2.0 / seconds
}

/// Runs `f` on a thread in network namespace `ns`.
fn in_namespace<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let file = std::fs::File::open(format!("/var/run/netns/{ns}")).unwrap();
    std::thread::spawn(move || {
        // SAFETY: `file` is an open network-namespace descriptor alive for the call; setns changes only
        // this thread's namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

fn rx_counters(bed: &Bed, host: usize) -> (u64, u64) {
    let read = |what: &str| -> u64 {
        let out =
            bed.hosts[host].command("cat").arg(format!("/sys/class/net/eth0/statistics/{what}")).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (read("rx_packets"), read("rx_bytes"))
}

/// How the switch reads frames.
#[derive(Clone, Copy, PartialEq)]
enum Rx {
    /// `recvmmsg` (what the bed uses).
    Batch,
    /// TPACKET_V3 rings with a 1 ms block timer.
    Ring,
}

/// The switch on its own thread until `stop` is raised.
fn start(
    cfg: FabricConfig,
    bed: &Bed,
    rx: Rx,
    wait: Wait,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<sluice_bed::LoopStats> {
    let socks = sockets(bed).unwrap();
    let mut rings: Vec<RxRing> =
        if rx == Rx::Ring { bed.hosts.iter().map(|h| RxRing::open(&h.link, 1).unwrap()).collect() } else { Vec::new() };
    std::thread::spawn(move || {
        let mut fabric = Fabric::new(cfg);
        let stop = || stop.load(std::sync::atomic::Ordering::Relaxed);
        match rx {
            Rx::Batch => run(&mut fabric, &socks, wait, None, &stop).unwrap(),
            Rx::Ring => run_rings(&mut fabric, &socks, &mut rings, wait, None, &stop).unwrap(),
        }
    })
}

/// Ping's (min, avg) RTT in ms from host 0 to host 2 through an idle fabric with 10 us links.
fn ping(rx: Rx, wait: Wait) -> (f64, f64) {
    let cfg = config(1_000_000_000);
    let bed = Bed::up(&cfg.hosts).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let switch = start(cfg, &bed, rx, wait, stop.clone());
    let out = bed.hosts[0].command("ping").args(["-q", "-c", "50", "-i", "0.02", &bed.hosts[2].ip()]).output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    switch.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("min/avg")).unwrap_or_else(|| panic!("ping: {text}"));
    let v: Vec<f64> =
        line.split('=').nth(1).unwrap().trim().split('/').map(|x| x.trim_end_matches(" ms").parse().unwrap()).collect();
    (v[0], v[1])
}

/// Delivered frames/s and bit/s (wire bits, with the 24 B per-frame overhead) at host 2 while hosts 0
/// and 1 flood it with `len`-byte frames for `seconds`, links at `rate`.
fn bed_run(rate: u64, len: usize, seconds: f64, rx: Rx) -> (f64, f64, sluice_bed::LoopStats) {
    let cfg = config(rate);
    let bed = Bed::up(&cfg.hosts).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let switch = start(cfg, &bed, rx, Wait::Spin, stop.clone());
    let floods: Vec<_> = (0..2u32)
        .map(|h| {
            let (ns, f, until) = (bed.hosts[h as usize].namespace.clone(), frame(h, len), seconds);
            in_namespace(&ns, move || {
                let socket = PacketSocket::open("eth0").unwrap();
                let mut batch = TxBatch::default();
                let start = Instant::now();
                while start.elapsed().as_secs_f64() < until {
                    for _ in 0..BATCH {
                        batch.push(&f);
                    }
                    let _ = batch.flush(&socket);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds * 0.3));
    let (p0, b0) = rx_counters(&bed, 2);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds * 0.5));
    let (p1, b1) = rx_counters(&bed, 2);
    let dt = t0.elapsed().as_secs_f64();
    for f in floods {
        f.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stats = switch.join().unwrap();
    let pps = (p1 - p0) as f64 / dt;
    let bps = ((b1 - b0) as f64 + 24.0 * (p1 - p0) as f64) * 8.0 / dt;
    (pps, bps, stats)
}

fn main() {
    if let Some(why) = unavailable() {
        eprintln!("switch_bench needs the bed: {why}");
        std::process::exit(2);
    }
    let seconds: f64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(4.0);
    let _lock = exclusive().unwrap();
    if std::env::args().nth(2).as_deref() == Some("rx") {
        compare_rx(seconds);
        return;
    }
    for len in [1514usize, 60] {
        println!("frames of {len} B: fabric logic alone {:.2} Mframes/s", engine_only(len) / 1e6);
        for rate in [100_000_000u64, 1_000_000_000, 2_000_000_000, 5_000_000_000, 10_000_000_000] {
            let (pps, bps, stats) = bed_run(rate, len, seconds, Rx::Batch);
            println!(
                "  link {:>5.1} Gbit/s: delivered {:>6.3} Gbit/s ({:>5.1}% of the rate), {:>8.0} frames/s; switch read {:.0} frames/s",
                rate as f64 / 1e9,
                bps / 1e9,
                100.0 * bps / rate as f64,
                pps,
                stats.rx_frames as f64 / (stats.elapsed_ns as f64 * 1e-9),
            );
        }
    }
}

/// recvmmsg against a TPACKET_V3 ring: ping latency through an idle fabric (sleeping and spinning
/// loop) and frames/s under a flood.
fn compare_rx(seconds: f64) {
    let configured = 4.0 * 0.010 + 4.0 * (98.0 + 24.0) * 8.0 / 1e9 * 1e3;
    println!("ping through 10 us links at 1 Gbit/s (configured RTT {configured:.3} ms):");
    for (name, rx) in [("recvmmsg", Rx::Batch), ("TPACKET_V3 ring, 1 ms block timer", Rx::Ring)] {
        for wait in [Wait::Poll, Wait::Spin] {
            let (min, avg) = ping(rx, wait);
            println!("  {name}, {wait:?}: min {min:.3} ms, avg {avg:.3} ms");
        }
    }
    for len in [1514usize, 60] {
        for (name, rx) in [("recvmmsg", Rx::Batch), ("TPACKET_V3 ring", Rx::Ring)] {
            let (pps, bps, _) = bed_run(10_000_000_000, len, seconds, rx);
            println!("  flood of {len} B frames, {name}: {pps:.0} frames/s delivered ({:.3} Gbit/s)", bps / 1e9);
        }
    }
}
