//! blkqos-engine: the real engine — driver backends that run IO against a
//! file or a block device.
//!
//! ```text
//!  blkqos_driver::run ──submit(io)──> RealBackend ─┬─ UringBackend   (io_uring: batched SQEs,
//!        ^                                         │                  timed waits, fixed buffers)
//!        └──── wait(deadline) -> completions ──────┴─ ThreadsBackend (pread/pwrite pool, fallback)
//! ```
//!
//! * [`open_backend`] opens the target like fio does ([`target`]): creates
//!   and lays out a regular file ("Laying out IO file"), sizes a block device
//!   (`BLKGETSIZE64`), opens with `O_DIRECT` for `direct=1`, and applies the
//!   safety rules of [`safety`] before anything is written. Then it starts
//!   the io_uring backend, or the thread-pool backend if io_uring cannot be
//!   set up (one notice line on stderr) or if asked for explicitly.
//! * [`files::open_backend_files`] opens several files instead, each at
//!   an extent of one address space, and one backend drives them all:
//!   [`route`] turns each IO's offset into (the file's fd, the offset in
//!   it).
//! * [`by_job::RoutedBackend`] drives jobs of several engines in one run
//!   (file calls beside block IO): each IO goes to its job's backend.
//! * Both backends keep one preallocated, 4 KiB-aligned buffer per request
//!   slot (`depth` slots of `max_io` bytes): no allocation per IO.
//! * Time: `CLOCK_MONOTONIC` minus the backend's epoch, as
//!   [`blkqos_core::Instant`] nanoseconds, read once per completion batch.
//! * IO errors (EIO, ENOSPC, EINVAL for a misaligned direct IO, EBADF for a
//!   write to a target opened read-only...) are `Completion::error` values,
//!   never panics; a short transfer shows in `Completion::bytes`. With
//!   `verify`, writes carry [`pattern`] and reads are checked against it
//!   (a mismatch is EILSEQ, as fio reports verify failures).
//! * With [`EngineOptions::fio_verify`], a job's writes carry fio's verify
//!   headers and checksums and its reads are checked as fio checks them
//!   ([`fio_verify`]: fio's on-disk format, fio's failure lines on stderr,
//!   EILSEQ).
//! * [`StopOnSignal`] turns SIGINT into `RunOptions::stop`, and SIGTERM or
//!   a second signal into `RunOptions::abandon` too; it never exits.
//!
//! Run real backends with [`host_model`] (no modelled submit cost or wake
//! jitter: the host's are real).

// This is the one blkqos crate allowed `unsafe`: it talks to the kernel
// (io_uring rings and buffer registration, ioctls, statx, xattrs) and owns
// aligned DMA buffers. Every `unsafe` block carries a SAFETY comment; the
// unsafe code lives in `buf`, `sys`, `uring` and `signal`.
#![allow(unsafe_code)]
#![warn(missing_docs)]

pub mod buf;
pub mod by_job;
mod common;
pub mod diskutil;
pub mod fileops;
pub mod files;
pub mod fio_verify;
pub mod mapcopy;
pub mod mapfile;
pub mod mapped;
pub mod meta;
pub mod pattern;
pub mod placement;
pub mod route;
pub mod safety;
pub mod signal;
mod sys;
pub mod target;
pub mod threads;
pub mod uring;
pub mod usage;
pub mod wbuf;

pub use common::EngineStats;
pub use safety::{Refusal, Signature};
pub use signal::StopOnSignal;
pub use target::{TargetInfo, TargetKind};
pub use threads::ThreadsBackend;
pub use uring::UringBackend;

use blkqos_core::{Instant, Io};
use blkqos_driver::{Backend, Completion, HostModel};
use std::fmt;
use std::path::{Path, PathBuf};

/// Which backend to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// io_uring, or the thread pool if io_uring cannot be set up.
    #[default]
    Auto,
    /// io_uring only ([`UringBackend`]): setting it up must succeed.
    IoUring,
    /// The thread pool of `pread`/`pwrite` workers ([`ThreadsBackend`]).
    Threads,
}

impl BackendKind {
    /// Parse a CLI spelling: `auto`, `real`/`io_uring`/`uring`, `threads`.
    pub fn parse(s: &str) -> Option<BackendKind> {
        match s {
            "auto" => Some(BackendKind::Auto),
            "real" | "io_uring" | "uring" => Some(BackendKind::IoUring),
            "threads" | "psync" => Some(BackendKind::Threads),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Auto => "auto",
            BackendKind::IoUring => "io_uring",
            BackendKind::Threads => "threads",
        })
    }
}

/// How to open the target and run IO on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// Which backend to start ([`BackendKind::Auto`] by default).
    pub kind: BackendKind,
    /// Open with `O_DIRECT` (fio `direct=1`).
    pub direct: bool,
    /// Request slots = most IOs in flight at once (`nr_requests`). The
    /// driver queues IOs beyond it, as the block layer waits for a tag.
    pub depth: u32,
    /// Largest IO in bytes (the buffer size of each slot; a larger read or
    /// write completes with EINVAL). At most 1 GiB.
    pub max_io: u64,
    /// Bytes the jobs address: a regular file is created/extended to it, a
    /// block device must be at least this big.
    pub size_needed: u64,
    /// Some job reads: a regular file that is too small is laid out by
    /// writing blkqos's pattern (fio's "Laying out IO file"); a write-only
    /// job just extends it (sparse).
    pub reads: bool,
    /// Some job writes (or discards/flushes): the target is opened read-write
    /// and the safety rules apply. Without it the target is opened read-only.
    pub writes: bool,
    /// Skip the block device checks (signature, partitions, holders, mounts).
    /// A device the kernel reports busy is refused regardless.
    pub allow_destructive: bool,
    /// Consent to write to (or extend) an existing regular file blkqos did
    /// not create or lay out.
    pub overwrite: bool,
    /// Writes carry [`pattern`]; reads are checked against it (EILSEQ on mismatch).
    pub verify: bool,
    /// Without `verify`: every write's buffer holds these bytes, repeated
    /// from the buffer's first byte (fio `buffer_pattern`, `fill_pattern`;
    /// `[0]` for `zero_buffers`). None: the buffer is written as it is.
    pub write_fill: Option<Vec<u8>>,
    /// fio's verify format, by job ([`blkqos_core::Submitter`]): a job
    /// with one writes fio's verify headers and checksums
    /// ([`fio_verify`]) and its reads are checked as fio checks them
    /// (EILSEQ and fio's lines on stderr on a mismatch).
    pub fio_verify: Vec<Option<fio_verify::JobVerify>>,
    /// Register the buffers and the file with io_uring (fixed buffers/files).
    pub register: bool,
    /// blkqos's userspace write-back buffer ([`wbuf`]): buffered writes are
    /// acknowledged into it and reach the target as writeback IO.
    pub write_buffer: bool,
    /// io_uring only: a ring with a kernel submission thread
    /// (`IORING_SETUP_SQPOLL`, fio `sqthread_poll=1`), on a CPU of its own
    /// if given (`IORING_SETUP_SQ_AFF`, `sqthread_poll_cpu`).
    pub sqpoll: Option<Option<u32>>,
    /// Trims as fio issues them (`os_trim`: the `BLKDISCARD` ioctl): on a
    /// regular file or a character device a trim fails with ENOTTY, as
    /// there; without it a trim punches a hole in a file
    /// (`PUNCH_HOLE | KEEP_SIZE`).
    pub fio_trims: bool,
    /// io_uring only: polled completions (`IORING_SETUP_IOPOLL`, fio
    /// `hipri=1`); the device needs poll queues, IO to a file on a file
    /// system fails with EOPNOTSUPP.
    pub iopoll: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            kind: BackendKind::Auto,
            direct: false,
            depth: 64,
            max_io: 1 << 20,
            size_needed: 0,
            reads: true,
            writes: false,
            allow_destructive: false,
            overwrite: false,
            verify: false,
            write_fill: None,
            fio_verify: Vec::new(),
            register: true,
            write_buffer: false,
            sqpoll: None,
            iopoll: false,
            fio_trims: false,
        }
    }
}

/// Why the engine could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A safety rule ([`safety`]) forbids writing to the target.
    #[error("refusing to write to `{}`: {reason}", path.display())]
    Refused {
        /// The target.
        path: PathBuf,
        /// What was found.
        reason: Refusal,
    },
    /// A system call on the target failed.
    // the OS error is part of the message, not a `source`: printed once
    #[error("`{}`: {op}: {error}", path.display())]
    Io {
        /// The target.
        path: PathBuf,
        /// What was being done (`open`, `dup`, ...).
        op: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
    /// `direct=1` was asked for and the target refuses `O_DIRECT`.
    #[error("`{}`: O_DIRECT is not supported on this target (direct=1); use direct=0", path.display())]
    DirectUnsupported {
        /// The target.
        path: PathBuf,
    },
    /// A block device is smaller than the jobs address.
    #[error("`{}` is {capacity} bytes, the jobs need {needed}", path.display())]
    TooSmall {
        /// The target.
        path: PathBuf,
        /// Its size in bytes.
        capacity: u64,
        /// Bytes the jobs address ([`EngineOptions::size_needed`]).
        needed: u64,
    },
    /// The target is neither a regular file, a block device nor an
    /// accepted memory device (a directory, another character device...).
    #[error("`{}`: unsupported target: {what}", path.display())]
    Unsupported {
        /// The target.
        path: PathBuf,
        /// What it is instead.
        what: String,
    },
    /// The io_uring ring could not be set up (with [`BackendKind::IoUring`];
    /// [`BackendKind::Auto`] falls back to the thread pool instead).
    #[error("io_uring is unavailable: {error}")]
    UringUnavailable {
        /// The error from setting up the ring.
        error: std::io::Error,
    },
    /// The ring with `sqpoll` or `iopoll` could not be set up (fio:
    /// "io_queue_init failed"); no quiet fallback.
    #[error("io_uring ring setup with sqthread_poll/hipri failed: {error}")]
    RingSetup {
        /// The error from `io_uring_setup`.
        error: std::io::Error,
    },
    /// An [`EngineOptions`] value is out of range (`depth` outside
    /// 1..=32768, `max_io` outside 1 byte..=1 GiB); the message says which.
    #[error("invalid engine option: {0}")]
    InvalidOption(String),
}

/// Host model for real backends: submit cost and wake-up lateness are the
/// host's own, so the driver must not add modelled ones.
pub fn host_model() -> HostModel {
    HostModel {
        submit_ns: 0,
        wake_jitter_ns: 0,
        timer_dispatch_ns: 0,
        timer_dispatch_jitter_ns: 0,
        seed: 1,
        writeback_piece_ns: 0,
        // the real host's scheduler runs the jobs
        cpus: 0,
    }
}

/// The backend [`open_backend`] chose. `blkqos_driver::run` is generic over
/// a sized `Backend`, so this enum (static dispatch) is what callers pass:
/// `run(&mut backend, ...)`. (`impl Backend for Box<dyn Backend>` cannot be
/// written outside the driver crate: the orphan rule forbids it.)
// One per run, built once and passed by reference: the size difference of
// the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum RealBackend {
    /// The io_uring backend.
    Uring(UringBackend),
    /// The thread-pool backend.
    Threads(ThreadsBackend),
}

impl RealBackend {
    /// The backend in use (never `Auto`).
    pub fn kind(&self) -> BackendKind {
        match self {
            RealBackend::Uring(_) => BackendKind::IoUring,
            RealBackend::Threads(_) => BackendKind::Threads,
        }
    }
    /// What was opened, and how.
    pub fn target(&self) -> &TargetInfo {
        match self {
            RealBackend::Uring(b) => b.target(),
            RealBackend::Threads(b) => b.target(),
        }
    }
    /// (buffers, target) registered with an io_uring ring; the thread
    /// pool has no ring.
    pub fn registered(&self) -> (bool, bool) {
        match self {
            RealBackend::Uring(b) => b.registered(),
            RealBackend::Threads(_) => (false, false),
        }
    }
    /// What the backend did so far: IOs, completions, batches, syscalls.
    pub fn stats(&self) -> EngineStats {
        match self {
            RealBackend::Uring(b) => b.stats(),
            RealBackend::Threads(b) => b.stats(),
        }
    }
    /// Write what the write-back buffer still holds straight to the target,
    /// unthrottled, then fsync (the run failed before its drain, or gave
    /// the drain up after a SIGTERM or a second signal): (pages written,
    /// pages that failed), or None when there is no buffer. Call it with no
    /// IO in flight (after `blkqos_driver::run` returned).
    pub fn write_out_store(&mut self) -> Option<std::io::Result<(u64, u64)>> {
        match self {
            RealBackend::Uring(b) => b.write_out_store(),
            RealBackend::Threads(b) => b.write_out_store(),
        }
    }
    /// Count time from `epoch` (a moment before the backend opened): the
    /// backends of one run that drives several share one clock, so their
    /// completion times compare.
    pub fn set_epoch(&mut self, epoch: std::time::Instant) {
        match self {
            RealBackend::Uring(b) => b.set_epoch(epoch),
            RealBackend::Threads(b) => b.set_epoch(epoch),
        }
    }
    /// The userspace write-back buffer's counters and pages held, if on.
    pub fn store_stats(&self) -> Option<(wbuf::StoreStats, usize)> {
        match self {
            RealBackend::Uring(b) => b.store_stats(),
            RealBackend::Threads(b) => b.store_stats(),
        }
    }
}

impl fmt::Debug for RealBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealBackend")
            .field("kind", &self.kind())
            .field("target", self.target())
            .finish()
    }
}

macro_rules! delegate {
    ($self:ident, $b:ident => $e:expr) => {
        match $self {
            RealBackend::Uring($b) => $e,
            RealBackend::Threads($b) => $e,
        }
    };
}

impl Backend for RealBackend {
    fn now(&self) -> Instant {
        delegate!(self, b => b.now())
    }
    fn nr_requests(&self) -> u32 {
        delegate!(self, b => b.nr_requests())
    }
    fn capacity_bytes(&self) -> u64 {
        delegate!(self, b => b.capacity_bytes())
    }

    fn max_io_bytes(&self) -> u64 {
        delegate!(self, b => b.max_io_bytes())
    }
    fn buffer_write(&mut self, offset: u64, len: u64) {
        delegate!(self, b => b.buffer_write(offset, len))
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        delegate!(self, b => b.submit(io, now))
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        delegate!(self, b => b.wait(deadline, out))
    }
    fn in_flight(&self) -> usize {
        delegate!(self, b => b.in_flight())
    }
}

fn validate(o: &EngineOptions) -> Result<(), EngineError> {
    if o.depth == 0 || o.depth > 32768 {
        return Err(EngineError::InvalidOption(format!(
            "depth={} is out of range 1..=32768",
            o.depth
        )));
    }
    if o.kind == BackendKind::Threads && (o.sqpoll.is_some() || o.iopoll) {
        return Err(EngineError::InvalidOption(
            "sqthread_poll and hipri are io_uring ring flags: the thread-pool backend has \
             no ring; use --backend=io_uring (or real)"
                .into(),
        ));
    }
    if o.max_io == 0 || o.max_io > 1 << 30 {
        return Err(EngineError::InvalidOption(format!(
            "max_io={} is out of range 1..=1GiB",
            o.max_io
        )));
    }
    Ok(())
}

/// Open `target` and start a backend on it (see the crate docs).
pub fn open_backend(target: &Path, opts: EngineOptions) -> Result<RealBackend, EngineError> {
    let store = opts.write_buffer;
    let mut b = open_backend_inner(target, opts)?;
    if store {
        // read-only handle for reading in partially written pages
        let file = std::fs::File::open(&b.target().path).map_err(|error| EngineError::Io {
            path: target.to_path_buf(),
            op: "open for the write-back buffer",
            error,
        })?;
        let s = wbuf::PageStore::new(file);
        match &mut b {
            RealBackend::Uring(x) => x.attach_store(s),
            RealBackend::Threads(x) => x.attach_store(s),
        }
    }
    Ok(b)
}

fn open_backend_inner(target: &Path, opts: EngineOptions) -> Result<RealBackend, EngineError> {
    validate(&opts)?;
    let t = target::open_target(target, &opts)?;
    match opts.kind {
        BackendKind::Threads => Ok(RealBackend::Threads(ThreadsBackend::new(t, &opts))),
        BackendKind::IoUring => Ok(RealBackend::Uring(UringBackend::new(t, &opts)?)),
        BackendKind::Auto => {
            // the ring takes the fd; keep a duplicate for the fallback
            let spare = t.file.try_clone().map_err(|error| EngineError::Io {
                path: t.info.path.clone(),
                op: "dup",
                error,
            })?;
            let info = t.info.clone();
            match UringBackend::new(t, &opts) {
                Ok(b) => Ok(RealBackend::Uring(b)),
                // sqthread_poll / hipri are ring flags: no thread pool
                Err(e @ EngineError::RingSetup { .. }) => Err(e),
                Err(e) => {
                    eprintln!("blkqos: {e}; using the thread-pool backend");
                    let t = target::Target { file: spare, info };
                    Ok(RealBackend::Threads(ThreadsBackend::new(t, &opts)))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<RealBackend>();
        send::<UringBackend>();
        send::<ThreadsBackend>();
        send::<StopOnSignal>();
    }

    #[test]
    fn backend_kind_spellings() {
        assert_eq!(BackendKind::parse("real"), Some(BackendKind::IoUring));
        assert_eq!(BackendKind::parse("threads"), Some(BackendKind::Threads));
        assert_eq!(BackendKind::parse("auto"), Some(BackendKind::Auto));
        assert_eq!(BackendKind::parse("aio"), None);
        assert_eq!(BackendKind::IoUring.to_string(), "io_uring");
    }
}
