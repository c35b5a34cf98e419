//! The cgroupfs layer: knob files as written to `/sys/fs/cgroup`
//! ([`file`](mod@file)), the device and error classes every knob line shares
//! ([`line`](mod@line)), and a device's controller stack built from timed writes
//! ([`stack`]: [`ControllerStack::from_writes`](crate::ControllerStack::from_writes)).
//! The simulator, the real engine and an embedder use it alike.

pub mod file;
pub mod line;
pub mod stack;

pub use file::{split_target, KnobFile};
pub use line::{split_dev, KnobError};
pub use stack::{
    CgroupfsError, ControllerOptions, DeviceInfo, KnobWrite, ThrottleChoice, VALID_HZ,
};
