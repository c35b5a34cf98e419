//! blkqos-core: the vocabulary every other blkqos crate speaks.
//!
//! * [`time`]: nanosecond [`Instant`] / [`Duration`] newtypes and the
//!   kernel's tick counter, [`Jiffies`]. Nothing in this crate reads a
//!   clock: time is always an argument.
//! * [`io`]: what an IO is ([`Io`], [`IoOp`], [`Dir`], [`GroupId`], [`DevId`]).
//! * [`controller`]: the sans-IO controller contract and the [`ControllerStack`]
//!   that chains controllers in the kernel's order (blk-throttle, then rq-qos).
//! * [`cgroup`]: the cgroup tree a scenario declares (paths, parents).
//! * [`hist`]: fio's latency histogram (64 buckets per power of two) and its
//!   percentile rule, bit-for-bit.
//! * [`math`]: the kernel's integer helpers, named after their rounding.
//! * [`cgroupfs`]: knob files (`io.max`, `io.weight`, `io.cost.*`) and the
//!   device stack built from timed writes to them.
//! * [`throttle`] and [`iocost`]: the controllers, blk-throttle and
//!   blk-iocost as Linux implements them.
//!
//! # Example
//!
//! Two groups on device `8:0`, `/cgA` limited to 100 read IOs/s by an
//! `io.max` write before the run; one 4 KiB read from `/cgA` at time 0
//! fits the limit and goes straight to the device queue:
//!
//! ```
//! use blkqos_core::cgroupfs::{ControllerOptions, DeviceInfo, KnobFile, KnobWrite};
//! use blkqos_core::controller::StackVerdict;
//! use blkqos_core::{CgroupTree, ControllerStack, DevId, Instant, Io, IoFlags, IoId, IoOp};
//!
//! let mut tree = CgroupTree::new();
//! let a = tree.ensure("/cgA").unwrap();
//! let b = tree.ensure("/cgB").unwrap();
//! assert_eq!(tree.len(), 3); // the root, /cgA and /cgB
//! assert_eq!(tree.parent(b), tree.parent(a));
//!
//! let device = DeviceInfo {
//!     dev: DevId::new(8, 0),
//!     rotational: false,
//!     nr_requests: 64,
//! };
//! let writes = [KnobWrite {
//!     at_ns: 0, // before the run
//!     cgroup: "/cgA".to_string(),
//!     knob: KnobFile::IoMax,
//!     value: "8:0 riops=100".to_string(),
//!     origin: "example:1".to_string(),
//! }];
//! let mut stack =
//!     ControllerStack::from_writes(&ControllerOptions::default(), &tree, device, &writes)
//!         .unwrap();
//! assert_eq!(stack.stages().next().unwrap().name(), "throttle");
//!
//! let mut io = Io {
//!     id: IoId(1),
//!     submitter: blkqos_core::Submitter(0), // who submitted it: opaque to the controllers
//!     group: a,
//!     op: IoOp::Read,
//!     flags: IoFlags::default(),
//!     offset: 0,
//!     len: 4096,
//!     submitted_at: Instant::ZERO,
//!     cost_vtime: 0,
//!     ioprio: 0, // no IO priority of its own
//! };
//! let verdict = stack.submit(&mut io, Instant::ZERO);
//! assert_eq!(verdict, StackVerdict::Ready);
//! assert_eq!(stack.held(), 0);
//! // io.stat counts the IO where the kernel does, as it clears blk-throttle
//! assert_eq!(stack.iostat(a).ios, [1, 0, 0]);
//! ```

#![warn(missing_docs)]

pub mod cgroup;
pub mod cgroupfs;
pub mod controller;
pub mod hist;
pub mod io;
pub mod knob_line;
pub mod math;
pub mod time;

pub use cgroup::{CgroupTree, GroupId, RemoveGroupError};
pub use controller::{
    Controller, ControllerStack, GroupLive, HeldLive, IocostDeviceLive, IocostGroupLive, IostatKey,
    IostatValue, LiveState, PassThrough, Verdict, Violation,
};
pub use hist::LatHist;
pub use io::{DevId, Dir, Io, IoFlags, IoId, IoOp, Submitter};
pub use time::{Duration, Instant, Jiffies};
pub mod iocost;
pub mod throttle;
pub mod wbt;
