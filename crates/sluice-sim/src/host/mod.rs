//! A host: a NIC that serves control packets first and arbitrates round robin among its sending flows
//! (each held to its window and pacing rate), hands what arrives to the flow's transport
//! ([`crate::transport`]), and carries the host-level features: the CC plane's channel, the token
//! transport's pacer, and the host models (endpoint processing queue, host interconnect).

pub mod bus;
pub mod endpoint;
pub mod plane;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use sluice_core::Time;

use crate::config::{HostConfig, LinkConfig};
use crate::engine::packet::{Kind, Packet};
use crate::engine::{Core, Event, HostModelEvent, PlaneEvent, TokenEvent};
use crate::host::bus::HostBus;
use crate::host::endpoint::Endpoint;
use crate::host::plane::HostPlane;
use crate::net::port::Port;
use crate::transport::flow::{Flow, SendState};
use crate::transport::receiver;
use crate::transport::table::FlowTable;
use crate::transport::token::{self, TokenHost};
use crate::transport::{self, window};
use crate::transport::{HostEnv, HostIo};

/// A host's sending flows: the workload's flows as they start (in id order), then the flows closed loops
/// start during the run, in the order they start (their ids come after every workload flow's).
#[derive(Debug, Default)]
pub(crate) struct Senders {
    generated: Vec<u32>,
    later: Vec<u32>,
}

impl Senders {
    /// A workload flow started.
    pub(crate) fn push_generated(&mut self, id: u32) {
        self.generated.push(id);
    }

    /// A closed loop started a flow.
    pub(crate) fn push_later(&mut self, id: u32) {
        self.later.push(id);
    }

    /// All of them: the workload's, then the closed loops'.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.generated.iter().chain(&self.later).copied()
    }
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
    pub(crate) senders: Senders,
    /// This host's CC plane.
    pub(crate) plane: HostPlane,
    /// Draws the host's transmit jitter.
    rng: sluice_core::Rng,
    /// Receiver-driven transport state (token pacer, incoming flows), when a token algorithm runs.
    pub(crate) tokens: Option<Box<TokenHost>>,
    /// The receiving host's processing queue, when the endpoint model is on.
    endpoint: Option<Box<Endpoint>>,
    /// The receiving host's NIC-to-memory path, when the host interconnect model is on.
    bus: Option<Box<HostBus>>,
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
            senders: Senders::default(),
            plane: HostPlane::default(),
            rng: sluice_core::Rng::named(seed, &format!("host.{node}")),
            tokens: None,
            endpoint: None,
            bus: None,
        }
    }

    /// Queues flow `id` for sending if it has something to send.
    #[inline]
    pub fn activate(&mut self, flows: &mut FlowTable, id: u32, now: Time, mtu: u32) {
        transport::activate(&mut self.ready, &mut flows[id as usize], id, now, mtu);
    }

    /// Sends the next packet if the NIC is free: control first, then one data packet from the next ready
    /// flow in round-robin order.
    pub fn try_send(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable) {
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
    pub fn on_wake(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable) {
        if self.wake_at <= core.now {
            self.wake_at = Time::MAX;
        }
        self.try_send(core, env, flows);
    }

    /// The NIC finished a packet.
    pub fn on_port_free(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable) {
        self.nic.free_pending = false;
        self.try_send(core, env, flows);
    }

    /// A PFC frame from the ToR arrived.
    pub fn on_pfc(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, queue: u8, pause: bool) {
        self.nic.set_paused(core.now, queue, pause);
        if !pause {
            self.try_send(core, env, flows);
        }
    }

    /// Moves paced flows whose time has come back to the ready list.
    fn release_paced(&mut self, now: Time, flows: &mut FlowTable) {
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
        let ack = p.kind == Kind::Ack;
        if ack {
            p.host_delay = (core.now - p.sack).min(u32::MAX as Time) as u32;
        }
        let wire = p.wire;
        if ack && core.arena.echoes_host() {
            core.arena.set_host(id, self.bus.as_deref().and_then(HostBus::latest));
        }
        self.nic.dequeue(core.now, q, wire);
        self.nic.transmit(core, id, wire);
        true
    }

    fn send_data(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable) -> bool {
        if self.nic.paused & (1 << env.data_queue) != 0 {
            return false;
        }
        let mtu = env.link.mtu;
        if env.rd.is_some_and(|r| r.transport.srpt) {
            self.srpt_first(flows);
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
            let (mut io, tokens) = self.tokens(core);
            return tokens.send_packet(&mut io, env, f, id);
        }
        let jitter = match env.config.tx_jitter {
            0 => 0,
            j => self.rng.below(j),
        };
        window::send(&mut self.io(core), env, f, id, jitter);
    }

    /// A packet addressed to this host arrived.
    pub fn receive(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, pkt: u32) {
        if let Some(bus) = self.bus.as_deref_mut() {
            if bus.intercept(core, self.node, &self.nic, env.data_queue, pkt) {
                return;
            }
        }
        let p = *core.arena.get(pkt);
        match p.kind {
            Kind::Data => self.receive_data(core, env, flows, pkt, &p),
            Kind::Ack => window::receive_ack(&mut self.io(core), env, &mut flows[p.flow as usize], pkt, &p),
            Kind::Nack => self.receive_nack(core, env, &mut flows[p.flow as usize], &p),
            Kind::Probe => window::echo_probe(&mut self.io(core), env, &flows[p.flow as usize], &p),
            Kind::ProbeAck | Kind::Cnp | Kind::Notify | Kind::Signal => {
                window::receive_signal(&mut self.io(core), env, &mut flows[p.flow as usize], &p)
            }
            Kind::Rts => {
                let (mut io, tokens) = self.tokens(core);
                tokens.receive_request(&mut io, env, flows, &p);
            }
            Kind::Token => {
                let (mut io, tokens) = self.tokens(core);
                tokens.receive_token(&mut io, env, &mut flows[p.flow as usize], &p);
            }
            Kind::TokenStop => token::receive_stop(&mut flows[p.flow as usize]),
        }
        core.arena.free(pkt);
        if !matches!(p.kind, Kind::Data | Kind::Probe) {
            self.activate(flows, p.flow, core.now, env.link.mtu);
        }
        self.try_send(core, env, flows);
    }

    /// This host as its transports see it, for one call.
    pub(crate) fn io<'a>(&'a mut self, core: &'a mut Core) -> HostIo<'a> {
        HostIo { core, node: self.node, nic: &mut self.nic, ready: &mut self.ready, channel: &mut self.plane }
    }

    /// This host as the token transport sees it, with its token-transport state (a token algorithm runs).
    fn tokens<'a>(&'a mut self, core: &'a mut Core) -> (HostIo<'a>, &'a mut TokenHost) {
        let io = HostIo { core, node: self.node, nic: &mut self.nic, ready: &mut self.ready, channel: &mut self.plane };
        (io, self.tokens.as_deref_mut().expect("a token transport runs"))
    }

    /// A token-transport timer of this host fired: flow `id`'s (the sender's or the receiver's), or the
    /// token pacer's.
    pub fn on_token_event(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, event: TokenEvent) {
        let (mut io, tokens) = self.tokens(core);
        let kick = match event {
            TokenEvent::Pace { .. } => tokens.on_token_pace(&mut io, env, flows),
            TokenEvent::Tick { flow, gen } => tokens.on_token_tick(&mut io, env, flows, flow, gen),
            TokenEvent::RxTimer { flow, id, gen } => tokens.on_rx_timer(&mut io, env, flows, flow, id, gen),
            TokenEvent::RxCheck { flow } => tokens.on_rx_check(&mut io, env, flows, flow),
            TokenEvent::TxCheck { flow } => tokens.on_tx_check(&mut io, env, flows, flow),
            TokenEvent::Release { .. } => unreachable!("token limiters are at switches"),
        };
        if kick {
            self.try_send(core, env, flows);
        }
    }

    /// A step of this host's plane channel, or a flow's fold deadline.
    pub fn on_plane_event(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, event: PlaneEvent) {
        let mut io =
            HostIo { core, node: self.node, nic: &mut self.nic, ready: &mut self.ready, channel: &mut self.plane };
        if let Some(id) = plane::on_event(&mut io, env, flows, &self.senders, event) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// A CC timer of flow `id` fired (armed as generation `gen`).
    pub fn on_cc_timer(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, id: u32, timer: u8, gen: u32) {
        if plane::on_cc_timer(&mut self.io(core), env, &mut flows[id as usize], id, timer, gen) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// A step of one of this host's models (endpoint processing queue, host interconnect).
    pub fn on_host_model_event(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        flows: &mut FlowTable,
        event: HostModelEvent,
    ) {
        match event {
            HostModelEvent::EndpointDone { .. } | HostModelEvent::EndpointSample { .. } => {
                let (mut io, Some(e)) = self.endpoint(core) else { return };
                match event {
                    HostModelEvent::EndpointDone { .. } => endpoint::on_done(&mut io, env, flows, e),
                    _ => endpoint::on_sample(&mut io, env, flows, e),
                }
                self.try_send(core, env, flows);
            }
            HostModelEvent::BusDma { .. } => {
                let Some(bus) = self.bus.as_deref_mut() else { return };
                let pkt = bus.on_dma(core, self.node, &self.nic, env.data_queue);
                bus.delivering = true;
                self.receive(core, env, flows, pkt);
                self.bus.as_deref_mut().expect("present").delivering = false;
            }
            HostModelEvent::BusSample { .. } => {
                if let Some(bus) = self.bus.as_deref_mut() {
                    bus.on_sample(core, self.node);
                }
            }
        }
    }

    /// Turns on the host models `config` asks for: a processing queue, a NIC-to-memory path (whose host
    /// policy `factory` supplies).
    pub fn enable_models(&mut self, config: &HostConfig, link: &LinkConfig, factory: &dyn sluice_cc::Factory) {
        if config.endpoint.enabled {
            self.endpoint = Some(Box::new(Endpoint::new(&config.endpoint, self.nic.rate)));
        }
        if config.bus.enabled {
            self.bus = Some(Box::new(HostBus::for_host(&config.bus, &self.nic, link.mtu + link.header_bytes, factory)));
        }
    }

    /// This host as its receivers see it, with its processing queue if it has one.
    fn endpoint<'a>(&'a mut self, core: &'a mut Core) -> (HostIo<'a>, Option<&'a mut Endpoint>) {
        let io = HostIo { core, node: self.node, nic: &mut self.nic, ready: &mut self.ready, channel: &mut self.plane };
        (io, self.endpoint.as_deref_mut())
    }

    /// Flow `id` of a token algorithm starts at this (sending) host.
    pub fn start_token_flow(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let (mut io, tokens) = self.tokens(core);
        tokens.start(&mut io, env, f, id);
    }

    /// Stream `id` of a token algorithm stopped; this host receives it.
    pub fn token_stream_stopped(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let (mut io, tokens) = self.tokens(core);
        if tokens.stream_stopped(&mut io, env, flows, id) {
            self.try_send(core, env, flows);
        }
    }

    fn receive_data(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, pkt: u32, p: &Packet) {
        core.counters.bytes_delivered += p.payload as u64;
        if flows[p.flow as usize].rd.is_some() {
            let (mut io, tokens) = self.tokens(core);
            return tokens.receive_data(&mut io, env, flows, pkt, p);
        }
        let f = &mut flows[p.flow as usize];
        window::data_arrived(&mut self.io(core), env, f, p);
        if self.endpoint.is_some() || f.rx.is_some() {
            let (mut io, endpoint) = self.endpoint(core);
            return receiver::receive_data(&mut io, env, f, pkt, p, endpoint);
        }
        window::receive_data(&mut self.io(core), env, f, pkt, p);
    }

    /// A NACK for flow `f`: its ACK point advances, then its transport recovers.
    fn receive_nack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, p: &Packet) {
        if f.finish.is_some() || !f.started {
            return;
        }
        window::advance(core.now, f, p.seq);
        if f.rd.is_some() {
            let (mut io, tokens) = self.tokens(core);
            return tokens.receive_nack(&mut io, env, f, p);
        }
        window::receive_nack(&mut self.io(core), env, f, p);
    }

    /// The RTO check of flow `id` fired.
    pub fn on_rto(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        let f = &mut flows[id as usize];
        if !window::on_rto(&mut self.io(core), env, f, id) {
            return;
        }
        if f.in_pacing {
            f.in_pacing = false;
            self.pacing.retain(|Reverse((_, i))| *i != id);
        }
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }

    /// Queues flow `id` if decisions opened its window or pacing, and sends if the NIC is free.
    pub(crate) fn after_decisions(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }

    /// Flow `id` starts: its controller is created by the caller; this queues it.
    pub fn start_flow(&mut self, core: &mut Core, env: &HostEnv, flows: &mut FlowTable, id: u32) {
        self.activate(flows, id, core.now, env.link.mtu);
        self.try_send(core, env, flows);
    }

    /// SRPT at the sender: the ready flow with the fewest bytes left goes first.
    fn srpt_first(&mut self, flows: &FlowTable) {
        let left = |i: u32| {
            let f = &flows[i as usize];
            (f.size.saturating_sub(f.snd_nxt), i)
        };
        if let Some(pos) = (0..self.ready.len()).min_by_key(|&k| left(self.ready[k])) {
            self.ready.rotate_left(pos);
        }
    }
}
