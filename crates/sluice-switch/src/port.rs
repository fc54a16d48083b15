//! An egress port: up to eight strict-priority queues, a transmitter that serialises at the link rate,
//! a delay line for propagation delay, and the port's counters. Also the shared buffer a group of ports
//! draws from.

use sluice_core::{serialization_ps, Rate, Time};
use sluice_sim::config::EcnThresholds;
use sluice_topo::{NodeId, PortNo};

use crate::pool::{List, Pool};

/// Most priority queues per port (IEEE 802.1Q traffic classes).
pub const MAX_QUEUES: usize = 8;

/// Where a port's link leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A host (index): frames leave the fabric through its veth.
    Host(u32),
    /// A switch (node id): frames are forwarded there.
    Switch(NodeId),
}

/// Counters of one port.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortStats {
    /// Wire bytes transmitted (frames plus the per-frame wire overhead).
    pub tx_bytes: u64,
    /// Frames transmitted.
    pub tx_packets: u64,
    /// Largest queue length, bytes.
    pub max_queue: u64,
    /// Integral of the queue length over time, byte-picoseconds.
    pub area: u128,
    /// When the queue length last changed, ps.
    pub last_change: Time,
    /// Packets dropped here (buffer full, early drop, impairment).
    pub drops: u64,
    /// Data packets among `drops`.
    pub data_drops: u64,
    /// Frame bytes of the dropped packets.
    pub dropped_bytes: u64,
    /// Packets marked CE here (RED/step marking and impairments).
    pub ecn_marks: u64,
    /// INT records that did not fit the packet's MTU.
    pub int_no_room: u64,
}

/// A buffer shared by a group of ports: one per switch (the simulator's `[switch] buffer`), one per
/// host link.
#[derive(Debug, Clone, Default)]
pub struct Buffer {
    /// Capacity, bytes.
    pub size: u64,
    /// Bytes held.
    pub used: u64,
    /// Largest occupancy.
    pub max: u64,
    /// Integral of occupancy over time, byte-picoseconds.
    pub area: u128,
    /// When occupancy last changed, ps.
    pub last_change: Time,
}

impl Buffer {
    /// Adds `delta` bytes at `now`, keeping the statistics.
    pub fn account(&mut self, now: Time, delta: i64) {
        self.area += self.used as u128 * now.saturating_sub(self.last_change) as u128;
        self.last_change = now;
        self.used = self.used.saturating_add_signed(delta);
        self.max = self.max.max(self.used);
    }
}

/// An egress port.
#[derive(Debug)]
pub struct Port {
    /// The node owning the port.
    pub node: NodeId,
    /// Its port number there.
    pub port_no: PortNo,
    /// Index of the [`Buffer`] it draws from.
    pub buffer: usize,
    /// Whether the port is a switch's (marks, stamps INT, runs impairments) rather than a host link's.
    pub switch: bool,
    /// The link's far end.
    pub peer: Peer,
    /// Link rate, bit/s.
    pub rate: Rate,
    /// Propagation delay, ps.
    pub delay: Time,
    /// ECN thresholds for this port's rate.
    pub ecn: EcnThresholds,
    queues: [List; MAX_QUEUES],
    /// Bytes waiting per queue.
    pub queue_bytes: [u64; MAX_QUEUES],
    /// Bytes waiting, all queues.
    pub bytes: u64,
    /// When the transmitter finishes the frame on the wire, ps.
    pub busy_until: Time,
    line: List,
    /// Counters.
    pub stats: PortStats,
}

impl Port {
    /// An idle port.
    pub fn new(
        node: NodeId,
        port_no: PortNo,
        buffer: usize,
        switch: bool,
        peer: Peer,
        rate: Rate,
        delay: Time,
    ) -> Port {
        Port {
            node,
            port_no,
            buffer,
            switch,
            peer,
            rate,
            delay,
            ecn: EcnThresholds { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 },
            queues: [List::default(); MAX_QUEUES],
            queue_bytes: [0; MAX_QUEUES],
            bytes: 0,
            busy_until: 0,
            line: List::default(),
            stats: PortStats::default(),
        }
    }

    /// Time to serialise `bytes` at the link rate, ps (rounded up, as the simulator).
    #[inline]
    pub fn serialization(&self, bytes: u64) -> Time {
        serialization_ps(bytes, self.rate)
    }

    /// Whether no packet waits in any queue.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes == 0 && self.queues.iter().all(List::is_empty)
    }

    fn account(&mut self, now: Time) {
        let s = &mut self.stats;
        s.area += self.bytes as u128 * now.saturating_sub(s.last_change) as u128;
        s.last_change = now;
    }

    /// Appends packet `id` of `wire` bytes to queue `queue` at `now`.
    pub fn enqueue(&mut self, pool: &mut Pool, now: Time, queue: usize, id: u32, wire: u64) {
        self.account(now);
        pool.push(&mut self.queues[queue], id);
        self.queue_bytes[queue] += wire;
        self.bytes += wire;
        self.stats.max_queue = self.stats.max_queue.max(self.bytes);
    }

    /// Takes the head of the first non-empty queue (strict priority, queue 0 first) at `now`; the
    /// caller gives its `wire` size through `wire_of`.
    pub fn dequeue(&mut self, pool: &mut Pool, now: Time, wire_of: impl Fn(&Pool, u32) -> u64) -> Option<(u32, usize)> {
        let queue = self.queues.iter().position(|q| !q.is_empty())?;
        let id = pool.pop(&mut self.queues[queue])?;
        let wire = wire_of(pool, id);
        self.account(now);
        self.queue_bytes[queue] -= wire;
        self.bytes -= wire;
        Some((id, queue))
    }

    /// Puts packet `id` of `wire` bytes on the wire at `now`: the transmitter is busy for its
    /// serialisation, and the packet reaches the peer a propagation delay after its last bit.
    pub fn send(&mut self, pool: &mut Pool, now: Time, id: u32, wire: u64) {
        let start = now.max(self.busy_until);
        self.busy_until = start + self.serialization(wire);
        self.stats.tx_bytes += wire;
        self.stats.tx_packets += 1;
        pool.meta_mut(id).due = self.busy_until + self.delay;
        pool.push(&mut self.line, id);
    }

    /// Takes the packet at the head of the delay line if it has arrived by `now`.
    pub fn arrived(&mut self, pool: &mut Pool, now: Time) -> Option<u32> {
        let head = self.line.head()?;
        if pool.meta(head).due > now {
            return None;
        }
        pool.pop(&mut self.line)
    }

    /// The time of this port's next event: a delay-line arrival, or the transmitter freeing while
    /// packets wait.
    pub fn next_event(&self, pool: &Pool) -> Option<Time> {
        let arrival = self.line.head().map(|id| pool.meta(id).due);
        let transmit = (!self.is_empty()).then_some(self.busy_until);
        match (arrival, transmit) {
            (Some(a), Some(t)) => Some(a.min(t)),
            (a, t) => a.or(t),
        }
    }

    /// Whether the transmitter may start a waiting packet at `now`.
    #[inline]
    pub fn ready(&self, now: Time) -> bool {
        !self.is_empty() && self.busy_until <= now
    }

    /// Counts a packet of `bytes` dropped here.
    pub fn count_drop(&mut self, bytes: u64, data: bool) {
        self.stats.drops += 1;
        self.stats.dropped_bytes += bytes;
        if data {
            self.stats.data_drops += 1;
        }
    }

    /// The time-averaged queue length up to `now`, bytes.
    pub fn avg_queue(&self, now: Time) -> f64 {
        let area = self.stats.area + self.bytes as u128 * now.saturating_sub(self.stats.last_change) as u128;
        if now == 0 {
            0.0
        } else {
            area as f64 / now as f64
        }
    }
}
