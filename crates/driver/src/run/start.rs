//! Starting job clones: `stonewall` and `startdelay` hold a clone back
//! until its gate opens (fio `run_threads`: a stonewalled job waits until
//! no earlier job runs; a delayed one until `start_delay` has passed since
//! fio started), the `null` engine, whose IOs complete in the engine, and
//! what other engines make of a job's IOs ([`EngineIo`]).

use super::{JobSetup, JobSlot, Loop, SlotState};
use crate::backend::Backend;
use blkqos_core::{Duration, Instant, IoFlags, IoOp};
use blkqos_workload::job::Reaped;
use blkqos_workload::spec_submit::IoSubmitMode;
use blkqos_workload::{Ddir, IoEngine, Job, JobIo, JobSpec};

/// What a clone waits for before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Gate {
    /// Every clone before this index must have ended (`stonewall`).
    pub after: usize,
    /// Not before this time (`startdelay`); cleared once passed.
    pub at: Option<Instant>,
}

/// What a job's engine makes of its IOs on their way to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) struct EngineIo {
    /// `io_uring_cmd`, `sg`: passthrough requests (no bio, so no
    /// blk-throttle, no iocost, no disk statistics, no page cache).
    pub passthrough: bool,
    /// `sqthread_poll=1`: the job's submit is no system call, and a
    /// controller that blocks the submitter blocks the kernel's polling
    /// thread instead of the job.
    pub sqpoll: bool,
    /// `sg_write_mode=verify_bytchk_*`: the job's writes are SCSI VERIFY
    /// commands, which read the medium (fio counts them as writes).
    pub writes_read: bool,
    /// `zonemode=zbd`: a trim resets its zone (fio `zbd_do_io_u_trim`).
    pub trim_resets_zone: bool,
}

impl EngineIo {
    pub fn of(spec: &JobSpec) -> Self {
        EngineIo {
            passthrough: spec.ioengine.is_passthrough(),
            sqpoll: spec.ioengine.is_uring() && spec.engine.sqthread_poll,
            writes_read: spec.ioengine == IoEngine::Sg && spec.engine.sg_write_mode.device_reads(),
            trim_resets_zone: spec.zones.mode == blkqos_workload::spec_zone::ZoneMode::Zbd,
        }
    }

    /// The device operation of an IO in direction `ddir`.
    #[inline]
    pub fn device_op(self, ddir: Ddir) -> IoOp {
        if ddir == Ddir::Write && self.writes_read {
            IoOp::Read
        } else {
            IoOp::from(ddir)
        }
    }

    /// The request flags of an IO with block-layer flags `flags`.
    #[inline]
    pub fn flags(self, flags: IoFlags) -> IoFlags {
        if self.passthrough {
            flags.with(IoFlags::PASSTHROUGH)
        } else {
            flags
        }
    }
}

/// CPU time the null engine spends per IO on the simulator (fio 3.33's
/// null engine measures 20–40 ns of clat+slat per IO on a current x86
/// core): time has to pass for a time-based null job to end.
const NULL_IO_NS: u64 = 40;

/// The driver's slot of clone `j` made from `s` at `t0`; `wall`: the
/// first clone of the last stonewalled job at or before it (every clone
/// before that must end first).
pub(super) fn slot(j: usize, s: JobSetup, t0: Instant, wall: usize) -> JobSlot {
    let stonewall = wall > 0;
    let null = s.spec.ioengine == IoEngine::Null;
    let offload = s.spec.submit.mode == IoSubmitMode::Offload;
    debug_assert!(wall <= j);
    let job = if s.files.is_empty() {
        Job::new(s.spec, s.clone, s.region_start, s.region_len, s.seed, t0)
    } else {
        Job::with_files(s.spec, s.clone, &s.files, s.seed, t0)
    };
    let mut job = job;
    // fio numbers every clone of the run from 1, in job order, as the
    // slots are
    job.set_thread_number(j as u64 + 1);
    let engine = EngineIo::of(job.spec());
    let delay = job.start_delay();
    let gate = (stonewall || delay > Duration::ZERO).then(|| Gate {
        after: wall,
        at: (delay > Duration::ZERO).then(|| t0 + delay),
    });
    JobSlot {
        // SG_IO and NVMe passthrough never touch the page cache
        buffered: !job.spec().direct && !engine.passthrough,
        file_key: s.region_start,
        job,
        group: s.group,
        ring: Vec::with_capacity(64),
        state: if gate.is_some() {
            SlotState::Pending
        } else {
            SlotState::Runnable
        },
        batch: None,
        gate,
        null,
        engine,
        flow: None,
        waits_for: Vec::new(),
        terminated: false,
        exit_seen: false,
        offload,
        copy_free_at: t0,
        copy_queue: std::collections::VecDeque::new(),
        copy_writing: false,
    }
}

impl<B: Backend> Loop<'_, B> {
    /// A pending clone starts at `now` if its gate is open; a stop ends
    /// it unstarted (fio does not start jobs after it is told to stop).
    /// Whether the clone runs now.
    #[inline(never)]
    pub(super) fn try_start(&mut self, j: usize, now: Instant, stopping: bool) -> bool {
        if stopping {
            self.jobs[j].job.abandon(now);
            self.jobs[j].state = SlotState::Runnable;
            // never ran: its end stops no other job (fio runs no
            // thread_main for it)
            self.jobs[j].exit_seen = true;
            return false;
        }
        let Some(mut gate) = self.jobs[j].gate else {
            return true;
        };
        if gate.at.is_some_and(|t| now < t) {
            return false;
        }
        gate.at = None;
        self.jobs[j].gate = Some(gate);
        if !self.jobs[..gate.after].iter().all(|s| s.job.is_done()) || !self.waitees_done(j) {
            return false;
        }
        let slot = &mut self.jobs[j];
        slot.gate = None;
        slot.job.begin(now);
        slot.state = SlotState::Runnable;
        self.join_flow(j);
        true
    }

    /// fio `flow_init_job`: a starting clone with `flow=` joins its group.
    pub(super) fn join_flow(&mut self, j: usize) {
        let f = self.jobs[j].job.spec().flow;
        if let Some(slot) = self.flows.join(f.id, f.weight) {
            self.jobs[j].flow = Some(slot);
        }
    }

    /// Whether the clone is over its flow share ([`Flows::over_share`]).
    #[inline(never)]
    pub(super) fn update_flow(&mut self, j: usize) {
        let Some(f) = self.jobs[j].flow else {
            return;
        };
        let blocked = self.flows.over_share(&f);
        self.jobs[j].job.set_flow_blocked(blocked);
    }

    /// An IO of a flow clone: both counters go up.
    #[inline(never)]
    pub(super) fn count_flow_issue(&mut self, j: usize) {
        if let Some(f) = &mut self.jobs[j].flow {
            self.flows.count_issue(f);
        }
        self.update_flow(j);
    }

    /// fio `flow_exit_job`: an ended clone takes its IOs and weight out.
    #[inline(never)]
    pub(super) fn leave_flow(&mut self, j: usize) {
        if let Some(f) = &mut self.jobs[j].flow {
            self.flows.leave(f);
        }
    }

    /// `ioengine=null` (fio engines/null.c): the IO is done as soon as it
    /// is queued; nothing goes to the controllers or the device. The job
    /// finds it in its ring after the engine's CPU time.
    #[inline(never)]
    pub(super) fn issue_null(&mut self, j: usize, jio: JobIo, now: Instant) {
        let slot = &mut self.jobs[j];
        slot.job.submitted(now);
        slot.ring.push(Reaped {
            io: jio,
            issue_time: now,
            error: 0,
            bytes_done: jio.len,
        });
        slot.state = SlotState::Sleeping(now + Duration(NULL_IO_NS));
    }
}
