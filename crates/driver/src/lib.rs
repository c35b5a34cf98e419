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
    MAX_DISKSTATS_SNAPSHOTS,
};
