//! The error type of topology validation, construction and file parsing.

use std::fmt;

/// Why a topology specification or file was rejected.
///
/// `field` names the offending specification key (`"k"`, `"host_rate"`, `"cores"`, ...). Errors found
/// inside a topology file carry `field = Some("path")` (the specification key that named the file) and a
/// message that starts with `"<file>:<line>: "` (1-based line) when the problem has a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoError {
    /// The offending specification key, if one key is to blame.
    pub field: Option<String>,
    /// What is wrong and, where useful, what is expected instead.
    pub message: String,
}

impl TopoError {
    /// An error blamed on the specification key `field`.
    pub fn field(field: &str, message: impl Into<String>) -> TopoError {
        TopoError { field: Some(field.to_string()), message: message.into() }
    }

    /// An error about the topology as a whole.
    pub fn general(message: impl Into<String>) -> TopoError {
        TopoError { field: None, message: message.into() }
    }

    /// An error inside the topology file `file`, at 1-based `line` when known.
    pub fn in_file(file: &str, line: Option<usize>, message: impl fmt::Display) -> TopoError {
        let message = match line {
            Some(line) => format!("{file}:{line}: {message}"),
            None => format!("{file}: {message}"),
        };
        TopoError { field: Some("path".to_string()), message }
    }
}

impl fmt::Display for TopoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "topology {field}: {}", self.message),
            None => write!(f, "topology: {}", self.message),
        }
    }
}

impl std::error::Error for TopoError {}
