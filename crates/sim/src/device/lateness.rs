//! How late a host completes a device's requests: an emulated guest's
//! timer-mode null_blk (`irqmode=2`) completes a 20 µs request in about
//! 90 µs at the median and up to half a millisecond at p99 (the lab's
//! `h02-qd1-roundtrip` traces, `block_rq_issue` to `block_rq_complete`):
//! the hrtimer fires late and the completion runs on a slow CPU.
//!
//! Each request's completion is delayed by an independent draw from a
//! log-normal distribution with the given median and 99th percentile: the
//! two numbers the lab's trace reduction keeps (`trace.d2c.p50`/`p99`,
//! less the configured completion time). A log-normal is the simplest
//! positive, right-skewed law fixed by two quantiles; nothing else about
//! the lateness is known.

/// `z` of the 99th percentile of the standard normal law.
const Z_P99: f64 = 2.326_347_874;

#[derive(Debug, Clone)]
pub struct Lateness {
    /// `ln(median)`.
    mu: f64,
    /// `ln(p99 / median) / z_0.99`.
    sigma: f64,
    rng: u64,
}

impl Lateness {
    /// Draws with median `p50_ns` and 99th percentile `p99_ns`
    /// (`p99_ns ≥ p50_ns > 0`), seeded by `seed`.
    pub fn new(p50_ns: u64, p99_ns: u64, seed: u64) -> Self {
        assert!(
            p50_ns > 0 && p99_ns >= p50_ns,
            "lateness quantiles out of order"
        );
        Lateness {
            mu: (p50_ns as f64).ln(),
            sigma: (p99_ns as f64 / p50_ns as f64).ln() / Z_P99,
            rng: seed ^ 0xBB67_AE85_84CA_A73B,
        }
    }

    /// The next draw, a fraction in (0, 1).
    fn uniform(&mut self) -> f64 {
        let z = super::rng::splitmix64(&mut self.rng);
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// One request's lateness in ns (Box–Muller for the normal draw).
    pub fn draw_ns(&mut self) -> u64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        let n = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.mu + self.sigma * n).exp().round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_have_the_given_quantiles() {
        let mut l = Lateness::new(70_000, 600_000, 3);
        let mut v: Vec<u64> = (0..200_000).map(|_| l.draw_ns()).collect();
        v.sort_unstable();
        let q = |p: f64| v[(p * v.len() as f64) as usize] as f64;
        assert!((q(0.5) / 70_000.0 - 1.0).abs() < 0.02, "p50 {}", q(0.5));
        assert!((q(0.99) / 600_000.0 - 1.0).abs() < 0.05, "p99 {}", q(0.99));
    }

    #[test]
    fn equal_quantiles_give_a_constant() {
        let mut l = Lateness::new(5_000, 5_000, 1);
        assert!((0..100).all(|_| l.draw_ns() == 5_000));
    }
}

/// How long after a tick the host dispatches a restarted queue: a draw
/// from a piecewise-linear quantile function through (0, 0), the median,
/// p90 and p99 (measured: `lab/traces/restart.py`), flat beyond p99.
#[derive(Debug, Clone)]
pub struct QuantileDelay {
    p50: u64,
    p90: u64,
    p99: u64,
    rng: u64,
}

impl QuantileDelay {
    /// `p50 ≤ p90 ≤ p99` (ns), seeded by `seed`.
    pub fn new(p50: u64, p90: u64, p99: u64, seed: u64) -> Self {
        assert!(p50 <= p90 && p90 <= p99, "delay quantiles out of order");
        QuantileDelay {
            p50,
            p90,
            p99,
            rng: seed ^ 0x3C6E_F372_FE94_F82B,
        }
    }

    /// One delay in ns.
    pub fn draw_ns(&mut self) -> u64 {
        let u = super::rng::unit(&mut self.rng);
        let lerp = |a: u64, b: u64, f: f64| a as f64 + (b as f64 - a as f64) * f;
        let ns = if u < 0.5 {
            lerp(0, self.p50, u / 0.5)
        } else if u < 0.9 {
            lerp(self.p50, self.p90, (u - 0.5) / 0.4)
        } else if u < 0.99 {
            lerp(self.p90, self.p99, (u - 0.9) / 0.09)
        } else {
            self.p99 as f64
        };
        ns.round() as u64
    }
}

#[cfg(test)]
mod quantile_tests {
    use super::*;

    #[test]
    fn draws_have_the_given_quantiles() {
        let mut d = QuantileDelay::new(130_000, 3_200_000, 11_500_000, 5);
        let v: Vec<u64> = (0..100_000).map(|_| d.draw_ns()).collect();
        // the share of draws at or below each quantile
        let below = |x: u64| v.iter().filter(|&&y| y <= x).count() as f64 / v.len() as f64;
        assert!((below(130_000) - 0.5).abs() < 0.01, "{}", below(130_000));
        assert!(
            (below(3_200_000) - 0.9).abs() < 0.01,
            "{}",
            below(3_200_000)
        );
        assert!(
            (below(11_499_999) - 0.99).abs() < 0.005,
            "{}",
            below(11_499_999)
        );
        let q = |p: f64| {
            let mut w = v.clone();
            w.sort_unstable();
            w[(p * w.len() as f64) as usize] as f64
        };
        assert!(q(0.995) <= 11_500_000.0);
    }
}
