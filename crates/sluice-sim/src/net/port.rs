//! An egress port: priority queues, a scheduler, a transmitter with a rate and a propagation delay, and
//! occupancy statistics.
//!
//! A port schedules no event for a packet it can send at once: it notes when its transmitter frees
//! (`busy_until`) and only schedules a `PortFree` event when packets wait behind the one on the wire.

use std::collections::VecDeque;

use sluice_core::{serialization_ps, Rate, Time};

use crate::config::{EcnThresholds, Scheduler};
use crate::engine::packet::Arena;
use crate::engine::{Core, Event};

/// Statistics of one egress port.
#[derive(Debug, Clone, Default)]
pub struct PortStats {
    /// Largest queue occupancy seen (bytes, all queues).
    pub max_queue: u64,
    /// Integral of occupancy over time (byte-picoseconds), for the time average.
    pub queue_area: u128,
    /// When occupancy last changed.
    pub last_change: Time,
    /// Packets dropped at this port.
    pub drops: u64,
    /// Data packets among `drops`.
    pub data_drops: u64,
    /// Payload bytes dropped at this port.
    pub dropped_bytes: u64,
    /// ECN marks applied at this port.
    pub ecn_marks: u64,
    /// PFC pause frames this port's switch sent upstream through this port.
    pub pauses_sent: u64,
    /// Since when the transmitter has been paused by its peer, if it is.
    pub paused_since: Option<Time>,
    /// Total time the transmitter was paused.
    pub paused_time: Time,
}

/// The most priority queues a port has (IEEE 802.1p classes; `switch.queues` is validated to 1..=8).
pub const MAX_QUEUES: usize = 8;

/// An egress port.
///
/// What every packet-hop reads and writes (the transmitter, the link, the occupancy, the pause and queue
/// bits, the bytes sent) fills the record's first cache line, the bytes per queue, which a packet that
/// waits reads, the second, and the queues' rings the next four; the record is aligned to a cache line,
/// so that a hop through an idle port touches one line. At 128 hosts the ports, packets and events
/// already outgrow the first-level cache, and a record spread over lines cost a miss per line.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    /// When the transmitter finishes the packet on the wire.
    pub busy_until: Time,
    /// Bytes waiting, all queues.
    pub bytes: u64,
    /// Exact picoseconds per byte when the rate divides 8 Tbit evenly (100 Gbps: 80), else 0.
    ps_per_byte: u64,
    /// Link rate.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Time,
    /// Bytes transmitted (wire bytes, all queues).
    pub tx_bytes: u64,
    /// Node at the other end.
    pub peer: u32,
    /// Port number at the other end.
    pub peer_port: u16,
    /// Queues paused by the peer's PFC (bit per queue).
    pub paused: u8,
    /// Queues holding a packet (bit per queue), so that picking one reads no queue.
    nonempty: u8,
    /// A `PortFree` event is scheduled.
    pub free_pending: bool,
    /// Bytes waiting, per priority queue (the first [`Port::queue_count`] are used).
    pub queue_bytes: [u64; MAX_QUEUES],
    /// Packet ids waiting, per priority queue (the first [`Port::queue_count`] are used). In the record, not
    /// behind a pointer: a packet that waits finds its queue's ring in the port's own lines (k=32 with
    /// 300 us of arrivals ran 4-9% faster than with the rings' headers in a vector of their own).
    pub queues: [VecDeque<u32>; MAX_QUEUES],
    deficits: Vec<i64>,
    dwrr_next: usize,
    /// ECN thresholds of this port.
    pub ecn: EcnThresholds,
    /// Statistics.
    pub stats: PortStats,
}

/// The fields every hop touches share the first line, the bytes per queue the second, the rings follow.
const _: () = assert!(
    std::mem::offset_of!(Port, free_pending) < 64
        && std::mem::offset_of!(Port, queue_bytes) == 64
        && std::mem::offset_of!(Port, queues) == 128
);

impl Port {
    /// A port with `queues` priority queues.
    pub fn new(rate: Rate, delay: Time, peer: u32, peer_port: u16, queues: u8, ecn: EcnThresholds) -> Port {
        let ps_per_byte =
            if (8 * sluice_core::PS_PER_S).is_multiple_of(rate) { 8 * sluice_core::PS_PER_S / rate } else { 0 };
        let n = queues as usize;
        assert!((1..=MAX_QUEUES).contains(&n), "a port has 1 to {MAX_QUEUES} queues, not {n}");
        Port {
            busy_until: 0,
            bytes: 0,
            ps_per_byte,
            rate,
            delay,
            tx_bytes: 0,
            peer,
            peer_port,
            paused: 0,
            nonempty: 0,
            free_pending: false,
            queue_bytes: [0; MAX_QUEUES],
            queues: std::array::from_fn(|_| VecDeque::new()),
            deficits: vec![0; n],
            dwrr_next: 0,
            ecn,
            stats: PortStats::default(),
        }
    }

    /// Starts loading what a packet reaching this port reads first, the record's first line: its
    /// occupancy, transmitter, link and pause state (a hint only).
    #[inline(always)]
    pub fn prefetch(&self) {
        crate::engine::prefetch::prefetch(self);
    }

    /// Time to serialize `bytes` on this port.
    #[inline]
    pub fn serialization(&self, bytes: u32) -> Time {
        if self.ps_per_byte != 0 {
            bytes as Time * self.ps_per_byte
        } else {
            serialization_ps(bytes as u64, self.rate)
        }
    }

    /// Accounts the occupancy change up to `now` before `bytes` changes.
    #[inline]
    fn account(&mut self, now: Time) {
        let s = &mut self.stats;
        s.queue_area += self.bytes as u128 * (now - s.last_change) as u128;
        s.last_change = now;
    }

    /// Appends packet `id` of `wire` bytes to queue `queue`.
    #[inline]
    pub fn enqueue(&mut self, now: Time, queue: u8, id: u32, wire: u32) {
        self.account(now);
        self.queues[queue as usize].push_back(id);
        self.nonempty |= 1 << queue;
        self.queue_bytes[queue as usize] += wire as u64;
        self.bytes += wire as u64;
        self.stats.max_queue = self.stats.max_queue.max(self.bytes);
    }

    /// Whether the transmitter is idle at `now`.
    #[inline]
    pub fn idle(&self, now: Time) -> bool {
        self.busy_until <= now
    }

    /// The priority queues this port was built with (the scheduler's deficits count them).
    #[inline]
    pub fn queue_count(&self) -> usize {
        self.deficits.len()
    }

    /// Whether some queue holds a packet that is not paused.
    #[inline]
    pub fn has_eligible(&self) -> bool {
        self.nonempty & !self.paused != 0
    }

    /// The lowest-numbered queue that holds a packet and is not paused: strict priority's pick.
    #[inline]
    fn first_eligible(&self) -> Option<usize> {
        let eligible = self.nonempty & !self.paused;
        (eligible != 0).then(|| eligible.trailing_zeros() as usize)
    }

    /// Picks the next queue to serve, or `None` if every non-empty queue is paused.
    pub fn select(&mut self, scheduler: &Scheduler, mtu: u32, arena: &Arena) -> Option<usize> {
        match scheduler {
            Scheduler::Strict => self.first_eligible(),
            Scheduler::Dwrr { weights } => self.select_dwrr(weights, mtu, arena),
        }
    }

    /// Deficit round robin: the queue under the pointer sends while its deficit covers its head packet;
    /// otherwise the pointer moves on and the next backlogged queue gains its quantum (weight x MTU).
    fn select_dwrr(&mut self, weights: &[u32], mtu: u32, arena: &Arena) -> Option<usize> {
        let n = self.queue_count();
        if !self.has_eligible() {
            return None;
        }
        loop {
            let i = self.dwrr_next;
            if self.eligible(i) {
                let head = arena.get(self.queues[i][0]).wire as i64;
                if self.deficits[i] >= head {
                    self.deficits[i] -= head;
                    return Some(i);
                }
            } else if self.queues[i].is_empty() {
                self.deficits[i] = 0;
            }
            let next = (i + 1) % n;
            self.dwrr_next = next;
            if self.eligible(next) {
                self.deficits[next] += weights.get(next).copied().unwrap_or(1).max(1) as i64 * mtu as i64;
            }
        }
    }

    /// Whether queue `i` holds a packet and is not paused.
    #[inline]
    fn eligible(&self, i: usize) -> bool {
        self.nonempty & !self.paused & (1 << i) != 0
    }

    /// Clears queue `queue`'s bit once it holds nothing.
    #[inline]
    fn note_removal(&mut self, queue: usize) {
        if self.queues[queue].is_empty() {
            self.nonempty &= !(1 << queue);
        }
    }

    /// Removes the head of queue `queue`, which holds `wire` bytes.
    #[inline]
    pub fn dequeue(&mut self, now: Time, queue: usize, wire: u32) -> u32 {
        self.account(now);
        let id = self.queues[queue].pop_front().expect("selected queue is not empty");
        self.note_removal(queue);
        self.queue_bytes[queue] -= wire as u64;
        self.bytes -= wire as u64;
        id
    }

    /// Removes the last packet of queue `queue` (the one that arrived last), which holds `wire` bytes.
    pub fn remove_last(&mut self, now: Time, queue: usize, wire: u32) -> Option<u32> {
        self.account(now);
        let id = self.queues[queue].pop_back()?;
        self.note_removal(queue);
        self.queue_bytes[queue] -= wire as u64;
        self.bytes -= wire as u64;
        Some(id)
    }

    /// Puts `wire` bytes on the link at `now`: schedules their arrival at the peer and marks the
    /// transmitter busy. Returns when the transmitter frees.
    #[inline(always)]
    pub fn transmit(&mut self, core: &mut Core, pkt: u32, wire: u32) -> Time {
        self.transmit_delayed(core, pkt, wire, 0)
    }

    /// [`Port::transmit`] in a run in one piece, whose peers are all its own: the arrival is scheduled
    /// without asking which part its peer belongs to.
    #[inline(always)]
    pub fn transmit_within(&mut self, core: &mut Core, pkt: u32, wire: u32) -> Time {
        let end = self.occupy(core, wire);
        core.schedule(end + self.delay, Event::Arrive { node: self.peer, port: self.peer_port, pkt });
        end
    }

    /// As [`Port::transmit`], with the packet reaching the peer `extra` picoseconds later (host jitter).
    #[inline(always)]
    pub fn transmit_delayed(&mut self, core: &mut Core, pkt: u32, wire: u32, extra: Time) -> Time {
        let end = self.occupy(core, wire);
        core.schedule_across(end + self.delay + extra, Event::Arrive { node: self.peer, port: self.peer_port, pkt });
        end
    }

    /// Marks the transmitter busy with `wire` bytes from now and counts them; returns when it frees.
    #[inline(always)]
    fn occupy(&mut self, core: &mut Core, wire: u32) -> Time {
        let end = core.now + self.serialization(wire);
        self.busy_until = end;
        self.tx_bytes += wire as u64;
        core.counters.packet_hops += 1;
        end
    }

    /// Starts loading the packet that strict priority would send next (a hint only): it waited behind
    /// the one on the wire long enough to leave the caches, and its record is the first thing the next
    /// `PortFree` reads.
    #[inline]
    pub fn prefetch_next(&self, arena: &Arena) {
        if let Some(&id) = self.first_eligible().and_then(|queue| self.queues[queue].front()) {
            arena.prefetch(id);
        }
    }

    /// Makes sure a `PortFree` event will fire when the transmitter frees, if one is not already due.
    #[inline]
    pub fn wake_when_free(&mut self, core: &mut Core, node: u32, port: u16) {
        if !self.free_pending {
            self.free_pending = true;
            core.schedule(self.busy_until, Event::PortFree { node, port });
        }
    }

    /// Pauses or resumes queue `queue` (a PFC frame from the peer arrived).
    pub fn set_paused(&mut self, now: Time, queue: u8, pause: bool) {
        let was = self.paused != 0;
        if pause {
            self.paused |= 1 << queue;
        } else {
            self.paused &= !(1 << queue);
        }
        match (was, self.paused != 0) {
            (false, true) => self.stats.paused_since = Some(now),
            (true, false) => {
                let since = self.stats.paused_since.take().unwrap_or(now);
                self.stats.paused_time += now - since;
            }
            _ => {}
        }
    }

    /// Time-averaged occupancy in bytes over `[0, end]`.
    pub fn average_queue(&self, end: Time) -> f64 {
        let area = self.stats.queue_area + self.bytes as u128 * end.saturating_sub(self.stats.last_change) as u128;
        if end == 0 {
            0.0
        } else {
            area as f64 / end as f64
        }
    }
}

/// Deficit weighted round robin shares a port among backlogged queues in proportion to their weights,
/// counted in bytes. Every flow's data goes to one queue, so two flows cannot be put in different queues
/// through the simulation API; the scheduler is checked here on a port: queues 1 and 2 are kept
/// backlogged, weights 1 and 3, and the bytes the scheduler picks from each are counted. DWRR (Shreedhar
/// and Varghese, SIGCOMM'95) serves each queue within one quantum plus one packet of `weight x quantum`
/// per round, so over many rounds the byte shares tend to the weight ratio whatever the packet sizes.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::packet::{Kind, Packet};

    const MTU: u32 = 1000;

    fn packet(queue: u8, wire: u32) -> Packet {
        Packet { payload: wire.saturating_sub(82), ..Packet::new(Kind::Data, queue as u32, 0, wire, queue) }
    }

    /// Serves `picks` packets from a port whose queues 1 and 2 hold packets of `wire1` and `wire2` bytes and
    /// are refilled as they drain; returns the bytes served per queue.
    fn serve(weights: Vec<u32>, wire1: u32, wire2: u32, picks: usize) -> [u64; 2] {
        let no_ecn = EcnThresholds { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 };
        let mut port = Port::new(100_000_000_000, 1_000_000, 0, 0, 4, no_ecn);
        let mut arena = Arena::new(false);
        let scheduler = Scheduler::Dwrr { weights };
        let mut served = [0u64; 2];
        let backlog = 8;
        for (queue, wire) in [(1u8, wire1), (2, wire2)] {
            for _ in 0..backlog {
                let id = arena.alloc(packet(queue, wire));
                port.enqueue(0, queue, id, wire);
            }
        }
        for _ in 0..picks {
            let queue = port.select(&scheduler, MTU, &arena).expect("both queues are backlogged");
            assert!(queue == 1 || queue == 2, "picked empty queue {queue}");
            let head = port.queues[queue][0];
            let wire = arena.get(head).wire;
            let id = port.dequeue(0, queue, wire);
            arena.free(id);
            served[queue - 1] += wire as u64;
            let refill = arena.alloc(packet(queue as u8, wire));
            port.enqueue(0, queue as u8, refill, wire);
        }
        served
    }

    fn check(wire1: u32, wire2: u32) {
        let served = serve(vec![1, 1, 3, 1], wire1, wire2, 20_000);
        let ratio = served[1] as f64 / served[0] as f64;
        println!(
            "packets {wire1} B and {wire2} B, weights 1:3: served {} B and {} B, ratio {ratio:.3}",
            served[0], served[1]
        );
        assert!((ratio - 3.0).abs() < 0.05, "byte ratio {ratio:.3}, expected 3 (served {served:?})");
    }

    #[test]
    fn dwrr_weights_one_to_three_share_bytes_one_to_three() {
        check(1082, 1082);
        check(1082, 300);
        check(300, 1082);
    }

    /// Strict priority serves the lowest-numbered queue that holds a packet and is not paused; a queue
    /// that empties, by the head or by the tail, is passed over.
    #[test]
    fn strict_priority_serves_the_first_unpaused_queue_that_holds_a_packet() {
        let no_ecn = EcnThresholds { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 };
        let mut port = Port::new(100_000_000_000, 1_000_000, 0, 0, 8, no_ecn);
        let arena = Arena::new(false);
        let strict = Scheduler::Strict;
        assert_eq!(port.select(&strict, MTU, &arena), None);
        port.enqueue(0, 5, 50, 1000);
        port.enqueue(0, 2, 20, 1000);
        port.enqueue(0, 2, 21, 1000);
        assert_eq!(port.select(&strict, MTU, &arena), Some(2));
        port.set_paused(0, 2, true);
        assert_eq!(port.select(&strict, MTU, &arena), Some(5), "queue 2 is paused");
        assert_eq!(port.dequeue(0, 5, 1000), 50);
        assert!(!port.has_eligible(), "queue 5 is empty and queue 2 paused");
        port.set_paused(0, 2, false);
        assert_eq!(port.remove_last(0, 2, 1000), Some(21));
        assert_eq!(port.dequeue(0, 2, 1000), 20);
        assert_eq!((port.select(&strict, MTU, &arena), port.bytes, port.queue_bytes[2]), (None, 0, 0));
        port.enqueue(0, 7, 70, 1000);
        assert_eq!(port.select(&strict, MTU, &arena), Some(7));
    }
}
