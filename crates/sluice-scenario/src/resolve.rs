//! Resolution: building the topology, the algorithm and the flows of a scenario, filling the defaults
//! that depend on them, and writing the result back as TOML.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_cc::{Algorithm, Factory, ParamError};
use sluice_core::Rate;
use sluice_sim::config::FaultConfig;
use sluice_sim::config::{EcnThresholds, SwitchConfig};
use sluice_sim::PacketTraceConfig;
use sluice_topo::{NodeId, PortNo, RouteProgress, Routes, TopoError, Topology};
use sluice_workload::{ClosedLoop, FlowSource, Workload, WorkloadError};

use crate::error::ScenarioError;
use crate::fault::FaultSpec;
use crate::scenario::Scenario;
use crate::schema::{PortRef, ScenarioFile, SwitchSpec, ThresholdSpec};

/// A scenario made runnable: everything the simulator needs, built and checked.
pub struct Resolved {
    /// The scenario with every default filled in: `switch.ecn.thresholds` (when ECN is on),
    /// `switch.int` (when the algorithm needs INT), `switch.bolt.enabled` (when it needs Bolt's switches)
    /// and the chosen algorithm's `[cc.<algorithm>]` table (its parameters in force; `cc.params`, laid
    /// over that table, is emptied).
    pub scenario: Scenario,
    /// The built topology.
    pub topology: Topology,
    /// Its ECMP routes.
    pub routes: Routes,
    /// The registry entry of `cc.algorithm`.
    pub algorithm: &'static Algorithm,
    /// Builds one controller per flow.
    pub factory: Arc<dyn Factory>,
    /// The NIC rate the algorithm was built for: the rate of host 0's link. Topologies with mixed host
    /// rates still run (every flow learns its own NIC rate when it starts), but rate-scaled parameter
    /// defaults follow host 0.
    pub line_rate: Rate,
    /// Every flow of every workload, in the order the workload generator gives them (flow ids are
    /// positions in this order); for a closed loop, the first flow of each slot. Generated as they are
    /// read, so a large workload is never held whole.
    pub flows: FlowSource,
    /// The closed-loop workload entries, which start further flows during a run (ids past `flows`).
    pub closed_loops: Vec<ClosedLoop>,
    /// `output.throughput_ports`, as (node id, port number).
    pub throughput_ports: Vec<(NodeId, PortNo)>,
    /// The `[[fault]]` entries, resolved against the topology and the flows.
    pub faults: Vec<FaultConfig>,
    /// `[output.packet_trace]`, resolved against the topology.
    pub packet_trace: Option<PacketTraceConfig>,
    /// `cc.workloads`: the other algorithms some workloads run, when the run mixes algorithms.
    pub mix: Option<crate::mix::Mix>,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field("scenario", &self.scenario.name)
            .field("topology", &self.topology.describe())
            .field("algorithm", &self.algorithm.name)
            .field("line_rate", &self.line_rate)
            .field("flows", &self.flows.len())
            .field("throughput_ports", &self.throughput_ports)
            .finish_non_exhaustive()
    }
}

/// Builds the topology and its routes, checks the workloads against the host count and generates the
/// flows, builds the algorithm from its `[cc.<algorithm>]` table and `cc.params` at host 0's NIC rate
/// (and checks the other algorithms' tables), applies what the algorithm needs
/// (`needs.int` turns `switch.int` on, `needs.bolt` turns `switch.bolt.enabled` on; an algorithm missing a
/// capability the switch settings take away, such as ECN marks with `switch.ecn.enabled = false`, is an
/// error located at that setting), fills ECN thresholds for every link rate of the topology when
/// the file gives none (DCTCP, and hostCC and `dctcp_host`, whose senders run DCTCP:
/// [`EcnThresholds::dctcp_for_rate`]; every other algorithm: [`EcnThresholds::red_for_rate`]), and checks
/// the output's flow and port references.
pub fn resolve(scenario: &Scenario) -> Result<Resolved, ScenarioError> {
    resolve_with_progress(scenario, &mut |_| {})
}

/// [`resolve`], telling `routes_progress` how far the route search has come. Only topologies without a
/// closed form (topology files of no generated layout) search, one destination host at a time, which
/// can take seconds for thousands of hosts.
pub fn resolve_with_progress(
    scenario: &Scenario,
    routes_progress: &mut dyn FnMut(RouteProgress),
) -> Result<Resolved, ScenarioError> {
    let topology = sluice_topo::build(&scenario.topology, &scenario.base_dir).map_err(|e| topo_error(scenario, e))?;
    let line_rate = topology.nic(0).rate;
    let algorithm = sluice_cc::lookup(&scenario.cc.algorithm)
        .ok_or_else(|| scenario.error_at("cc.algorithm", format!("unknown algorithm {:?}", scenario.cc.algorithm)))?;
    let factory = (algorithm.build)(&scenario.cc.params_for(algorithm.name), line_rate)
        .map_err(|e| param_error(scenario, algorithm.name, e))?;
    check_unused_tables(scenario, line_rate)?;
    let Workload { flows, closed_loops, algorithms: rows } = workload(scenario, &topology)?;
    // One pass over the flows finds the hosts they use, and counts them for what follows.
    let endpoints = flow_endpoints(&flows);
    let mix = crate::mix::resolve(scenario, algorithm, &factory, line_rate, &rows)?;
    let ecn = EcnEntries::split(scenario, algorithm.name);
    // Thresholds filled from the algorithm's defaults are its own.
    let ecn_tag = if ecn.in_force.is_empty() { Some(algorithm.name.to_string()) } else { ecn.tag };
    let switch = switch_for(scenario, algorithm, mix.as_ref(), &topology, ecn.in_force)?;
    crate::limits::check_buffer(scenario, &switch, &topology)?;
    crate::limits::check_rto(scenario, &topology)?;
    check_flow_ids(scenario, flows.len())?;
    crate::validate::sample_count(scenario, flows.len()).map_err(|(key, message)| scenario.error_at(&key, message))?;
    let throughput_ports = ports(scenario, &topology)?;
    let (fault_specs, faults) = faults(scenario, &topology, &flows)?;
    let packet_trace = packet_trace(scenario, &topology)?;
    let mut filled = scenario.clone();
    filled.faults = fault_specs;
    filled.ecn_algorithms = vec![ecn_tag; switch.ecn.thresholds.len()];
    filled.ecn_unused = ecn.unused;
    filled.switch = switch;
    filled.cc.params = toml::Table::new();
    filled.cc.tables.insert(algorithm.name.to_string(), toml::Value::Table(factory.resolved()));
    for (other, other_factory) in mix.iter().flat_map(|m| &m.others) {
        filled.cc.tables.insert(other.name.to_string(), toml::Value::Table(other_factory.resolved()));
    }
    let routes = topology.routes_to(&endpoints, routes_progress);
    Ok(Resolved {
        scenario: filled,
        topology,
        routes,
        algorithm,
        factory,
        line_rate,
        flows,
        closed_loops,
        throughput_ports,
        faults,
        packet_trace,
        mix,
    })
}

/// The hosts that packets of `flows` go to: receivers (data) and senders (acknowledgments, switch
/// notifications, returned headers), sorted, each once.
fn flow_endpoints(flows: &FlowSource) -> Vec<u32> {
    let mut hosts = BTreeSet::new();
    flows.scan(|f| {
        hosts.insert(f.src);
        hosts.insert(f.dst);
    });
    hosts.into_iter().collect()
}

/// Resolves `[output.packet_trace]`: its flows (checked with the other flow lists) and switch ports.
fn packet_trace(s: &Scenario, topology: &Topology) -> Result<Option<PacketTraceConfig>, ScenarioError> {
    let Some(spec) = &s.output.packet_trace else { return Ok(None) };
    let mut ports = Vec::with_capacity(spec.ports.len());
    for (i, port) in spec.ports.iter().enumerate() {
        let key = format!("output.packet_trace.ports.{i}");
        ports.push(switch_port(topology, port).map_err(|m| s.error_at(&key, m))?);
    }
    let flows = match &spec.flows {
        crate::schema::FlowSelection::All => None,
        crate::schema::FlowSelection::Ids(ids) => Some(ids.iter().map(|&f| f as u32).collect()),
    };
    let ports = (!spec.ports.is_empty()).then_some(ports);
    Ok(Some(PacketTraceConfig { flows, ports, max_rows: spec.max_rows }))
}

/// A named port that must belong to a switch: faults and packet traces act where a switch sends (a
/// host's NIC link is named from the switch's side, which the message gives).
pub(crate) fn switch_port(topology: &Topology, port: &PortRef) -> Result<(NodeId, PortNo), String> {
    let (node, number) = port_id(topology, port)?;
    if topology.nodes[node as usize].kind == sluice_topo::NodeKind::Switch {
        return Ok((node, number));
    }
    let link = &topology.ports[node as usize][number as usize];
    let switch = &topology.nodes[link.peer as usize].name;
    Err(format!(
        "{port} is a host's port; this acts where a switch sends: the same link seen from the switch is \"{switch}:p{}\"",
        link.peer_port
    ))
}

/// Resolves the `[[fault]]` entries: their ports (a flow fault's default: the last hop) and flows.
fn faults(
    s: &Scenario,
    topology: &Topology,
    flows: &FlowSource,
) -> Result<(Vec<FaultSpec>, Vec<FaultConfig>), ScenarioError> {
    let mut specs = Vec::with_capacity(s.faults.len());
    let mut configs = Vec::with_capacity(s.faults.len());
    let named: Vec<usize> = s.faults.iter().filter_map(|f| f.flow).map(|f| f.min(usize::MAX as u64) as usize).collect();
    let found = flows.select(&named);
    let dst_of = |flow: usize| named.iter().position(|&n| n == flow).and_then(|k| found[k]).map_or(0, |f| f.dst);
    for (i, fault) in s.faults.iter().enumerate() {
        let (spec, config) = fault
            .resolve(topology, flows.len(), dst_of)
            .map_err(|(key, message)| s.error_at(&crate::fault::key(i, &key), message))?;
        specs.push(spec);
        configs.push(config);
    }
    Ok((specs, configs))
}

fn topo_error(s: &Scenario, e: TopoError) -> ScenarioError {
    let key = e.field.map_or_else(|| "topology".to_string(), |f| format!("topology.{f}"));
    s.error_at(&key, e.message)
}

/// Locates a parameter error of `algorithm` at the key that set it: `cc.params.KEY` for the chosen
/// algorithm's overrides, else `cc.ALGORITHM.KEY`.
pub(crate) fn param_error(s: &Scenario, algorithm: &str, e: ParamError) -> ScenarioError {
    let from_params = algorithm == s.cc.algorithm && e.key.as_ref().is_none_or(|k| s.cc.params.contains_key(k));
    let table = if from_params { "cc.params".to_string() } else { format!("cc.{algorithm}") };
    let key = e.key.as_ref().map_or_else(|| table.clone(), |k| format!("{table}.{k}"));
    let error = s.error_at(&key, format!("{} (algorithm {algorithm})", e.message));
    crate::program::locate(error, e.key.as_deref(), &s.provenance.text)
}

/// The parameter tables of the algorithms not chosen must hold what their algorithms accept.
fn check_unused_tables(s: &Scenario, line_rate: Rate) -> Result<(), ScenarioError> {
    for name in s.cc.tables.keys().filter(|&name| *name != s.cc.algorithm) {
        let Some(algorithm) = sluice_cc::lookup(name) else { continue };
        (algorithm.build)(&s.cc.params_for(name), line_rate).map_err(|e| param_error(s, name, e))?;
    }
    Ok(())
}

/// The scenario's ECN threshold entries, split by the algorithm of the run.
struct EcnEntries {
    /// The entries written for the algorithm, else those written for every algorithm.
    in_force: Vec<(Rate, EcnThresholds)>,
    /// What the entries in force are for: the algorithm, `None` when they serve every algorithm.
    tag: Option<String>,
    /// The other entries, with what each is for.
    unused: Vec<(Option<String>, Rate, EcnThresholds)>,
}

impl EcnEntries {
    fn split(s: &Scenario, algorithm: &str) -> EcnEntries {
        let entries = s.ecn_entries();
        let own = entries.iter().any(|(tag, _, _)| tag.as_deref() == Some(algorithm));
        let tag = own.then(|| algorithm.to_string());
        let (in_force, unused): (Vec<_>, Vec<_>) = entries.into_iter().partition(|(t, _, _)| *t == tag);
        let in_force = in_force.into_iter().map(|(_, rate, t)| (rate, t)).collect();
        EcnEntries { in_force, tag, unused }
    }
}

/// The switch settings with the algorithm's needs applied and its ECN thresholds in force: those written
/// for it, else those written for every algorithm, else its defaults, which then count as its own.
fn switch_for(
    s: &Scenario,
    algorithm: &Algorithm,
    mix: Option<&crate::mix::Mix>,
    topology: &Topology,
    thresholds: Vec<(Rate, EcnThresholds)>,
) -> Result<SwitchConfig, ScenarioError> {
    let mut switch = s.switch.clone();
    switch.ecn.thresholds = thresholds;
    let needs = mix.map_or(algorithm.needs, |m| m.needs(algorithm.needs));
    if needs.int {
        switch.int = true;
    }
    if needs.bolt {
        switch.bolt.enabled = true;
    }
    crate::contract::check(s, &switch, algorithm, mix)?;
    if switch.ecn.enabled && switch.ecn.thresholds.is_empty() {
        let per_rate = if matches!(algorithm.name, "dctcp" | "hostcc" | "dctcp_host") {
            EcnThresholds::dctcp_for_rate
        } else {
            EcnThresholds::red_for_rate
        };
        let rates: BTreeSet<Rate> = topology.links.iter().map(|l| l.rate).collect();
        switch.ecn.thresholds = rates.into_iter().map(|r| (r, per_rate(r))).collect();
    }
    Ok(switch)
}

/// Checks every workload entry against the topology and generates the flows and closed loops.
fn workload(s: &Scenario, topology: &Topology) -> Result<Workload, ScenarioError> {
    crate::generate::workload(s, topology).map_err(|e| workload_error(s, e))
}

pub(crate) fn workload_error(s: &Scenario, e: WorkloadError) -> ScenarioError {
    let key = match (e.entry, &e.field) {
        (Some(i), Some(field)) => format!("workload.{i}.{field}"),
        (Some(i), None) => format!("workload.{i}"),
        (None, _) => "workload".to_string(),
    };
    let message = match (&e.file, e.line) {
        (Some(file), Some(line)) => format!("{file} line {line}: {}", e.message),
        (Some(file), None) => format!("{file}: {}", e.message),
        _ => e.message,
    };
    s.error_at(&key, message)
}

/// Every flow id named in `[output]` must exist.
fn check_flow_ids(s: &Scenario, count: usize) -> Result<(), ScenarioError> {
    let lists = [
        ("output.trace_flows", &s.output.trace_flows[..]),
        ("output.throughput_flows", s.output.throughput_flows.listed()),
        ("output.packet_trace.flows", s.output.packet_trace.as_ref().map_or(&[][..], |t| t.flows.listed())),
    ];
    for (key, ids) in lists {
        if let Some(i) = ids.iter().position(|&id| id >= count as u64) {
            let message = match count {
                0 => format!("flow {} does not exist: the workloads generate no flows", ids[i]),
                _ => format!(
                    "flow {} does not exist: the workloads generate {count} flows, ids 0 to {}",
                    ids[i],
                    count - 1
                ),
            };
            return Err(s.error_at(&format!("{key}.{i}"), message));
        }
    }
    Ok(())
}

/// Resolves `output.throughput_ports` against the topology's node names and port counts.
fn ports(s: &Scenario, topology: &Topology) -> Result<Vec<(NodeId, PortNo)>, ScenarioError> {
    let mut out = Vec::with_capacity(s.output.throughput_ports.len());
    for (i, port) in s.output.throughput_ports.iter().enumerate() {
        out.push(port_id(topology, port).map_err(|m| s.error_at(&format!("output.throughput_ports.{i}"), m))?);
    }
    Ok(out)
}

pub(crate) fn port_id(topology: &Topology, port: &PortRef) -> Result<(NodeId, PortNo), String> {
    let Some(node) = topology.nodes.iter().position(|n| n.name == port.node) else {
        let examples: Vec<&str> = topology.nodes.iter().rev().take(3).map(|n| n.name.as_str()).collect();
        return Err(format!(
            "no node named {:?} in the topology ({}; names such as {})",
            port.node,
            topology.describe(),
            examples.join(", ")
        ));
    };
    let count = topology.ports[node].len();
    if port.port as usize >= count {
        return Err(format!(
            "node {:?} has {count} ports, 0 to {}; there is no port {}",
            port.node,
            count - 1,
            port.port
        ));
    }
    Ok((node as NodeId, port.port))
}

/// `[switch]` as written back: the ECN threshold entries in force and the unused ones, each with the
/// algorithm it is for.
fn switch_spec(s: &Scenario) -> SwitchSpec {
    let mut spec = SwitchSpec::from(&s.switch);
    let entries = s.ecn_entries();
    spec.ecn.thresholds = entries.iter().map(|(tag, rate, t)| ThresholdSpec::new(tag.clone(), *rate, t)).collect();
    spec
}

/// The whole scenario as TOML with every default filled in (including the algorithm's parameters in
/// force and the ECN thresholds), so that loading the text again gives the same scenario.
/// `base_dir` is written as an absolute path so that the text loads from anywhere on this machine;
/// [`resolved_toml_at`] writes a file that keeps working when moved with the files it names.
pub fn resolved_toml(resolved: &Resolved) -> String {
    let base = resolved.scenario.base_dir.clone();
    header(resolved) + &body(resolved, Some(base))
}

/// [`resolved_toml`] for a file that will live in `dir`: `base_dir` is written relative to `dir` (when the
/// two share a root), so that the file and the scenario's data files can move together (a results tree
/// copied to another machine beside the repository it came from).
pub fn resolved_toml_at(resolved: &Resolved, dir: &Path) -> String {
    let base = &resolved.scenario.base_dir;
    let relative = pathdiff::diff_paths(canonical(base), canonical(dir)).unwrap_or_else(|| base.clone());
    let relative = if relative.as_os_str().is_empty() { PathBuf::from(".") } else { relative };
    header(resolved) + &body(resolved, Some(relative))
}

/// `path` with links and `..` resolved, so that paths compare component by component; a path that does
/// not exist yet is resolved through its parent.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => absolute,
    }
}

/// The resolved scenario without its header comment and without `base_dir`: what identifies a run
/// wherever the files live (a configuration sweep hashes it to name run directories).
pub fn resolved_identity(resolved: &Resolved) -> String {
    body(resolved, None)
}

fn header(resolved: &Resolved) -> String {
    let s = &resolved.scenario;
    format!(
        "# Scenario {:?} (from {}) with every default filled in,\n\
         # including the parameters of {} in force and the ECN thresholds per port speed.\n\
         # Loading this file runs the same simulation.\n\n",
        s.name,
        s.source.display(),
        resolved.algorithm.name
    )
}

fn body(resolved: &Resolved, base_dir: Option<PathBuf>) -> String {
    let s = &resolved.scenario;
    let file = ScenarioFile {
        name: Some(s.name.clone()),
        seed: s.seed,
        base_dir: base_dir.map(|dir| PathBuf::from(dir.to_string_lossy().into_owned())),
        simulation: s.simulation.clone(),
        topology: s.topology.clone(),
        link: s.link.clone(),
        switch: switch_spec(s),
        host: s.host.clone(),
        workload: s.workloads.clone(),
        cc: s.cc.clone(),
        plane: s.plane.clone(),
        output: s.output.clone(),
        fault: s.faults.clone(),
    };
    match toml::to_string(&file) {
        Ok(body) => body,
        Err(e) => format!("# the scenario cannot be written as TOML: {e}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cc::{Control, Needs};

    const STAR: &str = "[topology]\nkind = \"star\"\nhosts = 2\nrate = \"25Gbps\"\n\
                        [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";

    fn algorithm(needs: Needs) -> Algorithm {
        Algorithm {
            name: "probe",
            summary: "test algorithm",
            control: Control::Rate,
            needs,
            build: sluice_cc::lookup("none").expect("registered").build,
        }
    }

    fn scenario(sets: &[&str]) -> (Scenario, Topology) {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = crate::load_str(STAR, "t.toml", std::path::Path::new("."), &sets).unwrap();
        let topology = sluice_topo::build(&s.topology, &s.base_dir).unwrap();
        (s, topology)
    }

    #[test]
    fn needing_int_turns_int_stamping_on() {
        let (s, topology) = scenario(&[]);
        let needs = Needs { int: true, ..Needs::NOTHING };
        let switch = switch_for(&s, &algorithm(needs), None, &topology, Vec::new()).unwrap();
        assert!(switch.int);
        assert_eq!(switch.ecn.thresholds, vec![(25_000_000_000, EcnThresholds::red_for_rate(25_000_000_000))]);
        let switch = switch_for(&s, &algorithm(Needs::default()), None, &topology, Vec::new()).unwrap();
        assert!(!switch.int);
    }

    #[test]
    fn needing_bolt_turns_bolt_switches_on() {
        let (s, topology) = scenario(&["switch.bolt.cc_thresh=20KB"]);
        let needs = Needs { bolt: true, ..Needs::default() };
        let switch = switch_for(&s, &algorithm(needs), None, &topology, Vec::new()).unwrap();
        assert!(switch.bolt.enabled);
        assert_eq!(switch.bolt.cc_thresh, 20_000);
        let switch = switch_for(&s, &algorithm(Needs::default()), None, &topology, Vec::new()).unwrap();
        assert!(!switch.bolt.enabled);
    }

    #[test]
    fn needing_cnp_needs_ecn_marks() {
        let (s, topology) = scenario(&["switch.ecn.enabled=false"]);
        let needs = Needs { cnp: true, ..Needs::NOTHING };
        let err = switch_for(&s, &algorithm(needs), None, &topology, Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--set switch.ecn.enabled=false: switch.ecn.enabled: algorithm `probe` needs congestion notification \
             packets from receivers; the simulator with switch.ecn.enabled = false does not provide it; set \
             switch.ecn.enabled = true or choose another algorithm"
        );
    }
}
