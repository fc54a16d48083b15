//! The error type of this crate: what is wrong, and where (workload entry, key, file and line).

use std::fmt;

/// Why a workload could not be parsed, validated or generated.
///
/// The location fields are filled in as the error travels outwards: a CDF parser knows the line, the
/// file loader adds the file name, [`crate::generate`] adds the index of the workload entry, and the
/// check that failed names the offending key in `field` so that a scenario loader can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError {
    /// Index of the workload entry (in the list given to [`crate::generate`]) that failed.
    pub entry: Option<usize>,
    /// The key of the workload entry at fault, e.g. `"load"`, `"cdf"`, `"senders"`.
    pub field: Option<String>,
    /// The file (or builtin distribution name) being read.
    pub file: Option<String>,
    /// The 1-based line number within `file`.
    pub line: Option<usize>,
    /// What is wrong, in words.
    pub message: String,
}

impl WorkloadError {
    /// An error with a message and no location yet.
    pub fn new(message: impl Into<String>) -> WorkloadError {
        WorkloadError { entry: None, field: None, file: None, line: None, message: message.into() }
    }

    /// An error about the key `field` of a workload entry.
    pub fn field(field: &str, message: impl Into<String>) -> WorkloadError {
        WorkloadError::new(message).with_field(field)
    }

    /// An error at 1-based line `line` of the text being parsed.
    pub fn at_line(line: usize, message: impl Into<String>) -> WorkloadError {
        WorkloadError { line: Some(line), ..WorkloadError::new(message) }
    }

    /// Names the offending key, unless one is named already.
    pub fn with_field(mut self, field: &str) -> WorkloadError {
        self.field.get_or_insert_with(|| field.to_string());
        self
    }

    /// Names the file (or builtin distribution) being read, unless one is named already.
    pub fn with_file(mut self, file: &str) -> WorkloadError {
        self.file.get_or_insert_with(|| file.to_string());
        self
    }

    /// Names the workload entry, unless one is named already.
    pub fn with_entry(mut self, entry: usize) -> WorkloadError {
        self.entry.get_or_insert(entry);
        self
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(entry) = self.entry {
            write!(f, "workload entry {entry}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "`{field}`: ")?;
        }
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file} line {line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for WorkloadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_every_known_location() {
        let err = WorkloadError::at_line(12, "percent decreases").with_file("my.cdf").with_field("cdf").with_entry(2);
        assert_eq!(err.to_string(), "workload entry 2: `cdf`: my.cdf line 12: percent decreases");
        let outer = err.clone().with_file("other").with_entry(5).with_field("load");
        assert_eq!(outer, err, "the innermost location wins");
        assert_eq!(WorkloadError::new("empty").to_string(), "empty");
    }
}
