//! Running an experiment on the backend it names ([`run`]) and writing
//! what a finished run was asked for ([`write_outputs`]: fio's reports,
//! the accounting files, traces, io.stat, the writeback report). What
//! `blkqos run` says around them and its exit status are the binary's.

use crate::experiment::{Experiment, Ran};
use crate::render::{render_view, report_time_at, source_date_epoch, RunView};
use anyhow::{bail, Context, Result};
use blkqos_engine::StopOnSignal;
use std::io::Write;

pub use crate::failure::Failure;

fn runtime(err: anyhow::Error) -> Failure {
    Failure { code: 1, err }
}

/// The wall-clock anchor of a simulated run, in ms since the Unix epoch.
pub fn epoch_ms() -> u64 {
    if let Some(s) = source_date_epoch() {
        return s * 1000;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Run `exp` on the backend it names (the simulator, or the real engine's
/// runner for its jobs), stopped (and its drain given up) by `signals`: a
/// plan refused is bad input, a failed run a run failure.
pub fn run(exp: &Experiment, signals: &StopOnSignal) -> Result<Ran, Failure> {
    match &exp.real {
        // the metadata engines have no block IO for the real engine
        Some(r) => {
            use crate::real::meta::RealRunner;
            match crate::real::meta::runner(&real_jobs(exp)) {
                Ok(RealRunner::Metadata) => crate::real::run_meta(exp, signals),
                Ok(RealRunner::FileCalls) => crate::real::run_file_calls(exp, r, signals),
                Ok(RealRunner::Mapped) => crate::real::mapped::run_mapped(exp, r, signals),
                Ok(RealRunner::Mixed) => crate::real::mixed::run_mixed(exp, r, signals),
                Ok(RealRunner::Block) => crate::real::run_real(exp, r, signals),
                Err(e) => Err(e),
            }
            .map_err(Failure::of_run)
        }
        None => run_sim(exp, signals),
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
pub fn write_outputs(
    exp: &Experiment,
    ran: &Ran,
    t0: u64,
) -> Result<Option<anyhow::Error>, Failure> {
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

/// Every file the run will write, checked before it runs (fio opens its
/// `--output` first): a directory or a path that cannot be created is bad
/// input, refused before any work that would be lost. A file that does not
/// exist yet is created empty (as fio's `--output` is).
pub fn check_outputs(exp: &Experiment) -> Result<(), Failure> {
    check_output_files(exp).map_err(Failure::input)
}

fn check_output_files(exp: &Experiment) -> Result<()> {
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
