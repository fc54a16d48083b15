//! A host: a NIC that serves control packets first and arbitrates round robin among its sending flows
//! (each held to its window and pacing rate), and the transport logic of senders and receivers.

pub mod bus;
pub mod endpoint;
pub mod plane;
pub mod tokens;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use sluice_cc::api::PATH_FLAGS_MASK;
use sluice_cc::{Ack, Events, Feedback, IntHop, Loss, LossKind, Needs, Sent};
use sluice_core::Time;

use crate::config::{HostConfig, LinkConfig, LossRecovery};
use crate::engine::packet::{Kind, Packet, FLAG_CE, FLAG_ECE, FLAG_ECT, MAX_INT_HOPS, PATH_FLAGS, PATH_SHIFT};
use crate::engine::{Core, Event};
use crate::host::plane::HostPlane;
use crate::net::port::Port;
use crate::transport::flow::{Flow, SendState};

/// What every host shares: settings.
#[derive(Debug, Clone)]
pub struct HostEnv<'a> {
    /// Host settings.
    pub config: &'a HostConfig,
    /// Packet sizes.
    pub link: &'a LinkConfig,
    /// What the run's CC algorithm needs from the datapath (a flow's own needs are on the flow: ECN,
    /// CNPs and their spacing).
    pub needs: Needs,
    /// Queue of control packets.
    pub control_queue: u8,
    /// Queue of data packets.
    pub data_queue: u8,
    /// The CC plane's settings.
    pub plane: &'a sluice_plane::PlaneConfig,
    /// Receiver-driven transport settings, when a token algorithm runs.
    pub rd: Option<&'a crate::config::RdEnv>,
}

/// A host.
#[derive(Debug)]
pub struct Host {
    /// Node id in the topology.
    pub node: u32,
    /// The NIC's egress port (control packets wait in its queues; data is pulled from flows).
    pub nic: Port,
    pub(crate) ready: VecDeque<u32>,
    pacing: BinaryHeap<Reverse<(Time, u32)>>,
    wake_at: Time,
    /// The flows this host sends.
    pub(crate) senders: Vec<u32>,
    /// This host's CC plane.
    pub(crate) plane: HostPlane,
    /// Draws the host's transmit jitter.
    rng: sluice_core::Rng,
    /// Receiver-driven transport state (token pacer, incoming flows), when a token algorithm runs.
    pub(crate) rd: Option<Box<crate::host::tokens::RdHost>>,
    /// The receiving host's processing queue, when the endpoint model is on.
    pub(crate) endpoint: Option<Box<crate::host::endpoint::Endpoint>>,
    /// The receiving host's NIC-to-memory path, when the host interconnect model is on.
    pub(crate) bus: Option<Box<crate::host::bus::HostBus>>,
}

impl Host {
    /// A host at `node` with NIC `nic`; `seed` seeds its random stream.
    pub fn new(node: u32, nic: Port, seed: u64) -> Host {
        Host {
            node,
            nic,
            ready: VecDeque::new(),
            pacing: BinaryHeap::new(),
            wake_at: Time::MAX,
            senders: Vec::new(),
            plane: HostPlane::default(),
            rng: sluice_core::Rng::named(seed, &format!("host.{node}")),
            rd: None,
            endpoint: None,
            bus: None,
        }
    }

    /// Queues flow `id` for sending if it has something to send.
    pub fn activate(&mut self, flows: &mut [Flow], id: u32, now: Time, mtu: u32) {
        let f = &mut flows[id as usize];
        if f.in_ready || f.in_pacing {
            return;
        }
        match f.send_state(now, mtu) {
            SendState::Send | SendState::PacedUntil(_) => {
                f.in_ready = true;
                self.ready.push_back(id);
            }
            SendState::WindowFull | SendState::Idle => {}
        }
    }

    /// Sends the next packet if the NIC is free: control first, then one data packet from the next ready
    /// flow in round-robin order.
    pub fn try_send(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        if !self.nic.idle(core.now) {
            if self.has_work() {
                self.nic.wake_when_free(core, self.node, 0);
            }
            return;
        }
        self.release_paced(core.now, flows);
        let sent = self.send_control(core, env) || self.send_data(core, env, flows);
        if sent && self.has_work() {
            self.nic.wake_when_free(core, self.node, 0);
        } else if let Some(Reverse((t, _))) = self.pacing.peek() {
            self.wake(core, (*t).max(self.nic.busy_until));
        }
    }

    fn has_work(&self) -> bool {
        !self.ready.is_empty() || self.nic.bytes > 0
    }

    fn wake(&mut self, core: &mut Core, at: Time) {
        if at < self.wake_at || self.wake_at <= core.now {
            self.wake_at = at;
            core.schedule(at, Event::HostWake { host: self.node });
        }
    }

    /// A pacing wake-up fired.
    pub fn on_wake(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        if self.wake_at <= core.now {
            self.wake_at = Time::MAX;
        }
        self.try_send(core, env, flows);
    }

    /// The NIC finished a packet.
    pub fn on_port_free(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        self.nic.free_pending = false;
        self.try_send(core, env, flows);
    }

    /// A PFC frame from the ToR arrived.
    pub fn on_pfc(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], queue: u8, pause: bool) {
        self.nic.set_paused(core.now, queue, pause);
        if !pause {
            self.try_send(core, env, flows);
        }
    }

    /// Moves paced flows whose time has come back to the ready list.
    fn release_paced(&mut self, now: Time, flows: &mut [Flow]) {
        while let Some(Reverse((t, id))) = self.pacing.peek().copied() {
            if t > now {
                break;
            }
            self.pacing.pop();
            let f = &mut flows[id as usize];
            f.in_pacing = false;
            f.in_ready = true;
            self.ready.push_back(id);
        }
    }

    fn send_control(&mut self, core: &mut Core, env: &HostEnv) -> bool {
        let q = env.control_queue as usize;
        if self.nic.queues[q].is_empty() || self.nic.paused & (1 << q) != 0 {
            return false;
        }
        let id = self.nic.queues[q][0];
        let p = core.arena.get_mut(id);
        if p.kind == Kind::Ack {
            p.host_delay = (core.now - p.sack).min(u32::MAX as Time) as u32;
        }
        let wire = p.wire;
        self.nic.dequeue(core.now, q, wire);
        self.nic.transmit(core, id, wire);
        true
    }

    fn send_data(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) -> bool {
        if self.nic.paused & (1 << env.data_queue) != 0 {
            return false;
        }
        let mtu = env.link.mtu;
        if env.rd.is_some_and(|r| r.transport.srpt) {
            self.rd_srpt_first(flows);
        }
        for _ in 0..self.ready.len() {
            let id = self.ready.pop_front().expect("counted");
            let f = &mut flows[id as usize];
            match f.send_state(core.now, mtu) {
                SendState::Send => {
                    self.send_packet(core, env, f, id);
                    if matches!(f.send_state(core.now, mtu), SendState::Send | SendState::PacedUntil(_)) {
                        self.ready.push_back(id);
                    } else {
                        f.in_ready = false;
                    }
                    return true;
                }
                SendState::PacedUntil(t) => {
                    f.in_ready = false;
                    f.in_pacing = true;
                    self.pacing.push(Reverse((t, id)));
                }
                SendState::WindowFull | SendState::Idle => f.in_ready = false,
            }
        }
        false
    }

    fn send_packet(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        if f.rd.is_some() {
            return self.rd_send_packet(core, env, f, id);
        }
        let (seq, payload, retransmit) = f.take_next_seq(env.link.mtu);
        let wire = payload + env.link.header_bytes;
        let mut flags = if f.ect { FLAG_ECT } else { 0 };
        if f.driver.events().contains(Events::PACKET_FLAGS) {
            let bytes_left = if f.stop.is_some() { u64::MAX } else { f.size.saturating_sub(seq) };
            if let Some(cc) = f.driver.cc_mut() {
                flags |= (cc.packet_flags(seq, bytes_left) & PATH_FLAGS_MASK) << PATH_SHIFT;
            }
        }
        let packet = Packet {
            seq,
            sent_at: core.now,
            delivered: f.snd_una,
            payload,
            flags,
            ..Packet::new(Kind::Data, id, f.dst, wire, env.data_queue)
        };
        let pkt = core.arena.alloc(packet);
        let jitter = match env.config.tx_jitter {
            0 => 0,
            j => self.rng.below(j),
        };
        self.nic.transmit_delayed(core, pkt, wire, jitter);
        core.counters.bytes_sent += payload as u64;
        if retransmit {
            f.retransmitted += payload as u64;
            core.counters.retransmitted_bytes += payload as u64;
        }
        f.next_tx = if f.rate >= self.nic.rate {
            core.now
        } else {
            core.now + sluice_core::serialization_ps(wire as u64, f.rate)
        };
        if f.driver.events().contains(Events::TX) {
            let sent = Sent {
                bytes: payload as u64,
                packets: 1,
                retransmitted_bytes: if retransmit { payload as u64 } else { 0 },
            };
            self.signal_sent(core, env, f, id, &sent);
        }
        if !f.rto_pending {
            f.rto_pending = true;
            core.schedule(core.now + env.config.rto_min, Event::Rto { flow: id });
        }
    }

    /// A packet addressed to this host arrived.
    pub fn receive(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], pkt: u32) {
        if self.bus.is_some() && self.bus_intercept(core, env, flows, pkt) {
            return;
        }
        let p = *core.arena.get(pkt);
        match p.kind {
            Kind::Data => self.receive_data(core, env, flows, pkt, &p),
            Kind::Ack => self.receive_ack(core, env, flows, pkt, &p),
            Kind::Nack => self.receive_nack(core, env, flows, &p),
            Kind::Probe => {
                let mut echo = Self::control_packet(env, Kind::ProbeAck, p.flow, flows[p.flow as usize].src, 0);
                echo.sent_at = p.sent_at;
                self.queue_control(core, env, echo);
            }
            Kind::ProbeAck => {
                let f = &mut flows[p.flow as usize];
                if f.finish.is_none() && f.driver.events().contains(Events::PROBE) {
                    self.signal_probe(core, env, f, p.flow, core.now - p.sent_at);
                }
            }
            Kind::Cnp => {
                let f = &mut flows[p.flow as usize];
                if f.finish.is_none() && f.driver.events().contains(Events::CNP) {
                    self.signal_cnp(core, env, f, p.flow);
                }
            }
            Kind::Notify => {
                let f = &mut flows[p.flow as usize];
                if f.finish.is_none() && f.started && f.driver.events().contains(Events::FEEDBACK) {
                    let fb = Feedback::QueueNotification {
                        queue: p.seq,
                        link_rate: p.sack,
                        at: p.delivered,
                        sent_at: p.sent_at,
                    };
                    self.signal_feedback(core, env, f, p.flow, fb);
                }
            }
            Kind::Rts => self.rd_receive_request(core, env, flows, &p),
            Kind::Token => self.rd_receive_token(core, env, &mut flows[p.flow as usize], &p),
            Kind::TokenStop => self.rd_receive_stop(&mut flows[p.flow as usize]),
        }
        core.arena.free(pkt);
        if !matches!(p.kind, Kind::Data | Kind::Probe) {
            self.activate(flows, p.flow, core.now, env.link.mtu);
        }
        self.try_send(core, env, flows);
    }

    pub(crate) fn queue_control(&mut self, core: &mut Core, env: &HostEnv, packet: Packet) -> u32 {
        let id = core.arena.alloc(packet);
        self.nic.enqueue(core.now, env.control_queue, id, packet.wire);
        id
    }

    pub(crate) fn control_packet(env: &HostEnv, kind: Kind, flow: u32, to: u32, seq: u64) -> Packet {
        Packet { seq, ..Packet::new(kind, flow, to, env.link.control_bytes, env.control_queue) }
    }

    fn receive_data(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], pkt: u32, p: &Packet) {
        core.counters.bytes_delivered += p.payload as u64;
        if flows[p.flow as usize].rd.is_some() {
            return self.rd_receive_data(core, env, flows, pkt, p);
        }
        let f = &mut flows[p.flow as usize];
        let ce = p.flags & FLAG_CE != 0;
        if ce && f.cnp && f.cnp_interval > 0 && f.last_cnp.is_none_or(|t| core.now - t >= f.cnp_interval) {
            f.last_cnp = Some(core.now);
            core.counters.cnps += 1;
            let cnp = Self::control_packet(env, Kind::Cnp, p.flow, f.src, 0);
            self.queue_control(core, env, cnp);
        }
        f.rcv_ce |= ce;
        if self.endpoint.is_some() || f.rx.is_some() {
            return self.receive_data_endpoint(core, env, flows, pkt, p);
        }
        if p.seq == f.rcv_nxt {
            self.accept_in_order(core, env, f, pkt, p);
        } else if p.seq > f.rcv_nxt {
            self.out_of_order(core, env, f, p);
        } else {
            self.send_ack(core, env, f, pkt, p);
        }
    }

    pub(crate) fn accept_in_order(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
        f.rcv_nxt += p.payload as u64;
        f.rcv_pkts += 1;
        f.rcv_bytes += p.payload as u64;
        while f.ooo.first() == Some(&f.rcv_nxt) {
            f.ooo.pop_first();
            f.rcv_nxt += f.payload_at(f.rcv_nxt, env.link.mtu) as u64;
        }
        let cfg = env.config;
        let due = f.rcv_pkts >= cfg.ack_every_packets
            || (cfg.ack_every_bytes > 0 && f.rcv_bytes >= cfg.ack_every_bytes)
            || f.rcv_nxt >= f.size
            || !f.ooo.is_empty();
        if due {
            self.send_ack(core, env, f, pkt, p);
        }
    }

    pub(crate) fn send_ack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, pkt: u32, p: &Packet) {
        let mut ack = Self::control_packet(env, Kind::Ack, p.flow, f.src, f.rcv_nxt);
        ack.sent_at = p.sent_at;
        ack.delivered = p.delivered;
        ack.sack = core.now;
        ack.flags |= p.flags & PATH_FLAGS;
        if f.rcv_ce {
            ack.flags |= FLAG_ECE;
        }
        f.rcv_pkts = 0;
        f.rcv_bytes = 0;
        f.rcv_ce = false;
        let id = self.queue_control(core, env, ack);
        core.arena.copy_int(pkt, id);
    }

    pub(crate) fn out_of_order(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, p: &Packet) {
        let selective = env.config.loss_recovery == LossRecovery::Selective;
        if selective {
            f.ooo.insert(p.seq);
        } else {
            let repeat =
                f.last_nack.is_some_and(|(seq, at)| seq == f.rcv_nxt && core.now - at < env.config.nack_interval);
            if repeat {
                return;
            }
        }
        f.last_nack = Some((f.rcv_nxt, core.now));
        let mut nack = Self::control_packet(env, Kind::Nack, p.flow, f.src, f.rcv_nxt);
        nack.sack = p.seq;
        nack.sent_at = p.sent_at;
        self.queue_control(core, env, nack);
    }

    /// Advances the ACK point to `seq`; returns the newly acknowledged bytes.
    fn advance(core: &Core, f: &mut Flow, seq: u64) -> u64 {
        if seq <= f.snd_una {
            return 0;
        }
        let newly = seq - f.snd_una;
        f.snd_una = seq;
        f.last_progress = core.now;
        f.snd_nxt = f.snd_nxt.max(seq);
        f.rtx_high = f.rtx_high.max(seq);
        if !f.sacked.is_empty() {
            f.sacked = f.sacked.split_off(&seq);
        }
        newly
    }

    fn receive_ack(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], pkt: u32, p: &Packet) {
        let f = &mut flows[p.flow as usize];
        if f.finish.is_some() || !f.started {
            return;
        }
        let newly = Self::advance(core, f, p.seq);
        crate::transport::token::heard(f);
        let ece = p.flags & FLAG_ECE != 0;
        let cnp = ece && f.cnp && f.cnp_interval == 0 && f.driver.events().contains(Events::CNP);
        if f.driver.events().contains(Events::ACK) || cnp {
            let mut int = [IntHop::default(); MAX_INT_HOPS];
            let hops = core.arena.int(pkt);
            int[..hops.len()].copy_from_slice(hops);
            let n = hops.len();
            let rtt = core.now - p.sent_at;
            let packets = newly.div_ceil(env.link.mtu as u64) as u32;
            let mut ack = Ack::single(newly, packets, ece, Some(rtt), f.snd_una, f.snd_nxt, f.in_flight(), core.now);
            let samples = [rtt];
            ack.rtt_samples = &samples;
            ack.delivery_rate = delivery_rate(f.snd_una - p.delivered.min(f.snd_una), rtt);
            ack.remote_delay = Some(p.host_delay as Time);
            ack.int = &int[..n];
            ack.path_flags = (p.flags & PATH_FLAGS) >> PATH_SHIFT;
            self.signal_ack(core, env, f, p.flow, &ack, cnp);
        }
        if f.snd_una >= f.size {
            finish(core, f);
        }
    }

    fn receive_nack(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], p: &Packet) {
        let f = &mut flows[p.flow as usize];
        if f.finish.is_some() || !f.started {
            return;
        }
        Self::advance(core, f, p.seq);
        if f.rd.is_some() {
            return self.rd_receive_nack(core, env, f, p);
        }
        let lost = match env.config.loss_recovery {
            LossRecovery::GoBackN => go_back(f, p.seq),
            LossRecovery::Selective => queue_holes(f, p.sack, env.link.mtu),
        };
        if lost && f.driver.events().contains(Events::LOSS) {
            let loss = Loss { kind: LossKind::Nack, count: 1, in_flight: f.in_flight(), snd_nxt: f.snd_nxt };
            self.signal_loss(core, env, f, p.flow, &loss);
        }
        if f.snd_una >= f.size {
            finish(core, f);
        }
    }

    /// The RTO check of flow `id` fired.
    pub fn on_rto(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        f.rto_pending = false;
        if f.finish.is_some() || f.snd_una >= f.max_sent {
            return;
        }
        let deadline = f.last_progress + env.config.rto_min;
        if core.now < deadline {
            f.rto_pending = true;
            core.schedule(deadline, Event::Rto { flow: id });
            return;
        }
        core.counters.timeouts += 1;
        f.last_progress = core.now;
        f.snd_nxt = f.snd_una;
        f.sacked.clear();
        f.rtx.clear();
        f.rtx_high = f.snd_una;
        f.next_tx = core.now;
        if f.driver.events().contains(Events::LOSS) {
            let loss =
                Loss { kind: LossKind::Timeout, count: 1, in_flight: f.max_sent - f.snd_una, snd_nxt: f.snd_nxt };
            self.signal_loss(core, env, f, id, &loss);
        }
        if f.in_pacing {
            f.in_pacing = false;
            self.pacing.retain(|Reverse((_, i))| *i != id);
        }
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }

    /// Sends the RTT probe flow `id` (to `dst`) asked for, if any.
    pub(crate) fn maybe_probe(&mut self, core: &mut Core, env: &HostEnv, requested: &mut bool, id: u32, dst: u32) {
        if !*requested {
            return;
        }
        *requested = false;
        let mut probe = Self::control_packet(env, Kind::Probe, id, dst, 0);
        probe.sent_at = core.now;
        self.queue_control(core, env, probe);
    }

    /// Queues flow `id` if decisions opened its window or pacing, and sends if the NIC is free.
    pub(crate) fn after_decisions(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }

    /// Flow `id` starts: its controller is created by the caller; this queues it.
    pub fn start_flow(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }
}

/// Go-back-N: resend from `seq` if anything past it was sent. Returns whether data was lost.
fn go_back(f: &mut Flow, seq: u64) -> bool {
    if f.snd_nxt <= seq {
        return false;
    }
    f.snd_nxt = seq.max(f.snd_una);
    true
}

/// Selective repeat: `sack` arrived out of order; every unsacked packet between the last queued hole and
/// `sack` is resent. Returns whether a new hole was found.
fn queue_holes(f: &mut Flow, sack: u64, mtu: u32) -> bool {
    f.sacked.insert(sack);
    let mut seq = f.rtx_high.max(f.snd_una);
    let mut found = false;
    while seq < sack {
        if !f.sacked.contains(&seq) {
            f.rtx.push_back(seq);
            found = true;
        }
        seq += f.payload_at(seq, mtu) as u64;
    }
    f.rtx_high = f.rtx_high.max(sack + f.payload_at(sack, mtu) as u64);
    found
}

/// Bytes delivered over `interval`, as a rate (None for an empty interval).
fn delivery_rate(bytes: u64, interval: Time) -> Option<sluice_core::Rate> {
    (interval > 0).then(|| (bytes as u128 * 8 * sluice_core::PS_PER_S as u128 / interval as u128) as u64)
}

/// Records that flow `f` has delivered everything and releases its controller.
pub fn finish(core: &mut Core, f: &mut Flow) {
    core.counters.flows_finished += 1;
    if let Some(rd) = f.rd.as_deref() {
        core.counters.rd.tokens_wasted += rd.held_tokens();
    }
    f.finish = Some(core.now);
    f.driver.finish();
}
