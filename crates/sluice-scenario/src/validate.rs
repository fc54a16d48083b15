//! Checks of a deserialized scenario that need neither the topology nor the algorithm's parameters.
//!
//! Each check returns the dotted key at fault and a message; [`scenario`] locates the first failure.

use sluice_sim::config::{Scheduler, SwitchConfig};

use crate::error::ScenarioError;
use crate::scenario::Scenario;
use crate::schema::OutputSpec;

/// A failed check: the dotted key at fault and what is wrong.
type Problem = (String, String);

/// One check of a scenario.
type Check = fn(&Scenario) -> Result<(), Problem>;

/// Runs every check, reporting the first failure at the line (or `--set`) that wrote the key.
pub(crate) fn scenario(s: &Scenario) -> Result<(), ScenarioError> {
    let checks: [Check; 8] = [top_level, simulation, link, switch, workloads, algorithm, plane, output];
    for check in checks {
        check(s).map_err(|(key, message)| s.error_at(&key, message))?;
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
    Ok(())
}

fn plane(s: &Scenario) -> Result<(), Problem> {
    s.plane.validate().map_err(|(field, message)| (format!("plane.{field}"), message))
}

fn link(s: &Scenario) -> Result<(), Problem> {
    if s.link.mtu == 0 {
        return Err(problem("link.mtu", "must be at least 1 byte of payload per packet (got 0)"));
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
    ecn_thresholds(sw)
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

fn ecn_thresholds(sw: &SwitchConfig) -> Result<(), Problem> {
    for (i, (rate, t)) in sw.ecn.thresholds.iter().enumerate() {
        let key = |field: &str| format!("switch.ecn.thresholds.{i}.{field}");
        if *rate == 0 {
            return Err((key("rate"), "must be a positive rate such as \"100Gbps\" (got 0)".to_string()));
        }
        if sw.ecn.thresholds[..i].iter().any(|(r, _)| r == rate) {
            return Err((key("rate"), format!("{} is listed twice", sluice_core::format_rate(*rate))));
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
    Ok(())
}
