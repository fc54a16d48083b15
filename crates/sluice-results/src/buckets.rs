//! Flow-size buckets for slowdown statistics.

use std::fmt;

/// Flow-size buckets given by ascending edges in bytes.
///
/// `n` edges make `n + 1` buckets. Each bucket includes its lower edge and excludes its upper edge: with
/// the default edges `[10_000, 100_000, 1_000_000]` the buckets are `<10KB` (`size < 10_000`),
/// `10KB-100KB` (`10_000 <= size < 100_000`), `100KB-1MB` and `>=1MB`, so a flow of exactly 10 000 bytes
/// belongs to `10KB-100KB`. Labels use decimal units (1 KB = 1000 B). No edges make one bucket, `all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    edges: Vec<u64>,
}

/// Bucket edges that are not positive and strictly increasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketsError {
    /// The rejected edges.
    pub edges: Vec<u64>,
}

impl fmt::Display for BucketsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid size bucket edges {:?}: expected positive byte counts in strictly increasing order",
            self.edges
        )
    }
}

impl std::error::Error for BucketsError {}

impl Default for Buckets {
    /// Edges at 10 KB, 100 KB and 1 MB.
    fn default() -> Buckets {
        Buckets { edges: vec![10_000, 100_000, 1_000_000] }
    }
}

impl Buckets {
    /// Buckets with the given edges, which must be positive and strictly increasing.
    pub fn new(edges: Vec<u64>) -> Result<Buckets, BucketsError> {
        let increasing = edges.windows(2).all(|w| w[0] < w[1]);
        if !increasing || edges.first() == Some(&0) {
            return Err(BucketsError { edges });
        }
        Ok(Buckets { edges })
    }

    /// The edges in bytes.
    pub fn edges(&self) -> &[u64] {
        &self.edges
    }

    /// Number of buckets (edges + 1).
    pub fn len(&self) -> usize {
        self.edges.len() + 1
    }

    /// Always false: there is at least one bucket.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Index of the bucket holding a flow of `size` bytes.
    pub fn index(&self, size: u64) -> usize {
        self.edges.partition_point(|&edge| edge <= size)
    }

    /// Bytes range `[lower, upper)` of bucket `index`; `upper` is `None` for the last bucket.
    pub fn range(&self, index: usize) -> (u64, Option<u64>) {
        let lower = if index == 0 { 0 } else { self.edges[index - 1] };
        (lower, self.edges.get(index).copied())
    }

    /// Label of bucket `index`, such as `"<10KB"`, `"10KB-100KB"` or `">=1MB"`.
    pub fn label(&self, index: usize) -> String {
        match self.range(index) {
            (0, None) => "all".to_string(),
            (0, Some(upper)) => format!("<{}", decimal_size(upper)),
            (lower, None) => format!(">={}", decimal_size(lower)),
            (lower, Some(upper)) => format!("{}-{}", decimal_size(lower), decimal_size(upper)),
        }
    }

    /// Labels of all buckets in order.
    pub fn labels(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.label(i)).collect()
    }
}

/// Writes a byte count with the largest decimal unit not above it, exactly (`1500` -> `"1.5KB"`).
fn decimal_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "KB")];
    let Some(&(unit, name)) = UNITS.iter().find(|(unit, _)| bytes >= *unit) else {
        return format!("{bytes}B");
    };
    let (whole, frac) = (bytes / unit, bytes % unit);
    if frac == 0 {
        return format!("{whole}{name}");
    }
    let digits = unit.ilog10() as usize;
    let frac = format!("{frac:0digits$}");
    format!("{whole}.{}{name}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_labels() {
        assert_eq!(Buckets::default().labels(), ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"]);
    }

    #[test]
    fn edges_belong_to_the_upper_bucket() {
        let buckets = Buckets::default();
        assert_eq!(buckets.index(0), 0);
        assert_eq!(buckets.index(9_999), 0);
        assert_eq!(buckets.index(10_000), 1, "10 000 B is in 10KB-100KB");
        assert_eq!(buckets.index(99_999), 1);
        assert_eq!(buckets.index(100_000), 2);
        assert_eq!(buckets.index(999_999), 2);
        assert_eq!(buckets.index(1_000_000), 3);
        assert_eq!(buckets.index(u64::MAX), 3);
        assert_eq!(buckets.range(1), (10_000, Some(100_000)));
        assert_eq!(buckets.range(3), (1_000_000, None));
    }

    #[test]
    fn labels_use_exact_decimal_units() {
        let buckets = Buckets::new(vec![999, 1_500, 2_250_000, 3_000_000_000]).unwrap();
        assert_eq!(buckets.labels(), ["<999B", "999B-1.5KB", "1.5KB-2.25MB", "2.25MB-3GB", ">=3GB"]);
        assert_eq!(Buckets::new(vec![]).unwrap().labels(), ["all"]);
        assert_eq!(decimal_size(1_000_001), "1.000001MB");
    }

    #[test]
    fn bad_edges_are_rejected() {
        assert!(Buckets::new(vec![100, 100]).is_err());
        assert!(Buckets::new(vec![100, 10]).is_err());
        let err = Buckets::new(vec![0, 10]).unwrap_err();
        assert!(err.to_string().contains("[0, 10]"), "{err}");
    }
}
