//! `[[fault]]`: faults injected at switch ports, as the scenario writes them, their checks and their
//! resolution against the topology and the flows (the simulator's side is `sluice_sim::fault`).
//!
//! ```toml
//! [[fault]]                 # drop chosen data packets of one flow (0 is its first packet)
//! kind = "drop"
//! flow = 0
//! packets = [300, 1800]
//! port = "sw0:p1"           # optional: default the switch port into the flow's destination
//!
//! [[fault]]                 # CE-mark a random 1% of what a port sends, for a while
//! kind = "mark"
//! port = "tor0:p2"
//! fraction = 0.01
//! from = "1ms"              # optional, default 0
//! until = "2ms"             # optional, default the end of the run
//!
//! [[fault]]                 # take a link down and up again
//! kind = "link_down"
//! port = "agg0:p3"
//! from = "500us"
//! until = "700us"
//! ```

use serde::{Deserialize, Serialize};
use sluice_core::serde_units::opt_duration;
use sluice_core::{Time, MAX_TIME};
use sluice_sim::config::{FaultAction, FaultConfig, FaultKind};
use sluice_topo::Topology;

use crate::schema::PortRef;

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultWhat {
    /// Drop the packets picked.
    Drop,
    /// Set CE on the packets picked (ECN-capable ones only).
    Mark,
    /// Take the port's link down from `from` to `until`.
    LinkDown,
}

/// One `[[fault]]` entry. A `drop` or `mark` picks packets either by `flow` and `packets` or by a random
/// `fraction` of what `port` sends; `link_down` takes the link of `port` down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// `"drop"`, `"mark"` or `"link_down"`.
    pub kind: FaultWhat,
    /// The switch port where the fault acts (`"tor0:p1"`). A flow's packets default to the port into
    /// the flow's destination host, the last hop (Marlin faults the switch's transmission to the
    /// receiver); a fraction or a link needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<PortRef>,
    /// The flow whose data packets are picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<u64>,
    /// Positions among the flow's data packets leaving the port: 0 is the first, and a retransmission
    /// counts as another packet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packets: Vec<u64>,
    /// The probability that each packet the port sends is picked, in (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// Start of a fraction's window or of a link's downtime; default 0.
    #[serde(default, with = "opt_duration", skip_serializing_if = "Option::is_none")]
    pub from: Option<Time>,
    /// End of the window or downtime (exclusive); default the end of the run.
    #[serde(default, with = "opt_duration", skip_serializing_if = "Option::is_none")]
    pub until: Option<Time>,
}

/// The dotted key of field `field` of fault `index` (`fault.2.port`; `fault.2` for the entry itself).
pub(crate) fn key(index: usize, field: &str) -> String {
    if field.is_empty() {
        format!("fault.{index}")
    } else {
        format!("fault.{index}.{field}")
    }
}

/// A failed check: the key at fault (below `fault.N`) and what is wrong.
type Problem = (String, String);

fn problem(key: &str, message: impl Into<String>) -> Problem {
    (key.to_string(), message.into())
}

impl FaultSpec {
    /// Checks what needs neither the topology nor the flows: the fields each kind takes, the fraction,
    /// the positions and the times.
    pub(crate) fn check(&self) -> Result<(), Problem> {
        let by_flow = self.flow.is_some() || !self.packets.is_empty();
        match self.kind {
            FaultWhat::LinkDown => {
                if let Some(key) = [("flow", self.flow.is_some()), ("packets", !self.packets.is_empty())]
                    .into_iter()
                    .chain([("fraction", self.fraction.is_some())])
                    .find_map(|(key, set)| set.then_some(key))
                {
                    return Err(problem(key, "a link_down fault takes only port, from and until"));
                }
                if self.port.is_none() {
                    return Err(problem("port", "a link_down fault needs the port whose link goes down"));
                }
            }
            FaultWhat::Drop | FaultWhat::Mark if by_flow && self.fraction.is_some() => {
                return Err(problem("fraction", "pick packets either by flow and packets or by fraction, not both"));
            }
            FaultWhat::Drop | FaultWhat::Mark if by_flow => self.check_flow_packets()?,
            FaultWhat::Drop | FaultWhat::Mark => self.check_fraction()?,
        }
        self.check_times()
    }

    fn check_flow_packets(&self) -> Result<(), Problem> {
        if self.flow.is_none() {
            return Err(problem("flow", "packets are positions in one flow: name it with flow = ID"));
        }
        if self.packets.is_empty() {
            return Err(problem(
                "packets",
                "list the flow's packets to pick, e.g. packets = [100, 400] (0 is the first)",
            ));
        }
        if self.from.is_some() || self.until.is_some() {
            let key = if self.from.is_some() { "from" } else { "until" };
            return Err(problem(key, "a flow's packets are picked by position, not by time: leave out from and until"));
        }
        Ok(())
    }

    fn check_fraction(&self) -> Result<(), Problem> {
        let Some(fraction) = self.fraction else {
            return Err(problem("", "a drop or mark fault picks packets by flow and packets, or by fraction"));
        };
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(problem("fraction", format!("fraction {fraction} is outside (0, 1]")));
        }
        if self.port.is_none() {
            return Err(problem("port", "a fraction applies to what one switch port sends: give port = \"NODE:pN\""));
        }
        Ok(())
    }

    fn check_times(&self) -> Result<(), Problem> {
        for (key, time) in [("from", self.from), ("until", self.until)] {
            if time.is_some_and(|t| t > MAX_TIME) {
                return Err(problem(key, "is beyond the simulator's time range"));
            }
        }
        if let (Some(from), Some(until)) = (self.from, self.until) {
            if until <= from {
                return Err(problem("until", "must be later than from"));
            }
        }
        Ok(())
    }

    /// The fault with its port resolved (a flow fault's default port filled in) against `topology`, for
    /// a run of `flows` flows whose destination hosts `dst_of` gives.
    pub(crate) fn resolve(
        &self,
        topology: &Topology,
        flows: usize,
        dst_of: impl Fn(usize) -> u32,
    ) -> Result<(FaultSpec, FaultConfig), Problem> {
        if let Some(flow) = self.flow {
            if flow >= flows as u64 {
                return Err(problem(
                    "flow",
                    format!(
                        "there is no flow {flow}: the workloads give {flows} flows (ids 0 to {})",
                        flows.saturating_sub(1)
                    ),
                ));
            }
        }
        let (node, port) = match (&self.port, self.flow) {
            (Some(port), _) => switch_port(topology, port)?,
            (None, Some(flow)) => last_hop(topology, dst_of(flow as usize)),
            (None, None) => return Err(problem("port", "needs a port")),
        };
        let mut filled = self.clone();
        filled.port = Some(PortRef { node: topology.nodes[node as usize].name.clone(), port });
        let action = if self.kind == FaultWhat::Mark { FaultAction::Mark } else { FaultAction::Drop };
        let (from, until) = (self.from.unwrap_or(0), self.until.unwrap_or(Time::MAX));
        let kind = match (self.kind, self.flow, self.fraction) {
            (FaultWhat::LinkDown, _, _) => FaultKind::LinkDown { from, until },
            (_, Some(flow), _) => {
                let mut packets = self.packets.clone();
                packets.sort_unstable();
                packets.dedup();
                FaultKind::Packets { flow: flow as u32, packets, action }
            }
            (_, None, fraction) => FaultKind::Fraction { fraction: fraction.unwrap_or(1.0), action, from, until },
        };
        Ok((filled, FaultConfig { node, port, kind }))
    }
}

/// A named port that must belong to a switch (hosts send through their NIC, which faults do not touch).
fn switch_port(topology: &Topology, port: &PortRef) -> Result<(u32, u16), Problem> {
    crate::resolve::switch_port(topology, port).map_err(|m| problem("port", m))
}

/// The switch port into host `dst` (a host index): the other end of its NIC's link.
fn last_hop(topology: &Topology, dst: u32) -> (u32, u16) {
    let nic = &topology.ports[topology.hosts[dst as usize] as usize][0];
    (nic.peer, nic.peer_port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> FaultSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn each_kind_takes_its_own_fields() {
        let ok = [
            "kind = \"drop\"\nflow = 0\npackets = [3]",
            "kind = \"mark\"\nport = \"sw0:p1\"\nfraction = 0.5",
            "kind = \"link_down\"\nport = \"sw0:p1\"\nfrom = \"1us\"",
        ];
        for text in ok {
            assert_eq!(spec(text).check(), Ok(()), "{text}");
        }
        let bad = [
            ("kind = \"drop\"\nflow = 0", "packets"),
            ("kind = \"drop\"\npackets = [1]", "flow"),
            ("kind = \"drop\"\nflow = 0\npackets = [1]\nfraction = 0.1", "fraction"),
            ("kind = \"drop\"\nflow = 0\npackets = [1]\nfrom = \"1us\"", "from"),
            ("kind = \"drop\"\nport = \"sw0:p1\"\nfraction = 0.0", "fraction"),
            ("kind = \"drop\"\nport = \"sw0:p1\"\nfraction = 1.5", "fraction"),
            ("kind = \"drop\"\nfraction = 0.5", "port"),
            ("kind = \"mark\"", ""),
            ("kind = \"link_down\"\nfrom = \"1us\"", "port"),
            ("kind = \"link_down\"\nport = \"sw0:p1\"\nflow = 1", "flow"),
            ("kind = \"link_down\"\nport = \"sw0:p1\"\nfrom = \"2us\"\nuntil = \"1us\"", "until"),
        ];
        for (text, key) in bad {
            let (at, message) = spec(text).check().unwrap_err();
            assert_eq!(at, key, "{text}: {message}");
            assert!(!message.is_empty());
        }
    }

    #[test]
    fn unknown_keys_and_kinds_are_refused() {
        assert!(toml::from_str::<FaultSpec>("kind = \"drop\"\nflows = 1").is_err());
        assert!(toml::from_str::<FaultSpec>("kind = \"delay\"").is_err());
    }
}
