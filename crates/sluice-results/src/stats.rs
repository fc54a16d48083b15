//! Small statistics helpers: nearest-rank percentiles, mean, fixed rounding, Jain's fairness index.

/// The `per_mille`-th per-mille of `sorted` by the nearest-rank method, or `None` if it is empty.
///
/// With `n` values sorted ascending, the result is the value at 1-based rank `ceil(per_mille * n / 1000)`
/// (at least rank 1), computed in integers so that no rounding can move the rank. `per_mille` is the
/// percentile times ten: `500` is the median, `990` the 99th and `999` the 99.9th percentile; values
/// above 1000 count as 1000. For `1..=1000`, the 99th percentile is 990 and the 99.9th is 999.
pub fn percentile(sorted: &[f64], per_mille: u32) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (u64::from(per_mille.min(1000)) * n).div_ceil(1000).max(1);
    Some(sorted[(rank - 1) as usize])
}

/// The arithmetic mean, or `None` if `values` is empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// Rounds to 6 decimal places (the nearest multiple of 1e-6), so that written numbers are stable.
/// Negative zero becomes zero.
pub fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6 + 0.0
}

/// Jain's fairness index `(sum x)^2 / (n * sum x^2)`: 1 for equal shares, `1/n` when one value takes all.
///
/// An empty slice or all-zero values count as perfectly fair (1).
pub fn jain_fairness(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    let sum_sq: f64 = values.iter().map(|x| x * x).sum();
    if values.is_empty() || sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (values.len() as f64 * sum_sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_of_1_to_1000() {
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&values, 500), Some(500.0));
        assert_eq!(percentile(&values, 950), Some(950.0));
        assert_eq!(percentile(&values, 990), Some(990.0));
        assert_eq!(percentile(&values, 999), Some(999.0));
        assert_eq!(percentile(&values, 1000), Some(1000.0));
        assert_eq!(percentile(&values, 0), Some(1.0), "rank is at least 1");
    }

    #[test]
    fn nearest_rank_on_small_sets_rounds_the_rank_up() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        // ceil(0.5 * 10) = 5, ceil(0.95 * 10) = 10, ceil(0.999 * 10) = 10.
        assert_eq!(percentile(&values, 500), Some(5.0));
        assert_eq!(percentile(&values, 950), Some(10.0));
        assert_eq!(percentile(&values, 999), Some(10.0));
        assert_eq!(percentile(&[3.5], 990), Some(3.5));
        assert_eq!(percentile(&[], 500), None);
    }

    #[test]
    fn mean_and_rounding() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[]), None);
        assert_eq!(round6(1.23456789), 1.234568);
        assert_eq!(round6(2.0 / 3.0), 0.666667);
        assert!(round6(-0.0).is_sign_positive());
        assert!(round6(-1e-9).is_sign_positive());
    }

    #[test]
    fn jain_fairness_of_known_shares() {
        assert_eq!(jain_fairness(&[5.0, 5.0, 5.0, 5.0]), 1.0);
        assert_eq!(jain_fairness(&[1.0, 0.0]), 0.5);
        assert_eq!(jain_fairness(&[1.0, 0.0, 0.0, 0.0]), 0.25);
        assert_eq!(jain_fairness(&[]), 1.0);
        assert_eq!(jain_fairness(&[0.0, 0.0]), 1.0);
        assert!((jain_fairness(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
    }
}
