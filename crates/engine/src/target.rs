//! Opening the target like fio does: create and lay out a regular file,
//! size a block device, apply the safety rules before any write.

use crate::buf::AlignedBuf;
use crate::safety::{self, Refusal, PROBE_BYTES};
use crate::{pattern, sys, EngineError, EngineOptions};
use blkqos_core::DevId;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What kind of target a backend runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A regular file (created and laid out by blkqos if needed).
    File,
    /// A block device (size from `BLKGETSIZE64`).
    BlockDevice,
    /// `/dev/null`, `/dev/zero` or `/dev/full`: no storage, for measuring
    /// the engine itself and for error tests (`/dev/full` writes fail with ENOSPC).
    MemoryDevice,
}

/// What was opened, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetInfo {
    /// The path the target was opened by.
    pub path: PathBuf,
    /// Regular file, block device or memory device.
    pub kind: TargetKind,
    /// Bytes addressable (file size after layout; device size).
    pub capacity: u64,
    /// Opened with `O_DIRECT`.
    pub direct: bool,
    /// Opened for writing (else `O_RDONLY`: a write IO fails with EBADF).
    pub writable: bool,
    /// Logical block size (block devices: `BLKSSZGET`; files: the direct IO
    /// offset alignment if known, else 512).
    pub logical_block_size: u32,
    /// `STATX_DIOALIGN`: memory and offset alignment of direct IO, 0 if the
    /// kernel does not report them.
    pub dio_mem_align: u32,
    /// `STATX_DIOALIGN`'s `dio_offset_align`: the alignment in bytes of a
    /// direct IO's file offset and length, 0 if not reported.
    pub dio_offset_align: u32,
    /// blkqos created the file in this open.
    pub created: bool,
    /// blkqos wrote its layout into the file in this open (bytes written).
    pub laid_out_bytes: u64,
    /// A block device's `queue/max_sectors_kb` in bytes: the driver splits
    /// longer IOs as the kernel would. `u64::MAX` for files and memory
    /// devices (the kernel splits below the file system) or if unknown.
    pub max_io_bytes: u64,
}

impl TargetInfo {
    /// Alignment the IO buffers must have.
    pub fn buffer_align(&self) -> usize {
        (self.dio_mem_align as usize).max(4096).next_power_of_two()
    }
}

pub(crate) struct Target {
    pub file: File,
    pub info: TargetInfo,
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> EngineError + 'a {
    move |error| EngineError::Io {
        path: path.to_path_buf(),
        op,
        error,
    }
}

fn refuse(path: &Path, reason: Refusal) -> EngineError {
    EngineError::Refused {
        path: path.to_path_buf(),
        reason,
    }
}

/// Chunk size of the layout writes.
const LAYOUT_CHUNK: usize = 1 << 20;

/// Write blkqos's pattern over `[from, to)` of `f` (buffered), then fsync.
/// A SIGINT/SIGTERM ([`crate::signal::stop_requested`]) ends it at a chunk
/// boundary: the file then ends where the layout stopped, and the next
/// run lays out the rest. Returns where it ended.
fn lay_out(f: &File, from: u64, to: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; LAYOUT_CHUNK];
    let mut off = from;
    while off < to && !crate::signal::stop_requested() {
        let n = (to - off).min(LAYOUT_CHUNK as u64) as usize;
        pattern::fill(&mut buf[..n], off);
        f.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    f.sync_all()?;
    Ok(off)
}

fn final_open(path: &Path, o: &EngineOptions, excl: bool) -> Result<File, EngineError> {
    let mut flags = libc::O_CLOEXEC;
    if o.direct {
        flags |= libc::O_DIRECT;
    }
    if excl {
        flags |= libc::O_EXCL;
    }
    OpenOptions::new()
        .read(true)
        .write(o.writes)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| {
            if o.direct && e.raw_os_error() == Some(libc::EINVAL) {
                EngineError::DirectUnsupported {
                    path: path.to_path_buf(),
                }
            } else {
                EngineError::Io {
                    path: path.to_path_buf(),
                    op: "open",
                    error: e,
                }
            }
        })
}

fn dio_info(f: &File) -> (u32, u32) {
    sys::dio_align(f.as_fd()).unwrap_or((0, 0))
}

/// Open `path` for a run with options `o`, creating/laying out a regular
/// file if it is missing or too small, and refusing unsafe writes.
pub(crate) fn open_target(path: &Path, o: &EngineOptions) -> Result<Target, EngineError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, "stat")(e)),
    };
    match meta {
        None => open_file(path, o, None),
        Some(m) if m.file_type().is_file() => open_file(path, o, Some(m.len())),
        Some(m) if m.file_type().is_block_device() => open_block_device(path, o, m.rdev()),
        Some(m) if m.file_type().is_char_device() => open_memory_device(path, o, m.rdev()),
        Some(m) => Err(EngineError::Unsupported {
            path: path.to_path_buf(),
            what: if m.is_dir() {
                "a directory".into()
            } else {
                "not a regular file or block device".into()
            },
        }),
    }
}

fn open_file(path: &Path, o: &EngineOptions, existing: Option<u64>) -> Result<Target, EngineError> {
    let needed = o.size_needed;
    let mut created = false;
    let (size, ours) = match existing {
        None => {
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(io_err(path, "create"))?;
            created = true;
            // best effort: on a filesystem without user xattrs the file is
            // simply not marked, and writing it later needs consent
            let _ = sys::set_marker(f.as_fd());
            (0, true)
        }
        Some(len) => {
            let f = File::open(path).map_err(io_err(path, "open"))?;
            (len, sys::has_marker(f.as_fd()))
        }
    };
    let consent = ours || o.overwrite || size == 0;
    if o.writes && !consent {
        return Err(refuse(path, Refusal::ExistingFile { size }));
    }
    let mut laid_out_bytes = 0;
    if needed > size {
        if !consent {
            return Err(refuse(path, Refusal::WouldExtend { size, needed }));
        }
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err(path, "open for layout"))?;
        if o.reads || !o.writes {
            // fio's "Laying out IO file": reads must find real blocks
            let mut err = io::stderr().lock();
            let _ = writeln!(
                err,
                "blkqos: laying out IO file `{}` ({} MiB)",
                path.display(),
                needed.div_ceil(1 << 20)
            );
            let end = lay_out(&f, size, needed).map_err(io_err(path, "lay out"))?;
            if end < needed {
                let _ = writeln!(
                    err,
                    "blkqos: laying out `{}` interrupted at {end} bytes (the next run lays out the rest)",
                    path.display()
                );
            }
            laid_out_bytes = end - size;
        } else {
            // a write-only job: extend (sparse) to the size, as fio's ftruncate
            f.set_len(needed).map_err(io_err(path, "extend"))?;
        }
        let _ = sys::set_marker(f.as_fd());
    }
    let file = final_open(path, o, false)?;
    let (mem, off) = dio_info(&file);
    let capacity = file.metadata().map_err(io_err(path, "stat"))?.len();
    Ok(Target {
        file,
        info: TargetInfo {
            path: path.to_path_buf(),
            kind: TargetKind::File,
            capacity,
            direct: o.direct,
            writable: o.writes,
            logical_block_size: if off > 0 { off } else { 512 },
            dio_mem_align: mem,
            dio_offset_align: off,
            created,
            laid_out_bytes,
            max_io_bytes: u64::MAX,
        },
    })
}

/// Read the first [`PROBE_BYTES`] of a device (fewer if it is shorter).
fn read_head(f: &File) -> io::Result<Vec<u8>> {
    // aligned, so that this works on an O_DIRECT fd too
    let mut buf = AlignedBuf::zeroed(PROBE_BYTES, 4096);
    let mut got = 0;
    while got < PROBE_BYTES {
        match f.read_at(&mut buf.as_mut_slice()[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        // O_DIRECT reads must stay aligned: stop at a short, unaligned read
        if got % 4096 != 0 {
            break;
        }
    }
    Ok(buf.as_slice()[..got].to_vec())
}

fn open_block_device(path: &Path, o: &EngineOptions, rdev: u64) -> Result<Target, EngineError> {
    let (major, minor) = sys::split_dev(rdev);
    let dev = DevId { major, minor };
    if o.writes && !o.allow_destructive {
        safety::check_block_device_use(dev).map_err(|r| refuse(path, r))?;
    }
    let file = final_open(path, o, o.writes).map_err(|e| match e {
        EngineError::Io { ref error, .. }
            if o.writes && error.raw_os_error() == Some(libc::EBUSY) =>
        {
            refuse(path, Refusal::Busy { dev })
        }
        e => e,
    })?;
    if o.writes && !o.allow_destructive {
        let head = read_head(&file).map_err(io_err(path, "read the device head"))?;
        if let Some(sig) = safety::detect_signature(&head) {
            return Err(refuse(path, Refusal::Signature(sig)));
        }
    }
    let capacity = sys::blk_size_bytes(file.as_fd()).map_err(io_err(path, "BLKGETSIZE64"))?;
    if o.size_needed > capacity {
        return Err(EngineError::TooSmall {
            path: path.to_path_buf(),
            capacity,
            needed: o.size_needed,
        });
    }
    let lbs = sys::blk_logical_block_size(file.as_fd()).map_err(io_err(path, "BLKSSZGET"))?;
    let (mem, off) = dio_info(&file);
    Ok(Target {
        file,
        info: TargetInfo {
            path: path.to_path_buf(),
            kind: TargetKind::BlockDevice,
            capacity,
            direct: o.direct,
            writable: o.writes,
            logical_block_size: lbs,
            dio_mem_align: if mem > 0 { mem } else { lbs },
            dio_offset_align: if off > 0 { off } else { lbs },
            created: false,
            laid_out_bytes: 0,
            max_io_bytes: queue_max_io_bytes(dev).unwrap_or(u64::MAX),
        },
    })
}

/// `/sys/dev/block/MAJ:MIN/queue/max_sectors_kb` in bytes (a partition's
/// queue is its disk's, one directory up).
fn queue_max_io_bytes(dev: DevId) -> Option<u64> {
    let base = PathBuf::from(format!("/sys/dev/block/{dev}"));
    [base.join("queue"), base.join("../queue")]
        .iter()
        .find_map(|q| std::fs::read_to_string(q.join("max_sectors_kb")).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&kb| kb > 0)
        .map(|kb| kb << 10)
}

/// Major 1 ("mem") minors blkqos accepts: null, zero, full.
const MEM_MAJOR: u32 = 1;
const MEM_MINORS: [(u32, &str); 3] = [(3, "null"), (5, "zero"), (7, "full")];

fn open_memory_device(path: &Path, o: &EngineOptions, rdev: u64) -> Result<Target, EngineError> {
    let (major, minor) = sys::split_dev(rdev);
    if major != MEM_MAJOR || !MEM_MINORS.iter().any(|&(m, _)| m == minor) {
        return Err(EngineError::Unsupported {
            path: path.to_path_buf(),
            what: format!(
                "character device {major}:{minor} (only /dev/null, /dev/zero and /dev/full are accepted)"
            ),
        });
    }
    if o.direct {
        return Err(EngineError::DirectUnsupported {
            path: path.to_path_buf(),
        });
    }
    let file = final_open(path, o, false)?;
    Ok(Target {
        file,
        info: TargetInfo {
            path: path.to_path_buf(),
            kind: TargetKind::MemoryDevice,
            capacity: if o.size_needed > 0 {
                o.size_needed
            } else {
                1 << 40
            },
            direct: false,
            writable: o.writes,
            logical_block_size: 512,
            dio_mem_align: 0,
            dio_offset_align: 0,
            created: false,
            laid_out_bytes: 0,
            max_io_bytes: u64::MAX,
        },
    })
}
