//! A worked example of a new token-based (receiver-driven) algorithm: "echo-AIMD", a receiver token window
//! that grows one token per round trip and halves, at most once per round trip, when data packets echo
//! a congestion mark their token picked up in a switch token queue.
//!
//! Its transport design points are a [`TokenTransport`] flattened into the config, so `[cc.params]` can
//! change any of them (`unscheduled = "none"`, `volume_control = false`, ...). To ship it, move the code
//! into `src/echo_aimd.rs`, add `pub mod echo_aimd;` to `src/lib.rs` and `crate::echo_aimd::ALGORITHM` to
//! `REGISTRY`. This example drives the receiver by hand:
//! `cargo run -p sluice-cc --example custom_token_algorithm`.

use serde::{Deserialize, Serialize};
use sluice_cc::registry::merge_params;
use sluice_cc::token::{bdp_bytes, token_factory, TokenFactory, TokenTransport};
use sluice_cc::{Algorithm, Arrival, Control, Factory, FlowInfo, Needs, ParamError, ReceiverControl, RxCtx, RxEvents};
use sluice_cc::{TimerId, Unscheduled};
use sluice_core::Rate;

/// Parameters, each with its default and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EchoAimdConfig {
    /// Window cut on a marked round trip. Default 0.5 (RFC 3168 reacts to ECN as to loss).
    pub decrease: f64,
    /// The transport: no unscheduled phase, switch token limiters that mark, volume control.
    #[serde(flatten)]
    pub transport: TokenTransport,
}

impl Default for EchoAimdConfig {
    fn default() -> Self {
        let transport = TokenTransport {
            unscheduled: Unscheduled::None,
            token_limiter: true,
            limiter_capacity: 1000,
            token_ecn: true,
            volume_control: true,
            ..TokenTransport::default()
        };
        EchoAimdConfig { decrease: 0.5, transport }
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "echo_aimd",
    summary: "example: receiver token window, +1 token per RTT, halved once per RTT on echoed token marks",
    control: Control::Window,
    needs: Needs { token_transport: true, receiver: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<std::sync::Arc<dyn Factory>, ParamError> {
    let config = merge_params(&EchoAimdConfig::default(), params)?;
    token_factory(TokenFactory {
        name: "echo_aimd",
        config,
        make: |c, f| Box::new(EchoAimd::new(c, f)),
        transport: |c| &c.transport,
    })
}

const ROUND: TimerId = TimerId(0);

/// The receiver of one flow.
pub struct EchoAimd {
    decrease: f64,
    window: f64,
    token: f64,
    rtt: u64,
    marked: bool,
}

impl EchoAimd {
    fn new(config: &EchoAimdConfig, flow: &FlowInfo) -> EchoAimd {
        let token = config.transport.token_bytes(flow.mss) as f64;
        EchoAimd { decrease: config.decrease, window: bdp_bytes(flow) as f64, token, rtt: flow.base_rtt, marked: false }
    }
}

impl ReceiverControl for EchoAimd {
    fn name(&self) -> &'static str {
        "echo_aimd"
    }

    fn events(&self) -> RxEvents {
        RxEvents::DATA | RxEvents::TIMER
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut RxCtx) {
        ctx.set_token_window(self.window as u64);
        ctx.set_timer(ROUND, ctx.now() + self.rtt);
    }

    fn on_data(&mut self, arrival: &Arrival, _ctx: &mut RxCtx) {
        self.marked |= arrival.token_echo;
    }

    fn on_timer(&mut self, _id: TimerId, ctx: &mut RxCtx) {
        self.window = if std::mem::take(&mut self.marked) {
            (self.window * self.decrease).max(self.token)
        } else {
            self.window + self.token
        };
        ctx.set_token_window(self.window as u64);
        ctx.set_timer(ROUND, ctx.now() + self.rtt);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("token_window", self.window);
    }
}

fn main() {
    let factory = (ALGORITHM.build)(&toml::Table::new(), 100_000_000_000).expect("defaults are valid");
    let transport = factory.token_transport().expect("a token algorithm");
    println!(
        "unscheduled {}, limiter {}, volume control {}",
        transport.unscheduled, transport.token_limiter, transport.volume_control
    );
    let flow = FlowInfo {
        flow_id: 0,
        mss: 1000,
        header_bytes: 82,
        line_rate: 100_000_000_000,
        base_rtt: 5_000_000,
        hops: 3,
        size: Some(1_000_000),
        start: 0,
    };
    let mut rx = factory.receiver(&flow).expect("a receiver side");
    let mut ctx = RxCtx::new(0);
    rx.on_start(&flow, &mut ctx);
    println!("start: token window {:?} bytes", ctx.decisions().token_window);
    for round in 1..5u64 {
        let mut ctx = RxCtx::new(round * 5_000_000);
        let echo = round == 2;
        rx.on_data(&Arrival { token_echo: echo, scheduled: true, ..Arrival::default() }, &mut ctx);
        rx.on_timer(ROUND, &mut ctx);
        println!("round {round} (echo: {echo}): token window {:?} bytes", ctx.decisions().token_window);
    }
}
