//! A run over several files (fio `setup_files`): every file the jobs name
//! is opened (created and laid out as one target is, under the same
//! safety rules), each at its extent of the run's address space, and one
//! backend drives them all: one io_uring ring with every file's fd
//! (registered as fixed files when the kernel allows it), or one thread
//! pool. [`crate::route::Router`] turns each IO's offset into (file,
//! offset in it).

use crate::route::{Extent, Router};
use crate::target::{self, TargetInfo};
use crate::{
    sys, BackendKind, EngineError, EngineOptions, RealBackend, ThreadsBackend, UringBackend,
};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// One file of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its extent's start in the run's address space.
    pub start: u64,
    /// Its size (the extent's length): a regular file is created or
    /// extended to it, a block device must be at least this big.
    pub len: u64,
    /// Some job reads it: a new file is laid out by writing (fio "Laying
    /// out IO file").
    pub reads: bool,
    /// Some job writes or trims it: it is opened read-write (else
    /// read-only; a write then fails with EBADF), and the safety rules
    /// apply.
    pub writes: bool,
    /// Jobs use it buffered (`[0]`) and/or with `O_DIRECT` (`[1]`): it is
    /// opened once per mode.
    pub modes: [bool; 2],
    /// How a regular file shorter than `len` (or missing) is laid out.
    pub layout: Layout,
}

/// How a regular file that is missing or shorter than its extent is laid
/// out before the run (fio filesetup.c `extend_file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Written to its size (a job reads it: fio's `new_layout`).
    Write,
    /// Created if missing and given `fallocate(2)` over `[0, len)` in this
    /// mode (fio `fallocate=posix|native`: 0, the size becomes `len`;
    /// `keep`: `KEEP_SIZE`, the size stays); the jobs' writes do the rest.
    Allocate(i32),
    /// Created if missing and sized sparse to `len` (`fallocate=truncate`).
    Truncate,
    /// Created if missing and left as it is (`fallocate=none`, or
    /// `create_on_open=1`): the jobs' writes extend it.
    Leave,
}

/// The files as the backend opened them, by fd index.
#[derive(Clone, Debug, Default)]
pub struct OpenedFiles {
    /// Each open fd's file (a file open in two modes appears twice).
    pub infos: Vec<TargetInfo>,
}

/// Open every file of `files` (their extents must not overlap) and start
/// one backend over them; job `j` uses its files with `O_DIRECT` when
/// `direct[j]`. `opts` gives the backend (kind, depth, largest IO, verify,
/// ring flags, consents); its `direct`, `reads`, `writes` and
/// `size_needed` are taken per file from `files`. The write-back buffer
/// is not available here.
pub fn open_backend_files(
    files: &[RunFile],
    opts: EngineOptions,
    direct: Vec<bool>,
) -> Result<(RealBackend, OpenedFiles), EngineError> {
    if opts.write_buffer {
        return Err(EngineError::InvalidOption(
            "the write-back buffer runs on one target, not on several files".into(),
        ));
    }
    crate::validate(&opts)?;
    let mut open: Vec<File> = Vec::new();
    let mut infos: Vec<TargetInfo> = Vec::new();
    let mut extents = Vec::new();
    let mut trim_enotty = Vec::new();
    for f in files {
        let mut fds = [None, None];
        for mode in 0..2 {
            if !f.modes[mode] {
                continue;
            }
            let regular = std::fs::metadata(&f.path).map_or(true, |m| m.is_file());
            let written = f.layout == Layout::Write;
            let o = EngineOptions {
                direct: mode == 1,
                reads: written,
                writes: f.writes,
                // a regular file is extended here only by writing it
                size_needed: if written || !regular { f.len } else { 0 },
                ..opts.clone()
            };
            let t = target::open_target(&f.path, &o)?;
            if t.info.kind == crate::TargetKind::File && fds == [None, None] {
                extend(&f.path, &t.file, f.layout, f.len)?;
            }
            trim_enotty.push(opts.fio_trims && t.info.kind != crate::TargetKind::BlockDevice);
            fds[mode] = Some(u32::try_from(open.len()).unwrap_or(u32::MAX));
            open.push(t.file);
            infos.push(t.info);
        }
        extents.push(Extent {
            start: f.start,
            len: f.len,
            fds,
        });
    }
    let router = Router::new(extents, direct).map_err(EngineError::InvalidOption)?;
    let info = space_info(files, &infos);
    let backend = start(info, (open, trim_enotty), router, &opts)?;
    Ok((backend, OpenedFiles { infos }))
}

/// fio `extend_file` for a file no job reads, shorter than `len`: the
/// allocation of `fallocate=` (a failure is reported and the run goes
/// on, as fio's `log_err`; a file system without `fallocate(2)` says
/// nothing, as fio's `native` mode), or the size of `truncate`.
fn extend(
    path: &std::path::Path,
    file: &File,
    layout: Layout,
    len: u64,
) -> Result<(), EngineError> {
    let size = file
        .metadata()
        .map_err(|error| EngineError::Io {
            path: path.to_path_buf(),
            op: "stat",
            error,
        })?
        .len();
    if size >= len {
        return Ok(());
    }
    match layout {
        Layout::Write | Layout::Leave => {}
        Layout::Allocate(mode) => {
            if let Err(e) = sys::fallocate(file.as_fd(), mode, 0, len) {
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
                ) {
                    eprintln!("blkqos: `{}`: fallocate failed: {e}", path.display());
                }
            }
        }
        Layout::Truncate => file.set_len(len).map_err(|error| EngineError::Io {
            path: path.to_path_buf(),
            op: "extend",
            error,
        })?,
    }
    Ok(())
}

/// The run's address space as one target: the first file's identity, the
/// end of the last extent as capacity, the strictest alignment, and
/// direct/writable when any file is.
fn space_info(files: &[RunFile], infos: &[TargetInfo]) -> TargetInfo {
    let mut info = infos.first().cloned().unwrap_or(TargetInfo {
        path: PathBuf::new(),
        kind: crate::TargetKind::File,
        capacity: 0,
        direct: false,
        writable: false,
        logical_block_size: 512,
        dio_mem_align: 0,
        dio_offset_align: 0,
        created: false,
        laid_out_bytes: 0,
        max_io_bytes: u64::MAX,
    });
    info.capacity = files.iter().map(|f| f.start + f.len).max().unwrap_or(0);
    for i in infos {
        info.direct |= i.direct;
        info.writable |= i.writable;
        info.dio_mem_align = info.dio_mem_align.max(i.dio_mem_align);
        info.logical_block_size = info.logical_block_size.max(i.logical_block_size);
        info.max_io_bytes = info.max_io_bytes.min(i.max_io_bytes);
        info.created |= i.created;
        info.laid_out_bytes += i.laid_out_bytes;
    }
    info
}

fn start(
    info: TargetInfo,
    (open, trim_enotty): (Vec<File>, Vec<bool>),
    router: Router,
    opts: &EngineOptions,
) -> Result<RealBackend, EngineError> {
    let threads = |info, open| {
        RealBackend::Threads(ThreadsBackend::with_files(
            info,
            open,
            Some(router.clone()),
            trim_enotty.clone(),
            opts,
        ))
    };
    match opts.kind {
        BackendKind::Threads => Ok(threads(info, open)),
        BackendKind::IoUring => Ok(RealBackend::Uring(UringBackend::with_files(
            info,
            open,
            Some(router.clone()),
            trim_enotty.clone(),
            opts,
        )?)),
        BackendKind::Auto => {
            // the ring takes the fds; keep duplicates for the fallback
            let spare = open
                .iter()
                .map(File::try_clone)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| EngineError::Io {
                    path: info.path.clone(),
                    op: "dup",
                    error,
                })?;
            let uring = UringBackend::with_files(
                info.clone(),
                open,
                Some(router.clone()),
                trim_enotty.clone(),
                opts,
            );
            match uring {
                Ok(b) => Ok(RealBackend::Uring(b)),
                Err(e @ EngineError::RingSetup { .. }) => Err(e),
                Err(e) => {
                    eprintln!("blkqos: {e}; using the thread-pool backend");
                    Ok(threads(info, spare))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::{GroupId, Instant, Io, IoFlags, IoId, IoOp, Submitter};
    use blkqos_driver::Backend;
    use std::os::unix::fs::FileExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("blkqos-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn io(id: u64, op: IoOp, offset: u64, len: u64, job: u32) -> Io {
        Io {
            ioprio: 0,
            id: IoId(id),
            submitter: Submitter(job),
            group: GroupId::ROOT,
            op,
            flags: IoFlags::default(),
            offset,
            len,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        }
    }

    fn file(dir: &std::path::Path, name: &str, start: u64, len: u64) -> RunFile {
        RunFile {
            path: dir.join(name),
            start,
            len,
            reads: false,
            writes: true,
            modes: [true, false],
            layout: Layout::Truncate,
        }
    }

    fn run_all(b: &mut RealBackend, ios: &[Io]) -> Vec<blkqos_driver::Completion> {
        for i in ios {
            b.submit(i, Instant::ZERO);
        }
        let mut out = Vec::new();
        while out.len() < ios.len() {
            b.wait(None, &mut out);
        }
        out
    }

    /// Each file gets exactly the IOs whose offsets fall in its extent,
    /// at the offset in it; an IO crossing a file's end fails with EINVAL
    /// and writes nothing.
    fn each_file_gets_its_ios(kind: BackendKind) {
        let dir = scratch(&kind.to_string());
        let files = [
            file(&dir, "a", 0, 64 << 10),
            file(&dir, "b", 1 << 20, 16 << 10),
            file(&dir, "c", 2 << 20, 32 << 10),
        ];
        let opts = EngineOptions {
            kind,
            writes: true,
            reads: false,
            depth: 8,
            max_io: 64 << 10,
            write_fill: Some(vec![0xAB]),
            ..EngineOptions::default()
        };
        let (mut b, opened) = open_backend_files(&files, opts, vec![false]).unwrap();
        assert_eq!(opened.infos.len(), 3);
        assert_eq!(b.target().capacity, (2 << 20) + (32 << 10));
        let ios = [
            io(1, IoOp::Write, 4096, 4096, 0),
            io(2, IoOp::Write, (1 << 20) + 8192, 8192, 0),
            io(3, IoOp::Write, (2 << 20) + (28 << 10), 4096, 0),
            // crosses b's end
            io(4, IoOp::Write, (1 << 20) + (12 << 10), 8192, 0),
            // between files
            io(5, IoOp::Write, 512 << 10, 4096, 0),
        ];
        let done = run_all(&mut b, &ios);
        let by_id = |i: u64| done.iter().find(|c| c.id == IoId(i)).unwrap();
        for i in 1..=3 {
            assert_eq!(by_id(i).error, 0, "io {i}");
        }
        assert_eq!(by_id(4).error, libc::EINVAL);
        assert_eq!(by_id(5).error, libc::EINVAL);
        drop(b);
        let bytes = |n: &str| std::fs::read(dir.join(n)).unwrap();
        let marked = |v: &[u8]| v.iter().filter(|&&x| x == 0xAB).count();
        let (a, bb, c) = (bytes("a"), bytes("b"), bytes("c"));
        assert_eq!((a.len(), bb.len(), c.len()), (64 << 10, 16 << 10, 32 << 10));
        assert_eq!(marked(&a), 4096);
        assert!(a[4096..8192].iter().all(|&x| x == 0xAB));
        assert_eq!(marked(&bb), 8192);
        assert!(bb[8192..16384].iter().all(|&x| x == 0xAB));
        assert_eq!(marked(&c), 4096);
        assert!(c[28 << 10..].iter().all(|&x| x == 0xAB));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn io_uring_routes_each_io_to_its_file() {
        each_file_gets_its_ios(BackendKind::Auto);
    }

    #[test]
    fn the_thread_pool_routes_each_io_to_its_file() {
        each_file_gets_its_ios(BackendKind::Threads);
    }

    #[test]
    fn a_read_only_file_serves_reads_and_refuses_writes() {
        let dir = scratch("reads");
        for (name, byte) in [("x", 1u8), ("y", 2u8)] {
            let f = File::create(dir.join(name)).unwrap();
            f.write_all_at(&[byte; 8192], 0).unwrap();
        }
        let mk = |name: &str, start| RunFile {
            reads: true,
            writes: false,
            layout: Layout::Write,
            ..file(&dir, name, start, 8192)
        };
        let opts = EngineOptions {
            kind: BackendKind::Threads,
            depth: 2,
            max_io: 8192,
            verify: false,
            ..EngineOptions::default()
        };
        let (mut b, _) =
            open_backend_files(&[mk("x", 0), mk("y", 8192)], opts, vec![false]).unwrap();
        let done = run_all(
            &mut b,
            &[
                io(1, IoOp::Read, 0, 4096, 0),
                io(2, IoOp::Read, 8192 + 4096, 4096, 0),
                // read-only: a write fails as on a read-only target
                io(3, IoOp::Write, 0, 4096, 0),
            ],
        );
        let err = |i: u64| done.iter().find(|c| c.id == IoId(i)).unwrap().error;
        assert_eq!((err(1), err(2)), (0, 0));
        assert_eq!(err(3), libc::EBADF);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fio_trims_fail_on_a_file_with_enotty_and_others_punch_a_hole() {
        let dir = scratch("trim");
        let opts = |fio_trims| EngineOptions {
            kind: BackendKind::Threads,
            writes: true,
            reads: false,
            depth: 2,
            fio_trims,
            ..EngineOptions::default()
        };
        let files = [file(&dir, "t", 0, 1 << 20)];
        let (mut b, _) = open_backend_files(&files, opts(true), vec![false]).unwrap();
        let done = run_all(&mut b, &[io(1, IoOp::Discard, 4096, 4096, 0)]);
        assert_eq!(done[0].error, libc::ENOTTY);
        drop(b);
        let (mut b, _) = open_backend_files(&files, opts(false), vec![false]).unwrap();
        let done = run_all(&mut b, &[io(1, IoOp::Discard, 4096, 4096, 0)]);
        assert_eq!(done[0].error, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_new_write_only_file_is_allocated_in_the_asked_mode() {
        let dir = scratch("alloc");
        let mut f = file(&dir, "p", 0, 1 << 20);
        f.layout = Layout::Allocate(0);
        let s = file(&dir, "s", 1 << 20, 1 << 20);
        let mut e = file(&dir, "e", 2 << 20, 1 << 20);
        e.layout = Layout::Leave;
        let opts = EngineOptions {
            kind: BackendKind::Threads,
            writes: true,
            reads: false,
            depth: 1,
            ..EngineOptions::default()
        };
        let (b, _) = open_backend_files(&[f, s, e], opts, vec![false]).unwrap();
        drop(b);
        let blocks = |n: &str| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(dir.join(n)).unwrap().blocks() * 512
        };
        assert!(blocks("p") >= 1 << 20, "allocated: {}", blocks("p"));
        assert_eq!(blocks("s"), 0, "sparse");
        assert_eq!(std::fs::metadata(dir.join("s")).unwrap().len(), 1 << 20);
        assert_eq!(
            std::fs::metadata(dir.join("e")).unwrap().len(),
            0,
            "left empty"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
