//! Jobs that start when others end and jobs that stop others when they
//! end: `wait_for` (fio `backend.c: waitee_running`: a job starts once no
//! job of the named name runs) and `exitall` / `exitall_on_error` with
//! `exit_what` (fio `thread_main`'s end and `fio_terminate_threads`).

use super::{start::Gate, JobSlot, Loop, SlotState};
use crate::backend::Backend;
use blkqos_workload::spec_run::ExitWhat;
use std::collections::BTreeSet;

/// The run's exit rules.
#[derive(Debug, Default)]
pub(super) struct Exits {
    /// The fio processes (scenario invocations) with `exitall` (fio's
    /// global `exitall_on_terminate`).
    exitall: BTreeSet<u32>,
    /// Some job ends others (`exitall`, `exitall_on_error`): the loop
    /// checks the jobs' ends.
    pub(super) any: bool,
}

impl Exits {
    /// The exit rules of the clones `jobs`.
    pub(super) fn of(jobs: &[JobSlot]) -> Self {
        let exitall: BTreeSet<u32> = jobs
            .iter()
            .map(|s| &s.job.spec().control)
            .filter(|c| c.exitall)
            .map(|c| c.invocation)
            .collect();
        let any = !exitall.is_empty() || jobs.iter().any(|s| s.job.spec().control.exitall_on_error);
        Exits { exitall, any }
    }

    /// Does fio process `invocation` have `exitall`?
    pub(super) fn exitall(&self, invocation: u32) -> bool {
        self.exitall.contains(&invocation)
    }

    /// Does any fio process have `exitall`?
    pub(super) fn any_exitall(&self) -> bool {
        !self.exitall.is_empty()
    }
}

/// For each clone, the clones it waits for (`wait_for=NAME`: every clone
/// of every job named `NAME`, its own name's clones aside). A clone that
/// waits gets a gate if it had none (no stonewall, no delay).
pub(super) fn link_waits(jobs: &mut [JobSlot]) {
    for j in 0..jobs.len() {
        let spec = jobs[j].job.spec();
        let Some(waitee) = spec.control.wait_for.clone() else {
            continue;
        };
        let own = spec.name.clone();
        let inv = spec.control.invocation;
        let waits: Vec<usize> = (0..jobs.len())
            .filter(|&w| {
                let s = jobs[w].job.spec();
                s.name != own && s.name == waitee && s.control.invocation == inv
            })
            .collect();
        if waits.is_empty() {
            continue;
        }
        let slot = &mut jobs[j];
        slot.waits_for = waits;
        if slot.gate.is_none() {
            slot.gate = Some(Gate { after: 0, at: None });
            slot.state = SlotState::Pending;
        }
    }
}

impl<B: Backend> Loop<'_, B> {
    /// Have all the clones clone `j` waits for ended?
    pub(super) fn waitees_done(&self, j: usize) -> bool {
        self.jobs[j]
            .waits_for
            .iter()
            .all(|&w| self.jobs[w].job.is_done())
    }

    /// After the jobs acted: a clone that has just ended stops others when
    /// `exitall` is on in the run, or it failed with `exitall_on_error`
    /// (fio: `exitall_on_terminate || (exitall_error && td->error)`).
    /// Whether it stopped a clone that had not ended.
    #[inline(never)]
    pub(super) fn check_exits(&mut self) -> bool {
        let mut stopped = false;
        for j in 0..self.jobs.len() {
            let slot = &mut self.jobs[j];
            if slot.exit_seen || !slot.job.is_done() {
                continue;
            }
            slot.exit_seen = true;
            let c = &slot.job.spec().control;
            let inv = c.invocation;
            let exitall = self.exits.exitall(inv);
            if exitall || (c.exitall_on_error && slot.job.error() != 0) {
                let (what, group) = (c.exit_what, slot.job.spec().group_id);
                stopped |= self.terminate(inv, group, what);
            }
        }
        stopped
    }

    /// fio `fio_terminate_threads(groupid, exit_what)` in the fio process
    /// `invocation`: marks the jobs to stop. A running clone drains and ends; one not started never starts.
    fn terminate(&mut self, invocation: u32, group: u32, what: ExitWhat) -> bool {
        let mut stopped = false;
        for s in &mut self.jobs {
            if s.job.spec().control.invocation != invocation {
                // another fio process
                continue;
            }
            let hit = match what {
                ExitWhat::Group => s.job.spec().group_id == group,
                // runstate >= TD_RUNNING: started clones only
                ExitWhat::Stonewall => s.state != SlotState::Pending,
                ExitWhat::All => true,
            };
            if hit && !s.terminated && !s.job.is_done() {
                s.terminated = true;
                stopped = true;
            }
        }
        stopped
    }
}
