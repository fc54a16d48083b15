//! One host's transport, without I/O: the flows it sends (each with its algorithm behind a
//! [`FlowDriver`]) and the flows it receives. The caller feeds it datagrams ([`Endpoint::handle`]),
//! lets its clock run ([`Endpoint::advance`]), and takes what it sends ([`Endpoint::poll_transmit`]),
//! sleeping until [`Endpoint::next_wakeup`] when nothing is due. The same code runs over real sockets
//! ([`crate::io`]) and in tests over an in-memory link.
//!
//! Scheduling: control packets (ACKs, CNPs, tokens) go before data; flows that may send wait in a
//! round-robin ready queue, each sending up to [`TransportConfig::quantum`] packets a turn; a flow held back by its pacing rate sleeps on the timing wheel until its next
//! send time, one held back by its window until an ACK opens it, one of a receiver-driven algorithm
//! until a token comes ([`crate::token`]). The host's own line rate paces everything.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use sluice_cc::{
    Ack, CongestionControl, Decisions, Events, Factory, Feedback, FlowInfo, IntHop, Loss, LossKind, Needs, Sent,
    SignalOrigin,
};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_S};
use sluice_plane::{ChannelEvent, Datapath, FlowDriver, Fold, HostChannel, Message, PlaneConfig, PlaneCounters, Wake};
use sluice_results::{FlowTrace, TraceRecorder};
use sluice_wire::sluice::{
    encode, encode_filler, Flags, IntRecord, Kind, SignalField, SluiceHeader, SluicePacket, SIGNAL_LEN,
};
use sluice_wire::{Ecn, WireError};

use crate::config::{TransportConfig, ETHERNET_BYTES, INT_HOPS_RESERVED, IP_UDP_BYTES};
use crate::flow_index::FlowIndex;
use crate::peer_clock::PeerClock;
use crate::prefetch::prefetch;
use crate::receiver::{Arrival as Landed, Receiver, Receivers};
use crate::sender::{Next, Sender};
use crate::token::{RxLink, TokenCounters, TokenHooks, TokenReceiver, TokenSend, TokenSender, TokenTimer};
use crate::trace_ring::{FlowTracer, TapCounters, TraceStream};
use crate::wheel::Wheel;
use crate::PeerId;

/// Flows a receiver keeps state for at most (more are refused and counted): bounds what spoofed
/// flow ids can make it allocate.
pub const MAX_RECEIVE_FLOWS: usize = 1 << 20;
/// How many turns ahead in the ready queue the endpoint prefetches flows' state: a turn takes a few
/// hundred nanoseconds at 65,536 flows, a miss to memory about one hundred.
const PREFETCH_TURNS: usize = 4;
/// Flows from which the endpoint prefetches (sending ones for what it sends, sending or received for
/// what it receives): below, their state stays in cache between turns
/// and the hints only cost (measured with the `many_flows` example: 4-8% more time per packet at 4,096
/// flows, 7-13% less at 16,384 and 22% less at 65,536).
const PREFETCH_FROM_FLOWS: usize = 8192;
/// INT records an ACK carries back at most.
const MAX_ACK_HOPS: usize = INT_HOPS_RESERVED as usize;

/// A flow to send.
#[derive(Clone)]
pub struct FlowSpec {
    /// Flow id, unique among this endpoint's flows.
    pub id: u32,
    /// The receiver.
    pub peer: PeerId,
    /// Bytes to deliver; `None` for a stream that runs until [`Endpoint::stop_streams`].
    pub size: Option<u64>,
    /// The algorithm's factory.
    pub factory: Arc<dyn Factory>,
    /// What the algorithm needs from the network (ECN marks, CNPs, INT).
    pub needs: Needs,
}

/// How a sent flow ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowResult {
    /// Flow id.
    pub id: u32,
    /// The receiver.
    pub peer: PeerId,
    /// Bytes delivered.
    pub size: u64,
    /// When it started.
    pub start: Time,
    /// When its last byte was acknowledged, or when it failed.
    pub finish: Time,
    /// Payload bytes sent more than once.
    pub retransmitted: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// What the transport did, including every packet it refused and why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportCounters {
    /// Data packets sent (resends included).
    pub data_sent: u64,
    /// Data packets sent again.
    pub retransmits: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// CNPs sent.
    pub cnps_sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Data packets that arrived with Congestion Experienced.
    pub ce_received: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Refused: not a sluice packet of this version, or malformed (bad magic, version, kind, flags,
    /// lengths, truncated).
    pub malformed: u64,
    /// Refused: an ACK, CNP or signal packet for a flow this endpoint does not send.
    pub unknown_flow: u64,
    /// Refused: an ACK, CNP or signal packet from another peer than the flow's receiver.
    pub wrong_peer: u64,
    /// Refused: sequence numbers outside the window (acknowledging bytes never sent, data far ahead).
    pub out_of_window: u64,
    /// Refused: a kind this endpoint does not take (tokens and NACKs for flows of sender-driven
    /// algorithms, requests and receiver-driven data without a receiver algorithm, signal packets for
    /// flows whose algorithm has no switch signal).
    pub unexpected_kind: u64,
    /// Refused: data of a new flow past [`MAX_RECEIVE_FLOWS`].
    pub too_many_flows: u64,
    /// Switch signal values echoed on ACKs (the path's field) handed to the flows' algorithms.
    pub signals_path: u64,
    /// Switch signal values from switches' signal packets handed to the flows' algorithms.
    pub signals_switch: u64,
}

impl TransportCounters {
    /// Adds `o`'s counts to these (the endpoints of one host's threads).
    pub fn add(&mut self, o: &TransportCounters) {
        let TransportCounters {
            data_sent,
            retransmits,
            acks_sent,
            cnps_sent,
            received,
            ce_received,
            timeouts,
            malformed,
            unknown_flow,
            wrong_peer,
            out_of_window,
            unexpected_kind,
            too_many_flows,
            signals_path,
            signals_switch,
        } = *o;
        self.data_sent += data_sent;
        self.retransmits += retransmits;
        self.acks_sent += acks_sent;
        self.cnps_sent += cnps_sent;
        self.received += received;
        self.ce_received += ce_received;
        self.timeouts += timeouts;
        self.malformed += malformed;
        self.unknown_flow += unknown_flow;
        self.wrong_peer += wrong_peer;
        self.out_of_window += out_of_window;
        self.unexpected_kind += unexpected_kind;
        self.too_many_flows += too_many_flows;
        self.signals_path += signals_path;
        self.signals_switch += signals_switch;
    }
}

/// A datagram ready to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where to.
    pub peer: PeerId,
    /// Bytes written into the caller's buffer.
    pub len: usize,
    /// The ECN codepoint of the IP header.
    pub ecn: Ecn,
}

/// Something the timing wheel wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// A flow's pacing delay is over.
    Pace(u32),
    /// A flow's retransmission timeout check.
    Rto(u32),
    /// A flow driver's wake.
    Driver { slot: u32, wake: DriverWake },
    /// The token transport's timers.
    Token(TokenTimer),
    /// The offload channel's steps (offload mode).
    Channel(ChannelEvent),
}

/// [`Wake`] in a form the wheel can order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DriverWake {
    Timer { id: u8, gen: u32 },
    Flush,
}

/// An ACK or CNP waiting to go.
#[derive(Debug, Clone, Copy)]
struct Control {
    peer: PeerId,
    header: SluiceHeader,
    hops: [IntRecord; MAX_ACK_HOPS],
    ecn: Ecn,
}

/// A flow this endpoint sends.
struct SendFlow {
    id: u32,
    peer: PeerId,
    sender: Sender,
    driver: FlowDriver,
    cwnd: u64,
    rate: Rate,
    next_tx: Time,
    flags: u16,
    /// Data packets carry a signal field for the switches' per-hop signal.
    signal: bool,
    ect: bool,
    in_ready: bool,
    pace_armed: bool,
    rto_armed: bool,
    last_timeout: Time,
    /// The latest (send time, offset) an ACK answered: an ACK answering an earlier one reveals
    /// reordering. Packets of one batch share a send time, so their offsets order them.
    latest_answer: (Time, u64),
    start: Time,
    ended: bool,
    /// The algorithm's variables over time, for traced flows.
    trace: Option<Box<FlowTracer>>,
    /// Tokens and requests of a receiver-driven algorithm.
    token: Option<Box<TokenSender>>,
}

/// One host's transport.
pub struct Endpoint {
    config: TransportConfig,
    plane: PlaneConfig,
    /// A receiver's CNP spacing (DCQCN paper: 50 us).
    cnp_interval: Time,
    flows: Vec<SendFlow>,
    slot_of: FlowIndex,
    receivers: Receivers,
    wheel: Wheel<Timer>,
    expired: Vec<Timer>,
    ready: VecDeque<u32>,
    /// The flow whose turn it is at the head of the ready queue, and the packets it sent in the turn.
    turn: (u32, u32),
    control: VecDeque<Control>,
    nic_free: Time,
    active: usize,
    finished: Vec<FlowResult>,
    /// Flows to trace when they open, and the spacing of their rows.
    traced: (HashSet<u32>, Time),
    /// Where traced flows stream their records, when they do (else they keep rows in memory), and
    /// whether every flow is traced.
    stream: Option<(TraceStream, bool)>,
    /// What the streaming taps recorded and dropped.
    taps: TapCounters,
    /// The receiving side of receiver-driven algorithms, when this endpoint runs one.
    tokens: Option<Box<TokenReceiver>>,
    /// The latest time the endpoint was given.
    clock: Time,
    /// When each peer was last heard from.
    peers: PeerClock,
    /// What the sending side of the token transport did.
    token_counters: TokenCounters,
    /// What the transport did, including every packet it refused and why.
    pub counters: TransportCounters,
    /// The host's end of the offload channel, and what the CC plane did (in either mode).
    channel: HostChannel,
}

/// The datapath one flow's driver sees: the flow's window and rate, the wheel for its wakes.
struct UdpPath<'a> {
    now: Time,
    line_rate: Rate,
    plane: &'a PlaneConfig,
    channel: &'a mut HostChannel,
    wheel: &'a mut Wheel<Timer>,
    slot: u32,
    cwnd: &'a mut u64,
    rate: &'a mut Rate,
    trace: &'a mut Option<Box<FlowTracer>>,
    taps: &'a mut TapCounters,
}

impl Datapath for UdpPath<'_> {
    fn now(&self) -> Time {
        self.now
    }

    fn config(&self) -> &PlaneConfig {
        self.plane
    }

    fn line_rate(&self) -> Rate {
        self.line_rate
    }

    fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters) {
        (self.plane, &mut self.channel.counters)
    }

    fn arm(&mut self, wake: Wake, at: Time) {
        let wake = match wake {
            Wake::Timer { id, gen } => DriverWake::Timer { id, gen },
            Wake::Flush => DriverWake::Flush,
        };
        self.wheel.arm(at, Timer::Driver { slot: self.slot, wake });
    }

    fn apply(&mut self, d: &Decisions) {
        apply(self.cwnd, self.rate, self.line_rate, d);
    }

    fn send_report(&mut self, report: Fold) -> Option<Fold> {
        let message = Message { flow: self.slot, report, created: self.now };
        let wheel = &mut *self.wheel;
        self.channel.send_report(message, self.now, self.plane, &mut |at, e| wheel.arm(at, Timer::Channel(e)));
        None
    }

    fn send_decisions(&mut self, decisions: Decisions) {
        let wheel = &mut *self.wheel;
        let schedule = &mut |at, e| wheel.arm(at, Timer::Channel(e));
        self.channel.send_decisions(self.slot, decisions, self.now, self.plane, schedule);
    }

    fn charge_core(&mut self) {
        self.channel.charge_core(self.now, self.plane);
    }

    fn ran(&mut self, cc: &dyn CongestionControl) {
        if let Some(trace) = self.trace.as_mut() {
            trace.record(self.now, &mut |out| cc.trace(out), self.taps);
        }
    }
}

/// The token transport's view of the endpoint: the wheel for its timers, the control queue for its
/// packets.
struct Hooks<'a> {
    wheel: &'a mut Wheel<Timer>,
    control: &'a mut VecDeque<Control>,
}

impl TokenHooks for Hooks<'_> {
    fn arm(&mut self, at: Time, timer: TokenTimer) {
        self.wheel.arm(at, Timer::Token(timer));
    }

    fn send(&mut self, peer: PeerId, header: SluiceHeader, ect: bool) {
        let ecn = if ect { Ecn::Ect0 } else { Ecn::NotEct };
        self.control.push_back(Control { peer, header, hops: [IntRecord::default(); MAX_ACK_HOPS], ecn });
    }
}

impl Endpoint {
    /// An endpoint with no flows, its clock at `now`.
    pub fn new(config: TransportConfig, plane: PlaneConfig, now: Time) -> Endpoint {
        Endpoint {
            config,
            plane,
            cnp_interval: 50 * sluice_core::PS_PER_US,
            flows: Vec::new(),
            slot_of: FlowIndex::default(),
            receivers: Receivers::default(),
            wheel: Wheel::new(config.wheel_tick, now),
            expired: Vec::new(),
            ready: VecDeque::new(),
            turn: (u32::MAX, 0),
            control: VecDeque::new(),
            nic_free: now,
            active: 0,
            finished: Vec::new(),
            traced: (HashSet::new(), 0),
            stream: None,
            taps: TapCounters::default(),
            tokens: None,
            clock: now,
            peers: PeerClock::default(),
            token_counters: TokenCounters::default(),
            counters: TransportCounters::default(),
            channel: HostChannel::default(),
        }
    }

    /// Sets the receiver's CNP spacing (0: one CNP for every marked packet).
    pub fn set_cnp_interval(&mut self, interval: Time) {
        self.cnp_interval = interval;
    }

    /// Runs `factory`'s receiver controllers for the receiver-driven flows this endpoint receives (its
    /// token pacer runs at the endpoint's line rate); refused when `factory` is no token algorithm.
    pub fn receive_tokens(&mut self, factory: Arc<dyn Factory>) -> Result<(), String> {
        let link = RxLink {
            line_rate: self.config.line_rate,
            base_rtt: self.config.base_rtt,
            header_bytes: IP_UDP_BYTES + ETHERNET_BYTES + sluice_wire::sluice::HEADER_LEN as u32,
        };
        let mut receiver = TokenReceiver::new(factory, link).ok_or("the algorithm is not receiver-driven")?;
        receiver.trace(&self.traced.0, self.traced.1);
        self.tokens = Some(Box::new(receiver));
        Ok(())
    }

    /// What the CC plane did: signals, reports, decisions, and in offload mode the channel's work.
    pub fn plane_counters(&self) -> &PlaneCounters {
        &self.channel.counters
    }

    /// What the token transport did at this endpoint, as sender and as receiver.
    pub fn token_counters(&self) -> TokenCounters {
        let s = self.token_counters;
        let r = self.tokens.as_ref().map_or_else(TokenCounters::default, |t| t.counters);
        TokenCounters {
            requests: s.requests,
            tokens_issued: r.tokens_issued,
            tokens_used: s.tokens_used,
            tokens_stale: s.tokens_stale,
            tokens_wasted: s.tokens_wasted,
            unscheduled_bytes: s.unscheduled_bytes,
            scheduled_bytes: s.scheduled_bytes,
            nacks: r.nacks,
            rx_timeouts: r.rx_timeouts,
            tx_timeouts: s.tx_timeouts,
            early_stops: s.early_stops,
            probes: s.probes,
        }
    }

    /// Starts sending `spec` at `now`; refused when its id is taken.
    pub fn open(&mut self, spec: FlowSpec, now: Time) -> Result<(), String> {
        if self.slot_of.get(spec.id).is_some() {
            return Err(format!("flow {} is open already", spec.id));
        }
        let int_hops = spec.needs.int;
        let signal = spec.needs.signal;
        let signal_bytes = if signal { SIGNAL_LEN as u32 } else { 0 };
        let mss =
            self.config.payload_bytes(if int_hops { INT_HOPS_RESERVED } else { 0 }).saturating_sub(signal_bytes).max(1);
        let slot = self.flows.len() as u32;
        let mut flags = if int_hops { Flags::INT_REQUEST } else { 0 };
        if spec.needs.cnp {
            flags |= Flags::CNP_REQUEST;
        }
        let flow = SendFlow {
            id: spec.id,
            peer: spec.peer,
            sender: Sender::new(spec.size, mss, now),
            driver: FlowDriver::default(),
            cwnd: u64::MAX,
            rate: self.config.line_rate,
            next_tx: now,
            flags,
            signal,
            ect: spec.needs.ecn || spec.needs.cnp,
            in_ready: false,
            pace_armed: false,
            rto_armed: false,
            last_timeout: now,
            latest_answer: (0, 0),
            start: now,
            ended: false,
            trace: self.tracer(spec.id),
            token: None,
        };
        let info = FlowInfo {
            flow_id: spec.id as u64,
            mss,
            header_bytes: IP_UDP_BYTES + ETHERNET_BYTES + sluice_wire::sluice::HEADER_LEN as u32 + signal_bytes,
            line_rate: self.config.line_rate,
            base_rtt: self.config.base_rtt,
            hops: 1,
            size: spec.size,
            start: now,
        };
        let cc = spec.factory.create(&info);
        self.flows.push(flow);
        self.slot_of.insert(spec.id, slot);
        self.drive(now, slot, |d, dp| d.start(cc, &info, dp));
        self.active += 1;
        if let Some(transport) = spec.factory.token_transport() {
            self.open_token_flow(slot, TokenSender::new(transport, &info), now);
        }
        self.wake(slot);
        Ok(())
    }

    /// A receiver-driven flow asks its receiver for tokens; the receiver finds its losses, and the
    /// retransmission timer only watches for a vanished peer.
    fn open_token_flow(&mut self, slot: u32, mut token: TokenSender, now: Time) {
        let f = &mut self.flows[slot as usize];
        f.sender.receiver_recovers = true;
        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
        token.start(&mut hooks, f.peer, f.id, slot, now);
        self.token_counters.requests += 1;
        f.token = Some(Box::new(token));
        f.rto_armed = true;
        self.wheel.arm(now + self.config.peer_timeout, Timer::Rto(slot));
    }

    /// Traces the algorithm's variables of the flows `ids` that open from now on, a row at most every
    /// `interval` (the simulator's `output.trace_flows` and `output.trace_interval`).
    pub fn trace(&mut self, ids: &[u32], interval: Time) {
        self.traced = (ids.iter().copied().collect(), interval);
        if let Some(tokens) = self.tokens.as_mut() {
            tokens.trace(&self.traced.0, interval);
        }
    }

    /// Streams the algorithm's variables of the flows `ids` (every flow if `all`) that open from now on
    /// through `stream`, a record whenever one changes (at most as often as the stream's interval).
    pub fn stream_traces(&mut self, ids: &[u32], all: bool, stream: TraceStream) {
        self.traced.0 = ids.iter().copied().collect();
        self.stream = Some((stream, all));
    }

    /// What the streaming taps recorded and dropped.
    pub fn tap_counters(&self) -> TapCounters {
        self.taps
    }

    /// The tracer of a new flow `id`, if it is traced.
    fn tracer(&self, id: u32) -> Option<Box<FlowTracer>> {
        match &self.stream {
            Some((stream, all)) => {
                (*all || self.traced.0.contains(&id)).then(|| Box::new(FlowTracer::Streamed(stream.tap(u64::from(id)))))
            }
            None => self.traced.0.contains(&id).then(|| Box::new(FlowTracer::Kept(TraceRecorder::new(self.traced.1)))),
        }
    }

    /// The traces of the traced flows, by flow id: of the flows this endpoint sends, and of the
    /// receiver-driven flows it receives (their receiver controllers'), leaving out traces without rows
    /// (a token algorithm's sender traces nothing).
    pub fn traces(&self) -> Vec<FlowTrace> {
        let sent = self.flows.iter().filter_map(|f| Some(f.trace.as_ref()?.kept()?.to_trace(f.id as u64)));
        let received = self.tokens.iter().flat_map(|t| t.traces());
        let mut traces: Vec<FlowTrace> = sent.chain(received).filter(|t| !t.is_empty()).collect();
        traces.sort_by_key(FlowTrace::flow);
        traces
    }

    /// Flows still sending.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Payload bytes flow `id` has had acknowledged cumulatively, if this endpoint sends it. A
    /// receiver-driven flow's sender hears only of its last byte (and answers to repeated requests), so
    /// for it this counts the new bytes sent, which reach the receiver a one-way trip later: the
    /// simulator counts what such a flow's receiver has.
    pub fn acknowledged(&self, id: u32) -> Option<u64> {
        let flow = &self.flows[self.slot_of.get(id)? as usize];
        Some(match flow.token {
            Some(_) => flow.sender.snd_nxt.max(flow.sender.snd_una),
            None => flow.sender.snd_una,
        })
    }

    /// Flows that ended since the last call, in the order they ended.
    pub fn take_finished(&mut self) -> Vec<FlowResult> {
        std::mem::take(&mut self.finished)
    }

    /// Flows received from, with the bytes each delivered: `((peer, flow), bytes)`.
    pub fn received(&self) -> impl Iterator<Item = ((PeerId, u32), u64)> + '_ {
        self.receivers.iter().map(|(k, r)| (*k, r.delivered))
    }

    /// Ends every stream: each delivers what it has sent and then finishes.
    pub fn stop_streams(&mut self) {
        for slot in 0..self.flows.len() as u32 {
            self.stop_slot(slot);
        }
    }

    /// Ends stream `id` (a sized flow goes on): it delivers what it has sent and then finishes.
    pub fn stop_stream(&mut self, id: u32) {
        if let Some(slot) = self.slot_of.get(id) {
            self.stop_slot(slot);
        }
    }

    fn stop_slot(&mut self, slot: u32) {
        let f = &mut self.flows[slot as usize];
        if !f.ended && f.sender.size.is_none() {
            f.sender.stop();
            if let Some(token) = f.token.as_mut() {
                let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
                token.stop(&mut hooks, f.peer, f.id, f.sender.snd_nxt, self.clock);
                self.token_counters.requests += 1;
            }
            if f.sender.done() {
                let at = f.sender.last_progress;
                self.end(slot, at, None);
            }
        }
    }

    /// Ends every flow still sending at `now` with the error `why` (the run is over).
    pub fn abandon(&mut self, now: Time, why: &str) {
        for slot in 0..self.flows.len() as u32 {
            if !self.flows[slot as usize].ended {
                self.end(slot, now, Some(why.to_string()));
            }
        }
    }

    /// Takes a datagram from `peer` whose IP header carried `ecn`; a packet that is refused is counted
    /// and its reason returned.
    pub fn handle(&mut self, now: Time, peer: PeerId, ecn: Ecn, datagram: &[u8]) -> Result<(), Refused> {
        self.counters.received += 1;
        self.clock = self.clock.max(now);
        let packet = SluicePacket::parse(datagram).map_err(|e| {
            self.counters.malformed += 1;
            Refused::Malformed(e)
        })?;
        self.peers.heard(peer, now);
        let h = &packet.header;
        match h.kind {
            Kind::Data if h.flags.has(Flags::RECEIVER_DRIVEN) => self.on_token_data(now, peer, ecn, h),
            Kind::Data => self.on_data(now, peer, ecn, &packet),
            Kind::Ack => self.on_ack(now, peer, &packet),
            Kind::Cnp => self.on_cnp(now, peer, h),
            Kind::Token => self.on_token(now, peer, ecn, h),
            Kind::Nack => self.on_nack(now, peer, h),
            Kind::Request => self.on_request(now, peer, h),
            Kind::Stop => self.on_stop(peer, h),
            Kind::Signal => self.on_signal(now, peer, h),
        }
    }

    /// The transport's settings.
    pub fn settings(&self) -> &TransportConfig {
        &self.config
    }

    /// Whether the flows' state outgrows the caches (8,192 flows sent or received), so that prefetching
    /// it pays.
    pub fn prefetches(&self) -> bool {
        self.active.max(self.receivers.len()) >= PREFETCH_FROM_FLOWS
    }

    /// Brings into cache the state that `datagram` from `peer`, due to be handled soon, will touch: its
    /// flow's struct, or with `deep` (a later call, when the struct has come) what the struct points to.
    /// A hint that changes nothing, worth its cost only while [`Endpoint::prefetches`].
    pub fn prefetch_for(&self, peer: PeerId, datagram: &[u8], deep: bool) {
        let Ok(h) = SluiceHeader::parse(datagram) else { return };
        match h.kind {
            Kind::Ack | Kind::Cnp | Kind::Signal => {
                let Some(slot) = self.slot_of.get(h.flow) else { return };
                let f = &self.flows[slot as usize];
                match deep {
                    false => prefetch(f),
                    true => {
                        f.sender.prefetch();
                        if let Some(cc) = f.driver.cc() {
                            prefetch(cc);
                        }
                    }
                }
            }
            Kind::Data if !deep => {
                if let Some(r) = self.receivers.get(&(peer, h.flow)) {
                    prefetch(r);
                }
            }
            _ => {}
        }
    }

    /// Runs everything due by `now`: pacing delays, retransmission timeouts, the algorithms' timers
    /// and report deadlines.
    pub fn advance(&mut self, now: Time) {
        self.clock = self.clock.max(now);
        let mut expired = std::mem::take(&mut self.expired);
        self.wheel.expire(now, &mut expired);
        for timer in expired.drain(..) {
            match timer {
                Timer::Pace(slot) => {
                    self.flows[slot as usize].pace_armed = false;
                    self.wake(slot);
                }
                Timer::Rto(slot) => self.on_rto(now, slot),
                Timer::Driver { slot, wake } => self.on_driver_wake(now, slot, wake),
                Timer::Token(TokenTimer::Tx { slot }) => self.on_tx_timer(now, slot),
                Timer::Channel(step) => self.on_channel(now, step),
                Timer::Token(timer) => {
                    if let Some(tokens) = self.tokens.as_mut() {
                        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
                        tokens.on_timer(&mut hooks, timer, &self.receivers, now);
                    }
                }
            }
        }
        self.expired = expired;
    }

    /// Writes the next datagram due at `now` into `buf` (at least the MTU long); `None` when nothing
    /// may go before [`Endpoint::next_wakeup`] or an arrival.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if let Some(c) = self.control.pop_front() {
            let hops = &c.hops[..c.header.int_hops as usize];
            let len = encode(&c.header, hops, &[], buf).ok()?;
            return Some(Transmit { peer: c.peer, len, ecn: c.ecn });
        }
        let horizon = now + self.config.burst;
        while self.nic_free <= horizon {
            let slot = self.ready.pop_front()?;
            if self.active >= PREFETCH_FROM_FLOWS {
                self.prefetch_ahead();
            }
            if self.turn.0 != slot {
                self.turn = (slot, 0);
            }
            let f = &mut self.flows[slot as usize];
            f.in_ready = false;
            if f.ended {
                continue;
            }
            if f.next_tx > horizon {
                if !f.pace_armed {
                    f.pace_armed = true;
                    self.wheel.arm(f.next_tx - self.config.burst, Timer::Pace(slot));
                }
                continue;
            }
            let next = f.sender.next(f.cwnd);
            let send = match f.token.as_mut() {
                None => match next {
                    Some(next) => TokenSend::Data(next, 0, 0),
                    None => continue,
                },
                Some(token) => match token.take(next, now, &mut self.token_counters) {
                    Some(send) => send,
                    None => continue,
                },
            };
            return Some(match send {
                TokenSend::Data(next, flags, token) => self.send_data(now, slot, next, flags, token, buf),
                TokenSend::Probe(seq) => self.send_probe(now, slot, seq, buf),
            });
        }
        None
    }

    /// When the endpoint next has something to do without an arrival: the wheel's earliest entry or the
    /// NIC's next free time (less the burst allowance) when flows wait for it; `None` when only
    /// arrivals can wake it.
    pub fn next_wakeup(&self) -> Option<Time> {
        let nic = (!self.ready.is_empty() || !self.control.is_empty())
            .then(|| self.nic_free.saturating_sub(self.config.burst));
        match (nic, self.wheel.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sends `next` of flow `slot` with `extra` flags and, for scheduled receiver-driven data, the number
    /// of the `token` it spends.
    fn send_data(&mut self, now: Time, slot: u32, next: Next, extra: u16, token: u64, buf: &mut [u8]) -> Transmit {
        let f = &mut self.flows[slot as usize];
        let mut flags = f.flags | extra;
        if next.retransmit {
            flags |= Flags::RETRANSMIT;
            self.counters.retransmits += 1;
        }
        if next.seq == 0 {
            flags |= Flags::FIRST;
        }
        if f.sender.size == Some(next.seq + next.len as u64) {
            flags |= Flags::LAST;
        }
        let header = SluiceHeader {
            flags: Flags(flags),
            seq: next.seq,
            sent_ns: now / PS_PER_NS,
            offset: token,
            signal: f.signal.then_some(SignalField::default()),
            ..SluiceHeader::new(Kind::Data, f.id)
        };
        let len = encode_filler(&header, &[], next.len as usize, buf).expect("buffers hold an MTU");
        f.sender.sent(next, now);
        self.counters.data_sent += 1;
        self.pace(now, slot, len);
        let f = &mut self.flows[slot as usize];
        let transmit = Transmit { peer: f.peer, len, ecn: if f.ect { Ecn::Ect0 } else { Ecn::NotEct } };
        if !f.rto_armed {
            f.rto_armed = true;
            let at = now + f.sender.timeout(self.config.rto_min, self.config.rto_backoff);
            self.wheel.arm(at, Timer::Rto(slot));
        }
        if f.driver.events().contains(Events::TX) {
            let sent = Sent {
                bytes: next.len as u64,
                packets: 1,
                retransmitted_bytes: if next.retransmit { next.len as u64 } else { 0 },
            };
            self.drive(now, slot, |d, dp| d.on_sent(&sent, dp));
        }
        self.requeue(slot);
        transmit
    }

    /// Sends flow `slot`'s Aeolus probe: a header at offset `seq`, after its unscheduled burst.
    fn send_probe(&mut self, now: Time, slot: u32, seq: u64, buf: &mut [u8]) -> Transmit {
        let f = &self.flows[slot as usize];
        let header = SluiceHeader {
            flags: Flags(f.flags | Flags::RECEIVER_DRIVEN | Flags::PROBE),
            seq,
            sent_ns: now / PS_PER_NS,
            ..SluiceHeader::new(Kind::Data, f.id)
        };
        let len = encode(&header, &[], &[], buf).expect("buffers hold an MTU");
        let transmit = Transmit { peer: f.peer, len, ecn: Ecn::NotEct };
        self.pace(now, slot, len);
        self.requeue(slot);
        transmit
    }

    /// Moves flow `slot`'s and the NIC's next send times past a datagram of `len` bytes sent at `now`.
    fn pace(&mut self, now: Time, slot: u32, len: usize) {
        let f = &mut self.flows[slot as usize];
        let wire_bits = (len as u64 + (IP_UDP_BYTES + ETHERNET_BYTES) as u64) * 8;
        // Pacing runs on the packets' own schedule, not on when a burst released them or a late wake-up
        // sent them: up to a credit behind, the schedule catches up.
        let credit = |rate: Rate| self.config.pacing_credit(rate);
        f.next_tx = f.next_tx.max(now.saturating_sub(credit(f.rate))) + wire_bits * PS_PER_S / f.rate.max(1);
        let nic_rate = self.config.nic_rate();
        self.nic_free = self.nic_free.max(now.saturating_sub(credit(nic_rate))) + wire_bits * PS_PER_S / nic_rate;
    }

    fn on_data(&mut self, now: Time, peer: PeerId, ecn: Ecn, p: &SluicePacket) -> Result<(), Refused> {
        let h = &p.header;
        let key = (peer, h.flow);
        if self.receivers.len() >= MAX_RECEIVE_FLOWS && !self.receivers.contains_key(&key) {
            self.counters.too_many_flows += 1;
            return Err(Refused::TooManyFlows);
        }
        let ce = ecn == Ecn::Ce;
        self.counters.ce_received += ce as u64;
        let r = self.receivers.get_or_default(key);
        let Some(arrival) = r.on_data(h.seq, h.payload_len, ce, now) else {
            self.counters.out_of_window += 1;
            return Err(Refused::OutOfWindow);
        };
        let last = h.flags.has(Flags::LAST);
        if r.ack_due(arrival, ce, last, self.config.ack_every_packets) {
            let ack = r.take_ack(h.seq, h.sent_ns, ce);
            let mut hops = [IntRecord::default(); MAX_ACK_HOPS];
            let mut n = 0u8;
            for (slot, hop) in hops.iter_mut().zip(p.hops()) {
                *slot = hop;
                n += 1;
            }
            // The path's signal field goes back as it came.
            let header = SluiceHeader { int_hops: n, signal: h.signal, ..ack.header(h.flow, now) };
            self.control.push_back(Control { peer, header, hops, ecn: Ecn::NotEct });
            self.counters.acks_sent += 1;
        }
        if ce && h.flags.has(Flags::CNP_REQUEST) && r.cnp_due(now, self.cnp_interval) {
            let header = SluiceHeader { sent_ns: now / PS_PER_NS, ..SluiceHeader::new(Kind::Cnp, h.flow) };
            self.control.push_back(Control {
                peer,
                header,
                hops: [IntRecord::default(); MAX_ACK_HOPS],
                ecn: Ecn::NotEct,
            });
            self.counters.cnps_sent += 1;
        }
        Ok(())
    }

    /// The flow slot an ACK or CNP from `peer` for `flow` belongs to.
    fn sending_slot(&mut self, peer: PeerId, flow: u32) -> Result<u32, Refused> {
        let Some(slot) = self.slot_of.get(flow) else {
            self.counters.unknown_flow += 1;
            return Err(Refused::UnknownFlow);
        };
        if self.flows[slot as usize].peer != peer {
            self.counters.wrong_peer += 1;
            return Err(Refused::WrongPeer);
        }
        Ok(slot)
    }

    fn on_ack(&mut self, now: Time, peer: PeerId, p: &SluicePacket) -> Result<(), Refused> {
        let h = &p.header;
        let slot = self.sending_slot(peer, h.flow)?;
        let f = &mut self.flows[slot as usize];
        if f.ended {
            return Ok(());
        }
        if let Some(token) = f.token.as_mut() {
            token.on_ack(now);
        }
        let echo = h.echo_ns.saturating_mul(PS_PER_NS);
        let Some(effect) = f.sender.on_ack(h.seq, h.offset, echo, now) else {
            self.counters.out_of_window += 1;
            return Err(Refused::OutOfWindow);
        };
        let answer = (echo, h.offset);
        let reordered = answer < f.latest_answer;
        f.latest_answer = f.latest_answer.max(answer);
        let events = f.driver.events();
        if events.contains(Events::ACK) {
            let mut int = [IntHop::default(); MAX_ACK_HOPS];
            let n = p.hops().take(MAX_ACK_HOPS).zip(int.iter_mut()).map(|(r, hop)| *hop = int_hop(&r)).count();
            let samples = [effect.rtt.unwrap_or(0)];
            let bytes = h.bytes as u64;
            let ack = Ack {
                acks: 1,
                acked_bytes: bytes,
                acked_packets: bytes.div_ceil(f.sender.mss as u64) as u32,
                ecn_bytes: h.ce_bytes as u64,
                ecn_packets: (h.ce_bytes as u64).div_ceil(f.sender.mss as u64) as u32,
                ecn_echo: h.ce_bytes > 0 || h.flags.has(Flags::ECN_ECHO),
                rtt: effect.rtt,
                rtt_samples: if effect.rtt.is_some() { &samples } else { &[] },
                delivery_rate: effect.delivery_rate,
                snd_una: f.sender.snd_una,
                snd_nxt: f.sender.snd_nxt,
                in_flight: f.sender.in_flight(),
                int: &int[..n],
                remote_delay: None,
                first_at: now,
                path_flags: 0,
                dup_acks: (effect.newly_acked == 0 && bytes == 0) as u32,
                reordered: reordered as u32,
            };
            self.drive(now, slot, |d, dp| d.on_ack(&ack, false, dp));
        }
        if let Some(signal) = h.signal.filter(|s| s.hops > 0 && events.contains(Events::FEEDBACK)) {
            // After the ACK, as the simulator hands over the path's value.
            let origin = SignalOrigin::Path(signal.hops);
            let feedback = Feedback::Signal { value: signal.value, origin, at: now, sent_at: echo };
            self.counters.signals_path += 1;
            self.drive(now, slot, |d, dp| d.on_feedback(feedback, dp));
        }
        let f = &mut self.flows[slot as usize];
        if effect.lost > 0 && events.contains(Events::LOSS) {
            let loss = Loss {
                kind: LossKind::FastRetransmit,
                count: effect.lost,
                in_flight: f.sender.in_flight(),
                snd_nxt: f.sender.snd_nxt,
            };
            self.drive(now, slot, |d, dp| d.on_loss(&loss, dp));
        }
        if self.flows[slot as usize].sender.done() {
            self.end(slot, now, None);
        } else {
            self.wake(slot);
        }
        Ok(())
    }

    fn on_cnp(&mut self, now: Time, peer: PeerId, h: &SluiceHeader) -> Result<(), Refused> {
        let slot = self.sending_slot(peer, h.flow)?;
        let f = &self.flows[slot as usize];
        if !f.ended && f.driver.events().contains(Events::CNP) {
            self.drive(now, slot, |d, dp| d.on_cnp(dp));
            self.wake(slot);
        }
        Ok(())
    }

    /// A switch's signal packet for a flow this endpoint sends: its value goes to the algorithm. The
    /// switch's clock is not this host's, so `at` is the packet's arrival here; `sent_at` is the data
    /// packet's send time, which the switch echoed.
    fn on_signal(&mut self, now: Time, peer: PeerId, h: &SluiceHeader) -> Result<(), Refused> {
        let slot = self.sending_slot(peer, h.flow)?;
        let f = &self.flows[slot as usize];
        if !f.signal {
            self.counters.unexpected_kind += 1;
            return Err(Refused::UnexpectedKind);
        }
        if !f.ended && f.driver.events().contains(Events::FEEDBACK) {
            let origin = SignalOrigin::Switch(h.bytes);
            let sent_at = h.echo_ns.saturating_mul(PS_PER_NS);
            let feedback = Feedback::Signal { value: h.seq, origin, at: now, sent_at };
            self.counters.signals_switch += 1;
            self.drive(now, slot, |d, dp| d.on_feedback(feedback, dp));
            self.wake(slot);
        }
        Ok(())
    }

    fn on_rto(&mut self, now: Time, slot: u32) {
        let f = &mut self.flows[slot as usize];
        f.rto_armed = false;
        if f.token.is_some() {
            return self.watch_token_peer(now, slot);
        }
        if f.ended || !f.sender.outstanding() {
            return;
        }
        let deadline =
            f.sender.last_progress.max(f.last_timeout) + f.sender.timeout(self.config.rto_min, self.config.rto_backoff);
        if now < deadline {
            f.rto_armed = true;
            self.wheel.arm(deadline, Timer::Rto(slot));
            return;
        }
        // A flow starved of its turns makes no progress for long; its peer is gone only if silent.
        let heard = self.peers.last_heard(f.peer).map_or(f.sender.last_progress, |t| t.max(f.sender.last_progress));
        if now.saturating_sub(heard) >= self.config.peer_timeout {
            let error = format!(
                "no acknowledgment from peer {} for {} ms: the peer is gone",
                f.peer,
                self.config.peer_timeout / sluice_core::PS_PER_MS
            );
            self.end(slot, now, Some(error));
            return;
        }
        self.counters.timeouts += 1;
        f.last_timeout = now;
        let count = f.sender.on_timeout();
        f.rto_armed = true;
        self.wheel.arm(now + f.sender.timeout(self.config.rto_min, self.config.rto_backoff), Timer::Rto(slot));
        if f.driver.events().contains(Events::LOSS) {
            let loss =
                Loss { kind: LossKind::Timeout, count, in_flight: f.sender.in_flight(), snd_nxt: f.sender.snd_nxt };
            self.drive(now, slot, |d, dp| d.on_loss(&loss, dp));
        }
        self.wake(slot);
    }

    /// A step of the offload channel (offload mode): reports reach the plane core, the core hands them
    /// to their flows' algorithms, and decisions come back.
    fn on_channel(&mut self, now: Time, step: ChannelEvent) {
        let wheel = &mut self.wheel;
        let schedule = &mut |at, e| wheel.arm(at, Timer::Channel(e));
        let stretch = match step {
            ChannelEvent::BatchDeadline => {
                self.channel.on_batch_deadline(now, &self.plane, schedule);
                None
            }
            ChannelEvent::Arrive => self.channel.on_arrive(now, &self.plane, schedule),
            ChannelEvent::CoreDone => {
                if let Some(m) = self.channel.on_core_done() {
                    if !self.flows[m.flow as usize].ended {
                        self.drive(now, m.flow, |d, dp| d.deliver(&m.report, dp));
                        self.wake(m.flow);
                    }
                }
                let wheel = &mut self.wheel;
                self.channel.after_core_done(now, &self.plane, &mut |at, e| wheel.arm(at, Timer::Channel(e)))
            }
            ChannelEvent::Decision => {
                if let Some((slot, d)) = self.channel.take_decision() {
                    let f = &mut self.flows[slot as usize];
                    if !f.ended {
                        apply(&mut f.cwnd, &mut f.rate, self.config.line_rate, &d);
                        self.wake(slot);
                    }
                }
                None
            }
        };
        if let Some(stretch) = stretch {
            self.flows.iter_mut().filter(|f| !f.ended).for_each(|f| f.driver.set_stretch(stretch));
        }
    }

    /// A receiver-driven flow's retransmission timer: the receiver finds losses, so the timer only ends a
    /// flow that heard nothing from its peer for the peer timeout.
    fn watch_token_peer(&mut self, now: Time, slot: u32) {
        let f = &mut self.flows[slot as usize];
        let flow_heard = f.token.as_ref().map_or(f.start, |t| t.heard_at().max(f.start));
        let heard = self.peers.last_heard(f.peer).map_or(flow_heard, |t| t.max(flow_heard));
        if f.ended {
            return;
        }
        let deadline = heard + self.config.peer_timeout;
        if now < deadline {
            f.rto_armed = true;
            self.wheel.arm(deadline, Timer::Rto(slot));
            return;
        }
        let error = format!(
            "nothing from peer {} for {} ms: the peer is gone, or runs no receiver for this algorithm",
            f.peer,
            self.config.peer_timeout / sluice_core::PS_PER_MS
        );
        self.end(slot, now, Some(error));
    }

    /// Receiver-driven data: the token transport's receiving side takes it.
    fn on_token_data(&mut self, now: Time, peer: PeerId, ecn: Ecn, h: &SluiceHeader) -> Result<(), Refused> {
        let ce = ecn == Ecn::Ce;
        self.with_token_receiver((peer, h.flow), |tokens, hooks, r, counters| {
            counters.ce_received += ce as u64;
            let landed = if h.flags.has(Flags::PROBE) {
                Landed::Duplicate
            } else {
                r.on_data(h.seq, h.payload_len, ce, now).ok_or_else(|| {
                    counters.out_of_window += 1;
                    Refused::OutOfWindow
                })?
            };
            tokens.on_data(hooks, (peer, h.flow), h, landed, ce, r, now);
            Ok(())
        })
    }

    /// A request to send: the token transport's receiving side opens the flow (or answers a repeat).
    fn on_request(&mut self, now: Time, peer: PeerId, h: &SluiceHeader) -> Result<(), Refused> {
        self.with_token_receiver((peer, h.flow), |tokens, hooks, r, _| {
            tokens.on_request(hooks, (peer, h.flow), h, r, now);
            Ok(())
        })
    }

    /// Hands a message of receiver-driven flow `key` to the token transport's receiving side with the
    /// flow's reassembly state; refused without a receiver algorithm, or for a new flow past
    /// [`MAX_RECEIVE_FLOWS`]. Counts the ACKs it sent.
    fn with_token_receiver(
        &mut self,
        key: (PeerId, u32),
        call: impl FnOnce(&mut TokenReceiver, &mut Hooks, &mut Receiver, &mut TransportCounters) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        let Some(tokens) = self.tokens.as_mut() else {
            self.counters.unexpected_kind += 1;
            return Err(Refused::UnexpectedKind);
        };
        if self.receivers.len() >= MAX_RECEIVE_FLOWS && !self.receivers.contains_key(&key) {
            self.counters.too_many_flows += 1;
            return Err(Refused::TooManyFlows);
        }
        let r = self.receivers.get_or_default(key);
        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
        let before = hooks.control.len();
        let result = call(tokens, &mut hooks, r, &mut self.counters);
        self.counters.acks_sent += count_kind(&self.control, before, Kind::Ack);
        result
    }

    /// A sender asked its receiver to stop issuing tokens.
    fn on_stop(&mut self, peer: PeerId, h: &SluiceHeader) -> Result<(), Refused> {
        let Some(tokens) = self.tokens.as_mut() else {
            self.counters.unexpected_kind += 1;
            return Err(Refused::UnexpectedKind);
        };
        if !tokens.stop(&(peer, h.flow)) {
            self.counters.unknown_flow += 1;
            return Err(Refused::UnknownFlow);
        }
        Ok(())
    }

    /// The receiver-driven flow in `slot` of a token or NACK from `peer`.
    fn token_slot(&mut self, peer: PeerId, flow: u32) -> Result<u32, Refused> {
        let slot = self.sending_slot(peer, flow)?;
        if self.flows[slot as usize].token.is_none() {
            self.counters.unexpected_kind += 1;
            return Err(Refused::UnexpectedKind);
        }
        Ok(slot)
    }

    fn on_token(&mut self, now: Time, peer: PeerId, ecn: Ecn, h: &SluiceHeader) -> Result<(), Refused> {
        let slot = self.token_slot(peer, h.flow)?;
        let f = &mut self.flows[slot as usize];
        let token = f.token.as_mut().expect("a receiver-driven flow");
        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
        token.on_token(&mut hooks, h, ecn == Ecn::Ce, &f.sender, peer, now, &mut self.token_counters);
        self.wake(slot);
        Ok(())
    }

    fn on_nack(&mut self, now: Time, peer: PeerId, h: &SluiceHeader) -> Result<(), Refused> {
        let slot = self.token_slot(peer, h.flow)?;
        let f = &mut self.flows[slot as usize];
        // A NACK for data not sent yet is the receiver's loss check running ahead of the tokens: the
        // sender hears it and sends that data when a token comes.
        let token = f.token.as_mut().expect("a receiver-driven flow");
        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
        token.on_nack(&mut hooks, &mut f.sender, h.offset, peer, h.flow, now, &mut self.token_counters);
        self.wake(slot);
        Ok(())
    }

    /// A receiver-driven flow's request timer.
    fn on_tx_timer(&mut self, now: Time, slot: u32) {
        let f = &mut self.flows[slot as usize];
        let Some(token) = f.token.as_mut().filter(|_| !f.ended) else { return };
        let mut hooks = Hooks { wheel: &mut self.wheel, control: &mut self.control };
        token.on_tx_timer(&mut hooks, &f.sender, f.peer, f.id, slot, now, &mut self.token_counters);
    }

    fn on_driver_wake(&mut self, now: Time, slot: u32, wake: DriverWake) {
        if self.flows[slot as usize].ended {
            return;
        }
        match wake {
            DriverWake::Timer { id, gen } => self.drive(now, slot, |d, dp| d.on_timer(id, gen, dp)),
            DriverWake::Flush => self.drive(now, slot, |d, dp| d.on_flush(dp)),
        };
        self.wake(slot);
    }

    /// Puts flow `slot` in the ready queue unless it waits there already or has ended.
    fn wake(&mut self, slot: u32) {
        let f = &mut self.flows[slot as usize];
        if !f.in_ready && !f.ended {
            f.in_ready = true;
            self.ready.push_back(slot);
        }
    }

    /// Brings the state of the flows a few turns ahead in the ready queue into cache, in two steps: a
    /// flow's own struct first, and a turn later what it points to (its scoreboard and its algorithm).
    fn prefetch_ahead(&self) {
        if let Some(&slot) = self.ready.get(PREFETCH_TURNS) {
            prefetch(&self.flows[slot as usize]);
        }
        if let Some(&slot) = self.ready.get(PREFETCH_TURNS / 2) {
            let f = &self.flows[slot as usize];
            f.sender.prefetch();
            if let Some(cc) = f.driver.cc() {
                prefetch(cc);
            }
        }
    }

    /// Puts flow `slot`, which just sent, back in the ready queue: at the head while its turn lasts (a
    /// quantum of packets), else at the tail for the next turn.
    fn requeue(&mut self, slot: u32) {
        let f = &mut self.flows[slot as usize];
        if f.in_ready || f.ended {
            return;
        }
        f.in_ready = true;
        self.turn.1 += 1;
        if self.turn.0 == slot && self.turn.1 < self.config.quantum {
            self.ready.push_front(slot);
        } else {
            self.turn = (u32::MAX, 0);
            self.ready.push_back(slot);
        }
    }

    fn end(&mut self, slot: u32, now: Time, error: Option<String>) {
        let f = &mut self.flows[slot as usize];
        f.ended = true;
        f.driver.finish();
        self.active -= 1;
        self.finished.push(FlowResult {
            id: f.id,
            peer: f.peer,
            size: f.sender.snd_una,
            start: f.start,
            finish: now,
            retransmitted: f.sender.retransmitted,
            error,
        });
    }

    /// Runs `call` on flow `slot`'s driver with this endpoint as its datapath.
    fn drive<R>(&mut self, now: Time, slot: u32, call: impl FnOnce(&mut FlowDriver, &mut UdpPath) -> R) -> R {
        let f = &mut self.flows[slot as usize];
        let mut dp = UdpPath {
            now,
            line_rate: self.config.line_rate,
            plane: &self.plane,
            channel: &mut self.channel,
            wheel: &mut self.wheel,
            slot,
            cwnd: &mut f.cwnd,
            rate: &mut f.rate,
            trace: &mut f.trace,
            taps: &mut self.taps,
        };
        call(&mut f.driver, &mut dp)
    }
}

/// Applies decisions that reached the datapath: window, and rate capped at `line_rate`.
fn apply(cwnd: &mut u64, rate: &mut Rate, line_rate: Rate, d: &Decisions) {
    if let Some(c) = d.cwnd {
        *cwnd = c.max(1);
    }
    if let Some(r) = d.rate {
        *rate = r.clamp(1, line_rate);
    }
}

/// Control packets of `kind` queued after position `from`.
fn count_kind(control: &VecDeque<Control>, from: usize, kind: Kind) -> u64 {
    control.iter().skip(from).filter(|c| c.header.kind == kind).count() as u64
}

/// An INT record as algorithms read it (times in picoseconds).
fn int_hop(r: &IntRecord) -> IntHop {
    IntHop { ts: r.ts_ns.saturating_mul(PS_PER_NS), tx_bytes: r.tx_bytes, qlen: r.qlen, rate: r.rate }
}

/// Why a datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// It did not parse.
    Malformed(WireError),
    /// An ACK or CNP for a flow this endpoint does not send.
    UnknownFlow,
    /// An ACK or CNP from another peer than the flow's receiver.
    WrongPeer,
    /// Sequence numbers outside the window.
    OutOfWindow,
    /// A kind this endpoint does not take.
    UnexpectedKind,
    /// A new flow past [`MAX_RECEIVE_FLOWS`].
    TooManyFlows,
}
