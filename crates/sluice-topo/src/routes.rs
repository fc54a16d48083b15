//! Shortest-path (hop-count) ECMP routes to every host, with interned port sets, and path profiles.

use std::collections::{HashMap, VecDeque};

use sluice_core::{Rate, Time};

use crate::graph::{NodeId, NodeKind, PortNo, Topology};

/// Marks a node without a row in the route table (hosts, whose only route is their NIC).
const NO_ROW: u32 = u32::MAX;

/// The ECMP next hops of every node toward every destination host.
///
/// For a switch and a destination host, the set holds every egress port that lies on a shortest path
/// (fewest links) to that host, in increasing port order. A host's set is its NIC (port 0) for every
/// other host and empty for itself; hosts never forward transit traffic.
///
/// Memory: identical port sets are stored once (a flat `Vec<u16>` with offsets), and each switch keeps
/// one `u32` set id per destination host; hosts need no table row. A k=16 fat-tree (1024 hosts,
/// 320 switches) needs about 1.3 MB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    /// Host index -> node id.
    host_node: Vec<NodeId>,
    /// Node id -> row of `table`, or [`NO_ROW`] for hosts.
    row_of: Vec<u32>,
    /// Row-major: `table[row * num_hosts + dst_host]` is a set id.
    table: Vec<u32>,
    /// Set id -> start of the set in `ports`; `offsets[id + 1]` is its end.
    offsets: Vec<u32>,
    /// The interned port sets, back to back.
    ports: Vec<PortNo>,
}

impl Routes {
    /// The egress ports of `node` on shortest paths to host `dst_host` (a host index): the ECMP set, in
    /// increasing port order. Empty when `node` is that host. O(1) and allocation-free.
    ///
    /// Panics if `node` or `dst_host` is out of range.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        let row = self.row_of[node as usize];
        if row == NO_ROW {
            return if self.host_node[dst_host as usize] == node { &[] } else { &[0] };
        }
        let set = self.table[row as usize * self.host_node.len() + dst_host as usize] as usize;
        &self.ports[self.offsets[set] as usize..self.offsets[set + 1] as usize]
    }

    /// The number of distinct port sets stored (including the empty set).
    pub fn num_sets(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Approximate heap memory held by the route tables, in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.host_node.len() * 4
            + self.row_of.len() * 4
            + self.table.len() * 4
            + self.offsets.len() * 4
            + self.ports.len() * 2
    }
}

/// Interns port sets: set 0 is the empty set; ids are given in first-seen order.
struct Interner {
    ids: HashMap<Vec<PortNo>, u32>,
    offsets: Vec<u32>,
    ports: Vec<PortNo>,
}

impl Interner {
    fn new() -> Interner {
        let mut ids = HashMap::new();
        ids.insert(Vec::new(), 0);
        Interner { ids, offsets: vec![0, 0], ports: Vec::new() }
    }

    fn intern(&mut self, set: &[PortNo]) -> u32 {
        if let Some(&id) = self.ids.get(set) {
            return id;
        }
        let id = (self.offsets.len() - 1) as u32;
        self.ports.extend_from_slice(set);
        self.offsets.push(self.ports.len() as u32);
        self.ids.insert(set.to_vec(), id);
        id
    }
}

impl Topology {
    /// Computes the ECMP routes: one breadth-first search per destination host over the reversed graph
    /// (links are full duplex, so the same graph), expanding only through switches.
    pub fn routes(&self) -> Routes {
        let num_hosts = self.hosts.len();
        let mut row_of = vec![NO_ROW; self.nodes.len()];
        let switches: Vec<NodeId> =
            (0..self.nodes.len() as NodeId).filter(|&n| self.nodes[n as usize].kind == NodeKind::Switch).collect();
        for (row, &s) in switches.iter().enumerate() {
            row_of[s as usize] = row as u32;
        }
        let mut table = vec![0u32; switches.len() * num_hosts];
        let mut interner = Interner::new();
        let mut dist = vec![u32::MAX; self.nodes.len()];
        let mut queue = VecDeque::new();
        let mut set = Vec::new();
        for (dst_host, &dst) in self.hosts.iter().enumerate() {
            self.distances_to(dst, &mut dist, &mut queue);
            for (row, &s) in switches.iter().enumerate() {
                self.shortest_ports(s, dst, &dist, &mut set);
                table[row * num_hosts + dst_host] = interner.intern(&set);
            }
        }
        Routes { host_node: self.hosts.clone(), row_of, table, offsets: interner.offsets, ports: interner.ports }
    }

    /// Hop distances from every node to `dst`, where paths may pass through switches only.
    fn distances_to(&self, dst: NodeId, dist: &mut [u32], queue: &mut VecDeque<NodeId>) {
        dist.fill(u32::MAX);
        dist[dst as usize] = 0;
        queue.push_back(dst);
        while let Some(node) = queue.pop_front() {
            if node != dst && self.nodes[node as usize].kind == NodeKind::Host {
                continue;
            }
            let next = dist[node as usize] + 1;
            for port in &self.ports[node as usize] {
                if dist[port.peer as usize] == u32::MAX {
                    dist[port.peer as usize] = next;
                    queue.push_back(port.peer);
                }
            }
        }
    }

    /// Fills `set` with the ports of `node` whose peer is one hop closer to `dst` (and may carry the
    /// packet on: a switch, or `dst` itself).
    fn shortest_ports(&self, node: NodeId, dst: NodeId, dist: &[u32], set: &mut Vec<PortNo>) {
        set.clear();
        let here = dist[node as usize];
        if here == 0 || here == u32::MAX {
            return;
        }
        for (number, port) in self.ports[node as usize].iter().enumerate() {
            let peer = port.peer;
            let forwards = peer == dst || self.nodes[peer as usize].kind == NodeKind::Switch;
            if forwards && dist[peer as usize] == here - 1 {
                set.push(number as PortNo);
            }
        }
    }
}

/// The path a flow takes between two hosts, for ideal (unloaded) flow completion times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathProfile {
    /// Links traversed (2 within a rack, 6 across fat-tree pods).
    pub hops: u32,
    /// Switches traversed (`hops - 1` for distinct hosts).
    pub switches: u32,
    /// One-way propagation delay: the sum of the links' delays, picoseconds.
    pub prop_delay: Time,
    /// The slowest link rate on the path (the source NIC's rate for an empty path), bit/s.
    pub bottleneck: Rate,
    /// Each link's rate, in path order from the source.
    pub link_rates: Vec<Rate>,
}

impl Topology {
    /// The profile of the path from host `src_host` to host `dst_host` (host indices), following the
    /// first (lowest-numbered) ECMP port at each hop.
    ///
    /// In the generated fat-trees and leaf-spines every shortest path between two hosts has the same
    /// hop count, link rates and delays (each tier's links are uniform), so the choice does not change
    /// the profile. For irregular file topologies it is the profile of one deterministic shortest path.
    pub fn path_profile(&self, routes: &Routes, src_host: u32, dst_host: u32) -> PathProfile {
        let dst = self.hosts[dst_host as usize];
        let mut node = self.hosts[src_host as usize];
        let mut profile = PathProfile {
            hops: 0,
            switches: 0,
            prop_delay: 0,
            bottleneck: self.nic(src_host).rate,
            link_rates: Vec::new(),
        };
        while let Some(&port) = routes.next_hops(node, dst_host).first() {
            let port = &self.ports[node as usize][port as usize];
            profile.hops += 1;
            profile.prop_delay += port.delay;
            profile.link_rates.push(port.rate);
            node = port.peer;
            if node != dst {
                profile.switches += 1;
            }
        }
        if let Some(&slowest) = profile.link_rates.iter().min() {
            profile.bottleneck = slowest;
        }
        profile
    }
}
