//! Seeded random streams. Each job clone owns independent streams for
//! offsets, direction mix, block sizes and Poisson arrivals (fio keeps one
//! state per purpose too), so changing one option does not perturb the
//! others' sequences.

use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic stream (xoshiro256++).
#[derive(Clone, Debug)]
pub struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// A stream for `purpose` of job clone `clone` from a base seed.
    pub fn new(seed: u64, clone: u32, purpose: u64) -> Self {
        // splitmix-style mixing so nearby seeds give unrelated streams
        let mut z = seed ^ (u64::from(clone) << 32) ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Stream(Xoshiro256PlusPlus::seed_from_u64(z))
    }
    /// Uniform in `[0, n)`; `n` must be > 0.
    ///
    /// rand 0.8's `gen_range(0..n)` for `u64` written out
    /// (`UniformInt::sample_single_inclusive`: a widening multiply,
    /// rejected below its zone), the same draws giving the same values, so
    /// that it inlines into the per-IO offset draw.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "cannot sample empty range");
        let zone = (n << n.leading_zeros()).wrapping_sub(1);
        loop {
            let m = u128::from(self.0.next_u64()) * u128::from(n);
            if m as u64 <= zone {
                return (m >> 64) as u64;
            }
        }
    }
    /// Uniform in `[lo, hi]`.
    #[inline]
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0.gen_range(lo..=hi)
    }
    /// Uniform in `(0, 1]` (safe for `-ln U`).
    #[inline]
    pub fn unit_open0(&mut self) -> f64 {
        let v = (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        1.0 - v
    }
    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `below` draws exactly what rand's `gen_range(0..n)` draws.
    #[test]
    fn below_is_gen_range() {
        let ns = [
            1,
            2,
            3,
            7,
            100,
            1000,
            4096,
            (1 << 24) + 1,
            16_777_216,
            (1 << 40) - 3,
            u64::MAX / 3,
            (1 << 63) + 5,
            u64::MAX,
        ];
        for (i, &n) in ns.iter().enumerate() {
            let mut a = Stream::new(11, i as u32, 1);
            let mut b = a.clone();
            for _ in 0..2000 {
                assert_eq!(a.below(n), b.0.gen_range(0..n), "n = {n}");
            }
        }
    }
}
