//! `null`: null_blk (`drivers/block/null_blk/main.c`).
//!
//! Each request completes `completion_ns` after it starts (null_blk's
//! `irqmode=2` timer mode; with the default softirq mode this is the
//! softirq latency, a few µs). Tags: `hw_queues × queue_depth`.
//!
//! `mbps` mirrors null_blk's bandwidth throttle (`null_handle_throttled`,
//! `nullb_bwtimer_fn`): a byte budget of `(1 MiB / 50) × mbps` is reset
//! every 20 ms tick (`TICKS_PER_SEC = 50`). A request that would drive the
//! budget negative is not served; the queue stays stopped until the next
//! tick restarts it. Unused budget does not carry over.
//!
//! The ticks fall on a grid fixed when the device powered on
//! (`hrtimer_forward_now` keeps it), at a phase drawn from the device's
//! seed, apart from the run's jiffy phase: a run starts at an arbitrary
//! point of it, and the grid has no relation to the jiffies. The timer stops at the
//! first tick that finds the budget full; the next request restarts it
//! (`hrtimer_restart` at the past expiry fires at once) and the refill
//! lands after that request took its bytes, so the first request after an
//! idle tick is free.
//!
//! `cpus` ≥ 2 (the CPUs that submit): a request that finds the budget
//! spent stops the queue (`null_stop_queue`) and waits, with those that
//! come after it, in blk-mq's staging ([`MqStage`]) until the next tick
//! restarts the queue; the restart dispatches them in blk-mq's order
//! (`__blk_mq_sched_dispatch_requests` with no I/O scheduler): first the
//! requests the driver refused (`hctx->dispatch`), then the per-CPU
//! software queues, drained one CPU's queue after another
//! (`blk_mq_flush_busy_ctxs`) or, while the queue has been busy, one
//! request per CPU in turn (`blk_mq_do_dispatch_ctx`). A request goes to
//! the queue of the CPU its submitter runs on ([`super::placement`]: the
//! scheduler moves processes between CPUs when they wake). With one CPU
//! the order is the arrival order, and the FIFO above serves it. While
//! the queue has been busy (`hctx->dispatch_busy`, raised by refusals
//! and decayed by accepted requests: `blk_mq_update_dispatch_busy`), a
//! new request is inserted in its CPU's queue and the queue is run from
//! the worker (`blk_mq_submit_bio`); otherwise it issues directly.
//!
//! The host, measured in an emulated guest (the lab), can be given:
//! `restart_p50/p90/p99_ns`, how late the worker runs the queue after a
//! tick restarted it or a request was inserted (the staging then applies
//! with one CPU too); `late_p50/p99_ns`, how late each completion comes
//! ([`super::lateness`]), and `late_sleep_p50/p99_ns`, how late it comes
//! for a request submitted right after its task slept
//! (`IoFlags::AFTER_SLEEP`: an idle guest is slower);
//! `late_busy_p50/p99_ns` and `late_idle_p50/p99_ns`, how late it comes
//! for a request served at once, by what the CPU that issued it runs
//! when its timer expires (`null_cmd_end_timer` arms it there): the
//! submitter still inside a submit call (the interrupt lands on a
//! running vCPU) or not (asleep, waiting), drawn at the expiry
//! ([`DeviceModel::late_at_expiry`]: the backend asks the driver which
//! submitters run); `copy_bytes_per_s`,
//! the copy of each request's data of a memory-backed null_blk
//! (`null_handle_memory_backed`), made in the task that issues the
//! request before its timer starts: a submitter issuing directly is busy
//! for it ([`DeviceModel::take_submitter_ns`]), a restarted queue's worker
//! copies on its CPU, and requests served at a later tick without the
//! worker are copied one after another; `dispatch_p50/p90/p99_ns` and
//! `irq_p50/p90/p99_ns`, the CPU time the worker takes per request when
//! it dispatches a restarted queue and the timer interrupt per
//! completion on that CPU ([`WorkerCpu`]: the requests start one after
//! another and their completions run between the dispatches, so a
//! tick's burst spreads over a millisecond or more). The lateness is
//! then the timer interrupt's: one draw per interrupt, which completes
//! every timer expired by the time it runs, in expiry order
//! (`hrtimer_interrupt`).
//!
//! `zoned=1`: null_blk's zoned mode ([`super::zoned`]): a request the
//! zone rules fail completes after `completion_ns` with their errno.
//!
//! Ignores: a directly issued request's CPU cost beside its copy (the
//! host's submit cost carries it), bad blocks, fault injection.

use super::lateness::{Lateness, QuantileDelay};
use super::placement::Placement;
use super::zoned::Zones;
use super::{DeviceModel, EIO};
use super::{Released, HELD};
use blkqos_core::{Duration, Instant, Io, IoId};
use std::collections::VecDeque;

const TICKS_PER_SEC: u64 = 50;
const TICK_NS: u64 = 1_000_000_000 / TICKS_PER_SEC;

#[derive(Debug, Clone)]
pub struct NullBlk {
    pub completion_ns: u64,
    pub hw_queues: u32,
    pub queue_depth: u32,
    pub mbps: Option<u32>,
    pub capacity: u64,
    /// Budget state: the tick it belongs to and bytes left.
    tick: u64,
    budget: i64,
    /// Requests wait for budget in FIFO order: the earliest tick the next
    /// throttled request may be served in.
    next_free_tick: u64,
    /// Offset of the tick grid (ns, below one tick).
    phase_ns: u64,
    /// The bandwidth timer runs through this tick interval (it stops at the
    /// start of the next one unless a request consumed budget meanwhile).
    active_until: Option<u64>,
    /// `zoned=1`: the zones and their write pointers.
    zones: Option<Zones>,
    /// `cpus` ≥ 2 with `mbps`: blk-mq's staging of a stopped queue.
    mq: Option<Box<MqStage>>,
    /// How late the host completes each request ([`Lateness`]).
    late: Option<Lateness>,
    /// How late it completes a request submitted right after its task
    /// slept ([`blkqos_core::IoFlags::AFTER_SLEEP`]); `None`: as `late`.
    late_after_sleep: Option<Lateness>,
    /// How late it completes a request it served at once, by what the
    /// submitter's CPU runs when the request's timer expires ([`ByCpu`]);
    /// `None`: as `late`, drawn at the start. Set, the lateness is drawn
    /// at the expiry ([`DeviceModel::late_at_expiry`]).
    late_by_cpu: Option<Box<ByCpu>>,
    /// How long after a tick the host dispatches a restarted queue
    /// (the kblockd worker's wake-up, [`QuantileDelay`]).
    restart: Option<QuantileDelay>,
    /// `memory_backed=1`: the host copies each request's data at this
    /// rate (bytes/s), one request after another; 0: no copy.
    copy_bytes_per_s: u64,
    /// When the copies queued so far are done.
    copy_free_at: Instant,
    /// The host CPU that dispatches a restarted queue one request at a
    /// time ([`WorkerCpu`]); `None`: at one instant.
    worker: Option<Box<WorkerCpu>>,
    /// The copy the last request issued directly made in its submitter's
    /// context (ns), until [`DeviceModel::take_submitter_ns`] takes it.
    submitter_ns: u64,
}

/// [`NullBlk::late_by_cpu`]: the lateness of a request served at once, by
/// what its submitter's CPU runs when the request's timer expires.
#[derive(Debug, Clone)]
struct ByCpu {
    /// The submitter runs there (`None`: the usual lateness).
    busy: Option<Lateness>,
    /// It does not (it sleeps, waiting).
    idle: Option<Lateness>,
}

impl ByCpu {
    fn draw(&mut self, busy: bool) -> Option<u64> {
        let law = if busy { &mut self.busy } else { &mut self.idle };
        law.as_mut().map(Lateness::draw_ns)
    }
}

/// The host CPU that runs a restarted queue: the kblockd worker
/// (`blk_mq_run_work_fn` → `blk_mq_dispatch_rq_list` → `null_queue_rq`,
/// one request after another) and the timer interrupts that end its
/// requests on the same CPU (`null_cmd_timer_expired` →
/// `blk_mq_end_request`, in hard-irq context, so they go before the
/// worker's next request). Each dispatch and each completion takes a
/// draw of the CPU time the lab measured per request
/// (`lab/traces/serial.py`: the gaps within the worker's runs of
/// `block_rq_issue` and within the interrupt's runs of
/// `block_rq_complete`).
#[derive(Debug, Clone)]
struct WorkerCpu {
    dispatch: QuantileDelay,
    complete: QuantileDelay,
    /// When the CPU has done the work given to it so far.
    free_at: Instant,
    /// How late the CPU's clock event fires when it is programmed while
    /// the worker dispatches ([`NullBlk::with_worker_irq_late`]); `None`:
    /// the host's usual lateness.
    late_busy: Option<QuantileDelay>,
}

/// blk-mq's staging of null_blk's stopped queue when several CPUs submit
/// (one hardware queue, no I/O scheduler).
#[derive(Debug, Clone)]
struct MqStage {
    /// The per-CPU software queues (`blk_mq_ctx`), each in arrival order.
    ctx: Vec<VecDeque<Waiting>>,
    /// `hctx->dispatch`: requests dispatched that the driver refused
    /// (`BLK_STS_DEV_RESOURCE`), in order.
    dispatch: VecDeque<Waiting>,
    /// The queue is stopped until the tick `restart_tick` restarts it.
    stopped: bool,
    restart_tick: u64,
    /// `hctx->dispatch_from`: the software queue the next round-robin
    /// dispatch starts at.
    dispatch_from: usize,
    /// `hctx->dispatch_busy`: an EWMA of dispatches that ended with the
    /// driver busy (`blk_mq_update_dispatch_busy`).
    dispatch_busy: u32,
    /// The CPU each submitter runs on.
    placement: Placement,
    /// The restarted queue's dispatch, when the host runs it later than
    /// the tick that restarted it (`restart`).
    dispatch_at: Option<Instant>,
}

/// A request waiting in blk-mq's staging.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    id: IoId,
    len: u64,
}

/// `BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT` and `_FACTOR` (block/blk-mq.c).
const DISPATCH_BUSY_EWMA_WEIGHT: u32 = 8;
const DISPATCH_BUSY_EWMA_FACTOR: u32 = 4;

impl NullBlk {
    pub fn new(
        completion_ns: u64,
        hw_queues: u32,
        queue_depth: u32,
        mbps: Option<u32>,
        capacity: u64,
        seed: u64,
    ) -> Self {
        // a phase in [0, tick), from a stream of its own: the bandwidth
        // hrtimer is armed when the device powers on, at no relation to the
        // jiffy grid, whose phase the run draws from the seed itself
        // (`Experiment::tick_phase_ns`: with the same stream the two grids
        // would sit at one fixed offset in every run)
        let mut state = seed ^ 0xA54F_F53A_5F1D_36F1;
        let z = super::rng::splitmix64(&mut state);
        NullBlk {
            phase_ns: z % TICK_NS,
            active_until: None,
            completion_ns,
            hw_queues: hw_queues.max(1),
            queue_depth: queue_depth.max(1),
            mbps,
            capacity,
            tick: u64::MAX,
            budget: 0,
            next_free_tick: 0,
            zones: None,
            mq: None,
            late: None,
            late_after_sleep: None,
            late_by_cpu: None,
            restart: None,
            copy_bytes_per_s: 0,
            copy_free_at: Instant::ZERO,
            worker: None,
            submitter_ns: 0,
        }
    }

    /// `cpus` CPUs submit (blk-mq's software queues; 1: arrival order).
    pub fn with_cpus(self, cpus: u32, seed: u64) -> Self {
        if cpus > 1 && self.mbps.is_some() {
            self.stage(cpus, seed)
        } else {
            self
        }
    }

    /// blk-mq's staging over `cpus` software queues.
    fn stage(mut self, cpus: u32, seed: u64) -> Self {
        self.mq = Some(Box::new(MqStage {
            ctx: vec![VecDeque::new(); cpus.max(1) as usize],
            dispatch: VecDeque::new(),
            stopped: false,
            restart_tick: 0,
            dispatch_from: 0,
            dispatch_busy: 0,
            placement: Placement::new(cpus.max(1), seed),
            dispatch_at: None,
        }));
        self
    }

    /// Start of tick `tick` on the run's clock.
    fn tick_start(&self, tick: u64) -> Instant {
        Instant((tick * TICK_NS).saturating_sub(self.phase_ns))
    }

    /// [`DeviceModel::service`] with blk-mq's staging: a request is served
    /// now when the queue runs and the tick's budget has room, else it
    /// waits for the tick that restarts the queue ([`HELD`]).
    fn service_staged(&mut self, io: &Io, now: Instant, per_tick: i64) -> (Instant, i32) {
        let arrival_tick = (now.as_ns() + self.phase_ns) / TICK_NS;
        let Some(mq) = self.mq.as_deref_mut() else {
            unreachable!("service_staged without a staging");
        };
        let w = Waiting {
            id: io.id,
            len: io.len,
        };
        let cpu = mq.placement.cpu_of(io.submitter, now) as usize;
        if mq.stopped {
            // blk_mq_insert_request: the submitting CPU's software queue
            mq.ctx[cpu].push_back(w);
            return (HELD, 0);
        }
        if mq.dispatch_busy > 0 {
            // blk_mq_submit_bio: while the hardware queue has been busy
            // (hctx->dispatch_busy, one hardware queue) the request goes
            // to its CPU's software queue and the queue is run from the
            // worker (blk_mq_run_hw_queue(hctx, true))
            mq.ctx[cpu].push_back(w);
            if mq.dispatch_at.is_none() {
                let delay = self.restart.as_mut().map_or(0, QuantileDelay::draw_ns);
                if let Some(mq) = self.mq.as_deref_mut() {
                    mq.dispatch_at = Some(now + Duration(delay));
                }
            }
            return (HELD, 0);
        }
        if self.active_until.is_none_or(|a| arrival_tick > a) {
            // timer stopped with a full budget: this request restarts it
            // and the immediate refill makes it free
            self.tick = arrival_tick;
            self.budget = per_tick;
            self.active_until = Some(arrival_tick);
            return (self.direct_done(now, io.len), 0);
        }
        if arrival_tick != self.tick {
            self.tick = arrival_tick;
            self.budget = per_tick;
        }
        if self.budget - io.len as i64 >= 0 || self.budget == per_tick {
            self.budget -= io.len as i64;
            self.active_until = Some(
                self.active_until
                    .map_or(arrival_tick + 1, |a| a.max(arrival_tick + 1)),
            );
            // __blk_mq_issue_directly: a request the driver took
            if let Some(mq) = self.mq.as_deref_mut() {
                update_dispatch_busy(mq, false);
            }
            return (self.direct_done(now, io.len), 0);
        }
        // null_handle_throttled: the budget is spent; the queue stops and
        // the refused request waits on hctx->dispatch
        let Some(mq) = self.mq.as_deref_mut() else {
            unreachable!("service_staged without a staging");
        };
        update_dispatch_busy(mq, true);
        mq.stopped = true;
        mq.restart_tick = arrival_tick + 1;
        mq.dispatch.push_back(w);
        (HELD, 0)
    }

    /// Each completion comes late by a log-normal delay with median
    /// `p50_ns` and 99th percentile `p99_ns` (an emulated guest's timer
    /// lateness); no lateness when `p50_ns` is 0.
    pub fn with_lateness(mut self, p50_ns: u64, p99_ns: u64, seed: u64) -> Self {
        self.late = (p50_ns > 0).then(|| Lateness::new(p50_ns, p99_ns.max(p50_ns), seed));
        self
    }

    /// A request submitted right after its task slept (fio's thinktime)
    /// completes late by a log-normal delay with median `p50_ns` and 99th
    /// percentile `p99_ns` instead (an emulated guest that was idle:
    /// the lab's `h01` traces against `h02`'s); as the others when
    /// `p50_ns` is 0.
    pub fn with_lateness_after_sleep(mut self, p50_ns: u64, p99_ns: u64, seed: u64) -> Self {
        self.late_after_sleep = (p50_ns > 0)
            .then(|| Lateness::new(p50_ns, p99_ns.max(p50_ns), seed ^ 0x1F83_D9AB_FB41_BD6B));
        self
    }

    /// A request served at once completes late by a log-normal delay
    /// drawn when its timer expires, by what its submitter's CPU runs
    /// then: `busy` `(p50_ns, p99_ns)` while the submitter runs on it (the
    /// interrupt lands on a running vCPU), `idle` while it does not (it
    /// sleeps, waiting); a 0 median leaves that case to the usual
    /// lateness. Neither set: the lateness is drawn at the start, as
    /// before.
    pub fn with_lateness_by_cpu(mut self, busy: (u64, u64), idle: (u64, u64), seed: u64) -> Self {
        let law = |(p50, p99): (u64, u64), salt: u64| {
            (p50 > 0).then(|| Lateness::new(p50, p99.max(p50), seed ^ salt))
        };
        let by = ByCpu {
            busy: law(busy, 0x3C6E_F372_FE94_F82B),
            idle: law(idle, 0xA54F_F53A_5F1D_36F1),
        };
        self.late_by_cpu = (by.busy.is_some() || by.idle.is_some()).then(|| Box::new(by));
        self
    }

    /// The host dispatches a restarted queue a delay after the tick that
    /// restarted it (`blk_mq_start_stopped_hw_queues(q, true)` runs the
    /// queue from the kblockd worker): median `p50_ns`, `p90_ns`,
    /// `p99_ns`; none when all are 0. Until then the queue runs: a new
    /// request issues directly once `hctx->dispatch_busy` has decayed,
    /// and before that waits for the worker in its CPU's software queue
    /// (`blk_mq_submit_bio`). Needs `mbps`; stages requests even with one
    /// CPU.
    pub fn with_restart_delay(mut self, p50_ns: u64, p90_ns: u64, p99_ns: u64, seed: u64) -> Self {
        if p99_ns == 0 || self.mbps.is_none() {
            return self;
        }
        if self.mq.is_none() {
            self = self.stage(1, seed);
        }
        self.restart = Some(QuantileDelay::new(p50_ns, p90_ns, p99_ns, seed));
        self
    }

    /// The host dispatches a restarted queue one request at a time:
    /// each dispatch takes a draw with median `dispatch[0]`, p90
    /// `dispatch[1]` and p99 `dispatch[2]` (ns) of the worker's CPU, and
    /// each completion a draw from `irq` of the same CPU, before the
    /// worker's next request (`WorkerCpu`); none when both p99s are 0.
    /// Needs `mbps`; stages requests even with one CPU.
    pub fn with_worker_cpu(mut self, dispatch: [u64; 3], irq: [u64; 3], seed: u64) -> Self {
        if (dispatch[2] == 0 && irq[2] == 0) || self.mbps.is_none() {
            return self;
        }
        if self.mq.is_none() {
            self = self.stage(1, seed);
        }
        let [d50, d90, d99] = dispatch;
        let [c50, c90, c99] = irq;
        self.worker = Some(Box::new(WorkerCpu {
            dispatch: QuantileDelay::new(d50, d90, d99, seed ^ 0x510E_527F_ADE6_82D1),
            complete: QuantileDelay::new(c50, c90, c99, seed ^ 0x9B05_688C_2B3E_6C1F),
            free_at: Instant::ZERO,
            late_busy: None,
        }));
        self
    }

    /// The worker's CPU takes its timer interrupt late by a draw with
    /// median `late[0]`, p90 `late[1]` and p99 `late[2]` (ns) when its
    /// clock event is programmed while the worker dispatches (by the
    /// worker's own `hrtimer_start`, or after an interrupt it returns
    /// from), and by the host's usual lateness once the worker is done.
    /// The lab's guest takes few interrupts while the worker runs
    /// (`lab/traces/c04st-*`, `hrtimers.py`: the interrupt whose earliest
    /// timer expired under the worker comes 24 µs later at the median on
    /// 6.12 but 574 µs at p90, the timer ending 465 µs after its expiry
    /// at the median). Needs the worker's CPU costs; none when the p99
    /// is 0.
    pub fn with_worker_irq_late(mut self, late: [u64; 3], seed: u64) -> Self {
        if let (Some(w), true) = (self.worker.as_deref_mut(), late[2] > 0) {
            w.late_busy = Some(QuantileDelay::new(
                late[0],
                late[1],
                late[2],
                seed ^ 0x3C6E_F372_2B3E_6C1F,
            ));
        }
        self
    }

    /// `memory_backed=1` on a host that copies at `bytes_per_s`
    /// (`null_handle_memory_backed` → `copy_to_nullb`/`copy_from_nullb`,
    /// in the dispatching task): each request's data is copied before its
    /// completion timer starts, in the context that issues it.
    pub fn with_copy_rate(mut self, bytes_per_s: u64) -> Self {
        self.copy_bytes_per_s = bytes_per_s;
        self
    }

    /// A request of `len` bytes served from `start`: when it completes
    /// (its data copied, then `completion_ns`).
    fn done_at(&mut self, start: Instant, len: u64) -> Instant {
        let lat = Duration(self.completion_ns);
        if self.copy_bytes_per_s == 0 || len == 0 {
            return start + lat;
        }
        let copy = (u128::from(len) * 1_000_000_000 / u128::from(self.copy_bytes_per_s)) as u64;
        self.copy_free_at = self.copy_free_at.max(start) + Duration(copy);
        self.copy_free_at + lat
    }

    /// A request of `len` bytes issued directly at `now`, in its
    /// submitter's context: `null_queue_rq` copies a memory-backed
    /// device's data right there, so the submitter is busy for the copy
    /// (taken by [`DeviceModel::take_submitter_ns`]) and the completion
    /// timer starts after it. Submitters copy on their own CPUs, side by
    /// side.
    fn direct_done(&mut self, now: Instant, len: u64) -> Instant {
        let lat = Duration(self.completion_ns);
        if self.copy_bytes_per_s == 0 || len == 0 {
            return now + lat;
        }
        let copy = (u128::from(len) * 1_000_000_000 / u128::from(self.copy_bytes_per_s)) as u64;
        self.submitter_ns = copy;
        now + Duration(copy) + lat
    }

    /// The host's lateness for one completion (0 without lateness).
    fn late_ns(&mut self) -> u64 {
        self.late.as_mut().map_or(0, Lateness::draw_ns)
    }

    /// null_blk's zoned mode over the whole device.
    pub fn with_zones(mut self, zones: Zones) -> Self {
        self.zones = Some(zones);
        self
    }

    /// The zones (`zoned=1`).
    pub fn zones(&self) -> Option<&Zones> {
        self.zones.as_ref()
    }
    fn per_tick(mbps: u32) -> i64 {
        ((1u64 << 20) / TICKS_PER_SEC * u64::from(mbps)) as i64
    }
}

impl NullBlk {
    /// `__blk_mq_sched_dispatch_requests` with no I/O scheduler, for a
    /// queue the tick restarted: the refused requests first, then the
    /// software queues; what is served completes at `at`.
    fn run_hw_queue(
        &mut self,
        mq: &mut MqStage,
        at: Instant,
        per_tick: i64,
        out: &mut Vec<Released>,
    ) {
        let need_dispatch = if mq.dispatch.is_empty() {
            mq.dispatch_busy != 0
        } else {
            let list = std::mem::take(&mut mq.dispatch);
            if !self.dispatch_list(mq, list, at, per_tick, out) {
                return;
            }
            true
        };
        if need_dispatch {
            // blk_mq_do_dispatch_ctx: one request per software queue in
            // turn, from hctx->dispatch_from
            let n = mq.ctx.len();
            while let Some(i) = (0..n)
                .map(|k| (mq.dispatch_from + k) % n)
                .find(|&i| !mq.ctx[i].is_empty())
            {
                let w = mq.ctx[i].pop_front().expect("a non-empty queue");
                mq.dispatch_from = (i + 1) % n;
                if !self.dispatch_list(mq, VecDeque::from([w]), at, per_tick, out) {
                    return;
                }
            }
        } else {
            // blk_mq_flush_busy_ctxs: every software queue, one CPU's
            // after another
            let mut list = VecDeque::new();
            for q in &mut mq.ctx {
                list.append(q);
            }
            if !list.is_empty() {
                self.dispatch_list(mq, list, at, per_tick, out);
            }
        }
    }

    /// `blk_mq_dispatch_rq_list`: serve `list` in order while the tick's
    /// budget has room; the first refused request and those after it go
    /// to hctx->dispatch and stop the queue. True when all were served.
    fn dispatch_list(
        &mut self,
        mq: &mut MqStage,
        mut list: VecDeque<Waiting>,
        at: Instant,
        per_tick: i64,
        out: &mut Vec<Released>,
    ) -> bool {
        while let Some(w) = list.front().copied() {
            if self.budget - w.len as i64 >= 0 || self.budget == per_tick {
                self.budget -= w.len as i64;
                list.pop_front();
                let done = self.done_at(at, w.len);
                out.push(Released {
                    id: w.id,
                    at: done,
                    dispatched: at,
                    bytes: w.len,
                    error: 0,
                });
            } else {
                mq.dispatch = list;
                mq.stopped = true;
                update_dispatch_busy(mq, true);
                return false;
            }
        }
        update_dispatch_busy(mq, false);
        true
    }
}

impl WorkerCpu {
    /// Lay one run of the worker on its CPU: `served` in dispatch order.
    /// The worker takes each request when it is done with the one before;
    /// a memory-backed device's copy of its data follows on the same CPU
    /// (`null_handle_memory_backed` at `bytes_per_s`, 0: none), then its
    /// timer is armed and expires `completion_ns` later.
    ///
    /// The CPU's clock event is programmed for the earliest timer
    /// (`hrtimer_reprogram`) and its interrupt comes late by a draw of
    /// `late`: one draw per interrupt, not per request. The interrupt
    /// (`hrtimer_interrupt`) completes every timer expired by then, and
    /// those that expire while it runs, one completion after another
    /// (`null_cmd_timer_expired` → `blk_mq_end_request`, in hard-irq
    /// context), holding the worker up for as long as it runs; then the
    /// clock event is programmed for the next timer. Sets each request's
    /// `dispatched` (the kernel's `block_rq_issue`) and `at`
    /// (`block_rq_complete`); returns when the CPU is done.
    fn run(
        &mut self,
        start: Instant,
        served: &mut [Released],
        mut late: Option<&mut Lateness>,
        completion_ns: u64,
        bytes_per_s: u64,
    ) -> Instant {
        let mut cpu = start.max(self.free_at);
        let mut timers = Timers::default();
        let mut late_busy = self.late_busy.take();
        for k in 0..served.len() {
            let r = &mut served[k];
            r.dispatched = cpu;
            let copy_ns = if bytes_per_s > 0 {
                (u128::from(r.bytes) * 1_000_000_000 / u128::from(bytes_per_s)) as u64
            } else {
                0
            };
            {
                let mut draw = || busy_draw(&mut late_busy, &mut late);
                timers.arm(cpu + Duration(copy_ns + completion_ns), k, &mut draw);
            }
            let mut done = cpu + Duration(copy_ns + self.dispatch.draw_ns());
            // an interrupt that comes meanwhile holds the worker up
            while let Some(at) = timers.event.filter(|&at| at <= done) {
                let mut draw = || busy_draw(&mut late_busy, &mut late);
                done += self.interrupt(at, &mut timers, served, &mut draw) - at;
            }
            cpu = done;
        }
        self.late_busy = late_busy;
        let mut end = cpu;
        while let Some(at) = timers.event {
            let mut draw = || late_draw(&mut late);
            end = end.max(self.interrupt(at, &mut timers, served, &mut draw));
        }
        self.free_at = end;
        end
    }

    /// One timer interrupt at `at`: completes the expired timers, the
    /// clock advancing by each completion's CPU time, and programs the
    /// clock event for the next timer. Returns when it is done.
    fn interrupt(
        &mut self,
        at: Instant,
        timers: &mut Timers,
        served: &mut [Released],
        late: &mut dyn FnMut() -> u64,
    ) -> Instant {
        let mut clock = at;
        while let Some(i) = timers.pop_expired(clock) {
            served[i].at = clock;
            clock += Duration(self.complete.draw_ns());
        }
        timers.program(clock, late);
        clock
    }
}

/// The hrtimers armed on the worker's CPU and its clock event.
#[derive(Default)]
struct Timers {
    /// (expiry, request) of the pending timers.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
    /// The expiry the clock event is programmed for.
    programmed: Option<Instant>,
    /// When its interrupt comes (`programmed`, late by the host).
    event: Option<Instant>,
}

impl Timers {
    /// `hrtimer_start`: a timer that expires before the programmed event
    /// reprograms the clock event for itself.
    fn arm(&mut self, expiry: Instant, k: usize, late: &mut dyn FnMut() -> u64) {
        self.heap.push(std::cmp::Reverse((expiry, k)));
        if self.programmed.is_none_or(|p| expiry < p) {
            self.programmed = Some(expiry);
            self.event = Some(expiry + Duration(late()));
        }
    }

    /// The next timer expired by `clock`.
    fn pop_expired(&mut self, clock: Instant) -> Option<usize> {
        let &std::cmp::Reverse((expiry, i)) = self.heap.peek()?;
        (expiry <= clock).then(|| {
            self.heap.pop();
            i
        })
    }

    /// The clock event for the earliest pending timer, after an
    /// interrupt that ended at `clock`.
    fn program(&mut self, clock: Instant, late: &mut dyn FnMut() -> u64) {
        self.programmed = self.heap.peek().map(|r| r.0 .0);
        self.event = self.programmed.map(|e| e.max(clock) + Duration(late()));
    }
}

fn late_draw(late: &mut Option<&mut Lateness>) -> u64 {
    late.as_deref_mut().map_or(0, Lateness::draw_ns)
}

/// The lateness of a clock event programmed while the worker dispatches:
/// `busy`'s law when it has one, else the host's usual `late`.
fn busy_draw(busy: &mut Option<QuantileDelay>, late: &mut Option<&mut Lateness>) -> u64 {
    match busy {
        Some(b) => b.draw_ns(),
        None => late_draw(late),
    }
}

/// `blk_mq_update_dispatch_busy`: the EWMA of dispatches that ended with
/// the driver busy.
fn update_dispatch_busy(mq: &mut MqStage, busy: bool) {
    let mut ewma = mq.dispatch_busy;
    if ewma == 0 && !busy {
        return;
    }
    ewma *= DISPATCH_BUSY_EWMA_WEIGHT - 1;
    if busy {
        ewma += 1 << DISPATCH_BUSY_EWMA_FACTOR;
    }
    mq.dispatch_busy = ewma / DISPATCH_BUSY_EWMA_WEIGHT;
}

impl NullBlk {
    /// [`DeviceModel::service`] without the host's lateness.
    fn serve(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let lat = Duration(self.completion_ns);
        if io.offset.saturating_add(io.len) > self.capacity {
            return (now + lat, EIO);
        }
        if let Some(z) = &mut self.zones {
            // null_process_zoned_cmd fails the request before it is served
            let e = z.apply(io);
            if e != 0 {
                return (now + lat, e);
            }
        }
        let Some(mbps) = self.mbps else {
            return (self.direct_done(now, io.len), 0);
        };
        let per_tick = Self::per_tick(mbps);
        if self.mq.is_some() {
            return self.service_staged(io, now, per_tick);
        }
        let arrival_tick = (now.as_ns() + self.phase_ns) / TICK_NS;
        if arrival_tick >= self.next_free_tick && self.active_until.is_none_or(|a| arrival_tick > a)
        {
            // timer stopped with a full budget: this request restarts it
            // and the immediate refill makes it free
            self.tick = arrival_tick;
            self.budget = per_tick;
            self.active_until = Some(arrival_tick);
            return (self.direct_done(now, io.len), 0);
        }
        let mut tick = arrival_tick.max(self.next_free_tick);
        loop {
            if tick != self.tick {
                self.tick = tick;
                self.budget = per_tick;
            }
            if self.budget - io.len as i64 >= 0 || (self.budget == per_tick) {
                // a request larger than a whole tick's budget still goes
                // when the budget is full (it drives it negative once)
                self.budget -= io.len as i64;
                self.next_free_tick = tick;
                self.active_until = Some(self.active_until.map_or(tick + 1, |a| a.max(tick + 1)));
                let start = now.max(Instant((tick * TICK_NS).saturating_sub(self.phase_ns)));
                if start == now {
                    return (self.direct_done(now, io.len), 0);
                }
                // served at a later tick by the restarted queue: one
                // copy after another
                return (self.done_at(start, io.len), 0);
            }
            tick += 1;
        }
    }
    /// [`DeviceModel::release`] without the host's lateness: the tick
    /// that restarts a stopped queue serves what it staged.
    fn release_tick(&mut self, now: Instant, out: &mut Vec<Released>) {
        let Some(mbps) = self.mbps else { return };
        let per_tick = Self::per_tick(mbps);
        let Some(mut mq) = self.mq.take() else { return };
        if mq.stopped && self.tick_start(mq.restart_tick) <= now {
            // nullb_bwtimer_fn: a full budget, and the queue restarted
            let t = mq.restart_tick;
            self.tick = t;
            self.budget = per_tick;
            self.active_until = Some(self.active_until.map_or(t + 1, |a| a.max(t + 1)));
            mq.stopped = false;
            // the worker runs within the tick (a later one would find
            // the next tick's refill)
            let delay = self
                .restart
                .as_mut()
                .map_or(0, |r| r.draw_ns().min(TICK_NS - 1));
            mq.dispatch_at = Some(self.tick_start(t) + Duration(delay));
        }
        if let Some(at) = mq.dispatch_at.filter(|&at| at <= now) {
            mq.dispatch_at = None;
            // a queue stopped again meanwhile (new requests spent the
            // budget) is not run: the next tick restarts it
            if !mq.stopped {
                let t_at = (at.as_ns() + self.phase_ns) / TICK_NS;
                if t_at != self.tick {
                    // the bandwidth timer refilled the budget meanwhile
                    self.tick = t_at;
                    self.budget = per_tick;
                    self.active_until =
                        Some(self.active_until.map_or(t_at + 1, |a| a.max(t_at + 1)));
                }
                let t = self.tick;
                let from = out.len();
                let copies_before = self.copy_free_at;
                self.run_hw_queue(&mut mq, at, per_tick, out);
                if let Some(w) = self.worker.as_deref_mut() {
                    // the worker's CPU does the copies, in its own order
                    let end = w.run(
                        at,
                        &mut out[from..],
                        self.late.as_mut(),
                        self.completion_ns,
                        self.copy_bytes_per_s,
                    );
                    if self.copy_bytes_per_s > 0 {
                        self.copy_free_at = copies_before.max(end);
                    }
                }
                if mq.stopped {
                    mq.restart_tick = t + 1;
                }
            }
        }
        self.mq = Some(mq);
    }
}

impl DeviceModel for NullBlk {
    fn nr_requests(&self) -> u32 {
        self.hw_queues * self.queue_depth
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn rotational(&self) -> bool {
        false
    }
    fn default_max_sectors(&self) -> u32 {
        super::NULL_MAX_SECTORS
    }
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let (at, e) = self.serve(io, now);
        if at == HELD || self.late_by_cpu.is_some() {
            // held: the release draws it; by CPU: the expiry does
            return (at, e);
        }
        if let (true, Some(l)) = (
            io.flags.contains(blkqos_core::IoFlags::AFTER_SLEEP),
            self.late_after_sleep.as_mut(),
        ) {
            return (at + Duration(l.draw_ns()), e);
        }
        if self.late.is_none() {
            return (at, e);
        }
        (at + Duration(self.late_ns()), e)
    }
    fn release(&mut self, now: Instant, out: &mut Vec<Released>) {
        let from = out.len();
        self.release_tick(now, out);
        // the worker's CPU draws the lateness of what it dispatched
        if self.late.is_some() && self.worker.is_none() {
            for r in &mut out[from..] {
                r.at += Duration(self.late.as_mut().map_or(0, Lateness::draw_ns));
            }
        }
    }
    fn lateness_by_cpu(&self) -> bool {
        self.late_by_cpu.is_some()
    }
    fn late_at_expiry(&mut self, flags: blkqos_core::IoFlags, busy: bool) -> u64 {
        if let (true, Some(l)) = (
            flags.contains(blkqos_core::IoFlags::AFTER_SLEEP),
            self.late_after_sleep.as_mut(),
        ) {
            return l.draw_ns();
        }
        match self.late_by_cpu.as_deref_mut().and_then(|b| b.draw(busy)) {
            Some(ns) => ns,
            None => self.late_ns(),
        }
    }
    fn next_release(&self) -> Option<Instant> {
        let mq = self.mq.as_deref()?;
        let refill = mq.stopped.then(|| self.tick_start(mq.restart_tick));
        match (refill, mq.dispatch_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn take_submitter_ns(&mut self) -> u64 {
        std::mem::take(&mut self.submitter_ns)
    }
    /// With one CPU the worker's dispatch of a restarted queue and the
    /// timer interrupts that complete it run where the fio processes do:
    /// a process woken by a completion runs when they are done.
    fn cpu_busy_until(&self) -> Option<Instant> {
        match (&self.mq, &self.worker) {
            (Some(mq), Some(w)) if mq.ctx.len() == 1 => Some(w.free_at),
            _ => None,
        }
    }
    fn describe(&self) -> String {
        format!(
            "null: completion {} ns, {} hw queue(s) x depth {}, mbps {}",
            self.completion_ns,
            self.hw_queues,
            self.queue_depth,
            self.mbps.map_or("unlimited".to_string(), |m| m.to_string())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::{GroupId, IoFlags, IoId, IoOp};

    fn io(len: u64) -> Io {
        Io {
            ioprio: 0,
            id: IoId(0),
            submitter: blkqos_core::Submitter(0),
            group: GroupId::ROOT,
            op: IoOp::Read,
            flags: IoFlags::default(),
            offset: 0,
            len,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        }
    }

    fn io_of(id: u64, who: u32, len: u64) -> Io {
        Io {
            id: IoId(id),
            submitter: blkqos_core::Submitter(who),
            ..io(len)
        }
    }

    /// A request submitted right after its task slept is late by the
    /// after-sleep lateness; the others by the usual one; without an
    /// after-sleep lateness both by the usual one.
    #[test]
    fn a_request_after_a_sleep_takes_the_after_sleep_lateness() {
        let t0 = Instant(1_000_000);
        let after_sleep = |i: Io| Io {
            flags: i.flags.with(IoFlags::AFTER_SLEEP),
            ..i
        };
        let mut d = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1)
            .with_lateness(5_000, 5_000, 1)
            .with_lateness_after_sleep(300_000, 300_000, 1);
        assert_eq!(d.service(&io(4096), t0).0, t0 + Duration(25_000));
        assert_eq!(
            d.service(&after_sleep(io(4096)), t0).0,
            t0 + Duration(320_000)
        );
        let mut plain =
            NullBlk::new(20_000, 1, 64, None, 1 << 40, 1).with_lateness(5_000, 5_000, 1);
        assert_eq!(
            plain.service(&after_sleep(io(4096)), t0).0,
            t0 + Duration(25_000)
        );
    }

    /// With a lateness by CPU state, a request served at once completes
    /// at its timer's expiry and the lateness comes at the expiry: the
    /// after-sleep one for a request after a sleep, else the busy or the
    /// idle one by what its submitter's CPU runs, else the usual one.
    #[test]
    fn a_served_request_is_late_by_its_cpu_at_the_expiry() {
        let t0 = Instant(1_000_000);
        let mut d = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1)
            .with_lateness(70_000, 70_000, 1)
            .with_lateness_after_sleep(300_000, 300_000, 1)
            .with_lateness_by_cpu((5_000, 5_000), (40_000, 40_000), 1);
        assert!(d.lateness_by_cpu());
        assert_eq!(d.service(&io(4096), t0).0, t0 + Duration(20_000));
        assert_eq!(d.late_at_expiry(IoFlags::default(), true), 5_000);
        assert_eq!(d.late_at_expiry(IoFlags::default(), false), 40_000);
        let slept = IoFlags::default().with(IoFlags::AFTER_SLEEP);
        assert_eq!(d.late_at_expiry(slept, true), 300_000);
        // a case without its own law takes the usual lateness
        let mut busy_only = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1)
            .with_lateness(70_000, 70_000, 1)
            .with_lateness_by_cpu((5_000, 5_000), (0, 0), 1);
        assert_eq!(busy_only.late_at_expiry(IoFlags::default(), false), 70_000);
        assert_eq!(busy_only.late_at_expiry(IoFlags::default(), true), 5_000);
        // neither: drawn at the start, as before
        let plain = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1)
            .with_lateness(70_000, 70_000, 1)
            .with_lateness_by_cpu((0, 0), (0, 0), 1);
        assert!(!plain.lateness_by_cpu());
    }

    /// `d` (a bandwidth-limited device) at tick phase 0: requests of
    /// `len` bytes until one is staged, `more` staged after it, then what
    /// the next tick releases.
    fn staged_burst(d: &mut NullBlk, len: u64, more: u64) -> Vec<Released> {
        d.phase_ns = 0;
        let t0 = Instant(1_000);
        let mut id = 0;
        while d.service(&io_of(id, 0, len), t0).0 != HELD {
            id += 1;
        }
        for k in 1..=more {
            assert_eq!(d.service(&io_of(id + k, 0, len), t0).0, HELD);
        }
        let mut out = Vec::new();
        d.release(Instant(TICK_NS), &mut out);
        out
    }

    /// 10 MB/s, a 20 µs completion: a request stops the queue and 40
    /// more wait for the tick. With the worker's CPU costs (median 4 µs a
    /// dispatch, 6 µs a completion, as the lab's 6.1 traces) the restart
    /// dispatches them one after another and each completion runs when
    /// its timer has expired, between the worker's dispatches: issues
    /// and completions interleave, no two requests start at once, none
    /// completes before its 20 µs, and the burst spans about the costs'
    /// sum. Without the costs every request starts at the tick.
    #[test]
    fn the_worker_dispatches_a_restarted_queue_one_request_at_a_time() {
        let burst = |worker: bool| {
            let mut d = NullBlk::new(20_000, 1, 64, Some(10), 1 << 40, 1);
            d = if worker {
                d.with_worker_cpu([4_000, 8_000, 64_000], [6_000, 30_000, 119_000], 7)
            } else {
                d.with_cpus(2, 7)
            };
            let out = staged_burst(&mut d, 4096, 40);
            assert_eq!(out.len(), 41, "the tick's budget holds them all");
            out
        };
        let at_once = burst(false);
        assert!(at_once
            .iter()
            .all(|r| r.dispatched == Instant(TICK_NS) && r.at == Instant(TICK_NS + 20_000)));
        let out = burst(true);
        let tick = Instant(TICK_NS);
        assert_eq!(out[0].dispatched, tick, "the worker starts at the tick");
        for w in out.windows(2) {
            assert!(w[1].dispatched > w[0].dispatched, "{w:?}");
        }
        for r in &out {
            assert!(r.at >= r.dispatched + Duration(20_000), "{r:?}");
        }
        // the CPU runs one thing at a time: no two completions at once
        let mut done: Vec<Instant> = out.iter().map(|r| r.at).collect();
        done.sort();
        assert!(done.windows(2).all(|w| w[1] > w[0]), "{done:?}");
        // a completion comes before the worker's last dispatch
        let last_issue = out.last().unwrap().dispatched;
        assert!(done[0] < last_issue, "{} {}", done[0], last_issue);
        // 41 requests at about 7 + 17 µs each (the laws' means)
        let span_us = (done[40].as_ns() - tick.as_ns()) / 1_000;
        assert!((500..2_000).contains(&span_us), "{span_us} us");
    }

    /// The host's lateness delays the timer interrupt, not each request:
    /// the clock event is programmed for the earliest timer and its
    /// (late) interrupt completes every timer expired by then, in expiry
    /// order (`hrtimer_interrupt`, `__hrtimer_run_queues`). So a
    /// restarted queue's requests complete in the order the worker
    /// dispatched them (the kernel's c04 traces: 94-99% of completions on
    /// a CPU come in its issue order), back to back within an
    /// interrupt, and fewer interrupts than requests draw a lateness.
    /// Drawn per request, the same lateness law (the lab's 6.12 h02:
    /// median 68.5 µs, p99 468 µs) reorders them.
    #[test]
    fn one_late_interrupt_completes_every_expired_timer_in_order() {
        let mut d = NullBlk::new(20_000, 1, 64, Some(10), 1 << 40, 1)
            .with_lateness(68_500, 468_000, 3)
            .with_worker_cpu([4_000, 4_000, 4_000], [6_000, 6_000, 6_000], 7);
        let out = staged_burst(&mut d, 4096, 40);
        assert_eq!(out.len(), 41);
        for w in out.windows(2) {
            assert!(w[1].at > w[0].at, "completed out of dispatch order: {w:?}");
        }
        // an interrupt's completions are one completion's cost apart
        let runs = 1 + out
            .windows(2)
            .filter(|w| w[1].at - w[0].at > Duration(6_000))
            .count();
        assert!(runs < 41 / 3, "{runs} interrupts for 41 requests");
        // the first interrupt is late: nothing completes on its own time
        assert!(out[0].at > out[0].dispatched + Duration(20_000));
        // drawn per request, the same law completes them out of order
        let mut late = Lateness::new(68_500, 468_000, 3);
        let own: Vec<u64> = out
            .iter()
            .map(|r| r.dispatched.as_ns() + 20_000 + late.draw_ns())
            .collect();
        assert!(own.windows(2).any(|w| w[1] < w[0]));
    }

    /// The worker's CPU with its clock event late by a millisecond when
    /// programmed while the worker dispatches (`lab/traces/c04st-*`: the
    /// guest takes few interrupts while the worker runs): no request
    /// completes before the worker's last dispatch, they complete in
    /// dispatch order once it is done, and the worker is not held up (it
    /// dispatches at its own pace). Without the law the interrupts come
    /// at the host's usual lateness, between the dispatches.
    #[test]
    fn the_worker_takes_no_early_interrupt_while_it_dispatches_with_the_busy_law() {
        let run = |busy: bool| {
            let mut d = NullBlk::new(20_000, 1, 64, Some(10), 1 << 40, 1).with_worker_cpu(
                [4_000, 4_000, 4_000],
                [6_000, 6_000, 6_000],
                7,
            );
            if busy {
                d = d.with_worker_irq_late([1_000_000, 1_000_000, 1_000_000], 9);
            }
            staged_burst(&mut d, 4096, 40)
        };
        let (held, free) = (run(true), run(false));
        assert_eq!(held.len(), 41);
        let last_dispatch = held.iter().map(|r| r.dispatched).max().unwrap();
        assert!(held.iter().all(|r| r.at > last_dispatch), "{held:?}");
        for w in held.windows(2) {
            assert!(
                w[1].at > w[0].at && w[1].dispatched > w[0].dispatched,
                "{w:?}"
            );
        }
        // the worker dispatches at its own pace (a draw of at most 4 µs
        // each), not held up by completions
        for w in held.windows(2) {
            assert!(
                w[1].dispatched - w[0].dispatched <= Duration(4_000),
                "{w:?}"
            );
        }
        // without the law some complete while the worker dispatches
        let free_last = free.iter().map(|r| r.dispatched).max().unwrap();
        assert!(free.iter().any(|r| r.at < free_last), "{free:?}");
    }

    /// A memory-backed device: the worker's CPU copies each request's
    /// data before it arms the request's timer and before its next
    /// dispatch (`null_handle_memory_backed` in `null_queue_rq`), so
    /// dispatches are at least a copy apart and each completes at least a
    /// copy and `completion_ns` after its dispatch.
    #[test]
    fn the_worker_copies_each_request_before_the_next() {
        let mut d = NullBlk::new(20_000, 1, 64, Some(10), 1 << 40, 1)
            .with_copy_rate(100_000_000)
            .with_worker_cpu([4_000, 8_000, 64_000], [6_000, 30_000, 119_000], 7);
        let out = staged_burst(&mut d, 16384, 8);
        assert_eq!(out.len(), 9);
        let copy = Duration(163_840); // 16 KiB at 100 MB/s
        for w in out.windows(2) {
            assert!(w[1].dispatched >= w[0].dispatched + copy, "{w:?}");
        }
        for r in &out {
            assert!(r.at >= r.dispatched + copy + Duration(20_000), "{r:?}");
        }
    }

    /// A request issued directly to a memory-backed device is copied in
    /// its submitter's context: it completes a copy and `completion_ns`
    /// after it starts, the device reports the copy once as the
    /// submitter's time, and two submitters' copies run side by side.
    #[test]
    fn a_direct_issue_copies_in_the_submitters_context() {
        let mut d = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1).with_copy_rate(100_000_000);
        let t0 = Instant(1_000);
        let copy = 163_840; // 16 KiB at 100 MB/s
        assert_eq!(
            d.service(&io_of(0, 0, 16384), t0).0,
            t0 + Duration(copy + 20_000)
        );
        assert_eq!(d.take_submitter_ns(), copy);
        assert_eq!(d.take_submitter_ns(), 0, "taken once");
        assert_eq!(
            d.service(&io_of(1, 1, 16384), t0).0,
            t0 + Duration(copy + 20_000),
            "not behind the first copy"
        );
        let mut plain = NullBlk::new(20_000, 1, 64, None, 1 << 40, 1);
        assert_eq!(plain.service(&io(16384), t0).0, t0 + Duration(20_000));
        assert_eq!(plain.take_submitter_ns(), 0);
    }

    /// Two CPUs, 4 MB/s (20 × 4 KiB per tick): submitter 0 runs on CPU 0,
    /// submitter 1 on CPU 1 (placement's first rule). The request that
    /// finds the budget spent stops the queue and waits on
    /// `hctx->dispatch`; those after it go to their CPU's software queue.
    /// The restart serves `hctx->dispatch` first, then (the dispatch list
    /// was not empty: `need_dispatch`) one request per CPU in turn from
    /// `hctx->dispatch_from` (`blk_mq_do_dispatch_ctx`), not in arrival
    /// order.
    #[test]
    fn a_restarted_queue_takes_one_request_per_cpu_in_turn() {
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40, 1).with_cpus(2, 1);
        d.phase_ns = 0;
        let t0 = Instant(1_000);
        // 21 go out in the tick (the first one is free); all from CPU 0
        for id in 0..21 {
            assert_ne!(d.service(&io_of(id, 0, 4096), t0).0, HELD, "io {id}");
        }
        // submitter 1 appears (CPU 1): refused, the queue stops
        assert_eq!(d.service(&io_of(21, 1, 4096), t0).0, HELD);
        // then 4 more from CPU 0, then 4 from CPU 1, all inside the
        // burst (no wake, no move)
        for k in 0..4u64 {
            assert_eq!(
                d.service(&io_of(30 + k, 0, 4096), Instant(2_000 + k)).0,
                HELD
            );
        }
        for k in 0..4u64 {
            assert_eq!(
                d.service(&io_of(40 + k, 1, 4096), Instant(3_000 + k)).0,
                HELD
            );
        }
        assert_eq!(d.next_release(), Some(Instant(TICK_NS)));
        let mut out = Vec::new();
        d.release(Instant(TICK_NS), &mut out);
        let order: Vec<u64> = out.iter().map(|r| r.id.0).collect();
        // hctx->dispatch (21), then round robin from hctx->dispatch_from
        // (CPU 0 at first): not the arrival order 30..33, 40..43
        assert_eq!(order, [21, 30, 40, 31, 41, 32, 42, 33, 43]);
        assert!(out.iter().all(|r| r.at == Instant(TICK_NS + 2_000)));
    }

    /// `blk_mq_start_stopped_hw_queues(q, true)`: the tick refills the
    /// budget and lets the queue run, the staged requests wait for the
    /// worker (the restart delay). A request that arrives meanwhile finds
    /// the hardware queue busy (`hctx->dispatch_busy`, set by the refusal
    /// that stopped it): `blk_mq_submit_bio` inserts it in its CPU's
    /// software queue instead of issuing it, and the worker takes it after
    /// the refused request, in order.
    #[test]
    fn a_late_worker_dispatches_what_came_meanwhile_in_order() {
        let ms = 1_000_000;
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40, 1).with_restart_delay(
            10 * ms,
            10 * ms,
            10 * ms,
            3,
        );
        d.phase_ns = 0;
        for id in 0..21 {
            assert_ne!(d.service(&io_of(id, 0, 4096), Instant(1_000)).0, HELD);
        }
        // budget spent: these wait (one CPU: one software queue)
        for id in 21..25 {
            assert_eq!(d.service(&io_of(id, 0, 4096), Instant(2_000)).0, HELD);
        }
        // the tick refills and restarts; the worker comes later
        assert_eq!(d.next_release(), Some(Instant(TICK_NS)));
        let mut out = Vec::new();
        d.release(Instant(TICK_NS), &mut out);
        assert!(out.is_empty(), "the worker has not run");
        let worker = d.next_release().expect("the worker's dispatch");
        assert!(worker > Instant(TICK_NS + 1) && worker <= Instant(TICK_NS + 10 * ms));
        // a request in between waits for the worker too
        assert_eq!(d.service(&io_of(99, 0, 4096), Instant(TICK_NS + 1)).0, HELD);
        d.release(worker, &mut out);
        let ids: Vec<u64> = out.iter().map(|r| r.id.0).collect();
        assert_eq!(ids, [21, 22, 23, 24, 99]);
        assert!(out.iter().all(|r| r.at == worker + Duration(2_000)));
    }

    /// With one CPU there is no staging: the FIFO of ticks serves
    /// requests in arrival order.
    #[test]
    fn one_cpu_keeps_arrival_order() {
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40, 1).with_cpus(1, 1);
        d.phase_ns = 0;
        let mut last = Instant::ZERO;
        for id in 0..60 {
            let (t, _) = d.service(&io_of(id, (id % 2) as u32, 4096), Instant(1_000));
            assert_ne!(t, HELD);
            assert!(t >= last, "io {id}");
            last = t;
        }
    }

    #[test]
    fn mbps_cap_is_per_20ms_tick() {
        // 4 MB/s: 20971*4 = 83884 bytes per tick = 20 x 4 KiB
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40, 1);
        d.phase_ns = 0;
        // the first request restarts the stopped timer and is free: 21
        // go in the first tick
        let mut last = Instant::ZERO;
        for i in 0..42 {
            let (t, e) = d.service(&io(4096), Instant::ZERO);
            assert_eq!(e, 0);
            let expect_tick = if i == 0 { 0 } else { (i - 1) / 20 };
            assert_eq!(t, Instant(expect_tick * TICK_NS + 2_000), "io {i}");
            last = t;
        }
        assert_eq!(last, Instant(2 * TICK_NS + 2_000));
    }

    #[test]
    fn ticks_follow_the_seeded_grid_and_stop_when_idle() {
        let mut d = NullBlk::new(0, 1, 64, Some(4), 1 << 40, 7);
        d.phase_ns = 5_000_000;
        // 21 requests at t = 0: the 22nd waits for the next grid tick, at
        // 20 ms - 5 ms = 15 ms of run time
        for _ in 0..21 {
            assert_eq!(d.service(&io(4096), Instant::ZERO).0, Instant::ZERO);
        }
        assert_eq!(d.service(&io(4096), Instant::ZERO).0, Instant::from_ms(15));
        // idle for two ticks: the timer stopped, the next request is free
        // and the following 20 fit the refilled budget
        let t = Instant::from_ms(100);
        for _ in 0..21 {
            assert_eq!(d.service(&io(4096), t).0, t);
        }
        assert!(d.service(&io(4096), t).0 > t);
    }

    #[test]
    fn beyond_capacity_is_eio() {
        let mut d = NullBlk::new(1_000, 1, 64, None, 8192, 1);
        let mut x = io(4096);
        x.offset = 8192;
        assert_eq!(d.service(&x, Instant::ZERO).1, EIO);
    }
}
