//! Closed-loop slots on the UDP datapath. `sluice bed run --datapath udp` gives each sender the resolved
//! scenario (`--closed-loops FILE --host N`); the sender resolves it as the simulator does, so each of its
//! slots continues the slot's own size stream, and starts the slot's next flow as soon as the slot's
//! flow completes, until the loop's end (times count from the sender's start, as a flow list's do).
//!
//! A later flow's id names its slot and generation as the simulator's does ([`LoopIds`]): each sender
//! and each of its threads numbers its own slots' flows, no two alike, and the same id has the same size
//! on every datapath.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::path::Path;
use std::sync::Arc;

use sluice_cc::registry::Factory;
use sluice_cc::Needs;
use sluice_core::Time;
use sluice_scenario::Resolved;
use sluice_udp::{Endpoint, FlowResult, FlowSpec, PeerId};
use sluice_workload::{ClosedLoop, LoopIds};

use crate::udp_plan::{path_ideal_fct, Planned};

/// A sender's closed-loop slots.
pub struct SenderLoops {
    resolved: Arc<Resolved>,
    /// The loops, their slots' streams past the draws made so far.
    loops: Vec<ClosedLoop>,
    /// Running flow id -> (loop, slot), for the slots of this host.
    running: HashMap<u32, (usize, usize)>,
    /// Each slot's receiver: as the sender reaches it, and its address.
    peers: HashMap<(usize, usize), (PeerId, SocketAddrV4)>,
    /// How later flows are numbered.
    ids: LoopIds,
    /// The number of each loop's first slot among all loops' slots.
    first_slot: Vec<u32>,
    /// Each slot's generation so far (its first flow is generation 0), for the slots of this sender.
    generations: HashMap<(usize, usize), u32>,
    /// Wire bytes beyond the payload of each packet, and the payload of a full one.
    framing: (u64, u64),
    /// The flows started here, for their records.
    pub later: Vec<Planned>,
}

impl SenderLoops {
    /// The slots of `host` in the resolved scenario at `path` (`None`: every host's slots, for a sender
    /// that sends every flow of the scenario, as a two-machine test does). Their first flows must be in
    /// `plan`, whose peers `peers` gives; `framing` is (payload, per-packet bytes) of a full packet.
    pub fn load(
        path: &Path,
        host: Option<u32>,
        plan: &[Planned],
        peers: &[PeerId],
        framing: (u64, u64),
    ) -> Result<SenderLoops, String> {
        let scenario = sluice_scenario::load(path, &[], None).map_err(|e| e.to_string())?;
        let resolved = sluice_scenario::resolve(&scenario).map_err(|e| e.to_string())?;
        let loops = resolved.closed_loops.clone();
        let mut running = HashMap::new();
        let mut slot_peers = HashMap::new();
        let position: HashMap<u32, usize> = plan.iter().enumerate().map(|(k, f)| (f.id, k)).collect();
        for (l, lp) in loops.iter().enumerate() {
            for (j, slot) in lp.slots.iter().enumerate().filter(|(_, s)| host.is_none_or(|h| s.src == h)) {
                let Some(&k) = position.get(&slot.first_flow) else {
                    return Err(format!(
                        "the flow list has no flow {}, the first of closed-loop slot {j}",
                        slot.first_flow
                    ));
                };
                running.insert(slot.first_flow, (l, j));
                slot_peers.insert((l, j), (peers[k], plan[k].to));
            }
        }
        let generated = resolved.flows.len() as u32;
        let (ids, first_slot) = (LoopIds::for_loops(generated, &loops), LoopIds::first_slots(&loops));
        Ok(SenderLoops {
            resolved: Arc::new(resolved),
            loops,
            running,
            peers: slot_peers,
            ids,
            first_slot,
            generations: HashMap::new(),
            framing,
            later: Vec::new(),
        })
    }

    /// The resolved scenario the slots come from.
    pub fn scenario(&self) -> Arc<Resolved> {
        self.resolved.clone()
    }

    /// These slots split over `shards` sender threads: each slot goes with its first flow, to the shard
    /// `shard_of` gives that flow's id (a slot's flows are numbered by slot, so no two threads number a
    /// flow alike).
    pub fn split(self, shards: usize, shard_of: impl Fn(u32) -> usize) -> Vec<SenderLoops> {
        let mut parts: Vec<SenderLoops> = (0..shards)
            .map(|_| SenderLoops {
                resolved: self.resolved.clone(),
                loops: self.loops.clone(),
                running: HashMap::new(),
                peers: HashMap::new(),
                ids: self.ids,
                first_slot: self.first_slot.clone(),
                generations: HashMap::new(),
                framing: self.framing,
                later: Vec::new(),
            })
            .collect();
        for (id, slot) in self.running {
            let part = &mut parts[shard_of(id).min(shards - 1)];
            part.running.insert(id, slot);
            part.peers.insert(slot, self.peers[&slot]);
        }
        parts
    }

    /// Starts the next flow of the slot of each finished flow in `finished`, unless its loop has ended
    /// by `now` or the flow failed.
    pub fn refill(
        &mut self,
        finished: &[FlowResult],
        e: &mut Endpoint,
        now: Time,
        factory: &Arc<dyn Factory>,
        needs: Needs,
    ) -> Result<(), String> {
        for r in finished {
            let Some((l, j)) = self.running.remove(&r.id) else { continue };
            if r.error.is_some() || now >= self.loops[l].end {
                continue;
            }
            let generation = self.generations.get(&(l, j)).map_or(1, |g| g + 1);
            let Some(id) = self.ids.id(self.first_slot[l] + j as u32, generation) else {
                return Err(format!("closed-loop slot {j} of workload entry {l}: no flow id left for its next flow"));
            };
            self.generations.insert((l, j), generation);
            let size = self.loops[l].next_size(j);
            let (src, dst, group) = (self.loops[l].slots[j].src, self.loops[l].slots[j].dst, self.loops[l].group);
            let (peer, to) = self.peers[&(l, j)];
            e.open(FlowSpec { id, peer, size: Some(size), factory: factory.clone(), needs }, now)?;
            self.running.insert(id, (l, j));
            let ideal_fct = Some(path_ideal_fct(&self.resolved, src, dst, size, self.framing));
            self.later.push(Planned { id, src, dst, to, size: Some(size), start: now, stop: None, ideal_fct, group });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host 1's first flows of `scenarios/closed_loop/ncast4.toml` (h1..h4 send 5 slots each to h0).
    fn host1() -> (std::path::PathBuf, Vec<Planned>) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/closed_loop/ncast4.toml");
        let scenario = sluice_scenario::load(&path, &[], None).unwrap();
        let resolved = sluice_scenario::resolve(&scenario).unwrap();
        let to: SocketAddrV4 = "127.0.0.1:9".parse().unwrap();
        let plan = (resolved.flows.iter().enumerate())
            .filter(|(_, f)| f.src == 1)
            .map(|(id, f)| Planned {
                id: id as u32,
                src: f.src,
                dst: f.dst,
                to,
                size: Some(f.size),
                start: f.start,
                stop: None,
                ideal_fct: None,
                group: f.group,
            })
            .collect();
        (path, plan)
    }

    #[test]
    fn split_gives_each_slot_to_its_first_flows_shard() {
        let (path, plan) = host1();
        assert_eq!(plan.len(), 5, "five slots on host 1");
        let loops = SenderLoops::load(&path, Some(1), &plan, &[0; 5], (1000, 84)).unwrap();
        let shard_of = |id: u32| plan.iter().position(|f| f.id == id).unwrap() % 2;
        let parts = loops.split(2, shard_of);
        assert_eq!(parts.len(), 2);
        for (k, part) in parts.iter().enumerate() {
            let mut mine: Vec<u32> = part.running.keys().copied().collect();
            mine.sort_unstable();
            let mut expected: Vec<u32> = plan.iter().filter(|f| shard_of(f.id) == k).map(|f| f.id).collect();
            expected.sort_unstable();
            assert_eq!(mine, expected, "shard {k} runs the slots of its own first flows");
            assert_eq!(part.peers.len(), expected.len());
        }
    }

    /// A slot's later flows are numbered by slot and generation wherever they run: the simulator's ids.
    #[test]
    fn later_flows_take_the_simulators_ids() {
        let (path, plan) = host1();
        let mut loops = SenderLoops::load(&path, Some(1), &plan, &[0; 5], (1000, 84)).unwrap();
        let ids = loops.ids;
        assert_eq!((ids.generated(), ids.slots()), (20, 20), "ncast4: 20 first flows, 20 slots");
        let (l, j) = loops.running[&plan[2].id];
        let slot = loops.first_slot[l] + j as u32;
        let config = sluice_udp::TransportConfig::default();
        let mut endpoint = Endpoint::new(config, sluice_plane::PlaneConfig::default(), 0);
        let factory: Arc<dyn Factory> =
            (sluice_cc::lookup("dctcp").unwrap().build)(&toml::Table::new(), 1_000_000_000).unwrap();
        let finished = |id| FlowResult { id, peer: 0, size: 1, start: 0, finish: 0, retransmitted: 0, error: None };
        loops.refill(&[finished(plan[2].id)], &mut endpoint, 0, &factory, Needs::default()).unwrap();
        let first = ids.id(slot, 1).unwrap();
        loops.refill(&[finished(first)], &mut endpoint, 0, &factory, Needs::default()).unwrap();
        let started: Vec<u32> = loops.later.iter().map(|f| f.id).collect();
        assert_eq!(started, [first, ids.id(slot, 2).unwrap()]);
    }
}
