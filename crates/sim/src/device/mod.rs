//! Device models.
//!
//! Every model decides, when an IO starts (it holds one of the device's
//! `nr_requests` slots), when it completes. Models are deterministic given
//! their seed. What each model ignores is stated in its module header.
//!
//! | model   | what it is                                   | key parameters |
//! |---------|----------------------------------------------|----------------|
//! | `null`  | null_blk: fixed completion time, `mbps` cap as null_blk's 20 ms budget ticks | `completion_ns`, `hw_queues`, `queue_depth`, `mbps` |
//! | `ssd`   | NVMe-like: N parallel units, latency = base + size/bandwidth, read/write asymmetry | `channels`, `read_ns`, `write_ns`, `read_mbps`, `write_mbps` |
//! | `cloud` | provisioned disk: IOPS and throughput token buckets (provider IO unit), FIFO; IO waiting for credit released on (jittered) grant ticks; base latency + size at the throughput | `iops`, `mbps`, `io_unit`, `base_us`, `grant_ms`, `grant_jitter_pct`, `burst_ms` |
//! | `hdd`   | one actuator: seek (√distance) + rotation + transfer | `rpm`, `seek_min_ns`, `seek_max_ns`, `mbps` |

mod cloud;
mod hdd;
mod null;
mod spec;
mod ssd;

pub use cloud::Cloud;
pub use hdd::Hdd;
pub use null::NullBlk;
pub use spec::{parse_size, DeviceSpec, ModelKind, SpecError};
pub use ssd::Ssd;

use blkqos_core::{Instant, Io};

/// A simulated device.
pub trait DeviceModel {
    /// Request slots (`/sys/block/<dev>/queue/nr_requests`; for blk-mq the
    /// tag count: hardware queues × queue depth).
    fn nr_requests(&self) -> u32;
    fn capacity_bytes(&self) -> u64;
    /// Rotational (`queue/rotational`), which picks kernel defaults.
    fn rotational(&self) -> bool;
    /// `io` starts being served at `now`: when does it complete, with which
    /// error (0 = success, else a positive errno)?
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32);
    /// One line describing the model and its parameters.
    fn describe(&self) -> String;
}

/// Errno for IO beyond the end of the device.
pub const EIO: i32 = 5;
