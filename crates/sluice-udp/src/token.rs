//! The receiver-driven (token) transport of the UDP datapath: requests to send, the unscheduled phase,
//! tokens issued by the receiver's [`ReceiverControl`] (grants per arrival, a token rate or a token
//! window) and paced by the receiving host's token pacer, tokens spent by senders (stale ones dropped),
//! volume control, SRPT grant ranking with overcommitment, the receiver's loss check (NACKs), the
//! sender's request timer and ExpressPass's early stop. The simulator's token transport
//! (`sluice-sim/src/transport/token.rs`) defines the behaviour; this module follows it packet for packet
//! on the host side. The bookkeeping both keep alike (held tokens, a flow's grants and its controller's
//! timers and token rate, the loss check, the early stop, the log of issued tokens, SRPT ranks) is
//! [`sluice_cc::grants`]. Switch-side design points (token limiters, trimming, Aeolus dropping, token
//! ECN, priorities) are the network's business: packets carry what those features read, and
//! `docs/udp.md` says which ones the software switch provides.
//!
//! Two halves, both driven by the endpoint through a narrow hook ([`TokenHooks`]: arm a timer, queue a
//! control packet):
//! - [`TokenSender`]: one sending flow's tokens, gate and request timer.
//! - [`TokenReceiver`]: one host's receiving side, with a controller per flow and the host's pacer.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use sluice_cc::grants::{loss_check_at, srpt_rank, Arm, EarlyStop, Grants, HeldTokens, TokenLog};
use sluice_cc::token::{bdp_bytes, jittered, more_than_bdp, token_gap, TokenTransport};
use sluice_cc::{AckKind, Arrival, Factory, FlowInfo, ReceiverControl, Request, RxCtx, RxDecisions, RxEvents, TimerId};
use sluice_core::{Rate, Rng, Time, PS_PER_NS};
use sluice_results::{FlowTrace, TraceRecorder};
use sluice_wire::sluice::{Flags, Kind, SluiceHeader};

use crate::receiver::{Arrival as Landed, Receiver, Receivers};
use crate::sender::{Next, Sender};
use crate::PeerId;

/// A receiving flow: its sender and flow id.
pub type RxKey = (PeerId, u32);

/// Something of the token transport the timing wheel wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TokenTimer {
    /// The receiving host's token pacer may send again.
    Pace,
    /// Rate-based token generation of a receiving flow.
    Tick {
        /// The flow.
        key: RxKey,
        /// Generation: stale ticks are ignored.
        gen: u32,
    },
    /// A receiver controller's timer.
    Rx {
        /// The flow.
        key: RxKey,
        /// The controller's timer id.
        id: u8,
        /// Generation: re-armed or cancelled timers are ignored.
        gen: u32,
    },
    /// The receiver's loss check of a flow.
    Check {
        /// The flow.
        key: RxKey,
    },
    /// The sender's request timer of the sending flow in slot `slot`.
    Tx {
        /// The endpoint's flow slot.
        slot: u32,
    },
}

/// What the token transport asks of its endpoint: timers and control packets.
pub trait TokenHooks {
    /// Wakes `timer` at `at`.
    fn arm(&mut self, at: Time, timer: TokenTimer);
    /// Queues a control packet (request, token, ACK, NACK, stop) to `peer`, ECN-capable if `ect`.
    fn send(&mut self, peer: PeerId, header: SluiceHeader, ect: bool);
}

/// What the token transport did, at both ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounters {
    /// Requests to send sent (first ones and repeats).
    pub requests: u64,
    /// Tokens this host issued as a receiver.
    pub tokens_issued: u64,
    /// Tokens this host spent on data as a sender.
    pub tokens_used: u64,
    /// Tokens dropped as stale (held too long, or beyond one BDP).
    pub tokens_stale: u64,
    /// Tokens that reached a flow with nothing left to send.
    pub tokens_wasted: u64,
    /// Payload bytes sent before any token.
    pub unscheduled_bytes: u64,
    /// Payload bytes sent against tokens.
    pub scheduled_bytes: u64,
    /// NACKs sent by receivers.
    pub nacks: u64,
    /// Receiver loss checks that found a flow stalled.
    pub rx_timeouts: u64,
    /// Sender request timers that sent a request again.
    pub tx_timeouts: u64,
    /// Early stops senders sent.
    pub early_stops: u64,
    /// Aeolus probes sent.
    pub probes: u64,
}

impl TokenCounters {
    /// Adds `o`'s counts to these (the endpoints of one host's threads).
    pub fn add(&mut self, o: &TokenCounters) {
        let TokenCounters {
            requests,
            tokens_issued,
            tokens_used,
            tokens_stale,
            tokens_wasted,
            unscheduled_bytes,
            scheduled_bytes,
            nacks,
            rx_timeouts,
            tx_timeouts,
            early_stops,
            probes,
        } = *o;
        self.requests += requests;
        self.tokens_issued += tokens_issued;
        self.tokens_used += tokens_used;
        self.tokens_stale += tokens_stale;
        self.tokens_wasted += tokens_wasted;
        self.unscheduled_bytes += unscheduled_bytes;
        self.scheduled_bytes += scheduled_bytes;
        self.nacks += nacks;
        self.rx_timeouts += rx_timeouts;
        self.tx_timeouts += tx_timeouts;
        self.early_stops += early_stops;
        self.probes += probes;
    }
}

/// The sender's side of a receiver-driven flow.
#[derive(Debug)]
pub struct TokenSender {
    transport: TokenTransport,
    mss: u64,
    /// The flow's size, `u64::MAX` for a stream not yet stopped.
    size: u64,
    bdp: u64,
    unscheduled_end: u64,
    /// The tokens held: packets granted and not yet sent.
    tokens: HeldTokens,
    /// A token arrived Congestion Experienced; the next data packet echoes it.
    echo: bool,
    probe_due: bool,
    /// When the first request left, and repeats since.
    request_at: Time,
    retries: u32,
    /// Something of the flow (token, ACK, NACK) reached the sender since the last request timer.
    heard: bool,
    /// When something of the flow last reached the sender.
    heard_at: Time,
    /// The early CREDIT_STOP's rounds, and whether a stop was sent since the last request.
    early: EarlyStop,
}

/// What a receiver-driven flow sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSend {
    /// A header-only probe at this offset (Aeolus).
    Probe(u64),
    /// The data packet `Next` with these flags and, when scheduled, the number of the token it spends.
    Data(Next, u16, u64),
}

impl TokenSender {
    /// The sender state of a flow described by `info`.
    pub fn new(transport: TokenTransport, info: &FlowInfo) -> TokenSender {
        let bdp = bdp_bytes(info);
        TokenSender {
            unscheduled_end: transport.unscheduled.bytes(info.size, bdp),
            transport,
            mss: info.mss.max(1) as u64,
            size: info.size.unwrap_or(u64::MAX),
            bdp,
            tokens: HeldTokens::default(),
            echo: false,
            probe_due: false,
            request_at: 0,
            retries: 0,
            heard: false,
            heard_at: 0,
            early: EarlyStop::default(),
        }
    }

    /// The flow starts: its request goes first, and its request timer starts.
    pub fn start(&mut self, hooks: &mut dyn TokenHooks, peer: PeerId, flow: u32, slot: u32, now: Time) {
        self.request_at = now;
        self.request(hooks, peer, flow, now);
        if self.transport.tx_timeout > 0 {
            hooks.arm(now + self.transport.tx_timeout, TokenTimer::Tx { slot });
        }
    }

    fn request(&mut self, hooks: &mut dyn TokenHooks, peer: PeerId, flow: u32, now: Time) {
        let header = SluiceHeader {
            seq: self.size,
            offset: self.unscheduled_end,
            // ToCC's first window: the unsent bytes, at most one BDP.
            bytes: self.size.min(self.bdp).min(u32::MAX as u64) as u32,
            ce_bytes: self.mss as u32,
            sent_ns: now / PS_PER_NS,
            ..SluiceHeader::new(Kind::Request, flow)
        };
        hooks.send(peer, header, false);
    }

    /// A stream stopped at `size` bytes: the receiver learns the size from a repeated request.
    pub fn stop(&mut self, hooks: &mut dyn TokenHooks, peer: PeerId, flow: u32, size: u64, now: Time) {
        self.size = size;
        self.request(hooks, peer, flow, now);
    }

    /// What the flow may send now, given the packet its scoreboard would send next (`None`: nothing
    /// left); `None` when it must wait for a token. Commits the token spent.
    pub fn take(&mut self, next: Option<Next>, now: Time, counters: &mut TokenCounters) -> Option<TokenSend> {
        if std::mem::take(&mut self.probe_due) {
            counters.probes += 1;
            return Some(TokenSend::Probe(self.unscheduled_end));
        }
        counters.tokens_stale += self.expire(now);
        let next = next?;
        let scheduled = next.retransmit || next.seq >= self.unscheduled_end;
        let mut flags = Flags::RECEIVER_DRIVEN;
        let mut token = 0;
        if scheduled {
            let (seq, first) = self.tokens.spend()?;
            token = seq as u64;
            counters.tokens_used += first as u64;
            counters.scheduled_bytes += next.len as u64;
            flags |= Flags::SCHEDULED;
        } else {
            counters.unscheduled_bytes += next.len as u64;
            self.probe_due = self.transport.aeolus && next.seq + next.len as u64 >= self.unscheduled_end;
        }
        if std::mem::take(&mut self.echo) {
            flags |= Flags::TOKEN_ECHO;
        }
        // A stream has more than one BDP unsent until it stops (the simulator's long-lived flows too).
        if more_than_bdp(self.size, next.seq, self.bdp, self.mss) {
            flags |= Flags::MORE_THAN_BDP;
        }
        Some(TokenSend::Data(next, flags, token))
    }

    /// Drops held tokens that are stale at `now`; returns how many had not been used.
    fn expire(&mut self, now: Time) -> u64 {
        self.tokens.expire(now, &self.transport, self.mss, self.bdp)
    }

    /// A token arrived (`ce`: its IP header carried Congestion Experienced). `sender` is the flow's
    /// scoreboard, `done` whether the flow finished.
    #[allow(clippy::too_many_arguments)]
    pub fn on_token(
        &mut self,
        hooks: &mut dyn TokenHooks,
        h: &SluiceHeader,
        ce: bool,
        sender: &Sender,
        peer: PeerId,
        now: Time,
        counters: &mut TokenCounters,
    ) {
        self.hear(now);
        if sender.done() {
            counters.tokens_wasted += 1;
            return;
        }
        if self.transport.early_stop && !self.early.sent {
            self.early_stop(hooks, sender, peer, h.flow, now, counters);
        }
        self.tokens.hold(h.seq as u32, h.bytes as u64, self.mss, now);
        self.echo |= ce;
    }

    /// Early CREDIT_STOP (ns2-xpass `recv_credit`): once per request-to-first-token time, if that round's
    /// tokens cover the packets left beyond the credit held, or nothing is left, the receiver is told
    /// to stop; the request timer asks again after two round trips if data is still waiting.
    fn early_stop(
        &mut self,
        hooks: &mut dyn TokenHooks,
        sender: &Sender,
        peer: PeerId,
        flow: u32,
        now: Time,
        counters: &mut TokenCounters,
    ) {
        let left = self.unsent_packets(sender).saturating_sub(self.tokens.credit());
        let stop = self.early.on_token(now, self.request_at, left);
        if stop {
            counters.early_stops += 1;
            let header =
                SluiceHeader { seq: sender.snd_nxt, sent_ns: now / PS_PER_NS, ..SluiceHeader::new(Kind::Stop, flow) };
            hooks.send(peer, header, false);
        }
    }

    /// Packets not yet sent, resends queued included.
    fn unsent_packets(&self, sender: &Sender) -> u64 {
        self.size.saturating_sub(sender.snd_nxt).div_ceil(self.mss) + sender.queued_resends() as u64
    }

    /// A NACK asked for the packet at `seq`: it is queued for resending on a token; after an early stop,
    /// the sender asks for tokens again (ns2-xpass `recv_nack`).
    #[allow(clippy::too_many_arguments)]
    pub fn on_nack(
        &mut self,
        hooks: &mut dyn TokenHooks,
        sender: &mut Sender,
        seq: u64,
        peer: PeerId,
        flow: u32,
        now: Time,
        counters: &mut TokenCounters,
    ) {
        self.hear(now);
        sender.queue_resend(seq);
        if std::mem::take(&mut self.early.sent) {
            self.retries += 1;
            counters.requests += 1;
            self.request(hooks, peer, flow, now);
        }
    }

    /// An ACK of the flow arrived at `now`.
    pub fn on_ack(&mut self, now: Time) {
        self.hear(now);
    }

    fn hear(&mut self, now: Time) {
        self.heard = true;
        self.heard_at = now;
    }

    /// When something of the flow (token, ACK, NACK) last reached the sender.
    pub fn heard_at(&self) -> Time {
        self.heard_at
    }

    /// The request timer: a flow that stopped its tokens early but still has data and no credit asks
    /// again; a flow that heard nothing since the last timer (its request, its data or its receiver's
    /// last ACK lost) sends its request again, each silent round waiting twice as long (as TCP's SYN
    /// retries), and the receiver answers a repeated request with what it has. Returns whether the
    /// flow sent anything.
    #[allow(clippy::too_many_arguments)]
    pub fn on_tx_timer(
        &mut self,
        hooks: &mut dyn TokenHooks,
        sender: &Sender,
        peer: PeerId,
        flow: u32,
        slot: u32,
        now: Time,
        counters: &mut TokenCounters,
    ) {
        let timeout = self.transport.tx_timeout;
        if sender.done() || timeout == 0 {
            return;
        }
        if self.early.sent {
            if self.unsent_packets(sender) > 0 && self.tokens.credit() == 0 {
                self.early.sent = false;
                self.retries += 1;
                counters.requests += 1;
                self.request(hooks, peer, flow, now);
            }
            hooks.arm(now + 2 * self.early.rtt().unwrap_or(timeout).max(1), TokenTimer::Tx { slot });
            return;
        }
        if std::mem::take(&mut self.heard) {
            self.retries = 0;
            hooks.arm(now + timeout, TokenTimer::Tx { slot });
            return;
        }
        counters.tx_timeouts += 1;
        counters.requests += 1;
        self.retries += 1;
        self.request(hooks, peer, flow, now);
        hooks.arm(now + timeout.saturating_mul(1 << self.retries.min(10)), TokenTimer::Tx { slot });
    }
}

/// The receiving side of one receiver-driven flow.
struct RxFlow {
    rx: Option<Box<dyn ReceiverControl>>,
    events: RxEvents,
    /// The flow's size, `u64::MAX` while unknown (a stream).
    size: u64,
    mss: u64,
    grants: Grants,
    next_token: u32,
    last_activity: Time,
    check_pending: bool,
    /// Tokens issued whose data has not arrived (the credit-to-data round trip).
    log: TokenLog,
    /// Flag-driven recovery: the highest offset asked for again.
    recovering: Option<u64>,
    /// The request's send time, echoed on the ACK that answers a repeated request.
    request_ns: u64,
    /// The controller's variables over time, for traced flows: a token algorithm's state lives at the
    /// receiver.
    trace: Option<Box<TraceRecorder>>,
}

impl RxFlow {
    /// Payload bytes of the packet at `seq`.
    fn payload_at(&self, seq: u64) -> u64 {
        self.mss.min(self.size.saturating_sub(seq))
    }
}

/// The link a receiving host's tokens and flows are measured against.
#[derive(Debug, Clone, Copy)]
pub struct RxLink {
    /// The receiving host's NIC rate: the token pacer's and the controllers' line rate.
    pub line_rate: Rate,
    /// The base RTT controllers are told.
    pub base_rtt: Time,
    /// Header bytes of every data packet on the wire.
    pub header_bytes: u32,
}

/// A host's receiving side of the token transport: a controller per receiver-driven flow, the host's
/// token pacer, SRPT ranks.
pub struct TokenReceiver {
    factory: Arc<dyn Factory>,
    transport: TokenTransport,
    link: RxLink,
    flows: HashMap<RxKey, RxFlow>,
    /// Unfinished flows, for SRPT ranks.
    incoming: Vec<RxKey>,
    queue: VecDeque<RxKey>,
    next_at: Time,
    pace_pending: bool,
    jitter: Option<Rng>,
    /// Flows to trace when they open, and the spacing of their rows.
    traced: (HashSet<u32>, Time),
    /// What the transport did at this host.
    pub counters: TokenCounters,
}

/// Homa's overcommitment where the workload is unknown (a receiver sees flows one by one): 4,
/// HomaSimulation's all-RPC setting, the simulator's choice for runs without sized flows.
const DEFAULT_OVERCOMMIT: u32 = 4;

impl TokenReceiver {
    /// A receiving side running `factory`'s receiver controllers; `None` when `factory` is no token
    /// algorithm.
    pub fn new(factory: Arc<dyn Factory>, link: RxLink) -> Option<TokenReceiver> {
        let mut transport = factory.token_transport()?;
        if transport.overcommit == 0 {
            transport.overcommit = DEFAULT_OVERCOMMIT;
        }
        let jitter = (transport.token_jitter > 0.0).then(|| Rng::named(0, "udp.token_jitter"));
        Some(TokenReceiver {
            factory,
            transport,
            link,
            flows: HashMap::new(),
            incoming: Vec::new(),
            queue: VecDeque::new(),
            next_at: 0,
            pace_pending: false,
            jitter,
            traced: (HashSet::new(), 0),
            counters: TokenCounters::default(),
        })
    }

    /// Traces the receiver controllers of flows `ids` that open from now on, a row at most every
    /// `interval`.
    pub fn trace(&mut self, ids: &HashSet<u32>, interval: Time) {
        self.traced = (ids.clone(), interval);
    }

    /// The traces of the traced flows this host received.
    pub fn traces(&self) -> Vec<FlowTrace> {
        self.flows.iter().filter_map(|(key, f)| Some(f.trace.as_ref()?.to_trace(key.1 as u64))).collect()
    }

    /// Payload bytes one token of a flow of `mss` grants.
    fn token_bytes(&self, mss: u64) -> u64 {
        self.transport.token_bytes(mss as u32)
    }

    /// A request to send of flow `key` arrived; `r` is the flow's reassembly state.
    pub fn on_request(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, h: &SluiceHeader, r: &Receiver, now: Time) {
        if let Some(f) = self.flows.get_mut(&key) {
            // A repeat: the sender wants tokens again after an early stop, lost what came back, or its
            // stream stopped. The receiver says what it has and tops up the grants.
            f.grants.stop_requested = false;
            f.size = f.size.min(h.seq);
            f.request_ns = h.sent_ns;
            self.ack(hooks, key, r, 0, now);
            if r.rcv_nxt >= self.flows[&key].size {
                self.finish(hooks, key, now);
            } else if !self.flows[&key].grants.done {
                self.refill(hooks, key, now);
            }
            return;
        }
        let mss = (h.ce_bytes as u64).max(1);
        let size = (h.seq != u64::MAX).then_some(h.seq);
        let info = FlowInfo {
            flow_id: key.1 as u64,
            mss: mss as u32,
            header_bytes: self.link.header_bytes,
            line_rate: self.link.line_rate,
            base_rtt: self.link.base_rtt,
            hops: 1,
            size,
            start: now,
        };
        let rx = self.factory.receiver(&info);
        let flow = RxFlow {
            events: rx.as_ref().map_or(RxEvents::default(), |r| r.events()),
            rx,
            size: h.seq,
            mss,
            grants: Grants {
                outstanding: h.offset.saturating_sub(r.delivered),
                received: r.delivered,
                owed: if self.transport.volume_by_flag { (h.bytes as u64).saturating_sub(h.offset) } else { 0 },
                ..Grants::default()
            },
            next_token: 0,
            last_activity: now,
            check_pending: false,
            log: TokenLog::default(),
            recovering: None,
            request_ns: h.sent_ns,
            trace: self.traced.0.contains(&key.1).then(|| Box::new(TraceRecorder::new(self.traced.1))),
        };
        self.flows.insert(key, flow);
        self.incoming.push(key);
        let mut ctx = RxCtx::new(now);
        if let Some(rx) = self.flows.get_mut(&key).and_then(|f| f.rx.as_mut()) {
            rx.on_start(&info, &mut ctx);
        }
        self.apply(hooks, key, ctx.decisions(), now);
        let f = &mut self.flows.get_mut(&key).expect("inserted");
        if f.events.contains(RxEvents::REQUEST) {
            let request = Request { at: now, size, unscheduled_bytes: h.offset };
            let mut ctx = RxCtx::new(now);
            if let Some(rx) = f.rx.as_mut() {
                rx.on_request(&request, &mut ctx);
            }
            self.apply(hooks, key, ctx.decisions(), now);
        }
        self.arm_check(hooks, key, now);
        if r.rcv_nxt >= h.seq {
            self.finish(hooks, key, now);
        } else {
            self.refill(hooks, key, now);
        }
    }

    /// The sender of flow `key` asked to stop its tokens (early CREDIT_STOP): none are issued until it
    /// asks again or the loss check finds data missing. Returns whether the flow is known.
    pub fn stop(&mut self, key: &RxKey) -> bool {
        let Some(f) = self.flows.get_mut(key) else { return false };
        f.grants.stop_requested = !f.grants.done;
        true
    }

    /// A data packet (or probe) of flow `key` arrived and `r` took it (`landed`: what it brought).
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(
        &mut self,
        hooks: &mut dyn TokenHooks,
        key: RxKey,
        h: &SluiceHeader,
        landed: Landed,
        ce: bool,
        r: &mut Receiver,
        now: Time,
    ) {
        let Some(f) = self.flows.get_mut(&key) else {
            // Data ahead of its (lost or late) request: kept by `r`, counted when the request comes.
            return;
        };
        f.last_activity = now;
        if f.grants.done {
            // The sender resends because the last ACK was lost.
            self.ack(hooks, key, r, h.seq, now);
            return;
        }
        if h.flags.has(Flags::PROBE) {
            self.probe_arrived(hooks, key, h.seq, r, now);
            self.refill(hooks, key, now);
            return;
        }
        let accepted = matches!(landed, Landed::New { .. });
        if let Landed::New { bytes, .. } = landed {
            f.grants.received += bytes as u64;
            f.grants.outstanding = f.grants.outstanding.saturating_sub(bytes as u64);
            let flagged = h.flags.has(Flags::MORE_THAN_BDP) && self.transport.volume_by_flag;
            if flagged || f.recovering.is_some() {
                f.grants.owed += bytes as u64;
            }
        }
        self.recover_next(hooks, key, r, now);
        let decisions = self.controller_on_data(key, h, accepted, ce, r.rcv_nxt, now);
        let f = &self.flows[&key];
        let ack = match decisions.ack {
            AckKind::Withhold => false,
            AckKind::Default => self.transport.ack_every_packet || r.rcv_nxt >= f.size,
            _ => true,
        };
        if ack {
            let header = SluiceHeader { ..r.take_ack(h.seq, h.sent_ns, ce).header(key.1, now) };
            hooks.send(key.0, header, false);
        }
        self.apply(hooks, key, &decisions, now);
        if r.rcv_nxt >= self.flows[&key].size {
            self.finish(hooks, key, now);
        } else {
            self.refill(hooks, key, now);
        }
    }

    fn controller_on_data(
        &mut self,
        key: RxKey,
        h: &SluiceHeader,
        accepted: bool,
        ce: bool,
        rcv_nxt: u64,
        now: Time,
    ) -> RxDecisions {
        let f = self.flows.get_mut(&key).expect("known flow");
        let mut ctx = RxCtx::new(now);
        if f.events.contains(RxEvents::DATA) {
            let scheduled = h.flags.has(Flags::SCHEDULED);
            let token = h.offset as u32;
            let arrival = Arrival {
                at: now,
                sent_at: h.sent_ns.saturating_mul(PS_PER_NS),
                seq: h.seq,
                bytes: h.payload_len,
                wire_bytes: h.payload_len + self.link.header_bytes,
                ce,
                scheduled,
                token_echo: h.flags.has(Flags::TOKEN_ECHO),
                more_than_bdp: h.flags.has(Flags::MORE_THAN_BDP),
                token_seq: scheduled.then_some(token as u64),
                accepted,
                rcv_nxt,
                token_rtt: if scheduled { f.log.rtt(token, now) } else { None },
                ..Arrival::default()
            };
            if let Some(rx) = f.rx.as_mut() {
                rx.on_data(&arrival, &mut ctx);
            }
        }
        *ctx.decisions()
    }

    /// Acknowledges what flow `key` has (the answer to a repeated request, or to data after the end).
    fn ack(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, r: &Receiver, sacked: u64, now: Time) {
        let echo_ns = self.flows.get(&key).map_or(0, |f| f.request_ns);
        let header = SluiceHeader {
            seq: r.rcv_nxt,
            offset: sacked.min(r.rcv_nxt.saturating_sub(1)),
            echo_ns,
            sent_ns: now / PS_PER_NS,
            ..SluiceHeader::new(Kind::Ack, key.1)
        };
        hooks.send(key.0, header, false);
    }

    fn nack(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, rcv_nxt: u64, seq: u64, now: Time) {
        self.counters.nacks += 1;
        let header = SluiceHeader {
            seq: rcv_nxt,
            offset: seq,
            sent_ns: now / PS_PER_NS,
            ..SluiceHeader::new(Kind::Nack, key.1)
        };
        hooks.send(key.0, header, false);
    }

    /// An Aeolus probe arrived: every unscheduled packet before it that is missing was dropped; the
    /// receiver asks for each again (to be resent against tokens).
    fn probe_arrived(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, probe: u64, r: &Receiver, now: Time) {
        let missing = self.missing_packets(key, r, probe);
        let f = self.flows.get_mut(&key).expect("known flow");
        let lost: u64 = missing.iter().map(|&s| f.payload_at(s)).sum();
        f.grants.outstanding = f.grants.outstanding.saturating_sub(lost);
        for seq in missing {
            self.nack(hooks, key, r.rcv_nxt, seq, now);
        }
    }

    /// Offsets of the packets missing below `limit` (holes, then the tail up to `limit`).
    fn missing_packets(&self, key: RxKey, r: &Receiver, limit: u64) -> Vec<u64> {
        let f = &self.flows[&key];
        let limit = limit.min(f.size);
        let highest = r.holes().last().map_or(r.rcv_nxt, |(_, end)| end);
        let gaps = r.holes().chain((highest < limit).then_some((highest.max(r.rcv_nxt), limit)));
        let mut missing = Vec::new();
        for (start, end) in gaps {
            let mut seq = start;
            while seq < end.min(limit) && missing.len() < 4096 {
                missing.push(seq);
                seq += f.payload_at(seq).max(1);
            }
        }
        missing
    }

    /// A flag-driven flow in recovery got a packet: once the holes asked for are filled, it asks for the
    /// next missing packet.
    fn recover_next(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, r: &Receiver, now: Time) {
        let f = self.flows.get_mut(&key).expect("known flow");
        let Some(asked) = f.recovering else { return };
        if r.rcv_nxt > asked && r.rcv_nxt < f.size {
            f.recovering = Some(r.rcv_nxt);
            self.nack(hooks, key, r.rcv_nxt, r.rcv_nxt, now);
        }
    }

    /// Applies a controller's decisions for flow `key`.
    fn apply(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, d: &RxDecisions, now: Time) {
        let f = self.flows.get_mut(&key).expect("known flow");
        if let (Some(trace), Some(rx)) = (f.trace.as_mut(), f.rx.as_deref()) {
            trace.record(now, &mut |out| rx.trace(out));
        }
        f.grants.adopt(d, |arm| match arm {
            Arm::Timer { id, at, gen } => hooks.arm(at, TokenTimer::Rx { key, id, gen }),
            Arm::Ticks { gen } => hooks.arm(now, TokenTimer::Tick { key, gen }),
        });
        for _ in 0..d.grant {
            if !self.issue(hooks, key, now) {
                break;
            }
        }
        if d.token_window.is_some() {
            self.refill(hooks, key, now);
        }
    }

    /// Whether flow `key` may get another token now (not done or stopped, volume control, SRPT rank).
    fn may_grant(&self, key: RxKey) -> bool {
        let f = &self.flows[&key];
        f.grants.may_grant(&self.transport, f.size, || self.rank(key))
    }

    /// Flow `key`'s SRPT rank among this host's unfinished flows (0 = fewest bytes left).
    fn rank(&self, key: RxKey) -> usize {
        let left = |k: RxKey| {
            let f = &self.flows[&k];
            (f.grants.left(f.size), k)
        };
        srpt_rank(left(key), self.incoming.iter().map(|&k| left(k)))
    }

    /// Issues one token of flow `key` if allowed; the pacer sends it. Returns whether it did.
    fn issue(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, now: Time) -> bool {
        if !self.may_grant(key) {
            return false;
        }
        let k = self.token_bytes(self.flows[&key].mss);
        let f = self.flows.get_mut(&key).expect("known flow");
        f.grants.issue(&self.transport, f.size, k);
        self.queue.push_back(key);
        self.pace(hooks, now);
        true
    }

    /// Tops flow `key`'s outstanding grants up to its token window.
    fn refill(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, now: Time) {
        loop {
            let f = &self.flows[&key];
            let k = self.token_bytes(f.mss);
            if f.grants.window_room(k) != Some(true) || !self.issue(hooks, key, now) {
                return;
            }
        }
    }

    /// Sends queued tokens as the host's token pacer allows.
    fn pace(&mut self, hooks: &mut dyn TokenHooks, now: Time) {
        while let Some(&key) = self.queue.front() {
            if self.next_at > now {
                if !self.pace_pending {
                    self.pace_pending = true;
                    hooks.arm(self.next_at, TokenTimer::Pace);
                }
                return;
            }
            self.queue.pop_front();
            let Some(f) = self.flows.get_mut(&key).filter(|f| !f.grants.done) else { continue };
            let k = self.transport.token_bytes(f.mss as u32);
            if self.transport.host_limiter {
                self.next_at = now + token_gap(&self.transport, k, self.link.line_rate, self.link.header_bytes);
            }
            let header = SluiceHeader {
                seq: f.next_token as u64,
                bytes: k.min(u32::MAX as u64) as u32,
                sent_ns: now / PS_PER_NS,
                ..SluiceHeader::new(Kind::Token, key.1)
            };
            if f.events.contains(RxEvents::DATA) {
                f.log.issued(f.next_token, now);
            }
            f.next_token = f.next_token.wrapping_add(1);
            self.counters.tokens_issued += 1;
            // ToCC's switches mark tokens: they leave ECN-capable.
            hooks.send(key.0, header, self.transport.token_ecn);
        }
    }

    /// A timer of the token transport fired; `receivers` holds the flows' reassembly state.
    pub fn on_timer(&mut self, hooks: &mut dyn TokenHooks, timer: TokenTimer, receivers: &Receivers, now: Time) {
        match timer {
            TokenTimer::Pace => {
                self.pace_pending = false;
                self.pace(hooks, now);
            }
            TokenTimer::Tick { key, gen } => self.on_tick(hooks, key, gen, now),
            TokenTimer::Rx { key, id, gen } => self.on_rx_timer(hooks, key, id, gen, now),
            TokenTimer::Check { key } => {
                if let Some(r) = receivers.get(&key) {
                    self.on_check(hooks, key, r, now);
                }
            }
            TokenTimer::Tx { .. } => {}
        }
    }

    /// Flow `key`'s rate-based token generator fired.
    fn on_tick(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, gen: u32, now: Time) {
        let Some(f) = self.flows.get(&key) else { return };
        let k = self.token_bytes(f.mss);
        let Some(mut gap) = f.grants.tick_gap(gen, k, self.link.header_bytes) else { return };
        if let Some(rng) = self.jitter.as_mut() {
            gap = jittered(gap, self.transport.token_jitter, rng.next_f64());
        }
        self.issue(hooks, key, now);
        hooks.arm(now + gap.max(1), TokenTimer::Tick { key, gen });
    }

    fn on_rx_timer(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, id: u8, gen: u32, now: Time) {
        let Some(f) = self.flows.get_mut(&key) else { return };
        if !f.grants.timer_current(id, gen) || !f.events.contains(RxEvents::TIMER) {
            return;
        }
        let mut ctx = RxCtx::new(now);
        if let Some(rx) = f.rx.as_mut() {
            rx.on_timer(TimerId(id), &mut ctx);
        }
        let d = *ctx.decisions();
        self.apply(hooks, key, &d, now);
    }

    fn arm_check(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, now: Time) {
        let timeout = self.transport.rx_timeout;
        let f = self.flows.get_mut(&key).expect("known flow");
        if timeout > 0 && !f.check_pending {
            f.check_pending = true;
            hooks.arm(loss_check_at(f.last_activity, timeout, now), TokenTimer::Check { key });
        }
    }

    /// The loss check of flow `key`: after `rx_timeout` without arrivals while grants or unscheduled
    /// bytes are outstanding, the receiver asks for the next missing packet and forgets the grants that
    /// brought nothing (ToCC's token retransmission).
    fn on_check(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, r: &Receiver, now: Time) {
        let k = self.token_bytes(self.flows[&key].mss);
        let f = self.flows.get_mut(&key).expect("known flow");
        f.check_pending = false;
        if f.grants.done {
            return;
        }
        if f.grants.loss_check(&self.transport, k, f.last_activity, now) {
            self.counters.rx_timeouts += 1;
            f.last_activity = now;
            if self.transport.volume_by_flag {
                self.recover_holes(hooks, key, r, now);
            } else if r.rcv_nxt < f.size {
                self.nack(hooks, key, r.rcv_nxt, r.rcv_nxt, now);
            }
            self.refill(hooks, key, now);
            let f = &self.flows[&key];
            if f.grants.on_demand() {
                self.issue(hooks, key, now);
            }
        }
        self.arm_check(hooks, key, now);
    }

    /// A loss check of a flag-driven flow: asks for every hole below the highest byte received (or the
    /// next missing packet) and owes a token for each, then recovers packet by packet.
    fn recover_holes(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, r: &Receiver, now: Time) {
        let highest = r.holes().last().map_or(r.rcv_nxt, |(_, end)| end);
        let mut asked = self.missing_packets(key, r, highest);
        let f = &self.flows[&key];
        if asked.is_empty() && r.rcv_nxt < f.size {
            asked.push(r.rcv_nxt);
        }
        let owed: u64 = asked.iter().map(|&s| f.payload_at(s)).sum();
        // The timeout already owes one token for the first hole.
        let first = if r.rcv_nxt < f.size { f.payload_at(r.rcv_nxt) } else { 0 };
        for &seq in &asked {
            self.nack(hooks, key, r.rcv_nxt, seq, now);
        }
        let f = self.flows.get_mut(&key).expect("known flow");
        f.grants.owed += owed.saturating_sub(first);
        f.recovering = asked.last().copied().or(f.recovering);
    }

    /// Flow `key` delivered everything: its controller stops, and flows ranked behind it may get grants.
    fn finish(&mut self, hooks: &mut dyn TokenHooks, key: RxKey, now: Time) {
        let f = self.flows.get_mut(&key).expect("known flow");
        if f.grants.done {
            return;
        }
        f.grants.done = true;
        f.rx = None;
        f.log.clear();
        self.incoming.retain(|&k| k != key);
        if self.transport.srpt {
            for other in self.incoming.clone() {
                self.refill(hooks, other, now);
            }
        }
    }
}
