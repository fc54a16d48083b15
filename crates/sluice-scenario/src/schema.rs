//! The scenario file schema: what each table holds and what is assumed when a key is left out.
//!
//! Tables whose settings belong to another crate reuse that crate's types (`[topology]`:
//! [`TopologySpec`], `[link]`: [`LinkConfig`], `[host]`: [`HostConfig`], `[[workload]]`:
//! [`WorkloadSpec`]). `[switch]` is read through mirrors ([`SwitchSpec`], [`EcnSpec`], [`PfcSpec`])
//! whose defaults are those of [`SwitchConfig`] and whose ECN thresholds are an array of tables, which
//! TOML writes more clearly than the simulator's `(rate, thresholds)` pairs.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sluice_core::serde_units::{duration, opt_duration, opt_size, rate, size};
use sluice_core::{Rate, Time, PS_PER_S, PS_PER_US};
use sluice_sim::config::{
    BoltSwitchConfig, EcnConfig, EcnThresholds, HostConfig, LinkConfig, LoadBalance, MarkAt, NonEct, PfcConfig,
    Scheduler, SwitchConfig,
};
use sluice_topo::{PortNo, TopologySpec};
use sluice_workload::WorkloadSpec;

/// The scenario file as written: every table, with serde defaults for what may be left out.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioFile {
    /// Run name; default the file stem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seed of every random stream; default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Directory that relative file names resolve against; default the scenario file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<PathBuf>,
    #[serde(default)]
    pub simulation: SimulationSpec,
    pub topology: TopologySpec,
    #[serde(default)]
    pub link: LinkConfig,
    #[serde(default)]
    pub switch: SwitchSpec,
    #[serde(default)]
    pub host: HostConfig,
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    #[serde(default)]
    pub cc: CcSpec,
    #[serde(default)]
    pub plane: sluice_plane::PlaneConfig,
    #[serde(default)]
    pub output: OutputSpec,
    /// `[[fault]]` entries, in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault: Vec<crate::fault::FaultSpec>,
}

/// Default seed: 1, so that a scenario without a seed is still reproducible.
pub const DEFAULT_SEED: u64 = 1;

fn default_seed() -> u64 {
    DEFAULT_SEED
}

/// `[simulation]`: when the run stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimulationSpec {
    /// Stop at this simulated time. `None` (the default): run until every flow finishes, bounded by
    /// `time_limit`.
    #[serde(with = "opt_duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<Time>,
    /// When `duration` is absent, stop here anyway and report the flows that did not finish. Default
    /// [`DEFAULT_TIME_LIMIT`].
    #[serde(with = "duration")]
    pub time_limit: Time,
    /// Threads the simulator runs on: 1 (the default) runs the network in one piece; more cut it into
    /// as many parts that run side by side, with byte-identical results.
    #[serde(skip_serializing_if = "is_one")]
    pub threads: usize,
    /// Whether the simulator asks the kernel to back its heap with huge pages (2 MiB), which saves the
    /// page walks of a large run's scattered memory accesses: `"auto"` (the default) for a run whose
    /// estimated network state reaches [`HUGE_PAGES_FROM`], `"on"` or `"off"`. Results are the same
    /// either way.
    #[serde(skip_serializing_if = "HugePages::is_auto")]
    pub huge_pages: HugePages,
}

/// `simulation.huge_pages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HugePages {
    /// For runs whose estimated network state (ports, pending events, packets alive: what a run
    /// touches at random) reaches [`HUGE_PAGES_FROM`].
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl HugePages {
    fn is_auto(&self) -> bool {
        *self == HugePages::Auto
    }
}

/// The estimated network state (ports, pending events and packets alive) from which `huge_pages =
/// "auto"` asks for huge pages. Measured on a 2-core AMD EPYC VM (BENCHMARKS.md, "Huge pages for a large
/// run's heap"): the k=16 scale run (31 MiB) ran 5-7% faster with them and k=32's (210 MiB) 4-9%, while
/// k=16 with 1 ms of arrivals (23 MiB) and smaller runs gained nothing and took 1-6 MB more memory.
pub const HUGE_PAGES_FROM: u64 = 24 << 20;

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// The most threads a run may ask for.
pub const MAX_THREADS: usize = 1024;

/// Default guard against runs that never finish: 1 s of simulated time, 200 times the longest arrival
/// window of the bundled scenarios (5 ms, `fat320.toml`).
pub const DEFAULT_TIME_LIMIT: Time = PS_PER_S;

impl Default for SimulationSpec {
    fn default() -> Self {
        SimulationSpec { duration: None, time_limit: DEFAULT_TIME_LIMIT, threads: 1, huge_pages: HugePages::Auto }
    }
}

/// `[cc]`: the congestion-control algorithm and its parameters.
///
/// Parameters of several algorithms can live side by side, each in a table named after its algorithm
/// (`[cc.dcqcn]`, `[cc.hpcc]`), so that `--set cc.algorithm=X` alone switches between them. The chosen
/// algorithm takes its table with `[cc.params]` laid over it; every other table is still checked by its
/// algorithm (a misspelled key anywhere is an error) but unused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CcSpec {
    /// A registered algorithm name (`sluice list` shows them). Default [`DEFAULT_ALGORITHM`].
    pub algorithm: String,
    /// `[cc.params]`: parameters of the chosen algorithm, checked by it; anything left out takes its table's
    /// value, else the algorithm's default.
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub params: toml::Table,
    /// `[cc.<algorithm>]`: parameters per algorithm. Any other key of `[cc]` lands here too, and the
    /// scenario check rejects it unless it names a registered algorithm and holds a table.
    #[serde(flatten)]
    pub tables: std::collections::BTreeMap<String, toml::Value>,
    /// `cc.workloads`: the algorithm of each workload entry's flows, in order, when a run mixes
    /// algorithms (see the `mix` module); empty: every flow runs `algorithm`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
}

impl CcSpec {
    /// The parameters in force for `algorithm`: its `[cc.<algorithm>]` table, with `[cc.params]` laid over
    /// it when `algorithm` is the chosen one.
    pub fn params_for(&self, algorithm: &str) -> toml::Table {
        let mut params = match self.tables.get(algorithm) {
            Some(toml::Value::Table(table)) => table.clone(),
            _ => toml::Table::new(),
        };
        if algorithm == self.algorithm {
            params.extend(self.params.clone());
        }
        params
    }
}

/// Default algorithm: DCQCN (Zhu et al., SIGCOMM 2015), the congestion control of RoCEv2 NICs and the
/// baseline of the HPCC artifact and the shared benchmarks.
pub const DEFAULT_ALGORITHM: &str = "dcqcn";

impl Default for CcSpec {
    fn default() -> Self {
        CcSpec {
            algorithm: DEFAULT_ALGORITHM.to_string(),
            params: toml::Table::new(),
            tables: Default::default(),
            workloads: Vec::new(),
        }
    }
}

/// `[output]`: where results go and what is measured besides flow completion times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Output directory, relative to the current directory. Default `results/<name>`; an empty path in
    /// the file also means the default.
    pub dir: PathBuf,
    /// Flow-size bucket edges for FCT statistics, strictly increasing, in bytes (written as sizes).
    /// Default [`DEFAULT_BUCKETS`].
    #[serde(with = "sizes")]
    pub buckets: Vec<u64>,
    /// Flow ids whose congestion-control variables are traced. Default none.
    pub trace_flows: Vec<u64>,
    /// Minimum spacing of trace rows per flow; `"0ps"` records every change. Default
    /// [`DEFAULT_TRACE_INTERVAL`].
    #[serde(with = "duration")]
    pub trace_interval: Time,
    /// Samples (rows of the recorder: one line per variable in trace.csv) kept at most per traced flow;
    /// later ones are counted in summary.json's `trace` section. Default [`DEFAULT_TRACE_ROWS`].
    pub trace_max_rows: u64,
    /// Flows whose throughput is sampled: a list of ids, or `"all"`. Default none.
    pub throughput_flows: FlowSelection,
    /// Ports whose throughput and queue length are sampled, as `"<node name>:<port number>"`. Default
    /// none.
    pub throughput_ports: Vec<PortRef>,
    /// Spacing of throughput and queue samples. Default [`DEFAULT_SAMPLE_INTERVAL`].
    #[serde(with = "duration")]
    pub sample_interval: Time,
    /// `[output.packet_trace]`: per-packet events at switch ports, written to packets.csv. Default off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_trace: Option<PacketTraceSpec>,
}

/// `[output.packet_trace]`: which packets' events at which switch ports go to packets.csv (enqueue,
/// send, mark, drop, trim, and the ports' PFC pauses and resumes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PacketTraceSpec {
    /// Flows traced: a list of ids, or `"all"` (the default).
    pub flows: FlowSelection,
    /// Switch ports traced, as `"<node name>:p<port>"`. Default every switch port.
    pub ports: Vec<PortRef>,
    /// Rows written at most; events past it are counted in summary.json. Default
    /// [`DEFAULT_PACKET_TRACE_ROWS`].
    pub max_rows: u64,
}

/// Default bound of a packet trace: a million rows, about 70 MB of CSV.
pub const DEFAULT_PACKET_TRACE_ROWS: u64 = 1_000_000;

pub use sluice_results::DEFAULT_TRACE_ROWS;

/// The largest `trace_max_rows` a scenario may ask for: 10^8 rows per traced flow, about 10 GB in
/// memory with four variables.
pub const MAX_TRACE_ROWS: u64 = 100_000_000;

/// The largest `max_rows` a packet trace may ask for: 10^8 rows, about 7 GB of CSV.
pub const MAX_PACKET_TRACE_ROWS: u64 = 100_000_000;

impl Default for PacketTraceSpec {
    fn default() -> Self {
        PacketTraceSpec { flows: FlowSelection::All, ports: Vec::new(), max_rows: DEFAULT_PACKET_TRACE_ROWS }
    }
}

/// A set of flows named in `[output]`: a list of flow ids, or `"all"` (every flow of the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowSelection {
    /// The listed flow ids, in the order given.
    Ids(Vec<u64>),
    /// Every flow, in id order.
    All,
}

impl Default for FlowSelection {
    fn default() -> Self {
        FlowSelection::Ids(Vec::new())
    }
}

impl FlowSelection {
    /// The ids listed in the file (none for `"all"`, which names no particular flow).
    pub fn listed(&self) -> &[u64] {
        match self {
            FlowSelection::Ids(ids) => ids,
            FlowSelection::All => &[],
        }
    }

    /// How many flows are selected out of a run of `flows` flows.
    pub fn count(&self, flows: usize) -> usize {
        match self {
            FlowSelection::Ids(ids) => ids.len(),
            FlowSelection::All => flows,
        }
    }

    /// The selected flow ids out of a run of `flows` flows.
    pub fn ids(&self, flows: usize) -> Vec<u64> {
        match self {
            FlowSelection::Ids(ids) => ids.clone(),
            FlowSelection::All => (0..flows as u64).collect(),
        }
    }
}

impl Serialize for FlowSelection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FlowSelection::Ids(ids) => ids.serialize(s),
            FlowSelection::All => s.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for FlowSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FlowSelectionVisitor)
    }
}

struct FlowSelectionVisitor;

impl<'de> serde::de::Visitor<'de> for FlowSelectionVisitor {
    type Value = FlowSelection;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of flow ids or \"all\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FlowSelection, E> {
        match v {
            "all" => Ok(FlowSelection::All),
            _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
        }
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<FlowSelection, A::Error> {
        Vec::<u64>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(FlowSelection::Ids)
    }
}

/// Default FCT bucket edges: 10 KB, 100 KB, 1 MB, the decades that split the web-search distribution
/// (Alizadeh et al., DCTCP, SIGCOMM 2010) into short, medium and long flows; the same edges as
/// `sluice_results`' default buckets.
pub const DEFAULT_BUCKETS: [u64; 3] = [10_000, 100_000, 1_000_000];

/// Default trace spacing: 1 us, a quarter of DCQCN's 4 us rate-decrease period (HPCC artifact run.py)
/// so that every rate step shows.
pub const DEFAULT_TRACE_INTERVAL: Time = PS_PER_US;

/// Default sample spacing: 10 us, about one base RTT of a k=8 fat-tree with 1 us links (six hops each
/// way plus serialization), fine enough to see queues build and drain.
pub const DEFAULT_SAMPLE_INTERVAL: Time = 10 * PS_PER_US;

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            dir: PathBuf::new(),
            buckets: DEFAULT_BUCKETS.to_vec(),
            trace_flows: Vec::new(),
            trace_interval: DEFAULT_TRACE_INTERVAL,
            trace_max_rows: DEFAULT_TRACE_ROWS,
            throughput_flows: FlowSelection::default(),
            throughput_ports: Vec::new(),
            sample_interval: DEFAULT_SAMPLE_INTERVAL,
            packet_trace: None,
        }
    }
}

/// A switch or host port named in a scenario: `"tor0:p1"` is port 1 of the node named `tor0`, the name
/// output files give it (`"tor0:1"` is read too).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRef {
    /// The node's name in the topology (`"tor0"`, `"h5"`, `"sw0"`).
    pub node: String,
    /// The port number at that node.
    pub port: PortNo,
}

const PORT_FORM: &str = "a port such as \"tor0:p1\" (\"<node name>:p<port number>\", as output files name ports)";

impl FromStr for PortRef {
    type Err = String;

    fn from_str(text: &str) -> Result<PortRef, String> {
        let bad = || format!("invalid port {text:?}: expected {PORT_FORM}");
        let (node, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let port = port.trim();
        let port = port.strip_prefix('p').unwrap_or(port).parse().map_err(|_| bad())?;
        if node.trim().is_empty() {
            return Err(bad());
        }
        Ok(PortRef { node: node.trim().to_string(), port })
    }
}

impl fmt::Display for PortRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:p{}", self.node, self.port)
    }
}

impl Serialize for PortRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PortRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PortRef, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Serde adapter for a list of sizes (`["10KB", "1MB"]`; bare integers are bytes).
mod sizes {
    use super::*;

    #[derive(Deserialize)]
    struct Size(#[serde(with = "size")] u64);

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        Ok(Vec::<Size>::deserialize(d)?.into_iter().map(|s| s.0).collect())
    }

    pub fn serialize<S: Serializer>(values: &[u64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(values.iter().map(|v| sluice_core::format_size(*v)))
    }
}

/// `[switch]` as written; converts to and from [`SwitchConfig`], whose documentation gives each
/// default and its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SwitchSpec {
    #[serde(with = "size")]
    pub buffer: u64,
    pub dt_alpha: f64,
    pub queues: u8,
    #[serde(deserialize_with = "strict_scheduler")]
    pub scheduler: Scheduler,
    pub control_queue: u8,
    pub data_queue: u8,
    pub ecn: EcnSpec,
    pub pfc: PfcSpec,
    pub int: bool,
    pub load_balance: LoadBalance,
    /// `[switch.bolt]` (see [`BoltSwitchConfig`]).
    pub bolt: BoltSwitchConfig,
}

/// `[switch.scheduler]`, refusing unknown keys. Serde ignores keys beside the tag of a unit variant even
/// with `deny_unknown_fields`, so `{ kind = "strict", weight = [1, 2] }` would pass silently; the keys
/// are checked here before the enum reads the table.
fn strict_scheduler<'de, D: Deserializer<'de>>(d: D) -> Result<Scheduler, D::Error> {
    use serde::de::Error;
    let table = toml::Table::deserialize(d)?;
    let allowed: &[&str] = match table.get("kind").and_then(toml::Value::as_str) {
        Some("strict") => &["kind"],
        Some("dwrr") => &["kind", "weights"],
        _ => &[],
    };
    if let Some(key) = table.keys().find(|key| !allowed.is_empty() && !allowed.contains(&key.as_str())) {
        let expected: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
        return Err(D::Error::custom(format!("unknown field `{key}`, expected {}", expected.join(" or "))));
    }
    toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| D::Error::custom(e.message()))
}

/// `[switch.ecn]` as written (see [`EcnConfig`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct EcnSpec {
    pub enabled: bool,
    pub mark_at: MarkAt,
    /// `[[switch.ecn.thresholds]]`: one table per port speed. Empty: filled from the algorithm when the
    /// scenario is resolved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdSpec>,
    /// `"pass"` (the default, left out when written) or `"drop"`: see [`NonEct`].
    #[serde(skip_serializing_if = "NonEct::is_pass")]
    pub non_ect: NonEct,
}

/// One `[[switch.ecn.thresholds]]` entry: RED thresholds for ports of one speed, for one algorithm or
/// for every algorithm that has no entries of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThresholdSpec {
    /// The algorithm these thresholds are for; left out, they serve every algorithm without entries of
    /// its own (ECN thresholds are the algorithm's: DCTCP's step K is not DCQCN's RED ramp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    #[serde(with = "rate")]
    pub rate: Rate,
    #[serde(with = "size")]
    pub kmin: u64,
    #[serde(with = "size")]
    pub kmax: u64,
    pub pmax: f64,
}

/// `[switch.pfc]` as written (see [`PfcConfig`]); sizes may be written with units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct PfcSpec {
    pub enabled: bool,
    pub shift: u32,
    #[serde(with = "opt_size", skip_serializing_if = "Option::is_none")]
    pub headroom: Option<u64>,
    #[serde(with = "size")]
    pub resume_offset: u64,
    #[serde(with = "size")]
    pub reserve: u64,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec::from(&SwitchConfig::default())
    }
}

impl Default for EcnSpec {
    fn default() -> Self {
        EcnSpec::from(&EcnConfig::default())
    }
}

impl Default for PfcSpec {
    fn default() -> Self {
        PfcSpec::from(&PfcConfig::default())
    }
}

impl From<&SwitchConfig> for SwitchSpec {
    fn from(c: &SwitchConfig) -> Self {
        SwitchSpec {
            buffer: c.buffer,
            dt_alpha: c.dt_alpha,
            queues: c.queues,
            scheduler: c.scheduler.clone(),
            control_queue: c.control_queue,
            data_queue: c.data_queue,
            ecn: EcnSpec::from(&c.ecn),
            pfc: PfcSpec::from(&c.pfc),
            int: c.int,
            load_balance: c.load_balance,
            bolt: c.bolt.clone(),
        }
    }
}

impl From<SwitchSpec> for SwitchConfig {
    fn from(s: SwitchSpec) -> Self {
        SwitchConfig {
            buffer: s.buffer,
            dt_alpha: s.dt_alpha,
            queues: s.queues,
            scheduler: s.scheduler,
            control_queue: s.control_queue,
            data_queue: s.data_queue,
            ecn: s.ecn.into(),
            pfc: s.pfc.into(),
            int: s.int,
            load_balance: s.load_balance,
            bolt: s.bolt,
        }
    }
}

impl ThresholdSpec {
    /// The entry for `rate` with thresholds `t`, for `algorithm`.
    pub(crate) fn new(algorithm: Option<String>, rate: Rate, t: &EcnThresholds) -> ThresholdSpec {
        ThresholdSpec { algorithm, rate, kmin: t.kmin, kmax: t.kmax, pmax: t.pmax }
    }
}

impl From<&EcnConfig> for EcnSpec {
    fn from(c: &EcnConfig) -> Self {
        let thresholds = c.thresholds.iter().map(|(rate, t)| ThresholdSpec::new(None, *rate, t)).collect();
        EcnSpec { enabled: c.enabled, mark_at: c.mark_at, thresholds, non_ect: c.non_ect }
    }
}

impl From<EcnSpec> for EcnConfig {
    fn from(s: EcnSpec) -> Self {
        let thresholds =
            s.thresholds.iter().map(|t| (t.rate, EcnThresholds { kmin: t.kmin, kmax: t.kmax, pmax: t.pmax })).collect();
        EcnConfig { enabled: s.enabled, mark_at: s.mark_at, thresholds, non_ect: s.non_ect }
    }
}

impl From<&PfcConfig> for PfcSpec {
    fn from(c: &PfcConfig) -> Self {
        PfcSpec {
            enabled: c.enabled,
            shift: c.shift,
            headroom: c.headroom,
            resume_offset: c.resume_offset,
            reserve: c.reserve,
        }
    }
}

impl From<PfcSpec> for PfcConfig {
    fn from(s: PfcSpec) -> Self {
        PfcConfig {
            enabled: s.enabled,
            shift: s.shift,
            headroom: s.headroom,
            resume_offset: s.resume_offset,
            reserve: s.reserve,
        }
    }
}

#[cfg(test)]
mod flow_selection_tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Holder {
        flows: FlowSelection,
    }

    fn parse(text: &str) -> Result<FlowSelection, String> {
        toml::from_str::<Holder>(text).map(|h| h.flows).map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_or_all() {
        assert_eq!(parse("flows = [3, 1]"), Ok(FlowSelection::Ids(vec![3, 1])));
        assert_eq!(parse("flows = \"all\""), Ok(FlowSelection::All));
        assert!(parse("flows = \"some\"").unwrap_err().contains("expected a list of flow ids or \"all\""));
        assert!(parse("flows = [-1]").is_err(), "ids are unsigned");
    }

    #[test]
    fn all_selects_every_flow_and_lists_none() {
        assert_eq!(FlowSelection::All.ids(3), [0, 1, 2]);
        assert_eq!(FlowSelection::All.count(3), 3);
        assert!(FlowSelection::All.listed().is_empty());
        assert_eq!(FlowSelection::Ids(vec![5]).ids(3), [5], "ids are checked elsewhere, never dropped");
        let text = toml::to_string(&Holder { flows: FlowSelection::All }).unwrap();
        assert_eq!(text.trim(), "flows = \"all\"", "written back as read");
    }
}
