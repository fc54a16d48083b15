//! Token limiters of receiver-driven transports at switch egress ports: ExpressPass's credit queue
//! (Cho et al. SIGCOMM'17 section 3.1) and ToCC's ECN marking of tokens (Zhang et al., seed 002,
//! section V), the simulator's `token_limiter` and `token_ecn` (`sluice-sim/src/net/tokens.rs`) on real
//! frames.
//!
//! Tokens (sluice packets of kind token) bound for a switch port wait in the port's token queue, which
//! holds at most `capacity` tokens (more are dropped) and lets one leave per gap: the time the port takes
//! for a token and the data it releases, so that the data the tokens release exactly fills the link the
//! other way. Gaps are computed from the bed's real frame sizes (a token is a sluice header in a UDP
//! datagram). A released token continues as any control packet. With ECN on, RED marks ECN-capable
//! tokens by the token queue's length against the data thresholds scaled by token size / data size.

use std::collections::VecDeque;

use sluice_core::{serialization_ps, Rate, Rng, Time};

/// Settings of every switch port's token limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLimits {
    /// Tokens a port's queue holds; more are dropped (`limiter_capacity`).
    pub capacity: u32,
    /// Wire bytes of one token frame.
    pub token_wire: u64,
    /// Wire bytes of the data one token releases.
    pub data_wire: u64,
    /// RED on the token queue: thresholds in data bytes (`token_kmin`, `token_kmax`) and `token_pmax`.
    pub ecn: Option<(u64, u64, f64)>,
}

impl TokenLimits {
    /// Time between two tokens leaving a port of `rate`.
    pub fn gap(&self, rate: Rate) -> Time {
        serialization_ps(self.token_wire + self.data_wire, rate)
    }

    /// The probability that a token joining a queue of `queued` tokens is marked.
    fn mark_probability(&self, queued: usize) -> f64 {
        let Some((kmin, kmax, pmax)) = self.ecn else { return 0.0 };
        // Thresholds scale by token size / data size (ToCC section V).
        let scale = self.token_wire as f64 / self.data_wire.max(1) as f64;
        let (kmin, kmax) = (kmin as f64 * scale, kmax as f64 * scale);
        let q = queued as f64 * self.token_wire as f64;
        if q <= kmin {
            0.0
        } else if q > kmax {
            1.0
        } else {
            pmax * (q - kmin) / (kmax - kmin).max(1.0)
        }
    }
}

/// What the limiter did with a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It leaves now (`mark`: set Congestion Experienced first).
    Pass {
        /// Mark it.
        mark: bool,
    },
    /// It waits in the token queue (`mark` as for [`Verdict::Pass`]).
    Held {
        /// Mark it.
        mark: bool,
    },
    /// The token queue is full: drop it.
    Drop,
}

#[derive(Debug, Default)]
struct TokenPort {
    queue: VecDeque<u32>,
    next_free: Time,
}

/// The token limiters of every port of a fabric.
#[derive(Debug)]
pub struct Limiter {
    limits: TokenLimits,
    ports: Vec<TokenPort>,
    rng: Rng,
    /// Tokens dropped at full token queues.
    pub dropped: u64,
    /// Tokens marked Congestion Experienced.
    pub marked: u64,
}

impl Limiter {
    /// Limiters for `ports` ports, marking with draws from `seed`.
    pub fn new(limits: TokenLimits, ports: usize, seed: u64) -> Limiter {
        let ports = (0..ports).map(|_| TokenPort::default()).collect();
        Limiter { limits, ports, rng: Rng::named(seed, "switch.tokens"), dropped: 0, marked: 0 }
    }

    /// Token `id` (`ect`: ECN-capable) arrives at port `port` of `rate` at `now`.
    pub fn offer(&mut self, port: usize, rate: Rate, id: u32, ect: bool, now: Time) -> Verdict {
        let tp = &mut self.ports[port];
        if tp.queue.len() >= self.limits.capacity as usize {
            self.dropped += 1;
            return Verdict::Drop;
        }
        let p = self.limits.mark_probability(tp.queue.len());
        let mark = ect && p > 0.0 && (p >= 1.0 || self.rng.next_f64() < p);
        self.marked += mark as u64;
        if tp.queue.is_empty() && tp.next_free <= now {
            tp.next_free = now + self.limits.gap(rate);
            return Verdict::Pass { mark };
        }
        tp.queue.push_back(id);
        Verdict::Held { mark }
    }

    /// The earliest release due: its time and port.
    pub fn next_release(&self) -> Option<(Time, usize)> {
        self.ports.iter().enumerate().filter(|(_, p)| !p.queue.is_empty()).map(|(i, p)| (p.next_free, i)).min()
    }

    /// Releases port `port`'s next token at `now` (of a port of `rate`), if one is due.
    pub fn release(&mut self, port: usize, rate: Rate, now: Time) -> Option<u32> {
        let tp = &mut self.ports[port];
        if tp.next_free > now {
            return None;
        }
        let id = tp.queue.pop_front()?;
        tp.next_free = now + self.limits.gap(rate);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: TokenLimits = TokenLimits { capacity: 2, token_wire: 122, data_wire: 1538, ecn: None };

    #[test]
    fn tokens_leave_one_per_gap_and_overflow_drops() {
        let rate = 100_000_000;
        let gap = LIMITS.gap(rate);
        assert_eq!(gap, serialization_ps(1660, rate));
        let mut l = Limiter::new(LIMITS, 1, 1);
        assert_eq!(l.offer(0, rate, 1, false, 0), Verdict::Pass { mark: false });
        assert_eq!(l.offer(0, rate, 2, false, 0), Verdict::Held { mark: false });
        assert_eq!(l.offer(0, rate, 3, false, 0), Verdict::Held { mark: false });
        assert_eq!(l.offer(0, rate, 4, false, 0), Verdict::Drop, "two tokens wait at most");
        assert_eq!(l.dropped, 1);
        assert_eq!(l.next_release(), Some((gap, 0)));
        assert_eq!(l.release(0, rate, gap - 1), None, "not before its gap");
        assert_eq!(l.release(0, rate, gap), Some(2));
        assert_eq!(l.next_release(), Some((2 * gap, 0)));
        assert_eq!(l.release(0, rate, 2 * gap), Some(3));
        assert_eq!(l.next_release(), None);
    }

    #[test]
    fn a_long_token_queue_marks_ecn_capable_tokens() {
        // Thresholds of 0 and 1 byte of data: any waiting token puts the queue above kmax.
        let limits = TokenLimits { capacity: 8, ecn: Some((0, 1, 1.0)), ..LIMITS };
        let mut l = Limiter::new(limits, 1, 1);
        assert_eq!(l.offer(0, 1_000_000, 1, true, 0), Verdict::Pass { mark: false }, "an empty queue");
        assert_eq!(l.offer(0, 1_000_000, 2, true, 0), Verdict::Held { mark: false }, "still empty when it joins");
        assert_eq!(l.offer(0, 1_000_000, 3, true, 0), Verdict::Held { mark: true });
        assert_eq!(l.offer(0, 1_000_000, 4, false, 0), Verdict::Held { mark: false }, "not ECN-capable");
        assert_eq!(l.marked, 1);
    }
}
