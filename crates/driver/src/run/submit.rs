//! An IO into the block layer: its flight, the controller stack's
//! verdict, a request (tag) or a wait for one, the device.

use super::*;

impl<B: Backend> Loop<'_, B> {
    /// The IO cleared the controller stack: allocate a request or wait.
    /// `true`: it got one now; else it waits in the request queue
    /// (`blk_mq_get_tag` found no free tag), and whoever issued it decides
    /// whether that blocks a submitter.
    pub(super) fn enqueue_request(&mut self, io: Io, now: Instant) -> bool {
        if let Some(f) = self.flights.get_mut(io.id) {
            // the stack's charge travels with the IO to its completion
            f.io.cost_vtime = io.cost_vtime;
            f.alloc_at = now;
            if f.kind == FlightKind::Writeback {
                if let Some(pc) = &mut self.cache.pc {
                    pc.writeback_dispatched();
                }
            }
        }
        if self.rq.alloc(&io, now) {
            self.start(io.id, now);
            true
        } else {
            if let Some(f) = self.flights.get_mut(io.id) {
                f.started_at = TAG_WAIT;
            }
            false
        }
    }

    /// The IO got a request slot at `now`.
    pub(super) fn start(&mut self, id: IoId, now: Instant) {
        let Some(f) = self.flights.get_mut(id) else {
            return;
        };
        let waited = f.started_at == TAG_WAIT;
        f.started_at = now;
        let (io, alloc_at) = (f.io, f.alloc_at);
        self.begin_service(&io, alloc_at, now);
        if waited {
            self.tag_granted(id, now);
        }
    }

    /// `id` waited for a tag and got one at `now`: the task asleep in
    /// `blk_mq_get_tag` (the submitter of a job, when it was the job's
    /// submit call that found no tag) wakes up. Its submit call returns, or
    /// for a split bio the rest waiting on `current->bio_list` is cut
    /// (`__submit_bio_noacct` goes on with the next bio once
    /// `blk_mq_submit_bio` returned for the front piece).
    #[cold]
    #[inline(never)]
    pub(super) fn tag_granted(&mut self, id: IoId, now: Instant) {
        let Some(f) = self.flights.get(id) else {
            return;
        };
        let j = f.job as usize;
        let by = (f.kind == FlightKind::Job
            && j < self.jobs.len()
            && self.jobs[j].state == SlotState::Blocked(id))
        .then_some(j);
        if f.io.flags.contains(IoFlags::FRAGMENT) {
            self.resumed.push((id, by));
            self.resume_splits(now, None);
        } else if let Some(j) = by {
            self.submitter_released(j, id, now);
        }
    }

    /// Is `id` waiting for a tag?
    pub(super) fn waits_for_tag(&self, id: IoId) -> bool {
        self.flights
            .get(id)
            .is_some_and(|f| f.started_at == TAG_WAIT)
    }

    /// The device starts serving `io` (it holds a request since `now`).
    #[inline(always)]
    pub(super) fn begin_service(&mut self, io: &Io, alloc_at: Instant, now: Instant) {
        if self.abandoned {
            // the run is giving up: the IO is dropped with its flight
            return;
        }
        if !io.flags.contains(IoFlags::PASSTHROUGH) {
            self.stack.on_start(io, alloc_at, now);
            self.disk.start(io.op, now);
        }
        self.backend.submit(io, now);
    }

    /// Job `j` issues `jio` at `now`: the IO gets an in-flight slot, and its
    /// submit call returns after `submit_ns` (or enters the block layer at
    /// once when that is 0).
    #[inline(always)]
    pub(super) fn issue(&mut self, j: usize, jio: &JobIo, now: Instant) {
        if self.jobs[j].null {
            self.issue_null(j, *jio, now);
            return;
        }
        if self.cache.pc.is_some() && self.jobs[j].buffered && self.issue_buffered(j, *jio, now) {
            return;
        }
        let id = self.insert_job_flight(j, jio, now);
        // sqthread_poll: the job writes the SQ ring and makes no system
        // call; the kernel's polling thread takes the IO in
        if self.host.submit_ns > 0 && !self.jobs[j].engine.sqpoll {
            let returns_at = now + Duration(self.host.submit_ns);
            self.jobs[j].state = SlotState::Submitting(returns_at, id);
        } else {
            self.enter_block_layer(j, id, now);
        }
    }

    /// Job `j`'s `jio` gets an in-flight slot at `now`; its id.
    #[inline(always)]
    pub(super) fn insert_job_flight(&mut self, j: usize, jio: &JobIo, now: Instant) -> IoId {
        let io = self.job_io(j, jio, now);
        self.flights.insert_with(|id| Flight {
            kind: FlightKind::Job,
            job: j as u32,
            jio: *jio,
            io: Io { id, ..io },
            issue_time: now,
            alloc_at: now,
            started_at: now,
        })
    }

    /// The block-layer IO of job `j`'s `jio` (its id is set by the slab).
    #[inline]
    pub(super) fn job_io(&self, j: usize, jio: &JobIo, now: Instant) -> Io {
        let slot = &self.jobs[j];
        let mut flags = if jio.ddir == Ddir::Write && slot.job.spec().direct {
            IoFlags::SYNC
        } else if jio.ddir == Ddir::Trim && slot.engine.trim_resets_zone {
            IoFlags::ZONE_RESET
        } else {
            IoFlags::default()
        };
        if jio.verify_list {
            flags = flags.with(IoFlags::VERIFY_LIST);
        }
        if jio.after_sleep {
            flags = flags.with(IoFlags::AFTER_SLEEP);
        }
        Io {
            ioprio: jio.ioprio,
            id: IoId::default(),
            submitter: blkqos_core::Submitter(j as u32),
            group: slot.group,
            op: slot.engine.device_op(jio.ddir),
            flags: slot.engine.flags(flags),
            offset: jio.offset,
            len: jio.len,
            submitted_at: now,
            cost_vtime: 0,
        }
    }

    /// The submitter of `id`, blocked in a controller, is released at
    /// `now`: its submit call returns, or a batched one goes on with the
    /// IOs after `id`.
    pub(super) fn submitter_released(&mut self, j: usize, id: IoId, now: Instant) {
        if self.jobs[j].batch.is_some() {
            self.jobs[j].state = SlotState::Committing(now);
        } else {
            self.jobs[j].state = SlotState::Runnable;
            self.finish_submit(j, id, now);
        }
    }

    /// Enter the block layer: pass the stack, maybe block the submitter.
    #[inline(always)]
    pub(super) fn enter_block_layer(&mut self, j: usize, id: IoId, now: Instant) {
        let f = self.flights.get_mut(id).expect("flight exists");
        // copied out before the store into it (a read across a store that
        // has not landed waits for it)
        let mut io = f.io;
        io.submitted_at = now;
        f.io.submitted_at = now;
        let verdict = if io.flags.contains(IoFlags::PASSTHROUGH) {
            // no bio: straight to a request
            StackVerdict::Ready
        } else {
            self.stack.submit(&mut io, now)
        };
        f.io.cost_vtime = io.cost_vtime;
        match verdict {
            StackVerdict::Ready => {
                // the IO asks for a request at once and, with a tag, the
                // submit call returns (finish_submit + enqueue_request in
                // one slab lookup)
                f.issue_time = now;
                f.alloc_at = now;
                if self.rq.alloc(&io, now) {
                    f.started_at = now;
                    self.jobs[j].job.submitted(now);
                    self.begin_service(&io, now, now);
                } else {
                    f.started_at = TAG_WAIT;
                    self.tag_wait(j, id, now);
                }
            }
            StackVerdict::Queued => self.finish_submit(j, id, now),
            // with sqthread_poll the kernel's polling thread waits, not
            // the job: its IOs behind queue up in the controller in order
            StackVerdict::Blocked if self.jobs[j].engine.sqpoll => self.finish_submit(j, id, now),
            StackVerdict::Blocked => self.jobs[j].state = SlotState::Blocked(id),
            StackVerdict::Split => {
                if !self.split(io, now, Some(j), None) {
                    self.finish_submit(j, id, now);
                }
            }
        }
    }

    /// Job `j`'s IO `id` found no free tag at `now`: `blk_mq_get_tag`
    /// puts the submitting task to sleep (`sbitmap_prepare_to_wait`,
    /// `io_schedule`) until a completion frees one
    /// (`blk_mq_put_tag` → `sbitmap_queue_wake_up`), so the submit call
    /// returns only then ([`Loop::tag_granted`]) and its `slat` includes
    /// the wait. With sqthread_poll it is the kernel's polling thread that
    /// sleeps: the job's call (a ring write) returns, and the IOs it queues
    /// behind wait in the request queue in order.
    #[cold]
    #[inline(never)]
    pub(super) fn tag_wait(&mut self, j: usize, id: IoId, now: Instant) {
        if self.jobs[j].engine.sqpoll {
            self.jobs[j].job.submitted(now);
        } else {
            self.jobs[j].state = SlotState::Blocked(id);
        }
    }

    pub(super) fn finish_submit(&mut self, j: usize, id: IoId, now: Instant) {
        if let Some(f) = self.flights.get_mut(id) {
            f.issue_time = now;
        }
        self.jobs[j].job.submitted(now);
    }
}
