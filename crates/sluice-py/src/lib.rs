//! `sluice._native`: the simulator as a Python extension module, the engine of the `sluice` Python
//! package (python/sluice).
//!
//! Scenarios load, resolve and run exactly as with the `sluice` command line (the same crates, the same
//! checks, the same output files), in-process and with the GIL released, so Python threads run scenarios
//! in parallel. Results come back as the bytes of the output files; the Python side turns them into
//! DataFrames, the same way it reads a results directory.

mod sweep;
mod to_toml;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use sluice_scenario::{
    load, load_str, override_seed, resolve, resolved_toml, resolved_toml_at, Location, Resolved, Scenario,
};

create_exception!(
    sluice,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be loaded or resolved. Its text is the command line's `file:line: key: message`; \
     the attributes `location`, `key` (or None) and `message` hold the parts."
);
create_exception!(
    sluice,
    RunError,
    PyRuntimeError,
    "A run that failed after its scenario was accepted: too little memory, or an output directory that \
     cannot be written."
);

/// The name a scenario given as a dict goes by in error messages.
const DICT_ORIGIN: &str = "<dict>";
/// The run name of a dict scenario without `name` (a file's default is its stem; a dict has none).
const DICT_NAME: &str = "scenario";

/// Where a scenario comes from.
enum Source {
    /// A scenario file: relative names inside it resolve against its directory.
    File(PathBuf),
    /// A dict written out as TOML text: relative names resolve against `base_dir`.
    Dict { text: String, base_dir: PathBuf },
}

/// A scenario with its overrides, ready to load and resolve without the GIL.
struct Request {
    source: Source,
    sets: Vec<String>,
    seed: Option<u64>,
}

/// Why a call failed, before it becomes a Python exception (which needs the GIL).
enum Failure {
    /// The scenario or its overrides are wrong: `ScenarioError`.
    Scenario(sluice_scenario::ScenarioError),
    /// The run failed: `RunError`.
    Run(String),
    /// An argument of the wrong Python type: `TypeError`.
    Type(String),
}

impl Request {
    /// Reads the Python arguments: `scenario` a path or a dict, `set` a dict or a list of `key=value`.
    fn from_python(
        scenario: &Bound<'_, PyAny>,
        set: Option<&Bound<'_, PyAny>>,
        seed: Option<u64>,
    ) -> PyResult<Request> {
        let py = scenario.py();
        let source = source(scenario).map_err(|failure| failure.into_py_err(py))?;
        let sets = match set {
            Some(set) => set_args(set).map_err(|failure| failure.into_py_err(py))?,
            None => Vec::new(),
        };
        Ok(Request { source, sets, seed })
    }

    fn load(&self) -> Result<Scenario, sluice_scenario::ScenarioError> {
        match &self.source {
            Source::File(path) => load(path, &self.sets, self.seed),
            Source::Dict { text, base_dir } => {
                let scenario = load_str(text, DICT_ORIGIN, base_dir, &self.sets)?;
                match self.seed {
                    Some(seed) => override_seed(scenario, seed),
                    None => Ok(scenario),
                }
            }
        }
    }

    fn resolve(&self) -> Result<Resolved, Failure> {
        self.load().and_then(|scenario| resolve(&scenario)).map_err(|e| Failure::Scenario(without_dict_line(e)))
    }
}

/// Line numbers of a dict scenario point into TOML text the user never saw: its errors name the dict alone.
fn without_dict_line(mut error: sluice_scenario::ScenarioError) -> sluice_scenario::ScenarioError {
    if let Location::Line { file, .. } = &error.location {
        if file == Path::new(DICT_ORIGIN) {
            error.location = Location::File(file.clone());
        }
    }
    error
}

fn source(scenario: &Bound<'_, PyAny>) -> Result<Source, Failure> {
    if let Ok(dict) = scenario.cast::<PyDict>() {
        let mut table = to_toml::table(dict, "").map_err(|p| p.scenario_error(Location::File(DICT_ORIGIN.into())))?;
        table.entry("name").or_insert_with(|| DICT_NAME.into());
        let base_dir =
            std::env::current_dir().map_err(|e| Failure::Run(format!("cannot read the current directory: {e}")))?;
        return Ok(Source::Dict { text: toml::to_string(&table).map_err(|e| Failure::Run(e.to_string()))?, base_dir });
    }
    match scenario.extract::<PathBuf>() {
        Ok(path) => Ok(Source::File(path)),
        Err(_) => Err(Failure::Type("scenario must be a path (str or os.PathLike) or a dict".into())),
    }
}

/// `set` as the command line's `key=value` arguments.
fn set_args(set: &Bound<'_, PyAny>) -> Result<Vec<String>, Failure> {
    if let Ok(dict) = set.cast::<PyDict>() {
        return dict.iter().map(|(key, value)| set_arg(&key, &value)).collect();
    }
    if set.is_instance_of::<PyList>() || set.is_instance_of::<PyTuple>() {
        return set
            .try_iter()
            .map_err(|e| Failure::Type(e.to_string()))?
            .map(|item| item.and_then(|item| item.extract::<String>()).map_err(|_| Failure::Type(SET_TYPES.into())))
            .collect();
    }
    Err(Failure::Type(SET_TYPES.into()))
}

const SET_TYPES: &str = "set must be a dict ({\"topology.k\": 4}) or a list of \"key=value\" strings";

/// One `set` dict entry as `key=value`, the value written as it would be typed after `--set`.
fn set_arg(key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> Result<String, Failure> {
    let key: String = key.extract().map_err(|_| Failure::Type("the keys of set must be strings".into()))?;
    let value =
        to_toml::set_value(value, &key).map_err(|p| p.scenario_error(Location::Argument(format!("--set {key}"))))?;
    Ok(format!("{key}={value}"))
}

impl Failure {
    /// The Python exception: `ScenarioError` with the located text and its parts, else `RunError`.
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Scenario(e) => {
                let err = ScenarioError::new_err(e.to_string());
                let value = err.value(py);
                let with_parts = || -> PyResult<()> {
                    value.setattr("location", e.location.to_string())?;
                    value.setattr("key", e.key.as_deref())?;
                    value.setattr("message", e.message.as_str())
                };
                if let Err(failed) = with_parts() {
                    return failed;
                }
                err
            }
            Failure::Run(message) => RunError::new_err(message),
            Failure::Type(message) => PyTypeError::new_err(message),
        }
    }
}

/// What a finished run hands to Python.
struct Finished {
    /// Every output file's name and bytes, as `sluice run --out` writes them.
    files: Vec<(&'static str, Vec<u8>)>,
    /// The time-limit warning of a run that stopped with flows unfinished.
    warning: Option<String>,
    /// Wall-clock seconds of the simulation proper.
    wall_seconds: f64,
}

/// Loads, resolves and runs the request, writing `out` when given; `stop` can abandon the run.
fn execute(request: &Request, out: Option<&Path>, force: bool, stop: &dyn Fn() -> bool) -> Result<Finished, Failure> {
    let resolved = request.resolve()?;
    if !force {
        let estimate = sluice::estimate(&resolved);
        sluice::estimate::check_memory(&estimate, sluice::estimate::available_memory()).map_err(Failure::Run)?;
    }
    let outcome = sluice::run_scenario_until(&resolved, out, &mut |_| {}, stop).map_err(Failure::Run)?;
    // The text as the results directory holds it: there, base_dir is relative to the directory.
    let scenario_toml = out.map_or_else(|| resolved_toml(&resolved), |dir| resolved_toml_at(&resolved, dir));
    let files = sluice_results::render_outputs(&sluice::outputs(&outcome.summary, &outcome.output, &scenario_toml));
    let warning = sluice::time_limit_warning(&resolved, &outcome.summary);
    Ok(Finished { files, warning, wall_seconds: outcome.wall_seconds })
}

/// Runs `work` with the GIL released. Its stop closure briefly takes the GIL back to run Python's signal
/// handlers: a KeyboardInterrupt (Ctrl-C in the main thread) stops the work and is raised here.
fn detached<T: Send>(py: Python<'_>, work: impl FnOnce(&(dyn Fn() -> bool + Sync)) -> T + Send) -> PyResult<T> {
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let stop = || {
        let mut raised = raised.lock().unwrap_or_else(PoisonError::into_inner);
        if raised.is_none() {
            *raised = Python::attach(|py| py.check_signals()).err();
        }
        raised.is_some()
    };
    let value = py.detach(|| work(&stop));
    match raised.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(value),
    }
}

/// Runs a scenario (a path or a dict) with `set` overrides and an optional seed; writes the results
/// directory `out` when given. Returns a dict: `files` (file name to bytes), `warning` (str or None) and
/// `wall_seconds`. `force` skips the memory check.
#[pyfunction]
#[pyo3(signature = (scenario, set=None, seed=None, out=None, force=false))]
fn run<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    set: Option<&Bound<'py, PyAny>>,
    seed: Option<u64>,
    out: Option<PathBuf>,
    force: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let request = Request::from_python(scenario, set, seed)?;
    let finished =
        detached(py, |stop| execute(&request, out.as_deref(), force, stop))?.map_err(|f| f.into_py_err(py))?;
    let files = PyDict::new(py);
    for (name, bytes) in &finished.files {
        files.set_item(name, PyBytes::new(py, bytes))?;
    }
    let result = PyDict::new(py);
    result.set_item("files", files)?;
    result.set_item("warning", finished.warning)?;
    result.set_item("wall_seconds", finished.wall_seconds)?;
    Ok(result)
}

/// Loads and resolves a scenario as `sluice check` does and returns the resolved scenario's TOML text.
#[pyfunction]
#[pyo3(signature = (scenario, set=None, seed=None))]
fn check<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    set: Option<&Bound<'py, PyAny>>,
    seed: Option<u64>,
) -> PyResult<Bound<'py, PyString>> {
    let request = Request::from_python(scenario, set, seed)?;
    let text = detached(py, |_| request.resolve().map(|r| resolved_toml(&r)))?.map_err(|f| f.into_py_err(py))?;
    Ok(PyString::new(py, &text))
}

/// The congestion-control algorithms a scenario may name (`cc.algorithm`), as `sluice list` shows them.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    sluice_cc::registry().iter().map(|a| a.name).collect()
}

/// `sluice list`'s text: algorithms, workload generators, flow-size distributions, topology kinds.
#[pyfunction]
fn list_text() -> String {
    sluice_scenario::list_text()
}

/// The module: its functions and exception types.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("SweepError", py.get_type::<sweep::SweepError>())?;
    m.add_class::<sweep::SweepPlan>()?;
    m.add_function(wrap_pyfunction!(sweep::run_point, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(list_text, m)?)?;
    Ok(())
}
