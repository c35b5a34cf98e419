//! One fio job clone as a sans-IO state machine.
//!
//! The driver asks [`Job::next_action`] what the job does at `now` and
//! reports back submissions ([`Job::submitted`]) and reaped completions
//! ([`Job::reap`]). The job never reads a clock.
//!
//! The loop mirrors fio 3.33's `do_io` (`backend.c`):
//!
//! ```text
//! top:  runtime exceeded / size done?  -> drain, done
//!       pick direction (rwmix, get_rw_ddir), then rate_ddir:
//!           due?           -> go
//!           other dir due? -> switch
//!           else           -> quiesce (wait for ALL in-flight), sleep to the
//!                             earlier schedule point (cut at runtime), go
//!       build the IO (offset, size), stamp start_time, submit
//!       rate schedule: next[d] = issued_bytes[d] / bps[d]   (absolute, µs)
//!       queue full?  -> reap >= 1 completion
//!       thinktime:   completed (or issued) blocks since last pause >=
//!                    thinktime_blocks -> quiesce, sleep thinktime
//! ```
//!
//! Consequences that fio users see and we reproduce: `rate_iops` applies per
//! direction; a rate-limited or thinktime job runs at an effective depth of
//! 1; after falling behind the schedule the job catches up in a burst; the
//! rate/thinktime sleep never counts in slat/clat/lat.

use crate::fio_rand::FioRand;
use crate::iolog::{JobLog, LogKind, LogSample};
use crate::prio::PrioPicker;
use crate::rng::Stream;
use crate::spec::{self, JobSpec, PerDir, RateProcess, RwMode, ThinkBlocksType};
use crate::spec_submit::IoSubmitMode;
use crate::stats::PrioStat;
use crate::stats::{HistMask, JobStats};
use blkqos_core::{Duration, Instant};
use files::{Files, NoOffset};
use latency::{LatProbe, Step as LatStep};
use std::collections::VecDeque;
use verify::VerifyState;

/// Linux `EINVAL`.
const EINVAL: i32 = 22;
/// Linux `ETIMEDOUT`.
const ETIMEDOUT: i32 = 110;

pub use crate::ddir::Ddir;

/// An IO the job wants submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobIo {
    pub ddir: Ddir,
    /// Absolute byte offset in the file/device.
    pub offset: u64,
    pub len: u64,
    /// fio `start_time`: when the IO unit was prepared.
    pub start_time: Instant,
    /// A read-back from the verify log (fio `IO_U_F_VER_LIST`).
    pub verify_list: bool,
    /// The first IO after a thinktime sleep (the device model may
    /// complete it later: [`blkqos_core::IoFlags::AFTER_SLEEP`]).
    pub after_sleep: bool,
    /// The IO's priority (fio `io_u->ioprio`; 0: none).
    pub ioprio: u16,
    /// Its index in the direction's per-priority latencies
    /// (`io_u->clat_prio_index`).
    pub prio_index: u8,
}

/// What failed: an IO of a direction, or a sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedOp {
    Read,
    Write,
    Trim,
    /// `fsync=N` / `fdatasync=N` / `end_fsync`.
    Sync,
}

impl From<Ddir> for FailedOp {
    fn from(ddir: Ddir) -> FailedOp {
        match ddir {
            Ddir::Read => FailedOp::Read,
            Ddir::Write => FailedOp::Write,
            Ddir::Trim => FailedOp::Trim,
        }
    }
}

impl FailedOp {
    /// fio's name of the direction (`io_ddir_name`).
    pub fn name(self) -> &'static str {
        match self {
            FailedOp::Read => "read",
            FailedOp::Write => "write",
            FailedOp::Trim => "trim",
            FailedOp::Sync => "sync",
        }
    }
}

/// The failure that ended a job: fio's `io_u_log_error` line (`io_u error
/// on file F: ERR: DIR offset=O, buflen=L`) as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobFailure {
    pub errno: i32,
    pub op: FailedOp,
    /// Absolute byte offset in the target (0 for a sync).
    pub offset: u64,
    /// Bytes the IO asked for (0 for a sync).
    pub len: u64,
}

/// What the job does next.
///
/// `repr(u8)`: a tag of its own before the IO (in a niche of the IO's
/// fields, copies of an action were cut around it into pieces that later
/// reads straddle, each such read waiting for the stores to land).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum JobAction {
    /// Submit this IO now. The driver calls [`Job::submitted`] when the
    /// submit call returns.
    Issue(JobIo),
    /// Blocked until at least one in-flight IO can be reaped.
    WaitCompletion,
    /// Sleeping until this time.
    SleepUntil(Instant),
    /// `end_fsync`: everything issued has completed; sync the file now and
    /// call [`Job::fsync_done`] when the sync returns.
    Fsync,
    /// `flow=`: over its share of the flow group's IO; the driver steps
    /// the job again when the group's counts change (fio
    /// `flow_threshold_exceeded` without `flow_sleep`: the job retries).
    WaitFlow,
    /// `zonemode=zbd`: reset the zone at `offset` (`len` bytes) on the
    /// device (fio `zbd_reset_zone`: a synchronous `BLKRESETZONE`) and
    /// call [`Job::zone_reset_done`] when it returns.
    ZoneReset { offset: u64, len: u64 },
    /// `zonemode=zbd`: another clone holds the zone the next IO needs
    /// (fio blocks on the zone's lock); step the job again when IO
    /// completes.
    WaitZone,
    /// Finished: nothing in flight, nothing more to issue.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Top of fio's loop.
    Top,
    /// Waiting for the submit call of the last IO to return.
    Submitting,
    /// Queue full: waiting to reap at least one completion.
    Reap {
        reaped_at_start: u64,
    },
    /// After submit/reap: thinktime check.
    Think,
    /// Waiting for every in-flight IO, then sleep.
    Quiesce {
        until: Instant,
        after: After,
    },
    Sleep {
        until: Instant,
        after: After,
    },
    /// Stopping: wait for in-flight IO.
    Drain,
    /// `end_fsync` in progress.
    Fsync,
    /// `zonemode=zbd`: zone resets before the next IO; `sent`: one is on
    /// the device.
    ZoneReset {
        sent: bool,
    },
    /// `verify`: the pass's writes (or its read-back) are issued; wait
    /// for everything in flight, then start the read-back (or the next
    /// pass).
    PassEnd,
    /// `verify`: the sync before the read-back is running (fio
    /// `do_verify`: `fio_io_sync`).
    VerifySync,
    /// `fsync=N` / `fdatasync=N`: a sync issued at `started` is running.
    Sync {
        started: Instant,
    },
    Done,
}

/// One step of [`Job::next_action`]'s loop over the phases.
enum Step {
    /// The job does this: the call returns it.
    Act(JobAction),
    /// The phase moved on: look at it again.
    Again,
    /// Issue an IO in this direction.
    Issue(Ddir),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    /// A rate sleep: afterwards issue in this direction without re-checking.
    IssueDir(Ddir),
    /// A thinktime sleep: afterwards go to the top of the loop.
    Top { slept_from: Instant, ddir: Ddir },
    /// A `flow_sleep`: afterwards go to the top of the loop.
    Retry,
}

/// The unit random offsets are aligned to: fio's `ba` (default: the
/// smallest block size of the directions the job does).
fn offset_unit(spec: &JobSpec) -> u64 {
    let min_bs_all = Ddir::ALL
        .into_iter()
        .filter(|&d| dir_used(spec.rw, d))
        .map(|d| spec.min_bs(d))
        .min()
        .unwrap_or(4096)
        .max(1);
    Ddir::ALL
        .into_iter()
        .filter(|&d| dir_used(spec.rw, d))
        .filter_map(|d| spec.blockalign.get(d))
        .min()
        .unwrap_or(min_bs_all)
        .max(1)
}

/// The verify log of a job that writes and verifies (`per_loop_bytes`:
/// what one loop writes), else None.
fn verify_state(spec: &JobSpec, per_loop_bytes: u64) -> Option<Box<VerifyState>> {
    (spec.verify.logs_writes() && spec.rw.has_write()).then(|| {
        // fio `file_randommap`: only random jobs without norandommap
        // have a random map; the others sort the log by offset
        let sorted = !spec.rw.is_random() || spec.norandommap;
        Box::new(VerifyState::new(
            sorted,
            spec.verify.backlog,
            spec.verify.backlog_batch,
            per_loop_bytes,
        ))
    })
}

/// A new job's statistics, with the steady-state tracker when it has a
/// rule (the driver hands the samples of a reporting group to its last
/// job: [`SteadyState::has_data`](crate::steadystate::SteadyState)).
fn job_stats(spec: &JobSpec) -> JobStats {
    let mut stats = fresh_stats(spec);
    stats.steadystate = spec
        .steadystate
        .enabled()
        .then(|| crate::steadystate::SteadyState::new(spec.steadystate, true));
    stats
}

/// The job's random streams, seeded as fio seeds them.
#[derive(Debug)]
struct Draws {
    /// Offsets (fio's `random_state` per file, through [`Files`]).
    offset: Stream,
    /// fio's `rwmix_state` (always 32-bit).
    mix: FioRand,
    /// fio's `bsrange_state[ddir]`: one block-size draw per IO.
    bs: PerDir<FioRand>,
    /// The last block-size draw and the generator's maximum.
    bs_draw: (u64, u64),
    /// A direction's draw made for an IO whose file was done before it:
    /// fio draws the length after the offset, so the next IO of that
    /// direction takes it.
    bs_pending: PerDir<Option<(u64, u64)>>,
    /// Poisson rate waits (`rate_process=poisson`).
    poisson: PerDir<Stream>,
}

impl Draws {
    /// The streams of clone `clone` from seed `base`; the mix and block
    /// size generators are seeded later, for the job's thread number
    /// ([`Job::set_thread_number`]).
    fn new(base: u64, clone: u32) -> Self {
        Draws {
            offset: Stream::new(base, clone, 1),
            mix: FioRand::new(0, false),
            bs_draw: (0, 0),
            bs_pending: PerDir::all(None),
            bs: PerDir {
                read: FioRand::new(0, false),
                write: FioRand::new(0, false),
                trim: FioRand::new(0, false),
            },
            poisson: PerDir {
                read: Stream::new(base, clone, 4),
                write: Stream::new(base, clone, 5),
                trim: Stream::new(base, clone, 6),
            },
        }
    }
}

/// The bw/iops sampling windows (fio's helper thread `__add_samples`):
/// bytes and IOs completed since the epoch, what the last samples saw,
/// and when the next windows end.
#[derive(Debug)]
struct Samples {
    bytes: PerDir<u64>,
    ios: PerDir<u64>,
    sampled_bytes: PerDir<u64>,
    sampled_ios: PerDir<u64>,
    next_bw: Instant,
    next_iops: Instant,
}

impl Samples {
    /// No window running (before the epoch).
    const IDLE: Samples = Samples {
        bytes: PerDir::all(0),
        ios: PerDir::all(0),
        sampled_bytes: PerDir::all(0),
        sampled_ios: PerDir::all(0),
        next_bw: Instant::MAX,
        next_iops: Instant::MAX,
    };

    /// Windows of `bw_avg` and `iops_avg` starting at `now`, empty.
    fn from(now: Instant, bw_avg: Duration, iops_avg: Duration) -> Self {
        Samples {
            next_bw: now + bw_avg,
            next_iops: now + iops_avg,
            ..Samples::IDLE
        }
    }
}

/// Per-direction rate state (fio `rate_bps`, `rate_io_issue_bytes`,
/// `rate_next_io_time`, `last_usec`).
#[derive(Clone, Copy, Debug, Default)]
struct RateDir {
    bps: u64,
    issued_bytes: u64,
    next_us: u64,
    last_us: u64,
}

/// One job clone.
#[derive(Debug)]
pub struct Job {
    spec: JobSpec,
    clone: u32,
    /// Bytes to issue before stopping (non time_based): `io_size` (else
    /// the files' bytes) times `loops`.
    io_limit: u64,
    /// `number_ios` × `loops` (0 = no limit).
    ios_limit: u64,
    iodepth: u32,
    /// IOs per submit call ([`JobSpec::submit_batch`]); > 1: the driver
    /// commits them and reports each call with [`Job::count_submit_call`].
    submit_batch: u32,
    phase: Phase,
    /// The run's epoch for this job (reset at ramp end).
    epoch: Instant,
    started: Instant,
    ramp_end: Option<Instant>,
    end_at: Option<Instant>,
    in_flight: u32,
    issued_bytes_total: u64,
    io_issues: PerDir<u64>,
    io_blocks: PerDir<u64>,
    /// Bytes completed per direction, ramp included (fio `io_bytes`,
    /// zeroed at the ramp's end): what steady-state detection reads.
    io_bytes: PerDir<u64>,
    /// The last thing issued was a write (fio `last_ddir_issued ==
    /// DDIR_WRITE`): only then can a sync be due.
    last_issued_write: bool,
    /// Every completion reaped so far, errors included (never reset).
    reaped: u64,
    /// Completions delivered by the driver but not reaped yet: the
    /// libaio event ring / io_uring CQ that fio's getevents calls read.
    ring: VecDeque<Reaped>,
    /// A thinktime sleep ended and no IO was prepared since
    /// ([`JobIo::after_sleep`]).
    slept: bool,
    last_think_blocks: u64,
    rwmix_ddir: Ddir,
    rwmix_issues: u64,
    rate: PerDir<RateDir>,
    files: Files,
    /// The seed the streams come from when `randrepeat=0`.
    seed: u64,
    /// `flow=`: over its share of the group's IO (set by the driver).
    flow_blocked: bool,
    /// `latency_target`: the depth probe, and what it asked for that the
    /// loop has not done yet (a quiesce, the final run's reset).
    lat_probe: Option<LatProbe>,
    lat_pending: LatStep,
    /// The probe's last window ran (fio `td->done`).
    lat_done: bool,
    /// `rate_min`: completed bytes and time of the last check per direction.
    rate_check: PerDir<(u64, Option<Instant>)>,
    /// The job's random streams.
    draws: Draws,
    /// IO priorities (`prio`, `prioclass`, `cmdprio*`).
    prio: PrioPicker,
    /// Statistics (reset at ramp end).
    pub stats: JobStats,
    /// Bytes/IOs completed since the epoch (for bw/iops sampling).
    samples: Samples,
    error: i32,
    /// The failure that set `error`.
    failure: Option<JobFailure>,
    /// Every failed completion and sync, ramp and ignored ones included.
    failed_ios: u64,
    finished_at: Option<Instant>,
    /// fio's sample logs (`write_*_log`), if the job writes any.
    log: Option<Box<JobLog>>,
    /// `verify` with `do_verify`: the written blocks to read back.
    verify: Option<Box<VerifyState>>,
    /// `zonemode=zbd`: the clone's side of the shared zones.
    zbd: Option<Box<zoned::ZbdJob>>,
    /// Nothing between two IOs but the end checks: no thinktime, latency
    /// probe, verify, `fsync=`/`fdatasync=`, `rate_min`, rate limit or
    /// read/write mix (all fixed when the job is made). [`Job::next_action`]
    /// then goes from a reap to the next issue without the steps that
    /// would do nothing.
    plain: bool,
    /// [`Job::iodepth_low`] (fixed when the job is made).
    reap_to: u32,
    /// [`Job::no_slat`] (fixed when the job is made).
    slat_none: bool,
    /// A completion only updates the statistics: no zbd, verify, latency
    /// probe, `gtod_reduce`, per-priority latencies, logs or
    /// `disable_*lat` (fixed when the job is made; [`Job::reap_one`]).
    plain_reap: bool,
}

/// Outcome of one reaped IO, as the driver reports it.
#[derive(Clone, Copy, Debug)]
pub struct Reaped {
    pub io: JobIo,
    /// When the submit call returned (fio `issue_time`).
    pub issue_time: Instant,
    /// 0 on success, else a positive errno.
    pub error: i32,
    /// Bytes actually transferred.
    pub bytes_done: u64,
}

/// A job's statistics before its first IO: one per-priority entry for
/// each priority a direction's IOs can have, where the job gives some of
/// them priorities of their own and does IO in that direction (fio
/// `fio_cmdprio_gen_perc`, `fio_cmdprio_parse_and_gen_bssplit`).
fn fresh_stats(spec: &JobSpec) -> JobStats {
    let mut stats = JobStats {
        members: 1,
        ..JobStats::default()
    };
    for (ddir, on) in [
        (Ddir::Read, spec.rw.has_read()),
        (Ddir::Write, spec.rw.has_write()),
    ] {
        if on {
            stats.dirs[ddir].prios = spec
                .prio
                .clat_prios(ddir)
                .into_iter()
                .map(PrioStat::new)
                .collect();
        }
    }
    stats
}

impl Job {
    /// A job clone over the region `[region_start, region_start + region_len)`.
    /// `seed` feeds every random stream when `randrepeat=0`.
    pub fn new(
        spec: JobSpec,
        clone: u32,
        region_start: u64,
        region_len: u64,
        seed: u64,
        now: Instant,
    ) -> Self {
        Self::with_files(spec, clone, &[(region_start, region_len)], seed, now)
    }

    /// A job clone over several files, each `(start, length)` on the
    /// target (`nrfiles`, `filename=a:b`, `directory`).
    pub fn with_files(
        spec: JobSpec,
        clone: u32,
        extents: &[(u64, u64)],
        seed: u64,
        now: Instant,
    ) -> Self {
        let base = if spec.randrepeat { spec.randseed } else { seed };
        let files = Files::new(&spec, extents, offset_unit(&spec));
        let zbd = zoned::ZbdJob::new(&spec, extents).map(Box::new);
        let loops = u64::from(spec.loops.max(1));
        let io_limit = spec.io_size.unwrap_or_else(|| files.total_len()) * loops;
        let ios_limit = spec.number_ios * loops;
        let mut rate = PerDir::all(RateDir::default());
        for (d, r) in rate.iter_mut() {
            r.bps = spec.rate_bytes_per_sec(d).unwrap_or(0);
        }
        let ramp_end = (spec.ramp_time > Duration::ZERO).then(|| now + spec.ramp_time);
        let epoch = now;
        let first_dir = if spec.rw.has_read() {
            Ddir::Read
        } else if spec.rw.has_write() {
            Ddir::Write
        } else {
            Ddir::Trim
        };
        let iodepth = spec.effective_iodepth();
        let verify = verify_state(&spec, io_limit / loops);
        let mut job = Job {
            verify,
            clone,
            io_limit,
            ios_limit,
            iodepth,
            submit_batch: spec.submit_batch(),
            phase: Phase::Top,
            epoch,
            started: now,
            ramp_end,
            end_at: None,
            in_flight: 0,
            issued_bytes_total: 0,
            io_issues: PerDir::all(0),
            io_blocks: PerDir::all(0),
            io_bytes: PerDir::all(0),
            last_issued_write: false,
            reaped: 0,
            ring: VecDeque::new(),
            slept: false,
            last_think_blocks: 0,
            rwmix_ddir: first_dir,
            rwmix_issues: 0,
            rate,
            files,
            seed,
            flow_blocked: false,
            lat_probe: None,
            lat_pending: LatStep::Go,
            lat_done: false,
            rate_check: PerDir::all((0, None)),
            draws: Draws::new(base, clone),
            prio: PrioPicker::new(&spec.prio, Stream::new(base, clone, 8)),
            stats: job_stats(&spec),
            samples: Samples::IDLE,
            error: 0,
            failure: None,
            failed_ios: 0,
            finished_at: None,
            log: JobLog::new(&spec.logs),
            zbd,
            spec,
            plain: false,
            reap_to: 0,
            slat_none: false,
            plain_reap: false,
        };
        job.set_thread_number(u64::from(clone) + 1);
        job.settle(now);
        job
    }

    /// What follows from the new job's options once it exists: the
    /// latency probe, how far a reap goes, the fast paths it may take
    /// (`plain_reap`, `plain`), and its epoch at `now`.
    fn settle(&mut self, now: Instant) {
        if self.spec.submit.latency.enabled() {
            let cfg = self.spec.submit.latency;
            self.lat_probe = Some(LatProbe::new(cfg, self.iodepth, now, 0));
        }
        self.reap_to = self.iodepth_low();
        self.slat_none = self.no_slat();
        self.plain_reap = self.zbd.is_none()
            && self.verify.is_none()
            && self.lat_probe.is_none()
            && self.log.is_none()
            && !self.spec.gtod_reduce
            && !self.spec.disable_slat
            && !self.spec.disable_clat
            && !self.spec.disable_lat
            && self.stats.dirs.values().all(|d| d.prios.is_empty());
        self.plain = self.lat_probe.is_none()
            && self.verify.is_none()
            && self.spec.thinktime == Duration::ZERO
            && self.spec.fsync_blocks == 0
            && self.spec.fdatasync_blocks == 0
            && self.spec.rate_min == crate::spec::PerDir::all(None)
            && !self.spec.rw.is_mixed()
            && !self.rate_limited();
        self.start_epoch(now);
        if self.ramp_end.is_some() {
            self.end_at = None;
        }
    }

    /// fio's `thread_number` of this clone (1-based over every clone of
    /// the run, in job order; [`Job::new`] assumes the clone index + 1):
    /// with `randrepeat`, `random_generator=lfsr` seeds each file's
    /// register from it as fio does (`setup_random_seeds`). A seed fio
    /// cannot start the register from fails the job with EINVAL (fio:
    /// "failed initializing LFSR").
    pub fn set_thread_number(&mut self, thread_number: u64) {
        if let Some(z) = &mut self.zbd {
            z.set_td(thread_number as u32);
        }
        self.draws.bs = self.bs_generators(thread_number);
        self.draws.mix = FioRand::new(
            self.fio_seed(thread_number, crate::fio_rand::seed_index::MIX),
            false,
        );
        let seed = if self.spec.randrepeat {
            lfsr::block_offset_seed(
                self.spec.randseed,
                self.spec.randrepeat_given,
                thread_number,
            )
        } else {
            Stream::new(self.seed, self.clone, 7).below(u64::MAX)
        };
        let min_bs = Ddir::ALL
            .into_iter()
            .filter(|&d| dir_used(self.spec.rw, d))
            .map(|d| self.spec.min_bs(d))
            .min()
            .unwrap_or(4096);
        self.files.seed_blocks(&self.spec, seed);
        if self.files.seed_lfsr(&self.spec, min_bs, seed).is_err() {
            self.error = EINVAL;
        }
    }

    /// fio's `td->rand_seeds[index]` of job `thread_number`
    /// (`setup_random_seeds`). Without `randrepeat` fio takes the seeds
    /// from the system's random source; here they come from the run's seed.
    fn fio_seed(&self, thread_number: u64, index: u64) -> u64 {
        if !self.spec.randrepeat {
            return Stream::new(self.seed, self.clone, 0x100 + index).below(u64::MAX);
        }
        // the default `randseed` stands for fio's 0x89 here
        // (`spec::FIO_RANDSEED` marks "not given")
        let rand_seed = if self.spec.randseed == crate::spec::FIO_RANDSEED {
            crate::fio_rand::FIO_RAND_SEED_DEFAULT
        } else {
            self.spec.randseed
        };
        crate::fio_rand::purpose_seed(rand_seed, thread_number, index)
    }

    /// fio's `bsrange_state[]` of job `thread_number`
    /// (`td_fill_rand_seeds_internal`): seeded from `rand_seeds[BS_OFF +
    /// ddir]` of a repeatable job, the write seed equal to the read seed
    /// when the job verifies; 64-bit with `random_generator=tausworthe64`.
    fn bs_generators(&self, thread_number: u64) -> PerDir<FioRand> {
        use crate::fio_rand::seed_index;
        let use64 =
            self.spec.submit.random_generator == crate::spec_submit::RandomGenerator::Tausworthe64;
        let seed = |index: u64| self.fio_seed(thread_number, index);
        let read = seed(seed_index::BS_READ);
        let write = if self.spec.verify.enabled() {
            read
        } else {
            seed(seed_index::BS_WRITE)
        };
        PerDir {
            read: FioRand::new(read, use64),
            write: FioRand::new(write, use64),
            trim: FioRand::new(seed(seed_index::BS_TRIM), use64),
        }
    }

    /// The job starts at `now` rather than when it was made (a `stonewall`
    /// or `startdelay` held it back; fio `run_threads` starts it then): its
    /// runtime, ramp and sample clocks begin here.
    pub fn begin(&mut self, now: Instant) {
        self.started = now;
        if let Some(p) = &mut self.lat_probe {
            // fio do_io: lat_target_init when the job starts
            *p = LatProbe::new(self.spec.submit.latency, self.iodepth, now, 0);
        }
        self.ramp_end = (self.spec.ramp_time > Duration::ZERO).then(|| now + self.spec.ramp_time);
        self.start_epoch(now);
        if self.ramp_end.is_some() {
            self.end_at = None;
        }
    }

    /// `startdelay=LO-HI`: this clone's delay, drawn in the range from the
    /// job's seed (fio draws it once per job).
    pub fn start_delay(&self) -> Duration {
        let (lo, hi) = self.spec.start_delay;
        if hi <= lo {
            return lo;
        }
        let base = if self.spec.randrepeat {
            self.spec.randseed
        } else {
            self.seed
        };
        let span = hi.as_ns() - lo.as_ns();
        Duration::from_ns(lo.as_ns() + Stream::new(base, self.clone, 7).below(span + 1))
    }

    fn start_epoch(&mut self, now: Instant) {
        self.epoch = now;
        // fio thread_main / reset_all_stats: `ss.prev_time = epoch`
        if let Some(ss) = &mut self.stats.steadystate {
            ss.prev_time_ns = now.0;
        }
        self.end_at = self.spec.runtime.map(|r| now + r);
        self.samples = Samples::from(now, self.spec.bw_avg_time, self.spec.iops_avg_time);
    }

    /// fio `reset_all_stats` at the end of `ramp_time`: statistics, epoch
    /// and the rate schedule restart.
    ///
    /// fio also zeroes `io_blocks`, `io_issues` and `rwmix_issues`
    /// (`reset_all_stats`, `reset_io_counters`) but not
    /// `last_thinktime_blocks`: after the ramp a thinktime job runs without
    /// pauses until it has again completed as many blocks as it had when it
    /// last paused (fio 3.33: `ramp_time=1 runtime=2 thinktime=10ms`, psync,
    /// reports ~290 IOs, not ~200). We do the same.
    fn end_ramp(&mut self, now: Instant) {
        self.ramp_end = None;
        // the steady-state detector is not a statistic: fio keeps
        // `td->ss` (only its clock restarts with the epoch)
        let steadystate = self.stats.steadystate.take();
        self.stats = fresh_stats(&self.spec);
        self.stats.steadystate = steadystate;
        for (_, r) in self.rate.iter_mut() {
            r.issued_bytes = 0;
            r.next_us = 0;
            r.last_us = 0;
        }
        self.io_blocks = PerDir::all(0);
        self.io_bytes = PerDir::all(0);
        self.io_issues = PerDir::all(0);
        self.rwmix_issues = 0;
        if let Some(v) = &mut self.verify {
            v.phase_start = None;
            v.elapsed_us = PerDir::all(0);
        }
        self.started = now;
        self.start_epoch(now);
        if let Some(p) = &mut self.lat_probe {
            p.reset(now, 0);
        }
    }

    /// The depth the job fills before it reaps (fio `queue_full`): the
    /// iodepth, or the latency probe's depth.
    #[inline]
    fn depth_limit(&self) -> u32 {
        self.lat_probe
            .as_ref()
            .map_or(self.iodepth, LatProbe::depth)
    }

    /// fio `iodepth_low`, fixed up as `fixup_options` does (0 or more
    /// than the iodepth: the iodepth as written, before an io_uring engine
    /// rounds the depth up).
    fn iodepth_low(&self) -> u32 {
        if self.offloaded() {
            // the job itself never reaps with offload
            return self.iodepth;
        }
        let written = self.spec.iodepth.max(1);
        match self.spec.submit.iodepth_low {
            0 => written.min(self.iodepth),
            n => n.min(written).min(self.iodepth),
        }
    }

    fn completed_blocks(&self) -> u64 {
        self.io_blocks.values().sum()
    }

    /// What the probe asked for: a quiesce (or the final run's) for the
    /// loop to do, or the job's end.
    fn lat_step(&mut self, step: LatStep, ddir: Ddir, now: Instant) {
        match step {
            LatStep::Go => {}
            LatStep::Quiesce => {
                if self.lat_pending == LatStep::Go {
                    self.lat_pending = LatStep::Quiesce;
                }
            }
            LatStep::FinalRun => self.lat_pending = LatStep::FinalRun,
            LatStep::Done => self.lat_done = true,
            // fio lat_fatal: the IO fails with ETIMEDOUT
            LatStep::Fatal => self.fail(ETIMEDOUT, ddir, now),
        }
    }

    #[inline]
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }
    pub fn clone_index(&self) -> u32 {
        self.clone
    }
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
    #[inline]
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }
    /// Errno that stopped the job (0 if none).
    pub fn error(&self) -> i32 {
        self.error
    }
    /// What failed with the errno that stopped the job.
    pub fn failure(&self) -> Option<JobFailure> {
        self.failure
    }
    /// Failed IOs and syncs, counted whether or not they stopped the job
    /// (ramp and `ignore_error` ones too).
    pub fn failed_ios(&self) -> u64 {
        self.failed_ios
    }
    /// The job's epoch (its start, or its ramp's end).
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// IOs and bytes completed since the epoch, ramp included (fio
    /// `td->io_blocks`, `td->io_bytes` summed over the directions), for
    /// steady-state detection.
    pub fn completed_ios_bytes(&self) -> (u64, u64) {
        (self.io_blocks.values().sum(), self.io_bytes.values().sum())
    }

    /// When the job finished (after its last IO was reaped).
    pub fn finished_at(&self) -> Option<Instant> {
        self.finished_at
    }
    /// Is the job in its ramp period (stats not kept)?
    #[inline]
    pub fn in_ramp(&self) -> bool {
        self.ramp_end.is_some()
    }
    /// Next time the job needs attention without an IO event: ramp end or a
    /// bw/iops sample point.
    #[inline]
    pub fn next_timer(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Done) {
            return None;
        }
        // no samples are taken during the ramp (the sample clock restarts
        // with the epoch at its end): the ramp end is the only timer
        if let Some(t) = self.ramp_end {
            return Some(t);
        }
        let t = self.samples.next_bw.min(self.samples.next_iops);
        (t != Instant::MAX).then_some(t)
    }

    /// Run the job's timers due at `now`: ramp end, bw/iops samples
    /// (fio's helper thread `__add_samples`: a sample per direction that had
    /// IO in the window, windows advance by exactly the averaging time).
    pub fn on_timer(&mut self, now: Instant) {
        if let Some(t) = self.ramp_end {
            if now >= t {
                self.end_ramp(now);
            }
            return;
        }
        let bw_t = self.spec.bw_avg_time;
        while self.samples.next_bw <= now && self.phase != Phase::Done {
            let spent_ms = bw_t.as_ms().max(1);
            for d in Ddir::ALL {
                let delta = self.samples.bytes[d] - self.samples.sampled_bytes[d];
                if delta == 0 {
                    continue;
                }
                let kib_s = delta * 1000 / spent_ms / 1024;
                if !self.per_io_log(LogKind::Bw) {
                    self.stats.dirs[d].bw.add(kib_s);
                }
                self.log_rate(LogKind::Bw, now, d, kib_s);
                self.samples.sampled_bytes[d] = self.samples.bytes[d];
            }
            self.samples.next_bw += bw_t;
        }
        let iops_t = self.spec.iops_avg_time;
        while self.samples.next_iops <= now && self.phase != Phase::Done {
            let spent_ms = iops_t.as_ms().max(1);
            for d in Ddir::ALL {
                let delta = self.samples.ios[d] - self.samples.sampled_ios[d];
                if delta == 0 {
                    continue;
                }
                let iops = delta * 1000 / spent_ms;
                if !self.per_io_log(LogKind::Iops) {
                    self.stats.dirs[d].iops.add(iops);
                }
                self.log_rate(LogKind::Iops, now, d, iops);
                self.samples.sampled_ios[d] = self.samples.ios[d];
            }
            self.samples.next_iops += iops_t;
        }
    }

    /// The job logs `kind` per IO (`log_avg_msec=0`): fio then feeds that
    /// log's report statistics per IO too (`per_unit_log`).
    fn per_io_log(&self, kind: LogKind) -> bool {
        self.log
            .as_ref()
            .is_some_and(|l| l.per_io() && l.wants(kind))
    }

    /// A windowed bw/iops sample to the averaged log.
    fn log_rate(&mut self, kind: LogKind, now: Instant, d: Ddir, value: u64) {
        let ms = (now - self.epoch).as_ms();
        if let Some(l) = &mut self.log {
            l.rate_sample(kind, ms, d, value);
        }
    }

    /// Samples logged since the last call, for the driver to write out
    /// (empty when the job writes no log).
    pub fn log_pending(&mut self) -> Option<&mut Vec<LogSample>> {
        self.log.as_mut().map(|l| &mut l.pending)
    }

    /// The job's statistics as a report at `now` shows them while it
    /// runs (fio `__show_running_run_stats`: a running job's runtime of
    /// each direction that moved data is the time since its start, its
    /// total run time the time since its epoch); a job that ended, or is
    /// still in its ramp, shows what it has.
    pub fn stats_so_far(&self, now: Instant) -> JobStats {
        let mut st = self.stats.clone();
        if self.finished_at.is_some() || self.in_ramp() || now < self.started {
            return st;
        }
        let runtime_ms = (now - self.started).as_ms();
        for d in st.dirs.values_mut() {
            if d.io_bytes > 0 {
                d.runtime_ms = runtime_ms;
            }
        }
        st.job_runtime_ms = (now - self.epoch).as_ms();
        st.latency_depth = self.depth_limit();
        st
    }

    /// fio's estimate of the seconds the job has left (`eta.c:
    /// thread_eta`): a running job's from the share of its bytes or of its
    /// runtime done, whichever is less; a job in its ramp or not started
    /// its runtime and ramp; an ended one 0 (rate-based guesses for jobs
    /// not started are left out).
    pub fn eta_s(&self, now: Instant, started: bool) -> u64 {
        if self.finished_at.is_some() {
            return 0;
        }
        let timeout_s = self.spec.runtime.map_or(0, |d| d.as_us() / 1_000_000);
        if !started || self.in_ramp() {
            let mut t = self.spec.runtime.map_or(0, |d| d.as_us());
            if t == 0 {
                return 0;
            }
            t = (t + self.spec.ramp_time.as_us()) / 1_000_000;
            if started {
                let ramp_s = (now - self.epoch).as_ms().div_ceil(1000);
                if ramp_s <= t {
                    t -= ramp_s;
                }
            }
            return t;
        }
        let elapsed_s = (now - self.epoch).as_ms().div_ceil(1000);
        let done: u64 = self.stats.dirs.values().map(|d| d.io_bytes).sum();
        let mut perc = if self.io_limit > 0 {
            (done as f64 / self.io_limit as f64).min(1.0)
        } else {
            0.0
        };
        if self.spec.time_based {
            perc = if timeout_s > 0 {
                perc.min(elapsed_s as f64 / timeout_s as f64)
            } else {
                0.0
            };
        }
        let mut eta = if perc == 0.0 {
            timeout_s
        } else {
            ((elapsed_s as f64 * (1.0 / perc)) as u64).saturating_sub(elapsed_s)
        };
        if timeout_s > 0 && eta > timeout_s.saturating_sub(elapsed_s) {
            eta = timeout_s.saturating_sub(elapsed_s);
        }
        eta
    }

    /// Histogram log lines (`write_hist_log`) produced since the last
    /// call, for the driver to write out.
    pub fn hist_pending(&mut self) -> Option<&mut String> {
        self.log
            .as_mut()
            .and_then(|l| l.hist.as_mut())
            .map(|h| &mut h.pending)
    }

    fn us_since_epoch(&self, now: Instant) -> u64 {
        (now - self.epoch).as_us()
    }

    fn runtime_exceeded(&self, now: Instant) -> bool {
        self.ramp_end.is_none() && self.end_at.is_some_and(|e| now >= e)
    }

    fn size_done(&self) -> bool {
        let ios_done = self.ios_limit > 0 && self.io_issues.values().sum::<u64>() >= self.ios_limit;
        ios_done || (!self.spec.time_based && self.issued_bytes_total >= self.io_limit)
    }

    /// fio `get_rw_ddir` (rwmix part): per-issue draw with fio's
    /// `rwmix_issues` bookkeeping.
    fn pick_mix_ddir(&mut self) -> Ddir {
        let rw = self.spec.rw;
        if rw.is_mixed() {
            if self.io_issues[self.rwmix_ddir] >= self.rwmix_issues {
                let v = self.draws.mix.between(1, 100); // fio get_rand_ddir
                let d = if v <= u64::from(self.spec.rwmixread) {
                    Ddir::Read
                } else {
                    Ddir::Write
                };
                if d != self.rwmix_ddir {
                    // fio `set_rwmix_bytes`, called while `rwmix_ddir` is
                    // still the old direction: the issues of the old
                    // direction times the new direction's share
                    let new_pct = if d == Ddir::Read {
                        u64::from(self.spec.rwmixread)
                    } else {
                        100 - u64::from(self.spec.rwmixread)
                    };
                    self.rwmix_issues = self.io_issues[self.rwmix_ddir] * new_pct / 100;
                }
                self.rwmix_ddir = d;
            }
            self.rwmix_ddir
        } else if rw.has_read() {
            Ddir::Read
        } else if rw.has_write() {
            Ddir::Write
        } else {
            Ddir::Trim
        }
    }

    fn rate_limited(&self) -> bool {
        self.rate.values().any(|r| r.bps > 0)
    }

    /// fio `rate_ddir`: `Ok(ddir)` to issue now, `Err((ddir, until))` to
    /// quiesce and sleep first. `None` when the runtime ends before.
    fn rate_ddir(&self, ddir: Ddir, now: Instant) -> Option<Result<Ddir, (Ddir, Instant)>> {
        let now_us = self.us_since_epoch(now);
        if self.rate[ddir].next_us <= now_us {
            return Some(Ok(ddir));
        }
        let odir = ddir.mix_other().filter(|_| self.spec.rw.is_mixed());
        let other_share = if ddir == Ddir::Read {
            100 - self.spec.rwmixread
        } else {
            self.spec.rwmixread
        };
        let (dir, usec) = match odir {
            Some(odir) if other_share > 0 => {
                if self.rate[odir].next_us <= now_us {
                    return Some(Ok(odir));
                }
                if self.rate[ddir].next_us <= self.rate[odir].next_us {
                    (ddir, self.rate[ddir].next_us - now_us)
                } else {
                    (odir, self.rate[odir].next_us - now_us)
                }
            }
            _ => (ddir, self.rate[ddir].next_us - now_us),
        };
        let mut until = self.epoch + Duration::from_us(now_us + usec);
        if let Some(end) = self.end_at.filter(|_| self.ramp_end.is_none()) {
            if now >= end {
                return None;
            }
            until = until.min(end);
        }
        Some(Err((dir, until)))
    }

    /// fio `usec_for_io`: the absolute schedule point of the next IO.
    fn usec_for_io(&mut self, ddir: Ddir) -> u64 {
        let min_bs = self.spec.min_bs(ddir).max(1);
        let r = &mut self.rate[ddir];
        if r.bps == 0 {
            return 0;
        }
        match self.spec.rate_process {
            RateProcess::Poisson => {
                let iops = (r.bps / min_bs).max(1);
                let u = self.draws.poisson[ddir].unit_open0();
                let val = ((1_000_000 / iops) as f64 * -(u.ln())) as u64;
                r.last_us += val;
                r.last_us
            }
            RateProcess::Linear => {
                let secs = r.issued_bytes / r.bps;
                let rem = r.issued_bytes % r.bps;
                rem * 1_000_000 / r.bps + secs * 1_000_000
            }
        }
    }

    /// fio `get_next_buflen`.
    /// fio `get_next_buflen`: one draw of the direction's generator (fio's
    /// `bsrange_state`) per IO unless the direction has one block size
    /// ([`len_of`], before the offset is known: the draw is kept in
    /// `bs_draw` for [`Job::next_offset`] to look at again).
    fn next_len(&mut self, ddir: Ddir) -> u64 {
        let (min_bs, max_bs) = (self.spec.min_bs(ddir), self.spec.max_bs(ddir));
        if min_bs >= max_bs {
            return min_bs;
        }
        let draw = match self.draws.bs_pending[ddir].take() {
            Some(draw) => draw,
            None => {
                let rng = &mut self.draws.bs[ddir];
                (rng.next_u64(), rng.max())
            }
        };
        self.draws.bs_draw = draw;
        len_of(&self.spec, ddir, draw, u64::MAX)
    }

    fn next_offset(&mut self, ddir: Ddir, len: &mut u64) -> Result<u64, NoOffset> {
        let (spec, rng_bs) = (&self.spec, &mut self.draws.bs[ddir]);
        let mut draw = Some(self.draws.bs_draw);
        // first the IO's own draw with the room known, then new draws
        let mut redraw = |room: u64| {
            let (min_bs, max_bs) = (spec.min_bs(ddir), spec.max_bs(ddir));
            if min_bs >= max_bs {
                return min_bs;
            }
            let d = draw
                .take()
                .unwrap_or_else(|| (rng_bs.next_u64(), rng_bs.max()));
            len_of(spec, ddir, d, room)
        };
        self.files
            .next_offset(ddir, len, &mut self.draws.offset, &mut redraw)
    }

    /// What the job does at `now`.
    pub fn next_action(&mut self, now: Instant) -> JobAction {
        // the loop ends in the direction of an IO to issue (one call
        // site: `issue` inlines here)
        let ddir = loop {
            let step = match self.phase {
                Phase::Done => Step::Act(JobAction::Done),
                Phase::Fsync | Phase::Sync { .. } | Phase::VerifySync => {
                    Step::Act(JobAction::Fsync)
                }
                Phase::ZoneReset { sent } => self
                    .zone_reset_step(sent, now)
                    .map_or(Step::Again, Step::Act),
                Phase::PassEnd => self.pass_end_step(now),
                Phase::Submitting => Step::Act(JobAction::WaitCompletion),
                Phase::Drain => self.drain_step(now),
                Phase::Reap { reaped_at_start } => self.reap_step(reaped_at_start, now),
                Phase::Quiesce { until, after } => self.quiesce_step(until, after, now),
                Phase::Sleep { until, after } => self.sleep_step(until, after, now),
                Phase::Think => {
                    self.think_step(now);
                    Step::Again
                }
                Phase::Top if self.plain && !self.flow_blocked => self.plain_top_step(now),
                Phase::Top => self.top_step(now),
            };
            match step {
                Step::Act(a) => return a,
                Step::Again => {}
                Step::Issue(d) => break d,
            }
        };
        self.issue(ddir, now)
    }

    /// `PassEnd`: the pass's last IOs reaped together, then what ends the
    /// pass (another loop, verify, the end).
    #[inline(always)]
    fn pass_end_step(&mut self, now: Instant) -> Step {
        self.reap_drain(now);
        if self.in_flight > 0 {
            return Step::Act(JobAction::WaitCompletion);
        }
        self.end_pass_phase(now).map_or(Step::Again, Step::Act)
    }

    /// `Drain`: the job's last IOs reaped, then `end_fsync` or the end.
    #[inline(always)]
    fn drain_step(&mut self, now: Instant) -> Step {
        self.reap_drain(now);
        if self.in_flight == 0 {
            // fio do_io: end_fsync when the job wrote (should_fsync)
            if self.spec.end_fsync && self.wrote_any() {
                self.phase = Phase::Fsync;
                return Step::Act(JobAction::Fsync);
            }
            self.phase = Phase::Done;
            self.finish(now);
            return Step::Act(JobAction::Done);
        }
        Step::Act(JobAction::WaitCompletion)
    }

    /// `Reap`: fio wait_for_completions: a full queue is reaped until no
    /// more than iodepth_low are in flight.
    #[inline(always)]
    fn reap_step(&mut self, reaped_at_start: u64, now: Instant) -> Step {
        let reaped_enough = self.reaped > reaped_at_start || self.in_flight < self.depth_limit();
        if reaped_enough && self.in_flight <= self.reap_to {
            // a plain job has nothing to think about
            self.phase = if self.plain { Phase::Top } else { Phase::Think };
            return Step::Again;
        }
        if !self.ring.is_empty() {
            // one io_getevents(min=1, max=1) call
            self.reap_n(1, now);
            return Step::Again;
        }
        Step::Act(JobAction::WaitCompletion)
    }

    /// `Quiesce`: fio io_u_quiesce before a sleep until `until`.
    #[inline(always)]
    fn quiesce_step(&mut self, until: Instant, after: After, now: Instant) -> Step {
        if self.offloaded() {
            // fio rate_ddir quiesces only inline; with offload the job's
            // own io_u_quiesce (thinktime, flow) has nothing in flight of
            // its own: the workers hold it
            self.phase = Phase::Sleep { until, after };
            return Step::Again;
        }
        // fio io_u_quiesce: io_u_queued_complete(td, 1) until nothing is
        // in flight
        while !self.ring.is_empty() {
            self.reap_n(1, now);
        }
        if self.in_flight > 0 {
            return Step::Act(JobAction::WaitCompletion);
        }
        self.phase = Phase::Sleep { until, after };
        Step::Again
    }

    /// `Sleep`: until `until`, then what the sleep was for (`after`).
    #[inline(always)]
    fn sleep_step(&mut self, until: Instant, after: After, now: Instant) -> Step {
        if now < until {
            return Step::Act(JobAction::SleepUntil(until));
        }
        match after {
            After::IssueDir(d) => return Step::Issue(d),
            After::Top { slept_from, ddir } => {
                self.credit_thinktime(ddir, now - slept_from);
                self.slept = true;
                self.phase = Phase::Top;
            }
            After::Retry => self.phase = Phase::Top,
        }
        Step::Again
    }

    /// `Think`: the thinktime due after this many blocks (a quiesce and a
    /// sleep), and fio do_io's lat_target_check at the end of each pass.
    #[inline(always)]
    fn think_step(&mut self, now: Instant) {
        self.phase = Phase::Top;
        // fio's do_verify loop has no thinktime
        let verifying = self.verify.as_ref().is_some_and(|v| v.verifying);
        if self.spec.thinktime > Duration::ZERO && !verifying {
            let b = match self.spec.thinktime_blocks_type {
                ThinkBlocksType::Complete => self.io_blocks.values().sum::<u64>(),
                ThinkBlocksType::Issue => self.io_issues.values().sum::<u64>(),
            };
            if b >= self.last_think_blocks + u64::from(self.spec.thinktime_blocks) {
                self.last_think_blocks = b;
                // fio sleeps the whole thinktime even past the end of the
                // runtime (only the rate sleep is cut there); the runtime
                // check comes after it
                let until = now + self.spec.thinktime;
                let ddir = self.rwmix_ddir;
                self.phase = Phase::Quiesce {
                    until,
                    after: After::Top {
                        slept_from: now,
                        ddir,
                    },
                };
            }
        }
        // fio do_io: lat_target_check at the end of each pass
        if !self.in_ramp() {
            let blocks = self.completed_blocks();
            if let Some(p) = &mut self.lat_probe {
                let step = p.check(now, blocks);
                let ddir = self.rwmix_ddir;
                self.lat_step(step, ddir, now);
            }
        }
    }

    /// `Top` for a plain job: what [`Job::top_step`] does without a
    /// latency probe step, verify, sync, rate_min or rate wait.
    #[inline(always)]
    fn plain_top_step(&mut self, now: Instant) -> Step {
        if self.runtime_exceeded(now) || self.size_done() || self.error != 0 || self.lat_done {
            self.phase = Phase::Drain;
            return Step::Again;
        }
        Step::Issue(self.pick_mix_ddir())
    }

    /// `Top`: the top of fio's do_io loop: the latency probe's pending
    /// step, verify or the end of the job, a sync, the flow share,
    /// rate_min, then the direction of the next IO.
    #[inline(always)]
    fn top_step(&mut self, now: Instant) -> Step {
        if self.lat_pending != LatStep::Go {
            // the probe's io_u_quiesce, then (final run) fio's
            // reset_all_stats
            if self.in_flight > 0 && !self.offloaded() {
                self.phase = Phase::Quiesce {
                    until: now,
                    after: After::Retry,
                };
                return Step::Again;
            }
            if self.lat_pending == LatStep::FinalRun {
                self.end_ramp(now);
            }
            self.lat_pending = LatStep::Go;
        }
        if self.verify.is_some() && !self.runtime_exceeded(now) && self.error == 0 && !self.lat_done
        {
            if let Some(a) = self.verify_step(now) {
                return Step::Act(a);
            }
            if self.phase != Phase::Top {
                return Step::Again;
            }
        } else if self.runtime_exceeded(now) || self.size_done() || self.error != 0 || self.lat_done
        {
            self.phase = Phase::Drain;
            return Step::Again;
        }
        if self.sync_due() {
            // fio get_rw_ddir: DDIR_SYNC / DDIR_DATASYNC first
            self.last_issued_write = false;
            self.phase = Phase::Sync { started: now };
            return Step::Act(JobAction::Fsync);
        }
        if self.flow_blocked {
            // fio flow_threshold_exceeded: quiesce and sleep flow_sleep,
            // or retry at once
            let sleep = self.spec.flow.sleep;
            if sleep == Duration::ZERO {
                return Step::Act(JobAction::WaitFlow);
            }
            self.phase = Phase::Quiesce {
                until: now + sleep,
                after: After::Retry,
            };
            return Step::Again;
        }
        if self.rate_min_missed(now) {
            return Step::Again;
        }
        self.rate_step(now)
    }

    /// The direction of the next IO, through the rate limit when the job
    /// has one (fio rate_ddir: issue now, wait, or end).
    #[inline(always)]
    fn rate_step(&mut self, now: Instant) -> Step {
        let ddir = self.pick_mix_ddir();
        if !self.rate_limited() {
            return Step::Issue(ddir);
        }
        match self.rate_ddir(ddir, now) {
            None => {
                self.phase = Phase::Drain;
                Step::Again
            }
            // fio: `td->rwmix_ddir = rate_ddir(td, ddir)`
            Some(Ok(d)) => {
                self.rwmix_ddir = d;
                Step::Issue(d)
            }
            Some(Err((d, until))) => {
                self.rwmix_ddir = d;
                self.phase = Phase::Quiesce {
                    until,
                    after: After::IssueDir(d),
                };
                Step::Again
            }
        }
    }

    /// `flow=`: the driver says whether the job is over its share.
    pub fn set_flow_blocked(&mut self, blocked: bool) {
        self.flow_blocked = blocked;
    }

    /// When the job's runtime ends (None: not time-limited, or in ramp).
    pub fn end_at(&self) -> Option<Instant> {
        self.end_at.filter(|_| self.ramp_end.is_none())
    }

    /// `rate_min=` (fio `__check_min_rate`): after a 2 s settle period,
    /// every `rate_cycle` the bytes completed in a direction since the last
    /// check must reach `rate_min` per second; if not the job fails with
    /// EIO ("rate_min not met"). True when it failed now.
    fn rate_min_missed(&mut self, now: Instant) -> bool {
        if self.in_ramp() || self.spec.rate_min == crate::spec::PerDir::all(None) {
            return false;
        }
        if now - self.started < Duration::from_secs(2) {
            return false;
        }
        for d in Ddir::ALL {
            let Some(min) = self.spec.rate_min.get(d) else {
                continue;
            };
            let bytes = self.stats.dirs[d].io_bytes;
            let (last_bytes, last_at) = self.rate_check[d];
            let Some(at) = last_at else {
                self.rate_check[d] = (bytes, Some(now));
                continue;
            };
            let spent_ms = (now - at).as_ms();
            if spent_ms < self.spec.rate_cycle.as_ms() {
                continue;
            }
            let got = (bytes - last_bytes) * 1000 / spent_ms.max(1);
            if got < min || bytes - last_bytes < min {
                self.fail(crate::spec_ext::EIO, d, now);
                return true;
            }
            self.rate_check[d] = (bytes, Some(now));
        }
        false
    }

    /// The job fails with `errno` outside an IO (fio `td_verror`).
    fn fail(&mut self, errno: i32, ddir: Ddir, _now: Instant) {
        if self.error == 0 {
            self.error = errno;
            self.failure = Some(JobFailure {
                errno,
                op: FailedOp::from(ddir),
                offset: 0,
                len: 0,
            });
        }
        self.phase = Phase::Drain;
    }

    /// `rate_ignore_thinktime=1`: credit the pause to the rate schedule
    /// (fio `handle_thinktime`).
    fn credit_thinktime(&mut self, ddir: Ddir, slept: Duration) {
        if !self.spec.rate_ignore_thinktime {
            return;
        }
        let total_us = slept.as_us();
        let bs = self.spec.min_bs(ddir);
        let r = &mut self.rate[ddir];
        if total_us == 0 || r.bps == 0 {
            return;
        }
        let missed = r.bps * total_us / 1_000_000;
        let usperop = bs * 1_000_000 / r.bps;
        let over = if usperop <= total_us { bs } else { 0 };
        r.issued_bytes += missed.saturating_sub(over);
        r.last_us += total_us;
    }

    #[inline]
    fn issue(&mut self, ddir: Ddir, now: Instant) -> JobAction {
        // after a rate sleep the runtime may have ended meanwhile
        if self.runtime_exceeded(now) {
            self.phase = Phase::Drain;
            return self.next_action(now);
        }
        let ddir = match &self.zbd {
            Some(z) => z.adjust_ddir(ddir),
            None => ddir,
        };
        if let Some(a) = self.zoned_start(now) {
            return a;
        }
        // no cut to the bytes left: fio's last IO may pass `io_size`
        // (`do_io` stops once `bytes_issued` reaches it)
        let mut len = self.next_len(ddir);
        let offset = match self.next_offset(ddir, &mut len) {
            Ok(offset) => offset,
            Err(NoOffset::Again) => {
                // fio `set_io_u_file`: the IO unit is filled again in the
                // next file (or a new pass), its direction drawn again;
                // the length fio had not drawn yet is kept for it
                if self.spec.min_bs(ddir) < self.spec.max_bs(ddir) {
                    self.draws.bs_pending[ddir] = Some(self.draws.bs_draw);
                }
                self.phase = Phase::Top;
                return self.next_action(now);
            }
            Err(NoOffset::JobDone) => {
                // the file ended before the IO (a strided zone at its end,
                // or the map of the last file): fio's fill_io_u fails and
                // the job's IO is done
                self.io_limit = self.issued_bytes_total;
                self.phase = Phase::Drain;
                return self.next_action(now);
            }
        };
        let (ioprio, prio_index) = self.prio.pick(ddir, len);
        // read, and cleared only when set: no store on the usual path
        let after_sleep = self.slept;
        if after_sleep {
            self.slept = false;
        }
        let io = JobIo {
            ddir,
            offset,
            len,
            start_time: now,
            verify_list: false,
            after_sleep,
            ioprio,
            prio_index,
        };
        if self.zbd.is_some() {
            return self.issue_zoned(io, now);
        }
        self.commit(io)
    }

    /// Issue `io` (its offset and length final).
    #[inline(always)]
    fn commit(&mut self, io: JobIo) -> JobAction {
        let JobIo {
            ddir, offset, len, ..
        } = io;
        if let Some(v) = &mut self.verify {
            v.pass_issued += len;
            if ddir == Ddir::Write {
                v.log.log_write(offset, len);
            }
        }
        self.in_flight += 1;
        self.io_issues[ddir] += 1;
        self.last_issued_write = ddir == Ddir::Write;
        self.issued_bytes_total += len;
        self.rate[ddir].issued_bytes += len;
        if !self.in_ramp() {
            self.stats.issued[ddir] += 1;
            // fio io_u_mark_depth counts the submitting thread's depth: an
            // offload worker's is always 1
            let depth = if self.offloaded() { 1 } else { self.in_flight };
            self.stats.depth_level[JobStats::depth_index(depth)] += 1;
            if self.submit_batch == 1 {
                self.stats.submit_batches[JobStats::batch_index(1)] += 1;
            }
        }
        if self.rate_limited() {
            self.rate[ddir].next_us = self.usec_for_io(ddir);
        }
        self.phase = Phase::Submitting;
        JobAction::Issue(io)
    }

    /// Stop issuing (signal): behave as if the runtime ended now.
    pub fn stop(&mut self) {
        if !matches!(
            self.phase,
            Phase::Done
                | Phase::Drain
                | Phase::Submitting
                | Phase::Fsync
                | Phase::Sync { .. }
                | Phase::VerifySync
                | Phase::ZoneReset { .. }
        ) {
            self.phase = Phase::Drain;
        }
        self.end_at = Some(Instant::ZERO);
        self.ramp_end = None;
    }

    /// The run gave up waiting for the job's IO (an abandoned drain): the
    /// job ends at `now` with what it reaped; what is still in flight
    /// never completes for it. Like fio's threads when fio is terminated,
    /// its runtime ends there.
    pub fn abandon(&mut self, now: Instant) {
        if self.phase != Phase::Done {
            self.phase = Phase::Done;
            self.end_at = Some(Instant::ZERO);
            self.finish(now);
        }
    }

    /// Would [`Job::next_action`] just say `WaitCompletion` now, changing
    /// nothing? True for a full queue with nothing left to reap, the state
    /// a QD>1 job is in after nearly every submit: the driver can skip the
    /// call.
    #[inline]
    pub fn must_wait(&self) -> bool {
        match self.phase {
            Phase::Reap { reaped_at_start } => {
                self.reaped == reaped_at_start
                    && self.in_flight >= self.depth_limit()
                    && self.ring.is_empty()
            }
            _ => false,
        }
    }

    /// IOs this job queues before one submit call commits them.
    #[inline]
    pub fn submit_batch(&self) -> u32 {
        self.submit_batch
    }

    /// A submit call committed `n` queued IOs (`io_u_mark_submit`: fio's
    /// "submit" distribution; only when [`Job::submit_batch`] > 1, else
    /// each issue counts as a call of one).
    pub fn count_submit_call(&mut self, n: u32) {
        if !self.in_ramp() {
            self.stats.submit_batches[JobStats::batch_index(n)] += 1;
        }
    }

    /// The submit call of the last issued IO returned at `now`.
    #[inline]
    pub fn submitted(&mut self, _now: Instant) {
        debug_assert_eq!(self.phase, Phase::Submitting);
        self.phase = if self.in_flight >= self.depth_limit() {
            Phase::Reap {
                reaped_at_start: self.reaped,
            }
        } else {
            Phase::Think
        };
    }

    /// Completed IOs arrived in the job's completion ring by `now` (the
    /// driver calls this when the job waits for a completion).
    ///
    /// The job reaps them as fio's getevents calls do: with the default
    /// `iodepth_batch_complete_min=1` (`_max` defaults to the min), a full
    /// queue reaps exactly one completion per call and the rest stay in the
    /// ring until the next reap, where their clat ends; quiesce (rate and
    /// thinktime sleeps) and the end of the job reap everything.
    #[inline]
    pub fn reap(&mut self, batch: &[Reaped], now: Instant) {
        if let Phase::Reap { reaped_at_start } = self.phase {
            if self.ring.is_empty() && self.reaped == reaped_at_start {
                // the common case, a full queue getting its next
                // completion: reap the oldest straight from the batch
                // (exactly what pushing it through the ring would do)
                if let Some((first, rest)) = batch.split_first() {
                    self.count_reap_batch(1);
                    self.reap_one(*first, now);
                    if !rest.is_empty() {
                        self.queue_completions(rest);
                    }
                    return;
                }
            }
        }
        self.reap_queued(batch, now);
    }

    /// [`Job::reap`] through the ring.
    #[inline(never)]
    fn reap_queued(&mut self, batch: &[Reaped], now: Instant) {
        self.queue_completions(batch);
        match self.phase {
            Phase::Reap { reaped_at_start } => {
                if self.reaped == reaped_at_start {
                    self.reap_n(1, now);
                }
            }
            Phase::Quiesce { .. } => {
                while !self.ring.is_empty() {
                    self.reap_n(1, now);
                }
            }
            Phase::Drain | Phase::PassEnd => self.reap_drain(now),
            _ => self.reap_n(self.ring.len(), now),
        }
    }

    /// The end of a pass or of the job: fio's `do_io` (and `do_verify`)
    /// reaps what is in flight with one `io_u_queued_complete(td,
    /// cur_depth)`, a getevents call whose minimum is every IO in flight,
    /// so nothing is reaped until the last one completed and all of them
    /// end their clat then. After an error fio's `cleanup_pending_aio`
    /// first reaps what is there (`io_u_queued_complete(td, 0)`); that is
    /// the one-by-one reap here.
    fn reap_drain(&mut self, now: Instant) {
        if self.error != 0 || self.ring.len() >= self.in_flight as usize {
            self.reap_n(self.ring.len(), now);
        }
    }

    /// `io_submit_mode=offload`: each IO has a worker of its own that
    /// submits it and waits for it (fio `rate-submit.c`).
    #[inline]
    pub fn offloaded(&self) -> bool {
        self.spec.submit.mode == IoSubmitMode::Offload
    }

    /// `io_submit_mode=offload`: the IO's worker reaped it the moment it
    /// completed, at `at` (fio `io_workqueue_fn`: one `io_u_queued_complete`
    /// of one event per worker), so its clat ends there whatever the job
    /// is doing; a job waiting for a free io_u goes on.
    pub fn reap_offloaded(&mut self, r: Reaped, at: Instant) {
        debug_assert!(self.offloaded());
        self.count_reap_batch(1);
        self.reap_one(r, at);
    }

    /// Completions wait in the ring until a getevents call reaps them.
    fn queue_completions(&mut self, batch: &[Reaped]) {
        // one push per completion: batches are short (often empty or one),
        // and `extend`'s generic path costs more than the pushes themselves
        for r in batch {
            self.ring.push_back(*r);
        }
    }

    /// Reap the `n` oldest completions of the ring at `now` as one
    /// getevents batch.
    fn reap_n(&mut self, n: usize, now: Instant) {
        let n = n.min(self.ring.len());
        if n == 0 {
            return;
        }
        self.count_reap_batch(n);
        for _ in 0..n {
            let r = self.ring.pop_front().expect("n <= ring length");
            self.reap_one(r, now);
        }
    }

    /// One getevents call returned `n` completions (fio `io_u_mark_complete`).
    #[inline]
    fn count_reap_batch(&mut self, n: usize) {
        if !self.in_ramp() {
            self.stats.complete_batches[JobStats::batch_index(n as u32)] += 1;
        }
    }

    /// Account one reaped completion at `now`: latencies and samples, or
    /// the error.
    #[inline(never)]
    fn reap_one(&mut self, r: Reaped, now: Instant) {
        if self.plain_reap && r.error == 0 && !self.in_ramp() {
            self.reap_plain(r, now);
            return;
        }
        let in_ramp = self.in_ramp();
        self.in_flight -= 1;
        self.reaped += 1;
        let d = r.io.ddir;
        if let Some(z) = &mut self.zbd {
            z.reaped(&r.io, r.error);
        }
        if let Some(v) = &mut self.verify {
            v.last_done_ddir = d;
            if d == Ddir::Write {
                v.log.write_done(r.io.offset, r.io.len);
            }
        }
        if r.error != 0 {
            self.reap_error(&r, in_ramp);
            return;
        }
        self.io_blocks[d] += 1;
        self.io_bytes[d] += r.bytes_done;
        if in_ramp {
            return;
        }
        if self.spec.gtod_reduce {
            self.reap_untimed(&r);
            return;
        }
        self.reap_timed(r, now);
    }

    /// [`Job::reap_one`] for a job with nothing but counts and latencies
    /// to record (`plain_reap`), for an IO that succeeded after the ramp.
    #[inline(always)]
    fn reap_plain(&mut self, r: Reaped, now: Instant) {
        self.in_flight -= 1;
        self.reaped += 1;
        let d = r.io.ddir;
        self.io_blocks[d] += 1;
        self.io_bytes[d] += r.bytes_done;
        let (slat, clat, lat) = self.latencies(&r, now);
        let taken = [
            slat.map(|s| s.as_ns()),
            Some(clat.as_ns()),
            Some(lat.as_ns()),
        ];
        let hists = self.hist_mask();
        let ds = &mut self.stats.dirs[d];
        ds.record_some(r.bytes_done, taken, hists);
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
        self.stats.lat_buckets.mark(clat.as_ns());
        self.samples.bytes[d] += r.bytes_done;
        self.samples.ios[d] += 1;
    }

    /// A successful IO's latencies after the ramp (fio
    /// account_io_completion): the latency probe, the latency samples the
    /// options keep (disable_slat/clat/lat), per priority, the latency
    /// buckets, the per-IO logs and the bw/iops sample counts.
    #[inline(always)]
    fn reap_timed(&mut self, r: Reaped, now: Instant) {
        let d = r.io.ddir;
        let (slat, clat, lat) = self.latencies(&r, now);
        if d != Ddir::Trim {
            // fio account_io_completion: a read or write over the target
            let blocks = self.completed_blocks();
            if let Some(p) = &mut self.lat_probe {
                let step = p.completed(lat, now, blocks);
                self.lat_step(step, d, now);
            }
        }
        let hists = self.hist_mask();
        // fio account_io_completion: disable_lat, disable_clat; io_u.c:
        // disable_slat
        let sp = &self.spec;
        let taken = [
            slat.filter(|_| !sp.disable_slat).map(|s| s.as_ns()),
            (!sp.disable_clat).then(|| clat.as_ns()),
            (!sp.disable_lat).then(|| lat.as_ns()),
        ];
        let ds = &mut self.stats.dirs[d];
        ds.record_some(r.bytes_done, taken, hists);
        if !ds.prios.is_empty() {
            // fio add_lat_sample / add_clat_sample: total latencies by
            // priority with lat_percentiles, completion latencies without
            let (ns, hist) = if hists.lat {
                (lat.as_ns(), true)
            } else {
                (clat.as_ns(), hists.clat)
            };
            ds.record_prio(r.io.prio_index, ns, hist);
        }
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
        if !self.spec.disable_clat {
            // io_u_mark_latency comes with the clat sample
            self.stats.lat_buckets.mark(clat.as_ns());
        }
        if self.log.is_some() {
            self.log_io(&r, now, slat, clat, lat);
        }
        self.samples.bytes[d] += r.bytes_done;
        self.samples.ios[d] += 1;
    }

    /// An IO reaped at `now`: (slat — None when the engine has none —,
    /// clat, lat).
    #[inline(always)]
    fn latencies(&self, r: &Reaped, now: Instant) -> (Option<Duration>, Duration, Duration) {
        let lat = now - r.io.start_time;
        if self.slat_none {
            (None, lat, lat)
        } else {
            (
                Some(r.issue_time - r.io.start_time),
                now - r.issue_time,
                lat,
            )
        }
    }

    /// Which latencies get percentile histograms (`*_percentiles`).
    #[inline(always)]
    fn hist_mask(&self) -> HistMask {
        HistMask {
            slat: self.spec.slat_percentiles,
            clat: self.spec.clat_percentiles,
            lat: self.spec.lat_percentiles,
        }
    }

    /// `gtod_reduce=1`: fio takes no time stamps, so the IO counts and
    /// bytes are all it records (no slat/clat/lat, no latency buckets, no
    /// bw/iops samples).
    fn reap_untimed(&mut self, r: &Reaped) {
        let ds = &mut self.stats.dirs[r.io.ddir];
        ds.io_bytes += r.bytes_done;
        ds.total_ios += 1;
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
    }

    /// Engines whose IO completes inside the submit call record no slat:
    /// sync engines, and `null` at iodepth 1 (`FIO_Q_COMPLETED`).
    fn no_slat(&self) -> bool {
        let e = self.spec.ioengine;
        e.is_sync() || (e == crate::spec::IoEngine::Null && self.iodepth == 1)
    }

    /// A completed IO to the logs; with per-IO bw/iops logs, the report's
    /// bw/iops statistics take the same per-IO values (fio
    /// `add_bw_sample`, `add_iops_sample`).
    #[cold]
    #[inline(never)]
    fn log_io(
        &mut self,
        r: &Reaped,
        now: Instant,
        slat: Option<Duration>,
        clat: Duration,
        lat: Duration,
    ) {
        let ms = (now - self.epoch).as_ms();
        let d = r.io.ddir;
        let Some(l) = &mut self.log else { return };
        if let Some(h) = &mut l.hist {
            let counted = self.spec.clat_percentiles;
            h.clat(ms, d, r.bytes_done, clat.as_ns(), counted);
        }
        let from = l.pending.len();
        l.io(
            ms,
            d,
            r.bytes_done,
            r.io.offset,
            r.io.ioprio,
            slat.map(|s| s.as_ns()),
            clat.as_ns(),
            lat.as_ns(),
        );
        let ds = &mut self.stats.dirs[d];
        for s in &l.pending[from..] {
            match s.kind {
                LogKind::Bw => ds.bw.add(s.value),
                LogKind::Iops => ds.iops.add(s.value),
                _ => {}
            }
        }
    }

    /// A completion with an error: counted, and it stops the job unless
    /// `continue_on_error` / `ignore_error` make it non-fatal.
    fn reap_error(&mut self, r: &Reaped, in_ramp: bool) {
        let d = r.io.ddir;
        let ignored = self.spec.ignore_error.non_fatal(d == Ddir::Read, r.error);
        if !in_ramp || ignored {
            self.stats.total_err += 1;
            if self.stats.first_error == 0 {
                self.stats.first_error = r.error;
            }
        }
        self.failed_ios += 1;
        if !ignored && self.error == 0 {
            self.error = r.error;
            self.failure = Some(JobFailure {
                errno: r.error,
                op: FailedOp::from(d),
                offset: r.io.offset,
                len: r.io.len,
            });
        }
        if !in_ramp {
            // fio counts every issued IO in total_ios, failed ones too
            self.stats.dirs[d].total_ios += 1;
        }
    }

    /// Did the job issue any write?
    fn wrote_any(&self) -> bool {
        let w = &self.stats.dirs[Ddir::Write];
        w.total_ios > 0 || w.io_bytes > 0
    }

    /// The `end_fsync` started by [`JobAction::Fsync`] returned at `now`:
    /// the job is done (its runtime includes the sync, as fio's does).
    pub fn fsync_done(&mut self, now: Instant) {
        match self.phase {
            Phase::VerifySync => {
                if let Some(v) = &mut self.verify {
                    v.verifying = true;
                    v.drop_cache = true;
                }
                self.phase = Phase::Top;
            }
            Phase::Fsync => {
                self.phase = Phase::Done;
                self.finish(now);
            }
            Phase::Sync { started } => {
                // fio io_completed → account_io_completion →
                // add_sync_clat_sample (issue to completion); the count is
                // total_io_u[DDIR_SYNC]. end_fsync (TD_FSYNCING) is neither.
                if !self.in_ramp() {
                    let ns = (now - started).as_ns();
                    self.stats.sync_ios += 1;
                    self.stats.sync_lat.add(ns);
                    self.stats.sync_hist.record(ns);
                }
                self.phase = Phase::Think;
            }
            _ => {}
        }
    }

    /// The sync ended with `errno` (`EIO` for a failed writeback of the
    /// file, as `fsync(2)` reports it): counted as an error of the write
    /// direction (fio `td_error_type`), which stops the job unless
    /// `continue_on_error` / `ignore_error` make it non-fatal for writes.
    pub fn fsync_failed(&mut self, now: Instant, errno: i32) {
        let ignored = self.spec.ignore_error.non_fatal(false, errno);
        if !self.in_ramp() || ignored {
            self.stats.total_err += 1;
            if self.stats.first_error == 0 {
                self.stats.first_error = errno;
            }
        }
        self.failed_ios += 1;
        if !ignored && self.error == 0 {
            self.error = errno;
            self.failure = Some(JobFailure {
                errno,
                op: FailedOp::Sync,
                offset: 0,
                len: 0,
            });
        }
        match self.phase {
            Phase::Fsync => {
                self.phase = Phase::Done;
                self.finish(now);
            }
            Phase::Sync { .. } => self.phase = Phase::Think,
            // fio do_verify: a failed sync ends the job before the read-back
            Phase::VerifySync => self.phase = Phase::Drain,
            _ => {}
        }
    }

    /// `fsync=N` / `fdatasync=N`: the last IO issued was a write and the
    /// write count is a multiple of N (fio `get_rw_ddir`).
    fn sync_due(&self) -> bool {
        let writes = self.io_issues[Ddir::Write];
        let every = |n: u32| n > 0 && writes.is_multiple_of(u64::from(n));
        self.last_issued_write
            && writes > 0
            && (every(self.spec.fsync_blocks) || every(self.spec.fdatasync_blocks))
    }

    fn finish(&mut self, now: Instant) {
        self.finished_at = Some(now);
        if self.in_ramp() {
            return;
        }
        let ms = (now - self.epoch).as_ms();
        if let Some(l) = &mut self.log {
            l.finish(ms);
        }
        let elapsed_us = (now - self.started).as_us();
        let runtime_ms = elapsed_us.div_ceil(1000);
        let per_dir = self.verify_runtimes_us(now);
        for d in Ddir::ALL {
            if self.stats.dirs[d].io_bytes > 0 {
                self.stats.dirs[d].runtime_ms = match per_dir {
                    Some(us) => us[d].div_ceil(1000),
                    None => runtime_ms,
                };
            }
        }
        self.stats.job_runtime_ms = (now - self.epoch).as_ms();
        self.stats.latency_depth = self.depth_limit();
    }
}

/// fio `get_next_buflen`'s length for the draw `r` (at most `r_max`)
/// with `room` bytes before the file's end: a `bssplit` entry that does
/// not fit is passed over for the next one the draw reaches; then
/// aligned down to the smallest size and capped at the largest. The
/// caller draws again while the length does not fit (fio's `io_u_fits`
/// loop: [`files::Files::next_offset`]).
fn len_of(spec: &JobSpec, ddir: Ddir, (r, r_max): (u64, u64), room: u64) -> u64 {
    let (min_bs, max_bs) = (spec.min_bs(ddir), spec.max_bs(ddir));
    let len = match &spec.bssplit {
        Some(split) => bssplit_len(&split[ddir], (r, r_max), room).unwrap_or(min_bs),
        None => min_bs + (max_bs as f64 * (r as f64 / (r_max as f64 + 1.0))) as u64,
    };
    let aligned = if min_bs.is_power_of_two() {
        len & !(min_bs - 1)
    } else {
        len - len % min_bs
    };
    aligned.min(max_bs)
}

/// A `bssplit` block size for the draw `r` (at most `r_max`): the first
/// entry, smallest share first, whose cumulative share `perc` has
/// `r / perc <= r_max / 100` in integers and that fits in `room` (fio
/// `get_next_buflen`); else the last entry with a share (shares adding
/// to less than 100 leave the rest to it). `None` when no entry has a
/// share.
fn bssplit_len(split: &[spec::BsSplit], (r, r_max): (u64, u64), room: u64) -> Option<u64> {
    let mut perc = 0u64;
    let mut len = None;
    for e in split.iter().filter(|e| e.pct > 0) {
        perc += u64::from(e.pct);
        len = Some(e.bs);
        if r / perc <= r_max / 100 && e.bs <= room {
            break;
        }
    }
    len
}

/// `x / unit` for a block size: a shift when `unit` is a power of two (the
/// usual case), which spares a 64-bit division per IO.
#[inline]
fn div_by_unit(x: u64, unit: u64) -> u64 {
    if unit.is_power_of_two() {
        x >> unit.trailing_zeros()
    } else {
        x / unit
    }
}

fn dir_used(rw: RwMode, d: Ddir) -> bool {
    match d {
        Ddir::Read => rw.has_read(),
        Ddir::Write => rw.has_write(),
        Ddir::Trim => rw.has_trim(),
    }
}

mod dist;
mod files;
mod latency;
mod lfsr;
mod map;
mod strided;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_submit;
mod verify;
mod verify_steps;
#[cfg(test)]
mod verify_tests;
mod zoned;
mod zoned_steps;
