//! The file-call engines on the real engine: `falloc` (`fallocate(2)`
//! per IO), `ftruncate` (`ftruncate(2)` per write) and `e4defrag`
//! (`EXT4_IOC_MOVE_EXT` per write), fio 3.33 engines/falloc.c,
//! ftruncate.c and e4defrag.c. The driver runs the jobs as
//! for any engine (their offsets, sizes, directions, `time_based`,
//! latencies, the report); [`blkqos_engine::fileops::FileCallBackend`]
//! makes each IO the engine's call on the job's file.
//!
//! The plan lays the jobs' files out on a ledger device, one region per
//! file; each file is opened (created and laid out, under the real
//! engine's safety rules) in the job's directory, and a file a job names
//! twice is the same file, as in fio. The run itself is
//! [`crate::real::run_file_calls`].

use anyhow::{bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_engine::fileops::{open_call_file, CallFile, Donor, FileCall, FileCallBackend, NewFile};
use blkqos_workload::spec::Fallocate;
use blkqos_workload::IoEngine;
use std::path::{Path, PathBuf};

/// The ledger device the files are laid out on (no IO reaches it).
pub const LEDGER_SIZE: &str = "1048576t";

/// The call of clone `st`; e4defrag's donor opened into `donors` (fio
/// `fio_e4defrag_init`: `DIRECTORY/donorname`, allocated from the job's
/// offset to its largest file size unless `inplace`).
fn call_of(st: &JobSetup, donors: &mut Vec<Donor>) -> Result<FileCall> {
    let s = &st.spec;
    Ok(match s.ioengine {
        IoEngine::Ftruncate => FileCall::Ftruncate,
        IoEngine::E4defrag => {
            let name = s.engine.donor_name.as_deref().unwrap_or("");
            let path = match s.files.directory.first() {
                Some(d) => Path::new(d).join(name),
                None => PathBuf::from(name),
            };
            let start = match s.offset {
                blkqos_workload::SizeSpec::Bytes(b) => b,
                blkqos_workload::SizeSpec::Percent(_) => 0,
            };
            let end = s.files.filesize.map_or(0, |(_, hi)| hi);
            let donor = Donor::open(&path, s.engine.inplace, start, end).map_err(|e| {
                anyhow::anyhow!("job `{}`: donor file {}: {e}", s.name, path.display())
            })?;
            donors.push(donor);
            FileCall::E4defrag {
                donor: u32::try_from(donors.len() - 1)?,
                inplace: s.engine.inplace,
            }
        }
        _ => FileCall::Falloc,
    })
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
pub(crate) fn clone_files(st: &JobSetup) -> Vec<(String, u64)> {
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
    // a block IO job's file is its engine's to open (crate::real::mixed)
    for st in setups.iter().filter(|s| s.spec.ioengine.is_file_call()) {
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
            // fio lays a file out at the start of the first job that
            // uses it (filesetup.c `setup_files`: a later job finds it
            // big enough): with data when that job reads
            let reads = setups
                .iter()
                .find(|o| clone_files(o).iter().any(|(p, _)| *p == path))
                .is_some_and(|o| o.spec.rw.has_read());
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

/// The backend for the planned clones `setups` (`extents`: the plan's
/// files), and the directory of the first file (whose disk fio watches).
pub fn backend(
    setups: &[JobSetup],
    extents: &[(u64, u64)],
    overwrite: bool,
) -> Result<(FileCallBackend, PathBuf)> {
    let files = open_files(setups, extents, overwrite)?;
    let dir = files
        .first()
        .and_then(|f| f.path.parent().map(Path::to_path_buf))
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let mut donors = Vec::new();
    let calls = setups
        .iter()
        .map(|s| call_of(s, &mut donors))
        .collect::<Result<_>>()?;
    Ok((FileCallBackend::new(files, calls, donors), dir))
}
