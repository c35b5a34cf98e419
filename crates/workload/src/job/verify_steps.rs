//! A verifying job's steps (fio 3.33 backend.c `thread_main`, `do_io`,
//! `do_verify`; io_u.c `check_get_verify`): each pass writes, then reads
//! back what it wrote; `verify_backlog` reads blocks back during the
//! writes too. Only jobs with `verify` (and `do_verify`) come here.

use super::{dir_used, Ddir, Job, JobAction, JobIo, Phase};
use crate::spec::PerDir;
use crate::stats::JobStats;
use blkqos_core::Instant;

impl Job {
    /// The top of the loop for a verifying job (runtime not over, no
    /// error): the next read-back, or the end of the pass's writes, or
    /// `None` to go on with the writes. May change the phase.
    pub(super) fn verify_step(&mut self, now: Instant) -> Option<JobAction> {
        let pass_done = self.pass_writes_done();
        let v = self.verify.as_mut()?;
        if v.verifying {
            // fio do_verify: get_next_verify until the log is empty
            return match v.log.next() {
                Some((offset, len)) => Some(self.issue_verify(offset, len, now)),
                None => {
                    self.phase = Phase::PassEnd;
                    None
                }
            };
        }
        if pass_done {
            // fio do_io: `bytes_issued >= total_bytes` (time_based too,
            // so that the read-back can run)
            self.phase = Phase::PassEnd;
            return None;
        }
        let (offset, len) = v.backlog_next()?;
        Some(self.issue_verify(offset, len, now))
    }

    /// Has the pass issued its writes (fio `io_issue_bytes_exceeded` for
    /// the pass), or the job its `number_ios`?
    fn pass_writes_done(&self) -> bool {
        let Some(v) = &self.verify else { return false };
        let ios_done = self.ios_limit > 0 && self.io_issues.values().sum::<u64>() >= self.ios_limit;
        if !self.spec.time_based {
            return ios_done || self.issued_bytes_total >= v.pass_bytes * (v.passes_done + 1);
        }
        // time_based: fio do_io breaks when `bytes_issued` reaches the
        // pass's bytes (twice them with verify_backlog), but io_queue_event
        // adds an IO that completes inside its submit call (sync engines,
        // FIO_Q_COMPLETED) only when short: such a job never ends its
        // writes, so never reads back (fio 3.33 does the same: psync,
        // time_based, verify=crc32c reads nothing)
        if self.no_slat() {
            return ios_done;
        }
        let total = v.pass_bytes * if v.backlog > 0 { 2 } else { 1 };
        ios_done || v.pass_issued >= total
    }

    /// Everything in flight is reaped at the end of a phase: after the
    /// writes, sync and start the read-back; after the read-back, start
    /// the next pass (`loops`, `time_based`) or end.
    pub(super) fn end_pass_phase(&mut self, now: Instant) -> Option<JobAction> {
        let rw = self.spec.rw;
        let loops = u64::from(self.spec.loops.max(1));
        let time_based = self.spec.time_based;
        let ios_done = self.ios_limit > 0 && self.io_issues.values().sum::<u64>() >= self.ios_limit;
        let started = self.started;
        let bytes = PerDir::from_fn(|d| self.stats.dirs[d].io_bytes);
        let v = self.verify.as_mut()?;
        let us = (now - v.phase_start.unwrap_or(started)).as_us();
        v.phase_start = Some(now);
        if !v.verifying {
            // fio thread_main: update_runtime of each direction the job
            // does that moved bytes, then do_verify starts with a sync
            for (d, e) in v.elapsed_us.iter_mut() {
                if dir_used(rw, d) && bytes[d] > 0 {
                    *e += us;
                }
            }
            self.phase = Phase::VerifySync;
            return Some(JobAction::Fsync);
        }
        // after do_verify: update_runtime(DDIR_READ)
        v.elapsed_us[Ddir::Read] += us;
        v.verifying = false;
        v.passes_done += 1;
        if !ios_done && (time_based || v.passes_done < loops) {
            // fio prune_io_piece_log at the next loop
            v.log.clear();
            v.pass_issued = 0;
            self.phase = Phase::Top;
        } else {
            v.phase_start = None;
            v.closed = true;
            self.phase = Phase::Drain;
        }
        None
    }

    /// Issue the read-back of `[offset, offset + len)`: no rate, no
    /// rwmix draw (fio takes the piece before `fill_io_u`).
    fn issue_verify(&mut self, offset: u64, len: u64, now: Instant) -> JobAction {
        // the engine's prep gives a read-back a priority as any read
        // (fio_ioring_prep / fio_libaio_prep: fio_cmdprio_set_ioprio)
        let (ioprio, prio_index) = self.prio.pick(Ddir::Read, len);
        let io = JobIo {
            ddir: Ddir::Read,
            offset,
            len,
            start_time: now,
            verify_list: true,
            after_sleep: std::mem::take(&mut self.pace.slept),
            ioprio,
            prio_index,
        };
        // fio td_io_queue: an IO of the verify list (IO_U_F_VER_LIST)
        // counts in neither io_issues nor io_issue_bytes, so read-backs
        // never end the writes early nor move the rwmix draw
        self.in_flight += 1;
        self.last_issued_write = false;
        if let Some(v) = self.verify.as_mut().filter(|v| !v.verifying) {
            v.pass_issued += len;
        }
        if !self.in_ramp() {
            self.stats.issued[Ddir::Read] += 1;
            self.stats.depth_level[JobStats::depth_index(self.in_flight)] += 1;
            if self.submit_batch == 1 {
                self.stats.submit_batches[JobStats::batch_index(1)] += 1;
            }
        }
        self.phase = Phase::Submitting;
        JobAction::Issue(io)
    }

    /// Should the driver drop the job's cached pages now (once per
    /// read-back, after its sync: fio do_verify `file_invalidate_cache`)?
    pub fn take_cache_drop(&mut self) -> bool {
        self.verify
            .as_mut()
            .is_some_and(|v| std::mem::take(&mut v.drop_cache))
    }

    /// Each direction's runtime in microseconds as fio adds it up phase by
    /// phase (`update_runtime`), the open phase ending `now`; `None` for a
    /// job that does not verify.
    pub(super) fn verify_runtimes_us(&self, now: Instant) -> Option<PerDir<u64>> {
        let v = self.verify.as_ref()?;
        let mut us = v.elapsed_us;
        if !v.closed {
            let open = (now - v.phase_start.unwrap_or(self.started)).as_us();
            if v.verifying {
                us[Ddir::Read] += open;
            } else {
                for (d, u) in us.iter_mut() {
                    if dir_used(self.spec.rw, d) && self.stats.dirs[d].io_bytes > 0 {
                        *u += open;
                    }
                }
            }
        }
        Some(us)
    }
}
