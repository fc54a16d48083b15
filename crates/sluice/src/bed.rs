//! `sluice bed`: the software switch's bed for a scenario (root). `up` builds a namespace per host
//! joined to the root namespace by a veth pair, `run` runs the scenario's fabric in the foreground
//! over those links until SIGINT/SIGTERM or `--duration` and writes `queues.csv` and `throughput.csv`,
//! and `down` removes every bed namespace and link (a crashed run's leftovers too).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_cc::contract::{self, Capabilities};

use serde_json::{json, Value};
use sluice_bed::{exclusive, remove_stale, run as run_loop, sockets, unavailable, Bed, Wait};
use sluice_core::{parse_duration, PS_PER_NS};
use sluice_scenario::{load, resolve, Resolved};
use sluice_switch::records::write_results;
use sluice_switch::{fabric_config, Fabric, FabricConfig, Impairment};

use crate::bed_workload;
use crate::console::{catch_interrupts, interrupted, note, out, Failure};

/// The scenario a bed is for.
#[derive(clap::Args)]
pub struct BedScenario {
    /// The scenario file (TOML): its topology, switch and ECN settings make the fabric.
    scenario: PathBuf,
    /// Override a scenario field (repeatable), as `sluice run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed (RED and impairment randomness).
    #[arg(long)]
    seed: Option<u64>,
}

/// A real datapath `bed run` can drive the scenario's flows on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Datapath {
    /// The sluice UDP transport (`sluice udp send` and `recv` in the hosts' namespaces).
    Udp,
    /// Kernel TCP run by `sluice agent` (`sluice tcp send` and `recv`; needs the `kernel` feature).
    Kernel,
}

impl Datapath {
    fn real(self) -> bed_workload::Real {
        match self {
            Datapath::Udp => bed_workload::Real::Udp,
            Datapath::Kernel => bed_workload::Real::Kernel,
        }
    }

    fn capabilities(self) -> Capabilities {
        match self {
            Datapath::Udp => Capabilities::UDP,
            Datapath::Kernel => Capabilities::KERNEL_TCP,
        }
    }
}

/// `sluice bed` subcommands.
#[derive(clap::Subcommand)]
pub enum BedCommand {
    /// Build the bed's namespaces and links for a scenario and leave them up.
    Up {
        /// The scenario.
        #[command(flatten)]
        scenario: BedScenario,
    },
    /// Run the scenario's switch in the foreground (building the bed if it is not up, and removing it
    /// again at the end), until SIGINT/SIGTERM or --duration; then write queues.csv and throughput.csv.
    Run {
        /// The scenario.
        #[command(flatten)]
        scenario: BedScenario,
        /// Stop after this long ("10s", "500ms"); default: run until interrupted.
        #[arg(long)]
        duration: Option<String>,
        /// Results directory (default: `bed` inside the scenario's output directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Drop or mark packets of a flow where they leave the last switch (repeatable):
        /// `drop|mark udp|tcp SRC:PORT DST:PORT packets=N[,N...]|fraction=F`.
        #[arg(long = "impair", value_name = "SPEC")]
        impairments: Vec<String>,
        /// Never sleep between packets: one core stays busy, timing is the most exact.
        #[arg(long)]
        spin: bool,
        /// Also run the scenario's flows, on this datapath (`udp`, or `kernel` with the `kernel`
        /// feature), and stop when they are done; the results directory then holds fct.csv and
        /// summary.json as well.
        #[arg(long)]
        datapath: Option<Datapath>,
    },
    /// Remove every bed namespace and link.
    Down,
}

/// Runs a `sluice bed` subcommand.
pub fn run(command: BedCommand) -> Result<(), Failure> {
    if let Some(why) = unavailable() {
        return Err(Failure::Error(format!("the bed cannot run here: {why}")));
    }
    match command {
        BedCommand::Up { scenario } => up(&scenario),
        BedCommand::Run { scenario, duration, out: dir, impairments, spin, datapath } => {
            run_bed(&scenario, duration.as_deref(), dir, &impairments, spin, datapath)
        }
        BedCommand::Down => {
            let _lock = exclusive()?;
            let (namespaces, links) = remove_stale();
            out(&format!("bed down: removed {namespaces} namespaces and {links} links\n"))
        }
    }
}

fn config(args: &BedScenario) -> Result<(FabricConfig, PathBuf, Resolved), Failure> {
    let scenario = load(&args.scenario, &args.sets, args.seed).map_err(|e| e.to_string())?;
    let resolved = resolve(&scenario).map_err(|e| e.to_string())?;
    let config = fabric_config(&resolved).map_err(|e| format!("the software switch cannot run this scenario: {e}"))?;
    Ok((config, scenario.output.dir.join("bed"), resolved))
}

/// Refuses a scenario whose algorithm `datapath` cannot run, naming what it lacks, the kernel
/// datapath in a build without it, closed-loop workloads on kernel TCP, and mixes of algorithms, which
/// only the simulator runs so far.
fn check_datapath(resolved: &Resolved, datapath: Datapath) -> Result<(), Failure> {
    if let Some(closed) = resolved.closed_loops.first().filter(|_| datapath == Datapath::Kernel) {
        let key = format!("workload.{}", closed.group);
        let why = "closed-loop workloads run in the simulator and on the UDP datapath; `sluice tcp send` \
                   starts flows from a list only";
        return Err(Failure::Error(resolved.scenario.error_at(&key, why).to_string()));
    }
    if !resolved.faults.is_empty() && datapath == Datapath::Kernel {
        let why = "the switch picks a fault's packets by their sluice flow id, which only the UDP datapath \
                   carries; impair kernel TCP flows by 5-tuple (`--impair`)";
        return Err(Failure::Error(resolved.scenario.error_at("fault.0", why).to_string()));
    }
    if let Some(mix) = &resolved.mix {
        let why = format!(
            "the bed's hosts run one algorithm, {}; a mix of {} runs in the simulator",
            resolved.algorithm.name,
            mix.names(resolved.algorithm.name)
        );
        let key = if resolved.scenario.cc.workloads.is_empty() { "workload" } else { "cc.workloads" };
        return Err(Failure::Error(resolved.scenario.error_at(key, why).to_string()));
    }
    if datapath == Datapath::Kernel && !cfg!(feature = "kernel") {
        return Err(Failure::Error(
            "--datapath kernel needs the kernel datapath: build with `cargo build --release --features bed,kernel`"
                .into(),
        ));
    }
    contract::check(resolved.algorithm, &datapath.capabilities()).map_err(|m| Failure::Error(m.to_string()))
}

/// The `faults` section of summary.json, as the simulator writes it: each `[[fault]]` entry's kind and
/// port (the last hop toward its flow's receiver, where the switch applies it), with the packets it
/// dropped and marked. The scenario's faults are the fabric's first impairments.
fn fault_summary(resolved: &Resolved, stats: &[sluice_switch::ImpairStats]) -> Value {
    let entries = resolved.scenario.faults.iter().zip(&resolved.faults).zip(stats).map(|((spec, at), did)| {
        let port = &resolved.topology.nodes[at.node as usize].name;
        json!({"kind": spec.kind, "port": format!("{port}:p{}", at.port), "dropped": did.dropped, "marked": did.marked})
    });
    Value::Array(entries.collect())
}

/// What the workload's waiter hands back: the outcome, the algorithm and the datapath.
type Waited = (bed_workload::Outcome, String, bed_workload::Real);

/// Starts the scenario's flows on `real`; the returned thread waits for them and then sets `done`,
/// which stops the switch.
fn start_workload(
    real: bed_workload::Real,
    resolved: &Resolved,
    bed: &Bed,
    dir: &std::path::Path,
    done: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<Waited>, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::Error(format!("finding this program: {e}")))?;
    let running = bed_workload::start(real, resolved, bed, dir, &exe)?;
    Ok(std::thread::spawn(move || {
        let (algorithm, real) = (running.algorithm().to_string(), running.real());
        let outcome = running.wait();
        done.store(true, Ordering::SeqCst);
        (outcome, algorithm, real)
    }))
}

fn describe(bed: &Bed) -> String {
    let mut text = String::new();
    for (i, h) in bed.hosts.iter().enumerate() {
        text += &format!("h{i}: namespace {} address {} (switch link {})\n", h.namespace, h.ip(), h.link);
    }
    text + "run a command on a host with `ip netns exec NAMESPACE COMMAND`\n"
}

fn up(args: &BedScenario) -> Result<(), Failure> {
    let (config, _, _) = config(args)?;
    let _lock = exclusive()?;
    let mut bed = Bed::up(&config.hosts)?;
    bed.keep();
    out(&format!("bed up: {} hosts\n{}", bed.hosts.len(), describe(&bed)))
}

/// Runs `scenario`'s flows on the bed over UDP into `dir`, as `sluice bed run SCENARIO --datapath udp`
/// does (`sluice test SCENARIO` without a peer).
pub fn run_udp(scenario: &Path, sets: &[String], seed: Option<u64>, dir: &Path) -> Result<(), Failure> {
    if let Some(why) = unavailable() {
        return Err(Failure::Error(format!("the bed cannot run here: {why}")));
    }
    let args = BedScenario { scenario: scenario.to_path_buf(), sets: sets.to_vec(), seed };
    run_bed(&args, None, Some(dir.to_path_buf()), &[], false, Some(Datapath::Udp))
}

fn run_bed(
    args: &BedScenario,
    duration: Option<&str>,
    dir: Option<PathBuf>,
    impairments: &[String],
    spin: bool,
    datapath: Option<Datapath>,
) -> Result<(), Failure> {
    let (mut config, default_dir, resolved) = config(args)?;
    if let Some(d) = datapath {
        check_datapath(&resolved, d)?;
    }
    for spec in impairments {
        config.impairments.push(spec.parse::<Impairment>().map_err(|e| format!("--impair: {e}"))?);
    }
    let limit = duration
        .map(|d| parse_duration(d).map(|ps| Duration::from_nanos(ps / PS_PER_NS)))
        .transpose()
        .map_err(|e| format!("--duration: {e}"))?;
    catch_interrupts()?;
    let _lock = exclusive()?;
    let bed = match Bed::attach(&config.hosts) {
        Ok(bed) => bed,
        Err(_) => Bed::up(&config.hosts)?,
    };
    note(&format!(
        "bed: {} hosts; switching until interrupted{}",
        bed.hosts.len(),
        match duration {
            Some(d) => format!(" or after {d}"),
            None => String::new(),
        }
    ));
    note(describe(&bed).trim_end());
    let sockets = sockets(&bed).map_err(|e| format!("opening the switch's links: {e}"))?;
    let mut fabric = Fabric::new(config);
    let wait = if spin { Wait::Spin } else { Wait::Poll };
    let dir = dir.unwrap_or(default_dir);
    let done = Arc::new(AtomicBool::new(false));
    let workload = match datapath {
        Some(d) => Some(start_workload(d.real(), &resolved, &bed, &dir, done.clone())?),
        None => None,
    };
    let stop = || interrupted() || done.load(Ordering::SeqCst);
    let stats = run_loop(&mut fabric, &sockets, wait, limit, &stop).map_err(|e| format!("switch: {e}"))?;
    write_results(&mut fabric, &dir, stats.elapsed_ns * PS_PER_NS).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(waiter) = workload {
        let (outcome, algorithm, real) =
            waiter.join().map_err(|_| Failure::Error("the workload's waiter panicked".into()))?;
        let faults = fault_summary(&resolved, &fabric.impairment_stats());
        let signal = fabric.signal_counters().map_or(Value::Null, |c| {
            json!({ "writes": c.writes, "no_field": c.no_field, "feedback": c.feedback, "no_feedback": c.no_feedback })
        });
        let switch = bed_workload::SwitchFigures { faults, signal, token_limiters: fabric.token_counts() };
        bed_workload::merge(real, &dir, &algorithm, &outcome, switch)?;
        if interrupted() {
            // The hosts' senders were interrupted too (one process group) and wrote what they had.
            return Err(Failure::Interrupted(format!(
                "interrupted: traffic stopped; the results so far are in {} (marked partial)",
                dir.display()
            )));
        }
        if let Some(first) = outcome.failures.first() {
            return Err(Failure::Error(format!("{} sender(s) failed; {first}", outcome.failures.len())));
        }
    }
    let c = fabric.counters();
    out(&format!(
        "bed run: {} frames in, {} out over {:.3} s; {} unroutable, {} without a free slot, {} refused by the kernel; \
         results in {}\n",
        stats.rx_frames,
        stats.tx_frames,
        stats.elapsed_ns as f64 * 1e-9,
        c.unroutable,
        c.no_slot,
        stats.tx_dropped,
        dir.display()
    ))
}
