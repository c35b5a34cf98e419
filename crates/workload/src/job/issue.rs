//! fio's `do_io` loop for one job: what the job does next (`next_action`
//! and its steps: think, sleep, rate, drain) and the issue of an IO.

use super::*;

impl Job {
    pub(super) fn us_since_epoch(&self, now: Instant) -> u64 {
        (now - self.epoch).as_us()
    }

    pub(super) fn runtime_exceeded(&self, now: Instant) -> bool {
        self.ramp_end.is_none() && self.end_at.is_some_and(|e| now >= e)
    }

    pub(super) fn size_done(&self) -> bool {
        let ios_done = self.ios_limit > 0 && self.io_issues.values().sum::<u64>() >= self.ios_limit;
        ios_done || (!self.spec.time_based && self.issued_bytes_total >= self.io_limit)
    }

    /// fio `get_rw_ddir` (rwmix part): per-issue draw with fio's
    /// `rwmix_issues` bookkeeping.
    pub(super) fn pick_mix_ddir(&mut self) -> Ddir {
        let rw = self.spec.rw;
        if rw.is_mixed() {
            if self.io_issues[self.mix.ddir] >= self.mix.issues {
                let v = self.draws.mix.between(1, 100); // fio get_rand_ddir
                let d = if v <= u64::from(self.spec.rwmixread) {
                    Ddir::Read
                } else {
                    Ddir::Write
                };
                if d != self.mix.ddir {
                    // fio `set_rwmix_bytes`, called while `rwmix_ddir` is
                    // still the old direction: the issues of the old
                    // direction times the new direction's share
                    let new_pct = if d == Ddir::Read {
                        u64::from(self.spec.rwmixread)
                    } else {
                        100 - u64::from(self.spec.rwmixread)
                    };
                    self.mix.issues = self.io_issues[self.mix.ddir] * new_pct / 100;
                }
                self.mix.ddir = d;
            }
            self.mix.ddir
        } else if rw.has_read() {
            Ddir::Read
        } else if rw.has_write() {
            Ddir::Write
        } else {
            Ddir::Trim
        }
    }

    pub(super) fn rate_limited(&self) -> bool {
        self.pace.rate.values().any(|r| r.bps > 0)
    }

    /// fio `rate_ddir`: `Ok(ddir)` to issue now, `Err((ddir, until))` to
    /// quiesce and sleep first. `None` when the runtime ends before.
    pub(super) fn rate_ddir(
        &self,
        ddir: Ddir,
        now: Instant,
    ) -> Option<Result<Ddir, (Ddir, Instant)>> {
        let now_us = self.us_since_epoch(now);
        if self.pace.rate[ddir].next_us <= now_us {
            return Some(Ok(ddir));
        }
        let odir = ddir.mix_other().filter(|_| self.spec.rw.is_mixed());
        let other_share = if ddir == Ddir::Read {
            100 - self.spec.rwmixread
        } else {
            self.spec.rwmixread
        };
        let (dir, usec) = match odir {
            Some(odir) if other_share > 0 => {
                if self.pace.rate[odir].next_us <= now_us {
                    return Some(Ok(odir));
                }
                if self.pace.rate[ddir].next_us <= self.pace.rate[odir].next_us {
                    (ddir, self.pace.rate[ddir].next_us - now_us)
                } else {
                    (odir, self.pace.rate[odir].next_us - now_us)
                }
            }
            _ => (ddir, self.pace.rate[ddir].next_us - now_us),
        };
        let mut until = self.epoch + Duration::from_us(now_us + usec);
        if let Some(end) = self.end_at.filter(|_| self.ramp_end.is_none()) {
            if now >= end {
                return None;
            }
            until = until.min(end);
        }
        Some(Err((dir, until)))
    }

    /// fio `usec_for_io`: the absolute schedule point of the next IO.
    pub(super) fn usec_for_io(&mut self, ddir: Ddir) -> u64 {
        let min_bs = self.spec.min_bs(ddir).max(1);
        let r = &mut self.pace.rate[ddir];
        if r.bps == 0 {
            return 0;
        }
        match self.spec.rate_process {
            RateProcess::Poisson => {
                let iops = (r.bps / min_bs).max(1);
                let u = self.draws.poisson[ddir].unit_open0();
                let val = ((1_000_000 / iops) as f64 * -(u.ln())) as u64;
                r.last_us += val;
                r.last_us
            }
            RateProcess::Linear => {
                let secs = r.issued_bytes / r.bps;
                let rem = r.issued_bytes % r.bps;
                rem * 1_000_000 / r.bps + secs * 1_000_000
            }
        }
    }

    /// fio `get_next_buflen`.
    /// fio `get_next_buflen`: one draw of the direction's generator (fio's
    /// `bsrange_state`) per IO unless the direction has one block size
    /// ([`len_of`], before the offset is known: the draw is kept in
    /// `bs_draw` for [`Job::next_offset`] to look at again).
    pub(super) fn next_len(&mut self, ddir: Ddir) -> u64 {
        let (min_bs, max_bs) = (self.spec.min_bs(ddir), self.spec.max_bs(ddir));
        if min_bs >= max_bs {
            return min_bs;
        }
        let draw = match self.draws.bs_pending[ddir].take() {
            Some(draw) => draw,
            None => {
                let rng = &mut self.draws.bs[ddir];
                (rng.next_u64(), rng.max())
            }
        };
        self.draws.bs_draw = draw;
        len_of(&self.spec, ddir, draw, u64::MAX)
    }

    pub(super) fn next_offset(&mut self, ddir: Ddir, len: &mut u64) -> Result<u64, NoOffset> {
        let (spec, rng_bs) = (&self.spec, &mut self.draws.bs[ddir]);
        let mut draw = Some(self.draws.bs_draw);
        // first the IO's own draw with the room known, then new draws
        let mut redraw = |room: u64| {
            let (min_bs, max_bs) = (spec.min_bs(ddir), spec.max_bs(ddir));
            if min_bs >= max_bs {
                return min_bs;
            }
            let d = draw
                .take()
                .unwrap_or_else(|| (rng_bs.next_u64(), rng_bs.max()));
            len_of(spec, ddir, d, room)
        };
        self.files
            .next_offset(ddir, len, &mut self.draws.offset, &mut redraw)
    }

    /// What the job does at `now`.
    pub fn next_action(&mut self, now: Instant) -> JobAction {
        // the loop ends in the direction of an IO to issue (one call
        // site: `issue` inlines here)
        let ddir = loop {
            let step = match self.phase {
                Phase::Done => Step::Act(JobAction::Done),
                Phase::Fsync | Phase::Sync { .. } | Phase::VerifySync => {
                    Step::Act(JobAction::Fsync)
                }
                Phase::ZoneReset { sent } => self
                    .zone_reset_step(sent, now)
                    .map_or(Step::Again, Step::Act),
                Phase::PassEnd => self.pass_end_step(now),
                Phase::Submitting => Step::Act(JobAction::WaitCompletion),
                Phase::Drain => self.drain_step(now),
                Phase::Reap { reaped_at_start } => self.reap_step(reaped_at_start, now),
                Phase::Quiesce { until, after } => self.quiesce_step(until, after, now),
                Phase::Sleep { until, after } => self.sleep_step(until, after, now),
                Phase::Think => {
                    self.think_step(now);
                    Step::Again
                }
                Phase::Top if self.plain && !self.flow_blocked => self.plain_top_step(now),
                Phase::Top => self.top_step(now),
            };
            match step {
                Step::Act(a) => return a,
                Step::Again => {}
                Step::Issue(d) => break d,
            }
        };
        self.issue(ddir, now)
    }

    /// `PassEnd`: the pass's last IOs reaped together, then what ends the
    /// pass (another loop, verify, the end).
    #[inline(always)]
    pub(super) fn pass_end_step(&mut self, now: Instant) -> Step {
        self.reap_drain(now);
        if self.in_flight > 0 {
            return Step::Act(JobAction::WaitCompletion);
        }
        self.end_pass_phase(now).map_or(Step::Again, Step::Act)
    }

    /// `Drain`: the job's last IOs reaped, then `end_fsync` or the end.
    #[inline(always)]
    pub(super) fn drain_step(&mut self, now: Instant) -> Step {
        self.reap_drain(now);
        if self.in_flight == 0 {
            // fio do_io: end_fsync when the job wrote (should_fsync)
            if self.spec.end_fsync && self.wrote_any() {
                self.phase = Phase::Fsync;
                return Step::Act(JobAction::Fsync);
            }
            self.phase = Phase::Done;
            self.finish(now);
            return Step::Act(JobAction::Done);
        }
        Step::Act(JobAction::WaitCompletion)
    }

    /// `Reap`: fio wait_for_completions: a full queue is reaped until no
    /// more than iodepth_low are in flight.
    #[inline(always)]
    pub(super) fn reap_step(&mut self, reaped_at_start: u64, now: Instant) -> Step {
        let reaped_enough = self.reaped > reaped_at_start || self.in_flight < self.depth_limit();
        if reaped_enough && self.in_flight <= self.reap_to {
            // a plain job has nothing to think about
            self.phase = if self.plain { Phase::Top } else { Phase::Think };
            return Step::Again;
        }
        if !self.ring.is_empty() {
            // one io_getevents(min=1, max=1) call
            self.reap_n(1, now);
            return Step::Again;
        }
        Step::Act(JobAction::WaitCompletion)
    }

    /// `Quiesce`: fio io_u_quiesce before a sleep until `until`.
    #[inline(always)]
    pub(super) fn quiesce_step(&mut self, until: Instant, after: After, now: Instant) -> Step {
        if self.offloaded() {
            // fio rate_ddir quiesces only inline; with offload the job's
            // own io_u_quiesce (thinktime, flow) has nothing in flight of
            // its own: the workers hold it
            self.phase = Phase::Sleep { until, after };
            return Step::Again;
        }
        // fio io_u_quiesce: io_u_queued_complete(td, 1) until nothing is
        // in flight
        while !self.ring.is_empty() {
            self.reap_n(1, now);
        }
        if self.in_flight > 0 {
            return Step::Act(JobAction::WaitCompletion);
        }
        self.phase = Phase::Sleep { until, after };
        Step::Again
    }

    /// `Sleep`: until `until`, then what the sleep was for (`after`).
    #[inline(always)]
    pub(super) fn sleep_step(&mut self, until: Instant, after: After, now: Instant) -> Step {
        if now < until {
            return Step::Act(JobAction::SleepUntil(until));
        }
        match after {
            After::IssueDir(d) => return Step::Issue(d),
            After::Top { slept_from, ddir } => {
                self.credit_thinktime(ddir, now - slept_from);
                self.pace.slept = true;
                self.phase = Phase::Top;
            }
            After::Retry => self.phase = Phase::Top,
        }
        Step::Again
    }

    /// `Think`: the thinktime due after this many blocks (a quiesce and a
    /// sleep), and fio do_io's lat_target_check at the end of each pass.
    #[inline(always)]
    pub(super) fn think_step(&mut self, now: Instant) {
        self.phase = Phase::Top;
        // fio's do_verify loop has no thinktime
        let verifying = self.verify.as_ref().is_some_and(|v| v.verifying);
        if self.spec.thinktime > Duration::ZERO && !verifying {
            let b = match self.spec.thinktime_blocks_type {
                ThinkBlocksType::Complete => self.io_blocks.values().sum::<u64>(),
                ThinkBlocksType::Issue => self.io_issues.values().sum::<u64>(),
            };
            if b >= self.pace.think_blocks + u64::from(self.spec.thinktime_blocks) {
                self.pace.think_blocks = b;
                // fio sleeps the whole thinktime even past the end of the
                // runtime (only the rate sleep is cut there); the runtime
                // check comes after it
                let until = now + self.spec.thinktime;
                let ddir = self.mix.ddir;
                self.phase = Phase::Quiesce {
                    until,
                    after: After::Top {
                        slept_from: now,
                        ddir,
                    },
                };
            }
        }
        // fio do_io: lat_target_check at the end of each pass
        if !self.in_ramp() {
            let blocks = self.completed_blocks();
            if let Some(p) = &mut self.lat.probe {
                let step = p.check(now, blocks);
                let ddir = self.mix.ddir;
                self.lat_step(step, ddir, now);
            }
        }
    }

    /// `Top` for a plain job: what [`Job::top_step`] does without a
    /// latency probe step, verify, sync, rate_min or rate wait.
    #[inline(always)]
    pub(super) fn plain_top_step(&mut self, now: Instant) -> Step {
        if self.runtime_exceeded(now) || self.size_done() || self.failed.error != 0 || self.lat.done
        {
            self.phase = Phase::Drain;
            return Step::Again;
        }
        Step::Issue(self.pick_mix_ddir())
    }

    /// `Top`: the top of fio's do_io loop: the latency probe's pending
    /// step, verify or the end of the job, a sync, the flow share,
    /// rate_min, then the direction of the next IO.
    #[inline(always)]
    pub(super) fn top_step(&mut self, now: Instant) -> Step {
        if self.lat.pending != LatStep::Go {
            // the probe's io_u_quiesce, then (final run) fio's
            // reset_all_stats
            if self.in_flight > 0 && !self.offloaded() {
                self.phase = Phase::Quiesce {
                    until: now,
                    after: After::Retry,
                };
                return Step::Again;
            }
            if self.lat.pending == LatStep::FinalRun {
                self.end_ramp(now);
            }
            self.lat.pending = LatStep::Go;
        }
        if self.verify.is_some()
            && !self.runtime_exceeded(now)
            && self.failed.error == 0
            && !self.lat.done
        {
            if let Some(a) = self.verify_step(now) {
                return Step::Act(a);
            }
            if self.phase != Phase::Top {
                return Step::Again;
            }
        } else if self.runtime_exceeded(now)
            || self.size_done()
            || self.failed.error != 0
            || self.lat.done
        {
            self.phase = Phase::Drain;
            return Step::Again;
        }
        if self.sync_due() {
            // fio get_rw_ddir: DDIR_SYNC / DDIR_DATASYNC first
            self.last_issued_write = false;
            self.phase = Phase::Sync { started: now };
            return Step::Act(JobAction::Fsync);
        }
        if self.flow_blocked {
            // fio flow_threshold_exceeded: quiesce and sleep flow_sleep,
            // or retry at once
            let sleep = self.spec.flow.sleep;
            if sleep == Duration::ZERO {
                return Step::Act(JobAction::WaitFlow);
            }
            self.phase = Phase::Quiesce {
                until: now + sleep,
                after: After::Retry,
            };
            return Step::Again;
        }
        if self.rate_min_missed(now) {
            return Step::Again;
        }
        self.rate_step(now)
    }

    /// The direction of the next IO, through the rate limit when the job
    /// has one (fio rate_ddir: issue now, wait, or end).
    #[inline(always)]
    pub(super) fn rate_step(&mut self, now: Instant) -> Step {
        let ddir = self.pick_mix_ddir();
        if !self.rate_limited() {
            return Step::Issue(ddir);
        }
        match self.rate_ddir(ddir, now) {
            None => {
                self.phase = Phase::Drain;
                Step::Again
            }
            // fio: `td->rwmix_ddir = rate_ddir(td, ddir)`
            Some(Ok(d)) => {
                self.mix.ddir = d;
                Step::Issue(d)
            }
            Some(Err((d, until))) => {
                self.mix.ddir = d;
                self.phase = Phase::Quiesce {
                    until,
                    after: After::IssueDir(d),
                };
                Step::Again
            }
        }
    }

    /// `flow=`: the driver says whether the job is over its share.
    pub fn set_flow_blocked(&mut self, blocked: bool) {
        self.flow_blocked = blocked;
    }

    /// When the job's runtime ends (None: not time-limited, or in ramp).
    pub fn end_at(&self) -> Option<Instant> {
        self.end_at.filter(|_| self.ramp_end.is_none())
    }

    /// `rate_min=` (fio `__check_min_rate`): after a 2 s settle period,
    /// every `rate_cycle` the bytes completed in a direction since the last
    /// check must reach `rate_min` per second; if not the job fails with
    /// EIO ("rate_min not met"). True when it failed now.
    pub(super) fn rate_min_missed(&mut self, now: Instant) -> bool {
        if self.in_ramp() || self.spec.rate_min == crate::spec::PerDir::all(None) {
            return false;
        }
        if now - self.started < Duration::from_secs(2) {
            return false;
        }
        for d in Ddir::ALL {
            let Some(min) = self.spec.rate_min.get(d) else {
                continue;
            };
            let bytes = self.stats.dirs[d].io_bytes;
            let (last_bytes, last_at) = self.pace.checked[d];
            let Some(at) = last_at else {
                self.pace.checked[d] = (bytes, Some(now));
                continue;
            };
            let spent_ms = (now - at).as_ms();
            if spent_ms < self.spec.rate_cycle.as_ms() {
                continue;
            }
            let got = (bytes - last_bytes) * 1000 / spent_ms.max(1);
            if got < min || bytes - last_bytes < min {
                self.fail(crate::spec_ext::EIO, d, now);
                return true;
            }
            self.pace.checked[d] = (bytes, Some(now));
        }
        false
    }

    /// The job fails with `errno` outside an IO (fio `td_verror`).
    pub(super) fn fail(&mut self, errno: i32, ddir: Ddir, _now: Instant) {
        if self.failed.error == 0 {
            self.failed.error = errno;
            self.failed.first = Some(JobFailure {
                errno,
                op: FailedOp::from(ddir),
                offset: 0,
                len: 0,
            });
        }
        self.phase = Phase::Drain;
    }

    /// `rate_ignore_thinktime=1`: credit the pause to the rate schedule
    /// (fio `handle_thinktime`).
    pub(super) fn credit_thinktime(&mut self, ddir: Ddir, slept: Duration) {
        if !self.spec.rate_ignore_thinktime {
            return;
        }
        let total_us = slept.as_us();
        let bs = self.spec.min_bs(ddir);
        let r = &mut self.pace.rate[ddir];
        if total_us == 0 || r.bps == 0 {
            return;
        }
        let missed = r.bps * total_us / 1_000_000;
        let usperop = bs * 1_000_000 / r.bps;
        let over = if usperop <= total_us { bs } else { 0 };
        r.issued_bytes += missed.saturating_sub(over);
        r.last_us += total_us;
    }

    #[inline]
    pub(super) fn issue(&mut self, ddir: Ddir, now: Instant) -> JobAction {
        // after a rate sleep the runtime may have ended meanwhile
        if self.runtime_exceeded(now) {
            self.phase = Phase::Drain;
            return self.next_action(now);
        }
        let ddir = match &self.zbd {
            Some(z) => z.adjust_ddir(ddir),
            None => ddir,
        };
        if let Some(a) = self.zoned_start(now) {
            return a;
        }
        // no cut to the bytes left: fio's last IO may pass `io_size`
        // (`do_io` stops once `bytes_issued` reaches it)
        let mut len = self.next_len(ddir);
        let offset = match self.next_offset(ddir, &mut len) {
            Ok(offset) => offset,
            Err(NoOffset::Again) => {
                // fio `set_io_u_file`: the IO unit is filled again in the
                // next file (or a new pass), its direction drawn again;
                // the length fio had not drawn yet is kept for it
                if self.spec.min_bs(ddir) < self.spec.max_bs(ddir) {
                    self.draws.bs_pending[ddir] = Some(self.draws.bs_draw);
                }
                self.phase = Phase::Top;
                return self.next_action(now);
            }
            Err(NoOffset::JobDone) => {
                // the file ended before the IO (a strided zone at its end,
                // or the map of the last file): fio's fill_io_u fails and
                // the job's IO is done
                self.io_limit = self.issued_bytes_total;
                self.phase = Phase::Drain;
                return self.next_action(now);
            }
        };
        let (ioprio, prio_index) = self.prio.pick(ddir, len);
        // read, and cleared only when set: no store on the usual path
        let after_sleep = self.pace.slept;
        if after_sleep {
            self.pace.slept = false;
        }
        let io = JobIo {
            ddir,
            offset,
            len,
            start_time: now,
            verify_list: false,
            after_sleep,
            ioprio,
            prio_index,
        };
        if self.zbd.is_some() {
            return self.issue_zoned(io, now);
        }
        self.commit(io)
    }

    /// Issue `io` (its offset and length final).
    #[inline(always)]
    pub(super) fn commit(&mut self, io: JobIo) -> JobAction {
        let JobIo {
            ddir, offset, len, ..
        } = io;
        if let Some(v) = &mut self.verify {
            v.pass_issued += len;
            if ddir == Ddir::Write {
                v.log.log_write(offset, len);
            }
        }
        self.in_flight += 1;
        self.io_issues[ddir] += 1;
        self.last_issued_write = ddir == Ddir::Write;
        self.issued_bytes_total += len;
        self.pace.rate[ddir].issued_bytes += len;
        if !self.in_ramp() {
            self.stats.issued[ddir] += 1;
            // fio io_u_mark_depth counts the submitting thread's depth: an
            // offload worker's is always 1
            let depth = if self.offloaded() { 1 } else { self.in_flight };
            self.stats.depth_level[JobStats::depth_index(depth)] += 1;
            if self.submit_batch == 1 {
                self.stats.submit_batches[JobStats::batch_index(1)] += 1;
            }
        }
        if self.rate_limited() {
            self.pace.rate[ddir].next_us = self.usec_for_io(ddir);
        }
        self.phase = Phase::Submitting;
        JobAction::Issue(io)
    }

    /// Stop issuing (signal): behave as if the runtime ended now.
    pub fn stop(&mut self) {
        if !matches!(
            self.phase,
            Phase::Done
                | Phase::Drain
                | Phase::Submitting
                | Phase::Fsync
                | Phase::Sync { .. }
                | Phase::VerifySync
                | Phase::ZoneReset { .. }
        ) {
            self.phase = Phase::Drain;
        }
        self.end_at = Some(Instant::ZERO);
        self.ramp_end = None;
    }

    /// The run gave up waiting for the job's IO (an abandoned drain): the
    /// job ends at `now` with what it reaped; what is still in flight
    /// never completes for it. Like fio's threads when fio is terminated,
    /// its runtime ends there.
    pub fn abandon(&mut self, now: Instant) {
        if self.phase != Phase::Done {
            self.phase = Phase::Done;
            self.end_at = Some(Instant::ZERO);
            self.finish(now);
        }
    }

    /// Would [`Job::next_action`] just say `WaitCompletion` now, changing
    /// nothing? True for a full queue with nothing left to reap, the state
    /// a QD>1 job is in after nearly every submit: the driver can skip the
    /// call.
    #[inline]
    pub fn must_wait(&self) -> bool {
        match self.phase {
            Phase::Reap { reaped_at_start } => {
                self.reaped == reaped_at_start
                    && self.in_flight >= self.depth_limit()
                    && self.ring.is_empty()
            }
            _ => false,
        }
    }

    /// IOs this job queues before one submit call commits them.
    #[inline]
    pub fn submit_batch(&self) -> u32 {
        self.submit_batch
    }

    /// A submit call committed `n` queued IOs (`io_u_mark_submit`: fio's
    /// "submit" distribution; only when [`Job::submit_batch`] > 1, else
    /// each issue counts as a call of one).
    pub fn count_submit_call(&mut self, n: u32) {
        if !self.in_ramp() {
            self.stats.submit_batches[JobStats::batch_index(n)] += 1;
        }
    }

    /// The submit call of the last issued IO returned at `now`.
    #[inline]
    pub fn submitted(&mut self, _now: Instant) {
        debug_assert_eq!(self.phase, Phase::Submitting);
        self.phase = if self.in_flight >= self.depth_limit() {
            Phase::Reap {
                reaped_at_start: self.reaped,
            }
        } else {
            Phase::Think
        };
    }
}
