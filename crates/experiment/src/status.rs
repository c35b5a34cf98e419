//! `--status-interval=T`: every T of run time (simulated on the
//! simulator, wall time on the real engine), the full report of the run
//! so far, in every `--output-format` asked for, to the report's
//! destination (stdout or `--output`), as fio 3.33 prints it
//! (`stat.c: __show_running_run_stats`, called by the helper thread's
//! `status_interval` timer): cumulative from the jobs' start, not per
//! interval; a running job's runtime is the time since it started; JSON
//! reports follow each other as whole objects (`{ ... }` then the next),
//! terse reports as lines, normal ones as blocks. The final report comes
//! after them, unchanged. The reports are made by the same code as the
//! final one ([`crate::render::render_view`]).

use crate::file_out::FileOut;
use crate::invocation::Invocation;
use crate::render::{render_view, RunView};
use anyhow::Result;
use blkqos_core::Instant;
use blkqos_driver::{DiskStats, JobResult};
use blkqos_engine::diskutil::DiskWatch;
use blkqos_engine::usage::ProcessUsage;
use std::io::Write;

/// What a real run's reports take from the host (the kernel's disks, the
/// CPU used), read at each report.
pub struct HostProbe {
    pub disks: DiskWatch,
    pub cpu_at_start: Option<ProcessUsage>,
}

/// The reports written while a run goes.
pub struct StatusReports {
    invocations: Vec<Invocation>,
    /// For each job clone, in the driver's order, its invocation.
    invocation_of: Vec<usize>,
    /// Each invocation's `--output` file (created now, as fio opens it
    /// first), None for stdout.
    files: Vec<Option<FileOut>>,
    /// The run's wall-clock anchor (ms since the Unix epoch): simulated
    /// reports are stamped `t0 + run time`.
    pub t0_ms: u64,
    dev_name: String,
    target: String,
    /// A real run: the host's numbers; None on the simulator.
    host: Option<HostProbe>,
    /// stdout went away: no more reports there.
    stdout_closed: bool,
}

impl std::fmt::Debug for StatusReports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusReports")
            .field("invocations", &self.invocations.len())
            .field("real", &self.host.is_some())
            .finish()
    }
}

impl StatusReports {
    /// For `invocations`, whose job clones (in the driver's order) belong
    /// to `invocation_of`; reports name the simulated device `dev_name`.
    pub fn create(
        invocations: &[Invocation],
        invocation_of: Vec<usize>,
        dev_name: &str,
    ) -> Result<Self> {
        let files = invocations
            .iter()
            .map(|inv| inv.output.as_deref().map(FileOut::create).transpose())
            .collect::<Result<Vec<_>>>()?;
        Ok(StatusReports {
            invocations: invocations.to_vec(),
            invocation_of,
            files,
            t0_ms: 0,
            dev_name: dev_name.to_string(),
            target: format!("simulated device {dev_name}"),
            host: None,
            stdout_closed: false,
        })
    }

    /// A real run on `target` (the device named `dev_name`): the reports
    /// take the host's disks and CPU from `host`.
    pub fn set_real(&mut self, target: &str, dev_name: &str, host: HostProbe) {
        self.target = target.to_string();
        self.dev_name = dev_name.to_string();
        self.host = Some(host);
    }

    /// The report of the run so far, at run time `now`.
    pub fn report(&mut self, now: Instant, jobs: &[JobResult], disk: &DiskStats) {
        // a copy only where the host's CPU is charged to the jobs (a
        // report of 4088 clones is large)
        let mut charged = Vec::new();
        let kernel = self.host.as_ref().map(|h| {
            if let (Some(a), Some(b)) = (&h.cpu_at_start, ProcessUsage::now()) {
                charged = jobs.to_vec();
                crate::host_report::charge_cpu(&mut charged, &b.since(a));
            }
            crate::host_report::kernel_disk_util(&h.disks.finish())
        });
        let view = RunView {
            jobs: if charged.is_empty() { jobs } else { &charged },
            invocation_of: &self.invocation_of,
            disk,
            at: now,
            kernel_disks: kernel.as_deref(),
            dev_name: &self.dev_name,
            target: &self.target,
        };
        let ts = crate::render::report_time_at(self.t0_ms, now, self.host.is_some());
        let outs = render_view(&self.invocations, &view, ts);
        for (file, out) in self.files.iter_mut().zip(outs) {
            match file {
                Some(f) => f.write_with(|o| o.write_all(out.as_bytes())),
                None if !self.stdout_closed => {
                    // the final report's write says why, if it fails too
                    self.stdout_closed = crate::stdout::write_out(&out).is_err();
                }
                None => {}
            }
        }
    }

    /// Flush the `--output` files: the first error.
    pub fn finish(&mut self) -> Result<()> {
        let mut first = Ok(());
        for f in self.files.iter_mut().flatten() {
            let r = f.finish();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
