//! Closed-loop slots on the UDP datapath. `sluice bed run --datapath udp` gives each sender the resolved
//! scenario (`--closed-loops FILE --host N`); the sender resolves it as the simulator does, so each of its
//! slots continues the slot's own size stream, and starts the slot's next flow as soon as the slot's
//! flow completes, until the loop's end (times count from the sender's start, as a flow list's do).
//!
//! Later flows take ids from `generated + host x 2^20` upward (`generated`: the scenario's flows known
//! before the run), so that the hosts' ids never collide; the bed numbers them in start order when it
//! merges the hosts' results, as the simulator does.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::path::Path;
use std::sync::Arc;

use sluice_cc::registry::Factory;
use sluice_cc::Needs;
use sluice_core::Time;
use sluice_scenario::Resolved;
use sluice_udp::{Endpoint, FlowResult, FlowSpec, PeerId};
use sluice_workload::ClosedLoop;

use crate::udp_plan::{path_ideal_fct, Planned};

/// How far apart the hosts' ranges of later flow ids are.
const IDS_PER_HOST: u32 = 1 << 20;

/// A sender's closed-loop slots.
pub struct SenderLoops {
    resolved: Arc<Resolved>,
    /// The loops, their slots' streams past the draws made so far.
    loops: Vec<ClosedLoop>,
    /// Running flow id -> (loop, slot), for the slots of this host.
    running: HashMap<u32, (usize, usize)>,
    /// Each slot's receiver: as the sender reaches it, and its address.
    peers: HashMap<(usize, usize), (PeerId, SocketAddrV4)>,
    next_id: u32,
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
        let next_id = generated.saturating_add(host.unwrap_or(0).saturating_mul(IDS_PER_HOST));
        Ok(SenderLoops {
            resolved: Arc::new(resolved),
            loops,
            running,
            peers: slot_peers,
            next_id,
            framing,
            later: Vec::new(),
        })
    }

    /// The resolved scenario the slots come from.
    pub fn scenario(&self) -> Arc<Resolved> {
        self.resolved.clone()
    }

    /// The id of the first flow these slots start.
    pub fn first_id(&self) -> u32 {
        self.next_id
    }

    /// These slots split over `shards` sender threads: each slot goes with its first flow, to the shard
    /// `shard_of` gives that flow's id, and each shard takes later flow ids from its own part of the
    /// host's range, so that no two threads number a flow alike.
    pub fn split(self, shards: usize, shard_of: impl Fn(u32) -> usize) -> Vec<SenderLoops> {
        let ids_per_shard = IDS_PER_HOST / shards.max(1) as u32;
        let mut parts: Vec<SenderLoops> = (0..shards)
            .map(|k| SenderLoops {
                resolved: self.resolved.clone(),
                loops: self.loops.clone(),
                running: HashMap::new(),
                peers: HashMap::new(),
                next_id: self.next_id + k as u32 * ids_per_shard,
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
            let size = self.loops[l].next_size(j);
            let (src, dst, group) = (self.loops[l].slots[j].src, self.loops[l].slots[j].dst, self.loops[l].group);
            let id = self.next_id;
            self.next_id += 1;
            let (peer, to) = self.peers[&(l, j)];
            e.open(FlowSpec { id, peer, size: Some(size), factory: factory.clone(), needs }, now)?;
            self.running.insert(id, (l, j));
            let ideal_fct = Some(path_ideal_fct(&self.resolved, src, dst, size, self.framing));
            self.later.push(Planned { id, src, dst, to, size: Some(size), start: now, stop: None, ideal_fct, group });
        }
        Ok(())
    }
}

/// Numbers the flows that closed loops started (`later`, and their `results`) from `first` on in the
/// order they started (ties by their ids), as the simulator numbers them: for a sender that ran every
/// host's slots, whose threads took ids from separate ranges.
pub fn number_in_start_order(later: &mut [Planned], results: &mut [FlowResult], first: u32) {
    let mut order: Vec<(Time, u32)> = later.iter().map(|f| (f.start, f.id)).collect();
    order.sort_unstable();
    let new_id: HashMap<u32, u32> = order.iter().enumerate().map(|(k, &(_, id))| (id, first + k as u32)).collect();
    for f in later.iter_mut() {
        f.id = new_id[&f.id];
    }
    for r in results.iter_mut() {
        if let Some(&id) = new_id.get(&r.id) {
            r.id = id;
        }
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
    fn split_gives_each_slot_to_its_first_flows_shard_and_each_shard_its_own_ids() {
        let (path, plan) = host1();
        assert_eq!(plan.len(), 5, "five slots on host 1");
        let loops = SenderLoops::load(&path, Some(1), &plan, &[0; 5], (1000, 84)).unwrap();
        let base = loops.next_id;
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
            assert_eq!(part.next_id, base + k as u32 * (IDS_PER_HOST / 2), "shard {k}'s later ids");
        }
    }
}
