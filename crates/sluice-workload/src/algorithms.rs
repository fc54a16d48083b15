//! Algorithms named by single flows: a long-lived flow's `algorithm` key or a flow list's fifth column.
//! This crate does not know the algorithms; it numbers the names in order of first appearance and keeps
//! where each first appeared, so that the layer that does know them can refuse an unknown one at its
//! place.

use crate::WorkloadError;

/// An algorithm name some flows give, with where it first appeared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowAlgorithm {
    /// The name as written.
    pub name: String,
    /// The workload entry of its first appearance.
    pub entry: usize,
    /// The entry's key that gave it: `flows.{j}.algorithm` for a long-lived flow, `path` for a flow list.
    pub field: String,
    /// For a flow list: the file and the 1-based line.
    pub file_line: Option<(String, usize)>,
}

impl RowAlgorithm {
    /// An error about this name, located where it first appeared.
    pub fn error(&self, message: impl Into<String>) -> WorkloadError {
        let mut e = WorkloadError::field(&self.field, message).with_entry(self.entry);
        if let Some((file, line)) = &self.file_line {
            e = WorkloadError { line: Some(*line), ..e.with_file(file) };
        }
        e
    }
}

/// The names given so far, numbered from 1 (0 is a flow's entry's own algorithm).
#[derive(Debug, Clone, Default)]
pub(crate) struct AlgorithmNames {
    pub(crate) names: Vec<RowAlgorithm>,
}

impl AlgorithmNames {
    /// The number of `name` (at least 1), adding it with the place `at` gives when it is new.
    pub(crate) fn number(&mut self, name: &str, at: impl FnOnce() -> RowAlgorithm) -> Result<u16, String> {
        if let Some(i) = self.names.iter().position(|n| n.name == name) {
            return Ok(i as u16 + 1);
        }
        if self.names.len() >= usize::from(u8::MAX) {
            return Err(format!("more than {} different algorithms are named by single flows", u8::MAX));
        }
        self.names.push(at());
        Ok(self.names.len() as u16)
    }
}
