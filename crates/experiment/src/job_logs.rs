//! fio's per-job sample logs (`write_bw_log`, `write_iops_log`,
//! `write_lat_log`): files named and written as fio 3.33 names and writes
//! them (`NAME_bw.N.log`, N the job's number in its fio invocation,
//! counting clones; lines `time, value, ddir, bs, prio`), and the
//! histogram log (`write_hist_log`: `NAME_clat_hist.N.log`, lines
//! `time, ddir, bs, bins...`, [`blkqos_workload::histlog`]), streamed while
//! the run goes. The samples themselves come from the jobs
//! (`blkqos_workload::iolog`).

use crate::file_out::FileOut;
use anyhow::Result;
use blkqos_workload::iolog::{format_sample, LogKind, LogSample};
use blkqos_workload::JobSpec;
use std::io::Write;
use std::path::Path;

/// One job's open log files.
#[derive(Debug)]
struct JobFiles {
    /// Indexed like [`LogKind::ALL`].
    files: [Option<FileOut>; 5],
    /// `write_hist_log`: `NAME_clat_hist.N.log`.
    hist: Option<FileOut>,
    with_offset: bool,
    /// `log_prio=1`: the priority column is the IO's priority.
    log_prio: bool,
}

/// Every job's log files, indexed by the driver's job index.
#[derive(Debug, Default)]
pub struct JobLogs {
    jobs: Vec<Option<JobFiles>>,
    /// Reused for each batch of samples.
    buf: String,
}

impl JobLogs {
    /// Create the files of the jobs that write logs. `jobs` lists the
    /// run's job clones in the driver's order, each with its fio job
    /// number (1-based, fio's `thread_number`).
    pub fn create<'a>(jobs: impl IntoIterator<Item = (&'a JobSpec, usize)>) -> Result<Self> {
        let mut out = JobLogs::default();
        for (spec, n) in jobs {
            out.jobs.push(Self::open_job(spec, n)?);
        }
        Ok(out)
    }

    fn open_job(spec: &JobSpec, n: usize) -> Result<Option<JobFiles>> {
        if !spec.logs.any() {
            return Ok(None);
        }
        let mut files: [Option<FileOut>; 5] = Default::default();
        for (i, kind) in LogKind::ALL.into_iter().enumerate() {
            if let Some(name) = spec.logs.file_name(kind, n) {
                files[i] = Some(FileOut::create(Path::new(&name))?);
            }
        }
        let hist = match spec.logs.hist_file_name(n) {
            Some(name) => Some(FileOut::create(Path::new(&name))?),
            None => None,
        };
        Ok(Some(JobFiles {
            files,
            hist,
            with_offset: spec.logs.offset,
            log_prio: spec.prio.log_prio,
        }))
    }

    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.jobs.iter().all(Option::is_none)
    }

    /// Samples of job `job`, to their files.
    pub fn record(&mut self, job: usize, samples: &[LogSample]) {
        let Some(Some(jf)) = self.jobs.get_mut(job) else {
            return;
        };
        for (i, kind) in LogKind::ALL.into_iter().enumerate() {
            let Some(f) = &mut jf.files[i] else { continue };
            self.buf.clear();
            for s in samples.iter().filter(|s| s.kind == kind) {
                format_sample(s, jf.with_offset, jf.log_prio, &mut self.buf);
            }
            if !self.buf.is_empty() {
                let text = self.buf.as_bytes();
                f.write_with(|o| o.write_all(text));
            }
        }
    }

    /// Histogram log lines of job `job`, to its file.
    pub fn record_hist(&mut self, job: usize, lines: &str) {
        if let Some(Some(JobFiles { hist: Some(f), .. })) = self.jobs.get_mut(job) {
            f.write_with(|o| o.write_all(lines.as_bytes()));
        }
    }

    /// Flush every file: the first error.
    pub fn finish(&mut self) -> Result<()> {
        let mut first = Ok(());
        for jf in self.jobs.iter_mut().flatten() {
            for f in jf.files.iter_mut().chain([&mut jf.hist]).flatten() {
                let r = f.finish();
                if first.is_ok() {
                    first = r;
                }
            }
        }
        first
    }
}
