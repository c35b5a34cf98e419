//! blkqos's experiments: what one run is, how it is planned, run and
//! reported.
//!
//! An [`Experiment`] is a device, cgroup knob writes and fio invocations.
//! It is planned from a scenario file ([`scenario`], [`scenario_build`]) or
//! from fio job files and fio-style arguments with blkqos's own flags
//! ([`flags`], [`plan_run`]), under a kernel profile ([`kernel`]). It runs
//! on the simulator ([`Experiment::run_sim`], [`run_simulated`]) or on the
//! real io_uring engine ([`real`]); while it runs, its sinks write what
//! was asked of them ([`streams`]: the live view, `--ktrace`,
//! `--request-trace`, fio's job logs, `--status-interval`); when it ends,
//! [`output`] writes fio's reports and the accounting files, and
//! [`metrics`] reduces a finished run to the numbers the studies compare.
//!
//! The studies built on this crate (sweep, calibrate, the lab, apply,
//! the benchmarks) are in `blkqos-studies`; the `blkqos` binary parses the
//! command line and maps failures to exit statuses.
//!
//! ```
//! let args: Vec<String> = ["--name=r", "--rw=randread", "--size=4m", "--output-format=json"]
//!     .iter()
//!     .map(|s| s.to_string())
//!     .collect();
//! let exp = blkqos_experiment::plan_run(&args).unwrap();
//! let ran = blkqos_experiment::run_simulated(&exp).unwrap();
//! assert_eq!(ran.result.jobs[0].stats.dirs.read.total_ios, 1024);
//! let reports = blkqos_experiment::fio_reports(&exp, &ran, 0);
//! assert!(reports[0].contains("\"jobname\" : \"r\""));
//! ```

// What one run is and how it is planned.
pub mod experiment;
pub mod files;
pub mod flags;
pub mod invocation;
pub mod kernel;
pub mod pagecache;
pub mod scenario;
pub mod scenario_build;
pub mod zbd_plan;

// Running it: the real engine (the simulator is `Experiment::run_sim`).
pub mod data_opts;
pub mod real;

// The run's sinks, written while it goes.
pub mod job_logs;
pub mod ktrace;
pub mod live;
pub mod progress;
pub mod request_trace;
pub mod status;
pub mod streams;

// What a finished run reports.
pub mod accounting;
pub mod host_report;
pub mod lat_report;
pub mod metric_names;
pub mod metrics;
pub mod outcome;
pub mod output;
pub mod render;
pub mod report;
pub mod run_summary;

// Writing out and failing.
pub mod failure;
pub mod file_out;
pub mod stdout;

#[cfg(test)]
mod fuzz_tests;

pub use experiment::{Experiment, Ran};
pub use failure::Failure;
pub use invocation::Invocation;

/// Plan `blkqos run ARGS...`: a scenario file, or fio job files and fio
/// options, with blkqos flags, checked as the command checks them (the
/// failure is bad input: what the command prints, exit status 2).
pub fn plan_run(args: &[String]) -> Result<Experiment, failure::Failure> {
    flags::build(args)
}

/// Run a planned experiment on the simulated device, as `blkqos run`
/// does without `--backend=real` (refused, as there, when a job needs a
/// file system). Deterministic: the same experiment gives the same result.
/// A refused plan is bad input, a failed run a run failure
/// ([`failure::Failure`]).
pub fn run_simulated(exp: &Experiment) -> Result<Ran, failure::Failure> {
    output::refuse_on_simulator(exp).map_err(failure::Failure::input)?;
    exp.run_sim(None)
}

/// fio's reports of a run, one string per fio invocation in its output
/// formats, time-stamped from `t0_ms` (ms since the Unix epoch: the run's
/// start on the simulator's clock).
pub fn fio_reports(exp: &Experiment, ran: &Ran, t0_ms: u64) -> Vec<String> {
    output::render_reports(exp, ran, t0_ms)
}

/// Every cgroup's `io.stat` after a run, as `--io-stat=FILE` writes it.
pub fn io_stat_text(ran: &Ran) -> String {
    output::format_io_stat(ran)
}

/// The writeback report of a run with a page cache, as
/// `--pagecache-report=FILE.json` writes it; None without a page cache.
pub fn pagecache_report_json(ran: &Ran) -> Option<String> {
    let report = ran.result.pagecache.as_ref()?;
    let mut out = Vec::new();
    output::render_pagecache_report(report, ran, true, &mut out).ok()?;
    String::from_utf8(out).ok()
}
