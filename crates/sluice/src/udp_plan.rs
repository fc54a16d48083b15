//! The flows one `sluice udp send` runs: all at once to one receiver (`--to`, `--flows`, `--size`), or
//! from a flow list (`--flow-list`), which is how `sluice bed run --datapath udp` hands each host the
//! flows a scenario gives it.
//!
//! A flow list is CSV with the header `id,src,dst,to,size_bytes,start_ns,stop_ns,ideal_fct_ns,group`:
//! the flow id (unique), the sending and receiving host indices (for fct.csv), the receiver's
//! `ADDRESS:PORT`, the bytes to deliver (empty for a stream), when it starts and (streams only) stops
//! after the sender starts, in nanoseconds, its ideal completion time (empty: the sender's own
//! estimate), and its workload group.

use std::net::SocketAddrV4;
use std::path::Path;

use sluice_core::{serialization_ps, Time, PS_PER_NS};
use sluice_scenario::Resolved;

/// Header of a flow list.
pub const FLOW_LIST_HEADER: &str = "id,src,dst,to,size_bytes,start_ns,stop_ns,ideal_fct_ns,group";

/// One flow to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// Flow id.
    pub id: u32,
    /// Sending host index.
    pub src: u32,
    /// Receiving host index.
    pub dst: u32,
    /// The receiver.
    pub to: SocketAddrV4,
    /// Bytes to deliver; `None` for a stream.
    pub size: Option<u64>,
    /// Start, picoseconds after the sender starts.
    pub start: Time,
    /// A stream's stop, picoseconds after the sender starts.
    pub stop: Option<Time>,
    /// Ideal completion time, when the list gives one.
    pub ideal_fct: Option<Time>,
    /// Workload group.
    pub group: u16,
}

impl Planned {
    /// A line of a flow list.
    pub fn csv_line(&self) -> String {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        format!(
            "{},{},{},{},{},{},{},{},{}",
            self.id,
            self.src,
            self.dst,
            self.to,
            opt(self.size),
            self.start / PS_PER_NS,
            opt(self.stop.map(|t| t / PS_PER_NS)),
            opt(self.ideal_fct.map(|t| t / PS_PER_NS)),
            self.group
        )
    }
}

/// The path's unloaded round trip from host `src` to host `dst` for a full packet of `framing` (payload,
/// bytes beyond it on the wire): propagation both ways and the packet's serialisation on every link (the
/// simulator's base RTT, less the ACK's serialisation).
pub fn path_round_trip(resolved: &Resolved, src: u32, dst: u32, framing: (u64, u64)) -> Time {
    let (payload, per_packet) = framing;
    let path = resolved.topology.path_profile(&resolved.routes, src, dst);
    let per_hop: Time = path.link_rates.iter().map(|r| serialization_ps(payload + per_packet, *r)).sum();
    2 * path.prop_delay + per_hop
}

/// The simulator's ideal completion time (HPCC artifact definition) of `size` bytes from `src` to `dst`
/// with a datapath's `framing`: the path's unloaded round trip for a full packet plus the flow's wire
/// bytes at the bottleneck rate.
pub fn path_ideal_fct(resolved: &Resolved, src: u32, dst: u32, size: u64, framing: (u64, u64)) -> Time {
    let (payload, per_packet) = framing;
    let path = resolved.topology.path_profile(&resolved.routes, src, dst);
    let wire = size + size.div_ceil(payload) * per_packet;
    sluice_results::ideal_fct(path_round_trip(resolved, src, dst, framing), wire, path.bottleneck)
}

/// The scenario's flows as a datapath runs them: each flow to the address `to` gives its receiving host,
/// sized flows with their ideal completion time under `framing`, streams with their stop.
pub fn scenario_flows(resolved: &Resolved, framing: (u64, u64), to: impl Fn(u32) -> SocketAddrV4) -> Vec<Planned> {
    (resolved.flows.iter().enumerate())
        .map(|(id, f)| {
            let size = (f.size != sluice_workload::UNBOUNDED_SIZE).then_some(f.size.max(1));
            Planned {
                id: id as u32,
                src: f.src,
                dst: f.dst,
                to: to(f.dst),
                size,
                start: f.start,
                stop: f.stop.filter(|_| size.is_none()),
                ideal_fct: size.map(|s| path_ideal_fct(resolved, f.src, f.dst, s, framing)),
                group: f.group,
            }
        })
        .collect()
}

/// `flows` flows of `size` bytes (`None`: streams) to `to`, all starting at once.
pub fn all_at_once(flows: u32, to: SocketAddrV4, size: Option<u64>) -> Vec<Planned> {
    (0..flows)
        .map(|id| Planned { id, src: 0, dst: 1, to, size, start: 0, stop: None, ideal_fct: None, group: 0 })
        .collect()
}

/// Reads a flow list; every error names the file and line.
pub fn read_flow_list(path: &Path) -> Result<Vec<Planned>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_flow_list(&text).map_err(|(line, e)| format!("{}:{line}: {e}", path.display()))
}

/// Parses a flow list; an error gives its line (1-based) and what is wrong.
pub fn parse_flow_list(text: &str) -> Result<Vec<Planned>, (usize, String)> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, header)) if header.trim() == FLOW_LIST_HEADER => {}
        _ => return Err((1, format!("expected the header `{FLOW_LIST_HEADER}`"))),
    }
    let mut flows: Vec<Planned> = Vec::new();
    for (k, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let flow = parse_line(line).map_err(|e| (k + 1, e))?;
        if flows.iter().any(|f| f.id == flow.id) {
            return Err((k + 1, format!("flow id {} appears twice", flow.id)));
        }
        flows.push(flow);
    }
    if flows.is_empty() {
        return Err((1, "no flows".into()));
    }
    Ok(flows)
}

fn parse_line(line: &str) -> Result<Planned, String> {
    let cols: Vec<&str> = line.split(',').map(str::trim).collect();
    if cols.len() != 9 {
        return Err(format!("expected 9 columns, found {}", cols.len()));
    }
    let int = |k: usize, name: &str| {
        cols[k].parse::<u64>().map_err(|_| format!("{name} {:?} is not a whole number", cols[k]))
    };
    let opt = |k: usize, name: &str| if cols[k].is_empty() { Ok(None) } else { int(k, name).map(Some) };
    let small = |k: usize, name: &str| {
        int(k, name).and_then(|v| u32::try_from(v).map_err(|_| format!("{name} {v} is too large")))
    };
    let to = cols[3].parse().map_err(|_| format!("to {:?} is not an IPv4 ADDRESS:PORT", cols[3]))?;
    let size = opt(4, "size_bytes")?;
    if size == Some(0) {
        return Err("size_bytes must be positive (leave it empty for a stream)".into());
    }
    let stop = opt(6, "stop_ns")?.map(|ns| ns * PS_PER_NS);
    if size.is_some() && stop.is_some() {
        return Err("a flow has a size or a stop time, not both".into());
    }
    let start = int(5, "start_ns")? * PS_PER_NS;
    if stop.is_some_and(|s| s <= start) {
        return Err("stop_ns must come after start_ns".into());
    }
    let group = u16::try_from(int(8, "group")?).map_err(|_| "group is too large".to_string())?;
    Ok(Planned {
        id: small(0, "id")?,
        src: small(1, "src")?,
        dst: small(2, "dst")?,
        to,
        size,
        start,
        stop,
        ideal_fct: opt(7, "ideal_fct_ns")?.map(|ns| ns * PS_PER_NS),
        group,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_round_trips_through_its_csv_lines() {
        let to = "10.77.0.3:5300".parse().unwrap();
        let flows = vec![
            Planned {
                id: 4,
                src: 0,
                dst: 2,
                to,
                size: Some(1000),
                start: 5_000,
                stop: None,
                ideal_fct: Some(7_000),
                group: 1,
            },
            Planned {
                id: 9,
                src: 0,
                dst: 2,
                to,
                size: None,
                start: 0,
                stop: Some(2_000_000),
                ideal_fct: None,
                group: 0,
            },
        ];
        let text: String = std::iter::once(FLOW_LIST_HEADER.to_string())
            .chain(flows.iter().map(Planned::csv_line))
            .map(|l| l + "\n")
            .collect();
        assert_eq!(parse_flow_list(&text), Ok(flows));
    }

    #[test]
    fn bad_lines_are_located() {
        let head = format!("{FLOW_LIST_HEADER}\n");
        let cases = [
            ("1,0,2,10.0.0.1:1,100,0,,,0\n1,0,2,10.0.0.1:1,100,0,,,0", 3, "appears twice"),
            ("1,0,2,nowhere,100,0,,,0", 2, "IPv4"),
            ("1,0,2,10.0.0.1:1,0,0,,,0", 2, "positive"),
            ("1,0,2,10.0.0.1:1,100,0,50,,0", 2, "not both"),
            ("1,0,2,10.0.0.1:1,,10,5,,0", 2, "after"),
            ("1,0,2,10.0.0.1:1,100", 2, "9 columns"),
        ];
        for (body, line, words) in cases {
            let (at, e) = parse_flow_list(&(head.clone() + body)).unwrap_err();
            assert_eq!(at, line, "{body}: {e}");
            assert!(e.contains(words), "{body}: {e}");
        }
        assert_eq!(parse_flow_list("id,to\n").unwrap_err().0, 1);
    }
}
