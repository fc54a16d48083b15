//! The sending side of one flow: what was sent and what came back (a scoreboard of the packets in
//! flight with their send times), which packet goes next (retransmissions first), loss detection from
//! selective ACKs and from the retransmission timeout, and the RTT estimate. Window and rate come from
//! the flow's algorithm; this module only obeys them.

use std::collections::VecDeque;

use sluice_core::{Rate, Time, PS_PER_S};

/// One packet in flight.
#[derive(Debug, Clone, Copy)]
struct Sent {
    sent_at: Time,
    /// Bytes the flow had delivered (acknowledged or selectively acknowledged) when it left.
    delivered: u64,
    len: u32,
    sacked: bool,
    /// Queued for a resend that has not gone yet.
    queued: bool,
}

/// What an ACK did to the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckEffect {
    /// Bytes the cumulative point moved over.
    pub newly_acked: u64,
    /// The RTT of the answered packet (from its echoed send time).
    pub rtt: Option<Time>,
    /// Delivery rate over the answered packet's flight.
    pub delivery_rate: Option<Rate>,
    /// Packets found lost (a hole below a selectively acknowledged one), now queued for resending.
    pub lost: u32,
}

/// The next packet a flow sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    /// Byte offset.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// A resend.
    pub retransmit: bool,
}

/// One flow's sending state.
#[derive(Debug)]
pub struct Sender {
    /// Bytes to deliver; `None` for a stream (until stopped).
    pub size: Option<u64>,
    /// Payload bytes per packet.
    pub mss: u32,
    /// First byte not yet acknowledged.
    pub snd_una: u64,
    /// Next new byte.
    pub snd_nxt: u64,
    /// In-flight packets from `snd_una` on, one per `mss` of offset.
    flight: VecDeque<Sent>,
    /// Offsets queued for resending, in order.
    rtx: VecDeque<u64>,
    /// Holes below this were queued already in this loss episode.
    rtx_high: u64,
    sacked_bytes: u64,
    queued_bytes: u64,
    /// Bytes acknowledged or selectively acknowledged.
    delivered: u64,
    /// Smoothed RTT and its variation (RFC 6298).
    srtt: Option<Time>,
    rttvar: Time,
    /// Last time the cumulative point moved (or the flow started).
    pub last_progress: Time,
    /// Retransmission timeouts since the cumulative point last moved.
    timeouts_in_row: u32,
    /// Payload bytes sent more than once.
    pub retransmitted: u64,
    /// Losses are found by the receiver (NACKs of receiver-driven flows), not from selective ACKs.
    pub receiver_recovers: bool,
}

impl Sender {
    /// A sender of `size` bytes (`None`: a stream) in packets of `mss` payload bytes, started at `now`.
    pub fn new(size: Option<u64>, mss: u32, now: Time) -> Sender {
        Sender {
            size,
            mss: mss.max(1),
            snd_una: 0,
            snd_nxt: 0,
            flight: VecDeque::new(),
            rtx: VecDeque::new(),
            rtx_high: 0,
            sacked_bytes: 0,
            queued_bytes: 0,
            delivered: 0,
            srtt: None,
            rttvar: 0,
            last_progress: now,
            timeouts_in_row: 0,
            retransmitted: 0,
            receiver_recovers: false,
        }
    }

    /// Whether every byte was acknowledged.
    pub fn done(&self) -> bool {
        self.size.is_some_and(|size| self.snd_una >= size)
    }

    /// Ends a stream: what was sent is all it delivers.
    pub fn stop(&mut self) {
        self.size = Some(self.snd_nxt);
    }

    /// Bytes in the network: sent, not acknowledged, not selectively acknowledged and not deemed lost.
    pub fn in_flight(&self) -> u64 {
        (self.snd_nxt - self.snd_una).saturating_sub(self.sacked_bytes + self.queued_bytes)
    }

    /// The packet to send next under window `cwnd`: a queued resend first, else new data.
    pub fn next(&mut self, cwnd: u64) -> Option<Next> {
        while let Some(&seq) = self.rtx.front() {
            match self.slot(seq) {
                Some(p) if p.queued => return Some(Next { seq, len: p.len, retransmit: true }),
                _ => {
                    self.rtx.pop_front();
                }
            }
        }
        let left = self.size.map_or(u64::MAX, |size| size.saturating_sub(self.snd_nxt));
        if left == 0 {
            return None;
        }
        let len = left.min(self.mss as u64) as u32;
        (self.in_flight() + len as u64 <= cwnd.max(self.mss as u64)).then_some(Next {
            seq: self.snd_nxt,
            len,
            retransmit: false,
        })
    }

    /// Records that `next` left at `now`.
    pub fn sent(&mut self, next: Next, now: Time) {
        let record = Sent { sent_at: now, delivered: self.delivered, len: next.len, sacked: false, queued: false };
        if next.retransmit {
            self.rtx.pop_front();
            self.retransmitted += next.len as u64;
            if let Some(p) = self.slot_mut(next.seq) {
                *p = Sent { queued: false, ..record };
                self.queued_bytes -= next.len as u64;
            }
            return;
        }
        self.flight.push_back(record);
        self.snd_nxt += next.len as u64;
    }

    /// An ACK: everything below `cumulative` arrived, and so did the packet at `sacked`, sent at
    /// `echo` (the sender's clock); `None` when it acknowledges bytes never sent (spoofed or corrupt).
    pub fn on_ack(&mut self, cumulative: u64, sacked: u64, echo: Time, now: Time) -> Option<AckEffect> {
        if cumulative > self.snd_nxt || sacked >= self.snd_nxt.max(1) {
            return None;
        }
        let mut effect = AckEffect { rtt: (echo <= now).then(|| now - echo), ..AckEffect::default() };
        if let Some(rtt) = effect.rtt {
            self.sample_rtt(rtt);
        }
        if let Some(p) = self.slot(sacked) {
            let interval = now.saturating_sub(p.sent_at);
            let bytes = self.delivered - p.delivered;
            effect.delivery_rate = (interval > 0)
                .then(|| ((bytes + p.len as u64) as u128 * 8 * PS_PER_S as u128 / interval as u128) as Rate);
        }
        if sacked >= cumulative {
            self.mark_sacked(sacked);
            if !self.receiver_recovers {
                effect.lost = self.queue_holes(sacked);
            }
        }
        effect.newly_acked = self.advance(cumulative, now);
        Some(effect)
    }

    /// The retransmission timeout passed with no progress: every unacknowledged packet is queued again.
    /// Returns the packets queued.
    pub fn on_timeout(&mut self) -> u32 {
        self.timeouts_in_row = self.timeouts_in_row.saturating_add(1);
        self.rtx.clear();
        let mut count = 0;
        let mss = self.mss as u64;
        let mut queued = 0;
        for (k, p) in self.flight.iter_mut().enumerate() {
            if !p.sacked {
                if !p.queued {
                    p.queued = true;
                    queued += p.len as u64;
                }
                self.rtx.push_back(self.snd_una + k as u64 * mss);
                count += 1;
            }
        }
        self.queued_bytes += queued;
        self.rtx_high = self.snd_nxt;
        count
    }

    /// The retransmission timeout in force: srtt + 4 rttvar (RFC 6298), at least `rto_min`.
    pub fn rto(&self, rto_min: Time) -> Time {
        self.srtt.map_or(rto_min, |srtt| (srtt + 4 * self.rttvar).max(rto_min))
    }

    /// The retransmission timeout to wait now: [`Sender::rto`], doubled for each timeout since the last
    /// progress when `backoff` (RFC 6298 section 5.5).
    pub fn timeout(&self, rto_min: Time, backoff: bool) -> Time {
        let rto = self.rto(rto_min);
        if backoff {
            sluice_cc::rto::backed_off(rto, self.timeouts_in_row)
        } else {
            rto
        }
    }

    /// The receiver asked for the packet holding byte `seq` again (a NACK): it is queued for resending
    /// unless it was acknowledged, never sent, or waits already. Returns whether it was queued.
    pub fn queue_resend(&mut self, seq: u64) -> bool {
        let mss = self.mss as u64;
        let Some(k) = self.index(seq).filter(|_| seq < self.snd_nxt) else { return false };
        let start = self.snd_una + k as u64 * mss;
        let Some(p) = self.flight.get_mut(k).filter(|p| !p.sacked && !p.queued) else { return false };
        p.queued = true;
        self.queued_bytes += p.len as u64;
        self.rtx.push_back(start);
        true
    }

    /// Asks the CPU to bring the scoreboard into cache (see [`crate::prefetch`]).
    pub fn prefetch(&self) {
        let (front, back) = self.flight.as_slices();
        crate::prefetch::prefetch(front);
        crate::prefetch::prefetch(back);
    }

    /// Packets queued for resending.
    pub fn queued_resends(&self) -> usize {
        self.rtx.len()
    }

    /// Whether data waits unacknowledged.
    pub fn outstanding(&self) -> bool {
        self.snd_una < self.snd_nxt
    }

    fn sample_rtt(&mut self, rtt: Time) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(rtt)) / 4;
                self.srtt = Some((7 * srtt + rtt) / 8);
            }
        }
    }

    fn index(&self, seq: u64) -> Option<usize> {
        (seq >= self.snd_una).then(|| ((seq - self.snd_una) / self.mss as u64) as usize)
    }

    fn slot(&self, seq: u64) -> Option<Sent> {
        self.index(seq).and_then(|k| self.flight.get(k).copied())
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Sent> {
        self.index(seq).and_then(|k| self.flight.get_mut(k))
    }

    fn mark_sacked(&mut self, seq: u64) {
        let Some(p) = self.slot_mut(seq) else { return };
        if p.sacked {
            return;
        }
        let (len, was_queued) = (p.len as u64, p.queued);
        p.sacked = true;
        p.queued = false;
        self.sacked_bytes += len;
        self.delivered += len;
        if was_queued {
            self.queued_bytes -= len;
        }
    }

    /// Queues every packet below `sacked` not yet acknowledged nor queued in this episode.
    fn queue_holes(&mut self, sacked: u64) -> u32 {
        let mss = self.mss as u64;
        let from = self.rtx_high.max(self.snd_una);
        let mut seq = from - (from - self.snd_una) % mss;
        let mut lost = 0;
        while seq < sacked {
            if let Some(p) = self.slot_mut(seq) {
                if !p.sacked && !p.queued {
                    p.queued = true;
                    let len = p.len as u64;
                    self.queued_bytes += len;
                    self.rtx.push_back(seq);
                    lost += 1;
                }
            }
            seq += mss;
        }
        self.rtx_high = self.rtx_high.max(sacked + mss);
        lost
    }

    /// Moves the cumulative point to `cumulative`; returns the bytes it moved over.
    fn advance(&mut self, cumulative: u64, now: Time) -> u64 {
        if cumulative <= self.snd_una {
            return 0;
        }
        let newly = cumulative - self.snd_una;
        while self.snd_una < cumulative {
            let Some(p) = self.flight.pop_front() else { break };
            if p.sacked {
                self.sacked_bytes -= p.len as u64;
            } else {
                self.delivered += p.len as u64;
                if p.queued {
                    self.queued_bytes -= p.len as u64;
                }
            }
            self.snd_una += p.len as u64;
        }
        self.snd_una = self.snd_una.max(cumulative);
        self.rtx_high = self.rtx_high.max(self.snd_una);
        self.last_progress = now;
        self.timeouts_in_row = 0;
        newly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_all(s: &mut Sender, cwnd: u64, now: Time) -> Vec<Next> {
        let mut out = Vec::new();
        while let Some(n) = s.next(cwnd) {
            s.sent(n, now);
            out.push(n);
        }
        out
    }

    #[test]
    fn the_window_bounds_what_is_in_flight() {
        let mut s = Sender::new(Some(10_500), 1000, 0);
        let sent = send_all(&mut s, 4000, 0);
        assert_eq!(sent.len(), 4);
        assert_eq!(s.in_flight(), 4000);
        let e = s.on_ack(1000, 0, 0, 10).unwrap();
        assert_eq!((e.newly_acked, e.rtt, e.lost), (1000, Some(10), 0));
        assert_eq!(send_all(&mut s, 4000, 10).len(), 1);
        let tail = send_all(&mut s, 1 << 20, 10);
        assert_eq!(tail.last().map(|n| (n.seq, n.len)), Some((10_000, 500)), "a short last packet");
        assert!(!s.done());
        s.on_ack(10_500, 10_000, 0, 20).unwrap();
        assert!(s.done());
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn a_hole_below_a_selective_ack_is_resent_first() {
        let mut s = Sender::new(Some(5000), 1000, 0);
        send_all(&mut s, 1 << 20, 0);
        s.on_ack(1000, 0, 0, 5).unwrap();
        let e = s.on_ack(1000, 2000, 0, 6).unwrap();
        assert_eq!(e.lost, 1, "the packet at 1000");
        assert_eq!(s.in_flight(), 2000, "3000 and 4000 in flight; 1000 lost, 2000 sacked");
        let again = s.on_ack(1000, 3000, 0, 7).unwrap();
        assert_eq!(again.lost, 0, "a hole is queued once per episode");
        let next = s.next(1 << 20).unwrap();
        assert_eq!(next, Next { seq: 1000, len: 1000, retransmit: true });
        s.sent(next, 8);
        assert_eq!(s.retransmitted, 1000);
        assert_eq!(s.next(1 << 20), None, "everything sent");
        let e = s.on_ack(4000, 1000, 8, 9).unwrap();
        assert_eq!(e.newly_acked, 3000);
        s.on_ack(5000, 4000, 0, 10).unwrap();
        assert!(s.done());
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn a_timeout_queues_everything_unacknowledged() {
        let mut s = Sender::new(None, 1000, 0);
        send_all(&mut s, 3000, 0);
        s.on_ack(0, 1000, 0, 5).unwrap();
        assert_eq!(s.on_timeout(), 2);
        assert_eq!(s.in_flight(), 0);
        let resent: Vec<u64> = send_all(&mut s, 3000, 100).iter().map(|n| n.seq).take(2).collect();
        assert_eq!(resent, [0, 2000]);
    }

    #[test]
    fn a_nack_queues_its_packet_once() {
        let mut s = Sender::new(Some(5000), 1000, 0);
        s.receiver_recovers = true;
        send_all(&mut s, 1 << 20, 0);
        let e = s.on_ack(0, 3000, 0, 5).unwrap();
        assert_eq!(e.lost, 0, "the receiver finds losses itself");
        assert!(s.queue_resend(1500), "the packet holding byte 1500");
        assert!(!s.queue_resend(1000), "queued already");
        assert!(!s.queue_resend(3000), "selectively acknowledged");
        assert!(!s.queue_resend(5000), "never sent");
        assert_eq!(s.queued_resends(), 1);
        assert_eq!(s.next(0), Some(Next { seq: 1000, len: 1000, retransmit: true }));
    }

    #[test]
    fn acks_for_bytes_never_sent_are_refused() {
        let mut s = Sender::new(Some(5000), 1000, 0);
        send_all(&mut s, 2000, 0);
        assert_eq!(s.on_ack(3000, 0, 0, 1), None);
        assert_eq!(s.on_ack(0, 2000, 0, 1), None);
        assert_eq!(s.snd_una, 0);
    }

    #[test]
    fn the_rto_follows_rfc_6298_with_a_floor() {
        let mut s = Sender::new(None, 1000, 0);
        assert_eq!(s.rto(1_000), 1_000);
        send_all(&mut s, 1000, 0);
        s.on_ack(1000, 0, 0, 400).unwrap();
        assert_eq!(s.rto(100), 400 + 4 * 200);
        assert_eq!(s.rto(5_000), 5_000);
    }
}
