//! The file-call engines on the real engine: `falloc` (`fallocate(2)`
//! per IO) and `ftruncate` (`ftruncate(2)` per write), fio 3.33
//! engines/falloc.c and engines/ftruncate.c. The driver runs the jobs as
//! for any engine (their offsets, sizes, directions, `time_based`,
//! latencies, the report); [`blkqos_engine::fileops::FileCallBackend`]
//! makes each IO the engine's call on the job's file.
//!
//! The plan lays the jobs' files out on a ledger device, one region per
//! file; each file is opened (created and laid out, under the real
//! engine's safety rules) in the job's directory, and a file a job names
//! twice is the same file, as in fio.

use crate::experiment::{Experiment, Plan, Ran};
use anyhow::{bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_engine::fileops::{open_call_file, CallFile, FileCall, FileCallBackend, NewFile};
use blkqos_engine::StopOnSignal;
use blkqos_sim::DeviceSpec;
use blkqos_workload::spec::Fallocate;
use blkqos_workload::IoEngine;
use std::path::{Path, PathBuf};

/// The ledger device the files are laid out on (no IO reaches it).
const LEDGER_SIZE: &str = "1048576t";

fn call_of(engine: IoEngine) -> FileCall {
    if engine == IoEngine::Ftruncate {
        FileCall::Ftruncate
    } else {
        FileCall::Falloc
    }
}

/// fio's layout of a new file with `fallocate=` (filesetup.c
/// `extend_file`): posix and native allocate it (mode 0), keep with
/// `KEEP_SIZE`, truncate sets its size, none leaves it empty.
fn new_file(f: Fallocate) -> NewFile {
    match f {
        Fallocate::Posix | Fallocate::Native => NewFile::Allocate(0),
        Fallocate::Keep => NewFile::Allocate(blkqos_engine::fileops::KEEP_SIZE),
        Fallocate::None => NewFile::Empty,
        Fallocate::Truncate => NewFile::Truncate,
    }
}

/// Each clone's files as (path, ledger offset of its IO region).
fn clone_files(st: &JobSetup) -> Vec<(String, u64)> {
    let s = &st.spec;
    let paths = s.files.paths(s.filename.as_deref(), &s.name, st.clone);
    if st.files.is_empty() {
        paths
            .into_iter()
            .take(1)
            .map(|p| (p, st.region_start))
            .collect()
    } else {
        paths
            .into_iter()
            .zip(st.files.iter().map(|&(start, _)| start))
            .collect()
    }
}

/// Open every file of the run once, with the region the plan gave it.
fn open_files(
    setups: &[JobSetup],
    extents: &[(u64, u64)],
    overwrite: bool,
) -> Result<Vec<CallFile>> {
    let mut out: Vec<CallFile> = Vec::new();
    for st in setups {
        for (path, at) in clone_files(st) {
            let Some(&(start, len)) = extents.iter().find(|(s, l)| (*s..s + l).contains(&at))
            else {
                bail!(
                    "job `{}`: file `{path}` has no extent in the run's plan",
                    st.spec.name
                );
            };
            if out.iter().any(|f| f.region_start == start) {
                continue;
            }
            let reads = setups
                .iter()
                .any(|o| o.spec.rw.has_read() && clone_files(o).iter().any(|(p, _)| *p == path));
            let file = open_call_file(
                Path::new(&path),
                len,
                reads,
                new_file(st.spec.files.fallocate),
                overwrite,
            )?;
            out.push(CallFile {
                path: PathBuf::from(path),
                region_start: start,
                region_len: len,
                file,
            });
        }
    }
    Ok(out)
}

/// Run `exp`, whose jobs all use ioengine=falloc or ftruncate.
pub fn run_file_calls(
    exp: &Experiment,
    ro: &crate::real::RealOptions,
    signals: &StopOnSignal,
) -> Result<Ran> {
    if !exp.writes.is_empty() {
        bail!(
            "io.max/io.weight/io.cost lines act on the block IO blkqos issues, and jobs of \
             ioengine=falloc or ftruncate issue none (their fallocate and ftruncate calls' own \
             IO is the file system's): leave the controller options out"
        );
    }
    let layout_dev = DeviceSpec::new("null", [("size", LEDGER_SIZE), ("name", "fs")])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Plan {
        tree,
        setups,
        invocation_of,
        extents,
    } = exp.plan(&layout_dev, None)?;
    let files = open_files(&setups, &extents, ro.overwrite)?;
    let dir = files
        .first()
        .and_then(|f| f.path.parent().map(Path::to_path_buf))
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let calls = setups.iter().map(|s| call_of(s.spec.ioengine)).collect();
    let mut backend = FileCallBackend::new(files, calls);
    let (devid, dev_name) = crate::real::target_identity(&dir);
    let mut stack = blkqos_core::ControllerStack::from_writes(
        &exp.controllers,
        &tree,
        blkqos_core::cgroupfs::DeviceInfo {
            dev: devid,
            rotational: false,
            nr_requests: blkqos_driver::Backend::nr_requests(&backend),
        },
        &exp.writes,
    )?;
    let mut opts = exp.run_options(blkqos_engine::host_model(), Some(signals));
    opts.poll_every = Some(blkqos_core::Duration::from_ms(50));
    let disks = blkqos_engine::diskutil::DiskWatch::start(&dir);
    let cpu_at_start = blkqos_engine::usage::ProcessUsage::now();
    let mut result = blkqos_driver::run(&mut backend, &mut stack, setups, &opts)?;
    let kernel_disks = crate::real_report::kernel_disk_util(&disks.finish());
    if let (Some(a), Some(b)) = (cpu_at_start, blkqos_engine::usage::ProcessUsage::now()) {
        crate::real_report::charge_cpu(&mut result.jobs, &b.since(&a));
    }
    crate::outcome::say_interrupted(signals, &result, false);
    Ok(Ran {
        result,
        invocation_of,
        iostat: tree.ids().map(|_| Default::default()).collect(),
        iostat_keys: tree.ids().map(|_| Vec::new()).collect(),
        tree,
        trace: String::new(),
        target: dir.display().to_string(),
        lost_pages: 0,
        dev_name,
        devid,
        kernel_disks: Some(kernel_disks),
    })
}
