//! A scenario's flows as a stream: each workload entry keeps a plan (its hosts, its random streams'
//! names, its parameters) and generates its flows in sorted order as they are asked for, and the entries'
//! streams are merged by start time. Memory follows the hosts and the entries, not the flows: a Poisson
//! load of millions of flows is generated one flow per host ahead. Only what a user lists (long-lived
//! flows, flow-list files) and the first flows of closed loops are held.
//!
//! The order is the one flow ids are numbered in: `(start, src, dst, size, group)`, ties in the order the
//! entry generates its flows. Each entry's stream yields its own flows in that order; the entries' groups
//! differ, so the merge never has to break a tie between them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, OnceLock};

use sluice_core::Time;

use crate::generator::FlowSpec;
use crate::poisson::{PoissonCursor, PoissonPlan};

/// How one workload entry generates its flows.
#[derive(Debug, Clone)]
pub(crate) enum EntryPlan {
    /// Poisson arrivals at every participating host.
    Poisson(PoissonPlan),
    /// One flow from every sender to `receiver` in every round.
    Incast {
        /// The senders, sorted (a sender listed twice sends twice).
        senders: Vec<u32>,
        receiver: u32,
        size: u64,
        start: Time,
        /// Time between rounds (0: every round at `start`).
        period: Time,
        repeats: u32,
        group: u16,
    },
    /// One flow from every host `src` to `targets[src]`.
    Permutation { targets: Vec<u32>, size: u64, start: Time, group: u16 },
    /// One flow from every host of `hosts` (sorted) to every other.
    AllToAll { hosts: Vec<u32>, size: u64, start: Time, group: u16 },
    /// Flows given one by one, sorted.
    List(Vec<FlowSpec>),
}

impl EntryPlan {
    /// Flows given one by one, sorted by `(start, src, dst, size)` with ties in the given order.
    pub(crate) fn list(mut flows: Vec<FlowSpec>) -> EntryPlan {
        flows.sort_by_key(|f| (f.start, f.src, f.dst, f.size));
        EntryPlan::List(flows)
    }

    /// A cursor at the entry's first flow.
    fn cursor(&self) -> Cursor {
        match self {
            EntryPlan::Poisson(plan) => Cursor::Poisson(plan.cursor()),
            _ => Cursor::At(0),
        }
    }

    /// The entry's next flow after `cursor`, in sorted order.
    fn next(&self, cursor: &mut Cursor) -> Option<FlowSpec> {
        let at = match cursor {
            Cursor::Poisson(c) => {
                let EntryPlan::Poisson(plan) = self else { unreachable!("a Poisson cursor walks a Poisson plan") };
                return c.next(plan);
            }
            Cursor::At(at) => at,
        };
        let flow = self.nth(*at)?;
        *at += 1;
        Some(flow)
    }

    /// The `n`-th flow of an entry that is not Poisson.
    fn nth(&self, n: u64) -> Option<FlowSpec> {
        match self {
            EntryPlan::Poisson(_) => unreachable!("Poisson flows are drawn in turn"),
            EntryPlan::Incast { senders, receiver, size, start, period, repeats, group } => {
                let (count, per_round) = (senders.len() as u64, *repeats as u64);
                if n >= count * per_round {
                    return None;
                }
                // Rounds at one time put each sender's (identical) flows side by side.
                let (src, round) = if *period == 0 {
                    (senders[(n / per_round) as usize], n % per_round)
                } else {
                    (senders[(n % count) as usize], n / count)
                };
                Some(FlowSpec::sized(src, *receiver, *size, start + period * round, *group))
            }
            EntryPlan::Permutation { targets, size, start, group } => {
                let dst = *targets.get(n as usize)?;
                Some(FlowSpec::sized(n as u32, dst, *size, *start, *group))
            }
            EntryPlan::AllToAll { hosts, size, start, group } => {
                // Each host sends to the others: its row of the host list without its own column.
                let row = hosts.len() as u64 - 1;
                let (i, j) = ((n / row) as usize, (n % row) as usize);
                let src = *hosts.get(i)?;
                let dst = hosts[if j >= i { j + 1 } else { j }];
                Some(FlowSpec::sized(src, dst, *size, *start, *group))
            }
            EntryPlan::List(flows) => flows.get(n as usize).copied(),
        }
    }
}

/// Where a walk through one entry's flows stands.
#[derive(Debug)]
enum Cursor {
    /// A Poisson entry's hosts' arrivals.
    Poisson(PoissonCursor),
    /// The index of the next flow of any other entry.
    At(u64),
}

/// A scenario's flows, generated on demand in flow-id order, as often as they are needed (the same
/// flows every time). Cloning shares the plans.
#[derive(Clone)]
pub struct FlowSource {
    entries: Arc<Vec<EntryPlan>>,
    /// How many flows there are, once a pass has counted them (clones share it).
    count: Arc<OnceLock<usize>>,
}

impl FlowSource {
    /// The flows of `entries`.
    pub(crate) fn new(entries: Vec<EntryPlan>) -> FlowSource {
        FlowSource { entries: Arc::new(entries), count: Arc::default() }
    }

    /// Exactly the flows of `flows`, in their order (ids are their indices): for tests and for flows
    /// made elsewhere.
    pub fn from_flows(flows: Vec<FlowSpec>) -> FlowSource {
        let source = FlowSource::new(vec![EntryPlan::List(flows)]);
        source.len();
        source
    }

    /// Hands every flow to `visit` in id order, counting them on the way: a pass that reads the flows
    /// for another reason spares [`FlowSource::len`] its own.
    pub fn scan(&self, mut visit: impl FnMut(&FlowSpec)) {
        let mut count = 0;
        for f in self.iter() {
            visit(&f);
            count += 1;
        }
        let _ = self.count.set(count);
    }

    /// Every flow, in id order.
    pub fn iter(&self) -> FlowStream {
        FlowStream::new(self.entries.clone())
    }

    /// How many flows there are (the first call counts them, unless a [`FlowSource::scan`] did).
    pub fn len(&self) -> usize {
        *self.count.get_or_init(|| self.iter().count())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The flows with ids `ids`, in the order asked (`None` for an id past the last), found in one pass
    /// that stops at the largest id.
    pub fn select(&self, ids: &[usize]) -> Vec<Option<FlowSpec>> {
        let mut found = vec![None; ids.len()];
        let mut wanted: Vec<(usize, usize)> = ids.iter().enumerate().map(|(k, &id)| (id, k)).collect();
        wanted.sort_unstable();
        let mut next = wanted.iter().peekable();
        for (id, flow) in self.iter().enumerate() {
            while let Some(&&(want, k)) = next.peek() {
                if want != id {
                    break;
                }
                found[k] = Some(flow);
                next.next();
            }
            if next.peek().is_none() {
                break;
            }
        }
        found
    }

    /// Every flow in a vector (memory for all of them: for small workloads).
    pub fn to_vec(&self) -> Vec<FlowSpec> {
        let mut flows = Vec::with_capacity(self.len());
        flows.extend(self.iter());
        flows
    }
}

impl IntoIterator for &FlowSource {
    type Item = FlowSpec;
    type IntoIter = FlowStream;

    fn into_iter(self) -> FlowStream {
        self.iter()
    }
}

impl From<Vec<FlowSpec>> for FlowSource {
    fn from(flows: Vec<FlowSpec>) -> FlowSource {
        FlowSource::from_flows(flows)
    }
}

impl Default for FlowSource {
    fn default() -> FlowSource {
        FlowSource::new(Vec::new())
    }
}

impl PartialEq for FlowSource {
    fn eq(&self, other: &FlowSource) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for FlowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowSource").field("entries", &self.entries.len()).field("flows", &self.count.get()).finish()
    }
}

/// The sort key of a flow, which is also its entry's tie-free merge key.
type Key = (Time, u32, u32, u64, u16);

fn key(f: &FlowSpec) -> Key {
    (f.start, f.src, f.dst, f.size, f.group)
}

/// The flows of every entry, merged in id order. It holds the next flow of each entry and shares the
/// entries' plans, so it lives on its own.
pub struct FlowStream {
    entries: Arc<Vec<EntryPlan>>,
    cursors: Vec<Cursor>,
    heads: Vec<Option<FlowSpec>>,
    queue: BinaryHeap<Reverse<(Key, usize)>>,
}

impl FlowStream {
    fn new(entries: Arc<Vec<EntryPlan>>) -> FlowStream {
        let mut cursors: Vec<Cursor> = entries.iter().map(EntryPlan::cursor).collect();
        let heads: Vec<Option<FlowSpec>> = entries.iter().zip(&mut cursors).map(|(e, c)| e.next(c)).collect();
        let queue = heads.iter().enumerate().filter_map(|(i, h)| h.map(|f| Reverse((key(&f), i)))).collect();
        FlowStream { entries, cursors, heads, queue }
    }
}

impl Iterator for FlowStream {
    type Item = FlowSpec;

    fn next(&mut self) -> Option<FlowSpec> {
        let Reverse((_, entry)) = self.queue.pop()?;
        let flow = self.heads[entry].take().expect("a queued entry has a head");
        if let Some(next) = self.entries[entry].next(&mut self.cursors[entry]) {
            self.queue.push(Reverse((key(&next), entry)));
            self.heads[entry] = Some(next);
        }
        Some(flow)
    }
}

impl std::fmt::Debug for FlowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowStream").field("entries", &self.entries.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;
    use crate::{generate_workload, Destinations, WorkloadContext, WorkloadSpec};

    /// The flows of `plans` as the generator numbered them before flows were streamed: each entry's
    /// flows in the order drawn, all of them sorted by `(start, src, dst, size, group)`, stably.
    fn numbered_eagerly(plans: &[EntryPlan]) -> Vec<FlowSpec> {
        let mut flows = Vec::new();
        for plan in plans {
            match plan {
                EntryPlan::Poisson(p) => flows.extend(p.drawn()),
                EntryPlan::Incast { senders, receiver, size, start, period, repeats, group } => {
                    for round in 0..*repeats {
                        for &src in senders {
                            let at = start + period * Time::from(round);
                            flows.push(FlowSpec::sized(src, *receiver, *size, at, *group));
                        }
                    }
                }
                EntryPlan::Permutation { targets, size, start, group } => {
                    for (src, &dst) in targets.iter().enumerate() {
                        flows.push(FlowSpec::sized(src as u32, dst, *size, *start, *group));
                    }
                }
                EntryPlan::AllToAll { hosts, size, start, group } => {
                    for &src in hosts {
                        for &dst in hosts.iter().filter(|&&d| d != src) {
                            flows.push(FlowSpec::sized(src, dst, *size, *start, *group));
                        }
                    }
                }
                EntryPlan::List(list) => flows.extend(list.iter().copied()),
            }
        }
        flows.sort_by_key(key);
        flows
    }

    fn entries(specs: &[WorkloadSpec], n_hosts: u32, seed: u64) -> FlowSource {
        let racks: Vec<u32> = (0..n_hosts).map(|h| h / 2).collect();
        let base_dir = Path::new(".");
        let ctx = WorkloadContext { n_hosts, host_rate: 100_000_000_000, rack_of: &racks, seed, base_dir };
        generate_workload(specs, &ctx).unwrap().flows
    }

    /// A Poisson load whose gaps are a few picoseconds, so hosts draw flows with equal starts.
    fn crowded(load: f64, hosts: Option<Vec<u32>>) -> WorkloadSpec {
        WorkloadSpec::Poisson {
            cdf: "memcached".into(),
            load,
            start: 7,
            duration: 20_000,
            destinations: Destinations::AllToAll,
            hosts,
            size_scale: Some(0.0001),
        }
    }

    #[test]
    fn crowded_hosts_draw_flows_with_equal_starts_and_the_stream_keeps_their_order() {
        let source = entries(&[crowded(1.0, None)], 6, 3);
        let streamed = source.to_vec();
        assert_eq!(streamed, numbered_eagerly(&source.entries));
        let ties = streamed.windows(2).filter(|w| w[0].start == w[1].start && w[0].src == w[1].src).count();
        assert!(ties > 10, "only {ties} flows of one host share a start: the test needs more");
        assert_eq!(source.len(), streamed.len());
    }

    fn spec() -> impl Strategy<Value = WorkloadSpec> {
        prop_oneof![
            (0.2..1.0f64, proptest::option::of(Just(vec![0, 2, 3]))).prop_map(|(load, hosts)| crowded(load, hosts)),
            (0u32..4, 1u32..4, 0u64..3, 0u64..50).prop_map(|(receiver, repeats, period, start)| WorkloadSpec::Incast {
                receiver,
                senders: None,
                sender_list: None,
                size: 1000,
                start: start * 10,
                period: (period > 0 || repeats > 1).then_some((period + 1) * 5),
                repeats,
            }),
            (0u64..40).prop_map(|start| WorkloadSpec::Permutation { size: 7, start }),
            (0u64..40).prop_map(|start| WorkloadSpec::AllToAll { size: 9, start, hosts: None }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The streamed flows are the flows the eager generator numbered, in its order.
        #[test]
        fn streaming_numbers_flows_as_sorting_them_did(specs in proptest::collection::vec(spec(), 1..5), seed in 0u64..1000) {
            let source = entries(&specs, 5, seed);
            let streamed = source.to_vec();
            prop_assert_eq!(&streamed, &numbered_eagerly(&source.entries));
            prop_assert_eq!(source.len(), streamed.len());
            let ids: Vec<usize> = vec![streamed.len().saturating_sub(1), 0, streamed.len() / 2, streamed.len() + 3];
            let picked = source.select(&ids);
            prop_assert_eq!(picked[3], None);
            for (k, &id) in ids[..3].iter().enumerate() {
                prop_assert_eq!(picked[k], streamed.get(id).copied());
            }
        }
    }
}
