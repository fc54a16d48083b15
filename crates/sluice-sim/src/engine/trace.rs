//! The packet trace: every enqueue, send, mark, drop and trim of chosen flows at chosen switch ports,
//! and the PFC pauses and resumes of those ports, bounded in rows; what ns-3's pcap files and htsim's
//! logs give for debugging an algorithm packet by packet.
//!
//! The tracer lives in [`crate::engine::Core`] beside the counters, so that every element that handles
//! a packet can report to it with one call ([`crate::engine::Core::trace_packet`]); it decides what
//! matches and keeps rows in time order, and at one instant in the order of the ports.

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
        // Past the bound, rows at the instant of the last one kept are still kept: which of them stay
        // is settled in port order at the end ([`settle`]).
        if self.trace.rows.len() as u64 >= self.max_rows && self.trace.rows.last().is_none_or(|r| r.time < now) {
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

    /// The trace, with each port named by `name(node, port)`, its rows settled ([`settle`]).
    pub fn finish(self, name: impl Fn(u32, u16) -> String) -> PacketTrace {
        let mut trace = self.trace;
        settle(&mut trace, self.max_rows);
        let bases = &self.port_base;
        for (node, &base) in bases.iter().enumerate() {
            let end = bases.get(node + 1).copied().unwrap_or(self.total_ports);
            trace.ports.extend((0..end - base).map(|port| name(node as u32, port as u16)));
        }
        trace
    }
}

/// Puts `trace`'s rows in packets.csv's order, by time and then by port (one port's rows at one instant
/// in the order of its events), and keeps the first `max_rows`, counting the rest as skipped. Different
/// ports' events at one instant may run in any order without changing the run, so this order is the
/// same on any number of threads: a partitioned run settles its parts' rows together.
pub fn settle(trace: &mut PacketTrace, max_rows: u64) {
    trace.rows.sort_by_key(|row| (row.time, row.port));
    let kept = trace.rows.len().min(usize::try_from(max_rows).unwrap_or(usize::MAX));
    trace.skipped += (trace.rows.len() - kept) as u64;
    trace.rows.truncate(kept);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracer of every flow at every port of two nodes with two ports each, keeping `max_rows`.
    fn tracer(max_rows: u64) -> PacketTracer {
        PacketTracer::new(&PacketTraceConfig { flows: None, ports: None, max_rows }, &[2, 2], 4)
    }

    fn pause(tracer: &mut PacketTracer, arena: &Arena, now: Time, node: u32, port: u16) {
        tracer.record(now, arena, Site::pfc(PacketEvent::PauseSent, node, port, 3), 0);
    }

    #[test]
    fn rows_of_one_instant_settle_in_port_order_and_the_bound_cuts_among_them() {
        let arena = Arena::new(false);
        let mut t = tracer(3);
        pause(&mut t, &arena, 5, 1, 1);
        pause(&mut t, &arena, 7, 1, 0);
        pause(&mut t, &arena, 7, 0, 1);
        // Past the bound, but at the instant of the last row kept: kept until settled.
        pause(&mut t, &arena, 7, 0, 0);
        pause(&mut t, &arena, 7, 1, 1);
        // A later instant is counted only.
        pause(&mut t, &arena, 8, 0, 0);
        let trace = t.finish(|node, port| format!("n{node}:p{port}"));
        let rows: Vec<(Time, &str)> =
            trace.rows.iter().map(|r| (r.time, trace.ports[r.port as usize].as_str())).collect();
        assert_eq!(rows, [(5, "n1:p1"), (7, "n0:p0"), (7, "n0:p1")]);
        assert_eq!(trace.skipped, 3);
    }

    #[test]
    fn settling_the_rows_of_two_parts_together_gives_those_of_one() {
        let arena = Arena::new(false);
        let events = [(4, 0, 1), (4, 1, 0), (6, 1, 1), (6, 0, 0), (6, 1, 0), (9, 0, 1)];
        let mut whole = tracer(4);
        let (mut first, mut second) = (tracer(4), tracer(4));
        for &(now, node, port) in &events {
            pause(&mut whole, &arena, now, node, port);
            pause(if node == 0 { &mut first } else { &mut second }, &arena, now, node, port);
        }
        let name = |node: u32, port: u16| format!("n{node}:p{port}");
        let whole = whole.finish(name);
        let mut merged = first.finish(name);
        let second = second.finish(name);
        merged.rows.extend(second.rows);
        merged.skipped += second.skipped;
        settle(&mut merged, 4);
        assert_eq!(merged.rows, whole.rows);
        assert_eq!((merged.skipped, whole.skipped), (2, 2));
    }
}
