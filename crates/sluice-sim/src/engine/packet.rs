//! Packets and the arena that holds them.
//!
//! A packet in flight is a 64-byte record in one `Vec`, named by its index; freed slots are reused, so the
//! steady state allocates nothing per packet. INT records live in a parallel arena that exists only when
//! switches stamp INT, and so do the values of a switch signal (`sluice_cc::signal`) and the receiving
//! host's signals that ACKs carry back (`sluice_cc::HostSignal`).

use sluice_cc::{HostSignal, IntHop};
use sluice_core::Time;
use sluice_workload::LoopIds;

/// What a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Flow payload.
    Data,
    /// Cumulative acknowledgment (`seq` = next expected byte).
    Ack,
    /// Negative acknowledgment (`seq` = next expected byte).
    Nack,
    /// Congestion notification packet (DCQCN).
    Cnp,
    /// RTT probe toward the receiver (`sent_at` = when it left).
    Probe,
    /// The receiver's echo of a probe.
    ProbeAck,
    /// A switch's queue notification to the sender of a data packet (Bolt's sub-RTT control packet):
    /// `seq` = the queue length in bytes, `sack` = the egress link rate in bit/s, `sent_at` = echoed from
    /// the data packet, `delivered` = when the switch generated it.
    Notify,
    /// A receiver-driven sender's request to send (`seq` = flow size, `delivered` = unscheduled bytes).
    Rts,
    /// A receiver's token (credit, grant, pull): `token` = its sequence number in the flow, `delivered` =
    /// payload bytes it grants, `sack` = the priority queue of the data it releases (0: the default
    /// data queue), `sent_at` = when the receiver issued it.
    Token,
    /// A receiver-driven sender's CREDIT_STOP (early stop, ExpressPass): the tokens already on their way
    /// cover what it has left, so the receiver stops issuing tokens.
    TokenStop,
    /// A switch signal's feedback packet to the sender of a data packet: `seq` = the value, `sack` = the
    /// switch's node id, `sent_at` = echoed from the data packet, `delivered` = when the switch sent it.
    Signal,
}

/// The packet carries an ECN Congestion Experienced mark.
pub const FLAG_CE: u8 = 1;
/// The ACK echoes a CE mark (ECE).
pub const FLAG_ECE: u8 = 1 << 1;
/// The data packet is ECN-capable (ECT): switches may mark it.
pub const FLAG_ECT: u8 = 1 << 2;

/// Path flags (`sluice_cc::api::PATH_*`) live in `Packet::flags` shifted left by this many bits.
pub const PATH_SHIFT: u32 = 3;
/// The data packet belongs to its flow's first window (Bolt FIRST).
pub const FLAG_FIRST: u8 = sluice_cc::api::PATH_FIRST << PATH_SHIFT;
/// The data packet belongs to its flow's last window (Bolt LAST).
pub const FLAG_LAST: u8 = sluice_cc::api::PATH_LAST << PATH_SHIFT;
/// The sender asks to grow its window by one packet (Bolt INCWIN).
pub const FLAG_INCWIN: u8 = sluice_cc::api::PATH_INCWIN << PATH_SHIFT;
/// A switch already notified the sender about this packet (Bolt DECWIN).
pub const FLAG_DECWIN: u8 = sluice_cc::api::PATH_DECWIN << PATH_SHIFT;
/// Every path flag bit of `Packet::flags`; receivers echo these on ACKs.
pub const PATH_FLAGS: u8 = sluice_cc::api::PATH_FLAGS_MASK << PATH_SHIFT;

/// Receiver-driven flags (`Packet::rd`): the data packet was sent before any token (unscheduled).
pub const RD_UNSCHEDULED: u8 = 1;
/// The data packet was sent against a token (scheduled).
pub const RD_SCHEDULED: u8 = 1 << 1;
/// A switch trimmed the payload (NDP): only the header travels.
pub const RD_TRIMMED: u8 = 1 << 2;
/// The sender echoes a congestion mark it saw on a token (ToCC).
pub const RD_ECHO: u8 = 1 << 3;
/// The sender still has more than one BDP of unsent bytes (ToCC's volume flag).
pub const RD_MORE_BDP: u8 = 1 << 4;
/// An Aeolus probe: a header-only packet that follows the unscheduled burst (`seq` = its end).
pub const RD_PROBE: u8 = 1 << 5;
/// A token a switch's token limiter has already released at this hop.
pub const RD_RELEASED: u8 = 1 << 6;
/// A trimmed header that found a switch's header queue full and is on its way back to its sender
/// (NDP return-to-sender): the sender resends the packet.
pub const RD_BOUNCED: u8 = 1 << 7;

/// Maximum INT records a packet carries (HPCC artifact maxHop = 5).
pub const MAX_INT_HOPS: usize = 5;

/// A packet. What a switch reads to forward it (flow, destination, size, kind, queue, flags) comes first,
/// in 16 bytes that never straddle two cache lines (the record is aligned to 16), so a hop through an idle
/// port loads one line of the record whatever the arena's alignment.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
pub struct Packet {
    /// Flow index.
    pub flow: u32,
    /// Destination host index.
    pub dst: u32,
    /// Bytes on the wire (payload + headers + framing).
    pub wire: u32,
    /// Kind.
    pub kind: Kind,
    /// Priority queue index.
    pub queue: u8,
    /// `FLAG_*` bits: ECN bits, then path flags (`PATH_FLAGS`).
    pub flags: u8,
    /// INT records stamped so far.
    pub int_hops: u8,
    /// Byte sequence: data = first payload byte; ACK/NACK = next byte expected.
    pub seq: u64,
    /// Data: when the sender sent it; ACK: echoed from the data packet it answers.
    pub sent_at: Time,
    /// Data: bytes the flow had delivered (acknowledged) when this packet was sent; ACK: echoed. Gives
    /// the delivery-rate sample of each ACK.
    pub delivered: u64,
    /// NACK (selective repeat): the out-of-order sequence it reports. ACK: when it was created, until it
    /// leaves the receiver's NIC.
    pub sack: u64,
    /// Payload bytes.
    pub payload: u32,
    /// ACK: picoseconds between the acknowledged data packet's arrival at the receiver and the ACK
    /// leaving the receiver's NIC (the endpoint delay Swift separates from fabric delay).
    pub host_delay: u32,
    /// Receiver-driven transport: a data packet's spent token sequence number, a token's own.
    pub token: u32,
    /// Ingress port at the switch currently holding the packet (for PFC accounting).
    pub ingress: u16,
    /// Receiver-driven `RD_*` flags.
    pub rd: u8,
    /// Switches that wrote the packet's signal value (`Arena::signal`); an ACK echoes its data packet's.
    pub signal_hops: u8,
}

/// A packet stays one cache line.
const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// What a switch reads to forward a packet lies in its first 16 bytes, which the record's alignment keeps
/// inside one cache line.
const _: () = {
    use std::mem::offset_of;
    assert!(std::mem::align_of::<Packet>() == 16);
    assert!(offset_of!(Packet, flow) < 16 && offset_of!(Packet, dst) < 16 && offset_of!(Packet, wire) < 16);
    assert!(offset_of!(Packet, kind) < 16 && offset_of!(Packet, queue) < 16 && offset_of!(Packet, flags) < 16);
};

/// A stack of INT records.
pub type IntStack = [IntHop; MAX_INT_HOPS];

/// A packet on its way from one part of a partitioned run to another, with what its arena keeps beside
/// it (only when the arena keeps anything: INT, switch signals, host samples).
#[derive(Debug, Clone)]
pub struct Parcel {
    /// The packet.
    pub packet: Packet,
    /// What the arena keeps beside it.
    pub beside: Option<Box<Beside>>,
}

/// What an arena keeps beside a packet.
#[derive(Debug, Clone, Copy)]
pub struct Beside {
    /// Its INT records (as many as the packet's `int_hops` say).
    pub int: IntStack,
    /// Its signal value.
    pub signal: u64,
    /// The host sample it carries.
    pub host: Option<HostSignal>,
}

/// Packet counters per closed-loop slot: its flows of generations that many apart share one. A slot's
/// flows follow each other, so its last few flows are the ones with packets left.
const LOOP_COUNTERS: usize = 8;

/// The packet arena.
#[derive(Debug, Default)]
pub struct Arena {
    packets: Vec<Packet>,
    int: Vec<IntStack>,
    /// Signal values, one per packet, when switches run a signal.
    signal: Vec<u64>,
    /// The receiving host's latest sample an ACK carries, one per packet, when algorithms read them.
    host: Vec<Option<HostSignal>>,
    free: Vec<u32>,
    /// Packets alive per flow ([`Arena::counter`]): a finished flow with none left can be retired.
    flow_packets: Vec<u32>,
    /// How closed loops' flows are numbered, which their counters follow.
    loop_ids: LoopIds,
    with_int: bool,
    with_signal: bool,
    with_host: bool,
    /// `with_int || with_signal`: a receiver's echo tests one flag when switches stamp nothing.
    stamped: bool,
    live: usize,
    peak: usize,
}

impl Arena {
    /// An arena; `with_int` keeps an INT stack per packet.
    pub fn new(with_int: bool) -> Arena {
        Arena { with_int, stamped: with_int, ..Arena::default() }
    }

    /// Stores `packet` and returns its id.
    #[inline(always)]
    pub fn alloc(&mut self, packet: Packet) -> u32 {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        let flow = self.counter(packet.flow);
        if flow >= self.flow_packets.len() {
            self.grow_flows(flow);
        }
        self.flow_packets[flow] += 1;
        if let Some(id) = self.free.pop() {
            self.packets[id as usize] = packet;
            return id;
        }
        self.grow(packet)
    }

    /// Stores `packet` in a new slot: the arena grows only until it holds its peak, so this stays out
    /// of the per-packet path.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, packet: Packet) -> u32 {
        self.packets.push(packet);
        if self.with_int {
            self.int.push([IntHop::default(); MAX_INT_HOPS]);
        }
        if self.with_signal {
            self.signal.push(0);
        }
        if self.with_host {
            self.host.push(None);
        }
        (self.packets.len() - 1) as u32
    }

    /// Counts packets of flows up to id `flow`, which a new flow's first packet names.
    #[cold]
    #[inline(never)]
    fn grow_flows(&mut self, flow: usize) {
        self.flow_packets.resize((flow + 1).max(2 * self.flow_packets.len()), 0);
    }

    /// Releases packet `id`.
    #[inline]
    pub fn free(&mut self, id: u32) {
        self.live -= 1;
        let flow = self.counter(self.packets[id as usize].flow);
        self.flow_packets[flow] -= 1;
        self.free.push(id);
    }

    /// How many packets of flow `flow` are alive (queued, on a wire or held by a host).
    #[inline]
    pub fn packets_of(&self, flow: u32) -> u32 {
        self.flow_packets.get(self.counter(flow)).copied().unwrap_or(0)
    }

    /// Counts closed loops' flows, numbered as `ids` says, by slot.
    pub fn set_loop_ids(&mut self, ids: LoopIds) {
        self.loop_ids = ids;
    }

    /// Where flow `flow`'s packets are counted: a workload flow's counter is its own; a closed loop's
    /// later flow shares its slot's with the generations [`LOOP_COUNTERS`] apart, so that the counters
    /// follow the slots rather than the sparse ids. A shared count only ever holds a flow back from
    /// retirement, never retires one early.
    #[inline(always)]
    fn counter(&self, flow: u32) -> usize {
        if !self.loop_ids.is_later(flow) {
            return flow as usize;
        }
        let (slot, generation) = self.loop_ids.split(flow);
        let base = self.loop_ids.generated() as usize;
        base + slot as usize * LOOP_COUNTERS + generation as usize % LOOP_COUNTERS
    }

    /// The packet `id`.
    #[inline]
    pub fn get(&self, id: u32) -> &Packet {
        &self.packets[id as usize]
    }

    /// Starts loading packet `id`'s record into cache, for an event due shortly (a hint only).
    #[inline(always)]
    pub fn prefetch(&self, id: u32) {
        if let Some(packet) = self.packets.get(id as usize) {
            super::prefetch::prefetch_record(packet);
        }
    }

    /// The packet `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Packet {
        &mut self.packets[id as usize]
    }

    /// The INT records of packet `id` (empty without INT).
    #[inline]
    pub fn int(&self, id: u32) -> &[IntHop] {
        if !self.with_int {
            return &[];
        }
        let n = self.packets[id as usize].int_hops as usize;
        &self.int[id as usize][..n]
    }

    /// Appends an INT record to packet `id` (ignored past `MAX_INT_HOPS`).
    #[inline]
    pub fn push_int(&mut self, id: u32, hop: IntHop) {
        let p = &mut self.packets[id as usize];
        if self.with_int && (p.int_hops as usize) < MAX_INT_HOPS {
            self.int[id as usize][p.int_hops as usize] = hop;
            p.int_hops += 1;
        }
    }

    /// Copies the INT records and the signal value of `from` into `to` (a receiver echoing them on an
    /// ACK).
    #[inline]
    pub fn copy_int(&mut self, from: u32, to: u32) {
        if !self.stamped {
            return;
        }
        if self.with_int {
            self.int[to as usize] = self.int[from as usize];
            self.packets[to as usize].int_hops = self.packets[from as usize].int_hops;
        }
        if self.with_signal {
            self.signal[to as usize] = self.signal[from as usize];
            self.packets[to as usize].signal_hops = self.packets[from as usize].signal_hops;
        }
    }

    /// Keeps a signal value per packet from now on (before the first packet is stored).
    pub fn enable_signal(&mut self) {
        debug_assert!(self.packets.is_empty(), "signal slots are kept from the first packet");
        self.with_signal = true;
        self.stamped = true;
    }

    /// The signal value packet `id` carries, if a switch wrote one.
    #[inline]
    pub fn signal(&self, id: u32) -> Option<u64> {
        let hops = self.packets[id as usize].signal_hops;
        (self.with_signal && hops > 0).then(|| self.signal[id as usize])
    }

    /// Writes `value` into packet `id`'s signal: as it is at the first hop, else combined by `rule` with
    /// what the hops before wrote.
    #[inline]
    pub fn write_signal(&mut self, id: u32, value: u64, rule: sluice_cc::signal::Combine) {
        let p = &mut self.packets[id as usize];
        let slot = &mut self.signal[id as usize];
        *slot = if p.signal_hops == 0 { value } else { rule.apply(*slot, value) };
        p.signal_hops = p.signal_hops.saturating_add(1);
    }

    /// Keeps a host-signal slot per packet from now on (before the first packet is stored), for ACKs to
    /// carry their receiving host's latest sample.
    pub fn enable_host_echo(&mut self) {
        debug_assert!(self.packets.is_empty(), "host-signal slots are kept from the first packet");
        self.with_host = true;
    }

    /// Whether packets carry host signals ([`Arena::enable_host_echo`]).
    #[inline]
    pub fn echoes_host(&self) -> bool {
        self.with_host
    }

    /// Sets the host sample ACK `id` carries (every ACK leaving a host gets one, `None` when its host has
    /// sampled nothing, so a reused slot never carries an earlier packet's).
    #[inline]
    pub fn set_host(&mut self, id: u32, sample: Option<HostSignal>) {
        self.host[id as usize] = sample;
    }

    /// The host sample ACK `id` carries, if packets carry them and its receiver had one.
    #[inline]
    pub fn host(&self, id: u32) -> Option<HostSignal> {
        if !self.with_host {
            return None;
        }
        self.host[id as usize]
    }

    /// Takes packet `id` out of the arena with what it carries beside it (INT records, signal value, host
    /// sample), to move it into another part's arena; the id is released.
    pub fn take(&mut self, id: u32) -> Parcel {
        let i = id as usize;
        let beside = (self.stamped || self.with_host).then(|| {
            Box::new(Beside {
                int: if self.with_int { self.int[i] } else { [IntHop::default(); MAX_INT_HOPS] },
                signal: if self.with_signal { self.signal[i] } else { 0 },
                host: if self.with_host { self.host[i] } else { None },
            })
        });
        let parcel = Parcel { packet: self.packets[i], beside };
        self.free(id);
        parcel
    }

    /// Stores a packet another part's arena gave up ([`Arena::take`]) and returns its id here.
    pub fn put(&mut self, parcel: &Parcel) -> u32 {
        let id = self.alloc(parcel.packet);
        if let Some(beside) = parcel.beside.as_deref() {
            let i = id as usize;
            if self.with_int {
                self.int[i] = beside.int;
            }
            if self.with_signal {
                self.signal[i] = beside.signal;
            }
            if self.with_host {
                self.host[i] = beside.host;
            }
        }
        id
    }

    /// Packets alive now.
    #[inline(always)]
    pub fn live(&self) -> usize {
        self.live
    }

    /// Most packets alive at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}

impl Packet {
    /// A packet of `kind` for `flow` toward host `dst`, `wire` bytes on the wire, in priority queue
    /// `queue`; every other field is zero (the sender sets what its kind carries with struct update
    /// syntax).
    #[inline]
    pub fn new(kind: Kind, flow: u32, dst: u32, wire: u32, queue: u8) -> Packet {
        Packet {
            seq: 0,
            sent_at: 0,
            delivered: 0,
            flow,
            wire,
            payload: 0,
            sack: 0,
            dst,
            host_delay: 0,
            kind,
            queue,
            flags: 0,
            int_hops: 0,
            ingress: 0,
            token: 0,
            rd: 0,
            signal_hops: 0,
        }
    }

    /// What a receiver algorithm is told of this data packet's arrival at `now`, before the datapath adds
    /// what it alone knows (acceptance, queue occupancy, token details).
    pub(crate) fn arrival(&self, now: Time) -> sluice_cc::Arrival {
        sluice_cc::Arrival {
            at: now,
            sent_at: self.sent_at,
            seq: self.seq,
            bytes: self.payload,
            wire_bytes: self.wire,
            ce: self.flags & FLAG_CE != 0,
            ..sluice_cc::Arrival::default()
        }
    }
}
