//! The general route table: one breadth-first search per destination host, port sets interned.

use std::collections::{HashMap, VecDeque};

use crate::graph::{NodeId, NodeKind, PortNo, Topology};
use crate::routes::RouteProgress;

/// Marks a node without a row in the table (hosts, whose only route is their NIC), and a host without a
/// column (no route was computed toward it).
const NO_ROW: u32 = u32::MAX;

/// One `u32` set id per (switch, destination host); identical port sets are stored once (a flat
/// `Vec<u16>` with offsets). A k=16 fat-tree (1024 hosts, 320 switches) needs about 1.3 MB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Table {
    /// Host index -> node id.
    host_node: Vec<NodeId>,
    /// Node id -> row of `table`, or [`NO_ROW`] for hosts.
    row_of: Vec<u32>,
    /// Host index -> column of `table`, or [`NO_ROW`] for a host no route leads to.
    column_of: Vec<u32>,
    /// Columns per row: the destination hosts routed.
    columns: usize,
    /// Row-major: `table[row * columns + column_of[dst_host]]` is a set id.
    table: Vec<u32>,
    /// Set id -> start of the set in `ports`; `offsets[id + 1]` is its end.
    offsets: Vec<u32>,
    /// The interned port sets, back to back.
    ports: Vec<PortNo>,
}

impl Table {
    /// See [`crate::Routes::next_hops`].
    #[inline]
    pub(super) fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        let row = self.row_of[node as usize];
        if row == NO_ROW {
            return if self.host_node[dst_host as usize] == node { &[] } else { &[0] };
        }
        let column = self.column_of[dst_host as usize];
        if column == NO_ROW {
            return &[];
        }
        let set = self.table[row as usize * self.columns + column as usize] as usize;
        &self.ports[self.offsets[set] as usize..self.offsets[set + 1] as usize]
    }

    /// The number of distinct port sets stored (including the empty set).
    pub(super) fn num_sets(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Approximate heap memory, in bytes.
    pub(super) fn heap_bytes(&self) -> usize {
        self.host_node.len() * 4
            + self.row_of.len() * 4
            + self.column_of.len() * 4
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

/// Computes the table toward `destinations` (host indices, no repeats): one breadth-first search per
/// destination over the reversed graph (links are full duplex, so the same graph), expanding only
/// through switches. `progress` hears after each destination.
///
/// Only topology files of no generated layout come here. They list every node and link, so they stay
/// far smaller than what `--set` can generate (every destination of an 8,192-host file takes about 2 s
/// and 50 MB). A run asks only for the hosts its flows reach (receivers for data, senders for
/// acknowledgments), so time and memory grow with the hosts that carry traffic; the table is still
/// built up front, because switches consult it for every packet: filling it lazily would put a check
/// and interior mutability on that path.
pub(super) fn search(topo: &Topology, destinations: &[u32], progress: &mut dyn FnMut(RouteProgress)) -> Table {
    let mut column_of = vec![NO_ROW; topo.hosts.len()];
    for (column, &dst_host) in destinations.iter().enumerate() {
        column_of[dst_host as usize] = column as u32;
    }
    let columns = destinations.len();
    let mut row_of = vec![NO_ROW; topo.nodes.len()];
    let switches: Vec<NodeId> =
        (0..topo.nodes.len() as NodeId).filter(|&n| topo.nodes[n as usize].kind == NodeKind::Switch).collect();
    for (row, &s) in switches.iter().enumerate() {
        row_of[s as usize] = row as u32;
    }
    let mut table = vec![0u32; switches.len() * columns];
    let mut interner = Interner::new();
    let mut dist = vec![u32::MAX; topo.nodes.len()];
    let mut queue = VecDeque::new();
    let mut set = Vec::new();
    for (column, &dst_host) in destinations.iter().enumerate() {
        let dst = topo.hosts[dst_host as usize];
        distances_to(topo, dst, &mut dist, &mut queue);
        for (row, &s) in switches.iter().enumerate() {
            shortest_ports(topo, s, dst, &dist, &mut set);
            table[row * columns + column] = interner.intern(&set);
        }
        progress(RouteProgress { done: column as u32 + 1, total: columns as u32 });
    }
    Table {
        host_node: topo.hosts.clone(),
        row_of,
        column_of,
        columns,
        table,
        offsets: interner.offsets,
        ports: interner.ports,
    }
}

/// Hop distances from every node to `dst`, where paths may pass through switches only.
fn distances_to(topo: &Topology, dst: NodeId, dist: &mut [u32], queue: &mut VecDeque<NodeId>) {
    dist.fill(u32::MAX);
    dist[dst as usize] = 0;
    queue.push_back(dst);
    while let Some(node) = queue.pop_front() {
        if node != dst && topo.nodes[node as usize].kind == NodeKind::Host {
            continue;
        }
        let next = dist[node as usize] + 1;
        for port in &topo.ports[node as usize] {
            if dist[port.peer as usize] == u32::MAX {
                dist[port.peer as usize] = next;
                queue.push_back(port.peer);
            }
        }
    }
}

/// Fills `set` with the ports of `node` whose peer is one hop closer to `dst` (and may carry the
/// packet on: a switch, or `dst` itself).
fn shortest_ports(topo: &Topology, node: NodeId, dst: NodeId, dist: &[u32], set: &mut Vec<PortNo>) {
    set.clear();
    let here = dist[node as usize];
    if here == 0 || here == u32::MAX {
        return;
    }
    for (number, port) in topo.ports[node as usize].iter().enumerate() {
        let peer = port.peer;
        let forwards = peer == dst || topo.nodes[peer as usize].kind == NodeKind::Switch;
        if forwards && dist[peer as usize] == here - 1 {
            set.push(number as PortNo);
        }
    }
}
