//! Nanosecond time, as plain integers.
//!
//! [`Instant`] is nanoseconds since the start of a run (virtual in the
//! simulator, `CLOCK_MONOTONIC` minus the run's epoch in the real engine).
//! [`Duration`] is a span in nanoseconds. Both are `u64`: 584 years of range.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the run's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

/// Nanoseconds per microsecond (the kernel's `NSEC_PER_USEC`).
pub const NSEC_PER_USEC: u64 = 1_000;
/// Nanoseconds per millisecond (the kernel's `NSEC_PER_MSEC`).
pub const NSEC_PER_MSEC: u64 = 1_000_000;
/// Nanoseconds per second (the kernel's `NSEC_PER_SEC`).
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

impl Instant {
    /// The run's epoch: 0 ns.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant; used as "never" (no deadline).
    pub const MAX: Instant = Instant(u64::MAX);

    /// This instant in nanoseconds since the run's epoch.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// The instant `us` microseconds after the epoch.
    pub const fn from_us(us: u64) -> Self {
        Instant(us * NSEC_PER_USEC)
    }
    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_ms(ms: u64) -> Self {
        Instant(ms * NSEC_PER_MSEC)
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// The jiffy count of this instant for a given HZ (truncating, as `jiffies`).
    pub const fn jiffies(self, hz: u64) -> u64 {
        self.0 / (NSEC_PER_SEC / hz)
    }
    /// The instant at which jiffy `j` begins for a given HZ.
    pub const fn from_jiffies(j: u64, hz: u64) -> Self {
        Instant(j * (NSEC_PER_SEC / hz))
    }
}

impl Duration {
    /// The empty span: 0 ns.
    pub const ZERO: Duration = Duration(0);
    /// A span of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns)
    }
    /// A span of `us` microseconds.
    pub const fn from_us(us: u64) -> Self {
        Duration(us * NSEC_PER_USEC)
    }
    /// A span of `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Self {
        Duration(ms * NSEC_PER_MSEC)
    }
    /// A span of `s` whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * NSEC_PER_SEC)
    }
    /// The span in nanoseconds.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// The span in whole microseconds (truncating).
    pub const fn as_us(self) -> u64 {
        self.0 / NSEC_PER_USEC
    }
    /// The span in whole milliseconds (truncating).
    pub const fn as_ms(self) -> u64 {
        self.0 / NSEC_PER_MSEC
    }
    /// The span in seconds, as a float (for reports and rates, never for
    /// controller arithmetic).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NSEC_PER_SEC as f64
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating difference: time never runs backwards in blkqos.
    fn sub(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NSEC_PER_SEC, self.0 % NSEC_PER_SEC)
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= NSEC_PER_SEC {
            write!(f, "{:.3}s", self.as_secs_f64())
        } else if self.0 >= NSEC_PER_MSEC {
            write!(f, "{:.3}ms", self.0 as f64 / NSEC_PER_MSEC as f64)
        } else if self.0 >= NSEC_PER_USEC {
            write!(f, "{:.3}us", self.0 as f64 / NSEC_PER_USEC as f64)
        } else {
            write!(f, "{}ns", self.0)
        }
    }
}

/// The jiffy at which a `timer_list` timer armed at jiffy `clk` for
/// `expires` runs: the timer wheel files it in a bucket rounded *up* by its
/// level's granularity so that it never fires early (kernel/time/timer.c:
/// `calc_wheel_index()` and `calc_index()`, `(expires >> shift) + 1`), so
/// a timer for `jiffies + n` runs at tick `jiffies + n + 1` for n < 63 and
/// later ones up to 12.5% past their expiry. A deadline already due runs
/// at the next tick processed.
pub fn timer_wheel_expiry(expires: u64, clk: u64) -> u64 {
    const LVL_CLK_SHIFT: u32 = 3;
    const LVL_SIZE: u64 = 64;
    if expires < clk {
        return clk;
    }
    let delta = expires - clk;
    // LVL_START(n) = (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT), 9 levels
    let mut lvl = 0;
    while lvl < 8 && delta >= (LVL_SIZE - 1) << (lvl * LVL_CLK_SHIFT) {
        lvl += 1;
    }
    let shift = lvl * LVL_CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

#[cfg(test)]
mod tests {
    use super::timer_wheel_expiry;

    #[test]
    fn wheel_timers_run_a_tick_after_expiry_and_coarser_far_out() {
        // level 0 (under 63 jiffies away): one tick late
        assert_eq!(timer_wheel_expiry(1003, 1000), 1004);
        assert_eq!(timer_wheel_expiry(1062, 1000), 1063);
        // level 1 (63..504): rounded up to the next multiple of 8
        assert_eq!(timer_wheel_expiry(1063, 1000), 1064);
        assert_eq!(timer_wheel_expiry(1064, 1000), 1072);
        assert_eq!(timer_wheel_expiry(1100, 1000), 1104);
        // level 2 (504..4032): multiples of 64
        assert_eq!(timer_wheel_expiry(1600, 1000), 1664);
        // due already: the next tick processed
        assert_eq!(timer_wheel_expiry(999, 1000), 1000);
        assert_eq!(timer_wheel_expiry(1000, 1000), 1001);
        // never early
        for clk in 0..300u64 {
            for d in 0..2000u64 {
                assert!(timer_wheel_expiry(clk + d, clk) > clk + d);
            }
        }
    }

    use super::*;

    #[test]
    fn jiffies_truncate() {
        assert_eq!(Instant::from_us(999).jiffies(1000), 0);
        assert_eq!(Instant::from_ms(1).jiffies(1000), 1);
        assert_eq!(Instant::from_ms(7).jiffies(250), 1);
        assert_eq!(Instant::from_jiffies(3, 250), Instant::from_ms(12));
    }

    #[test]
    fn sub_saturates() {
        assert_eq!(Instant(5) - Instant(9), Duration::ZERO);
        assert_eq!(Instant(9) - Instant(5), Duration(4));
    }
}
