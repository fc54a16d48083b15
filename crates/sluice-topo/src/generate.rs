//! Generators for the parametric topologies. Their inputs are validated by `TopologySpec::validate`.

use sluice_core::{Rate, Time};

use crate::graph::{Builder, NodeId, NodeKind, Topology};
use crate::spec::FatTreeShape;
use crate::TopoError;

/// Adds `count` nodes named `prefix0`, `prefix1`, ...; returns the first id (ids are consecutive).
fn add_nodes(builder: &mut Builder, kind: NodeKind, prefix: &str, count: u32) -> NodeId {
    let first = builder.len() as NodeId;
    for i in 0..count {
        builder.add_node(kind, format!("{prefix}{i}"));
    }
    first
}

fn link(builder: &mut Builder, a: NodeId, b: NodeId, rate: Rate, delay: Time) -> Result<(), TopoError> {
    builder.add_link(a, b, rate, delay).map_err(TopoError::general)
}

/// Links hosts `first_host..first_host + count` to switch `first_switch + i / per_switch`, in host order.
fn attach_hosts(
    builder: &mut Builder,
    (first_host, count): (NodeId, u32),
    (first_switch, per_switch): (NodeId, u32),
    rate: Rate,
    delay: Time,
) -> Result<(), TopoError> {
    for i in 0..count {
        link(builder, first_host + i, first_switch + i / per_switch, rate, delay)?;
    }
    Ok(())
}

/// The (generalised) k-ary fat-tree; see `TopologySpec::FatTree` for the numbering.
pub(crate) fn fat_tree(s: &FatTreeShape) -> Result<Topology, TopoError> {
    let mut b = Builder::default();
    let tors = s.pods * s.tors_per_pod;
    let aggs = s.pods * s.aggs_per_pod;
    let hosts = tors * s.hosts_per_tor;
    let host0 = add_nodes(&mut b, NodeKind::Host, "h", hosts);
    let tor0 = add_nodes(&mut b, NodeKind::Switch, "tor", tors);
    let agg0 = add_nodes(&mut b, NodeKind::Switch, "agg", aggs);
    let core0 = add_nodes(&mut b, NodeKind::Switch, "core", s.cores);
    attach_hosts(&mut b, (host0, hosts), (tor0, s.hosts_per_tor), s.host_rate, s.delay)?;
    for tor in 0..tors {
        let pod = tor / s.tors_per_pod;
        for j in 0..s.aggs_per_pod {
            link(&mut b, tor0 + tor, agg0 + pod * s.aggs_per_pod + j, s.tor_agg_rate, s.delay)?;
        }
    }
    let cores_per_agg = s.cores / s.aggs_per_pod;
    for agg in 0..aggs {
        let j = agg % s.aggs_per_pod;
        for c in j * cores_per_agg..(j + 1) * cores_per_agg {
            link(&mut b, agg0 + agg, core0 + c, s.agg_core_rate, s.delay)?;
        }
    }
    b.finish(fat_tree_label(s))
}

fn fat_tree_label(s: &FatTreeShape) -> String {
    if s.is_canonical() {
        return format!("fat-tree k={}", s.k);
    }
    format!(
        "fat-tree k={} ({} pods x {} ToRs x {} hosts, {} aggs/pod, {} cores)",
        s.k, s.pods, s.tors_per_pod, s.hosts_per_tor, s.aggs_per_pod, s.cores
    )
}

/// A leaf-spine: hosts, then ToRs, then spines; every ToR linked once to every spine.
pub(crate) fn leaf_spine(
    hosts_per_tor: u32,
    tors: u32,
    spines: u32,
    host_rate: Rate,
    uplink_rate: Rate,
    delay: Time,
) -> Result<Topology, TopoError> {
    let mut b = Builder::default();
    let hosts = hosts_per_tor * tors;
    let host0 = add_nodes(&mut b, NodeKind::Host, "h", hosts);
    let tor0 = add_nodes(&mut b, NodeKind::Switch, "tor", tors);
    let spine0 = add_nodes(&mut b, NodeKind::Switch, "spine", spines);
    attach_hosts(&mut b, (host0, hosts), (tor0, hosts_per_tor), host_rate, delay)?;
    for tor in 0..tors {
        for spine in 0..spines {
            link(&mut b, tor0 + tor, spine0 + spine, uplink_rate, delay)?;
        }
    }
    b.finish(format!("leaf-spine {tors} ToRs x {hosts_per_tor} hosts, {spines} spines"))
}

/// One switch `sw0` with every host on it.
pub(crate) fn star(hosts: u32, rate: Rate, delay: Time) -> Result<Topology, TopoError> {
    let mut b = Builder::default();
    let host0 = add_nodes(&mut b, NodeKind::Host, "h", hosts);
    let sw = add_nodes(&mut b, NodeKind::Switch, "sw", 1);
    attach_hosts(&mut b, (host0, hosts), (sw, hosts), rate, delay)?;
    b.finish(format!("star {hosts} hosts"))
}

/// Switches `sw0` (left hosts) and `sw1` (right hosts) joined by the bottleneck link.
pub(crate) fn dumbbell(
    left: u32,
    right: u32,
    host_rate: Rate,
    bottleneck_rate: Rate,
    delay: Time,
) -> Result<Topology, TopoError> {
    let mut b = Builder::default();
    let host0 = add_nodes(&mut b, NodeKind::Host, "h", left + right);
    let sw0 = add_nodes(&mut b, NodeKind::Switch, "sw", 2);
    attach_hosts(&mut b, (host0, left), (sw0, left), host_rate, delay)?;
    attach_hosts(&mut b, (host0 + left, right), (sw0 + 1, right), host_rate, delay)?;
    link(&mut b, sw0, sw0 + 1, bottleneck_rate, delay)?;
    b.finish(format!("dumbbell {left}+{right} hosts"))
}
