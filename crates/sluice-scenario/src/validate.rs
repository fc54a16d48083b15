//! Checks of a deserialized scenario that need neither the topology nor the algorithm's parameters.
//!
//! Each check returns the dotted key at fault and a message; [`scenario`] locates the first failure.

use sluice_core::{format_duration, MAX_TIME, MAX_TIME_TEXT};
use sluice_sim::config::{Scheduler, SwitchConfig};

use crate::error::ScenarioError;
use crate::scenario::Scenario;
use crate::schema::{FlowSelection, OutputSpec, PacketTraceSpec, MAX_PACKET_TRACE_ROWS, MAX_TRACE_ROWS};

/// A failed check: the dotted key at fault and what is wrong.
type Problem = (String, String);

/// One check of a scenario.
type Check = fn(&Scenario) -> Result<(), Problem>;

/// Runs every check, reporting the first failure at the line (or `--set`) that wrote the key.
pub(crate) fn scenario(s: &Scenario) -> Result<(), ScenarioError> {
    let checks: [Check; 10] = [top_level, times, simulation, link, switch, workloads, algorithm, plane, output, faults];
    for check in checks {
        check(s).map_err(|(key, message)| s.error_at(&key, message))?;
    }
    Ok(())
}

/// Each `[[fault]]` entry takes the fields of its kind, with sound values.
fn faults(s: &Scenario) -> Result<(), Problem> {
    for (i, fault) in s.faults.iter().enumerate() {
        fault.check().map_err(|(key, message)| (crate::fault::key(i, &key), message))?;
    }
    Ok(())
}

fn problem(key: &str, message: impl Into<String>) -> Problem {
    (key.to_string(), message.into())
}

/// A seed must fit a TOML integer so that the resolved scenario can be written back.
pub(crate) fn seed(seed: u64) -> Result<(), String> {
    if seed > i64::MAX as u64 {
        return Err(format!("seed {seed} is too large: at most {} (TOML integers are signed 64-bit)", i64::MAX));
    }
    Ok(())
}

fn top_level(s: &Scenario) -> Result<(), Problem> {
    if s.name.trim().is_empty() {
        return Err(problem("name", "the run name is empty"));
    }
    seed(s.seed).map_err(|m| problem("seed", m))
}

/// Every time a scenario gives directly (workload times are the workload crate's to check) must stay
/// within [`MAX_TIME`], so that the simulator's clock cannot overflow adding them up.
fn times(s: &Scenario) -> Result<(), Problem> {
    let times = [
        ("simulation.duration", s.simulation.duration.unwrap_or(0)),
        ("simulation.time_limit", s.simulation.time_limit),
        ("host.rto_min", s.host.rto_min),
        ("host.nack_interval", s.host.nack_interval),
        ("host.cnp_interval", s.host.cnp_interval.unwrap_or(0)),
        ("host.tx_jitter", s.host.tx_jitter),
        ("output.trace_interval", s.output.trace_interval),
        ("output.sample_interval", s.output.sample_interval),
    ];
    let plane = [
        ("plane.latency", s.plane.latency),
        ("plane.batch_deadline", s.plane.batch_deadline),
        ("plane.service_time", s.plane.service_time),
        ("host.bus.sample_interval", s.host.bus.sample_interval),
    ];
    let endpoint = s
        .host
        .endpoint
        .schedule
        .iter()
        .enumerate()
        .map(|(i, step)| (format!("host.endpoint.schedule.{i}.at"), step.at));
    let bus = s
        .host
        .bus
        .load_schedule
        .iter()
        .enumerate()
        .map(|(i, step)| (format!("host.bus.load_schedule.{i}.at"), step.at));
    let named = times.into_iter().chain(plane).map(|(key, t)| (key.to_string(), t));
    match named.chain(endpoint).chain(bus).find(|(_, t)| *t > MAX_TIME) {
        Some((key, t)) => Err((key, format!("{} is beyond {MAX_TIME_TEXT}", format_duration(t)))),
        None => Ok(()),
    }
}

fn simulation(s: &Scenario) -> Result<(), Problem> {
    if s.simulation.duration == Some(0) {
        return Err(problem(
            "simulation.duration",
            "must be positive, such as \"20ms\"; leave it out to run until every flow finishes",
        ));
    }
    if s.simulation.time_limit == 0 {
        return Err(problem("simulation.time_limit", "must be positive, such as \"1s\""));
    }
    let threads = s.simulation.threads;
    if !(1..=crate::schema::MAX_THREADS).contains(&threads) {
        let message = format!("must be 1 to {}, not {threads}", crate::schema::MAX_THREADS);
        return Err(problem("simulation.threads", &message));
    }
    Ok(())
}

fn plane(s: &Scenario) -> Result<(), Problem> {
    s.plane.validate().map_err(|(field, message)| (format!("plane.{field}"), message))
}

/// The largest `link.mtu`, and the largest header, control or pause frame: 9216 B, the largest port MTU
/// a SONiC switch accepts (sonic-buildimage `sonic-port.yang`: `mtu` range 1..9216; IEEE 802.3 leaves
/// jumbo frames unstandardised). A packet is one frame in this model, never a TSO/GSO burst, so nothing
/// larger exists on a datacenter wire; the bound also keeps every wire size far inside the packet
/// record's `u32`.
pub const MAX_FRAME_BYTES: u32 = 9216;

/// The most throughput samples a run may record: 10 million rows of throughput.csv, about 400 MB of
/// CSV. An engineering bound: far more points than any plot shows, and it stops an interval typo (`"1ps"`)
/// from filling a disk.
pub const MAX_SAMPLES: u64 = 10_000_000;

fn link(s: &Scenario) -> Result<(), Problem> {
    if s.link.mtu == 0 {
        return Err(problem("link.mtu", "must be at least 1 byte of payload per packet (got 0)"));
    }
    let frames = [
        ("link.mtu", s.link.mtu),
        ("link.header_bytes", s.link.header_bytes),
        ("link.control_bytes", s.link.control_bytes),
        ("link.pause_bytes", s.link.pause_bytes),
    ];
    if let Some((key, bytes)) = frames.into_iter().find(|(_, bytes)| *bytes > MAX_FRAME_BYTES) {
        return Err(problem(
            key,
            format!("{bytes} B is larger than the largest frame, a {MAX_FRAME_BYTES} B jumbo frame"),
        ));
    }
    if s.host.ack_every_packets == 0 {
        return Err(problem("host.ack_every_packets", "must be at least 1 (got 0)"));
    }
    s.host.endpoint.validate(s.host.loss_recovery)?;
    s.host.bus.validate()?;
    Ok(())
}

fn switch(s: &Scenario) -> Result<(), Problem> {
    let sw = &s.switch;
    if sw.buffer == 0 {
        return Err(problem("switch.buffer", "must be positive, such as \"32MB\" (got 0)"));
    }
    if !(sw.dt_alpha.is_finite() && sw.dt_alpha > 0.0) {
        return Err(problem("switch.dt_alpha", format!("must be a positive number (got {})", sw.dt_alpha)));
    }
    if !(1..=8).contains(&sw.queues) {
        return Err(problem("switch.queues", format!("must be between 1 and 8 (got {})", sw.queues)));
    }
    for (key, queue) in [("switch.control_queue", sw.control_queue), ("switch.data_queue", sw.data_queue)] {
        if queue >= sw.queues {
            return Err(problem(
                key,
                format!("queue {queue} does not exist: switch.queues = {} (queues 0..={})", sw.queues, sw.queues - 1),
            ));
        }
    }
    scheduler(sw)?;
    pfc(sw)?;
    ecn_thresholds(sw, &s.ecn_algorithms)
}

fn scheduler(sw: &SwitchConfig) -> Result<(), Problem> {
    if let Scheduler::Dwrr { weights } = &sw.scheduler {
        if weights.len() != sw.queues as usize {
            return Err(problem(
                "switch.scheduler.weights",
                format!("needs one weight per queue: {} weights for {} queues", weights.len(), sw.queues),
            ));
        }
        if weights.contains(&0) {
            return Err(problem("switch.scheduler.weights", "every weight must be at least 1"));
        }
    }
    Ok(())
}

fn pfc(sw: &SwitchConfig) -> Result<(), Problem> {
    if sw.pfc.shift >= 64 {
        return Err(problem("switch.pfc.shift", format!("must be below 64 (got {})", sw.pfc.shift)));
    }
    Ok(())
}

fn ecn_thresholds(sw: &SwitchConfig, algorithms: &[Option<String>]) -> Result<(), Problem> {
    let tag = |i: usize| algorithms.get(i).cloned().flatten();
    for (i, (rate, t)) in sw.ecn.thresholds.iter().enumerate() {
        let key = |field: &str| format!("switch.ecn.thresholds.{i}.{field}");
        if let Some(name) = tag(i).filter(|name| sluice_cc::lookup(name).is_none()) {
            return Err((key("algorithm"), format!("unknown algorithm {name:?} (sluice list names them)")));
        }
        if *rate == 0 {
            return Err((key("rate"), "must be a positive rate such as \"100Gbps\" (got 0)".to_string()));
        }
        if sw.ecn.thresholds[..i].iter().enumerate().any(|(j, (r, _))| r == rate && tag(j) == tag(i)) {
            let owner = tag(i).map_or_else(|| "every algorithm".to_string(), |name| name.to_string());
            return Err((key("rate"), format!("{} is listed twice for {owner}", sluice_core::format_rate(*rate))));
        }
        if t.kmin > t.kmax {
            let (kmin, kmax) = (sluice_core::format_size(t.kmin), sluice_core::format_size(t.kmax));
            return Err((key("kmin"), format!("kmin ({kmin}) must not exceed kmax ({kmax})")));
        }
        if !(0.0..=1.0).contains(&t.pmax) {
            return Err((key("pmax"), format!("must be a probability between 0 and 1 (got {})", t.pmax)));
        }
    }
    Ok(())
}

fn workloads(s: &Scenario) -> Result<(), Problem> {
    if s.workloads.is_empty() {
        return Err(problem(
            "workload",
            "no [[workload]] table: a scenario needs at least one, e.g. [[workload]] kind = \"poisson\", \
             load = 0.3, cdf = \"websearch\"",
        ));
    }
    Ok(())
}

fn algorithm(s: &Scenario) -> Result<(), Problem> {
    if sluice_cc::lookup(&s.cc.algorithm).is_none() {
        let known: Vec<&str> = sluice_cc::registry().iter().map(|a| a.name).collect();
        return Err(problem(
            "cc.algorithm",
            format!("unknown algorithm {:?} (registered: {})", s.cc.algorithm, known.join(", ")),
        ));
    }
    algorithm_tables(s)
}

/// Every key of `[cc]` besides `algorithm` and `params` must be a table named after an algorithm.
fn algorithm_tables(s: &Scenario) -> Result<(), Problem> {
    for (name, value) in &s.cc.tables {
        if sluice_cc::lookup(name).is_none() {
            let known: Vec<&str> = sluice_cc::registry().iter().map(|a| a.name).collect();
            return Err(problem(
                &format!("cc.{name}"),
                format!(
                    "unknown key: [cc] holds `algorithm`, `params` and a table of parameters per algorithm, \
                     named after one of: {}",
                    known.join(", ")
                ),
            ));
        }
        if !value.is_table() {
            return Err(problem(
                &format!("cc.{name}"),
                format!("must be a table of {name}'s parameters, such as [cc.{name}]; found {value}"),
            ));
        }
    }
    Ok(())
}

fn output(s: &Scenario) -> Result<(), Problem> {
    let out: &OutputSpec = &s.output;
    if let Some(i) = out.buckets.iter().position(|&b| b == 0) {
        return Err((format!("output.buckets.{i}"), "bucket edges must be positive sizes".to_string()));
    }
    if let Some(i) = out.buckets.windows(2).position(|w| w[0] >= w[1]) {
        let (a, b) = (sluice_core::format_size(out.buckets[i]), sluice_core::format_size(out.buckets[i + 1]));
        return Err((
            format!("output.buckets.{}", i + 1),
            format!("bucket edges must be strictly increasing: {b} follows {a}"),
        ));
    }
    if out.sample_interval == 0 {
        return Err(problem("output.sample_interval", "must be positive, such as \"10us\""));
    }
    if out.trace_max_rows == 0 || out.trace_max_rows > MAX_TRACE_ROWS {
        let message = format!("must be between 1 and {MAX_TRACE_ROWS} rows per traced flow");
        return Err(problem("output.trace_max_rows", message));
    }
    if let Some(trace) = &out.packet_trace {
        packet_trace(trace)?;
    }
    sample_count(s, 0)
}

/// A packet trace names some flows (or all) and keeps between one and [`MAX_PACKET_TRACE_ROWS`] rows.
fn packet_trace(trace: &PacketTraceSpec) -> Result<(), Problem> {
    if trace.flows == FlowSelection::Ids(Vec::new()) {
        return Err(problem("output.packet_trace.flows", "lists no flow: name some, or write \"all\""));
    }
    if trace.max_rows == 0 || trace.max_rows > MAX_PACKET_TRACE_ROWS {
        return Err(problem(
            "output.packet_trace.max_rows",
            format!("must be between 1 and {MAX_PACKET_TRACE_ROWS} (about 70 bytes of CSV a row)"),
        ));
    }
    Ok(())
}

/// Refuses sampling that would record more than [`MAX_SAMPLES`] rows: one per sampled flow and port per
/// interval, up to `simulation.duration` (else `simulation.time_limit`). `flows` is the run's flow
/// count, once known (`throughput_flows = "all"` samples every flow; before, it counts none).
pub(crate) fn sample_count(s: &Scenario, flows: usize) -> Result<(), Problem> {
    let out = &s.output;
    let series = (out.throughput_flows.count(flows) + out.throughput_ports.len()) as u64;
    let (bound_key, bound) = match s.simulation.duration {
        Some(duration) => ("simulation.duration", duration),
        None => ("simulation.time_limit", s.simulation.time_limit),
    };
    let samples = (bound / out.sample_interval).saturating_mul(series);
    if samples <= MAX_SAMPLES {
        return Ok(());
    }
    Err(problem(
        "output.sample_interval",
        format!(
            "{series} sampled series every {} for {bound_key} = {} would record {samples} samples, more than \
             the limit of {MAX_SAMPLES}; sample less often, name fewer flows and ports, or shorten the run",
            format_duration(out.sample_interval),
            format_duration(bound)
        ),
    ))
}
