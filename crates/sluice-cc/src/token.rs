//! The token-based (receiver-driven) transport's design points, shared by every token algorithm.
//!
//! A token algorithm decides at the receiver ([`crate::ReceiverControl`]): when to issue tokens, at what
//! rate or window. The transport settings around it — the design points P1-P4 of Zhang et al.'s anatomy
//! of token-based CC (ToCC, seed 002, section III), the allocation ratio, stale-token handling and the
//! switch features the protocol relies on — are a [`TokenTransport`] that the algorithm's factory hands
//! to the datapath ([`crate::Factory::token_transport`]). Each algorithm embeds one in its config (flattened,
//! so `[cc.params]` sets them next to the algorithm's own parameters) with its authors' defaults, and
//! every design point can be changed per scenario:
//!
//! - P1 unscheduled phase: [`TokenTransport::unscheduled`] (none, one BDP, or a byte count) and
//!   [`TokenTransport::aeolus`] (switches drop unscheduled packets above a small queue; a probe after the
//!   burst reveals the losses, which are resent as scheduled packets);
//! - P2 token generation: the algorithm's choice (a token rate, a token window, or grants per arrival);
//! - P3 token rate limiters: [`TokenTransport::token_limiter`] (per switch port) and
//!   [`TokenTransport::host_limiter`] (the receiver NIC);
//! - P4 total volume control: [`TokenTransport::volume_control`], by the flow size or by ToCC's
//!   "more than one BDP unsent" flag ([`TokenTransport::volume_by_flag`]);
//! - allocation ratio K: [`TokenTransport::token_data`]; stale tokens: [`TokenTransport::stale_timeout`]
//!   and [`TokenTransport::stale_bdp`].

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Time, PS_PER_US};

use crate::api::{CongestionControl, Ctx, Events, FlowInfo};
use crate::receiver::ReceiverControl;
use crate::registry::Factory;

/// P1: what a sender sends before its first token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Unscheduled {
    /// Nothing: the sender sends a request to send and waits for tokens.
    None,
    /// One bandwidth-delay product of the flow's path (line rate x base RTT).
    Bdp,
    /// Up to this many bytes.
    Bytes(u64),
}

impl Unscheduled {
    /// Unscheduled bytes for a flow of `size` bytes (`None` = unknown) on a path whose BDP is `bdp`.
    pub fn bytes(self, size: Option<u64>, bdp: u64) -> u64 {
        let budget = match self {
            Unscheduled::None => 0,
            Unscheduled::Bdp => bdp,
            Unscheduled::Bytes(b) => b,
        };
        size.map_or(budget, |s| s.min(budget))
    }
}

impl TryFrom<String> for Unscheduled {
    type Error = String;
    fn try_from(s: String) -> Result<Unscheduled, String> {
        match s.as_str() {
            "none" => Ok(Unscheduled::None),
            "bdp" => Ok(Unscheduled::Bdp),
            other => sluice_core::parse_size(other)
                .map(Unscheduled::Bytes)
                .map_err(|e| format!("expected \"none\", \"bdp\" or a size such as \"64KB\" for `unscheduled` ({e})")),
        }
    }
}

impl From<Unscheduled> for String {
    fn from(u: Unscheduled) -> String {
        match u {
            Unscheduled::None => "none".into(),
            Unscheduled::Bdp => "bdp".into(),
            Unscheduled::Bytes(b) => sluice_core::format_size(b),
        }
    }
}

impl fmt::Display for Unscheduled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from(*self))
    }
}

/// The token transport's settings. Defaults here are the neutral ones; each algorithm's config overrides
/// them with its authors' choices (see the algorithm modules).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenTransport {
    /// P1: bytes sent at line rate before tokens arrive. Default one BDP (the default; Homa's
    /// RTTbytes, NDP's initial window).
    pub unscheduled: Unscheduled,
    /// P1 with active drop (Aeolus, Hu et al. SIGCOMM'20): switches drop unscheduled packets once the
    /// egress queue holds `aeolus_threshold` bytes; the sender follows its burst with a probe and resends
    /// what was lost as scheduled packets. Default off.
    pub aeolus: bool,
    /// Aeolus' selective-dropping threshold. Default 8 KB (Aeolus paper, section 3.2: a few packets).
    #[serde(with = "sluice_core::serde_units::size")]
    pub aeolus_threshold: u64,
    /// P3: a token queue per switch egress port whose tokens leave no faster than
    /// token / (token + data per token) of the link rate (ExpressPass, Cho et al. SIGCOMM'17 section 3.1:
    /// 84/(84+1538) = 5.18% for 1538 B frames; here computed from the run's packet sizes so that the data
    /// the tokens release exactly fills the reverse link). Default off.
    pub token_limiter: bool,
    /// Tokens a switch token queue holds; more are dropped. Default 8 (ExpressPass paper, section 3.1).
    pub limiter_capacity: u32,
    /// P3 at hosts: the receiver NIC releases tokens no faster than the same limiter rate (ExpressPass's
    /// host credit limiter; NDP's pull pacer). Default on.
    pub host_limiter: bool,
    /// P4: the receiver stops issuing tokens once the bytes it granted and has not yet received cover
    /// what the flow still misses. Default off.
    pub volume_control: bool,
    /// Allocation ratio K: payload bytes one token grants; 0 = one full packet (MTU). ToCC's implementation
    /// uses 2-8 KB. Default 0.
    #[serde(with = "sluice_core::serde_units::size")]
    pub token_data: u64,
    /// Senders discard tokens held longer than this (0 = keep them). Default 200 us (the default
    /// for stale-token handling).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub stale_timeout: Time,
    /// Senders discard tokens held beyond one BDP of granted bytes. Default off.
    pub stale_bdp: bool,
    /// Wire bytes of a token (and of a request to send). Default 84 B: a minimum Ethernet frame with
    /// preamble and inter-frame gap (ExpressPass credit size, section 3.1).
    pub token_wire: u32,
    /// Switches trim the payload of a data packet that finds `trim_queue` packets in its queue and forward
    /// the header at control priority (NDP, Handley et al. SIGCOMM'17 section 3.1). Default off.
    pub trimming: bool,
    /// NDP's data queue length in packets. Default 8 (NDP paper section 3.1; csg-htsim examples `-q 8`).
    pub trim_queue: u32,
    /// Per-packet spraying over equal-cost paths (NDP). Default off.
    pub spray: bool,
    /// SRPT: senders send the flow with the fewest bytes left first and receivers grant only their `overcommit`
    /// flows with the fewest bytes left (Homa, Montazeri et al. SIGCOMM'18 section 3). Default off.
    pub srpt: bool,
    /// Homa's overcommitment degree: flows a receiver keeps granted at once; 0 = from the run's workload,
    /// one per scheduled priority level, with the 7 data levels split between scheduled and unscheduled
    /// packets by the bytes each carries (as HomaSimulation's per-workload `numSendersToKeepGranted`:
    /// 1 for key-value, 6 of 8 levels for web server, 7 of 8 for Hadoop, cache follower and DCTCP).
    /// Default 4 (HomaSimulation's all-RPC workload); the `homa` preset uses 0.
    pub overcommit: u32,
    /// Homa's priorities: data uses switch queues 1..=7 (queue 0 carries control); the lowest
    /// `overcommit` levels carry scheduled packets by the flow's grant rank and the others carry
    /// unscheduled packets by flow size, with cutoffs that split the workload's unscheduled bytes evenly
    /// (Homa section 3.4). Default off: all data in the data queue.
    pub priorities: bool,
    /// Token queues ECN-mark tokens (ToCC section V: thresholds scaled by token size / data size; the
    /// sender echoes marks in data packets). Default off.
    pub token_ecn: bool,
    /// Data-size equivalent of the token queue's RED Kmin (scaled by token/data size at the switch).
    /// Default 22 KB (ToCC appendix B: Kmin 22 KB, Kmax 85 KB, Pmax 0.2 at 100 Gbps).
    #[serde(with = "sluice_core::serde_units::size")]
    pub token_kmin: u64,
    /// Data-size equivalent of the token queue's RED Kmax. Default 85 KB (ToCC appendix B).
    #[serde(with = "sluice_core::serde_units::size")]
    pub token_kmax: u64,
    /// RED Pmax of the token queue. Default 0.2 (ToCC appendix B).
    pub token_pmax: f64,
    /// A receiver that has heard nothing of an unfinished flow for this long asks for the missing data
    /// again and re-issues its grants (ToCC section V, packet loss handling: PSNs and a timeout; the
    /// paper gives no value). Default 250 us: a sender discards a token it held for `stale_timeout`
    /// (200 us), so a grant unanswered for that long plus a margin for token queuing is lost.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub rx_timeout: Time,
    /// The receiver acknowledges every data packet (NDP's per-packet ACK); otherwise only the flow's last
    /// byte is acknowledged and lost data is asked for by NACK (ExpressPass, Homa and ToCC carry no
    /// per-packet acknowledgments, which would take reverse bandwidth the token limiters do not count).
    /// Default off.
    pub ack_every_packet: bool,
    /// P4 without the flow size (ToCC section V, "Data-driven token generation"): the sender flags each
    /// data packet from which more than one BDP (rounded up to whole packets) is unsent, and its request to
    /// send announces its first window (the unsent bytes, at most one BDP). The receiver grants that
    /// first window less the unscheduled bytes, then one token's bytes per flagged data packet it
    /// accepts, and nothing for unflagged ones; the token window only delays these grants. Once flagged
    /// data stops, the grants already issued cover the rest, so no token is left over. Needs
    /// `volume_control`. Default off (size-based volume control).
    pub volume_by_flag: bool,
    /// Rate-based token generation spaces successive tokens by the rate's interval times a uniform
    /// factor in [1 - jitter, 1 + jitter] (deterministic per receiver host), so that flows paced at equal
    /// rates do not stay synchronized at a limiter. Default 0 (ExpressPass uses 0.1: ns2-xpass
    /// `xpass.cc` jitters credit spacing by +-10%).
    pub token_jitter: f64,
    /// Bytes a trimming switch's header (control) queue holds; a trimmed header that finds it full goes
    /// back to its sender (return-to-sender) and a request to send is dropped (ACKs, NACKs and pulls
    /// count toward it but are always admitted). 0 = twice the data
    /// queue (`trim_queue` full packets), csg-htsim's default (`sim/compositequeue.cpp` `receivePacket`:
    /// a header is bounced or dropped when `_queuesize_high + size > 2 * _maxsize`). Default 0.
    #[serde(with = "sluice_core::serde_units::size")]
    pub header_queue: u64,
    /// Early CREDIT_STOP: once per round trip (from its request to its first token) the sender counts the
    /// tokens that reached it in that round trip; when they cover the packets it has left beyond the
    /// credit it holds, it tells the receiver to stop issuing tokens (kaist-ina/ns2-xpass `xpass/xpass.cc`
    /// `recv_credit`, `early_credit_stop_`: `credit_recved_rtt_ >= pkt_remaining()`). A receiver that
    /// stopped this way resumes when its loss timeout finds data missing. Default off.
    pub early_stop: bool,
    /// Sender-side retransmission timer: a sender that has heard nothing of its flow (no token, ACK or
    /// NACK) this long after its request to send sends the request again, and again every `tx_timeout`
    /// until it hears something, each wait twice the last; this recovers a flow whose request and
    /// unscheduled data were all lost, which the receiver cannot know of. 0 = off. Default 100 us (ns2-xpass example scripts:
    /// `Agent/XPass set retransmit_timeout_ 0.0001`, the sender's credit-request retransmission timer).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub tx_timeout: Time,
}

impl Default for TokenTransport {
    fn default() -> Self {
        TokenTransport {
            unscheduled: Unscheduled::Bdp,
            aeolus: false,
            aeolus_threshold: 8_000,
            token_limiter: false,
            limiter_capacity: 8,
            host_limiter: true,
            volume_control: false,
            token_data: 0,
            stale_timeout: 200 * PS_PER_US,
            stale_bdp: false,
            token_wire: 84,
            trimming: false,
            trim_queue: 8,
            spray: false,
            srpt: false,
            overcommit: 4,
            priorities: false,
            token_ecn: false,
            token_kmin: 22_000,
            token_kmax: 85_000,
            token_pmax: 0.2,
            rx_timeout: 250 * PS_PER_US,
            ack_every_packet: false,
            volume_by_flag: false,
            token_jitter: 0.0,
            header_queue: 0,
            early_stop: false,
            tx_timeout: 100 * PS_PER_US,
        }
    }
}

impl TokenTransport {
    /// Checks settings that serde cannot: returns the offending key and why.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        if self.token_wire == 0 {
            return bad("token_wire", "must be at least 1 byte");
        }
        if self.token_limiter && self.limiter_capacity == 0 {
            return bad("limiter_capacity", "must be at least 1 token when token_limiter is on");
        }
        if self.trimming && self.trim_queue == 0 {
            return bad("trim_queue", "must be at least 1 packet when trimming is on");
        }
        if self.priorities && self.overcommit >= 7 {
            return bad("overcommit", "must leave at least one of the 7 data priorities for unscheduled packets");
        }
        if !(0.0..=1.0).contains(&self.token_pmax) {
            return bad("token_pmax", "must be within [0, 1]");
        }
        if !(0.0..1.0).contains(&self.token_jitter) {
            return bad("token_jitter", "must be within [0, 1)");
        }
        if self.volume_by_flag && !self.volume_control {
            return bad("volume_by_flag", "flag-driven volume control needs volume_control = true");
        }
        if self.volume_by_flag && self.token_data != 0 {
            return bad("token_data", "flag-driven volume control grants one packet per flagged packet: leave it 0");
        }
        if self.token_ecn && self.token_kmax < self.token_kmin {
            return bad("token_kmax", "must not be below token_kmin");
        }
        Ok(())
    }

    /// Bytes a trimming switch's header queue holds for data packets of `full` wire bytes
    /// ([`TokenTransport::header_queue`]).
    pub fn header_queue_bytes(&self, full: u64) -> u64 {
        if self.header_queue == 0 {
            2 * self.trim_queue as u64 * full
        } else {
            self.header_queue
        }
    }

    /// Payload bytes one token grants for packets of `mtu` payload bytes.
    pub fn token_bytes(&self, mtu: u32) -> u64 {
        if self.token_data == 0 {
            mtu as u64
        } else {
            self.token_data
        }
    }
}

/// The sender side of a token algorithm: no window, line rate; tokens gate what it sends.
#[derive(Debug)]
pub struct Granted {
    /// The algorithm's name.
    pub name: &'static str,
}

impl CongestionControl for Granted {
    fn name(&self) -> &'static str {
        self.name
    }

    fn events(&self) -> Events {
        Events::default()
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        ctx.set_rate(flow.line_rate);
        ctx.set_cwnd(u64::MAX);
    }
}

/// A [`Factory`] for a token algorithm: a [`Granted`] sender, a receiver controller built from the config,
/// and the config's transport settings.
pub struct TokenFactory<C> {
    /// The algorithm's name.
    pub name: &'static str,
    /// The resolved config.
    pub config: C,
    /// Builds the receiver controller of a flow.
    pub make: fn(&C, &FlowInfo) -> Box<dyn ReceiverControl>,
    /// The transport settings inside the config.
    pub transport: fn(&C) -> &TokenTransport,
}

impl<C: Serialize + Send + Sync> Factory for TokenFactory<C> {
    fn create(&self, _flow: &FlowInfo) -> Box<dyn CongestionControl> {
        Box::new(Granted { name: self.name })
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn receiver(&self, flow: &FlowInfo) -> Option<Box<dyn ReceiverControl>> {
        Some((self.make)(&self.config, flow))
    }

    fn token_transport(&self) -> Option<TokenTransport> {
        Some((self.transport)(&self.config).clone())
    }
}

/// Wraps a resolved token config into a factory after checking its transport settings.
pub fn token_factory<C: Serialize + Send + Sync + 'static>(
    factory: TokenFactory<C>,
) -> Result<Arc<dyn Factory>, crate::ParamError> {
    (factory.transport)(&factory.config)
        .validate()
        .map_err(|(key, message)| crate::ParamError { key: Some(key), message })?;
    Ok(Arc::new(factory))
}

/// One BDP in bytes for a flow: line rate x base RTT.
pub fn bdp_bytes(flow: &FlowInfo) -> u64 {
    (flow.line_rate as u128 * flow.base_rtt as u128 / 8 / sluice_core::PS_PER_S as u128) as u64
}

/// ToCC's volume flag for the packet at `seq` of a flow of `size` bytes: more than one BDP (rounded up to
/// whole packets of `mss`) of the flow is unsent from this packet on. Every packet that has one BDP of
/// data behind it is flagged, so the flagged packets number exactly the packets beyond the first BDP,
/// and a resent packet carries its original's flag.
pub fn more_than_bdp(size: u64, seq: u64, bdp: u64, mss: u64) -> bool {
    size.saturating_sub(seq) > bdp.div_ceil(mss.max(1)) * mss
}

/// `gap` scaled by a factor uniform in [1 - jitter, 1 + jitter], from `u` uniform in [0, 1) (rate-based
/// token spacing, [`TokenTransport::token_jitter`]).
pub fn jittered(gap: Time, jitter: f64, u: f64) -> Time {
    (gap as f64 * (1.0 + jitter * (2.0 * u - 1.0))).round() as Time
}

/// Time between two tokens of one NIC or switch port at `rate` whose tokens grant `token_bytes` of payload
/// each, carried in packets with `header_bytes` of headers: the token and the data it releases together
/// fill the link (ExpressPass's credit limiter, NDP's pull pacer).
pub fn token_gap(transport: &TokenTransport, token_bytes: u64, rate: sluice_core::Rate, header_bytes: u32) -> Time {
    sluice_core::serialization_ps(transport.token_wire as u64 + token_bytes + header_bytes as u64, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscheduled_reads_none_bdp_and_sizes() {
        assert_eq!(Unscheduled::try_from("none".to_string()), Ok(Unscheduled::None));
        assert_eq!(Unscheduled::try_from("bdp".to_string()), Ok(Unscheduled::Bdp));
        assert_eq!(Unscheduled::try_from("64KB".to_string()), Ok(Unscheduled::Bytes(64_000)));
        assert!(Unscheduled::try_from("lots".to_string()).is_err());
        assert_eq!(Unscheduled::Bdp.bytes(Some(10_000), 65_000), 10_000);
        assert_eq!(Unscheduled::Bytes(5_000).bytes(None, 65_000), 5_000);
        assert_eq!(Unscheduled::None.bytes(Some(1), 65_000), 0);
    }

    #[test]
    fn jitter_scales_the_gap_within_its_bounds() {
        assert_eq!(jittered(1_000_000, 0.1, 0.0), 900_000);
        assert_eq!(jittered(1_000_000, 0.1, 0.5), 1_000_000);
        assert_eq!(jittered(1_000_000, 0.1, 0.999_999), 1_100_000);
        assert_eq!(jittered(1_000_000, 0.0, 0.9), 1_000_000);
    }

    #[test]
    fn the_volume_flag_marks_packets_with_a_bdp_behind_them() {
        // 10 packets of 1000 B, a BDP of 2.5 packets (rounded up to 3): the first 7 are flagged.
        let flagged = (0..10).filter(|k| more_than_bdp(10_000, k * 1000, 2_500, 1000)).count();
        assert_eq!(flagged, 7);
        assert!(!more_than_bdp(10_000, 7_000, 2_500, 1000));
    }

    #[test]
    fn validation_names_the_key() {
        let t = TokenTransport { priorities: true, overcommit: 7, ..TokenTransport::default() };
        assert_eq!(t.validate().unwrap_err().0, "overcommit");
        let t = TokenTransport { srpt: true, overcommit: 0, ..TokenTransport::default() };
        assert!(t.validate().is_ok(), "0 = from the workload");
        let t = TokenTransport { token_jitter: 1.0, ..TokenTransport::default() };
        assert_eq!(t.validate().unwrap_err().0, "token_jitter");
        let t = TokenTransport { volume_by_flag: true, ..TokenTransport::default() };
        assert_eq!(t.validate().unwrap_err().0, "volume_by_flag");
        let t = TokenTransport {
            volume_by_flag: true,
            volume_control: true,
            token_data: 4_000,
            ..TokenTransport::default()
        };
        assert_eq!(t.validate().unwrap_err().0, "token_data");
        let t = TokenTransport { token_pmax: 2.0, ..TokenTransport::default() };
        assert_eq!(t.validate().unwrap_err().0, "token_pmax");
        assert!(TokenTransport::default().validate().is_ok());
    }
}
