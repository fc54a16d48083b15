//! The endpoint model: a receiving host whose processing is slower than its link (endpoint congestion;
//! Chong and Krishnan, "Addressing Endpoint-induced Congestion for Accelerator Scale-Out in a
//! Medium-Scale Domain").
//!
//! Each host gets one processing queue (depth in bytes on the wire) drained at a fraction of its NIC
//! rate, optionally changing over time. A data packet accepted by the transport (in order, go-back-N)
//! enters the queue; one that finds the queue full is dropped, and the go-back-N receiver NACKs the
//! next packet that arrives out of order behind it.
//!
//! The receiver that fills the queue and the flow's receiver controller ([`sluice_cc::ReceiverControl`])
//! that hears of its packets are the transport's ([`crate::transport::receiver`]); the host hands this
//! queue to the receiver as its [`Processing`] hook and runs its two events here.

use std::collections::VecDeque;

use sluice_cc::{QueueMove, RxDecisions, RxEvents, StreamSample};
use sluice_core::{serialization_ps, Rate, Time};

use crate::config::EndpointConfig;
use crate::engine::packet::Packet;
use crate::engine::{Core, Event, HostModelEvent};
use crate::transport::receiver::{self, Processing};
use crate::transport::table::FlowTable;
use crate::transport::{HostEnv, HostIo};

/// One packet in the processing queue.
#[derive(Debug, Clone, Copy)]
struct Entry {
    flow: u32,
    seq: u64,
    payload: u32,
    wire: u32,
    sent_at: Time,
    /// Bytes ever enqueued up to and including this packet.
    end: u64,
}

/// A host's processing queue.
#[derive(Debug)]
pub struct Endpoint {
    capacity: u64,
    base_rate: Rate,
    steps: Vec<(Time, Rate)>,
    entries: VecDeque<Entry>,
    /// Occupancy, bytes on the wire.
    bytes: u64,
    /// Bytes ever dequeued.
    dequeued: u64,
    /// Bytes ever enqueued.
    enqueued: u64,
    /// Entries from the head that are at or below the watched position.
    below: usize,
    watch: Option<u64>,
    draining: bool,
    sample_every: Option<Time>,
    sampling: bool,
    /// Accepted packets per stream in the current sampling period.
    counts: Vec<(u32, u64)>,
}

impl Endpoint {
    /// A processing queue for a host whose NIC runs at `nic_rate`.
    pub fn new(config: &EndpointConfig, nic_rate: Rate) -> Endpoint {
        let rate = |fraction: f64| ((nic_rate as f64 * fraction) as Rate).max(1);
        Endpoint {
            capacity: config.queue,
            base_rate: rate(config.drain),
            steps: config.schedule.iter().map(|s| (s.at, rate(s.drain))).collect(),
            entries: VecDeque::new(),
            bytes: 0,
            dequeued: 0,
            enqueued: 0,
            below: 0,
            watch: None,
            draining: false,
            sample_every: None,
            sampling: false,
            counts: Vec::new(),
        }
    }

    /// Processing rate at `now`.
    pub fn rate_at(&self, now: Time) -> Rate {
        self.steps.iter().rev().find(|(at, _)| *at <= now).map_or(self.base_rate, |s| s.1)
    }

    fn push(&mut self, entry: Entry) {
        self.enqueued += entry.wire as u64;
        self.bytes += entry.wire as u64;
        let entry = Entry { end: self.enqueued, ..entry };
        self.entries.push_back(entry);
        if self.watch.is_some_and(|w| self.below + 1 == self.entries.len() && entry.end - self.dequeued <= w) {
            self.below += 1;
        }
    }

    fn count(&mut self, flow: u32) {
        match self.counts.iter_mut().find(|(f, _)| *f == flow) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((flow, 1)),
        }
    }

    /// Pops the head; returns it and the entries that crossed the watched position (the head first if
    /// it had not crossed yet).
    fn pop(&mut self, crossed: &mut Vec<Entry>) -> Entry {
        let head = self.entries.pop_front().expect("draining a non-empty queue");
        self.dequeued += head.wire as u64;
        self.bytes -= head.wire as u64;
        if self.below > 0 {
            self.below -= 1;
        } else if self.watch.is_some() {
            crossed.push(head);
        }
        if let Some(w) = self.watch {
            while let Some(e) = self.entries.get(self.below) {
                if e.end - self.dequeued > w {
                    break;
                }
                crossed.push(*e);
                self.below += 1;
            }
        }
        head
    }
}

impl Processing for Endpoint {
    fn has_room(&self, wire: u32) -> bool {
        self.bytes + wire as u64 <= self.capacity
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn take(&mut self, core: &mut Core, node: u32, id: u32, p: &Packet) {
        self.push(Entry { flow: id, seq: p.seq, payload: p.payload, wire: p.wire, sent_at: p.sent_at, end: 0 });
        self.count(id);
        if !self.draining {
            self.draining = true;
            let done = core.now + serialization_ps(p.wire as u64, self.rate_at(core.now));
            core.schedule(done, Event::HostModel(HostModelEvent::EndpointDone { host: node }));
        }
        if let Some(every) = self.sample_every.filter(|_| !self.sampling) {
            self.sampling = true;
            core.schedule(core.now + every, Event::HostModel(HostModelEvent::EndpointSample { host: node }));
        }
    }

    fn follow(&mut self, d: &RxDecisions) {
        if let Some(watch) = d.queue_watch.filter(|_| self.watch.is_none()) {
            self.watch = Some(watch);
            self.below = self.entries.iter().take_while(|x| x.end - self.dequeued <= watch).count();
        }
        if d.sample_every.is_some() {
            self.sample_every = d.sample_every.filter(|t| *t > 0);
        }
    }
}

/// The processing queue `e` of host `io` finished its head packet: the next one starts, and the
/// controllers of the packets that moved hear of it.
pub fn on_done(io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, e: &mut Endpoint) {
    let mut crossed = Vec::new();
    let head = e.pop(&mut crossed);
    let queue_bytes = e.bytes;
    let core = &mut *io.core;
    core.counters.endpoint_processed_bytes += head.payload as u64;
    match e.entries.front() {
        Some(next) => {
            let done = core.now + serialization_ps(next.wire as u64, e.rate_at(core.now));
            core.schedule(done, Event::HostModel(HostModelEvent::EndpointDone { host: io.node }));
        }
        None => e.draining = false,
    }
    let moves = std::iter::once((&head, RxEvents::PROCESSED)).chain(crossed.iter().map(|c| (c, RxEvents::CROSSED)));
    for (entry, which) in moves {
        let moved = QueueMove { at: io.core.now, seq: entry.seq, bytes: entry.payload, queue_bytes };
        let f = &mut flows[entry.flow as usize];
        receiver::queue_moved(io, env, f, entry.flow, (moved, entry.sent_at), which, e);
    }
}

/// The per-stream sampling period of host `io`'s processing queue `e` ended: every sampled stream's
/// controller hears of it.
pub fn on_sample(io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, e: &mut Endpoint) {
    let counts = std::mem::take(&mut e.counts);
    e.sampling = !counts.is_empty();
    let now = io.core.now;
    if let Some(every) = e.sample_every.filter(|_| e.sampling) {
        io.core.schedule(now + every, Event::HostModel(HostModelEvent::EndpointSample { host: io.node }));
    }
    let min = counts.iter().map(|c| c.1).min().unwrap_or(0);
    let max = counts.iter().map(|c| c.1).max().unwrap_or(0);
    for &(flow, packets) in &counts {
        let sample =
            StreamSample { at: now, packets, min_packets: min, max_packets: max, streams: counts.len() as u32 };
        receiver::sampled(io, env, &mut flows[flow as usize], flow, &sample, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DrainStep, LossRecovery};

    fn entry(flow: u32, seq: u64, wire: u32) -> Entry {
        Entry { flow, seq, payload: wire - 64, wire, sent_at: 0, end: 0 }
    }

    #[test]
    fn packets_cross_the_watched_position_as_the_head_drains() {
        let config = EndpointConfig { enabled: true, ..EndpointConfig::default() };
        let mut q = Endpoint::new(&config, 100_000_000_000);
        q.watch = Some(2000);
        // Ends at 1000, 2000 (both at or below 2000), 3000, 4000.
        for i in 0..4 {
            q.push(entry(i % 2, i as u64 * 936, 1000));
        }
        assert_eq!((q.below, q.bytes()), (2, 4000));
        let mut crossed = Vec::new();
        let head = q.pop(&mut crossed);
        assert_eq!(head.seq, 0);
        // After 1000 bytes left, the third packet ends at 2000: it crosses.
        assert_eq!(crossed.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2 * 936]);
        crossed.clear();
        q.pop(&mut crossed);
        assert_eq!(crossed.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3 * 936]);
        crossed.clear();
        q.pop(&mut crossed);
        q.pop(&mut crossed);
        assert!(crossed.is_empty());
        assert_eq!((q.below, q.bytes()), (0, 0));
    }

    #[test]
    fn the_rate_follows_the_schedule() {
        let config = EndpointConfig {
            enabled: true,
            drain: 0.5,
            schedule: vec![DrainStep { at: 100, drain: 0.25 }, DrainStep { at: 200, drain: 1.0 }],
            ..EndpointConfig::default()
        };
        let q = Endpoint::new(&config, 100_000_000_000);
        assert_eq!(q.rate_at(0), 50_000_000_000);
        assert_eq!(q.rate_at(150), 25_000_000_000);
        assert_eq!(q.rate_at(200), 100_000_000_000);
    }

    #[test]
    fn validation_names_the_key() {
        let bad = EndpointConfig { enabled: true, drain: 0.0, ..EndpointConfig::default() };
        assert_eq!(bad.validate(LossRecovery::GoBackN).unwrap_err().0, "host.endpoint.drain");
        let good = EndpointConfig { enabled: true, ..EndpointConfig::default() };
        assert_eq!(good.validate(LossRecovery::Selective).unwrap_err().0, "host.loss_recovery");
        let off = EndpointConfig { drain: -1.0, ..EndpointConfig::default() };
        assert!(off.validate(LossRecovery::Selective).is_ok());
    }
}
