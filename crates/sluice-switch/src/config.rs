//! What a fabric is built from: the topology and routes, the hosts' addresses, the switches'
//! settings (the simulator's `[switch]` types, with the same meaning), impairments and sampling.

use std::sync::Arc;

use sluice_cc::signal::SwitchSignal;
use sluice_core::{Rate, Time};
use sluice_sim::config::{EcnConfig, LoadBalance};
use sluice_topo::{NodeId, PortNo, Routes, Topology};
use sluice_wire::frame::FiveTuple;

use crate::tokens::TokenLimits;

/// Bytes each frame occupies on the wire beyond what the veth carries: FCS 4 B, preamble and SFD 8 B,
/// inter-frame gap 12 B (IEEE 802.3 clauses 3 and 4), so that a port shapes to its rate as an Ethernet
/// link would.
pub const WIRE_OVERHEAD: u32 = 24;

/// The largest IP datagram hosts send, bytes: 1500, the Ethernet MTU (RFC 894). INT records are
/// appended only while the datagram stays within it.
pub const IP_MTU: u32 = 1500;

/// Addresses of one host's link to the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostAddr {
    /// The host's IPv4 address.
    pub ip: [u8; 4],
    /// MAC address of the host's end of its link.
    pub mac: [u8; 6],
    /// MAC address of the fabric's end of the link: the source of frames delivered to the host.
    pub gateway_mac: [u8; 6],
}

impl HostAddr {
    /// The addressing the bed uses for host `index` (below 64,768), in private space (RFC 1918):
    /// `10.77.x.y` with `x = index / 253` and `y = index % 253 + 1` (never `.0` or `.255`), and locally
    /// administered MACs (IEEE 802: bit 1 of the first byte) `02:73:6c:00:hi:lo` for the host and
    /// `02:73:6c:01:hi:lo` for the fabric.
    pub fn numbered(index: u32) -> HostAddr {
        let (x, y) = ((index / 253) as u8, (index % 253) as u8 + 1);
        let (hi, lo) = ((index >> 8) as u8, index as u8);
        HostAddr { ip: [10, 77, x, y], mac: [0x02, 0x73, 0x6c, 0, hi, lo], gateway_mac: [0x02, 0x73, 0x6c, 1, hi, lo] }
    }
}

/// What an impairment does to the packets it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImpairAction {
    /// Drop the packet.
    Drop,
    /// Set Congestion Experienced (only ECN-capable packets; others pass, as the simulator's faults).
    Mark,
}

/// Which packets of a flow an impairment picks.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    /// These positions among the flow's data packets leaving the last switch (0 is the first; a
    /// retransmission counts as another packet), sorted.
    Packets(Vec<u64>),
    /// Each data packet with this probability, in (0, 1] (seeded).
    Fraction(f64),
}

/// Drops or marks packets of one flow where they leave the last switch toward their destination host,
/// as the simulator's `[[fault]]` does by default (Marlin, Arashloo et al., tests faults on the
/// switch's transmission to the receiver).
///
/// Several impairments may name the same flow: each counts every data packet of the flow, and the
/// first one (in order) that picks a packet decides what happens to it, as the simulator's faults do.
#[derive(Debug, Clone, PartialEq)]
pub struct Impairment {
    /// The flow: its 5-tuple, or with [`Impairment::sluice_flow`] its addresses and protocol (the
    /// ports are then ignored).
    pub flow: FiveTuple,
    /// A sluice flow id: the rule picks only UDP packets whose sluice header carries it. The sluice
    /// UDP transport sends many flows from one socket, so only the id tells them apart.
    pub sluice_flow: Option<u32>,
    /// What to do.
    pub action: ImpairAction,
    /// Which packets.
    pub pick: Pick,
}

impl Impairment {
    /// Whether a frame of `tuple`, carrying a sluice header of flow `sluice` (if any), belongs to the
    /// impaired flow.
    pub fn matches(&self, tuple: &FiveTuple, sluice: Option<u32>) -> bool {
        match self.sluice_flow {
            None => self.flow == *tuple,
            Some(id) => {
                let f = &self.flow;
                sluice == Some(id) && (f.src, f.dst, f.protocol) == (tuple.src, tuple.dst, tuple.protocol)
            }
        }
    }

    /// Whether `other` picks from the same packets as this rule (the same flow, matched the same way).
    pub fn same_flow(&self, other: &Impairment) -> bool {
        match (self.sluice_flow, other.sluice_flow) {
            (None, None) => self.flow == other.flow,
            (Some(a), Some(b)) => a == b && self.matches(&other.flow, Some(b)),
            _ => false,
        }
    }
}

/// Settings every switch of the fabric shares: the simulator's `[switch]` keys the fabric honours.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchParams {
    /// Shared buffer per switch, bytes (`[switch] buffer`); the limit of each host link's queue as
    /// well.
    pub buffer: u64,
    /// Dynamic-threshold alpha (`[switch] dt_alpha`): a queue admits a packet while its length stays
    /// below alpha x free buffer (Choudhury and Hahne, ToN 1998).
    pub dt_alpha: f64,
    /// Priority queues per port, 1 to 8 (`[switch] queues`).
    pub queues: u8,
    /// Queue of data packets with DSCP class 0 (`[switch] data_queue`).
    pub data_queue: u8,
    /// Queue of control packets: sluice ACK/NACK/token/CNP and TCP segments without payload
    /// (`[switch] control_queue`).
    pub control_queue: u8,
    /// ECN marking (`[switch.ecn]`).
    pub ecn: EcnConfig,
    /// Append INT records to sluice packets that ask for them (`[switch] int`).
    pub int: bool,
    /// ECMP path choice (`[switch] load_balance`).
    pub load_balance: LoadBalance,
    /// Wire bytes added to each frame for serialisation; default [`WIRE_OVERHEAD`].
    pub wire_overhead: u32,
    /// IP MTU for INT room; default [`IP_MTU`].
    pub ip_mtu: u32,
    /// Token limiters at switch ports, for receiver-driven algorithms that rely on them
    /// (`token_limiter`, `token_ecn`); `None`: tokens queue as any control packet.
    pub token_limiter: Option<TokenLimits>,
}

/// Throughput and queue sampling (`[output] sample_interval` and `throughput_ports`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sampling {
    /// Spacing of samples, ps; 0 = none.
    pub interval: Time,
    /// Sampled ports as (node id, port number).
    pub ports: Vec<(NodeId, PortNo)>,
}

/// Everything a [`crate::Fabric`] is built from.
#[derive(Debug, Clone)]
pub struct FabricConfig {
    /// The topology: every switch and link of the fabric; host links end on the bed's veths.
    pub topology: Topology,
    /// Its ECMP routes.
    pub routes: Routes,
    /// Per host index, its addresses.
    pub hosts: Vec<HostAddr>,
    /// Switch settings.
    pub switch: SwitchParams,
    /// Impairments.
    pub impairments: Vec<Impairment>,
    /// Sampling.
    pub sampling: Sampling,
    /// Seed of the RED, ECMP-spray and impairment random streams.
    pub seed: u64,
    /// Packet slots (see [`crate::pool`]): packets queued and in flight on delay lines together.
    pub slots: usize,
    /// The switch side of the run's algorithm, when it has a per-hop signal (`sluice_cc::signal`),
    /// built by the algorithm's factory from its parameters: every switch port runs it.
    pub signal: Option<Arc<dyn SwitchSignal>>,
}

/// Default packet slots: 65,536 (128 MiB of 2 KiB slots, touched only as used): a 10 ms link at the
/// fastest rate the fabric takes (1 Gbit/s) holds about 15,000 minimum-size frames in flight, so a
/// small fabric's delay lines and queues fit.
pub const DEFAULT_SLOTS: usize = 1 << 16;

impl FabricConfig {
    /// The rate of the fastest link, bit/s.
    pub fn max_rate(&self) -> Rate {
        self.topology.links.iter().map(|l| l.rate).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_addresses_are_unique_and_avoid_network_and_broadcast() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..2000 {
            let a = HostAddr::numbered(i);
            assert!(a.ip[3] != 0 && a.ip[3] != 255, "{i}: {:?}", a.ip);
            assert!(seen.insert(a.ip), "{i}");
            assert_eq!(a.mac[0] & 3, 2);
        }
        assert_eq!(HostAddr::numbered(0).ip, [10, 77, 0, 1]);
        assert_eq!(HostAddr::numbered(2).ip, [10, 77, 0, 3]);
    }
}
