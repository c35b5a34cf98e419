//! What both real backends share: the run's clock, the in-flight slots
//! (one preallocated buffer each), the overflow queue, and turning a raw
//! result into a [`Completion`].

use crate::fio_verify::{self, JobState, JobVerify};
use crate::pattern;
use crate::route::Router;
use crate::wbuf::PageStore;
use blkqos_core::{Instant, Io, IoFlags, IoId, IoOp};
use blkqos_driver::Completion;
use std::cell::Cell;
use std::collections::VecDeque;

/// Counters of what a backend did (for benchmarks and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// IOs accepted by `submit`.
    pub submitted: u64,
    /// Completions handed out by `wait`.
    pub completed: u64,
    /// Completions with an error.
    pub errors: u64,
    /// `wait` calls that delivered at least one completion.
    pub batches: u64,
    /// `wait` calls that slept in the kernel (io_uring_enter with a wait,
    /// or a blocking channel receive).
    pub sleeps: u64,
    /// Submission syscalls / dispatches (io_uring_enter calls; for the
    /// thread pool, batches handed to the workers).
    pub submit_calls: u64,
    /// Reads whose data did not match the pattern (`verify`).
    pub verify_failures: u64,
    /// Absolute offset of the first wrong byte of the first verify failure.
    pub first_verify_failure: Option<u64>,
}

/// The run's clock: `CLOCK_MONOTONIC` (`std::time::Instant`) minus the
/// backend's epoch. [`Clock::now`] returns the time of the last completion
/// batch once without reading the clock again (the driver asks for `now`
/// right after `wait`), so a busy loop reads the clock once per batch.
pub(crate) struct Clock {
    epoch: std::time::Instant,
    cached: Cell<Instant>,
    fresh: Cell<bool>,
}

impl Clock {
    pub fn new() -> Self {
        Clock {
            epoch: std::time::Instant::now(),
            cached: Cell::new(Instant::ZERO),
            fresh: Cell::new(false),
        }
    }
    /// Count from `epoch` instead (a run of several backends shares one
    /// clock); never earlier than a time already handed out.
    pub fn set_epoch(&mut self, epoch: std::time::Instant) {
        self.epoch = epoch.min(self.epoch);
    }
    /// Read the clock.
    pub fn read(&self) -> Instant {
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // never backwards, even across the cache
        let t = Instant(ns).max(self.cached.get());
        self.cached.set(t);
        t
    }
    /// Read the clock for a batch: the next `now()` reuses it.
    pub fn read_batch(&self) -> Instant {
        let t = self.read();
        self.fresh.set(true);
        t
    }
    pub fn now(&self) -> Instant {
        if self.fresh.replace(false) {
            self.cached.get()
        } else {
            self.read()
        }
    }
}

/// One in-flight IO's identity, by slot (= buffer) index.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Slot {
    pub id: IoId,
    pub op: Option<IoOp>,
    /// The offset in the IO's file (with several files, the virtual
    /// offset translated by [`crate::route::Router`]).
    pub offset: u64,
    /// The index of the IO's open file (0 with one target).
    pub fd: u32,
    /// The IO's offset in the run's address space (= `offset` with one
    /// target): what tells apart the same offset of two files.
    pub space_offset: u64,
    pub len: u64,
    /// Writeback from the userspace write-back buffer: data from the store.
    pub writeback: bool,
    /// The submitting job ([`blkqos_core::Submitter`]).
    pub submitter: u32,
    /// A read-back from the job's verify log ([`IoFlags::VERIFY_LIST`]).
    pub verify_list: bool,
    /// The IO's priority (`Io::ioprio`).
    pub ioprio: u16,
    /// When the submit call that handed it to the kernel (or a worker)
    /// returned; None until then.
    pub issued: Option<Instant>,
}

/// Where `accept` put an IO.
pub(crate) enum Accepted {
    /// In slot `.0`: issue it.
    Slot(u32),
    /// All slots busy: queued until one frees (more IO than `depth`).
    Queued,
    /// Completed at once with an error (delivered by the next `wait`).
    Rejected,
}

pub(crate) struct Core {
    pub clock: Clock,
    pub slots: Vec<Slot>,
    free: Vec<u32>,
    overflow: VecDeque<Io>,
    /// Completions decided without the kernel, delivered by the next wait.
    ready: Vec<Completion>,
    /// Accepted, not yet handed out.
    in_flight: usize,
    pub max_io: u64,
    pub verify: bool,
    /// [`crate::EngineOptions::write_fill`].
    pub write_fill: Option<Vec<u8>>,
    pub stats: EngineStats,
    /// The userspace write-back buffer's data ([`crate::wbuf`]), if on.
    pub store: Option<PageStore>,
    /// fio's verify format per job ([`crate::EngineOptions::fio_verify`])
    /// and what the engine remembers of its writes.
    fio: Vec<Option<(JobVerify, JobState)>>,
    /// Several files: each IO's file and offset in it.
    router: Option<Router>,
    /// By open file: a trim fails with ENOTTY, as fio's `BLKDISCARD`
    /// ioctl does on anything but a block device
    /// ([`crate::EngineOptions::fio_trims`]).
    trim_enotty: Vec<bool>,
}

impl Core {
    pub fn new(depth: u32, max_io: u64, verify: bool) -> Self {
        let d = depth as usize;
        Core {
            clock: Clock::new(),
            slots: vec![Slot::default(); d],
            // pop() hands out slot 0 first
            free: (0..depth).rev().collect(),
            overflow: VecDeque::with_capacity(d),
            ready: Vec::with_capacity(d),
            in_flight: 0,
            max_io,
            verify,
            write_fill: None,
            stats: EngineStats::default(),
            store: None,
            fio: Vec::new(),
            router: None,
            trim_enotty: Vec::new(),
        }
    }

    /// Trims on open file `i` fail with ENOTTY when `enotty[i]`.
    pub fn with_trim_refusals(mut self, enotty: Vec<bool>) -> Self {
        self.trim_enotty = enotty;
        self
    }

    /// Several files: IOs are routed by `router` ([`crate::route`]).
    pub fn with_router(mut self, router: Option<Router>) -> Self {
        self.router = router;
        self
    }

    /// The open file and the offset in it of `io`, or the errno it fails
    /// with.
    fn route(&self, io: &Io) -> Result<(u32, u64), i32> {
        let (fd, offset) = match &self.router {
            None => (0, io.offset),
            Some(r) => r.route(io.submitter.0, io.offset, io.len)?,
        };
        if io.op == IoOp::Discard && self.trim_enotty.get(fd as usize) == Some(&true) {
            // fio os_trim: ioctl(BLKDISCARD) on a file or character device
            return Err(libc::ENOTTY);
        }
        Ok((fd, offset))
    }

    /// Jobs' writes carry fio's verify headers and their reads are checked
    /// ([`crate::EngineOptions::fio_verify`]).
    pub fn with_fio_verify(mut self, jobs: &[Option<JobVerify>]) -> Self {
        self.fio = jobs
            .iter()
            .map(|j| {
                j.clone().map(|v| {
                    let st = JobState::new(v.thread);
                    (v, st)
                })
            })
            .collect();
        self
    }

    /// Writes carry `fill` ([`crate::EngineOptions::write_fill`]).
    pub fn with_write_fill(mut self, fill: Option<Vec<u8>>) -> Self {
        self.write_fill = fill.filter(|f| !f.is_empty());
        self
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Write what the write-back buffer still holds straight to the target
    /// at `path` ([`PageStore::write_out`]); None: no buffer.
    pub fn write_out_store(
        &mut self,
        path: &std::path::Path,
    ) -> Option<std::io::Result<(u64, u64)>> {
        let store = self.store.as_mut()?;
        Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(|f| store.write_out(&f)),
        )
    }

    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    pub fn accept(&mut self, io: &Io) -> Accepted {
        self.in_flight += 1;
        self.stats.submitted += 1;
        let data = matches!(io.op, IoOp::Read | IoOp::Write);
        let routed = self.route(io);
        if data && (io.len > self.max_io || io.len == 0) || routed.is_err() {
            let error = match routed {
                Err(e) if !(data && (io.len > self.max_io || io.len == 0)) => e,
                _ => libc::EINVAL,
            };
            if let (Some(store), true) = (&mut self.store, io.flags.contains(IoFlags::WRITEBACK)) {
                store.written_back(io.offset, io.len, false);
            }
            self.ready.push(Completion {
                id: io.id,
                error,
                bytes: 0,
                at: Instant::ZERO,
                // refused before any submit call
                issued: None,
                dispatched: None,
            });
            return Accepted::Rejected;
        }
        match self.free.pop() {
            Some(s) => {
                self.fill_slot(s, io);
                Accepted::Slot(s)
            }
            None => {
                self.overflow.push_back(*io);
                Accepted::Queued
            }
        }
    }

    fn fill_slot(&mut self, s: u32, io: &Io) {
        // accepted: it routes
        let (fd, offset) = self.route(io).unwrap_or((0, io.offset));
        self.slots[s as usize] = Slot {
            id: io.id,
            op: Some(io.op),
            offset,
            fd,
            space_offset: io.offset,
            len: io.len,
            writeback: io.flags.contains(IoFlags::WRITEBACK),
            submitter: io.submitter.0,
            verify_list: io.flags.contains(IoFlags::VERIFY_LIST),
            ioprio: io.ioprio,
            issued: None,
        };
    }

    /// The submit call that carried slots `sent` returned at `at` (the
    /// first call's: the rest of a short IO does not move its issue time).
    pub fn mark_issued(&mut self, sent: &[u32], at: Instant) {
        for &s in sent {
            self.slots[s as usize].issued.get_or_insert(at);
        }
    }

    /// A queued IO that can take a free slot now.
    pub fn next_overflow(&mut self) -> Option<(u32, Io)> {
        if self.overflow.is_empty() {
            return None;
        }
        let s = self.free.pop()?;
        let io = self.overflow.pop_front().expect("not empty");
        self.fill_slot(s, &io);
        Some((s, io))
    }

    /// Before a write is issued from slot `s`: writeback takes its data
    /// from the write-back buffer; otherwise stamp the pattern if verifying.
    pub fn prepare_write(&mut self, s: u32, buf: &mut [u8]) {
        let sl = self.slots[s as usize];
        if let Some((v, st)) = self
            .fio
            .get_mut(sl.submitter as usize)
            .and_then(Option::as_mut)
        {
            let now = self.clock.read();
            fill_fio(v, st, &sl, now, &mut buf[..sl.len as usize]);
            return;
        }
        match &mut self.store {
            Some(store) if sl.writeback => store.copy_out(sl.offset, &mut buf[..sl.len as usize]),
            _ if self.verify => pattern::fill(&mut buf[..sl.len as usize], sl.offset),
            _ => {
                if let Some(fill) = &self.write_fill {
                    pattern::repeat(&mut buf[..sl.len as usize], fill);
                }
            }
        }
    }

    /// Slot `s` finished with kernel result `res` (bytes, or -errno); `buf`
    /// is its buffer. Frees the slot; `at` is set by the caller per batch.
    pub fn finish(&mut self, s: u32, res: i64, buf: &mut [u8], out: &mut Vec<Completion>) {
        let sl = self.slots[s as usize];
        self.free.push(s);
        let (mut error, mut bytes) = if res < 0 {
            ((-res) as i32, 0)
        } else {
            (0, res as u64)
        };
        if let Some(store) = &mut self.store {
            if sl.writeback {
                store.written_back(sl.offset, sl.len, error == 0 && bytes == sl.len);
            } else if error == 0 && sl.op == Some(IoOp::Read) {
                let n = (bytes as usize).min(buf.len());
                store.overlay(sl.offset, &mut buf[..n]);
            }
        }
        if error == 0 && sl.op == Some(IoOp::Read) && bytes > 0 {
            let n = (bytes as usize).min(buf.len());
            if let Some((v, st)) = self.fio.get(sl.submitter as usize).and_then(Option::as_ref) {
                if (v.check_all_reads || sl.verify_list) && !check_fio(v, st, &sl, &buf[..n]) {
                    self.stats.verify_failures += 1;
                    self.stats.first_verify_failure.get_or_insert(sl.offset);
                    error = libc::EILSEQ;
                    bytes = 0;
                }
            }
        }
        if error == 0 && self.verify && sl.op == Some(IoOp::Read) && bytes > 0 {
            let n = (bytes as usize).min(buf.len());
            if let Some(bad) = pattern::check(&buf[..n], sl.offset) {
                self.stats.verify_failures += 1;
                self.stats.first_verify_failure.get_or_insert(bad);
                error = libc::EILSEQ;
                bytes = 0;
            }
        }
        out.push(Completion {
            id: sl.id,
            error,
            bytes,
            at: Instant::ZERO,
            issued: sl.issued,
            dispatched: None,
        });
    }

    /// Move the immediate completions to `out`.
    pub fn drain_ready(&mut self, out: &mut Vec<Completion>) {
        out.append(&mut self.ready);
    }

    /// Stamp `out[start..]` with the batch time and account for them.
    pub fn close_batch(&mut self, out: &mut [Completion], start: usize, at: Instant) {
        let batch = &mut out[start..];
        for c in batch.iter_mut() {
            c.at = at;
            if c.error != 0 {
                self.stats.errors += 1;
            }
        }
        let n = batch.len();
        self.in_flight -= n;
        self.stats.completed += n as u64;
        if n > 0 {
            self.stats.batches += 1;
        }
    }
}

/// fio `populate_verify_io_u` for a job's write in `sl`: the next seed and
/// numberio, remembered by offset for the read-back (fio's `io_piece`).
fn fill_fio(v: &JobVerify, st: &mut JobState, sl: &Slot, now: Instant, buf: &mut [u8]) {
    // fio draws a seed only for a random payload (fill_verify_pattern)
    let rand_seed = if v.format.pattern.is_none() {
        st.next_seed()
    } else {
        0
    };
    let numberio = st.writes as u16;
    st.writes += 1;
    st.written.insert(sl.space_offset, (rand_seed, numberio));
    let meta = fio_verify::fill::WriteMeta {
        rand_seed,
        time_sec: (now.0 / 1_000_000_000) as u32,
        time_nsec: (now.0 % 1_000_000_000) as u32,
        thread: v.thread,
        numberio,
    };
    fio_verify::fill::fill_io(&v.format, buf, sl.offset, &meta);
}

/// fio `verify_io_u` on a job's read in `sl`: true when it passes; the
/// failure lines go to stderr as fio writes them.
fn check_fio(v: &JobVerify, st: &JobState, sl: &Slot, data: &[u8]) -> bool {
    let logged = st.written.get(&sl.space_offset).copied();
    let rc = fio_verify::check::ReadCheck {
        file_name: &v.file_name,
        offset: sl.offset,
        // IO_U_F_IN_CUR_DEPTH, plus IO_U_F_VER_LIST for a read-back
        flags: if sl.verify_list { 0x88 } else { 0x8 },
        rand_seed: logged.filter(|_| v.check_seed).map(|(s, _)| s),
        numberio: logged.filter(|_| v.check_numberio).map(|(_, n)| n),
        fatal: v.fatal,
        dump_dir: v.dump_dir.as_deref(),
    };
    match fio_verify::check::check_io(&v.format, data, &rc) {
        Ok(()) => true,
        Err(f) => {
            eprint!("{}", f.lines);
            !f.eilseq
        }
    }
}
