//! The sluice software switch on Linux: a network namespace per host, joined by a veth pair to one
//! process that runs the whole fabric ([`sluice_switch::Fabric`]) over AF_PACKET sockets, so that real
//! datapaths (kernel TCP, a user-space UDP transport) see the simulator's ECN marking, propagation
//! delay, priority queues and INT. This kernel has no netem or RED qdisc, which is why the switch
//! exists.
//!
//! [`netns`] brings the bed up and down, [`socket`] moves frames, [`mod@run`] is the event loop, and
//! [`exclusive`] is the machine-wide lock every namespace bed and kernel benchmark takes.

pub mod lock;
pub mod netns;
pub mod ring;
pub mod run;
pub mod socket;

use std::process::{Command, Stdio};

pub use lock::exclusive;
pub use netns::{remove_stale, Bed, BedHost};
pub use run::{run, run_rings, LoopStats, Wait};

/// Why the bed cannot run here (not root, tools missing); `None` when it can.
pub fn unavailable() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2));
    if uid != Some("0") {
        return Some("not root (network namespaces, veth pairs and AF_PACKET sockets need root)".into());
    }
    for (tool, arg) in [("ip", "-V"), ("ethtool", "--version"), ("python3", "--version"), ("ping", "-V")] {
        let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Some(format!("`{tool}` is missing (run ./scripts/setup.sh)"));
        }
    }
    let probe = Command::new("ip").args(["netns", "list"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Some("`ip netns` does not work here".into());
    }
    None
}

/// Opens the AF_PACKET socket of every host link of `bed`, in host order.
pub fn sockets(bed: &Bed) -> std::io::Result<Vec<socket::PacketSocket>> {
    bed.hosts.iter().map(|h| socket::PacketSocket::open(&h.link)).collect()
}
