//! `bolt`: Bolt (Arslan et al., SIGCOMM 2023), sub-RTT congestion control with programmable switches.
//!
//! Window-based, paced below one packet. The switches do most of the work (section 3; the datapath's
//! [`Needs::bolt`]): a switch whose egress queue holds at least `CCthresh` bytes when a data packet arrives
//! sends that packet's sender a queue notification (sub-RTT control, SRC, section 3.1); below the
//! threshold it keeps or strips the packet's `PATH_INCWIN` flag by proactive ramp-up tokens (PRU,
//! section 3.2) and supply matching (SM, section 3.3). The rules below follow the authors' ns-3 code
//! (serhatarslan-hub/bolt_cc_ns3 `src/internet/model/bolt-l4-protocol.cc`, `CC_DEFAULT`: `HandleBts`,
//! `UpdateCwnd`, `UpdateCwndAsBolt`, `SendDownOnePacket`, `HandleNack`, `HandleRtx`). Windows are bytes.
//!
//! Packet flags ([`CongestionControl::packet_flags`], `SendDownOnePacket`), per data packet with
//! `bytes_left` bytes of the flow from its first byte on:
//! - `PATH_FIRST` while no ACK (or NACK) has come back; otherwise `PATH_INCWIN` if `cwnd < bytes_left`
//!   (the packet is not in the last window, so the flow could use a larger window);
//! - `PATH_LAST` if `bytes_left <= mss` (the final packet) or `cwnd >= bytes_left` (last window);
//! - `PATH_AI` on the first packet sent after the previous AI flag came back on an ACK (one per round
//!   trip; the first packet of the flow carries one).
//!
//! Per ACK (`UpdateCwnd`), from the path flags it echoes ([`Ack::path_flags`]):
//! - `PATH_AI`: `cwnd += ai mss`, and the next packet carries `PATH_AI` again;
//! - `PATH_INCWIN` without `PATH_DECWIN` (a switch kept the request): `cwnd += mss`.
//!
//! Per queue notification ([`Feedback::QueueNotification`], `HandleBts`), with `now` the time it arrives:
//! - `cwnd <= mss`: `cwnd *= 1 - max_md`;
//! - otherwise, with `rtt_src = now - sent_at` (the notification's round trip), the flow's share of the
//!   congested link `share = (cwnd 8 / rtt) / link_rate` (`rtt` the latest RTT sample; the line rate
//!   before the first one) and the queue beyond the target in packets
//!   `q_pkts = (queue - target_queue) / (mss + header_bytes)`: decrease `cwnd -= mss` if at least
//!   `rtt_src / (q_pkts share)` passed since the last decrease (once per that interval, so that the
//!   flows together remove the queue's excess within about one `rtt_src`). With `q_pkts <= 0` nothing
//!   changes (the ns-3 code divides by it).
//!
//! On loss (`HandleNack`, `HandleRtx`): `cwnd *= 1 - max_md` if at least one `rtt` (the latest RTT sample,
//! the base RTT before the first) passed since the last decrease; the loss also re-arms `PATH_AI` for the
//! next packet (the lost data may have carried it, which in the ns-3 code stops additive increase for the
//! rest of the flow). Every change is clamped to `[min_cwnd, max_cwnd]`; the last decrease starts at the
//! flow's start, as the ns-3 `m_wndTimeMarker`.
//!
//! Pacing (`SendDown`): with `cwnd < mss` the flow sends one packet per `rtt mss / cwnd`, i.e. at
//! `cwnd / mss (mss + header_bytes) 8 / rtt` bit/s; otherwise it is window-limited at line rate.
//!
//! The ACK rules count one window increment per ACK, so Bolt asks for per-ACK reports (folded reports
//! carry the union of their flags and grow the window once).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_NS, PS_PER_S};

use crate::api::{
    Ack, CongestionControl, Ctx, Events, Feedback, FlowInfo, Loss, LossKind, Needs, ReportPolicy, PATH_AI, PATH_DECWIN,
    PATH_FIRST, PATH_INCWIN, PATH_LAST,
};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};

/// Bolt parameters (`[cc.params]` with `cc.algorithm = "bolt"`); sizes in bytes. The switch side
/// (`CCthresh`, PRU tokens, supply cap) is set under `[switch.bolt]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoltConfig {
    /// Initial window, bytes; absent means the flow's bandwidth-delay product at line rate.
    /// Default absent: bolt-l4-protocol.cc starts every flow at `BandwidthDelayProduct`
    /// (`m_cwnd = m_bolt->GetBdp()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_cwnd: Option<u64>,
    /// Additive increase per returning AI flag (once per round trip), in packets, >= 0.
    /// Default 1: `AiFactor` attribute and the authors' scripts (`aiFactor = 1.0`).
    pub ai: f64,
    /// Multiplicative decrease on a notification with `cwnd <= 1 packet`, and on loss, in (0, 1).
    /// Default 0.5: `MaxMd` attribute and scripts (`maxMd = 0.5`).
    pub max_md: f64,
    /// Queue the notifications steer to, bytes (`TargetQ`): only the queue beyond it counts in `q_pkts`.
    /// Default 0: `TargetQ` attribute (the scripts leave it).
    pub target_queue: u64,
    /// Smallest window, bytes (at least 1). Default 15: `MinCwnd` attribute.
    pub min_cwnd: u64,
    /// Largest window, bytes; absent means the flow's bandwidth-delay product at line rate.
    /// Default absent: the scripts cap the window at the BDP (bolt-64host-fattree.cc
    /// `maxCwnd = bdpBytes`); the attribute default is 373760 B (about 256 packets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cwnd: Option<u64>,
}

impl Default for BoltConfig {
    fn default() -> Self {
        BoltConfig { init_cwnd: None, ai: 1.0, max_md: 0.5, target_queue: 0, min_cwnd: 15, max_cwnd: None }
    }
}

impl BoltConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges.
    pub fn resolve(params: &toml::Table) -> Result<BoltConfig, ParamError> {
        let config = merge_params(&BoltConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges (`resolve` does this; a config built in code can call it before use).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: &str| Err(ParamError { key: Some(key.into()), message: message.into() });
        if self.init_cwnd == Some(0) {
            return err("init_cwnd", "must be at least 1");
        }
        if !(self.ai >= 0.0 && self.ai.is_finite()) {
            return err("ai", "must be finite and not negative");
        }
        if !(self.max_md > 0.0 && self.max_md < 1.0) {
            return err("max_md", "must be in (0, 1)");
        }
        if self.min_cwnd == 0 {
            return err("min_cwnd", "must be at least 1");
        }
        if self.max_cwnd.is_some_and(|m| m < self.min_cwnd) {
            return err("max_cwnd", "must be at least min_cwnd");
        }
        Ok(())
    }
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "bolt",
    summary: "Bolt (Arslan et al. SIGCOMM'23): switch queue notifications cut the window per packet, \
              PRU tokens and supply matching grow it; paced below 1 packet",
    control: Control::WindowAndRate,
    needs: Needs { bolt: true, ..Needs::NOTHING },
    build,
};

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = BoltConfig::resolve(params)?;
    Ok(Arc::new(ConfigFactory { config, make: |c, _| Box::new(Bolt::new(c.clone())), cnp_interval: None }))
}

/// The Bolt controller of one flow.
#[derive(Debug, Clone)]
pub struct Bolt {
    config: BoltConfig,
    mss: u64,
    wire_bytes: u64,
    line_rate: Rate,
    base_rtt: Time,
    cwnd: u64,
    min_cwnd: u64,
    max_cwnd: u64,
    /// Latest RTT sample.
    rtt: Option<Time>,
    /// An ACK or NACK came back (packets stop carrying `PATH_FIRST`).
    seen_reply: bool,
    /// The next packet carries `PATH_AI`.
    ai_next: bool,
    /// When the window last decreased (the flow's start before the first decrease).
    last_decrease: Time,
    /// Queue length of the latest notification, bytes.
    last_queue: u64,
    cwnd_set: u64,
    rate_set: Rate,
}

impl Bolt {
    /// A controller with `config`; the window is set up by [`CongestionControl::on_start`].
    pub fn new(config: BoltConfig) -> Bolt {
        Bolt {
            config,
            mss: 1,
            wire_bytes: 1,
            line_rate: 0,
            base_rtt: 0,
            cwnd: 0,
            min_cwnd: 1,
            max_cwnd: u64::MAX,
            rtt: None,
            seen_reply: false,
            ai_next: true,
            last_decrease: 0,
            last_queue: 0,
            cwnd_set: 0,
            rate_set: 0,
        }
    }

    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The latest RTT sample, if any.
    pub fn rtt(&self) -> Option<Time> {
        self.rtt
    }

    /// Queue length carried by the latest notification, bytes (0 before the first).
    pub fn last_queue(&self) -> u64 {
        self.last_queue
    }

    /// When the window last decreased (the flow's start before the first decrease).
    pub fn last_decrease(&self) -> Time {
        self.last_decrease
    }

    /// Whether the next data packet carries `PATH_AI`.
    pub fn ai_pending(&self) -> bool {
        self.ai_next
    }

    fn clamp(&mut self) {
        self.cwnd = self.cwnd.clamp(self.min_cwnd, self.max_cwnd);
    }

    /// The RTT used for pacing and the once-per-RTT loss reaction.
    fn rtt_estimate(&self) -> Time {
        self.rtt.unwrap_or(self.base_rtt).max(1)
    }

    /// `cwnd / mss` wire packets per RTT, bit/s.
    fn pacing_rate(&self) -> Rate {
        let bits = self.cwnd as f64 / self.mss as f64 * self.wire_bytes as f64 * 8.0;
        ((bits * PS_PER_S as f64 / self.rtt_estimate() as f64).round() as Rate).clamp(1, self.line_rate.max(1))
    }

    /// Publishes the window and the rate, where changed.
    fn apply(&mut self, ctx: &mut Ctx) {
        if self.cwnd != self.cwnd_set {
            self.cwnd_set = self.cwnd;
            ctx.set_cwnd(self.cwnd);
        }
        let rate = if self.cwnd < self.mss { self.pacing_rate() } else { self.line_rate };
        if rate != self.rate_set {
            self.rate_set = rate;
            ctx.set_rate(rate);
        }
    }

    /// `cwnd *= 1 - max_md`, truncated to bytes as the ns-3 code does.
    fn multiplicative_cut(&mut self) {
        self.cwnd = (self.cwnd as f64 * (1.0 - self.config.max_md)) as u64;
    }

    /// `HandleBts`: the reaction to one queue notification.
    fn on_notification(&mut self, queue: u64, link_rate: Rate, sent_at: Time, now: Time) {
        self.last_queue = queue;
        if self.cwnd <= self.mss {
            self.multiplicative_cut();
        } else {
            let rtt_src = now.saturating_sub(sent_at) as f64;
            let rate = match self.rtt {
                Some(rtt) if rtt > 0 => self.cwnd as f64 * 8.0 * PS_PER_S as f64 / rtt as f64,
                _ => self.line_rate as f64,
            };
            let share = rate / link_rate.max(1) as f64;
            let q_pkts = (queue as f64 - self.config.target_queue as f64) / self.wire_bytes as f64;
            if q_pkts > 0.0 && share > 0.0 {
                let interval = rtt_src / (q_pkts * share);
                if (now.saturating_sub(self.last_decrease)) as f64 >= interval {
                    self.cwnd -= self.mss;
                    self.last_decrease = now;
                }
            }
        }
        self.clamp();
    }
}

impl CongestionControl for Bolt {
    fn name(&self) -> &'static str {
        "bolt"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::FEEDBACK | Events::LOSS | Events::PACKET_FLAGS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        *self = Bolt::new(self.config.clone());
        self.mss = flow.mss.max(1) as u64;
        self.wire_bytes = self.mss + flow.header_bytes as u64;
        self.line_rate = flow.line_rate;
        self.base_rtt = flow.base_rtt;
        let bdp = flow.bdp().max(1);
        self.min_cwnd = self.config.min_cwnd;
        self.max_cwnd = self.config.max_cwnd.unwrap_or(bdp).max(self.min_cwnd);
        self.cwnd = self.config.init_cwnd.unwrap_or(bdp);
        self.last_decrease = flow.start;
        self.clamp();
        self.apply(ctx);
    }

    fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
        self.seen_reply = true;
        if let Some(rtt) = ack.rtt {
            self.rtt = Some(rtt);
        }
        let flags = ack.path_flags;
        if flags & PATH_AI != 0 {
            self.ai_next = true;
            self.cwnd = (self.cwnd as f64 + self.config.ai * self.mss as f64) as u64;
        }
        if flags & PATH_DECWIN == 0 && flags & PATH_INCWIN != 0 {
            self.cwnd += self.mss;
        }
        self.clamp();
        self.apply(ctx);
    }

    fn on_feedback(&mut self, feedback: &Feedback, ctx: &mut Ctx) {
        let Feedback::QueueNotification { queue, link_rate, sent_at, .. } = *feedback else { return };
        self.on_notification(queue, link_rate, sent_at, ctx.now());
        self.apply(ctx);
    }

    fn on_loss(&mut self, loss: &Loss, ctx: &mut Ctx) {
        // A NACK is a reply (the ns-3 code takes its RTT sample); a timeout is not.
        self.seen_reply |= loss.kind != LossKind::Timeout;
        self.ai_next = true;
        let now = ctx.now();
        if now.saturating_sub(self.last_decrease) >= self.rtt_estimate() {
            self.multiplicative_cut();
            self.last_decrease = now;
        }
        self.clamp();
        self.apply(ctx);
    }

    fn packet_flags(&mut self, _seq: u64, bytes_left: u64) -> u8 {
        let mut flags = 0;
        if !self.seen_reply {
            flags |= PATH_FIRST;
        } else if self.cwnd < bytes_left {
            flags |= PATH_INCWIN;
        }
        if bytes_left <= self.mss || self.cwnd >= bytes_left {
            flags |= PATH_LAST;
        }
        if self.ai_next {
            flags |= PATH_AI;
            self.ai_next = false;
        }
        flags
    }

    /// Per ACK (each ACK's flags grow the window on their own), losses urgent.
    fn report_policy(&self) -> ReportPolicy {
        ReportPolicy::default()
    }

    /// `cwnd` in bytes, `src_queue` (the latest notification's queue, bytes; 0 before the first) and the
    /// latest `rtt` sample in picoseconds (0 before the first).
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.cwnd as f64);
        out("src_queue", self.last_queue as f64);
        out("rtt_ns", self.rtt.unwrap_or(0) as f64 / PS_PER_NS as f64);
    }
}
