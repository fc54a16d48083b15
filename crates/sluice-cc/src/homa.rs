//! `homa`: Homa (Montazeri et al. SIGCOMM'18), receiver-driven grants with SRPT and in-network priorities.
//!
//! A sender sends the first RTTbytes of a message unscheduled at line rate, at a priority chosen by the
//! message's size (cutoffs that split the workload's unscheduled bytes evenly over the unscheduled
//! levels), and the rest only against grants. The receiver keeps, for each of its `overcommit` messages
//! with the fewest bytes left (SRPT with overcommitment), RTTbytes granted but not yet received: one grant
//! per arriving packet (PlatformLab/HomaSimulation `HomaTransport.cc`, `ReceiveScheduler`); scheduled
//! packets use the lowest `overcommit` levels by the message's rank. Senders send the message with the
//! fewest bytes left first.
//!
//! The receiver side here only sets the token window (RTTbytes); ranking, grant pacing and priorities are
//! the datapath's SRPT and priority settings ([`TokenTransport::srpt`], [`TokenTransport::priorities`]).

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, PS_PER_US};

use crate::api::{FlowInfo, Needs};
use crate::receiver::{ReceiverControl, RxCtx, RxEvents};
use crate::registry::{merge_params, Algorithm, Control, Factory, ParamError};
use crate::token::{bdp_bytes, token_factory, TokenFactory, TokenTransport, Unscheduled};

/// Homa parameters; transport settings sit next to them in `[cc.params]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomaConfig {
    /// Bytes granted but not yet received per granted message (RTTbytes, `maxOutstandingRecvBytes`); 0 =
    /// one BDP of the message's path (the simulator's `rttBytes` is the BDP of its 10 Gbps fabric,
    /// homaTransportConfig.ini `rttBytes = 0x2710`).
    #[serde(with = "sluice_core::serde_units::size")]
    pub rtt_bytes: u64,
    /// The token transport.
    #[serde(flatten)]
    pub transport: TokenTransport,
}

impl HomaConfig {
    /// Homa's transport: one RTTbytes unscheduled, SRPT at both ends, 8 strict priorities (7 for data),
    /// overcommitment from the workload (`overcommit = 0`: one flow per scheduled priority level, the
    /// levels split by the workload's scheduled and unscheduled bytes, as HomaSimulation sets
    /// `numSendersToKeepGranted` = scheduled priorities per workload: 1 for key-value, 6 for web server,
    /// 7 of 8 for Hadoop, cache follower and DCTCP), grants paced at the NIC rate (`grantTimer`), no switch
    /// limiter, grants only up to the message length (volume control), grants never expire, and a
    /// receiver asks for missing data after 2 ms without progress (PlatformLab/HomaModule
    /// `homa_utils.c`: `resend_ticks = 2` ticks of the 1 ms Homa timer); a sender that heard nothing of
    /// its message for as long sends its request again (the same `homa_timer` check covers a silent peer
    /// in either direction).
    pub fn defaults() -> HomaConfig {
        HomaConfig {
            rtt_bytes: 0,
            transport: TokenTransport {
                unscheduled: Unscheduled::Bdp,
                token_limiter: false,
                host_limiter: true,
                volume_control: true,
                stale_timeout: 0,
                rx_timeout: 2_000 * PS_PER_US,
                tx_timeout: 2_000 * PS_PER_US,
                srpt: true,
                overcommit: 0,
                priorities: true,
                ..TokenTransport::default()
            },
        }
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "homa",
    summary: "Homa: RTTbytes unscheduled, SRPT grants with overcommitment, 8 priorities (token-based)",
    control: Control::Window,
    needs: Needs { token_transport: true, receiver: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<std::sync::Arc<dyn Factory>, ParamError> {
    let config = merge_params(&HomaConfig::defaults(), params)?;
    token_factory(TokenFactory {
        name: "homa",
        config,
        make: |c, f| Box::new(Homa::new(c, f)),
        transport: |c| &c.transport,
    })
}

/// Homa's receiver for one message.
#[derive(Debug, Clone)]
pub struct Homa {
    window: u64,
}

impl Homa {
    /// A receiver for `flow`.
    pub fn new(config: &HomaConfig, flow: &FlowInfo) -> Homa {
        let window = if config.rtt_bytes == 0 { bdp_bytes(flow) } else { config.rtt_bytes };
        Homa { window: window.max(flow.mss as u64) }
    }
}

impl ReceiverControl for Homa {
    fn name(&self) -> &'static str {
        "homa"
    }

    fn events(&self) -> RxEvents {
        RxEvents::default()
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut RxCtx) {
        ctx.set_token_window(self.window);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("token_window", self.window as f64);
    }
}
