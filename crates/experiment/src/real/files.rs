//! The real engine on several files (fio `setup_files`): when the jobs
//! name more than one file or device (`nrfiles`, `filename=a:b`,
//! `directory`, jobs on files of their own), the plan lays every one out
//! at an extent of its own on a ledger device, as the simulator lays files
//! out on its device; each file is then opened (created, extended or laid
//! out under the real engine's safety rules) and one backend drives them
//! all, turning each IO's offset into (the file, the offset in it)
//! ([`blkqos_engine::files`]).
//!
//! Every file stays open for the whole run (fio's `openfiles` closes and
//! reopens files beyond the limit; opening is not timed here).

use crate::experiment::{Experiment, Plan};
use anyhow::{bail, Result};
use blkqos_driver::run::JobSetup;
use blkqos_engine::files::{open_backend_files, Layout, RunFile};
use blkqos_engine::{EngineOptions, RealBackend};
use blkqos_sim::DeviceSpec;
use blkqos_workload::spec::Fallocate;
use blkqos_workload::RwMode;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

/// The ledger the files are laid out on (no IO reaches it).
const LEDGER_SIZE: &str = "1048576t";

/// A real run over several files: the backend, the plan and the files.
pub struct Several {
    pub backend: RealBackend,
    pub plan: Plan,
    /// Every file, in the order of their extents.
    pub paths: Vec<PathBuf>,
    /// Several files: each one's path, start and length in the run's
    /// address space (empty for one target).
    pub files: Vec<(String, u64, u64)>,
}

/// Lay out and open every file of `exp`'s jobs; `opts` as for one target
/// (its `direct`, `reads`, `writes`, `size_needed` are taken per file).
pub fn open_several(exp: &Experiment, mut opts: EngineOptions) -> Result<Several> {
    if opts.write_buffer {
        bail!(
            "the real engine's write-back buffer (--pagecache=on) runs on one target, and \
             these jobs name several files: run without --pagecache=on, or give the jobs one \
             filename"
        );
    }
    let ledger = DeviceSpec::new("null", [("size", LEDGER_SIZE), ("name", "files")])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let plan = exp.plan_files(&ledger, existing_sizes(exp))?;
    let verifies: Vec<bool> = opts.fio_verify.iter().map(Option::is_some).collect();
    let (files, said) = run_files(&plan, &verifies);
    // fio's verify messages name the clone's file
    for (v, st) in opts.fio_verify.iter_mut().zip(&plan.setups) {
        if let (Some(v), Some(f)) = (v.as_mut(), first_file(st, &plan, &files)) {
            v.file_name = f.path.display().to_string();
        }
    }
    let direct = plan.setups.iter().map(|s| s.spec.direct).collect();
    say_layout(exp, &plan, &said);
    let (backend, _) = open_backend_files(&files, opts, direct)?;
    Ok(Several {
        backend,
        plan,
        files: files
            .iter()
            .map(|f| (f.path.display().to_string(), f.start, f.len))
            .collect(),
        paths: files.into_iter().map(|f| f.path).collect(),
    })
}

/// The extents (start, length) clone `st` does IO in.
fn clone_extents(st: &JobSetup) -> Vec<(u64, u64)> {
    if st.files.is_empty() {
        vec![(st.region_start, st.region_len)]
    } else {
        st.files.clone()
    }
}

/// The file whose extent holds `at`.
fn file_at(files: &[RunFile], at: u64) -> Option<&RunFile> {
    files
        .iter()
        .find(|f| (f.start..f.start + f.len.max(1)).contains(&at))
}

fn first_file<'a>(st: &JobSetup, _plan: &Plan, files: &'a [RunFile]) -> Option<&'a RunFile> {
    clone_extents(st)
        .first()
        .and_then(|&(s, _)| file_at(files, s))
}

/// How clone `spec` lays out a regular file shorter than its extent
/// (fio filesetup.c `setup_files` and `extend_file`): not at all with
/// `create_on_open=1` (the file is made when the job opens it); written
/// when the job reads it (or verifies); else as `fallocate=` says: posix
/// and native allocate it, keep allocates with `KEEP_SIZE`, truncate
/// sizes it, none leaves it (the job's writes extend it).
fn layout_of(spec: &blkqos_workload::JobSpec, reads: bool) -> Layout {
    if spec.files.create_on_open {
        return Layout::Leave;
    }
    if reads {
        return Layout::Write;
    }
    match spec.files.fallocate {
        Fallocate::Posix | Fallocate::Native => Layout::Allocate(0),
        Fallocate::Keep => Layout::Allocate(blkqos_engine::fileops::KEEP_SIZE),
        Fallocate::Truncate => Layout::Truncate,
        Fallocate::None => Layout::Leave,
    }
}

/// A layout leaves the file its full size.
fn fills(l: Layout) -> bool {
    matches!(l, Layout::Write | Layout::Allocate(0) | Layout::Truncate)
}

/// One clone's fio line: it found `files` files short, `bytes` in all.
struct Announce {
    setup: usize,
    files: u64,
    bytes: u64,
}

/// Each file of the plan with what the clones on it do (read or verify,
/// write or trim, buffered or direct) and its layout, and the clones that
/// lay files out. fio sets the jobs up in order: each finds a file short
/// (missing, or smaller than its extent) until one lays it out to its
/// size; a job with `create_on_open=1` lays out nothing.
fn run_files(plan: &Plan, verifies: &[bool]) -> (Vec<RunFile>, Vec<Announce>) {
    let mut files: Vec<RunFile> = plan
        .names
        .iter()
        .zip(&plan.extents)
        .map(|(name, &(start, len))| RunFile {
            path: PathBuf::from(name),
            start,
            len,
            reads: false,
            writes: false,
            modes: [false, false],
            layout: Layout::Leave,
        })
        .collect();
    let mut short: Vec<bool> = files.iter().map(needs_extending).collect();
    let mut said = Vec::new();
    for (j, st) in plan.setups.iter().enumerate() {
        let s = &st.spec;
        let reads = s.rw.has_read() || verifies.get(j).copied().unwrap_or(false);
        let (mut n, mut bytes) = (0, 0);
        for (at, _) in clone_extents(st) {
            let Some(i) = files
                .iter()
                .position(|f| (f.start..f.start + f.len.max(1)).contains(&at))
            else {
                continue;
            };
            let f = &mut files[i];
            f.reads |= reads;
            f.writes |= s.rw.has_write() || s.rw.has_trim() || matches!(s.rw, RwMode::Trim);
            f.modes[usize::from(s.direct)] = true;
            if short[i] {
                let l = layout_of(s, reads);
                if !s.files.create_on_open {
                    n += 1;
                    bytes += f.len;
                }
                if f.layout == Layout::Leave || fills(l) {
                    f.layout = l;
                }
                short[i] = !fills(l);
            }
        }
        if n > 0 {
            said.push(Announce {
                setup: j,
                files: n,
                bytes,
            });
        }
    }
    // a file no clone reaches (none should be): opened for reading
    for f in &mut files {
        if !f.modes.iter().any(|&m| m) {
            f.modes[0] = true;
        }
    }
    (files, said)
}

/// The sizes of the files and devices the jobs name that are there
/// already (fio `get_file_size`: a file's length, a block device's size).
fn existing_sizes(exp: &Experiment) -> Vec<(String, u64)> {
    let mut names: Vec<String> = Vec::new();
    for spec in exp.invocations.iter().flat_map(|i| i.jobs.jobs.iter()) {
        for clone in 0..spec.numjobs.max(1) {
            names.extend(
                spec.files
                    .paths(spec.filename.as_deref(), &spec.name, clone),
            );
        }
        names.extend(spec.filename.clone());
    }
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|n| size_of(&n).map(|b| (n, b)))
        .collect()
}

fn size_of(path: &str) -> Option<u64> {
    let m = std::fs::metadata(path).ok()?;
    if m.file_type().is_file() {
        return Some(m.len());
    }
    if m.file_type().is_block_device() {
        use std::io::Seek;
        let mut f = std::fs::File::open(path).ok()?;
        return f.seek(std::io::SeekFrom::End(0)).ok();
    }
    None
}

/// A regular file that must be created or extended to its extent.
fn needs_extending(f: &RunFile) -> bool {
    match std::fs::metadata(&f.path) {
        Ok(m) => m.file_type().is_file() && m.len() < f.len,
        Err(_) => true,
    }
}

/// fio's line for each clone that lays out files (filesetup.c
/// `setup_files`: "NAME: Laying out IO file(s) (N file(s) / [total ]X
/// MiB)", the files it found short, their full sizes), on stdout when
/// that invocation's report goes there in the normal format, as fio's
/// `log_info`.
fn say_layout(exp: &Experiment, plan: &Plan, said: &[Announce]) {
    for a in said {
        let inv = plan
            .invocation_of
            .get(a.setup)
            .and_then(|&i| exp.invocations.get(i));
        let to_stdout = inv.is_some_and(|inv| {
            inv.output.is_none()
                && inv
                    .formats
                    .contains(&blkqos_fio::parse::OutputFormat::Normal)
        });
        if to_stdout {
            let name = &plan.setups[a.setup].spec.name;
            // a closed stdout surfaces again (and is handled) at the report
            let _ = crate::outln!("{}", layout_line(name, a.files, a.bytes));
        }
    }
}

fn layout_line(job: &str, files: u64, bytes: u64) -> String {
    let s = if files > 1 { "s" } else { "" };
    let total = if files > 1 { "total " } else { "" };
    format!(
        "{job}: Laying out IO file{s} ({files} file{s} / {total}{}MiB)",
        bytes >> 20
    )
}

/// How reports name the run's target: its one path, or its files.
pub fn label(paths: &[PathBuf]) -> String {
    match paths {
        [one] => one.display().to_string(),
        _ => {
            let shown: Vec<String> = paths
                .iter()
                .take(3)
                .map(|p| p.display().to_string())
                .collect();
            let more = if paths.len() > 3 { ", ..." } else { "" };
            format!("{} files ({}{more})", paths.len(), shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_layout_line() {
        assert_eq!(
            layout_line("multi", 4, 1 << 20),
            "multi: Laying out IO files (4 files / total 1MiB)"
        );
        assert_eq!(
            layout_line("other", 1, 512 << 10),
            "other: Laying out IO file (1 file / 0MiB)"
        );
    }

    #[test]
    fn layout_follows_create_on_open_reads_and_fallocate() {
        let mut s = blkqos_workload::JobSpec::new("j");
        let with = |s: &blkqos_workload::JobSpec, f| {
            let mut s = s.clone();
            s.files.fallocate = f;
            s
        };
        assert_eq!(layout_of(&with(&s, Fallocate::None), false), Layout::Leave);
        assert_eq!(
            layout_of(&with(&s, Fallocate::Posix), false),
            Layout::Allocate(0)
        );
        assert_eq!(
            layout_of(&with(&s, Fallocate::Native), false),
            Layout::Allocate(0)
        );
        assert_eq!(
            layout_of(&with(&s, Fallocate::Keep), false),
            Layout::Allocate(blkqos_engine::fileops::KEEP_SIZE)
        );
        assert_eq!(
            layout_of(&with(&s, Fallocate::Truncate), false),
            Layout::Truncate
        );
        assert_eq!(layout_of(&with(&s, Fallocate::None), true), Layout::Write);
        s.files.create_on_open = true;
        assert_eq!(layout_of(&s, true), Layout::Leave);
    }

    #[test]
    fn a_run_of_several_files_is_named_by_its_files() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(label(&[p("/t/a")]), "/t/a");
        assert_eq!(label(&[p("a"), p("b")]), "2 files (a, b)");
        assert_eq!(
            label(&[p("a"), p("b"), p("c"), p("d")]),
            "4 files (a, b, c, ...)"
        );
    }
}
