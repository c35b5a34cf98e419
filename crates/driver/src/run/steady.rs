//! Steady-state detection in the run (fio 3.33 `steadystate.c`:
//! `steadystate_setup`, `steadystate_check`, run by the helper thread once
//! a second): each running job's IOPS and bandwidth since the previous
//! check, summed over its reporting group with `group_reporting`, go to
//! the detector that keeps the samples; when it attains steady state the
//! job, or every job of its group, stops.

use super::{JobSlot, SlotState};
use blkqos_core::{Duration, Instant};

/// fio's `STEADYSTATE_MSEC`: the helper thread's check period.
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The key of a reporting group: fio process and `groupid`.
fn group_key(s: &JobSlot) -> (u32, u32) {
    let spec = s.job.spec();
    (spec.control.invocation, spec.group_id)
}

/// fio `steadystate_setup`: without `group_reporting` every job keeps its
/// samples; with it only the last job of each run of jobs of one
/// reporting group does. Whether any job detects steady state.
pub(super) fn setup(jobs: &mut [JobSlot]) -> bool {
    let mut any = false;
    for j in 0..jobs.len() {
        let Some(ss) = &jobs[j].job.stats.steadystate else {
            continue;
        };
        any = true;
        let spec = ss.spec;
        if !jobs[j].job.spec().group_reporting {
            continue;
        }
        let key = group_key(&jobs[j]);
        // prev_td: the next job that detects with group_reporting
        let next = jobs[j + 1..]
            .iter()
            .find(|s| s.job.stats.steadystate.is_some() && s.job.spec().group_reporting);
        if next.is_some_and(|s| group_key(s) == key) {
            jobs[j].job.stats.steadystate =
                Some(blkqos_workload::steadystate::SteadyState::new(spec, false));
        }
    }
    any
}

/// fio `steadystate_check` at `now`.
pub(super) fn check(jobs: &mut [JobSlot], now: Instant) {
    let mut prev_group: Option<(u32, u32)> = None;
    let (mut group_bw, mut group_iops, mut group_ramp_over) = (0u64, 0u64, 0u32);
    for j in 0..jobs.len() {
        let slot = &mut jobs[j];
        // runstate <= TD_SETTING_UP or >= TD_EXITED: not looked at
        if slot.state == SlotState::Pending || slot.job.is_done() {
            continue;
        }
        let key = group_key(slot);
        let reporting = slot.job.spec().group_reporting;
        let epoch = slot.job.epoch();
        let (ios, bytes) = slot.job.completed_ios_bytes();
        let Some(ss) = &mut slot.job.stats.steadystate else {
            continue;
        };
        if ss.attained {
            continue;
        }
        if !reporting || prev_group != Some(key) {
            (group_bw, group_iops, group_ramp_over) = (0, 0, 0);
        }
        prev_group = Some(key);
        // samples begin one second after ss_ramp has passed
        if !ss.ramp_over && now - epoch >= ss.spec.ramp + CHECK_EVERY {
            ss.ramp_over = true;
        }
        // mtime_since; fio would divide by zero for checks under 1 ms apart
        let rate_ms = (now.0.saturating_sub(ss.prev_time_ns) / 1_000_000).max(1);
        ss.prev_time_ns = now.0;
        if ss.ramp_over {
            // unsigned as in fio: a ramp_time's reset of the counters wraps
            group_bw = group_bw
                .wrapping_add(bytes.wrapping_sub(ss.prev_bytes).wrapping_mul(1000) / rate_ms);
            group_iops =
                group_iops.wrapping_add(ios.wrapping_sub(ss.prev_ios).wrapping_mul(1000) / rate_ms);
            group_ramp_over += 1;
        }
        ss.prev_ios = ios;
        ss.prev_bytes = bytes;
        if (reporting && !ss.has_data) || group_ramp_over == 0 {
            continue;
        }
        if ss.add_sample(group_iops, group_bw) {
            attain(jobs, j, reporting.then_some(key));
        }
    }
}

/// Steady state reached: the job, or with `group_reporting` every job of
/// its group, is marked and stops (fio `fio_mark_td_terminate`).
fn attain(jobs: &mut [JobSlot], j: usize, group: Option<(u32, u32)>) {
    for (i, s) in jobs.iter_mut().enumerate() {
        let hit = match group {
            Some(key) => group_key(s) == key,
            None => i == j,
        };
        if !hit {
            continue;
        }
        if let Some(ss) = &mut s.job.stats.steadystate {
            ss.attained = true;
        }
        if !s.job.is_done() {
            s.terminated = true;
        }
    }
}
