//! Flow-size distributions given as cumulative distribution functions, and sampling from them.
//!
//! Two file formats are understood, each sampled exactly as the simulator that published it does:
//!
//! * HPCC artifact (`alibaba-edu/High-Precision-Congestion-Control`, `traffic_gen/custom_rand.py`): lines
//!   `size_bytes cdf_percent`, percent from 0 to 100; a uniform percentile is mapped to a size by LINEAR
//!   interpolation between the two surrounding points, and the size is truncated to whole bytes (at least 1).
//! * HomaSimulation (`PlatformLab/HomaSimulation`, `src/application/MsgSizeDistributions.cc`): the first line
//!   is the mean size, then lines `size cumulative_prob`; a uniform probability picks the first point whose
//!   cumulative probability reaches it (STEP values, no interpolation).

pub(crate) mod builtin;
mod parse;

use std::path::Path;

use sluice_core::Rng;

use crate::WorkloadError;

pub use builtin::{builtin_names, DCTCP_PACKET_BYTES};

/// A flow-size distribution: sizes in bytes, always at least 1.
#[derive(Debug, Clone)]
pub struct SizeCdf {
    shape: Shape,
    mean: f64,
    stated_mean: Option<f64>,
}

/// How a uniform random number becomes a size.
#[derive(Debug, Clone)]
enum Shape {
    /// `(size_bytes, cdf_percent)` points with linear interpolation between them (HPCC artifact).
    Linear(Vec<(f64, f64)>),
    /// `(size_bytes, cumulative_prob)` points taken as they are (HomaSimulation).
    Step(Vec<(u64, f64)>),
    /// A step head followed by a generalized Pareto tail (HomaSimulation's Facebook key-value workload).
    ParetoTail { head: Vec<(u64, f64)>, tail: ParetoTail },
}

/// The generalized Pareto tail above the last head point, as `getFacebookSizeInterarrival` in
/// HomaSimulation's `MsgSizeDistributions.cc` draws it: `round(offset + ((1-p0)/(1-u))^k - 1) * sigma/k)`,
/// capped at `cap`.
#[derive(Debug, Clone, Copy)]
struct ParetoTail {
    /// The last head size; tail sizes start here.
    offset: u64,
    /// The cumulative probability of the head.
    prob_offset: f64,
    /// Shape `k` (0 < k < 1 so that the mean is finite).
    shape: f64,
    /// Scale `sigma`.
    scale: f64,
    /// Largest size drawn.
    cap: u64,
}

impl SizeCdf {
    /// Parses the HPCC artifact format: one `size_bytes cdf_percent` pair per line, percent rising from 0 to
    /// 100 (a first percent above 0 is a point mass at the first size). Blank lines and `#` comments are
    /// skipped.
    pub fn parse_hpcc(text: &str) -> Result<SizeCdf, WorkloadError> {
        let points = parse::hpcc_points(text)?;
        let mean = linear_mean(&points);
        Ok(SizeCdf { shape: Shape::Linear(points), mean, stated_mean: None })
    }

    /// Parses the HomaSimulation format: the mean size alone on the first line, then one
    /// `size cumulative_prob` pair per line ending at probability 1. Sizes are multiplied by `unit_bytes`
    /// (1 for files in bytes, [`DCTCP_PACKET_BYTES`] for `DCTCP_MsgSizeDist.txt`, which counts packets).
    pub fn parse_homa(text: &str, unit_bytes: u64) -> Result<SizeCdf, WorkloadError> {
        let homa = parse::homa_points(text, unit_bytes)?;
        parse::check_homa_end(&homa)?;
        let mean = step_mean(&homa.points);
        Ok(SizeCdf { shape: Shape::Step(homa.points), mean, stated_mean: Some(homa.stated_mean) })
    }

    /// Reads a CDF file, recognising its format from the first data line: a single number (the mean) means
    /// the HomaSimulation format with sizes in bytes, two numbers the HPCC format. Errors name the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<SizeCdf, WorkloadError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| WorkloadError::new(format!("cannot read CDF file {name}: {e}")))?;
        SizeCdf::parse_detected(&text).map_err(|e| e.with_file(&name))
    }

    /// Parses `text` in whichever of the two formats its first data line shows.
    fn parse_detected(text: &str) -> Result<SizeCdf, WorkloadError> {
        match parse::first_line_tokens(text)? {
            1 => SizeCdf::parse_homa(text, 1),
            _ => SizeCdf::parse_hpcc(text),
        }
    }

    /// One of the distributions embedded in this crate (see [`builtin_names`]). An unknown name gives an
    /// error that lists the known ones.
    pub fn builtin(name: &str) -> Result<SizeCdf, WorkloadError> {
        builtin::load(name)
    }

    /// A HomaSimulation head (ending below probability 1) continued by a generalized Pareto tail with
    /// shape `k` and scale `sigma` above the last head size, capped at `cap` bytes.
    fn with_pareto_tail(homa: parse::HomaPoints, k: f64, sigma: f64, cap: u64) -> SizeCdf {
        let (offset, prob_offset) = homa.points[homa.points.len() - 1];
        let tail = ParetoTail { offset, prob_offset, shape: k, scale: sigma, cap };
        let mean = step_mean(&homa.points) + (1.0 - prob_offset) * tail.mean();
        SizeCdf { shape: Shape::ParetoTail { head: homa.points, tail }, mean, stated_mean: Some(homa.stated_mean) }
    }

    /// Draws one size in bytes (at least 1).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match &self.shape {
            Shape::Linear(points) => sample_linear(points, rng.next_f64() * 100.0),
            Shape::Step(points) => sample_step(points, rng.next_f64()),
            Shape::ParetoTail { head, tail } => {
                let u = rng.next_f64();
                if u <= tail.prob_offset {
                    sample_step(head, u)
                } else {
                    tail.sample(u)
                }
            }
        }
    }

    /// The exact mean in bytes of the sizes [`SizeCdf::sample`] draws, including the truncation to whole
    /// bytes (HPCC format) and, for a Pareto tail, its rounding and cap. Used to turn a load into an
    /// arrival rate.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The mean written on the first line of a HomaSimulation file, in bytes (`None` for HPCC files). It is
    /// the publisher's figure, kept for comparison; [`SizeCdf::mean`] is what sampling gives.
    pub fn stated_mean(&self) -> Option<f64> {
        self.stated_mean
    }

    /// The largest size [`SizeCdf::sample`] can draw: the last point of the CDF, or for a Pareto tail its
    /// cap (an upper bound; the largest uniform draw below 1 reaches about 1.8e8 B for `memcached`).
    pub fn max(&self) -> u64 {
        match &self.shape {
            Shape::Linear(points) => whole_bytes(points[points.len() - 1].0),
            Shape::Step(points) => points[points.len() - 1].0.max(1),
            Shape::ParetoTail { tail, .. } => tail.cap,
        }
    }
}

/// A size truncated to whole bytes, at least 1 (as `traffic_gen.py` does with `int(size)`).
fn whole_bytes(size: f64) -> u64 {
    (size as u64).max(1)
}

/// Maps percentile `r` (0..100) to a size by interpolating between the surrounding points.
fn sample_linear(points: &[(f64, f64)], r: f64) -> u64 {
    let i = points.partition_point(|p| p.1 < r).min(points.len() - 1);
    if i == 0 {
        return whole_bytes(points[0].0);
    }
    let ((x0, y0), (x1, y1)) = (points[i - 1], points[i]);
    let x = x0 + (x1 - x0) / (y1 - y0) * (r - y0);
    whole_bytes(x.clamp(x0, x1))
}

/// Picks the first point whose cumulative probability is at least `u`.
fn sample_step(points: &[(u64, f64)], u: f64) -> u64 {
    let i = points.partition_point(|p| p.1 < u).min(points.len() - 1);
    points[i].0.max(1)
}

/// Exact mean of `max(1, floor(X))` for the piecewise-uniform `X` of linear interpolation.
fn linear_mean(points: &[(f64, f64)]) -> f64 {
    let (x_first, y_first) = points[0];
    let point_mass = y_first / 100.0 * whole_bytes(x_first) as f64;
    let segments: f64 =
        points.windows(2).map(|w| (w[1].1 - w[0].1) / 100.0 * uniform_whole_bytes_mean(w[0].0, w[1].0)).sum();
    point_mass + segments
}

/// Mean of `max(1, floor(X))` for `X` uniform on `[a, b]`.
fn uniform_whole_bytes_mean(a: f64, b: f64) -> f64 {
    if b <= a {
        return whole_bytes(a) as f64;
    }
    (whole_bytes_integral(b) - whole_bytes_integral(a)) / (b - a)
}

/// `∫_0^x max(1, floor(t)) dt` for `x >= 0`.
fn whole_bytes_integral(x: f64) -> f64 {
    let n = x.floor();
    n * (n - 1.0) / 2.0 + n * (x - n) + x.min(1.0)
}

/// Mean of step points: each size weighted by the probability step that reaches it.
fn step_mean(points: &[(u64, f64)]) -> f64 {
    let mut previous = 0.0;
    let mut sum = 0.0;
    for &(size, prob) in points {
        sum += size.max(1) as f64 * (prob - previous);
        previous = prob;
    }
    sum
}

/// Number of tail sizes summed term by term before the remainder is integrated.
const TAIL_TERMS: u64 = 10_000;

impl ParetoTail {
    /// The size for a uniform `u` above `prob_offset`.
    fn sample(&self, u: f64) -> u64 {
        let excess = (((1.0 - self.prob_offset) / (1.0 - u)).powf(self.shape) - 1.0) * self.scale / self.shape;
        let size = (self.offset as f64 + excess).round();
        if size > self.cap as f64 {
            self.cap
        } else {
            size as u64
        }
    }

    /// Survival function of the continuous excess over `offset`: `(1 + k y / sigma)^(-1/k)`.
    fn survival(&self, y: f64) -> f64 {
        (1.0 + self.shape * y / self.scale).powf(-1.0 / self.shape)
    }

    /// `∫_a^b survival(y) dy`.
    fn survival_integral(&self, a: f64, b: f64) -> f64 {
        let k = self.shape;
        let antiderivative = |y: f64| (1.0 + k * y / self.scale).powf(1.0 - 1.0 / k);
        self.scale / (1.0 - k) * (antiderivative(a) - antiderivative(b))
    }

    /// Mean size of a tail draw. With `c = cap - offset`, the drawn excess is `min(round(Y), c)`, whose mean
    /// is `sum_{n=1..c} P(Y >= n - 1/2)`: the first [`TAIL_TERMS`] terms are summed and the rest taken as
    /// the integral of the survival function (the midpoint rule, exact to far below a byte here).
    fn mean(&self) -> f64 {
        let c = self.cap - self.offset;
        let terms = TAIL_TERMS.min(c);
        let head: f64 = (1..=terms).map(|n| self.survival(n as f64 - 0.5)).sum();
        self.offset as f64 + head + self.survival_integral(terms as f64, c as f64)
    }
}

#[cfg(test)]
mod tests;
