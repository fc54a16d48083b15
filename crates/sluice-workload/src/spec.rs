//! The workload description users write in scenario files, and its checks.

use serde::{Deserialize, Serialize};
use sluice_core::serde_units::{duration, opt_duration, size};
use sluice_core::Time;

/// One entry of a scenario's workload list. In TOML, `kind` selects the variant and times and sizes take
/// their text forms: `{ kind = "poisson", cdf = "websearch", load = 0.3, duration = "2ms" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Open-loop traffic: every participating host starts flows as a Poisson process with sizes drawn from
    /// `cdf`, the mean gap chosen so that each host offers `load` of its NIC rate:
    /// `mean_gap = mean_size * 8 / (host_rate * load)`, as `traffic_gen/traffic_gen.py` of the HPCC artifact
    /// (alibaba-edu/High-Precision-Congestion-Control) computes it. Each flow goes to a destination drawn
    /// uniformly from the other participating hosts (or those in other racks).
    Poisson {
        /// A builtin distribution name (see [`crate::builtin_names`]) or the path of a CDF file, relative to
        /// the scenario file's folder.
        cdf: String,
        /// Offered load per sending host as a fraction of its NIC rate, in `(0, 1]`.
        load: f64,
        /// When arrivals begin (default 0).
        #[serde(default, with = "duration")]
        start: Time,
        /// How long arrivals continue: flows start in `[start, start + duration)`.
        #[serde(with = "duration")]
        duration: Time,
        /// Which hosts a flow may go to (default `all_to_all`, as the HPCC artifact).
        #[serde(default)]
        destinations: Destinations,
        /// The hosts taking part, both as senders and as destinations (default: every host).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts: Option<Vec<u32>>,
        /// Factor applied to every drawn size (rounded, at least 1 byte); the arrival rate is adjusted so
        /// that the offered load stays `load` (default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size_scale: Option<f64>,
    },
    /// Many senders to one receiver at once, optionally repeated every `period`.
    Incast {
        /// The host every flow goes to.
        receiver: u32,
        /// How many senders to pick, deterministically at random from the hosts other than the receiver.
        /// Without `senders` or `sender_list`, every other host sends.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        senders: Option<u32>,
        /// The senders, named explicitly (instead of `senders`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sender_list: Option<Vec<u32>>,
        /// Bytes each sender sends in each round.
        #[serde(with = "size")]
        size: u64,
        /// When the first round starts (default 0).
        #[serde(default, with = "duration")]
        start: Time,
        /// Time between the starts of consecutive rounds; required when `repeats` is above 1.
        #[serde(default, with = "opt_duration", skip_serializing_if = "Option::is_none")]
        period: Option<Time>,
        /// Number of rounds (default 1); every round uses the same senders.
        #[serde(default = "one")]
        repeats: u32,
    },
    /// A random derangement: every host sends one flow to exactly one other host and receives exactly one.
    Permutation {
        /// Bytes of each flow.
        #[serde(with = "size")]
        size: u64,
        /// When every flow starts (default 0).
        #[serde(default, with = "duration")]
        start: Time,
    },
    /// Every participating host sends one flow to every other participating host.
    AllToAll {
        /// Bytes of each flow.
        #[serde(with = "size")]
        size: u64,
        /// When every flow starts (default 0).
        #[serde(default, with = "duration")]
        start: Time,
        /// The hosts taking part (default: every host).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts: Option<Vec<u32>>,
    },
    /// Flows without a size that send from `start` until `stop`.
    LongLived {
        /// The flows.
        flows: Vec<LongLivedFlow>,
    },
    /// Closed-loop traffic (Marlin, EuroSys'25, section 7.5): every sender keeps `flows_per_pair` flows
    /// active toward every receiver. Each of those slots starts one flow at `start` and, each time its flow
    /// completes, the next one at once, with a size drawn from `cdf`, until `start + duration`; the flows
    /// running then finish. Arrivals thus follow completions instead of a Poisson process, and the load is
    /// whatever the congestion control carries.
    ClosedLoop {
        /// A builtin distribution name (see [`crate::builtin_names`]) or the path of a CDF file, relative to
        /// the scenario file's folder.
        cdf: String,
        /// Flows each sender keeps active toward each receiver (Marlin's n-cast-1 test runs 5).
        flows_per_pair: u32,
        /// The receivers (default: every host).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receivers: Option<Vec<u32>>,
        /// The senders (default: every host that is not a receiver, or every host when all receive); a
        /// sender sends to every receiver other than itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        senders: Option<Vec<u32>>,
        /// When the first flows start (default 0).
        #[serde(default, with = "duration")]
        start: Time,
        /// How long slots keep starting flows: none starts at or after `start + duration`.
        #[serde(with = "duration")]
        duration: Time,
        /// Factor applied to every drawn size (rounded, at least 1 byte; default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size_scale: Option<f64>,
    },
    /// Flows listed in a CSV file with lines `src,dst,size_bytes,start_ns` (header line optional, blank
    /// lines and `#` comments skipped), the format of the shared benchmark flow lists.
    FlowList {
        /// Path of the CSV file, relative to the scenario file's folder.
        path: String,
    },
}

fn one() -> u32 {
    1
}

/// Where Poisson flows may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destinations {
    /// Uniformly among all other participating hosts (the HPCC artifact's `traffic_gen.py`).
    #[default]
    AllToAll,
    /// Uniformly among the participating hosts under a different rack (ToR) than the sender.
    InterRack,
}

/// A flow that sends as fast as its congestion control allows from `start` until `stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongLivedFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// When the flow starts (default 0).
    #[serde(default, with = "duration")]
    pub start: Time,
    /// When the flow stops sending; must be after `start`.
    #[serde(with = "duration")]
    pub stop: Time,
    /// The algorithm this flow runs, when not its entry's (coexistence of single flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
}

pub(crate) mod validate;
