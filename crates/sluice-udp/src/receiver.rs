//! The receiving side of one flow: which bytes arrived (the in-order point and the ranges above it),
//! when an ACK is due, and what it says (cumulative point, the packet it answers, the bytes and CE-marked
//! bytes since the previous ACK, the echoed send time). It also paces CNPs for algorithms that use them.

use sluice_core::{Time, PS_PER_NS};
use sluice_wire::sluice::{Flags, Kind, SluiceHeader};

use crate::flow_index::FlowIndex;
use crate::PeerId;

/// Ranges above the in-order point at most (more are refused as out of window, which bounds the
/// state a misbehaving peer can make a receiver keep).
const MAX_RANGES: usize = 1024;
/// Bytes above the in-order point a receiver accepts (a peer's window cannot be larger).
pub const MAX_WINDOW_BYTES: u64 = 1 << 30;

/// What one data packet did to the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// New bytes arrived (`bytes` of them).
    New {
        /// New payload bytes.
        bytes: u32,
        /// They landed above a hole.
        out_of_order: bool,
    },
    /// Every byte had arrived before.
    Duplicate,
}

/// An ACK the receiver owes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckOut {
    /// Bytes received in order.
    pub cumulative: u64,
    /// Offset of the data packet this ACK answers (selective ACK).
    pub sacked: u64,
    /// Payload bytes newly received since the previous ACK.
    pub bytes: u32,
    /// Of those, bytes that arrived with Congestion Experienced.
    pub ce_bytes: u32,
    /// The answered packet's send time, ns of the sender's clock.
    pub echo_ns: u64,
    /// The answered packet arrived with Congestion Experienced.
    pub ce: bool,
}

impl AckOut {
    /// The ACK's header for `flow`, sent at `now` (no INT records).
    pub fn header(&self, flow: u32, now: Time) -> SluiceHeader {
        SluiceHeader {
            flags: Flags(if self.ce { Flags::ECN_ECHO } else { 0 }),
            seq: self.cumulative,
            echo_ns: self.echo_ns,
            sent_ns: now / PS_PER_NS,
            offset: self.sacked,
            bytes: self.bytes,
            ce_bytes: self.ce_bytes,
            ..SluiceHeader::new(Kind::Ack, flow)
        }
    }
}

/// One flow's receiving state.
#[derive(Debug, Default)]
pub struct Receiver {
    /// Bytes received in order.
    pub rcv_nxt: u64,
    /// Received byte ranges above `rcv_nxt`, sorted and disjoint, `[start, end)`.
    ranges: Vec<(u64, u64)>,
    unacked_packets: u32,
    unacked_bytes: u32,
    unacked_ce_bytes: u32,
    /// CE state of the previous packet (DCTCP's delayed-ACK state machine acknowledges at once when it
    /// changes, Alizadeh et al. SIGCOMM'10 section 3.1).
    last_ce: bool,
    last_cnp: Option<Time>,
    /// Payload bytes received, duplicates excluded.
    pub delivered: u64,
    /// When the first packet arrived.
    pub first_at: Option<Time>,
    /// When the last new byte arrived.
    pub last_at: Time,
}

impl Receiver {
    /// Takes a data packet of `len` payload bytes at `seq`; `None` when it lies outside the window
    /// (further than [`MAX_WINDOW_BYTES`] ahead, or would need too many ranges).
    pub fn on_data(&mut self, seq: u64, len: u32, ce: bool, now: Time) -> Option<Arrival> {
        let end = seq.checked_add(len as u64)?;
        if end > self.rcv_nxt.saturating_add(MAX_WINDOW_BYTES) {
            return None;
        }
        let before = self.delivered;
        if seq <= self.rcv_nxt {
            if end > self.rcv_nxt {
                self.delivered += end - self.rcv_nxt;
                self.rcv_nxt = end;
                self.absorb_ranges();
            }
        } else if !self.insert_range(seq, end)? {
            return Some(Arrival::Duplicate);
        }
        let new = self.delivered - before;
        self.first_at.get_or_insert(now);
        self.unacked_packets += 1;
        if new == 0 {
            return Some(Arrival::Duplicate);
        }
        self.last_at = now;
        self.unacked_bytes = self.unacked_bytes.saturating_add(new as u32);
        if ce {
            self.unacked_ce_bytes = self.unacked_ce_bytes.saturating_add(new as u32);
        }
        Some(Arrival::New { bytes: new as u32, out_of_order: seq > self.rcv_nxt || !self.ranges.is_empty() })
    }

    /// Whether an ACK is due now for the packet that just arrived: every `every` packets, and at once
    /// for a packet out of order or a duplicate, a change of CE state, or the flow's last packet.
    pub fn ack_due(&mut self, arrival: Arrival, ce: bool, last: bool, every: u32) -> bool {
        let ce_changed = ce != self.last_ce;
        self.last_ce = ce;
        let urgent = match arrival {
            Arrival::Duplicate => true,
            Arrival::New { out_of_order, .. } => out_of_order,
        };
        urgent || ce_changed || last || self.unacked_packets >= every
    }

    /// The ACK for the packet at `sacked` sent at `echo_ns`; resets the counts since the previous ACK.
    pub fn take_ack(&mut self, sacked: u64, echo_ns: u64, ce: bool) -> AckOut {
        let ack = AckOut {
            cumulative: self.rcv_nxt,
            sacked,
            bytes: self.unacked_bytes,
            ce_bytes: self.unacked_ce_bytes,
            echo_ns,
            ce,
        };
        self.unacked_packets = 0;
        self.unacked_bytes = 0;
        self.unacked_ce_bytes = 0;
        ack
    }

    /// Whether a CNP goes out now for a CE-marked packet: at most one per `interval` (0: one for every
    /// marked packet).
    pub fn cnp_due(&mut self, now: Time, interval: Time) -> bool {
        if self.last_cnp.is_some_and(|at| now < at + interval) {
            return false;
        }
        self.last_cnp = Some(now);
        true
    }

    /// The byte ranges missing between the in-order point and the highest byte received, `[start, end)`
    /// in order (empty when nothing arrived out of order).
    pub fn holes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let starts = std::iter::once(self.rcv_nxt).chain(self.ranges.iter().map(|&(_, e)| e));
        starts.zip(self.ranges.iter().map(|&(s, _)| s))
    }

    /// Records `[seq, end)` above the in-order point; `Some(false)` if every byte was there already,
    /// `None` when the range table is full.
    fn insert_range(&mut self, seq: u64, end: u64) -> Option<bool> {
        let at = self.ranges.partition_point(|&(_, e)| e < seq);
        let mut start = seq;
        let mut stop = end;
        let mut covered = 0u64;
        let mut last = at;
        while last < self.ranges.len() && self.ranges[last].0 <= end {
            let (s, e) = self.ranges[last];
            covered += e.min(end).saturating_sub(s.max(seq));
            start = start.min(s);
            stop = stop.max(e);
            last += 1;
        }
        let new = (end - seq) - covered;
        if new == 0 {
            return Some(false);
        }
        if last == at && self.ranges.len() >= MAX_RANGES {
            return None;
        }
        self.ranges.splice(at..last, [(start, stop)]);
        self.delivered += new;
        Some(true)
    }

    /// Moves the in-order point over ranges it now reaches.
    fn absorb_ranges(&mut self) {
        let reached = self.ranges.partition_point(|&(s, _)| s <= self.rcv_nxt);
        for &(s, e) in &self.ranges[..reached] {
            if e > self.rcv_nxt {
                // Bytes of this range above the old point were counted when the range arrived; only
                // the overlap with the packet that filled the hole was counted twice.
                self.delivered -= self.rcv_nxt - s;
                self.rcv_nxt = e;
            } else {
                self.delivered -= e - s;
            }
        }
        self.ranges.drain(..reached);
    }
}

/// The flows a host receives, by peer and flow id, in the order their first packets came: each data
/// packet finds its flow through two array reads while peers and ids are dense ([`FlowIndex`]).
#[derive(Debug, Default)]
pub struct Receivers {
    /// Position in `flows` by peer.
    peers: FlowIndex,
    /// Slot in `states` by flow id, one index a peer.
    flows: Vec<FlowIndex>,
    keys: Vec<(PeerId, u32)>,
    states: Vec<Receiver>,
}

impl Receivers {
    /// The slot of flow `key`.
    fn slot(&self, key: &(PeerId, u32)) -> Option<u32> {
        let peer = self.peers.get(key.0)?;
        self.flows[peer as usize].get(key.1)
    }

    /// The state of flow `key`.
    pub fn get(&self, key: &(PeerId, u32)) -> Option<&Receiver> {
        Some(&self.states[self.slot(key)? as usize])
    }

    /// Whether flow `key` has state.
    pub fn contains_key(&self, key: &(PeerId, u32)) -> bool {
        self.slot(key).is_some()
    }

    /// Flows held.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether no flow is held.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The state of flow `key`, made fresh if it had none.
    pub fn get_or_default(&mut self, key: (PeerId, u32)) -> &mut Receiver {
        let slot = match self.slot(&key) {
            Some(slot) => slot,
            None => self.add(key),
        };
        &mut self.states[slot as usize]
    }

    fn add(&mut self, key: (PeerId, u32)) -> u32 {
        let peer = match self.peers.get(key.0) {
            Some(peer) => peer,
            None => {
                let peer = self.flows.len() as u32;
                self.peers.insert(key.0, peer);
                self.flows.push(FlowIndex::default());
                peer
            }
        };
        let slot = self.states.len() as u32;
        self.flows[peer as usize].insert(key.1, slot);
        self.keys.push(key);
        self.states.push(Receiver::default());
        slot
    }

    /// Every flow with its state, in the order they came.
    pub fn iter(&self) -> impl Iterator<Item = (&(PeerId, u32), &Receiver)> + '_ {
        self.keys.iter().zip(&self.states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_then_a_hole_filled() {
        let mut r = Receiver::default();
        assert_eq!(r.on_data(0, 1000, false, 1), Some(Arrival::New { bytes: 1000, out_of_order: false }));
        assert_eq!(r.on_data(2000, 1000, false, 2), Some(Arrival::New { bytes: 1000, out_of_order: true }));
        assert_eq!(r.on_data(3000, 500, false, 3), Some(Arrival::New { bytes: 500, out_of_order: true }));
        assert_eq!((r.rcv_nxt, r.delivered), (1000, 2500));
        assert_eq!(r.on_data(1000, 1000, false, 4), Some(Arrival::New { bytes: 1000, out_of_order: false }));
        assert_eq!((r.rcv_nxt, r.delivered), (3500, 3500));
        assert_eq!(r.on_data(0, 1000, false, 5), Some(Arrival::Duplicate));
        assert_eq!(r.on_data(1500, 1000, false, 5), Some(Arrival::Duplicate));
    }

    #[test]
    fn overlapping_ranges_count_each_byte_once() {
        let mut r = Receiver::default();
        r.on_data(5000, 1000, false, 1);
        assert_eq!(r.on_data(5500, 1000, false, 1), Some(Arrival::New { bytes: 500, out_of_order: true }));
        assert_eq!(r.on_data(5000, 1500, false, 1), Some(Arrival::Duplicate));
        r.on_data(0, 5200, false, 1);
        assert_eq!((r.rcv_nxt, r.delivered), (6500, 6500));
    }

    #[test]
    fn absurd_offsets_are_outside_the_window() {
        let mut r = Receiver::default();
        assert_eq!(r.on_data(MAX_WINDOW_BYTES, 1, false, 1), None);
        assert_eq!(r.on_data(u64::MAX - 3, 10, false, 1), None);
        assert_eq!(r.delivered, 0);
    }

    #[test]
    fn acks_follow_the_interval_ce_changes_and_holes() {
        let mut r = Receiver::default();
        let a = r.on_data(0, 1000, false, 1).unwrap();
        assert!(!r.ack_due(a, false, false, 2));
        let a = r.on_data(1000, 1000, false, 2).unwrap();
        assert!(r.ack_due(a, false, false, 2), "the second packet");
        assert_eq!(
            r.take_ack(1000, 7, false),
            AckOut { cumulative: 2000, sacked: 1000, bytes: 2000, ce_bytes: 0, echo_ns: 7, ce: false }
        );
        let a = r.on_data(2000, 1000, true, 3).unwrap();
        assert!(r.ack_due(a, true, false, 2), "CE state changed");
        assert_eq!(r.take_ack(2000, 8, true).ce_bytes, 1000);
        let a = r.on_data(4000, 1000, true, 4).unwrap();
        assert!(r.ack_due(a, true, false, 2), "out of order");
    }

    #[test]
    fn holes_lie_between_the_ranges() {
        let mut r = Receiver::default();
        assert_eq!(r.holes().count(), 0);
        r.on_data(0, 1000, false, 1);
        r.on_data(2000, 1000, false, 1);
        r.on_data(5000, 1000, false, 1);
        assert_eq!(r.holes().collect::<Vec<_>>(), [(1000, 2000), (3000, 5000)]);
    }

    #[test]
    fn cnps_are_spaced() {
        let mut r = Receiver::default();
        assert!(r.cnp_due(0, 50));
        assert!(!r.cnp_due(49, 50));
        assert!(r.cnp_due(50, 50));
        assert!(r.cnp_due(50, 0));
    }
}
