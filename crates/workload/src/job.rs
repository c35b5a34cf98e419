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
//!
//! The state is here (`Job` and its parts: `Pace` for rate limits and
//! think time, `Mix` for the read/write mix, `LatTarget` for
//! `latency_target`'s probe, `Failures`; files, the random streams,
//! priorities, statistics, logs, verify and zones are parts of their own
//! modules); its methods are in `job/`
//! by what they do: `setup.rs` (construction, seeds, the start),
//! `state.rs` (timers, reports while it runs, accessors), `issue.rs` (the
//! `do_io` steps above and the issue of an IO), `reap.rs` (completions,
//! syncs, the end); files, random maps, distributions, verify and zones
//! have modules of their own.

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
///
/// `repr(C)` with `start_time` between `offset` and `len`: the job writes
/// each field with its own store and the driver builds the block-layer
/// [`blkqos_core::Io`] from it right away, where `offset` and `len` sit
/// side by side; adjacent here, the two were read with one 16-byte load
/// that spans both stores and waits for them to reach the cache (a
/// store-forwarding stall on every IO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct JobIo {
    /// Absolute byte offset in the file/device.
    pub offset: u64,
    /// fio `start_time`: when the IO unit was prepared.
    pub start_time: Instant,
    pub len: u64,
    pub ddir: Ddir,
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

/// A job's pacing: `rate`/`rate_iops` per direction, `rate_min`'s checks,
/// and where the think time stands.
#[derive(Debug)]
struct Pace {
    rate: PerDir<RateDir>,
    /// `rate_min`: completed bytes and time of the last check per direction.
    checked: PerDir<(u64, Option<Instant>)>,
    /// A thinktime sleep ended and no IO was prepared since
    /// ([`JobIo::after_sleep`]).
    slept: bool,
    /// Blocks counted at the last think (`thinktime_blocks`).
    think_blocks: u64,
}

impl Pace {
    fn new(rate: PerDir<RateDir>) -> Self {
        Pace {
            rate,
            checked: PerDir::all((0, None)),
            slept: false,
            think_blocks: 0,
        }
    }
}

/// The read/write mix (`rwmixread`): the direction issued now and how
/// many IOs it has issued since it was picked.
#[derive(Debug)]
struct Mix {
    ddir: Ddir,
    issues: u64,
}

/// `latency_target`: the depth probe, and what it asked for that the loop
/// has not done yet (a quiesce, the final run's reset).
#[derive(Debug)]
struct LatTarget {
    probe: Option<LatProbe>,
    pending: LatStep,
    /// The probe's last window ran (fio `td->done`).
    done: bool,
}

impl Default for LatTarget {
    fn default() -> Self {
        LatTarget {
            probe: None,
            pending: LatStep::Go,
            done: false,
        }
    }
}

/// How the job failed: fio's `td->error`, the failure that set it, and
/// every failed completion and sync (ramp and ignored ones included).
#[derive(Debug, Default)]
struct Failures {
    error: i32,
    first: Option<JobFailure>,
    ios: u64,
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
    /// Rate limits and think time.
    pace: Pace,
    /// The read/write mix's current direction.
    mix: Mix,
    files: Files,
    /// The seed the streams come from when `randrepeat=0`.
    seed: u64,
    /// `flow=`: over its share of the group's IO (set by the driver).
    flow_blocked: bool,
    /// `latency_target`'s depth probe.
    lat: LatTarget,
    /// The job's random streams.
    draws: Draws,
    /// IO priorities (`prio`, `prioclass`, `cmdprio*`).
    prio: PrioPicker,
    /// Statistics (reset at ramp end).
    pub stats: JobStats,
    /// Bytes/IOs completed since the epoch (for bw/iops sampling).
    samples: Samples,
    /// The job's error, its first failure and every failed IO.
    failed: Failures,
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
mod issue;
mod latency;
mod lfsr;
mod map;
mod reap;
mod setup;
mod state;
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
