//! `dctcp_host`: DCTCP whose senders also back off from the receiving host's congestion, read from the
//! host signals the receiver's ACKs carry (TAURUS section 5.3 runs DCTCP with hostCC's responses;
//! section 3.3 delivers host signals "embedded into the remote feedback packets").
//!
//! hostCC (Agarwal et al. SIGCOMM'23) detects host congestion at the receiver, as NIC-to-memory (IIO)
//! buffer occupancy above a threshold, and answers toward the network by marking ECN CE on the packets
//! it receives, so DCTCP senders back off as from a congested switch ([`crate::hostcc`] does that with
//! a host policy). Here the receiver marks nothing: its ACKs carry its latest sample
//! ([`CongestionControl::on_host`]), and the sender counts every ACK that arrives while the latest
//! sample it has seen is above `iio_threshold` as one that echoed a mark: all of its acknowledged bytes
//! count as marked for `alpha`, and it cuts the window as an ECE does. Marks from switches count as in
//! [`crate::dctcp`]. The window, its growth and loss recovery are DCTCP's with its defaults.
//!
//! What changes against marking at the receiver: the sender knows which congestion it reacts to
//! (`host_acks` in traces counts the ACKs it took as host marks), and the response needs no receive-path
//! hook, only a sample on the ACK. When ACKs are folded (a reporting period longer than one ACK), the
//! datapath hands the period's samples after its ACKs, and the latest sample decides for the next
//! period's ACKs.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, HostSignal, Loss, Needs};
use crate::dctcp::{Dctcp, DctcpConfig};
use crate::hostcc::HostccConfig;
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// `dctcp_host` parameters (`[cc.params]` with `cc.algorithm = "dctcp_host"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpHostConfig {
    /// IIO occupancy of the receiving host above which its ACKs count as marked, bytes. Default 4480:
    /// hostCC's threshold as [`HostccConfig::iio_threshold`] reads it (the hostCC code's `iio_wr` 70,
    /// in 64-byte cache lines).
    #[serde(with = "sluice_core::serde_units::size")]
    pub iio_threshold: u64,
}

impl Default for DctcpHostConfig {
    fn default() -> Self {
        DctcpHostConfig { iio_threshold: HostccConfig::default().iio_threshold }
    }
}

impl DctcpHostConfig {
    /// Overlays `[cc.params]` on the defaults.
    pub fn resolve(params: &toml::Table) -> Result<DctcpHostConfig, ParamError> {
        merge_params(&DctcpHostConfig::default(), params)
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "dctcp_host",
    summary: "DCTCP that also counts ACKs as marked while the receiving host's IIO occupancy (carried on ACKs) is high",
    control: Control::Window,
    needs: Needs { ecn: true, host_signal: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = DctcpHostConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(DctcpHost::new(c.clone())), cnp_interval: None }))
}

/// The controller of one flow: DCTCP and the receiving host's latest state.
#[derive(Debug, Clone)]
pub struct DctcpHost {
    config: DctcpHostConfig,
    dctcp: Dctcp,
    /// The latest sample seen put the receiving host above the threshold.
    host_congested: bool,
    /// ACKs counted as marked because of the receiving host.
    host_acks: u64,
}

impl DctcpHost {
    /// A controller with `config`; DCTCP runs with its defaults.
    pub fn new(config: DctcpHostConfig) -> DctcpHost {
        DctcpHost { config, dctcp: Dctcp::new(DctcpConfig::default()), host_congested: false, host_acks: 0 }
    }

    /// The DCTCP controller underneath.
    pub fn dctcp(&self) -> &Dctcp {
        &self.dctcp
    }

    /// Whether the latest sample of the receiving host was above the threshold.
    pub fn host_congested(&self) -> bool {
        self.host_congested
    }
}

impl CongestionControl for DctcpHost {
    fn name(&self) -> &'static str {
        "dctcp_host"
    }

    fn events(&self) -> Events {
        self.dctcp.events() | Events::HOST
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        self.host_congested = false;
        self.host_acks = 0;
        self.dctcp.on_start(flow, ctx);
    }

    fn on_host(&mut self, signal: &HostSignal, _ctx: &mut Ctx) {
        self.host_congested = signal.iio_occupancy > self.config.iio_threshold;
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        if !self.host_congested {
            return self.dctcp.on_ack(ack, ctx);
        }
        self.host_acks += ack.acks as u64;
        let marked = Ack { ecn_bytes: ack.acked_bytes, ecn_packets: ack.acked_packets, ecn_echo: true, ..*ack };
        self.dctcp.on_ack(&marked, ctx);
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        self.dctcp.on_loss(loss, ctx);
    }

    /// DCTCP's `cwnd`, `ssthresh` and `alpha`, then `host_congested` (0/1) and `host_acks`.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        self.dctcp.trace(out);
        out("host_congested", self.host_congested as u8 as f64);
        out("host_acks", self.host_acks as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_flows::fabric_flow;

    fn signal(iio_occupancy: u64) -> HostSignal {
        HostSignal { iio_occupancy, pcie_utilization: 0.5, at: 1 }
    }

    /// A clean ACK of one full packet at `snd_una`, with `snd_nxt` far ahead.
    fn ack(snd_una: u64) -> Ack<'static> {
        Ack::single(1000, 1, false, Some(10_000_000), snd_una, snd_una + 100_000, 50_000, 0)
    }

    fn started() -> (DctcpHost, Ctx) {
        let mut cc = DctcpHost::new(DctcpHostConfig::default());
        let mut ctx = Ctx::new(0);
        cc.on_start(&fabric_flow(), &mut ctx);
        (cc, ctx)
    }

    #[test]
    fn a_congested_receiver_cuts_the_window_as_an_ece_would() {
        let (mut cc, _) = started();
        let mut plain = Dctcp::new(DctcpConfig::default());
        plain.on_start(&fabric_flow(), &mut Ctx::new(0));
        for i in 1..=5 {
            cc.on_ack(&ack(i * 1000), &mut Ctx::new(0));
            plain.on_ack(&ack(i * 1000), &mut Ctx::new(0));
        }
        assert_eq!(cc.dctcp().cwnd(), plain.cwnd(), "below the threshold it is DCTCP");
        let before = cc.dctcp().cwnd();
        cc.on_host(&signal(4481), &mut Ctx::new(0));
        assert!(cc.host_congested());
        let mut ctx = Ctx::new(0);
        cc.on_ack(&ack(6000), &mut ctx);
        let echoed = Ack { ecn_bytes: 1000, ecn_packets: 1, ecn_echo: true, ..ack(6000) };
        plain.on_ack(&echoed, &mut Ctx::new(0));
        assert!(cc.dctcp().cwnd() < before, "cut: {} -> {}", before, cc.dctcp().cwnd());
        assert_eq!(cc.dctcp().cwnd(), plain.cwnd(), "the same cut as an echoed mark");
        assert!(cc.dctcp().in_cwr());
    }

    #[test]
    fn the_threshold_is_exclusive_and_a_calm_sample_ends_the_marking() {
        let (mut cc, _) = started();
        cc.on_host(&signal(4480), &mut Ctx::new(0));
        assert!(!cc.host_congested(), "at the threshold is not above it");
        cc.on_host(&signal(100_000), &mut Ctx::new(0));
        cc.on_ack(&ack(1000), &mut Ctx::new(0));
        cc.on_host(&signal(0), &mut Ctx::new(0));
        cc.on_ack(&ack(2000), &mut Ctx::new(0));
        let mut trace = Vec::new();
        cc.trace(&mut |name, value| trace.push((name, value)));
        assert_eq!(trace[3..], [("host_congested", 0.0), ("host_acks", 1.0)]);
    }

    #[test]
    fn parameters_resolve_with_units_and_unknown_keys_are_refused() {
        let params: toml::Table = toml::from_str("iio_threshold = \"8KB\"").unwrap();
        assert_eq!(DctcpHostConfig::resolve(&params).unwrap().iio_threshold, 8000);
        let params: toml::Table = toml::from_str("g = 0.5").unwrap();
        assert_eq!(DctcpHostConfig::resolve(&params).unwrap_err().key.as_deref(), Some("g"));
    }
}
