//! When each peer was last heard from: what tells a peer that is gone from a flow that waits its turn.
//!
//! A flow that has made no progress for the peer timeout may just be starved: 65,536 flows through a
//! 500 Mbps bottleneck get about one packet each per 1.6 s. Its peer is gone only if nothing at all came
//! from it for that long, whichever flow it was for.

use sluice_core::Time;

use crate::PeerId;

/// The last time each peer was heard from. Few peers per endpoint: a sorted list, with the peer heard
/// last looked up first (datagrams come in runs from one peer).
#[derive(Debug, Default)]
pub struct PeerClock {
    heard: Vec<(PeerId, Time)>,
    last: usize,
}

impl PeerClock {
    /// Notes a datagram from `peer` at `now`.
    #[inline]
    pub fn heard(&mut self, peer: PeerId, now: Time) {
        if let Some(entry) = self.heard.get_mut(self.last).filter(|e| e.0 == peer) {
            entry.1 = entry.1.max(now);
            return;
        }
        self.last = match self.heard.binary_search_by_key(&peer, |e| e.0) {
            Ok(at) => {
                self.heard[at].1 = self.heard[at].1.max(now);
                at
            }
            Err(at) => {
                self.heard.insert(at, (peer, now));
                at
            }
        };
    }

    /// When `peer` was last heard from, if ever.
    pub fn last_heard(&self, peer: PeerId) -> Option<Time> {
        self.heard.binary_search_by_key(&peer, |e| e.0).ok().map(|at| self.heard[at].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_peer_keeps_its_latest_time() {
        let mut clock = PeerClock::default();
        assert_eq!(clock.last_heard(3), None);
        for (peer, now) in [(3, 10), (1, 20), (3, 30), (7, 40), (1, 15), (3, 5)] {
            clock.heard(peer, now);
        }
        assert_eq!(clock.last_heard(1), Some(20), "an earlier time does not move it back");
        assert_eq!(clock.last_heard(3), Some(30));
        assert_eq!(clock.last_heard(7), Some(40));
        assert_eq!(clock.last_heard(2), None);
    }
}
