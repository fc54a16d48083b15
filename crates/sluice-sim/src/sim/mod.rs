//! The simulation (layer 5): a run's input and output types, and the three steps of a run, each in its
//! own file: `build` makes switches, hosts and flows from a topology and settings; `run` is the event
//! loop that hands each event to the element it concerns; `report` samples throughput during the run and
//! turns the elements' state into records at its end.

mod arrivals;
mod build;
mod closed_loop;
mod parallel;
mod report;
mod retire;
mod run;

use std::sync::Arc;

use sluice_cc::{Factory, Needs};
use sluice_core::Time;
use sluice_plane::{PlaneConfig, PlaneCounters};
use sluice_results::{FlowRecord, PortRecord, RunInfo, SwitchRecord, ThroughputSeries};
use sluice_topo::{Routes, Topology};
use sluice_workload::{ClosedLoop, FlowSource};

use crate::config::{FaultConfig, HostConfig, LinkConfig, SwitchConfig};
use crate::engine::trace::PacketTraceConfig;
use crate::engine::Core;
use crate::host::Host;
use crate::net::switch::Switch;
use crate::stats::{Counters, FaultStats};
use crate::transport::table::FlowTable;
use report::Sampler;

/// What to record beyond per-flow completion times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observe {
    /// Flows whose CC variables are traced.
    pub trace_flows: Vec<u32>,
    /// Minimum spacing of trace rows per flow (0 = every change).
    pub trace_interval: Time,
    /// Trace rows kept at most per flow (later rows are counted); 0 means
    /// [`sluice_results::DEFAULT_TRACE_ROWS`].
    pub trace_max_rows: u64,
    /// Flows whose delivered bytes are sampled.
    pub throughput_flows: Vec<u32>,
    /// Ports (node, port) whose transmitted bytes are sampled.
    pub throughput_ports: Vec<(u32, u16)>,
    /// Sampling interval.
    pub sample_interval: Time,
    /// The packet trace (`packets.csv`), if any.
    pub packet_trace: Option<PacketTraceConfig>,
}

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopRule {
    /// Stop at this time even if flows are unfinished (`None`: when every flow has finished).
    pub duration: Option<Time>,
    /// Without a duration, give up at this time (unfinished flows are reported).
    pub time_limit: Time,
}

/// Everything a run needs.
#[derive(Clone)]
pub struct SimInput {
    /// The network (shared by the parts of a partitioned run).
    pub topology: Arc<Topology>,
    /// Its routes (shared likewise).
    pub routes: Arc<Routes>,
    /// Packet sizes.
    pub link: LinkConfig,
    /// Switch settings (ECN thresholds filled per port speed; Bolt's switch logic is turned on when
    /// `needs.bolt`).
    pub switch: SwitchConfig,
    /// Host settings.
    pub host: HostConfig,
    /// The workload's flows, which the run takes from the source as it reaches their starts.
    pub flows: FlowSource,
    /// The CC algorithm.
    pub factory: Arc<dyn Factory>,
    /// What the algorithm needs from the datapath.
    pub needs: Needs,
    /// Receiver CNP spacing (0 = flag every ACK of a marked packet).
    pub cnp_interval: Time,
    /// Scenario seed.
    pub seed: u64,
    /// End of the run.
    pub stop: StopRule,
    /// Extra recording.
    pub observe: Observe,
    /// Where the CC algorithm runs and what moving it off the datapath costs.
    pub plane: PlaneConfig,
    /// Faults injected at switch ports (`[[fault]]`).
    pub faults: Vec<FaultConfig>,
    /// Other algorithms that some flows run (coexistence): the flows of workload entry `g` run
    /// `mix[group_algorithm[g] - 1]`, or the run's algorithm when that is 0 or `g` is past the list.
    /// Token algorithms do not mix (their transport is the run's).
    pub mix: Vec<FlowAlgorithm>,
    /// Per workload entry: 0 for the run's algorithm, `k` for `mix[k - 1]`.
    pub group_algorithm: Vec<u8>,
    /// For flows that name their own algorithm ([`sluice_workload::FlowSpec::algorithm`] `j >= 1`): entry `j - 1` is 0 for
    /// the run's algorithm, `k` for `mix[k - 1]`.
    pub row_algorithm: Vec<u8>,
    /// The closed-loop workload entries, whose slots start a new flow each time one of their flows
    /// finishes; their first flows are in `flows`.
    pub closed_loops: Vec<ClosedLoop>,
}

impl SimInput {
    /// A run of `factory` (which needs `needs`) over `topology` with `routes` and `flows`, every other
    /// setting at its default: seed 1, a 1 s time limit, nothing extra recorded, no faults, one
    /// algorithm. Set the fields to change them.
    pub fn new(
        topology: Topology,
        routes: Routes,
        flows: FlowSource,
        factory: Arc<dyn Factory>,
        needs: Needs,
    ) -> SimInput {
        SimInput {
            topology: topology.into(),
            routes: routes.into(),
            link: LinkConfig::default(),
            switch: SwitchConfig::default(),
            host: HostConfig::default(),
            flows,
            factory,
            needs,
            cnp_interval: 0,
            seed: 1,
            stop: StopRule { duration: None, time_limit: sluice_core::PS_PER_S },
            observe: Observe::default(),
            plane: PlaneConfig::default(),
            faults: Vec::new(),
            mix: Vec::new(),
            group_algorithm: Vec::new(),
            row_algorithm: Vec::new(),
            closed_loops: Vec::new(),
        }
    }
}

/// An algorithm that flows run: its controllers and what it needs from the datapath.
#[derive(Clone)]
pub struct FlowAlgorithm {
    /// Builds one controller per flow.
    pub factory: Arc<dyn Factory>,
    /// What it needs from the datapath (ECN-capable packets, CNPs, INT, Bolt's switches).
    pub needs: Needs,
    /// Its receivers' CNP spacing (0 = flag every ACK of a marked packet).
    pub cnp_interval: Time,
}

impl std::fmt::Debug for FlowAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowAlgorithm").field("needs", &self.needs).field("cnp_interval", &self.cnp_interval).finish()
    }
}

/// A snapshot for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Simulated time reached.
    pub now: Time,
    /// Where the run will stop at the latest.
    pub end: Time,
    /// Events handled so far.
    pub events: u64,
    /// Flows finished.
    pub flows_finished: u64,
    /// Flows in the run so far (closed loops add flows as they go).
    pub flows: u64,
}

/// What a run produced.
#[derive(Debug)]
pub struct SimOutput {
    /// One record per flow, in flow-id order.
    pub flows: Vec<FlowRecord>,
    /// One record per switch port.
    pub ports: Vec<PortRecord>,
    /// One record per switch.
    pub switches: Vec<SwitchRecord>,
    /// Sampled throughput series.
    pub throughput: Vec<ThroughputSeries>,
    /// CC traces.
    pub traces: Vec<sluice_results::FlowTrace>,
    /// Run-wide figures (wall time left 0 for the caller to fill).
    pub run: RunInfo,
    /// Engine counters.
    pub counters: Counters,
    /// Most packets in flight at once.
    pub peak_packets: usize,
    /// What the CC plane did, summed over hosts.
    pub plane: PlaneCounters,
    /// What each injected fault did, in the order of [`SimInput::faults`].
    pub faults: Vec<FaultStats>,
    /// The packet trace, when [`Observe::packet_trace`] asked for one.
    pub packet_trace: Option<sluice_results::PacketTrace>,
    /// How evenly a partitioned run's parts shared the work; `None` for a run in one piece.
    pub balance: Option<Balance>,
}

/// How evenly the parts of a partitioned run shared its events, window by window. A window lasts as long
/// as its busiest part takes, so the run's events over the busiest parts' events bound the speed-up
/// that any number of cores can give (before the cost of the meetings and the memory the parts share).
/// The counts depend on the scenario and the thread count only, not on the machine, so the bound for a
/// machine with more cores can be read on a machine with few.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Balance {
    /// Parts (threads).
    pub parts: usize,
    /// Windows run, those run in turn on one thread included.
    pub windows: u64,
    /// The events of each window's busiest part, summed over the windows; a window whose parts ran in
    /// turn counts all of its events.
    pub busiest: u64,
}

impl Balance {
    /// The most a run of `events` events (counted as a run in one piece counts them) can gain from its
    /// parts running side by side: `events / busiest`.
    pub fn bound(&self, events: u64) -> f64 {
        events as f64 / self.busiest.max(1) as f64
    }
}

#[derive(Debug, Clone, Copy)]
enum NodeRef {
    Host(u32),
    Switch(u32),
}

pub use parallel::PartitionedRun;

/// A simulation ready to run.
pub struct Simulation {
    core: Core,
    switches: Vec<Switch>,
    hosts: Vec<Host>,
    /// The flows that have started (or are starting).
    flows: FlowTable,
    /// The workload's flows still to start, and long-lived flows' stops.
    arrivals: arrivals::Arrivals,
    /// The workload's flows that start a closed-loop slot, with the slot.
    first_flows: arrivals::FirstFlows,
    node_ref: Vec<NodeRef>,
    /// The network, packet sizes, what to record and the algorithms.
    settings: build::RunSettings,
    switch_config: SwitchConfig,
    host_config: HostConfig,
    seed: u64,
    stop: StopRule,
    plane: PlaneConfig,
    samples: Sampler,
    /// Receiver-driven transport settings, when a token algorithm runs.
    rd: Option<crate::config::RdEnv>,
    /// How many faults the scenario injects.
    fault_count: usize,
    /// The closed loops, which add flows during the run.
    loops: closed_loop::Loops,
    /// Finished flows retired during the run: their rows.
    retired: retire::Retired,
    /// In a partitioned run, what this part keeps for the run's end.
    part: Option<parallel::PartState>,
    /// The network has `run::LARGE_NETWORK_PORTS` ports or more (the run loop always prefetches).
    large: bool,
}

impl Simulation {
    /// The time the run stops at the latest.
    pub fn end_time(&self) -> Time {
        self.stop.duration.unwrap_or(self.stop.time_limit)
    }

    /// Runs to the end, calling `progress` about every million events.
    pub fn run(self, progress: &mut dyn FnMut(&Progress)) -> SimOutput {
        match self.run_until(progress, &|| false) {
            Ok(output) => output,
            Err(_) => unreachable!("a run that is never asked to stop runs to its end"),
        }
    }
}

/// Inputs the simulator's unit tests share.
#[cfg(test)]
pub(crate) mod test_inputs {
    use super::SimInput;
    use sluice_workload::FlowSpec;

    /// A k=4 fat-tree (16 hosts, 20 switches) with DCTCP flows between pods.
    pub(crate) fn fat_tree_input() -> SimInput {
        let spec = sluice_topo::TopologySpec::fat_tree(4, 100_000_000_000);
        let topology = sluice_topo::build(&spec, std::path::Path::new(".")).expect("a fat-tree builds");
        let routes = topology.routes();
        let algorithm = sluice_cc::lookup("dctcp").expect("dctcp is registered");
        let factory = (algorithm.build)(&toml::Table::new(), 100_000_000_000).expect("default parameters");
        let flows: Vec<FlowSpec> = (0..8)
            .map(|i| FlowSpec { src: i, dst: 15 - i, size: 100_000, start: 0, stop: None, group: 0, algorithm: 0 })
            .collect();
        SimInput::new(topology, routes, flows.into(), factory, algorithm.needs)
    }
}
