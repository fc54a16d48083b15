//! Closed-form routes of the generated layouts: O(ports) memory and O(1) lookups, equal to what the
//! breadth-first table gives for the same graph.
//!
//! A layout is recognised from the graph itself (counts by tier, then every port checked against the
//! layout's numbering), so a topology file that happens to number its nodes like a generator gets the
//! closed form too, and anything else falls back to the table.

use crate::graph::{NodeId, PortNo, Topology};

/// One node's routes in a hierarchy: the hosts below it, split into equal consecutive blocks, one per
/// down port (ports `0, 1, ...`); every other host through one run of consecutive up ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hops {
    /// The first host below the node.
    first_host: u32,
    /// How many hosts are below it (`first_host..first_host + hosts`).
    hosts: u32,
    /// Hosts behind each down port.
    per_port: u32,
    /// The first up port (one past the last port when there are none: up to 65,536).
    up_first: u32,
    /// How many up ports there are (0 at the top of the hierarchy).
    up_count: PortNo,
    /// 1 for a switch; 0 for a host, whose only host "below" is itself.
    down: PortNo,
}

impl Hops {
    /// A host: nothing toward itself, its NIC (port 0) toward every other host.
    fn host(host: u32) -> Hops {
        Hops { first_host: host, hosts: 1, per_port: 1, up_first: 0, up_count: 1, down: 0 }
    }

    /// A switch with hosts `first_host..first_host + hosts` below, `per_port` behind each down port, and
    /// `up_count` up ports from `up_first`.
    fn switch(first_host: u32, hosts: u32, per_port: u32, up_first: u32, up_count: u32) -> Hops {
        // Layouts are checked against the graph first: a switch has at most 65,536 ports, one of them down.
        Hops { first_host, hosts, per_port, up_first, up_count: up_count as PortNo, down: 1 }
    }
}

/// The routes of a hierarchical layout: one [`Hops`] per node.
///
/// Every generated layout is such a hierarchy: a ToR has its hosts one per port and its uplinks; an
/// aggregation switch (or spine) has its pod's hosts in blocks of one ToR and its core ports; a
/// fat-tree core has every host in blocks of one pod; a dumbbell switch has its hosts one per port
/// and the bottleneck as its single up port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hierarchy {
    num_hosts: u32,
    nodes: Vec<Hops>,
    /// `0, 1, 2, ...` up to the largest degree: any run of consecutive ports is a slice of it.
    identity: Vec<PortNo>,
}

impl Hierarchy {
    /// The closed form of `topo`, if the graph is exactly a generated fat-tree, leaf-spine, star or
    /// dumbbell.
    pub(super) fn recognise(topo: &Topology) -> Option<Hierarchy> {
        match Tiered::recognise(topo) {
            Some(layout) => Hierarchy::of(topo, &layout),
            None => Hierarchy::of(topo, &Dumbbell::recognise(topo)?),
        }
    }

    /// The hierarchy of `layout` if every port of `topo` is where the layout puts it.
    fn of(topo: &Topology, layout: &impl Layout) -> Option<Hierarchy> {
        let num_nodes = topo.nodes.len() as u32;
        let matches = (0..num_nodes).all(|node| {
            let ports = &topo.ports[node as usize];
            ports.len() == layout.degree(node) as usize
                && ports.iter().enumerate().all(|(p, port)| port.peer == layout.peer(node, p as u32))
        });
        if !matches {
            return None;
        }
        let max_degree = topo.ports.iter().map(Vec::len).max().unwrap_or(0).max(1);
        Some(Hierarchy {
            num_hosts: topo.num_hosts(),
            nodes: (0..num_nodes).map(|node| layout.hops(node)).collect(),
            identity: (0..max_degree).map(|p| p as PortNo).collect(),
        })
    }

    /// See [`crate::Routes::next_hops`].
    #[inline(always)]
    pub(super) fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        let hops = &self.nodes[node as usize];
        assert!(dst_host < self.num_hosts, "host {dst_host} out of range");
        let below = dst_host.wrapping_sub(hops.first_host);
        let down = below < hops.hosts;
        let (first, count) = if hops.per_port.is_power_of_two() {
            // Up or down is a coin toss from packet to packet, and a mispredicted branch costs more than
            // the down port's shift: both are computed, and the choice takes no branch.
            let down_port = (below >> hops.per_port.trailing_zeros()) as usize;
            let first = std::hint::select_unpredictable(down, down_port, hops.up_first as usize);
            (first, std::hint::select_unpredictable(down, hops.down as usize, hops.up_count as usize))
        } else if down {
            ((below / hops.per_port) as usize, hops.down as usize)
        } else {
            (hops.up_first as usize, hops.up_count as usize)
        };
        &self.identity[first..first + count]
    }

    /// Approximate heap memory, in bytes.
    pub(super) fn heap_bytes(&self) -> usize {
        self.nodes.len() * std::mem::size_of::<Hops>() + self.identity.len() * 2
    }
}

/// A generated layout's numbering: what it puts on every port, and the routes that follow.
trait Layout {
    /// How many ports `node` has.
    fn degree(&self, node: NodeId) -> u32;
    /// The node that port `p` of `node` leads to.
    fn peer(&self, node: NodeId, p: u32) -> NodeId;
    /// The routes of `node`.
    fn hops(&self, node: NodeId) -> Hops;
}

/// `a / b` when `b` divides `a` exactly.
fn exact_div(a: u32, b: u32) -> Option<u32> {
    (b != 0 && a.is_multiple_of(b)).then(|| a / b)
}

/// The number of hosts when node ids `0..hosts` are exactly the hosts (the generators add hosts first).
fn hosts_first(topo: &Topology) -> Option<u32> {
    let hosts = topo.hosts.len() as u32;
    (topo.hosts.last().map(|&h| h + 1) == Some(hosts)).then_some(hosts)
}

/// The three-tier layout of the generated fat-trees (Al-Fares, Loukissas, Vahdat, "A Scalable,
/// Commodity Data Center Network Architecture", SIGCOMM 2008, with the overrides of
/// `TopologySpec::FatTree`), of which a leaf-spine (one pod, spines as aggregation switches, no cores)
/// and a star (one ToR, nothing above it) are special cases.
///
/// Node ids: hosts `0..tor0`, ToRs `tor0..agg0` (pod by pod), aggregation switches `agg0..core0`,
/// cores `core0..`. A ToR's ports are its hosts, then one uplink per aggregation switch of its pod;
/// an aggregation switch's are the ToRs of its pod, then its cores (`j*c .. (j+1)*c` for aggregation
/// switch `j`, as in Al-Fares et al.); a core's port `p` leads to pod `p`.
///
/// Shortest paths follow: a ToR reaches its own hosts directly and everything else through any of its
/// uplinks; an aggregation switch reaches its pod's hosts through their ToR and other pods through
/// any of its cores; a core reaches a pod through its one port there.
struct Tiered {
    tor0: NodeId,
    agg0: NodeId,
    core0: NodeId,
    hosts_per_tor: u32,
    tors_per_pod: u32,
    aggs_per_pod: u32,
    cores_per_agg: u32,
    pods: u32,
}

impl Tiered {
    /// The counts of `topo` if it may be this layout (its ports are checked by [`Hierarchy::of`]).
    fn recognise(topo: &Topology) -> Option<Tiered> {
        let hosts = hosts_first(topo)?;
        let [tors, aggs, cores] = switches_by_tier(topo)?;
        let hosts_per_tor = exact_div(hosts, tors)?;
        let aggs_per_pod = (topo.ports[hosts as usize].len() as u32).checked_sub(hosts_per_tor)?;
        let (pods, cores_per_agg) = match aggs_per_pod {
            0 if aggs == 0 && cores == 0 => (1, 0),
            0 => return None,
            _ => (exact_div(aggs, aggs_per_pod)?, exact_div(cores, aggs_per_pod)?),
        };
        Some(Tiered {
            tor0: hosts,
            agg0: hosts + tors,
            core0: hosts + tors + aggs,
            hosts_per_tor,
            tors_per_pod: exact_div(tors, pods)?,
            aggs_per_pod,
            cores_per_agg,
            pods,
        })
    }

    /// 0 for hosts, 1 for ToRs, 2 for aggregation switches, 3 for cores.
    fn tier(&self, node: NodeId) -> u8 {
        match node {
            n if n < self.tor0 => 0,
            n if n < self.agg0 => 1,
            n if n < self.core0 => 2,
            _ => 3,
        }
    }

    fn hosts_per_pod(&self) -> u32 {
        self.tors_per_pod * self.hosts_per_tor
    }
}

impl Layout for Tiered {
    fn degree(&self, node: NodeId) -> u32 {
        match self.tier(node) {
            0 => 1,
            1 => self.hosts_per_tor + self.aggs_per_pod,
            2 => self.tors_per_pod + self.cores_per_agg,
            _ => self.pods,
        }
    }

    fn peer(&self, node: NodeId, p: u32) -> NodeId {
        match self.tier(node) {
            0 => self.tor0 + node / self.hosts_per_tor,
            1 => {
                let tor = node - self.tor0;
                match p.checked_sub(self.hosts_per_tor) {
                    None => tor * self.hosts_per_tor + p,
                    Some(j) => self.agg0 + tor / self.tors_per_pod * self.aggs_per_pod + j,
                }
            }
            2 => {
                let agg = node - self.agg0;
                match p.checked_sub(self.tors_per_pod) {
                    None => self.tor0 + agg / self.aggs_per_pod * self.tors_per_pod + p,
                    Some(c) => self.core0 + agg % self.aggs_per_pod * self.cores_per_agg + c,
                }
            }
            _ => self.agg0 + p * self.aggs_per_pod + (node - self.core0) / self.cores_per_agg,
        }
    }

    fn hops(&self, node: NodeId) -> Hops {
        match self.tier(node) {
            0 => Hops::host(node),
            1 => {
                let first = (node - self.tor0) * self.hosts_per_tor;
                Hops::switch(first, self.hosts_per_tor, 1, self.hosts_per_tor, self.aggs_per_pod)
            }
            2 => {
                let first = (node - self.agg0) / self.aggs_per_pod * self.hosts_per_pod();
                let per_pod = self.hosts_per_pod();
                Hops::switch(first, per_pod, self.hosts_per_tor, self.tors_per_pod, self.cores_per_agg)
            }
            _ => Hops::switch(0, self.pods * self.hosts_per_pod(), self.hosts_per_pod(), 0, 0),
        }
    }
}

/// The numbers of switches of tiers 1, 2 and 3; `None` if any switch is further from the hosts.
fn switches_by_tier(topo: &Topology) -> Option<[u32; 3]> {
    let mut counts = [0u32; 3];
    for node in &topo.nodes[topo.hosts.len()..] {
        *counts.get_mut(usize::from(node.tier).checked_sub(1)?)? += 1;
    }
    Some(counts)
}

/// The generated dumbbell: hosts `0..left` on switch `sw0` (node `left + right`), hosts
/// `left..left + right` on `sw1` (the next node), each switch's hosts on its first ports in host
/// order and the bottleneck on its last port.
struct Dumbbell {
    left: u32,
    right: u32,
}

impl Dumbbell {
    /// The counts of `topo` if it may be this layout (its ports are checked by [`Hierarchy::of`]).
    fn recognise(topo: &Topology) -> Option<Dumbbell> {
        let hosts = hosts_first(topo)?;
        let degree = |node: u32| Some(topo.ports.get(node as usize)?.len() as u32);
        let left = degree(hosts)?.checked_sub(1)?;
        let right = degree(hosts + 1)?.checked_sub(1)?;
        (left + right == hosts).then_some(Dumbbell { left, right })
    }

    fn sw0(&self) -> NodeId {
        self.left + self.right
    }
}

impl Layout for Dumbbell {
    fn degree(&self, node: NodeId) -> u32 {
        match node {
            host if host < self.sw0() => 1,
            sw0 if sw0 == self.sw0() => self.left + 1,
            _ => self.right + 1,
        }
    }

    fn peer(&self, node: NodeId, p: u32) -> NodeId {
        let sw0 = self.sw0();
        match node {
            host if host < sw0 => sw0 + u32::from(host >= self.left),
            switch if switch == sw0 && p < self.left => p,
            switch if switch == sw0 => sw0 + 1,
            _ if p < self.right => self.left + p,
            _ => sw0,
        }
    }

    fn hops(&self, node: NodeId) -> Hops {
        match node {
            host if host < self.sw0() => Hops::host(host),
            sw0 if sw0 == self.sw0() => Hops::switch(0, self.left, 1, self.left, 1),
            _ => Hops::switch(self.left, self.right, 1, self.right, 1),
        }
    }
}
