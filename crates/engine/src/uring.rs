//! The io_uring backend.
//!
//! * `submit` fills a slot and queues its SQE in the submission ring: no
//!   syscall, no allocation.
//! * `wait` submits every queued SQE in one `io_uring_enter` that does not
//!   wait, and stamps those IOs with the time it returned (their `slat` ends
//!   there, as fio's `fio_ioring_commit` submits, then `fio_ioring_queued`
//!   stamps `issue_time`). If no completion is there yet, a second
//!   `io_uring_enter` waits for the first one, with the caller's deadline
//!   as its timeout (`IORING_ENTER_EXT_ARG`, Linux 5.11+): a throttled IO
//!   is released on time and nothing spins. Then it reaps every CQE that is
//!   there, reads the clock once, and stamps the whole batch with it.
//! * Buffers: one aligned buffer per slot, registered with the ring
//!   (`READ_FIXED`/`WRITE_FIXED`) and the target (or each file of a run
//!   over several, [`crate::files`]) registered as a fixed file, when the
//!   kernel allows it; plain `READ`/`WRITE` on the fds otherwise.
//! * Flush is `IORING_OP_FSYNC`, discard is `IORING_OP_FALLOCATE` with
//!   `PUNCH_HOLE | KEEP_SIZE` (a block device zeroes/discards the range).

use crate::buf::AlignedBuf;
use crate::common::{Accepted, Core, EngineStats};
use crate::target::{Target, TargetInfo};
use crate::{EngineError, EngineOptions};
use blkqos_core::{Instant, Io, IoOp};
use blkqos_driver::{Backend, Completion};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Drives IO with io_uring against one target, or several files.
pub struct UringBackend {
    // Field order matters: the ring is dropped (and, in `Drop`, drained)
    // before the buffers it may reference.
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    /// The open files: the target, or each file of a run of several
    /// (fixed file `i` when registered).
    files: Vec<File>,
    info: TargetInfo,
    core: Core,
    nr_requests: u32,
    fixed_file: bool,
    fixed_bufs: bool,
    /// SQEs pushed and not yet reaped.
    in_kernel: usize,
    /// Slots whose SQEs are queued in the ring and not yet submitted, in
    /// queue order.
    unsent: Vec<u32>,
    /// Per slot: bytes its read or write moved in earlier, short parts.
    short_done: Vec<u64>,
    /// Per open file: a character device or FIFO, where a read or write can
    /// come back short with more to do (a pending signal or task work cuts
    /// `/dev/zero`'s copy loop) and the kernel does not retry it itself.
    char_like: Vec<bool>,
    /// Slots whose short part is reaped, to issue the rest of.
    rest: Vec<u32>,
}

/// Build an SQE against open file `$i`, as fixed file `$i` or as a
/// plain fd.
macro_rules! with_fd {
    ($self:ident, $i:expr, |$fd:ident| $e:expr) => {
        if $self.fixed_file {
            let $fd = types::Fixed($i);
            $e
        } else {
            let $fd = types::Fd($self.files[$i as usize].as_raw_fd());
            $e
        }
    };
}

/// A ring with fio's `sqthread_poll` / `hipri` flags (`fio_ioring_queue_init`:
/// `IORING_SETUP_SQPOLL` with `sq_thread_idle`, `IORING_SETUP_SQ_AFF` for
/// `sqthread_poll_cpu`, `IORING_SETUP_IOPOLL`).
fn polled_ring(entries: u32, opts: &EngineOptions) -> io::Result<IoUring> {
    let mut b = IoUring::builder();
    b.setup_cqsize(entries * 2);
    if let Some(cpu) = opts.sqpoll {
        // fio's default sq_thread_idle (ms)
        b.setup_sqpoll(1000);
        if let Some(c) = cpu {
            b.setup_sqpoll_cpu(c);
        }
    }
    if opts.iopoll {
        b.setup_iopoll();
    }
    b.build(entries)
}

/// The run's ring, `opts.depth` slots rounded up to a power of two (at
/// least 8): fio's polled ring when asked for, else a plain one
/// (cooperative task running when the kernel has it); refused when
/// `BLKQOS_NO_IO_URING` is set or the kernel lacks timed waits.
fn open_ring(opts: &EngineOptions) -> Result<IoUring, EngineError> {
    if std::env::var_os("BLKQOS_NO_IO_URING").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err(EngineError::UringUnavailable {
            error: io::Error::other("disabled by BLKQOS_NO_IO_URING"),
        });
    }
    let entries = opts.depth.next_power_of_two().max(8);
    let unavailable = |error: io::Error| EngineError::UringUnavailable { error };
    let ring = if opts.sqpoll.is_some() || opts.iopoll {
        // fio's ring flags: no quiet fallback to a plain ring
        polled_ring(entries, opts).map_err(|error| EngineError::RingSetup { error })?
    } else {
        IoUring::builder()
            .setup_cqsize(entries * 2)
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(entries * 2).build(entries))
            .map_err(unavailable)?
    };
    if !ring.params().is_feature_ext_arg() {
        return Err(unavailable(io::Error::other(
            "the kernel's io_uring lacks IORING_FEAT_EXT_ARG (timed waits, Linux 5.11+)",
        )));
    }
    Ok(ring)
}

/// One aligned buffer of `opts.max_io` bytes per slot, filled with the
/// run's pattern.
fn slot_buffers(info: &TargetInfo, opts: &EngineOptions) -> Vec<AlignedBuf> {
    let align = info.buffer_align();
    let mut bufs: Vec<AlignedBuf> = (0..opts.depth)
        .map(|_| AlignedBuf::zeroed(opts.max_io as usize, align))
        .collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        // not zeros (a device may compress or dedupe them), not a signature
        crate::pattern::fill(b.as_mut_slice(), (i as u64) * opts.max_io);
    }
    bufs
}

/// A character device or FIFO (see [`UringBackend`]'s `char_like`).
fn is_char_like(f: &File) -> bool {
    f.metadata().is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_char_device() || m.file_type().is_fifo()
    })
}

impl UringBackend {
    /// Count time from `epoch` ([`crate::RealBackend::set_epoch`]).
    pub(crate) fn set_epoch(&mut self, epoch: std::time::Instant) {
        self.core.clock.set_epoch(epoch);
    }
    pub(crate) fn new(target: Target, opts: &EngineOptions) -> Result<Self, EngineError> {
        let enotty = opts.fio_trims && target.info.kind != crate::TargetKind::BlockDevice;
        Self::with_files(target.info, vec![target.file], None, vec![enotty], opts)
    }

    /// A ring over several open files (`files[i]` is fixed file `i`),
    /// IOs routed by `router`; `info` describes the run's address space.
    pub(crate) fn with_files(
        info: TargetInfo,
        files: Vec<File>,
        router: Option<crate::route::Router>,
        trim_enotty: Vec<bool>,
        opts: &EngineOptions,
    ) -> Result<Self, EngineError> {
        let ring = open_ring(opts)?;
        let depth = opts.depth;
        let mut bufs = slot_buffers(&info, opts);
        let mut fixed_bufs = false;
        if opts.register && depth <= u32::from(u16::MAX) {
            let iovecs: Vec<libc::iovec> = bufs
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_ptr().cast(),
                    iov_len: b.len(),
                })
                .collect();
            // SAFETY: every iovec points into a live buffer owned by
            // `self.bufs`, which outlives the registration: the ring is
            // drained and dropped before the buffers (field order, `Drop`).
            fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        }
        let fds: Vec<_> = files.iter().map(AsRawFd::as_raw_fd).collect();
        let char_like = files.iter().map(is_char_like).collect();
        let fixed_file = opts.register && ring.submitter().register_files(&fds).is_ok();
        Ok(UringBackend {
            ring,
            bufs,
            files,
            info,
            core: Core::new(depth, opts.max_io, opts.verify)
                .with_write_fill(opts.write_fill.clone())
                .with_fio_verify(&opts.fio_verify)
                .with_router(router)
                .with_trim_refusals(trim_enotty),
            nr_requests: depth,
            fixed_file,
            fixed_bufs,
            in_kernel: 0,
            unsent: Vec::with_capacity(depth as usize),
            short_done: vec![0; depth as usize],
            char_like,
            rest: Vec::new(),
        })
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

    /// Buffers and the target are registered with the ring.
    pub fn registered(&self) -> (bool, bool) {
        (self.fixed_bufs, self.fixed_file)
    }

    /// Queue the SQE of the IO in slot `s`; a read or write carries the
    /// IO's priority in `sqe->ioprio` (fio `fio_ioring_prep`), which the
    /// block layer uses instead of the thread's own when it is not 0.
    fn issue(&mut self, s: u32, io: &Io) {
        self.short_done[s as usize] = 0;
        if io.op == IoOp::Write {
            let buf = self.bufs[s as usize].as_mut_slice();
            self.core.prepare_write(s, buf);
        }
        self.issue_part(s, io.op, io.len, io.ioprio, 0);
    }

    /// Queue the SQE for bytes `done..len` of the IO in slot `s` (all of
    /// it when `done` is 0; the rest after a short part otherwise).
    fn issue_part(&mut self, s: u32, op: IoOp, len: u64, ioprio: u16, done: u64) {
        let user_data = u64::from(s);
        // the file and the offset in it (routed when the slot was filled)
        let (f, offset) = {
            let sl = &self.core.slots[s as usize];
            (sl.fd, sl.offset + done)
        };
        let io_len = len;
        let sqe = match op {
            IoOp::Read | IoOp::Write => {
                let idx = s as usize;
                let len = (io_len - done) as u32;
                // SAFETY: `done < io_len <= the slot buffer's length`, so
                // the pointer stays inside the slot's buffer
                let ptr = unsafe { self.bufs[idx].as_mut_ptr().add(done as usize) };
                match (op, self.fixed_bufs) {
                    (IoOp::Read, true) => {
                        with_fd!(self, f, |fd| opcode::ReadFixed::new(fd, ptr, len, s as u16)
                            .offset(offset)
                            .ioprio(ioprio)
                            .build())
                    }
                    (IoOp::Read, false) => with_fd!(self, f, |fd| opcode::Read::new(fd, ptr, len)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build()),
                    (_, true) => {
                        with_fd!(self, f, |fd| opcode::WriteFixed::new(
                            fd, ptr, len, s as u16
                        )
                        .offset(offset)
                        .ioprio(ioprio)
                        .build())
                    }
                    (_, false) => with_fd!(self, f, |fd| opcode::Write::new(fd, ptr, len)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build()),
                }
            }
            IoOp::Flush => with_fd!(self, f, |fd| opcode::Fsync::new(fd).build()),
            IoOp::Discard => with_fd!(self, f, |fd| opcode::Fallocate::new(fd, io_len)
                .offset(offset)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build()),
        };
        self.push(&sqe.user_data(user_data));
        self.unsent.push(s);
    }

    fn push(&mut self, sqe: &squeue::Entry) {
        loop {
            // SAFETY: the SQE's buffer (if any) is slot memory owned by
            // `self.bufs`, untouched until its CQE is reaped; the fd is the
            // target's, open for the ring's life.
            let pushed = unsafe { self.ring.submission().push(sqe) }.is_ok();
            if pushed {
                self.in_kernel += 1;
                return;
            }
            // ring full (only with more than `depth` SQEs queued): flush it
            self.submit_unsent();
        }
    }

    /// Submit the queued SQEs in one `io_uring_enter` that does not wait
    /// (fio's `fio_ioring_commit`), and stamp the IOs it took with the time
    /// it returned: their submit call ends there (`slat`).
    fn submit_unsent(&mut self) {
        if self.ring.submission().is_empty() {
            return;
        }
        self.core.stats.submit_calls += 1;
        let r = self.ring.submitter().submit();
        let at = self.core.clock.read();
        match r {
            Ok(n) => {
                let n = n.min(self.unsent.len());
                self.core.mark_issued(&self.unsent[..n], at);
                self.unsent.drain(..n);
            }
            Err(e) => back_off(&e),
        }
    }

    /// One `io_uring_enter` that waits for `want` completions, at most
    /// `timeout`; it also submits whatever is still queued. Timeouts,
    /// signals and transient resource shortages just return.
    fn enter(&mut self, want: usize, timeout: Option<std::time::Duration>) {
        let r = match timeout {
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
            None => self.ring.submitter().submit_and_wait(want),
        };
        if let Err(e) = r {
            back_off(&e);
        }
    }

    /// Move every available CQE to `out`.
    fn reap(&mut self, out: &mut Vec<Completion>) {
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let s = cqe.user_data() as u32;
            self.in_kernel -= 1;
            let sl = &self.core.slots[s as usize];
            let res = i64::from(cqe.result());
            let done = self.short_done[s as usize];
            // a short part on a character device or FIFO: issue the rest,
            // as fio's sync engines do (backend.c `do_io`: a completed IO
            // with a residual is requeued for it); a regular file or block
            // device the kernel already retried, and 0 bytes is the end
            let rw = matches!(sl.op, Some(IoOp::Read | IoOp::Write));
            if rw && res > 0 && done + (res as u64) < sl.len && self.char_like[sl.fd as usize] {
                self.short_done[s as usize] = done + res as u64;
                self.rest.push(s);
                continue;
            }
            let res = if res >= 0 { res + done as i64 } else { res };
            self.core
                .finish(s, res, self.bufs[s as usize].as_mut_slice(), out);
        }
        drop(cq);
        let mut rest = std::mem::take(&mut self.rest);
        for &s in &rest {
            let sl = self.core.slots[s as usize];
            let op = sl.op.expect("a read or write");
            self.issue_part(s, op, sl.len, sl.ioprio, self.short_done[s as usize]);
        }
        rest.clear();
        self.rest = rest;
    }
}

impl UringBackend {
    /// Sleep in the kernel until the first completion or `deadline`; with
    /// no deadline and nothing in the kernel, return at once.
    fn wait_first(&mut self, deadline: Option<Instant>) {
        match deadline {
            None if self.in_kernel == 0 => {}
            None => {
                self.core.stats.sleeps += 1;
                self.enter(1, None);
            }
            Some(d) => {
                let now = self.core.clock.read();
                if d > now {
                    self.core.stats.sleeps += 1;
                    self.enter(1, Some(std::time::Duration::from_nanos((d - now).0)));
                }
            }
        }
    }
}

/// After a failed `io_uring_enter`: timeouts and signals just return; out
/// of kernel resources, or CQ overflow pending, let completions drain and
/// retry at the next wait; anything else is a misuse of the ring, not an
/// IO error: don't spin.
fn back_off(e: &io::Error) {
    match e.raw_os_error() {
        Some(libc::ETIME) | Some(libc::EINTR) => {}
        Some(libc::EAGAIN) | Some(libc::EBUSY) => {
            std::thread::sleep(std::time::Duration::from_micros(50))
        }
        _ => std::thread::sleep(std::time::Duration::from_millis(1)),
    }
}

impl Backend for UringBackend {
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
            self.issue(s, io);
        }
    }

    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let start = out.len();
        self.submit_unsent();
        // IO still queued (the kernel took part of it): retry at the next
        // wait rather than sleep with it unsubmitted
        let have =
            self.core.has_ready() || !self.ring.completion().is_empty() || !self.unsent.is_empty();
        if !have {
            self.wait_first(deadline);
        }
        self.core.drain_ready(out);
        self.reap(out);
        let at = self.core.clock.read_batch();
        self.core.close_batch(out, start, at);
        // slots freed: queue the IOs that waited for one (sent next wait)
        while let Some((s, io)) = self.core.next_overflow() {
            self.issue(s, &io);
        }
    }

    fn in_flight(&self) -> usize {
        self.core.in_flight()
    }
}

impl Drop for UringBackend {
    fn drop(&mut self) {
        // The kernel may still DMA into slot buffers: wait for every
        // submitted IO before the buffers are freed.
        let mut sink = Vec::new();
        while self.in_kernel > 0 {
            self.enter(1, Some(std::time::Duration::from_millis(100)));
            sink.clear();
            self.reap(&mut sink);
        }
        // The ring itself is torn down asynchronously after its fd closes,
        // and with it the reference of the registered file table: release
        // the target now, so that a block device's O_EXCL claim (or a busy
        // mount) ends when the backend does.
        if self.fixed_file {
            let _ = self.ring.submitter().unregister_files();
        }
    }
}
