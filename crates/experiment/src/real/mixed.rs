//! A real run whose jobs use different kinds of engine: file calls
//! (`falloc`, `ftruncate`, `e4defrag`) beside block IO jobs (`libaio`,
//! `sync`, `io_uring`, ...) on one file, as fio's examples falloc.fio and
//! e4defrag.fio do. fio runs each job with its own engine in its own
//! thread (backend.c `thread_main`); here the driver runs every job, as
//! in any run, and [`blkqos_engine::by_job::RoutedBackend`] sends each IO
//! to its job's engine:
//!
//! * the file-call jobs' IOs to one
//!   [`blkqos_engine::fileops::FileCallBackend`] over all their files
//!   ([`crate::real::fileops::backend`]);
//! * the block jobs' IOs to a [`blkqos_engine::RealBackend`] on their one
//!   file, one per way of opening it: the `direct=1` jobs' with
//!   `O_DIRECT`, the buffered jobs' without (each fio job opens its own
//!   descriptor with its own flags). Each verifies its own jobs' reads in
//!   fio's format.
//!
//! The plan lays every file out on a ledger, as a file-call run's does;
//! the block jobs' file is one region of it and its backends get offsets
//! in the file. The file-call backend opens (creates and lays out) the
//! files first, then the block backends open the same file as laid out.
//!
//! What this run does not do: the io.max/io.weight/io.cost lines (a
//! file call is not block IO for the controllers to throttle) and the
//! write-back buffer (`--pagecache=on`) are refused, as in a run of file
//! calls alone; so are block IO jobs on more than one file. Each file-call
//! clone makes its calls on a thread of its own (fio's `FIO_SYNCIO`
//! engines, one job thread each), so a long call (a block move) holds up
//! neither the block jobs nor the other clones. The time-based counts of
//! file-call jobs that race each other on one file (falloc.fio's fuzzers)
//! follow the kernel's locking and the hand-off to each clone's thread:
//! they are not fio's to the IO.

use crate::experiment::{Experiment, Ran, RealOptions};
use anyhow::{bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_engine::by_job::{Part, RoutedBackend};
use blkqos_engine::StopOnSignal;
use blkqos_workload::JobSpec;
use std::path::{Path, PathBuf};

/// Refuse what a mixed run cannot honour, before anything is opened.
fn check(exp: &Experiment, specs: &[&JobSpec]) -> Result<()> {
    if !exp.writes.is_empty() {
        bail!(
            "io.max/io.weight/io.cost lines act on the block IO blkqos issues, and the jobs of \
             ioengine=falloc, ftruncate or e4defrag in this run issue none (their calls' own IO \
             is the file system's): leave the controller options out, or run the block IO jobs \
             in a job file of their own"
        );
    }
    if exp.pagecache.engine_buffer().is_some() {
        bail!(
            "--pagecache=on (blkqos's write-back buffer) is not run beside jobs of \
             ioengine=falloc, ftruncate or e4defrag: the file calls would not see the pages it \
             holds; run without --pagecache=on"
        );
    }
    let block: Vec<&JobSpec> = specs
        .iter()
        .copied()
        .filter(|j| !j.ioengine.is_file_call())
        .collect();
    crate::data_opts::check_real(block.iter().copied())?;
    if let Some(why) = block.iter().find_map(|j| j.engine.real_refusal.as_ref()) {
        bail!("{why}");
    }
    crate::real::place::apply(specs)
}

/// The ledger extent of the block jobs' file, from their clones' regions.
fn block_extent(setups: &[JobSetup], extents: &[(u64, u64)]) -> Result<(u64, u64)> {
    let mut found: Option<(u64, u64)> = None;
    for st in setups.iter().filter(|s| !s.spec.ioengine.is_file_call()) {
        let at = st.region_start;
        let Some(&e) = extents.iter().find(|(s, l)| (*s..s + l).contains(&at)) else {
            bail!(
                "job `{}`: its file has no extent in the run's plan",
                st.spec.name
            );
        };
        if found.is_some_and(|f| f != e) {
            bail!(
                "--backend=real runs the block IO jobs beside file calls on one file, but job \
                 `{}` names another: run it in a job file of its own",
                st.spec.name
            );
        }
        found = Some(e);
    }
    found.ok_or_else(|| anyhow::anyhow!("no block IO job in the run"))
}

/// The block backends: one per `direct` value of the block jobs, on
/// `path`, whose region on the ledger is `extent`; the part of each
/// clone (None for a file-call clone).
fn block_parts(
    specs: &[&JobSpec],
    setups: &[JobSetup],
    ro: &RealOptions,
    path: &Path,
    (base, len): (u64, u64),
    epoch: std::time::Instant,
) -> Result<(Vec<Part>, Vec<Option<usize>>)> {
    // fio's thread_number order, every job: the verify state is by clone
    let verifies = crate::real::verify::job_verifies(specs, path, false)?;
    let mut parts = Vec::new();
    let mut route = vec![None; setups.len()];
    for direct in [true, false] {
        let jobs: Vec<&JobSpec> = specs
            .iter()
            .copied()
            .filter(|j| !j.ioengine.is_file_call() && j.direct == direct)
            .collect();
        if jobs.is_empty() {
            continue;
        }
        let mut opts = crate::real::engine_options(&jobs, ro, None, path)?;
        opts.size_needed = opts.size_needed.max(len);
        opts.fio_verify = verifies.clone();
        let mut backend = blkqos_engine::open_backend(path, opts)?;
        crate::real::check_registration(&jobs, backend.kind(), backend.registered())?;
        backend.set_epoch(epoch);
        for (i, st) in setups.iter().enumerate() {
            if !st.spec.ioengine.is_file_call() && st.spec.direct == direct {
                route[i] = Some(parts.len());
            }
        }
        parts.push(Part {
            backend: Box::new(backend),
            base,
        });
    }
    Ok((parts, route))
}

/// The run's backend: the file calls' (first: it lays the files out) and
/// the block jobs'; the block jobs' file.
fn backend(
    ro: &RealOptions,
    specs: &[&JobSpec],
    plan: &crate::experiment::Plan,
) -> Result<(RoutedBackend, PathBuf)> {
    let epoch = std::time::Instant::now();
    let (mut calls, _) = crate::real::fileops::backend(&plan.setups, &plan.extents, ro.overwrite)?;
    calls.set_epoch(epoch);
    let capacity = blkqos_driver::Backend::capacity_bytes(&calls);
    let block: Vec<&JobSpec> = specs
        .iter()
        .copied()
        .filter(|j| !j.ioengine.is_file_call())
        .collect();
    let path = match &ro.path {
        Some(p) => p.clone(),
        None => crate::real::target_of(&block)?.ok_or_else(|| {
            anyhow::anyhow!(
                "--backend=real runs file-call jobs beside block IO jobs on one file; \
                 these block jobs name several files: run them in a run of their own"
            )
        })?,
    };
    let extent = block_extent(&plan.setups, &plan.extents)?;
    let (blocks, block_route) = block_parts(specs, &plan.setups, ro, &path, extent, epoch)?;
    let mut parts = vec![Part {
        backend: Box::new(calls),
        base: 0,
    }];
    let route = block_route.iter().map(|r| r.map_or(0, |p| p + 1)).collect();
    parts.extend(blocks);
    Ok((
        RoutedBackend::new(epoch, parts, route, capacity.max(extent.0 + extent.1)),
        path,
    ))
}

/// Run `exp`, whose jobs mix file calls and block IO (see the module
/// doc).
pub fn run_mixed(exp: &Experiment, ro: &RealOptions, signals: &StopOnSignal) -> Result<Ran> {
    let specs: Vec<&JobSpec> = exp
        .invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .collect();
    check(exp, &specs)?;
    let plan = crate::real::ledger_plan(exp, "fs")?;
    let (mut backend, path) = backend(ro, &specs, &plan)?;
    let (devid, dev_name) = crate::real::target_identity(&path);
    let disks = blkqos_engine::diskutil::DiskWatch::start(&path);
    let result = crate::real::drive_ledger_run(
        exp,
        &plan.tree,
        plan.setups,
        (&mut backend, devid),
        signals,
        |_| Ok(()),
    )?;
    // close every file before the report
    drop(backend);
    let kernel_disks = crate::host_report::kernel_disk_util(&disks.finish());
    crate::outcome::say_interrupted(signals, &result, false);
    Ok(crate::real::ran_without_controllers(
        result,
        plan.tree,
        plan.invocation_of,
        &path,
        (devid, dev_name),
        kernel_disks,
    ))
}
