//! Closed-form routes of the generated layouts: O(ports) memory and O(1) lookups, equal to what the
//! breadth-first table gives for the same graph.
//!
//! A layout is recognised from the graph itself (counts by tier, then every port checked against the
//! layout's numbering), so a topology file that happens to number its nodes like a generator gets the
//! closed form too, and anything else falls back to the table.

use crate::graph::{NodeId, PortNo, Topology};

/// `0, 1, 2, ...` up to a layout's largest degree: any run of consecutive ports is a slice of it.
fn identity(max_degree: u32) -> Vec<PortNo> {
    (0..max_degree.max(1)).map(|p| p as PortNo).collect()
}

/// `a / b` when `b` divides `a` exactly.
fn exact_div(a: u32, b: u32) -> Option<u32> {
    (b != 0 && a % b == 0).then(|| a / b)
}

/// The number of hosts when node ids `0..hosts` are exactly the hosts (the generators add hosts first).
fn hosts_first(topo: &Topology) -> Option<u32> {
    let hosts = topo.hosts.len() as u32;
    (topo.hosts.last().map(|&h| h + 1) == Some(hosts)).then_some(hosts)
}

/// Whether every node in `0..end` has exactly `degree(node)` ports and port `p` leads to `peer(node, p)`,
/// and there are no other nodes.
fn ports_match(
    topo: &Topology,
    end: u32,
    degree: impl Fn(NodeId) -> u32,
    peer: impl Fn(NodeId, u32) -> NodeId,
) -> bool {
    topo.nodes.len() == end as usize
        && (0..end).all(|node| {
            let ports = &topo.ports[node as usize];
            ports.len() == degree(node) as usize
                && ports.iter().enumerate().all(|(p, port)| port.peer == peer(node, p as u32))
        })
}

/// A host's routes: its NIC toward every other host, nothing toward itself. Here host index = node id.
#[inline]
fn host_hops(identity: &[PortNo], node: NodeId, dst_host: u32) -> &[PortNo] {
    if node == dst_host {
        &[]
    } else {
        &identity[..1]
    }
}

/// The three-tier layout of the generated fat-trees (Al-Fares, Loukissas, Vahdat, "A Scalable,
/// Commodity Data Center Network Architecture", SIGCOMM 2008, with the overrides of
/// `TopologySpec::FatTree`), of which a leaf-spine (one pod, spines as aggregation switches, no cores)
/// and a star (one ToR, nothing above it) are special cases.
///
/// Node ids: hosts `0..tor0`, ToRs `tor0..agg0` (pod by pod), aggregation switches `agg0..core0`,
/// cores `core0..end`. A ToR's ports are its hosts, then one uplink per aggregation switch of its pod;
/// an aggregation switch's are the ToRs of its pod, then its cores (`j*c .. (j+1)*c` for aggregation
/// switch `j`, as in Al-Fares et al.); a core's port `p` leads to pod `p`.
///
/// Shortest paths follow: a ToR reaches its own hosts directly and everything else through any of its
/// uplinks; an aggregation switch reaches its pod's hosts through their ToR and other pods through
/// any of its cores; a core reaches a pod through its one port there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tiered {
    tor0: NodeId,
    agg0: NodeId,
    core0: NodeId,
    end: NodeId,
    hosts_per_tor: u32,
    tors_per_pod: u32,
    aggs_per_pod: u32,
    cores_per_agg: u32,
    pods: u32,
    identity: Vec<PortNo>,
}

impl Tiered {
    /// The layout of `topo`, if it has exactly this shape.
    pub(super) fn recognise(topo: &Topology) -> Option<Tiered> {
        let hosts = hosts_first(topo)?;
        let [tors, aggs, cores] = switches_by_tier(topo)?;
        let hosts_per_tor = exact_div(hosts, tors)?;
        let aggs_per_pod = (topo.ports[hosts as usize].len() as u32).checked_sub(hosts_per_tor)?;
        let (pods, cores_per_agg) = match aggs_per_pod {
            0 if aggs == 0 && cores == 0 => (1, 0),
            0 => return None,
            _ => (exact_div(aggs, aggs_per_pod)?, exact_div(cores, aggs_per_pod)?),
        };
        let tors_per_pod = exact_div(tors, pods)?;
        let (tor0, agg0, core0) = (hosts, hosts + tors, hosts + tors + aggs);
        let mut layout = Tiered {
            tor0,
            agg0,
            core0,
            end: core0 + cores,
            hosts_per_tor,
            tors_per_pod,
            aggs_per_pod,
            cores_per_agg,
            pods,
            identity: Vec::new(),
        };
        if !ports_match(topo, layout.end, |n| layout.degree(n), |n, p| layout.peer(n, p)) {
            return None;
        }
        layout.identity = identity((hosts_per_tor + aggs_per_pod).max(tors_per_pod + cores_per_agg).max(pods));
        Some(layout)
    }

    fn degree(&self, node: NodeId) -> u32 {
        match self.tier(node) {
            0 => 1,
            1 => self.hosts_per_tor + self.aggs_per_pod,
            2 => self.tors_per_pod + self.cores_per_agg,
            _ => self.pods,
        }
    }

    /// The node port `p` of `node` leads to in this layout.
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

    /// 0 for hosts, 1 for ToRs, 2 for aggregation switches, 3 for cores.
    fn tier(&self, node: NodeId) -> u8 {
        match node {
            n if n < self.tor0 => 0,
            n if n < self.agg0 => 1,
            n if n < self.core0 => 2,
            _ => 3,
        }
    }

    /// See [`crate::Routes::next_hops`].
    #[inline]
    pub(super) fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        assert!(node < self.end && dst_host < self.tor0, "node {node} or host {dst_host} out of range");
        if node < self.tor0 {
            return host_hops(&self.identity, node, dst_host);
        }
        let dst_tor = dst_host / self.hosts_per_tor;
        if node < self.agg0 {
            let tor = node - self.tor0;
            if tor == dst_tor {
                return self.ports(dst_host - tor * self.hosts_per_tor, 1);
            }
            return self.ports(self.hosts_per_tor, self.aggs_per_pod);
        }
        let dst_pod = dst_tor / self.tors_per_pod;
        if node < self.core0 {
            let pod = (node - self.agg0) / self.aggs_per_pod;
            if pod == dst_pod {
                return self.ports(dst_tor - pod * self.tors_per_pod, 1);
            }
            return self.ports(self.tors_per_pod, self.cores_per_agg);
        }
        self.ports(dst_pod, 1)
    }

    /// Ports `first..first + count`.
    #[inline]
    fn ports(&self, first: u32, count: u32) -> &[PortNo] {
        &self.identity[first as usize..(first + count) as usize]
    }

    /// Approximate heap memory, in bytes.
    pub(super) fn heap_bytes(&self) -> usize {
        self.identity.len() * 2
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dumbbell {
    left: u32,
    right: u32,
    identity: Vec<PortNo>,
}

impl Dumbbell {
    /// The layout of `topo`, if it has exactly this shape.
    pub(super) fn recognise(topo: &Topology) -> Option<Dumbbell> {
        let hosts = hosts_first(topo)?;
        let sw0 = hosts as usize;
        let degrees = (topo.ports.get(sw0)?.len() as u32, topo.ports.get(sw0 + 1)?.len() as u32);
        let (left, right) = (degrees.0.checked_sub(1)?, degrees.1.checked_sub(1)?);
        let mut layout = Dumbbell { left, right, identity: Vec::new() };
        let matches =
            left + right == hosts && ports_match(topo, hosts + 2, |n| layout.degree(n), |n, p| layout.peer(n, p));
        if !matches {
            return None;
        }
        layout.identity = identity(left.max(right) + 1);
        Some(layout)
    }

    fn degree(&self, node: NodeId) -> u32 {
        let sw0 = self.sw0();
        match node {
            host if host < sw0 => 1,
            switch if switch == sw0 => self.left + 1,
            _ => self.right + 1,
        }
    }

    fn peer(&self, node: NodeId, p: u32) -> NodeId {
        let sw0 = self.sw0();
        match node {
            host if host < sw0 => sw0 + u32::from(host >= self.left),
            switch if switch == sw0 => {
                if p < self.left {
                    p
                } else {
                    sw0 + 1
                }
            }
            _ => {
                if p < self.right {
                    self.left + p
                } else {
                    sw0
                }
            }
        }
    }

    fn sw0(&self) -> NodeId {
        self.left + self.right
    }

    /// See [`crate::Routes::next_hops`].
    #[inline]
    pub(super) fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        let sw0 = self.sw0();
        assert!(node <= sw0 + 1 && dst_host < sw0, "node {node} or host {dst_host} out of range");
        let port = match node {
            host if host < sw0 => return host_hops(&self.identity, node, dst_host),
            switch if switch == sw0 => {
                if dst_host < self.left {
                    dst_host
                } else {
                    self.left
                }
            }
            _ => dst_host.checked_sub(self.left).unwrap_or(self.right),
        };
        &self.identity[port as usize..port as usize + 1]
    }

    /// Approximate heap memory, in bytes.
    pub(super) fn heap_bytes(&self) -> usize {
        self.identity.len() * 2
    }
}
