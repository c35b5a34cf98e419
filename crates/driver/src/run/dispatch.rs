//! The controllers' timers and the dispatch worker that issues what
//! they release (blk-throttle's `kthrotld` work, iocost's waiters).

use super::*;

impl<B: Backend> Loop<'_, B> {
    /// Run the controller timers due at `now`: released IOs go to the
    /// request queue, released submitters continue.
    #[inline(always)]
    pub(super) fn run_controller_timers(&mut self, now: Instant) {
        if self.stack.next_deadline().is_none_or(|d| d > now) {
            return;
        }
        self.run_due_controller_timers(now);
    }

    /// [`Loop::run_controller_timers`] when a timer is due.
    #[inline(never)]
    pub(super) fn run_due_controller_timers(&mut self, now: Instant) {
        self.ready.clear();
        self.unblocked.clear();
        self.stack
            .on_timer(now, &mut self.ready, &mut self.unblocked);
        let unblocked = std::mem::take(&mut self.unblocked);
        if !self.cache.ctrl_blocked.is_empty() {
            self.cache
                .ctrl_blocked
                .retain(|id| !unblocked.iter().any(|io| io.id == *id));
        }
        for io in &unblocked {
            let j = io.submitter.0 as usize;
            let by = (j < self.jobs.len() && self.jobs[j].state == SlotState::Blocked(io.id))
                .then_some(j);
            if io.flags.contains(IoFlags::FRAGMENT) {
                // the rest of its bio may wait for it (after the batch)
                self.resumed.push((io.id, by));
            } else if let Some(j) = by {
                let ready = self.ready.iter().any(|r| r.id == io.id);
                if self.jobs[j].batch.is_some() && ready && self.plug_released(j, io) {
                    self.plug.released.push(io.id);
                } else if ready && !io.needs_split(self.max_io) && !self.host_dispatch_delay() {
                    // iocost woke the submitter (`iocg_wake_fn`): it goes
                    // on in `blk_mq_submit_bio` to allocate a request, and
                    // sleeps again in `blk_mq_get_tag` if none is free:
                    // released below once its IO holds a tag
                    continue;
                }
                self.submitter_released(j, io.id, now);
            }
        }
        self.unblocked = unblocked;
        let ready = std::mem::take(&mut self.ready);
        let delay = self.dispatch_delay();
        // one work item: a later batch never overtakes an earlier one
        let defer = (delay != 0)
            .then(|| (now + Duration(delay)).max(self.deferred.back().map_or(now, |d| d.0)));
        for io in &ready {
            if !self.plug.released.is_empty() && self.plug.released.contains(&io.id) {
                continue;
            }
            // the worker that issues it (`blk_throtl_dispatch_work_fn`, or
            // the submitter iocost woke) ran after a sleep
            let io = &Io {
                flags: io.flags.with(IoFlags::AFTER_SLEEP),
                ..*io
            };
            if let Some(f) = self.flights.get_mut(io.id) {
                f.io.flags = io.flags;
            }
            if io.needs_split(self.max_io) {
                self.split(*io, now, None, defer);
            } else if self.queue_request(*io, now, defer) && !io.flags.contains(IoFlags::FRAGMENT) {
                // a submitter woken from a controller found a free tag (a
                // piece's submitter goes on in resume_splits)
                let j = io.submitter.0 as usize;
                if j < self.jobs.len() && self.jobs[j].state == SlotState::Blocked(io.id) {
                    self.submitter_released(j, io.id, now);
                }
            }
        }
        self.ready = ready;
        self.plug.released.clear();
        if !self.resumed.is_empty() {
            self.resume_splits(now, defer);
        }
    }

    /// A timer-released IO goes to the request queue now, or when the
    /// dispatch worker runs (`defer`). `true`: it got a request now.
    #[inline]
    pub(super) fn queue_request(&mut self, io: Io, now: Instant, defer: Option<Instant>) -> bool {
        match defer {
            None => self.enqueue_request(io, now),
            Some(at) => {
                self.deferred.push_back((at, io));
                false
            }
        }
    }

    /// Controller-released IOs go to the request queue through the
    /// dispatch worker ([`HostModel::timer_dispatch_ns`]): then a released
    /// submitter returns at once and its IO waits for a tag in the worker.
    #[inline]
    pub(super) fn host_dispatch_delay(&self) -> bool {
        self.host.timer_dispatch_ns != 0 || self.host.timer_dispatch_jitter_ns != 0
    }

    /// How long after a controller timer its released IOs reach the
    /// request queue (0 when the host model has no dispatch worker delay).
    pub(super) fn dispatch_delay(&mut self) -> u64 {
        let h = self.host;
        if h.timer_dispatch_jitter_ns == 0 {
            return h.timer_dispatch_ns;
        }
        self.rng = xorshift(self.rng);
        h.timer_dispatch_ns + self.rng % (h.timer_dispatch_jitter_ns + 1)
    }

    /// Issue the timer-released IOs whose dispatch worker has run by `now`.
    #[inline(always)]
    pub(super) fn run_deferred(&mut self, now: Instant) {
        if self.deferred.front().is_some_and(|d| d.0 <= now) {
            self.run_due_deferred(now);
        }
    }

    /// [`Loop::run_deferred`] when some are due.
    #[inline(never)]
    pub(super) fn run_due_deferred(&mut self, now: Instant) {
        while self.deferred.front().is_some_and(|d| d.0 <= now) {
            let (_, io) = self.deferred.pop_front().expect("front exists");
            // the worker waits for a tag, not the IO's job
            self.enqueue_request(io, now);
        }
    }
}
