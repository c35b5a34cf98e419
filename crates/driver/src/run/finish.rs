//! A run's end: the last records to the sink, the final diskstats
//! snapshot, the page cache's report, the stack's last check and the
//! results.

use super::{Loop, Passes, Periodic, RunError, RunOptions, RunResult};
use crate::backend::Backend;
use blkqos_core::Instant;

impl<B: Backend> Loop<'_, B> {
    /// The results of a run that started at `t0` and ended now.
    #[inline(never)]
    pub(super) fn into_result(
        mut self,
        t0: Instant,
        mut periodic: Periodic,
        pass: Passes,
        opts: &RunOptions,
    ) -> Result<RunResult, RunError> {
        let ended_at = self.backend.now();
        self.tick_sink(ended_at);
        self.drain_job_logs();
        self.feed_sink(ended_at);
        self.sinks.sink = None;
        self.disk.sync(ended_at);
        if opts.diskstats_every.is_some() {
            periodic
                .snapshots
                .push((ended_at, self.disk.diskstats_fields()));
        }
        let pagecache = self.cache.pc.take().map(|mut pc| {
            for (j, s) in self.jobs.iter().enumerate() {
                if s.buffered {
                    let inode = pc.inode(s.file_key, s.group);
                    let pages = pc.inode_dirty_pages(inode);
                    pc.set_task_dirty_end(j, pages);
                }
            }
            pc.report(ended_at)
        });
        // a protocol fault or a broken state is an error in every build
        self.stack.check()?;
        let elapsed_s = (ended_at - t0).as_ms().div_ceil(1000);
        let jobs = self
            .jobs
            .into_iter()
            .map(|s| {
                let mut stats = s.job.stats.clone();
                stats.elapsed_s = elapsed_s;
                s.result(stats)
            })
            .collect();
        Ok(RunResult {
            jobs,
            disk: self.disk,
            ended_at,
            interrupted: pass.interrupted,
            abandoned: pass.dropped_ios.is_some(),
            dropped_ios: pass.dropped_ios.unwrap_or(0),
            diskstats: periodic.snapshots,
            diskstats_dropped: periodic.snapshots_dropped,
            request_trace: self.sinks.trace.unwrap_or_default(),
            pagecache,
            lat_hists: self.sinks.lat,
            passes: pass.count,
        })
    }
}
