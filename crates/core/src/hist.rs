//! fio's latency histogram and percentile rule, reproduced exactly.
//!
//! fio 3.33 (`stat.h`, `stat.c: plat_val_to_idx / plat_idx_to_val /
//! calc_clat_percentiles`) keeps latencies (ns) in 29 groups × 64 buckets:
//! values 0..127 are exact; above, each power of two is cut into 64 equal
//! buckets (≤ 1/128 relative error). A percentile `p` of `N` samples is the
//! first bucket whose cumulative count reaches `p/100 · N` (nearest rank),
//! reported as the bucket's *midpoint* — so a percentile may exceed `max`.
//!
//! Recording is one array increment: no allocation per IO. The buckets
//! (14.5 KiB) are allocated at the first sample, so the many histograms a
//! job keeps for directions and latency kinds it never records cost
//! nothing (4088 job clones, fio's maximum, each keep ten).

/// log2 of the buckets per power-of-two group.
pub const PLAT_BITS: u32 = 6;
/// Buckets per group.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Number of groups.
pub const PLAT_GROUP_NR: usize = 29;
/// Total buckets per histogram (1856).
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Bucket index of a latency value in ns (`plat_val_to_idx`).
#[inline]
pub fn val_to_idx(v: u64) -> usize {
    let msb = if v == 0 { 0 } else { 63 - v.leading_zeros() };
    if msb <= PLAT_BITS {
        return v as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as u64 + 1) << PLAT_BITS;
    let offset = (v >> error_bits) & (PLAT_VAL - 1);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value fio reports for a bucket (`plat_idx_to_val`): its midpoint.
#[inline]
pub fn idx_to_val(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    // base + (k + 0.5) * 2^error_bits, exact for error_bits >= 1
    base + ((2 * k + 1) << error_bits) / 2
}

/// Exact test of `cum >= p/100 * n` for a double `p` (fio evaluates it in
/// long double; exact rational comparison agrees with it).
fn reaches(cum: u64, p: f64, n: u64) -> bool {
    if p.is_nan() || p <= 0.0 {
        return true;
    }
    // p = m * 2^e exactly
    let bits = p.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    // compare cum*100 >= m * 2^e * n
    let lhs = cum as u128 * 100;
    let rhs = m as u128 * n as u128;
    if e >= 0 {
        match rhs.checked_shl(e as u32) {
            Some(r) if (r >> e) == rhs => lhs >= r,
            _ => false,
        }
    } else {
        let s = (-e) as u32;
        if s >= 128 {
            return lhs > 0 || rhs == 0;
        }
        match lhs.checked_shl(s) {
            Some(l) if (l >> s) == lhs => l >= rhs,
            _ => true, // lhs * 2^s overflows u128, so it is larger than rhs (< 2^117)
        }
    }
}

/// A latency histogram with fio's buckets.
#[derive(Clone)]
pub struct LatHist {
    /// None until the first sample (all zero).
    buckets: Option<Box<[u64; PLAT_NR]>>,
    n: u64,
}

impl Default for LatHist {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LatHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatHist(n={})", self.n)
    }
}

impl LatHist {
    /// An empty histogram; its buckets are allocated at the first sample.
    pub fn new() -> Self {
        LatHist {
            buckets: None,
            n: 0,
        }
    }
    /// The buckets, allocated (zero) on first use.
    #[inline]
    fn buckets_mut(&mut self) -> &mut [u64; PLAT_NR] {
        self.buckets.get_or_insert_with(|| Box::new([0; PLAT_NR]))
    }
    /// Count one latency sample of `ns` nanoseconds (fio's `add_lat_sample`
    /// → `plat_val_to_idx`).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets_mut()[val_to_idx(ns)] += 1;
        self.n += 1;
    }
    /// Number of samples recorded (merged ones included).
    pub fn count(&self) -> u64 {
        self.n
    }
    /// Add `other`'s buckets and sample count to this histogram (as fio's
    /// group reporting adds the jobs' `io_u_plat` arrays).
    pub fn merge(&mut self, other: &LatHist) {
        if let Some(theirs) = &other.buckets {
            for (a, b) in self.buckets_mut().iter_mut().zip(theirs.iter()) {
                *a += *b;
            }
        }
        self.n += other.n;
    }
    /// Forget every sample; keeps the bucket allocation.
    pub fn clear(&mut self) {
        if let Some(b) = &mut self.buckets {
            b.fill(0);
        }
        self.n = 0;
    }
    /// Every bucket's count in order (none before the first sample).
    fn counts(&self) -> impl Iterator<Item = &u64> + '_ {
        self.buckets.iter().flat_map(|b| b.iter())
    }
    /// Every bucket's count in fio's order, [`PLAT_NR`] of them (zeros
    /// before the first sample): fio's `io_u_plat` array.
    pub fn all_counts(&self) -> impl Iterator<Item = u64> + '_ {
        let none = self.buckets.is_none();
        self.counts()
            .copied()
            .chain(std::iter::repeat_n(0, if none { PLAT_NR } else { 0 }))
    }
    /// Non-empty buckets as (reported value, count): json+ `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (idx_to_val(i), c))
    }
    /// Percentiles for `list` (any order; fio sorts it), returned in sorted
    /// order as (p, value_ns). Empty if the histogram is empty.
    pub fn percentiles(&self, list: &[f64]) -> Vec<(f64, u64)> {
        let mut plist: Vec<f64> = list.to_vec();
        plist.sort_by(|a, b| a.total_cmp(b));
        let mut out = Vec::with_capacity(plist.len());
        if self.n == 0 || plist.is_empty() {
            return out;
        }
        let mut cum = 0u64;
        let mut j = 0;
        'outer: for (i, &c) in self.counts().enumerate() {
            cum += c;
            while reaches(cum, plist[j], self.n) {
                out.push((plist[j], idx_to_val(i)));
                j += 1;
                if j == plist.len() {
                    break 'outer;
                }
            }
        }
        out
    }
}

/// min/max/mean/stddev of a sample stream as fio keeps them (`add_stat_sample`:
/// Welford's update; stddev uses n−1; merging uses the parallel formula of
/// `sum_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatStat {
    /// Smallest sample, in the samples' unit (ns for latencies); 0 if none.
    pub min: u64,
    /// Largest sample, in the samples' unit; 0 if none.
    pub max: u64,
    /// Number of samples.
    pub n: u64,
    /// Running mean (Welford), in the samples' unit.
    pub mean: f64,
    /// Sum of squared deviations (Welford's M2).
    pub m2: f64,
}

impl LatStat {
    /// Add one sample `v` (fio's `add_stat_sample`).
    #[inline]
    pub fn add(&mut self, v: u64) {
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        let val = v as f64;
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.n as f64 + 1.0);
            self.m2 += delta * (val - self.mean);
        }
        self.n += 1;
    }
    /// Sample standard deviation (divides by n−1, as fio does); 0 with fewer
    /// than two samples.
    pub fn stddev(&self) -> f64 {
        if self.n <= 1 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).sqrt()
        }
    }
    /// Pooled merge (fio `sum_stat` with the parallel-variance formula).
    pub fn merge(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        let n1 = self.n as f64;
        let n2 = o.n as f64;
        let delta = o.mean - self.mean;
        let mean = (n1 * self.mean + n2 * o.mean) / (n1 + n2);
        self.m2 = self.m2 + o.m2 + delta * delta * n1 * n2 / (n1 + n2);
        self.mean = mean;
        self.n += o.n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_edges() {
        for v in 0..128 {
            assert_eq!(val_to_idx(v), v as usize);
            assert_eq!(idx_to_val(v as usize), v);
        }
        // 128..255: one value per... 2 values per bucket (error_bits = 1)
        assert_eq!(val_to_idx(128), 128);
        assert_eq!(val_to_idx(129), 128);
        assert_eq!(val_to_idx(130), 129);
        assert_eq!(idx_to_val(128), 129); // 128 + 0.5*2
                                          // last bucket
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
        assert_eq!(idx_to_val(PLAT_NR - 1), 17_112_760_320);
        assert_eq!(val_to_idx(1 << 34), PLAT_NR - 1);
    }

    #[test]
    fn midpoints_inside_buckets() {
        for idx in 128..PLAT_NR - 1 {
            let v = idx_to_val(idx);
            assert_eq!(val_to_idx(v), idx, "idx {idx} v {v}");
        }
    }

    #[test]
    fn reported_values_from_fio_json() {
        // values that appear in fio 3.33 JSON output (fio 3.33's json+ `bins`)
        for v in [18048u64, 28032, 35072, 244736, 708608, 4620288, 823296] {
            assert_eq!(idx_to_val(val_to_idx(v)), v, "{v}");
        }
        // 820831 (a max) is reported as 823296 (percentile above max)
        assert_eq!(idx_to_val(val_to_idx(820_831)), 823_296);
    }

    #[test]
    fn nearest_rank() {
        let mut h = LatHist::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let p = h.percentiles(&[50.0, 99.0, 1.0, 100.0]);
        assert_eq!(p, vec![(1.0, 1), (50.0, 50), (99.0, 99), (100.0, 100)]);
        // 99.9 of 1000 equal samples at 10 → rank 1000 (99.9 as a double is
        // slightly above 99.9, so 999 samples do not reach it)
        let mut h = LatHist::new();
        for v in 0..999 {
            h.record(10 + (v % 2));
        }
        h.record(5000);
        let p = h.percentiles(&[99.9]);
        assert_eq!(p[0].1, idx_to_val(val_to_idx(5000)));
    }

    #[test]
    fn reaches_exact() {
        assert!(reaches(50, 50.0, 100));
        assert!(!reaches(49, 50.0, 100));
        assert!(!reaches(999, 99.9, 1000));
        assert!(reaches(1000, 99.9, 1000));
        assert!(reaches(1, 1.0, 100));
        assert!(reaches(u64::MAX / 200, 1e-300, u64::MAX));
    }

    #[test]
    fn latstat_matches_naive() {
        let xs = [5u64, 9, 1, 400, 33, 33, 7];
        let mut s = LatStat::default();
        xs.iter().for_each(|&x| s.add(x));
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((s.mean - mean).abs() < 1e-9);
        assert!((s.stddev() - var.sqrt()).abs() < 1e-9);
        assert_eq!((s.min, s.max), (1, 400));
        let mut a = LatStat::default();
        let mut b = LatStat::default();
        xs[..3].iter().for_each(|&x| a.add(x));
        xs[3..].iter().for_each(|&x| b.add(x));
        a.merge(&b);
        assert!((a.mean - mean).abs() < 1e-9);
        assert!((a.stddev() - var.sqrt()).abs() < 1e-9);
    }
}
