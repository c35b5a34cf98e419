//! `blkqos run`: the experiment the command line planned, run on its
//! backend, every output it asked for written, and what the run says on
//! stderr around them (the controllers its knobs reach, the files it
//! wrote, a job that overran its runtime, a write never applied); the
//! exit status follows from signals and IO errors
//! ([`blkqos_experiment::outcome`]).

use anyhow::Context;
use blkqos_engine::StopOnSignal;
use blkqos_experiment::experiment::{Experiment, Ran};
use blkqos_experiment::failure::Failure;
use blkqos_experiment::output;

/// How far past its `runtime=` a job may end before [`note_overrun`] says
/// why.
const OVERRUN_NOTE_MS: u64 = 10_000;

/// `blkqos run` of the experiment `args` gave (`Err`: a bad input): run,
/// write every report, then exit as [`blkqos_experiment::outcome`] decides (signals,
/// IO errors).
pub fn run_command(built: Result<Experiment, Failure>) -> Result<(), Failure> {
    let mut exp = built?;
    if let Some(text) = &exp.showcmd {
        return blkqos_experiment::stdout::write_out(text).map_err(|e| Failure::run(e.into()));
    }
    if exp.parse_only {
        // everything a run would refuse up front: layout, knob replay
        return exp.check();
    }
    output::check_outputs(&exp)?;
    say_job_notes(&exp);
    say_controllers(&exp);
    exp.open_streams()?;
    // SIGINT/SIGTERM stop the run (simulated or real) and it still writes
    // every report: armed until the process exits
    let signals = StopOnSignal::install()
        .context("cannot install the SIGINT/SIGTERM handler")
        .map_err(Failure::run)?;
    let t0 = output::epoch_ms();
    blkqos_experiment::streams::Streams::set_status_anchor(&exp.streams, t0);
    let ran = output::run(&exp, &signals)?;
    if let Some(s) = &exp.streams {
        blkqos_experiment::streams::Streams::finish(s).map_err(Failure::run)?;
    }
    warn_unapplied_writes(&exp, &ran);
    let stdout_closed = output::write_outputs(&exp, &ran, t0)?;
    say_written(&exp);
    let stdout_closed = stdout_closed.or_else(|| say_what_ran(&exp, &ran));
    note_overrun(&ran);
    // IO errors and signals decide the status; a reader that left ends it
    // as SIGPIPE would (main: 141, silently)
    blkqos_experiment::outcome::finish(&ran, signals)?;
    match stdout_closed {
        Some(e) => Err(Failure::run(e)),
        None => Ok(()),
    }
}

/// What the parser noted about the jobs' options (options that change
/// nothing here, as in fio): one stderr line each.
fn say_job_notes(exp: &blkqos_experiment::experiment::Experiment) {
    for spec in exp.invocations.iter().flat_map(|i| i.jobs.jobs.iter()) {
        for n in &spec.notes {
            eprintln!("blkqos: note: job `{}`: {n}", spec.name);
        }
    }
}

/// Which controller implementations the run's knob writes reach, one
/// stderr line (a run's output does not say which io.max rule or iocost
/// generation produced it): nothing when it writes no knob.
fn say_controllers(exp: &Experiment) {
    use blkqos_core::cgroupfs::{KnobFile, ThrottleChoice};
    let c = &exp.controllers;
    let writes = |f: fn(&KnobFile) -> bool| exp.writes.iter().filter(|w| f(&w.knob)).count();
    let throttled = writes(|k| matches!(k, KnobFile::IoMax | KnobFile::V1Throttle { .. }));
    let costed = writes(|k| {
        matches!(
            k,
            KnobFile::IoWeight | KnobFile::IoCostModel | KnobFile::IoCostQos
        )
    });
    let mut parts = Vec::new();
    if throttled > 0 {
        let rule = match c.throttle {
            ThrottleChoice::Kernel(v) => format!("blk-throttle `{}`", v.name),
            ThrottleChoice::Paced(_) => "blkqos's `paced` limiter".to_string(),
        };
        parts.push(format!(
            "io.max by {rule} ({throttled} write{})",
            plural(throttled)
        ));
    }
    if costed > 0 {
        parts.push(format!(
            "iocost `{}` ({costed} write{})",
            c.iocost.name,
            plural(costed)
        ));
    }
    if !parts.is_empty() {
        eprintln!("blkqos: controllers: {}; HZ={}", parts.join(", "), c.hz);
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The summary table ([`blkqos_experiment::run_summary`]) of a scenario run when no
/// report went to stdout (fio options with `--output=FILE` print nothing,
/// as fio does); a closed stdout is returned as the reports' is.
fn say_what_ran(exp: &Experiment, ran: &Ran) -> Option<anyhow::Error> {
    if !exp.from_scenario || blkqos_experiment::stdout::used() {
        return None;
    }
    let text = blkqos_experiment::run_summary::table(ran)?;
    blkqos_experiment::stdout::write_out(&text)
        .err()
        .map(anyhow::Error::from)
}

/// The files the run wrote its results to, one stderr line each (a run
/// whose reports all went to files would otherwise end silently).
fn say_written(exp: &Experiment) {
    let named =
        |p: Option<&std::path::Path>, what: &'static str| p.map(|p| (p.to_path_buf(), what));
    let mut files: Vec<(std::path::PathBuf, &str)> = exp
        .invocations
        .iter()
        .filter_map(|i| named(i.output.as_deref(), "fio report"))
        .collect();
    files.extend(
        [
            named(exp.io_stat_out.as_deref(), "io.stat"),
            named(exp.trace_out.as_deref(), "iocost trace"),
            named(exp.ktrace_out.as_deref(), "kernel-format trace"),
            named(exp.accounting.lat_hist.as_deref(), "latency histograms"),
            named(exp.accounting.request_trace.as_deref(), "request trace"),
            named(exp.pagecache.report.as_deref(), "writeback report"),
            named(exp.live.json.as_deref(), "live view, JSON lines"),
            named(exp.live.report.as_deref(), "HTML report"),
            named(
                exp.accounting.diskstats_dir.as_deref(),
                "diskstats snapshots",
            ),
        ]
        .into_iter()
        .flatten(),
    );
    let mut seen = std::collections::BTreeSet::new();
    for (path, what) in files {
        if seen.insert(path.clone()) {
            eprintln!("blkqos: wrote {} ({what})", path.display());
        }
    }
}

/// A knob write scheduled after the run ended was never applied: say so
/// (the run is still valid; the write just did not happen).
fn warn_unapplied_writes(exp: &Experiment, ran: &Ran) {
    let end_ns = ran.result.ended_at.as_ns();
    for w in exp.writes.iter().filter(|w| w.at_ns > end_ns) {
        eprintln!(
            "blkqos: warning: {}: the write of `{}` to {}/{} at {:.3} s was never applied: the run ended at {:.3} s",
            w.origin,
            w.value,
            w.cgroup.trim_end_matches('/'),
            w.knob.name(),
            w.at_ns as f64 / 1e9,
            end_ns as f64 / 1e9
        );
    }
}

/// A job stops issuing at its `runtime=`, but IO it already submitted is
/// waited for, as fio does (`cleanup_pending_aio`: a submitted block IO
/// cannot be cancelled, so `io_u_queued_complete` waits for it): a limit
/// holding that IO can make the job, and its report's `run=`, far longer
/// than the runtime. Say so on stderr for the job that overran most
/// (`end_fsync` jobs wait for their fsync by design and are left out).
fn note_overrun(ran: &Ran) {
    let worst = ran
        .result
        .jobs
        .iter()
        .filter_map(|j| overrun_ms(j).map(|o| (o, j)))
        .max_by_key(|o| o.0 .0);
    if let Some(((_, runtime_ms), j)) = worst {
        eprintln!(
            "blkqos: note: job `{}` stopped issuing at {:.3} s (runtime=), but ran {:.3} s: IO it submitted before then is waited for, as fio waits for it (a submitted block IO cannot be cancelled), and a limit or the device held it that long",
            j.spec.name,
            runtime_ms as f64 / 1e3,
            j.stats.job_runtime_ms as f64 / 1e3
        );
    }
}

/// How far past its runtime job `j` ran, beyond [`OVERRUN_NOTE_MS`], and
/// its runtime (ms): None for a job within it, with no runtime, or with
/// `end_fsync`.
fn overrun_ms(j: &blkqos_driver::JobResult) -> Option<(u64, u64)> {
    let runtime_ms = j.spec.runtime.filter(|_| !j.spec.end_fsync)?.as_ns() / 1_000_000;
    let over_ms = j.stats.job_runtime_ms.checked_sub(runtime_ms)?;
    (over_ms > OVERRUN_NOTE_MS).then_some((over_ms, runtime_ms))
}
