//! The driver loop, written once for every backend.
//!
//! One pass: the work due now (job timers, periodic work, controller
//! timers, the dispatch worker, the page cache, every job that can act),
//! then the earliest deadline, then a wait for the backend and the
//! completions it returns. A lean run (nothing but jobs, controllers and a
//! backend: [`Loop::lean`]) skips the passes a completion would start but
//! that would do nothing ([`Loop::idle_until`]); `RunResult::passes`
//! counts the passes made. The hot path's structs are moved by reference
//! or laid out so that a copy is read back in the pieces it was written
//! in (docs/BENCHMARKS.md, "Idle passes and store forwarding").
//!
//! Here: the run's types, the loop's state and the pass itself (`run`,
//! `run_due`, `next_deadline`, `wait_and_complete`). The loop's state is
//! in parts that own their fields: the sinks (`sinks::Sinks`), the page
//! cache and its writeback (`buffered::Cache`), plugging and merging
//! (`plug::Plugging`), splits (`split::Splits`), flows (`flow::Flows`),
//! exit rules (`exit::Exits`) and the periodic work (`Periodic`, one
//! schedule); passes are bounded at one instant (`Passes::bound`). The loop's methods
//! are in `run/` by what they do: `submit.rs` (an IO into the block
//! layer), `dispatch.rs` (controller timers, the dispatch worker),
//! `step.rs` (stepping a job, giving up the drain), `complete.rs` (a
//! completion to its owner), `sinks.rs` (what the sink gets while the run
//! runs), and `split`, `plug`, `buffered`, `flow`, `start`, `exit`,
//! `medium`, `steady`, `assemble`, `finish` for the rest.

mod plug;
mod split;

use crate::account::{DiskStats, TicksMode};
use crate::backend::{Backend, Completion};
use crate::blk::RequestQueue;
use crate::lathist::LatHists;
use crate::pagecache::{PageCacheConfig, PageCacheReport};
use crate::slab::Slab;
use blkqos_core::controller::StackVerdict;
use blkqos_core::{ControllerStack, Duration, GroupId, Instant, Io, IoFlags, IoId, IoOp};
use blkqos_workload::iolog::LogSample;
use blkqos_workload::job::Reaped;
use blkqos_workload::{Ddir, Job, JobAction, JobFailure, JobIo, JobSpec, JobStats};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// At most this many periodic diskstats snapshots are kept in
/// [`RunResult::diskstats`] (144 bytes each: 14.4 MB; 27.7 hours of the
/// default 1 s interval). Later periodic ones are counted in
/// [`RunResult::diskstats_dropped`]; the end-of-run snapshot is always kept.
pub const MAX_DISKSTATS_SNAPSHOTS: usize = 100_000;

/// How often (run time) [`RunSink::controllers`] is called.
const SINK_EVERY: Duration = Duration(1_000_000_000);

/// Takes a run's records while the run produces them, so that a trace of
/// any length costs constant memory (a buffered file writer, say).
pub trait RunSink {
    /// Does it want [`RunSink::request`] calls? Asked once, at the start.
    fn wants_requests(&self) -> bool {
        true
    }
    /// A request completed; called in completion order.
    fn request(&mut self, r: &RequestRecord);
    /// Called at the first pass of the loop after each second of run time
    /// and once at the end: take what the controllers recorded since the
    /// last call ([`ControllerStack::drain_trace`]).
    fn controllers(&mut self, _stack: &mut ControllerStack) {}
    /// Called with each [`RunSink::controllers`] call: the tracepoint
    /// records of the kernel code the run models beside the controllers
    /// (the page cache's `balance_dirty_pages` and `bdi_dirty_ratelimit`)
    /// since the last call.
    fn kernel_events(&mut self, _recs: &[Box<dyn blkqos_core::controller::TraceRecord>]) {}
    /// The run starts at `at` (before any other call).
    fn started(&mut self, _at: Instant) {}
    /// Called just before each [`RunSink::controllers`] call, before that
    /// loop pass runs the controllers' due timers: the run time now, and
    /// the stack to read ([`ControllerStack::live`]).
    fn tick(&mut self, _now: Instant, _stack: &ControllerStack) {}
    /// Called just before each [`RunSink::tick`]: the device's accounting
    /// (`/proc/diskstats` counters) as a reader sees it at `now`, under the
    /// run's `--iostats` rule. Only asked for when [`RunSink::wants_disk`].
    fn disk(&mut self, _now: Instant, _disk: &DiskStats) {}
    /// Does it want [`RunSink::disk`] calls? Asked at each tick.
    fn wants_disk(&self) -> bool {
        false
    }
    /// Samples of job `job`'s fio logs (`write_*_log`), in the order the
    /// job produced them; called at most once per pass of the loop.
    fn job_log(&mut self, _job: usize, _samples: &[LogSample]) {}
    /// Every [`RunOptions::status_every`] of run time: every job clone's
    /// results so far ([`blkqos_workload::Job::stats_so_far`]) and the
    /// disk's accounting up to `now`, for a report of the run so far
    /// (fio's `--status-interval`).
    fn status(&mut self, _now: Instant, _jobs: &[JobResult], _disk: &DiskStats) {}
    /// Lines of job `job`'s histogram log (`write_hist_log`), whole lines
    /// in the order the job produced them; at most once per pass.
    fn job_hist_log(&mut self, _job: usize, _lines: &str) {}
}

/// In-process collection (tests, short runs): grows by one record per IO.
impl RunSink for Vec<RequestRecord> {
    fn request(&mut self, r: &RequestRecord) {
        self.push(*r);
    }
}

/// A [`RunSink`] shared by the caller, who creates it and finishes it
/// after the run, and the run, which holds it locked while it runs.
pub type SharedSink = Arc<Mutex<dyn RunSink + Send>>;

/// CPU costs and scheduling noise of the issuing program (fio) that show
/// in its latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostModel {
    /// Time one submit call takes (fio `slat` when nothing blocks it).
    pub submit_ns: u64,
    /// A timed sleep (thinktime, rate pacing) wakes up late by a uniform
    /// random delay in `[0, wake_jitter_ns]`: timer slack and scheduling
    /// latency of a real host. 0 = exact wake-ups.
    pub wake_jitter_ns: u64,
    /// IOs a controller releases from its timer are issued by a kernel
    /// worker (blk-throttle's `kthrotld` work item, queued by
    /// `throtl_pending_timer_fn`) that runs this long after the timer,
    /// plus a uniform random `[0, timer_dispatch_jitter_ns]`. Batches keep
    /// their order (one work item). IOs that pass a controller at submit
    /// time are not delayed. 0 = the worker runs at the timer tick.
    pub timer_dispatch_ns: u64,
    /// Upper bound in ns of the uniform random delay added to
    /// `timer_dispatch_ns`. 0 = no jitter.
    pub timer_dispatch_jitter_ns: u64,
    /// Seed of the jitter stream.
    pub seed: u64,
    /// A flusher (or fsync) whose bio is longer than the device's max IO
    /// size cuts each next request this long after the last one passed:
    /// its CPU time per request (bio split, rq-qos, tag), during which
    /// other submitters' requests come in. 0 = back to back.
    pub writeback_piece_ns: u64,
    /// CPUs that run the jobs' submitting processes: with fewer than the
    /// jobs, a job waits for one of them to act and keeps it until it
    /// sleeps ([`cpus`]). 0 = one for every job.
    pub cpus: u32,
}

impl Default for HostModel {
    fn default() -> Self {
        HostModel {
            submit_ns: 1_000,
            wake_jitter_ns: 0,
            timer_dispatch_ns: 0,
            timer_dispatch_jitter_ns: 0,
            seed: 1,
            writeback_piece_ns: 0,
            cpus: 0,
        }
    }
}

/// One job clone to run.
#[derive(Clone, Debug)]
pub struct JobSetup {
    /// The fio job this is a clone of.
    pub spec: JobSpec,
    /// Which clone of the job (0 to `numjobs − 1`); clone 0 of a
    /// `stonewall` job starts a new stonewall group.
    pub clone: u32,
    /// The cgroup every IO of the clone is charged to.
    pub group: GroupId,
    /// Byte offset of the clone's region (its file) on the target; also
    /// the page cache's key for the file.
    pub region_start: u64,
    /// Length of that region in bytes.
    pub region_len: u64,
    /// Seed of the clone's random streams when `randrepeat=0`
    /// ([`Job::new`]).
    pub seed: u64,
    /// Every file of the clone as (start, length) on the target when it
    /// has several (`nrfiles`, `filename=a:b`); empty: the one region.
    pub files: Vec<(u64, u64)>,
}

/// How to run: the host model, stop and abandon flags, accounting, what
/// to record and where to send it. `RunOptions::default()` runs to the end
/// with precise accounting at HZ=1000 and records nothing optional.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// CPU costs and scheduling noise of the program submitting the IO
    /// (fio).
    pub host: HostModel,
    /// Set asynchronously (SIGINT/SIGTERM) to stop issuing and drain.
    pub stop: Option<Arc<AtomicBool>>,
    /// Set asynchronously (a second signal, or SIGTERM) to give up
    /// draining: the run waits only for the IO the backend has (at the
    /// device: a real backend's buffers must outlive it) and drops the IO
    /// still held by controllers, the request queue and the page cache
    /// ([`RunResult::abandoned`]). Data the backend keeps (the real
    /// engine's write-back buffer) is the caller's to write out.
    pub abandon: Option<Arc<AtomicBool>>,
    /// Wake up at least this often to look at `stop` and `abandon`: a
    /// backend whose wait a signal does not cut short (the thread pool's
    /// futex sleep) would otherwise notice one only at its next deadline:
    /// usually within a job's bw/iops sampling period, but a thinktime or
    /// rate sleep with long sampling periods can put it minutes away.
    /// None: wait for the next event (the simulator: its waits take no
    /// wall time).
    pub poll_every: Option<Duration>,
    /// Busy-time accounting generation and the HZ its jiffies use.
    pub ticks_mode: TicksMode,
    /// `CONFIG_HZ`: jiffies per second for jiffy-based accounting (0 is
    /// taken as 1000).
    pub hz: u64,
    /// Where in its jiffy the run starts (ns): jiffy-based accounting
    /// counts jiffies of `now + tick_phase_ns`.
    pub tick_phase_ns: u64,
    /// Take a `/proc/diskstats` snapshot every this often (and at the end).
    pub diskstats_every: Option<Duration>,
    /// Keep every request in [`RunResult::request_trace`] (analysis and
    /// tests; grows by one record per IO). Long runs stream them to a
    /// [`RunOptions::sink`] instead.
    pub trace_requests: bool,
    /// Where records go as the run produces them: every completed request
    /// (if it [wants them](RunSink::wants_requests)) and, once a second, the
    /// controllers' traces.
    pub sink: Option<SharedSink>,
    /// Buffered (`direct=0`) jobs go through a simulated page cache with
    /// writeback (see [`crate::pagecache`]); None = buffered IO is issued
    /// to the device as if direct (the real engine: the kernel's cache).
    pub pagecache: Option<PageCacheConfig>,
    /// Keep latency histograms per device and per group
    /// ([`crate::lathist`]), returned in [`RunResult::lat_hists`].
    pub lat_hist: bool,
    /// Run [`ControllerStack::check`] after every pass (debug builds: every
    /// [`DEBUG_CHECK_EVERY`]th pass; every run: once at its end). A
    /// violation ends the run with [`RunError::Invariant`].
    pub check_invariants: bool,
    /// Call [`RunSink::status`] every this often (run time: simulated on
    /// the simulator, wall time on a real backend); the loop wakes up for
    /// it.
    pub status_every: Option<Duration>,
}

/// Debug builds check the controllers' invariants every this many passes
/// of the driver loop (often enough to catch a broken state near where it
/// broke, rarely enough to keep the test suite's runs fast).
pub const DEBUG_CHECK_EVERY: u64 = 64;

/// The results of one job clone.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// The job the clone ran ([`JobSetup::spec`]).
    pub spec: JobSpec,
    /// The clone index ([`JobSetup::clone`]).
    pub clone: u32,
    /// The cgroup its IO was charged to ([`JobSetup::group`]).
    pub group: GroupId,
    /// fio's per-job statistics: IOs, bytes, latencies, bandwidth per
    /// direction (`struct thread_stat`).
    pub stats: JobStats,
    /// errno that ended the job, 0 if none.
    pub error: i32,
    /// What failed with `error` (file offset, length, direction).
    pub failure: Option<JobFailure>,
    /// Failed IOs and syncs, counted whether or not they ended the job.
    pub failed_ios: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// One result per job clone, in the order of the setups.
    pub jobs: Vec<JobResult>,
    /// The device's `/proc/diskstats` accounting at the end of the run.
    pub disk: DiskStats,
    /// Backend time when the run ended.
    pub ended_at: Instant,
    /// The run was stopped early (signal).
    pub interrupted: bool,
    /// The drain was given up ([`RunOptions::abandon`]).
    pub abandoned: bool,
    /// IOs dropped when the drain was given up: held by controllers or
    /// queued for a request slot (job IO, writeback, flushes), and
    /// buffered writes waiting out a dirty-page pause.
    pub dropped_ios: u64,
    /// Periodic diskstats snapshots: (time, the 17 counters), at most
    /// [`MAX_DISKSTATS_SNAPSHOTS`] of them and the end-of-run one.
    pub diskstats: Vec<(Instant, [u64; 17])>,
    /// Periodic snapshots not kept (beyond [`MAX_DISKSTATS_SNAPSHOTS`]).
    pub diskstats_dropped: u64,
    /// Every completed request in completion order, when asked for
    /// ([`RunOptions::trace_requests`]).
    pub request_trace: Vec<RequestRecord>,
    /// Per-device and per-group latency histograms, when asked for.
    pub lat_hists: Option<LatHists>,
    /// The page cache's writeback series and per task stats.
    pub pagecache: Option<PageCacheReport>,
    /// Passes the driver loop made: its work apart from the IOs. A run
    /// with nothing but jobs, controllers and a backend skips the passes
    /// that would do nothing (see `Loop::idle_until`).
    pub passes: u64,
}

/// One completed request, as the request trace records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// The cgroup the request was charged to.
    pub group: GroupId,
    /// What the request did (read, write, discard, flush...).
    pub op: IoOp,
    /// Entered the block layer (`submit_bio`, before the controllers).
    pub submitted_at: Instant,
    /// Got a request slot and went to the device (`blk_account_io_start`).
    pub started_at: Instant,
    /// The device started it (`blk_mq_start_request`, `block_rq_issue`):
    /// `started_at`, or later for a request the device held
    /// ([`Completion::dispatched`]).
    pub dispatched_at: Instant,
    /// The backend reported it complete (`blk_account_io_done`).
    pub completed_at: Instant,
    /// Bytes the request asked for (`Io::len`).
    pub bytes: u64,
    /// Where on the device it starts, bytes (`Io::offset`).
    pub offset: u64,
}

/// Why a run failed. Both variants are bugs in blkqos, not in the jobs or
/// the device: IO errors are job results ([`JobResult::error`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A job waits for a completion while nothing is in flight: the loop
    /// could never make progress.
    #[error("internal: job `{job}` waits for a completion with nothing in flight at {at}")]
    Stalled {
        /// The waiting job's name.
        job: String,
        /// Run time when the stall was found.
        at: Instant,
    },
    /// A controller's invariant or call protocol broke (a bug).
    #[error("internal: {0}")]
    Invariant(#[from] blkqos_core::controller::Violation),
    /// The loop ran [`MAX_PASSES_PER_INSTANT`] passes without its clock
    /// moving: something acts at the same instant forever (a bug).
    #[error("internal: the driver loop ran {passes} passes at {at} without time moving")]
    Spinning {
        /// Passes at that instant.
        passes: u64,
        /// The instant.
        at: Instant,
    },
}

/// The most passes the driver loop makes at one instant of run time. Every
/// pass either moves the clock or hands something on (a completion, an
/// IO, a timer); a run that needs more at one instant loops forever, and
/// [`run`] ends it with [`RunError::Spinning`].
pub const MAX_PASSES_PER_INSTANT: u64 = 10_000_000;

/// Driver-side state of one job clone.
struct JobSlot {
    job: Job,
    group: GroupId,
    /// Completions delivered but not yet reaped (the libaio/io_uring ring).
    ring: Vec<Reaped>,
    state: SlotState,
    /// The job's file (its region start): the page cache's inode key.
    file_key: u64,
    /// `direct=0`: goes through the page cache when there is one.
    buffered: bool,
    /// `iodepth_batch_submit` > 1 (and not through the page cache): IOs
    /// are queued and committed in submit calls ([`plug`]).
    batch: Option<Box<plug::Batch>>,
    /// `stonewall` / `startdelay`: when the job may start ([`start`]).
    gate: Option<start::Gate>,
    /// `ioengine=null`: IOs complete in the engine, no block IO.
    null: bool,
    /// What the job's IOs become ([`start::EngineIo`]): passthrough
    /// requests, a polled submission queue, sg's write commands.
    engine: start::EngineIo,
    /// `flow=`: the clone's flow group membership ([`start`]).
    flow: Option<flow::FlowSlot>,
    /// `wait_for=`: the clones that must end before this one starts ([`exit`]).
    waits_for: Vec<usize>,
    /// Another job's end stopped this one (`exitall`, [`exit`]).
    terminated: bool,
    /// Its end was seen by [`Loop::check_exits`].
    exit_seen: bool,
    /// `io_submit_mode=offload`: completions are reaped as they arrive.
    offload: bool,
    /// When the job's last page cache copy (and its `balance_dirty_pages`
    /// pause) ends: one thread copies a job's buffered IO, in order
    /// ([`Loop::issue_buffered`]).
    copy_free_at: Instant,
    /// Buffered IOs issued and waiting for the job's copier, with their
    /// issue time.
    copy_queue: std::collections::VecDeque<(JobIo, Instant)>,
    /// The copier is in a buffered write (its end is not known yet).
    copy_writing: bool,
}

impl JobSlot {
    /// The clone's result with statistics `stats`.
    fn result(&self, stats: JobStats) -> JobResult {
        JobResult {
            error: self.job.error(),
            failure: self.job.failure(),
            failed_ios: self.job.failed_ios(),
            clone: self.job.clone_index(),
            spec: self.job.spec().clone(),
            group: self.group,
            stats,
        }
    }
}

/// What a job clone is doing, as the driver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Free to act (or done).
    Runnable,
    /// It said it waits for a completion, and its ring was empty.
    Waiting,
    /// In a timed sleep until this (jittered) time: not stepped before.
    Sleeping(Instant),
    /// A submit call in progress: the IO enters the block layer at `.0`.
    Submitting(Instant, IoId),
    /// Submit call blocked inside a controller (iocost) until released, or
    /// asleep in `blk_mq_get_tag` until the IO (or the piece of it being
    /// cut) gets a request ([`Loop::tag_granted`]).
    Blocked(IoId),
    /// A batched submit call in progress: its IOs enter the block layer
    /// at `.0` ([`plug`]).
    Committing(Instant),
    /// A batched submit call's IOs are in; it returns at `.0` (issuer delay).
    Returning(Instant),
    /// In `end_fsync` since this time: waiting for the file's writeback.
    Fsyncing(Instant),
    /// In `end_fsync` since this time: the flush is in flight.
    Flushing(Instant),
    /// `zonemode=zbd`: a zone reset the job waits for is in flight.
    ZoneResetting,
    /// Not started yet: waiting for its gate ([`JobSlot::gate`]).
    Pending,
    /// Over its share of its flow group (`flow=`): stepped again when the
    /// group's counts change.
    FlowWait,
}

impl JobSlot {
    /// What the job does next by itself: after a stop it drains; a full
    /// queue with nothing to reap waits without asking the job.
    #[inline]
    fn own_action(&mut self, now: Instant, stopping: bool) -> JobAction {
        if stopping {
            self.job.stop();
            self.job.next_action(now)
        } else if self.job.must_wait() {
            JobAction::WaitCompletion
        } else {
            self.job.next_action(now)
        }
    }

    /// A completion of the job's at `at`: into its ring until the job
    /// reaps it, or with `io_submit_mode=offload` reaped now by the IO's
    /// worker (a job waiting for a free io_u goes on).
    #[inline]
    fn deliver(&mut self, r: Reaped, at: Instant) {
        if !self.offload {
            self.ring.push(r);
            return;
        }
        self.deliver_offloaded(r, at);
    }

    /// [`JobSlot::deliver`] with `io_submit_mode=offload`.
    #[cold]
    #[inline(never)]
    fn deliver_offloaded(&mut self, r: Reaped, at: Instant) {
        self.job.reap_offloaded(r, at);
        if matches!(self.state, SlotState::Waiting) {
            self.state = SlotState::Runnable;
        }
    }

    /// When the job wants to be stepped again without an IO event.
    #[inline]
    fn wake(&self) -> Option<Instant> {
        match self.state {
            SlotState::Sleeping(t)
            | SlotState::Submitting(t, _)
            | SlotState::Committing(t)
            | SlotState::Returning(t) => Some(t),
            SlotState::Pending => self.gate.and_then(|g| g.at),
            SlotState::FlowWait => self.job.end_at(),
            _ => None,
        }
    }

    /// Would [`Loop::step_job`] do anything at `now` (when not stopping)?
    ///
    /// A job left waiting for a completion with an empty ring, sleeping or
    /// inside a submit call until later, blocked in a controller, or done
    /// is in a state that only a completion, its wake-up time or a release
    /// can change (job timers cannot): stepping it would be a no-op, so the
    /// loop skips it.
    #[inline]
    fn can_act(&self, now: Instant) -> bool {
        match self.state {
            SlotState::Runnable => !self.job.is_done(),
            SlotState::Waiting => !self.ring.is_empty(),
            SlotState::Sleeping(t)
            | SlotState::Submitting(t, _)
            | SlotState::Committing(t)
            | SlotState::Returning(t) => now >= t,
            SlotState::Blocked(_)
            | SlotState::Fsyncing(_)
            | SlotState::Flushing(_)
            | SlotState::ZoneResetting => false,
            SlotState::Pending | SlotState::FlowWait => true,
        }
    }
}

/// Whose IO a flight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlightKind {
    /// A job's IO (a buffered read miss fills the page cache).
    Job,
    /// Writeback of dirty pages (owned by the page cache, no job).
    Writeback,
    /// The flush that ends a job's fsync.
    Flush,
    /// A zone reset a job issues before its next IO (`zonemode=zbd`).
    ZoneReset,
}

/// An in-flight IO: a job's IO, writeback or a flush, or a piece cut
/// from one (a request of its own, `io.flags` has `FRAGMENT`; see [`split`]).
///
/// `repr(C)`, laid out for the copies the hot path makes: `kind` last (an
/// `Option<Flight>` keeps its tag there; inside the struct, taking a flight
/// out of the slab copied the bytes before it with a `memmove` call per
/// IO), and `jio` and `io` at multiples of 16 bytes (a flight copied in
/// 16-byte pieces is read back in 16-byte pieces at the same offsets: a
/// read across two of the copy's stores cannot be forwarded from them and
/// waits for the stores to land).
#[derive(Clone, Copy)]
#[repr(C)]
struct Flight {
    jio: JobIo,
    io: Io,
    issue_time: Instant,
    alloc_at: Instant,
    /// When it got its request; [`TAG_WAIT`] while it waits for one.
    started_at: Instant,
    job: u32,
    kind: FlightKind,
}

/// [`Flight::started_at`] of an IO waiting in the request queue for a tag
/// (no field of its own: the flight stays small enough to move without a
/// `memcpy` call): [`Loop::start`] hands the tag over, waking whoever waits
/// for it ([`Loop::tag_granted`]).
const TAG_WAIT: Instant = Instant::MAX;

/// When job IO `f`'s submit call returned (fio's `issue_time`; `slat`
/// ends there, `clat` starts). An IO that went to the backend in the pass
/// it was issued (nothing held it: a real backend hands it to the kernel in
/// its next submit call) returns with that call, as fio's
/// `fio_ioring_queued` stamps every IO of one `io_uring_enter` when the
/// call returns. An IO a controller or the request queue held returned to
/// its submitter when it was held: its later trip to the kernel is the
/// block layer's, not the submitter's (blk-throttle's dispatch work).
#[inline]
fn issue_time(f: &Flight, c: &Completion) -> Instant {
    match c.issued {
        Some(t) if f.started_at == f.issue_time => t.clamp(f.issue_time, c.at.max(f.issue_time)),
        _ => f.issue_time,
    }
}

struct Loop<'a, B: Backend> {
    backend: &'a mut B,
    stack: &'a mut ControllerStack,
    jobs: Vec<JobSlot>,
    flights: Slab<Flight>,
    rq: RequestQueue,
    disk: DiskStats,
    host: HostModel,
    ready: Vec<Io>,
    unblocked: Vec<Io>,
    comps: Vec<Completion>,
    /// Timer-released IOs waiting for the dispatch worker, in time order.
    deferred: std::collections::VecDeque<(Instant, Io)>,
    rng: u64,
    /// What the run writes as it goes: the request trace, the caller's
    /// sink, latency histograms, fio's job logs ([`sinks`]).
    sinks: sinks::Sinks<'a>,
    /// The page cache and its writeback ([`buffered`]).
    cache: buffered::Cache,
    /// The device's max IO size in bytes (`Backend::max_io_bytes`).
    max_io: u64,
    /// Split bookkeeping (touched only by IOs that are split).
    splits: split::Splits,
    /// Pieces released from a submitter-blocking stage this timer run:
    /// (piece, its submitter if that waits for it).
    resumed: Vec<(IoId, Option<usize>)>,
    /// Plugging and merging bios into requests ([`plug`]).
    plug: plug::Plugging,
    /// The drain was given up: nothing more goes to the backend.
    abandoned: bool,
    /// `flow_id` groups (fio flow.c).
    flows: flow::Flows,
    /// The exit rules (`exitall`, `exitall_on_error`; [`exit`]).
    exits: exit::Exits,
    /// The medium's contents and each clone's buffer contents, when a job
    /// compares data with it ([`medium`]).
    medium: Option<(medium::Medium, Vec<medium::Contents>)>,
    /// The host's CPUs when there are fewer than jobs ([`cpus`]).
    cpus: Option<cpus::Cpus>,
}

/// Whether job `j` runs on its CPU until the next wait returns: it is
/// inside a submit call (the wait ends at the call's return at the
/// latest, a deadline); otherwise it sleeps (waiting for a completion, a
/// timer, a controller or a tag) or is done.
fn on_cpu(jobs: &[JobSlot], j: u32) -> bool {
    jobs.get(j as usize).is_some_and(|s| {
        matches!(
            s.state,
            SlotState::Submitting(..) | SlotState::Committing(_) | SlotState::Returning(_)
        )
    })
}

/// Run `setups` through `stack` on `backend` until every job is done.
pub fn run<B: Backend>(
    backend: &mut B,
    stack: &mut ControllerStack,
    setups: Vec<JobSetup>,
    opts: &RunOptions,
) -> Result<RunResult, RunError> {
    let t0 = backend.now();
    let mut lp = Loop::new(backend, stack, setups, opts, t0);
    let steady = lp.configure(opts, t0);
    let mut periodic = Periodic::new(opts, t0, steady);
    // none of the periodic work: one test per pass skips all of it (these
    // stay None, and without a sink its ticks do nothing)
    let periodic_work = periodic.any() || lp.sinks.sink.is_some();
    let lean = !periodic_work && lp.lean(opts);
    let mut pass = Passes {
        interrupted: false,
        dropped_ios: None,
        // earliest job timer; job timers only move when the loop steps
        // jobs or runs their timers, so the value from the previous pass
        // holds
        next_job_timer: lp.jobs.iter().filter_map(|s| s.job.next_timer()).min(),
        count: 0,
        instant: t0,
        at_instant: 0,
    };
    loop {
        let now = lp.backend.now();
        pass.bound(now)?;
        let stopping = flag_set(&opts.stop) || flag_set(&opts.abandon);
        pass.interrupted |= stopping;
        if stopping && flag_set(&opts.abandon) {
            pass.dropped_ios = Some(lp.abandon());
            break;
        }
        let stopped_others = if periodic_work {
            lp.run_due(Some(&mut periodic), &mut pass, now, stopping)?
        } else {
            lp.run_due(None, &mut pass, now, stopping)?
        };
        if lp.flights.is_empty()
            && lp.cache.pending.is_empty()
            && lp.cache.flushers.queued() == 0
            && lp.jobs.iter().all(|s| s.job.is_done())
            && !lp.drain_pagecache(now)
        {
            break;
        }
        pass.count += 1;
        if opts.check_invariants
            || (cfg!(debug_assertions) && pass.count.is_multiple_of(DEBUG_CHECK_EVERY))
        {
            lp.stack.check()?;
        }
        let periodic = periodic_work.then_some(&periodic);
        let deadline = lp.next_deadline(periodic, &mut pass, stopped_others, now)?;
        let deadline = poll_by(deadline, now, opts);
        lp.wait_and_complete(deadline, lean.then_some(opts));
    }
    lp.into_result(t0, periodic, pass, opts)
}

/// What a job's state lets [`Loop::step_job`] do next.
enum Resume {
    /// The job waits: the step ends.
    Stop,
    /// The state moved on: look at it again.
    Again,
    /// The job may act: ask it what it does.
    Act,
}

/// What the main loop carries from one pass to the next.
struct Passes {
    /// A stop or abandon flag was seen.
    interrupted: bool,
    /// The run was abandoned with this many IOs in flight.
    dropped_ios: Option<u64>,
    /// The earliest job timer (ramp end, bw/iops samples).
    next_job_timer: Option<Instant>,
    /// Passes so far.
    count: u64,
    /// The instant of the last pass, and how many passes ran at it.
    instant: Instant,
    at_instant: u64,
}

impl Passes {
    /// A pass at `now`: at most [`MAX_PASSES_PER_INSTANT`] at one instant.
    #[inline(always)]
    fn bound(&mut self, now: Instant) -> Result<(), RunError> {
        if now != self.instant {
            self.instant = now;
            self.at_instant = 0;
        }
        self.at_instant += 1;
        if self.at_instant > MAX_PASSES_PER_INSTANT {
            return Err(RunError::Spinning {
                passes: self.at_instant,
                at: now,
            });
        }
        Ok(())
    }
}

impl<B: Backend> Loop<'_, B> {
    /// One pass's work due at `now`: job timers, the periodic work
    /// (`periodic`, when the run has any), controller timers, the dispatch
    /// worker, the page cache, then every job that can act. True when a
    /// job's end (or a steady-state check) stopped others: the next pass
    /// comes at once.
    #[inline(always)]
    fn run_due(
        &mut self,
        mut periodic: Option<&mut Periodic>,
        pass: &mut Passes,
        now: Instant,
        stopping: bool,
    ) -> Result<bool, RunError> {
        if let Some(p) = periodic.as_deref_mut() {
            p.snapshot(&mut self.disk, now);
        }
        // job timers: ramp end, bw/iops samples
        if pass.next_job_timer.is_some_and(|t| t <= now) {
            run_job_timers(&mut self.jobs, now);
        }
        // the live view reads the controllers before this pass's timers
        // release what was due: a limit's queue is seen full, not just
        // emptied at a slice boundary that falls on the second
        let sink_due = periodic.as_deref().is_some_and(|p| now >= p.next_sink);
        if sink_due {
            self.tick_sink(now);
        }
        self.run_controller_timers(now);
        let steady_stopped = match periodic {
            Some(p) => p.after_timers(self, now, sink_due),
            None => false,
        };
        self.run_deferred(now);
        if self.splits.next_paced_due(now) {
            self.resume_paced(now);
        }
        if self.cache.pc.is_some() {
            self.run_pagecache(now);
        }
        if self.cpus.is_some() && !stopping {
            self.step_on_cpus(now)?;
        } else {
            for j in 0..self.jobs.len() {
                let s = &self.jobs[j];
                if stopping || s.can_act(now) || (s.terminated && !s.job.is_done()) {
                    self.step_job(j, now, stopping)?;
                }
            }
        }
        // a job that ended stopped others: step them again at once
        Ok((self.exits.any && self.check_exits()) || steady_stopped)
    }

    /// When the loop must look again: the controllers' next deadline, the
    /// dispatch worker's, the page cache's, the jobs' timers and wake-ups
    /// and the periodic work's (`periodic`); `now` when `stopped_others`.
    /// Nothing to wait for with nothing in flight is a stall.
    #[inline(always)]
    fn next_deadline(
        &mut self,
        periodic: Option<&Periodic>,
        pass: &mut Passes,
        stopped_others: bool,
        now: Instant,
    ) -> Result<Option<Instant>, RunError> {
        let mut deadline = self.stack.next_deadline();
        if let Some(p) = periodic {
            deadline = earliest(deadline, p.next_snap);
        }
        deadline = earliest(deadline, self.deferred.front().map(|d| d.0));
        deadline = earliest(deadline, self.next_paced());
        if self.cpus.as_ref().is_some_and(cpus::Cpus::waiting) {
            // a job waits for the CPU the device's work holds
            deadline = earliest(deadline, self.backend.cpu_busy_until().filter(|&t| t > now));
        }
        if let Some(pc) = &self.cache.pc {
            deadline = earliest(deadline, pc.next_deadline());
            deadline = earliest(deadline, self.cache.pending.iter().map(|p| p.0).min());
        }
        // the earliest job timer and job wake-up (the same as folding
        // `earliest` over them, without an Option per step)
        let (mut timer, mut wake) = (Soonest::NONE, Soonest::NONE);
        for s in &self.jobs {
            if !matches!(s.state, SlotState::Pending) {
                timer.add(s.job.next_timer());
            }
            wake.add(s.wake());
        }
        pass.next_job_timer = timer.get();
        let wake = match &self.cpus {
            Some(c) if c.waiting() => c.soonest_wake(&self.jobs),
            _ => wake.get(),
        };
        deadline = earliest(earliest(deadline, wake), pass.next_job_timer);
        if stopped_others {
            deadline = Some(now);
        }
        let deadline = deadline.map(|d| d.max(now));
        if deadline.is_none() && self.backend.in_flight() == 0 {
            // nothing can make progress: a controller holds IO without a timer
            let job = self
                .jobs
                .iter()
                .find(|s| !s.job.is_done())
                .map(|s| s.job.spec().name.clone())
                .unwrap_or_default();
            return Err(RunError::Stalled { job, at: now });
        }
        Ok(match periodic {
            Some(p) => p.wake_for(deadline, now, &self.jobs),
            None => deadline,
        })
    }

    /// Wait for the backend until `deadline` and complete what it returns
    /// (the jobs' logs are handed over first). In a lean run (`lean` has
    /// its options; see [`Loop::lean`]) completions that leave nothing to
    /// do at their instant do not end the wait: the pass the loop would
    /// make there would change nothing, so the wait goes on to the next
    /// completion or the deadline.
    #[inline(always)]
    fn wait_and_complete(&mut self, mut deadline: Option<Instant>, lean: Option<&RunOptions>) {
        if self.sinks.job_logs {
            self.drain_job_logs();
        }
        loop {
            self.comps.clear();
            let jobs = &self.jobs;
            self.backend
                .wait_running(deadline, &mut self.comps, &|j| on_cpu(jobs, j));
            if self.comps.is_empty() {
                return;
            }
            let comps = std::mem::take(&mut self.comps);
            for c in &comps {
                self.complete(c);
            }
            self.comps = comps;
            let Some(opts) = lean else {
                return;
            };
            // a stop or abandon flag set meanwhile is the next pass's
            if flag_set(&opts.stop) || flag_set(&opts.abandon) {
                return;
            }
            match self.idle_until(deadline) {
                Some(d) => deadline = d,
                None => return,
            }
        }
    }

    /// Can this run skip the passes that would do nothing ([`Loop::idle_until`])?
    /// Only when nothing but the jobs, the controllers and the backend acts
    /// between passes: no periodic work (checked by the caller), no
    /// invariant checks after every pass, no job through the page cache
    /// (its copies, dirty pages and writeback act between passes; without
    /// a buffered job it only counts the device's writes, at their
    /// completions), no exit rules, batched submits, job logs or offloaded
    /// reaps. (The stop and abandon flags are looked at after each
    /// completion.)
    #[inline(never)]
    fn lean(&self, opts: &RunOptions) -> bool {
        !opts.check_invariants
            && self.cpus.is_none()
            && !self.exits.any
            && !self.plug.batched
            && !self.sinks.job_logs
            && !self
                .jobs
                .iter()
                .any(|s| s.offload || (s.buffered && self.cache.pc.is_some()))
    }

    /// After completions at the backend's `now`, before `deadline`: would a
    /// pass at `now` do nothing? Then `Some` of the deadline to wait for
    /// next: `deadline`, brought forward to a controller timer, a dispatch
    /// or a paced split the completions set up. A pass does nothing when no
    /// job can act or was stopped ([`JobSlot::can_act`]), no controller
    /// timer, dispatch or paced split is due, and IO is in flight (the run
    /// cannot have ended). Job timers and wake-ups are in `deadline`
    /// already: a completion does not move them. (A lean run has no
    /// buffered IO: no page cache copies or writeback to wait for.)
    #[inline(always)]
    fn idle_until(&self, deadline: Option<Instant>) -> Option<Option<Instant>> {
        let now = self.backend.now();
        let mut d = earliest(deadline, self.stack.next_deadline());
        d = earliest(d, self.deferred.front().map(|x| x.0));
        d = earliest(d, self.next_paced());
        if let Some(pc) = &self.cache.pc {
            d = earliest(d, pc.next_deadline());
        }
        let idle = d.is_none_or(|d| now < d)
            && !self.flights.is_empty()
            && self.jobs.iter().all(|s| !s.terminated && !s.can_act(now));
        idle.then_some(d)
    }
}

/// The loop's periodic work besides jobs and controllers: diskstats
/// snapshots, the sink's ticks, status reports and steady-state checks.
/// Out of line: most runs have none of it, and the loop tests for that
/// once per pass.
struct Periodic {
    snapshots: Vec<(Instant, [u64; 17])>,
    snapshots_dropped: u64,
    next_sink: Instant,
    next_snap: Option<Instant>,
    snap_every: Option<Duration>,
    next_status: Option<Instant>,
    status_every: Option<Duration>,
    next_steady: Option<Instant>,
    t0: Instant,
}

impl Periodic {
    /// A diskstats snapshot when one is due at `now`.
    #[inline(never)]
    fn snapshot(&mut self, disk: &mut DiskStats, now: Instant) {
        if let (Some(t), Some(every)) = (self.next_snap, self.snap_every) {
            if now >= t {
                if self.snapshots.len() < MAX_DISKSTATS_SNAPSHOTS {
                    let mut d = disk.clone();
                    d.sync(now);
                    self.snapshots.push((now, d.diskstats_fields()));
                } else {
                    self.snapshots_dropped += 1;
                }
                self.next_snap = Some(t + every);
            }
        }
    }

    /// After the pass's controller timers: the sink's records (when its
    /// tick was due, `sink_due`), the status report and the steady-state
    /// check due at `now`. True when a steady-state check stopped a job.
    #[inline(never)]
    fn after_timers<B: Backend>(
        &mut self,
        lp: &mut Loop<'_, B>,
        now: Instant,
        sink_due: bool,
    ) -> bool {
        if sink_due {
            self.next_sink = lp.feed_sink(now);
        }
        if let (Some(t), Some(every)) = (self.next_status, self.status_every) {
            if now >= t {
                lp.drain_job_logs();
                lp.status_sink(now, t, self.t0);
                // fio's helper thread re-arms from now: missed ones are
                // not caught up
                let mut next = t + every;
                while next <= now {
                    next += every;
                }
                self.next_status = Some(next);
            }
        }
        let mut steady_stopped = false;
        if let Some(t) = self.next_steady.filter(|&t| now >= t) {
            steady::check(&mut lp.jobs, now);
            steady_stopped = lp.jobs.iter().any(|s| s.terminated && !s.job.is_done());
            let mut next = t + steady::CHECK_EVERY;
            while next <= now {
                next += steady::CHECK_EVERY;
            }
            self.next_steady = Some(next);
        }
        steady_stopped
    }

    /// The pass's `deadline`, brought forward to the next status report
    /// and, while a job runs, the next steady-state check.
    #[inline(never)]
    fn wake_for(
        &self,
        deadline: Option<Instant>,
        now: Instant,
        jobs: &[JobSlot],
    ) -> Option<Instant> {
        // the loop wakes up for the status report (not a reason to wait:
        // a stall is a stall with or without it)
        let mut deadline = earliest(deadline, self.next_status).map(|d| d.max(now));
        // and for the steady-state checks while a job runs (no more a
        // reason to wait than the status report)
        if jobs.iter().any(|s| !s.job.is_done()) {
            deadline = earliest(deadline, self.next_steady).map(|d| d.max(now));
        }
        deadline
    }
}

mod assemble;
mod buffered;
mod complete;
mod cpus;
mod dispatch;
mod exit;
mod finish;
mod flow;
mod medium;
mod sinks;
mod start;
mod steady;
mod step;
mod submit;
#[cfg(test)]
mod tests;

/// The earliest of some optional times: [`earliest`] folded over them.
#[derive(Clone, Copy)]
struct Soonest {
    at: Instant,
    any: bool,
}

impl Soonest {
    const NONE: Soonest = Soonest {
        at: Instant::MAX,
        any: false,
    };

    #[inline(always)]
    fn add(&mut self, t: Option<Instant>) {
        if let Some(t) = t {
            self.at = self.at.min(t);
            self.any = true;
        }
    }

    #[inline(always)]
    fn get(self) -> Option<Instant> {
        self.any.then_some(self.at)
    }
}

/// Run the job timers due at `now` (ramp end, bw/iops samples).
#[inline(never)]
fn run_job_timers(jobs: &mut [JobSlot], now: Instant) {
    for s in jobs {
        if s.state != SlotState::Pending && s.job.next_timer().is_some_and(|t| t <= now) {
            s.job.on_timer(now);
        }
    }
}

/// `deadline`, brought forward to `now + poll_every` when the run has
/// asynchronous flags to look at.
#[inline]
fn poll_by(deadline: Option<Instant>, now: Instant, opts: &RunOptions) -> Option<Instant> {
    match opts.poll_every {
        Some(p) if opts.stop.is_some() || opts.abandon.is_some() => {
            Some(deadline.map_or(now + p, |d| d.min(now + p)))
        }
        _ => deadline,
    }
}

/// An asynchronous flag that is there and set.
#[inline]
fn flag_set(f: &Option<Arc<AtomicBool>>) -> bool {
    f.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
}

/// The earlier of two optional times.
#[inline]
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    // a missing time counts as the end of time (branch-free)
    a.or(b)
        .map(|_| a.unwrap_or(Instant::MAX).min(b.unwrap_or(Instant::MAX)))
}

/// xorshift64: the host jitter stream.
fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}
