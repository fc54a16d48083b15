//! Reporting a run: throughput samples taken during the run, and at its end the records of flows,
//! ports and switches, the traces and the counters.

use sluice_core::Time;
use sluice_plane::PlaneCounters;
use sluice_results::{BytesKind, FlowRecord, PortRecord, RunInfo, SwitchRecord, ThroughputSeries};

use super::{NodeRef, Observe, SimOutput, Simulation};
use crate::engine::Event;
use crate::host::Host;
use crate::net::port::Port;
use crate::net::switch::Switch;
use crate::transport::flow::Flow;
use crate::transport::table::FlowTable;

#[derive(Debug, Default)]
pub(super) struct Sampler {
    last_flow_bytes: Vec<u64>,
    last_port_bytes: Vec<u64>,
    series: Vec<ThroughputSeries>,
    /// Time of the last sample taken.
    last_time: Time,
}

/// What [`Sampler::take`] reads: the observed flows and ports and the nodes they live in.
pub(super) struct Sampled<'a> {
    pub(super) observe: &'a Observe,
    pub(super) flows: &'a FlowTable,
    pub(super) switches: &'a [Switch],
    pub(super) hosts: &'a [Host],
    pub(super) node_ref: &'a [NodeRef],
}

impl Sampler {
    /// Appends one sample at `now` to every series: the bytes counted since the previous sample.
    pub(super) fn take(&mut self, now: Time, of: &Sampled) {
        for (i, f) in of.observe.throughput_flows.iter().enumerate() {
            // A flow that has not started has delivered nothing. A receiver-driven flow's sender hears
            // only of the last byte: count what the receiver has.
            let acked =
                of.flows.get(*f).map_or(0, |f| if f.rd.is_some() { f.rcv_nxt.max(f.snd_una) } else { f.snd_una });
            self.series[i].samples.push((now, acked - self.last_flow_bytes[i]));
            self.last_flow_bytes[i] = acked;
        }
        let offset = of.observe.throughput_flows.len();
        for (i, (node, port)) in of.observe.throughput_ports.iter().enumerate() {
            // A part of a partitioned run has no ports at other parts' switches: it samples nothing
            // there, and the run takes the series from the switch's own part.
            let sampled = match of.node_ref[*node as usize] {
                NodeRef::Switch(sw) => of.switches[sw as usize].ports.get(*port as usize),
                NodeRef::Host(h) => Some(&of.hosts[h as usize].nic),
            };
            let (tx, queue) = sampled.map_or((0, 0), |p| (p.tx_bytes, p.bytes));
            let series = &mut self.series[offset + i];
            series.samples.push((now, tx - self.last_port_bytes[i]));
            series.queue_bytes.push(queue);
            self.last_port_bytes[i] = tx;
        }
        self.last_time = now;
    }
}

impl Simulation {
    /// Sets up the throughput series the run observes and schedules the first sample.
    pub(super) fn start_sampling(&mut self) {
        let o = &self.settings.observe;
        if o.sample_interval == 0 || (o.throughput_flows.is_empty() && o.throughput_ports.is_empty()) {
            return;
        }
        let s = &mut self.samples;
        s.last_flow_bytes = vec![0; o.throughput_flows.len()];
        s.last_port_bytes = vec![0; o.throughput_ports.len()];
        for f in &o.throughput_flows {
            s.series.push(ThroughputSeries {
                label: format!("flow {f}"),
                kind: BytesKind::Payload,
                interval: o.sample_interval,
                samples: Vec::new(),
                queue_bytes: Vec::new(),
            });
        }
        for (node, port) in &o.throughput_ports {
            let label = format!("{}:p{port}", self.settings.topology.nodes[*node as usize].name);
            s.series.push(ThroughputSeries {
                label,
                kind: BytesKind::Wire,
                interval: o.sample_interval,
                samples: Vec::new(),
                queue_bytes: Vec::new(),
            });
        }
        self.core.schedule(o.sample_interval, Event::Sample);
    }

    /// Samples the interval from the last sample to the end of the run, if the run ended between samples,
    /// so that the series covers the whole run.
    fn sample_last_partial_interval(&mut self, end: Time) {
        if self.samples.series.is_empty() || end <= self.samples.last_time {
            return;
        }
        let of = Sampled {
            observe: &self.settings.observe,
            flows: &self.flows,
            switches: &self.switches,
            hosts: &self.hosts,
            node_ref: &self.node_ref,
        };
        self.samples.take(end, &of);
    }

    pub(super) fn finish(mut self, hit_time_limit: bool) -> SimOutput {
        let end = self.core.now;
        self.sample_last_partial_interval(end);
        let (flows, traces) = self.flow_records();
        let names = |n: u32| self.settings.topology.nodes[n as usize].name.clone();
        let mut ports = Vec::new();
        let mut switches = Vec::new();
        for sw in &self.switches {
            for (i, p) in sw.ports.iter().enumerate() {
                ports.push(port_record(&names(sw.node), i as u16, names(p.peer), p, end));
            }
            let area = sw.buffer.area + sw.used as u128 * (end - sw.buffer.last_change) as u128;
            let avg = if end == 0 { 0.0 } else { area as f64 / end as f64 };
            switches.push(SwitchRecord { node: names(sw.node), max_buffer: sw.buffer.max, avg_buffer: avg });
        }
        let mut plane_counters = PlaneCounters::default();
        for h in &self.hosts {
            plane_counters.add(&h.plane.counters);
        }
        let c = self.core.counters.clone();
        let pause_time = ports.iter().map(|p: &PortRecord| p.pfc_paused_time).sum::<Time>()
            + self.hosts.iter().map(|h| h.nic.stats.paused_time).sum::<Time>();
        let run = RunInfo {
            seed: self.seed,
            sim_time: end,
            events: c.events,
            packet_hops: c.packet_hops,
            wall_seconds: 0.0,
            bytes_sent: c.bytes_sent,
            bytes_delivered: c.bytes_delivered,
            bytes_dropped: c.bytes_dropped,
            retransmitted_bytes: c.retransmitted_bytes,
            timeouts: c.timeouts,
            pfc_pauses: c.pfc_pauses,
            pfc_pause_time: pause_time,
            drops: c.drops,
            data_drops: c.data_drops,
            hit_time_limit,
        };
        SimOutput {
            flows,
            ports,
            switches,
            throughput: self.samples.series,
            traces,
            run,
            counters: c,
            peak_packets: self.core.arena.peak(),
            plane: plane_counters,
            faults: crate::net::fault::collect(self.fault_count, self.switches.iter().filter_map(|s| s.faults())),
            packet_trace: self
                .core
                .packet_trace
                .take()
                .map(|t| t.finish(|node, port| format!("{}:p{port}", names(node)))),
            balance: None,
        }
    }
}

impl Simulation {
    /// Every flow's record and every traced flow's trace, in id order: the flows made during the run, and
    /// the workload's flows that never started (made now, one at a time, as they would have been).
    fn flow_records(&mut self) -> (Vec<FlowRecord>, Vec<sluice_results::FlowTrace>) {
        let settings = &self.settings;
        let flows = &self.flows;
        // The retired flows' rows, then every other flow's, sorted by id at the end: one vector.
        let mut records = self.retired.take_rows();
        records.reserve_exact(flows.ids() as usize - records.len());
        let mut traces = Vec::new();
        let mut add = |id: u32, f: &Flow| {
            records.push(flow_record(id as usize, f));
            if let Some(t) = &f.trace {
                traces.push(t.to_trace(id as u64));
            }
        };
        // Retired flows are gone from the table; their rows are in already.
        for id in 0..flows.generated_made() {
            if let Some(f) = flows.get(id) {
                add(id, f);
            }
        }
        for (id, spec) in self.arrivals.not_started() {
            add(id, &settings.make(id, &spec));
        }
        for id in flows.later_ids() {
            if let Some(f) = flows.get(id) {
                add(id, f);
            }
        }
        records.sort_unstable_by_key(|r| r.id);
        debug_assert!(self.part.is_some() || records.len() as u64 == flows.ids(), "a row for every flow");
        (records, traces)
    }
}

/// The result row of flow `id`.
pub(super) fn flow_record(id: usize, f: &Flow) -> FlowRecord {
    let delivered = if f.rd.is_some() { f.rcv_nxt.max(f.snd_una) } else { f.snd_una };
    FlowRecord {
        id: id as u64,
        src: f.src,
        dst: f.dst,
        size: if f.stop.is_some() { delivered } else { f.size },
        delivered,
        start: f.start,
        finish: f.finish,
        ideal_fct: f.ideal_fct,
        retransmitted_bytes: f.retransmitted,
        long_lived: f.stop.is_some(),
        group: f.group,
        received: f.rcv_nxt.min(f.size),
        started: f.started,
    }
}

fn port_record(node: &str, port: u16, peer: String, p: &Port, end: Time) -> PortRecord {
    let paused = p.stats.paused_time + p.stats.paused_since.map_or(0, |since| end.saturating_sub(since));
    PortRecord {
        node: node.to_string(),
        port,
        peer,
        rate: p.rate,
        tx_bytes: p.tx_bytes,
        max_queue: p.stats.max_queue,
        avg_queue: p.average_queue(end),
        drops: p.stats.drops,
        data_drops: p.stats.data_drops,
        dropped_bytes: p.stats.dropped_bytes,
        ecn_marks: p.stats.ecn_marks,
        pfc_pauses_sent: p.stats.pauses_sent,
        pfc_paused_time: paused,
    }
}
