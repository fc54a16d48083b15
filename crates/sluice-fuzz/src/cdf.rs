//! Flow-size CDF files, in both formats: the HPCC artifact's and HomaSimulation's.

use sluice_core::Rng;
use sluice_workload::{SizeCdf, WorkloadError, DCTCP_PACKET_BYTES};

use crate::with_scratch_file;

/// Sizes drawn from each accepted distribution.
const SAMPLES: usize = 64;

/// Parses the input as each format (and as a file, whose format is detected), then samples every
/// distribution accepted: each size must lie in `1..=max`.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check(SizeCdf::parse_hpcc(text));
    check(SizeCdf::parse_homa(text, 1));
    check(SizeCdf::parse_homa(text, DCTCP_PACKET_BYTES));
    check(with_scratch_file("txt", text, |path| SizeCdf::from_file(path)));
}

fn check(parsed: Result<SizeCdf, WorkloadError>) {
    let cdf = match parsed {
        Ok(cdf) => cdf,
        Err(e) => return drop(e.to_string()),
    };
    assert!(cdf.mean().is_finite() && cdf.mean() > 0.0, "mean {} of an accepted CDF", cdf.mean());
    let mut rng = Rng::new(1, 0);
    for _ in 0..SAMPLES {
        let size = cdf.sample(&mut rng);
        assert!((1..=cdf.max()).contains(&size), "sampled {size} bytes, max {}", cdf.max());
    }
}
