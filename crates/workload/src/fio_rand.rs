//! fio 3.33's own random generators and seeds, for the draws whose exact
//! sequence shows in what a job does: the block size of each IO
//! (`bssplit`, `bsrange`). With these, the same job draws the same sizes
//! under fio and blkqos, IO for IO.
//!
//! * [`FioRand`]: `struct frand_state` — L'Ecuyer's combined Tausworthe
//!   generators, `taus88` (32-bit, `random_generator=tausworthe`, fio's
//!   default) and `taus258` (64-bit, `tausworthe64`), seeded by an LCG and
//!   cranked six times (`lib/rand.c`: `__init_rand32`, `__init_rand64`;
//!   `lib/rand.h`: `__rand32`, `__rand64`).
//! * [`purpose_seed`]: `td->rand_seeds[i]` of a repeatable job
//!   (`init.c`: `setup_random_seeds`): the job's `randseed` (default
//!   0x89) multiplied by 0x9e370001 four times, then once more per index,
//!   times the job's `thread_number`, plus the index.

/// fio's `randseed` default (`options.c`: `.def = "0x89"`).
pub const FIO_RAND_SEED_DEFAULT: u64 = 0x89;
/// The multiplier of `setup_random_seeds`.
const SEED_MUL: u64 = 0x9e37_0001;

/// Indices into fio's `rand_seeds[]` (`enum { FIO_RAND_BS_OFF, ... }`).
pub mod seed_index {
    /// `FIO_RAND_BS_OFF`: the read block sizes.
    pub const BS_READ: u64 = 0;
    /// `FIO_RAND_BS1_OFF`: the write block sizes.
    pub const BS_WRITE: u64 = 1;
    /// `FIO_RAND_BS2_OFF`: the trim block sizes.
    pub const BS_TRIM: u64 = 2;
    /// `FIO_RAND_MIX_OFF`: the read/write mix.
    pub const MIX: u64 = 4;
}

/// `td->rand_seeds[index]` of job `thread_number` (1-based over every job
/// of the run) whose `randseed` is `rand_seed` (`setup_random_seeds`).
pub fn purpose_seed(rand_seed: u64, thread_number: u64, index: u64) -> u64 {
    let mut seed = rand_seed;
    for _ in 0..4 + index {
        seed = seed.wrapping_mul(SEED_MUL);
    }
    seed.wrapping_mul(thread_number).wrapping_add(index)
}

/// One fio generator (`struct frand_state`).
#[derive(Clone, Debug)]
pub enum FioRand {
    /// `taus88`: three 32-bit components.
    Taus88([u32; 3]),
    /// `taus258`: five 64-bit components.
    Taus258([u64; 5]),
}

/// `__seed`: a component below its minimum is moved up by it (the
/// components' top bits must not all be zero).
fn at_least<T: PartialOrd + std::ops::Add<Output = T> + Copy>(x: T, m: T) -> T {
    if x < m {
        x + m
    } else {
        x
    }
}

/// The LCG's first input: `(2^31) + (2^17) + (2^7)` as C evaluates it
/// (`^` is XOR): 29 + 19 + 5.
const LCG_START: u64 = (2 ^ 31) + (2 ^ 17) + (2 ^ 7);

impl FioRand {
    /// `init_rand_seed(state, seed, use64)`: the 32-bit generator takes
    /// the seed's low 32 bits.
    pub fn new(seed: u64, use64: bool) -> Self {
        if use64 {
            // __init_rand64: LCG64(x) = x * 6906969069 ^ seed
            let lcg = |x: u64| x.wrapping_mul(6_906_969_069) ^ seed;
            let mut s = [0u64; 5];
            let minimum = [1, 7, 15, 33, 49];
            let mut prev = LCG_START;
            for (k, m) in minimum.into_iter().enumerate() {
                s[k] = at_least(lcg(prev), m);
                prev = s[k];
            }
            let mut g = FioRand::Taus258(s);
            for _ in 0..6 {
                g.next_u64();
            }
            g
        } else {
            // __init_rand32: LCG(x) = x * 69069 ^ seed, in 32 bits
            let seed = seed as u32;
            let lcg = |x: u32| x.wrapping_mul(69_069) ^ seed;
            let mut s = [0u32; 3];
            let mut prev = LCG_START as u32;
            for (k, m) in [1u32, 7, 15].into_iter().enumerate() {
                s[k] = at_least(lcg(prev), m);
                prev = s[k];
            }
            let mut g = FioRand::Taus88(s);
            for _ in 0..6 {
                g.next_u64();
            }
            g
        }
    }

    /// `rand_max`: the largest value [`FioRand::next_u64`] returns.
    pub fn max(&self) -> u64 {
        match self {
            FioRand::Taus88(_) => u64::from(u32::MAX),
            FioRand::Taus258(_) => u64::MAX,
        }
    }

    /// `rand_between(state, lo, hi)`: uniform in `[lo, hi]`, as fio scales
    /// a draw (`rand32_upto`, `rand64_upto`: through a double).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        let span = (hi - lo + 1) as f64;
        let r = self.next_u64() as f64;
        let frac = match self {
            FioRand::Taus88(_) => r / (1u64 << 32) as f64,
            FioRand::Taus258(_) => r / (2.0 * (1u64 << 63) as f64),
        };
        lo + (span * frac) as u64
    }

    /// `__rand`: the next value, at most [`FioRand::max`].
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        match self {
            FioRand::Taus88(s) => {
                // __rand32: TAUSWORTHE(s, a, b, c, d) =
                // ((s & c) << d) ^ (((s << a) ^ s) >> b)
                let t =
                    |s: u32, a: u32, b: u32, c: u32, d: u32| ((s & c) << d) ^ (((s << a) ^ s) >> b);
                s[0] = t(s[0], 13, 19, 0xffff_fffe, 12);
                s[1] = t(s[1], 2, 25, 0xffff_fff8, 4);
                s[2] = t(s[2], 3, 11, 0xffff_fff0, 17);
                u64::from(s[0] ^ s[1] ^ s[2])
            }
            FioRand::Taus258(s) => {
                // __rand64: (shift a, shift b, mask, shift d) per component
                let step = |x: u64, a: u32, b: u32, mask: u64, d: u32| {
                    ((x & mask) << d) ^ (((x << a) ^ x) >> b)
                };
                s[0] = step(s[0], 1, 53, 0xffff_ffff_ffff_fffe, 10);
                s[1] = step(s[1], 24, 50, 0xffff_ffff_ffff_fe00, 5);
                s[2] = step(s[2], 3, 23, 0xffff_ffff_ffff_f000, 29);
                s[3] = step(s[3], 5, 24, 0xffff_ffff_fffe_0000, 23);
                s[4] = step(s[4], 3, 33, 0xffff_ffff_ff80_0000, 8);
                s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masks_are_the_kernels_decimal_constants() {
        // lib/rand.h writes the 64-bit masks in decimal
        assert_eq!(0xffff_ffff_ffff_fffe_u64, 18446744073709551614);
        assert_eq!(0xffff_ffff_ffff_fe00_u64, 18446744073709551104);
        assert_eq!(0xffff_ffff_ffff_f000_u64, 18446744073709547520);
        assert_eq!(0xffff_ffff_fffe_0000_u64, 18446744073709420544);
        assert_eq!(0xffff_ffff_ff80_0000_u64, 18446744073701163008);
        assert_eq!(0xffff_fffe_u32, 4294967294);
        assert_eq!(0xffff_fff8_u32, 4294967288);
        assert_eq!(0xffff_fff0_u32, 4294967280);
        assert_eq!(LCG_START, 53);
    }

    #[test]
    fn seeds_chain_as_setup_random_seeds_does() {
        let m = SEED_MUL;
        let base = 0x89u64
            .wrapping_mul(m)
            .wrapping_mul(m)
            .wrapping_mul(m)
            .wrapping_mul(m);
        assert_eq!(purpose_seed(0x89, 1, 0), base);
        assert_eq!(
            purpose_seed(0x89, 3, 1),
            base.wrapping_mul(m).wrapping_mul(3) + 1
        );
    }

    #[test]
    fn the_generators_stay_in_range_and_differ_by_seed() {
        let mut a = FioRand::new(1, false);
        let mut b = FioRand::new(2, false);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_ne!(va, vb);
        assert!(va.iter().all(|&v| v <= u64::from(u32::MAX)));
        let mut c = FioRand::new(1, true);
        let vc: Vec<u64> = (0..1000).map(|_| c.next_u64()).collect();
        // a 64-bit generator uses its top bits
        assert!(vc.iter().any(|&v| v > u64::from(u32::MAX)));
    }
}
