//! The backend contract: "submit this IO; give me completions until this
//! deadline; what time is it".

use blkqos_core::{Instant, Io, IoId};

/// One finished IO as a backend reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The IO that finished: the [`Io::id`] it was submitted with.
    pub id: IoId,
    /// 0 on success, else a positive errno (EIO = 5, ...).
    pub error: i32,
    /// Bytes transferred.
    pub bytes: u64,
    /// Completion time.
    pub at: Instant,
    /// When the submit call that handed the IO to the kernel returned: a
    /// real backend's `io_uring_enter`, or its hand-off to a worker thread
    /// (fio's `issue_time`, the end of `slat`). None: the driver's issue
    /// time stands (the simulator models the call, `HostModel::submit_ns`).
    pub issued: Option<Instant>,
    /// When the device started the request, if later than its submission
    /// to the backend: a request the device held (null_blk's stopped
    /// queue staged it until its worker dispatched it, the kernel's
    /// `blk_mq_start_request` and `block_rq_issue`). None: at submission.
    pub dispatched: Option<Instant>,
}

/// What the driver needs from a device backend: the simulator's device
/// model and the real engine's io_uring and thread-pool backends implement
/// it. The [crate example](crate#example) implements a backend that
/// completes every IO at once.
pub trait Backend {
    /// Current time (virtual in the simulator).
    fn now(&self) -> Instant;
    /// Device request slots (`nr_requests`): IOs beyond it wait for a slot.
    fn nr_requests(&self) -> u32;
    /// Capacity in bytes of the target (file or device).
    fn capacity_bytes(&self) -> u64;
    /// Largest request the device takes (`queue/max_sectors_kb`): the
    /// driver splits longer reads and writes after blk-throttle, as the
    /// block layer does. `u64::MAX` (the default): never split here.
    fn max_io_bytes(&self) -> u64 {
        u64::MAX
    }
    /// A buffered job's write of `len` bytes at `offset` was acknowledged
    /// by the page-cache model: a backend that keeps data (the real
    /// engine's userspace write-back buffer) copies the job's bytes now;
    /// its writeback IOs (`IoFlags::WRITEBACK`) carry them later. The
    /// simulator keeps no data.
    fn buffer_write(&mut self, _offset: u64, _len: u64) {}
    /// Most segments in one request (`queue/max_segments`): a bio merges
    /// into a request only if the sum stays within it. `u32::MAX`: no limit.
    fn max_segments(&self) -> u32 {
        u32::MAX
    }
    /// Does the driver merge adjacent bios of one submit call into one
    /// request (the block layer's plug merge)? Only a backend that keeps
    /// no data can: the real engine submits each IO to the kernel, which
    /// merges below it.
    fn plug_merges(&self) -> bool {
        false
    }
    /// Start serving `io` at `now` (it holds a request slot).
    fn submit(&mut self, io: &Io, now: Instant);
    /// Wait until at least one completion is available or `deadline` is
    /// reached, whichever is first, and append completions to `out`.
    /// With nothing in flight and no deadline it returns at once.
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>);
    /// IOs currently being served.
    fn in_flight(&self) -> usize;
    /// CPU time the last [`Backend::submit`] kept the submitting context
    /// busy after the request started (a memory-backed device's copy of
    /// its data, made in the task that issues it); taken once, 0: none.
    fn take_submit_ns(&mut self) -> u64 {
        0
    }
    /// Until when the backend's own work keeps the host's only CPU, on
    /// which the jobs' processes run ([`crate::HostModel::cpus`]): a job
    /// waiting for that CPU gets it then. None: no such work.
    fn cpu_busy_until(&self) -> Option<Instant> {
        None
    }
    /// [`Backend::wait`] for a backend whose completions depend on what
    /// the submitters' CPUs run: `running(i)` says whether submitter `i`
    /// (the [`blkqos_core::Submitter`] of its IOs, a job's index) runs on
    /// its CPU until this wait returns (it is inside a submit call).
    fn wait_running(
        &mut self,
        deadline: Option<Instant>,
        out: &mut Vec<Completion>,
        running: &dyn Fn(u32) -> bool,
    ) {
        let _ = running;
        self.wait(deadline, out);
    }
}
