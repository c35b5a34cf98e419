//! Non-uniform random offsets (`random_distribution=`), written after the
//! concepts of fio's `lib/zipf.c` (Zipf via Gray et al.'s "Quickly
//! generating billion-record synthetic databases" inversion, Pareto as a
//! power of a uniform) and `lib/gauss.c` (a normal shape from the mean of
//! twelve uniforms), and `io_u.c: __get_next_rand_offset_zoned` (a zone by
//! its access share, a uniform block inside it). As in fio, the Zipf,
//! Pareto and normal ranks are scattered over the file by a hash, so the
//! hot blocks are spread out rather than packed at its start.

use crate::rng::Stream;
use crate::spec::{RandomDist, Zone, ZoneSize};

/// fio's `ZIPF_MAX_GEN`: the ζ(n) sum stops after this many terms.
const ZIPF_MAX_TERMS: u64 = 10_000_000;
/// Uniforms averaged for the normal shape (fio `GAUSS_ITERS`).
const GAUSS_ITERS: u64 = 12;

/// A distribution over the blocks `0..nblocks` of one file.
#[derive(Clone, Debug)]
pub(super) enum BlockDist {
    Zipf {
        nblocks: u64,
        theta: f64,
        zetan: f64,
        zeta2: f64,
    },
    Pareto {
        nblocks: u64,
        pow: f64,
    },
    Normal {
        nblocks: u64,
        /// Spread added around the mean, in blocks.
        dev_blocks: u64,
    },
    /// Zones as (first block, blocks, cumulative access percent).
    Zoned(Vec<(u64, u64, u32)>),
}

impl BlockDist {
    /// The distribution for a file of `nblocks` blocks of `unit` bytes;
    /// `None` for the uniform default.
    pub(super) fn new(d: &RandomDist, nblocks: u64, unit: u64) -> Option<Self> {
        let n = nblocks.max(1);
        match d {
            RandomDist::Random => None,
            RandomDist::Zipf(theta) => {
                let terms = n.min(ZIPF_MAX_TERMS);
                let zetan = (1..=terms).map(|i| 1.0 / (i as f64).powf(*theta)).sum();
                let zeta2 = 1.0 + 1.0 / 2f64.powf(*theta);
                Some(BlockDist::Zipf {
                    nblocks: n,
                    theta: *theta,
                    zetan,
                    zeta2,
                })
            }
            RandomDist::Pareto(h) => Some(BlockDist::Pareto {
                nblocks: n,
                pow: h.ln() / (1.0 - h).ln(),
            }),
            RandomDist::Normal(dev) => Some(BlockDist::Normal {
                nblocks: n,
                dev_blocks: (n as f64 * dev / 100.0) as u64,
            }),
            RandomDist::Zoned(zones) => Some(BlockDist::Zoned(zone_table(zones, n, unit))),
        }
    }

    /// The next block.
    pub(super) fn next(&self, rng: &mut Stream) -> u64 {
        match self {
            BlockDist::Zipf {
                nblocks,
                theta,
                zetan,
                zeta2,
            } => scatter(zipf_rank(*nblocks, *theta, *zetan, *zeta2, rng), *nblocks),
            BlockDist::Pareto { nblocks, pow } => {
                let rank = ((*nblocks - 1) as f64 * rng.unit().powf(*pow)) as u64;
                scatter(rank, *nblocks)
            }
            BlockDist::Normal {
                nblocks,
                dev_blocks,
            } => scatter(normal_rank(*nblocks, *dev_blocks, rng), *nblocks),
            BlockDist::Zoned(table) => zoned_block(table, rng),
        }
    }
}

/// The 0-based rank of a Zipf(θ) draw over `n` ranks (fio `zipf_next`'s
/// inversion: ranks 1 and 2 exactly, the tail by the closed form).
fn zipf_rank(n: u64, theta: f64, zetan: f64, zeta2: f64, rng: &mut Stream) -> u64 {
    let alpha = 1.0 / (1.0 - theta);
    let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let u = rng.unit();
    let uz = u * zetan;
    let rank1 = if uz < 1.0 {
        1
    } else if uz < 1.0 + 0.5f64.powf(theta) {
        2
    } else {
        1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
    };
    (rank1 - 1).min(n - 1)
}

/// Mean of twelve uniforms over `[0, n]`, plus a uniform spread of
/// `dev` blocks around it (fio `gauss_next`, `gauss_dev`).
fn normal_rank(n: u64, dev: u64, rng: &mut Stream) -> u64 {
    let sum: u64 = (0..GAUSS_ITERS).map(|_| rng.below(n + 1)).sum();
    let mean = sum.div_ceil(GAUSS_ITERS);
    let v = if dev > 0 {
        let jitter = rng.below(dev) as i64 - (dev / 2) as i64;
        (mean as i64 + jitter).clamp(0, n as i64 - 1) as u64
    } else {
        mean
    };
    v.min(n - 1)
}

/// A rank spread over the file (splitmix64's finaliser, then modulo), so
/// the frequently drawn ranks are not neighbours.
fn scatter(rank: u64, n: u64) -> u64 {
    let mut z = rank.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % n
}

/// Zones laid end to end over the file: (first block, blocks, cumulative
/// access percent). A zone past the end of the file is cut there.
fn zone_table(zones: &[Zone], n: u64, unit: u64) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::with_capacity(zones.len());
    let mut first = 0u64;
    let mut cum = 0u32;
    for z in zones {
        let blocks = match z.size {
            ZoneSize::Percent(p) => n * u64::from(p) / 100,
            ZoneSize::Bytes(b) => b / unit.max(1),
        }
        .min(n.saturating_sub(first))
        .max(1);
        cum += z.access_pct;
        out.push((first.min(n - 1), blocks, cum));
        first += blocks;
    }
    out
}

/// A zone drawn by access share (1..=100), a uniform block inside it.
fn zoned_block(table: &[(u64, u64, u32)], rng: &mut Stream) -> u64 {
    let v = rng.between(1, 100) as u32;
    let (first, blocks, _) = table
        .iter()
        .find(|z| v <= z.2)
        .or(table.last())
        .copied()
        .unwrap_or((0, 1, 100));
    first + rng.below(blocks.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(d: &RandomDist, n: u64, draws: usize) -> Vec<u64> {
        let dist = BlockDist::new(d, n, 4096).unwrap();
        let mut rng = Stream::new(1, 0, 1);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[dist.next(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let mut c = counts(&RandomDist::Zipf(1.2), 1000, 100_000);
        c.sort_unstable_by(|a, b| b.cmp(a));
        // the hottest 1% of blocks take far more than 1% of the draws
        let top: u64 = c[..10].iter().sum();
        assert!(top > 30_000, "top 10 blocks got {top}");
    }

    #[test]
    fn zoned_shares_follow_the_spec() {
        let zones = vec![
            Zone {
                access_pct: 50,
                size: ZoneSize::Percent(5),
            },
            Zone {
                access_pct: 30,
                size: ZoneSize::Percent(15),
            },
            Zone {
                access_pct: 20,
                size: ZoneSize::Percent(80),
            },
        ];
        let c = counts(&RandomDist::Zoned(zones), 1000, 100_000);
        let first: u64 = c[..50].iter().sum();
        let second: u64 = c[50..200].iter().sum();
        assert!((48_000..52_000).contains(&first), "{first}");
        assert!((28_000..32_000).contains(&second), "{second}");
    }

    #[test]
    fn normal_centres_on_the_middle_before_scatter() {
        let mut rng = Stream::new(3, 0, 1);
        let mid = (0..10_000)
            .map(|_| normal_rank(1000, 0, &mut rng))
            .filter(|r| (400..600).contains(r))
            .count();
        // sd of the mean of 12 uniforms over 1000: ~83 blocks, so ±100 holds ~77%
        assert!(mid > 7_000, "{mid}");
    }

    #[test]
    fn pareto_is_skewed() {
        let mut c = counts(&RandomDist::Pareto(0.2), 1000, 50_000);
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = c[..100].iter().sum();
        assert!(top > 25_000, "top 10% got {top}");
    }
}
