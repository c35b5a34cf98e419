//! The driver's side of buffered IO: jobs' writes and cached reads served
//! by the page cache, writeback IO from the flushers, and fsync.

use super::{Flight, FlightKind, Loop, SlotState};
use crate::backend::{Backend, Completion};
use blkqos_core::controller::StackVerdict;
use blkqos_core::{Duration, Instant, Io, IoFlags, IoId, IoOp};
use blkqos_workload::job::Reaped;
use blkqos_workload::{Ddir, JobIo};

/// A job index that is no job: IO the kernel issues on its own behalf.
const NO_JOB: u32 = u32::MAX;

impl<B: Backend> Loop<'_, B> {
    /// A buffered job's IO: writes dirty the page cache (and may pause the
    /// writer), reads of cached pages complete without the device. Returns
    /// false if the IO must go to the device (a read miss).
    #[inline(never)]
    pub(super) fn issue_buffered(&mut self, j: usize, jio: JobIo, now: Instant) -> bool {
        let Some(pc) = self.cache.pc.as_mut() else {
            return false;
        };
        match jio.ddir {
            Ddir::Write => {}
            Ddir::Read if pc.read_hit(jio.offset, jio.len) => {}
            _ => return false,
        }
        self.jobs[j].job.submitted(now);
        self.jobs[j].copy_queue.push_back((jio, now));
        self.pump_copier(j);
        true
    }

    /// Start job `j`'s queued copies while its copier is free. The copy
    /// runs in one thread per job, in submission order: libaio's
    /// io_submit copies a buffered IO before it returns (`aio_write` →
    /// `generic_perform_write` in the submitter), and io_uring copies
    /// inline or, when that would block, in an io-wq worker that
    /// serializes writes to one inode (`io_wq_hash_work`). So a job's
    /// buffered IOs take turns whatever its iodepth: the next copy starts
    /// after the previous one and its `balance_dirty_pages` pauses end.
    fn pump_copier(&mut self, j: usize) {
        let Some(pc) = self.cache.pc.as_mut() else {
            return;
        };
        while !self.jobs[j].copy_writing {
            let slot = &mut self.jobs[j];
            let Some((jio, issued)) = slot.copy_queue.pop_front() else {
                return;
            };
            let starts_at = (issued + Duration(self.host.submit_ns)).max(slot.copy_free_at);
            let at = if jio.ddir == Ddir::Write {
                let inode = pc.inode(slot.file_key, slot.group);
                slot.copy_writing = true;
                // acknowledged: a backend that keeps data copies it now
                self.backend.buffer_write(jio.offset, jio.len);
                pc.start_write(j, inode, jio.offset, jio.len, starts_at)
            } else {
                let done = starts_at + pc.copy_time(jio.len);
                slot.copy_free_at = done;
                done
            };
            let reaped = Reaped {
                io: jio,
                issue_time: issued,
                error: 0,
                bytes_done: jio.len,
            };
            self.cache.pending.push((at, j, reaped));
        }
    }

    /// Page cache work at `now`: step buffered writes (page copies and
    /// `balance_dirty_pages` sleeps), deliver the buffered IOs that are
    /// done, and submit the writeback IO the flushers produce.
    #[inline(never)]
    pub(super) fn run_pagecache(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.cache.pending.len() {
            if self.cache.pending[i].0 > now {
                i += 1;
                continue;
            }
            let j = self.cache.pending[i].1;
            let is_write = self.cache.pending[i].2.io.ddir == Ddir::Write;
            if is_write {
                if let Some(t) = self.cache.pc.as_mut().and_then(|pc| pc.step_write(j, now)) {
                    self.cache.pending[i].0 = t;
                    i += 1;
                    continue;
                }
                self.jobs[j].copy_writing = false;
                self.jobs[j].copy_free_at = now;
            }
            let (_, j, r) = self.cache.pending.swap_remove(i);
            self.jobs[j].deliver(r, now);
            if is_write {
                self.pump_copier(j);
            }
        }
        if let Some(pc) = self.cache.pc.as_mut() {
            for (group, at) in pc.take_dirty_sleeps() {
                self.stack.note_dirty_sleep(group, at);
            }
        }
        let mut wb = std::mem::take(&mut self.cache.wb_ios);
        wb.clear();
        if let Some(pc) = self.cache.pc.as_mut() {
            pc.poll(now, &mut wb);
        }
        for w in &wb {
            self.cache.flushers.queue(*w);
        }
        self.cache.wb_ios = wb;
        self.pump_flushers(now);
        self.pump_lazy_flushers(now);
    }

    /// The flushers that form their bios on demand (`async`, `root`):
    /// each free one (its last bio submitted) is asked for its next bio
    /// until one waits or it has no more work (`pagecache::flusher`).
    fn pump_lazy_flushers(&mut self, now: Instant) {
        let Some(pc) = self.cache.pc.as_mut() else {
            return;
        };
        pc.flushers_asked();
        let n = pc.flusher_count();
        if self.cache.flushers.lazy_last.len() < n {
            self.cache.flushers.lazy_last.resize(n, None);
        }
        for f in 0..n {
            loop {
                if !self.cache.pc.as_ref().is_some_and(|pc| pc.flusher_busy(f)) {
                    break;
                }
                if self.cache.flushers.lazy_last[f].is_some_and(|id| self.submission_pending(id)) {
                    break;
                }
                let Some(w) = self
                    .cache
                    .pc
                    .as_mut()
                    .and_then(|pc| pc.flusher_next(f, now))
                else {
                    break;
                };
                let id = self.submit_writeback(w, now);
                self.cache.flushers.lazy_last[f] = Some(id);
            }
        }
    }

    /// Each owner's flusher submits its writeback IO one bio at a time: a
    /// bio whose request (or a split piece's) finds no tag, or waits in a
    /// stage that blocks its submitter (iocost, blk-wbt), puts the
    /// flusher to sleep with the rest of its bio on `current->bio_list`,
    /// so its next bio waits; the flushers of other owners go on (one
    /// `wb_workfn` per wb). An IO blk-throttle holds does not stop it
    /// (cgroup writeback's bios wait in the owner's throttle queue).
    fn pump_flushers(&mut self, now: Instant) {
        for q in 0..self.cache.flushers.queues.len() {
            loop {
                let (last, front) = {
                    let f = &self.cache.flushers.queues[q];
                    (f.last, f.pending.front().copied())
                };
                let Some(w) = front else {
                    break;
                };
                if last.is_some_and(|id| self.submission_pending(id)) {
                    break;
                }
                self.cache.flushers.queues[q].pending.pop_front();
                let id = self.submit_writeback(w, now);
                self.cache.flushers.queues[q].last = Some(id);
            }
        }
    }

    /// Submit writeback bio `w` through the controllers: its flight.
    fn submit_writeback(&mut self, w: crate::pagecache::WritebackIo, now: Instant) -> IoId {
        let io = Io {
            ioprio: 0,
            id: IoId::default(),
            submitter: blkqos_core::Submitter(NO_JOB),
            group: w.group,
            op: IoOp::Write,
            // wbc_to_write_flags
            flags: IoFlags::WRITEBACK.with(if w.sync {
                IoFlags::SYNC
            } else {
                IoFlags::BACKGROUND
            }),
            offset: w.offset,
            len: w.len,
            submitted_at: now,
            cost_vtime: 0,
        };
        self.submit_internal(FlightKind::Writeback, NO_JOB, io, now)
    }

    /// Submit an IO the kernel issues itself (writeback, flush) through the
    /// controllers; no job blocks on it. Returns its flight.
    fn submit_internal(&mut self, kind: FlightKind, job: u32, io: Io, now: Instant) -> IoId {
        let id = self.flights.insert_with(|id| Flight {
            kind,
            job,
            jio: JobIo {
                ddir: Ddir::Write,
                offset: io.offset,
                len: io.len,
                start_time: now,
                verify_list: false,
                after_sleep: false,
                ioprio: io.ioprio,
                prio_index: 0,
            },
            io: Io { id, ..io },
            issue_time: now,
            alloc_at: now,
            started_at: now,
        });
        let mut io = Io { id, ..io };
        match self.stack.submit(&mut io, now) {
            // the flusher (or fsync's flush) waits for a tag: no job
            StackVerdict::Ready => {
                self.enqueue_request(io, now);
            }
            // longer than the device's max IO size: requests of their own
            StackVerdict::Split => {
                self.split(io, now, None, None);
            }
            StackVerdict::Queued => {}
            // the flusher sleeps in the stage (iocost's or blk-wbt's wait)
            StackVerdict::Blocked => self.cache.ctrl_blocked.push(id),
        }
        id
    }

    /// Job `j` reached `end_fsync`: write back its file, then flush.
    #[inline(never)]
    pub(super) fn start_fsync(&mut self, j: usize, now: Instant) {
        self.jobs[j].state = SlotState::Fsyncing(now);
        let slot = &self.jobs[j];
        let clean = match self.cache.pc.as_mut() {
            Some(pc) if slot.buffered => {
                let inode = pc.inode(slot.file_key, slot.group);
                pc.fsync(inode)
            }
            _ => true,
        };
        if clean {
            self.issue_flush(j, now);
        }
        // else: the flush follows when the inode's writeback completes
    }

    /// The flush (REQ_PREFLUSH, no data) that ends job `j`'s fsync: one
    /// write IO of 0 bytes for the controllers.
    fn issue_flush(&mut self, j: usize, now: Instant) {
        if let SlotState::Fsyncing(since) = self.jobs[j].state {
            self.jobs[j].state = SlotState::Flushing(since);
        }
        let io = Io {
            // the job thread's own priority (fio's ioprio_set)
            ioprio: self.jobs[j].job.spec().prio.ioprio,
            id: IoId::default(),
            submitter: blkqos_core::Submitter(j as u32),
            group: self.jobs[j].group,
            op: IoOp::Flush,
            flags: IoFlags::SYNC,
            // at the job's (first) file: a real run over several files
            // syncs that file
            offset: self.jobs[j].file_key,
            len: 0,
            submitted_at: now,
            cost_vtime: 0,
        };
        self.submit_internal(FlightKind::Flush, j as u32, io, now);
    }

    /// Job `j` resets the zone at `offset` (`zonemode=zbd`: fio's
    /// synchronous `BLKRESETZONE`, a `REQ_OP_ZONE_RESET` request).
    #[inline(never)]
    pub(super) fn start_zone_reset(&mut self, j: usize, offset: u64, len: u64, now: Instant) {
        self.jobs[j].state = SlotState::ZoneResetting;
        let io = Io {
            id: IoId::default(),
            submitter: blkqos_core::Submitter(j as u32),
            group: self.jobs[j].group,
            op: IoOp::Discard,
            flags: IoFlags::ZONE_RESET,
            offset,
            len,
            submitted_at: now,
            cost_vtime: 0,
            ioprio: 0,
        };
        self.submit_internal(FlightKind::ZoneReset, j as u32, io, now);
    }

    /// Completion of a flight the page cache or fsync cares about.
    pub(super) fn complete_other(&mut self, f: &Flight, c: Completion) {
        let now = c.at;
        if let Some(pc) = self.cache.pc.as_mut() {
            if matches!(f.io.op, IoOp::Write) && c.error == 0 {
                pc.device_write_done(c.bytes, now);
            }
        }
        match f.kind {
            FlightKind::Job => {
                // a buffered read miss fills the cache
                let slot = &self.jobs[f.job as usize];
                if let (Some(pc), true, Ddir::Read) =
                    (self.cache.pc.as_mut(), slot.buffered, f.jio.ddir)
                {
                    if c.error == 0 {
                        let inode = pc.inode(slot.file_key, slot.group);
                        pc.insert_clean(inode, f.io.offset, f.io.len);
                    }
                }
            }
            FlightKind::Writeback => {
                if let Some(pc) = self.cache.pc.as_mut() {
                    if c.error == 0 {
                        pc.writeback_done(f.io.offset, f.io.len, now);
                    } else {
                        pc.writeback_failed(f.io.offset, f.io.len, c.error, now);
                    }
                }
                self.continue_fsyncs(now);
            }
            FlightKind::ZoneReset => {
                let j = f.job as usize;
                self.jobs[j].state = SlotState::Runnable;
                self.jobs[j].job.zone_reset_done(now, c.error);
            }
            FlightKind::Flush if f.job == NO_JOB => self.cache.final_flush_done = true,
            FlightKind::Flush => {
                let j = f.job as usize;
                if let SlotState::Flushing(since) = self.jobs[j].state {
                    // the flush's own error, else the file's writeback error
                    let mut error = c.error;
                    let slot = &self.jobs[j];
                    if let Some(pc) = self.cache.pc.as_mut() {
                        pc.note_fsync(j, now - since);
                        if slot.buffered {
                            let inode = pc.inode(slot.file_key, slot.group);
                            let wb_err = pc.take_wb_err(inode);
                            if error == 0 {
                                error = wb_err;
                            }
                        }
                    }
                    self.jobs[j].state = SlotState::Runnable;
                    if error == 0 {
                        self.jobs[j].job.fsync_done(now);
                        // fio do_verify: the file's cache is dropped after
                        // the sync (file_invalidate_cache)
                        if self.jobs[j].job.take_cache_drop() {
                            let slot = &self.jobs[j];
                            if let (Some(pc), true) = (self.cache.pc.as_mut(), slot.buffered) {
                                let inode = pc.inode(slot.file_key, slot.group);
                                pc.drop_clean(inode);
                            }
                        }
                    } else {
                        self.jobs[j].job.fsync_failed(now, error);
                    }
                }
            }
        }
    }

    /// The jobs are done: with `drain_at_end`, write every dirty page back
    /// under its owner's limits, then flush once. True while that work is
    /// under way (the run goes on).
    #[inline(never)]
    pub(super) fn drain_pagecache(&mut self, now: Instant) -> bool {
        let Some(pc) = self.cache.pc.as_mut() else {
            return false;
        };
        if !pc.drain_at_end() || self.cache.final_flush_done {
            return false;
        }
        if !pc.is_clean() {
            pc.sync_everything();
            return true;
        }
        if !self.cache.final_flush_sent {
            self.cache.final_flush_sent = true;
            let io = Io {
                ioprio: 0,
                id: IoId::default(),
                submitter: blkqos_core::Submitter(NO_JOB),
                group: blkqos_core::GroupId::ROOT,
                op: IoOp::Flush,
                flags: IoFlags::SYNC,
                offset: 0,
                len: 0,
                submitted_at: now,
                cost_vtime: 0,
            };
            self.submit_internal(FlightKind::Flush, NO_JOB, io, now);
        }
        true
    }

    /// Jobs in fsync whose file became clean send their flush.
    fn continue_fsyncs(&mut self, now: Instant) {
        for j in 0..self.jobs.len() {
            if !matches!(self.jobs[j].state, SlotState::Fsyncing(_)) {
                continue;
            }
            let slot = &self.jobs[j];
            let Some(pc) = self.cache.pc.as_mut() else {
                return;
            };
            let inode = pc.inode(slot.file_key, slot.group);
            if pc.inode_clean(inode) {
                self.issue_flush(j, now);
            }
        }
    }
}

/// The writeback IO each owner's flusher has yet to submit.
/// The page cache and its writeback, as the loop keeps them.
#[derive(Default)]
pub(super) struct Cache {
    pub pc: Option<crate::pagecache::PageCache>,
    /// Buffered IO served by the page cache: (completes at, job, result).
    pub pending: Vec<(Instant, usize, Reaped)>,
    pub wb_ios: Vec<crate::pagecache::WritebackIo>,
    /// Each owner's flusher's writeback IO not yet submitted.
    pub flushers: Flushers,
    /// `drain_at_end`: the final flush was submitted / completed.
    pub final_flush_sent: bool,
    pub final_flush_done: bool,
    /// Writeback IOs (or pieces of them) waiting in a stage that blocks
    /// their submitter: their flusher sleeps until they leave it.
    pub ctrl_blocked: Vec<IoId>,
}

#[derive(Debug, Default)]
pub(super) struct Flushers {
    queues: Vec<FlusherQueue>,
    /// The flight of the last bio of each on-demand flusher.
    lazy_last: Vec<Option<IoId>>,
}

#[derive(Debug)]
struct FlusherQueue {
    group: blkqos_core::GroupId,
    pending: std::collections::VecDeque<crate::pagecache::WritebackIo>,
    /// The flight of the last bio it submitted.
    last: Option<IoId>,
}

impl Flushers {
    /// `w` joins its owner's flusher's queue.
    fn queue(&mut self, w: crate::pagecache::WritebackIo) {
        let q = match self.queues.iter().position(|q| q.group == w.group) {
            Some(q) => q,
            None => {
                self.queues.push(FlusherQueue {
                    group: w.group,
                    pending: std::collections::VecDeque::new(),
                    last: None,
                });
                self.queues.len() - 1
            }
        };
        self.queues[q].pending.push_back(w);
    }

    /// Writeback IO not submitted yet.
    pub(super) fn queued(&self) -> usize {
        self.queues.iter().map(|q| q.pending.len()).sum()
    }
}
