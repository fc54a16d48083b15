//! Counters and samples in the simulator's result records, so that `queues.csv` and `throughput.csv`
//! of a bed run and of a simulation compare column for column (written by `sluice-results`).

use std::io;
use std::path::Path;

use sluice_core::Time;
use sluice_results::csv::{write_queues_csv, write_throughput_csv};
use sluice_results::{BytesKind, PortRecord, SwitchRecord, ThroughputSeries};
use sluice_topo::{NodeId, NodeKind, PortNo};

use crate::config::Sampling;
use crate::fabric::Fabric;
use crate::port::Port;

/// Samples the transmitted bytes and queue length of chosen ports at a fixed interval.
#[derive(Debug, Default)]
pub struct Sampler {
    interval: Time,
    next: Time,
    /// Index into the fabric's ports of each sampled port.
    ports: Vec<usize>,
    last_tx: Vec<u64>,
    last_time: Time,
    series: Vec<ThroughputSeries>,
}

impl Sampler {
    /// A sampler for `sampling`, with `index` giving the fabric's port index of (node, port).
    pub fn new(sampling: &Sampling, index: impl Fn(NodeId, PortNo) -> usize) -> Sampler {
        if sampling.interval == 0 || sampling.ports.is_empty() {
            return Sampler::default();
        }
        Sampler {
            interval: sampling.interval,
            next: sampling.interval,
            ports: sampling.ports.iter().map(|&(n, p)| index(n, p)).collect(),
            last_tx: vec![0; sampling.ports.len()],
            last_time: 0,
            series: Vec::new(),
        }
    }

    /// When the next sample is due, ps, if sampling is on.
    pub fn due(&self) -> Option<Time> {
        (!self.ports.is_empty()).then_some(self.next)
    }

    /// Takes the samples due at `t` (labels are filled in by [`Sampler::series`]).
    pub fn sample(&mut self, t: Time, ports: &[Port]) {
        self.record(t, ports);
        self.next = t + self.interval;
    }

    fn record(&mut self, t: Time, ports: &[Port]) {
        if self.series.is_empty() {
            self.series = self
                .ports
                .iter()
                .map(|_| ThroughputSeries {
                    label: String::new(),
                    kind: BytesKind::Wire,
                    interval: self.interval,
                    samples: Vec::new(),
                    queue_bytes: Vec::new(),
                })
                .collect();
        }
        for (i, &p) in self.ports.iter().enumerate() {
            let tx = ports[p].stats.tx_bytes;
            self.series[i].samples.push((t, tx - self.last_tx[i]));
            self.series[i].queue_bytes.push(ports[p].bytes);
            self.last_tx[i] = tx;
        }
        self.last_time = t;
    }

    /// Closes the last, shorter interval at `end` (the end of the run) when samples were taken before.
    pub fn finish(&mut self, end: Time, ports: &[Port]) {
        if !self.ports.is_empty() && end > self.last_time {
            self.record(end, ports);
        }
    }

    /// The series, labelled `"node:pN"` as the simulator labels ports.
    pub fn series(&self, fabric: &Fabric) -> Vec<ThroughputSeries> {
        self.series
            .iter()
            .zip(&self.ports)
            .map(|(s, &p)| ThroughputSeries { label: port_label(fabric, &fabric.ports()[p]), ..s.clone() })
            .collect()
    }
}

fn node_name(fabric: &Fabric, node: NodeId) -> String {
    fabric.config().topology.nodes[node as usize].name.clone()
}

fn port_label(fabric: &Fabric, port: &Port) -> String {
    format!("{}:p{}", node_name(fabric, port.node), port.port_no)
}

/// The `port` rows of `queues.csv` at `now` (ps): every switch port and host link.
pub fn port_records(fabric: &Fabric, now: Time) -> Vec<PortRecord> {
    let topo = &fabric.config().topology;
    fabric
        .ports()
        .iter()
        .map(|p| {
            let peer = topo.ports[p.node as usize][p.port_no as usize].peer;
            PortRecord {
                node: node_name(fabric, p.node),
                port: p.port_no,
                peer: node_name(fabric, peer),
                rate: p.rate,
                tx_bytes: p.stats.tx_bytes,
                max_queue: p.stats.max_queue,
                avg_queue: p.avg_queue(now),
                drops: p.stats.drops,
                data_drops: p.stats.data_drops,
                dropped_bytes: p.stats.dropped_bytes,
                ecn_marks: p.stats.ecn_marks,
                pfc_pauses_sent: 0,
                pfc_paused_time: 0,
            }
        })
        .collect()
}

/// The `switch` rows of `queues.csv` at `now` (ps): each switch's shared buffer.
pub fn switch_records(fabric: &Fabric, now: Time) -> Vec<SwitchRecord> {
    let topo = &fabric.config().topology;
    fabric
        .buffers()
        .filter(|(node, _)| topo.nodes[*node as usize].kind == NodeKind::Switch)
        .map(|(node, b)| {
            let area = b.area + b.used as u128 * now.saturating_sub(b.last_change) as u128;
            let avg_buffer = if now == 0 { 0.0 } else { area as f64 / now as f64 };
            SwitchRecord { node: node_name(fabric, node), max_buffer: b.max, avg_buffer }
        })
        .collect()
}

/// Writes `queues.csv` and `throughput.csv` into `dir` (created if missing) for a run that ended at
/// `now` (ps), closing the sampler's last interval.
pub fn write_results(fabric: &mut Fabric, dir: &Path, now: Time) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    fabric.finish_sampling(now);
    let mut queues = Vec::new();
    write_queues_csv(&mut queues, &port_records(fabric, now), &switch_records(fabric, now))?;
    std::fs::write(dir.join("queues.csv"), queues)?;
    let mut throughput = Vec::new();
    write_throughput_csv(&mut throughput, &fabric.sampler().series(fabric))?;
    std::fs::write(dir.join("throughput.csv"), throughput)
}
