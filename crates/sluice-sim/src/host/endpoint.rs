//! The endpoint model: a receiving host whose processing is slower than its link (endpoint congestion;
//! Chong and Krishnan, "Addressing Endpoint-induced Congestion for Accelerator Scale-Out in a
//! Medium-Scale Domain").
//!
//! Each host gets one processing queue (depth in bytes on the wire) drained at a fraction of its NIC
//! rate, optionally changing over time. A data packet accepted by the transport (in order, go-back-N)
//! enters the queue; one that finds the queue full is dropped, and the go-back-N receiver NACKs the
//! next packet that arrives out of order behind it.
//!
//! The module also runs the flow's receiver controller ([`sluice_cc::ReceiverControl`]) when its
//! algorithm has one: it reports each arrival with the queue occupancy, each of the flow's packets that
//! finishes processing or crosses the position the controller watches, and periodic per-stream samples,
//! and sends the acknowledgments the controller chooses (IACK with an explicit sequence, DACK, NACK, or
//! none).

use std::collections::VecDeque;

use sluice_cc::{AckKind, Arrival, FlowInfo, QueueMove, RxCtx, RxDecisions, RxEvents, StreamSample};
use sluice_core::{serialization_ps, Rate, Time};

use crate::config::EndpointConfig;
use crate::engine::packet::{Kind, Packet, FLAG_ECE};
use crate::engine::{Core, Event, HostModelEvent};
use crate::host::Host;
use crate::transport::flow::Flow;
use crate::transport::window;
use crate::transport::HostEnv;

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

    /// Occupancy in bytes on the wire.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn has_room(&self, wire: u32) -> bool {
        self.bytes + wire as u64 <= self.capacity
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

/// Turns on the host models the settings ask for (processing queues, NIC-to-memory paths) at every host.
pub(crate) fn enable_host_models(
    hosts: &mut [Host],
    config: &crate::config::HostConfig,
    link: &crate::config::LinkConfig,
    factory: &dyn sluice_cc::Factory,
) {
    for h in hosts {
        if config.endpoint.enabled {
            h.enable_endpoint(&config.endpoint);
        }
        if config.bus.enabled {
            h.enable_bus(&config.bus, link.mtu + link.header_bytes, factory);
        }
    }
}

/// A flow's static facts as its receiver sees them.
fn flow_info(f: &Flow, id: u32, env: &HostEnv, line_rate: Rate) -> FlowInfo {
    FlowInfo {
        flow_id: id as u64,
        mss: env.link.mtu,
        header_bytes: env.link.header_bytes,
        line_rate,
        base_rtt: f.base_rtt,
        hops: f.hops,
        size: f.stop.is_none().then_some(f.size),
        start: f.start,
    }
}

impl Host {
    /// Gives this host a processing queue.
    pub fn enable_endpoint(&mut self, config: &EndpointConfig) {
        self.endpoint = Some(Box::new(Endpoint::new(config, self.nic.rate)));
    }

    /// Occupancy of this host's processing queue in bytes (0 without the endpoint model).
    pub fn endpoint_bytes(&self) -> u64 {
        self.endpoint.as_ref().map_or(0, |e| e.bytes())
    }

    /// A data packet arrived at a host with a processing queue or for a flow with a receiver controller.
    /// Kept out of line: the receive path of runs without these models stays as it was.
    #[cold]
    #[inline(never)]
    pub(crate) fn receive_data_endpoint(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        flows: &mut [Flow],
        pkt: u32,
        p: &Packet,
    ) {
        let id = p.flow;
        self.start_receiver(core, env, &mut flows[id as usize], id);
        let f = &mut flows[id as usize];
        if p.seq < f.rcv_nxt {
            // A resend of accepted data: acknowledge what is accepted (or repeat the last ACK).
            match f.rx.is_some() {
                true => self.send_rx_ack(core, env, f, id, f.rx_acked, p.sent_at),
                false => window::send_ack(&mut self.io(core), env, f, pkt, p),
            }
            return;
        }
        let in_order = p.seq == f.rcv_nxt;
        let room = self.endpoint.as_ref().is_none_or(|e| e.has_room(p.wire));
        let accepted = in_order && room;
        if in_order && !room {
            core.counters.endpoint_drops += 1;
        }
        if !in_order {
            window::out_of_order(&mut self.io(core), env, f, p);
            // The NACK acknowledged everything accepted: a later ACK below it is a duplicate.
            f.rx_acked = f.rx_acked.max(f.rcv_nxt);
        }
        if accepted {
            self.enqueue(core, env, f, id, p);
        }
        if f.rx.is_none() {
            if accepted {
                self.default_ack(core, env, f, pkt, p);
            }
            return;
        }
        if !f.rx_events.contains(RxEvents::DATA) {
            return;
        }
        let arrival =
            Arrival { accepted, rcv_nxt: f.rcv_nxt, queue_bytes: self.endpoint_bytes(), ..p.arrival(core.now) };
        let mut ctx = RxCtx::new(core.now);
        f.rx.as_mut().expect("checked").on_data(&arrival, &mut ctx);
        let d = *ctx.decisions();
        self.apply_rx(core, env, f, id, &d, p.sent_at);
        if d.ack == AckKind::Default && accepted {
            self.default_ack(core, env, f, pkt, p);
            if f.rcv_pkts == 0 {
                f.rx_acked = f.rx_acked.max(f.rcv_nxt);
            }
        }
    }

    /// Starts the flow's receiver controller at its first arrival.
    fn start_receiver(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        if f.rx_started || f.rx.is_none() {
            return;
        }
        f.rx_started = true;
        f.rx_events = f.rx.as_ref().expect("checked").events();
        let info = flow_info(f, id, env, self.nic.rate);
        let mut ctx = RxCtx::new(core.now);
        f.rx.as_mut().expect("checked").on_start(&info, &mut ctx);
        let d = *ctx.decisions();
        self.apply_rx(core, env, f, id, &d, 0);
    }

    /// Accepts `p` in order and puts it in the processing queue, if any.
    fn enqueue(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, p: &Packet) {
        f.rcv_nxt += p.payload as u64;
        // Selective repeat (without a processing queue) may hold data past this packet.
        while f.ooo.first() == Some(&f.rcv_nxt) {
            f.ooo.pop_first();
            f.rcv_nxt += f.payload_at(f.rcv_nxt, env.link.mtu) as u64;
        }
        let Some(e) = self.endpoint.as_mut() else { return };
        e.push(Entry { flow: id, seq: p.seq, payload: p.payload, wire: p.wire, sent_at: p.sent_at, end: 0 });
        e.count(id);
        if !e.draining {
            e.draining = true;
            let done = core.now + serialization_ps(p.wire as u64, e.rate_at(core.now));
            core.schedule(done, Event::HostModel(HostModelEvent::EndpointDone { host: self.node }));
        }
        if let Some(every) = e.sample_every.filter(|_| !e.sampling) {
            e.sampling = true;
            core.schedule(core.now + every, Event::HostModel(HostModelEvent::EndpointSample { host: self.node }));
        }
    }

    /// The datapath's own acknowledgment of an accepted packet: one ACK per `ack_every_packets` packets
    /// or `ack_every_bytes` bytes, and for the flow's last packet.
    fn default_ack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
        f.rcv_pkts += 1;
        f.rcv_bytes += p.payload as u64;
        let cfg = env.config;
        let due = f.rcv_pkts >= cfg.ack_every_packets
            || (cfg.ack_every_bytes > 0 && f.rcv_bytes >= cfg.ack_every_bytes)
            || f.rcv_nxt >= f.size;
        if due {
            window::send_ack(&mut self.io(core), env, f, pkt, p);
        }
    }

    /// Applies a receiver controller's decisions: settings first, then the acknowledgments it chose
    /// (`Default` is the caller's: the datapath's own acknowledgment of an accepted arrival, else none).
    fn apply_rx(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, d: &RxDecisions, sent_at: Time) {
        if let Some(e) = self.endpoint.as_mut() {
            if d.queue_watch.is_some() && e.watch.is_none() {
                e.watch = d.queue_watch;
                e.below = e.entries.iter().take_while(|x| x.end - e.dequeued <= d.queue_watch.unwrap()).count();
            }
            if d.sample_every.is_some() {
                e.sample_every = d.sample_every.filter(|t| *t > 0);
            }
        }
        for _ in 0..d.dacks_before {
            self.send_rx_ack(core, env, f, id, f.rx_acked, sent_at);
        }
        match d.ack {
            AckKind::Immediate => {
                let seq = d.ack_seq.unwrap_or(f.rcv_nxt).min(f.rcv_nxt).max(f.rx_acked);
                self.send_rx_ack(core, env, f, id, seq, sent_at);
            }
            AckKind::Delayed => self.send_rx_ack(core, env, f, id, f.rx_acked, sent_at),
            AckKind::Negative => {
                let mut nack = env.control_packet(Kind::Nack, id, f.src, f.rcv_nxt);
                nack.sack = f.rcv_nxt;
                nack.sent_at = sent_at;
                self.io(core).queue_control(env, nack);
            }
            AckKind::Default | AckKind::Withhold => {}
        }
    }

    /// Sends an ACK of flow `id` carrying cumulative sequence `seq` (a DACK when it repeats the last).
    fn send_rx_ack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, seq: u64, sent_at: Time) {
        let mut ack = env.control_packet(Kind::Ack, id, f.src, seq);
        ack.sent_at = sent_at;
        ack.sack = core.now;
        if f.rcv_ce {
            ack.flags |= FLAG_ECE;
        }
        f.rcv_ce = false;
        f.rx_acked = f.rx_acked.max(seq);
        self.io(core).queue_control(env, ack);
    }

    /// The processing queue finished its head packet.
    pub(crate) fn on_endpoint_done(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let mut crossed = Vec::new();
        let Some(e) = self.endpoint.as_mut() else { return };
        let head = e.pop(&mut crossed);
        let queue_bytes = e.bytes;
        core.counters.endpoint_processed_bytes += head.payload as u64;
        match e.entries.front() {
            Some(next) => {
                let done = core.now + serialization_ps(next.wire as u64, e.rate_at(core.now));
                core.schedule(done, Event::HostModel(HostModelEvent::EndpointDone { host: self.node }));
            }
            None => e.draining = false,
        }
        self.notify_move(core, env, flows, &head, queue_bytes, RxEvents::PROCESSED);
        for entry in &crossed {
            self.notify_move(core, env, flows, entry, queue_bytes, RxEvents::CROSSED);
        }
        self.try_send(core, env, flows);
    }

    /// Tells the controller of `entry`'s flow that the packet was processed or crossed the watch.
    fn notify_move(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        flows: &mut [Flow],
        entry: &Entry,
        queue_bytes: u64,
        which: RxEvents,
    ) {
        let f = &mut flows[entry.flow as usize];
        if f.rx.is_none() || !f.rx_events.contains(which) {
            return;
        }
        let moved = QueueMove { at: core.now, seq: entry.seq, bytes: entry.payload, queue_bytes };
        let mut ctx = RxCtx::new(core.now);
        let rx = f.rx.as_mut().expect("checked");
        if which == RxEvents::PROCESSED {
            rx.on_processed(&moved, &mut ctx);
        } else {
            rx.on_crossed(&moved, &mut ctx);
        }
        let d = *ctx.decisions();
        self.apply_rx(core, env, f, entry.flow, &d, entry.sent_at);
    }

    /// The per-stream sampling period ended: report it to every sampled stream's controller.
    pub(crate) fn on_endpoint_sample(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let Some(e) = self.endpoint.as_mut() else { return };
        let counts = std::mem::take(&mut e.counts);
        e.sampling = !counts.is_empty();
        if let Some(every) = e.sample_every.filter(|_| e.sampling) {
            core.schedule(core.now + every, Event::HostModel(HostModelEvent::EndpointSample { host: self.node }));
        }
        let min = counts.iter().map(|c| c.1).min().unwrap_or(0);
        let max = counts.iter().map(|c| c.1).max().unwrap_or(0);
        for &(flow, packets) in &counts {
            let f = &mut flows[flow as usize];
            if f.rx.is_none() || !f.rx_events.contains(RxEvents::SAMPLE) {
                continue;
            }
            let sample = StreamSample {
                at: core.now,
                packets,
                min_packets: min,
                max_packets: max,
                streams: counts.len() as u32,
            };
            let mut ctx = RxCtx::new(core.now);
            f.rx.as_mut().expect("checked").on_sample(&sample, &mut ctx);
            let d = *ctx.decisions();
            self.apply_rx(core, env, f, flow, &d, 0);
        }
        self.try_send(core, env, flows);
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
