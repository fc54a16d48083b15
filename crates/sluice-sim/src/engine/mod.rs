//! The event loop's shared state: the clock, the event queue, the packet arena and run-wide counters.

use sluice_core::Time;

pub mod packet;
pub mod queue;
pub mod trace;

use crate::stats::Counters;
use packet::Arena;
use queue::{EventQueue, WheelQueue};
use trace::{PacketTracer, Site};

/// Something that happens at a point in simulated time: the network's and the transport's own events,
/// and those of the features that plug in (the CC plane, the token transport, the host models), each
/// nested under one variant.
// Each variant's doc names its fields; a doc line per `node`, `port` or `flow` would only repeat it.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Packet `pkt` has fully arrived at `node` through its port `port`.
    Arrive { node: u32, port: u16, pkt: u32 },
    /// The transmitter of `node`'s port `port` finished a packet and may start the next.
    PortFree { node: u32, port: u16 },
    /// A PFC frame reaches `node`'s port `port`: pause or resume queue `queue` of that port.
    Pfc { node: u32, port: u16, queue: u8, pause: bool },
    /// The workload's next flow start or long-lived flow's stop is due (the run's arrivals say which).
    Arrival,
    /// Flow `flow`, started by a closed loop during the run, starts.
    FlowStart { flow: u32 },
    /// Host `host` has a paced flow due.
    HostWake { host: u32 },
    /// A CC timer of `flow`; stale when `gen` no longer matches.
    CcTimer { flow: u32, id: u8, gen: u32 },
    /// Retransmission-timeout check of `flow`.
    Rto { flow: u32 },
    /// Throughput sampling tick.
    Sample,
    /// A step of the CC plane's offload channel.
    Plane(PlaneEvent),
    /// A timer of the receiver-driven (token) transport.
    Token(TokenEvent),
    /// A step of a host model (endpoint processing queue, host interconnect).
    HostModel(HostModelEvent),
}

/// The CC plane's events.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneEvent {
    /// A flow's folded signals reached their hold deadline.
    Flush { flow: u32 },
    /// The message batcher of host node `host` reached its deadline.
    Batch { host: u32 },
    /// A transfer from host node `host`'s datapath reached its plane.
    Arrive { host: u32 },
    /// Host node `host`'s plane core finished a message.
    Done { host: u32 },
    /// Decisions from host node `host`'s plane reached its datapath.
    Decision { host: u32 },
}

/// The token transport's events.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenEvent {
    /// Host node `host`'s token pacer may release its next token.
    Pace { host: u32 },
    /// The token limiter of `node`'s port `port` may release its next token.
    Release { node: u32, port: u16 },
    /// Flow `flow`'s rate-based token generator is due; stale when `gen` no longer matches.
    Tick { flow: u32, gen: u32 },
    /// A receiver-side timer of `flow`; stale when `gen` no longer matches.
    RxTimer { flow: u32, id: u8, gen: u32 },
    /// The receiver of `flow` checks whether the flow stalled (lost data or tokens).
    RxCheck { flow: u32 },
    /// The sender of `flow` checks whether it heard anything since its request to send (sender
    /// retransmission timer), or whether it needs tokens again after an early stop.
    TxCheck { flow: u32 },
}

/// The host models' events.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostModelEvent {
    /// Host node `host`'s processing queue finished its head packet (endpoint model).
    EndpointDone { host: u32 },
    /// Host node `host` samples its streams' accepted packets (endpoint model).
    EndpointSample { host: u32 },
    /// Host node `host`'s NIC finished writing its head packet into host memory (host interconnect).
    BusDma { host: u32 },
    /// Host node `host` samples its host congestion signals (host interconnect).
    BusSample { host: u32 },
}

/// A queue entry (time and event) stays 24 bytes with the nested events (an event alone takes 16).
const _: () = assert!(std::mem::size_of::<(Time, Event)>() == 24);

/// The clock, the queue, the packets and the counters; handed to every element's handlers.
#[derive(Debug)]
pub struct Core {
    /// Current simulated time.
    pub now: Time,
    /// Pending events.
    pub queue: WheelQueue<Event>,
    /// Packets in flight.
    pub arena: Arena,
    /// Counters.
    pub counters: Counters,
    /// The packet trace, when the run asks for one.
    pub packet_trace: Option<Box<PacketTracer>>,
    /// The sending host of each flow, where switches send notifications and return packets (empty unless
    /// a feature needs it: Bolt's notifications, NDP's returned headers). It grows as flows are added.
    pub flow_src: Vec<u32>,
    /// Closed-loop slots whose flow finished during the current event, for the run loop to refill.
    pub freed_slots: Vec<u32>,
    /// Finished flows waiting to be retired once no packet of theirs is left.
    pub finished: Vec<u32>,
}

impl Core {
    /// A core at time 0.
    pub fn new(with_int: bool) -> Core {
        Core {
            now: 0,
            queue: WheelQueue::new(),
            arena: Arena::new(with_int),
            counters: Counters::default(),
            packet_trace: None,
            flow_src: Vec::new(),
            freed_slots: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// Reports what happened at `site` to the packet trace, if the run has one; `queue_bytes` gives the
    /// port's occupancy after the event (asked only when tracing, so that a run without a trace pays one
    /// branch).
    #[inline(always)]
    pub fn trace_packet(&mut self, site: Site, queue_bytes: impl FnOnce() -> u64) {
        if self.packet_trace.is_some() {
            self.record_packet(site, queue_bytes());
        }
    }

    /// [`Core::trace_packet`]'s work, out of line: runs without a trace never come here.
    #[cold]
    #[inline(never)]
    fn record_packet(&mut self, site: Site, queue_bytes: u64) {
        if let Some(tracer) = self.packet_trace.as_deref_mut() {
            tracer.record(self.now, &self.arena, site, queue_bytes);
        }
    }

    /// Schedules `event` at absolute time `at` (not before now).
    #[inline]
    pub fn schedule(&mut self, at: Time, event: Event) {
        self.queue.push(at.max(self.now), event);
    }

    /// Schedules `event` at absolute time `at` (not before now), ahead of every event already scheduled
    /// for that time.
    pub fn schedule_first(&mut self, at: Time, event: Event) {
        self.queue.push_front(at.max(self.now), event);
    }
}
