//! The file system metadata engines on the real engine: `filecreate`
//! (`open(O_CREAT|O_RDWR, 0600)`), `filestat` (`stat`/`lstat`/`statx`) and
//! `filedelete` (`unlink`), one call per file of the job, in the job's
//! directory (fio 3.33 engines/filecreate.c, filestat.c, filedelete.c),
//! and their directory twins `dircreate` (`mkdir(0700)`), `dirstat` and
//! `dirdelete` (`rmdir`), which fio 3.34 added (engines/fileoperations.c:
//! `create_dir`, `stat_file`, `delete_file`): fio 3.33 parses their job
//! files but cannot load the engines; blkqos runs them as fio 3.34 does.
//!
//! What fio makes of them, and so this module:
//! * each call is timed and is one clat sample of the job's direction
//!   (read unless the job only writes); no slat, no lat, no bw/iops
//!   samples, no latency buckets (`FIO_NOSTATS`);
//! * each file then counts as IO without any moving (`FIO_FAKEIO`):
//!   filecreate one `bs` per file (its `get_file_size` is the smallest
//!   bs), filestat and filedelete the file's size in `bs` pieces;
//! * filestat and filedelete find their files laid out (written) first, as
//!   fio's file setup does before the job starts (not with
//!   `create_on_open=1`, which leaves that to the engine's open: their
//!   calls then fail with ENOENT, as in fio); filecreate's files and
//!   filestat's stay, filedelete's are gone;
//! * dirstat and dirdelete find their directories made first (fio 3.34
//!   `setup_dirs`: `mkdir(0700)`, an existing one is fine); dircreate's
//!   directories stay, dirdelete's are gone.
//!
//! Clones of the jobs between stonewalls run at the same time, one thread
//! each, as fio's job processes; a job stops at its `runtime`.

use crate::real::host::CloneRun;
use anyhow::{bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_driver::JobResult;
use blkqos_engine::meta::{absolute, stat_path, StatCall};
use blkqos_workload::spec::StatType;
use blkqos_workload::stats::JobStats;
use blkqos_workload::{Ddir, IoEngine, JobSpec};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant as WallInstant;

/// What runs a real run's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealRunner {
    /// Block IO on one target (io_uring or the thread pool).
    Block,
    /// A file system call per file ([`run_clones`]).
    Metadata,
    /// A file system call per IO (falloc, ftruncate:
    /// [`crate::real::fileops`]).
    FileCalls,
    /// A copy to or from a memory mapping per IO (libpmem, dev-dax,
    /// page_fault: [`crate::real::mapped`]).
    Mapped,
    /// File calls beside block IO on one file, each job on its own
    /// engine ([`crate::real::mixed`]).
    Mixed,
}

/// Which runner the jobs need (an error: a mix).
pub fn runner(jobs: &[&JobSpec]) -> Result<RealRunner> {
    let meta = jobs
        .iter()
        .filter(|j| j.ioengine.is_file_metadata() || j.ioengine.is_host_task())
        .count();
    let calls = jobs.iter().filter(|j| j.ioengine.is_file_call()).count();
    let mapped = jobs.iter().filter(|j| j.ioengine.is_mapped()).count();
    if mapped > 0 {
        if mapped == jobs.len() {
            return Ok(RealRunner::Mapped);
        }
        bail!(
            "--backend=real runs jobs of ioengine=libpmem, dev-dax or page_fault on their own \
             (their IO is loads and stores on a memory mapping, not the real engine's IO \
             path): put the other jobs of the file in a job file of their own"
        );
    }
    match (meta, calls) {
        (0, 0) => Ok(RealRunner::Block),
        (n, 0) if n == jobs.len() => Ok(RealRunner::Metadata),
        (0, n) if n == jobs.len() => Ok(RealRunner::FileCalls),
        (0, _) => Ok(RealRunner::Mixed),
        (_, 0) => bail!(
            "--backend=real runs jobs of ioengine=filecreate, filestat, filedelete, dircreate, \
             dirstat, dirdelete, cpuio or exec on their own: the other jobs of the file need \
             the one target the real engine drives; put them in a job file of their own"
        ),
        _ => bail!(
            "--backend=real does not run jobs of ioengine=falloc, ftruncate or e4defrag beside \
             jobs of filecreate, filestat, filedelete, dircreate, dirstat, dirdelete, cpuio or \
             exec: put the jobs of one kind in a job file of their own"
        ),
    }
}

/// Layout chunk for filestat's and filedelete's files.
const LAYOUT_CHUNK_BYTES: usize = 1 << 20;

/// The IO size of each of a clone's files (fio `setup_files`): `filesize`,
/// else `size` shared out, else the engine's file size: filecreate's is
/// the smallest bs (its `get_file_size`), and so is taken for the others'
/// files, which blkqos lays out itself.
fn file_size_bytes(s: &JobSpec) -> u64 {
    match (s.files.filesize, s.size) {
        (Some((lo, _)), _) => lo,
        (None, Some(blkqos_workload::SizeSpec::Bytes(b))) => b / u64::from(s.files.nrfiles.max(1)),
        _ => Ddir::ALL
            .map(|d| s.min_bs(d))
            .into_iter()
            .min()
            .unwrap_or(4096),
    }
}

/// fio's file setup for filestat and filedelete: each file written to its
/// size (a file already that big is left as it is); dirstat's and
/// dirdelete's directories made (fio 3.34 `setup_dirs`).
fn lay_out(path: &Path, size: u64, engine: IoEngine) -> Result<()> {
    if matches!(engine, IoEngine::Dirstat | IoEngine::Dirdelete) {
        use std::os::unix::fs::DirBuilderExt;
        return match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                bail!("create directory {} failed: {e}", path.display())
            }
            _ => Ok(()),
        };
    }
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= size) {
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("laying out {}: {e}", path.display()))?;
    let chunk = vec![0u8; LAYOUT_CHUNK_BYTES];
    let mut left = size;
    while left > 0 {
        let n = left.min(LAYOUT_CHUNK_BYTES as u64) as usize;
        f.write_all(&chunk[..n])
            .map_err(|e| anyhow::anyhow!("laying out {}: {e}", path.display()))?;
        left -= n as u64;
    }
    Ok(())
}

/// The call of `engine` on `path`.
fn call(engine: IoEngine, stat: StatType, path: &Path) -> std::io::Result<()> {
    match engine {
        IoEngine::Filecreate => {
            use std::os::unix::fs::OpenOptionsExt;
            // fio times the open only; the file is closed after its IO
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)?;
            drop(f);
            Ok(())
        }
        IoEngine::Dircreate => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().mode(0o700).create(path)
        }
        IoEngine::Filestat | IoEngine::Dirstat => match stat {
            StatType::Stat => stat_path(path, StatCall::Stat),
            StatType::Lstat => stat_path(path, StatCall::Lstat),
            StatType::Statx => stat_path(&absolute(path)?, StatCall::Statx),
        },
        IoEngine::Dirdelete => std::fs::remove_dir(path),
        _ => std::fs::remove_file(path),
    }
}

/// One clone, its thread's CPU use charged to it (fio
/// `update_rusage_stat`: `getrusage(RUSAGE_THREAD)` of a job's thread).
fn run_clone(setup: &JobSetup, run_t0: WallInstant, stop: &AtomicBool) -> CloneRun {
    use blkqos_engine::usage::ProcessUsage;
    let before = ProcessUsage::thread_now();
    let mut run = crate::real::host::run_clone(setup, run_t0, stop)
        .unwrap_or_else(|| run_calls(setup, run_t0, stop));
    if let (Some(a), Some(b)) = (before, ProcessUsage::thread_now()) {
        let u = b.since(&a);
        run.stats.cpu = blkqos_workload::stats::CpuUsage {
            usr_ms: u.user_us / 1000,
            sys_ms: u.sys_us / 1000,
            ctx: u.ctx,
            majf: u.majflt,
            minf: u.minflt,
        };
    }
    run
}

/// A metadata clone: one timed call per file, until its files or its
/// runtime end.
fn run_calls(setup: &JobSetup, run_t0: WallInstant, stop: &AtomicBool) -> CloneRun {
    let s = &setup.spec;
    // fio: stat_ddir is READ when the job reads, else WRITE
    let ddir = if s.rw.has_read() || !s.rw.has_write() {
        Ddir::Read
    } else {
        Ddir::Write
    };
    let bs = s.bs.get(ddir).max(1);
    let ios_per_file = (file_size_bytes(s) / bs).max(1);
    let paths = s.files.paths(s.filename.as_deref(), &s.name, setup.clone);
    let mut stats = JobStats {
        members: 1,
        ..JobStats::default()
    };
    let mut error = 0;
    let t0 = WallInstant::now();
    for p in &paths {
        if stop.load(Ordering::Relaxed)
            || s.runtime
                .is_some_and(|r| t0.elapsed().as_nanos() as u64 >= r.as_ns())
        {
            break;
        }
        let at = WallInstant::now();
        let r = call(s.ioengine, s.engine.stat_type, Path::new(p));
        let ns = at.elapsed().as_nanos() as u64;
        if let Err(e) = r {
            error = e.raw_os_error().unwrap_or(libc_eio());
            stats.total_err += 1;
            stats.first_error = error;
            log::info!(
                "blkqos: job `{}`: {} {p}: {e}",
                s.name,
                s.ioengine.fio_name()
            );
            break;
        }
        let d = &mut stats.dirs[ddir];
        // fio: no sample with disable_lat (gtod_reduce sets it)
        if !s.gtod_reduce {
            d.clat.add(ns);
            if s.clat_percentiles {
                d.clat_hist.record(ns);
            }
        }
        d.io_bytes += ios_per_file * bs;
        d.total_ios += ios_per_file;
        stats.issued[ddir] += ios_per_file;
        stats.depth_level[JobStats::depth_index(1)] += ios_per_file;
        stats.submit_batches[JobStats::batch_index(1)] += ios_per_file;
        stats.complete_batches[JobStats::batch_index(1)] += ios_per_file;
    }
    let took = t0.elapsed();
    stats.dirs[ddir].runtime_ms = (took.as_nanos() as u64).div_ceil(1_000_000);
    stats.job_runtime_ms = took.as_millis() as u64;
    stats.elapsed_s = run_t0.elapsed().as_secs_f64().round() as u64;
    CloneRun { stats, error }
}

fn libc_eio() -> i32 {
    5
}

/// Lay out the files of filestat's and filedelete's clones (fio's file
/// setup writes them, unless create_on_open leaves it to the engine).
pub fn lay_out_all(setups: &[JobSetup]) -> Result<()> {
    for st in setups {
        if !st.spec.files.create_on_open && !creates(st.spec.ioengine) {
            let size = file_size_bytes(&st.spec);
            for p in st
                .spec
                .files
                .paths(st.spec.filename.as_deref(), &st.spec.name, st.clone)
            {
                lay_out(Path::new(&p), size, st.spec.ioengine)?;
            }
        }
    }
    Ok(())
}

/// filecreate and dircreate make their files, cpuio and exec have none:
/// nothing is laid out (and no disk watched: FIO_DISKLESSIO).
fn creates(engine: IoEngine) -> bool {
    matches!(
        engine,
        IoEngine::Filecreate | IoEngine::Dircreate | IoEngine::Cpuio | IoEngine::Exec
    )
}

/// Whether fio would watch a disk: filecreate and dircreate are
/// FIO_DISKLESSIO.
pub fn watches_disk(setups: &[JobSetup]) -> bool {
    setups.iter().any(|s| !creates(s.spec.ioengine))
}

/// Run every clone, the clones between stonewalls at once, one thread
/// each; one result per setup, in order.
pub fn run_clones(setups: Vec<JobSetup>, stop: &AtomicBool) -> Vec<JobResult> {
    let run_t0 = WallInstant::now();
    let mut runs: Vec<Option<CloneRun>> = (0..setups.len()).map(|_| None).collect();
    // stonewall groups: a stonewalled job's clone 0 starts a new one
    let mut start = 0;
    while start < setups.len() {
        let end = (start + 1..setups.len())
            .find(|&i| setups[i].spec.stonewall && setups[i].clone == 0)
            .unwrap_or(setups.len());
        std::thread::scope(|sc| {
            let handles: Vec<_> = setups[start..end]
                .iter()
                .map(|st| sc.spawn(|| run_clone(st, run_t0, stop)))
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                runs[start + i] = h.join().ok();
            }
        });
        start = end;
    }
    setups
        .into_iter()
        .zip(runs)
        .map(|(st, run)| {
            let run = run.unwrap_or(CloneRun {
                stats: JobStats::default(),
                error: libc_eio(),
            });
            JobResult {
                spec: st.spec,
                clone: st.clone,
                group: st.group,
                stats: run.stats,
                error: run.error,
                failure: None,
                failed_ios: u64::from(run.error != 0),
            }
        })
        .collect()
}
