//! A fabric's configuration from a resolved sluice scenario: `[topology]`, `[switch]`, `[switch.ecn]`,
//! `seed`, the port sampling of `[output]`, `[[fault]]` (as impairments of sluice UDP flows) and the
//! switch side of `[cc]`'s algorithm when it has a per-hop signal (built from its parameters). Every
//! network setting the fabric cannot honour is an error naming its key; none is ignored. Host-side settings (`[host]`, `[cc]`, `[[workload]]`,
//! `[plane]`, flow outputs) belong to the datapaths the bed's hosts run, not to the switch.

use std::fmt;
use std::sync::Arc;

use sluice_cc::signal::SwitchSignal;
use sluice_core::{format_duration, format_rate, Rate, Time, PS_PER_MS, PS_PER_US};
use sluice_scenario::Resolved;
use sluice_sim::config::{FaultAction, FaultKind, Scheduler};
use sluice_topo::TopologySpec;

use sluice_wire::frame::FiveTuple;
use sluice_wire::ipv4::PROTO_UDP;

use crate::config::{
    FabricConfig, HostAddr, ImpairAction, Impairment, Pick, Sampling, SwitchParams, DEFAULT_SLOTS, IP_MTU,
    WIRE_OVERHEAD,
};
use crate::tokens::TokenLimits;

/// Shortest link delay the fabric emulates: 10 us. A veth and the kernel's receive path take several
/// microseconds themselves, so a shorter configured delay would not be what the hosts see.
pub const MIN_DELAY: Time = 10 * PS_PER_US;
/// Longest link delay: 10 ms (the delay lines hold every packet in flight; at 1 Gbit/s a 10 ms link
/// holds 1.25 MB).
pub const MAX_DELAY: Time = 10 * PS_PER_MS;
/// Fastest link: 1 Gbit/s, the highest rate the switch delivered within 2% of exact with full-size
/// frames on the reference 2-core machine while two hosts flooded it (BENCHMARKS.md, "Software switch";
/// two runs of three), against at most 68% at 2 Gbit/s. It forwards at most about 160,000 frames/s.
pub const MAX_RATE: Rate = 1_000_000_000;
/// Most hosts: 64 (a namespace and a veth pair each).
pub const MAX_HOSTS: u32 = 64;

/// A scenario setting the fabric cannot honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The scenario key, as written in scenario files (`switch.pfc.enabled`).
    pub key: String,
    /// Why, and what would work.
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.reason)
    }
}

impl std::error::Error for Unsupported {}

fn unsupported(key: &str, reason: impl Into<String>) -> Unsupported {
    Unsupported { key: key.to_string(), reason: reason.into() }
}

/// The fabric configuration of `resolved`, or the first setting it cannot honour.
pub fn fabric_config(resolved: &Resolved) -> Result<FabricConfig, Unsupported> {
    let scenario = &resolved.scenario;
    check_topology(resolved)?;
    let sw = &scenario.switch;
    if sw.pfc.enabled {
        return Err(unsupported(
            "switch.pfc.enabled",
            "the software switch is lossy (no PFC pause frames toward kernel hosts); set it to false",
        ));
    }
    if let Scheduler::Dwrr { .. } = sw.scheduler {
        return Err(unsupported("switch.scheduler", "the software switch schedules by strict priority only"));
    }
    if sw.bolt.enabled {
        return Err(unsupported("switch.bolt.enabled", "Bolt's switch logic is not in the software switch"));
    }
    if resolved.packet_trace.is_some() {
        return Err(unsupported("output.packet_trace", "the software switch writes no packet trace"));
    }
    let hosts = (0..resolved.topology.num_hosts()).map(HostAddr::numbered).collect();
    Ok(FabricConfig {
        topology: resolved.topology.clone(),
        routes: resolved.routes.clone(),
        hosts,
        switch: SwitchParams {
            buffer: sw.buffer,
            dt_alpha: sw.dt_alpha,
            queues: sw.queues,
            data_queue: sw.data_queue,
            control_queue: sw.control_queue,
            ecn: sw.ecn.clone(),
            int: sw.int,
            load_balance: sw.load_balance,
            wire_overhead: WIRE_OVERHEAD,
            ip_mtu: IP_MTU,
            token_limiter: token_limits(resolved)?,
        },
        impairments: impairments(resolved)?,
        sampling: Sampling { interval: scenario.output.sample_interval, ports: resolved.throughput_ports.clone() },
        seed: scenario.seed,
        slots: DEFAULT_SLOTS,
        signal: switch_signal(resolved)?,
    })
}

/// The switch side of the run's per-hop signal: built by the factory of the algorithm that has one
/// (`[cc]`'s or one of a mix's), from that algorithm's parameters. Two algorithms with signals in one
/// run are refused, as one switch port runs one design.
fn switch_signal(resolved: &Resolved) -> Result<Option<Arc<dyn SwitchSignal>>, Unsupported> {
    let main = std::iter::once((resolved.algorithm.name, &resolved.factory));
    let others = resolved.mix.iter().flat_map(|m| m.others.iter().map(|(a, f)| (a.name, f)));
    let mut signals = main.chain(others).filter_map(|(name, f)| f.switch_signal().map(|s| (name, s)));
    let first = signals.next();
    if let (Some((a, _)), Some((b, _))) = (&first, signals.next()) {
        let why = format!("`{a}` and `{b}` both have switch signals; a switch port runs one design");
        return Err(unsupported("cc.workloads", why));
    }
    Ok(first.map(|(_, s)| s))
}

/// The `[[fault]]` entries as impairments of the sluice UDP flows they name: the chosen data packets of
/// a flow, dropped or marked where they leave the last switch toward the flow's receiver, counted as
/// the simulator counts them. A random fraction of a port's packets, a link going down, or a fault at
/// any other port than the flow's last hop is an error naming the entry.
fn impairments(resolved: &Resolved) -> Result<Vec<Impairment>, Unsupported> {
    let topo = &resolved.topology;
    let mut rules = Vec::with_capacity(resolved.faults.len());
    let named: Vec<usize> = (resolved.faults.iter())
        .map(|f| match f.kind {
            FaultKind::Packets { flow, .. } => flow as usize,
            _ => 0,
        })
        .collect();
    let specs = resolved.flows.select(&named);
    for (index, fault) in resolved.faults.iter().enumerate() {
        let FaultKind::Packets { flow, packets, action } = &fault.kind else {
            let why = "the software switch drops or marks chosen packets of a flow (`flow`, `packets`); random \
                       fractions of a port and links going down run in the simulator";
            return Err(unsupported(&format!("fault.{index}"), why));
        };
        let spec = specs[index].expect("a fault's flow exists (the scenario's resolution checks it)");
        let peer = topo.ports[fault.node as usize][fault.port as usize].peer;
        if topo.host_of[peer as usize] != Some(spec.dst) {
            let why = "the software switch acts on a flow's packets where they leave the last switch toward \
                       its receiver; leave `port` out";
            return Err(unsupported(&format!("fault.{index}.port"), why));
        }
        let (src, dst) = (HostAddr::numbered(spec.src).ip, HostAddr::numbered(spec.dst).ip);
        rules.push(Impairment {
            flow: FiveTuple { src, dst, protocol: PROTO_UDP, src_port: 0, dst_port: 0 },
            sluice_flow: Some(*flow),
            action: match action {
                FaultAction::Drop => ImpairAction::Drop,
                FaultAction::Mark => ImpairAction::Mark,
            },
            pick: Pick::Packets(packets.clone()),
        });
    }
    Ok(rules)
}

/// Ethernet, IPv4, UDP and sluice header bytes of a sluice datagram's frame.
const SLUICE_FRAME_HEADERS: u64 = 14 + 20 + 8 + sluice_wire::sluice::HEADER_LEN as u64;

/// The token limiters a receiver-driven algorithm relies on, or the first of its switch-side design
/// points the software switch does not provide (token limiters and token ECN it does).
fn token_limits(resolved: &Resolved) -> Result<Option<TokenLimits>, Unsupported> {
    let Some(t) = resolved.factory.token_transport() else { return Ok(None) };
    let name = resolved.algorithm.name;
    let missing = [
        (t.trimming, "trimming", "the software switch does not trim payloads (NDP)"),
        (t.aeolus, "aeolus", "the software switch does not drop unscheduled packets selectively (Aeolus)"),
        (t.priorities, "priorities", "the software switch does not map Homa's grant priorities to its queues"),
        (t.spray, "spray", "the software switch's paths are chosen per flow (`[switch] load_balance`), not per packet by the transport"),
    ];
    if let Some((_, key, why)) = missing.iter().find(|(on, _, _)| *on) {
        return Err(unsupported(&format!("cc.{name}.{key}"), format!("{why}; set it to false")));
    }
    if !t.token_limiter {
        return Ok(None);
    }
    let mss = IP_MTU as u64 - 28 - sluice_wire::sluice::HEADER_LEN as u64;
    let packets = t.token_bytes(mss as u32).div_ceil(mss);
    Ok(Some(TokenLimits {
        capacity: t.limiter_capacity,
        token_wire: SLUICE_FRAME_HEADERS + WIRE_OVERHEAD as u64,
        data_wire: packets * (mss + SLUICE_FRAME_HEADERS + WIRE_OVERHEAD as u64),
        ecn: t.token_ecn.then_some((t.token_kmin, t.token_kmax, t.token_pmax)),
    }))
}

/// The key of `spec` that sets the rate of a host link (`host`) or of a switch-to-switch link.
fn rate_key(spec: &TopologySpec, host: bool) -> &'static str {
    match (spec, host) {
        (TopologySpec::Star { .. }, _) => "topology.rate",
        (TopologySpec::Dumbbell { .. }, true) => "topology.host_rate",
        (TopologySpec::Dumbbell { .. }, false) => "topology.bottleneck_rate",
        (TopologySpec::LeafSpine { .. }, true) => "topology.host_rate",
        (TopologySpec::LeafSpine { .. }, false) => "topology.uplink_rate",
        (TopologySpec::FatTree { .. }, true) => "topology.host_rate",
        (TopologySpec::FatTree { .. }, false) => "topology.tor_agg_rate",
        (TopologySpec::File { .. }, _) => "topology.path",
    }
}

fn check_topology(resolved: &Resolved) -> Result<(), Unsupported> {
    let spec = &resolved.scenario.topology;
    let topo = &resolved.topology;
    if topo.num_hosts() > MAX_HOSTS {
        return Err(unsupported(
            "topology",
            format!("{} hosts; the bed makes a namespace per host and takes at most {MAX_HOSTS}", topo.num_hosts()),
        ));
    }
    for link in &topo.links {
        let host = topo.host_of[link.a as usize].is_some() || topo.host_of[link.b as usize].is_some();
        let delay_key = if matches!(spec, TopologySpec::File { .. }) { "topology.path" } else { "topology.delay" };
        if !(MIN_DELAY..=MAX_DELAY).contains(&link.delay) {
            return Err(unsupported(
                delay_key,
                format!(
                    "a link delay of {} is outside what the software switch emulates ({} to {})",
                    format_duration(link.delay),
                    format_duration(MIN_DELAY),
                    format_duration(MAX_DELAY)
                ),
            ));
        }
        if link.rate > MAX_RATE {
            return Err(unsupported(
                rate_key(spec, host),
                format!(
                    "a link rate of {} is above the {} the software switch shapes exactly",
                    format_rate(link.rate),
                    format_rate(MAX_RATE)
                ),
            ));
        }
    }
    Ok(())
}
