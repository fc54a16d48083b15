//! A worked example of a new algorithm: ECN-AIMD, a window that grows one packet per round trip and is
//! halved at most once per round trip when ACKs echo ECN marks.
//!
//! To ship it, move the code below into `src/ecn_aimd.rs`, add `pub mod ecn_aimd;` to `src/lib.rs` and
//! `crate::ecn_aimd::ALGORITHM` to `REGISTRY` in `src/registry.rs`; then `cc.algorithm = "ecn_aimd"` and
//! `[cc.params]` work in every scenario. This example drives the controller by hand:
//! `cargo run -p sluice-cc --example custom_algorithm`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_cc::registry::{merge_params, ConfigFactory};
use sluice_cc::{Ack, Algorithm, CongestionControl, Control, Ctx, Events, Factory, FlowInfo, Loss, Needs, ParamError};
use sluice_core::Rate;

/// Parameters, each with its default and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnAimdConfig {
    /// Initial window in packets. Default 10 (RFC 6928).
    pub init_cwnd_packets: u64,
    /// Window cut on a marked round trip. Default 0.5 (RFC 3168 reacts to ECN as to loss).
    pub decrease: f64,
}

impl Default for EcnAimdConfig {
    fn default() -> Self {
        EcnAimdConfig { init_cwnd_packets: 10, decrease: 0.5 }
    }
}

/// The registry entry: name, what it controls, what it needs from the datapath, how to build it.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "ecn_aimd",
    summary: "example: +1 packet per RTT, window halved once per marked RTT",
    control: Control::Window,
    needs: Needs { ecn: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = merge_params(&EcnAimdConfig::default(), params)?;
    if !(config.decrease > 0.0 && config.decrease < 1.0) {
        return Err(ParamError { key: Some("decrease".into()), message: "must be in (0, 1)".into() });
    }
    Ok(Arc::new(ConfigFactory { config, make: |c, flow| Box::new(EcnAimd::new(c.clone(), flow)), cnp_interval: None }))
}

/// The controller of one flow.
#[derive(Debug)]
pub struct EcnAimd {
    config: EcnAimdConfig,
    mss: u64,
    cwnd: u64,
    /// Bytes acknowledged toward the next one-packet increase.
    acked: u64,
    /// No further cut until the ACK point passes this sequence (one cut per round trip).
    hold_until: u64,
}

impl EcnAimd {
    fn new(config: EcnAimdConfig, flow: &FlowInfo) -> EcnAimd {
        let mss = flow.mss as u64;
        let cwnd = config.init_cwnd_packets * mss;
        EcnAimd { config, mss, cwnd, acked: 0, hold_until: 0 }
    }
}

impl CongestionControl for EcnAimd {
    fn name(&self) -> &'static str {
        "ecn_aimd"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut Ctx) {
        ctx.set_cwnd(self.cwnd);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        if ack.ecn_bytes > 0 && ack.snd_una >= self.hold_until {
            self.cwnd = ((self.cwnd as f64 * self.config.decrease) as u64).max(self.mss);
            self.hold_until = ack.snd_nxt;
        } else {
            self.acked += ack.acked_bytes;
            if self.acked >= self.cwnd {
                self.acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
        ctx.set_cwnd(self.cwnd);
    }

    fn on_loss(&mut self, _loss: &Loss, ctx: &mut Ctx) {
        self.cwnd = (self.cwnd / 2).max(self.mss);
        ctx.set_cwnd(self.cwnd);
    }

    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.cwnd as f64);
    }
}

fn main() {
    let factory = (ALGORITHM.build)(&toml::Table::new(), 100_000_000_000).expect("defaults are valid");
    let flow = FlowInfo {
        flow_id: 0,
        mss: 1000,
        header_bytes: 82,
        line_rate: 100_000_000_000,
        base_rtt: 8_000_000,
        hops: 3,
        size: None,
        start: 0,
    };
    let mut cc = factory.create(&flow);
    let mut ctx = Ctx::new(0);
    cc.on_start(&flow, &mut ctx);
    println!("start: cwnd {:?}", ctx.decisions().cwnd);
    let mut una = 0;
    for round in 0..4 {
        let marked = round == 2;
        for _ in 0..10 {
            una += 1000;
            let mut ctx = Ctx::new(round * 8_000_000);
            cc.on_ack(&Ack::single(1000, 1, marked, Some(8_000_000), una, una + 10_000, 10_000, 0), &mut ctx);
        }
        let mut cwnd = 0.0;
        cc.trace(&mut |_, v| cwnd = v);
        println!("round {round} (marked: {marked}): cwnd {cwnd} bytes");
    }
}
