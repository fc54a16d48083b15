//! Running a sweep's runs on local cores: a fixed number of worker threads take runs in table order;
//! a run whose directory already holds results is reused, so an interrupted sweep resumes where it
//! stopped. A failed run is recorded and the sweep goes on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sluice_scenario::Resolved;

use crate::sweep::Sweep;

/// Runs one resolved scenario, writing its results directory atomically into the given path; gives up
/// (writing nothing) when the closure says stop.
pub type RunFn<'a> = dyn Fn(&Resolved, &Path, &dyn Fn() -> bool) -> Result<(), String> + Sync + 'a;

/// What became of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and its results are in `runs/<hash>`.
    Ran(String),
    /// Its results were already there (an earlier sweep, or another point with the same scenario).
    Reused(String),
    /// It failed: its hash if it got that far, and why.
    Failed(Option<String>, String),
    /// It did not run: the sweep was stopped.
    Stopped,
}

impl Outcome {
    /// The run's hash, if known.
    pub fn hash(&self) -> Option<&str> {
        match self {
            Outcome::Ran(h) | Outcome::Reused(h) | Outcome::Failed(Some(h), _) => Some(h),
            Outcome::Failed(None, _) | Outcome::Stopped => None,
        }
    }
}

/// Progress of a sweep, reported after each run.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The run that just ended.
    pub index: usize,
    /// What became of it.
    pub outcome: &'a Outcome,
    /// Runs ended so far (reused included).
    pub done: usize,
    /// Runs failed so far.
    pub failed: usize,
    /// Runs in the sweep.
    pub total: usize,
}

/// The directory of the run with `hash` under the sweep's output directory.
pub fn run_dir(out: &Path, hash: &str) -> PathBuf {
    out.join("runs").join(hash)
}

/// Whether `dir` holds a complete run that this build can read: results directories appear whole, so a
/// `summary.json` tells, unless it is of another format (written by an older sluice), which runs again.
pub fn complete(dir: &Path) -> bool {
    let text = std::fs::read_to_string(dir.join("summary.json"));
    text.is_ok_and(|t| serde_json::from_str::<sluice_results::Summary>(&t).is_ok())
}

/// Runs every run of `sweep` with `jobs` threads, results under `out/runs/`. `stop` is polled by
/// running simulations; once it says stop, no further run starts and the ones running give up.
pub fn run_local(
    sweep: &Sweep,
    out: &Path,
    jobs: usize,
    run: &RunFn,
    stop: &(dyn Fn() -> bool + Sync),
    progress: &(dyn Fn(&Progress) + Sync),
) -> Vec<Outcome> {
    let total = sweep.points.len();
    let next = AtomicUsize::new(0);
    let claims: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    let outcomes = Mutex::new(vec![Outcome::Stopped; total]);
    let counts = Mutex::new((0usize, 0usize));
    let worker = || loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        if index >= total || stop() {
            return;
        }
        let outcome = run_one(sweep, index, out, run, stop, &claims);
        if outcome == Outcome::Stopped {
            return;
        }
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        c.0 += 1;
        c.1 += usize::from(matches!(outcome, Outcome::Failed(..)));
        progress(&Progress { index, outcome: &outcome, done: c.0, failed: c.1, total });
        drop(c);
        outcomes.lock().unwrap_or_else(|e| e.into_inner())[index] = outcome;
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(worker);
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    settle_duplicates(&mut outcomes, out);
    outcomes
}

/// Resolves, names and runs one point, unless its results exist or another worker has it.
fn run_one(
    sweep: &Sweep,
    index: usize,
    out: &Path,
    run: &RunFn,
    stop: &dyn Fn() -> bool,
    claims: &Mutex<HashMap<String, usize>>,
) -> Outcome {
    let prepared = match sweep.prepare(index) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(None, e),
    };
    let dir = run_dir(out, &prepared.hash);
    if complete(&dir) {
        return Outcome::Reused(prepared.hash);
    }
    // Two points can resolve to one scenario (a swept value equal to the default); run it once.
    if claims.lock().unwrap_or_else(|e| e.into_inner()).insert(prepared.hash.clone(), index).is_some() {
        return Outcome::Reused(prepared.hash);
    }
    match run(&prepared.resolved, &dir, stop) {
        Ok(()) => Outcome::Ran(prepared.hash),
        Err(_) if stop() => Outcome::Stopped,
        Err(e) => Outcome::Failed(Some(prepared.hash), e),
    }
}

/// A point reused from another point of this sweep is only as good as that run: if it failed, so did
/// this one.
pub fn settle_duplicates(outcomes: &mut [Outcome], out: &Path) {
    for outcome in outcomes.iter_mut() {
        if let Outcome::Reused(hash) = outcome {
            if !complete(&run_dir(out, hash)) {
                *outcome = Outcome::Failed(Some(hash.clone()), "the same scenario as another run, which failed".into());
            }
        }
    }
}
