//! Transport settings of the UDP datapath, with the simulator's defaults where the two mean the same.

use sluice_core::{Rate, Time, PS_PER_MS, PS_PER_US};

/// IPv4 (20) and UDP (8) header bytes in front of every sluice header.
pub const IP_UDP_BYTES: u32 = 28;
/// Ethernet bytes on the wire around each IP packet, counted with it when pacing: header 14, FCS 4,
/// preamble and SFD 8, inter-frame gap 12 (IEEE 802.3 clauses 3 and 4). A link's rate counts them all,
/// as the software switch's ports and the simulator's `link.header_bytes` do; a sender that paced on
/// the header alone would send 1.6% more than a 1500-byte link carries at its line rate and build a
/// standing queue at its own NIC.
pub const ETHERNET_BYTES: u32 = 38;
/// INT records a data packet leaves room for when its algorithm reads INT: the simulator's
/// `MAX_INT_HOPS`, enough for a 5-hop fat-tree path.
pub const INT_HOPS_RESERVED: u32 = 5;

/// Settings of one endpoint's transport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportConfig {
    /// IP MTU of the path, bytes. Default 1500 (Ethernet).
    pub mtu: u32,
    /// The sender's NIC rate: the pacer never sends faster, and algorithms are told it as line rate.
    /// Default 10 Gbps.
    pub line_rate: Rate,
    /// The base RTT algorithms are told before their first sample (UDP has no handshake to measure
    /// it). Default 20 us, a rack-scale datacenter RTT.
    pub base_rtt: Time,
    /// Send one ACK per this many data packets (the last packet of a flow, a packet out of order and a
    /// change of CE state are acknowledged at once). Default 1 (HPCC artifact L2_ACK_INTERVAL 1, as
    /// the simulator).
    pub ack_every_packets: u32,
    /// Minimum retransmission timeout. Default 1 ms (the simulator's `host.rto_min`: the minimum RTO of
    /// Google's Falcon/Swift reference configuration, isekai swift.cc).
    pub rto_min: Time,
    /// Double the retransmission timeout at each expiry without progress, up to 60 s (RFC 6298 section
    /// 5.5; `sluice_cc::rto`). Default off, as the simulator's `host.rto_backoff`.
    pub rto_backoff: bool,
    /// A flow that makes no progress for this long, while its peer sends nothing for any flow either,
    /// ends with an error (its peer vanished). Default 1 s.
    pub peer_timeout: Time,
    /// Granularity of the timing wheel that paces flows and runs their timers. Default 1 us.
    pub wheel_tick: Time,
    /// The pacer releases packets due up to this far ahead together, so that one system call carries a
    /// batch: user-space pacing cannot wake more precisely than its timers (about 1 us with the timer
    /// slack the host loop asks for, more under load), and Linux's fq qdisc likewise sends up to a
    /// quantum of two packets at once. Default 4 us, three 1500-byte packets at 10 Gbps.
    pub burst: Time,
    /// The rate this endpoint's NIC pacer holds all its flows to, when it is not `line_rate`: an endpoint
    /// that owns one of several sender threads of a host gets its share of the host's line rate, while its
    /// algorithms are still told the host's. Default `None` (the line rate).
    pub nic_rate: Option<Rate>,
    /// Packets a flow sends in a row when its turn in the round-robin ready queue comes, window and
    /// pacing allowing, before the next flow's turn. Default 2: Linux fq's default quantum of two MTUs
    /// (net/sched/sch_fq.c, `2 * psched_mtu`). Besides matching the kernel's per-flow bursts, a turn of
    /// two packets finds the flow's state in cache for the second, which counts at tens of thousands of
    /// flows (BENCHMARKS.md, "many flows").
    pub quantum: u32,
    /// How long the socket loop keeps polling after it last received or sent a datagram before it
    /// sleeps on the socket, as Linux's `busy_poll` and the polling loops of packet generators do. A
    /// receiver that polls costs its senders no wake-ups (on one machine, waking a sleeping receiver is
    /// work on the sender's core); a polling loop keeps its core busy meanwhile. Default 0: sleep at
    /// once.
    pub busy_poll: Time,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            mtu: 1500,
            line_rate: 10_000_000_000,
            base_rtt: 20 * PS_PER_US,
            ack_every_packets: 1,
            rto_min: PS_PER_MS,
            rto_backoff: false,
            peer_timeout: 1_000 * PS_PER_MS,
            wheel_tick: PS_PER_US,
            burst: 4 * PS_PER_US,
            nic_rate: None,
            quantum: 2,
            busy_poll: 0,
        }
    }
}

impl TransportConfig {
    /// Payload bytes per data packet, leaving room for `int_hops` INT records.
    pub fn payload_bytes(&self, int_hops: u32) -> u32 {
        let overhead = IP_UDP_BYTES + sluice_wire::sluice::HEADER_LEN as u32;
        let int = int_hops * sluice_wire::sluice::HOP_LEN as u32;
        self.mtu.saturating_sub(overhead + int).max(1)
    }

    /// The rate of this endpoint's NIC pacer: [`TransportConfig::nic_rate`], else the line rate.
    pub fn nic_rate(&self) -> Rate {
        self.nic_rate.unwrap_or(self.line_rate)
    }

    /// How far a pacer at `rate` may fall behind its schedule and still catch up: a process that wakes
    /// late sends what fell due meanwhile instead of losing that time. Two full packets at the rate
    /// (Linux fq's default quantum), at least [`TransportConfig::burst`]. Without it, wake-ups 15 us late
    /// cost a 100 Mbps sender 12% of its rate (measured).
    pub fn pacing_credit(&self, rate: Rate) -> Time {
        let packet_bits = (self.mtu + ETHERNET_BYTES) as u64 * 8;
        (2 * packet_bits * sluice_core::PS_PER_S / rate.max(1)).max(self.burst)
    }

    /// Checks the settings; the error names the setting.
    pub fn validate(&self) -> Result<(), String> {
        let least = IP_UDP_BYTES + (sluice_wire::sluice::HEADER_LEN + 64) as u32;
        if self.mtu < least || self.mtu > 9000 {
            return Err(format!("mtu {} is outside {least}..=9000 bytes", self.mtu));
        }
        if self.line_rate == 0 {
            return Err("line_rate must be positive".into());
        }
        if self.nic_rate == Some(0) {
            return Err("nic_rate must be positive".into());
        }
        if self.ack_every_packets == 0 {
            return Err("ack_every_packets must be at least 1".into());
        }
        if self.quantum == 0 {
            return Err("quantum must be at least 1 packet".into());
        }
        if self.wheel_tick == 0 {
            return Err("wheel_tick must be positive".into());
        }
        if self.peer_timeout <= self.rto_min {
            return Err("peer_timeout must exceed rto_min".into());
        }
        Ok(())
    }
}
