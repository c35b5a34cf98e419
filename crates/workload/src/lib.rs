//! blkqos-workload: fio's job semantics as a sans-IO state machine.
//!
//! * [`spec`]: [`JobSpec`], one typed fio job.
//! * [`job`]: [`Job`], the state machine that decides, given `now`, what one
//!   job clone does next (issue an IO, wait for a completion, sleep until a
//!   time, stop) with fio 3.33's real behaviour: absolute rate schedules per
//!   direction, drains before rate sleeps and thinktime, `thinktime_blocks`,
//!   `time_based`, `ramp_time`, random maps, `rwmixread`.
//! * [`stats`]: per-job statistics as fio keeps them.
//! * [`steadystate`]: fio's steady-state detection.
//! * [`iolog`]: fio's bw/iops/latency sample logs.

pub mod ddir;
pub mod fio_rand;
pub mod histlog;
pub mod iolog;
pub mod job;
pub mod prio;
pub mod rng;
pub mod spec;
pub mod spec_cpu;
pub mod spec_engine;
pub mod spec_ext;
pub mod spec_run;
pub mod spec_submit;
pub mod spec_verify;
pub mod spec_zone;
pub mod stats;
pub mod steadystate;
pub mod zbd;

pub use ddir::Ddir;
pub use job::{FailedOp, Job, JobAction, JobFailure, JobIo};
pub use spec::{IoEngine, JobSpec, PerDir, RateProcess, RwMode, SizeSpec, UnifiedRw};
pub use stats::{DirStats, JobStats};
