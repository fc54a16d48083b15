//! A switch signal's hook at the switch (`sluice_cc::signal`): one design state per egress port, called
//! when a packet is routed to the port and when it leaves, writing the design's value into data packets
//! and sending feedback packets to their senders. The switch calls [`SignalPorts::on_enqueue`] and
//! [`SignalPorts::on_dequeue`] only when a run's algorithm has a signal; nothing here names a design.

use sluice_cc::signal::{Combine, PacketView, PortSignal, PortView, Stamp, SwitchSignal};

use crate::engine::packet::{Kind, Packet};
use crate::engine::Core;
use crate::net::port::Port;
use crate::net::Fabric;

/// A design's state at every egress port of one switch.
#[derive(Debug)]
pub struct SignalPorts {
    ports: Vec<Box<dyn PortSignal>>,
    combine: Combine,
}

/// The switch around a port, as a hook sees it.
pub struct At<'a> {
    /// The switch's node id.
    pub node: u32,
    /// The port's number.
    pub out: usize,
    /// The port.
    pub port: &'a Port,
    /// Bytes in the switch's shared buffer.
    pub buffer_used: u64,
}

impl SignalPorts {
    /// `design`'s state for each of `ports`.
    pub fn new(design: &dyn SwitchSignal, ports: &[Port]) -> SignalPorts {
        SignalPorts { ports: ports.iter().map(|p| design.port(p.rate)).collect(), combine: design.combine() }
    }

    /// Packet `id` routed to the port: the design sees the queue it finds. Returns a feedback packet for
    /// the switch to route, as if it arrived on the data packet's ingress port.
    pub fn on_enqueue(&mut self, core: &mut Core, fabric: &Fabric, at: At<'_>, id: u32) -> Option<u32> {
        let (view, packet) = views(core, fabric, &at, id, 0);
        let stamp = self.ports[at.out].on_enqueue(&view, &packet);
        self.apply(core, fabric, at.node, id, stamp)
    }

    /// Packet `id` of `wire` bytes put on the wire of the port (the port has counted it): the design sees
    /// the queue left behind it.
    pub fn on_dequeue(&mut self, core: &mut Core, fabric: &Fabric, at: At<'_>, id: u32, wire: u32) -> Option<u32> {
        let (view, packet) = views(core, fabric, &at, id, wire);
        let stamp = self.ports[at.out].on_dequeue(&view, &packet);
        self.apply(core, fabric, at.node, id, stamp)
    }

    /// Writes the stamp's value into data packet `id` and builds its feedback packet.
    fn apply(&self, core: &mut Core, fabric: &Fabric, node: u32, id: u32, stamp: Stamp) -> Option<u32> {
        if stamp == Stamp::NONE || core.arena.get(id).kind != Kind::Data {
            return None;
        }
        if let Some(value) = stamp.write {
            core.arena.write_signal(id, value, self.combine);
        }
        let value = stamp.feedback?;
        let p = *core.arena.get(id);
        let to = core.flow_src.of(p.flow);
        let feedback = Packet {
            seq: value,
            sack: node as u64,
            sent_at: p.sent_at,
            delivered: core.now,
            ingress: p.ingress,
            ..Packet::new(Kind::Signal, p.flow, to, fabric.link.control_bytes, fabric.config.control_queue)
        };
        core.counters.notifications += 1;
        Some(core.arena.alloc(feedback))
    }
}

fn views(core: &Core, fabric: &Fabric, at: &At<'_>, id: u32, wire: u32) -> (PortView, PacketView) {
    let p = core.arena.get(id);
    let view = PortView {
        now: core.now,
        node: at.node,
        port: at.out as u16,
        queue_bytes: at.port.bytes,
        rate: at.port.rate,
        tx_bytes: at.port.tx_bytes - wire as u64,
        buffer_used: at.buffer_used,
        buffer_size: fabric.config.buffer,
    };
    let packet = PacketView {
        flow: p.flow as u64,
        data: p.kind == Kind::Data,
        wire_bytes: p.wire,
        signal: core.arena.signal(id),
    };
    (view, packet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::packet::Arena;

    fn data() -> Packet {
        Packet::new(Kind::Data, 0, 1, 1048, 3)
    }

    #[test]
    fn hops_combine_their_values_and_the_ack_echoes_them() {
        let mut arena = Arena::new(false);
        arena.enable_signal();
        let id = arena.alloc(data());
        assert_eq!(arena.signal(id), None, "no hop wrote yet");
        arena.write_signal(id, 40, Combine::Min);
        arena.write_signal(id, 25, Combine::Min);
        arena.write_signal(id, 60, Combine::Min);
        assert_eq!(arena.signal(id), Some(25));
        assert_eq!(arena.get(id).signal_hops, 3);
        let ack = arena.alloc(Packet::new(Kind::Ack, 0, 0, 64, 0));
        arena.copy_int(id, ack);
        assert_eq!((arena.signal(ack), arena.get(ack).signal_hops), (Some(25), 3));
        // A reused slot starts empty: the packet's hop count is zero again.
        arena.free(id);
        let again = arena.alloc(data());
        assert_eq!(again, id);
        assert_eq!(arena.signal(again), None);
    }

    #[test]
    fn without_a_signal_the_arena_keeps_no_values() {
        let mut arena = Arena::new(true);
        let id = arena.alloc(data());
        let ack = arena.alloc(Packet::new(Kind::Ack, 0, 0, 64, 0));
        arena.copy_int(id, ack);
        assert_eq!(arena.signal(ack), None);
    }
}
