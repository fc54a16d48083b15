//! The one error type of the crate: a message that already names the file (and line) it is about.

use std::fmt;
use std::path::Path;

/// Why a report could not be made; the message starts with the file or directory at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportError(String);

impl ReportError {
    /// An error about a whole file or directory: `path: message`.
    pub fn at(path: &Path, message: impl fmt::Display) -> ReportError {
        ReportError(format!("{}: {message}", path.display()))
    }

    /// An error about one line of a file: `path:line: message`.
    pub fn at_line(path: &Path, line: usize, message: impl fmt::Display) -> ReportError {
        ReportError(format!("{}:{line}: {message}", path.display()))
    }

    /// An error about the command line rather than a file.
    pub fn usage(message: impl fmt::Display) -> ReportError {
        ReportError(message.to_string())
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReportError {}

impl From<ReportError> for String {
    fn from(error: ReportError) -> String {
        error.0
    }
}
