//! Bolt's programmable egress queue (Arslan et al., SIGCOMM'23; the authors' ns-3
//! `PfifoBoltQueueDisc`): queue notifications to senders (SRC), proactive ramp-up tokens (PRU) and
//! supply matching (SM), per egress port. A switch with Bolt's logic on calls [`Bolt::on_enqueue`] for
//! every packet it admits to a port; nothing else of the switch knows about Bolt.

use sluice_core::{Rate, Time, PS_PER_S};

use crate::engine::packet::{Kind, Packet, FLAG_DECWIN, FLAG_FIRST, FLAG_INCWIN, FLAG_LAST};
use crate::engine::Core;
use crate::net::Fabric;

/// Bolt state of one egress port (the authors' ns-3 `PfifoBoltQueueDisc` counters).
#[derive(Debug, Clone, Copy, Default)]
struct BoltPort {
    /// Proactive ramp-up tokens (`m_nPruToken`).
    tokens: u32,
    /// Supply for supply matching, bytes: what the link could have sent since the last arrival minus
    /// what arrived, accumulated and capped (`m_availLoad`; may go negative).
    supply: i64,
    /// Supply credit short of a whole byte, in bit-picoseconds over 8 (carried to the next arrival).
    credit: u128,
    /// When `supply` was last updated.
    updated: Time,
}

/// Bolt's state at one switch: one record per egress port.
#[derive(Debug)]
pub struct Bolt {
    ports: Vec<BoltPort>,
}

impl Bolt {
    /// State for a switch with `ports` egress ports.
    pub fn new(ports: usize) -> Bolt {
        Bolt { ports: vec![BoltPort::default(); ports] }
    }

    /// Bolt's egress-queue logic for packet `id` entering port `out`, whose link runs at `rate` with
    /// `queue` bytes waiting (pfifo-bolt-queue-disc.cc `DoEnqueue`; see
    /// [`crate::config::BoltSwitchConfig`]): every packet updates the port's supply; a data packet meeting
    /// a queue of at least `cc_thresh` bytes loses INCWIN and, if no switch before did so, gets DECWIN and
    /// makes this switch notify its sender, by the notification packet returned (the switch routes it
    /// like a packet arrived on `in_port`); below the threshold a LAST packet (not FIRST) deposits a PRU
    /// token, and an INCWIN packet keeps its flag by taking a token or one packet of supply, or loses it.
    pub fn on_enqueue(
        &mut self,
        core: &mut Core,
        fabric: &Fabric,
        out: usize,
        (rate, queue): (Rate, u64),
        in_port: u16,
        id: u32,
    ) -> Option<u32> {
        let cfg = &fabric.config.bolt;
        let full_packet = (fabric.link.mtu + fabric.link.header_bytes) as i64;
        let cap = cfg.max_supply.min(i64::MAX as u64) as i64;
        let state = &mut self.ports[out];
        let p = core.arena.get_mut(id);
        let credit = rate as u128 * (core.now - state.updated) as u128 + state.credit;
        let per_byte = 8 * PS_PER_S as u128;
        state.credit = credit % per_byte;
        state.updated = core.now;
        let gained = (credit / per_byte).min(i64::MAX as u128 / 2) as i64;
        state.supply = (state.supply - p.wire as i64).saturating_add(gained).min(cap);
        if p.kind != Kind::Data {
            return None;
        }
        let flags = p.flags;
        if queue >= cfg.cc_thresh {
            p.flags &= !FLAG_INCWIN;
            if flags & FLAG_DECWIN == 0 {
                p.flags |= FLAG_DECWIN;
                let (to, wire, queue_no) =
                    (core.flow_src.of(p.flow), fabric.link.control_bytes, fabric.config.control_queue);
                let notify = Packet {
                    seq: queue,
                    sent_at: p.sent_at,
                    delivered: core.now,
                    sack: rate,
                    ingress: in_port,
                    ..Packet::new(Kind::Notify, p.flow, to, wire, queue_no)
                };
                core.counters.notifications += 1;
                return Some(core.arena.alloc(notify));
            }
        } else if cfg.pru && flags & FLAG_LAST != 0 {
            if flags & FLAG_FIRST == 0 {
                state.tokens = (state.tokens + 1).min(cfg.max_pru_tokens);
            }
        } else if flags & FLAG_INCWIN != 0 {
            if cfg.pru && state.tokens > 0 {
                state.tokens -= 1;
            } else if cfg.supply_matching && state.supply >= full_packet {
                state.supply -= full_packet;
            } else {
                p.flags &= !FLAG_INCWIN;
            }
        }
        None
    }
}
