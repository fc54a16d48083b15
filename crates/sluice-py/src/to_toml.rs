//! Python values as TOML: a scenario given as a dict, and the values of a `set` dict.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use sluice_scenario::Location;

use crate::Failure;

/// A value that has no TOML form, at a dotted key.
pub(crate) struct Problem {
    key: String,
    message: String,
}

impl Problem {
    /// The scenario error about this key at `location`.
    pub(crate) fn scenario_error(self, location: Location) -> Failure {
        Failure::Scenario(sluice_scenario::ScenarioError::new(location, Some(self.key), self.message))
    }
}

/// The dotted key of `child` under `parent` (`""` at the top).
fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}.{child}")
    }
}

/// A dict as a TOML table; `path` is the dict's own dotted key, for errors.
pub(crate) fn table(dict: &Bound<'_, PyDict>, path: &str) -> Result<toml::Table, Problem> {
    let mut table = toml::Table::new();
    for (key, value) in dict.iter() {
        let Ok(name) = key.extract::<String>() else {
            let message = format!("keys must be strings, not {}", type_name(&key));
            return Err(Problem { key: join(path, &repr(&key)), message });
        };
        let key = join(path, &name);
        table.insert(name, self::value(&value, &key)?);
    }
    Ok(table)
}

/// A Python value as TOML: bool, int, float, str, os.PathLike (as its text), list or tuple (array),
/// dict (table). Anything else, None included, is a problem at `key`.
pub(crate) fn value(obj: &Bound<'_, PyAny>, key: &str) -> Result<toml::Value, Problem> {
    if let Ok(flag) = obj.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(flag.is_true()));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(toml::Value::String(text.to_string()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        return table(dict, key).map(toml::Value::Table);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return array(obj, key);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().map(toml::Value::Float).map_err(|_| no_form(obj, key));
    }
    // Python ints and integer types that convert losslessly (numpy's) through __index__.
    if let Ok(integer) = obj.extract::<i64>() {
        return Ok(toml::Value::Integer(integer));
    }
    if obj.is_instance_of::<PyInt>() {
        let message = format!("{} does not fit a TOML integer (signed 64-bit)", repr(obj));
        return Err(Problem { key: key.to_string(), message });
    }
    if let Ok(path) = obj.extract::<std::path::PathBuf>() {
        return Ok(toml::Value::String(path.to_string_lossy().into_owned()));
    }
    Err(no_form(obj, key))
}

fn array(obj: &Bound<'_, PyAny>, key: &str) -> Result<toml::Value, Problem> {
    let items = obj.try_iter().map_err(|_| no_form(obj, key))?;
    let mut array = Vec::new();
    for (index, item) in items.enumerate() {
        let item = item.map_err(|_| no_form(obj, key))?;
        array.push(value(&item, &join(key, &index.to_string()))?);
    }
    Ok(toml::Value::Array(array))
}

fn no_form(obj: &Bound<'_, PyAny>, key: &str) -> Problem {
    let message = if obj.is_none() {
        "None has no TOML form; leave the key out to take its default".to_string()
    } else {
        format!("{} has no TOML form (use bool, int, float, str, list or dict)", type_name(obj))
    };
    Problem { key: key.to_string(), message }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "this value".to_string(), |name| name.to_string())
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
}

/// A `set` dict's value as it would be typed after `--set key=`: strings as they are (`dctcp`,
/// `100Gbps`) unless the text would read as another TOML type (`"4"`, `"true"`), which is quoted;
/// everything else in TOML syntax (`4`, `0.01`, `[1, 2]`).
pub(crate) fn set_value(obj: &Bound<'_, PyAny>, key: &str) -> Result<String, Problem> {
    match value(obj, key)? {
        toml::Value::String(text) if text.parse::<toml_edit::Value>().is_err() => Ok(text),
        other => Ok(other.to_string()),
    }
}
