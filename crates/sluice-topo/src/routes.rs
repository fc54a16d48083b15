//! Shortest-path (hop-count) ECMP routes to every host, and path profiles.
//!
//! Generated layouts (fat-trees, leaf-spines, stars, dumbbells) get closed-form routes; any other
//! graph gets a table computed by breadth-first search, one destination host at a time.

mod closed;
mod table;

use sluice_core::{Rate, Time};

use crate::graph::{NodeId, PortNo, Topology};

/// The ECMP next hops of every node toward every destination host.
///
/// For a switch and a destination host, the set holds every egress port that lies on a shortest path
/// (fewest links) to that host, in increasing port order. A host's set is its NIC (port 0) for every
/// other host and empty for itself; hosts never forward transit traffic.
///
/// Memory: a generated layout keeps 20 bytes per node (the range of hosts below it, hosts per down port,
/// its run of up ports) and one table `0, 1, 2, ...` as long as the largest degree, whose slices are
/// the port sets: O(ports). Any other graph keeps one `u32` set id per switch and destination host,
/// with identical port sets stored once; a k=16 fat-tree (1024 hosts, 320 switches) held that way
/// needs about 1.3 MB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    form: Form,
}

/// How the routes are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Form {
    /// A generated fat-tree, leaf-spine, star or dumbbell.
    Closed(closed::Hierarchy),
    /// Anything else.
    Table(table::Table),
}

/// How far the route search of a general topology has come, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteProgress {
    /// Destination hosts whose routes are computed.
    pub done: u32,
    /// All destination hosts.
    pub total: u32,
}

impl Routes {
    /// The egress ports of `node` on shortest paths to host `dst_host` (a host index): the ECMP set, in
    /// increasing port order. Empty when `node` is that host, or when the routes were computed toward
    /// other hosts only ([`Topology::routes_to`]). O(1) and allocation-free.
    ///
    /// Panics if `node` or `dst_host` is out of range.
    // Always inlined (with the closed form's), into every switch hop: a call per hop cost more than the
    // lookup.
    #[inline(always)]
    pub fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortNo] {
        match &self.form {
            Form::Closed(closed) => closed.next_hops(node, dst_host),
            Form::Table(table) => table.next_hops(node, dst_host),
        }
    }

    /// Whether the routes are in closed form (a recognised generated layout) rather than a table.
    pub fn is_closed_form(&self) -> bool {
        !matches!(self.form, Form::Table(_))
    }

    /// The number of distinct port sets stored in the table (including the empty set); 0 for a closed
    /// form, which stores none.
    pub fn num_sets(&self) -> usize {
        match &self.form {
            Form::Table(table) => table.num_sets(),
            Form::Closed(_) => 0,
        }
    }

    /// Approximate heap memory held by the routes, in bytes.
    pub fn heap_bytes(&self) -> usize {
        match &self.form {
            Form::Closed(closed) => closed.heap_bytes(),
            Form::Table(table) => table.heap_bytes(),
        }
    }
}

impl Topology {
    /// Computes the ECMP routes: in closed form when the graph has a generated layout, otherwise by
    /// search ([`Topology::routes_by_search`]).
    pub fn routes(&self) -> Routes {
        self.routes_with_progress(&mut |_| {})
    }

    /// [`Topology::routes`], telling `progress` how far the search has come after each destination
    /// host (never called for a closed form, which takes O(ports) time).
    pub fn routes_with_progress(&self, progress: &mut dyn FnMut(RouteProgress)) -> Routes {
        let every_host: Vec<u32> = (0..self.hosts.len() as u32).collect();
        self.routes_to(&every_host, progress)
    }

    /// The routes toward the hosts `destinations` (host indices, no repeats): a closed form routes to
    /// every host anyway; a searched table holds only these destinations, and [`Routes::next_hops`]
    /// toward any other host is empty. A run passes the hosts its flows reach, so a topology file with
    /// traffic among a few of its hosts is searched only toward those.
    pub fn routes_to(&self, destinations: &[u32], progress: &mut dyn FnMut(RouteProgress)) -> Routes {
        let form = match closed::Hierarchy::recognise(self) {
            Some(closed) => Form::Closed(closed),
            None => Form::Table(table::search(self, destinations, progress)),
        };
        Routes { form }
    }

    /// Computes the routes of any graph as a table: one breadth-first search per destination host, so
    /// O(hosts x (nodes + links)) time and O(switches x hosts) memory. The closed forms must agree with
    /// it exactly.
    pub fn routes_by_search(&self) -> Routes {
        let every_host: Vec<u32> = (0..self.hosts.len() as u32).collect();
        Routes { form: Form::Table(table::search(self, &every_host, &mut |_| {})) }
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
