//! Batched submission (`iodepth_batch_submit` > 1) and the block layer's
//! plug merge.
//!
//! fio queues IOs until `iodepth_batch_submit` of them are ready, or until
//! it must wait, sleep, sync or stop, then commits them in one submit call
//! (`td_io_commit`; `td_io_getevents` commits before it waits). A submit
//! call of more than two IOs runs under a plug (io_uring's
//! `io_submit_state_start`, libaio's `AIO_PLUG_THRESHOLD`): each bio
//! passes blk-throttle, then `blk_mq_submit_bio` tries to merge it into
//! the request last added to the plug (`blk_attempt_plug_merge`: same
//! direction and cgroup, adjacent, the sum within `max_sectors` and
//! `max_segments`, a segment per 4 KiB page of each bio). A merged
//! bio skips rq-qos throttling: iocost charges it through
//! `ioc_rqos_merge` (size cost only; over budget it becomes debt, which may
//! put the group in issuer delay, and then the submitting task sleeps
//! before the submit call returns: fio counts that in `slat`). A bio that
//! does not merge goes through rq-qos and becomes a new request in the
//! plug; the plug is flushed (its requests get tags and go to the device)
//! when the call ends or the task sleeps in a controller.
//!
//! Here: a job's queued IOs are its [`Batch`]; [`Loop::start_commit`]
//! begins the submit call (`n × submit_ns` long), [`Loop::enter_batch`]
//! runs the IOs through the stack under the plug, and the call returns
//! ([`Loop::finish_commit`]) after the longest issuer delay it incurred.
//! A merged bio keeps its in-flight slot (its job sees it complete with
//! the request); the request's slot carries the whole extent. Backends
//! that keep data (the real engine) do not merge
//! ([`Backend::plug_merges`]): the kernel below them does.

use super::{Flight, Loop, SlotState};
use crate::backend::{Backend, Completion};
use blkqos_core::controller::StackVerdict;
use blkqos_core::{Duration, Instant, Io, IoFlags, IoId, IoOp};
use blkqos_workload::{JobAction, JobIo};
use std::collections::VecDeque;

/// Submit batching state of a job whose `iodepth_batch_submit` is > 1.
/// Plugging and merging: what the loop keeps for bios that wait in a
/// submitter's plug and for requests that carry merged bios.
pub(super) struct Plugging {
    /// The backend lets the driver merge bios ([`Backend::plug_merges`]).
    pub merges: bool,
    /// Some job submits in batches.
    pub batched: bool,
    /// Released IOs that went to their submitter's plug (this timer run).
    pub released: Vec<IoId>,
    /// Request → its segments and the bios merged into it (completed with it).
    pub merged: std::collections::BTreeMap<IoId, (u32, Vec<IoId>)>,
    /// `queue/max_segments` ([`Backend::max_segments`]).
    pub max_segments: u32,
}

impl Default for Plugging {
    fn default() -> Self {
        Plugging {
            merges: false,
            batched: false,
            released: Vec::new(),
            merged: std::collections::BTreeMap::new(),
            max_segments: u32::MAX,
        }
    }
}

#[derive(Default)]
pub(super) struct Batch {
    /// IOs per submit call.
    pub max: usize,
    /// Queued by the job and not committed yet; during a submit call, the
    /// ones that have not entered the block layer (front first).
    queued: VecDeque<IoId>,
    /// Entered the block layer in the current submit call: their issue
    /// time is when it returns.
    entered: Vec<IoId>,
    /// What the job did that ended the batch: done when the call returns.
    pub after: Option<JobAction>,
    /// The longest issuer delay incurred in the current call.
    delay: Duration,
    /// Requests in the call's plug, in order (the last one takes merges).
    plug: Vec<IoId>,
    /// A submit call is in progress (from commit until it returns).
    in_call: bool,
    /// IOs of the call that completed before it returned: the job sees
    /// them after the call (their issue time is its return).
    early: Vec<(Flight, Completion)>,
}

impl Batch {
    pub fn new(max: u32) -> Box<Batch> {
        Box::new(Batch {
            max: max as usize,
            ..Batch::default()
        })
    }
    pub fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }
}

/// Segments of a bio of `len` bytes: one per 4 KiB page (buffers are
/// page-aligned; the pages of a user buffer are rarely physically
/// contiguous, so `biovec_phys_mergeable` seldom joins them).
fn segments(len: u64) -> u32 {
    u32::try_from(len.div_ceil(4096).max(1)).unwrap_or(u32::MAX)
}

impl<B: Backend> Loop<'_, B> {
    /// The next action of batched job `j`: what ended its last batch (now
    /// that the call returned), or the job's own. An IO is queued (and a
    /// full batch committed), and any other action with IOs queued
    /// commits them first (`td_io_getevents` and friends do): `None`,
    /// the caller goes round again. Else the action to do now.
    #[cold]
    #[inline(never)]
    pub(super) fn batched_action(
        &mut self,
        j: usize,
        now: Instant,
        stopping: bool,
    ) -> Option<JobAction> {
        let slot = &mut self.jobs[j];
        let b = slot.batch.as_mut().expect("a batched job");
        let action = match b.after.take() {
            Some(a) => a,
            None => slot.own_action(now, stopping),
        };
        let queued = slot.batch.as_ref().is_some_and(|b| b.has_queued());
        match action {
            JobAction::Issue(jio) => {
                if self.queue_batched(j, jio, now) {
                    self.start_commit(j, now, None);
                }
                None
            }
            _ if queued => {
                self.start_commit(j, now, Some(action));
                None
            }
            _ => Some(action),
        }
    }

    /// Job `j` queues `jio` (fio `td_io_queue` → `FIO_Q_QUEUED`): it gets
    /// an in-flight slot now and enters the block layer with its batch.
    /// Returns whether the batch is full (time to commit).
    pub(super) fn queue_batched(&mut self, j: usize, jio: JobIo, now: Instant) -> bool {
        let id = self.insert_job_flight(j, &jio, now);
        let slot = &mut self.jobs[j];
        slot.job.submitted(now);
        let b = slot.batch.as_mut().expect("a batched job");
        b.queued.push_back(id);
        b.queued.len() >= b.max
    }

    /// Commit job `j`'s queued IOs: the submit call takes `submit_ns` per
    /// IO; `after` is done when it returns.
    pub(super) fn start_commit(&mut self, j: usize, now: Instant, after: Option<JobAction>) {
        let slot = &mut self.jobs[j];
        let b = slot.batch.as_mut().expect("a batched job");
        let n = b.queued.len();
        b.after = after;
        b.delay = Duration::ZERO;
        b.in_call = true;
        slot.job.count_submit_call(n as u32);
        let returns_at = now + Duration(self.host.submit_ns.saturating_mul(n as u64));
        slot.state = SlotState::Committing(returns_at);
    }

    /// The submit call runs: queued IOs enter the block layer in order
    /// under the plug, until one puts the task to sleep in a controller
    /// (it continues from there when released) or all are in.
    #[inline(never)]
    pub(super) fn enter_batch(&mut self, j: usize, now: Instant) {
        // a plug is started only for more than two IOs (IO_PLUG_THRESHOLD)
        let plugged = self.plug.merges
            && self.jobs[j]
                .batch
                .as_ref()
                .is_some_and(|b| b.queued.len() + b.entered.len() > 2);
        loop {
            let b = self.jobs[j].batch.as_mut().expect("a batched job");
            let Some(id) = b.queued.pop_front() else {
                break;
            };
            b.entered.push(id);
            let Some(f) = self.flights.get_mut(id) else {
                continue;
            };
            f.io.submitted_at = now;
            let mut io = f.io;
            match self.stack.submit_stage0(&mut io, now) {
                StackVerdict::Queued => {}
                StackVerdict::Blocked => {
                    self.flush_plug(j, now);
                    self.jobs[j].state = SlotState::Blocked(id);
                    return;
                }
                StackVerdict::Split => {
                    self.flush_plug(j, now);
                    if self.split(io, now, Some(j), None) {
                        return;
                    }
                }
                StackVerdict::Ready => {
                    if plugged && self.plug_merge(j, &io, now) {
                        continue;
                    }
                    match self.stack.submit_rq_qos(&mut io, now) {
                        StackVerdict::Ready | StackVerdict::Split => {
                            if let Some(f) = self.flights.get_mut(id) {
                                f.io.cost_vtime = io.cost_vtime;
                            }
                            if !self.plug_request(j, id, now) {
                                return;
                            }
                        }
                        StackVerdict::Queued => {}
                        StackVerdict::Blocked => {
                            self.flush_plug(j, now);
                            self.jobs[j].state = SlotState::Blocked(id);
                            return;
                        }
                    }
                }
            }
        }
        self.flush_plug(j, now);
        let delay = self.jobs[j]
            .batch
            .as_ref()
            .map_or(Duration::ZERO, |b| b.delay);
        if delay > Duration::ZERO {
            // blkcg_maybe_throttle_current: asleep before returning
            self.jobs[j].state = SlotState::Returning(now + delay);
        } else {
            self.finish_commit(j, now);
        }
    }

    /// The submit call returns at `now`: its IOs were issued now.
    #[inline(never)]
    pub(super) fn finish_commit(&mut self, j: usize, now: Instant) {
        let b = self.jobs[j].batch.as_mut().expect("a batched job");
        b.in_call = false;
        for id in b.entered.drain(..) {
            if let Some(f) = self.flights.get_mut(id) {
                f.issue_time = now;
            }
        }
        let early = std::mem::take(&mut b.early);
        for (mut f, c) in early {
            f.issue_time = now;
            self.finish_flight_now(f, &c);
        }
        self.jobs[j].state = SlotState::Runnable;
    }

    /// Job IO `f` completed (`c`) while the submit call that issued it
    /// has not returned: keep it for [`Loop::finish_commit`]. `None`:
    /// kept; else `f` and `c` back to complete now.
    #[inline]
    pub(super) fn hold_early(&mut self, f: Flight, c: Completion) -> Option<(Flight, Completion)> {
        let Some(b) = self
            .jobs
            .get_mut(f.job as usize)
            .and_then(|s| s.batch.as_mut())
        else {
            return Some((f, c));
        };
        if b.in_call && b.entered.contains(&f.io.id) {
            b.early.push((f, c));
            None
        } else {
            Some((f, c))
        }
    }

    /// `blk_attempt_plug_merge`: can bio `io` join the request last added
    /// to the plug? If so it does (`rq_qos_merge`, then the request grows,
    /// `blk_account_io_merge_bio`).
    fn plug_merge(&mut self, j: usize, io: &Io, now: Instant) -> bool {
        let Some(rq_id) = self.jobs[j]
            .batch
            .as_ref()
            .and_then(|b| b.plug.last().copied())
        else {
            return false;
        };
        let Some(mut rq) = self.flights.get(rq_id).map(|f| f.io) else {
            return false;
        };
        // blk_rq_merge_ok: same op and cgroup, no split pieces
        let mergeable_op = matches!(io.op, IoOp::Read | IoOp::Write);
        let pieces = IoFlags::FRAGMENT.with(IoFlags::SPLIT_REST);
        if !mergeable_op
            || rq.op != io.op
            || rq.group != io.group
            || rq.flags.intersects(pieces)
            || io.flags.intersects(pieces)
        {
            return false;
        }
        // blk_try_merge: back or front; ll_*_merge_fn: within max_sectors
        let back = rq.offset.checked_add(rq.len) == Some(io.offset);
        let front = io.offset.checked_add(io.len) == Some(rq.offset);
        let Some(total) = rq.len.checked_add(io.len) else {
            return false;
        };
        if !(back || front) || total > self.max_io {
            return false;
        }
        // ll_back_merge_fn / ll_front_merge_fn: within max_segments
        let rq_segs = self
            .plug
            .merged
            .get(&rq_id)
            .map_or_else(|| segments(rq.len), |m| m.0);
        let segs = rq_segs.saturating_add(segments(io.len));
        if segs > self.plug.max_segments {
            return false;
        }
        if let Some(d) = self.stack.merge(io, &mut rq, now) {
            if let Some(b) = self.jobs[j].batch.as_mut() {
                b.delay = b.delay.max(d);
            }
        }
        let f = self.flights.get_mut(rq_id).expect("checked above");
        f.io.cost_vtime = rq.cost_vtime;
        if front {
            f.io.offset = io.offset;
        }
        f.io.len = total;
        let m = self.plug.merged.entry(rq_id).or_default();
        m.0 = segs;
        m.1.push(io.id);
        self.disk.merged(io.op);
        true
    }

    /// Job `j`'s bio `id` became a new request in its submit call at `now`
    /// (`blk_mq_get_new_requests`): with a free tag it joins the plug (the
    /// requests there hold theirs); with none the task sleeps in
    /// `blk_mq_get_tag`, `io_schedule` flushing the plug first, and the
    /// call goes on once the IO has a tag ([`Loop::tag_granted`]).
    /// `false`: the job is blocked.
    fn plug_request(&mut self, j: usize, id: IoId, now: Instant) -> bool {
        let plugged = self.jobs[j].batch.as_ref().map_or(0, |b| b.plug.len());
        if (plugged as u64) < u64::from(self.rq.free_slots()) {
            if let Some(b) = self.jobs[j].batch.as_mut() {
                b.plug.push(id);
            }
            return true;
        }
        self.flush_plug(j, now);
        let Some(io) = self.flights.get(id).map(|f| f.io) else {
            return true;
        };
        // sqthread_poll: the kernel's polling thread sleeps, not the job
        if self.enqueue_request(io, now) || self.jobs[j].engine.sqpoll {
            return true;
        }
        self.jobs[j].state = SlotState::Blocked(id);
        false
    }

    /// `blk_finish_plug` (or the task going to sleep): the plugged
    /// requests ask for tags and go to the device, in order.
    fn flush_plug(&mut self, j: usize, now: Instant) {
        let Some(mut plug) = self.jobs[j]
            .batch
            .as_mut()
            .map(|b| std::mem::take(&mut b.plug))
        else {
            return;
        };
        for &id in &plug {
            if let Some(io) = self.flights.get(id).map(|f| f.io) {
                self.enqueue_request(io, now);
            }
        }
        plug.clear();
        if let Some(b) = self.jobs[j].batch.as_mut() {
            b.plug = plug;
        }
    }

    /// `io`, whose batched submit call slept in a controller, was released
    /// at `now` (it cleared the stack): the task wakes up in
    /// `blk_mq_submit_bio` with its plug still started, so the request
    /// goes to the plug (and takes the next bios' merges) instead of
    /// straight to the device. `false`: not a plugged submit call.
    pub(super) fn plug_released(&mut self, j: usize, io: &Io) -> bool {
        if !self.plug.merges || io.needs_split(self.max_io) {
            return false;
        }
        if let Some(f) = self.flights.get_mut(io.id) {
            f.io.cost_vtime = io.cost_vtime;
        }
        let free = self.rq.free_slots() as usize;
        match self.jobs[j].batch.as_mut() {
            // it allocates its request (a tag) before it joins the plug
            Some(b) if b.queued.len() + b.entered.len() > 2 && b.plug.len() < free => {
                b.plug.push(io.id);
                true
            }
            _ => false,
        }
    }

    /// A request that bios were merged into completed (`c`, its flight
    /// `f` already removed): each bio completes with it, with its own
    /// length on success (`blk_update_request` ends the bios in order;
    /// a failed request fails them all).
    #[cold]
    #[inline(never)]
    pub(super) fn complete_merged(&mut self, f: Flight, bios: Vec<IoId>, c: Completion) {
        let own = |len: u64| Completion {
            bytes: if c.error == 0 { len } else { 0 },
            ..c
        };
        let first = own(f.jio.len);
        self.finish_flight(f, &first);
        for id in bios {
            if let Some(&bf) = self.flights.remove(id) {
                let bc = Completion {
                    id,
                    ..own(bf.io.len)
                };
                self.finish_flight(bf, &bc);
            }
        }
    }
}
