//! Sweeps from Python: a local sweep on threads (the command line's), and the steps a Ray driver takes to
//! run the same sweep as Ray tasks: prepare each run, run one on a worker, write its files, finish.

use std::path::PathBuf;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sluice_scenario::{load_str, resolve, resolved_toml_at};
use sluice_sweep::exec::{complete, run_dir, settle_duplicates};
use sluice_sweep::{collect, run_local, write, Finished, Outcome, Sweep, SweepOptions};

use crate::{detached, RunError};

pyo3::create_exception!(
    sluice,
    SweepError,
    PyValueError,
    "A sweep file or picking rule that cannot be used; its text is the command line's `file:line: message`."
);

/// A run made ready for a worker, as Python receives it: `(hash, scenario text, error, complete)`.
type PreparedRun = (Option<String>, Option<String>, Option<String>, bool);

/// A checked sweep and its output directory.
#[pyclass(frozen, module = "sluice._native")]
pub struct SweepPlan {
    sweep: Sweep,
    out: PathBuf,
}

#[pymethods]
impl SweepPlan {
    /// Reads and checks the sweep file as `sluice sweep` does; `out` defaults to `results/<name>`.
    #[new]
    #[pyo3(signature = (path, out=None, best=None, subject_to=None, yes=false))]
    fn new(
        path: PathBuf,
        out: Option<PathBuf>,
        best: Option<String>,
        subject_to: Option<Vec<String>>,
        yes: bool,
    ) -> PyResult<SweepPlan> {
        let options = SweepOptions { best, subject_to: subject_to.unwrap_or_default(), yes };
        let sweep = Sweep::load(&path, &options).map_err(|e| SweepError::new_err(e.to_string()))?;
        let out = out.unwrap_or_else(|| sweep.default_out());
        Ok(SweepPlan { sweep, out })
    }

    /// The sweep's name.
    #[getter]
    fn name(&self) -> &str {
        &self.sweep.name
    }

    /// The output directory.
    #[getter]
    fn out(&self) -> PathBuf {
        self.out.clone()
    }

    /// The number of runs.
    #[getter]
    fn runs(&self) -> usize {
        self.sweep.points.len()
    }

    /// The name scenario files of the runs go by (the base scenario's path).
    #[getter]
    fn origin(&self) -> String {
        self.sweep.scenario_path.to_string_lossy().into_owned()
    }

    /// Runs the whole sweep on `jobs` local threads (default: the cores) with the GIL released, writes
    /// the table and returns what [`SweepPlan::finish`] returns. Ctrl-C stops it (KeyboardInterrupt) with
    /// the finished runs kept.
    #[pyo3(signature = (jobs=None))]
    fn run_local<'py>(&self, py: Python<'py>, jobs: Option<usize>) -> PyResult<Bound<'py, PyDict>> {
        if jobs == Some(0) {
            return Err(PyValueError::new_err("jobs must be at least 1"));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = jobs.unwrap_or(cores);
        let finished = detached(py, |stop| {
            let outcomes = run_local(&self.sweep, &self.out, jobs, &sluice::run_into, stop, &|_| {});
            (!stop()).then(|| self.finish_outcomes(outcomes))
        })?;
        match finished {
            Some(result) => result.map_err(RunError::new_err)?.into_python(py, &self.sweep),
            None => Err(pyo3::exceptions::PyKeyboardInterrupt::new_err("sweep interrupted; finished runs are kept")),
        }
    }

    /// Run `index` made ready for a worker: `(hash, scenario text, error, complete)`. The text is the
    /// resolved scenario as its run directory will hold it; `complete` says the directory already holds
    /// its results. A run whose scenario does not resolve has only `error`.
    fn prepare(&self, py: Python<'_>, index: usize) -> PyResult<PreparedRun> {
        if index >= self.sweep.points.len() {
            return Err(PyIndexError::new_err(format!("run {index} of a sweep of {}", self.sweep.points.len())));
        }
        Ok(py.detach(|| match self.sweep.prepare(index) {
            Ok(p) => {
                let dir = run_dir(&self.out, &p.hash);
                let text = resolved_toml_at(&p.resolved, &dir);
                (Some(p.hash), Some(text), None, complete(&dir))
            }
            Err(e) => (None, None, Some(e), false),
        }))
    }

    /// The directory of the run with `hash`.
    fn run_dir(&self, hash: &str) -> PathBuf {
        run_dir(&self.out, hash)
    }

    /// Writes a run's files (file name to bytes, as [`run_point`] returns them) into its directory,
    /// atomically.
    fn write_run(&self, py: Python<'_>, hash: &str, files: Vec<(String, Vec<u8>)>) -> PyResult<()> {
        let dir = run_dir(&self.out, hash);
        py.detach(|| sluice_results::write_rendered(&dir, &files)).map_err(|e| RunError::new_err(e.to_string()))
    }

    /// Builds the table from the runs' directories, picks the best configuration and writes the sweep's
    /// files. `outcomes` has one `(status, hash, error)` per run, status `ran`, `reused` or `failed`.
    /// Returns a dict: `dir`, `runs`, `ran`, `reused`, `failed` (a list of `(run, error)`) and `best`.
    fn finish<'py>(
        &self,
        py: Python<'py>,
        outcomes: Vec<(String, Option<String>, Option<String>)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if outcomes.len() != self.sweep.points.len() {
            let message = format!("{} outcomes for a sweep of {} runs", outcomes.len(), self.sweep.points.len());
            return Err(PyValueError::new_err(message));
        }
        let outcomes = outcomes.into_iter().map(outcome).collect::<PyResult<Vec<_>>>()?;
        let result = py.detach(|| self.finish_outcomes(outcomes)).map_err(RunError::new_err)?;
        result.into_python(py, &self.sweep)
    }
}

/// One outcome from Python's `(status, hash, error)`.
fn outcome((status, hash, error): (String, Option<String>, Option<String>)) -> PyResult<Outcome> {
    match (status.as_str(), hash) {
        ("ran", Some(h)) => Ok(Outcome::Ran(h)),
        ("reused", Some(h)) => Ok(Outcome::Reused(h)),
        ("failed", h) => Ok(Outcome::Failed(h, error.unwrap_or_else(|| "failed".to_string()))),
        (other, _) => {
            Err(PyValueError::new_err(format!("outcome {other:?}: expected ran, reused or failed with a hash")))
        }
    }
}

/// A finished sweep, and how its runs went.
struct Done {
    finished: Finished,
    dir: PathBuf,
    ran: usize,
    reused: usize,
}

impl SweepPlan {
    fn finish_outcomes(&self, mut outcomes: Vec<Outcome>) -> Result<Done, String> {
        settle_duplicates(&mut outcomes, &self.out);
        let finished = collect(&self.sweep, &outcomes, &self.out);
        write(&self.sweep, &finished, &self.out)?;
        let ran = outcomes.iter().filter(|o| matches!(o, Outcome::Ran(_))).count();
        let reused = outcomes.iter().filter(|o| matches!(o, Outcome::Reused(_))).count();
        Ok(Done { finished, dir: self.out.clone(), ran, reused })
    }
}

impl Done {
    fn into_python<'py>(self, py: Python<'py>, sweep: &Sweep) -> PyResult<Bound<'py, PyDict>> {
        let result = PyDict::new(py);
        result.set_item("dir", self.dir)?;
        result.set_item("runs", sweep.points.len())?;
        result.set_item("ran", self.ran)?;
        result.set_item("reused", self.reused)?;
        result.set_item("failed", self.finished.failures)?;
        let best = match &self.finished.best {
            Some(b) => {
                let best = PyDict::new(py);
                best.set_item("run", b.run)?;
                best.set_item("hash", &b.hash)?;
                best.set_item("value", b.value)?;
                best.set_item("runs", &b.runs)?;
                let settings: Vec<(String, String)> =
                    b.settings.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                best.set_item("settings", settings)?;
                Some(best)
            }
            None => None,
        };
        result.set_item("best", best)?;
        Ok(result)
    }
}

/// Runs one prepared run (the text [`SweepPlan::prepare`] gave, `origin` naming its scenario, its
/// directory `run_dir` on the driver) and returns its files as file name to bytes, without writing
/// anything: what a Ray task does on whichever machine it lands.
#[pyfunction]
pub fn run_point<'py>(py: Python<'py>, text: String, origin: String, run_dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let files = detached(py, |stop| -> Result<Vec<(&'static str, Vec<u8>)>, String> {
        let scenario = load_str(&text, &origin, &run_dir, &[]).map_err(|e| e.to_string())?;
        let resolved = resolve(&scenario).map_err(|e| e.to_string())?;
        let outcome = sluice::run_scenario_until(&resolved, None, &mut |_| {}, stop)?;
        let scenario_toml = resolved_toml_at(&resolved, &run_dir);
        Ok(sluice_results::render_outputs(&sluice::outputs(&outcome.summary, &outcome.output, &scenario_toml)))
    })?
    .map_err(RunError::new_err)?;
    let dict = PyDict::new(py);
    for (name, bytes) in files {
        dict.set_item(name, PyBytes::new(py, &bytes))?;
    }
    Ok(dict)
}
