//! The fallback backend: a pool of threads doing `pread`/`pwrite`/`fsync`/
//! `fallocate`, for kernels (or sandboxes) without io_uring.
//!
//! Same contract as the io_uring backend: `submit` queues, `wait` hands the
//! queued IOs to the workers (stamping them with the time the hand-off
//! returned: their `slat` ends there) and blocks on the completion channel until the
//! first completion or the deadline (`recv_timeout`: a futex sleep, no
//! spinning), drains every completion there is, and stamps the batch with
//! one clock read. A slot's buffer travels to the worker and back inside the
//! request and completion messages (ownership, no sharing); the channels
//! are bounded (`sync_channel`, array-backed), so no IO allocates.
//!
//! Queue depth is real up to the number of workers: `min(depth, 64)`.

use crate::buf::AlignedBuf;
use crate::common::{Accepted, Core, EngineStats};
use crate::target::{Target, TargetInfo};
use crate::{sys, EngineOptions};
use blkqos_core::{Instant, Io, IoOp};
use blkqos_driver::{Backend, Completion};
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Most worker threads a pool starts.
pub const MAX_WORKERS: u32 = 64;

struct Req {
    slot: u32,
    /// Index of the open file.
    fd: u32,
    op: IoOp,
    /// The IO's priority: the worker takes it with `ioprio_set` before
    /// the call (a thread's priority applies to its synchronous IO).
    ioprio: u16,
    offset: u64,
    len: u64,
    buf: AlignedBuf,
}

struct Done {
    slot: u32,
    /// Bytes, or -errno.
    res: i64,
    buf: AlignedBuf,
}

/// Drives IO with a thread pool against one target, or several files.
pub struct ThreadsBackend {
    info: TargetInfo,
    core: Core,
    nr_requests: u32,
    /// A slot's buffer is `None` while a worker has it.
    bufs: Vec<Option<AlignedBuf>>,
    /// Slots filled by `submit`, handed to the workers at the next `wait`.
    pending: Vec<u32>,
    tx: Option<SyncSender<Req>>,
    rx: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    /// Requests with a worker (sent, not yet received back).
    outstanding: usize,
}

fn errno_of(e: &std::io::Error) -> i64 {
    -i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

fn serve(file: &File, req: &mut Req) -> i64 {
    match req.op {
        IoOp::Read => {
            let n = req.len as usize;
            match file.read_at(&mut req.buf.as_mut_slice()[..n], req.offset) {
                Ok(b) => b as i64,
                Err(e) => errno_of(&e),
            }
        }
        IoOp::Write => {
            let n = req.len as usize;
            match file.write_at(&req.buf.as_slice()[..n], req.offset) {
                Ok(b) => b as i64,
                Err(e) => errno_of(&e),
            }
        }
        IoOp::Flush => match file.sync_all() {
            Ok(()) => 0,
            Err(e) => errno_of(&e),
        },
        IoOp::Discard => {
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            match sys::fallocate(file.as_fd(), mode, req.offset, req.len) {
                Ok(()) => 0,
                Err(e) => errno_of(&e),
            }
        }
    }
}

fn worker(files: Arc<Vec<File>>, rx: Arc<Mutex<Receiver<Req>>>, tx: SyncSender<Done>) {
    // the priority the thread has (it starts with the engine thread's)
    let mut ioprio = None;
    loop {
        let req = {
            let guard = rx.lock().unwrap_or_else(|p| p.into_inner());
            guard.recv()
        };
        let Ok(mut req) = req else {
            return; // backend dropped
        };
        let file = &files[req.fd as usize];
        let res = match (ioprio, req.ioprio) {
            (Some(have), want) if have == want => serve(file, &mut req),
            (None, 0) => serve(file, &mut req),
            (_, want) => match sys::set_thread_ioprio(want) {
                Ok(()) => {
                    ioprio = Some(want);
                    serve(file, &mut req)
                }
                Err(e) => errno_of(&e),
            },
        };
        let done = Done {
            slot: req.slot,
            res,
            buf: req.buf,
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

impl ThreadsBackend {
    /// Count time from `epoch` ([`crate::RealBackend::set_epoch`]).
    pub(crate) fn set_epoch(&mut self, epoch: std::time::Instant) {
        self.core.clock.set_epoch(epoch);
    }
    pub(crate) fn new(target: Target, opts: &EngineOptions) -> Self {
        let enotty = opts.fio_trims && target.info.kind != crate::TargetKind::BlockDevice;
        Self::with_files(target.info, vec![target.file], None, vec![enotty], opts)
    }

    /// A pool over several open files, IOs routed by `router`; `info`
    /// describes the run's address space.
    pub(crate) fn with_files(
        info: TargetInfo,
        files: Vec<File>,
        router: Option<crate::route::Router>,
        trim_enotty: Vec<bool>,
        opts: &EngineOptions,
    ) -> Self {
        let depth = opts.depth;
        let align = info.buffer_align();
        let bufs: Vec<Option<AlignedBuf>> = (0..depth)
            .map(|i| {
                let mut b = AlignedBuf::zeroed(opts.max_io as usize, align);
                crate::pattern::fill(b.as_mut_slice(), u64::from(i) * opts.max_io);
                Some(b)
            })
            .collect();
        let (tx, req_rx) = mpsc::sync_channel::<Req>(depth as usize);
        let (done_tx, rx) = mpsc::sync_channel::<Done>(depth as usize);
        let req_rx = Arc::new(Mutex::new(req_rx));
        let files = Arc::new(files);
        let workers = (0..depth.min(MAX_WORKERS))
            .map(|i| {
                let (files, req_rx, done_tx) = (files.clone(), req_rx.clone(), done_tx.clone());
                std::thread::Builder::new()
                    .name(format!("blkqos-io-{i}"))
                    .spawn(move || worker(files, req_rx, done_tx))
                    .expect("spawn an IO worker thread")
            })
            .collect();
        ThreadsBackend {
            info,
            core: Core::new(depth, opts.max_io, opts.verify)
                .with_write_fill(opts.write_fill.clone())
                .with_fio_verify(&opts.fio_verify)
                .with_router(router)
                .with_trim_refusals(trim_enotty),
            nr_requests: depth,
            bufs,
            pending: Vec::with_capacity(depth as usize),
            tx: Some(tx),
            rx,
            workers,
            outstanding: 0,
        }
    }

    /// What the target is and how it was opened.
    pub fn target(&self) -> &TargetInfo {
        &self.info
    }

    /// Turn on the userspace write-back buffer with this store.
    pub fn attach_store(&mut self, store: crate::wbuf::PageStore) {
        self.core.store = Some(store);
    }
    /// Write what the write-back buffer still holds straight to the
    /// target ([`crate::wbuf::PageStore::write_out`]); None: no buffer.
    pub fn write_out_store(&mut self) -> Option<std::io::Result<(u64, u64)>> {
        let path = self.target().path.clone();
        self.core.write_out_store(&path)
    }
    /// The write-back buffer's counters and pages held, if it is on.
    pub fn store_stats(&self) -> Option<(crate::wbuf::StoreStats, usize)> {
        self.core.store.as_ref().map(|s| (s.stats, s.len()))
    }
    /// What the backend did so far: IOs, completions, batches, syscalls.
    pub fn stats(&self) -> EngineStats {
        self.core.stats
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Hand every pending slot to the workers, and stamp them with the
    /// time the hand-off returned: the thread pool's submit call (`slat`
    /// ends there, as POSIX AIO's `aio_read` returns once glibc's thread
    /// pool has the request; fio's `posixaio` engine counts it so).
    fn dispatch(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.core.stats.submit_calls += 1;
        let Some(tx) = &self.tx else { return };
        for &s in &self.pending {
            let sl = self.core.slots[s as usize];
            let mut buf = self.bufs[s as usize].take().expect("slot buffer at home");
            let op = sl.op.expect("filled slot");
            if op == IoOp::Write {
                self.core.prepare_write(s, buf.as_mut_slice());
            }
            let req = Req {
                slot: s,
                fd: sl.fd,
                op,
                ioprio: sl.ioprio,
                offset: sl.offset,
                len: sl.len,
                buf,
            };
            // capacity = depth ≥ outstanding: never blocks; workers only
            // exit when `tx` is dropped, so sending cannot fail
            if tx.send(req).is_ok() {
                self.outstanding += 1;
            }
        }
        let at = self.core.clock.read();
        self.core.mark_issued(&self.pending, at);
        self.pending.clear();
    }

    fn take(&mut self, mut d: Done, out: &mut Vec<Completion>) {
        self.outstanding -= 1;
        let s = d.slot;
        self.core.finish(s, d.res, d.buf.as_mut_slice(), out);
        self.bufs[s as usize] = Some(d.buf);
    }
}

impl Backend for ThreadsBackend {
    fn now(&self) -> Instant {
        self.core.clock.now()
    }

    fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    fn capacity_bytes(&self) -> u64 {
        self.info.capacity
    }

    fn max_io_bytes(&self) -> u64 {
        self.info.max_io_bytes
    }

    fn buffer_write(&mut self, offset: u64, len: u64) {
        if let Some(s) = &mut self.core.store {
            s.write(offset, len);
        }
    }

    fn submit(&mut self, io: &Io, _now: Instant) {
        if let Accepted::Slot(s) = self.core.accept(io) {
            self.pending.push(s);
        }
    }

    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let start = out.len();
        self.dispatch();
        self.core.drain_ready(out);
        let mut first = match self.rx.try_recv() {
            Ok(d) => Some(d),
            Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => None,
        };
        if first.is_none() && out.len() == start && (deadline.is_some() || self.outstanding > 0) {
            match deadline {
                None => {
                    self.core.stats.sleeps += 1;
                    first = self.rx.recv().ok();
                }
                Some(d) => {
                    let now = self.core.clock.read();
                    if d > now {
                        self.core.stats.sleeps += 1;
                        let t = std::time::Duration::from_nanos((d - now).0);
                        first = match self.rx.recv_timeout(t) {
                            Ok(d) => Some(d),
                            Err(RecvTimeoutError::Timeout)
                            | Err(RecvTimeoutError::Disconnected) => None,
                        };
                    }
                }
            }
        }
        if let Some(d) = first {
            self.take(d, out);
            while let Ok(d) = self.rx.try_recv() {
                self.take(d, out);
            }
        }
        let at = self.core.clock.read_batch();
        self.core.close_batch(out, start, at);
        while let Some((s, _io)) = self.core.next_overflow() {
            self.pending.push(s);
        }
    }

    fn in_flight(&self) -> usize {
        self.core.in_flight()
    }
}

impl Drop for ThreadsBackend {
    fn drop(&mut self) {
        // closing the request channel ends each worker after its current IO
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
