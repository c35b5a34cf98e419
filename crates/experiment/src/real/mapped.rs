//! The memory-mapped engines on the real engine: `libpmem`, `dev-dax`
//! and `page_fault` ([`blkqos_engine::mapped`] says what each IO does).
//! The driver runs the jobs as for any engine (offsets, sizes,
//! directions, `time_based`, `loops`, latencies, the report); the backend
//! makes each IO a copy to or from the clone's mapping.
//!
//! The plan lays the clones' files out on a ledger device, one region per
//! file: a libpmem file is opened (created and laid out under the real
//! engine's safety rules) and mapped shared, and a file two jobs name is
//! one mapping; a dev-dax job maps its device-DAX device (refused, naming
//! what is missing, when there is none); a page_fault clone gets private
//! anonymous memory of its region's size (its `size`), its own even when
//! clones name one file, as fio maps per job. No block IO is issued: no
//! controller options, and no disk statistics in the report (the engines
//! are `FIO_NODISKUTIL` or `FIO_DISKLESSIO` in fio).

use crate::experiment::{Experiment, Ran, RealOptions};
use anyhow::{anyhow, bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_engine::mapped::{CloneSetup, MapEngine, MappedBackend, Region};
use blkqos_engine::StopOnSignal;
use blkqos_workload::{IoEngine, JobSpec};
use std::path::{Path, PathBuf};

fn engine_of(s: &JobSpec) -> MapEngine {
    match s.ioengine {
        IoEngine::DevDax => MapEngine::DevDax,
        IoEngine::PageFault => MapEngine::PageFault,
        _ => MapEngine::Libpmem,
    }
}

/// How clone `st` writes: fio's buffer contents (`buffer_pattern`,
/// `zero_buffers`, else random) and scrambling (init.c `init_flags`:
/// `scramble_buffers` unless `zero_buffers`; a pattern turns it off in
/// the parser), and libpmem's `sync`/`direct`.
fn clone_setup(st: &JobSetup, regions: Vec<usize>) -> CloneSetup {
    let s = &st.spec;
    let b = &s.buffers;
    let fill = b.pattern.clone().or_else(|| b.zero.then(|| vec![0]));
    CloneSetup {
        engine: engine_of(s),
        sync: s.engine.sync_io,
        direct: s.direct,
        scramble: b.scramble && !b.zero && fill.is_none(),
        fill,
        seed: st.seed,
        max_io_bytes: blkqos_workload::Ddir::ALL
            .map(|d| s.max_bs(d))
            .into_iter()
            .max()
            .unwrap_or(4096)
            .max(1),
        regions,
    }
}

/// The region of a shared mapping (libpmem file, dev-dax device) at
/// ledger `(start, len)`, made once per file.
fn shared_region(
    setups: &[JobSetup],
    st: &JobSetup,
    path: &str,
    (start, len): (u64, u64),
    overwrite: bool,
) -> Result<Region> {
    let s = &st.spec;
    let at = || format!("{}:{}: job `{}`", s.origin.file, s.origin.line, s.name);
    if s.ioengine == IoEngine::DevDax {
        let dev = blkqos_engine::mapfile::open_dax_device(Path::new(path)).map_err(|e| {
            anyhow!(
                "{}: ioengine=dev-dax maps a device-DAX character device: {e}; or run the job \
                 with ioengine=libpmem on a file",
                at()
            )
        })?;
        if len > dev.size_bytes {
            bail!(
                "{}: the job's {len} bytes do not fit on {path} ({} bytes)",
                at(),
                dev.size_bytes
            );
        }
        return Ok(Region::shared(PathBuf::from(path), &dev.file, start, len)?);
    }
    let reads = setups.iter().any(|o| {
        o.spec.rw.has_read()
            && crate::real::fileops::clone_files(o)
                .iter()
                .any(|(p, _)| p == path)
    });
    let file = blkqos_engine::mapfile::open_pmem_file(Path::new(path), len, reads, overwrite)?;
    if !blkqos_engine::mapfile::on_dax(&file) {
        log::info!(
            "blkqos: note: {path} is not on a DAX file system (MAP_SYNC refused): fio 3.33's \
             libpmem fails such a file (err=95, unless PMEM_IS_PMEM_FORCE=1); blkqos runs it \
             through the page cache and makes the drains durable with msync"
        );
    }
    Region::shared(PathBuf::from(path), &file, start, len)
        .map_err(|e| anyhow!("{}: mmap of {path}: {e}", at()))
}

/// Where clone `st`'s file `path` (at `at` on the ledger) lies: a file's
/// extent in the plan; a device-DAX device is the whole ledger (the plan
/// gives its clones their offsets on it), mapped from its start to the
/// end of the furthest region of the clones (`all`) that name it.
fn extent_of(
    all: &[JobSetup],
    st: &JobSetup,
    (path, at): (&str, u64),
    extents: &[(u64, u64)],
) -> Result<(u64, u64)> {
    if st.spec.ioengine == IoEngine::DevDax {
        let end = all
            .iter()
            .filter(|o| o.spec.ioengine == IoEngine::DevDax)
            .filter(|o| {
                crate::real::fileops::clone_files(o)
                    .iter()
                    .any(|(p, _)| p == path)
            })
            .map(|o| o.region_start + o.region_len)
            .max()
            .unwrap_or(0);
        return Ok((0, end));
    }
    match extents.iter().find(|(s, l)| (*s..s + l).contains(&at)) {
        Some(&e) => Ok(e),
        None => bail!(
            "job `{}`: file `{path}` has no extent in the run's plan",
            st.spec.name
        ),
    }
}

/// The backend for the planned clones `setups` (`extents`: the plan's
/// files), and the directory of the first file.
fn backend(
    setups: &[JobSetup],
    extents: &[(u64, u64)],
    overwrite: bool,
) -> Result<(MappedBackend, PathBuf)> {
    let mut regions: Vec<Region> = Vec::new();
    let mut clones = Vec::new();
    for st in setups {
        let mut mine = Vec::new();
        for (path, at) in crate::real::fileops::clone_files(st) {
            let (start, len) = extent_of(setups, st, (&path, at), extents)?;
            if st.spec.ioengine == IoEngine::PageFault {
                // fio_page_fault_init: the job's own memory
                mine.push(regions.len());
                regions.push(Region::anonymous(start, len)?);
                continue;
            }
            let known = regions
                .iter()
                .position(|r| r.path.as_deref() == Some(Path::new(&path)));
            match known {
                Some(i) => mine.push(i),
                None => {
                    mine.push(regions.len());
                    regions.push(shared_region(setups, st, &path, (start, len), overwrite)?);
                }
            }
        }
        clones.push(clone_setup(st, mine));
    }
    let dir = regions
        .iter()
        .find_map(|r| r.path.as_deref().and_then(Path::parent))
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    Ok((MappedBackend::new(regions, clones), dir))
}

/// Each clone's page faults (`minf`, `majf`) are those its own copies
/// took (fio counts a job's thread's: `getrusage(RUSAGE_THREAD)`), not a
/// share of the process's; the results are in the plan's clone order.
fn charge_faults(jobs: &mut [blkqos_driver::JobResult], backend: &MappedBackend) {
    for (i, j) in jobs.iter_mut().enumerate() {
        if let Some((minor, major)) = backend.faults(i) {
            j.stats.cpu.minf = minor;
            j.stats.cpu.majf = major;
        }
    }
}

/// Run `exp`, whose jobs all use ioengine=libpmem, dev-dax or page_fault:
/// the driver with [`backend`].
pub fn run_mapped(exp: &Experiment, ro: &RealOptions, signals: &StopOnSignal) -> Result<Ran> {
    if !exp.writes.is_empty() {
        bail!(
            "io.max/io.weight/io.cost lines act on block IO, and jobs of ioengine=libpmem, \
             dev-dax or page_fault issue none (their loads and stores go to memory): leave the \
             controller options out"
        );
    }
    if exp.pagecache.engine_buffer().is_some() {
        bail!(
            "--pagecache=on buffers the real engine's block writes, and jobs of \
             ioengine=libpmem, dev-dax or page_fault write to a memory mapping (the kernel's \
             page cache, or persistent memory): leave --pagecache out"
        );
    }
    let specs: Vec<&JobSpec> = exp
        .invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .collect();
    crate::data_opts::check_real(specs.iter().copied())?;
    if let Some(why) = specs.iter().find_map(|j| j.engine.real_refusal.as_ref()) {
        bail!("{why}");
    }
    // the copies run on this thread: its CPUs and memory policy
    crate::real::place::apply(&specs)?;
    let plan = crate::real::ledger_plan(exp, "mem")?;
    let (mut backend, dir) = backend(&plan.setups, &plan.extents, ro.overwrite)?;
    let (devid, dev_name) = crate::real::target_identity(&dir);
    let mut result = crate::real::drive_ledger_run(
        exp,
        &plan.tree,
        plan.setups,
        (&mut backend, devid),
        signals,
        |b| {
            b.close().map_err(|e| {
                anyhow!(
                    "the drain (msync) of a libpmem mapping at the jobs' end failed: {}",
                    std::io::Error::from_raw_os_error(e)
                )
            })
        },
    )?;
    charge_faults(&mut result.jobs, &backend);
    crate::outcome::say_interrupted(signals, &result, false);
    Ok(crate::real::ran_without_controllers(
        result,
        plan.tree,
        plan.invocation_of,
        &dir,
        (devid, dev_name),
        Vec::new(),
    ))
}
