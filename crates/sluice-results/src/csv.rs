//! The CSV output files, written to any [`Write`].
//!
//! Formats are fixed so that files are byte-identical for identical input:
//! - times are nanoseconds with exactly three decimals, which is exact for picosecond times
//!   (`1234567` ps is `1234.567`);
//! - derived floats (slowdown, Gbps, average bytes) have exactly six decimals;
//! - trace values are written in the shortest form that reads back to the same `f64`;
//! - a missing value is an empty field;
//! - text fields are quoted (RFC 4180) only when they contain a comma, quote or line break;
//! - lines end with `\n`, and rows keep the order of the input.

use std::fmt;
use std::io::{self, Write};

use sluice_core::Time;

use crate::records::{FlowRecord, FlowTrace, PacketTrace, PortRecord, SwitchRecord, ThroughputSeries};
use crate::stats::round6;

/// Header of `fct.csv`.
pub const FCT_HEADER: &str =
    "id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,ideal_fct_ns,slowdown,retransmitted_bytes,group";
/// Header of `queues.csv`.
pub const QUEUES_HEADER: &str =
    "kind,node,port,peer,rate_bps,tx_bytes,max_bytes,avg_bytes,drops,dropped_bytes,ecn_marks,pfc_pauses_sent,pfc_paused_ns,data_drops,control_drops";
/// Header of `throughput.csv`.
pub const THROUGHPUT_HEADER: &str = "label,time_ns,bytes,gbps,interval_ns,bytes_kind,queue_bytes";
/// Header of `trace.csv`.
pub const TRACE_HEADER: &str = "time_ns,flow,variable,value";
/// Header of `packets.csv`.
pub const PACKETS_HEADER: &str = "time_ns,event,port,queue,flow,kind,seq,payload_bytes,wire_bytes,ecn,queue_bytes";

/// A picosecond time written as nanoseconds with three decimals.
struct Ns(Time);

impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// An optional value: empty when `None`.
struct Opt<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(value) => value.fmt(f),
            None => Ok(()),
        }
    }
}

/// A float with six decimals; values that round to zero are written as `0.000000`, never `-0.000000`.
struct Fixed(f64);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}", round6(self.0))
    }
}

/// A text field, quoted when needed.
struct Text<'a>(&'a str);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.contains([',', '"', '\n', '\r']) {
            write!(f, "\"{}\"", self.0.replace('"', "\"\""))
        } else {
            f.write_str(self.0)
        }
    }
}

/// Writes `fct.csv`: one row per flow, long-lived flows included (they can be told apart by `group`).
///
/// Columns: [`FCT_HEADER`]. `finish_ns`, `fct_ns` and `slowdown` are empty for an unfinished flow;
/// `slowdown` is `max(1, fct / ideal_fct)` with six decimals. A long-lived flow has no size, so its
/// `ideal_fct_ns` and `slowdown` are empty.
pub fn write_fct_csv<W: Write + ?Sized>(out: &mut W, flows: &[FlowRecord]) -> io::Result<()> {
    writeln!(out, "{FCT_HEADER}")?;
    for f in flows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{}",
            f.id,
            f.src,
            f.dst,
            f.size,
            Ns(f.start),
            Opt(f.finish.map(Ns)),
            Opt(f.fct().map(Ns)),
            Opt((!f.long_lived).then_some(Ns(f.ideal_fct))),
            Opt(f.slowdown().filter(|_| !f.long_lived).map(Fixed)),
            f.retransmitted_bytes,
            f.group
        )?;
    }
    Ok(())
}

/// Writes `queues.csv`: one `port` row per port, then one `switch` row per switch.
///
/// Columns: [`QUEUES_HEADER`]. For a port, `max_bytes`/`avg_bytes` are its queue length; for a switch
/// they are its total buffer occupancy and the port-only columns are empty. `drops` counts every dropped
/// packet; `data_drops` and `control_drops` split it into data and control packets (ACKs, tokens, ...).
pub fn write_queues_csv<W: Write + ?Sized>(
    out: &mut W,
    ports: &[PortRecord],
    switches: &[SwitchRecord],
) -> io::Result<()> {
    writeln!(out, "{QUEUES_HEADER}")?;
    for p in ports {
        writeln!(
            out,
            "port,{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            Text(&p.node),
            p.port,
            Text(&p.peer),
            p.rate,
            p.tx_bytes,
            p.max_queue,
            Fixed(p.avg_queue),
            p.drops,
            p.dropped_bytes,
            p.ecn_marks,
            p.pfc_pauses_sent,
            Ns(p.pfc_paused_time),
            p.data_drops,
            p.drops.saturating_sub(p.data_drops)
        )?;
    }
    for s in switches {
        writeln!(out, "switch,{},,,,,{},{},,,,,,,", Text(&s.node), s.max_buffer, Fixed(s.avg_buffer))?;
    }
    Ok(())
}

/// Writes `throughput.csv`: one row per sample of every series, series in order.
///
/// Columns: [`THROUGHPUT_HEADER`]; `time_ns` is the end of the interval, `interval_ns` its real length
/// (the last one ends with the run and may be shorter), `gbps` is `bytes * 8 / interval_ns` (empty for
/// an empty interval), `bytes_kind` says which bytes are counted (`payload` or `wire`) and `queue_bytes`
/// is a port's queue at the end of the interval (empty for a flow).
pub fn write_throughput_csv<W: Write + ?Sized>(out: &mut W, series: &[ThroughputSeries]) -> io::Result<()> {
    writeln!(out, "{THROUGHPUT_HEADER}")?;
    for s in series {
        let label = Text(&s.label);
        let kind = s.kind.name();
        for (i, (time, length, bytes)) in s.intervals().enumerate() {
            let gbps = (length > 0).then(|| Fixed(bytes as f64 * 8000.0 / length as f64));
            let queue = Opt(s.queue_bytes.get(i));
            writeln!(out, "{label},{},{bytes},{},{},{kind},{queue}", Ns(time), Opt(gbps), Ns(length))?;
        }
    }
    Ok(())
}

/// A traced `u64` variable that is unset (`u64::MAX`), as traces carry it.
const UNSET: f64 = u64::MAX as f64;

/// Writes `trace.csv` in long form: one row per (time, flow, variable).
///
/// Columns: [`TRACE_HEADER`]. The long form holds flows whose algorithms trace different variables in
/// one file. Rows are grouped by flow in input order, then by time, then by variable in the flow's
/// column order; values use the shortest text that reads back to the same `f64`. A value of `u64::MAX`
/// is how algorithms say "unset" (an `ssthresh` before the first loss): it is written as an empty field.
pub fn write_trace_csv<W: Write + ?Sized>(out: &mut W, traces: &[FlowTrace]) -> io::Result<()> {
    writeln!(out, "{TRACE_HEADER}")?;
    for trace in traces {
        for row in trace.rows() {
            for (name, value) in trace.names().iter().zip(row.values) {
                write_trace_row(out, row.time, trace.flow(), name, *value)?;
            }
        }
    }
    Ok(())
}

/// Writes one row of `trace.csv` (columns [`TRACE_HEADER`]): what a streaming trace writer writes as its
/// records come, in the format of [`write_trace_csv`].
pub fn write_trace_row<W: Write + ?Sized>(
    out: &mut W,
    time: Time,
    flow: u64,
    name: &str,
    value: f64,
) -> io::Result<()> {
    let value = (value != UNSET).then_some(value);
    writeln!(out, "{},{},{},{}", Ns(time), flow, Text(name), Opt(value))
}

/// Writes `packets.csv`: one row per traced event, in time order; a PFC event leaves the packet's
/// columns empty.
pub fn write_packets_csv<W: Write + ?Sized>(out: &mut W, trace: &PacketTrace) -> io::Result<()> {
    writeln!(out, "{PACKETS_HEADER}")?;
    for row in &trace.rows {
        let port = Text(&trace.ports[row.port as usize]);
        write!(out, "{},{},{port},{},", Ns(row.time), row.event.name(), row.queue)?;
        match row.packet {
            Some(p) => write!(out, "{},{},{},{},{},{}", p.flow, p.kind, p.seq, p.payload, p.wire, p.ecn)?,
            None => write!(out, ",,,,,")?,
        }
        writeln!(out, ",{}", row.queue_bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::BytesKind;

    fn csv(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn packets_csv_writes_packet_and_pfc_rows() {
        use crate::records::{PacketEvent, PacketFields, PacketRow, PacketTrace};
        let data = PacketFields { flow: 3, kind: "data", seq: 2000, payload: 1000, wire: 1082, ecn: "ce" };
        let trace = PacketTrace {
            ports: vec!["sw0:p1".into(), "tor,1:p0".into()],
            rows: vec![
                PacketRow {
                    time: 1_500,
                    event: PacketEvent::Mark,
                    port: 0,
                    packet: Some(data),
                    queue_bytes: 4328,
                    queue: 3,
                },
                PacketRow { time: 2_000, event: PacketEvent::Paused, port: 1, packet: None, queue_bytes: 0, queue: 3 },
            ],
            skipped: 0,
        };
        let text = csv(|w| write_packets_csv(w, &trace));
        assert_eq!(
            text,
            format!("{PACKETS_HEADER}\n1.500,mark,sw0:p1,3,3,data,2000,1000,1082,ce,4328\n2.000,paused,\"tor,1:p0\",3,,,,,,,0\n")
        );
        assert!(text.lines().all(|l| l.matches(',').count() >= 10));
    }

    #[test]
    fn fct_csv_of_two_flows() {
        let finished = FlowRecord {
            id: 1,
            src: 0,
            dst: 5,
            size: 10_000,
            delivered: 10_000,
            start: 1_000_500,
            finish: Some(13_346_234),
            ideal_fct: 4_115_245,
            retransmitted_bytes: 0,
            long_lived: false,
            group: 0,
            received: 10_000,
            started: true,
        };
        let unfinished =
            FlowRecord { id: 2, src: 3, dst: 1, finish: None, retransmitted_bytes: 1460, group: 2, ..finished.clone() };
        let text = csv(|out| write_fct_csv(out, &[finished, unfinished]));
        // fct = 12_345_734 ps; slowdown = 12_345_734 / 4_115_245 = 2.99999...
        assert_eq!(
            text,
            "id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,ideal_fct_ns,slowdown,retransmitted_bytes,group\n\
             1,0,5,10000,1000.500,13346.234,12345.734,4115.245,3.000000,0,0\n\
             2,3,1,10000,1000.500,,,4115.245,,1460,2\n"
        );
    }

    #[test]
    fn queues_csv_has_ports_then_switches() {
        let port = PortRecord {
            node: "sw1".into(),
            port: 2,
            peer: "h,3".into(),
            rate: 100_000_000_000,
            tx_bytes: 123_456,
            max_queue: 30_000,
            avg_queue: 1234.5,
            drops: 3,
            data_drops: 1,
            dropped_bytes: 1_000,
            ecn_marks: 7,
            pfc_pauses_sent: 2,
            pfc_paused_time: 5_000_001,
        };
        let switch = SwitchRecord { node: "sw1".into(), max_buffer: 40_000, avg_buffer: 2.25 };
        assert_eq!(
            csv(|out| write_queues_csv(out, &[port], &[switch])),
            format!(
                "{QUEUES_HEADER}\nport,sw1,2,\"h,3\",100000000000,123456,30000,1234.500000,3,1000,7,2,5000.001,1,2\n\
                 switch,sw1,,,,,40000,2.250000,,,,,,,\n"
            )
        );
    }

    #[test]
    fn throughput_csv_converts_to_gbps() {
        let series = ThroughputSeries {
            label: "flow 3".into(),
            kind: BytesKind::Payload,
            interval: 1_000_000,
            samples: vec![(1_000_000, 12_500), (2_000_000, 0), (2_250_000, 3_125)],
            queue_bytes: Vec::new(),
        };
        let port = ThroughputSeries {
            label: "sw1:p0".into(),
            kind: BytesKind::Wire,
            interval: 5,
            samples: vec![(0, 1)],
            queue_bytes: vec![4_096],
        };
        assert_eq!(
            csv(|out| write_throughput_csv(out, &[series, port])),
            "label,time_ns,bytes,gbps,interval_ns,bytes_kind,queue_bytes\n\
             flow 3,1000.000,12500,100.000000,1000.000,payload,\n\
             flow 3,2000.000,0,0.000000,1000.000,payload,\n\
             flow 3,2250.000,3125,100.000000,250.000,payload,\n\
             sw1:p0,0.000,1,,0.000,wire,4096\n"
        );
    }

    #[test]
    fn trace_csv_leaves_unset_values_empty() {
        let mut trace = FlowTrace::new(2, vec!["cwnd", "ssthresh"]);
        trace.push(1_000, &[14600.0, u64::MAX as f64]);
        trace.push(2_000, &[7300.0, 7300.0]);
        assert_eq!(
            csv(|out| write_trace_csv(out, &[trace])),
            "time_ns,flow,variable,value\n1.000,2,cwnd,14600\n1.000,2,ssthresh,\n2.000,2,cwnd,7300\n2.000,2,ssthresh,7300\n"
        );
    }

    #[test]
    fn trace_csv_is_long_form() {
        let mut trace = FlowTrace::new(4, vec!["cwnd", "alpha"]);
        trace.push(1_500, &[14600.0, 0.0625]);
        trace.push(3_000, &[7300.0, 0.1]);
        assert_eq!(
            csv(|out| write_trace_csv(out, &[trace])),
            "time_ns,flow,variable,value\n1.500,4,cwnd,14600\n1.500,4,alpha,0.0625\n3.000,4,cwnd,7300\n3.000,4,alpha,0.1\n"
        );
    }
}
