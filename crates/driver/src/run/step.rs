//! Stepping a job: its state moved on (a submit call returned, a sleep
//! ended), then what it does next and the driver carrying it out; and
//! giving up the drain.

use super::*;

impl<B: Backend> Loop<'_, B> {
    /// Let job `j` act until it waits.
    #[inline(always)]
    pub(super) fn step_job(
        &mut self,
        j: usize,
        now: Instant,
        stopping: bool,
    ) -> Result<(), RunError> {
        let stopping = stopping || self.jobs[j].terminated;
        if matches!(self.jobs[j].state, SlotState::Pending) && !self.try_start(j, now, stopping) {
            return Ok(());
        }
        let slot = &mut self.jobs[j];
        if matches!(slot.state, SlotState::Waiting) && !stopping && !slot.ring.is_empty() {
            // nothing changed for the job since it said WaitCompletion but
            // the completions that arrived: asking again would give the
            // same answer, so hand them over right away
            slot.state = SlotState::Runnable;
            slot.job.reap(&slot.ring, now);
            slot.ring.clear();
        }
        loop {
            match self.resume(j, now, stopping) {
                Resume::Stop => return Ok(()),
                Resume::Again => continue,
                Resume::Act => {}
            }
            let slot = &mut self.jobs[j];
            let acts_again = if slot.flow.is_none() && slot.batch.is_none() {
                // the common case apart, the action matched where the job
                // wrote it (no copies of it between)
                let action = slot.own_action(now, stopping);
                self.act(j, &action, now)?
            } else {
                let Some(action) = self.job_action(j, now, stopping) else {
                    continue;
                };
                self.act(j, &action, now)?
            };
            if !acts_again {
                return Ok(());
            }
        }
    }

    /// Move job `j` on from its state at `now`: a submit call or batch
    /// that finished enters the block layer, a state that waits stops the
    /// step, a job that may act becomes runnable.
    #[inline(always)]
    pub(super) fn resume(&mut self, j: usize, now: Instant, stopping: bool) -> Resume {
        let slot = &mut self.jobs[j];
        match slot.state {
            SlotState::Sleeping(t) if now < t && !stopping => Resume::Stop,
            SlotState::Blocked(_)
            | SlotState::Fsyncing(_)
            | SlotState::Flushing(_)
            | SlotState::ZoneResetting
            | SlotState::Pending => Resume::Stop,
            SlotState::Submitting(t, _) if now < t => Resume::Stop,
            SlotState::Submitting(_, id) => {
                slot.state = SlotState::Runnable;
                self.enter_block_layer(j, id, now);
                Resume::Again
            }
            SlotState::Committing(t) | SlotState::Returning(t) if now < t => Resume::Stop,
            SlotState::Committing(_) => {
                self.enter_batch(j, now);
                Resume::Again
            }
            SlotState::Returning(_) => {
                self.finish_commit(j, now);
                Resume::Again
            }
            SlotState::Sleeping(_)
            | SlotState::Waiting
            | SlotState::Runnable
            | SlotState::FlowWait => {
                slot.state = SlotState::Runnable;
                Resume::Act
            }
        }
    }

    /// What runnable job `j` does next (its flow share updated first);
    /// None when its batch took a step of its own: resume it again.
    #[inline(always)]
    pub(super) fn job_action(
        &mut self,
        j: usize,
        now: Instant,
        stopping: bool,
    ) -> Option<JobAction> {
        if self.jobs[j].flow.is_some() {
            self.update_flow(j);
        }
        if self.jobs[j].batch.is_some() {
            self.batched_action(j, now, stopping)
        } else {
            Some(self.jobs[j].own_action(now, stopping))
        }
    }

    /// Carry out job `j`'s `action`: true when the job may act again at
    /// once, false when the step ends here.
    #[inline(always)]
    pub(super) fn act(
        &mut self,
        j: usize,
        action: &JobAction,
        now: Instant,
    ) -> Result<bool, RunError> {
        match *action {
            JobAction::Issue(ref jio) => {
                if self.jobs[j].flow.is_some() {
                    self.count_flow_issue(j);
                }
                self.issue(j, jio, now);
                Ok(true)
            }
            // a zone lock another clone holds: stepped again as the
            // run goes on, like a clone over its flow share
            JobAction::WaitFlow | JobAction::WaitZone => {
                self.jobs[j].state = SlotState::FlowWait;
                Ok(false)
            }
            JobAction::ZoneReset { offset, len } => {
                self.start_zone_reset(j, offset, len, now);
                Ok(false)
            }
            JobAction::WaitCompletion => {
                let slot = &mut self.jobs[j];
                if slot.ring.is_empty() {
                    if slot.job.in_flight() == 0 {
                        return Err(RunError::Stalled {
                            job: slot.job.spec().name.clone(),
                            at: now,
                        });
                    }
                    slot.state = SlotState::Waiting;
                    return Ok(false);
                }
                slot.job.reap(&slot.ring, now);
                slot.ring.clear();
                Ok(true)
            }
            JobAction::SleepUntil(t) => {
                let late = if self.host.wake_jitter_ns > 0 {
                    self.rng = xorshift(self.rng);
                    self.rng % (self.host.wake_jitter_ns + 1)
                } else {
                    0
                };
                self.jobs[j].state = SlotState::Sleeping(t + Duration(late));
                Ok(false)
            }
            JobAction::Fsync => {
                self.start_fsync(j, now);
                Ok(false)
            }
            JobAction::Done => {
                if self.jobs[j].flow.is_some() {
                    self.leave_flow(j);
                }
                Ok(false)
            }
        }
    }

    /// Give up the drain ([`RunOptions::abandon`]): wait for the IO the
    /// backend has, completing it as usual, and submit nothing more (no
    /// controller timers, dispatch worker or flusher run again); the jobs
    /// reap what completed and end. Returns how many IOs were dropped:
    /// flights never sent to the backend and buffered writes still paused.
    #[cold]
    #[inline(never)]
    pub(super) fn abandon(&mut self) -> u64 {
        self.abandoned = true;
        while self.backend.in_flight() > 0 {
            let mut comps = std::mem::take(&mut self.comps);
            comps.clear();
            self.backend.wait(None, &mut comps);
            for c in &comps {
                self.complete(c);
            }
            self.comps = comps;
        }
        // the jobs take what completed and end now
        let now = self.backend.now();
        for s in &mut self.jobs {
            if !s.ring.is_empty() {
                s.job.reap(&s.ring, now);
                s.ring.clear();
            }
            s.job.abandon(now);
        }
        let queued: usize = self.jobs.iter().map(|s| s.copy_queue.len()).sum();
        (self.flights.len() + self.cache.pending.len() + queued) as u64
    }
}
