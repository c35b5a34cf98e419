//! blk-wbt: writeback throttling (linux block/blk-wbt.c), an rq-qos
//! policy that keeps buffered writeback from filling the device queue.
//!
//! # Design
//!
//! 1. **What it throttles** (`wbt_should_throttle`, `bio_to_wbt_flags`):
//!    writes that are not O_DIRECT (the kernel's `REQ_SYNC | REQ_IDLE`;
//!    here a write with [`IoFlags::SYNC`] and without
//!    [`IoFlags::WRITEBACK`]), discards (their own queue) and flushes
//!    (`REQ_OP_WRITE | REQ_PREFLUSH`). Reads pass and are only watched.
//!    Zone resets and passthrough requests are not seen.
//! 2. **How deep** (`get_limit`): a tracked request takes a slot below a
//!    limit before it may allocate a request. The limit is `max_depth`
//!    while a task slept in `balance_dirty_pages` within the last second
//!    (`wb_recent_wait`: since 6.8 any task on the device,
//!    `bdi->last_bdp_sleep`; before, only a root-cgroup writer, the root
//!    wb's `dirty_sleep`: [`RecentWait`]), `wb_background` for background
//!    and periodic writeback ([`IoFlags::BACKGROUND`]) or within 100 ms of
//!    a read's issue or completion (`close_io`), `wb_normal` otherwise.
//!    The depths come from the scale step ([`depth`]): at step 0,
//!    `max_depth` 16, normal 8, background 4 (for a queue of 64).
//! 3. **Who waits, in what order** (`rq_qos_wait`): a request that finds
//!    no slot, or finds others already waiting, sleeps in the submitting
//!    task (the flusher: [`Controller::hold_blocks_submitter`]) in FIFO
//!    order. A completion frees a slot (`wbt_rqw_done`); when the
//!    in-flight count is below the wake limit (`wb_normal`; 0 with a
//!    volatile write cache unless a task recently waited; `wb_background`
//!    for discards) and has fallen by half of `wb_background` (or to 0),
//!    the waiters are woken in order, each taking a slot, until one finds
//!    none (`rq_qos_wake_function`).
//! 4. **The window** (`wb_timer_fn`, a `blk_stat` callback): a jiffies
//!    timer of 100 ms (`RWB_WINDOW_NSEC`; shorter at positive steps),
//!    armed when a tracked request passes and re-armed while requests are
//!    in flight or the step is not 0, run a tick after its expiry
//!    ([`crate::time::timer_wheel_expiry`]). Over the window it counts
//!    completions' device latencies (issue to completion) per direction.
//!    A read whose minimum latency is over the target (`wbt_lat_usec`,
//!    default 2 ms, 75 ms on rotational devices), or a read issued longer
//!    ago than the window (or than the target, with no read completed),
//!    scales down (a hard throttle: to step 0 first); a window with reads
//!    and at least 3 writes under the target scales up; writes alone
//!    (or in flight, or a recent dirty sleep) scale up, to at most 3/4 of
//!    the queue; five windows with nothing at all walk the step back to 0.
//! 5. **Off**: `wbt_lat_usec = 0`, and whenever iocost is enabled on the
//!    device (`ioc_qos_write` → `wbt_disable_default`): the stack builds
//!    no wbt stage then.
//!
//! Ignores: `REQ_HIPRIO` (swap), kswapd's queue, the `enable_state`
//! transitions of a running queue, `wbt_lat_usec` written during a run.

pub mod depth;
#[cfg(test)]
mod tests;
pub mod trace;

use crate::controller::{Clock, Controller, Fault, TraceRecord, Verdict, Violation};
use crate::io::{Io, IoFlags, IoId, IoOp};
use crate::time::{timer_wheel_expiry, Instant, Jiffies};
use depth::{wb_limits, RqDepth};
use std::collections::VecDeque;
pub use trace::WbtEvent;

/// `RWB_WINDOW_NSEC`: the monitoring window.
pub const WINDOW_NS: u64 = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`: writes a window needs beside a read to judge.
pub const MIN_WRITE_SAMPLES: u64 = 3;
/// `RWB_UNKNOWN_BUMP`: empty windows before the step walks back to 0.
pub const UNKNOWN_BUMP: u32 = 5;

/// `wbt_default_latency_nsec`: the latency target unless
/// `queue/wbt_lat_usec` was written.
pub const fn default_min_lat_ns(rotational: bool) -> u64 {
    if rotational {
        75_000_000
    } else {
        2_000_000
    }
}

/// Which dirty-throttle sleeps make wbt let writeback go deeper
/// (`wb_recent_wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecentWait {
    /// Before 6.8: the root wb's `dirty_sleep`, set only by tasks of the
    /// root cgroup.
    RootWb,
    /// 6.8 and later (commit "blk-wbt: Fix detection of dirty-throttled
    /// tasks"): `bdi->last_bdp_sleep`, set by any task.
    AnyTask,
}

/// blk-wbt's settings for one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WbtConfig {
    /// `queue/wbt_lat_usec` in ns (`min_lat_nsec`); 0 turns wbt off.
    pub min_lat_ns: u64,
    /// The queue's request slots (`blk_queue_depth`: `nr_requests`).
    pub queue_depth: u32,
    /// The device has a volatile write cache (`blk_queue_write_cache`).
    pub write_cache: bool,
    /// Which dirty sleeps count as recent waits.
    pub recent_wait: RecentWait,
    /// `CONFIG_HZ`: the window timer and the 100 ms / 1 s tests are in
    /// jiffies.
    pub hz: u64,
    /// Where in its jiffy the run starts (ns, below one jiffy).
    pub tick_phase_ns: u64,
}

/// The two wait queues (`rwb->rq_wait[]`; kswapd's is not modelled).
const RWQ_BG: usize = 0;
const RWQ_DISCARD: usize = 1;

/// `struct rq_wait`: slots taken and tasks waiting for one, in order.
#[derive(Clone, Debug, Default)]
struct RqWait {
    inflight: u32,
    waiters: VecDeque<Io>,
}

/// A window's completions of one direction (`struct blk_rq_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stat {
    nr_samples: u64,
    min_ns: u64,
}

impl Stat {
    fn add(&mut self, lat_ns: u64) {
        self.min_ns = if self.nr_samples == 0 {
            lat_ns
        } else {
            self.min_ns.min(lat_ns)
        };
        self.nr_samples += 1;
    }
}

/// `wb_timer_fn`'s verdict on a window (`LAT_OK` ... `LAT_UNKNOWN_WRITES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok = 0,
    Exceeded = 1,
    Unknown = 2,
    UnknownWrites = 3,
}

/// blk-wbt on one device.
#[derive(Debug)]
pub struct Wbt {
    cfg: WbtConfig,
    clock: Clock,
    fault: Fault,
    depth: RqDepth,
    wb_normal: u32,
    wb_background: u32,
    unknown_cnt: u32,
    rqw: [RqWait; 2],
    /// Woken waiters, handed back by the next `on_timer`.
    woken: Vec<Io>,
    /// The oldest read in flight that no window has seen complete
    /// (`sync_cookie`, `sync_issue`).
    sync_issue: Option<(IoId, Instant)>,
    /// Last read submitted / completed (`last_issue`, `last_comp`).
    last_issue: Option<Instant>,
    last_comp: Option<Instant>,
    /// The last dirty-throttle sleep that counts ([`RecentWait`]).
    dirty_sleep: Option<Instant>,
    /// `cur_win_nsec`.
    cur_win_ns: u64,
    /// The window timer, when armed (`blk_stat_is_active`), and the
    /// window's read and write completions.
    window_ends: Option<Instant>,
    stat: [Stat; 2],
    trace_on: bool,
    trace: Vec<WbtEvent>,
    trace_dropped: u64,
}

impl Wbt {
    /// `wbt_init`: step 0, no window running.
    pub fn new(cfg: WbtConfig) -> Self {
        assert!(cfg.hz > 0, "wbt: CONFIG_HZ of 0");
        let depth = RqDepth::new(cfg.queue_depth);
        let (wb_normal, wb_background) = wb_limits(depth.max_depth, cfg.min_lat_ns != 0);
        Wbt {
            cfg,
            clock: Clock::default(),
            fault: Fault::default(),
            depth,
            wb_normal,
            wb_background,
            unknown_cnt: 0,
            rqw: Default::default(),
            woken: Vec::new(),
            sync_issue: None,
            last_issue: None,
            last_comp: None,
            dirty_sleep: None,
            cur_win_ns: WINDOW_NS,
            window_ends: None,
            stat: [Stat::default(); 2],
            trace_on: true,
            trace: Vec::new(),
            trace_dropped: 0,
        }
    }

    /// The current `(scale_step, max_depth, wb_normal, wb_background)`.
    pub fn limits(&self) -> (i32, u32, u32, u32) {
        (
            self.depth.scale_step,
            self.depth.max_depth,
            self.wb_normal,
            self.wb_background,
        )
    }

    /// Requests holding a slot (`wbt_inflight`).
    pub fn inflight(&self) -> u32 {
        self.rqw.iter().map(|q| q.inflight).sum()
    }

    fn enabled(&self) -> bool {
        self.cfg.min_lat_ns != 0
    }

    fn tick_ns(&self) -> u64 {
        (crate::time::NSEC_PER_SEC / self.cfg.hz).max(1)
    }

    fn jiffies(&self, t: Instant) -> Jiffies {
        Jiffies((t.as_ns() + self.cfg.tick_phase_ns % self.tick_ns()) / self.tick_ns())
    }

    /// `time_before(jiffies, at + n)` in jiffies.
    fn within_jiffies(&self, now: Instant, at: Option<Instant>, n: u64) -> bool {
        at.is_some_and(|t| self.jiffies(now) < self.jiffies(t) + n)
    }

    /// `wb_recent_wait`: a dirty-throttle sleep within the last second.
    fn recent_wait(&self, now: Instant) -> bool {
        self.within_jiffies(now, self.dirty_sleep, self.cfg.hz)
    }

    /// `close_io`: a read issued or completed within 100 ms.
    fn close_io(&self, now: Instant) -> bool {
        let n = self.cfg.hz / 10;
        self.within_jiffies(now, self.last_issue, n) || self.within_jiffies(now, self.last_comp, n)
    }

    /// `bio_to_wbt_flags`: the wait queue of a tracked IO.
    fn queue_of(io: &Io) -> Option<usize> {
        if io
            .flags
            .intersects(IoFlags::PASSTHROUGH.with(IoFlags::ZONE_RESET))
        {
            return None;
        }
        match io.op {
            IoOp::Read => None,
            IoOp::Discard => Some(RWQ_DISCARD),
            IoOp::Flush => Some(RWQ_BG),
            IoOp::Write => {
                let odirect =
                    io.flags.contains(IoFlags::SYNC) && !io.flags.contains(IoFlags::WRITEBACK);
                (!odirect).then_some(RWQ_BG)
            }
        }
    }

    /// `get_limit` (discards: `wb_background`).
    fn limit_for(&self, q: usize, io: &Io, now: Instant) -> u32 {
        if q == RWQ_DISCARD {
            self.wb_background
        } else if self.recent_wait(now) {
            self.depth.max_depth
        } else if io.flags.contains(IoFlags::BACKGROUND) || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// `rq_wait_inc_below`: take a slot of queue `q` for `io`.
    fn try_acquire(&mut self, q: usize, io: &Io, now: Instant) -> bool {
        let limit = self.limit_for(q, io, now);
        if self.rqw[q].inflight < limit {
            self.rqw[q].inflight += 1;
            true
        } else {
            false
        }
    }

    /// `rq_qos_wake_function` over the queue: waiters in order, each
    /// taking a slot, until one finds none.
    fn wake_all(&mut self, q: usize, now: Instant) {
        while let Some(io) = self.rqw[q].waiters.front().copied() {
            if !self.try_acquire(q, &io, now) {
                break;
            }
            self.rqw[q].waiters.pop_front();
            self.woken.push(io);
        }
    }

    /// `wbt_rqw_done`: a tracked request of queue `q` completed.
    fn rqw_done(&mut self, q: usize, now: Instant) {
        let Some(left) = self.rqw[q].inflight.checked_sub(1) else {
            self.fault
                .raise(|| "a tracked completion with no slot taken".into());
            return;
        };
        self.rqw[q].inflight = left;
        let limit = if q == RWQ_DISCARD {
            self.wb_background
        } else if self.cfg.write_cache && !self.recent_wait(now) {
            0
        } else {
            self.wb_normal
        };
        if left != 0 && left >= limit {
            return;
        }
        if !self.rqw[q].waiters.is_empty() {
            let diff = i64::from(limit) - i64::from(left);
            if left == 0 || diff >= i64::from(self.wb_background / 2) {
                self.wake_all(q, now);
            }
        }
    }

    /// `rwb_arm_timer`: a window starts now (`blk_stat_activate_nsecs`
    /// clears its statistics).
    fn arm_timer(&mut self, now: Instant) {
        self.cur_win_ns = if self.depth.scale_step > 0 {
            // a shorter window when throttled: win / sqrt(step + 1)
            let step = self.depth.scale_step as u64;
            (WINDOW_NS << 4) / crate::math::int_sqrt((step + 1) << 8).max(1)
        } else {
            WINDOW_NS
        };
        let tick = self.tick_ns();
        let j = self.jiffies(now);
        // nsecs_to_jiffies rounds down (at least one jiffy here)
        let expires = j + (self.cur_win_ns / tick).max(1);
        let runs = timer_wheel_expiry(expires, j);
        let phase = self.cfg.tick_phase_ns % tick;
        self.window_ends = Some(Instant((runs.0 * tick).saturating_sub(phase)).max(now));
        self.stat = [Stat::default(); 2];
    }

    fn record(&mut self, e: WbtEvent) {
        if !self.trace_on {
            return;
        }
        if self.trace.len() < trace::EVENTS_CAPACITY {
            self.trace.push(e);
        } else {
            self.trace_dropped += 1;
        }
    }

    fn trace_step(&mut self, now: Instant, msg: &'static str) {
        self.record(WbtEvent::Step {
            at: now,
            msg,
            step: self.depth.scale_step,
            window_us: self.cur_win_ns / 1000,
            background: self.wb_background,
            normal: self.wb_normal,
            max: self.depth.max_depth,
        });
    }

    /// `scale_up`: one step deeper; waiters may now fit.
    fn scale_up(&mut self, now: Instant) {
        if !self.depth.scale_up() {
            return;
        }
        (self.wb_normal, self.wb_background) = wb_limits(self.depth.max_depth, self.enabled());
        self.unknown_cnt = 0;
        self.wake_all(RWQ_BG, now);
        self.wake_all(RWQ_DISCARD, now);
        self.trace_step(now, "scale up");
    }

    /// `scale_down`: one step shallower.
    fn scale_down(&mut self, hard_throttle: bool, now: Instant) {
        if !self.depth.scale_down(hard_throttle) {
            return;
        }
        (self.wb_normal, self.wb_background) = wb_limits(self.depth.max_depth, self.enabled());
        self.unknown_cnt = 0;
        self.trace_step(now, "scale down");
    }

    /// `latency_exceeded`: the window's verdict.
    fn latency_exceeded(&mut self, now: Instant) -> Status {
        let sync_lat = self
            .sync_issue
            .map_or(0, |(_, t)| now.0.saturating_sub(t.0));
        let [read, write] = self.stat;
        if sync_lat > self.cur_win_ns || (sync_lat > self.cfg.min_lat_ns && read.nr_samples == 0) {
            self.record(WbtEvent::Lat {
                at: now,
                lat_us: sync_lat / 1000,
            });
            return Status::Exceeded;
        }
        // stat_sample_valid: a read and enough writes
        if read.nr_samples == 0 || write.nr_samples < MIN_WRITE_SAMPLES {
            if write.nr_samples > 0 || self.recent_wait(now) || self.inflight() > 0 {
                return Status::UnknownWrites;
            }
            return Status::Unknown;
        }
        if read.min_ns > self.cfg.min_lat_ns {
            self.record(WbtEvent::Lat {
                at: now,
                lat_us: read.min_ns / 1000,
            });
            return Status::Exceeded;
        }
        Status::Ok
    }

    /// `wb_timer_fn`: the window ended.
    fn window_end(&mut self, now: Instant) {
        self.window_ends = None;
        let status = self.latency_exceeded(now);
        let inflight = self.inflight();
        self.record(WbtEvent::Timer {
            at: now,
            status: status as u32,
            step: self.depth.scale_step,
            inflight,
        });
        match status {
            Status::Exceeded => self.scale_down(true, now),
            Status::Ok | Status::UnknownWrites => self.scale_up(now),
            Status::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= UNKNOWN_BUMP {
                    if self.depth.scale_step > 0 {
                        self.scale_up(now);
                    } else if self.depth.scale_step < 0 {
                        self.scale_down(false, now);
                    }
                }
            }
        }
        if self.depth.scale_step != 0 || inflight > 0 {
            self.arm_timer(now);
        }
    }

    /// A tracked IO took its slot: a window runs from here if none does
    /// (`wbt_wait` after `__wbt_wait`).
    fn passed(&mut self, now: Instant) {
        if self.window_ends.is_none() {
            self.arm_timer(now);
        }
    }
}

impl Controller for Wbt {
    fn name(&self) -> &'static str {
        "wbt"
    }

    /// `wbt_wait`: a read is timestamped and passes; a tracked IO takes a
    /// slot or waits behind the queue's waiters.
    fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict {
        let now = self.clock.see(now, &mut self.fault);
        if !self.enabled() {
            return Verdict::Dispatch;
        }
        let Some(q) = Self::queue_of(io) else {
            if io.op == IoOp::Read {
                self.last_issue = Some(now);
            }
            return Verdict::Dispatch;
        };
        if self.rqw[q].waiters.is_empty() && self.try_acquire(q, io, now) {
            self.passed(now);
            return Verdict::Dispatch;
        }
        self.rqw[q].waiters.push_back(*io);
        Verdict::Held
    }

    /// The woken waiters, in the order they took their slots.
    fn on_timer(&mut self, now: Instant, released: &mut Vec<Io>) {
        let now = self.clock.see(now, &mut self.fault);
        if self.window_ends.is_some_and(|t| t <= now) {
            self.window_end(now);
        }
        if !self.woken.is_empty() {
            released.append(&mut self.woken);
            self.passed(now);
        }
    }

    /// `wbt_issue`: the first read issued is watched until it completes.
    fn on_start(&mut self, io: &Io, _alloc_at: Instant, now: Instant) {
        let now = self.clock.see(now, &mut self.fault);
        if self.enabled() && io.op == IoOp::Read && self.sync_issue.is_none() {
            self.sync_issue = Some((io.id, now));
        }
    }

    /// `blk_stat_add` into the running window, then `wbt_done`.
    fn on_complete(&mut self, io: &Io, _alloc_at: Instant, started_at: Instant, now: Instant) {
        let now = self.clock.see(now, &mut self.fault);
        if !self.enabled() || io.flags.contains(IoFlags::PASSTHROUGH) {
            return;
        }
        if self.window_ends.is_some() {
            let lat = now.0.saturating_sub(started_at.0);
            match io.op {
                IoOp::Read => self.stat[0].add(lat),
                IoOp::Write | IoOp::Discard => self.stat[1].add(lat),
                IoOp::Flush => {}
            }
        }
        match Self::queue_of(io) {
            Some(q) => self.rqw_done(q, now),
            None => {
                if self.sync_issue.is_some_and(|(id, _)| id == io.id) {
                    self.sync_issue = None;
                }
                if io.op == IoOp::Read {
                    self.last_comp = Some(now);
                }
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        if !self.woken.is_empty() {
            return Some(self.clock.last());
        }
        self.window_ends
    }

    fn hold_blocks_submitter(&self) -> bool {
        true
    }

    fn held(&self) -> usize {
        self.rqw.iter().map(|q| q.waiters.len()).sum::<usize>() + self.woken.len()
    }

    fn on_dirty_sleep(&mut self, group: crate::GroupId, now: Instant) {
        if self.cfg.recent_wait == RecentWait::AnyTask || group == crate::GroupId::ROOT {
            self.dirty_sleep = Some(now);
        }
    }

    fn drain_trace(&mut self, out: &mut Vec<Box<dyn TraceRecord>>) {
        out.extend(
            self.trace
                .drain(..)
                .map(|e| Box::new(e) as Box<dyn TraceRecord>),
        );
    }

    fn set_trace(&mut self, on: bool) {
        self.trace_on = on;
        if !on {
            self.trace.clear();
        }
    }

    fn trace_dropped(&self) -> u64 {
        self.trace_dropped
    }

    fn check(&self) -> Result<(), Violation> {
        self.fault.check("wbt")?;
        for (q, w) in self.rqw.iter().enumerate() {
            if !w.waiters.is_empty() && w.inflight == 0 && self.woken.is_empty() {
                return Err(Violation {
                    controller: "wbt",
                    what: format!("queue {q}: {} waiters and no slot taken", w.waiters.len()),
                });
            }
        }
        Ok(())
    }

    fn on_group_added(
        &mut self,
        _group: crate::GroupId,
        _parent: crate::GroupId,
        _path: &str,
        now: Instant,
    ) {
        self.clock.see(now, &mut self.fault);
    }

    fn on_group_removed(&mut self, _group: crate::GroupId, now: Instant) {
        self.clock.see(now, &mut self.fault);
    }

    fn blocked_submitters(&self, group: crate::GroupId) -> u32 {
        let waiting = self.rqw.iter().flat_map(|q| q.waiters.iter());
        waiting
            .chain(self.woken.iter())
            .filter(|io| io.group == group)
            .count() as u32
    }
}
