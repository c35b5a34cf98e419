//! Running an experiment on the real engine (io_uring, or the thread-pool
//! fallback) against a file or block device.

pub(crate) mod fileops;
pub(crate) mod files;
pub(crate) mod host;
pub(crate) mod mapped;
pub(crate) mod meta;
pub(crate) mod mixed;
pub(crate) mod place;
pub(crate) mod verify;

use crate::experiment::{Experiment, Plan, Ran, RealOptions};
use anyhow::{bail, Result};
use blkqos_core::DevId;
use blkqos_engine::{open_backend, BackendKind, EngineOptions, RealBackend, StopOnSignal};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{Ddir, IoEngine, RwMode, SizeSpec};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// `MAJ:MIN` and a name for the target: a block device's own number, or the
/// device holding a regular file's filesystem.
pub fn target_identity(path: &Path) -> (DevId, String) {
    let meta = std::fs::metadata(path).ok();
    let (dev, is_blk) = match &meta {
        Some(m) if m.file_type().is_block_device() => (m.rdev(), true),
        Some(m) => (m.dev(), false),
        None => (0, false),
    };
    // glibc's gnu_dev_major/minor encoding
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let devid = DevId::new(major as u32, minor as u32);
    let name = if is_blk {
        path.file_name()
            .map_or("disk".into(), |n| n.to_string_lossy().into_owned())
    } else {
        std::fs::read_to_string(format!(
            "/sys/dev/block/{}:{}/uevent",
            devid.major, devid.minor
        ))
        .ok()
        .and_then(|u| {
            u.lines()
                .find_map(|l| l.strip_prefix("DEVNAME=").map(str::to_string))
        })
        .unwrap_or_else(|| format!("{}:{}", devid.major, devid.minor))
    };
    (devid, name)
}

/// The one target the jobs name: their common file (in its `directory`);
/// `/dev/null` when every job is `ioengine=null` and names none (no IO
/// reaches it). None: they name several files, or a job has several
/// ([`crate::real::files`]).
pub(crate) fn target_of(jobs: &[&blkqos_workload::JobSpec]) -> Result<Option<PathBuf>> {
    let mut names = Vec::new();
    let mut several = false;
    for j in jobs {
        let paths = j.files.paths(j.filename.as_deref(), &j.name, 0);
        // clones of a job without filename= have files of their own
        several |= paths.len() > 1
            || j.numjobs > 1 && j.filename.is_none() && paths.len() == 1 && j.files.is_multi(None);
        if j.filename.is_some() || j.files.is_multi(None) {
            names.push(paths[0].clone());
        }
    }
    names.sort_unstable();
    names.dedup();
    let all_named = jobs
        .iter()
        .all(|j| j.filename.is_some() || j.files.is_multi(None));
    match names.as_slice() {
        [one] if all_named && !several => Ok(Some(PathBuf::from(one))),
        [] if jobs.iter().all(|j| j.ioengine == IoEngine::Null) => {
            Ok(Some(PathBuf::from("/dev/null")))
        }
        _ if all_named => Ok(None),
        _ => bail!("--backend=real needs filename= or directory= on every job"),
    }
}

/// The device the controllers act on and reports name: the one under
/// the target, or under the first of several files; controllers need
/// the files on one device (io.max and the others are per device).
fn identity_of(paths: &[PathBuf], controllers: bool) -> Result<(DevId, String)> {
    let ids: Vec<(DevId, String)> = paths.iter().map(|p| target_identity(p)).collect();
    if controllers {
        if let Some(other) = ids.iter().find(|(d, _)| *d != ids[0].0) {
            bail!(
                "io.max/io.weight/io.cost lines act on one device, but the jobs' files are on \
                 {} and {}: put the files on one file system, or run without the controller \
                 lines",
                ids[0].1,
                other.1
            );
        }
    }
    Ok(ids
        .into_iter()
        .next()
        .unwrap_or((DevId::new(0, 0), "none".into())))
}

/// The backend on the run's target(s), the plan on it, and its files.
fn open_run(
    exp: &Experiment,
    jobs: &[&blkqos_workload::JobSpec],
    ro: &RealOptions,
    write_buffer: Option<&blkqos_driver::pagecache::PageCacheConfig>,
) -> Result<crate::real::files::Several> {
    let target = match &ro.path {
        Some(p) => Some(p.clone()),
        None => target_of(jobs)?,
    };
    let verify_path = target.clone().unwrap_or_default();
    let opts = engine_options(jobs, ro, write_buffer, &verify_path)?;
    if ro.kind == BackendKind::Threads {
        // no ring to register with: refuse before the target is laid out
        check_registration(jobs, BackendKind::Threads, (false, false))?;
    }
    let Some(path) = target else {
        return crate::real::files::open_several(exp, opts);
    };
    if write_buffer.is_none() && opts.direct && !jobs.iter().all(|j| j.direct) {
        bail!("jobs on one target must agree on direct= (the target is opened once)");
    }
    let jobs_direct = jobs.iter().any(|j| j.direct);
    let backend = open_target(&path, opts, write_buffer.is_some(), jobs_direct)?;
    let plan = plan_on(exp, &backend, &path)?;
    Ok(crate::real::files::Several {
        backend,
        plan,
        paths: vec![path],
        files: Vec::new(),
    })
}

/// Run `exp` on the real target(s); `signals` stops it (SIGINT, SIGTERM).
pub fn run_real(exp: &Experiment, ro: &RealOptions, signals: &StopOnSignal) -> Result<Ran> {
    let jobs = real_jobs(exp)?;
    let write_buffer = exp.pagecache.engine_buffer();
    let opened = open_run(exp, &jobs, ro, write_buffer.as_ref())?;
    let (mut backend, paths, files) = (opened.backend, opened.paths, opened.files);
    let depth = blkqos_driver::Backend::nr_requests(&backend);
    check_registration(&jobs, backend.kind(), backend.registered())?;
    let path = paths[0].clone();
    let (devid, dev_name) = identity_of(&paths, !exp.writes.is_empty())?;
    let (tree, setups, invocation_of) = (
        opened.plan.tree,
        opened.plan.setups,
        opened.plan.invocation_of,
    );
    let mut stack = blkqos_core::ControllerStack::from_writes(
        &exp.controllers,
        &tree,
        blkqos_core::cgroupfs::DeviceInfo {
            dev: devid,
            rotational: false,
            nr_requests: depth,
        },
        &exp.writes,
    )?;
    stack.set_trace(exp.trace_out.is_some() || exp.ktrace_out.is_some());
    let buffered = write_buffer.is_some();
    let mut opts = exp.run_options(blkqos_engine::host_model(), Some(signals));
    opts.pagecache = write_buffer;
    // the thread pool's waits are not cut short by a signal
    opts.poll_every = Some(blkqos_core::Duration::from_ms(50));
    // fio reads the disks' stat before its jobs start and after they end
    let disks = blkqos_engine::diskutil::DiskWatch::start_all(&paths);
    let cpu_at_start = blkqos_engine::usage::ProcessUsage::now();
    let target = crate::real::files::label(&paths);
    attach_streams(exp, (&paths, &target), &dev_name, cpu_at_start);
    // the live view has the elapsed time and rates: no status line under it
    let eta = exp
        .live
        .every_s
        .map_or(ro.eta, |_| crate::progress::Eta::Never);
    let result = match crate::progress::Progress::start(&setups, eta) {
        Some(p) => blkqos_driver::run(&mut p.wrap(&mut backend), &mut stack, setups, &opts),
        None => blkqos_driver::run(&mut backend, &mut stack, setups, &opts),
    };
    let mut result = match result {
        Ok(r) => r,
        Err(e) => {
            write_out_after_failure(&mut backend, &path);
            return Err(e.into());
        }
    };
    let kernel_disks = crate::host_report::kernel_disk_util(&disks.finish());
    if let (Some(a), Some(b)) = (cpu_at_start, blkqos_engine::usage::ProcessUsage::now()) {
        crate::host_report::charge_cpu(&mut result.jobs, &b.since(&a));
    }
    let lost_pages = after_the_run(signals, &result, buffered, &mut backend, &path);
    let iostat = tree.ids().map(|g| stack.iostat(g)).collect();
    let iostat_keys = tree.ids().map(|g| stack.iostat_keys(g)).collect();
    let (trace, trace_dropped) =
        crate::experiment::trace_for(&mut stack, &dev_name, exp.trace_out.as_deref());
    Ok(Ran {
        result,
        invocation_of,
        tree,
        iostat,
        iostat_keys,
        trace,
        trace_dropped,
        target,
        files,
        lost_pages,
        dev_name,
        devid,
        kernel_disks: Some(kernel_disks),
    })
}

/// The run's jobs, once the real engine has checked it can honour them
/// (data options, engines and engine options the parser marked).
fn real_jobs(exp: &Experiment) -> Result<Vec<&blkqos_workload::JobSpec>> {
    let jobs: Vec<_> = exp
        .invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .collect();
    crate::data_opts::check_real(jobs.iter().copied())?;
    if let Some(why) = jobs.iter().find_map(|j| j.engine.real_refusal.as_ref()) {
        bail!("{why}");
    }
    if let Some(j) = jobs
        .iter()
        .find(|j| j.zones.mode == blkqos_workload::spec_zone::ZoneMode::Zbd)
    {
        bail!(
            "{}:{}: job `{}`: option `zonemode`: value `zbd`: the real engine does not run \
             zonemode=zbd: on a zoned block device (/sys/block/X/queue/zoned host-managed or \
             host-aware) fio reads the zones and resets them with BLKRESETZONE, on a regular \
             file or a disk without zones it emulates zones of zonesize in the file; blkqos \
             does neither on the real engine: run the job on the simulator (a zoned null_blk), \
             or with fio itself",
            j.origin.file,
            j.origin.line,
            j.name
        );
    }
    // before the backend starts: its workers inherit the thread's CPUs
    crate::real::place::apply(&jobs)?;
    Ok(jobs)
}

/// After the driver loop: say how a signal ended it, write out what an
/// abandoned drain left, report the write-back buffer; the acknowledged
/// pages it could not put on the target.
fn after_the_run(
    signals: &StopOnSignal,
    result: &blkqos_driver::RunResult,
    buffered: bool,
    backend: &mut RealBackend,
    path: &Path,
) -> u64 {
    crate::outcome::say_interrupted(signals, result, buffered);
    if result.abandoned {
        write_out_after_abandon(backend, path);
    }
    report_store(backend)
}

/// The job clones laid out on the target as on a device of its size.
fn plan_on(exp: &Experiment, backend: &RealBackend, path: &Path) -> Result<Plan> {
    let layout_dev = DeviceSpec::new(
        "null",
        [
            (
                "size",
                backend.target().capacity.max(4096).to_string().as_str(),
            ),
            ("name", path_file_name(path).as_str()),
        ],
    )
    .map_err(|e| anyhow::anyhow!("target {}: {e}", path.display()))?;
    exp.plan(&layout_dev, Some(&path.to_string_lossy()))
}

/// What the engine must open the target at `path` for, from the jobs:
/// direct IO, reads and writes, the size they need, the largest IO, the
/// depth and each job's verify format.
pub(crate) fn engine_options(
    jobs: &[&blkqos_workload::JobSpec],
    ro: &RealOptions,
    write_buffer: Option<&blkqos_driver::pagecache::PageCacheConfig>,
    path: &Path,
) -> Result<EngineOptions> {
    let direct = jobs.iter().any(|j| j.direct);
    let writes = jobs
        .iter()
        .any(|j| j.rw.has_write() || j.rw.has_trim() || matches!(j.rw, RwMode::Trim));
    let size_needed = jobs
        .iter()
        .map(|j| {
            let off = match j.offset {
                SizeSpec::Bytes(b) => b,
                SizeSpec::Percent(_) => 0,
            } + u64::from(j.numjobs.max(1) - 1) * j.offset_increment;
            match (j.size, j.files.filesize) {
                (_, Some((_, hi))) => off + hi,
                (Some(SizeSpec::Bytes(b)), None) => off + b,
                _ => 0,
            }
        })
        .max()
        .unwrap_or(0);
    let max_io = jobs
        .iter()
        .map(|j| {
            Ddir::ALL
                .map(|d| j.max_bs(d))
                .into_iter()
                .max()
                .unwrap_or(4096)
        })
        .max()
        .unwrap_or(4096)
        .max(4096);
    let (sqpoll, iopoll) = crate::real::place::ring_flags(jobs)?;
    Ok(EngineOptions {
        sqpoll,
        iopoll,
        write_fill: crate::data_opts::real_write_fill(
            jobs.iter().copied(),
            write_buffer.is_some(),
        )?,
        kind: ro.kind,
        // the write-back buffer is the cache: its writeback bypasses the
        // kernel's (O_DIRECT), unless the file system refuses O_DIRECT
        direct: direct || write_buffer.is_some(),
        write_buffer: write_buffer.is_some(),
        depth: jobs
            .iter()
            .map(|j| j.effective_iodepth() * j.numjobs.max(1))
            .sum::<u32>()
            .clamp(1, 4096),
        // writeback IOs are up to `writeback_io` long
        max_io: write_buffer.map_or(max_io, |c| max_io.max(c.writeback_io_bytes)),
        size_needed,
        reads: jobs.iter().any(|j| j.rw.has_read()),
        writes,
        allow_destructive: ro.allow_destructive,
        overwrite: ro.overwrite,
        fio_verify: crate::real::verify::job_verifies(jobs, path, write_buffer.is_some())?,
        // fio's trims are BLKDISCARD ioctls: ENOTTY on a file
        fio_trims: true,
        ..EngineOptions::default()
    })
}

/// Open the target; a run of buffered jobs through the write-back
/// buffer, on a file system that refuses O_DIRECT, writes back through
/// the kernel's page cache instead.
fn open_target(
    path: &Path,
    opts: EngineOptions,
    write_buffer: bool,
    jobs_direct: bool,
) -> Result<RealBackend> {
    let r = match open_backend(path, opts.clone()) {
        Err(blkqos_engine::EngineError::DirectUnsupported { .. })
            if write_buffer && !jobs_direct =>
        {
            log::info!(
                "blkqos: {}: O_DIRECT refused; the write-back buffer writes through the kernel's page cache",
                path.display()
            );
            open_backend(
                path,
                EngineOptions {
                    direct: false,
                    ..opts
                },
            )
        }
        r => r,
    };
    // every engine error names the target already
    r.map_err(anyhow::Error::from)
}

/// The live view and the status reports learn the device's name and how
/// to read the host's numbers.
fn attach_streams(
    exp: &Experiment,
    (paths, target): (&[PathBuf], &str),
    dev_name: &str,
    cpu_at_start: Option<blkqos_engine::usage::ProcessUsage>,
) {
    let Some(streams) = &exp.streams else {
        return;
    };
    let mut s = streams
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(l) = &mut s.live {
        l.set_device(dev_name);
    }
    if let Some(st) = &mut s.status {
        let host = crate::status::HostProbe {
            disks: blkqos_engine::diskutil::DiskWatch::start_all(paths),
            cpu_at_start,
        };
        st.set_real(target, dev_name, host);
    }
}

/// The run failed before draining the write-back buffer: acknowledged
/// bytes must not be lost, so write what it holds without limits.
fn write_out_after_failure(backend: &mut RealBackend, path: &Path) {
    match backend.write_out_store() {
        Some(Ok((0, 0))) | None => {}
        Some(Ok((written, failed))) => log::info!(
            "blkqos: the run failed before draining the write-back buffer: wrote its {written} pages to the target unthrottled ({failed} failed)"
        ),
        Some(Err(w)) => log::info!(
            "blkqos: the run failed and the write-back buffer could not be written out: {}: {w}",
            path.display()
        ),
    }
}

/// The drain was given up (SIGTERM, or a second signal): every page the
/// write-back buffer still holds goes to the target now, unthrottled, and
/// the target is fsynced.
fn write_out_after_abandon(backend: &mut RealBackend, path: &Path) {
    let t0 = std::time::Instant::now();
    match backend.write_out_store() {
        None => {}
        Some(Ok((written, failed))) => log::info!(
            "blkqos: wrote the write-back buffer's {written} remaining pages ({} bytes) to {} unthrottled and fsynced it in {:.3} s{}",
            written * blkqos_engine::wbuf::PAGE,
            path.display(),
            t0.elapsed().as_secs_f64(),
            if failed > 0 {
                format!("; {failed} pages failed")
            } else {
                String::new()
            }
        ),
        Some(Err(w)) => log::info!(
            "blkqos: the write-back buffer could not be written out: {}: {w}",
            path.display()
        ),
    }
}

/// The write-back buffer's stderr line (and a warning for pages not on
/// the target); returns how many acknowledged pages it still holds.
fn report_store(backend: &RealBackend) -> u64 {
    let Some((s, held)) = backend.store_stats() else {
        return 0;
    };
    log::info!(
        "blkqos: write-back buffer: {} bytes acknowledged, {} pages written back, peak {} pages held, {} left, {} failed writebacks",
        s.bytes_written, s.pages_written_back, s.pages_peak, held, s.failed_writebacks
    );
    if held > 0 || s.missing > 0 {
        log::warn!(
            "blkqos: warning: write-back buffer: {held} pages not on the target ({} pages were missing)",
            s.missing
        );
    }
    held as u64
}

fn path_file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| {
            n.to_string_lossy()
                .replace(|c: char| c.is_whitespace() || c == '/', "_")
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "target".into())
}

/// `fixedbufs=1` / `registerfiles=1` (fio engines/io_uring.c
/// `fio_ioring_queue_init`: a job whose registration fails does not run):
/// honoured when the io_uring ring registered its buffers / the target,
/// refused otherwise, at the place the option was given.
pub(crate) fn check_registration(
    jobs: &[&blkqos_workload::JobSpec],
    kind: BackendKind,
    (bufs, file): (bool, bool),
) -> Result<()> {
    for j in jobs {
        let e = &j.engine;
        let Some(at) = &e.registration_at else {
            continue;
        };
        let missing = match (e.fixedbufs && !bufs, e.registerfiles && !file) {
            (true, _) => "its buffers",
            (_, true) => "the target",
            _ => continue,
        };
        let why = match kind {
            BackendKind::Threads => "the thread-pool backend has no ring".to_string(),
            _ => "the kernel refused the registration (io_uring_register; RLIMIT_MEMLOCK caps \
                  registered buffers)"
                .to_string(),
        };
        bail!(
            "{at}: job `{}` asks for {missing} registered with the io_uring ring, and {why}; \
             run it with --backend=io_uring on a kernel that allows it, or leave the option out",
            j.name
        );
    }
    Ok(())
}

/// Run `exp`, whose jobs all use a file system metadata engine
/// (filecreate, filestat, filedelete), on the file system: the calls are
/// made by [`crate::real::meta`]; this builds the run's report input.
pub fn run_meta(exp: &Experiment, signals: &StopOnSignal) -> Result<Ran> {
    if !exp.writes.is_empty() {
        bail!(
            "io.max/io.weight/io.cost lines act on the block IO blkqos issues, and jobs of \
             ioengine=filecreate, filestat or filedelete issue none (their file system calls' \
             own IO is the kernel's): leave the controller options out"
        );
    }
    let specs: Vec<_> = exp
        .invocations
        .iter()
        .flat_map(|i| i.jobs.jobs.iter())
        .collect();
    crate::real::place::apply(&specs)?;
    // the plan gives the clones and their groups; the layout device is
    // only a ledger here (no file is on it)
    let layout_dev = DeviceSpec::new("null", [("size", "1048576t"), ("name", "fs")])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Plan {
        tree,
        setups,
        invocation_of,
        ..
    } = exp.plan(&layout_dev, None)?;
    crate::real::meta::lay_out_all(&setups)?;
    let disk_jobs = crate::real::meta::watches_disk(&setups);
    let dir: PathBuf = setups
        .first()
        .and_then(|s| s.spec.files.directory.first().cloned())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let stop = signals.flag();
    let disks = blkqos_engine::diskutil::DiskWatch::start(&dir);
    let t0 = std::time::Instant::now();
    // each clone's thread charges itself its CPU use
    let jobs = crate::real::meta::run_clones(setups, &stop);
    let ended_at = blkqos_core::Instant(t0.elapsed().as_nanos() as u64);
    let kernel_disks = if disk_jobs {
        crate::host_report::kernel_disk_util(&disks.finish())
    } else {
        Vec::new()
    };
    let opts = exp.run_options(blkqos_engine::host_model(), None);
    let result = blkqos_driver::RunResult {
        jobs,
        disk: blkqos_driver::DiskStats::new(opts.ticks_mode, opts.hz.max(1)),
        ended_at,
        interrupted: stop.load(std::sync::atomic::Ordering::Relaxed),
        abandoned: false,
        dropped_ios: 0,
        diskstats: Vec::new(),
        diskstats_dropped: 0,
        request_trace: Vec::new(),
        lat_hists: None,
        pagecache: None,
        passes: 0,
    };
    Ok(ran_without_controllers(
        result,
        tree,
        invocation_of,
        &dir,
        target_identity(&dir),
        kernel_disks,
    ))
}

/// Run `exp`, whose jobs all use ioengine=falloc, ftruncate or e4defrag: the
/// driver with [`crate::real::fileops::backend`].
pub fn run_file_calls(exp: &Experiment, ro: &RealOptions, signals: &StopOnSignal) -> Result<Ran> {
    if !exp.writes.is_empty() {
        bail!(
            "io.max/io.weight/io.cost lines act on the block IO blkqos issues, and jobs of \
             ioengine=falloc, ftruncate or e4defrag issue none (their calls' own IO is the \
             file system's): leave the controller options out"
        );
    }
    let plan = ledger_plan(exp, "fs")?;
    let (mut backend, dir) =
        crate::real::fileops::backend(&plan.setups, &plan.extents, ro.overwrite)?;
    let (devid, dev_name) = target_identity(&dir);
    let disks = blkqos_engine::diskutil::DiskWatch::start(&dir);
    let result = drive_ledger_run(
        exp,
        &plan.tree,
        plan.setups,
        (&mut backend, devid),
        signals,
        |_| Ok(()),
    )?;
    let kernel_disks = crate::host_report::kernel_disk_util(&disks.finish());
    crate::outcome::say_interrupted(signals, &result, false);
    Ok(ran_without_controllers(
        result,
        plan.tree,
        plan.invocation_of,
        &dir,
        (devid, dev_name),
        kernel_disks,
    ))
}

/// The plan of a run whose jobs' files are laid out on a ledger of
/// regions, not on one target (file calls, mixed engines, mapped
/// engines); `name` names the ledger.
pub(crate) fn ledger_plan(exp: &Experiment, name: &str) -> Result<Plan> {
    let ledger = [("size", crate::real::fileops::LEDGER_SIZE), ("name", name)];
    let layout_dev = DeviceSpec::new("null", ledger).map_err(|e| anyhow::anyhow!("{e}"))?;
    exp.plan(&layout_dev, None)
}

/// Drive `setups` on `backend` under the controllers of `exp`'s knob
/// lines (device `devid`), polling every 50 ms for signals; `finish` runs
/// after the jobs (a drain at their end belongs to them), then the CPU the
/// run used is charged to its jobs.
pub(crate) fn drive_ledger_run<B: blkqos_driver::Backend>(
    exp: &Experiment,
    tree: &blkqos_core::CgroupTree,
    setups: Vec<blkqos_driver::run::JobSetup>,
    (backend, devid): (&mut B, DevId),
    signals: &StopOnSignal,
    finish: impl FnOnce(&mut B) -> Result<()>,
) -> Result<blkqos_driver::RunResult> {
    let mut stack = blkqos_core::ControllerStack::from_writes(
        &exp.controllers,
        tree,
        blkqos_core::cgroupfs::DeviceInfo {
            dev: devid,
            rotational: false,
            nr_requests: backend.nr_requests(),
        },
        &exp.writes,
    )?;
    let mut opts = exp.run_options(blkqos_engine::host_model(), Some(signals));
    opts.poll_every = Some(blkqos_core::Duration::from_ms(50));
    let cpu_at_start = blkqos_engine::usage::ProcessUsage::now();
    let mut result = blkqos_driver::run(backend, &mut stack, setups, &opts)?;
    finish(backend)?;
    if let (Some(a), Some(b)) = (cpu_at_start, blkqos_engine::usage::ProcessUsage::now()) {
        crate::host_report::charge_cpu(&mut result.jobs, &b.since(&a));
    }
    Ok(result)
}

/// The result of a real run whose jobs issue no block IO of blkqos's own
/// (file calls, metadata and host engines): no controller state, no
/// trace, and the kernel's disks under `dir`.
pub(crate) fn ran_without_controllers(
    result: blkqos_driver::RunResult,
    tree: blkqos_core::CgroupTree,
    invocation_of: Vec<usize>,
    dir: &Path,
    (devid, dev_name): (DevId, String),
    kernel_disks: Vec<blkqos_fio::report::DiskUtil>,
) -> Ran {
    Ran {
        result,
        invocation_of,
        iostat: tree.ids().map(|_| Default::default()).collect(),
        iostat_keys: tree.ids().map(|_| Vec::new()).collect(),
        tree,
        trace: String::new(),
        trace_dropped: 0,
        target: dir.display().to_string(),
        files: Vec::new(),
        lost_pages: 0,
        dev_name,
        devid,
        kernel_disks: Some(kernel_disks),
    }
}
