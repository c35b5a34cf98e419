//! What the run hands its sink while it runs: per-second controller
//! records, job logs, status reports with an ETA.

use super::*;

/// What the run writes as it goes, beside the jobs' own statistics.
pub(super) struct Sinks<'a> {
    /// Every completed request, when asked for ([`RunOptions::trace_requests`]).
    pub trace: Option<Vec<RequestRecord>>,
    /// The caller's sink, locked for the run ([`RunOptions::sink`]).
    pub sink: Option<MutexGuard<'a, dyn RunSink + Send + 'static>>,
    /// The sink takes every completed request.
    pub requests: bool,
    /// Latency histograms per device and group, when asked for.
    pub lat: Option<LatHists>,
    /// Some job writes fio logs ([`Loop::drain_job_logs`]).
    pub job_logs: bool,
}

impl<B: Backend> Loop<'_, B> {
    /// Show the sink the run time and the controllers' state.
    pub(super) fn tick_sink(&mut self, now: Instant) {
        if let Some(s) = &mut self.sinks.sink {
            if s.wants_disk() {
                let mut d = self.disk.clone();
                d.sync(now);
                s.disk(now, &d);
            }
            s.tick(now, self.stack);
        }
    }

    /// Hand the jobs' log samples to the sink (dropped without one), so
    /// that they never pile up in the jobs.
    pub(super) fn drain_job_logs(&mut self) {
        for (j, s) in self.jobs.iter_mut().enumerate() {
            if let Some(p) = s.job.log_pending() {
                if !p.is_empty() {
                    if let Some(sink) = &mut self.sinks.sink {
                        sink.job_log(j, p);
                    }
                    p.clear();
                }
            }
            if let Some(h) = s.job.hist_pending() {
                if !h.is_empty() {
                    if let Some(sink) = &mut self.sinks.sink {
                        sink.job_hist_log(j, h);
                    }
                    h.clear();
                }
            }
        }
    }

    /// The jobs' results so far and the disk's accounting, to the sink's
    /// [`RunSink::status`]; the report was due at `due` (its `elapsed`,
    /// which fio counts from a clock started with its reports' timer).
    pub(super) fn status_sink(&mut self, now: Instant, due: Instant, t0: Instant) {
        if self.sinks.sink.is_none() {
            return;
        }
        let elapsed_s = (due - t0).as_ms().div_ceil(1000);
        let eta_s = self.eta_s(now, elapsed_s);
        let jobs: Vec<JobResult> = self
            .jobs
            .iter()
            .map(|s| {
                let mut stats = if s.state == SlotState::Pending {
                    s.job.stats.clone()
                } else {
                    s.job.stats_so_far(now)
                };
                stats.elapsed_s = elapsed_s;
                stats.eta_s = eta_s;
                s.result(stats)
            })
            .collect();
        let mut disk = self.disk.clone();
        disk.sync(now);
        if let Some(sink) = &mut self.sinks.sink {
            sink.status(now, &jobs, &disk);
        }
    }

    /// fio's ETA of the run `elapsed_s` into it (`eta.c:
    /// calc_thread_status`): `INT_MAX` for the first 2 s, then the
    /// longest of the jobs' estimates, those of stonewalled jobs not
    /// started yet added up after it.
    pub(super) fn eta_s(&self, now: Instant, elapsed_s: u64) -> u64 {
        const INT_MAX: u64 = i32::MAX as u64;
        if elapsed_s < 3 {
            return INT_MAX;
        }
        // fio eta.c calc_thread_status: with exitall the first job to end
        // ends the run, so the run's ETA is the shortest job's
        let all_exitall = self.exits.any_exitall()
            && self
                .jobs
                .iter()
                .all(|s| self.exits.exitall(s.job.spec().control.invocation));
        if all_exitall {
            return self
                .jobs
                .iter()
                .map(|s| s.job.eta_s(now, s.state != SlotState::Pending))
                .min()
                .unwrap_or(INT_MAX)
                .min(u64::from(u32::MAX));
        }
        let (mut longest, mut stone) = (0u64, 0u64);
        for s in &self.jobs {
            let pending = s.state == SlotState::Pending;
            let eta = s.job.eta_s(now, !pending);
            if pending && s.job.spec().stonewall {
                stone = stone.saturating_add(eta);
            } else {
                longest = longest.max(eta);
            }
        }
        longest.saturating_add(stone).min(u64::from(u32::MAX))
    }

    /// Hand the controllers' records to the sink (`now` is at or past
    /// `next`): the next time to do it.
    pub(super) fn feed_sink(&mut self, now: Instant) -> Instant {
        if let Some(s) = &mut self.sinks.sink {
            s.controllers(self.stack);
            if let Some(pc) = &mut self.cache.pc {
                let mut recs = Vec::new();
                pc.drain_trace(&mut recs);
                if !recs.is_empty() {
                    s.kernel_events(&recs);
                }
            }
        }
        now + SINK_EVERY
    }
}
