//! Helpers shared by the simulator's integration tests: small networks built directly from specs.

#![allow(dead_code)]

use std::path::Path;

use sluice_core::{parse_duration, parse_rate, Time};
use sluice_results::{PortRecord, ThroughputSeries};
use sluice_sim::config::FaultConfig;
use sluice_sim::{FlowSpec, HostConfig, LinkConfig, Observe, SimInput, SimOutput, Simulation, StopRule, SwitchConfig};
use sluice_topo::TopologySpec;

/// A star of `hosts` hosts around one switch, every link at `rate` with `delay`.
pub fn star(hosts: u32, rate: &str, delay: &str) -> TopologySpec {
    TopologySpec::Star { hosts, rate: parse_rate(rate).unwrap(), delay: parse_duration(delay).unwrap() }
}

/// A dumbbell: `n` senders and `n` receivers around a bottleneck.
pub fn dumbbell(n: u32, host_rate: &str, bottleneck: &str) -> TopologySpec {
    TopologySpec::Dumbbell {
        left: n,
        right: n,
        host_rate: parse_rate(host_rate).unwrap(),
        bottleneck_rate: parse_rate(bottleneck).unwrap(),
        delay: parse_duration("1us").unwrap(),
    }
}

/// A canonical k-ary fat-tree (k^3/4 hosts), every link at `rate` and 1 us.
pub fn fat_tree(k: u32, rate: &str) -> TopologySpec {
    TopologySpec::fat_tree(k, parse_rate(rate).unwrap())
}

/// A run of `algorithm` with `params` over `spec`.
pub struct Run {
    pub spec: TopologySpec,
    pub algorithm: &'static str,
    pub params: toml::Table,
    pub link: LinkConfig,
    pub switch: SwitchConfig,
    pub host: HostConfig,
    pub flows: Vec<FlowSpec>,
    pub stop: StopRule,
    pub observe: Observe,
    pub seed: u64,
    pub faults: Vec<FaultConfig>,
}

impl Run {
    pub fn new(spec: TopologySpec, algorithm: &'static str) -> Run {
        Run {
            spec,
            algorithm,
            params: toml::Table::new(),
            link: LinkConfig::default(),
            switch: SwitchConfig::default(),
            host: HostConfig::default(),
            flows: Vec::new(),
            stop: StopRule { duration: None, time_limit: parse_duration("1s").unwrap() },
            observe: Observe::default(),
            seed: 1,
            faults: Vec::new(),
        }
    }

    pub fn flow(mut self, src: u32, dst: u32, size: u64, start: Time) -> Run {
        self.flows.push(FlowSpec { src, dst, size, start, stop: None, group: 0, algorithm: 0 });
        self
    }

    pub fn long_flow(mut self, src: u32, dst: u32, start: Time, stop: Time) -> Run {
        self.flows.push(FlowSpec { src, dst, size: 0, start, stop: Some(stop), group: 0, algorithm: 0 });
        self
    }

    pub fn run(self) -> SimOutput {
        let topology = sluice_topo::build(&self.spec, Path::new(".")).expect("topology builds");
        let routes = topology.routes();
        let host_rate = topology.nic(0).rate;
        let algorithm = sluice_cc::lookup(self.algorithm).expect("algorithm registered");
        let factory = (algorithm.build)(&self.params, host_rate).expect("params valid");
        let mut switch = self.switch;
        if switch.ecn.thresholds.is_empty() {
            let mut rates: Vec<u64> = topology.links.iter().map(|l| l.rate).collect();
            rates.sort_unstable();
            rates.dedup();
            let dctcp = matches!(self.algorithm, "dctcp" | "hostcc" | "dctcp_host");
            switch.ecn.thresholds = rates
                .into_iter()
                .map(|r| {
                    let t = if dctcp {
                        sluice_sim::EcnThresholds::dctcp_for_rate(r)
                    } else {
                        sluice_sim::EcnThresholds::red_for_rate(r)
                    };
                    (r, t)
                })
                .collect();
        }
        // As the runner: the host setting, else the algorithm's own default (DCQCN "paper": 50 us).
        let cnp_interval = self.host.cnp_interval.unwrap_or_else(|| factory.cnp_interval().unwrap_or(0));
        let input = SimInput {
            link: self.link,
            switch,
            host: self.host,
            cnp_interval,
            seed: self.seed,
            stop: self.stop,
            observe: self.observe,
            faults: self.faults,
            ..SimInput::new(topology, routes, self.flows.into(), factory, algorithm.needs)
        };
        Simulation::new(input).run(&mut |_| {})
    }
}

pub fn us(text: &str) -> Time {
    parse_duration(text).unwrap()
}

/// A duration written like `"1ms"` or `"300us"`.
pub fn time(text: &str) -> Time {
    parse_duration(text).unwrap()
}

/// The series labelled `label`.
pub fn series<'a>(out: &'a SimOutput, label: &str) -> &'a ThroughputSeries {
    out.throughput.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no series {label}"))
}

/// Bytes a series counted in the intervals that end in `(from, to]`; the window must be a whole number
/// of sampling intervals.
pub fn bytes_in(series: &ThroughputSeries, from: Time, to: Time) -> u64 {
    assert_eq!((to - from) % series.interval, 0, "window is not a whole number of intervals");
    let samples: Vec<_> = series.samples.iter().filter(|(t, _)| *t > from && *t <= to).collect();
    assert_eq!(samples.len() as Time, (to - from) / series.interval, "{}: samples missing in the window", series.label);
    samples.iter().map(|(_, b)| b).sum()
}

/// The record of switch port `node:pN`.
pub fn port<'a>(out: &'a SimOutput, node: &str, port: u16) -> &'a PortRecord {
    out.ports.iter().find(|p| p.node == node && p.port == port).unwrap_or_else(|| panic!("no port {node}:p{port}"))
}

impl Run {
    /// Turns on what the algorithm needs from the switches, as the scenario layer does: INT stamping
    /// when `needs.int` (HPCC). [`Run::run`] leaves `switch.int` as given (the simulation turns Bolt's
    /// switch logic on by itself).
    pub fn with_needs(mut self) -> Run {
        let algorithm = sluice_cc::lookup(self.algorithm).expect("algorithm registered");
        if algorithm.needs.int {
            self.switch.int = true;
        }
        self
    }
}
