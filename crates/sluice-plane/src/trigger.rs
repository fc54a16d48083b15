//! When a flow's fold becomes a report: the algorithm's reporting policy, urgency, back-pressure and a
//! hold limit.

use sluice_cc::{ReportEvery, ReportPolicy};
use sluice_core::Time;

use crate::config::ReportOverride;
use crate::fold::Fold;

/// Why a signal was folded: urgent signals make the fold due at once when the policy says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// An ordinary signal.
    Normal,
    /// A loss or timeout.
    Loss,
    /// An ECN echo or CNP.
    Ecn,
}

/// Per-flow reporting state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    policy: ReportPolicy,
    /// Once-per-RTT reports: due when the ACK point passes this sequence (snd_nxt at the last report).
    rtt_marker: u64,
    /// Back-pressure stretches aggregation periods by this factor (1 = none).
    stretch: u32,
}

impl Trigger {
    /// A trigger for `policy`, or the plane's override of it.
    pub fn new(policy: ReportPolicy, plane_override: Option<ReportOverride>) -> Trigger {
        let mut trigger = Trigger { policy, rtt_marker: 0, stretch: 1 };
        trigger.set_policy(policy, plane_override);
        trigger
    }

    /// Changes the policy (the algorithm asked at run time); the plane's override still wins.
    pub fn set_policy(&mut self, policy: ReportPolicy, plane_override: Option<ReportOverride>) {
        let every = match plane_override {
            None => policy.every,
            Some(ReportOverride::Ack) => ReportEvery::Ack,
            Some(ReportOverride::Acks { n }) => ReportEvery::Acks(n),
            Some(ReportOverride::Interval { period }) => ReportEvery::Interval(period),
            Some(ReportOverride::Rtt) => ReportEvery::Rtt,
        };
        self.policy = ReportPolicy { every, ..policy };
    }

    /// The policy in force (before back-pressure).
    pub fn policy(&self) -> ReportPolicy {
        self.policy
    }

    /// Whether every signal is reported on its own (the datapath may then skip folding).
    pub fn per_event(&self) -> bool {
        self.policy.every == ReportEvery::Ack && self.stretch == 1
    }

    /// Lengthens the aggregation period by `factor` (back-pressure from a full ring), or restores it
    /// with 1.
    pub fn set_stretch(&mut self, factor: u32) {
        self.stretch = factor.max(1);
    }

    /// Whether the policy reports a signal of `urgency` at once, bypassing aggregation.
    pub fn urgent(&self, urgency: Urgency) -> bool {
        match urgency {
            Urgency::Normal => false,
            Urgency::Loss => self.policy.urgent_loss,
            Urgency::Ecn => self.policy.urgent_ecn,
        }
    }

    /// Whether `fold`, just grown by a signal of `urgency` at `now`, is due.
    pub fn due(&self, fold: &Fold, urgency: Urgency, now: Time) -> bool {
        if self.urgent(urgency) {
            return true;
        }
        let s = self.stretch;
        match self.policy.every {
            ReportEvery::Ack => s == 1 || fold.acks >= s || fold.signals >= s,
            ReportEvery::Acks(n) => fold.acks >= n.saturating_mul(s),
            ReportEvery::Bytes(b) => fold.acked_bytes >= b.saturating_mul(s as u64),
            ReportEvery::Rtt => fold.acks > 0 && fold.snd_una >= self.rtt_marker,
            ReportEvery::Interval(t) => fold.first_at.is_some_and(|first| now >= first + t * s as u64),
        }
    }

    /// The latest time `fold` may wait before it is reported anyway: its interval for interval
    /// policies, else `hold` after its first signal.
    pub fn deadline(&self, fold: &Fold, hold: Time) -> Option<Time> {
        let first = fold.first_at?;
        Some(match self.policy.every {
            ReportEvery::Interval(t) => first + t * self.stretch as u64,
            _ => first + hold.max(1),
        })
    }

    /// Notes that `fold` was reported.
    pub fn reported(&mut self, fold: &Fold) {
        if fold.acks > 0 {
            self.rtt_marker = fold.snd_nxt.max(fold.snd_una + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cc::Ack;

    fn fold_of(acks: u32, una: u64, nxt: u64, first: Time) -> Fold {
        let mut f = Fold::default();
        for i in 0..acks {
            f.add_ack(&Ack::single(1000, 1, false, None, una, nxt, nxt - una, first + i as u64), first + i as u64);
        }
        f
    }

    fn policy(every: ReportEvery) -> ReportPolicy {
        ReportPolicy { every, urgent_loss: true, urgent_ecn: false }
    }

    #[test]
    fn periods_and_urgency() {
        let t = Trigger::new(policy(ReportEvery::Acks(4)), None);
        assert!(!t.due(&fold_of(3, 0, 10, 0), Urgency::Normal, 0));
        assert!(t.due(&fold_of(4, 0, 10, 0), Urgency::Normal, 0));
        assert!(t.due(&fold_of(1, 0, 10, 0), Urgency::Loss, 0), "losses are urgent");
        assert!(!t.due(&fold_of(1, 0, 10, 0), Urgency::Ecn, 0), "ECN is not urgent unless asked");
        let i = Trigger::new(policy(ReportEvery::Interval(100)), None);
        assert!(!i.due(&fold_of(1, 0, 10, 50), Urgency::Normal, 149));
        assert!(i.due(&fold_of(1, 0, 10, 50), Urgency::Normal, 150));
        assert_eq!(i.deadline(&fold_of(1, 0, 10, 50), 999), Some(150));
        assert_eq!(t.deadline(&fold_of(1, 0, 10, 50), 999), Some(1049));
    }

    #[test]
    fn once_per_rtt_follows_the_ack_point() {
        let mut t = Trigger::new(policy(ReportEvery::Rtt), None);
        let first = fold_of(1, 1000, 8000, 0);
        assert!(t.due(&first, Urgency::Normal, 0), "the first ACK closes the first round");
        t.reported(&first);
        assert!(!t.due(&fold_of(3, 7000, 9000, 0), Urgency::Normal, 0));
        assert!(t.due(&fold_of(1, 8000, 9000, 0), Urgency::Normal, 0));
    }

    #[test]
    fn overrides_and_back_pressure() {
        let mut t = Trigger::new(policy(ReportEvery::Ack), Some(ReportOverride::Acks { n: 8 }));
        assert_eq!(t.policy().every, ReportEvery::Acks(8));
        assert!(!t.per_event());
        t.set_stretch(2);
        assert!(!t.due(&fold_of(8, 0, 10, 0), Urgency::Normal, 0));
        assert!(t.due(&fold_of(16, 0, 10, 0), Urgency::Normal, 0));
        let mut a = Trigger::new(policy(ReportEvery::Ack), None);
        assert!(a.per_event());
        a.set_stretch(4);
        assert!(!a.per_event());
        assert!(!a.due(&fold_of(3, 0, 10, 0), Urgency::Normal, 0));
        assert!(a.due(&fold_of(4, 0, 10, 0), Urgency::Normal, 0));
    }
}
