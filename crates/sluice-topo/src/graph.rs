//! The topology graph: nodes, full-duplex links, per-node ports, and the host numbering workloads use.

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, MAX_TIME, MAX_TIME_TEXT};

use crate::TopoError;

/// A node id: an index into [`Topology::nodes`] and [`Topology::ports`].
///
/// Ids are plain `u32` so that tables indexed by node stay compact. Host *indices* (what workloads name
/// as `src`/`dst`) are a separate numbering, mapped to node ids by [`Topology::hosts`].
pub type NodeId = u32;

/// A port number: an index into one node's entry of [`Topology::ports`].
pub type PortNo = u16;

/// The largest number of nodes a topology may have (keeps every per-node table addressable and a typo in
/// a count from exhausting memory).
pub const MAX_NODES: u64 = 1 << 24;

/// Whether a node is an end host or a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An end host with exactly one NIC (port 0). Hosts never forward transit traffic.
    Host,
    /// A switch: forwards packets between its ports.
    Switch,
}

/// One node of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Host or switch.
    pub kind: NodeKind,
    /// A unique name (`"h5"`, `"tor1"`, or the name given in a topology file).
    pub name: String,
    /// 0 for hosts; for a switch, its hop distance to the nearest host: 1 for a ToR/leaf, 2 for an
    /// aggregation switch or spine, 3 for a fat-tree core (capped at 255).
    pub tier: u8,
}

/// A full-duplex link between nodes `a` and `b`; each direction is served by its own port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// One end (node id).
    pub a: NodeId,
    /// The other end (node id).
    pub b: NodeId,
    /// Line rate of each direction, bit/s.
    pub rate: Rate,
    /// One-way propagation delay, picoseconds.
    pub delay: Time,
}

/// One egress port of a node: its end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port {
    /// The link this port belongs to (index into [`Topology::links`]).
    pub link: u32,
    /// The node at the other end of the link.
    pub peer: NodeId,
    /// The port number of the link at `peer` (where packets sent here arrive).
    pub peer_port: PortNo,
    /// Line rate, bit/s (the link's).
    pub rate: Rate,
    /// Propagation delay to `peer`, picoseconds (the link's).
    pub delay: Time,
}

/// A built, validated topology.
///
/// Invariants: every host has exactly one port (port 0, its NIC) whose peer is a switch; the graph is
/// connected; node ids, port numbers and host indices are assigned in a deterministic order (the order
/// in which a generator or file creates nodes and links: each node numbers its ports in the order its
/// links were added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// A short description of where the topology came from (`"fat-tree k=8"`).
    pub label: String,
    /// All nodes, indexed by [`NodeId`].
    pub nodes: Vec<Node>,
    /// All links, in creation order.
    pub links: Vec<Link>,
    /// Per node, its ports; the index in the inner `Vec` is the port number.
    pub ports: Vec<Vec<Port>>,
    /// Host index -> node id. Host indices follow node-id order among hosts.
    pub hosts: Vec<NodeId>,
    /// Node id -> host index (`None` for switches).
    pub host_of: Vec<Option<u32>>,
    /// Host index -> rack index. Racks are the switches hosts attach to, numbered in node-id order.
    pub rack_of: Vec<u32>,
    /// Rack index -> node id of the rack's (ToR) switch.
    pub racks: Vec<NodeId>,
}

impl Topology {
    /// The number of hosts.
    pub fn num_hosts(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// The number of switches.
    pub fn num_switches(&self) -> u32 {
        (self.nodes.len() - self.hosts.len()) as u32
    }

    /// The NIC (port 0) of host `host` (a host index).
    pub fn nic(&self, host: u32) -> &Port {
        &self.ports[self.hosts[host as usize] as usize][0]
    }

    /// One line: the label and the counts, e.g. `"fat-tree k=8: 128 hosts, 80 switches, 384 links"`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} hosts, {} switches, {} links",
            self.label,
            self.num_hosts(),
            self.num_switches(),
            self.links.len()
        )
    }
}

/// Accumulates nodes and links, assigning ports as links are added, then checks the whole graph.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    nodes: Vec<Node>,
    links: Vec<Link>,
    ports: Vec<Vec<Port>>,
}

impl Builder {
    /// Adds a node; callers keep the node count within [`MAX_NODES`].
    pub(crate) fn add_node(&mut self, kind: NodeKind, name: String) -> NodeId {
        self.nodes.push(Node { kind, name, tier: 0 });
        self.ports.push(Vec::new());
        (self.nodes.len() - 1) as NodeId
    }

    /// The number of nodes added so far.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Adds a full-duplex link, giving each end the next free port number. The error says what is wrong
    /// with the link, naming its nodes.
    pub(crate) fn add_link(&mut self, a: NodeId, b: NodeId, rate: Rate, delay: Time) -> Result<(), String> {
        self.check_link(a, b, rate, delay)?;
        let link = self.links.len() as u32;
        let port_a = self.next_port(a)?;
        let port_b = self.next_port(b)?;
        self.links.push(Link { a, b, rate, delay });
        self.ports[a as usize].push(Port { link, peer: b, peer_port: port_b, rate, delay });
        self.ports[b as usize].push(Port { link, peer: a, peer_port: port_a, rate, delay });
        Ok(())
    }

    fn check_link(&self, a: NodeId, b: NodeId, rate: Rate, delay: Time) -> Result<(), String> {
        let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        if a == b {
            return Err(format!("link from {:?} to itself", na.name));
        }
        if rate == 0 {
            return Err(format!("link {:?}-{:?} has a zero rate", na.name, nb.name));
        }
        if delay > MAX_TIME {
            return Err(format!("link {:?}-{:?} has a delay beyond {MAX_TIME_TEXT}", na.name, nb.name));
        }
        if na.kind == NodeKind::Host && nb.kind == NodeKind::Host {
            return Err(format!("link {:?}-{:?} joins two hosts; hosts attach to switches", na.name, nb.name));
        }
        for (id, node) in [(a, na), (b, nb)] {
            if node.kind == NodeKind::Host && !self.ports[id as usize].is_empty() {
                return Err(format!("host {:?} has more than one link; a host has exactly one NIC", node.name));
            }
        }
        Ok(())
    }

    fn next_port(&self, node: NodeId) -> Result<PortNo, String> {
        let used = self.ports[node as usize].len();
        PortNo::try_from(used).map_err(|_| {
            format!("node {:?} has more than {} links", self.nodes[node as usize].name, PortNo::MAX as u32 + 1)
        })
    }

    /// Checks the graph as a whole (hosts present, connected) and derives tiers, host indices and racks.
    pub(crate) fn finish(mut self, label: String) -> Result<Topology, TopoError> {
        let hosts: Vec<NodeId> =
            (0..self.nodes.len() as NodeId).filter(|&n| self.nodes[n as usize].kind == NodeKind::Host).collect();
        if hosts.is_empty() {
            return Err(TopoError::general("the topology has no hosts"));
        }
        if self.nodes.len() as u64 > MAX_NODES {
            return Err(TopoError::general(format!("more than {MAX_NODES} nodes")));
        }
        if let Some(&bare) = hosts.iter().find(|&&h| self.ports[h as usize].is_empty()) {
            let name = &self.nodes[bare as usize].name;
            return Err(TopoError::general(format!("the graph is disconnected: host {name:?} has no link")));
        }
        let dist = hop_distances(&self.ports, &[hosts[0]]);
        self.check_connected(&hosts, &dist)?;
        self.assign_tiers(&hosts);
        Ok(self.into_topology(label, hosts))
    }

    fn check_connected(&self, hosts: &[NodeId], dist: &[u32]) -> Result<(), TopoError> {
        let origin = &self.nodes[hosts[0] as usize].name;
        if let Some(&lost) = hosts.iter().find(|&&h| dist[h as usize] == u32::MAX) {
            let name = &self.nodes[lost as usize].name;
            return Err(TopoError::general(format!(
                "the graph is disconnected: host {name:?} cannot be reached from host {origin:?}"
            )));
        }
        if let Some(lost) = dist.iter().position(|&d| d == u32::MAX) {
            let name = &self.nodes[lost].name;
            return Err(TopoError::general(format!(
                "the graph is disconnected: switch {name:?} cannot be reached from host {origin:?}"
            )));
        }
        Ok(())
    }

    fn assign_tiers(&mut self, hosts: &[NodeId]) {
        let dist = hop_distances(&self.ports, hosts);
        for (node, d) in self.nodes.iter_mut().zip(dist) {
            node.tier = d.min(u8::MAX as u32) as u8;
        }
    }

    fn into_topology(self, label: String, hosts: Vec<NodeId>) -> Topology {
        let mut host_of = vec![None; self.nodes.len()];
        let mut rack_index = vec![u32::MAX; self.nodes.len()];
        let mut racks = Vec::new();
        for (index, &h) in hosts.iter().enumerate() {
            host_of[h as usize] = Some(index as u32);
        }
        let tor_of = |h: NodeId| self.ports[h as usize][0].peer;
        let mut tors: Vec<NodeId> = hosts.iter().map(|&h| tor_of(h)).collect();
        tors.sort_unstable();
        tors.dedup();
        for tor in tors {
            rack_index[tor as usize] = racks.len() as u32;
            racks.push(tor);
        }
        let rack_of = hosts.iter().map(|&h| rack_index[tor_of(h) as usize]).collect();
        Topology { label, nodes: self.nodes, links: self.links, ports: self.ports, hosts, host_of, rack_of, racks }
    }
}

/// Breadth-first hop distances from `sources` over all links (`u32::MAX` where unreachable).
fn hop_distances(ports: &[Vec<Port>], sources: &[NodeId]) -> Vec<u32> {
    let mut dist = vec![u32::MAX; ports.len()];
    let mut queue = std::collections::VecDeque::new();
    for &s in sources {
        dist[s as usize] = 0;
        queue.push_back(s);
    }
    while let Some(node) = queue.pop_front() {
        let next = dist[node as usize] + 1;
        for port in &ports[node as usize] {
            if dist[port.peer as usize] == u32::MAX {
                dist[port.peer as usize] = next;
                queue.push_back(port.peer);
            }
        }
    }
    dist
}
