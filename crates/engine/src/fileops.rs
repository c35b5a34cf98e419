//! The backend of fio's file-call engines, `falloc` and `ftruncate`: the
//! driver's jobs generate their IOs as for any engine (offsets, sizes,
//! directions, `time_based`), and each IO is one system call on the job's
//! file instead of a read or a write (fio 3.33 engines/falloc.c
//! `fio_fallocate_queue`, engines/ftruncate.c `fio_ftruncate_queue`):
//!
//! * falloc: `fallocate(fd, mode, offset, len)` with mode `KEEP_SIZE` for
//!   a read, 0 for a write (the file grows to cover the range), and
//!   `PUNCH_HOLE | KEEP_SIZE` for a trim;
//! * ftruncate: `ftruncate(fd, offset)` for a write; a read or a trim
//!   fails with EINVAL, as in fio.
//!
//! Both engines are `FIO_SYNCIO`: the call is made when the IO reaches
//! the job clone's thread and the IO completes when it returns (no queue);
//! each clone has its own thread, as each fio job. The driver's
//! target is a ledger of regions, one per file (the run's plan); an IO's
//! offset on it names the file and the offset in that file.

use crate::sys;
use blkqos_core::{Instant, Io, IoOp};
use blkqos_driver::{Backend, Completion};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// The system call an engine makes per IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileCall {
    /// `fallocate(2)` (fio `falloc`).
    Falloc,
    /// `ftruncate(2)` to the IO's offset (fio `ftruncate`).
    Ftruncate,
    /// `EXT4_IOC_MOVE_EXT` with the donor file `donor` of the backend
    /// (fio `e4defrag`); `inplace`: the donor's range is allocated before
    /// and the donor truncated after each move.
    E4defrag {
        /// Index of the donor file.
        donor: u32,
        /// fio `inplace=1`.
        inplace: bool,
    },
}

/// A donor file of e4defrag (fio `fio_e4defrag_init`): open write-only,
/// and its block size (`st_blksize`), the unit of the moves.
#[derive(Debug)]
pub struct Donor {
    /// The donor, `O_CREAT | O_WRONLY`.
    pub file: File,
    /// Its `st_blksize`.
    pub block_bytes: u64,
}

impl Donor {
    /// Open `path` as fio does, and, unless `inplace`, allocate it over
    /// `[start, end)` (fio: the job's start offset to the largest file
    /// size).
    pub fn open(
        path: &std::path::Path,
        inplace: bool,
        start: u64,
        end: u64,
    ) -> std::io::Result<Donor> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(path)?;
        if !inplace && end > start {
            sys::fallocate(file.as_fd(), 0, start, end - start)?;
        }
        let block_bytes = file.metadata()?.blksize().max(1);
        Ok(Donor { file, block_bytes })
    }
}

/// One e4defrag IO (fio `fio_e4defrag_queue`): writes only (EINVAL
/// otherwise); the blocks covering `[offset, offset + len)` moved to the
/// donor's; bytes done is what moved (a short IO), EINVAL if nothing did.
fn defrag(file: &File, donor: &Donor, inplace: bool, offset: u64, len: u64) -> Result<u64, i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    if inplace {
        sys::fallocate(donor.file.as_fd(), 0, offset, len).map_err(errno)?;
    }
    let bsz = donor.block_bytes;
    let start = offset / bsz;
    let blocks = (offset + len).div_ceil(bsz) - start;
    let (err, moved_blocks) = sys::ext4_move_ext(file.as_fd(), donor.file.as_fd(), start, blocks);
    let moved = (moved_blocks * bsz).min(len);
    if inplace {
        donor.file.set_len(0).map_err(errno)?;
    }
    match err {
        Some(e) => Err(errno(e)),
        // access beyond i_size
        None if moved == 0 => Err(libc::EINVAL),
        None => Ok(moved),
    }
}

/// `fallocate` modes (linux/falloc.h).
/// `FALLOC_FL_KEEP_SIZE`.
pub const KEEP_SIZE: i32 = libc::FALLOC_FL_KEEP_SIZE;
const PUNCH_HOLE: libc::c_int = libc::FALLOC_FL_PUNCH_HOLE;

/// One file of the run: where its region lies on the driver's ledger.
#[derive(Debug)]
pub struct CallFile {
    /// The file.
    pub path: PathBuf,
    /// Start of its region on the ledger.
    pub region_start: u64,
    /// Length of its region.
    pub region_len: u64,
    /// The open file (read-write, no `O_DIRECT`: fio's falloc opens with
    /// `O_CREAT | O_RDWR`).
    pub file: File,
}

/// The call `call` makes for an IO of `op` at `offset`, `len` bytes, on
/// `file` (`donors`: e4defrag's): Ok(bytes done) or the errno.
pub fn serve(
    call: FileCall,
    donors: &[Donor],
    op: IoOp,
    file: &File,
    offset: u64,
    len: u64,
) -> Result<u64, i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    match call {
        FileCall::E4defrag { donor, inplace } => match (op, donors.get(donor as usize)) {
            (IoOp::Write, Some(d)) => defrag(file, d, inplace, offset, len),
            _ => Err(libc::EINVAL),
        },
        FileCall::Falloc => {
            let mode = match op {
                IoOp::Read => KEEP_SIZE,
                IoOp::Write => 0,
                IoOp::Discard => PUNCH_HOLE | KEEP_SIZE,
                // fio's falloc makes no call for a sync: its own fsync path
                IoOp::Flush => return file.sync_all().map(|()| 0).map_err(errno),
            };
            sys::fallocate(file.as_fd(), mode, offset, len).map_err(errno)?;
            Ok(len)
        }
        FileCall::Ftruncate => match op {
            IoOp::Write => {
                file.set_len(offset).map_err(errno)?;
                Ok(len)
            }
            IoOp::Flush => file.sync_all().map(|()| 0).map_err(errno),
            IoOp::Read | IoOp::Discard => Err(libc::EINVAL),
        },
    }
}

/// The backend of the file-call engines: each job clone's calls are made
/// on a thread of its own, as each fio job runs in its own thread
/// (backend.c `thread_main`), so that a slow call (a hole punched, a block
/// move) holds up only its own job. The call is made when the IO reaches
/// the clone's thread and the IO completes when it returns. A run of one
/// job clone makes its calls at submission, without the hand-off.
pub struct FileCallBackend {
    epoch: std::time::Instant,
    shared: std::sync::Arc<Shared>,
    /// The call each job clone makes, by its index (`Io::submitter`).
    calls: Vec<FileCall>,
    /// Each clone's thread, started at its first IO.
    workers: Vec<Option<std::sync::mpsc::Sender<(Io, std::time::Instant)>>>,
    done_tx: std::sync::mpsc::Sender<Completion>,
    done_rx: std::sync::mpsc::Receiver<Completion>,
    in_flight: usize,
    capacity: u64,
}

/// What every clone's thread reads: the files and the donors.
struct Shared {
    files: Vec<CallFile>,
    donors: Vec<Donor>,
}

impl Shared {
    fn file_at(&self, offset: u64) -> Option<&CallFile> {
        self.files
            .iter()
            .find(|f| (f.region_start..f.region_start + f.region_len.max(1)).contains(&offset))
    }

    /// Make `io`'s call: its completion, timed from `epoch`.
    fn complete(&self, call: FileCall, io: &Io, epoch: std::time::Instant) -> Completion {
        let clock = || Instant(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));
        let issued = clock();
        let res = match self.file_at(io.offset) {
            Some(f) => serve(
                call,
                &self.donors,
                io.op,
                &f.file,
                io.offset - f.region_start,
                io.len,
            ),
            None => Err(libc::EINVAL),
        };
        let (bytes, error) = match res {
            Ok(b) => (b, 0),
            Err(e) => (0, e),
        };
        Completion {
            id: io.id,
            error,
            bytes,
            at: clock(),
            issued: Some(issued),
            dispatched: None,
        }
    }
}

impl FileCallBackend {
    /// A backend over `files` (their regions must not overlap), job clone
    /// `i` making `calls[i]` (e4defrag's with `donors`).
    pub fn new(files: Vec<CallFile>, calls: Vec<FileCall>, donors: Vec<Donor>) -> Self {
        let capacity = files
            .iter()
            .map(|f| f.region_start + f.region_len)
            .max()
            .unwrap_or(0);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        FileCallBackend {
            epoch: std::time::Instant::now(),
            shared: std::sync::Arc::new(Shared { files, donors }),
            workers: calls.iter().map(|_| None).collect(),
            calls,
            done_tx,
            done_rx,
            in_flight: 0,
            capacity,
        }
    }

    /// Count time from `epoch` (a moment before the backend was made), as
    /// [`crate::RealBackend::set_epoch`]; before the first IO.
    pub fn set_epoch(&mut self, epoch: std::time::Instant) {
        self.epoch = epoch.min(self.epoch);
    }

    /// The files, for the run's report and checks.
    pub fn files(&self) -> &[CallFile] {
        &self.shared.files
    }

    /// The thread of clone `clone` (started now if it has none).
    fn worker(&mut self, clone: usize) -> &std::sync::mpsc::Sender<(Io, std::time::Instant)> {
        let call = self.calls[clone];
        let (shared, done) = (self.shared.clone(), self.done_tx.clone());
        self.workers[clone].get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<(Io, std::time::Instant)>();
            std::thread::spawn(move || {
                for (io, epoch) in rx {
                    if done.send(shared.complete(call, &io, epoch)).is_err() {
                        return;
                    }
                }
            });
            tx
        })
    }

    fn take(&mut self, c: Completion, out: &mut Vec<Completion>) {
        self.in_flight -= 1;
        out.push(c);
    }
}

impl Backend for FileCallBackend {
    fn now(&self) -> Instant {
        Instant(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
    fn nr_requests(&self) -> u32 {
        // one call at a time per clone; every clone may have one
        u32::try_from(self.calls.len()).unwrap_or(u32::MAX).max(1)
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        self.in_flight += 1;
        let clone = io.submitter.0 as usize;
        let epoch = self.epoch;
        if clone >= self.calls.len() {
            // no job of the run: refused as fio refuses a range off its files
            let _ = self.done_tx.send(Completion {
                id: io.id,
                error: libc::EINVAL,
                bytes: 0,
                at: now,
                issued: Some(now),
                dispatched: None,
            });
            return;
        }
        if self.calls.len() == 1 {
            // the run's only job: nothing to wait beside it, and the call
            // made here costs no hand-off between threads
            let c = self.shared.complete(self.calls[0], io, epoch);
            let _ = self.done_tx.send(c);
            return;
        }
        if let Err(e) = self.worker(clone).send((*io, epoch)) {
            // the thread is gone (it panicked): make the call here
            let (io, epoch) = e.0;
            let c = self.shared.complete(self.calls[clone], &io, epoch);
            let _ = self.done_tx.send(c);
        }
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let first = match deadline {
            _ if self.in_flight == 0 => {
                if let Some(d) = deadline {
                    let now = self.now();
                    if d > now {
                        std::thread::sleep(std::time::Duration::from_nanos(d.0 - now.0));
                    }
                }
                return;
            }
            None => self.done_rx.recv().ok(),
            Some(d) => {
                let now = self.now();
                let left = std::time::Duration::from_nanos(d.0.saturating_sub(now.0));
                self.done_rx.recv_timeout(left).ok()
            }
        };
        if let Some(c) = first {
            self.take(c, out);
            while let Ok(c) = self.done_rx.try_recv() {
                self.take(c, out);
            }
        }
    }
    fn in_flight(&self) -> usize {
        self.in_flight
    }
}

/// What a new file gets before the job (fio filesetup.c `extend_file`
/// with `fallocate=`): nothing, an allocation of its size with a mode
/// (posix and native: 0, keep: `KEEP_SIZE`), or an `ftruncate` to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewFile {
    /// `fallocate=none`: the file stays empty.
    Empty,
    /// `fallocate(fd, mode, 0, size)`.
    Allocate(i32),
    /// `fallocate=truncate`: `ftruncate(fd, size)`.
    Truncate,
}

/// Open (creating and laying out as the real engine's target does, under
/// the same safety rules) the file at `path` for a file-call job of
/// `size_bytes`: when a job reads it is laid out with data; else a file
/// this run created gets `new_file` (as fio lays out a write-only job's
/// file), and an existing one is extended sparse.
pub fn open_call_file(
    path: &std::path::Path,
    size_bytes: u64,
    reads: bool,
    new_file: NewFile,
    overwrite: bool,
) -> Result<File, crate::EngineError> {
    let o = crate::EngineOptions {
        kind: crate::BackendKind::Threads,
        direct: false,
        size_needed: size_bytes,
        reads,
        writes: true,
        overwrite,
        ..crate::EngineOptions::default()
    };
    let t = crate::target::open_target(path, &o)?;
    if t.info.kind != crate::TargetKind::File {
        return Err(crate::EngineError::Unsupported {
            path: path.to_path_buf(),
            what: "not a regular file (fio's falloc and ftruncate work on files only)".into(),
        });
    }
    // fio's invalidate=1 (its default): the file's cached pages go before
    // the job (`file_invalidate_cache`); ext4 cannot move blocks whose
    // pages still hold buffers (EXT4_IOC_MOVE_EXT: EBUSY)
    let _ = sys::drop_cache(t.file.as_fd());
    if t.info.created && !reads {
        let err = |op: &'static str| {
            move |e: std::io::Error| crate::EngineError::Io {
                path: path.to_path_buf(),
                op,
                error: e,
            }
        };
        t.file.set_len(0).map_err(err("truncate"))?;
        match new_file {
            NewFile::Empty => {}
            NewFile::Allocate(mode) => {
                sys::fallocate(t.file.as_fd(), mode, 0, size_bytes).map_err(err("fallocate"))?
            }
            NewFile::Truncate => t.file.set_len(size_bytes).map_err(err("truncate"))?,
        }
    }
    Ok(t.file)
}

/// Allocated bytes of `file` (`st_blocks` × 512).
pub fn allocated_bytes(file: &File) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.blocks() * 512)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_plain(call: FileCall, op: IoOp, f: &File, off: u64, len: u64) -> Result<u64, i32> {
        serve(call, &[], op, f, off, len)
    }

    #[test]
    fn e4defrag_moves_blocks_to_the_donor() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        std::os::unix::fs::FileExt::write_all_at(&f, &vec![7u8; 256 << 10], 0).unwrap();
        f.sync_all().unwrap();
        // as fio's invalidate=1 before the job (see open_call_file)
        sys::drop_cache(f.as_fd()).unwrap();
        let donor = Donor::open(&dir.path().join("d"), true, 0, 256 << 10).unwrap();
        let call = FileCall::E4defrag {
            donor: 0,
            inplace: true,
        };
        let donors = [donor];
        match serve(call, &donors, IoOp::Write, &f, 64 << 10, 64 << 10) {
            // ext4 (where the tests run here): the blocks move, data stays
            Ok(n) => {
                assert_eq!(n, 64 << 10);
                let mut back = vec![0u8; 64 << 10];
                std::os::unix::fs::FileExt::read_exact_at(&f, &mut back, 64 << 10).unwrap();
                assert!(back.iter().all(|&b| b == 7));
            }
            // another file system refuses the ioctl, as fio reports it
            Err(e) => assert!(
                [libc::ENOTTY, libc::EOPNOTSUPP, libc::EINVAL].contains(&e),
                "{e}"
            ),
        }
        let e = serve(call, &donors, IoOp::Read, &f, 0, 4096).unwrap_err();
        assert_eq!(e, libc::EINVAL);
    }

    fn file(dir: &std::path::Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.join("f"))
            .unwrap()
    }

    #[test]
    fn each_clone_calls_on_its_own_thread_and_all_complete() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        let files = vec![CallFile {
            path: dir.path().join("f"),
            region_start: 1 << 20,
            region_len: 1 << 20,
            file: f,
        }];
        let mut b = FileCallBackend::new(files, vec![FileCall::Falloc; 2], Vec::new());
        let io = |id: u64, clone: u32, offset: u64| Io {
            id: blkqos_core::IoId(id),
            submitter: blkqos_core::Submitter(clone),
            group: blkqos_core::GroupId::ROOT,
            op: IoOp::Write,
            flags: blkqos_core::IoFlags::default(),
            offset,
            len: 64 << 10,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
            ioprio: 0,
        };
        let now = b.now();
        b.submit(&io(1, 0, 1 << 20), now);
        b.submit(&io(2, 1, (1 << 20) + (64 << 10)), now);
        // below the file's region: no file there
        b.submit(&io(3, 1, 0), now);
        let mut out = Vec::new();
        while b.in_flight() > 0 {
            b.wait(Some(Instant(b.now().0 + 1_000_000_000)), &mut out);
        }
        out.sort_by_key(|c| c.id.0);
        let got: Vec<_> = out.iter().map(|c| (c.id.0, c.error, c.bytes)).collect();
        assert_eq!(
            got,
            vec![(1, 0, 64 << 10), (2, 0, 64 << 10), (3, libc::EINVAL, 0)]
        );
        assert_eq!(b.files()[0].file.metadata().unwrap().len(), 128 << 10);
    }

    #[test]
    fn falloc_allocates_grows_and_punches() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        // a write allocates and grows the file
        serve_plain(FileCall::Falloc, IoOp::Write, &f, 1 << 20, 64 << 10).unwrap();
        assert_eq!(f.metadata().unwrap().len(), (1 << 20) + (64 << 10));
        let after_write = allocated_bytes(&f).unwrap();
        assert!(after_write >= 64 << 10, "{after_write}");
        // a read allocates without growing
        serve_plain(FileCall::Falloc, IoOp::Read, &f, 4 << 20, 64 << 10).unwrap();
        assert_eq!(f.metadata().unwrap().len(), (1 << 20) + (64 << 10));
        assert!(allocated_bytes(&f).unwrap() >= after_write + (64 << 10));
        // a trim punches the written range out
        serve_plain(FileCall::Falloc, IoOp::Discard, &f, 1 << 20, 64 << 10).unwrap();
        assert_eq!(f.metadata().unwrap().len(), (1 << 20) + (64 << 10));
        assert!(allocated_bytes(&f).unwrap() < after_write + (64 << 10));
    }

    #[test]
    fn ftruncate_sets_the_size_and_refuses_reads() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        serve_plain(FileCall::Ftruncate, IoOp::Write, &f, 12288, 4096).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 12288);
        serve_plain(FileCall::Ftruncate, IoOp::Write, &f, 4096, 4096).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4096);
        let e = serve_plain(FileCall::Ftruncate, IoOp::Read, &f, 0, 4096).unwrap_err();
        assert_eq!(e, libc::EINVAL);
    }
}
