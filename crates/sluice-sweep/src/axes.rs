//! Axes: the values each swept key takes, checked and indexed without being listed (a range of a
//! million steps costs nothing until a point is drawn from it).

use toml::Value;

use crate::error::SweepError;
use crate::spec::{flatten, AxisSpec, RangeSpec, Scale, SweepSource};

/// One axis: one key, or several zipped keys that move together.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// How the axis is named in messages (its key, or the zip's name).
    pub label: String,
    /// The scenario keys it sets, each a table column.
    pub keys: Vec<String>,
    /// Its values.
    pub domain: Domain,
    /// Line of the sweep file where it is written.
    pub line: usize,
}

/// The values of an axis.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// Listed values, one tuple (a value per key) per position.
    List(Vec<Vec<Value>>),
    /// Evenly spaced numbers: `len` points from `start` by `step` (linear) or by factor (log).
    Grid(Numbers, usize),
    /// Any number between `start` and `stop`: only a sample draws from it.
    Continuous(Numbers),
}

/// A numeric interval and how its numbers are written.
#[derive(Debug, Clone, PartialEq)]
pub struct Numbers {
    /// First value.
    pub start: f64,
    /// Last value (inclusive).
    pub stop: f64,
    /// Logarithmic spacing.
    pub log: bool,
    /// Every number given was an integer: values are rounded to integers.
    pub integer: bool,
    /// Unit appended to each value, making it a string (`"20KB"`).
    pub unit: Option<String>,
}

impl Numbers {
    /// The value at fraction `u` (0 to 1) of the interval.
    pub fn at(&self, u: f64) -> Value {
        let x = if self.log {
            (self.start.ln() + u * (self.stop.ln() - self.start.ln())).exp()
        } else {
            self.start + u * (self.stop - self.start)
        };
        self.value(x)
    }

    fn value(&self, x: f64) -> Value {
        let number = if self.integer { Value::Integer(x.round() as i64) } else { Value::Float(tidy(x)) };
        match &self.unit {
            Some(unit) => Value::String(format!("{number}{unit}")),
            None => number,
        }
    }
}

/// `x` to 10 significant digits, so that `0.1 + 0.2` reads `0.3`.
fn tidy(x: f64) -> f64 {
    format!("{x:.9e}").parse().unwrap_or(x)
}

impl Axis {
    /// Number of positions; `None` for a continuous axis.
    pub fn positions(&self) -> Option<usize> {
        match &self.domain {
            Domain::List(values) => Some(values.len()),
            Domain::Grid(_, len) => Some(*len),
            Domain::Continuous(_) => None,
        }
    }

    /// The values (one per key) at position `index` (below [`Axis::positions`]).
    pub fn at(&self, index: usize) -> Vec<Value> {
        match &self.domain {
            Domain::List(values) => values[index].clone(),
            Domain::Grid(numbers, len) => {
                let u = if *len <= 1 { 0.0 } else { index as f64 / (*len - 1) as f64 };
                vec![numbers.at(u)]
            }
            Domain::Continuous(numbers) => vec![numbers.at(0.0)],
        }
    }

    /// The values at fraction `u` (0 to 1) of the axis: a position of a discrete axis, a number of a
    /// continuous one.
    pub fn at_fraction(&self, u: f64) -> Vec<Value> {
        match (&self.domain, self.positions()) {
            (Domain::Continuous(numbers), _) => vec![numbers.at(u)],
            (_, Some(len)) => self.at(((u * len as f64) as usize).min(len.saturating_sub(1))),
            (_, None) => Vec::new(),
        }
    }
}

/// Reads every `[[axis]]` of the sweep file.
pub fn axes(source: &SweepSource) -> Result<Vec<Axis>, SweepError> {
    let mut axes: Vec<Axis> = Vec::new();
    for spanned in &source.file.axis {
        let line = source.line(spanned.span().start);
        let axis = axis(spanned.get_ref(), line)
            .map_err(|message| SweepError::at_line(&source.path, line, format!("[[axis]]: {message}")))?;
        for key in &axis.keys {
            if axes.iter().any(|a| a.keys.contains(key)) {
                return Err(SweepError::at_line(&source.path, line, format!("[[axis]]: `{key}` is swept twice")));
            }
        }
        axes.push(axis);
    }
    Ok(axes)
}

fn axis(spec: &AxisSpec, line: usize) -> Result<Axis, String> {
    match (&spec.key, &spec.values, &spec.range, &spec.zip) {
        (Some(key), Some(values), None, None) => {
            nonempty_key(key)?;
            if values.is_empty() {
                return Err(format!("`{key}`: `values` is empty; list at least one value"));
            }
            let domain = Domain::List(values.iter().map(|v| vec![v.clone()]).collect());
            Ok(Axis { label: key.clone(), keys: vec![key.clone()], domain, line })
        }
        (Some(key), None, Some(range), None) => {
            nonempty_key(key)?;
            let domain = range_domain(range).map_err(|m| format!("`{key}`: range: {m}"))?;
            Ok(Axis { label: key.clone(), keys: vec![key.clone()], domain, line })
        }
        (None, None, None, Some(zip)) => zipped(zip, spec.name.clone(), line),
        (None, _, _, None) => Err("give `key` with `values` or `range`, or `zip`".to_string()),
        (Some(_), _, _, Some(_)) => Err("a `zip` axis names its keys inside `zip`, not in `key`".to_string()),
        (_, _, _, Some(_)) => Err("a `zip` axis takes no `values` or `range`".to_string()),
        (Some(key), None, None, None) => Err(format!("`{key}`: give its `values` or a `range`")),
        (Some(key), Some(_), Some(_), None) => Err(format!("`{key}`: give `values` or `range`, not both")),
    }
}

fn nonempty_key(key: &str) -> Result<(), String> {
    match key.split('.').any(|s| s.trim().is_empty()) {
        true => Err(format!("`{key}` is not a scenario key; write segments joined by dots, e.g. cc.params.g")),
        false => Ok(()),
    }
}

fn zipped(zip: &toml::Table, name: Option<String>, line: usize) -> Result<Axis, String> {
    let columns = flatten(zip);
    let mut keys = Vec::new();
    let mut lists = Vec::new();
    for (key, value) in &columns {
        let Value::Array(values) = value else {
            return Err(format!("zip: `{key}` must be a list of values"));
        };
        keys.push(key.clone());
        lists.push(values.clone());
    }
    let len = lists.first().map_or(0, Vec::len);
    if len == 0 {
        return Err("zip: give at least one key with at least one value".to_string());
    }
    if let Some((key, list)) = keys.iter().zip(&lists).find(|(_, l)| l.len() != len) {
        return Err(format!(
            "zip: `{key}` has {} values, `{}` has {len}; zipped lists move together",
            list.len(),
            keys[0]
        ));
    }
    let tuples = (0..len).map(|i| lists.iter().map(|l| l[i].clone()).collect()).collect();
    let label = name.unwrap_or_else(|| keys.join("+"));
    Ok(Axis { label, keys, domain: Domain::List(tuples), line })
}

/// The most positions a range may have (a grid that large is refused at its count anyway).
const MAX_RANGE_POINTS: f64 = 1e12;

fn range_domain(range: &RangeSpec) -> Result<Domain, String> {
    let start = number(&range.start, "start")?;
    let stop = number(&range.stop, "stop")?;
    let step = range.step.as_ref().map(|s| number(s, "step")).transpose()?;
    let integer = [Some(&range.start), Some(&range.stop), range.step.as_ref()].iter().flatten().all(|v| v.is_integer());
    let log = range.scale == Scale::Log;
    if log && (start <= 0.0 || stop <= 0.0) {
        return Err("a log scale needs a positive start and stop".to_string());
    }
    let numbers = Numbers { start, stop, log, integer, unit: range.unit.clone() };
    match (range.count, step) {
        (Some(_), Some(_)) => Err("give `count` or `step`, not both".to_string()),
        (Some(0), None) => Err("`count` must be at least 1".to_string()),
        (Some(count), None) => Ok(Domain::Grid(numbers, usize::try_from(count).map_err(|_| "`count` is too large")?)),
        (None, Some(step)) => {
            if log {
                return Err("a log scale takes `count`, not `step`".to_string());
            }
            if step <= 0.0 || stop < start {
                return Err(format!("`step` must be positive and `stop` ({stop}) at least `start` ({start})"));
            }
            let len = ((stop - start) / step + 1e-9).floor() + 1.0;
            if len > MAX_RANGE_POINTS {
                return Err(format!("{len:.0} points; that is more than any sweep can run"));
            }
            // The last point is start + (len-1) * step, which may stop short of `stop`.
            let numbers = Numbers { stop: start + (len - 1.0) * step, ..numbers };
            Ok(Domain::Grid(numbers, len as usize))
        }
        (None, None) => Ok(Domain::Continuous(numbers)),
    }
}

fn number(value: &Value, what: &str) -> Result<f64, String> {
    match value {
        Value::Integer(i) => Ok(*i as f64),
        Value::Float(f) if f.is_finite() => Ok(*f),
        other => Err(format!("`{what}` must be a number (got {other}); put units in `unit`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(axes_text: &str) -> Result<Vec<Axis>, SweepError> {
        let text = format!("scenario = \"x.toml\"\n{axes_text}");
        axes(&SweepSource::parse(Path::new("s.toml"), text).unwrap())
    }

    fn values(axis: &Axis) -> Vec<String> {
        (0..axis.positions().unwrap())
            .map(|i| axis.at(i).iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|"))
            .collect()
    }

    #[test]
    fn ranges_by_step_count_and_log() {
        let a = read("[[axis]]\nkey = \"l\"\nrange = { start = 0.3, stop = 0.8, step = 0.1 }\n").unwrap();
        assert_eq!(values(&a[0]), ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8"]);
        let a = read(
            "[[axis]]\nkey = \"k\"\nrange = { start = 1, stop = 1000, count = 4, scale = \"log\", unit = \"KB\" }\n",
        )
        .unwrap();
        assert_eq!(values(&a[0]), ["\"1KB\"", "\"10KB\"", "\"100KB\"", "\"1000KB\""]);
        let a = read("[[axis]]\nkey = \"k\"\nrange = { start = 10, stop = 25, step = 10 }\n").unwrap();
        assert_eq!(values(&a[0]), ["10", "20"], "the last step stops short of stop");
    }

    #[test]
    fn zipped_keys_move_together() {
        let a = read("[[axis]]\nname = \"alg\"\nzip = { \"cc.algorithm\" = [\"dcqcn\", \"hpcc\"], host = { rto_min = [\"1ms\", \"2ms\"] } }\n")
            .unwrap();
        assert_eq!(a[0].keys, ["cc.algorithm", "host.rto_min"]);
        assert_eq!(values(&a[0]), ["\"dcqcn\"|\"1ms\"", "\"hpcc\"|\"2ms\""]);
        let err = read("[[axis]]\nzip = { a = [1, 2], b = [1] }\n").unwrap_err();
        assert!(err.message.contains("has 1 values"), "{err}");
    }

    #[test]
    fn bad_axes_are_located_errors() {
        let cases = [
            ("[[axis]]\nkey = \"a\"\nvalues = []\n", "`values` is empty"),
            ("[[axis]]\nkey = \"a\"\n", "give its `values` or a `range`"),
            ("[[axis]]\nkey = \"a\"\nrange = { start = \"1KB\", stop = 2 }\n", "must be a number"),
            ("[[axis]]\nkey = \"a\"\nrange = { start = 0, stop = 1, scale = \"log\", count = 3 }\n", "positive"),
            ("[[axis]]\nkey = \"a\"\nrange = { start = 0, stop = 1e15, step = 1 }\n", "more than any sweep"),
            ("[[axis]]\nkey = \"a\"\nvalues = [1]\n[[axis]]\nkey = \"a\"\nvalues = [2]\n", "swept twice"),
            ("[[axis]]\nkey = \"a..b\"\nvalues = [1]\n", "not a scenario key"),
        ];
        for (text, expected) in cases {
            let err = read(text).unwrap_err();
            assert!(err.message.contains(expected), "{text}: {err}");
            assert!(err.location.starts_with("s.toml:"), "{err}");
        }
        assert_eq!(read("\n[[axis]]\nkey = \"a\"\nvalues = []\n").unwrap_err().location, "s.toml:3");
    }

    #[test]
    fn continuous_ranges_draw_by_fraction() {
        let a = read("[[axis]]\nkey = \"g\"\nrange = { start = 0.01, stop = 1.0, scale = \"log\" }\n").unwrap();
        assert_eq!(a[0].positions(), None);
        assert_eq!(a[0].at_fraction(0.5), vec![Value::Float(0.1)]);
    }
}
