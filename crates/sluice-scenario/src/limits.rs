//! Checks of settings that only make sense against the built topology: a switch buffer too small for
//! what the switch reserves, a retransmission timeout shorter than any round trip.

use sluice_core::{format_duration, format_size, serialization_ps, Time};
use sluice_sim::config::SwitchConfig;
use sluice_topo::{NodeKind, Topology};

use crate::error::ScenarioError;
use crate::scenario::Scenario;

/// Refuses a `switch.buffer` that cannot hold what the busiest switch needs before it can forward at all.
///
/// With PFC on, a switch sets aside each ingress port's headroom and per-queue reserve, and the shared
/// pool must still take one full data packet: a smaller buffer drops packets on a fabric that is meant
/// to be lossless. Without PFC, the dynamic threshold admits a packet only while the buffer has room for
/// it, so the buffer must hold one full data packet per priority queue.
pub(crate) fn check_buffer(s: &Scenario, switch: &SwitchConfig, topology: &Topology) -> Result<(), ScenarioError> {
    let wire = (s.link.mtu + s.link.header_bytes) as u64;
    let switches = (0..topology.nodes.len()).filter(|&n| topology.nodes[n].kind == NodeKind::Switch);
    let Some((node, need)) =
        switches.map(|n| (n, buffer_need(switch, topology, n, wire))).max_by_key(|(_, need)| *need)
    else {
        return Ok(());
    };
    if switch.buffer >= need {
        return Ok(());
    }
    let name = &topology.nodes[node].name;
    let ports = topology.ports[node].len();
    let why = if switch.pfc.enabled {
        format!(
            "switch {name:?} reserves PFC headroom and {} per port on its {ports} ports and needs room for one \
             {wire} B packet besides",
            format_size(switch.pfc.reserve)
        )
    } else {
        format!("without PFC a switch needs room for one {wire} B packet in each of its {} queues", switch.queues)
    };
    let message = format!("{} is too small: {why}, at least {}", format_size(switch.buffer), format_size(need));
    Err(s.error_at("switch.buffer", message))
}

/// The smallest buffer switch `node` can work with (see [`check_buffer`]).
fn buffer_need(switch: &SwitchConfig, topology: &Topology, node: usize, wire: u64) -> u64 {
    if !switch.pfc.enabled {
        return switch.queues as u64 * wire;
    }
    let ports = &topology.ports[node];
    let headroom: u64 = ports.iter().map(|p| switch.pfc.headroom_for(p.rate, p.delay, wire)).sum();
    headroom + switch.pfc.reserve * ports.len() as u64 + wire
}

/// Refuses a `host.rto_min` below the shortest possible round trip: two links out and two back (hosts
/// attach to switches) at the shortest link delay, plus one data packet and one ACK at the fastest rate.
/// Every packet would time out before its ACK could return, and no flow would ever finish.
pub(crate) fn check_rto(s: &Scenario, topology: &Topology) -> Result<(), ScenarioError> {
    let floor = shortest_round_trip(s, topology);
    if s.host.rto_min >= floor {
        return Ok(());
    }
    Err(s.error_at(
        "host.rto_min",
        format!(
            "{} is shorter than the shortest round trip of the topology ({}): every packet would time out before \
             its ACK could return",
            format_duration(s.host.rto_min),
            format_duration(floor)
        ),
    ))
}

fn shortest_round_trip(s: &Scenario, topology: &Topology) -> Time {
    let delay = topology.links.iter().map(|l| l.delay).min().unwrap_or(0);
    let rate = topology.links.iter().map(|l| l.rate).max().unwrap_or(1).max(1);
    let data = serialization_ps((s.link.mtu + s.link.header_bytes) as u64, rate);
    let ack = serialization_ps(s.link.control_bytes as u64, rate);
    4 * delay + data + ack
}
