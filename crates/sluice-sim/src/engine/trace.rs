//! The packet trace: every enqueue, send, mark, drop and trim of chosen flows at chosen switch ports,
//! and the PFC pauses and resumes of those ports, bounded in rows; what ns-3's pcap files and htsim's
//! logs give for debugging an algorithm packet by packet.
//!
//! The tracer lives in [`crate::engine::Core`] beside the counters, so that every element that handles
//! a packet can report to it with one call ([`crate::engine::Core::trace_packet`]); it decides what
//! matches and keeps rows in the order the events happen, which is time order.

use sluice_core::Time;
use sluice_results::{PacketEvent, PacketFields, PacketRow, PacketTrace};

use crate::engine::packet::{Arena, Kind, FLAG_CE, FLAG_ECT};

/// What to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketTraceConfig {
    /// Flows whose packets are traced; `None` for every flow.
    pub flows: Option<Vec<u32>>,
    /// Switch ports (node id, port) traced; `None` for every switch port.
    pub ports: Option<Vec<(u32, u16)>>,
    /// Rows kept at most; later events are counted, not kept.
    pub max_rows: u64,
}

/// What happened where: the event, the switch port, and the packet (none for PFC, which names the
/// paused priority `queue` instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// What happened.
    pub event: PacketEvent,
    /// The switch's node id.
    pub node: u32,
    /// Its port.
    pub port: u16,
    /// The packet, for packet events.
    pub pkt: Option<u32>,
    /// The PFC priority, for pause and resume events.
    pub queue: u8,
}

impl Site {
    /// `event` of packet `pkt` at `node`'s port `port`.
    #[inline(always)]
    pub fn packet(event: PacketEvent, node: u32, port: u16, pkt: u32) -> Site {
        Site { event, node, port, pkt: Some(pkt), queue: 0 }
    }

    /// A PFC `event` for priority `queue` at `node`'s port `port`.
    #[inline(always)]
    pub fn pfc(event: PacketEvent, node: u32, port: u16, queue: u8) -> Site {
        Site { event, node, port, pkt: None, queue }
    }
}

/// The tracer of a run.
#[derive(Debug)]
pub struct PacketTracer {
    /// Flow id -> traced, for a chosen set of flows.
    flows: Option<Vec<bool>>,
    /// Global port index -> traced, for a chosen set of ports.
    ports: Option<Vec<bool>>,
    /// Node id -> index of its port 0 among all ports.
    port_base: Vec<u32>,
    /// Ports of all nodes.
    total_ports: u32,
    max_rows: u64,
    trace: PacketTrace,
}

impl PacketTracer {
    /// A tracer for `config` over nodes whose port counts `ports_per_node` gives, and `flows` flows.
    pub fn new(config: &PacketTraceConfig, ports_per_node: &[usize], flows: usize) -> PacketTracer {
        let mut port_base = Vec::with_capacity(ports_per_node.len());
        let mut total = 0u32;
        for &n in ports_per_node {
            port_base.push(total);
            total += n as u32;
        }
        let flows = config.flows.as_ref().map(|chosen| {
            let mut set = vec![false; flows];
            chosen.iter().filter(|&&f| (f as usize) < flows).for_each(|&f| set[f as usize] = true);
            set
        });
        let ports = config.ports.as_ref().map(|chosen| {
            let mut set = vec![false; total as usize];
            chosen.iter().for_each(|&(node, port)| set[(port_base[node as usize] + port as u32) as usize] = true);
            set
        });
        PacketTracer {
            flows,
            ports,
            port_base,
            total_ports: total,
            max_rows: config.max_rows,
            trace: PacketTrace::default(),
        }
    }

    /// Records what happened at `site` at `now`, if the trace covers it; `queue_bytes` is the port's
    /// occupancy after the event.
    pub fn record(&mut self, now: Time, arena: &Arena, site: Site, queue_bytes: u64) {
        let Site { event, node, port, pkt, queue } = site;
        let index = self.port_base[node as usize] + port as u32;
        if self.ports.as_ref().is_some_and(|set| !set[index as usize]) {
            return;
        }
        let packet = pkt.map(|id| arena.get(id));
        let flow_ok =
            |flow: u32| self.flows.as_ref().is_none_or(|set| set.get(flow as usize).copied().unwrap_or(false));
        match packet {
            Some(p) if !flow_ok(p.flow) => return,
            None if self.flows.is_some() && self.ports.is_none() => return,
            _ => {}
        }
        if self.trace.rows.len() as u64 >= self.max_rows {
            self.trace.skipped += 1;
            return;
        }
        let fields = packet.map(|p| PacketFields {
            flow: p.flow,
            kind: kind_name(p.kind),
            seq: p.seq,
            payload: p.payload,
            wire: p.wire,
            ecn: ecn_name(p.flags),
        });
        let queue = packet.map_or(queue, |p| p.queue);
        self.trace.rows.push(PacketRow { time: now, event, port: index, packet: fields, queue_bytes, queue });
    }

    /// The trace, with each port named by `name(node, port)`.
    pub fn finish(self, name: impl Fn(u32, u16) -> String) -> PacketTrace {
        let mut trace = self.trace;
        let bases = &self.port_base;
        for (node, &base) in bases.iter().enumerate() {
            let end = bases.get(node + 1).copied().unwrap_or(self.total_ports);
            trace.ports.extend((0..end - base).map(|port| name(node as u32, port as u16)));
        }
        trace
    }
}

/// The kind's name in packets.csv.
fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Data => "data",
        Kind::Ack => "ack",
        Kind::Nack => "nack",
        Kind::Cnp => "cnp",
        Kind::Probe => "probe",
        Kind::ProbeAck => "probe_ack",
        Kind::Notify => "notify",
        Kind::Rts => "rts",
        Kind::Token => "token",
        Kind::TokenStop => "token_stop",
        Kind::Signal => "signal",
    }
}

/// The ECN codepoint's name in packets.csv.
fn ecn_name(flags: u8) -> &'static str {
    if flags & FLAG_CE != 0 {
        "ce"
    } else if flags & FLAG_ECT != 0 {
        "ect"
    } else {
        "not-ect"
    }
}
