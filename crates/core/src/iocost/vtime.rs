//! Virtual time: the constants of blk-iocost, the [`VTime`] newtype with the
//! kernel's wrap-around comparisons, the `ioc_now` snapshot, cost scaling by
//! hierarchical weight, budget margins, and the pure parts of the vrate
//! controller (`vrate_adj_pct`, the clamp walk, error compensation) and of
//! the issuer-delay curve.
//!
//! Citations are to linux v6.9+ `block/blk-iocost.c` (tree 4e6bd13a).

use crate::math::{mul_div_ceil, mul_div_floor};

/// `MILLION`: ppm denominator.
pub const MILLION: u64 = 1_000_000;
/// Shortest period (µs): the period is derived from latency targets, bounded.
pub const MIN_PERIOD: u64 = 1_000;
/// Longest period (µs).
pub const MAX_PERIOD: u64 = 1_000_000;
/// A group whose budget falls below 10% of a period stops donating.
pub const MARGIN_MIN_PCT: u64 = 10;
/// Below 20% of a period of budget an issuing donor snaps its inuse back.
pub const MARGIN_LOW_PCT: u64 = 20;
/// Budget is targeted at 50% of a period behind the device vtime.
pub const MARGIN_TARGET_PCT: u64 = 50;
/// In-period inuse bump step, % of active (`adjust_inuse_and_calc_cost`).
pub const INUSE_ADJ_STEP_PCT: u64 = 25;
/// Wait-queue timer slack, % of a period ("have some play in timer operations").
pub const TIMER_SLACK_PCT: u64 = 1;
/// Weight fixed point: 1.0 (`WEIGHT_ONE`, 1/64k is granular enough for u32).
pub const WEIGHT_ONE: u32 = 1 << 16;
/// 1 s of device time is 2^37 vtime units: sub-ns granularity, days of range.
pub const VTIME_PER_SEC_SHIFT: u32 = 37;
/// `VTIME_PER_SEC`: vtime units per second of device time (2^37).
pub const VTIME_PER_SEC: u64 = 1 << VTIME_PER_SEC_SHIFT;
/// vtime per µs at 100% vrate (integer division, as the kernel's enum).
pub const VTIME_PER_USEC: u64 = VTIME_PER_SEC / 1_000_000;
/// vtime per ns (integer division: 137).
pub const VTIME_PER_NSEC: u64 = VTIME_PER_SEC / 1_000_000_000;
/// `VRATE_MIN_PPM`: the lowest vrate, 1% (ppm); vrate may move two orders
/// of magnitude either way.
pub const VRATE_MIN_PPM: u32 = 10_000;
/// `VRATE_MAX_PPM`: the highest vrate, 10000% (ppm).
pub const VRATE_MAX_PPM: u32 = 100_000_000;
/// `VRATE_MIN`: the floor of the 1% vrate.
pub const VRATE_MIN: u64 = VTIME_PER_USEC * VRATE_MIN_PPM as u64 / MILLION;
/// Step (%) toward the [min, max] bounds when vrate is outside them.
pub const VRATE_CLAMP_ADJ_PCT: u64 = 4;
/// Autop class switches need the condition to hold this long (ns).
pub const AUTOP_CYCLE_NSEC: u64 = 10 * 1_000_000_000;
/// IOs waiting for a request > 5% of a period means the device is saturated.
pub const RQ_WAIT_BUSY_PCT: u32 = 5;
/// Unbusy hysteresis: "not busy" needs the signals under 75% of the thresholds.
pub const UNBUSY_THR_PCT: u32 = 75;
/// `MIN_DELAY_THR_PCT`: overage (% of a period) at which the delay of
/// a group's submitting tasks starts.
pub const MIN_DELAY_THR_PCT: i64 = 500;
/// `MAX_DELAY_THR_PCT`: overage (% of a period) at which that delay
/// reaches [`MAX_DELAY`].
pub const MAX_DELAY_THR_PCT: i64 = 25_000;
/// `MIN_DELAY`: the shortest delay of a submitting task, µs.
pub const MIN_DELAY: u64 = 250;
/// `MAX_DELAY`: the longest delay of a submitting task, µs
/// (250 ms).
pub const MAX_DELAY: u64 = 250_000;
/// `DFGV_USAGE_PCT`: debts are halved when average usage over
/// [`DFGV_PERIOD`] is under this % of the device.
pub const DFGV_USAGE_PCT: u64 = 50;
/// `DFGV_PERIOD`: the debt-forgiveness window, µs (100 ms).
pub const DFGV_PERIOD: u64 = 100_000;
/// IOs in flight for longer than this many periods stop counting as lagging.
pub const MAX_LAGGING_PERIODS: u64 = 10;
/// busy_level bounds.
pub const BUSY_LEVEL_MAX: i32 = 1000;

const _: () = assert!(VTIME_PER_USEC == 137_438);
const _: () = assert!(VTIME_PER_NSEC == 137);
const _: () = assert!(VRATE_MIN == 1_374);
const _: () = assert!(MARGIN_MIN_PCT < MARGIN_LOW_PCT && MARGIN_LOW_PCT < MARGIN_TARGET_PCT);

/// vrate adjustment (%) per period, indexed by `min(|busy_level|, 52)`: up on
/// vtime shortage, down on saturation. Nothing for the first three periods.
pub const VRATE_ADJ_PCT: [u32; 53] = [
    0, 0, 0, 0, //
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, //
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, //
    4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16,
];

/// A point in device (or group) virtual time. The kernel keeps vtimes in
/// 64-bit counters that may wrap and compares them by signed difference
/// (`time_after64`); so do we, so no input can overflow-panic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VTime(pub u64);

impl VTime {
    /// `self + d`, wrapping (`vtime += d` on a `u64`).
    #[inline]
    pub const fn plus(self, d: u64) -> VTime {
        VTime(self.0.wrapping_add(d))
    }
    /// `self − d`, wrapping.
    #[inline]
    pub const fn minus(self, d: u64) -> VTime {
        VTime(self.0.wrapping_sub(d))
    }
    /// `self + d` for a signed `d`, wrapping.
    #[inline]
    pub const fn plus_signed(self, d: i64) -> VTime {
        VTime(self.0.wrapping_add(d as u64))
    }
    /// `self − earlier` as a signed distance (kernel: `s64` of a `u64` difference).
    #[inline]
    pub const fn since(self, earlier: VTime) -> i64 {
        self.0.wrapping_sub(earlier.0) as i64
    }
    /// `time_after64(self, o)`.
    #[inline]
    pub const fn after(self, o: VTime) -> bool {
        o.since(self) < 0
    }
    /// `time_before64(self, o)`.
    #[inline]
    pub const fn before(self, o: VTime) -> bool {
        self.since(o) < 0
    }
    /// `time_before_eq64(self, o)`.
    #[inline]
    pub const fn before_eq(self, o: VTime) -> bool {
        self.since(o) <= 0
    }
}

/// One consistent view of time for one event (`struct ioc_now`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Now {
    /// The time of the event, ns of run time (the kernel's `ktime_get_ns`).
    pub now_ns: u64,
    /// µs (`ktime_to_us`, truncating).
    pub now_us: u64,
    /// Device vtime at `now`: `period_at_vtime + (now − period_at_us) × vtime_rate`.
    pub vnow: VTime,
}

/// `abs_cost_to_cost`: scale by the inverse hierarchical inuse weight,
/// rounding up (a group with 12.5% sees every IO 8× more expensive).
#[inline]
pub fn abs_cost_to_cost(abs_cost: u64, hw_inuse: u32) -> u64 {
    mul_div_ceil(abs_cost, WEIGHT_ONE as u64, hw_inuse.max(1) as u64)
}

/// `cost_to_abs_cost`: the inverse, rounding up.
#[inline]
pub fn cost_to_abs_cost(cost: u64, hw_inuse: u32) -> u64 {
    mul_div_ceil(cost, hw_inuse as u64, WEIGHT_ONE as u64)
}

/// Budget margins in vtime (`struct ioc_margins`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Margins {
    /// `margins.min` (10% of a period): a donor whose budget falls below it
    /// stops donating.
    pub min: i64,
    /// `margins.low` (20% of a period): below it an issuing donor snaps its
    /// `inuse` back.
    pub low: i64,
    /// `margins.target` (50% of a period): the budget a group is given on
    /// activation and that donation aims for.
    pub target: i64,
}

impl Margins {
    /// `ioc_refresh_margins`: `(period_us × pct / 100) × base_vrate`, the
    /// division first (truncating), as the kernel does.
    pub fn new(period_us: u64, base_vrate: u64) -> Self {
        let m = |pct: u64| ((period_us * pct / 100).wrapping_mul(base_vrate)) as i64;
        Margins {
            min: m(MARGIN_MIN_PCT),
            low: m(MARGIN_LOW_PCT),
            target: m(MARGIN_TARGET_PCT),
        }
    }
}

/// `ioc_refresh_period_us`: the period is a multiple of the larger latency
/// target — 2× at p90 and above, growing linearly to 10× at p50 — clamped
/// to [1 ms, 1 s]. Returns µs.
pub fn period_us_for(rppm: u32, rlat: u32, wppm: u32, wlat: u32) -> u64 {
    let (ppm, lat) = if rlat >= wlat {
        (rppm, rlat)
    } else {
        (wppm, wlat)
    };
    let multi = if ppm != 0 {
        ((MILLION as u32).wrapping_sub(ppm) / 50_000).max(2)
    } else {
        2
    };
    // u32 multiplication in the kernel
    let period = multi.wrapping_mul(lat) as u64;
    period.clamp(MIN_PERIOD, MAX_PERIOD)
}

/// `timer_slack_ns` for a period.
pub fn timer_slack_ns(period_us: u64) -> u64 {
    period_us * 1_000 * TIMER_SLACK_PCT / 100
}

/// `vrate_min`/`vrate_max` from a ppm bound: `ceil(ppm × VTIME_PER_USEC / 10^6)`.
pub fn vrate_bound(ppm: u32) -> u64 {
    mul_div_ceil(ppm as u64, VTIME_PER_USEC, MILLION)
}

/// The base-vrate step of `ioc_adjust_base_vrate`: `None` when the level
/// (or lagging IO with a negative level) says "leave it", else the new base.
///
/// linux block/blk-iocost.c: ioc_adjust_base_vrate()
/// — out of bounds: walk 4% per period toward the bound; inside: scale by
/// `100 ∓ vrate_adj_pct[min(|busy_level|, 52)]` rounding up, then clamp.
pub fn adjust_base_vrate(
    vrate: u64,
    vrate_min: u64,
    vrate_max: u64,
    busy_level: i32,
    nr_lagging: u32,
) -> Option<u64> {
    if busy_level == 0 || (busy_level < 0 && nr_lagging > 0) {
        return None;
    }
    let new = if vrate < vrate_min {
        mul_div_floor(vrate, 100 + VRATE_CLAMP_ADJ_PCT, 100).min(vrate_min)
    } else if vrate > vrate_max {
        mul_div_floor(vrate, 100 - VRATE_CLAMP_ADJ_PCT, 100).max(vrate_max)
    } else {
        let idx = (busy_level.unsigned_abs() as usize).min(VRATE_ADJ_PCT.len() - 1);
        let adj = VRATE_ADJ_PCT[idx] as u64;
        let pct = if busy_level > 0 { 100 - adj } else { 100 + adj };
        // clamp(lo, hi); lo ≤ hi because min > max is refused (EINVAL)
        mul_div_ceil(vrate, pct, 100).max(vrate_min).min(vrate_max)
    };
    Some(new)
}

/// `ioc_refresh_vrate`: spread the budget thrown away this period (the
/// negative `vtime_err`) over the time left in it by running the vtime rate
/// above base. Returns `(vtime_rate or None if no time is left, new vtime_err)`.
pub fn vrate_compensation(
    base_vrate: u64,
    vtime_err: i64,
    pleft_us: i64,
    period_us: u64,
) -> (Option<u64>, i64) {
    let vperiod = (period_us as i64).wrapping_mul(base_vrate as i64);
    let mut err = vtime_err;
    let mut rate = None;
    if pleft_us > 0 {
        // div64_s64 truncates toward zero
        let vcomp = err.checked_div(pleft_us).map_or(0, |q| q.saturating_neg());
        let vcomp = vcomp.clamp(-((base_vrate >> 1) as i64), base_vrate as i64);
        err = err.wrapping_add(vcomp.wrapping_mul(pleft_us));
        rate = Some((base_vrate as i64).wrapping_add(vcomp) as u64);
    }
    let bound = vperiod.saturating_abs();
    (rate, err.clamp(-bound, bound))
}

/// The issuer-delay curve of `iocg_kick_delay` (µs) for an overage of
/// `vover_pct` % of a period: 0 up to 500%, linear from 250 µs to 250 ms
/// between 500% and 25000%, 250 ms beyond.
pub fn delay_for_overage_pct(vover_pct: i64) -> u64 {
    if vover_pct <= MIN_DELAY_THR_PCT {
        0
    } else if vover_pct >= MAX_DELAY_THR_PCT {
        MAX_DELAY
    } else {
        MIN_DELAY
            + (MAX_DELAY - MIN_DELAY) * (vover_pct - MIN_DELAY_THR_PCT) as u64
                / (MAX_DELAY_THR_PCT - MIN_DELAY_THR_PCT) as u64
    }
}

/// `usecs_to_jiffies`: `us` microseconds as a count of jiffies at `hz`,
/// rounded up to whole jiffies (add it to a [`crate::time::Jiffies`]).
#[must_use]
pub fn usecs_to_jiffies(us: u64, hz: u64) -> u64 {
    mul_div_ceil(us, hz, 1_000_000)
}

/// Base vrate as `XX.YY` percent, rounded to nearest (`ioc_pd_stat`'s
/// `DIV64_U64_ROUND_CLOSEST(base × 10000, VTIME_PER_USEC)`).
pub fn format_vrate(base_vrate: u64) -> String {
    let vp10k = vrate_hundredths(base_vrate);
    format!("{}.{:02}", vp10k / 100, vp10k % 100)
}

/// The base vrate in hundredths of a percent, rounded to the closest
/// (`DIV64_U64_ROUND_CLOSEST(vtime_base_rate * 10000, VTIME_PER_USEC)`).
pub fn vrate_hundredths(base_vrate: u64) -> u64 {
    ((base_vrate as u128 * 10_000 + (VTIME_PER_USEC / 2) as u128) / VTIME_PER_USEC as u128) as u64
}
