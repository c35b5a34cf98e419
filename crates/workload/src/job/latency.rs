//! `latency_target`: fio's queue-depth probing (fio 3.33 `io_u.c`:
//! `lat_target_init`, `lat_target_failed`, `__lat_target_failed`,
//! `lat_target_success`, `lat_target_check`, `queue_full`). The job
//! starts at depth 1, doubles it while a window's IOs meet the target,
//! bisects between the last good and the first bad depth, and once a
//! step leaves the depth where it was runs one more window at that depth
//! with fresh statistics, then ends.

use crate::spec_submit::LatencyTarget;
use blkqos_core::{Duration, Instant};

/// What the job has to do after a probe step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing beyond the new depth.
    Go,
    /// The depth went down: wait for every IO in flight first (fio
    /// `io_u_quiesce` in `__lat_target_failed`).
    Quiesce,
    /// The depth settled: quiesce, restart the statistics and the runtime
    /// (fio `reset_all_stats`), run one last window.
    FinalRun,
    /// The last window ran: the job is done (fio `td->done = 1`).
    Done,
    /// An IO over the target at depth 1 with `latency_percentile=100`:
    /// fio fails it with ETIMEDOUT (`lat_fatal`).
    Fatal,
}

#[derive(Clone, Debug)]
pub(super) struct LatProbe {
    cfg: LatencyTarget,
    iodepth: u32,
    /// fio `latency_qd`, `_high`, `_low`.
    qd: u32,
    qd_high: u32,
    qd_low: u32,
    /// fio `latency_ts`: the start of the window.
    window_start: Instant,
    /// Completed blocks when the window started (fio `latency_ios`).
    window_ios: u64,
    /// IOs over the target in the window (fio `latency_failed`).
    failed: u64,
    /// fio `latency_stable_count`.
    stable_count: u32,
    /// fio `latency_end_run`.
    end_run: bool,
}

impl LatProbe {
    pub(super) fn new(cfg: LatencyTarget, iodepth: u32, now: Instant, blocks: u64) -> Self {
        let mut p = LatProbe {
            cfg,
            iodepth,
            qd: 1,
            qd_high: iodepth,
            qd_low: 1,
            window_start: now,
            window_ios: blocks,
            failed: 0,
            stable_count: 0,
            end_run: false,
        };
        p.init(now, blocks);
        p
    }

    /// The depth the job may fill (fio `queue_full` with a target).
    pub(super) fn depth(&self) -> u32 {
        self.qd
    }

    /// fio `lat_target_init`.
    fn init(&mut self, now: Instant, blocks: u64) {
        self.end_run = false;
        self.window_start = now;
        self.qd = 1;
        self.qd_high = self.iodepth;
        self.qd_low = 1;
        self.window_ios = blocks;
    }

    /// fio `lat_target_reset` (from `reset_all_stats`: the end of the ramp,
    /// or the start of the final run, which keeps the depth).
    pub(super) fn reset(&mut self, now: Instant, blocks: u64) {
        if !self.end_run {
            self.init(now, blocks);
        }
    }

    fn new_cycle(&mut self, now: Instant, blocks: u64) {
        self.window_start = now;
        self.window_ios = blocks;
        self.failed = 0;
    }

    /// A read or write completed with total latency `lat` (fio
    /// `account_io_completion` → `lat_target_failed`).
    pub(super) fn completed(&mut self, lat: Duration, now: Instant, blocks: u64) -> Step {
        if lat <= self.cfg.target {
            return Step::Go;
        }
        if self.cfg.percentile == 100.0 {
            return self.ramp_down(now, blocks);
        }
        self.failed += 1;
        Step::Go
    }

    /// fio `__lat_target_failed`.
    fn ramp_down(&mut self, now: Instant, blocks: u64) -> Step {
        if self.qd == 1 {
            return Step::Fatal;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable_count = 0;
        self.new_cycle(now, blocks);
        Step::Quiesce
    }

    /// fio `lat_target_success`.
    fn ramp_up(&mut self, now: Instant, blocks: u64) -> Step {
        let before = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            self.stable_count += 1;
            if self.stable_count >= 3 {
                self.qd_high += 1;
                self.stable_count = 0;
            }
        }
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.iodepth);
        let mut step = Step::Go;
        if !self.cfg.keep_running && self.qd == before {
            if self.end_run {
                step = Step::Done;
            } else {
                self.end_run = true;
                step = Step::FinalRun;
            }
        }
        // after a final-run reset the window counts from zero blocks
        let blocks = if step == Step::FinalRun { 0 } else { blocks };
        self.new_cycle(now, blocks);
        step
    }

    /// fio `lat_target_check`, once per pass of the job's loop outside the
    /// ramp: judge the window when it is over.
    pub(super) fn check(&mut self, now: Instant, blocks: u64) -> Step {
        if now - self.window_start < self.cfg.window {
            return Step::Go;
        }
        let ios = blocks - self.window_ios;
        // 0 IOs: fio's 0/0 is NaN, which fails the comparison
        let success_pct = (ios as f64 - self.failed as f64) / ios as f64 * 100.0;
        if success_pct >= self.cfg.percentile {
            self.ramp_up(now, blocks)
        } else {
            match self.ramp_down(now, blocks) {
                // fio ignores __lat_target_failed's verdict here
                Step::Fatal => Step::Go,
                s => s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LatencyTarget {
        LatencyTarget {
            target: Duration::from_us(500),
            window: Duration::from_ms(10),
            percentile: 99.0,
            keep_running: false,
        }
    }

    #[test]
    fn doubles_then_bisects_then_settles() {
        let mut p = LatProbe::new(cfg(), 32, Instant::ZERO, 0);
        let mut now = Instant::ZERO;
        let mut blocks = 0;
        let mut depths = vec![p.depth()];
        // every window's IOs meet the target up to depth 8, fail above
        let mut last = Step::Go;
        for _ in 0..20 {
            now += Duration::from_ms(10);
            blocks += 100;
            if p.depth() > 8 {
                for _ in 0..5 {
                    p.completed(Duration::from_ms(1), now, blocks);
                }
            }
            last = p.check(now, blocks);
            depths.push(p.depth());
            if last == Step::Done {
                break;
            }
        }
        assert_eq!(last, Step::Done);
        assert_eq!(&depths[..6], &[1, 2, 4, 8, 16, 12]);
        assert_eq!(*depths.last().unwrap(), 8);
    }

    #[test]
    fn an_empty_window_fails_as_fios_nan_does() {
        let mut p = LatProbe::new(cfg(), 32, Instant::ZERO, 0);
        assert_eq!(p.check(Instant::from_ms(10), 0), Step::Go);
        p.qd = 4;
        assert_eq!(p.check(Instant::from_ms(20), 0), Step::Quiesce);
        assert_eq!(p.depth(), 2);
    }
}
