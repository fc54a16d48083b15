//! The error type: what is wrong with a scenario, and where it was written.

use std::fmt;
use std::path::PathBuf;

/// Where the text at fault came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line of the scenario file.
    Line {
        /// The scenario file as it was named to [`crate::load`] (or the origin name given to
        /// [`crate::load_str`]).
        file: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// The scenario file as a whole (the problem has no line, e.g. a required table is missing).
    File(PathBuf),
    /// A command-line argument, written as the user gave it: `--set topology.k=7`, `--seed 5`.
    Argument(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { file, line } => write!(f, "{}:{line}", file.display()),
            Location::File(file) => write!(f, "{}", file.display()),
            Location::Argument(arg) => f.write_str(arg),
        }
    }
}

/// Why a scenario could not be loaded or resolved.
///
/// Displays as `<location>: <key>: <message>`, e.g.
/// `scenarios/x.toml:12: topology.k: must be even and at least 2 (got 7)` or
/// `--set topology.k=7: topology.k: must be even and at least 2 (got 7)`; the key is left out when the
/// problem is not about one key (a TOML syntax error, an unreadable file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// Where the offending text was written.
    pub location: Location,
    /// The dotted key path at fault (`workload.0.load`, `cc.params.g`), when one key is to blame.
    pub key: Option<String>,
    /// What is wrong and, where useful, what is expected instead.
    pub message: String,
}

impl ScenarioError {
    /// An error at `location` about `key` (if any).
    pub fn new(location: Location, key: Option<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { location, key, message: message.into() }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location)?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_joins_location_key_and_message() {
        let at_line = Location::Line { file: "scenarios/x.toml".into(), line: 12 };
        let err = ScenarioError::new(at_line, Some("topology.k".into()), "k must be even (got 7)");
        assert_eq!(err.to_string(), "scenarios/x.toml:12: topology.k: k must be even (got 7)");
        let err = ScenarioError::new(Location::Argument("--set a=b".into()), None, "no such key");
        assert_eq!(err.to_string(), "--set a=b: no such key");
        let err = ScenarioError::new(Location::File("x.toml".into()), None, "cannot read");
        assert_eq!(err.to_string(), "x.toml: cannot read");
    }
}
