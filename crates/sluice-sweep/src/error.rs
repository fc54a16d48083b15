//! Located errors of a sweep: the sweep file and line, the entry at fault, and what is wrong.

use std::fmt;
use std::path::Path;

/// An error in a sweep file or a sweep command, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepError {
    /// `file:line`, `file` or a command-line argument such as `--best`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl SweepError {
    /// An error at `line` (1-based) of `file`.
    pub fn at_line(file: &Path, line: usize, message: impl Into<String>) -> SweepError {
        SweepError { location: format!("{}:{line}", file.display()), message: message.into() }
    }

    /// An error about `file` as a whole.
    pub fn in_file(file: &Path, message: impl Into<String>) -> SweepError {
        SweepError { location: file.display().to_string(), message: message.into() }
    }

    /// An error about a command-line argument (`--best "..."`).
    pub fn argument(argument: impl Into<String>, message: impl Into<String>) -> SweepError {
        SweepError { location: argument.into(), message: message.into() }
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for SweepError {}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}
