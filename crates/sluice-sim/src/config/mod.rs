//! Network element settings. Every default names its source.
//!
//! These are plain data: the scenario layer fills them from a scenario file, and anything left out keeps
//! the default documented here.

mod bus;
mod endpoint;
mod fault;
mod tokens;

pub use bus::{HostBusConfig, LoadStep};
pub use endpoint::{DrainStep, EndpointConfig};
pub use fault::{FaultAction, FaultConfig, FaultKind};
pub use tokens::{unscheduled_cutoffs, workload_overcommit, RdEnv};

use serde::{Deserialize, Serialize};
use sluice_core::{Rate, Time, PS_PER_US};

/// Per-packet sizes on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Payload bytes per full data packet. Default 1000 B: the HPCC artifact's run.py packet payload,
    /// also the benchmark setting of ../bench.
    pub mtu: u32,
    /// Bytes added to each data packet on the wire. Default 82 B = RoCEv2 headers (Ethernet 14 + IPv4 20 +
    /// UDP 8 + InfiniBand BTH 12 + ICRC 4 + FCS 4 = 62 B, IBTA RoCEv2 annex A17) plus Ethernet preamble/SFD
    /// 8 B and inter-frame gap 12 B (IEEE 802.3).
    pub header_bytes: u32,
    /// Wire bytes of a control packet (ACK, NACK, CNP). Default 86 B: RoCEv2 ACK = 62 B headers + AETH 4 B,
    /// plus 20 B preamble and gap.
    pub control_bytes: u32,
    /// Wire bytes of a PFC pause frame. Default 84 B: a minimum 64 B Ethernet frame plus 20 B preamble and gap
    /// (IEEE 802.1Qbb).
    pub pause_bytes: u32,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { mtu: 1000, header_bytes: 82, control_bytes: 86, pause_bytes: 84 }
    }
}

/// Where a switch decides ECN marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkAt {
    /// When the packet joins the queue, from the queue length it finds.
    Enqueue,
    /// When the packet leaves, from the bytes left behind (the HPCC artifact, switch-node.cc).
    Dequeue,
}

/// What a marking switch does with a data packet that is not ECN-capable where it would mark one that is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonEct {
    /// Let it pass unmarked (it is dropped only when the buffer is full).
    #[default]
    Pass,
    /// Drop it with the marking probability for the queue it finds on arrival: RED's early drop, which
    /// an ECN-capable packet escapes by being marked (RFC 3168 section 5; Floyd and Jacobson 1993).
    Drop,
}

impl NonEct {
    /// Whether this is the default, [`NonEct::Pass`] (left out of written scenarios).
    pub fn is_pass(&self) -> bool {
        *self == NonEct::Pass
    }
}

/// RED/ECN thresholds of one egress queue.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnThresholds {
    /// Queue length below which nothing is marked.
    #[serde(with = "sluice_core::serde_units::size")]
    pub kmin: u64,
    /// Queue length above which everything is marked.
    #[serde(with = "sluice_core::serde_units::size")]
    pub kmax: u64,
    /// Marking probability at `kmax` (linear from 0 at `kmin`).
    pub pmax: f64,
}

impl EcnThresholds {
    /// The HPCC artifact's run.py DCQCN map, linear in link speed: Kmin = 100 KB x bw/25G, Kmax = 400 KB x
    /// bw/25G, Pmax = 0.2 (100 Gbps: 400 KB / 1600 KB; 400 Gbps: 1600 KB / 6400 KB, as in ../bench).
    pub fn red_for_rate(rate: Rate) -> EcnThresholds {
        let scale = rate as f64 / 25e9;
        EcnThresholds { kmin: (100_000.0 * scale) as u64, kmax: (400_000.0 * scale) as u64, pmax: 0.2 }
    }

    /// DCTCP's single threshold (Alizadeh et al. SIGCOMM'10; HPCC artifact run.py: K = 30 KB x bw/10G,
    /// Pmax = 1; 100 Gbps: 300 KB).
    pub fn dctcp_for_rate(rate: Rate) -> EcnThresholds {
        let k = (30_000.0 * rate as f64 / 10e9) as u64;
        EcnThresholds { kmin: k, kmax: k, pmax: 1.0 }
    }

    /// Marking probability for a queue of `q` bytes.
    #[inline]
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q > self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin).max(1) as f64
        }
    }
}

/// ECN marking settings of a switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    /// Whether switches mark at all.
    pub enabled: bool,
    /// Where marks are decided. Default dequeue (HPCC artifact).
    pub mark_at: MarkAt,
    /// Thresholds per port speed, in bit/s; a port whose speed is missing scales the nearest entry
    /// linearly. Default: filled by the scenario layer from the algorithm (RED map for DCQCN, single
    /// threshold for DCTCP).
    pub thresholds: Vec<(Rate, EcnThresholds)>,
    /// Data packets that are not ECN-capable, where ECN-capable ones would be marked. Default
    /// [`NonEct::Pass`]: what matters when classic (loss-based) and ECN-based algorithms share a queue.
    #[serde(default)]
    pub non_ect: NonEct,
}

impl EcnConfig {
    /// The thresholds for a port running at `rate`.
    pub fn for_rate(&self, rate: Rate) -> EcnThresholds {
        if let Some((_, t)) = self.thresholds.iter().find(|(r, _)| *r == rate) {
            return *t;
        }
        let nearest = self.thresholds.iter().min_by_key(|(r, _)| r.abs_diff(rate));
        match nearest {
            Some((r, t)) => {
                let scale = rate as f64 / *r as f64;
                EcnThresholds {
                    kmin: (t.kmin as f64 * scale) as u64,
                    kmax: (t.kmax as f64 * scale) as u64,
                    pmax: t.pmax,
                }
            }
            None => EcnThresholds::red_for_rate(rate),
        }
    }
}

impl Default for EcnConfig {
    fn default() -> Self {
        EcnConfig { enabled: true, mark_at: MarkAt::Dequeue, thresholds: Vec::new(), non_ect: NonEct::Pass }
    }
}

/// Priority-based flow control (IEEE 802.1Qbb) settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcConfig {
    /// Whether PFC is on. When off, the fabric is lossy (tail drop at the shared-buffer threshold).
    pub enabled: bool,
    /// XOFF threshold shift: an ingress queue pauses its upstream when it holds more than
    /// (buffer - headroom - shared use) >> shift bytes. Default 3 (1/8; HPCC artifact switch-mmu.cc).
    pub shift: u32,
    /// Headroom reserved per ingress port and priority; `None` = 3 x rate x link delay plus two MTUs (the HPCC
    /// artifact reserves 3 x rate x delay, switch-mmu.cc / third.cc).
    pub headroom: Option<u64>,
    /// XON: resume when the ingress queue falls this many bytes below the XOFF threshold. Default 3 KB
    /// (HPCC artifact resume offset).
    pub resume_offset: u64,
    /// Bytes reserved per ingress queue before it counts against the shared pool. Default 4 KB (HPCC
    /// artifact).
    pub reserve: u64,
}

impl PfcConfig {
    /// The headroom of an ingress port whose link runs at `rate` with one-way `delay`, for data packets of
    /// `data_wire` bytes on the wire: `headroom` if set, else 3 x rate x delay plus two packets.
    pub fn headroom_for(&self, rate: Rate, delay: Time, data_wire: u64) -> u64 {
        self.headroom.unwrap_or_else(|| {
            3 * (rate as u128 * delay as u128 / 8 / sluice_core::PS_PER_S as u128) as u64 + 2 * data_wire
        })
    }
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig { enabled: true, shift: 3, headroom: None, resume_offset: 3_000, reserve: 4_000 }
    }
}

/// How an egress port chooses among its priority queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum Scheduler {
    /// Lower queue index first, always.
    Strict,
    /// Deficit weighted round robin (Shreedhar and Varghese, SIGCOMM'95) with a weight per queue; the
    /// quantum of queue `i` is `weights[i]` x MTU.
    Dwrr {
        /// One weight per queue.
        weights: Vec<u32>,
    },
}

/// How a switch picks among equal-cost next hops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalance {
    /// Hash of the flow id: every packet of a flow takes one path (ECMP, RFC 2992).
    FlowHash,
    /// Each packet picks a path at random (per-packet spraying, as NDP).
    PacketSpray,
}

/// Bolt's programmable egress queue (Arslan et al. SIGCOMM'23 section 3; the authors' ns-3 queue
/// discipline, serhatarslan-hub/bolt_cc_ns3 `src/traffic-control/model/pfifo-bolt-queue-disc.cc`), run
/// on every switch egress port when enabled. Per data packet entering an egress port:
/// - sub-RTT control (SRC, section 3.1): if the port holds at least `cc_thresh` bytes, the switch strips
///   the packet's INCWIN flag and, unless a switch upstream already did (DECWIN), marks it DECWIN and
///   sends the sender a notification carrying the queue length, the link rate and the packet's send time;
/// - proactive ramp-up (PRU, section 3.2): otherwise a packet of the last window (LAST, not FIRST)
///   deposits a token (at most `max_pru_tokens`); an INCWIN packet takes a token and keeps its flag;
/// - supply matching (SM, section 3.3): otherwise an INCWIN packet keeps its flag if the port's supply
///   (bytes the link could have sent minus bytes that arrived, capped at `max_supply`) covers one full
///   packet, which it consumes; else the switch strips INCWIN.
///
/// Every packet entering the port (data or control) counts against the supply, as in the ns-3 code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoltSwitchConfig {
    /// Whether switches run Bolt's logic. Default false; the scenario layer turns it on when the algorithm
    /// needs it (`Needs::bolt`), and so does the simulation for such an algorithm.
    pub enabled: bool,
    /// Queue length (bytes, whole port) at and above which a data packet triggers a notification
    /// (`CCthresh`). Default 10 KB: the authors' evaluation scripts (bolt_cc_ns3
    /// `scratch/bolt-64host-fattree.cc` `ccThreshold("10KB")`, passed as `CcThreshold`); the queue
    /// discipline's own attribute default is 62 KB, about one BDP of those scripts' 100 Gbps fabric.
    #[serde(with = "sluice_core::serde_units::size")]
    pub cc_thresh: u64,
    /// Most PRU tokens a port holds (`MaxNumPruTokens`). Default 256: the attribute default of
    /// pfifo-bolt-queue-disc.cc.
    pub max_pru_tokens: u32,
    /// Cap of a port's supply for supply matching, bytes (`MaxInstAvailLoad`): the most spare capacity a
    /// port hands out at once. Default 10 KB: the authors' scripts pass `MaxInstAvailLoad = 2 x MTU`
    /// (bolt-64host-fattree.cc `IntegerValue(mtu * 2)`) with a 5000 B MTU on their 100 Gbps fabric, i.e.
    /// 10 KB, the same as their `CCthresh`, so a burst of granted packets alone does not reach the
    /// notification threshold; the attribute default is 30000 B. (Two of this simulator's 1 KB packets
    /// would let a window-limited flow grow by only about two packets per round trip.)
    #[serde(with = "sluice_core::serde_units::size")]
    pub max_supply: u64,
    /// Run proactive ramp-up (`EnablePru`). Default true: the scripts' `DEFAULT` mode (Bolt proper) turns
    /// on notifications, PRU and supply matching together.
    pub pru: bool,
    /// Run supply matching (`EnableAbs`). Default true, as `pru`.
    pub supply_matching: bool,
}

impl Default for BoltSwitchConfig {
    fn default() -> Self {
        BoltSwitchConfig {
            enabled: false,
            cc_thresh: 10_000,
            max_pru_tokens: 256,
            max_supply: 10_000,
            pru: true,
            supply_matching: true,
        }
    }
}

/// Switch settings (all switches of a run share them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchConfig {
    /// Shared buffer per switch in bytes. Default 32 MB (../bench reference runs; the HPCC artifact uses
    /// 16 MB x bw/50G = 32 MB at 100 Gbps).
    #[serde(with = "sluice_core::serde_units::size")]
    pub buffer: u64,
    /// Dynamic-threshold alpha for lossy queues (Choudhury and Hahne, ToN 1998): an egress queue admits a
    /// packet while its length is below alpha x free buffer. Default 1 (SONiC's lossy profile, dynamic_th 0).
    pub dt_alpha: f64,
    /// Priority queues per port (1..=8). Default 8 (IEEE 802.1p classes).
    pub queues: u8,
    /// Queue scheduler. Default strict priority.
    pub scheduler: Scheduler,
    /// Queue carrying ACK/NACK/CNP. Default 0, the highest (HPCC artifact sends ACKs at top priority).
    pub control_queue: u8,
    /// Queue carrying data. Default 3 (HPCC artifact qIndex for data).
    pub data_queue: u8,
    /// ECN marking.
    pub ecn: EcnConfig,
    /// PFC.
    pub pfc: PfcConfig,
    /// Stamp INT records on data packets (needed by HPCC).
    pub int: bool,
    /// Path choice among equal-cost next hops.
    pub load_balance: LoadBalance,
    /// Bolt's programmable egress queue (needed by Bolt).
    pub bolt: BoltSwitchConfig,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer: 32_000_000,
            dt_alpha: 1.0,
            queues: 8,
            scheduler: Scheduler::Strict,
            control_queue: 0,
            data_queue: 3,
            ecn: EcnConfig::default(),
            pfc: PfcConfig::default(),
            int: false,
            load_balance: LoadBalance::FlowHash,
            bolt: BoltSwitchConfig::default(),
        }
    }
}

/// How a sender recovers lost data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossRecovery {
    /// The receiver drops out-of-order data and NACKs the expected sequence; the sender resends from there
    /// (RoCE NICs; the HPCC artifact).
    GoBackN,
    /// The receiver keeps out-of-order data and reports holes; the sender resends only missing packets.
    Selective,
}

/// Host (NIC and transport) settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Send one ACK per this many data packets (the last packet of a flow is always acknowledged). Default
    /// 1 (HPCC artifact L2_ACK_INTERVAL 1).
    pub ack_every_packets: u32,
    /// Also acknowledge once this many unacknowledged payload bytes have arrived (a size such as "64KB",
    /// or bytes); 0 = off.
    #[serde(with = "sluice_core::serde_units::size")]
    pub ack_every_bytes: u64,
    /// Loss recovery. Default go-back-N (RoCE).
    pub loss_recovery: LossRecovery,
    /// Minimum retransmission timeout. Default 1 ms (the minimum RTO of Google's Falcon/Swift
    /// reference configuration, isekai swift.cc; datacenter stacks use 1-10 ms rather than Linux's 200 ms).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub rto_min: Time,
    /// Double the retransmission timeout at each expiry without progress, up to 60 s, back to `rto_min`
    /// when the ACK point moves (RFC 6298 section 5.5; `sluice_cc::rto`). Default off: RoCE NICs, which
    /// the hosts model, retry at a fixed timeout (HPCC artifact). Every datapath follows this setting.
    pub rto_backoff: bool,
    /// A receiver repeats a NACK for the same expected sequence at most once per this interval (a NACK for
    /// a new expected sequence goes at once). Default 500 us (HPCC artifact NACK_GENERATION_INTERVAL).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub nack_interval: Time,
    /// At most one CNP per flow per this interval; 0 = one for every ECN-marked packet. `None` = the CC
    /// algorithm's own default (DCQCN paper 50 us; the HPCC artifact flags every ACK).
    #[serde(default, with = "sluice_core::serde_units::opt_duration", skip_serializing_if = "Option::is_none")]
    pub cnp_interval: Option<Time>,
    /// Each data packet a host sends reaches the first switch up to this much later, uniformly at random
    /// (seeded per host). Deterministic simulators lock flows into fixed phases that real hosts' timing
    /// noise breaks up (Floyd and Jacobson, "On traffic phase effects in packet-switched gateways",
    /// 1991, add random processing time for that reason). Keep it below one packet's serialization so
    /// that a host's packets stay in order. Default 0 (off).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub tx_jitter: Time,
    /// Receiver processing queues (endpoint congestion), `[host.endpoint]`. Default off.
    pub endpoint: crate::config::EndpointConfig,
    /// NIC-to-memory path shared with local traffic (host congestion), `[host.bus]`. Default off.
    pub bus: crate::config::HostBusConfig,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            ack_every_packets: 1,
            ack_every_bytes: 0,
            loss_recovery: LossRecovery::GoBackN,
            rto_min: 1_000 * PS_PER_US,
            rto_backoff: false,
            nack_interval: 500 * PS_PER_US,
            cnp_interval: None,
            tx_jitter: 0,
            endpoint: crate::config::EndpointConfig::default(),
            bus: crate::config::HostBusConfig::default(),
        }
    }
}
