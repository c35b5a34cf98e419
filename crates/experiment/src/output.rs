//! Running an experiment and writing its reports, fio-style.

use crate::experiment::{Experiment, Ran};
use crate::render::{render_view, report_time_at, source_date_epoch, RunView};
use anyhow::{bail, Context, Result};
use blkqos_engine::StopOnSignal;
use std::io::Write;

pub use crate::failure::Failure;

fn input(err: anyhow::Error) -> Failure {
    Failure { code: 2, err }
}
fn runtime(err: anyhow::Error) -> Failure {
    Failure { code: 1, err }
}

/// The wall-clock anchor of a simulated run, in ms since the Unix epoch.
fn epoch_ms() -> u64 {
    if let Some(s) = source_date_epoch() {
        return s * 1000;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `blkqos run` of the experiment `args` gave (`Err`: a bad input): run,
/// write every report, then exit as [`crate::outcome`] decides (signals,
/// IO errors).
pub fn run_command(built: Result<Experiment, Failure>) -> Result<(), Failure> {
    let mut exp = built?;
    if let Some(text) = &exp.showcmd {
        return crate::stdout::write_out(text).map_err(|e| runtime(e.into()));
    }
    if exp.parse_only {
        // everything a run would refuse up front: layout, knob replay
        return exp.check();
    }
    check_outputs(&exp).map_err(input)?;
    say_job_notes(&exp);
    say_controllers(&exp);
    exp.open_streams().map_err(runtime)?;
    // SIGINT/SIGTERM stop the run (simulated or real) and it still writes
    // every report: armed until the process exits
    let signals = StopOnSignal::install()
        .context("cannot install the SIGINT/SIGTERM handler")
        .map_err(runtime)?;
    let t0 = epoch_ms();
    crate::streams::Streams::set_status_anchor(&exp.streams, t0);
    let ran = match &exp.real {
        // the metadata engines have no block IO for the real engine
        Some(r) => {
            use crate::real::meta::RealRunner;
            match crate::real::meta::runner(&real_jobs(&exp)) {
                Ok(RealRunner::Metadata) => crate::real::run_meta(&exp, &signals),
                Ok(RealRunner::FileCalls) => crate::real::run_file_calls(&exp, r, &signals),
                Ok(RealRunner::Mapped) => crate::real::mapped::run_mapped(&exp, r, &signals),
                Ok(RealRunner::Mixed) => crate::real::mixed::run_mixed(&exp, r, &signals),
                Ok(RealRunner::Block) => crate::real::run_real(&exp, r, &signals),
                Err(e) => Err(e),
            }
            .map_err(Failure::of_run)
        }
        None => run_sim(&exp, &signals),
    }?;
    if let Some(s) = &exp.streams {
        crate::streams::Streams::finish(s).map_err(runtime)?;
    }
    warn_unapplied_writes(&exp, &ran);
    let stdout_closed = write_outputs(&exp, &ran, t0)?;
    say_written(&exp);
    let stdout_closed = stdout_closed.or_else(|| say_what_ran(&exp, &ran));
    note_overrun(&ran);
    // IO errors and signals decide the status; a reader that left ends it
    // as SIGPIPE would (main: 141, silently)
    crate::outcome::finish(&ran, signals)?;
    match stdout_closed {
        Some(e) => Err(runtime(e)),
        None => Ok(()),
    }
}

/// What the parser noted about the jobs' options (options that change
/// nothing here, as in fio): one stderr line each.
fn say_job_notes(exp: &crate::experiment::Experiment) {
    for spec in exp.invocations.iter().flat_map(|i| i.jobs.jobs.iter()) {
        for n in &spec.notes {
            log::info!("blkqos: note: job `{}`: {n}", spec.name);
        }
    }
}

/// Every job of every invocation.
fn real_jobs(exp: &Experiment) -> Vec<&blkqos_workload::JobSpec> {
    exp.invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .collect()
}

/// Jobs the simulator cannot run: the metadata engines need a file
/// system (the parser wrote why).
pub(crate) fn refuse_on_simulator(exp: &Experiment) -> Result<()> {
    if let Some(why) = exp
        .invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .find_map(|j| j.engine.sim_refusal.as_ref())
    {
        bail!("{why}");
    }
    Ok(())
}

/// A simulated run, stopped by `signals`.
fn run_sim(exp: &Experiment, signals: &StopOnSignal) -> Result<Ran, Failure> {
    refuse_on_simulator(exp).map_err(Failure::input)?;
    let jobs = || exp.invocations.iter().flat_map(|i| i.jobs.jobs.iter());
    let medium = jobs().any(|j| {
        j.ioengine == blkqos_workload::IoEngine::Sg && j.engine.sg_write_mode.compares_data()
    });
    for spec in jobs() {
        if let Some(n) = crate::data_opts::sim_note(spec, medium) {
            log::info!("blkqos: note: job `{}`: {n}", spec.name);
        }
    }
    let ran = exp.run_sim(Some(signals))?;
    crate::outcome::say_interrupted(signals, &ran.result, false);
    Ok(ran)
}

/// The reports and every other output the run was asked for. A closed
/// stdout (`| head`) must not cost the files: it is returned, not failed on.
fn write_outputs(exp: &Experiment, ran: &Ran, t0: u64) -> Result<Option<anyhow::Error>, Failure> {
    let mut stdout_closed = None;
    if let Err(e) = write_reports(exp, ran, t0) {
        if !crate::stdout::is_broken_pipe(&e) {
            return Err(runtime(e));
        }
        stdout_closed = Some(e);
    }
    if exp.accounting.wants_snapshots() && stdout_closed.is_none() {
        if let Err(e) = crate::accounting::write_outputs(
            &exp.accounting,
            (&ran.dev_name, ran.devid),
            &ran.result,
            (t0 / 1000) as i64,
            &mut crate::stdout::lock(),
        ) {
            if !crate::stdout::is_broken_pipe(&e) {
                return Err(runtime(e));
            }
            stdout_closed = Some(e);
        }
    }
    let streamed = exp
        .streams
        .as_ref()
        .is_some_and(crate::streams::Streams::has_controller_trace);
    if let (Some(path), false) = (&exp.trace_out, streamed) {
        std::fs::write(path, &ran.trace)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(runtime)?;
        if ran.trace_dropped > 0 {
            log::warn!(
                "blkqos: warning: {}: the trace holds the first {} periods; {} later periods were not recorded",
                path.display(),
                blkqos_core::iocost::trace::TRACE_CAPACITY,
                ran.trace_dropped
            );
        }
    }
    if let Some(path) = &exp.accounting.lat_hist {
        std::fs::write(path, crate::lat_report::format_lat_hist(ran, path))
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(runtime)?;
    }
    if let Some(path) = &exp.io_stat_out {
        std::fs::write(path, format_io_stat(ran))
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(runtime)?;
    }
    if let (Some(path), Some(report)) = (&exp.pagecache.report, &ran.result.pagecache) {
        write_pagecache_report(path, report, ran).map_err(runtime)?;
    }
    Ok(stdout_closed)
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
        log::info!("blkqos: controllers: {}; HZ={}", parts.join(", "), c.hz);
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The summary table ([`crate::run_summary`]) of a scenario run when no
/// report went to stdout (fio options with `--output=FILE` print nothing,
/// as fio does); a closed stdout is returned as the reports' is.
fn say_what_ran(exp: &Experiment, ran: &Ran) -> Option<anyhow::Error> {
    if !exp.from_scenario || crate::stdout::used() {
        return None;
    }
    let text = crate::run_summary::table(ran)?;
    crate::stdout::write_out(&text)
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
            log::info!("blkqos: wrote {} ({what})", path.display());
        }
    }
}

/// Every file the run will write, checked before it runs (fio opens its
/// `--output` first): a directory or a path that cannot be created is bad
/// input, refused before any work that would be lost. A file that does not
/// exist yet is created empty (as fio's `--output` is).
fn check_outputs(exp: &Experiment) -> Result<()> {
    let files = exp
        .invocations
        .iter()
        .filter_map(|i| i.output.as_deref())
        .chain(exp.io_stat_out.as_deref())
        .chain(exp.trace_out.as_deref())
        .chain(exp.ktrace_out.as_deref())
        .chain(exp.accounting.lat_hist.as_deref())
        .chain(exp.accounting.request_trace.as_deref())
        .chain(exp.pagecache.report.as_deref())
        .chain(exp.live.json.as_deref())
        .chain(exp.live.report.as_deref());
    for path in files {
        if path.is_dir() {
            bail!("cannot write {}: it is a directory", path.display());
        }
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &exp.accounting.diskstats_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(())
}

/// A knob write scheduled after the run ended was never applied: say so
/// (the run is still valid; the write just did not happen).
fn warn_unapplied_writes(exp: &Experiment, ran: &Ran) {
    let end_ns = ran.result.ended_at.as_ns();
    for w in exp.writes.iter().filter(|w| w.at_ns > end_ns) {
        log::warn!(
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

/// How far past its `runtime=` a job may end before [`note_overrun`] says
/// why.
const OVERRUN_NOTE_MS: u64 = 10_000;

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
        log::info!(
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

/// The writeback report (`--pagecache-report`), written as it is formatted.
fn write_pagecache_report(
    path: &std::path::Path,
    report: &blkqos_driver::PageCacheReport,
    ran: &Ran,
) -> Result<()> {
    if let Some(sec) = report.series.truncated_at() {
        log::warn!(
            "blkqos: warning: {}: {}",
            path.display(),
            crate::pagecache::truncation_note(sec)
        );
    }
    let mut out = crate::file_out::FileOut::create(path)?;
    let json = path.extension().is_some_and(|e| e == "json");
    out.write_with(|o| render_pagecache_report(report, ran, json, o));
    out.finish()
}

/// The writeback report of `ran` as JSON (`json`) or text, groups and
/// tasks named.
pub fn render_pagecache_report(
    report: &blkqos_driver::PageCacheReport,
    ran: &Ran,
    json: bool,
    o: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let groups = |g| ran.tree.path(g).to_string();
    let tasks: Vec<crate::pagecache::TaskName> = ran
        .result
        .jobs
        .iter()
        .map(|j| crate::pagecache::TaskName {
            job: j.spec.name.clone(),
            group: ran.tree.path(j.group).to_string(),
        })
        .collect();
    if json {
        crate::pagecache::render_json(report, &groups, &tasks, o)
    } else {
        crate::pagecache::render_text(report, &groups, &tasks, o)
    }
}

/// Every group's `io.stat` as the kernel prints it (`blkcg_print_one_stat`):
/// a group's numbers include its descendants; the root's come from the
/// whole-disk counters.
pub fn format_io_stat(ran: &Ran) -> String {
    let tree = &ran.tree;
    let mut rolled: Vec<blkqos_core::controller::IoStat> = ran.iostat.clone();
    rolled.resize(tree.len(), Default::default());
    // children come after parents in id order: fold from the back
    for g in tree.ids().collect::<Vec<_>>().into_iter().rev() {
        if let Some(p) = tree.parent(g) {
            let c = rolled[g.idx()];
            rolled[p.idx()].add(&c);
        }
    }
    let d = &ran.result.disk;
    rolled[0] = blkqos_core::controller::IoStat {
        bytes: [d.sectors[0] * 512, d.sectors[1] * 512, d.sectors[2] * 512],
        ios: [d.ios[0], d.ios[1], d.ios[2]],
    };
    let mut out = String::new();
    for g in tree.ids() {
        let s = &rolled[g.idx()];
        out += &format!("# {} io.stat\n", tree.path(g));
        let suffix: String = ran
            .iostat_keys
            .get(g.idx())
            .into_iter()
            .flatten()
            .map(|k| format!(" {k}"))
            .collect();
        let has_io = s.bytes[..2].iter().chain(&s.ios[..2]).any(|&v| v > 0);
        if has_io || !suffix.is_empty() {
            out += &ran.devid.to_string();
            if has_io {
                out += &format!(
                    " rbytes={} wbytes={} rios={} wios={} dbytes={} dios={}",
                    s.bytes[0], s.bytes[1], s.ios[0], s.ios[1], s.bytes[2], s.ios[2]
                );
            }
            out += &suffix;
            out += "\n";
        }
    }
    out
}

/// The reports' time (JSON `timestamp_ms`), ms since the epoch: a
/// simulated run's end on its virtual clock from `t0_ms`; a real run's,
/// the wall clock as the reports are written (fio: `gettimeofday` then),
/// unless `SOURCE_DATE_EPOCH` pins it.
fn report_time_ms(ran: &Ran, t0_ms: u64) -> u64 {
    report_time_at(t0_ms, ran.result.ended_at, ran.kernel_disks.is_some())
}

/// The report view of a finished run.
fn view_of(ran: &Ran) -> RunView<'_> {
    RunView {
        jobs: &ran.result.jobs,
        invocation_of: &ran.invocation_of,
        disk: &ran.result.disk,
        at: ran.result.ended_at,
        kernel_disks: ran.kernel_disks.as_deref(),
        dev_name: &ran.dev_name,
        target: &ran.target,
    }
}

/// Each fio invocation's report (its `formats`, in order), as fio would
/// print it, one string per invocation.
pub fn render_reports(exp: &Experiment, ran: &Ran, t0_ms: u64) -> Vec<String> {
    render_view(&exp.invocations, &view_of(ran), report_time_ms(ran, t0_ms))
}

fn write_reports(exp: &Experiment, ran: &Ran, t0_ms: u64) -> Result<()> {
    let mut stdout = crate::stdout::lock();
    for (inv, out) in exp.invocations.iter().zip(render_reports(exp, ran, t0_ms)) {
        match &inv.output {
            // after `--status-interval`'s reports, which started the file
            Some(p) if exp.status_every_ms.is_some() => std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .and_then(|mut f| f.write_all(out.as_bytes()))
                .with_context(|| format!("cannot write {}", p.display()))?,
            Some(p) => {
                std::fs::write(p, &out).with_context(|| format!("cannot write {}", p.display()))?
            }
            None => stdout.write_all(out.as_bytes())?,
        }
    }
    Ok(())
}
