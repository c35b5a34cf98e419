//! blkqos-core: the vocabulary every other blkqos crate speaks.
//!
//! * [`time`]: nanosecond [`Instant`] / [`Duration`] newtypes. Nothing in this
//!   crate reads a clock: time is always an argument.
//! * [`io`]: what an IO is ([`Io`], [`IoOp`], [`Dir`], [`GroupId`], [`DevId`]).
//! * [`controller`]: the sans-IO controller contract and the [`ControllerStack`]
//!   that chains controllers in the kernel's order (blk-throttle, then rq-qos).
//! * [`cgroup`]: the cgroup tree a scenario declares (paths, parents).
//! * [`hist`]: fio's latency histogram (64 buckets per power of two) and its
//!   percentile rule, bit-for-bit.
//! * [`math`]: the kernel's integer helpers, named after their rounding.

pub mod cgroup;
pub mod cgroupfs;
pub mod controller;
pub mod hist;
pub mod io;
pub mod math;
pub mod time;

pub use cgroup::{CgroupTree, GroupId};
pub use controller::{
    Controller, ControllerStack, GroupLive, HeldLive, IocostDeviceLive, IocostGroupLive, LiveState,
    PassThrough, Verdict, Violation,
};
pub use hist::LatHist;
pub use io::{DevId, Dir, Io, IoFlags, IoId, IoOp};
pub use time::{Duration, Instant};
pub mod iocost;
pub mod throttle;
