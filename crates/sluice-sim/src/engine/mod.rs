//! The event loop's shared state: the clock, the event queue, the packet arena and run-wide counters.

use sluice_core::Time;

pub mod packet;
pub mod partition;
pub mod prefetch;
pub mod queue;
pub mod trace;

use crate::stats::Counters;
use packet::Arena;
use partition::{Mail, Partition, Remote};
use queue::{EventQueue, TieKey, WheelQueue};
use sluice_workload::LoopIds;
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

/// The order of simultaneous events: the workload's next arrival first, the throughput sample second,
/// then every other event by a key drawn from its time and the node whose handler made it (its
/// *origin*), and the events of one origin in the order it made them. The origin is read off the event:
/// an arrival or a PFC frame comes from the node at the other end of its link, a port's, host's or
/// switch's own step from that node, a flow's sender-side timers from its sending host and its
/// receiver-side timers from its receiving host.
///
/// Each node's events are then handled in an order that depends on that node's own history only, never
/// on how the handlers of different nodes interleaved, which is what lets parts of a network run side
/// by side and still give the results of a run in one piece. The key is a hash of time and origin, not
/// the origin alone: two senders whose packets reach a switch at the same picosecond (common where
/// every link has the same rate and delay) go first by turns, as a FIFO order of the events would have
/// them, not the one with the smaller id every time, which would starve the other.
#[derive(Debug, Default)]
pub struct EventTies {
    /// The first entry of each node's ports in `peers`.
    port_base: Vec<u32>,
    /// The node at the other end of each port, nodes' ports one after another.
    peers: Vec<u32>,
    /// The node id of each host index.
    host_node: Vec<u32>,
    /// How the closed loops' flows are numbered after the workload's.
    ids: LoopIds,
    /// Sending and receiving host node of the workload's flows made so far, by id.
    first: Vec<[u32; 2]>,
    /// Sending and receiving host node of each closed-loop slot, whose flows all share them.
    slots: Vec<[u32; 2]>,
}

/// The key of the workload's arrivals, ahead of every other event of their time.
const ARRIVAL_KEY: u64 = 0;
/// The key of the throughput sample.
const SAMPLE_KEY: u64 = 1;
/// Node keys start here.
const NODE_KEYS: u64 = 2;

impl EventTies {
    /// The keys of a network whose node `n` has ports leading to `peers[n]`, whose hosts are the nodes
    /// `host_node` (by host index), whose flows are numbered as `ids` says, and whose closed-loop slots
    /// run from and to the host indices `slots`.
    pub fn new(peers: &[Vec<u32>], host_node: Vec<u32>, ids: LoopIds, slots: &[(u32, u32)]) -> EventTies {
        let mut port_base = Vec::with_capacity(peers.len());
        let mut flat = Vec::new();
        for node in peers {
            port_base.push(flat.len() as u32);
            flat.extend_from_slice(node);
        }
        let slots = slots.iter().map(|&(src, dst)| [host_node[src as usize], host_node[dst as usize]]).collect();
        EventTies { port_base, peers: flat, host_node, ids, first: Vec::new(), slots }
    }

    /// Records workload flow `id` (the next one) from host index `src` to host index `dst`.
    pub fn add_flow(&mut self, id: u32, src: u32, dst: u32) {
        debug_assert_eq!(id as usize, self.first.len(), "workload flows are made in id order");
        self.first.push([self.host_node[src as usize], self.host_node[dst as usize]]);
    }

    #[inline]
    fn peer(&self, node: u32, port: u16) -> u32 {
        self.peers[(self.port_base[node as usize] + port as u32) as usize]
    }

    /// Sending (`end` 0) or receiving (1) host node of flow `id`.
    #[inline]
    fn flow_end(&self, id: u32, end: usize) -> u32 {
        let ends =
            if self.ids.is_later(id) { self.slots[self.ids.split(id).0 as usize] } else { self.first[id as usize] };
        ends[end]
    }

    /// The node whose handler made `event`, or `None` for the run's own events (arrivals, samples).
    #[inline]
    pub fn origin(&self, event: &Event) -> Option<u32> {
        const SRC: usize = 0;
        const DST: usize = 1;
        Some(match *event {
            Event::Arrival | Event::Sample => return None,
            Event::Arrive { node, port, .. } | Event::Pfc { node, port, .. } => self.peer(node, port),
            Event::PortFree { node, .. } | Event::HostWake { host: node } => node,
            Event::FlowStart { flow } | Event::CcTimer { flow, .. } | Event::Rto { flow } => self.flow_end(flow, SRC),
            Event::Plane(PlaneEvent::Flush { flow }) => self.flow_end(flow, SRC),
            Event::Plane(
                PlaneEvent::Batch { host }
                | PlaneEvent::Arrive { host }
                | PlaneEvent::Done { host }
                | PlaneEvent::Decision { host },
            ) => host,
            Event::Token(TokenEvent::Pace { host }) => host,
            Event::Token(TokenEvent::Release { node, .. }) => node,
            Event::Token(TokenEvent::TxCheck { flow }) => self.flow_end(flow, SRC),
            Event::Token(
                TokenEvent::Tick { flow, .. } | TokenEvent::RxTimer { flow, .. } | TokenEvent::RxCheck { flow },
            ) => self.flow_end(flow, DST),
            Event::HostModel(
                HostModelEvent::EndpointDone { host }
                | HostModelEvent::EndpointSample { host }
                | HostModelEvent::BusDma { host }
                | HostModelEvent::BusSample { host },
            ) => host,
        })
    }
}

impl TieKey<Event> for EventTies {
    /// A hash of `time` and the origin above the origin itself: distinct for distinct origins, and an
    /// order among them that changes from one instant to the next.
    #[inline]
    fn key(&self, time: Time, event: &Event) -> u64 {
        match self.origin(event) {
            Some(node) => (mix(time ^ (node as u64) << 40) & !(u32::MAX as u64)) + NODE_KEYS + node as u64,
            None if *event == Event::Arrival => ARRIVAL_KEY,
            None => SAMPLE_KEY,
        }
    }
}

/// A 64-bit finalizer (splitmix64's): every input bit moves about half the output bits.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The clock, the queue, the packets and the counters; handed to every element's handlers.
#[derive(Debug)]
pub struct Core {
    /// Current simulated time.
    pub now: Time,
    /// Pending events.
    pub queue: WheelQueue<Event, EventTies>,
    /// Packets in flight.
    pub arena: Arena,
    /// Counters.
    pub counters: Counters,
    /// The packet trace, when the run asks for one.
    pub packet_trace: Option<Box<PacketTracer>>,
    /// The sending host of each flow, where switches send notifications and return packets (empty unless
    /// a feature needs it: Bolt's notifications, NDP's returned headers, switch signals' feedback).
    pub flow_src: FlowSenders,
    /// Closed-loop slots whose flow finished during the current event, for the run loop to refill.
    pub freed_slots: Vec<u32>,
    /// Finished flows waiting to be retired once no packet of theirs is left.
    pub finished: Vec<u32>,
    /// In a partitioned run, the nodes this core handles and the events it made for the others.
    pub partition: Option<Box<Partition>>,
}

/// The sending host (index) of every flow: the workload's flows' by id, the closed loops' by slot.
#[derive(Debug, Default)]
pub struct FlowSenders {
    ids: Option<LoopIds>,
    workload: Vec<u32>,
    slots: Vec<u32>,
}

impl FlowSenders {
    /// The senders of the workload's flows (by id) and of the closed-loop slots (by slot), whose flows
    /// are numbered as `ids` says.
    pub fn new(ids: LoopIds, workload: Vec<u32>, slots: Vec<u32>) -> FlowSenders {
        FlowSenders { ids: Some(ids), workload, slots }
    }

    /// Whether no feature asked for the senders.
    pub fn is_empty(&self) -> bool {
        self.ids.is_none()
    }

    /// The sending host of flow `flow`.
    #[inline]
    pub fn of(&self, flow: u32) -> u32 {
        let ids = self.ids.as_ref().expect("the flows' senders are known");
        if ids.is_later(flow) {
            self.slots[ids.split(flow).0 as usize]
        } else {
            self.workload[flow as usize]
        }
    }
}

impl Core {
    /// A core at time 0.
    pub fn new(with_int: bool) -> Core {
        Core {
            now: 0,
            queue: WheelQueue::with_ties(EventTies::default()),
            arena: Arena::new(with_int),
            counters: Counters::default(),
            packet_trace: None,
            flow_src: FlowSenders::default(),
            freed_slots: Vec::new(),
            finished: Vec::new(),
            partition: None,
        }
    }

    /// Reports what happened at `site` to the packet trace, if the run has one; `queue_bytes` gives the
    /// port's occupancy after the event. Both are asked only when tracing, so that a run without a trace
    /// pays one branch (a `Site` built before the test cost five instructions a packet-hop).
    #[inline(always)]
    pub fn trace_packet(&mut self, site: impl FnOnce() -> Site, queue_bytes: impl FnOnce() -> u64) {
        if self.packet_trace.is_some() {
            self.record_packet(site(), queue_bytes());
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
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, event: Event) {
        debug_assert!(
            self.partition.as_deref().and_then(|p| p.destination(&event)).is_none(),
            "{event:?} crosses a link: schedule it with schedule_across"
        );
        self.queue.push(at.max(self.now), event);
    }

    /// Schedules `event`, which crosses a link (a packet's arrival or a PFC frame), at absolute time `at`:
    /// in a partitioned run, a node of another part gets it from that part's queue.
    #[inline(always)]
    pub fn schedule_across(&mut self, at: Time, event: Event) {
        if let Some(to) = self.partition.as_deref().and_then(|p| p.destination(&event)) {
            return self.send_away(to, at.max(self.now), event);
        }
        self.queue.push(at.max(self.now), event);
    }

    /// Holds `event`, due at `at` at a node of part `to`, for that part, with its packet taken out of
    /// this core's arena.
    #[cold]
    #[inline(never)]
    fn send_away(&mut self, to: u16, at: Time, event: Event) {
        let parcel = match event {
            Event::Arrive { pkt, .. } => Some(self.arena.take(pkt)),
            _ => None,
        };
        let partition = self.partition.as_deref_mut().expect("a partitioned core");
        partition.send(to, Mail::Event(Remote { at, event, parcel }));
    }

    /// Queues an event another part made for one of this core's nodes, its packet stored here.
    pub fn deliver(&mut self, remote: &Remote) {
        let event = match (remote.event, &remote.parcel) {
            (Event::Arrive { node, port, .. }, Some(parcel)) => {
                Event::Arrive { node, port, pkt: self.arena.put(parcel) }
            }
            (event, _) => event,
        };
        self.queue.push(remote.at, event);
    }

    /// Schedules `event` at absolute time `at` (not before now), ahead of every event already scheduled
    /// for that time.
    pub fn schedule_first(&mut self, at: Time, event: Event) {
        self.queue.push_front(at.max(self.now), event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host node 0 - switch node 1 - host node 2; flow 0 from host 0 (node 0) to host 1 (node 2).
    fn ties() -> EventTies {
        let mut ties = EventTies::new(&[vec![1], vec![0, 2], vec![1]], vec![0, 2], LoopIds::new(1, 0), &[]);
        ties.add_flow(0, 0, 1);
        ties
    }

    #[test]
    fn an_events_origin_is_the_node_whose_handler_made_it() {
        let t = ties();
        assert_eq!(t.origin(&Event::Arrive { node: 1, port: 0, pkt: 7 }), Some(0), "sent by the node behind port 0");
        assert_eq!(t.origin(&Event::Arrive { node: 1, port: 1, pkt: 7 }), Some(2));
        assert_eq!(t.origin(&Event::Pfc { node: 0, port: 0, queue: 3, pause: true }), Some(1));
        assert_eq!(t.origin(&Event::PortFree { node: 1, port: 1 }), Some(1));
        assert_eq!(t.origin(&Event::CcTimer { flow: 0, id: 0, gen: 1 }), Some(0), "the sender's timer");
        assert_eq!(t.origin(&Event::Token(TokenEvent::RxCheck { flow: 0 })), Some(2), "the receiver's timer");
        assert_eq!(t.origin(&Event::Token(TokenEvent::TxCheck { flow: 0 })), Some(0));
        assert_eq!(t.origin(&Event::Arrival), None);
        assert_eq!(t.origin(&Event::Sample), None);
    }

    /// Arrivals first, samples second; two nodes' simultaneous events go first by turns, not the same
    /// one every time.
    #[test]
    fn keys_put_arrivals_and_samples_first_and_take_turns_among_nodes() {
        let t = ties();
        let from = |node: u32| Event::PortFree { node, port: 0 };
        let mut first = 0;
        for time in (0..1000).map(|k| 1_000_000 + k * 1_000) {
            let (a, b) = (t.key(time, &from(0)), t.key(time, &from(2)));
            assert_ne!(a, b, "distinct origins never tie");
            assert!(t.key(time, &Event::Arrival) < t.key(time, &Event::Sample));
            assert!(t.key(time, &Event::Sample) < a.min(b));
            first += u32::from(a < b);
        }
        assert!((400..=600).contains(&first), "node 0 went first at {first} of 1000 instants");
    }
}
