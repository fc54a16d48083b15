//! Raw records of a finished run, filled by the simulator.
//!
//! All times are [`Time`] (picoseconds since the start of the run), rates are [`Rate`] (bit/s) and sizes
//! are bytes.

use sluice_core::{serialization_ps, Rate, Time};

/// The outcome of one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRecord {
    /// Flow identifier, unique within a run.
    pub id: u64,
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// Flow size in payload bytes, as the workload asked for it.
    pub size: u64,
    /// Payload bytes acknowledged at the sender by the end of the run; equals `size` for a finished flow.
    /// Used for the throughput of long-lived flows.
    pub delivered: u64,
    /// Time the flow started (its first byte became available to send).
    pub start: Time,
    /// Time the last byte was acknowledged at the sender; `None` if the flow had not finished when the
    /// run ended.
    pub finish: Option<Time>,
    /// The flow's ideal completion time on an empty network (see [`ideal_fct`]); must be positive.
    pub ideal_fct: Time,
    /// Payload bytes this flow sent more than once.
    pub retransmitted_bytes: u64,
    /// A long-lived (throughput) flow: excluded from slowdown statistics and reported by throughput.
    pub long_lived: bool,
    /// Workload group the flow belongs to (`0` when the scenario defines a single group).
    pub group: u16,
    /// Payload bytes the receiver took in order, each byte once (its cumulative in-order point): what the
    /// receiving application got. Duplicates and retransmissions do not count.
    pub received: u64,
    /// Whether the flow's start time came before the run ended.
    pub started: bool,
}

impl FlowRecord {
    /// Flow completion time (`finish - start`), or `None` for an unfinished flow.
    pub fn fct(&self) -> Option<Time> {
        self.finish.map(|finish| finish.saturating_sub(self.start))
    }

    /// FCT slowdown `max(1, fct / ideal_fct)`, or `None` for an unfinished flow. See [`slowdown`].
    pub fn slowdown(&self) -> Option<f64> {
        self.fct().map(|fct| slowdown(fct, self.ideal_fct))
    }
}

/// FCT slowdown `max(1, fct / ideal)`. A zero `ideal` is treated as 1 ps so the result stays finite.
pub fn slowdown(fct: Time, ideal: Time) -> f64 {
    (fct as f64 / ideal.max(1) as f64).max(1.0)
}

/// Ideal completion time of a flow on an empty network: `base_rtt + wire_bytes * 8 / bottleneck`.
///
/// `base_rtt` is twice the sum of the propagation delays on the path plus one serialization per hop;
/// `wire_bytes` counts the flow's bytes on the wire (payload plus per-packet headers); `bottleneck` is the
/// slowest link rate on the path. The serialization term is rounded up to whole picoseconds.
pub fn ideal_fct(base_rtt: Time, wire_bytes: u64, bottleneck: Rate) -> Time {
    base_rtt + serialization_ps(wire_bytes, bottleneck.max(1))
}

/// Counters of one egress port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortRecord {
    /// Name of the node owning the port (`"sw12"`, `"h3"`).
    pub node: String,
    /// Port index on that node.
    pub port: u16,
    /// Name of the node at the other end of the link.
    pub peer: String,
    /// Link rate.
    pub rate: Rate,
    /// Bytes transmitted (all packets, headers included).
    pub tx_bytes: u64,
    /// Largest queue length seen, in bytes.
    pub max_queue: u64,
    /// Time-averaged queue length over the run, in bytes.
    pub avg_queue: f64,
    /// Packets dropped at this port, data and control.
    pub drops: u64,
    /// Data packets among `drops`; the others are control packets (ACKs, credits, tokens, ...).
    pub data_drops: u64,
    /// Bytes of the dropped packets.
    pub dropped_bytes: u64,
    /// Packets ECN-marked at this port.
    pub ecn_marks: u64,
    /// PFC pause frames this port's node sent to `peer` on this link.
    pub pfc_pauses_sent: u64,
    /// Total time this port's transmitter was paused by the peer.
    pub pfc_paused_time: Time,
}

impl PortRecord {
    /// The port's short label, `"node:pN"` (`"sw12:p2"`).
    pub fn label(&self) -> String {
        format!("{}:p{}", self.node, self.port)
    }
}

/// Shared-buffer counters of one switch.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchRecord {
    /// Switch name.
    pub node: String,
    /// Largest total buffer occupancy seen, in bytes.
    pub max_buffer: u64,
    /// Time-averaged total buffer occupancy, in bytes.
    pub avg_buffer: f64,
}

/// Which bytes a [`ThroughputSeries`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesKind {
    /// Payload bytes acknowledged to a flow's sender (no headers, no duplicates).
    Payload,
    /// Bytes a port put on the wire: every packet, headers and control packets included.
    Wire,
}

impl BytesKind {
    /// The name written in `throughput.csv`.
    pub fn name(self) -> &'static str {
        match self {
            BytesKind::Payload => "payload",
            BytesKind::Wire => "wire",
        }
    }
}

/// Bytes counted per sampling interval for one flow or port.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputSeries {
    /// What was measured: `"flow 3"` or a port label such as `"sw12:p2"`.
    pub label: String,
    /// Which bytes are counted.
    pub kind: BytesKind,
    /// Length of the sampling intervals (the last one may be shorter: it ends with the run).
    pub interval: Time,
    /// `(time, bytes)` per interval: `time` is the end of the interval, which began at the previous
    /// sample's time (0 for the first), and `bytes` the bytes counted in it.
    pub samples: Vec<(Time, u64)>,
    /// For a port, the bytes waiting in its queues (all priorities) at each sample's time, one per
    /// sample; empty for a flow.
    pub queue_bytes: Vec<u64>,
}

impl ThroughputSeries {
    /// The samples with the real length of each interval: `(end, length, bytes)`.
    pub fn intervals(&self) -> impl Iterator<Item = (Time, Time, u64)> + '_ {
        let starts = std::iter::once(0).chain(self.samples.iter().map(|&(time, _)| time));
        self.samples.iter().zip(starts).map(|(&(end, bytes), start)| (end, end.saturating_sub(start), bytes))
    }
}

/// A congestion-control variable trace of one flow, stored column-compact.
///
/// The variable names are fixed once per flow; every row holds one value per name. Values are kept in a
/// single row-major vector, so a row costs one `Time` plus one `f64` per variable.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowTrace {
    flow: u64,
    names: Vec<&'static str>,
    times: Vec<Time>,
    values: Vec<f64>,
    skipped: u64,
}

/// Default bound of one flow's trace: a million rows, about 100 MB in memory and 50 MB of CSV with
/// four variables. Rows past it are counted, not kept.
pub const DEFAULT_TRACE_ROWS: u64 = 1_000_000;

/// Records one traced flow's CC variables as a run goes, for any datapath: a row at most every
/// `interval`, each holding what the algorithm's `trace` reports.
#[derive(Debug, Clone)]
pub struct TraceRecorder {
    /// Minimum spacing of rows.
    pub interval: Time,
    /// Rows kept at most; later rows are counted in `skipped`.
    pub max_rows: u64,
    /// Rows left out because `max_rows` were kept.
    pub skipped: u64,
    /// Time of the last row.
    pub last: Option<Time>,
    /// Variable names, fixed by the first row.
    pub names: Vec<&'static str>,
    /// `(time, values)` rows.
    pub rows: Vec<(Time, Vec<f64>)>,
}

/// Where a controller's `trace` writes its `(name, value)` pairs.
pub type TraceSink<'a> = dyn FnMut(&'static str, f64) + 'a;

impl TraceRecorder {
    /// A recorder that keeps rows at least `interval` apart, at most [`DEFAULT_TRACE_ROWS`] of them.
    pub fn new(interval: Time) -> TraceRecorder {
        TraceRecorder {
            interval,
            max_rows: DEFAULT_TRACE_ROWS,
            skipped: 0,
            last: None,
            names: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// This recorder, keeping at most `max_rows` rows.
    pub fn with_max_rows(self, max_rows: u64) -> TraceRecorder {
        TraceRecorder { max_rows, ..self }
    }

    /// Records a row at `now` of what `report` reports (it is handed the sink of `(name, value)` pairs),
    /// unless the last row is less than `interval` old or nothing is reported: a sender-side controller
    /// of a token algorithm traces nothing, its receiver-side one does.
    pub fn record(&mut self, now: Time, report: &mut dyn FnMut(&mut TraceSink<'_>)) {
        if self.last.is_some_and(|t| now < t + self.interval) {
            return;
        }
        if self.rows.len() as u64 >= self.max_rows {
            // Spaced as kept rows would be, so that the count says how many rows are missing.
            self.last = Some(now);
            self.skipped += 1;
            return;
        }
        let mut names = Vec::new();
        let mut values = Vec::new();
        report(&mut |name, value| {
            names.push(name);
            values.push(value);
        });
        if values.is_empty() {
            return;
        }
        self.last = Some(now);
        if self.names.is_empty() {
            self.names = names;
        }
        self.rows.push((now, values));
    }

    /// The rows as the trace of flow `flow` (rows whose width differs from the first's are left out).
    pub fn to_trace(&self, flow: u64) -> FlowTrace {
        let mut trace = FlowTrace::new(flow, self.names.clone());
        trace.skipped = self.skipped;
        for (time, values) in &self.rows {
            if values.len() == self.names.len() {
                trace.push(*time, values);
            }
        }
        trace
    }
}

/// One row of a [`FlowTrace`]: the time and one value per variable name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRow<'a> {
    /// Time of the sample.
    pub time: Time,
    /// Values in the order of [`FlowTrace::names`].
    pub values: &'a [f64],
}

impl FlowTrace {
    /// An empty trace of flow `flow` with the given variable names.
    pub fn new(flow: u64, names: Vec<&'static str>) -> FlowTrace {
        FlowTrace { flow, names, times: Vec::new(), values: Vec::new(), skipped: 0 }
    }

    /// Rows the recorder left out because it had kept its most.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Appends a row.
    ///
    /// # Panics
    /// If `values` does not hold exactly one value per variable name.
    pub fn push(&mut self, time: Time, values: &[f64]) {
        assert_eq!(
            values.len(),
            self.names.len(),
            "trace of flow {}: a row needs one value per variable {:?}",
            self.flow,
            self.names
        );
        self.times.push(time);
        self.values.extend_from_slice(values);
    }

    /// The traced flow's id.
    pub fn flow(&self) -> u64 {
        self.flow
    }

    /// The variable names, in column order.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether the trace has no rows.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The rows in the order they were pushed.
    pub fn rows(&self) -> impl Iterator<Item = TraceRow<'_>> + '_ {
        let width = self.names.len();
        self.times
            .iter()
            .enumerate()
            .map(move |(i, &time)| TraceRow { time, values: &self.values[i * width..(i + 1) * width] })
    }
}

/// Run-wide facts and counters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// Seed the run was started with.
    pub seed: u64,
    /// End of simulated time.
    pub sim_time: Time,
    /// Events processed.
    pub events: u64,
    /// Packet transmissions over links (one per packet per hop).
    pub packet_hops: u64,
    /// Wall-clock seconds the run took. Shown on the terminal only, never written to files.
    pub wall_seconds: f64,
    /// Payload bytes sent by all senders, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes of data packets that reached their destination host, duplicates and out-of-order
    /// arrivals a go-back-N receiver discards included; once nothing is in flight,
    /// `bytes_sent == bytes_delivered + bytes_dropped`.
    pub bytes_delivered: u64,
    /// Payload bytes of data packets dropped in switches.
    pub bytes_dropped: u64,
    /// Payload bytes sent more than once.
    pub retransmitted_bytes: u64,
    /// Retransmission timeouts that fired at senders.
    pub timeouts: u64,
    /// PFC pause frames sent.
    pub pfc_pauses: u64,
    /// Total time transmitters spent paused by PFC, summed over ports.
    pub pfc_pause_time: Time,
    /// Packets dropped, data and control.
    pub drops: u64,
    /// Data packets among `drops`.
    pub data_drops: u64,
    /// The run ended at its time limit with flows unfinished (it had no fixed duration).
    pub hit_time_limit: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(start: Time, finish: Option<Time>, ideal: Time) -> FlowRecord {
        FlowRecord {
            id: 1,
            src: 0,
            dst: 1,
            size: 1000,
            delivered: 1000,
            start,
            finish,
            ideal_fct: ideal,
            retransmitted_bytes: 0,
            long_lived: false,
            group: 0,
            received: 1000,
            started: true,
        }
    }

    #[test]
    fn slowdown_is_clamped_to_one() {
        assert_eq!(flow(100, Some(150), 100).slowdown(), Some(1.0), "faster than ideal clamps to 1");
        assert_eq!(flow(100, Some(400), 100).slowdown(), Some(3.0));
        assert_eq!(flow(100, Some(400), 100).fct(), Some(300));
        assert_eq!(flow(100, None, 100).slowdown(), None);
        assert_eq!(slowdown(5, 0), 5.0, "a zero ideal counts as 1 ps");
    }

    #[test]
    fn ideal_fct_adds_serialization_at_the_bottleneck() {
        // 1000 B at 100 Gbps take 80 ns; base RTT 2 us.
        assert_eq!(ideal_fct(2_000_000, 1000, 100_000_000_000), 2_080_000);
    }

    #[test]
    fn trace_rows_come_back_in_order() {
        let mut trace = FlowTrace::new(7, vec!["cwnd", "alpha"]);
        trace.push(10, &[1.0, 0.5]);
        trace.push(20, &[2.0, 0.25]);
        let rows: Vec<_> = trace.rows().collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], TraceRow { time: 20, values: &[2.0, 0.25] });
        assert_eq!(trace.names(), ["cwnd", "alpha"]);
    }

    #[test]
    fn the_last_interval_keeps_its_real_length() {
        let series = ThroughputSeries {
            label: "flow 0".into(),
            kind: BytesKind::Payload,
            interval: 10,
            samples: vec![(10, 5), (20, 6), (23, 1)],
            queue_bytes: Vec::new(),
        };
        let rows: Vec<_> = series.intervals().collect();
        assert_eq!(rows, [(10, 10, 5), (20, 10, 6), (23, 3, 1)]);
    }

    #[test]
    fn a_recorder_keeps_its_most_rows_and_counts_the_rest_at_its_spacing() {
        let mut recorder = TraceRecorder::new(10).with_max_rows(3);
        for now in 0..100 {
            recorder.record(now, &mut |sink: &mut TraceSink<'_>| sink("cwnd", now as f64));
        }
        // Rows every 10 ps from 0: 0, 10 and 20 kept, 30 to 90 counted.
        let trace = recorder.to_trace(4);
        assert_eq!(trace.rows().map(|r| r.time).collect::<Vec<_>>(), [0, 10, 20]);
        assert_eq!(trace.skipped(), 7);
        assert_eq!(TraceRecorder::new(0).max_rows, DEFAULT_TRACE_ROWS);
    }

    #[test]
    #[should_panic(expected = "one value per variable")]
    fn trace_rejects_a_short_row() {
        FlowTrace::new(7, vec!["cwnd", "alpha"]).push(10, &[1.0]);
    }
}

/// What happened to a packet at a switch port, in a packet trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketEvent {
    /// Admitted to the port's queue.
    Enqueue,
    /// Put on the wire (leaving the queue, or at once when the port was idle).
    Send,
    /// Marked ECN Congestion Experienced (by RED/ECN or an injected fault).
    Mark,
    /// Dropped at the port (buffer full, an injected fault, a link down).
    Drop,
    /// Trimmed to its header (NDP).
    Trim,
    /// The switch sent a PFC pause upstream through the port (no packet).
    PauseSent,
    /// The switch sent a PFC resume upstream through the port (no packet).
    ResumeSent,
    /// The port's transmitter was paused by a PFC frame from its peer (no packet).
    Paused,
    /// The port's transmitter was resumed by its peer (no packet).
    Resumed,
}

impl PacketEvent {
    /// The name written in packets.csv.
    pub fn name(self) -> &'static str {
        match self {
            PacketEvent::Enqueue => "enqueue",
            PacketEvent::Send => "send",
            PacketEvent::Mark => "mark",
            PacketEvent::Drop => "drop",
            PacketEvent::Trim => "trim",
            PacketEvent::PauseSent => "pause_sent",
            PacketEvent::ResumeSent => "resume_sent",
            PacketEvent::Paused => "paused",
            PacketEvent::Resumed => "resumed",
        }
    }
}

/// One row of a packet trace. Packet fields are those at the moment of the event; a PFC event has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRow {
    /// When it happened.
    pub time: Time,
    /// What happened.
    pub event: PacketEvent,
    /// The port, as an index into [`PacketTrace::ports`].
    pub port: u32,
    /// The packet, when the event concerns one.
    pub packet: Option<PacketFields>,
    /// Bytes queued at the port (all queues) after the event.
    pub queue_bytes: u64,
    /// The PFC priority of a pause or resume; the packet's queue otherwise.
    pub queue: u8,
}

/// The fields of a traced packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketFields {
    /// Its flow.
    pub flow: u32,
    /// Its kind: `data`, `ack`, `nack`, `cnp`, `probe`, `probe_ack`, `notify`, `rts`, `token`, `token_stop`.
    pub kind: &'static str,
    /// Its sequence number (bytes; the next expected byte for acknowledgments).
    pub seq: u64,
    /// Payload bytes.
    pub payload: u32,
    /// Bytes on the wire.
    pub wire: u32,
    /// ECN codepoint: `not-ect`, `ect` or `ce`.
    pub ecn: &'static str,
}

/// A bounded packet trace: rows in time order and the names of the ports they refer to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketTrace {
    /// Port names (`"sw0:p1"`), indexed by [`PacketRow::port`].
    pub ports: Vec<String>,
    /// The rows, in the order the events happened.
    pub rows: Vec<PacketRow>,
    /// Events that matched the trace after it reached its row limit, and were not recorded.
    pub skipped: u64,
}
