//! The host-side bookkeeping of the token transport, the same on every datapath: the tokens a sender
//! holds ([`HeldTokens`]), one receiving flow's grant accounting ([`Grants`]), the tokens it issued whose
//! data has not come back yet ([`TokenLog`]), and SRPT ranks ([`srpt_rank`]).
//!
//! Each datapath keeps these in its own per-flow state and drives them from its own events; what a token
//! grants, when it goes stale and whether a receiver may grant more is decided here, once.

use std::collections::VecDeque;

use sluice_core::{serialization_ps, Rate, Time};

use crate::api::MAX_TIMERS;
use crate::receiver::RxDecisions;
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

/// What a receiving flow's datapath arms after its controller decided ([`Grants::adopt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// Controller timer `id` fires at `at`; its firing carries generation `gen`.
    Timer {
        /// The controller's timer id.
        id: u8,
        /// When it fires.
        at: Time,
        /// Its generation.
        gen: u32,
    },
    /// Rate-based tokens start now, as generation `gen`.
    Ticks {
        /// Their generation.
        gen: u32,
    },
}

/// A receiving flow's grants: what it expects, what came, whether it may be granted more, and how its
/// controller issues tokens (on demand, by a window, at a rate, on its timers).
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
    /// The controller's token rate, bit/s of data granted (0: no rate-based tokens).
    pub token_rate: Rate,
    /// Generation of the rate-based tokens: a tick of an older one is stale.
    pub tick_gen: u32,
    /// Generation of each controller timer: a firing of an older one is stale.
    pub timer_gen: [u32; MAX_TIMERS],
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

    /// Takes the controller's decisions about the flow's tokens: a stop, a window, its timers, and a token
    /// rate. `arm` gets each timer set, then the start of rate-based tokens. The tokens it grants, and
    /// the window's refill, are the caller's to issue next.
    pub fn adopt(&mut self, d: &RxDecisions, mut arm: impl FnMut(Arm)) {
        self.stopped |= d.stop_tokens;
        if let Some(w) = d.token_window {
            self.window = Some(w);
        }
        for (i, set) in d.set_timers.iter().enumerate() {
            if set.is_some() || d.cancel_timers[i] {
                self.timer_gen[i] = self.timer_gen[i].wrapping_add(1);
            }
            if let Some(at) = set {
                arm(Arm::Timer { id: i as u8, at: *at, gen: self.timer_gen[i] });
            }
        }
        if let Some(rate) = d.token_rate {
            let restart = self.token_rate == 0;
            self.token_rate = rate;
            if restart && rate > 0 {
                self.tick_gen = self.tick_gen.wrapping_add(1);
                arm(Arm::Ticks { gen: self.tick_gen });
            }
        }
    }

    /// Whether a firing of controller timer `id` armed as generation `gen` is current.
    pub fn timer_current(&self, id: u8, gen: u32) -> bool {
        !self.done && self.timer_gen[id as usize] == gen
    }

    /// The gap to the next rate-based token of `token_bytes` in packets of `header_bytes` of headers, when
    /// a tick of generation `gen` is current; `None` for a stale tick.
    pub fn tick_gap(&self, gen: u32, token_bytes: u64, header_bytes: u32) -> Option<Time> {
        (self.tick_gen == gen && self.token_rate > 0 && !self.done)
            .then(|| serialization_ps(token_bytes + header_bytes as u64, self.token_rate))
    }

    /// Whether tokens go only when asked for (neither a window nor a rate issues them).
    pub fn on_demand(&self) -> bool {
        self.token_rate == 0 && self.window.is_none()
    }

    /// The receiver's loss check of a flow that heard nothing since `quiet_since`: at `now`, `timeout`
    /// later, the flow timed out unless it is only waiting for grants (nothing outstanding while a
    /// window or a token rate decides its turn, with grants owed under flag-driven volume
    /// control, and no early stop asked). On a timeout the grants that brought nothing are written off
    /// (flag-driven: owed again, at least one token, so a stalled flow pulls its missing packet) and an
    /// early stop is forgotten. Returns whether it timed out.
    pub fn loss_check(&mut self, transport: &TokenTransport, token_bytes: u64, quiet_since: Time, now: Time) -> bool {
        let by_flag = transport.volume_by_flag;
        let idle = self.outstanding == 0 && (self.window.is_some() || self.token_rate > 0);
        let waiting_for_grants = idle && (!by_flag || self.owed > 0) && !self.stop_requested;
        if now < quiet_since + transport.rx_timeout || waiting_for_grants {
            return false;
        }
        self.stop_requested = false;
        if by_flag {
            self.owed += self.outstanding.max(token_bytes);
        }
        self.outstanding = 0;
        true
    }

    /// Whether the token window leaves room for another token of `token_bytes`; `None` without a window.
    /// An empty window always has room, so a window below one token still lets one through.
    pub fn window_room(&self, token_bytes: u64) -> Option<bool> {
        self.window.map(|w| self.outstanding + token_bytes <= w || self.outstanding == 0)
    }
}

/// ExpressPass's early CREDIT_STOP at a sender (ns2-xpass `recv_credit`): once per request-to-first-token
/// time, if that round's tokens cover the packets left beyond the credit held, or nothing is left, the
/// sender tells the receiver to stop issuing tokens.
#[derive(Debug, Clone, Copy, Default)]
pub struct EarlyStop {
    /// Request-to-first-token time (ns2-xpass's sender `rtt_`), from the first token on.
    rtt: Option<Time>,
    /// Start of the current round and the tokens received in it.
    round_start: Time,
    round_tokens: u64,
    /// A stop was sent and no new request since.
    pub sent: bool,
}

impl EarlyStop {
    /// A token arrived at `now` for a flow whose first request left at `request_at` and which has `left`
    /// packets to send beyond the credit it holds. Returns whether the stop goes now (`sent` is then set).
    pub fn on_token(&mut self, now: Time, request_at: Time, left: u64) -> bool {
        self.round_tokens += 1;
        let rtt = match self.rtt {
            Some(rtt) => rtt,
            None => {
                self.round_start = now;
                *self.rtt.insert(now.saturating_sub(request_at))
            }
        };
        let round_over = now.saturating_sub(self.round_start) >= rtt;
        let stop = left == 0 || (round_over && self.round_tokens >= left);
        if round_over {
            self.round_tokens = 0;
            self.round_start = now;
        }
        self.sent |= stop;
        stop
    }

    /// The request-to-first-token time, once a token came.
    pub fn rtt(&self) -> Option<Time> {
        self.rtt
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

/// When the receiver's next loss check of a flow quiet since `quiet_since` falls: one `timeout` after it,
/// never in the past (a flow waiting for grants is checked again one timeout from `now`).
pub fn loss_check_at(quiet_since: Time, timeout: Time, now: Time) -> Time {
    let due = quiet_since + timeout;
    if due > now {
        due
    } else {
        now + timeout
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
    fn an_early_stop_goes_when_a_rounds_tokens_cover_what_is_left() {
        let mut e = EarlyStop::default();
        assert!(!e.on_token(100, 0, 5), "the first token sets the round trip (100) and opens a round");
        assert_eq!(e.rtt(), Some(100));
        assert!(!e.on_token(150, 0, 5), "mid-round");
        assert!(!e.on_token(200, 0, 5), "the round ends with 3 tokens, fewer than the 5 packets left");
        assert!(!e.sent);
        assert!(e.on_token(250, 0, 0), "nothing left");
        assert!(e.sent);
        let mut e = EarlyStop::default();
        e.on_token(100, 0, 9);
        e.on_token(150, 0, 9);
        assert!(e.on_token(200, 0, 3), "3 tokens this round cover the 3 packets left");
    }

    #[test]
    fn the_loss_check_tells_a_timeout_from_waiting_for_grants() {
        let t = TokenTransport { rx_timeout: 100, ..TokenTransport::default() };
        let mut g = Grants { outstanding: 3_000, ..Grants::default() };
        assert!(!g.loss_check(&t, 1_000, 0, 99), "not yet");
        assert!(g.loss_check(&t, 1_000, 0, 100));
        assert_eq!(g.outstanding, 0, "the grants that brought nothing are written off");
        let mut waiting = Grants { window: Some(5_000), ..Grants::default() };
        assert!(!waiting.loss_check(&t, 1_000, 0, 500), "nothing outstanding: its turn has not come");
        let by_flag = TokenTransport { volume_by_flag: true, rx_timeout: 100, ..TokenTransport::default() };
        let mut stalled = Grants { window: Some(5_000), stop_requested: true, ..Grants::default() };
        assert!(stalled.loss_check(&by_flag, 1_000, 0, 100), "nothing owed: stalled, not waiting");
        assert_eq!((stalled.owed, stalled.stop_requested), (1_000, false), "one token to pull the hole");
        assert_eq!(loss_check_at(0, 100, 50), 100);
        assert_eq!(loss_check_at(0, 100, 100), 200, "never now or before");
    }

    #[test]
    fn decisions_set_the_window_and_rate_and_arm_timers_by_generation() {
        let mut g = Grants::default();
        let mut d = RxDecisions { token_window: Some(4_000), token_rate: Some(1_000), ..RxDecisions::default() };
        d.set_timers[1] = Some(50);
        d.cancel_timers[2] = true;
        let mut armed = Vec::new();
        g.adopt(&d, |a| armed.push(a));
        assert_eq!((g.window, g.token_rate, g.timer_gen), (Some(4_000), 1_000, [0, 1, 1, 0]));
        assert_eq!(armed, [Arm::Timer { id: 1, at: 50, gen: 1 }, Arm::Ticks { gen: 1 }], "timers first");
        assert!(g.timer_current(1, 1) && !g.timer_current(2, 0), "a cancelled timer's firing is stale");
        assert_eq!(g.tick_gap(1, 1_000, 0), Some(8_000_000_000_000), "1,000 B at 1 kbit/s: 8 s");
        let mut armed = Vec::new();
        g.adopt(&RxDecisions { token_rate: Some(2_000), ..RxDecisions::default() }, |a| armed.push(a));
        assert_eq!((armed, g.token_rate), (vec![], 2_000), "a running rate only changes");
        g.done = true;
        assert_eq!(g.tick_gap(1, 1_000, 0), None);
        assert!(!g.on_demand());
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
