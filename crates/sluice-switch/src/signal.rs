//! A switch signal's hook in the software switch (`sluice_cc::signal`): one design state per switch
//! egress port, called when a packet is routed to the port (before admission) and when it leaves, with
//! the meanings the simulator gives them. A value written goes into the sluice data packet's signal
//! field; a feedback value goes back to the data packet's sender in a signal packet
//! ([`sluice_wire::sluice::Kind::Signal`]). Nothing here names a design.

use std::sync::Arc;

use sluice_cc::signal::{Combine, PacketView, PortSignal, PortView, Stamp, SwitchSignal};
use sluice_core::{Time, PS_PER_NS};
use sluice_wire::eth::EthHeader;
use sluice_wire::frame::{self, Frame, L4};
use sluice_wire::ipv4::{Ecn, Ipv4Header};
use sluice_wire::sluice::{encode, Kind, SluiceHeader, SIGNAL_LEN};
use sluice_wire::WireError;

use crate::port::Port;

/// What the hooks did, fabric-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SignalCounters {
    /// Values written into data packets' signal fields.
    pub writes: u64,
    /// Writes asked for on data packets that carry no signal field (their senders did not ask).
    pub no_field: u64,
    /// Signal packets sent to senders.
    pub feedback: u64,
    /// Feedback asked for on data packets that are not sluice packets (no flow to address).
    pub no_feedback: u64,
}

/// A design's state at every switch port of the fabric (`None` at host links).
#[derive(Debug)]
pub struct Signals {
    ports: Vec<Option<Box<dyn PortSignal>>>,
    combine: Combine,
    /// What the hooks did.
    pub counters: SignalCounters,
}

/// The port and switch around a hook call.
pub struct At<'a> {
    /// The port's index in the fabric.
    pub index: usize,
    /// The port.
    pub port: &'a Port,
    /// Bytes held in the switch's shared buffer.
    pub buffer_used: u64,
    /// The switch's buffer size.
    pub buffer_size: u64,
    /// The time, ps.
    pub now: Time,
    /// The packet's bytes on the wire (frame and per-frame overhead).
    pub wire: u64,
}

/// Which hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// The packet was routed to the port; the queue is what it finds.
    Enqueue,
    /// The packet leaves the port; the queue is what it leaves behind.
    Dequeue,
}

impl Signals {
    /// `design`'s state at each switch port of `ports`.
    pub fn new(design: Arc<dyn SwitchSignal>, ports: &[Port]) -> Signals {
        let states = ports.iter().map(|p| p.switch.then(|| design.port(p.rate))).collect();
        Signals { combine: design.combine(), ports: states, counters: SignalCounters::default() }
    }

    /// The current value of port `index`'s state (`None` at a host link).
    pub fn value(&self, index: usize) -> Option<u64> {
        self.ports.get(index)?.as_ref().map(|s| s.value())
    }

    /// Runs `hook` of port `at.index` for the frame in `slot[..len]` (the packet's pool slot, which may
    /// be rewritten in place). Returns a signal packet for the switch to route toward the data packet's
    /// sender, written into `feedback`, as its length.
    pub fn run(&mut self, hook: Hook, at: At<'_>, slot: &mut [u8], len: usize, feedback: &mut [u8]) -> Option<usize> {
        let state = self.ports.get_mut(at.index)?.as_mut()?;
        let parsed = Frame::parse(slot.get(..len)?).ok();
        let sluice = match parsed.map(|f| f.l4) {
            Some(L4::Udp { sluice: Some(h), .. }) => Some(h),
            _ => None,
        };
        let data = match parsed.map(|f| f.l4) {
            Some(L4::Udp { sluice: Some(h), .. }) => h.kind == Kind::Data,
            Some(L4::Udp { sluice: None, .. }) => true,
            Some(L4::Tcp { payload_len, .. }) => payload_len > 0,
            _ => false,
        };
        let written = sluice.and_then(|h| h.signal).filter(|s| s.hops > 0);
        let packet = PacketView {
            // The sender's address with its flow id: flow ids are per sender.
            flow: match (parsed, sluice) {
                (Some(f), Some(h)) => (u32::from_be_bytes(f.ip.src) as u64) << 32 | h.flow as u64,
                (Some(f), None) => {
                    let t = f.five_tuple();
                    (u32::from_be_bytes(t.src) as u64) << 32 | (t.src_port as u64) << 16 | t.dst_port as u64
                }
                _ => 0,
            },
            data,
            wire_bytes: at.wire as u32,
            signal: written.map(|s| s.value),
        };
        let view = PortView {
            now: at.now,
            node: at.port.node,
            port: at.port.port_no,
            queue_bytes: at.port.bytes,
            rate: at.port.rate,
            // The dequeue hook runs before the port counts the departing packet.
            tx_bytes: at.port.stats.tx_bytes,
            buffer_used: at.buffer_used,
            buffer_size: at.buffer_size,
        };
        let stamp = match hook {
            Hook::Enqueue => state.on_enqueue(&view, &packet),
            Hook::Dequeue => state.on_dequeue(&view, &packet),
        };
        if stamp == Stamp::NONE || !data {
            return None;
        }
        if let Some(value) = stamp.write {
            let (combined, hops) = match written {
                Some(s) => (self.combine.apply(s.value, value), s.hops.saturating_add(1)),
                None => (value, 1),
            };
            match frame::set_signal(slot, len, combined, hops) {
                Ok(()) => self.counters.writes += 1,
                Err(_) => self.counters.no_field += 1,
            }
        }
        let value = stamp.feedback?;
        let (Some(f), Some(h)) = (parsed, sluice) else {
            self.counters.no_feedback += 1;
            return None;
        };
        let n = feedback_frame(feedback, &f, &h, value, at.port.node, at.now).ok()?;
        self.counters.feedback += 1;
        Some(n)
    }
}

/// Writes the signal packet carrying `value` from switch `node` at `now` for data packet `data` (its
/// frame and sluice header `h`) into `buf`: addressed from the data packet's receiver to its sender, so
/// that the sender's transport finds the flow by its peer and id. The MAC addresses are set on delivery.
fn feedback_frame(
    buf: &mut [u8],
    data: &Frame,
    h: &SluiceHeader,
    value: u64,
    node: u32,
    now: Time,
) -> Result<usize, WireError> {
    let ports = data.five_tuple();
    let header = SluiceHeader {
        seq: value,
        bytes: node,
        sent_ns: now / PS_PER_NS,
        echo_ns: h.sent_ns,
        ..SluiceHeader::new(Kind::Signal, h.flow)
    };
    let mut payload = [0u8; sluice_wire::sluice::HEADER_LEN + SIGNAL_LEN];
    let n = encode(&header, &[], &[], &mut payload)?;
    let eth = EthHeader { dst: data.eth.src, src: data.eth.dst, ethertype: 0 };
    let ip = Ipv4Header {
        header_len: 20,
        dscp: 0,
        ecn: Ecn::NotEct,
        total_len: 0,
        id: 0,
        flags_fragment: 0x4000,
        ttl: 64,
        protocol: 0,
        src: data.ip.dst,
        dst: data.ip.src,
    };
    frame::write_udp(buf, &eth, &ip, (ports.dst_port, ports.src_port), &payload[..n])
}
