//! blkqos-driver: the one driver loop that runs jobs through the controller
//! stack onto a backend — the simulator or the real engine.
//!
//! ```text
//!  Job state machines ──Issue──> ControllerStack ──Ready──> RequestQueue ──> Backend
//!        ^   (fio semantics)       (io.max, iocost)        (nr_requests)    (sim | io_uring)
//!        └────────── reap <── per-job completion ring <── completions ──────────┘
//! ```
//!
//! The loop owns no clock: it asks the backend for `now`, and tells it the
//! earliest deadline (controller timer, job sleep, sample point) to wait for.
//!
//! * [`run`](mod@run): the loop itself ([`run()`](fn@run) runs
//!   [`run::JobSetup`]s through a
//!   [`blkqos_core::ControllerStack`] on a [`Backend`]).
//! * [`backend`]: the contract a device backend implements.
//! * [`blk`]: the device request queue (`nr_requests` slots).
//! * [`account`]: `/proc/diskstats` accounting, with the kernel's
//!   generations of busy-time (`io_ticks`) accounting.
//! * [`lathist`]: per-device and per-group latency histograms.
//! * [`pagecache`]: the page cache and writeback of buffered jobs.
//! * [`slab`]: preallocated slots for in-flight IOs.
//!
//! # Example
//!
//! The smallest complete run: a backend that completes every IO the
//! moment it is submitted, on a fake clock that only moves when the
//! driver sleeps until a deadline, and one fio job (`rw=read`, 4 KiB
//! blocks over a 64 KiB region) through a stack with no controllers:
//!
//! ```
//! use blkqos_core::{ControllerStack, GroupId, Instant, Io};
//! use blkqos_driver::run::JobSetup;
//! use blkqos_driver::{Backend, Completion, RunOptions};
//! use blkqos_workload::{Ddir, JobSpec};
//!
//! /// A device with no service time: every IO completes when submitted.
//! #[derive(Default)]
//! struct Instantaneous {
//!     now: Instant,
//!     done: Vec<Completion>,
//! }
//!
//! impl Backend for Instantaneous {
//!     fn now(&self) -> Instant {
//!         self.now
//!     }
//!     fn nr_requests(&self) -> u32 {
//!         64
//!     }
//!     fn capacity_bytes(&self) -> u64 {
//!         1 << 20
//!     }
//!     fn submit(&mut self, io: &Io, now: Instant) {
//!         self.done.push(Completion {
//!             id: io.id,
//!             error: 0,
//!             bytes: io.len,
//!             at: now,
//!             issued: None,
//!             dispatched: None,
//!         });
//!     }
//!     fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
//!         if self.done.is_empty() {
//!             // nothing in flight: sleep until the deadline
//!             if let Some(d) = deadline {
//!                 self.now = self.now.max(d);
//!             }
//!         }
//!         out.append(&mut self.done);
//!     }
//!     fn in_flight(&self) -> usize {
//!         self.done.len()
//!     }
//! }
//!
//! let region_len = 64 << 10;
//! let setup = JobSetup {
//!     spec: JobSpec::new("seqread"), // fio's defaults: rw=read, bs=4k
//!     clone: 0,
//!     group: GroupId::ROOT,
//!     region_start: 0,
//!     region_len,
//!     seed: 1,
//!     files: Vec::new(),
//! };
//! let mut backend = Instantaneous::default();
//! let mut stack = ControllerStack::pass_through();
//! let result =
//!     blkqos_driver::run(&mut backend, &mut stack, vec![setup], &RunOptions::default())
//!         .unwrap();
//!
//! let job = &result.jobs[0];
//! assert_eq!(job.error, 0);
//! assert_eq!(job.stats.dirs[Ddir::Read].total_ios, 16); // 64 KiB / 4 KiB
//! assert_eq!(result.disk.ios[0], 16); // diskstats: 16 reads completed
//! assert_eq!(result.disk.sectors[0], region_len / 512);
//! ```

#![warn(missing_docs)]

pub mod account;
pub mod backend;
pub mod blk;
pub mod lathist;
pub mod pagecache;
pub mod run;
pub mod slab;

pub use account::{DiskStats, TicksMode};
pub use backend::{Backend, Completion};
pub use lathist::{LatDist, LatHists};
pub use pagecache::{PageCacheConfig, PageCacheReport, WritebackMode};
pub use run::{
    run, HostModel, JobResult, RequestRecord, RunError, RunOptions, RunResult, RunSink, SharedSink,
    MAX_DISKSTATS_SNAPSHOTS, MAX_PASSES_PER_INSTANT,
};
