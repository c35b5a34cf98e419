//! blk-iocost: proportional IO control by device time — `io.weight`,
//! `io.cost.model`, `io.cost.qos` — as Linux implements it, sans IO.
//!
//! Mirrors linux v6.9+ `block/blk-iocost.c` (tree 4e6bd13a, the
//! `blk_time_get_ns` era) plus seed 001's fix f91ffe89b201 (7.1).
//!
//! # 1. Problem
//! Bandwidth and IOPS are useless for sharing a device: depending on the
//! device and the IO pattern they vary by orders of magnitude (a random
//! 4 KiB read and a 1 MiB sequential read are both "one IO"). What is
//! shared is *device time*. It is not observable, but a cost model can
//! estimate it well enough, and a feedback loop on the device's saturation
//! absorbs the model's error.
//!
//! # 2. Model
//! **Cost.** [`model`]: a linear model — per IO a sequential or random base
//! (by seek distance from the group's cursor, > 16 MiB = random) plus a
//! per-4-KiB-page cost, in vtime units of 2^37 per second of device time.
//! SSD_DFL: 4 KiB random read = 16,135,121 vtime = 117.40 µs; 1 MiB
//! sequential read = 309,166,125 = 2.249 ms.
//!
//! **Shares.** [`weights`]: each cgroup has a weight (1..10000, ×65536);
//! active groups get hierarchical shares ("hweights") that multiply down the
//! tree:
//! ```text
//!            root                 A0, A1, B all active:
//!          /      \               hwa(B)  = 300/400           = 75%
//!      A (100)   B (300)          hwa(A0) = 100/400 × 100/200 = 12.5% = 8192/65536
//!      /     \
//!  A0 (100)  A1 (100)
//! ```
//! **Virtual time.** [`vtime`]: the device vtime runs at `vrate` (vtime per
//! µs; 137,438 = 100%): `vnow = period_at_vtime + (now_us − period_at_us) ×
//! vrate`. Each group has a `vtime` that advances by `abs_cost × 65536 /
//! hweight_inuse` (rounded up) per issued IO: with 12.5% a 117 µs IO costs
//! 939 µs of the group's vtime. A group may issue while `vtime + cost ≤
//! vnow`; `vnow − vtime` is its budget, `vtime − done_vtime` its IO in
//! flight.
//!
//! # 3. Control strategy
//! ## 3-1 Vtime distribution (issue path, [`issue`])
//! 1. Root-cgroup IO, zero-cost IO (flush, discard, empty) and IO while
//!    disabled bypass. An idle group activates with exactly half a period of
//!    budget (`vtime = vnow − margins.target`, idle credit and old overage
//!    both discarded); the leaf-only rule refuses IO from an inner node
//!    with active children (issued uncontrolled).
//! 2. A group that donated weight and whose margin shrank below both its
//!    saved margin and 20% of a period raises `inuse` in 25%-of-active steps
//!    until the IO fits ("snapback").
//! 3. Fast path: no waiters, no debt, `vtime + cost ≤ vnow` → charge, issue.
//! 4. Over budget, META / ISSUE_AS_ROOT IO is issued at once and charged as
//!    *debt* (3-4). Other IO waits in the group's FIFO with `inuse = active`;
//!    the wait queue is kicked: pay debt, wake waiters in order while the
//!    budget covers them, re-arm an hrtimer for the first one that does not
//!    fit (`ceil(shortage/vrate)` µs + 1% of a period of slack).
//! 5. Completion adds the IO's cost to `done_vtime` and is a latency sample
//!    (3-2).
//!
//! ## 3-2 Vrate adjustment ([`period`])
//! Every period (2× the larger latency target, clamped to 1 ms..1 s: HDD
//! 500 ms, SSD 50 ms, fast SSD 10 ms) the timer reads the completions: the
//! share of IOs whose time since request allocation, less their transfer
//! (size) cost, exceeded rlat/wlat (`missed_ppm`), and the time IOs waited
//! for a request slot (`rq_wait_pct`). Saturated (rq_wait > 5% of the
//! period, or missed > 100% − rpct/wpct) → `busy_level = max(level, 0) + 1`;
//! clearly fine (under 75% of the thresholds) with throttled groups →
//! `min(level, 0) − 1` (no decrement while IO lags a period behind);
//! otherwise 0. vrate moves by `vrate_adj_pct[|level|]` per period: 0 for
//! levels 1–3, then 1, 2, 4, 8, 16%; 20 saturated periods in a row leave
//! 0.99^16 × 0.98 ≈ 83.4% of the start. A period without completions is
//! the seed-001 case: see [`variant`].
//!
//! ## 3-3 Donation ([`donation`])
//! A group using less than its share (budget > 20% of a period, no
//! waiters) donates: its target hweight_inuse is the one that brings its
//! budget back to 50% at the observed usage; `transfer_surpluses` turns the
//! targets into `inuse` weights so every non-donor keeps its relative share.
//! Donors snap back at once when they need their budget (3-1 step 2).
//!
//! ## 3-4 Debt, delay and forgiveness
//! Debt is paid from the group's budget before any waiter is woken; while
//! in debt `inuse` is 1. The overage (vtime + debt beyond vnow) sets an
//! issuer delay (250 µs at 500% of a period to 250 ms at 25000%, halving
//! per second). If the device averaged ≤ 50% usage over ≥ 100 ms, every
//! debt and delay is halved once per 100 ms.
//!
//! ## 3-5 The period timer, in order (`ioc_timer_fn`)
//! latency stats → kick waiters/debtors, deactivate idle groups (no IO
//! issued during the whole period, nothing in flight) → flush usage → per
//! group: lagging?, donor or shortage → transfer surpluses → busy_level →
//! vrate → autop class → debt forgiveness → next period (or IDLE) → vrate
//! error compensation (budget thrown away this period is re-spread over
//! the next by running vtime faster than base).
//!
//! # 4. Invariants (checked by [`IoCost::invariants`])
//! 1. Every node's `child_active_sum` / `child_inuse_sum` equal the sums of
//!    its children's `active` / `inuse`.
//! 2. The active list holds exactly the groups flagged active, once each,
//!    never the root; a group on it is a leaf of the active tree: no active
//!    ancestor below the root, no active children; `active == weight` and
//!    `1 ≤ inuse ≤ active`.
//! 3. An inner node with active descendants has `active == weight` and
//!    `inuse = ceil(weight × child_inuse_sum / child_active_sum)`; any other
//!    node off the list has `active == inuse == 0`.
//! 4. Waiters, debt and delay exist only on active groups; a debtor has
//!    `inuse == 1`; a group with waiters has its wake-up timer armed.
//! 5. `vtime − done_vtime` equals the summed cost of the group's committed
//!    IOs in flight (`inflight_cost`; each IO carries its own share in
//!    [`Io::cost_vtime`]).
//! 6. The waiter count matches the queues; an active group means the
//!    period timer is running and armed.
//! 7. The wait-queue timer queue is a heap of exactly the armed timers.
//! 8. An active group whose cached hweights carry the current generation
//!    has the hweights a from-scratch walk of the tree gives
//!    (`current_hweight` recomputes only when `hweight_gen` moved on).
//!
//! # 5. Divergences from Linux (6.9+ / 7.1)
//! * One device per instance; per-CPU counters are single counters; no
//!   locks, so the kernel's races (activation vs. timer) do not exist.
//! * `ioc_rqos_merge` is [`IoCost::merge`] (size cost only, priced through
//!   `adjust_inuse_and_calc_cost` as the kernel does, debt and
//!   issuer delay over budget, cursor on back merges), reached through
//!   `Controller::on_merge` when the driver merges a bio into the request
//!   last added to its submitter's plug; a charged merged bio's cost is
//!   added to the request's [`Io::cost_vtime`] (`ioc_rqos_done_bio` runs
//!   for every bio of the request when it completes). Other merge sources
//!   (the I/O scheduler's queue) are not modelled.
//! * The charge travels on the IO, as the kernel keeps it on the bio
//!   (`bio->bi_iocost_cost`): the completion (`IoCost::complete`) reads
//!   [`Io::cost_vtime`] back, so iocost keeps no per-IO state of its own.
//! * Issuer delay: a merge that kicks the delay returns
//!   [`IoCost::issuer_delay`] to the driver, which makes the submit call
//!   sleep that long before returning (`blkcg_maybe_throttle_current`).
//!   The META / issue-as-root debt path computes and accounts the delay
//!   but has no submitter to delay (no job issues such IO).
//! * A waiter committed by the kick of its own submission is dispatched
//!   at once; waiters ahead of it woken by the same kick come out of the
//!   next `on_timer` at the same instant (next_deadline = now).
//! * The period timer runs where the kernel's timer wheel runs it: at the
//!   start of the jiffy after its expiry, coarser for expiries 63 jiffies
//!   or more ahead (HZ is a parameter; `calc_index()`,
//!   [`crate::time::timer_wheel_expiry`]). Its [`crate::time::Jiffies`]
//!   read 0 at the run's first tick (blk-throttle's start at
//!   `jiffies_at_start`), which only moves where the coarser levels round
//!   to. A host can run its function later still
//!   ([`IoCostConfig::timer_late`], a measured lateness drawn per period,
//!   after an on-time run or after one a tick or more late:
//!   [`crate::time::lateness`]), and the next period starts from the late
//!   run, as `ioc_start_period()` reads `jiffies` then. Wait-queue
//!   hrtimers fire at their soft expiry (the kernel may run them up to the
//!   1% slack later). Due timers run in the order: knob writes, period
//!   timer, wait-queue timers by expiry, then group index.
//! * Divisors the kernel guarantees non-zero are clamped to ≥ 1, and a few
//!   64-bit products the kernel could overflow in absurd cases (e.g. `100 ×
//!   vover`) are computed in 128 bits, so no input panics.
//! * Reproduced kernel quirks (not divergences): the 32-bit `active × 25`
//!   in the snapback step (weights ≥ 2622 get small steps), the 32-bit
//!   `WEIGHT_ONE × usage` in `hweight_after_donation` (usage = 100% wraps
//!   to the minimum), `rlat`/`wlat` truncated to 32 bits, base-0 numbers
//!   in knob values, and `io.stat` printing the stats flushed at the last
//!   period end.
//! * [`IoCost::set_vrate`] starts a run at a given base vrate. Not a kernel
//!   interface: it states the history a real system carries (vrate
//!   persists across idle periods and `io.cost.*` writes; only an autop
//!   class change resets it to 100%).
//! * `reset`/`hold`/`hold-v2` ([`variant`]) select the no-completion rule;
//!   nothing else of older kernels is modelled (the 5.4–5.9 donation and
//!   margin code differ and are not offered as profiles).
//!
//! # 6. Observability ([`trace`])
//! [`PeriodTrace`] per period (state, period, busy_level, vrate, signals;
//! per active group weight inuse/active, hweight% inuse/active, inflight%,
//! debt ms, delay ms, usage%), formatted like iocost_monitor.py
//! ([`PeriodTrace::format_text`], [`PeriodTrace::format_json`]) or as the
//! kernel's `iocost_ioc_vrate_adj` tracepoint, printed only in the periods
//! `ioc_adjust_base_vrate()` traces ([`PeriodTrace::format_ftrace`]);
//! `iocost_iocg_activate`/`_idle` as [`trace::IocgEvent`],
//! `iocost_inuse_shortage`/`_transfer`/`_adjust` as [`trace::InuseEvent`],
//! `iocost_iocg_forgive_debt` as [`trace::ForgiveEvent`]; `io.stat`
//! keys via [`IoCost::iostat_keys_with`] (typed) and [`IoCost::iostat_suffix`].
//!
//! # 7. Source map (ours ↔ `block/blk-iocost.c`)
//! | here | kernel |
//! |---|---|
//! | `model::calc_lcoefs`, `Params::vtime_cost`, `Params::size_vtime_cost` | `calc_lcoefs`, `calc_vtime_cost_builtin`, `calc_size_vtime_cost_builtin` |
//! | `model::AUTOP`, `IoCost::autop_select`, `IoCost::refresh_params` | `autop[]`, `ioc_autop_idx`, `ioc_refresh_params_disk` |
//! | `vtime::period_us_for`, `Margins::new` | `ioc_refresh_period_us`, `ioc_refresh_margins` |
//! | `vtime::adjust_base_vrate`, `vtime::vrate_compensation` | `ioc_adjust_base_vrate`, `ioc_refresh_vrate` |
//! | `IoCost::snapshot`, `IoCost::start_period` | `ioc_now`, `ioc_start_period` |
//! | `weights.rs` | `__propagate_weights`, `propagate_weights`, `commit_weights`, `current_hweight`, `current_hweight_max`, `weight_updated` |
//! | `IoCost::activate`, `IoCost::adjust_inuse_and_calc_cost` | `iocg_activate`, `adjust_inuse_and_calc_cost` |
//! | `IoCost::throttle`, `IoCost::commit_bio` | `ioc_rqos_throttle`, `iocg_commit_bio` |
//! | `IoCost::merge` | `ioc_rqos_merge` |
//! | `IoCost::incur_debt`, `pay_debt`, `kick_delay` | `iocg_incur_debt`, `iocg_pay_debt`, `iocg_kick_delay` |
//! | `IoCost::kick_waitq`, `waitq_timer_fired` | `iocg_kick_waitq` + `iocg_wake_fn`, `iocg_waitq_timer_fn` |
//! | `IoCost::complete` | `ioc_rqos_done_bio`, `ioc_rqos_done` |
//! | `IoCost::period_timer_fired`, `period_donations` | `ioc_timer_fn` |
//! | `lat_stat`, `check_iocgs`, `flush_stat`, `forgive_debts` | `ioc_lat_stat`, `ioc_check_iocgs`, `iocg_flush_stat*`, `ioc_forgive_debts` |
//! | `period::next_busy_level` | the busy_level block of `ioc_timer_fn` (+ f91ffe89b201) |
//! | `hweight_after_donation`, `transfer_surpluses`, `build_inner_walk` | same names |
//! | `knob::parse_*`, `knob::format_*` | `ioc_weight_write/show`, `ioc_qos_write/prfill`, `ioc_cost_model_write/prfill` |
//! | `IoCost::iostat_keys_with` | `ioc_pd_stat` |
//! | `timerq::TimerQueue` | the per-iocg `waitq_timer` hrtimers (the hrtimer base's ordered queue) |
//! | `lifecycle.rs`: `add_group`, `remove_group`, `free_if_done` | `ioc_pd_alloc` + `ioc_pd_init`; `ioc_pd_free` once the bios pinning the blkg are done |
//!
//! # 8. Cost
//! As in the kernel, only the period timer visits every active group. An
//! IO's submission and completion do work proportional to its group's
//! depth at most: hweights are cached per group and recomputed only when
//! the weight generation changed (`current_hweight`), the cost charged to
//! an IO in flight travels with it in [`Io::cost_vtime`] (the kernel's
//! `bio->bi_iocost_cost`, read back at completion: no lookup), and the
//! next wait-queue timer is the top of an indexed heap
//! (`timerq`: O(1) to read, O(log groups) to arm, re-arm or cancel),
//! so `next_deadline` is O(1). The fields the issue path touches sit in
//! the first three cache lines of a group's state. Measured in
//! `docs/BENCHMARKS.md` ("iocost controller cost per IO").

pub mod donation;
pub mod group;
pub mod issue;
pub mod knob;
mod lifecycle;
pub mod model;
pub mod period;
mod timerq;
pub mod trace;
pub mod variant;
pub mod vtime;
pub mod weights;

use crate::cgroup::{CgroupTree, GroupId};
use crate::controller::{Clock, Controller, Verdict};
use crate::io::{DevId, Io};
use crate::time::Instant;
use group::CostGroup;
pub use group::CostStats;
pub use knob::{KnobError, ModelWrite, QosWrite, WeightWrite};
pub use model::{AutopClass, Params};
use period::LatCounters;
use std::collections::{BTreeMap, VecDeque};
use timerq::TimerQueue;
pub use trace::{GroupTrace, PeriodTrace, RunState};
pub use variant::Variant;
/// Vtime per µs at 100% vrate: the unit of the base vrate (137438 = 100%).
pub use vtime::VTIME_PER_USEC;
use vtime::{Margins, VTime, WEIGHT_ONE};

/// Configuration of one iocost instance (one device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCostConfig {
    /// Timer ticks per second: the period timer is a jiffies timer.
    pub hz: u64,
    /// Where in its jiffy the run starts (ns): the period timer fires on
    /// jiffy boundaries at `k · tick − tick_phase_ns` of run time.
    pub tick_phase_ns: u64,
    /// Rotational device → the HDD parameter class.
    pub rotational: bool,
    /// `blk_queue_depth()`: the device queue depth if known, else
    /// `nr_requests`. 1 → the SSD_QD1 class.
    pub queue_depth: u32,
    /// The iocost generation to model (what a period without completions
    /// does to `busy_level`).
    pub variant: Variant,
    /// How late the host runs the period timer's function past the tick
    /// the timer wheel runs it on ([`crate::time::lateness`]); `None`: at
    /// the tick.
    pub timer_late: Option<crate::time::TimerLateness>,
}

impl Default for IoCostConfig {
    fn default() -> Self {
        IoCostConfig {
            hz: 1000,
            tick_phase_ns: 0,
            rotational: false,
            queue_depth: 64,
            variant: Variant::default(),
            timer_late: None,
        }
    }
}

/// A knob write scheduled for a later time ([`IoCost::schedule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconfig {
    /// An `io.cost.qos` write (`ioc_qos_write`).
    Qos(QosWrite),
    /// An `io.cost.model` write (`ioc_cost_model_write`).
    Model(ModelWrite),
    /// An `io.weight` write to a group (`ioc_weight_write`).
    Weight(GroupId, WeightWrite),
}

/// blk-iocost for one device.
pub struct IoCost {
    cfg: IoCostConfig,
    paths: Vec<String>,
    groups: Vec<CostGroup>,
    enabled: bool,
    params: Params,
    /// `None` only before the first refresh (`AUTOP_INVALID`).
    autop_idx: Option<AutopClass>,
    user_qos: bool,
    user_model: bool,
    period_us: u64,
    timer_slack_ns: u64,
    margins: Margins,
    vrate_min: u64,
    vrate_max: u64,
    /// IOC_RUNNING (true) or IOC_IDLE.
    running: bool,
    vtime_rate: u64,
    vtime_base_rate: u64,
    vtime_err: i64,
    period_at_us: u64,
    period_at_vtime: VTime,
    cur_period: u64,
    busy_level: i32,
    weights_updated: bool,
    hweight_gen: u32,
    dfgv_period_at_us: u64,
    dfgv_period_rem_us: u64,
    dfgv_usage_us_sum: u64,
    autop_too_fast_at_ns: Option<u64>,
    autop_too_slow_at_ns: Option<u64>,
    /// Active groups, most recently activated first (kernel list order).
    active_list: VecDeque<usize>,
    /// Armed period timer: when its function runs (ns): the start of the
    /// jiffy the timer wheel runs it on, plus the host's lateness.
    period_timer_ns: Option<u64>,
    /// The stream of the period timer's lateness draws
    /// ([`IoCostConfig::timer_late`]).
    timer_late_state: u64,
    /// The last period timer's run was a tick or more late (the next
    /// draw is from the lateness after a late run).
    timer_ran_late: bool,
    /// The groups' armed wait-queue timers, earliest first.
    waitq_timers: TimerQueue,
    lat: LatCounters,
    /// Each group's life: online, removed and draining, or freed.
    life: Vec<lifecycle::Life>,
    /// Woken waiters not yet handed out by `on_timer`.
    out: Vec<Io>,
    waiting: usize,
    /// The latest time the controller was called at.
    clock: Clock,
    /// The first protocol breach seen (time backwards, unknown group).
    fault: crate::controller::Fault,
    scheduled: BTreeMap<(Instant, u64), Reconfig>,
    sched_seq: u64,
    rejected: Vec<(Instant, KnobError)>,
    trace: Vec<PeriodTrace>,
    /// Groups activated and gone idle since the last drain, while tracing.
    iocg_events: Vec<trace::IocgEvent>,
    /// `iocost_inuse_*` tracepoints recorded since the last drain.
    inuse_events: Vec<trace::InuseEvent>,
    /// `iocost_iocg_forgive_debt` tracepoints recorded since the last drain.
    forgive_events: Vec<trace::ForgiveEvent>,
    trace_dropped: u64,
    /// Record [`PeriodTrace`]s (default on; [`Controller::set_trace`]).
    trace_on: bool,
    /// `blkcg_debug_stats`: io.stat also shows cost.wait/indebt/indelay.
    debug_stats: bool,
}

impl IoCost {
    /// A disabled controller for the groups of `tree` (the state after the
    /// first `io.cost.qos`/`io.cost.model` write created it:
    /// `blk_iocost_init` + `ioc_pd_init` for every group at time 0).
    pub fn new(cfg: IoCostConfig, tree: &CgroupTree) -> Self {
        let mut c = IoCost {
            cfg,
            paths: tree.ids().map(|g| tree.path(g).to_string()).collect(),
            groups: Vec::with_capacity(tree.len()),
            enabled: false,
            params: Params::from_autop(AutopClass::SsdDfl),
            autop_idx: None,
            user_qos: false,
            user_model: false,
            period_us: 0,
            timer_slack_ns: 0,
            margins: Margins::default(),
            vrate_min: 0,
            vrate_max: 0,
            running: false,
            vtime_rate: VTIME_PER_USEC,
            vtime_base_rate: VTIME_PER_USEC,
            vtime_err: 0,
            period_at_us: 0,
            period_at_vtime: VTime(0),
            cur_period: 0,
            busy_level: 0,
            weights_updated: false,
            hweight_gen: 0,
            dfgv_period_at_us: 0,
            dfgv_period_rem_us: 0,
            dfgv_usage_us_sum: 0,
            autop_too_fast_at_ns: None,
            autop_too_slow_at_ns: None,
            active_list: VecDeque::new(),
            period_timer_ns: None,
            timer_late_state: cfg.timer_late.map_or(0, |l| l.stream()),
            timer_ran_late: false,
            waitq_timers: TimerQueue::new(tree.len()),
            lat: LatCounters::default(),
            life: vec![lifecycle::Life::Online; tree.len()],
            out: Vec::new(),
            waiting: 0,
            clock: Clock::default(),
            fault: Default::default(),
            scheduled: BTreeMap::new(),
            sched_seq: 0,
            rejected: Vec::new(),
            trace: Vec::new(),
            iocg_events: Vec::new(),
            inuse_events: Vec::new(),
            forgive_events: Vec::new(),
            trace_dropped: 0,
            trace_on: true,
            debug_stats: false,
        };
        c.refresh_params(true, 0);
        let now = c.snapshot(0);
        for g in tree.ids() {
            let mut anc: Vec<usize> = tree.ancestors_inclusive(g).map(|x| x.idx()).collect();
            anc.reverse();
            let level = anc.len() - 1;
            c.groups
                .push(CostGroup::new(level, anc, now.vnow, c.cur_period));
            c.weight_updated(g.idx(), &now);
        }
        c
    }

    /// Set the base vrate (vtime per µs; [`VTIME_PER_USEC`] = 100%),
    /// clamped to the kernel's absolute range 1%..10000%: the state a
    /// device's iocost is in when a run starts. Linux starts at 100% when
    /// iocost is set up on a device and then keeps the adapted vrate across
    /// idle periods and `io.cost.*` writes (only a change of autop class
    /// resets it), so on a system with history a run starts wherever the
    /// previous one left vrate. Not a kernel knob: the simulator's way to
    /// state that history.
    pub fn set_vrate(&mut self, vrate: u64) {
        let v = vrate.clamp(
            vtime::vrate_bound(vtime::VRATE_MIN_PPM),
            vtime::vrate_bound(vtime::VRATE_MAX_PPM),
        );
        self.vtime_base_rate = v;
        self.vtime_rate = v;
        self.vtime_err = 0;
        self.margins = Margins::new(self.period_us, v);
    }

    /// The configuration this controller was built with.
    pub fn config(&self) -> &IoCostConfig {
        &self.cfg
    }

    /// Time never runs backwards for the controller: a call that goes
    /// back is a protocol fault (recorded; the clock holds: [`Clock`]).
    #[inline]
    fn clock(&mut self, at: Instant) -> u64 {
        self.clock.see(at, &mut self.fault).0
    }

    fn tick_ns(&self) -> u64 {
        (1_000_000_000 / self.cfg.hz.max(1)).max(1)
    }

    /// Apply an `io.cost.qos` write now (`ioc_qos_write`): `-EINVAL` if the
    /// resulting min exceeds max (nothing changes then).
    pub fn apply_qos(&mut self, w: &QosWrite) -> Result<(), KnobError> {
        let mut qos = self.params.qos;
        for (q, p) in qos.iter_mut().zip(w.params.iter()) {
            if let Some(v) = p {
                *q = *v;
            }
        }
        if qos[model::QOS_MIN] > qos[model::QOS_MAX] {
            let p = |ppm: u32| format!("{}.{:02}", ppm / 10_000, ppm % 10_000 / 100);
            return Err(KnobError::Invalid {
                file: "io.cost.qos",
                token: format!(
                    "min={} max={}",
                    p(qos[model::QOS_MIN]),
                    p(qos[model::QOS_MAX])
                ),
                why: "min must not exceed max",
            });
        }
        self.enabled = w.enable.unwrap_or(self.enabled);
        let user = w.user.unwrap_or(self.user_qos);
        if user {
            self.params.qos = qos;
        }
        self.user_qos = user;
        self.refresh_params(true, self.clock.last().0);
        Ok(())
    }

    /// Apply an `io.cost.model` write now (`ioc_cost_model_write`).
    pub fn apply_model(&mut self, w: &ModelWrite) {
        let mut u = self.params.i_lcoefs;
        for (c, p) in u.iter_mut().zip(w.coefs.iter()) {
            if let Some(v) = p {
                *c = *v;
            }
        }
        let user = w.user.unwrap_or(self.user_model);
        if user {
            self.params.i_lcoefs = u;
        }
        self.user_model = user;
        self.refresh_params(true, self.clock.last().0);
    }

    /// Apply an `io.weight` write to `group` now (`ioc_weight_write`). The
    /// device of a `MAJ:MIN` write is the caller's to check. The root has
    /// no `io.weight`; weights outside 1..10000 are `-EINVAL`.
    pub fn set_weight(&mut self, group: GroupId, w: WeightWrite) -> Result<(), KnobError> {
        let g = group.idx();
        let bad = |token: String, why| KnobError::Invalid {
            file: "io.weight",
            token,
            why,
        };
        if g >= self.groups.len() || self.groups[g].level == 0 {
            return Err(bad(
                group.to_string(),
                "io.weight exists only in non-root cgroups",
            ));
        }
        let check = |v: u32| {
            if (knob::WEIGHT_MIN..=knob::WEIGHT_MAX).contains(&v) {
                Ok(v * WEIGHT_ONE)
            } else {
                Err(bad(v.to_string(), "weight out of range: use 1..10000"))
            }
        };
        match w {
            WeightWrite::Default(v) => self.groups[g].dfl_weight = check(v)?,
            WeightWrite::Device(_, v) => self.groups[g].cfg_weight = check(v)?,
            WeightWrite::DeviceDefault(_) => self.groups[g].cfg_weight = 0,
        }
        let now = self.snapshot(self.clock.last().0);
        self.weight_updated(g, &now);
        Ok(())
    }

    /// Apply knob write `r` now, at `at` (`ioc_weight_write`,
    /// `ioc_qos_write`, `ioc_cost_model_write` on a running system); a
    /// refused write changes nothing.
    pub fn write_at(&mut self, at: Instant, r: Reconfig) -> Result<(), KnobError> {
        self.clock(at);
        match r {
            Reconfig::Qos(q) => self.apply_qos(&q),
            Reconfig::Model(m) => {
                self.apply_model(&m);
                Ok(())
            }
            Reconfig::Weight(g, w) => self.set_weight(g, w),
        }
    }

    /// Apply a knob write at `at` (runs from `on_timer`; a refused write is
    /// kept for [`IoCost::take_rejected`], as a failed `echo` would be).
    pub fn schedule(&mut self, at: Instant, r: Reconfig) {
        self.sched_seq += 1;
        self.scheduled.insert((at, self.sched_seq), r);
    }

    /// Writes refused when their scheduled time came.
    pub fn take_rejected(&mut self, out: &mut Vec<(Instant, KnobError)>) {
        out.append(&mut self.rejected);
    }

    fn apply(&mut self, at: Instant, r: Reconfig) {
        let res = match r {
            Reconfig::Qos(w) => self.apply_qos(&w),
            Reconfig::Model(w) => {
                self.apply_model(&w);
                Ok(())
            }
            Reconfig::Weight(g, w) => self.set_weight(g, w),
        };
        if let Err(e) = res {
            self.rejected.push((at, e));
        }
    }

    /// The device queue depth changed (`ioc_rqos_queue_depth_changed`).
    pub fn set_queue_depth(&mut self, depth: u32) {
        self.cfg.queue_depth = depth;
        self.refresh_params(false, self.clock.last().0);
    }

    /// Move the per-period traces recorded so far into `out`.
    pub fn take_trace(&mut self, out: &mut Vec<PeriodTrace>) {
        out.append(&mut self.trace);
    }

    /// Traces not recorded because [`trace::TRACE_CAPACITY`] was reached.
    pub fn trace_dropped(&self) -> u64 {
        self.trace_dropped
    }

    /// The iocost keys of `group`'s `io.stat` line as the kernel prints
    /// them by default (see [`IoCost::iostat_suffix_with`]).
    pub fn iostat_suffix(&self, group: GroupId) -> String {
        self.iostat_suffix_with(group, false)
    }

    /// … with `blkcg_debug_stats` (adds `cost.wait`, `cost.indebt`, `cost.indelay`).
    pub fn iostat_suffix_debug(&self, group: GroupId) -> String {
        self.iostat_suffix_with(group, true)
    }

    /// The `blk_cgroup` module's `blkcg_debug_stats` parameter: the
    /// controller's `io.stat` keys include the debug ones.
    pub fn set_debug_stats(&mut self, on: bool) {
        self.debug_stats = on;
    }

    /// `group`'s counters as `io.stat` shows them (flushed each period).
    pub fn stats(&self, group: GroupId) -> CostStats {
        self.groups
            .get(group.idx())
            .map(|g| g.last_stat)
            .unwrap_or_default()
    }

    /// The `io.cost.qos` line for this device.
    pub fn qos_line(&self, dev: DevId) -> String {
        knob::format_qos(dev, self.enabled, self.user_qos, &self.params.qos)
    }

    /// The `io.cost.model` line for this device.
    pub fn model_line(&self, dev: DevId) -> String {
        knob::format_model(dev, self.user_model, &self.params.i_lcoefs)
    }

    /// `group`'s `io.weight` file (this device only).
    pub fn weight_lines(&self, group: GroupId, dev: DevId) -> String {
        let Some(g) = self.groups.get(group.idx()) else {
            return String::new();
        };
        let mut over = Vec::new();
        if g.cfg_weight != 0 {
            over.push((dev, g.cfg_weight / WEIGHT_ONE));
        }
        knob::format_io_weight(g.dfl_weight / WEIGHT_ONE, &over)
    }

    /// iocost is enabled on the device (`ioc->enabled`, `io.cost.qos enable=1`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    /// Base vrate in vtime per µs (137,438 = 100%).
    pub fn vrate(&self) -> u64 {
        self.vtime_base_rate
    }
    /// `ioc->busy_level`: positive while the device is saturated (vrate goes
    /// down), negative while groups are short of vtime with spare capacity
    /// (vrate goes up); bounded by ±[`vtime::BUSY_LEVEL_MAX`].
    pub fn busy_level(&self) -> i32 {
        self.busy_level
    }
    /// `ioc->period_us`: the period timer's interval, µs (from the QoS
    /// latency targets, 1 ms ..= 1 s).
    pub fn period_us(&self) -> u64 {
        self.period_us
    }
    /// The automatic parameter class in effect (`ioc->autop_idx`); SSD_DFL
    /// before the first parameter refresh.
    pub fn autop_class(&self) -> AutopClass {
        self.autop_idx.unwrap_or(AutopClass::SsdDfl)
    }
    /// The device parameters in effect (`ioc->params`): QoS and cost
    /// coefficients, from autop or user writes.
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// `ioc->margins`: the budget margins in vtime for the current period
    /// and base vrate.
    pub fn margins(&self) -> Margins {
        self.margins
    }
    /// `(hweight_active, hweight_inuse)` of `group` from the current weights.
    pub fn hweights(&self, group: GroupId) -> (u32, u32) {
        if group.idx() >= self.groups.len() {
            return (0, 0);
        }
        self.compute_hweight(group.idx())
    }
    /// Is `group` on the active list (`!list_empty(&iocg->active_list)`)?
    /// `false` for a group not in the tree.
    pub fn is_active(&self, group: GroupId) -> bool {
        self.groups
            .get(group.idx())
            .is_some_and(|g| g.on_active_list)
    }
    /// `group`'s vtime (0 for a group not in the tree).
    pub fn vtime(&self, group: GroupId) -> VTime {
        self.groups.get(group.idx()).map_or(VTime(0), |g| g.vtime)
    }
    /// `group`'s `done_vtime` (`iocg->done_vtime`): vtime of its completed
    /// IO; `vtime − done_vtime` is its cost in flight. 0 for a group not in
    /// the tree.
    pub fn done_vtime(&self, group: GroupId) -> VTime {
        self.groups
            .get(group.idx())
            .map_or(VTime(0), |g| g.done_vtime)
    }
    /// Debt of `group` in absolute vtime.
    pub fn debt(&self, group: GroupId) -> u64 {
        self.groups.get(group.idx()).map_or(0, |g| g.abs_vdebt)
    }
    /// The issuer delay in effect for `group` (µs), if any.
    pub fn delay_us(&self, group: GroupId) -> Option<u64> {
        let g = self.groups.get(group.idx())?;
        g.use_delay.then_some(g.delay_nsec / 1_000)
    }
    /// The device vtime at `at` (no later than the controller's clock).
    pub fn vnow(&self, at: Instant) -> VTime {
        self.snapshot(at.0.max(self.clock.last().0)).vnow
    }

    /// Run everything due at `ns`: knob writes, the period timer, wait-queue timers.
    fn run_timers(&mut self, ns: u64) {
        while let Some((&(at, seq), _)) = self.scheduled.first_key_value() {
            if at.0 > ns {
                break;
            }
            if let Some(r) = self.scheduled.remove(&(at, seq)) {
                self.apply(at, r);
            }
        }
        // every timer re-arms strictly later than `ns`, so each fires at
        // most once per call
        for _ in 0..self.groups.len() + 2 {
            if self.period_timer_ns.is_some_and(|t| t <= ns) {
                self.period_timer_fired(ns);
                continue;
            }
            let due = self.waitq_timers.first().filter(|&(t, _)| t <= ns);
            match due {
                Some((_, g)) => self.waitq_timer_fired(g, ns),
                None => break,
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        let mut d = self.period_timer_ns;
        let mut take = |t: u64| d = Some(d.map_or(t, |x| x.min(t)));
        if !self.out.is_empty() {
            take(self.clock.last().0);
        }
        if let Some((t, _)) = self.waitq_timers.first() {
            take(t);
        }
        if let Some((&(at, _), _)) = self.scheduled.first_key_value() {
            take(at.0);
        }
        d.map(Instant)
    }

    /// Check the invariants of section 4; the first violation, described.
    pub fn invariants(&self) -> Result<(), String> {
        let (act, inu) = self.children_sums();
        let listed = self.active_list_counts();
        let mut waiters = 0;
        for (g, grp) in self.groups.iter().enumerate() {
            let p = &self.paths[g];
            if grp.child_active_sum != act[g] || grp.child_inuse_sum != inu[g] {
                return Err(format!(
                    "1: {p}: child sums {}/{} vs children {}/{}",
                    grp.child_active_sum, grp.child_inuse_sum, act[g], inu[g]
                ));
            }
            self.check_activity(g, listed[g])?;
            self.check_waiters_debt_inflight(g)?;
            waiters += grp.waitq.len();
        }
        self.check_wait_count_and_timers(waiters)?;
        self.check_cached_hweights()
    }

    /// Invariant 1's reference: per node, the sums of its children's
    /// `active` and `inuse`.
    fn children_sums(&self) -> (Vec<u64>, Vec<u64>) {
        let n = self.groups.len();
        let (mut act, mut inu) = (vec![0u64; n], vec![0u64; n]);
        for grp in &self.groups {
            if let Some(p) = grp.parent() {
                act[p] += grp.active as u64;
                inu[p] += grp.inuse as u64;
            }
        }
        (act, inu)
    }

    /// Invariant 2's reference: how many times each group is on the
    /// active list.
    fn active_list_counts(&self) -> Vec<usize> {
        let mut listed = vec![0usize; self.groups.len()];
        for &g in &self.active_list {
            if let Some(x) = listed.get_mut(g) {
                *x += 1;
            }
        }
        listed
    }

    /// Invariants 2 and 3 for group `g`, listed `listed` times: an active
    /// group is a leaf of the active tree with sane weights, an inner node
    /// has the inuse its children give, an idle one has none.
    fn check_activity(&self, g: usize, listed: usize) -> Result<(), String> {
        let (grp, p) = (&self.groups[g], &self.paths[g]);
        if listed != usize::from(grp.on_active_list) || (grp.on_active_list && grp.level == 0) {
            return Err(format!(
                "2: {p}: listed {listed} times, flag {}",
                grp.on_active_list
            ));
        }
        if grp.on_active_list {
            let anc_active = grp
                .ancestors
                .get(1..grp.level)
                .unwrap_or(&[])
                .iter()
                .any(|&a| self.groups[a].on_active_list);
            if anc_active || grp.child_active_sum != 0 {
                return Err(format!(
                    "2: {p}: active group is not a leaf of the active tree"
                ));
            }
            if grp.active != grp.weight || grp.inuse < 1 || grp.inuse > grp.active {
                return Err(format!(
                    "2: {p}: weight {} active {} inuse {}",
                    grp.weight, grp.active, grp.inuse
                ));
            }
        } else if grp.level > 0 && grp.child_active_sum != 0 {
            let want = weights::ceil_div(
                (grp.weight as u64).wrapping_mul(grp.child_inuse_sum),
                grp.child_active_sum,
            );
            if grp.active != grp.weight || grp.inuse as u64 != want {
                return Err(format!(
                    "3: {p}: inner active {} inuse {} want {}/{want}",
                    grp.active, grp.inuse, grp.weight
                ));
            }
        } else if grp.active != 0 || grp.inuse != 0 {
            return Err(format!(
                "3: {p}: idle but active {} inuse {}",
                grp.active, grp.inuse
            ));
        }
        Ok(())
    }

    /// Invariants 4 and 5 for group `g`: waiters, debt and delay only when
    /// active, a debtor at inuse 1, a wake-up timer for waiters, and
    /// `vtime − done_vtime` equal to the cost in flight.
    fn check_waiters_debt_inflight(&self, g: usize) -> Result<(), String> {
        let (grp, p) = (&self.groups[g], &self.paths[g]);
        let has_state = !grp.waitq.is_empty() || grp.abs_vdebt != 0 || grp.delay_us != 0;
        if has_state && !grp.on_active_list {
            return Err(format!("4: {p}: waiters/debt/delay on an inactive group"));
        }
        if grp.abs_vdebt != 0 && grp.inuse != 1 {
            return Err(format!("4: {p}: debtor with inuse {}", grp.inuse));
        }
        if !grp.waitq.is_empty() && self.waitq_timers.get(g).is_none() {
            return Err(format!("4: {p}: waiters without a wake-up timer"));
        }
        if grp.vtime.since(grp.done_vtime) as u64 != grp.inflight_cost {
            return Err(format!(
                "5: {p}: vtime − done_vtime = {} but in flight {}",
                grp.vtime.since(grp.done_vtime),
                grp.inflight_cost,
            ));
        }
        Ok(())
    }

    /// Invariants 7 and 6: the wait-queue timer heap, the waiter count
    /// (`waiters` counted in the queues) and the period timer.
    fn check_wait_count_and_timers(&self, waiters: usize) -> Result<(), String> {
        if let Err(e) = self.waitq_timers.check() {
            return Err(format!("7: wait-queue timers: {e}"));
        }
        if waiters != self.waiting {
            return Err(format!("6: {waiters} queued but count {}", self.waiting));
        }
        let timer_armed = self.running && self.period_timer_ns.is_some();
        if !self.active_list.is_empty() && !timer_armed {
            return Err("6: active groups but the period timer is not running".into());
        }
        Ok(())
    }

    /// Invariant 8: the active groups' current-generation cached hweights
    /// are those a walk of the tree gives.
    fn check_cached_hweights(&self) -> Result<(), String> {
        for &g in &self.active_list {
            let grp = &self.groups[g];
            let cached = (grp.hweight_active, grp.hweight_inuse);
            if grp.hweight_gen == self.hweight_gen && cached != self.compute_hweight(g) {
                return Err(format!(
                    "8: {}: cached hweights {cached:?} but the tree gives {:?}",
                    self.paths[g],
                    self.compute_hweight(g)
                ));
            }
        }
        Ok(())
    }
}

impl Controller for IoCost {
    fn name(&self) -> &'static str {
        "iocost"
    }
    fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict {
        let ns = self.clock(now);
        self.throttle(io, ns)
    }
    fn on_timer(&mut self, now: Instant, released: &mut Vec<Io>) {
        let ns = self.clock(now);
        self.run_timers(ns);
        released.append(&mut self.out);
    }
    fn on_complete(&mut self, io: &Io, alloc_at: Instant, started_at: Instant, now: Instant) {
        let ns = self.clock(now);
        self.complete(io, alloc_at.0, started_at.0, ns);
    }
    fn on_merge(&mut self, bio: &Io, rq: &mut Io, now: Instant) -> Option<crate::time::Duration> {
        if self.merge(bio, rq, now) {
            self.issuer_delay(bio.group)
        } else {
            None
        }
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.deadline()
    }
    fn hold_blocks_submitter(&self) -> bool {
        true
    }
    fn on_group_added(&mut self, g: GroupId, parent: GroupId, path: &str, now: Instant) {
        self.add_group(g, parent, path, now);
    }
    fn on_group_removed(&mut self, g: GroupId, now: Instant) {
        self.remove_group(g, now);
    }
    fn blocked_submitters(&self, g: GroupId) -> u32 {
        self.waiters_of(g)
    }
    fn check(&self) -> Result<(), crate::controller::Violation> {
        self.invariants()
            .map_err(|what| crate::controller::Violation {
                controller: "iocost",
                what,
            })?;
        self.fault.check("iocost")
    }
    fn held(&self) -> usize {
        self.waiting + self.out.len()
    }
    fn iostat_keys(&self, group: GroupId, out: &mut Vec<crate::controller::IostatKey>) {
        self.iostat_keys_with(group, self.debug_stats, out);
    }
    fn live(&self, _now: Instant, into: &mut crate::controller::LiveState) {
        self.live_state(into);
    }
    fn set_trace(&mut self, on: bool) {
        self.trace_on = on;
    }
    fn trace_dropped(&self) -> u64 {
        IoCost::trace_dropped(self)
    }

    fn drain_trace(&mut self, out: &mut Vec<Box<dyn crate::controller::TraceRecord>>) {
        out.extend(
            self.trace
                .drain(..)
                .map(|t| Box::new(t) as Box<dyn crate::controller::TraceRecord>),
        );
        out.extend(
            self.iocg_events
                .drain(..)
                .map(|t| Box::new(t) as Box<dyn crate::controller::TraceRecord>),
        );
        out.extend(
            self.inuse_events
                .drain(..)
                .map(|t| Box::new(t) as Box<dyn crate::controller::TraceRecord>),
        );
        out.extend(
            self.forgive_events
                .drain(..)
                .map(|t| Box::new(t) as Box<dyn crate::controller::TraceRecord>),
        );
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_knob;
#[cfg(test)]
mod tests_sim;
