//! `sluice`: run, check and list congestion-control scenarios; benchmark the simulator; run the agent that
//! drives Linux kernel TCP.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sluice::console::{catch_interrupts, interrupted, note, out, Failure};
use sluice::progress::{ProgressLine, RouteSetupLine};
use sluice::{run_scenario, run_scenario_until};
use sluice_scenario::{list_text, load, resolve_with_progress, resolved_toml, Resolved};

#[cfg(feature = "kernel")]
use sluice::agent;
#[cfg(feature = "bed")]
use sluice::bed;

#[derive(Parser)]
#[command(name = "sluice", version, about = "Programmable congestion control for datacenter networks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ScenarioArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Override a scenario field, e.g. `--set topology.k=4 --set cc.params.g=0.01` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario, print a summary and write results.
    Run {
        #[command(flatten)]
        args: ScenarioArgs,
        /// Output directory (default: the scenario's output.dir, else results/<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// No progress line and no table; errors only.
        #[arg(long, short)]
        quiet: bool,
        /// Run even if the estimated memory exceeds what the machine has available.
        #[arg(long)]
        force: bool,
    },
    /// Run a configuration sweep on local cores: one table of metrics per run, and the best configuration.
    Sweep(sluice::sweep_command::SweepArgs),
    /// Validate a scenario and print it with every default filled in.
    Check {
        #[command(flatten)]
        args: ScenarioArgs,
    },
    /// List algorithms, workloads and topologies.
    List,
    /// Time the simulator on a scenario: wall time, events/s, packet-hops/s, peak memory.
    Bench {
        #[command(flatten)]
        args: ScenarioArgs,
        /// Repetitions (the best is reported with all of them).
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Run even if the estimated memory exceeds what the machine has available.
        #[arg(long)]
        force: bool,
    },
    /// Write one self-contained HTML report of charts for result directories (overlaid) or a sweep.
    Report {
        /// Result directories of `sluice run`, or one sweep directory.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// The HTML file (default: report.html in the single DIR, else in the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Name a result directory in legends instead of what differs between the runs (one per DIR).
        #[arg(long = "label", value_name = "NAME")]
        labels: Vec<String>,
    },
    /// Results directories side by side, whatever datapath wrote them (the simulator, the bed's UDP
    /// datapath, ...): flows, slowdowns, sampled ports' throughput and queues, marks and drops.
    Compare {
        /// Results directories.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Name a directory's column (one per DIR; default: the directory's name).
        #[arg(long = "label", value_name = "NAME")]
        labels: Vec<String>,
    },
    /// The UDP datapath: send flows with an algorithm of the library, or receive and acknowledge them.
    Udp {
        #[command(subcommand)]
        command: sluice::udp::UdpCommand,
    },
    /// A scenario's flows as real UDP traffic: to a `sluice test serve` host (--peer), or on the
    /// software switch's bed; writes the simulator's files. `sluice test serve` receives tests.
    Test(Box<sluice::test_command::TestArgs>),
    /// Flows over kernel TCP with a chosen congestion control (the kernel datapath's traffic, for
    /// `sluice bed run --datapath kernel`): send a flow list, or receive.
    Tcp {
        #[command(subcommand)]
        command: sluice::tcp::TcpCommand,
    },
    /// Drive Linux kernel TCP: register sluice's BPF congestion control and run the library's algorithms
    /// for the flows that choose it (root).
    #[cfg(feature = "kernel")]
    Agent(agent::AgentArgs),
    /// Stands in for `agent` in a build without the kernel datapath, to say so.
    #[cfg(not(feature = "kernel"))]
    #[command(hide = true)]
    Agent {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        _args: Vec<String>,
    },
    /// The software switch's bed: a namespace per host of a scenario, joined by one switch process that
    /// gives real datapaths the scenario's delay, shaping, ECN marking and INT (root).
    #[cfg(feature = "bed")]
    #[command(subcommand)]
    Bed(bed::BedCommand),
    /// Stands in for `bed` in a build without it, to say so.
    #[cfg(not(feature = "bed"))]
    #[command(hide = true)]
    Bed {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        _args: Vec<String>,
    },
}

/// Loads and resolves the scenario; a route search that takes over a second shows progress unless `quiet`.
fn load_resolved(args: &ScenarioArgs, quiet: bool) -> Result<Resolved, String> {
    let scenario = load(&args.scenario, &args.sets, args.seed).map_err(|e| e.to_string())?;
    let mut line = RouteSetupLine::new(quiet);
    let resolved = resolve_with_progress(&scenario, &mut |p| line.update(p));
    line.finish();
    resolved.map_err(|e| e.to_string())
}

fn output_dir(resolved: &Resolved, out: Option<PathBuf>) -> PathBuf {
    out.unwrap_or_else(|| {
        let dir = &resolved.scenario.output.dir;
        if dir.as_os_str().is_empty() {
            Path::new("results").join(&resolved.scenario.name)
        } else {
            dir.clone()
        }
    })
}

/// Refuses a run whose estimated memory exceeds the machine's available memory, unless forced.
fn refuse_if_too_large(resolved: &Resolved, force: bool) -> Result<(), String> {
    if force {
        return Ok(());
    }
    sluice::estimate::check_memory(&sluice::estimate(resolved), sluice::estimate::available_memory())
}

fn run(args: ScenarioArgs, out_dir: Option<PathBuf>, quiet: bool, force: bool) -> Result<(), Failure> {
    let resolved = load_resolved(&args, quiet)?;
    refuse_if_too_large(&resolved, force)?;
    let dir = output_dir(&resolved, out_dir);
    if !quiet {
        note(&format!(
            "{}: {}, {}, {}",
            resolved.scenario.name,
            resolved.topology.describe(),
            flows_text(&resolved),
            resolved.algorithm.name
        ));
    }
    if let Some(text) = sluice::threads_note(&resolved).filter(|_| !quiet) {
        note(&text);
    }
    catch_interrupts()?;
    let mut line = ProgressLine::new(quiet);
    let outcome = run_scenario_until(&resolved, Some(&dir), &mut |p| line.update(p), &interrupted);
    line.finish();
    let outcome = outcome.map_err(|message| match interrupted() {
        true => Failure::Interrupted(message),
        false => Failure::Error(message),
    })?;
    // Partial results must never pass unnoticed, not even in quiet runs.
    if let Some(warning) = sluice::time_limit_warning(&resolved, &outcome.summary) {
        note(&warning);
    }
    if let Some(warning) = sluice::trace_cap_warning(&outcome.summary) {
        note(&warning);
    }
    if !quiet {
        out(&sluice_results::render_table(&outcome.summary))?;
        out(&format!("results: {}\n", dir.display()))?;
    }
    Ok(())
}

fn bench(args: ScenarioArgs, repeat: u32, force: bool) -> Result<(), Failure> {
    let resolved = load_resolved(&args, false)?;
    refuse_if_too_large(&resolved, force)?;
    let threads = match resolved.scenario.simulation.threads {
        1 => String::new(),
        n => format!(", {n} threads"),
    };
    out(&format!(
        "scenario {} ({}, {}, {}{threads})\n",
        resolved.scenario.name,
        resolved.topology.describe(),
        flows_text(&resolved),
        resolved.algorithm.name
    ))?;
    if let Some(text) = sluice::threads_note(&resolved) {
        note(&text);
    }
    let (mut best, mut peak_packets) = (f64::INFINITY, 0);
    for i in 0..repeat.max(1) {
        let outcome = run_scenario(&resolved, None, &mut |_| {})?;
        let o = &outcome.output;
        let wall = outcome.wall_seconds;
        best = best.min(wall);
        peak_packets = o.peak_packets;
        let finished = o.flows.iter().filter(|f| f.finish.is_some()).count();
        out(&format!(
            "run {}: wall {:.3} s | simulated {:.3} ms | {} events ({:.2}M/s) | {} packet-hops ({:.2}M/s) | flows finished {}/{}\n",
            i + 1,
            wall,
            o.run.sim_time as f64 / 1e9,
            o.counters.events,
            o.counters.events as f64 / wall / 1e6,
            o.counters.packet_hops,
            o.counters.packet_hops as f64 / wall / 1e6,
            finished,
            o.flows.len()
        ))?;
        if let Some(b) = o.balance {
            out(&format!(
                "  parts: {} | windows {} | events of each window's busiest part, summed {} | speed-up bound {:.2}x\n",
                b.parts,
                b.windows,
                b.busiest,
                b.bound(o.counters.events)
            ))?;
        }
    }
    let rss = peak_rss().unwrap_or_else(|| "unknown".into());
    let huge = if sluice::huge_pages::enabled() { "on" } else { "off" };
    out(&format!(
        "best wall {best:.3} s | peak RSS {rss} | packets alive at the peak {peak_packets} | huge pages {huge}\n"
    ))
}

/// The scenario's flows in words: how many are generated, and the closed loops' slots that start more
/// during the run.
fn flows_text(resolved: &Resolved) -> String {
    let slots: usize = resolved.closed_loops.iter().map(|c| c.slots.len()).sum();
    match slots {
        0 => format!("{} flows", resolved.flows.len()),
        _ => format!("{} flows ({slots} closed-loop slots start more as theirs complete)", resolved.flows.len()),
    }
}

/// Peak resident memory of this process (VmHWM from /proc/self/status, Linux).
fn peak_rss() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(format!("{:.1} MB", kb / 1024.0))
}

/// Parses the command line; help, version and usage errors are printed here and end the program.
fn parse() -> Result<Cli, ExitCode> {
    Cli::try_parse().map_err(|e| {
        let code = ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        match e.print() {
            Err(io) if !e.use_stderr() => Failure::of_stdout(io).report(),
            _ => code,
        }
    })
}

/// `sluice check`: the run's estimated size on stderr, the resolved scenario (valid TOML) on stdout.
fn check(args: ScenarioArgs) -> Result<(), Failure> {
    let resolved = load_resolved(&args, false)?;
    note(&sluice::estimate(&resolved).describe());
    out(&resolved_toml(&resolved))
}

/// `sluice compare`: the figures of every directory as one table on stdout.
fn compare(dirs: &[PathBuf], labels: &[String]) -> Result<(), Failure> {
    if !labels.is_empty() && labels.len() != dirs.len() {
        return Err(Failure::Error(format!(
            "{} --label for {} directories: give one per DIR or none",
            labels.len(),
            dirs.len()
        )));
    }
    let mut columns = Vec::new();
    for (k, dir) in dirs.iter().enumerate() {
        let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
        let label = labels.get(k).cloned().unwrap_or(name);
        columns.push(sluice_report::compare::figures(dir, &label).map_err(|e| Failure::Error(e.to_string()))?);
    }
    out(&sluice_report::compare::render(&columns))
}

fn dispatch(command: Command) -> Result<(), Failure> {
    match command {
        Command::Run { args, out, quiet, force } => run(args, out, quiet, force),
        Command::Check { args } => check(args),
        Command::Sweep(args) => sluice::sweep_command::sweep(args),
        Command::List => out(&list_text()),
        Command::Bench { args, repeat, force } => bench(args, repeat, force),
        Command::Report { dirs, out: path, labels } => out(&format!(
            "report: {}\n",
            sluice_report::write_report(&dirs, path.as_deref(), &labels).map_err(String::from)?.display()
        )),
        Command::Compare { dirs, labels } => compare(&dirs, &labels),
        Command::Udp { command } => sluice::udp::run(command),
        Command::Tcp { command } => sluice::tcp::run(command),
        Command::Test(args) => sluice::test_command::run(*args),
        #[cfg(feature = "kernel")]
        Command::Agent(args) => Ok(agent::run(args)?),
        #[cfg(not(feature = "kernel"))]
        Command::Agent { .. } => Err(Failure::Error(
            "this sluice was built without the kernel datapath. Install its build packages (clang, bpftool, \
             libbpf, libelf: `sudo ./scripts/setup.sh`) and build it with `cargo build --release --features \
             kernel`; then run `sudo target/release/sluice agent ...`"
                .into(),
        )),
        #[cfg(feature = "bed")]
        Command::Bed(command) => bed::run(command),
        #[cfg(not(feature = "bed"))]
        Command::Bed { .. } => Err(Failure::Error(
            "this sluice was built without the software switch's bed: build it with `cargo build --release \
             --features bed` and run `sudo target/release/sluice bed ...`"
                .into(),
        )),
    }
}

/// The system allocator, advising the kernel to use huge pages for the heap of a large run
/// ([`sluice::huge_pages`]).
#[global_allocator]
static ALLOCATOR: sluice::huge_pages::HugePageHeap = sluice::huge_pages::HugePageHeap;

fn main() -> ExitCode {
    match parse() {
        Ok(cli) => dispatch(cli.command).map_or_else(Failure::report, |()| ExitCode::SUCCESS),
        Err(code) => code,
    }
}
