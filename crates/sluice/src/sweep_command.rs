//! `sluice sweep`: checks a sweep file, runs its runs on local cores with one progress bar, and writes
//! the sweep directory (the table, the best configuration and every run's results).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sluice_sweep::{collect, run_local, write, Finished, Outcome, Progress, Sweep, SweepOptions};

use crate::console::{catch_interrupts, interrupted, note, out, Failure};

/// The arguments of `sluice sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The sweep file (TOML): a base scenario, fixed settings, axes, seeds (see README).
    pub sweep: PathBuf,
    /// Output directory (default: `results/NAME`, NAME being the sweep's name).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs at a time, at least 1 (default: the number of cores).
    #[arg(long, short, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// The objective that picks the best configuration, e.g. "p99(slowdown, <10KB)" or
    /// "max goodput_gbps" (overrides the file's `best`).
    #[arg(long)]
    pub best: Option<String>,
    /// A constraint the best configuration must satisfy, e.g. "unfinished == 0" (repeatable; overrides
    /// the file's `subject_to`).
    #[arg(long = "subject-to", value_name = "CONSTRAINT")]
    pub subject_to: Vec<String>,
    /// Run a sweep of more than 10,000 runs.
    #[arg(long)]
    pub yes: bool,
    /// Print the runs (their settings and seeds) without running them.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar and no summary; errors only.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run even if the estimated memory of the runs at a time exceeds what the machine has available.
    #[arg(long)]
    pub force: bool,
    /// Run the runs as Ray tasks on the Ray cluster at ADDRESS ("auto": the cluster this machine belongs
    /// to; HOST:PORT; "local": start one here), through the sluice Python package (SLUICE_PYTHON names
    /// the interpreter that has it and Ray; default python3).
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
}

/// Runs `sluice sweep`.
pub fn sweep(args: SweepArgs) -> Result<(), Failure> {
    let options = SweepOptions { best: args.best.clone(), subject_to: args.subject_to.clone(), yes: args.yes };
    let sweep = Sweep::load(&args.sweep, &options).map_err(|e| Failure::Error(e.to_string()))?;
    if args.dry_run {
        return out(&dry_run(&sweep));
    }
    if let Some(address) = &args.ray {
        return on_ray(&args, address);
    }
    let dir = args.out.clone().unwrap_or_else(|| sweep.default_out());
    let jobs = jobs_that_fit(&sweep, args.jobs, args.force, args.quiet)?;
    if !args.quiet {
        note(&format!(
            "sweep {}: {} runs of {}, {jobs} at a time",
            sweep.name,
            sweep.points.len(),
            sweep.scenario_path.display()
        ));
    }
    catch_interrupts()?;
    let bar = progress_bar(sweep.points.len(), args.quiet);
    let log_lines = !args.quiet && !std::io::stderr().is_terminal();
    let report = |p: &Progress| {
        bar.set_position(p.done as u64);
        bar.set_message(format!("{} failed", p.failed));
        if log_lines {
            note(&progress_line(&sweep, p));
        }
    };
    let outcomes = run_local(&sweep, &dir, jobs, &crate::run_into, &interrupted, &report);
    bar.finish_and_clear();
    if interrupted() {
        let done = outcomes.iter().filter(|o| matches!(o, Outcome::Ran(_) | Outcome::Reused(_))).count();
        return Err(Failure::Interrupted(format!(
            "sweep interrupted with {done} of {} runs complete; their results are kept under {} and running \
             the same command again resumes the sweep",
            outcomes.len(),
            dir.join("runs").display()
        )));
    }
    let finished = collect(&sweep, &outcomes, &dir);
    write(&sweep, &finished, &dir)?;
    if !args.quiet {
        out(&summary(&sweep, &finished, &outcomes, &dir))?;
    }
    match finished.failures.len() {
        0 => Ok(()),
        n => Err(Failure::Partial(failures(&finished, n))),
    }
}

/// Hands the checked sweep to the Python package's Ray driver (`python -m sluice.ray_sweep`), which runs
/// each run as a Ray task and writes the same files a local sweep writes.
fn on_ray(args: &SweepArgs, address: &str) -> Result<(), Failure> {
    let python = std::env::var("SLUICE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let probe = std::process::Command::new(&python).args(["-c", "import sluice._sweep, ray"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err(Failure::Error(format!(
            "--ray needs the sluice Python package and Ray in {python}: `pip install ./python ray`, or set \
             SLUICE_PYTHON to the interpreter that has them"
        )));
    }
    let mut command = std::process::Command::new(&python);
    command.args(["-m", "sluice.ray_sweep"]).arg(&args.sweep).args(["--address", address]);
    if let Some(dir) = &args.out {
        command.arg("--out").arg(dir);
    }
    if let Some(best) = &args.best {
        command.args(["--best", best]);
    }
    for constraint in &args.subject_to {
        command.args(["--subject-to", constraint]);
    }
    command.args(args.yes.then_some("--yes")).args(args.quiet.then_some("--quiet"));
    let status = command.status().map_err(|e| Failure::Error(format!("cannot start {python}: {e}")))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(1) => Err(Failure::Partial("some runs of the Ray sweep failed (listed above)".into())),
        Some(130) | None => Err(Failure::Interrupted("the Ray sweep was interrupted; finished runs are kept".into())),
        Some(code) => Err(Failure::Error(format!("the Ray sweep failed (exit status {code}, see above)"))),
    }
}

/// The run count and each run's settings, one per line.
fn dry_run(sweep: &Sweep) -> String {
    let mut text = format!("sweep {}: {} runs of {}\n", sweep.name, sweep.points.len(), sweep.scenario_path.display());
    for (i, point) in sweep.points.iter().enumerate() {
        let mut args: Vec<String> = point.sets().iter().map(|s| format!("--set '{s}'")).collect();
        args.extend(point.seed.map(|s| format!("--seed {s}")));
        text += &format!("{i}: {}\n", args.join(" "));
    }
    text
}

/// Lowers the number of runs at a time until their estimated memory fits; refuses when one run alone
/// does not fit, unless forced.
fn jobs_that_fit(sweep: &Sweep, wanted: Option<u32>, force: bool, quiet: bool) -> Result<usize, Failure> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = wanted.map_or(cores, |j| j as usize).min(sweep.points.len().max(1));
    if force {
        return Ok(jobs);
    }
    let first = sweep.prepare(0).map_err(Failure::Error)?;
    let estimate = crate::estimate(&first.resolved);
    let Some(available) = crate::estimate::available_memory() else { return Ok(jobs) };
    crate::estimate::check_memory(&estimate, Some(available)).map_err(Failure::Error)?;
    let fit = (available / estimate.memory_bytes().max(1)).max(1) as usize;
    if fit < jobs && !quiet {
        note(&format!(
            "running {fit} at a time, not {jobs}: each run needs about {} MB",
            estimate.memory_bytes() >> 20
        ));
    }
    Ok(jobs.min(fit))
}

fn progress_bar(total: usize, quiet: bool) -> ProgressBar {
    let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
    let bar = ProgressBar::with_draw_target(Some(total as u64), target);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {msg}, {elapsed} elapsed, ETA {eta}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message("0 failed");
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

/// One line per finished run, for logs (standard error that is not a terminal).
fn progress_line(sweep: &Sweep, p: &Progress) -> String {
    let what = match p.outcome {
        Outcome::Ran(hash) => format!("ok runs/{hash}"),
        Outcome::Reused(hash) => format!("reused runs/{hash}"),
        Outcome::Failed(_, e) => format!("failed: {e}"),
        Outcome::Stopped => "stopped".to_string(),
    };
    let point = &sweep.points[p.index];
    let seed = point.seed.map_or(String::new(), |s| format!(" seed={s}"));
    format!("[{}/{}] run {}: {}{seed}: {what}", p.done, p.total, p.index, point.sets().join(" "))
}

fn summary(sweep: &Sweep, finished: &Finished, outcomes: &[Outcome], dir: &std::path::Path) -> String {
    let ran = outcomes.iter().filter(|o| matches!(o, Outcome::Ran(_))).count();
    let reused = outcomes.iter().filter(|o| matches!(o, Outcome::Reused(_))).count();
    let mut text = format!(
        "{} runs: {ran} ran, {reused} reused, {} failed\ntable: {}\n",
        outcomes.len(),
        finished.failures.len(),
        dir.join("sweep.csv").display()
    );
    match (&sweep.objective, &finished.best) {
        (Some(o), Some(best)) => {
            let settings: Vec<String> = best.settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            text += &format!(
                "best ({} {}): {} at {}\nbest scenario: {}\n",
                o.goal.name(),
                o.expr_text(),
                best.value,
                if settings.is_empty() { "the base scenario".to_string() } else { settings.join(", ") },
                dir.join("best.toml").display()
            );
        }
        (Some(_), None) => text += "best: no configuration satisfies the constraints with a value for the objective\n",
        (None, _) => {}
    }
    text
}

fn failures(finished: &Finished, n: usize) -> String {
    let shown: Vec<String> = finished.failures.iter().take(5).map(|(i, e)| format!("  run {i}: {e}")).collect();
    let more =
        if n > 5 { format!("\n  ... and {} more (see the error column of sweep.csv)", n - 5) } else { String::new() };
    format!("{n} of {} runs failed:\n{}{more}", finished.table.rows.len(), shown.join("\n"))
}
