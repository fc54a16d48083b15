//! Per-flow transport state and logic (layer 3): the window transport's sender and receiver, the token
//! transport, and the glue between a flow and its CC algorithm. A transport runs on a host it sees only
//! through [`HostIo`]: the clock and event queue, the NIC's control queue, and the CC plane's channel.

pub mod cc;
pub mod flow;
pub mod receiver;
pub mod table;
pub mod token;
pub mod window;

use std::collections::VecDeque;

use sluice_cc::Needs;
use sluice_core::Time;
use sluice_plane::HostChannel;

use crate::config::{HostConfig, LinkConfig, RdEnv};
use crate::engine::packet::{Kind, Packet};
use crate::engine::Core;
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
    pub rd: Option<&'a RdEnv>,
}

impl HostEnv<'_> {
    /// A control packet of `kind` for `flow` toward host `to`, carrying `seq`.
    pub fn control_packet(&self, kind: Kind, flow: u32, to: u32, seq: u64) -> Packet {
        Packet { seq, ..Packet::new(kind, flow, to, self.link.control_bytes, self.control_queue) }
    }
}

/// The host a transport runs on, for one call: the engine, the host's node id, its NIC, the list of its
/// flows ready to send, and its end of the CC plane's channel.
pub struct HostIo<'a> {
    /// The clock, the event queue, the packets and the counters.
    pub core: &'a mut Core,
    /// The host's node id.
    pub node: u32,
    /// The host's NIC (its control queue and rate).
    pub nic: &'a mut Port,
    /// The host's flows with something to send, in the NIC's round-robin order.
    pub ready: &'a mut VecDeque<u32>,
    /// The host's end of the CC plane's channel.
    pub channel: &'a mut HostChannel,
}

impl HostIo<'_> {
    /// Queues flow `id` (`f`) for the NIC if it has something to send now.
    pub fn activate(&mut self, f: &mut Flow, id: u32, mtu: u32) {
        activate(self.ready, f, id, self.core.now, mtu);
    }

    /// Queues `packet` in the NIC's control queue; returns its id.
    #[inline]
    pub fn queue_control(&mut self, env: &HostEnv, packet: Packet) -> u32 {
        let id = self.core.arena.alloc(packet);
        self.nic.enqueue(self.core.now, env.control_queue, id, packet.wire);
        id
    }
}

/// Queues flow `id` (`f`) in `ready`, its host's list of flows with something to send, if it has something
/// to send at `now` and is not queued already.
pub fn activate(ready: &mut VecDeque<u32>, f: &mut Flow, id: u32, now: Time, mtu: u32) {
    if f.in_ready || f.in_pacing {
        return;
    }
    match f.send_state(now, mtu) {
        SendState::Send | SendState::PacedUntil(_) => {
            f.in_ready = true;
            ready.push_back(id);
        }
        SendState::WindowFull | SendState::Idle => {}
    }
}
