//! How late a host runs a jiffies timer's function past the tick the timer
//! wheel runs it on.
//!
//! A `timer_list` timer runs from the timer softirq of the tick after its
//! expiry ([`super::timer_wheel_expiry`]). On a loaded machine that
//! softirq does not always run at the tick: the CPU is in other interrupts
//! and softirqs (block completions), and softirq work past its budget is
//! left to `ksoftirqd`, a thread that waits its turn. The function then
//! runs later, sometimes by a whole tick or more, and a timer that re-arms
//! itself from `jiffies` (iocost's period timer: `ioc_start_period()`)
//! starts its next period from there.
//!
//! The lateness is a measured property of the host, given as empirical
//! quantile functions: their values at [`LATENESS_PROBS`], linear in
//! between, flat below the first and above the last. Late runs come in
//! runs (in the lab's traces a run a tick or more late follows another
//! such run 28-52% of the time, an on-time one 8-15%), so there are two:
//! the lateness after a run that was on time (less than a tick late), and
//! after one that was a tick or more late. The lab measures both from the
//! kernel's own traces (`lab/traces/timer.py`: each
//! `iocost_ioc_vrate_adj` event against the tick its period timer was
//! due on, the tick grid anchored on the ktime of iocost's events). Draws
//! come from a seeded splitmix64 stream: a run is reproducible.

/// The probabilities at which [`TimerLateness::quantiles_ns`] are given:
/// p1, p10, p50, p75, p90, p95 and p99.
pub const LATENESS_PROBS: [f64; 7] = [0.01, 0.10, 0.50, 0.75, 0.90, 0.95, 0.99];

/// A host's timer lateness (module docs): quantiles in ns at
/// [`LATENESS_PROBS`], non-decreasing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerLateness {
    /// The lateness (ns) at each of [`LATENESS_PROBS`]: `[0]` after a run
    /// less than a tick late, `[1]` after a run a tick or more late.
    pub quantiles_ns: [[u64; 7]; 2],
    /// The draws' stream.
    pub seed: u64,
}

impl TimerLateness {
    /// One quantile function for every run: `"p1,p10,p50,p75,p90,p95,p99"`
    /// in ns; or two, fourteen values: after an on-time run, then after a
    /// run a tick or more late. The error says what is expected.
    pub fn parse(value: &str) -> Result<TimerLateness, String> {
        let bad = |why: &str| {
            format!(
                "`{value}`: {why}: expected seven non-decreasing nanosecond values, the p1, p10, p50, p75, p90, p95 and p99 of the lateness (or fourteen: after a run on time, then after one a tick or more late)"
            )
        };
        let parts: Vec<&str> = value.split(',').map(str::trim).collect();
        let n = LATENESS_PROBS.len();
        if parts.len() != n && parts.len() != 2 * n {
            return Err(bad(&format!("{} values", parts.len())));
        }
        let mut values = Vec::with_capacity(parts.len());
        for p in &parts {
            values.push(
                p.parse::<u64>()
                    .map_err(|_| bad(&format!("`{p}` is not an unsigned integer")))?,
            );
        }
        let mut quantiles_ns = [[0u64; 7]; 2];
        for (i, q) in quantiles_ns.iter_mut().enumerate() {
            let from = if values.len() == n { 0 } else { i * n };
            q.copy_from_slice(&values[from..from + n]);
            if q.windows(2).any(|w| w[0] > w[1]) {
                return Err(bad("the values decrease"));
            }
        }
        Ok(TimerLateness {
            quantiles_ns,
            seed: 0,
        })
    }

    /// The lateness at probability `u` in [0, 1) after a run whose own
    /// lateness was `after_late` (a tick or more).
    #[must_use]
    pub fn at(&self, u: f64, after_late: bool) -> u64 {
        let q = &self.quantiles_ns[usize::from(after_late)];
        let p = &LATENESS_PROBS;
        if u <= p[0] {
            return q[0];
        }
        for i in 0..p.len() - 1 {
            if u < p[i + 1] {
                let f = (u - p[i]) / (p[i + 1] - p[i]);
                return (q[i] as f64 + (q[i + 1] - q[i]) as f64 * f).round() as u64;
            }
        }
        q[p.len() - 1]
    }

    /// The first state of the draws' stream.
    #[must_use]
    pub fn stream(&self) -> u64 {
        self.seed ^ 0x510E_527F_ADE6_82D1
    }

    /// One lateness in ns, advancing `state` (from [`Self::stream`]),
    /// after a run that was `after_late`.
    pub fn draw_ns(&self, state: &mut u64, after_late: bool) -> u64 {
        // splitmix64
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        self.at(u, after_late)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_takes_seven_or_fourteen_ordered_values() {
        let l = TimerLateness::parse("70, 158,344,2508,4330,6216,12058").unwrap();
        assert_eq!(l.quantiles_ns, [[70, 158, 344, 2508, 4330, 6216, 12058]; 2]);
        let l = TimerLateness::parse("1,2,3,4,5,6,7,10,20,30,40,50,60,70").unwrap();
        assert_eq!(
            l.quantiles_ns,
            [[1, 2, 3, 4, 5, 6, 7], [10, 20, 30, 40, 50, 60, 70]]
        );
        for bad in [
            "1,2,3",
            "1,2,3,4,5,6,x",
            "1,2,3,4,5,7,6",
            "",
            "1,2,3,4,5,6,7,8",
            "1,2,3,4,5,6,7,1,2,3,4,5,7,6",
        ] {
            let e = TimerLateness::parse(bad).unwrap_err();
            assert!(e.contains("seven non-decreasing"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_quantile_function_passes_through_the_points() {
        let l = TimerLateness::parse("100,200,300,400,500,600,700,1,2,3,4,5,6,7").unwrap();
        assert_eq!(l.at(0.0, false), 100);
        assert_eq!(l.at(0.01, false), 100);
        assert_eq!(l.at(0.10, false), 200);
        assert_eq!(l.at(0.30, false), 250);
        assert_eq!(l.at(0.50, false), 300);
        assert_eq!(l.at(0.95, false), 600);
        assert_eq!(l.at(0.999, false), 700);
        assert_eq!(l.at(0.50, true), 3);
    }

    #[test]
    fn draws_have_the_given_quantiles() {
        let l = TimerLateness {
            seed: 7,
            ..TimerLateness::parse("70,158,344,2508,4330,6216,12058,1,2,3,4,5,6,7").unwrap()
        };
        let mut s = l.stream();
        let n = 100_000;
        let v: Vec<u64> = (0..n).map(|_| l.draw_ns(&mut s, false)).collect();
        // the share strictly below each point (flat above p99)
        let below = |x: u64| v.iter().filter(|&&y| y < x).count() as f64 / n as f64;
        for (p, q) in LATENESS_PROBS.iter().zip(l.quantiles_ns[0]).skip(1) {
            assert!((below(q) - p).abs() < 0.01, "p{p}: {}", below(q));
        }
        // reproducible from the seed
        let mut s2 = l.stream();
        assert_eq!(l.draw_ns(&mut s2, false), v[0]);
        assert!((0..1000).all(|_| l.draw_ns(&mut s2, true) <= 7));
    }
}
