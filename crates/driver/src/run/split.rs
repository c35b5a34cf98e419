//! IOs longer than the device's max IO size (`queue/max_sectors_kb`), cut
//! into requests as the block layer does.
//!
//! Linux (`blk_mq_submit_bio` → `bio_split_to_limits` → `bio_submit_split`
//! in `block/blk-merge.c`) splits a bio *after* blk-throttle let it through
//! whole: the front piece (at most `max_sectors`) goes on to rq-qos
//! (iocost) and a request; the rest goes back through `submit_bio_noacct`,
//! so it re-enters blk-throttle at once, flagged `BIO_BPS_THROTTLED` (its
//! bytes were charged with the whole bio), and is split again when it
//! clears it — from the submitter's `current->bio_list` loop, i.e. after
//! the front piece got past rq-qos, which may put the submitter to sleep.
//!
//! Here: a job IO that the stack stops after stage 0 ([`StackVerdict::Split`],
//! or in the ready list of a timer run) is cut by [`Loop::split`]. Each
//! piece gets its own in-flight slot (its own request: tag, device service,
//! diskstats, iocost charge and completion); the rest is resubmitted to the
//! stack with [`IoFlags::SPLIT_REST`] and the job IO's id. The job sees one
//! IO, completed when its last piece completes ([`Loop::piece_done`]).
//! IOs that need no split never touch this module.
//!
//! The rest also waits for the front piece's request: `blk_mq_submit_bio`
//! allocates it (`blk_mq_get_new_requests` → `blk_mq_get_tag`, asleep
//! while no tag is free) before `__submit_bio_noacct` takes the next bio
//! off `current->bio_list`. A front piece that finds no tag holds the rest
//! (and its submitter, when a job's submit call cut it) until it gets one
//! ([`Loop::tag_granted`]).

use super::{Flight, FlightKind, Loop, SlotState};
use crate::backend::{Backend, Completion};
use blkqos_core::controller::StackVerdict;
use blkqos_core::{Instant, Io, IoFlags, IoId};
use blkqos_workload::JobIo;
use std::collections::BTreeMap;

/// Job IOs being split and their pieces in flight. Kept apart from the
/// in-flight slots so that IOs that are not split pay nothing for it.
#[derive(Debug, Default)]
pub(super) struct Splits {
    /// Job IO → its state.
    jobs: BTreeMap<IoId, SplitState>,
    /// Piece → the job IO it was cut from.
    pieces: BTreeMap<IoId, IoId>,
    /// Rests a flusher cuts next, once its CPU time for the piece in front
    /// is spent: (when, the split IO, the rest), in time order.
    paced: std::collections::VecDeque<(Instant, IoId, Io)>,
}

/// A job IO being split.
#[derive(Debug, Default)]
struct SplitState {
    /// Pieces issued and not completed.
    pending: u32,
    /// A rest is still to be cut (held in stage 0, or waiting below).
    rest_out: bool,
    /// The rest cleared stage 0 while the piece in front of it blocks the
    /// submitter in a later stage: (that piece, the rest), cut when the
    /// piece is released.
    waiting: Option<(IoId, Io)>,
    /// The rest is in [`Splits::paced`]: the flusher is still submitting.
    paced: bool,
    /// First error of a piece (the bio's status), bytes the pieces moved.
    error: i32,
    bytes_done: u64,
}

impl Splits {
    /// A paced rest is due at `now`.
    #[inline(always)]
    pub(super) fn next_paced_due(&self, now: Instant) -> bool {
        self.paced.front().is_some_and(|p| p.0 <= now)
    }
}

impl<B: Backend> Loop<'_, B> {
    /// `io` — a job IO, or the rest of one (same id) — cleared stage 0 and
    /// must be split: cut pieces off its front until the rest is held by
    /// the stack, a piece blocks or waits for a tag, or nothing is left.
    /// `by` is the job whose submit call this runs in (`None`: a timer's
    /// dispatch work, which waits for tags without blocking a job); `defer`
    /// delays the pieces' requests as [`Loop::queue_request`] does. Returns
    /// whether `by` is now blocked (on a piece).
    #[cold]
    #[inline(never)]
    pub(super) fn split(
        &mut self,
        mut io: Io,
        now: Instant,
        by: Option<usize>,
        defer: Option<Instant>,
    ) -> bool {
        let pid = io.id;
        let (kind, job, jio) = match self.flights.get(pid) {
            Some(f) => (f.kind, f.job, f.jio),
            None => return false,
        };
        loop {
            let cut = io.len.min(self.max_io);
            let mut piece = self.cut_piece(&io, cut, now, pid, (kind, job, jio));
            let fid = piece.id;
            // bio_submit_split: the rest re-enters blk-throttle first
            let next = if io.len > cut {
                self.submit_rest(&io, cut, now)
            } else {
                None
            };
            // the front piece: rq-qos, then a request
            match self.stack.submit_fragment(&mut piece, now) {
                StackVerdict::Ready | StackVerdict::Split => {
                    // a deferred piece gets its tag in the dispatch worker
                    self.backend.take_submit_ns();
                    let no_tag = !self.queue_request(piece, now, defer) && defer.is_none();
                    if no_tag {
                        // no tag: the task sleeps in blk_mq_get_tag with
                        // the rest on its bio_list
                        self.park_rest(pid, fid, next);
                        return match by {
                            // sqthread_poll: the polling thread sleeps
                            Some(j) if !self.jobs[j].engine.sqpoll => {
                                self.jobs[j].state = SlotState::Blocked(fid);
                                true
                            }
                            _ => false,
                        };
                    }
                }
                StackVerdict::Queued => {}
                StackVerdict::Blocked => {
                    self.park_rest(pid, fid, next);
                    if let Some(j) = by {
                        self.jobs[j].state = SlotState::Blocked(fid);
                        return true;
                    }
                    if kind == FlightKind::Writeback {
                        self.cache.ctrl_blocked.push(fid);
                    }
                    return false;
                }
            }
            // a memory-backed device copied the piece in this context
            let copy_ns = self.backend.take_submit_ns();
            match next {
                Some(rest)
                    if kind == FlightKind::Writeback
                        && (self.host.writeback_piece_ns > 0 || copy_ns > 0) =>
                {
                    self.pace_rest(pid, rest, now + blkqos_core::Duration(copy_ns));
                    return false;
                }
                Some(rest) => io = rest,
                None => return false,
            }
        }
    }

    /// A flusher (or fsync) cuts its next request of `pid` once its CPU
    /// time for the last one is spent (the host's `writeback_piece_ns`,
    /// counted from `from`: after the device's copy of the last one, when
    /// it made it in this context): in between, other submitters'
    /// requests come first.
    fn pace_rest(&mut self, pid: IoId, rest: Io, from: Instant) {
        let at = from + blkqos_core::Duration(self.host.writeback_piece_ns);
        if let Some(st) = self.splits.jobs.get_mut(&pid) {
            st.paced = true;
        }
        // in time order (a copy's length differs by piece), after those
        // due at the same instant
        let i = self.splits.paced.partition_point(|p| p.0 <= at);
        self.splits.paced.insert(i, (at, pid, rest));
    }

    /// When the next paced rest is due.
    pub(super) fn next_paced(&self) -> Option<Instant> {
        self.splits.paced.front().map(|p| p.0)
    }

    /// Cut the paced rests that are due at `now`, in order.
    #[cold]
    #[inline(never)]
    pub(super) fn resume_paced(&mut self, now: Instant) {
        while self.splits.paced.front().is_some_and(|p| p.0 <= now) {
            let (_, pid, rest) = self.splits.paced.pop_front().expect("front exists");
            if let Some(st) = self.splits.jobs.get_mut(&pid) {
                st.paced = false;
            }
            self.split(rest, now, None, None);
        }
    }

    /// Is the submission of IO `id` unfinished: it (or a piece of it)
    /// waits for a tag, or the rest of it waits on the submitter's
    /// `bio_list` behind such a piece? A submitter that is not a job (a
    /// flusher) sleeps until it is not.
    pub(super) fn submission_pending(&self, id: IoId) -> bool {
        if self.waits_for_tag(id) || self.cache.ctrl_blocked.contains(&id) {
            return true;
        }
        self.splits.jobs.get(&id).is_some_and(|st| {
            st.waiting.is_some()
                || st.paced
                || self.splits.pieces.iter().any(|(&piece, &parent)| {
                    parent == id
                        && (self.waits_for_tag(piece) || self.cache.ctrl_blocked.contains(&piece))
                })
        })
    }

    /// The front `cut` bytes of `io` (the split IO `pid`, whose flight is
    /// `of`: kind, job, job IO) as a piece with a flight of its own,
    /// counted as pending for `pid`.
    fn cut_piece(
        &mut self,
        io: &Io,
        cut: u64,
        now: Instant,
        pid: IoId,
        of: (FlightKind, u32, JobIo),
    ) -> Io {
        let (kind, job, jio) = of;
        let front = Io {
            len: cut,
            flags: io
                .flags
                .without(IoFlags::SPLIT_REST)
                .with(IoFlags::FRAGMENT),
            submitted_at: now,
            cost_vtime: 0,
            ..*io
        };
        let fid = self.flights.insert_with(|id| Flight {
            kind,
            job,
            jio,
            io: Io { id, ..front },
            issue_time: now,
            alloc_at: now,
            started_at: now,
        });
        self.splits.pieces.insert(fid, pid);
        let st = self.splits.jobs.entry(pid).or_default();
        st.pending += 1;
        st.rest_out = io.len > cut;
        Io { id: fid, ..front }
    }

    /// The rest of `io` after its first `cut` bytes, through the stack's
    /// first stage: Some when it is to be cut next, None when the stack
    /// holds it (it comes back from the stack's timer).
    fn submit_rest(&mut self, io: &Io, cut: u64, now: Instant) -> Option<Io> {
        let mut rest = Io {
            offset: io.offset + cut,
            len: io.len - cut,
            flags: io.flags.with(IoFlags::SPLIT_REST),
            submitted_at: now,
            cost_vtime: 0,
            ..*io
        };
        match self.stack.submit(&mut rest, now) {
            // a rest always stops after stage 0
            StackVerdict::Split | StackVerdict::Ready => Some(rest),
            // held: comes back from the stack's timer
            StackVerdict::Queued | StackVerdict::Blocked => None,
        }
    }

    /// Piece `fid` of `pid` waits (a tag or a blocking stage): the rest
    /// `next`, if any, waits on it (the submitter's `bio_list`).
    fn park_rest(&mut self, pid: IoId, fid: IoId, next: Option<Io>) {
        if let Some(rest) = next {
            if let Some(st) = self.splits.jobs.get_mut(&pid) {
                st.waiting = Some((fid, rest));
            }
        }
    }

    /// Pieces released from a submitter-blocking stage in this timer run:
    /// cut the rests that waited for them; a submitter that waited for a
    /// piece returns from its submit call unless the next piece blocks it.
    #[cold]
    #[inline(never)]
    pub(super) fn resume_splits(&mut self, now: Instant, defer: Option<Instant>) {
        let mut resumed = std::mem::take(&mut self.resumed);
        for &(piece, by) in &resumed {
            let Some(&pid) = self.splits.pieces.get(&piece) else {
                continue;
            };
            if self.waits_for_tag(piece) {
                // released by the controller, then asleep in
                // blk_mq_get_tag: the rest (and the submitter) wait on
                continue;
            }
            let rest = self
                .splits
                .jobs
                .get_mut(&pid)
                .and_then(|st| match st.waiting {
                    Some((w, rest)) if w == piece => {
                        st.waiting = None;
                        Some(rest)
                    }
                    _ => None,
                });
            let blocked = rest.is_some_and(|rest| self.split(rest, now, by, defer));
            if let (Some(j), false) = (by, blocked) {
                self.submitter_released(j, pid, now);
            }
        }
        resumed.clear();
        self.resumed = resumed;
    }

    /// Piece `piece` completed (`c`): when it was the last one of its bio,
    /// that completes — its flight and a completion of the whole (status:
    /// the first piece error, as `bio_chain` gives the parent bio; bytes:
    /// what the pieces moved).
    #[cold]
    #[inline(never)]
    pub(super) fn piece_done(
        &mut self,
        piece: IoId,
        c: &Completion,
    ) -> Option<(Flight, Completion)> {
        let pid = self.splits.pieces.remove(&piece)?;
        let st = self.splits.jobs.get_mut(&pid)?;
        st.pending -= 1;
        if c.error != 0 {
            if st.error == 0 {
                st.error = c.error;
            }
        } else {
            st.bytes_done += c.bytes;
        }
        if st.pending > 0 || st.rest_out {
            return None;
        }
        let st = self.splits.jobs.remove(&pid)?;
        let &p = self.flights.remove(pid)?;
        let whole = Completion {
            id: pid,
            at: c.at,
            bytes: st.bytes_done,
            error: st.error,
            // the pieces went to the backend at different times
            issued: None,
            dispatched: None,
        };
        Some((p, whole))
    }
}
