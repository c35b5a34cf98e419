//! Reaping completions as fio's `io_u_queued_complete` does (per-IO
//! latencies, histograms, logs, errors), the job's syncs and its end.

use super::*;

impl Job {
    /// Completed IOs arrived in the job's completion ring by `now` (the
    /// driver calls this when the job waits for a completion).
    ///
    /// The job reaps them as fio's getevents calls do: with the default
    /// `iodepth_batch_complete_min=1` (`_max` defaults to the min), a full
    /// queue reaps exactly one completion per call and the rest stay in the
    /// ring until the next reap, where their clat ends; quiesce (rate and
    /// thinktime sleeps) and the end of the job reap everything.
    #[inline]
    pub fn reap(&mut self, batch: &[Reaped], now: Instant) {
        if let Phase::Reap { reaped_at_start } = self.phase {
            if self.ring.is_empty() && self.reaped == reaped_at_start {
                // the common case, a full queue getting its next
                // completion: reap the oldest straight from the batch
                // (exactly what pushing it through the ring would do)
                if let Some((first, rest)) = batch.split_first() {
                    self.count_reap_batch(1);
                    self.reap_one(*first, now);
                    if !rest.is_empty() {
                        self.queue_completions(rest);
                    }
                    return;
                }
            }
        }
        self.reap_queued(batch, now);
    }

    /// [`Job::reap`] through the ring.
    #[inline(never)]
    pub(super) fn reap_queued(&mut self, batch: &[Reaped], now: Instant) {
        self.queue_completions(batch);
        match self.phase {
            Phase::Reap { reaped_at_start } => {
                if self.reaped == reaped_at_start {
                    self.reap_n(1, now);
                }
            }
            Phase::Quiesce { .. } => {
                while !self.ring.is_empty() {
                    self.reap_n(1, now);
                }
            }
            Phase::Drain | Phase::PassEnd => self.reap_drain(now),
            _ => self.reap_n(self.ring.len(), now),
        }
    }

    /// The end of a pass or of the job: fio's `do_io` (and `do_verify`)
    /// reaps what is in flight with one `io_u_queued_complete(td,
    /// cur_depth)`, a getevents call whose minimum is every IO in flight,
    /// so nothing is reaped until the last one completed and all of them
    /// end their clat then. After an error fio's `cleanup_pending_aio`
    /// first reaps what is there (`io_u_queued_complete(td, 0)`); that is
    /// the one-by-one reap here.
    pub(super) fn reap_drain(&mut self, now: Instant) {
        if self.failed.error != 0 || self.ring.len() >= self.in_flight as usize {
            self.reap_n(self.ring.len(), now);
        }
    }

    /// `io_submit_mode=offload`: each IO has a worker of its own that
    /// submits it and waits for it (fio `rate-submit.c`).
    #[inline]
    pub fn offloaded(&self) -> bool {
        self.spec.submit.mode == IoSubmitMode::Offload
    }

    /// `io_submit_mode=offload`: the IO's worker reaped it the moment it
    /// completed, at `at` (fio `io_workqueue_fn`: one `io_u_queued_complete`
    /// of one event per worker), so its clat ends there whatever the job
    /// is doing; a job waiting for a free io_u goes on.
    pub fn reap_offloaded(&mut self, r: Reaped, at: Instant) {
        debug_assert!(self.offloaded());
        self.count_reap_batch(1);
        self.reap_one(r, at);
    }

    /// Completions wait in the ring until a getevents call reaps them.
    pub(super) fn queue_completions(&mut self, batch: &[Reaped]) {
        // one push per completion: batches are short (often empty or one),
        // and `extend`'s generic path costs more than the pushes themselves
        for r in batch {
            self.ring.push_back(*r);
        }
    }

    /// Reap the `n` oldest completions of the ring at `now` as one
    /// getevents batch.
    pub(super) fn reap_n(&mut self, n: usize, now: Instant) {
        let n = n.min(self.ring.len());
        if n == 0 {
            return;
        }
        self.count_reap_batch(n);
        for _ in 0..n {
            let r = self.ring.pop_front().expect("n <= ring length");
            self.reap_one(r, now);
        }
    }

    /// One getevents call returned `n` completions (fio `io_u_mark_complete`).
    #[inline]
    pub(super) fn count_reap_batch(&mut self, n: usize) {
        if !self.in_ramp() {
            self.stats.complete_batches[JobStats::batch_index(n as u32)] += 1;
        }
    }

    /// Account one reaped completion at `now`: latencies and samples, or
    /// the error.
    #[inline(never)]
    pub(super) fn reap_one(&mut self, r: Reaped, now: Instant) {
        if self.plain_reap && r.error == 0 && !self.in_ramp() {
            self.reap_plain(r, now);
            return;
        }
        let in_ramp = self.in_ramp();
        self.in_flight -= 1;
        self.reaped += 1;
        let d = r.io.ddir;
        if let Some(z) = &mut self.zbd {
            z.reaped(&r.io, r.error);
        }
        if let Some(v) = &mut self.verify {
            v.last_done_ddir = d;
            if d == Ddir::Write {
                v.log.write_done(r.io.offset, r.io.len);
            }
        }
        if r.error != 0 {
            self.reap_error(&r, in_ramp);
            return;
        }
        self.io_blocks[d] += 1;
        self.io_bytes[d] += r.bytes_done;
        if in_ramp {
            return;
        }
        if self.spec.gtod_reduce {
            self.reap_untimed(&r);
            return;
        }
        self.reap_timed(r, now);
    }

    /// [`Job::reap_one`] for a job with nothing but counts and latencies
    /// to record (`plain_reap`), for an IO that succeeded after the ramp.
    #[inline(always)]
    pub(super) fn reap_plain(&mut self, r: Reaped, now: Instant) {
        self.in_flight -= 1;
        self.reaped += 1;
        let d = r.io.ddir;
        self.io_blocks[d] += 1;
        self.io_bytes[d] += r.bytes_done;
        let (slat, clat, lat) = self.latencies(&r, now);
        let taken = [
            slat.map(|s| s.as_ns()),
            Some(clat.as_ns()),
            Some(lat.as_ns()),
        ];
        let hists = self.hist_mask();
        let ds = &mut self.stats.dirs[d];
        ds.record_some(r.bytes_done, taken, hists);
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
        self.stats.lat_buckets.mark(clat.as_ns());
        self.samples.bytes[d] += r.bytes_done;
        self.samples.ios[d] += 1;
    }

    /// A successful IO's latencies after the ramp (fio
    /// account_io_completion): the latency probe, the latency samples the
    /// options keep (disable_slat/clat/lat), per priority, the latency
    /// buckets, the per-IO logs and the bw/iops sample counts.
    #[inline(always)]
    pub(super) fn reap_timed(&mut self, r: Reaped, now: Instant) {
        let d = r.io.ddir;
        let (slat, clat, lat) = self.latencies(&r, now);
        if d != Ddir::Trim {
            // fio account_io_completion: a read or write over the target
            let blocks = self.completed_blocks();
            if let Some(p) = &mut self.lat.probe {
                let step = p.completed(lat, now, blocks);
                self.lat_step(step, d, now);
            }
        }
        let hists = self.hist_mask();
        // fio account_io_completion: disable_lat, disable_clat; io_u.c:
        // disable_slat
        let sp = &self.spec;
        let taken = [
            slat.filter(|_| !sp.disable_slat).map(|s| s.as_ns()),
            (!sp.disable_clat).then(|| clat.as_ns()),
            (!sp.disable_lat).then(|| lat.as_ns()),
        ];
        let ds = &mut self.stats.dirs[d];
        ds.record_some(r.bytes_done, taken, hists);
        if !ds.prios.is_empty() {
            // fio add_lat_sample / add_clat_sample: total latencies by
            // priority with lat_percentiles, completion latencies without
            let (ns, hist) = if hists.lat {
                (lat.as_ns(), true)
            } else {
                (clat.as_ns(), hists.clat)
            };
            ds.record_prio(r.io.prio_index, ns, hist);
        }
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
        if !self.spec.disable_clat {
            // io_u_mark_latency comes with the clat sample
            self.stats.lat_buckets.mark(clat.as_ns());
        }
        if self.log.is_some() {
            self.log_io(&r, now, slat, clat, lat);
        }
        self.samples.bytes[d] += r.bytes_done;
        self.samples.ios[d] += 1;
    }

    /// An IO reaped at `now`: (slat — None when the engine has none —,
    /// clat, lat).
    #[inline(always)]
    pub(super) fn latencies(
        &self,
        r: &Reaped,
        now: Instant,
    ) -> (Option<Duration>, Duration, Duration) {
        let lat = now - r.io.start_time;
        if self.slat_none {
            (None, lat, lat)
        } else {
            (
                Some(r.issue_time - r.io.start_time),
                now - r.issue_time,
                lat,
            )
        }
    }

    /// Which latencies get percentile histograms (`*_percentiles`).
    #[inline(always)]
    pub(super) fn hist_mask(&self) -> HistMask {
        HistMask {
            slat: self.spec.slat_percentiles,
            clat: self.spec.clat_percentiles,
            lat: self.spec.lat_percentiles,
        }
    }

    /// `gtod_reduce=1`: fio takes no time stamps, so the IO counts and
    /// bytes are all it records (no slat/clat/lat, no latency buckets, no
    /// bw/iops samples).
    pub(super) fn reap_untimed(&mut self, r: &Reaped) {
        let ds = &mut self.stats.dirs[r.io.ddir];
        ds.io_bytes += r.bytes_done;
        ds.total_ios += 1;
        if r.bytes_done < r.io.len {
            ds.short_ios += 1;
        }
    }

    /// Engines whose IO completes inside the submit call record no slat:
    /// sync engines, and `null` at iodepth 1 (`FIO_Q_COMPLETED`).
    pub(super) fn no_slat(&self) -> bool {
        let e = self.spec.ioengine;
        e.is_sync() || (e == crate::spec::IoEngine::Null && self.iodepth == 1)
    }

    /// A completed IO to the logs; with per-IO bw/iops logs, the report's
    /// bw/iops statistics take the same per-IO values (fio
    /// `add_bw_sample`, `add_iops_sample`).
    #[cold]
    #[inline(never)]
    pub(super) fn log_io(
        &mut self,
        r: &Reaped,
        now: Instant,
        slat: Option<Duration>,
        clat: Duration,
        lat: Duration,
    ) {
        let ms = (now - self.epoch).as_ms();
        let d = r.io.ddir;
        let Some(l) = &mut self.log else { return };
        if let Some(h) = &mut l.hist {
            let counted = self.spec.clat_percentiles;
            h.clat(ms, d, r.bytes_done, clat.as_ns(), counted);
        }
        let from = l.pending.len();
        l.io(
            ms,
            d,
            r.bytes_done,
            r.io.offset,
            r.io.ioprio,
            slat.map(|s| s.as_ns()),
            clat.as_ns(),
            lat.as_ns(),
        );
        let ds = &mut self.stats.dirs[d];
        for s in &l.pending[from..] {
            match s.kind {
                LogKind::Bw => ds.bw.add(s.value),
                LogKind::Iops => ds.iops.add(s.value),
                _ => {}
            }
        }
    }

    /// A completion with an error: counted, and it stops the job unless
    /// `continue_on_error` / `ignore_error` make it non-fatal.
    pub(super) fn reap_error(&mut self, r: &Reaped, in_ramp: bool) {
        let d = r.io.ddir;
        let ignored = self.spec.ignore_error.non_fatal(d == Ddir::Read, r.error);
        if !in_ramp || ignored {
            self.stats.total_err += 1;
            if self.stats.first_error == 0 {
                self.stats.first_error = r.error;
            }
        }
        self.failed.ios += 1;
        if !ignored && self.failed.error == 0 {
            self.failed.error = r.error;
            self.failed.first = Some(JobFailure {
                errno: r.error,
                op: FailedOp::from(d),
                offset: r.io.offset,
                len: r.io.len,
            });
        }
        if !in_ramp {
            // fio counts every issued IO in total_ios, failed ones too
            self.stats.dirs[d].total_ios += 1;
        }
    }

    /// Did the job issue any write?
    pub(super) fn wrote_any(&self) -> bool {
        let w = &self.stats.dirs[Ddir::Write];
        w.total_ios > 0 || w.io_bytes > 0
    }

    /// The `end_fsync` started by [`JobAction::Fsync`] returned at `now`:
    /// the job is done (its runtime includes the sync, as fio's does).
    pub fn fsync_done(&mut self, now: Instant) {
        match self.phase {
            Phase::VerifySync => {
                if let Some(v) = &mut self.verify {
                    v.verifying = true;
                    v.drop_cache = true;
                }
                self.phase = Phase::Top;
            }
            Phase::Fsync => {
                self.phase = Phase::Done;
                self.finish(now);
            }
            Phase::Sync { started } => {
                // fio io_completed → account_io_completion →
                // add_sync_clat_sample (issue to completion); the count is
                // total_io_u[DDIR_SYNC]. end_fsync (TD_FSYNCING) is neither.
                if !self.in_ramp() {
                    let ns = (now - started).as_ns();
                    self.stats.sync_ios += 1;
                    self.stats.sync_lat.add(ns);
                    self.stats.sync_hist.record(ns);
                }
                self.phase = Phase::Think;
            }
            _ => {}
        }
    }

    /// The sync ended with `errno` (`EIO` for a failed writeback of the
    /// file, as `fsync(2)` reports it): counted as an error of the write
    /// direction (fio `td_error_type`), which stops the job unless
    /// `continue_on_error` / `ignore_error` make it non-fatal for writes.
    pub fn fsync_failed(&mut self, now: Instant, errno: i32) {
        let ignored = self.spec.ignore_error.non_fatal(false, errno);
        if !self.in_ramp() || ignored {
            self.stats.total_err += 1;
            if self.stats.first_error == 0 {
                self.stats.first_error = errno;
            }
        }
        self.failed.ios += 1;
        if !ignored && self.failed.error == 0 {
            self.failed.error = errno;
            self.failed.first = Some(JobFailure {
                errno,
                op: FailedOp::Sync,
                offset: 0,
                len: 0,
            });
        }
        match self.phase {
            Phase::Fsync => {
                self.phase = Phase::Done;
                self.finish(now);
            }
            Phase::Sync { .. } => self.phase = Phase::Think,
            // fio do_verify: a failed sync ends the job before the read-back
            Phase::VerifySync => self.phase = Phase::Drain,
            _ => {}
        }
    }

    /// `fsync=N` / `fdatasync=N`: the last IO issued was a write and the
    /// write count is a multiple of N (fio `get_rw_ddir`).
    pub(super) fn sync_due(&self) -> bool {
        let writes = self.io_issues[Ddir::Write];
        let every = |n: u32| n > 0 && writes.is_multiple_of(u64::from(n));
        self.last_issued_write
            && writes > 0
            && (every(self.spec.fsync_blocks) || every(self.spec.fdatasync_blocks))
    }

    pub(super) fn finish(&mut self, now: Instant) {
        self.finished_at = Some(now);
        if self.in_ramp() {
            return;
        }
        let ms = (now - self.epoch).as_ms();
        if let Some(l) = &mut self.log {
            l.finish(ms);
        }
        let elapsed_us = (now - self.started).as_us();
        let runtime_ms = elapsed_us.div_ceil(1000);
        let per_dir = self.verify_runtimes_us(now);
        for d in Ddir::ALL {
            if self.stats.dirs[d].io_bytes > 0 {
                self.stats.dirs[d].runtime_ms = match per_dir {
                    Some(us) => us[d].div_ceil(1000),
                    None => runtime_ms,
                };
            }
        }
        self.stats.job_runtime_ms = (now - self.epoch).as_ms();
        self.stats.latency_depth = self.depth_limit();
    }
}
