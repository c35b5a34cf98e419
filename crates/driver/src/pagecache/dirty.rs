//! The dirty throttle: `balance_dirty_pages` and the estimates it runs on
//! (mm/page-writeback.c, lib/flex_proportions.c), in the kernel's units:
//! pages, pages per second and jiffies, integer arithmetic as the kernel
//! does it.
//!
//! # Design
//!
//! 1. **Domains.** The global domain (`global_wb_domain`) and, for a wb
//!    of a non-root memory cgroup, that memcg's domain (`mdtc`). Each has
//!    its thresholds (`domain_dirty_limits`), a `dirty_limit` that follows
//!    `thresh` up at once and down by 1/32 per update
//!    (`update_dirty_limit`), and the floating proportion of writeback
//!    completions its wbs earned (`dom->completions`, halved every
//!    `VM_COMPLETIONS_PERIOD_LEN` by the deferrable `writeout_period`
//!    timer). A wb's share of a domain's threshold is its share of those
//!    completions (`__wb_calc_thresh`).
//! 2. **The memcg domain's size** (`mdtc_calc_avail`): the memcg's file
//!    pages plus what it may still take of the other groups' clean memory,
//!    at most its headroom under `memory.max` (unbounded without one: the
//!    global memory less the other groups' dirty and writeback pages).
//!    `dirty_bytes`/`dirty_background_bytes` become ratios of the global
//!    available memory first (`domain_dirty_limits`), so a group near its
//!    `memory.max` gets dirty limits of a few % of its own page cache. The
//!    global available memory is the configured memory (the kernel's free
//!    plus file pages less reserves: within a few % of it on an idle
//!    guest). The memcg's page counts are its statistics as last flushed
//!    (`mem_cgroup_flush_stats_ratelimited` does not flush while the
//!    periodic 2 s flusher is on time), while the wb's own counts are
//!    current: a writer stopped at its memcg's hard limit waits for the
//!    next flush to see its dirty pages drained.
//! 3. **Position control** (`wb_position_ratio`): a cubic line around the
//!    domain's setpoint `(freerun + limit) / 2` times a linear line around
//!    the wb's share of it, with the wb reserve area below `wb_thresh / 2`.
//!    The domain with the lower ratio throttles (`sdtc`).
//! 4. **Rate control** (`wb_update_dirty_ratelimit`): every
//!    `BANDWIDTH_INTERVAL` a throttled task's call updates the wb's
//!    `dirty_ratelimit` towards `task_ratelimit × write_bw / dirty_rate`,
//!    for the global domain and then the memcg one (both write the same
//!    wb fields, as in the kernel), in steps filtered by `task_ratelimit`.
//!    Both start at `INIT_BW` (100 MiB/s), so a slow device takes tens of
//!    seconds to bring them down: the kernel's long transient.
//! 5. **Write bandwidth** (`wb_update_write_bandwidth`): pages written per
//!    interval, averaged over `roundup_pow_of_two(3 × HZ)` jiffies, then
//!    smoothed once more.
//! 6. **Pauses** (`balance_dirty_pages`): a task calls in after dirtying
//!    `nr_dirtied_pause` pages (8 while its wb is over its limit); below
//!    the freerun ceilings it goes on and its next poll is
//!    `dirty_poll_interval`; above, it sleeps `pages / task_ratelimit`
//!    less the time since its last pause (think time), at most
//!    `wb_max_pause`; shorter than `wb_min_pause` it does not sleep but
//!    carries the period over. At `task_ratelimit == 0` (at or over the
//!    hard limit) it sleeps `max_pause` and loops.
//!
//! Not modelled: `strictlimit` (FUSE), `bdi min/max_ratio`, the per-CPU
//! `bdp_ratelimits` backstop (`ratelimit_pages`, 512 pages at 128 MiB on
//! two CPUs: a task is called in far sooner), leaked dirties of exited
//! tasks, laptop mode, real-time tasks' raised limits.

/// `RATELIMIT_CALC_SHIFT`: fixed point of `pos_ratio`.
const SHIFT: u32 = 10;
/// `INIT_BW`: 100 MiB/s in pages per second.
pub const INIT_BW: u64 = 100 << (20 - 12);
/// `DIRTY_POLL_THRESH`: 128 KiB in pages.
const DIRTY_POLL_THRESH: u64 = 128 >> (12 - 10);
/// `wb_stat_error()`: `nr_cpu_ids × WB_STAT_BATCH`, on the two-CPU guest
/// of the lab (2 × 8 × (1 + ilog2(2))). Only used to stop the hard-limit
/// loop when the wb has almost nothing dirty.
const WB_STAT_ERROR: u64 = 32;
/// A task's first `nr_dirtied_pause` (`copy_process`: 128 KiB in pages).
pub const INITIAL_DIRTIED_PAUSE: u64 = 128 >> (12 - 10);

fn ilog2(x: u64) -> u64 {
    u64::from(63 - x.max(1).leading_zeros())
}

/// The kernel's jiffy constants at one `HZ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hz(pub u64);

impl Hz {
    /// `BANDWIDTH_INTERVAL`: `max(HZ / 5, 1)`.
    pub fn bandwidth_interval(self) -> u64 {
        (self.0 / 5).max(1)
    }
    /// `MAX_PAUSE`: `max(HZ / 5, 4)`.
    fn max_pause(self) -> u64 {
        (self.0 / 5).max(4)
    }
    /// `VM_COMPLETIONS_PERIOD_LEN`: `roundup_pow_of_two(3 * HZ)`.
    pub fn completions_period(self) -> u64 {
        (3 * self.0).next_power_of_two()
    }
}

/// `struct fprop_global`: events of a domain, aged by periods.
#[derive(Clone, Debug)]
pub struct FpropGlobal {
    events: u64,
    period: u64,
}

impl Default for FpropGlobal {
    fn default() -> Self {
        // fprop_global_init: 1 event, so a fraction never divides by 0
        FpropGlobal {
            events: 1,
            period: 0,
        }
    }
}

/// `struct fprop_local_percpu`: one wb's events in a domain.
#[derive(Clone, Debug, Default)]
pub struct FpropLocal {
    events: u64,
    period: u64,
}

impl FpropGlobal {
    /// `fprop_new_period`: age by `periods`; false if nothing is left to
    /// age (the timer then stops).
    fn new_period(&mut self, periods: u64) -> bool {
        if self.events <= 1 {
            return false;
        }
        if periods < 64 {
            self.events >>= periods;
        } else {
            self.events = 0;
        }
        self.period += periods;
        true
    }

    /// `fprop_reflect_period_percpu`: age `pl` to the current period.
    fn reflect(&self, pl: &mut FpropLocal) {
        if pl.period >= self.period {
            return;
        }
        let d = self.period - pl.period;
        pl.events = if d < 64 { pl.events >> d } else { 0 };
        pl.period = self.period;
    }

    /// `__fprop_add_percpu` (no max fraction: `bdi max_ratio` 100%).
    fn add(&mut self, pl: &mut FpropLocal, nr: u64) {
        self.reflect(pl);
        pl.events += nr;
        self.events += nr;
    }

    /// `fprop_fraction_percpu`: (numerator, denominator), `num <= den`,
    /// `den > 0`.
    fn fraction(&self, pl: &mut FpropLocal) -> (u64, u64) {
        self.reflect(pl);
        let num = pl.events;
        let mut den = self.events;
        if den <= num {
            den = num.max(1);
        }
        (num, den)
    }
}

/// A `struct wb_domain`: the global one or a memcg's.
#[derive(Clone, Debug)]
pub struct Domain {
    /// `dirty_limit`: follows `thresh`, kept above the dirty pages.
    dirty_limit: u64,
    dirty_limit_tstamp: u64,
    completions: FpropGlobal,
    /// The `writeout_period` timer: (expiry, jiffy armed), when running.
    period_timer: Option<(u64, u64)>,
}

impl Domain {
    /// The global domain: `writeback_set_ratelimit` sets its limit to the
    /// threshold when the sysctl is written.
    pub fn global(thresh: u64, now: u64) -> Self {
        Domain {
            dirty_limit: thresh,
            dirty_limit_tstamp: now,
            completions: FpropGlobal::default(),
            period_timer: None,
        }
    }

    /// A memcg's domain (`wb_domain_init`: zeroed, stamped now).
    pub fn memcg(now: u64) -> Self {
        Domain {
            dirty_limit: 0,
            dirty_limit_tstamp: now,
            completions: FpropGlobal::default(),
            period_timer: None,
        }
    }

    /// `dirty_limit` (pages).
    pub fn dirty_limit(&self) -> u64 {
        self.dirty_limit
    }

    /// Run the `writeout_period` timer for every expiry up to `now`
    /// (a `timer_list` runs a tick or more after its expiry:
    /// [`blkqos_core::timer_wheel_expiry`]).
    fn catch_up(&mut self, now: u64, hz: Hz) {
        let len = hz.completions_period();
        while let Some((expires, armed)) = self.period_timer {
            let runs = blkqos_core::time::timer_wheel_expiry(
                blkqos_core::Jiffies(expires),
                blkqos_core::Jiffies(armed),
            )
            .0;
            if runs > now {
                return;
            }
            let miss = (runs - expires) / len;
            self.period_timer = if self.completions.new_period(miss + 1) {
                Some((expires + miss * len + len, runs))
            } else {
                None
            };
        }
    }

    /// `wb_domain_writeout_add`: `nr` pages of `pl`'s wb finished writeback.
    fn writeout_add(&mut self, pl: &mut FpropLocal, nr: u64, now: u64, hz: Hz) {
        self.catch_up(now, hz);
        self.completions.add(pl, nr);
        if self.period_timer.is_none() {
            self.period_timer = Some((now + hz.completions_period(), now));
        }
    }
}

/// A wb's bandwidth and rate-limit state (`struct bdi_writeback`).
#[derive(Clone, Debug)]
pub struct WbState {
    /// `write_bandwidth`, `avg_write_bandwidth` (pages/s).
    pub write_bandwidth: u64,
    /// `avg_write_bandwidth`: the smoothed estimate the throttle uses.
    pub avg_write_bandwidth: u64,
    /// `dirty_ratelimit`, `balanced_dirty_ratelimit` (pages/s).
    pub dirty_ratelimit: u64,
    /// `balanced_dirty_ratelimit`: the last rate that would balance.
    pub balanced_dirty_ratelimit: u64,
    bw_time_stamp: u64,
    dirtied_stamp: u64,
    written_stamp: u64,
    /// `WB_DIRTIED`, `WB_WRITTEN`: pages dirtied and written back.
    pub dirtied: u64,
    /// `WB_WRITTEN`: pages whose writeback finished.
    pub written: u64,
    /// `dirty_exceeded`: tasks call in every 8 pages.
    pub dirty_exceeded: bool,
    global_completions: FpropLocal,
    memcg_completions: FpropLocal,
    /// The wb's memcg domain (None for the root cgroup's wb).
    pub memcg: Option<Domain>,
}

impl WbState {
    /// A new wb at jiffy `now` (`wb_init`); `memcg`: it belongs to a
    /// non-root memory cgroup.
    pub fn new(now: u64, memcg: bool) -> Self {
        WbState {
            write_bandwidth: INIT_BW,
            avg_write_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            bw_time_stamp: now,
            dirtied_stamp: 0,
            written_stamp: 0,
            dirtied: 0,
            written: 0,
            dirty_exceeded: false,
            global_completions: FpropLocal::default(),
            memcg_completions: FpropLocal::default(),
            memcg: memcg.then(|| Domain::memcg(now)),
        }
    }
}

/// A task's throttle state (`task_struct`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskState {
    /// Pages dirtied since the last call into `balance_dirty_pages`.
    pub nr_dirtied: u64,
    /// Pages to dirty before the next call.
    pub nr_dirtied_pause: u64,
    /// `dirty_paused_when` (None: 0 in the kernel, never set).
    pub dirty_paused_when: Option<i64>,
}

impl Default for TaskState {
    fn default() -> Self {
        TaskState {
            nr_dirtied: 0,
            nr_dirtied_pause: INITIAL_DIRTIED_PAUSE,
            dirty_paused_when: None,
        }
    }
}

impl TaskState {
    /// `balance_dirty_pages_ratelimited`: pages the task may dirty before
    /// it calls in.
    pub fn ratelimit(&self, wb_dirty_exceeded: bool) -> u64 {
        if wb_dirty_exceeded {
            self.nr_dirtied_pause.min(32 >> (12 - 10))
        } else {
            self.nr_dirtied_pause
        }
    }
}

/// The page counts one call of `balance_dirty_pages` sees.
#[derive(Clone, Copy, Debug)]
pub struct Counts {
    /// Configured memory in pages (the global domain's `avail`).
    pub avail: u64,
    /// Global dirty and writeback pages.
    pub dirty: u64,
    /// The global `thresh` (pages).
    pub thresh: u64,
    /// The global `bg_thresh` (pages).
    pub bg_thresh: u64,
    /// `vm.dirty_bytes` / `dirty_background_bytes` as set (0: the ratios
    /// are used), for the memcg domain's conversion.
    pub dirty_bytes: u64,
    /// `vm.dirty_background_bytes` (0: the ratio is used).
    pub bg_bytes: u64,
    /// `vm.dirty_ratio` / `dirty_background_ratio` (%), when no bytes.
    pub dirty_ratio: u64,
    /// `vm.dirty_background_ratio` (%).
    pub bg_ratio: u64,
    /// The wb's dirty and writeback pages (also its memcg's).
    pub wb_dirty: u64,
    /// Its memcg's file pages (clean, dirty and under writeback) and its
    /// dirty and writeback pages, as the memcg's statistics last flushed
    /// show them (`mem_cgroup_wb_stats` reads rstat counters that the
    /// periodic flush refreshes every 2 s).
    pub memcg_filepages: u64,
    /// (the memcg's dirty and writeback pages)
    pub memcg_dirty: u64,
    /// Its memcg's headroom under `memory.max` (pages; `u64::MAX`: none).
    pub memcg_headroom: u64,
    /// Where the floor of a wb's share lies ([`WbThreshFloor`]).
    pub floor: WbThreshFloor,
}

/// Where the kernel floors a wb's share of a domain's threshold, which is
/// close to 0 while the wb's writeout fraction is small ("honour such
/// devices a reasonable good threshold").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WbThreshFloor {
    /// Before Linux 6.14: only `wb_position_ratio` raises its `wb_thresh`
    /// to an eighth of the domain's headroom under its hard limit
    /// (`(limit - dirty) / 8`); the thresholds themselves stay at the
    /// fraction.
    #[default]
    PositionRatio,
    /// Linux 6.14 on ("mm/page-writeback: raise wb_thresh to prevent
    /// write blocking with strictlimit"): `__wb_calc_thresh` raises every
    /// share it computes to an eighth of the domain's room under that
    /// threshold (`(thresh - dirty) / 8`, capped at `thresh`), so the
    /// balance's `wb_thresh` and `wb_bg_thresh` and the flusher's
    /// background check (`wb_over_bg_thresh`, writeback excluded) all see
    /// it, and `wb_position_ratio` no longer adds its own.
    CalcThresh,
}

impl WbThreshFloor {
    /// `__wb_calc_thresh`'s floor for `share` of `thresh` in a domain
    /// with `dirty` pages (as that caller counts them).
    pub fn floored(self, share: u64, thresh: u64, dirty: u64) -> u64 {
        match self {
            WbThreshFloor::PositionRatio => share,
            WbThreshFloor::CalcThresh if thresh > dirty => {
                share.max((thresh - dirty) / 8).min(thresh)
            }
            WbThreshFloor::CalcThresh => share.min(thresh),
        }
    }
}

/// `struct dirty_throttle_control`: one domain seen from one wb.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dtc {
    /// Available memory (pages).
    pub avail: u64,
    /// Dirty and writeback pages of the domain.
    pub dirty: u64,
    /// The domain's dirty threshold (pages).
    pub thresh: u64,
    /// The domain's background threshold (pages).
    pub bg_thresh: u64,
    /// `hard_dirty_limit`.
    pub limit: u64,
    /// The wb's dirty and writeback pages.
    pub wb_dirty: u64,
    /// The wb's share of `thresh`.
    pub wb_thresh: u64,
    /// The wb's share of `bg_thresh`.
    pub wb_bg_thresh: u64,
    /// `pos_ratio`, fixed point (1024 = 1.0).
    pub pos_ratio: u64,
    /// The wb is over its share and the domain over its threshold.
    pub dirty_exceeded: bool,
    /// Below the domain's freerun ceiling.
    pub freerun: bool,
    /// Where the wb's share is floored.
    pub floor: WbThreshFloor,
}

fn freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `dirty_poll_interval`.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// `pos_ratio_polynom`: `1 + ((setpoint − dirty) / (limit − setpoint))³`,
/// in [0, 2], fixed point.
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> i64 {
    let x = ((setpoint as i64 - dirty as i64) << SHIFT) / ((limit - setpoint) | 1) as i64;
    let mut pos = x;
    pos = (pos * x) >> SHIFT;
    pos = (pos * x) >> SHIFT;
    pos += 1 << SHIFT;
    pos.clamp(0, 2 << SHIFT)
}

impl Dtc {
    /// The global domain's limits (`domain_dirty_avail` with writeback,
    /// `domain_dirty_limits`, `domain_dirty_freerun`).
    pub fn global(c: &Counts, dom: &Domain) -> Self {
        let mut d = Dtc {
            avail: c.avail,
            dirty: c.dirty,
            thresh: c.thresh,
            bg_thresh: c.bg_thresh,
            wb_dirty: c.wb_dirty,
            floor: c.floor,
            ..Dtc::default()
        };
        d.limit = d.thresh.max(dom.dirty_limit);
        d.freerun = d.dirty <= freerun_ceiling(d.thresh, d.bg_thresh);
        d
    }

    /// A memcg domain's limits, from the global one (`mdtc_calc_avail`,
    /// `domain_dirty_limits` with `gdtc` set), with unbounded headroom.
    pub fn memcg(c: &Counts, g: &Dtc, dom: &Domain) -> Self {
        // per-PAGE_SIZE ratios; byte settings scaled against the global
        // available memory
        let page = 4096u64;
        let gavail = g.avail.max(1);
        let ratio = if c.dirty_bytes > 0 {
            c.dirty_bytes.div_ceil(gavail).min(page)
        } else {
            c.dirty_ratio * page / 100
        };
        let bg_ratio = if c.bg_bytes > 0 {
            c.bg_bytes.div_ceil(gavail).min(page)
        } else {
            c.bg_ratio * page / 100
        };
        let dirty = c.memcg_dirty;
        // mdtc_calc_avail: the memcg's file pages, and what it may still
        // take of the other groups' clean memory
        let filepages = c.memcg_filepages;
        let clean = filepages - filepages.min(dirty);
        let global_clean = g.avail - g.avail.min(g.dirty);
        let other_clean = global_clean - global_clean.min(clean);
        let avail = filepages + c.memcg_headroom.min(other_clean);
        let thresh = ratio * avail / page;
        let mut bg_thresh = bg_ratio * avail / page;
        if bg_thresh >= thresh {
            bg_thresh = thresh / 2;
        }
        let mut d = Dtc {
            avail,
            dirty,
            thresh,
            bg_thresh,
            wb_dirty: c.wb_dirty,
            floor: c.floor,
            ..Dtc::default()
        };
        d.limit = d.thresh.max(dom.dirty_limit);
        d.freerun = d.dirty <= freerun_ceiling(d.thresh, d.bg_thresh);
        d
    }

    /// `__wb_calc_thresh` and `wb_dirty_limits` (no min/max ratio).
    fn wb_limits(&mut self, dom: &Domain, pl: &mut FpropLocal) {
        let (num, den) = dom.completions.fraction(pl);
        self.wb_thresh = self
            .floor
            .floored(self.thresh * num / den, self.thresh, self.dirty);
        self.wb_bg_thresh = (self.wb_thresh * self.bg_thresh)
            .checked_div(self.thresh)
            .unwrap_or(0);
    }

    /// `wb_position_ratio` (not strictlimit).
    fn position_ratio(&mut self, write_bw: u64) {
        self.pos_ratio = 0;
        let freerun = freerun_ceiling(self.thresh, self.bg_thresh);
        let limit = self.limit;
        if self.dirty >= limit {
            return;
        }
        let setpoint = (freerun + limit) / 2;
        let mut pos = pos_ratio_polynom(setpoint, self.dirty, limit) as u64;
        let mut wb_thresh = self.wb_thresh.min(self.thresh);
        if self.floor == WbThreshFloor::PositionRatio {
            wb_thresh = wb_thresh.max((limit - self.dirty) / 8);
        }
        let x = (wb_thresh << 16) / (self.thresh | 1);
        let wb_setpoint = (setpoint * x) >> 16;
        let span = ((self.thresh.saturating_sub(wb_thresh) + 8 * write_bw) * x) >> 16;
        let x_intercept = wb_setpoint + span;
        if self.wb_dirty < x_intercept - span / 4 {
            pos = pos * (x_intercept - self.wb_dirty) / ((x_intercept - wb_setpoint) | 1);
        } else {
            pos /= 4;
        }
        // the wb reserve area
        let x_intercept = wb_thresh / 2;
        if self.wb_dirty < x_intercept {
            if self.wb_dirty > x_intercept / 8 {
                pos = pos * x_intercept / self.wb_dirty;
            } else {
                pos *= 8;
            }
        }
        self.pos_ratio = pos;
    }

    /// `balance_wb_limits`: the wb's share, `dirty_exceeded`, `pos_ratio`.
    fn balance_wb(&mut self, dom: &Domain, pl: &mut FpropLocal, write_bw: u64) {
        self.freerun = false;
        self.wb_limits(dom, pl);
        self.dirty_exceeded = self.wb_dirty > self.wb_thresh && self.dirty > self.thresh;
        self.position_ratio(write_bw);
    }

    /// `domain_poll_intv`.
    fn poll_interval(&self) -> u64 {
        dirty_poll_interval(self.dirty, self.thresh)
    }
}

/// `update_dirty_limit` / `domain_update_dirty_limit`.
fn update_dirty_limit(dom: &mut Domain, d: &Dtc, now: u64, hz: Hz) {
    if now < dom.dirty_limit_tstamp + hz.bandwidth_interval() {
        return;
    }
    let thresh = d.thresh;
    if dom.dirty_limit < thresh {
        dom.dirty_limit = thresh;
    } else {
        let target = thresh.max(d.dirty);
        if dom.dirty_limit > target {
            dom.dirty_limit -= (dom.dirty_limit - target) >> 5;
        }
    }
    dom.dirty_limit_tstamp = now;
}

/// What `wb_update_dirty_ratelimit` traced (`bdi_dirty_ratelimit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RatelimitUpdate {
    /// Pages dirtied per second since the last update.
    pub dirty_rate: u64,
    /// `task_ratelimit` of the domain (pages/s, +1).
    pub task_ratelimit: u64,
    /// The rate that would balance (pages/s).
    pub balanced_dirty_ratelimit: u64,
    /// The wb's `dirty_ratelimit` after the update (pages/s).
    pub dirty_ratelimit: u64,
    /// The wb's `write_bandwidth` and `avg_write_bandwidth` when it
    /// updated (pages/s).
    pub write_bw: u64,
    /// (the average the throttle uses).
    pub avg_write_bw: u64,
}

/// `wb_update_dirty_ratelimit` for one domain (not strictlimit).
pub fn update_dirty_ratelimit(
    wb: &mut WbState,
    d: &Dtc,
    dirtied: u64,
    elapsed: u64,
    hz: Hz,
) -> RatelimitUpdate {
    let freerun = freerun_ceiling(d.thresh, d.bg_thresh);
    let setpoint = (freerun + d.limit) / 2;
    let write_bw = wb.avg_write_bandwidth;
    let mut dirty_ratelimit = wb.dirty_ratelimit;
    let dirty_rate = (dirtied - wb.dirtied_stamp) * hz.0 / elapsed;
    let task_ratelimit = ((dirty_ratelimit * d.pos_ratio) >> SHIFT) + 1;
    let balanced = (task_ratelimit * write_bw / (dirty_rate | 1)).min(write_bw);
    let mut step = 0;
    if d.dirty < setpoint {
        let x = wb
            .balanced_dirty_ratelimit
            .min(balanced)
            .min(task_ratelimit);
        if dirty_ratelimit < x {
            step = x - dirty_ratelimit;
        }
    } else {
        let x = wb
            .balanced_dirty_ratelimit
            .max(balanced)
            .max(task_ratelimit);
        if dirty_ratelimit > x {
            step = dirty_ratelimit - x;
        }
    }
    let shift = dirty_ratelimit / (2 * step + 1);
    step = if shift < 64 {
        (step >> shift).div_ceil(8)
    } else {
        0
    };
    if dirty_ratelimit < balanced {
        dirty_ratelimit += step;
    } else {
        dirty_ratelimit -= step;
    }
    wb.dirty_ratelimit = dirty_ratelimit.max(1);
    wb.balanced_dirty_ratelimit = balanced;
    RatelimitUpdate {
        dirty_rate,
        task_ratelimit,
        balanced_dirty_ratelimit: balanced,
        dirty_ratelimit: wb.dirty_ratelimit,
        write_bw: wb.write_bandwidth,
        avg_write_bw: write_bw,
    }
}

/// `wb_update_write_bandwidth`.
pub fn update_write_bandwidth(wb: &mut WbState, elapsed: u64, written: u64, hz: Hz) {
    let period = hz.completions_period();
    let mut avg = wb.avg_write_bandwidth;
    let old = wb.write_bandwidth;
    let mut bw = (written - written.min(wb.written_stamp)) * hz.0;
    if elapsed > period {
        bw /= elapsed;
        avg = bw;
    } else {
        bw += old * (period - elapsed);
        bw >>= ilog2(period);
        if avg > old && old >= bw {
            avg -= (avg - old) >> 3;
        }
        if avg < old && old <= bw {
            avg += (old - avg) >> 3;
        }
    }
    wb.write_bandwidth = bw;
    wb.avg_write_bandwidth = avg.max(1);
}

/// `wb_max_pause`.
fn max_pause(wb: &WbState, wb_dirty: u64, hz: Hz) -> u64 {
    let bw = wb.avg_write_bandwidth;
    let t = wb_dirty / (1 + bw / (1 + hz.0 / 8).next_power_of_two()) + 1;
    t.min(hz.max_pause())
}

/// `wb_min_pause`: (min pause, next `nr_dirtied_pause`).
fn min_pause(
    wb: &WbState,
    max_pause: u64,
    task_ratelimit: u64,
    dirty_ratelimit: u64,
    hz: Hz,
) -> (u64, u64) {
    let hi = ilog2(wb.avg_write_bandwidth);
    let lo = ilog2(wb.dirty_ratelimit);
    let hz_pow = hz.0.next_power_of_two();
    let mut t = (hz.0 / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz.0) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    let mut pages = dirty_ratelimit * t / hz_pow;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / hz_pow;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = hz.0 * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = hz.0 * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / hz_pow;
    }
    let min = if pages >= DIRTY_POLL_THRESH {
        1 + t / 2
    } else {
        t
    };
    (min, pages)
}

/// What one pass of `balance_dirty_pages` decided (its tracepoint's
/// fields where it has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go on dirtying (free running, or a pause shorter than the minimum).
    Proceed,
    /// Sleep `pause` jiffies; then return (`again` false) or pass again
    /// (the hard-limit loop).
    Sleep {
        /// Jiffies.
        pause: u64,
        /// Pass again on waking.
        again: bool,
    },
}

/// The fields of the `balance_dirty_pages` tracepoint of a pass that
/// throttled (for the trace and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Throttled {
    /// The domain that throttled (`sdtc`).
    pub sdtc: Dtc,
    /// `dirty_ratelimit` (pages/s).
    pub dirty_ratelimit: u64,
    /// `task_ratelimit` (pages/s).
    pub task_ratelimit: u64,
    /// `period` (jiffies).
    pub period: u64,
    /// `pause` (jiffies; the negative think-time credit when it did not
    /// sleep).
    pub pause: i64,
}

/// What one pass of `balance_dirty_pages` did.
#[derive(Clone, Debug)]
pub struct Pass {
    /// Sleep or go on.
    pub decision: Decision,
    /// The tracepoint's numbers, when it throttled.
    pub throttled: Option<Throttled>,
    /// The wb's rate-limit updates it made (global, then memcg domain).
    pub updates: Vec<RatelimitUpdate>,
    /// Below both domains' freerun ceilings: it did not throttle.
    pub freerun: bool,
}

/// One pass of `balance_dirty_pages`' loop for `task` on `wb` at jiffy
/// `now`, `pages_dirtied` being the task's dirtied pages when it called
/// in. `global` is the global domain; `c` the page counts now.
pub fn balance_pass(
    task: &mut TaskState,
    wb: &mut WbState,
    global: &mut Domain,
    c: &Counts,
    pages_dirtied: u64,
    now: u64,
    hz: Hz,
) -> Pass {
    global.catch_up(now, hz);
    let mut g = Dtc::global(c, global);
    let mut m = wb.memcg.as_ref().map(|dom| Dtc::memcg(c, &g, dom));
    let free_running = |task: &mut TaskState, g: &Dtc, m: &Option<Dtc>| {
        let m_intv = m.as_ref().map_or(u64::MAX, Dtc::poll_interval);
        task.dirty_paused_when = Some(now as i64);
        task.nr_dirtied = 0;
        task.nr_dirtied_pause = g.poll_interval().min(m_intv);
        Pass {
            decision: Decision::Proceed,
            throttled: None,
            updates: Vec::new(),
            freerun: true,
        }
    };
    if g.freerun && m.as_ref().is_none_or(|m| m.freerun) {
        return free_running(task, &g, &m);
    }
    let write_bw = wb.avg_write_bandwidth;
    g.balance_wb(global, &mut wb.global_completions, write_bw);
    let mut use_memcg = false;
    if let (Some(md), Some(dom)) = (m.as_mut(), wb.memcg.as_mut()) {
        dom.catch_up(now, hz);
        md.balance_wb(dom, &mut wb.memcg_completions, write_bw);
        use_memcg = md.pos_ratio < g.pos_ratio;
    }
    wb.dirty_exceeded = g.dirty_exceeded || m.as_ref().is_some_and(|m| m.dirty_exceeded);
    let mut updates = Vec::new();
    if wb.bw_time_stamp + hz.bandwidth_interval() < now {
        updates = update_bandwidth(wb, global, Some((&g, m.as_ref())), now, hz);
    }
    let sdtc = if use_memcg { m.unwrap_or(g) } else { g };
    pause_pass(task, wb, &sdtc, pages_dirtied, now, hz, updates)
}

/// `wb_calc_thresh` (no min/max ratio): `wb`'s share of `thresh`, by its
/// fraction of the recent writeout completions of the global domain or,
/// with `memcg`, of its memory cgroup's (the whole of `thresh` for a wb
/// without one).
/// With `floor` at [`WbThreshFloor::CalcThresh`], the share is raised
/// to an eighth of the domain's room under `thresh` (`dirty`: the
/// domain's pages as the caller counts them; the background check
/// leaves writeback out).
pub fn wb_share(
    wb: &mut WbState,
    global: &mut Domain,
    memcg: bool,
    (thresh, dirty, floor): (u64, u64, WbThreshFloor),
    now: u64,
    hz: Hz,
) -> u64 {
    let (num, den) = if memcg {
        let Some(dom) = wb.memcg.as_mut() else {
            return thresh;
        };
        dom.catch_up(now, hz);
        dom.completions.fraction(&mut wb.memcg_completions)
    } else {
        global.catch_up(now, hz);
        global.completions.fraction(&mut wb.global_completions)
    };
    floor.floored(thresh * num / den, thresh, dirty)
}

/// The rest of a throttled pass of `balance_dirty_pages`: the task's
/// rate from the chosen domain `sdtc`, its pause, and its next poll.
// the kernel's own shape: `task_ratelimit == 0` is the hard-limit branch
#[allow(clippy::manual_checked_ops)]
fn pause_pass(
    task: &mut TaskState,
    wb: &WbState,
    sdtc: &Dtc,
    pages_dirtied: u64,
    now: u64,
    hz: Hz,
    updates: Vec<RatelimitUpdate>,
) -> Pass {
    let sdtc = *sdtc;
    let dirty_ratelimit = wb.dirty_ratelimit;
    let task_ratelimit = (dirty_ratelimit * sdtc.pos_ratio) >> SHIFT;
    let max_pause = max_pause(wb, sdtc.wb_dirty, hz);
    let (min_pause, nr_dirtied_pause) =
        min_pause(wb, max_pause, task_ratelimit, dirty_ratelimit, hz);
    let mut now_after = now as i64;
    let (period, pause) = if task_ratelimit == 0 {
        (max_pause, max_pause as i64)
    } else {
        let period = hz.0 * pages_dirtied / task_ratelimit;
        let mut pause = period as i64;
        if let Some(when) = task.dirty_paused_when {
            pause -= now as i64 - when;
        }
        if pause < min_pause as i64 {
            if pause < -(hz.0 as i64) {
                task.dirty_paused_when = Some(now as i64);
                task.nr_dirtied = 0;
            } else if period > 0 {
                task.dirty_paused_when = task.dirty_paused_when.map(|w| w + period as i64);
                task.nr_dirtied = 0;
            } else if task.nr_dirtied_pause <= pages_dirtied {
                task.nr_dirtied_pause += pages_dirtied;
            }
            let t = Throttled {
                sdtc,
                dirty_ratelimit,
                task_ratelimit,
                period,
                pause: pause.min(0),
            };
            return Pass {
                decision: Decision::Proceed,
                throttled: Some(t),
                updates,
                freerun: false,
            };
        }
        if pause > max_pause as i64 {
            now_after += (pause - max_pause as i64).min(max_pause as i64);
            pause = max_pause as i64;
        }
        (period, pause)
    };
    task.dirty_paused_when = Some(now_after + pause);
    task.nr_dirtied = 0;
    task.nr_dirtied_pause = nr_dirtied_pause;
    let again = task_ratelimit == 0 && sdtc.wb_dirty > WB_STAT_ERROR;
    let t = Throttled {
        sdtc,
        dirty_ratelimit,
        task_ratelimit,
        period,
        pause,
    };
    Pass {
        decision: Decision::Sleep {
            pause: pause as u64,
            again,
        },
        throttled: Some(t),
        updates,
        freerun: false,
    }
}

/// `__wb_update_bandwidth`: with `dtcs` (from a throttled task) the
/// domains' limits and the wb's dirty ratelimit too; without (the
/// writeback path's `wb_update_bandwidth`) the write bandwidth only.
pub fn update_bandwidth(
    wb: &mut WbState,
    global: &mut Domain,
    dtcs: Option<(&Dtc, Option<&Dtc>)>,
    now: u64,
    hz: Hz,
) -> Vec<RatelimitUpdate> {
    let elapsed = now.saturating_sub(wb.bw_time_stamp).max(1);
    let dirtied = wb.dirtied;
    let written = wb.written;
    let mut updates = Vec::new();
    if let Some((g, m)) = dtcs {
        // hard_dirty_limit() is read after the domain's limit moved
        update_dirty_limit(global, g, now, hz);
        let g = Dtc {
            limit: g.thresh.max(global.dirty_limit),
            ..*g
        };
        updates.push(update_dirty_ratelimit(wb, &g, dirtied, elapsed, hz));
        if let (Some(m), Some(dom)) = (m, wb.memcg.as_mut()) {
            update_dirty_limit(dom, m, now, hz);
            let m = Dtc {
                limit: m.thresh.max(dom.dirty_limit),
                ..*m
            };
            updates.push(update_dirty_ratelimit(wb, &m, dirtied, elapsed, hz));
        }
    }
    update_write_bandwidth(wb, elapsed, written, hz);
    wb.dirtied_stamp = dirtied;
    wb.written_stamp = written;
    wb.bw_time_stamp = now;
    updates
}

/// `wb_bandwidth_estimate_start`: writeback starts on a wb idle for more
/// than a second: restart the estimate from now.
pub fn bandwidth_estimate_start(wb: &mut WbState, writeback_idle: bool, now: u64, hz: Hz) {
    if now.saturating_sub(wb.bw_time_stamp) > hz.0 && writeback_idle {
        wb.dirtied_stamp = wb.dirtied;
        wb.written_stamp = wb.written;
        wb.bw_time_stamp = now;
    }
}

/// `__wb_writeout_add`: `nr` pages of `wb` finished writeback at `now`.
pub fn writeout_add(wb: &mut WbState, global: &mut Domain, nr: u64, now: u64, hz: Hz) {
    wb.written += nr;
    global.writeout_add(&mut wb.global_completions, nr, now, hz);
    if let Some(dom) = wb.memcg.as_mut() {
        dom.writeout_add(&mut wb.memcg_completions, nr, now, hz);
    }
}

/// Whether the wb's bandwidth estimate is due (`do_writepages`'s check).
pub fn bandwidth_due(wb: &WbState, now: u64, hz: Hz) -> bool {
    wb.bw_time_stamp + hz.bandwidth_interval() < now
}

/// A `writeback:balance_dirty_pages` event (include/trace/events/writeback.h):
/// a pass that throttled, in the tracepoint's units (pages, KB/s, ms).
#[derive(Clone, Debug)]
pub struct BdpEvent {
    /// When it fired.
    pub at: blkqos_core::Instant,
    /// The pass's numbers.
    pub t: Throttled,
    /// The global domain's `dirty_limit` (the tracepoint's `limit` and
    /// `setpoint` are the global domain's).
    pub global_limit: u64,
    /// The task's `dirtied` (pages it called in with) and next
    /// `nr_dirtied_pause`.
    pub dirtied: u64,
    /// (the next `nr_dirtied_pause`).
    pub dirtied_pause: u64,
    /// Jiffies since the pass's loop started, and since the task's last
    /// pause (`paused`, `think`; think 0 when never paused).
    pub paused: u64,
    /// (think).
    pub think: i64,
    /// The wb's group (the tracepoint's `cgroup_ino`).
    pub group: u32,
    /// `CONFIG_HZ`.
    pub hz: u64,
}

/// A `writeback:bdi_dirty_ratelimit` event: one domain's
/// `wb_update_dirty_ratelimit`.
#[derive(Clone, Debug)]
pub struct RatelimitEvent {
    /// When it fired.
    pub at: blkqos_core::Instant,
    /// The update.
    pub u: RatelimitUpdate,
    /// The wb's group (`cgroup_ino`).
    pub group: u32,
}

impl blkqos_core::controller::TraceRecord for BdpEvent {
    fn format(&self, _dev: &str, format: blkqos_core::controller::TraceFormat, out: &mut String) {
        use std::fmt::Write as _;
        let blkqos_core::controller::TraceFormat::Ftrace(devid) = format else {
            return;
        };
        let ms = |j: i64| j * 1000 / self.hz as i64;
        let d = &self.t.sdtc;
        // the tracepoint's setpoint: the global limit and the chosen
        // domain's freerun point (trace_balance_dirty_pages)
        let freerun = freerun_ceiling(d.thresh, d.bg_thresh);
        let setpoint = (self.global_limit + freerun) / 2;
        blkqos_core::controller::ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " balance_dirty_pages: bdi {}:{}: limit={} setpoint={} dirty={} bdi_setpoint={} bdi_dirty={} dirty_ratelimit={} task_ratelimit={} dirtied={} dirtied_pause={} paused={} pause={} period={} think={} cgroup_ino={}",
            devid.major,
            devid.minor,
            self.global_limit,
            setpoint,
            d.dirty,
            setpoint * d.wb_thresh / (d.thresh + 1),
            d.wb_dirty,
            self.t.dirty_ratelimit * 4,
            self.t.task_ratelimit * 4,
            self.dirtied,
            self.dirtied_pause,
            ms(self.paused as i64),
            ms(self.t.pause),
            ms(self.t.period as i64),
            ms(self.think),
            self.group,
        );
    }
}

impl blkqos_core::controller::TraceRecord for RatelimitEvent {
    fn format(&self, _dev: &str, format: blkqos_core::controller::TraceFormat, out: &mut String) {
        use std::fmt::Write as _;
        let blkqos_core::controller::TraceFormat::Ftrace(devid) = format else {
            return;
        };
        blkqos_core::controller::ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " bdi_dirty_ratelimit: bdi {}:{}: write_bw={} awrite_bw={} dirty_rate={} dirty_ratelimit={} task_ratelimit={} balanced_dirty_ratelimit={} cgroup_ino={}",
            devid.major,
            devid.minor,
            self.u.write_bw * 4,
            self.u.avg_write_bw * 4,
            self.u.dirty_rate * 4,
            self.u.dirty_ratelimit * 4,
            self.u.task_ratelimit * 4,
            self.u.balanced_dirty_ratelimit * 4,
            self.group,
        );
    }
}
