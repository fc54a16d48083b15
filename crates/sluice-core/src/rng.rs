//! Deterministic random streams: xoshiro256** seeded through SplitMix64.
//!
//! Each component draws from its own stream, derived from the scenario seed and a stable stream id, so
//! adding a random draw in one component never shifts the numbers another component sees.

/// A deterministic pseudo-random generator (xoshiro256**, Blackman and Vigna 2018).
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of a stream name (FNV-1a), independent of the Rust version.
pub fn stream_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3))
}

impl Rng {
    /// A generator for stream `stream` under scenario seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.rotate_left(32) ^ 0x005E_ED51_u64;
        let mut state = [0; 4];
        for word in &mut state {
            *word = splitmix64(&mut x);
        }
        Rng { state }
    }

    /// A generator for the named stream (`"workload.0"`, `"switch.12.ecn"`).
    pub fn named(seed: u64, name: &str) -> Rng {
        Rng::new(seed, stream_id(name))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform float in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[0, n)`; `n` must be positive. Uses Lemire's multiply-shift (bias below
    /// 2^-64 * n, negligible for simulation).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// An exponentially distributed float with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::named(7, "a");
                move |_| r.next_u64()
            })
            .collect();
        let again: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::named(7, "a");
                move |_| r.next_u64()
            })
            .collect();
        let other_seed: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::named(8, "a");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, again);
        assert_ne!(a, other_seed);
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = Rng::new(1, 2);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((mean - 3.0).abs() < 0.03, "mean {mean}");
        let below: Vec<u64> = (0..1000).map(|_| r.below(10)).collect();
        assert!(below.iter().all(|&x| x < 10));
        assert!((0..10).all(|v| below.contains(&v)));
    }
}
