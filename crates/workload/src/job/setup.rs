//! A job clone's construction and start: its streams seeded as fio seeds
//! them, its files, its epoch and ramp (fio `setup_files`, `init_random_state`,
//! the start of `thread_main`).

use super::*;

impl Job {
    /// A job clone over the region `[region_start, region_start + region_len)`.
    /// `seed` feeds every random stream when `randrepeat=0`.
    pub fn new(
        spec: JobSpec,
        clone: u32,
        region_start: u64,
        region_len: u64,
        seed: u64,
        now: Instant,
    ) -> Self {
        Self::with_files(spec, clone, &[(region_start, region_len)], seed, now)
    }

    /// A job clone over several files, each `(start, length)` on the
    /// target (`nrfiles`, `filename=a:b`, `directory`).
    pub fn with_files(
        spec: JobSpec,
        clone: u32,
        extents: &[(u64, u64)],
        seed: u64,
        now: Instant,
    ) -> Self {
        let base = if spec.randrepeat { spec.randseed } else { seed };
        let files = Files::new(&spec, extents, offset_unit(&spec));
        let zbd = zoned::ZbdJob::new(&spec, extents).map(Box::new);
        let loops = u64::from(spec.loops.max(1));
        let io_limit = spec.io_size.unwrap_or_else(|| files.total_len()) * loops;
        let ios_limit = spec.number_ios * loops;
        let mut rate = PerDir::all(RateDir::default());
        for (d, r) in rate.iter_mut() {
            r.bps = spec.rate_bytes_per_sec(d).unwrap_or(0);
        }
        let ramp_end = (spec.ramp_time > Duration::ZERO).then(|| now + spec.ramp_time);
        let epoch = now;
        let first_dir = if spec.rw.has_read() {
            Ddir::Read
        } else if spec.rw.has_write() {
            Ddir::Write
        } else {
            Ddir::Trim
        };
        let iodepth = spec.effective_iodepth();
        let verify = verify_state(&spec, io_limit / loops);
        let mut job = Job {
            verify,
            clone,
            io_limit,
            ios_limit,
            iodepth,
            submit_batch: spec.submit_batch(),
            phase: Phase::Top,
            epoch,
            started: now,
            ramp_end,
            end_at: None,
            in_flight: 0,
            issued_bytes_total: 0,
            io_issues: PerDir::all(0),
            io_blocks: PerDir::all(0),
            io_bytes: PerDir::all(0),
            last_issued_write: false,
            reaped: 0,
            ring: VecDeque::new(),
            pace: Pace::new(rate),
            mix: Mix {
                ddir: first_dir,
                issues: 0,
            },
            files,
            seed,
            flow_blocked: false,
            lat: LatTarget::default(),
            draws: Draws::new(base, clone),
            prio: PrioPicker::new(&spec.prio, Stream::new(base, clone, 8)),
            stats: job_stats(&spec),
            samples: Samples::IDLE,
            failed: Failures::default(),
            finished_at: None,
            log: JobLog::new(&spec.logs),
            zbd,
            spec,
            plain: false,
            reap_to: 0,
            slat_none: false,
            plain_reap: false,
        };
        job.set_thread_number(u64::from(clone) + 1);
        job.settle(now);
        job
    }

    /// What follows from the new job's options once it exists: the
    /// latency probe, how far a reap goes, the fast paths it may take
    /// (`plain_reap`, `plain`), and its epoch at `now`.
    pub(super) fn settle(&mut self, now: Instant) {
        if self.spec.submit.latency.enabled() {
            let cfg = self.spec.submit.latency;
            self.lat.probe = Some(LatProbe::new(cfg, self.iodepth, now, 0));
        }
        self.reap_to = self.iodepth_low();
        self.slat_none = self.no_slat();
        self.plain_reap = self.zbd.is_none()
            && self.verify.is_none()
            && self.lat.probe.is_none()
            && self.log.is_none()
            && !self.spec.gtod_reduce
            && !self.spec.disable_slat
            && !self.spec.disable_clat
            && !self.spec.disable_lat
            && self.stats.dirs.values().all(|d| d.prios.is_empty());
        self.plain = self.lat.probe.is_none()
            && self.verify.is_none()
            && self.spec.thinktime == Duration::ZERO
            && self.spec.fsync_blocks == 0
            && self.spec.fdatasync_blocks == 0
            && self.spec.rate_min == crate::spec::PerDir::all(None)
            && !self.spec.rw.is_mixed()
            && !self.rate_limited();
        self.start_epoch(now);
        if self.ramp_end.is_some() {
            self.end_at = None;
        }
    }

    /// fio's `thread_number` of this clone (1-based over every clone of
    /// the run, in job order; [`Job::new`] assumes the clone index + 1):
    /// with `randrepeat`, `random_generator=lfsr` seeds each file's
    /// register from it as fio does (`setup_random_seeds`). A seed fio
    /// cannot start the register from fails the job with EINVAL (fio:
    /// "failed initializing LFSR").
    pub fn set_thread_number(&mut self, thread_number: u64) {
        if let Some(z) = &mut self.zbd {
            z.set_td(thread_number as u32);
        }
        self.draws.bs = self.bs_generators(thread_number);
        self.draws.mix = FioRand::new(
            self.fio_seed(thread_number, crate::fio_rand::seed_index::MIX),
            false,
        );
        let seed = if self.spec.randrepeat {
            lfsr::block_offset_seed(
                self.spec.randseed,
                self.spec.randrepeat_given,
                thread_number,
            )
        } else {
            Stream::new(self.seed, self.clone, 7).below(u64::MAX)
        };
        let min_bs = Ddir::ALL
            .into_iter()
            .filter(|&d| dir_used(self.spec.rw, d))
            .map(|d| self.spec.min_bs(d))
            .min()
            .unwrap_or(4096);
        self.files.seed_blocks(&self.spec, seed);
        if self.files.seed_lfsr(&self.spec, min_bs, seed).is_err() {
            self.failed.error = EINVAL;
        }
    }

    /// fio's `td->rand_seeds[index]` of job `thread_number`
    /// (`setup_random_seeds`). Without `randrepeat` fio takes the seeds
    /// from the system's random source; here they come from the run's seed.
    pub(super) fn fio_seed(&self, thread_number: u64, index: u64) -> u64 {
        if !self.spec.randrepeat {
            return Stream::new(self.seed, self.clone, 0x100 + index).below(u64::MAX);
        }
        // the default `randseed` stands for fio's 0x89 here
        // (`spec::FIO_RANDSEED` marks "not given")
        let rand_seed = if self.spec.randseed == crate::spec::FIO_RANDSEED {
            crate::fio_rand::FIO_RAND_SEED_DEFAULT
        } else {
            self.spec.randseed
        };
        crate::fio_rand::purpose_seed(rand_seed, thread_number, index)
    }

    /// fio's `bsrange_state[]` of job `thread_number`
    /// (`td_fill_rand_seeds_internal`): seeded from `rand_seeds[BS_OFF +
    /// ddir]` of a repeatable job, the write seed equal to the read seed
    /// when the job verifies; 64-bit with `random_generator=tausworthe64`.
    pub(super) fn bs_generators(&self, thread_number: u64) -> PerDir<FioRand> {
        use crate::fio_rand::seed_index;
        let use64 =
            self.spec.submit.random_generator == crate::spec_submit::RandomGenerator::Tausworthe64;
        let seed = |index: u64| self.fio_seed(thread_number, index);
        let read = seed(seed_index::BS_READ);
        let write = if self.spec.verify.enabled() {
            read
        } else {
            seed(seed_index::BS_WRITE)
        };
        PerDir {
            read: FioRand::new(read, use64),
            write: FioRand::new(write, use64),
            trim: FioRand::new(seed(seed_index::BS_TRIM), use64),
        }
    }

    /// The job starts at `now` rather than when it was made (a `stonewall`
    /// or `startdelay` held it back; fio `run_threads` starts it then): its
    /// runtime, ramp and sample clocks begin here.
    pub fn begin(&mut self, now: Instant) {
        self.started = now;
        if let Some(p) = &mut self.lat.probe {
            // fio do_io: lat_target_init when the job starts
            *p = LatProbe::new(self.spec.submit.latency, self.iodepth, now, 0);
        }
        self.ramp_end = (self.spec.ramp_time > Duration::ZERO).then(|| now + self.spec.ramp_time);
        self.start_epoch(now);
        if self.ramp_end.is_some() {
            self.end_at = None;
        }
    }

    /// `startdelay=LO-HI`: this clone's delay, drawn in the range from the
    /// job's seed (fio draws it once per job).
    pub fn start_delay(&self) -> Duration {
        let (lo, hi) = self.spec.start_delay;
        if hi <= lo {
            return lo;
        }
        let base = if self.spec.randrepeat {
            self.spec.randseed
        } else {
            self.seed
        };
        let span = hi.as_ns() - lo.as_ns();
        Duration::from_ns(lo.as_ns() + Stream::new(base, self.clone, 7).below(span + 1))
    }

    pub(super) fn start_epoch(&mut self, now: Instant) {
        self.epoch = now;
        // fio thread_main / reset_all_stats: `ss.prev_time = epoch`
        if let Some(ss) = &mut self.stats.steadystate {
            ss.prev_time_ns = now.0;
        }
        self.end_at = self.spec.runtime.map(|r| now + r);
        self.samples = Samples::from(now, self.spec.bw_avg_time, self.spec.iops_avg_time);
    }
}
