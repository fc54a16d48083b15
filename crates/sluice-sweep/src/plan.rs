//! The plan: every run of a sweep, in a fixed order, as the settings it applies to the base scenario.
//!
//! Points come from the grid of the axes (the first axis varies slowest) or from a sample of it; each
//! point runs once per seed. The count is known before anything is listed, so a sweep of 10^9 runs is
//! refused without being built.

use std::collections::BTreeSet;

use sluice_core::Rng;
use toml::Value;

use crate::axes::Axis;
use crate::error::SweepError;
use crate::spec::{Method, SampleSpec, Seeds, SweepSource};

/// One run: the values of the swept keys, and the seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// `(key, value)` for every swept key, in axis order.
    pub settings: Vec<(String, Value)>,
    /// The run's seed; `None` keeps the scenario's.
    pub seed: Option<u64>,
}

impl Point {
    /// The settings as `--set` arguments (`cc.params.g=0.0625`, strings quoted).
    pub fn sets(&self) -> Vec<String> {
        self.settings.iter().map(|(key, value)| format!("{key}={value}")).collect()
    }
}

/// How many runs a sweep has: points times seeds, saturating at `u64::MAX`.
pub fn count(axes: &[Axis], sample: Option<&SampleSpec>, seeds: usize) -> u64 {
    let points = match sample {
        Some(s) => s.points,
        None => axes.iter().map(|a| a.positions().unwrap_or(0) as u64).fold(1u64, u64::saturating_mul),
    };
    points.saturating_mul(seeds as u64)
}

/// The seeds each point runs with: `[None]` (the scenario's) without `seeds`.
pub fn seeds(source: &SweepSource, scenario_seed: u64) -> Result<Vec<Option<u64>>, SweepError> {
    let Some(spanned) = &source.file.seeds else {
        return Ok(vec![None]);
    };
    let at = |message: &str| SweepError::at_line(&source.path, source.line(spanned.span().start), message.to_string());
    match spanned.get_ref() {
        Seeds::Count(0) => Err(at("seeds: give at least 1 (a count) or a list of seeds")),
        Seeds::Count(n) => {
            let n = usize::try_from(*n).map_err(|_| at("seeds: too many"))?;
            Ok((0..n as u64).map(|i| Some(scenario_seed.wrapping_add(i))).collect())
        }
        Seeds::List(list) if list.is_empty() => Err(at("seeds: the list is empty")),
        Seeds::List(list) => {
            if list.iter().collect::<BTreeSet<_>>().len() != list.len() {
                return Err(at("seeds: a seed is listed twice"));
            }
            Ok(list.iter().map(|&s| Some(s)).collect())
        }
    }
}

/// Lists the points: the whole grid, or the sample. Call [`count`] first to bound the work.
pub fn points(axes: &[Axis], sample: Option<&SampleSpec>, seeds: &[Option<u64>]) -> Vec<Point> {
    let combos = match sample {
        None => grid(axes),
        Some(s) => match s.method {
            Method::Random => random(axes, s),
            Method::LatinHypercube => latin_hypercube(axes, s),
        },
    };
    let mut points = Vec::with_capacity(combos.len() * seeds.len());
    for values in combos {
        let settings: Vec<(String, Value)> = axes
            .iter()
            .zip(values)
            .flat_map(|(axis, tuple)| axis.keys.iter().cloned().zip(tuple).collect::<Vec<_>>())
            .collect();
        for seed in seeds {
            points.push(Point { settings: settings.clone(), seed: *seed });
        }
    }
    points
}

/// Every combination, the first axis varying slowest.
fn grid(axes: &[Axis]) -> Vec<Vec<Vec<Value>>> {
    let lens: Vec<usize> = axes.iter().map(|a| a.positions().unwrap_or(0)).collect();
    let total = lens.iter().product::<usize>();
    (0..total).map(|index| decode(axes, &lens, index as u64)).collect()
}

/// The grid point with mixed-radix number `index` (the last axis is the lowest digit).
fn decode(axes: &[Axis], lens: &[usize], mut index: u64) -> Vec<Vec<Value>> {
    let mut positions = vec![0; axes.len()];
    for (i, &len) in lens.iter().enumerate().rev() {
        positions[i] = (index % len as u64) as usize;
        index /= len as u64;
    }
    axes.iter().zip(positions).map(|(a, p)| a.at(p)).collect()
}

/// Uniform draws: distinct grid points (in grid order) when every axis is discrete, else independent
/// draws per axis.
fn random(axes: &[Axis], sample: &SampleSpec) -> Vec<Vec<Vec<Value>>> {
    let mut rng = Rng::named(sample.seed, "sweep.random");
    let lens: Option<Vec<usize>> = axes.iter().map(Axis::positions).collect();
    match lens {
        Some(lens) => {
            let total = lens.iter().map(|&l| l as u64).fold(1u64, u64::saturating_mul);
            if sample.points >= total {
                return grid(axes);
            }
            let mut chosen = BTreeSet::new();
            while (chosen.len() as u64) < sample.points {
                chosen.insert(rng.below(total));
            }
            chosen.into_iter().map(|index| decode(axes, &lens, index)).collect()
        }
        None => (0..sample.points).map(|_| axes.iter().map(|a| a.at_fraction(rng.next_f64())).collect()).collect(),
    }
}

/// Latin hypercube: each axis is cut into `points` equal strata, each used by exactly one point, in an
/// order shuffled independently per axis; within a stratum the position is uniform.
fn latin_hypercube(axes: &[Axis], sample: &SampleSpec) -> Vec<Vec<Vec<Value>>> {
    let mut rng = Rng::named(sample.seed, "sweep.latin_hypercube");
    let n = sample.points as usize;
    let strata: Vec<Vec<usize>> = axes.iter().map(|_| shuffled(n, &mut rng)).collect();
    (0..n)
        .map(|j| {
            axes.iter()
                .zip(&strata)
                .map(|(axis, order)| axis.at_fraction((order[j] as f64 + rng.next_f64()) / n as f64))
                .collect()
        })
        .collect()
}

/// `0..n` in a uniformly random order (Fisher-Yates).
fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axes::axes;
    use std::path::Path;

    fn source(text: &str) -> SweepSource {
        SweepSource::parse(Path::new("s.toml"), format!("scenario = \"x.toml\"\n{text}")).unwrap()
    }

    fn plan(text: &str) -> Vec<Point> {
        let s = source(text);
        let axes = axes(&s).unwrap();
        let sample = s.file.sample.as_ref().map(|x| x.get_ref().clone());
        points(&axes, sample.as_ref(), &seeds(&s, 1).unwrap())
    }

    const TWO_AXES: &str =
        "[[axis]]\nkey = \"a\"\nvalues = [1, 2, 3]\n[[axis]]\nkey = \"b\"\nvalues = [\"x\", \"y\"]\n";

    #[test]
    fn the_grid_varies_the_first_axis_slowest_and_repeats_seeds() {
        let p = plan(&format!("seeds = 2\n{TWO_AXES}"));
        assert_eq!(p.len(), 12);
        assert_eq!(p[0].sets(), ["a=1", "b=\"x\""]);
        assert_eq!((p[0].seed, p[1].seed), (Some(1), Some(2)));
        assert_eq!(p[2].sets(), ["a=1", "b=\"y\""]);
        assert_eq!(p[4].sets(), ["a=2", "b=\"x\""]);
    }

    #[test]
    fn counts_saturate_instead_of_listing() {
        let s = source("[[axis]]\nkey = \"a\"\nrange = { start = 0, stop = 999999, step = 1 }\n[[axis]]\nkey = \"b\"\nrange = { start = 0, stop = 999999, step = 1 }\n");
        assert_eq!(count(&axes(&s).unwrap(), None, 3), 3_000_000_000_000);
    }

    #[test]
    fn random_samples_are_distinct_grid_points_and_repeatable() {
        let text = format!("[sample]\nmethod = \"random\"\npoints = 4\nseed = 9\n{TWO_AXES}");
        let p = plan(&text);
        assert_eq!(p.len(), 4);
        let distinct: BTreeSet<Vec<String>> = p.iter().map(Point::sets).collect();
        assert_eq!(distinct.len(), 4);
        assert_eq!(p, plan(&text), "the same seed draws the same points");
    }

    #[test]
    fn a_latin_hypercube_uses_every_stratum_once() {
        let p = plan("[sample]\nmethod = \"latin_hypercube\"\npoints = 5\n[[axis]]\nkey = \"g\"\nrange = { start = 0.0, stop = 1.0 }\n[[axis]]\nkey = \"k\"\nvalues = [1, 2, 3, 4, 5]\n");
        let mut g_strata: Vec<usize> =
            p.iter().map(|pt| (pt.settings[0].1.as_float().unwrap() * 5.0) as usize).collect();
        g_strata.sort_unstable();
        assert_eq!(g_strata, [0, 1, 2, 3, 4]);
        let mut k: Vec<i64> = p.iter().map(|pt| pt.settings[1].1.as_integer().unwrap()).collect();
        k.sort_unstable();
        assert_eq!(k, [1, 2, 3, 4, 5], "five strata of five values: each value once");
    }

    #[test]
    fn bad_seeds_are_located() {
        let s = source("seeds = [3, 3]\n");
        assert!(seeds(&s, 1).unwrap_err().to_string().contains("s.toml:2: seeds: a seed is listed twice"));
        assert!(seeds(&source("seeds = 0\n"), 1).is_err());
    }
}
