//! From a resolved scenario to results on disk.

use std::path::Path;
use std::time::Instant;

use sluice_results::{write_outputs_unless, Buckets, Outputs, Summary};
use sluice_scenario::{resolved_toml_at, HugePages, Resolved};
use sluice_sim::{FlowAlgorithm, Observe, PartitionedRun, Progress, SimInput, SimOutput, Simulation, StopRule};

/// What a finished run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The summary (also in summary.json).
    pub summary: Summary,
    /// The raw simulator output.
    pub output: SimOutput,
    /// Wall-clock seconds of the simulation proper (building and writing excluded).
    pub wall_seconds: f64,
}

/// The receiver CNP spacing for flows of `factory`'s algorithm: the scenario's `host.cnp_interval`, else
/// the algorithm's own default.
fn cnp_interval(resolved: &Resolved, factory: &dyn sluice_cc::Factory) -> sluice_core::Time {
    resolved.scenario.host.cnp_interval.unwrap_or_else(|| factory.cnp_interval().unwrap_or(0))
}

/// The other algorithms of a mixed run, for the simulator.
fn mix_input(resolved: &Resolved) -> Vec<FlowAlgorithm> {
    let others = resolved.mix.iter().flat_map(|m| &m.others);
    others
        .map(|(algorithm, factory)| FlowAlgorithm {
            factory: factory.clone(),
            needs: algorithm.needs,
            cnp_interval: cnp_interval(resolved, factory.as_ref()),
        })
        .collect()
}

/// The simulator input for a resolved scenario.
pub fn simulation_input(resolved: &Resolved) -> SimInput {
    let s = &resolved.scenario;
    let flows = resolved.flows.clone();
    let observe = Observe {
        trace_flows: s.output.trace_flows.iter().map(|&f| f as u32).collect(),
        trace_interval: s.output.trace_interval,
        trace_max_rows: s.output.trace_max_rows,
        throughput_flows: s.output.throughput_flows.ids(resolved.flows.len()).into_iter().map(|f| f as u32).collect(),
        throughput_ports: resolved.throughput_ports.clone(),
        sample_interval: s.output.sample_interval,
        packet_trace: resolved.packet_trace.clone(),
    };
    SimInput {
        topology: resolved.topology.clone().into(),
        routes: resolved.routes.clone().into(),
        link: s.link.clone(),
        switch: s.switch.clone(),
        host: s.host.clone(),
        flows,
        factory: resolved.factory.clone(),
        needs: resolved.algorithm.needs,
        cnp_interval: cnp_interval(resolved, resolved.factory.as_ref()),
        seed: s.seed,
        stop: StopRule { duration: s.simulation.duration, time_limit: s.simulation.time_limit },
        observe,
        plane: s.plane.clone(),
        faults: resolved.faults.clone(),
        mix: mix_input(resolved),
        group_algorithm: resolved.mix.as_ref().map_or_else(Vec::new, |m| m.of_workload.clone()),
        row_algorithm: resolved.mix.as_ref().map_or_else(Vec::new, |m| m.of_row.clone()),
        closed_loops: resolved.closed_loops.clone(),
    }
}

/// The plane section of summary.json: the mode, every counter, the communication efficiency and the
/// busy fraction of the sending hosts' plane cores.
fn plane_summary(resolved: &Resolved, output: &SimOutput) -> serde_json::Value {
    let c = &output.plane;
    // Only hosts that send run flows' controllers; the others' plane cores stay idle. (The records'
    // senders are the workload's: a closed loop's later flows leave from its slots' hosts.)
    let senders: std::collections::BTreeSet<u32> = output.flows.iter().map(|f| f.src).collect();
    let hosts = senders.len().max(1) as f64;
    let sim_time = output.run.sim_time.max(1) as f64;
    let mut value = serde_json::to_value(c).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        let mode = serde_json::to_value(resolved.scenario.plane.mode).unwrap_or_default();
        map.insert("mode".into(), mode);
        map.insert("efficiency".into(), sluice_results::round6(c.efficiency()).into());
        map.insert("busy_fraction".into(), sluice_results::round6(c.busy_time as f64 / (sim_time * hosts)).into());
        // Every time in summary.json is in nanoseconds.
        map.remove("busy_time");
        map.insert("busy_time_ns".into(), (c.busy_time as f64 / sluice_core::PS_PER_NS as f64).into());
    }
    value
}

/// What each `[[fault]]` entry did, in scenario order: its kind, its port and the packets it dropped and
/// marked.
fn fault_summary(resolved: &Resolved, output: &SimOutput) -> serde_json::Value {
    let entries = resolved.scenario.faults.iter().zip(&output.faults).map(|(spec, stats)| {
        serde_json::json!({
            "kind": spec.kind,
            "port": spec.port.as_ref().map(|p| p.to_string()),
            "dropped": stats.dropped,
            "marked": stats.marked,
        })
    });
    serde_json::Value::Array(entries.collect())
}

/// The `trace` section of summary.json, only when some traced flow reached `output.trace_max_rows`:
/// the samples left out in all, and per such flow.
fn trace_summary(resolved: &Resolved, output: &SimOutput) -> Option<serde_json::Value> {
    let capped: Vec<serde_json::Value> = output
        .traces
        .iter()
        .filter(|t| t.skipped() > 0)
        .map(|t| serde_json::json!({ "flow": t.flow(), "skipped_rows": t.skipped() }))
        .collect();
    if capped.is_empty() {
        return None;
    }
    let skipped: u64 = output.traces.iter().map(|t| t.skipped()).sum();
    let max_rows = resolved.scenario.output.trace_max_rows;
    Some(serde_json::json!({ "max_rows_per_flow": max_rows, "skipped_rows": skipped, "capped_flows": capped }))
}

/// The warning for a run whose traces lost rows to `output.trace_max_rows`; `None` for any other run.
pub fn trace_cap_warning(summary: &Summary) -> Option<String> {
    let trace = summary.extra.get("trace")?;
    Some(format!(
        "warning: {} trace samples were left out: traced flows reached output.trace_max_rows = {} \
         (summary.json's `trace` section names them)",
        trace["skipped_rows"], trace["max_rows_per_flow"]
    ))
}

/// The token transport's counters with the study's ratios: tokens dropped and wasted per token issued,
/// data bytes dropped per byte sent.
fn receiver_driven_summary(output: &SimOutput) -> serde_json::Value {
    let c = &output.counters.rd;
    let per_token = |n: u64| sluice_results::round6(n as f64 / c.tokens_issued.max(1) as f64);
    let mut value = serde_json::to_value(c).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("token_drop_ratio".into(), per_token(c.tokens_dropped).into());
        map.insert("token_waste_ratio".into(), per_token(c.tokens_wasted + c.tokens_stale).into());
        let sent = output.run.bytes_sent.max(1) as f64;
        map.insert("data_drop_ratio".into(), sluice_results::round6(output.run.bytes_dropped as f64 / sent).into());
    }
    value
}

/// Runs `resolved`, calling `progress` now and then, and writes every output file into `out_dir`
/// (atomically: the directory appears complete or not at all). `out_dir = None` writes nothing.
pub fn run_scenario(
    resolved: &Resolved,
    out_dir: Option<&Path>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunOutcome, String> {
    run_scenario_until(resolved, out_dir, progress, &|| false)
}

/// Like [`run_scenario`], but gives up as soon as `stop` says so (it is asked about every million events
/// and again before the output directory is put in place): nothing is written then, a previous output
/// directory stays as it was, and the error says how far the run got.
pub fn run_scenario_until(
    resolved: &Resolved,
    out_dir: Option<&Path>,
    progress: &mut dyn FnMut(&Progress),
    stop: &dyn Fn() -> bool,
) -> Result<RunOutcome, String> {
    let buckets = Buckets::new(resolved.scenario.output.buckets.clone()).map_err(|e| format!("output.buckets: {e}"))?;
    use_huge_pages(resolved);
    let input = simulation_input(resolved);
    let threads = resolved.scenario.simulation.threads;
    let parts = match threads {
        1 => None,
        n => Some(PartitionedRun::new(input.clone(), n).map_err(|e| format!("simulation.threads = {n}: {e}"))?),
    };
    let started = Instant::now();
    let output = match parts {
        Some(run) => run.run_until(progress, stop),
        None => Simulation::new(input).run_until(progress, stop),
    };
    let mut output = output.map_err(|at| interrupted(&at, started, out_dir))?;
    let wall_seconds = started.elapsed().as_secs_f64();
    output.run.wall_seconds = wall_seconds;
    let mut summary = Summary::compute(&output.flows, &output.ports, &output.switches, &output.run, &buckets);
    summary.extra.insert("plane".into(), plane_summary(resolved, &output));
    summary.extra.insert("switch_notifications".into(), output.counters.notifications.into());
    if output.counters.loop_slots_out_of_ids > 0 {
        // A slot must start about 2^32 / slots flows for this; a slot that stopped must not pass unseen.
        summary.extra.insert("closed_loop_slots_out_of_ids".into(), output.counters.loop_slots_out_of_ids.into());
    }
    if output.counters.rd != sluice_sim::stats::RdCounters::default() {
        summary.extra.insert("receiver_driven".into(), receiver_driven_summary(&output));
    }
    if let Some(host) = crate::host_summary::host_summary(resolved, &output) {
        summary.extra.insert("host".into(), host);
    }
    if let Some(trace) = &output.packet_trace {
        let max_rows = resolved.packet_trace.as_ref().map_or(0, |t| t.max_rows);
        let section = serde_json::json!({ "rows": trace.rows.len(), "skipped": trace.skipped, "max_rows": max_rows });
        summary.extra.insert("packet_trace".into(), section);
    }
    if let Some(groups) = crate::group_summary::group_summary(resolved, &output, &buckets) {
        summary.extra.insert("mix".into(), groups);
    }
    if !output.faults.is_empty() {
        summary.extra.insert("faults".into(), fault_summary(resolved, &output));
    }
    if let Some(loops) = crate::closed_loop_summary::closed_loop_summary(resolved, &output.flows) {
        summary.extra.insert("closed_loops".into(), loops);
    }
    if let Some(trace) = trace_summary(resolved, &output) {
        summary.extra.insert("trace".into(), trace);
    }
    summary.wall_seconds = wall_seconds;
    if let Some(dir) = out_dir {
        let scenario_toml = resolved_toml_at(resolved, dir);
        write_outputs_unless(dir, &outputs(&summary, &output, &scenario_toml), stop).map_err(|e| {
            match e.source.kind() {
                std::io::ErrorKind::Interrupted => format!("interrupted while writing; {}", left_as_it_was(dir)),
                _ => e.to_string(),
            }
        })?;
    }
    Ok(RunOutcome { summary, output, wall_seconds })
}

/// Asks for huge pages for the rest of the process when `resolved` wants them (`simulation.huge_pages`
/// `"on"`, or `"auto"` with enough network state: [`crate::estimate::asks_for_huge_pages`]), and for none
/// from now on when it says `"off"`. Runs side by side in one process (a sweep's) are alike in size, so
/// they agree ([`crate::huge_pages`]).
fn use_huge_pages(resolved: &Resolved) {
    if crate::estimate(resolved).huge_pages {
        // A program without the huge-page allocator (the Python package) runs as it would anyway.
        crate::huge_pages::enable();
    } else if resolved.scenario.simulation.huge_pages == HugePages::Off {
        crate::huge_pages::disable();
    }
}

/// Runs `resolved` into the results directory `dir`, quietly, giving up when `stop` says so: the run
/// function of a configuration sweep.
pub fn run_into(resolved: &Resolved, dir: &Path, stop: &dyn Fn() -> bool) -> Result<(), String> {
    run_scenario_until(resolved, Some(dir), &mut |_| {}, stop).map(|_| ())
}

/// The output files of a run: its summary, its simulator output and the resolved scenario's TOML.
pub fn outputs<'a>(summary: &'a Summary, output: &'a SimOutput, scenario_toml: &'a str) -> Outputs<'a> {
    Outputs {
        summary,
        flows: &output.flows,
        ports: &output.ports,
        switches: &output.switches,
        throughput: &output.throughput,
        traces: &output.traces,
        scenario_toml,
        packets: output.packet_trace.as_ref(),
    }
}

/// The note for a run on more threads than the machine has cores: its parts take turns on the cores
/// and it runs slower than on as many threads as cores (the results are the same).
pub fn threads_note(resolved: &Resolved) -> Option<String> {
    let threads = resolved.scenario.simulation.threads;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (threads > cores).then(|| {
        format!(
            "note: simulation.threads = {threads} on {cores} cores: the parts take turns on the cores, so the run \
             is slower than on {cores} threads (its results are the same)"
        )
    })
}

/// The warning for a run that stopped at its time limit with flows unfinished; `None` for any other run.
pub fn time_limit_warning(resolved: &Resolved, summary: &Summary) -> Option<String> {
    if !summary.run.hit_time_limit {
        return None;
    }
    let o = &summary.overall;
    let limit_ms = resolved.scenario.simulation.time_limit as f64 / sluice_core::PS_PER_MS as f64;
    Some(format!(
        "warning: the run hit its time limit (simulation.time_limit = {limit_ms:.3} ms) with {} of {} flows \
         unfinished ({} of them never started); their FCTs are missing from the results",
        o.unfinished, o.count, o.not_started
    ))
}

/// How far an abandoned run got, for the terminal.
fn interrupted(at: &Progress, started: Instant, out_dir: Option<&Path>) -> String {
    let written = out_dir.map_or_else(|| "nothing was written".to_string(), left_as_it_was);
    format!(
        "interrupted after {:.1} s at simulated {:.3} ms of at most {:.3} ms ({} events, {} of {} flows \
         finished); {written}",
        started.elapsed().as_secs_f64(),
        at.now as f64 / 1e9,
        at.end as f64 / 1e9,
        at.events,
        at.flows_finished,
        at.flows
    )
}

fn left_as_it_was(dir: &Path) -> String {
    format!("nothing was written, {} is as it was before the run", dir.display())
}
