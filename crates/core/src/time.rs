//! Nanosecond time, as plain integers.
//!
//! [`Instant`] is nanoseconds since the start of a run (virtual in the
//! simulator, `CLOCK_MONOTONIC` minus the run's epoch in the real engine).
//! [`Duration`] is a span in nanoseconds. Both are `u64`: 584 years of range.
//! [`Jiffies`] is a value of the kernel's tick counter, `jiffies`; a count
//! of jiffies (a slice length, a wait, the jiffies since a slice started)
//! is a plain `u64`, as the kernel's `unsigned long` durations are.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

pub mod lateness;
pub use lateness::TimerLateness;

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
    /// The `jiffies` of a tick counter at `hz` that read 0 at the run's
    /// epoch, at this instant (truncating: a jiffy counts once it has begun).
    #[must_use]
    #[inline]
    pub const fn to_jiffies(self, hz: u64) -> Jiffies {
        Jiffies(self.0 / (NSEC_PER_SEC / hz))
    }
    /// The instant at which jiffy `j` of a tick counter at `hz` that read 0
    /// at the run's epoch begins (the inverse of [`Instant::to_jiffies`]).
    #[must_use]
    #[inline]
    pub const fn from_jiffies(j: Jiffies, hz: u64) -> Self {
        Instant(j.0 * (NSEC_PER_SEC / hz))
    }
}

/// A value of the kernel's `jiffies` counter: the timer ticks since boot,
/// `CONFIG_HZ` of them per second (the HZ is configured per controller, so
/// it is not part of the type). A point in time; the span between two
/// points is a count of jiffies, a plain `u64` ([`Jiffies::since`]), and a
/// count added to a point gives a point (`jiffies + n`).
///
/// The kernel's `jiffies` is an `unsigned long` that may wrap, which is why
/// it compares with `time_after()` / `time_before()`; this one is a `u64`
/// that does not wrap within a run (blk-throttle's starts at the run's
/// `jiffies_at_start`), so it compares with `<` and `>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Jiffies(pub u64);

impl Jiffies {
    /// Jiffy 0.
    pub const ZERO: Jiffies = Jiffies(0);

    /// The jiffies from `earlier` to `self`: the kernel's `jiffies -
    /// earlier` where it knows `earlier` is not in the future (a slice's
    /// start, a timer armed from the current jiffies). A later `earlier`
    /// is a bug: checked in debug builds; a release build gives 0 rather
    /// than wrap.
    #[must_use]
    #[inline]
    pub fn since(self, earlier: Jiffies) -> u64 {
        debug_assert!(earlier <= self, "jiffy {} is after {}", earlier.0, self.0);
        self.0.saturating_sub(earlier.0)
    }

    /// `self - n`, or jiffy 0 if `n` is larger: where the kernel's unsigned
    /// arithmetic would wrap below 0 (see each caller's kernel expression).
    #[must_use]
    #[inline]
    pub const fn saturating_sub(self, n: u64) -> Jiffies {
        Jiffies(self.0.saturating_sub(n))
    }

    /// `self + n`, or the last jiffy if that overflows: where the kernel's
    /// unsigned arithmetic would wrap (see each caller's kernel expression).
    #[must_use]
    #[inline]
    pub const fn saturating_add(self, n: u64) -> Jiffies {
        Jiffies(self.0.saturating_add(n))
    }

    /// The kernel's `roundup(jiffy, slice)` on an absolute jiffy: the first
    /// multiple of `n` at or after `self`.
    #[must_use]
    #[inline]
    pub const fn roundup(self, n: u64) -> Jiffies {
        Jiffies(crate::math::roundup(self.0, n))
    }
}

impl Add<u64> for Jiffies {
    type Output = Jiffies;
    /// `jiffies + n`: the jiffy `n` ticks later (overflow is a bug, as for
    /// any `u64` sum).
    #[inline]
    fn add(self, n: u64) -> Jiffies {
        Jiffies(self.0 + n)
    }
}
impl AddAssign<u64> for Jiffies {
    #[inline]
    fn add_assign(&mut self, n: u64) {
        self.0 += n;
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
/// The bare counter value, as the kernel prints `jiffies` (`%lu`).
impl fmt::Display for Jiffies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
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
#[must_use]
pub fn timer_wheel_expiry(expires: Jiffies, clk: Jiffies) -> Jiffies {
    const LVL_CLK_SHIFT: u32 = 3;
    const LVL_SIZE: u64 = 64;
    if expires < clk {
        return clk;
    }
    let delta = expires.since(clk);
    // LVL_START(n) = (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT), 9 levels
    let mut lvl = 0;
    while lvl < 8 && delta >= (LVL_SIZE - 1) << (lvl * LVL_CLK_SHIFT) {
        lvl += 1;
    }
    let shift = lvl * LVL_CLK_SHIFT;
    Jiffies(((expires.0 >> shift) + 1) << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_timers_run_a_tick_after_expiry_and_coarser_far_out() {
        let wheel = |expires: u64, clk: u64| timer_wheel_expiry(Jiffies(expires), Jiffies(clk)).0;
        // level 0 (under 63 jiffies away): one tick late
        assert_eq!(wheel(1003, 1000), 1004);
        assert_eq!(wheel(1062, 1000), 1063);
        // level 1 (63..504): rounded up to the next multiple of 8
        assert_eq!(wheel(1063, 1000), 1064);
        assert_eq!(wheel(1064, 1000), 1072);
        assert_eq!(wheel(1100, 1000), 1104);
        // level 2 (504..4032): multiples of 64
        assert_eq!(wheel(1600, 1000), 1664);
        // due already: the next tick processed
        assert_eq!(wheel(999, 1000), 1000);
        assert_eq!(wheel(1000, 1000), 1001);
        // never early
        for clk in 0..300u64 {
            for d in 0..2000u64 {
                assert!(wheel(clk + d, clk) > clk + d);
            }
        }
    }

    #[test]
    fn jiffies_truncate() {
        assert_eq!(Instant::from_us(999).to_jiffies(1000), Jiffies(0));
        assert_eq!(Instant::from_ms(1).to_jiffies(1000), Jiffies(1));
        assert_eq!(Instant::from_ms(7).to_jiffies(250), Jiffies(1));
        assert_eq!(Instant::from_jiffies(Jiffies(3), 250), Instant::from_ms(12));
    }

    #[test]
    fn jiffies_points_and_counts() {
        let j = Jiffies(1000);
        assert_eq!(j + 25, Jiffies(1025));
        assert_eq!((j + 25).since(j), 25);
        assert_eq!(j.since(j), 0);
        assert_eq!(Jiffies(1001).roundup(100), Jiffies(1100));
        assert_eq!(j.roundup(100), j);
        assert_eq!(Jiffies::ZERO.saturating_sub(1), Jiffies::ZERO);
        assert_eq!(j.saturating_add(u64::MAX), Jiffies(u64::MAX));
        assert_eq!(format!("{j}"), "1000");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "jiffy 1001 is after 1000")]
    fn since_a_later_jiffy_is_a_bug() {
        let _ = Jiffies(1000).since(Jiffies(1001));
    }

    #[test]
    fn sub_saturates() {
        assert_eq!(Instant(5) - Instant(9), Duration::ZERO);
        assert_eq!(Instant(9) - Instant(5), Duration(4));
    }
}
