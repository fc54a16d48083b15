//! Flow sizes drawn from a distribution, optionally scaled: what Poisson and closed-loop entries share.

use sluice_core::Rng;

use crate::SizeCdf;

/// A size distribution and an optional scale factor applied to every draw.
#[derive(Debug, Clone)]
pub struct FlowSizes {
    cdf: SizeCdf,
    scale: Option<f64>,
}

impl FlowSizes {
    /// Sizes from `cdf`, each multiplied by `scale` when one is given.
    pub fn new(cdf: SizeCdf, scale: Option<f64>) -> FlowSizes {
        FlowSizes { cdf, scale }
    }

    /// Draws one size in bytes (at least 1): a draw from the distribution, scaled and rounded.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let size = self.cdf.sample(rng);
        match self.scale {
            Some(scale) => ((size as f64 * scale).round() as u64).max(1),
            None => size,
        }
    }

    /// The mean of the scaled sizes, taken as `scale * mean` (rounding to whole bytes is ignored).
    pub fn mean(&self) -> f64 {
        self.cdf.mean() * self.scale.unwrap_or(1.0)
    }
}
