//! The memory-mapped engines: `libpmem` (fio 3.33 engines/libpmem.c),
//! `dev-dax` (engines/dev-dax.c) and `page_fault` (engines/page_fault.c
//! of a fio newer than 3.33; fio 3.33 cannot load it). Every IO is a copy
//! between the job's buffer and a memory mapping: no block IO reaches a
//! device, so the simulator, which models block devices, refuses them;
//! the real engine runs them (`crates/experiment/src/real/mapped.rs`).
//!
//! Why not a simulated memory device: what such an IO costs is the
//! host's — a copy whose speed depends on the CPU caches, the NUMA node,
//! whether the pages are there (a fault per first touch) and, for a file
//! mapping, the page cache's writeback under `msync` — and none of the
//! controllers blkqos models sees it (no bio). A per-byte copy cost
//! measured once would report numbers no run on another host, or on this
//! one with other cache contents, would reproduce; so the simulator
//! refuses the jobs and says to run them with `--backend=real`.
//!
//! Also `sync=` (fio's `sync_io`, `str_sync_io`... a plain string option
//! with the values none/0, sync/1, dsync): blkqos honours it only where
//! it means something here, libpmem's drain after every write
//! (`fio_libpmem_queue`: without `sync_io` the copy is `PMEM_F_MEM_NODRAIN`).

use blkqos_workload::spec::{DataOption, IoEngine, JobSpec, SizeSpec};
use blkqos_workload::Ddir;

use super::error::{Loc, ParseError};
use super::options::{Kind, Opt, OptDef};
use super::state::{Given, JobState};

/// `sync` and `invalidate`: what the mapped engines honour of them.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("sync", Kind::Str, Opt::Sync, apply_sync_def),
    OptDef::new(
        "invalidate",
        Kind::Bool,
        Opt::Invalidate,
        apply_invalidate_def,
    ),
];

/// Applies `sync=` (fio 3.33 options.c "sync": none, 0, sync, 1, dsync).
/// `sync=` as its [`OptDef::apply`].
fn apply_sync_def(st: &mut JobState, _: &OptDef, value: Option<&str>) -> Result<(), String> {
    apply_sync(st, value)
}

/// `invalidate=` as its [`OptDef::apply`].
fn apply_invalidate_def(_: &mut JobState, _: &OptDef, value: Option<&str>) -> Result<(), String> {
    apply_invalidate(value)
}

pub(crate) fn apply_sync(st: &mut JobState, value: Option<&str>) -> Result<(), String> {
    let v = value.ok_or("Option sync requires an argument")?;
    st.spec.engine.sync_io = match v {
        "none" | "0" => false,
        "sync" | "1" | "dsync" => true,
        _ => {
            return Err(format!(
                "invalid value `{v}` (valid values: none, 0, sync, 1, dsync)"
            ))
        }
    };
    Ok(())
}

/// Checks `invalidate=` (a boolean). fio drops a file's cache before a
/// job (`file_invalidate_cache`) except for the engines without a file
/// descriptor to drop it through: for libpmem (whose file fio 3.33 never
/// opens for IO: no `posix_fadvise` is made), page_fault (no file) and
/// dev-dax (a character device) it does nothing; blkqos takes the option
/// only with them, where it changes nothing either.
pub(crate) fn apply_invalidate(value: Option<&str>) -> Result<(), String> {
    match value {
        None => Ok(()),
        Some(v) => super::units::parse_plain_int(v).map(|_| ()),
    }
}

/// Remembers where `sync=` or `invalidate=` was given (for its refusal).
pub(crate) fn record(st: &mut JobState, opt: Opt, written: (&str, Option<&str>), loc: &Loc) {
    let at = Some(DataOption {
        file: loc.file.clone(),
        line: loc.line,
        option: written.0.to_string(),
        value: written.1.map(str::to_string),
    });
    match opt {
        Opt::Sync => st.spec.engine.sync_at = at,
        _ => st.spec.engine.invalidate_at = at,
    }
}

fn error_at(at: &DataOption, message: String) -> ParseError {
    ParseError {
        file: at.file.clone(),
        line: at.line,
        option: Some(at.option.clone()),
        value: at.value.clone(),
        message,
    }
}

/// The page size fio's engines check block sizes against (`page_size`),
/// as the parser's `$pagesize`.
fn page_bytes() -> u64 {
    super::subst::Keywords::system().pagesize
}

/// What the simulator says about a mapped engine's job.
fn sim_refusal_text(e: IoEngine) -> &'static str {
    match e {
        IoEngine::PageFault => {
            "ioengine=page_fault copies to and from anonymous memory, faulting its pages in: no \
             file and no block IO, which is all a simulated device models; run it with \
             --backend=real (the host's own page faults)"
        }
        IoEngine::DevDax => {
            "ioengine=dev-dax copies to and from a mapping of a device-DAX character device \
             (/dev/daxX.Y; loads and stores, no block layer): a simulated block device has no \
             such path; run it with --backend=real on such a device, or use ioengine=libpmem on \
             a file with --backend=real"
        }
        _ => {
            "ioengine=libpmem copies to and from a shared mapping of the job's file (loads and \
             stores, no block layer): a simulated block device has no such path; run it with \
             --backend=real (on a DAX file system, or any other: blkqos then makes the writes \
             durable with msync)"
        }
    }
}

/// fio's engine init checks (`fio_libpmem_init`, `fio_devdax_init`,
/// `fio_page_fault_init`), at the place `ioengine` was given.
fn init_checks(s: &JobSpec, g: Option<&Given>) -> Result<(), ParseError> {
    let err = |m: String| {
        let m = format!("job `{}`: {m}", s.name);
        Err(match g {
            Some(g) => g.loc.option_error(&g.written, g.value.as_deref(), m),
            None => Loc::command_line().error(m),
        })
    };
    let page = page_bytes();
    let min_bs = [Ddir::Read, Ddir::Write]
        .map(|d| s.min_bs(d))
        .into_iter()
        .min()
        .unwrap_or(page);
    let syncs = s.fsync_blocks != 0 || s.fdatasync_blocks != 0;
    if s.ioengine != IoEngine::PageFault && min_bs % page != 0 && syncs {
        return err(format!(
            "{}: mmap options dictate a minimum block size of {page} bytes (fio engine init)",
            s.ioengine.fio_name()
        ));
    }
    if s.ioengine == IoEngine::PageFault {
        if s.files.nrfiles > 1 || s.filename.as_deref().is_some_and(|f| f.contains(':')) {
            return err("fio: page_fault ioengine does not support multiple files".into());
        }
        if s.offset != SizeSpec::Bytes(0) {
            return err("fio: page_fault engine does not support start_offset".into());
        }
        if !matches!(s.size, Some(SizeSpec::Bytes(b)) if b > 0) {
            return err(
                "ioengine=page_fault maps size= bytes of anonymous memory (fio_page_fault_init \
                 fails on an empty mapping): give the job a size in bytes"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Checks a job's `sync=` and, for a mapped engine's job, fio's init
/// checks; records the simulator's refusal and what the real engine
/// cannot do (verification: its mapped IO path checks no data).
pub(crate) fn check(s: &mut JobSpec, given: &[Given]) -> Result<(), ParseError> {
    if let Some(at) = s.engine.sync_at.clone().filter(|_| s.engine.sync_io) {
        match s.ioengine {
            IoEngine::Libpmem => {}
            IoEngine::DevDax | IoEngine::PageFault => s.notes.push(format!(
                "sync={}: fio's {} engine does not look at it (no drain to wait for), nor \
                 does blkqos",
                at.value.as_deref().unwrap_or(""),
                s.ioengine.fio_name()
            )),
            e => {
                return Err(error_at(
                    &at,
                    format!(
                        "job `{}`: unsupported with ioengine={}: sync= opens the file O_SYNC or \
                         O_DSYNC, which blkqos does not implement (it honours sync= only with \
                         ioengine=libpmem, a drain after every write); use fsync=1 or \
                         fdatasync=1 for a sync after every write",
                        s.name,
                        e.fio_name()
                    ),
                ))
            }
        }
    }
    if !s.ioengine.is_mapped() {
        if let Some(at) = &s.engine.invalidate_at {
            return Err(error_at(
                at,
                format!(
                    "job `{}`: unsupported option `invalidate` with ioengine={} (a fio 3.33 \
                     option blkqos implements only for ioengine=libpmem, dev-dax and \
                     page_fault, for which fio drops no cache): leave it out",
                    s.name,
                    s.ioengine.fio_name()
                ),
            ));
        }
        return Ok(());
    }
    let g = given.iter().find(|g| g.name == "ioengine");
    init_checks(s, g)?;
    let place = |why: &str| match g {
        Some(g) => g
            .loc
            .option_error(&g.written, g.value.as_deref(), why)
            .to_string(),
        None => why.to_string(),
    };
    s.engine.sim_refusal = Some(place(sim_refusal_text(s.ioengine)));
    if s.ioengine == IoEngine::DevDax && s.direct && s.engine.real_refusal.is_none() {
        s.engine.real_refusal = Some(place(
            "ioengine=dev-dax with direct=1: a device-DAX device refuses O_DIRECT, so fio's \
             open of it fails (examples/dev-dax.fio: the access is direct by nature); set \
             direct=0",
        ));
    }
    if s.verify.enabled() && s.engine.real_refusal.is_none() {
        s.engine.real_refusal = Some(place(&format!(
            "ioengine={} with verify: the real engine's mapped IO path writes and reads the \
             mapping but checks no data; leave verify out, or verify with ioengine=psync on \
             the same file",
            s.ioengine.fio_name()
        )));
    }
    Ok(())
}

/// `sync` and `invalidate` of a job back as fio options (`to_fio_args`).
pub(crate) fn render(j: &blkqos_workload::JobSpec, push: &mut impl FnMut(&str, String)) {
    let e = &j.engine;
    if e.sync_io {
        push("sync", "1".into());
    }
    if let Some(at) = &e.invalidate_at {
        push("invalidate", at.value.clone().unwrap_or_else(|| "1".into()));
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::{parse_job_file, JobSet, ParseError};

    fn file(text: &str) -> Result<JobSet, ParseError> {
        parse_job_file("t.fio", text, &|_| None)
    }

    fn one(text: &str) -> blkqos_workload::JobSpec {
        file(text).unwrap().jobs.remove(0)
    }

    #[test]
    fn mapped_engines_parse_and_the_simulator_refuses_them() {
        for e in ["libpmem", "dev-dax", "page_fault"] {
            let j = one(&format!("[a]\nioengine={e}\nsize=1m\n"));
            assert_eq!(j.ioengine.fio_name(), e);
            assert!(j.ioengine.is_mapped() && j.ioengine.is_sync());
            let why = j.engine.sim_refusal.expect("refused on the simulator");
            assert!(why.contains("--backend=real") && why.contains(e), "{why}");
            assert!(j.engine.real_refusal.is_none());
        }
    }

    #[test]
    fn sync_values_and_where_they_count() {
        let j = one("[a]\nioengine=libpmem\nsync=1\nsize=1m\n");
        assert!(j.engine.sync_io);
        let j = one("[a]\nioengine=libpmem\nsync=dsync\nsize=1m\n");
        assert!(j.engine.sync_io);
        let j = one("[a]\nioengine=libpmem\nsync=none\nsize=1m\n");
        assert!(!j.engine.sync_io);
        let e = file("[a]\nioengine=libpmem\nsync=2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("valid values: none, 0, sync, 1, dsync"), "{e}");
        // another engine: refused where it was given
        let e = file("[a]\nioengine=psync\nsize=1m\nsync=1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":4: option `sync`: value `1`"), "{e}");
        assert!(e.contains("fsync=1"), "{e}");
        // page_fault: fio's engine does not look at it; a note says so
        let j = one("[a]\nioengine=page_fault\nsync=1\nsize=1m\n");
        assert!(
            j.notes.iter().any(|n| n.contains("sync=1")),
            "{:?}",
            j.notes
        );
    }

    #[test]
    fn invalidate_only_with_the_mapped_engines() {
        let j = one("[a]\nioengine=libpmem\ninvalidate=1\nsize=1m\n");
        assert!(j.engine.invalidate_at.is_some());
        let e = file("[a]\nsize=1m\ninvalidate=1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(":3: option `invalidate`: value `1`") && e.contains("libpmem"),
            "{e}"
        );
        assert!(file("[a]\nioengine=page_fault\ninvalidate=x\n").is_err());
    }

    #[test]
    fn fio_engine_init_refusals() {
        let e = file("[a]\nioengine=page_fault\nsize=1m\nnrfiles=2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not support multiple files"), "{e}");
        let e = file("[a]\nioengine=page_fault\nsize=1m\noffset=4k\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not support start_offset"), "{e}");
        let e = file("[a]\nioengine=page_fault\n").unwrap_err().to_string();
        assert!(e.contains("give the job a size"), "{e}");
        let e = file("[a]\nioengine=libpmem\nsize=1m\nbs=512\nfsync=4\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("minimum block size"), "{e}");
        let j = one("[a]\nioengine=dev-dax\nsize=2m\ndirect=1\n");
        assert!(j.engine.real_refusal.unwrap().contains("direct=0"));
        let j = one("[a]\nioengine=libpmem\nsize=1m\nrw=write\nverify=crc32c\n");
        assert!(j.engine.real_refusal.unwrap().contains("verify"));
    }

    #[test]
    fn the_page_fault_example_parses() {
        // its expressions: $mb_memory, $pagesize, $ncpus
        let text = "[global]\nstonewall\nioengine=page_fault\n\
                    size=5*1024*1024*$mb_memory/8\nbs=$pagesize\n\
                    [s]\nsize=8*1024*$pagesize\nrw=randrw\nnumjobs=$ncpus\n\
                    [m]\nbsrange=16k-1M\nblockalign=2M\nrw=write\nloops=3\n";
        let set = file(text).unwrap();
        assert_eq!(set.jobs.len(), 2);
        let s = &set.jobs[0];
        assert_eq!(
            s.size,
            Some(blkqos_workload::SizeSpec::Bytes(8 * 1024 * 4096))
        );
        assert!(s.numjobs >= 1);
        let m = &set.jobs[1];
        assert_eq!(m.loops, 3);
        assert_eq!(m.bsrange.unwrap().write, (16 << 10, 1 << 20));
    }
}
