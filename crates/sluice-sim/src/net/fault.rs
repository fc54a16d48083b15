//! Fault injection: chosen data packets of a flow dropped or CE-marked where they leave a switch port, a
//! random fraction of a port's packets dropped or marked, a link down for a while.
//!
//! Tests of a CC implementation need losses and marks at points they choose (Marlin, EuroSys 2025,
//! section 7.1: one DCTCP flow, drops at two points and marks at a third, its cwnd and alpha traced).
//! Each switch holds the faults of its own ports ([`PortFaults`]) and asks them before it sends a packet
//! ([`PortFaults::on_egress`]) and when one arrives ([`PortFaults::lost_on_arrival`]); nothing else of
//! the simulator knows about faults. Routes do not change while a link is down: ECMP keeps hashing flows
//! onto it, as before a routing protocol reconverges. PFC frames are not subject to faults.

use sluice_core::{Rng, Time};

use crate::config::{FaultAction, FaultConfig, FaultKind};
use crate::stats::FaultStats;

/// What happens to a packet leaving a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It goes on as it is.
    Pass,
    /// It is lost.
    Drop,
    /// It goes on with CE set.
    Mark,
}

/// The packet facts a fault looks at.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// The packet's flow.
    pub flow: u32,
    /// Whether it carries data.
    pub data: bool,
    /// Whether it is ECN-capable and not yet marked.
    pub markable: bool,
}

/// A fault at one port, with its state.
#[derive(Debug)]
struct Rule {
    /// Position of the fault in the scenario, for its statistics.
    index: usize,
    port: u16,
    kind: FaultKind,
    /// Data packets of the flow seen so far (`Packets`).
    seen: u64,
    /// Next position of `packets` to wait for (`Packets`).
    next: usize,
    rng: Rng,
    stats: FaultStats,
}

/// The faults of one switch's ports.
#[derive(Debug)]
pub struct PortFaults {
    rules: Vec<Rule>,
}

impl PortFaults {
    /// The faults of `configs` at switch `node`, or `None` when it has none. Each fault draws from its
    /// own random stream, named by its position, so that adding a fault leaves the others' draws alone.
    pub fn for_switch(node: u32, configs: &[FaultConfig], seed: u64) -> Option<Box<PortFaults>> {
        let rules: Vec<Rule> = configs
            .iter()
            .enumerate()
            .filter(|(_, c)| c.node == node)
            .map(|(index, c)| Rule {
                index,
                port: c.port,
                kind: c.kind.clone(),
                seen: 0,
                next: 0,
                rng: Rng::named(seed, &format!("fault.{index}")),
                stats: FaultStats::default(),
            })
            .collect();
        (!rules.is_empty()).then(|| Box::new(PortFaults { rules }))
    }

    /// Decides the fate of a packet about to leave `port` at `now`. Every rule of the port sees the
    /// packet (so each counts its flow's packets), and the first that drops or marks it decides.
    pub fn on_egress(&mut self, now: Time, port: u16, packet: Seen) -> Verdict {
        let mut verdict = Verdict::Pass;
        for rule in self.rules.iter_mut().filter(|r| r.port == port) {
            let picked = rule.picks(now, packet);
            if verdict != Verdict::Pass {
                continue;
            }
            verdict = match picked {
                Some(FaultAction::Drop) => Verdict::Drop,
                Some(FaultAction::Mark) if packet.markable => Verdict::Mark,
                _ => Verdict::Pass,
            };
            match verdict {
                Verdict::Drop => rule.stats.dropped += 1,
                Verdict::Mark => rule.stats.marked += 1,
                Verdict::Pass => {}
            }
        }
        verdict
    }

    /// Whether a packet arriving at `port` from its peer at `now` is lost on a link that is down.
    pub fn lost_on_arrival(&mut self, now: Time, port: u16) -> bool {
        for rule in self.rules.iter_mut().filter(|r| r.port == port) {
            if let FaultKind::LinkDown { from, until } = rule.kind {
                if (from..until).contains(&now) {
                    rule.stats.dropped += 1;
                    return true;
                }
            }
        }
        false
    }

    /// Each fault's statistics, with its position in the scenario.
    pub fn stats(&self) -> impl Iterator<Item = (usize, FaultStats)> + '_ {
        self.rules.iter().map(|r| (r.index, r.stats))
    }
}

impl Rule {
    /// The action this rule takes on `packet` at `now`, if it picks it.
    fn picks(&mut self, now: Time, packet: Seen) -> Option<FaultAction> {
        match &self.kind {
            FaultKind::Packets { flow, packets, action } => {
                if !packet.data || packet.flow != *flow {
                    return None;
                }
                let position = self.seen;
                self.seen += 1;
                if packets.get(self.next) != Some(&position) {
                    return None;
                }
                self.next += 1;
                Some(*action)
            }
            FaultKind::Fraction { fraction, action, from, until } => {
                if !(*from..*until).contains(&now) {
                    return None;
                }
                (*fraction >= 1.0 || self.rng.next_f64() < *fraction).then_some(*action)
            }
            FaultKind::LinkDown { from, until } => (*from..*until).contains(&now).then_some(FaultAction::Drop),
        }
    }
}

/// Adds each switch's fault statistics into one list in scenario order (`count` faults).
pub fn collect<'a>(count: usize, all: impl Iterator<Item = &'a PortFaults>) -> Vec<FaultStats> {
    let mut stats = vec![FaultStats::default(); count];
    for faults in all {
        for (index, s) in faults.stats() {
            stats[index].add(&s);
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(flow: u32) -> Seen {
        Seen { flow, data: true, markable: true }
    }

    fn one(kind: FaultKind) -> Box<PortFaults> {
        PortFaults::for_switch(3, &[FaultConfig { node: 3, port: 1, kind }], 7).unwrap()
    }

    #[test]
    fn chosen_packets_of_one_flow_are_picked_by_position() {
        let mut f = one(FaultKind::Packets { flow: 2, packets: vec![1, 3], action: FaultAction::Drop });
        let verdicts: Vec<Verdict> = (0..5).map(|_| f.on_egress(0, 1, data(2))).collect();
        use Verdict::*;
        assert_eq!(verdicts, [Pass, Drop, Pass, Drop, Pass]);
        // Other flows, control packets and other ports are not counted.
        f = one(FaultKind::Packets { flow: 2, packets: vec![0], action: FaultAction::Drop });
        assert_eq!(f.on_egress(0, 1, data(1)), Pass);
        assert_eq!(f.on_egress(0, 1, Seen { flow: 2, data: false, markable: false }), Pass);
        assert_eq!(f.on_egress(0, 0, data(2)), Pass);
        assert_eq!(f.on_egress(0, 1, data(2)), Drop);
        assert_eq!(f.stats().collect::<Vec<_>>(), [(0, FaultStats { dropped: 1, marked: 0 })]);
    }

    #[test]
    fn marks_apply_only_to_ecn_capable_packets() {
        let mut f = one(FaultKind::Packets { flow: 0, packets: vec![0, 1], action: FaultAction::Mark });
        assert_eq!(f.on_egress(0, 1, Seen { flow: 0, data: true, markable: false }), Verdict::Pass);
        assert_eq!(f.on_egress(0, 1, data(0)), Verdict::Mark);
        assert_eq!(f.stats().next().unwrap().1, FaultStats { dropped: 0, marked: 1 });
    }

    #[test]
    fn a_fraction_drops_about_that_share_inside_its_window_only() {
        let kind = FaultKind::Fraction { fraction: 0.25, action: FaultAction::Drop, from: 100, until: 200 };
        let mut f = one(kind);
        assert_eq!(f.on_egress(99, 1, data(0)), Verdict::Pass);
        assert_eq!(f.on_egress(200, 1, data(0)), Verdict::Pass);
        let dropped = (0..10_000).filter(|_| f.on_egress(150, 1, data(0)) == Verdict::Drop).count();
        assert!((2_300..2_700).contains(&dropped), "{dropped} of 10000 dropped at 0.25");
    }

    #[test]
    fn a_link_down_loses_both_directions_until_it_comes_back() {
        let mut f = one(FaultKind::LinkDown { from: 10, until: 20 });
        assert_eq!(f.on_egress(9, 1, data(0)), Verdict::Pass);
        assert_eq!(f.on_egress(10, 1, data(0)), Verdict::Drop);
        assert!(f.lost_on_arrival(19, 1));
        assert!(!f.lost_on_arrival(20, 1));
        assert!(!f.lost_on_arrival(15, 0));
        assert_eq!(f.stats().next().unwrap().1.dropped, 2);
    }

    #[test]
    fn statistics_are_collected_in_scenario_order() {
        let configs = [
            FaultConfig { node: 5, port: 0, kind: FaultKind::LinkDown { from: 0, until: 10 } },
            FaultConfig { node: 3, port: 0, kind: FaultKind::LinkDown { from: 0, until: 10 } },
        ];
        let mut at3 = PortFaults::for_switch(3, &configs, 1).unwrap();
        assert!(PortFaults::for_switch(4, &configs, 1).is_none());
        at3.on_egress(0, 0, data(0));
        let stats = collect(2, [&*at3].into_iter());
        assert_eq!(stats[0].dropped, 0);
        assert_eq!(stats[1].dropped, 1);
    }
}
