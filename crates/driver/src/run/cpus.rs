//! The host's CPUs that run the jobs' submitting processes
//! ([`HostModel::cpus`]), when there are fewer of them than jobs.
//!
//! A fio process runs its loop (reap what completed, submit, reap again)
//! on one CPU until it sleeps: in `io_getevents` waiting for a completion,
//! in a timed sleep, or inside a submit call that blocks (iocost's
//! `rq_qos_throttle`, a tag wait, an fsync). The scheduler does not
//! preempt it for another process that wakes meanwhile (CFS's wakeup
//! preemption needs the woken task to be far behind in vruntime, which two
//! equally busy fio processes are not), so on a one-vCPU guest a woken
//! process waits until the running one sleeps. The lab's one-vCPU trace
//! shows it (`lab/traces/c05-6.12-smp1`): after a tick's completions one
//! fio process inserts all its requests (`AAA`), then the other (`bbbb…`);
//! each null_blk tick then dispatches the runs in that order.
//!
//! The model: at most `cpus` jobs hold a CPU. A job that can act and holds
//! none waits in wake order (the pass in which it became able to act, then
//! job order) for one; a job keeps its CPU while it acts or is inside a
//! submit call, and gives it up when its step ends in a state that sleeps
//! ([`JobSlot::sleeps`]). A CPU given up is taken by the next waiter in the
//! same pass. With one CPU, the device's own work on it holds it too
//! ([`crate::backend::Backend::cpu_busy_until`]: null_blk's worker
//! dispatching a restarted queue and the interrupts completing it run
//! before the processes they woke, which then reap the whole burst).
//! Ignores: the kernel's work on a CPU of several, migration between CPUs
//! (any free CPU will do) and the scheduler's time slices (a process that
//! never sleeps keeps its CPU).

use super::{JobSlot, Loop, RunError, SlotState};
use crate::backend::Backend;
use blkqos_core::Instant;
use std::collections::VecDeque;

impl<B: Backend> Loop<'_, B> {
    /// A pass's job steps when the jobs share fewer CPUs than they are
    /// ([`Cpus`]): every job that can act asks for a CPU, the holders act
    /// (job order), and a CPU given up goes to the next waiter, which acts
    /// in the same pass.
    #[cold]
    #[inline(never)]
    pub(super) fn step_on_cpus(&mut self, now: Instant) -> Result<(), RunError> {
        if let Some(c) = self.cpus.as_mut() {
            c.stepped.fill(false);
        }
        loop {
            let Some(cpus) = self.cpus.as_mut() else {
                return Ok(());
            };
            for (j, s) in self.jobs.iter().enumerate() {
                if !cpus.stepped[j] && (s.can_act(now) || (s.terminated && !s.job.is_done())) {
                    cpus.want(j);
                }
            }
            // the device's worker and interrupts hold the only CPU
            if self.backend.cpu_busy_until().is_none_or(|t| t <= now) {
                if let Some(c) = self.cpus.as_mut() {
                    c.admit();
                }
            }
            let mut freed = false;
            for j in 0..self.jobs.len() {
                let Some(c) = self.cpus.as_mut() else {
                    return Ok(());
                };
                let s = &self.jobs[j];
                // a job acts once a pass: one that gave its CPU up sleeps
                // until an event a later pass brings
                if c.holds(j)
                    && !c.stepped[j]
                    && (s.can_act(now) || (s.terminated && !s.job.is_done()))
                {
                    c.stepped[j] = true;
                    self.step_job(j, now, false)?;
                }
                if let Some(c) = self.cpus.as_mut() {
                    freed |= c.after_step(j, &self.jobs[j]);
                }
            }
            if !freed || !self.cpus.as_ref().is_some_and(Cpus::waiting) {
                return Ok(());
            }
        }
    }
}

/// Which jobs hold one of the host's CPUs, and who waits for one.
#[derive(Debug)]
pub(super) struct Cpus {
    /// CPUs no job holds.
    free: u32,
    /// Per job: it holds a CPU.
    held: Vec<bool>,
    /// Per job: it waits in `queue`.
    queued: Vec<bool>,
    /// Jobs that can act and wait for a CPU, in wake order.
    queue: VecDeque<usize>,
    /// Per job: it acted in this pass.
    stepped: Vec<bool>,
}

impl Cpus {
    /// `cpus` CPUs for `jobs` jobs; None when every job can have one.
    pub(super) fn new(cpus: u32, jobs: usize) -> Option<Cpus> {
        (cpus > 0 && (cpus as usize) < jobs).then(|| Cpus {
            free: cpus,
            held: vec![false; jobs],
            queued: vec![false; jobs],
            queue: VecDeque::new(),
            stepped: vec![false; jobs],
        })
    }

    /// Job `j` can act: it holds a CPU, or waits for one from now on.
    pub(super) fn want(&mut self, j: usize) {
        if !self.held[j] && !self.queued[j] {
            self.queued[j] = true;
            self.queue.push_back(j);
        }
    }

    /// Give free CPUs to the waiters, first come first.
    pub(super) fn admit(&mut self) {
        while self.free > 0 {
            let Some(j) = self.queue.pop_front() else {
                return;
            };
            self.queued[j] = false;
            self.held[j] = true;
            self.free -= 1;
        }
    }

    /// Does job `j` hold a CPU?
    pub(super) fn holds(&self, j: usize) -> bool {
        self.held[j]
    }

    /// Job `j`'s step ended with `slot` in its state: a job that sleeps
    /// gives its CPU up. True when it did.
    pub(super) fn after_step(&mut self, j: usize, slot: &JobSlot) -> bool {
        if self.held[j] && slot.sleeps() {
            self.held[j] = false;
            self.free += 1;
            return true;
        }
        false
    }

    /// Is a job waiting for a CPU?
    pub(super) fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The jobs' earliest wake-up but those waiting for a CPU: their own
    /// time has come, and they act when a holder gives a CPU up (in a
    /// pass another event brings), not at a pass of their own.
    #[cold]
    #[inline(never)]
    pub(super) fn soonest_wake(&self, jobs: &[JobSlot]) -> Option<Instant> {
        jobs.iter()
            .enumerate()
            .filter(|&(j, _)| !self.queued[j])
            .filter_map(|(_, s)| s.wake())
            .min()
    }
}

impl JobSlot {
    /// Is the job's process off its CPU: asleep until an event, or done?
    /// A job that acts or is inside a submit call that has not blocked
    /// runs on its CPU.
    pub(super) fn sleeps(&self) -> bool {
        self.job.is_done()
            || !matches!(
                self.state,
                SlotState::Runnable
                    | SlotState::Submitting(..)
                    | SlotState::Committing(_)
                    | SlotState::Returning(_)
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_cpus_for_every_job_is_no_gate() {
        assert!(Cpus::new(0, 4).is_none());
        assert!(Cpus::new(2, 2).is_none());
        assert!(Cpus::new(1, 2).is_some());
    }

    #[test]
    fn waiters_take_free_cpus_in_wake_order() {
        let mut c = Cpus::new(1, 3).unwrap();
        c.want(2);
        c.want(0);
        c.want(2);
        c.admit();
        assert!(c.holds(2) && !c.holds(0));
        assert!(c.waiting());
        // the holder wants again: nothing changes
        c.want(2);
        c.admit();
        assert!(c.holds(2) && !c.holds(0));
    }
}
