//! `ndp`: NDP (Handley et al. SIGCOMM'17), receiver-pulled transport with payload trimming.
//!
//! A sender sends its first window (one BDP) at line rate over sprayed paths; switches keep data queues
//! of 8 packets and trim the payload of a packet that finds the queue full, forwarding the header at
//! control priority (csg-htsim `sim/compositequeue.cpp`: the arriving packet or, with probability 1/2,
//! the last queued one; a header that finds the header queue full returns to its sender, which resends
//! the packet); the receiver answers every arrival — full packet or trimmed header — with one PULL
//! (a token), paced by one pull pacer per receiver NIC at the data rate (csg-htsim `sim/ndp.cpp`
//! `NdpPullPacer`); a header also makes the receiver NACK the packet, which the sender resends on its
//! next pull.

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, PS_PER_US};

use crate::api::Needs;
use crate::receiver::{Arrival, ReceiverControl, RxCtx, RxEvents};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};
use crate::token::{token_factory, TokenFactory, TokenTransport, Unscheduled};

/// NDP parameters: the transport settings only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NdpConfig {
    /// The token transport.
    #[serde(flatten)]
    pub transport: TokenTransport,
}

impl NdpConfig {
    /// NDP's transport: a one-BDP first window (csg-htsim examples: 23 packets of 1500 B, about one BDP of
    /// their fabric), trimming at 8 packets (paper section 3.1), spraying, the receiver's pull pacer,
    /// pulls only while the message has bytes left (ToCC Table I: NDP has total volume control), pulls
    /// never expire, an ACK per packet (`ndp.cpp` `NdpSink::receivePacket`), and a loss timeout of 5 ms (the
    /// minimum RTO of csg-htsim `ndp.cpp`; headers report nearly every loss long before), the same for
    /// the sender's request timer, and csg-htsim's header queue of twice the data queue
    /// (`header_queue = 0`).
    pub fn defaults() -> NdpConfig {
        NdpConfig {
            transport: TokenTransport {
                unscheduled: Unscheduled::Bdp,
                trimming: true,
                trim_queue: 8,
                spray: true,
                host_limiter: true,
                volume_control: true,
                stale_timeout: 0,
                ack_every_packet: true,
                rx_timeout: 5_000 * PS_PER_US,
                tx_timeout: 5_000 * PS_PER_US,
                ..TokenTransport::default()
            },
        }
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "ndp",
    summary: "NDP: line-rate first window, trimming to headers, per-packet spraying, paced pulls (token-based)",
    control: Control::Window,
    needs: Needs { token_transport: true, receiver: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<std::sync::Arc<dyn Factory>, ParamError> {
    let config = merge_params(&NdpConfig::defaults(), params)?;
    token_factory(TokenFactory {
        name: "ndp",
        config,
        make: |_, _| Box::new(Ndp::default()),
        transport: |c| &c.transport,
    })
}

/// NDP's receiver for one flow: a pull per arrival.
#[derive(Debug, Clone, Default)]
pub struct Ndp {
    pulls: u64,
}

impl ReceiverControl for Ndp {
    fn name(&self) -> &'static str {
        "ndp"
    }

    fn events(&self) -> RxEvents {
        RxEvents::DATA
    }

    fn on_data(&mut self, _arrival: &Arrival, ctx: &mut RxCtx) {
        self.pulls += 1;
        ctx.grant(1);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("pulls", self.pulls as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arrival_pulls_once_even_a_trimmed_header() {
        let mut ndp = Ndp::default();
        for trimmed in [false, true] {
            let mut ctx = RxCtx::new(0);
            ndp.on_data(&Arrival { trimmed, ..Arrival::default() }, &mut ctx);
            assert_eq!(ctx.decisions().grant, 1);
        }
    }
}
