//! The host-side bookkeeping of the token transport, the same on every datapath: the tokens a sender
//! holds ([`HeldTokens`]), one receiving flow's grant accounting ([`Grants`]), the tokens it issued whose
//! data has not come back yet ([`TokenLog`]), and SRPT ranks ([`srpt_rank`]).
//!
//! Each datapath keeps these in its own per-flow state and drives them from its own events; what a token
//! grants, when it goes stale and whether a receiver may grant more is decided here, once.

use std::collections::VecDeque;

use sluice_core::Time;

use crate::token::TokenTransport;

/// One token held at a sender.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// When it arrived.
    at: Time,
    /// Its number, echoed on the data it releases.
    seq: u32,
    /// Packets it still lets the sender send (a token of K bytes grants K/MSS packets, rounded up).
    packets: u32,
    /// Some of its packets were sent.
    used: bool,
}

/// The tokens a sender holds, oldest first, and the packets they still grant (its credit).
#[derive(Debug, Clone, Default)]
pub struct HeldTokens {
    held: VecDeque<Held>,
    credit: u64,
}

impl HeldTokens {
    /// Token `seq` granting `bytes` of payload arrived at `now`: it lets the sender send `bytes` in
    /// packets of `mss`, rounded up, at least one.
    pub fn hold(&mut self, seq: u32, bytes: u64, mss: u64, now: Time) {
        let packets = bytes.div_ceil(mss.max(1)).max(1) as u32;
        self.held.push_back(Held { at: now, seq, packets, used: false });
        self.credit += packets as u64;
    }

    /// Packets granted and not yet sent.
    pub fn credit(&self) -> u64 {
        self.credit
    }

    /// Tokens held of which no packet was sent.
    pub fn unused(&self) -> u64 {
        self.held.iter().filter(|h| !h.used).count() as u64
    }

    /// Drops the tokens that are stale at `now` under `transport`'s rules, oldest first: older than
    /// `stale_timeout`, or (`stale_bdp`) holding more than a BDP of credit. Returns how many of them had
    /// not been used.
    pub fn expire(&mut self, now: Time, transport: &TokenTransport, mss: u64, bdp: u64) -> u64 {
        let mut dropped = 0;
        while let Some(h) = self.held.front() {
            let old = transport.stale_timeout > 0 && now.saturating_sub(h.at) > transport.stale_timeout;
            let beyond = transport.stale_bdp && self.credit * mss > bdp.max(h.packets as u64 * mss);
            if !(old || beyond) {
                break;
            }
            self.credit -= h.packets as u64;
            dropped += u64::from(!h.used);
            self.held.pop_front();
        }
        dropped
    }

    /// Spends one packet of credit from the oldest token: its number and whether this is its first
    /// packet; `None` without credit.
    pub fn spend(&mut self) -> Option<(u32, bool)> {
        let front = self.held.front_mut()?;
        let (seq, first) = (front.seq, !front.used);
        front.used = true;
        front.packets -= 1;
        self.credit -= 1;
        if front.packets == 0 {
            self.held.pop_front();
        }
        Some((seq, first))
    }
}

/// A receiving flow's grants: what it expects, what came, and whether it may be granted more.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// Bytes expected (unscheduled bytes announced plus granted bytes) that have not arrived.
    pub outstanding: u64,
    /// Payload bytes received.
    pub received: u64,
    /// Flag-driven volume control: grant bytes earned (first window, flagged data) and not yet issued.
    pub owed: u64,
    /// The controller's token window, if it keeps one.
    pub window: Option<u64>,
    /// Everything arrived.
    pub done: bool,
    /// The receiver stopped granting (the sender stopped, or the flow timed out).
    pub stopped: bool,
    /// The sender asked the receiver to stop (early CREDIT_STOP).
    pub stop_requested: bool,
}

impl Grants {
    /// Bytes of a flow of `size` not received yet.
    pub fn left(&self, size: u64) -> u64 {
        size.saturating_sub(self.received)
    }

    /// Whether a flow of `size` bytes may get another token under `transport`'s volume control, before
    /// its SRPT rank is asked (`rank`, computed only when it decides).
    pub fn may_grant(&self, transport: &TokenTransport, size: u64, rank: impl FnOnce() -> usize) -> bool {
        if self.done || self.stopped || self.stop_requested {
            return false;
        }
        if transport.volume_by_flag {
            if self.owed == 0 {
                return false;
            }
        } else if transport.volume_control && self.outstanding >= self.left(size) {
            return false;
        }
        !transport.srpt || rank() < transport.overcommit as usize
    }

    /// A token granting `token_bytes` was issued to a flow of `size` bytes: the bytes it is expected to
    /// bring become outstanding.
    pub fn issue(&mut self, transport: &TokenTransport, size: u64, token_bytes: u64) {
        if transport.volume_by_flag {
            // Without the flow size, a token is expected to bring the bytes it earned.
            let earned = self.owed.min(token_bytes);
            self.owed -= earned;
            self.outstanding += earned;
        } else {
            // A token brings at most the bytes still missing (a flow's last packet may be short).
            let missing = size.saturating_sub(self.received + self.outstanding);
            self.outstanding += if missing > 0 { token_bytes.min(missing) } else { token_bytes };
        }
    }

    /// Whether the token window leaves room for another token of `token_bytes`; `None` without a window.
    /// An empty window always has room, so a window below one token still lets one through.
    pub fn window_room(&self, token_bytes: u64) -> Option<bool> {
        self.window.map(|w| self.outstanding + token_bytes <= w || self.outstanding == 0)
    }
}

/// The tokens a receiver issued, by number, whose data has not arrived: the credit-to-data round trip.
#[derive(Debug, Clone, Default)]
pub struct TokenLog {
    issued: VecDeque<(u32, Time)>,
}

impl TokenLog {
    /// Token `seq` left at `now`.
    pub fn issued(&mut self, seq: u32, now: Time) {
        self.issued.push_back((seq, now));
    }

    /// The round trip of token `seq` whose data arrived at `now`, the first time it is asked; forgets the
    /// tokens issued before it (lost, or stale at the sender).
    pub fn rtt(&mut self, seq: u32, now: Time) -> Option<Time> {
        while let Some(&(s, at)) = self.issued.front() {
            let behind = (s.wrapping_sub(seq) as i32) < 0;
            if !behind && s != seq {
                return None;
            }
            self.issued.pop_front();
            if s == seq {
                return Some(now.saturating_sub(at));
            }
        }
        None
    }

    /// Forgets every token (the flow is done), returning the memory.
    pub fn clear(&mut self) {
        self.issued = VecDeque::new();
    }
}

/// A flow's SRPT rank among a receiver's unfinished flows: how many others have fewer bytes left, ties
/// broken by key. `mine` and each of `others` are (bytes left, key); `others` may include `mine`.
pub fn srpt_rank<K: Ord + Copy>(mine: (u64, K), others: impl Iterator<Item = (u64, K)>) -> usize {
    others.filter(|&other| other.1 != mine.1 && other < mine).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_grants_whole_packets_and_spends_oldest_first() {
        let mut h = HeldTokens::default();
        h.hold(7, 2_500, 1_000, 0);
        h.hold(8, 0, 1_000, 0);
        assert_eq!((h.credit(), h.unused()), (4, 2), "2,500 B in 1,000 B packets is 3; an empty token 1");
        assert_eq!(h.spend(), Some((7, true)));
        assert_eq!(h.spend(), Some((7, false)));
        assert_eq!(h.spend(), Some((7, false)));
        assert_eq!(h.spend(), Some((8, true)));
        assert_eq!(h.spend(), None);
    }

    #[test]
    fn stale_tokens_go_by_age_or_beyond_a_bdp() {
        let by_age = TokenTransport { stale_timeout: 100, ..TokenTransport::default() };
        let mut h = HeldTokens::default();
        h.hold(1, 1_000, 1_000, 0);
        h.hold(2, 1_000, 1_000, 150);
        assert_eq!(h.expire(200, &by_age, 1_000, 1_000_000), 1, "only the token older than 100 ps");
        assert_eq!(h.credit(), 1);
        let by_bdp = TokenTransport { stale_bdp: true, ..TokenTransport::default() };
        let mut h = HeldTokens::default();
        for seq in 0..5 {
            h.hold(seq, 1_000, 1_000, 0);
        }
        assert_eq!(h.spend(), Some((0, true)));
        assert_eq!(h.expire(0, &by_bdp, 1_000, 2_000), 2, "credit above 2 packets: the oldest go");
        assert_eq!(h.credit(), 2);
    }

    #[test]
    fn grants_follow_volume_control_and_srpt() {
        let t = TokenTransport { volume_control: true, srpt: true, overcommit: 1, ..TokenTransport::default() };
        let mut g = Grants::default();
        assert!(g.may_grant(&t, 2_500, || 0));
        assert!(!g.may_grant(&t, 2_500, || 1), "ranked behind the overcommitment");
        g.issue(&t, 2_500, 1_000);
        g.issue(&t, 2_500, 1_000);
        g.issue(&t, 2_500, 1_000);
        assert_eq!(g.outstanding, 2_500, "the last token brings only the 500 B left");
        assert!(!g.may_grant(&t, 2_500, || 0), "everything missing is granted");
        g.received = 1_000;
        g.outstanding -= 1_000;
        assert!(!g.may_grant(&t, 2_500, || 0));
        g.done = true;
        assert!(!g.may_grant(&TokenTransport::default(), 2_500, || 0));
        let by_flag = TokenTransport { volume_by_flag: true, ..TokenTransport::default() };
        let mut g = Grants { owed: 1_500, ..Grants::default() };
        g.issue(&by_flag, u64::MAX, 1_000);
        g.issue(&by_flag, u64::MAX, 1_000);
        assert_eq!((g.owed, g.outstanding), (0, 1_500));
        assert!(!g.may_grant(&by_flag, u64::MAX, || 0), "nothing owed");
    }

    #[test]
    fn a_window_below_one_token_lets_one_through() {
        let mut g = Grants { window: Some(500), ..Grants::default() };
        assert_eq!(g.window_room(1_000), Some(true));
        g.outstanding = 1_000;
        assert_eq!(g.window_room(1_000), Some(false));
        assert_eq!(Grants::default().window_room(1_000), None);
    }

    #[test]
    fn the_log_answers_each_token_once_and_forgets_older_ones() {
        let mut log = TokenLog::default();
        for (seq, at) in [(1, 10), (2, 20), (3, 30)] {
            log.issued(seq, at);
        }
        assert_eq!(log.rtt(2, 50), Some(30), "token 1 is forgotten on the way");
        assert_eq!(log.rtt(2, 60), None, "asked once");
        assert_eq!(log.rtt(1, 60), None, "forgotten");
        assert_eq!(log.rtt(3, 70), Some(40));
        log.issued(u32::MAX, 80);
        log.issued(0, 90);
        assert_eq!(log.rtt(0, 100), Some(10), "numbers wrap");
    }

    #[test]
    fn ranks_count_flows_with_fewer_bytes_left_ties_by_key() {
        let flows = [(5_000, 1), (1_000, 2), (5_000, 3), (9_000, 4)];
        assert_eq!(srpt_rank((5_000, 3), flows.iter().copied()), 2);
        assert_eq!(srpt_rank((5_000, 1), flows.iter().copied()), 1);
        assert_eq!(srpt_rank((1_000, 2), flows.iter().copied()), 0);
    }
}
