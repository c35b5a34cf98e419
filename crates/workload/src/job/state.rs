//! A job's timers (ramp end, bw/iops samples), what it reports while it
//! runs (statistics so far, ETA, logs) and its accessors.

use super::*;

impl Job {
    /// fio `reset_all_stats` at the end of `ramp_time`: statistics, epoch
    /// and the rate schedule restart.
    ///
    /// fio also zeroes `io_blocks`, `io_issues` and `rwmix_issues`
    /// (`reset_all_stats`, `reset_io_counters`) but not
    /// `last_thinktime_blocks`: after the ramp a thinktime job runs without
    /// pauses until it has again completed as many blocks as it had when it
    /// last paused (fio 3.33: `ramp_time=1 runtime=2 thinktime=10ms`, psync,
    /// reports ~290 IOs, not ~200). We do the same.
    pub(super) fn end_ramp(&mut self, now: Instant) {
        self.ramp_end = None;
        // the steady-state detector is not a statistic: fio keeps
        // `td->ss` (only its clock restarts with the epoch)
        let steadystate = self.stats.steadystate.take();
        self.stats = fresh_stats(&self.spec);
        self.stats.steadystate = steadystate;
        for (_, r) in self.pace.rate.iter_mut() {
            r.issued_bytes = 0;
            r.next_us = 0;
            r.last_us = 0;
        }
        self.io_blocks = PerDir::all(0);
        self.io_bytes = PerDir::all(0);
        self.io_issues = PerDir::all(0);
        self.mix.issues = 0;
        if let Some(v) = &mut self.verify {
            v.phase_start = None;
            v.elapsed_us = PerDir::all(0);
        }
        self.started = now;
        self.start_epoch(now);
        if let Some(p) = &mut self.lat.probe {
            p.reset(now, 0);
        }
    }

    /// The depth the job fills before it reaps (fio `queue_full`): the
    /// iodepth, or the latency probe's depth.
    #[inline]
    pub(super) fn depth_limit(&self) -> u32 {
        self.lat
            .probe
            .as_ref()
            .map_or(self.iodepth, LatProbe::depth)
    }

    /// fio `iodepth_low`, fixed up as `fixup_options` does (0 or more
    /// than the iodepth: the iodepth as written, before an io_uring engine
    /// rounds the depth up).
    pub(super) fn iodepth_low(&self) -> u32 {
        if self.offloaded() {
            // the job itself never reaps with offload
            return self.iodepth;
        }
        let written = self.spec.iodepth.max(1);
        match self.spec.submit.iodepth_low {
            0 => written.min(self.iodepth),
            n => n.min(written).min(self.iodepth),
        }
    }

    pub(super) fn completed_blocks(&self) -> u64 {
        self.io_blocks.values().sum()
    }

    /// What the probe asked for: a quiesce (or the final run's) for the
    /// loop to do, or the job's end.
    pub(super) fn lat_step(&mut self, step: LatStep, ddir: Ddir, now: Instant) {
        match step {
            LatStep::Go => {}
            LatStep::Quiesce => {
                if self.lat.pending == LatStep::Go {
                    self.lat.pending = LatStep::Quiesce;
                }
            }
            LatStep::FinalRun => self.lat.pending = LatStep::FinalRun,
            LatStep::Done => self.lat.done = true,
            // fio lat_fatal: the IO fails with ETIMEDOUT
            LatStep::Fatal => self.fail(ETIMEDOUT, ddir, now),
        }
    }

    #[inline]
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }
    pub fn clone_index(&self) -> u32 {
        self.clone
    }
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
    #[inline]
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }
    /// Errno that stopped the job (0 if none).
    pub fn error(&self) -> i32 {
        self.failed.error
    }
    /// What failed with the errno that stopped the job.
    pub fn failure(&self) -> Option<JobFailure> {
        self.failed.first
    }
    /// Failed IOs and syncs, counted whether or not they stopped the job
    /// (ramp and `ignore_error` ones too).
    pub fn failed_ios(&self) -> u64 {
        self.failed.ios
    }
    /// The job's epoch (its start, or its ramp's end).
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// IOs and bytes completed since the epoch, ramp included (fio
    /// `td->io_blocks`, `td->io_bytes` summed over the directions), for
    /// steady-state detection.
    pub fn completed_ios_bytes(&self) -> (u64, u64) {
        (self.io_blocks.values().sum(), self.io_bytes.values().sum())
    }

    /// When the job finished (after its last IO was reaped).
    pub fn finished_at(&self) -> Option<Instant> {
        self.finished_at
    }
    /// Is the job in its ramp period (stats not kept)?
    #[inline]
    pub fn in_ramp(&self) -> bool {
        self.ramp_end.is_some()
    }
    /// Next time the job needs attention without an IO event: ramp end or a
    /// bw/iops sample point.
    #[inline]
    pub fn next_timer(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Done) {
            return None;
        }
        // no samples are taken during the ramp (the sample clock restarts
        // with the epoch at its end): the ramp end is the only timer
        if let Some(t) = self.ramp_end {
            return Some(t);
        }
        let t = self.samples.next_bw.min(self.samples.next_iops);
        (t != Instant::MAX).then_some(t)
    }

    /// Run the job's timers due at `now`: ramp end, bw/iops samples
    /// (fio's helper thread `__add_samples`: a sample per direction that had
    /// IO in the window, windows advance by exactly the averaging time).
    pub fn on_timer(&mut self, now: Instant) {
        if let Some(t) = self.ramp_end {
            if now >= t {
                self.end_ramp(now);
            }
            return;
        }
        let bw_t = self.spec.bw_avg_time;
        while self.samples.next_bw <= now && self.phase != Phase::Done {
            let spent_ms = bw_t.as_ms().max(1);
            for d in Ddir::ALL {
                let delta = self.samples.bytes[d] - self.samples.sampled_bytes[d];
                if delta == 0 {
                    continue;
                }
                let kib_s = delta * 1000 / spent_ms / 1024;
                if !self.per_io_log(LogKind::Bw) {
                    self.stats.dirs[d].bw.add(kib_s);
                }
                self.log_rate(LogKind::Bw, now, d, kib_s);
                self.samples.sampled_bytes[d] = self.samples.bytes[d];
            }
            self.samples.next_bw += bw_t;
        }
        let iops_t = self.spec.iops_avg_time;
        while self.samples.next_iops <= now && self.phase != Phase::Done {
            let spent_ms = iops_t.as_ms().max(1);
            for d in Ddir::ALL {
                let delta = self.samples.ios[d] - self.samples.sampled_ios[d];
                if delta == 0 {
                    continue;
                }
                let iops = delta * 1000 / spent_ms;
                if !self.per_io_log(LogKind::Iops) {
                    self.stats.dirs[d].iops.add(iops);
                }
                self.log_rate(LogKind::Iops, now, d, iops);
                self.samples.sampled_ios[d] = self.samples.ios[d];
            }
            self.samples.next_iops += iops_t;
        }
    }

    /// The job logs `kind` per IO (`log_avg_msec=0`): fio then feeds that
    /// log's report statistics per IO too (`per_unit_log`).
    pub(super) fn per_io_log(&self, kind: LogKind) -> bool {
        self.log
            .as_ref()
            .is_some_and(|l| l.per_io() && l.wants(kind))
    }

    /// A windowed bw/iops sample to the averaged log.
    pub(super) fn log_rate(&mut self, kind: LogKind, now: Instant, d: Ddir, value: u64) {
        let ms = (now - self.epoch).as_ms();
        if let Some(l) = &mut self.log {
            l.rate_sample(kind, ms, d, value);
        }
    }

    /// Samples logged since the last call, for the driver to write out
    /// (empty when the job writes no log).
    pub fn log_pending(&mut self) -> Option<&mut Vec<LogSample>> {
        self.log.as_mut().map(|l| &mut l.pending)
    }

    /// The job's statistics as a report at `now` shows them while it
    /// runs (fio `__show_running_run_stats`: a running job's runtime of
    /// each direction that moved data is the time since its start, its
    /// total run time the time since its epoch); a job that ended, or is
    /// still in its ramp, shows what it has.
    pub fn stats_so_far(&self, now: Instant) -> JobStats {
        let mut st = self.stats.clone();
        if self.finished_at.is_some() || self.in_ramp() || now < self.started {
            return st;
        }
        let runtime_ms = (now - self.started).as_ms();
        for d in st.dirs.values_mut() {
            if d.io_bytes > 0 {
                d.runtime_ms = runtime_ms;
            }
        }
        st.job_runtime_ms = (now - self.epoch).as_ms();
        st.latency_depth = self.depth_limit();
        st
    }

    /// fio's estimate of the seconds the job has left (`eta.c:
    /// thread_eta`): a running job's from the share of its bytes or of its
    /// runtime done, whichever is less; a job in its ramp or not started
    /// its runtime and ramp; an ended one 0 (rate-based guesses for jobs
    /// not started are left out).
    pub fn eta_s(&self, now: Instant, started: bool) -> u64 {
        if self.finished_at.is_some() {
            return 0;
        }
        let timeout_s = self.spec.runtime.map_or(0, |d| d.as_us() / 1_000_000);
        if !started || self.in_ramp() {
            let mut t = self.spec.runtime.map_or(0, |d| d.as_us());
            if t == 0 {
                return 0;
            }
            t = (t + self.spec.ramp_time.as_us()) / 1_000_000;
            if started {
                let ramp_s = (now - self.epoch).as_ms().div_ceil(1000);
                if ramp_s <= t {
                    t -= ramp_s;
                }
            }
            return t;
        }
        let elapsed_s = (now - self.epoch).as_ms().div_ceil(1000);
        let done: u64 = self.stats.dirs.values().map(|d| d.io_bytes).sum();
        let mut perc = if self.io_limit > 0 {
            (done as f64 / self.io_limit as f64).min(1.0)
        } else {
            0.0
        };
        if self.spec.time_based {
            perc = if timeout_s > 0 {
                perc.min(elapsed_s as f64 / timeout_s as f64)
            } else {
                0.0
            };
        }
        let mut eta = if perc == 0.0 {
            timeout_s
        } else {
            ((elapsed_s as f64 * (1.0 / perc)) as u64).saturating_sub(elapsed_s)
        };
        if timeout_s > 0 && eta > timeout_s.saturating_sub(elapsed_s) {
            eta = timeout_s.saturating_sub(elapsed_s);
        }
        eta
    }

    /// Histogram log lines (`write_hist_log`) produced since the last
    /// call, for the driver to write out.
    pub fn hist_pending(&mut self) -> Option<&mut String> {
        self.log
            .as_mut()
            .and_then(|l| l.hist.as_mut())
            .map(|h| &mut h.pending)
    }
}
