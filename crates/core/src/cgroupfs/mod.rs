//! The cgroupfs layer: knob files as written to `/sys/fs/cgroup`
//! ([`file`](mod@file)) and a device's controller stack built from timed writes
//! ([`stack`]: [`ControllerStack::from_writes`](crate::ControllerStack::from_writes)).
//! The simulator, the real engine and an embedder use it alike. What every
//! knob line shares (the device, the error classes) is [`crate::knob_line`],
//! below the controllers that parse their own lines.

pub mod file;
pub mod stack;

pub use crate::knob_line::{split_dev, KnobError};
pub use file::{split_target, KnobFile};
pub use stack::{
    CgroupfsError, ControllerOptions, DeviceInfo, KnobWrite, ThrottleChoice, VALID_HZ,
};
