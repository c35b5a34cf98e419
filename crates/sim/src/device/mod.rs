//! Device models.
//!
//! Every model decides, when an IO starts (it holds one of the device's
//! `nr_requests` slots), when it completes. Models are deterministic given
//! their seed. What each model ignores is stated in its module header.
//!
//! | model   | what it is                                   | key parameters |
//! |---------|----------------------------------------------|----------------|
//! | `null`  | null_blk: fixed completion time, `mbps` cap as null_blk's 20 ms budget ticks; `zoned=1`: null_blk's zoned mode (write pointers, open/active limits) | `completion_ns`, `hw_queues`, `queue_depth`, `mbps`, `zoned`, `zone_size`, `zone_capacity`, `zone_nr_conv`, `zone_max_open`, `zone_max_active` |
//! | `ssd`   | NVMe-like: N parallel units, latency = base + size/bandwidth, read/write asymmetry; optional delay and exponential tail outside the units (fitted devices) | `channels`, `read_ns`, `write_ns`, `read_mbps`, `write_mbps`, `read_delay_ns`, `read_tail_ns` |
//! | `cloud` | provisioned disk: IOPS and throughput token buckets (provider IO unit), FIFO; IO waiting for credit released on (jittered) grant ticks; base latency + size at the throughput | `iops`, `mbps`, `io_unit`, `base_us`, `grant_ms`, `grant_jitter_pct`, `burst_ms` |
//! | `fes`   | flow-equivalent server: one FIFO queue whose service time depends on how many requests are in the device, as measured at depths 1, 2, 4 ... 64 (fitted devices whose throughput is concave in depth) | `read_ns_q1`, `read_ns_q2` .. `read_ns_q64`, `read_ps_per_byte_q1`/`_q16`/`_q64`, `read_shared_ns`, `read_max_bps` (a shared resource), `read_shared_queue` (0: a floor, the request takes the longer of its own time and its time there; 1: a station the requests queue at, the device a closed network of the two), the same for writes, `spread_pct`, `spread_run`, `shared_spread_pct`, `shared_spread_run` (the shared resource's own spread; run 0: none) |
//! | `hdd`   | one actuator: seek (√distance) + rotation + transfer | `rpm`, `seek_min_ns`, `seek_max_ns`, `mbps` |

mod cloud;
mod fes;
mod hdd;
mod lateness;
mod null;
mod placement;
mod rng;
mod spec;
mod ssd;
mod zoned;

pub use cloud::Cloud;
pub use fes::{Fes, FesDir, FES_DEPTHS};
pub use hdd::Hdd;
pub use null::NullBlk;
pub use spec::{parse_size, DeviceSpec, ModelKind, SpecError};
pub use ssd::Ssd;
pub use zoned::{ZoneCond, ZonedParams, Zones};

use blkqos_core::{Instant, Io, IoId};

/// A simulated device.
pub trait DeviceModel {
    /// Request slots (`/sys/block/<dev>/queue/nr_requests`; for blk-mq the
    /// tag count: hardware queues × queue depth).
    fn nr_requests(&self) -> u32;
    fn capacity_bytes(&self) -> u64;
    /// Rotational (`queue/rotational`), which picks kernel defaults.
    fn rotational(&self) -> bool;
    /// The largest request Linux lets this kind of device take by default,
    /// in 512-byte sectors (`queue/max_sectors_kb` × 2); the block layer
    /// splits longer reads and writes. A queue limit, kept by
    /// [`crate::SimBackend`] (which may be given another).
    fn default_max_sectors(&self) -> u32;
    /// `io` starts being served at `now`: when does it complete, with which
    /// error (0 = success, else a positive errno)? [`HELD`]: the device
    /// holds it and gives its completion later ([`DeviceModel::release`]).
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32);
    /// When the device next releases requests it holds (None: it holds
    /// none).
    fn next_release(&self) -> Option<Instant> {
        None
    }
    /// Release what is due at `now` (at or after [`DeviceModel::next_release`]):
    /// each released request's completion goes to `out`.
    fn release(&mut self, _now: Instant, _out: &mut Vec<Released>) {}
    /// The CPU time the last [`DeviceModel::service`] call spent in the
    /// submitting context after it started the request (a memory-backed
    /// null_blk copies the data in `null_queue_rq`, in whichever task
    /// issues it; 0: none); taken once.
    fn take_submitter_ns(&mut self) -> u64 {
        0
    }
    /// Until when the device's own work (a worker dispatching a restarted
    /// queue, its completion interrupts) keeps the host's only CPU, on
    /// which the submitting processes would run; None: it does not.
    fn cpu_busy_until(&self) -> Option<Instant> {
        None
    }
    /// Whether the host's lateness of a request served at once depends on
    /// what its submitter's CPU runs when the request's timer expires:
    /// then [`DeviceModel::service`] returns that expiry, and the backend
    /// asks [`DeviceModel::late_at_expiry`] there.
    fn lateness_by_cpu(&self) -> bool {
        false
    }
    /// How late (ns) the host completes a request whose timer expired,
    /// with these flags, its submitter running on its CPU then (`busy`)
    /// or not.
    fn late_at_expiry(&mut self, _flags: blkqos_core::IoFlags, _busy: bool) -> u64 {
        0
    }
    /// One line describing the model and its parameters.
    fn describe(&self) -> String;
}

/// What [`DeviceModel::service`] returns (as the completion time) for a
/// request the device holds rather than serves.
pub const HELD: Instant = Instant::MAX;

/// A held request the device serves now: its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    pub id: IoId,
    /// When it completes.
    pub at: Instant,
    /// When the device started it (the kernel's `block_rq_issue`).
    pub dispatched: Instant,
    /// Bytes it moved (0 on error).
    pub bytes: u64,
    /// 0 = success, else a positive errno.
    pub error: i32,
}

/// Errno for IO beyond the end of the device.
pub const EIO: i32 = 5;

// Default max IO size per model, in sectors: what Linux sets for that kind
// of device (`max_sectors` = min(the driver's `max_hw_sectors`,
// `BLK_DEF_MAX_SECTORS_CAP`), shown halved as `max_sectors_kb`).

/// null_blk with `max_sectors=0` keeps the block layer's
/// `BLK_SAFE_MAX_SECTORS` = 255 sectors (`max_sectors_kb` shows 127).
pub const NULL_MAX_SECTORS: u32 = 255;
/// NVMe: the controller's MDTS bounds `max_hw_sectors`; MDTS = 5 (32 × 4 KiB
/// pages = 128 KiB) is common on datacenter drives.
pub const SSD_MAX_SECTORS: u32 = 256;
/// SCSI/virtio disks of cloud VMs report large transfer limits, and `sd`
/// caps the default at `BLK_DEF_MAX_SECTORS_CAP` = 2560 sectors (1280 KiB;
/// 4 MiB since 2025).
pub const CLOUD_MAX_SECTORS: u32 = 2560;
/// SATA disks (libata allows 65535 sectors with LBA48): the same 1280 KiB
/// cap.
pub const HDD_MAX_SECTORS: u32 = 2560;
