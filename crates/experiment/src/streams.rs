//! Outputs written while a run goes, so that their size never shows in the
//! memory of a run: the request trace (`--request-trace`) and, on the
//! simulator, the controllers' per-period trace (`--iocost-trace`), and
//! fio's per-job logs (`write_bw_log` and co., [`crate::job_logs`]). The
//! driver hands records to [`Streams`] (its [`RunSink`]) as it produces
//! them; each output goes through a buffer to its file.

use crate::file_out::FileOut;
use crate::job_logs::JobLogs;
use crate::ktrace::KernelTrace;
use crate::request_trace::RequestTrace;
use anyhow::Result;
use blkqos_core::controller::{TraceFormat, TraceRecord};
use blkqos_core::{ControllerStack, Instant};
use blkqos_driver::{RequestRecord, RunSink};
use blkqos_workload::iolog::LogSample;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// The controllers' per-period trace of a simulated run, drained from the
/// stack once a second of simulated time.
#[derive(Debug)]
pub struct ControllerTrace {
    out: FileOut,
    /// The device as the trace names it.
    dev: String,
    /// JSON lines (`.jsonl`) instead of text.
    json: bool,
    /// Reused for each drain.
    buf: String,
}

impl ControllerTrace {
    pub fn create(path: &Path, dev: &str) -> Result<Self> {
        Ok(ControllerTrace {
            out: FileOut::create(path)?,
            dev: dev.to_string(),
            json: path.extension().is_some_and(|e| e == "jsonl"),
            buf: String::new(),
        })
    }

    fn write(&mut self, recs: &[Box<dyn TraceRecord>]) {
        self.buf.clear();
        let format = if self.json {
            TraceFormat::Json
        } else {
            TraceFormat::Monitor
        };
        for r in recs {
            r.format(&self.dev, format, &mut self.buf);
        }
        let text = self.buf.as_bytes();
        self.out.write_with(|o| o.write_all(text));
    }
}

/// The run's streamed outputs.
#[derive(Debug, Default)]
pub struct Streams {
    pub requests: Option<RequestTrace>,
    pub controllers: Option<ControllerTrace>,
    /// `--ktrace`.
    pub ktrace: Option<KernelTrace>,
    /// `--live` / `--live-json`.
    pub live: Option<crate::live::LiveView>,
    pub job_logs: Option<JobLogs>,
    /// `--status-interval`'s reports.
    pub status: Option<crate::status::StatusReports>,
}

/// [`Streams`] shared by the command (which opens and finishes them) and
/// the run (which feeds them).
pub type SharedStreams = Arc<Mutex<Streams>>;

impl Streams {
    /// Nothing to stream.
    pub fn is_empty(&self) -> bool {
        self.requests.is_none()
            && self.controllers.is_none()
            && self.ktrace.is_none()
            && self.live.is_none()
            && self.job_logs.is_none()
            && self.status.is_none()
    }

    /// The wall-clock anchor of the status reports (ms since the epoch).
    pub fn set_status_anchor(shared: &Option<SharedStreams>, t0_ms: u64) {
        if let Some(s) = shared {
            let mut s = s.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(st) = &mut s.status {
                st.t0_ms = t0_ms;
            }
        }
    }

    /// Flush every output: the first error.
    pub fn finish(shared: &SharedStreams) -> Result<()> {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let requests = s.requests.as_mut().map_or(Ok(()), RequestTrace::finish);
        let controllers = s.controllers.as_mut().map_or(Ok(()), |c| c.out.finish());
        let ktrace = s.ktrace.as_mut().map_or(Ok(()), KernelTrace::finish);
        let live = s
            .live
            .as_mut()
            .map_or(Ok(()), crate::live::LiveView::finish);
        let job_logs = s.job_logs.as_mut().map_or(Ok(()), JobLogs::finish);
        let status = s
            .status
            .as_mut()
            .map_or(Ok(()), crate::status::StatusReports::finish);
        requests
            .and(controllers)
            .and(ktrace)
            .and(live)
            .and(job_logs)
            .and(status)
    }

    /// The controllers' trace went to its file during the run.
    pub fn has_controller_trace(shared: &SharedStreams) -> bool {
        let s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        s.controllers.is_some()
    }
}

impl RunSink for Streams {
    fn wants_requests(&self) -> bool {
        self.requests.is_some() || self.live.is_some() || self.ktrace.is_some()
    }

    fn request(&mut self, r: &RequestRecord) {
        if let Some(t) = &mut self.requests {
            t.record(r);
        }
        if let Some(k) = &mut self.ktrace {
            k.request(r);
        }
        if let Some(l) = &mut self.live {
            l.request(r);
        }
    }

    fn started(&mut self, at: Instant) {
        if let Some(l) = &mut self.live {
            l.started(at);
        }
    }

    fn wants_disk(&self) -> bool {
        self.live.is_some()
    }

    fn disk(&mut self, _now: Instant, disk: &blkqos_driver::DiskStats) {
        if let Some(l) = &mut self.live {
            l.disk(disk);
        }
    }

    fn tick(&mut self, now: Instant, stack: &ControllerStack) {
        if let Some(l) = &mut self.live {
            l.tick(now, stack);
        }
    }

    fn controllers(&mut self, stack: &mut ControllerStack) {
        if self.controllers.is_none() && self.ktrace.is_none() {
            return;
        }
        let mut recs = Vec::new();
        stack.drain_trace(&mut recs);
        if let Some(t) = &mut self.controllers {
            t.write(&recs);
        }
        if let Some(k) = &mut self.ktrace {
            k.controllers(&recs);
        }
    }

    fn kernel_events(&mut self, recs: &[Box<dyn TraceRecord>]) {
        if let Some(k) = &mut self.ktrace {
            k.controllers(recs);
        }
    }

    fn job_log(&mut self, job: usize, samples: &[LogSample]) {
        if let Some(l) = &mut self.job_logs {
            l.record(job, samples);
        }
    }

    fn status(
        &mut self,
        now: Instant,
        jobs: &[blkqos_driver::JobResult],
        disk: &blkqos_driver::DiskStats,
    ) {
        if let Some(s) = &mut self.status {
            s.report(now, jobs, disk);
        }
    }

    fn job_hist_log(&mut self, job: usize, lines: &str) {
        if let Some(l) = &mut self.job_logs {
            l.record_hist(job, lines);
        }
    }
}
