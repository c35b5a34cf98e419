//! `hdd`: a single-actuator hard disk.
//!
//! Requests are served one at a time in FIFO order (no NCQ reordering).
//! A request contiguous with the previous one pays only its transfer time;
//! otherwise it pays a seek of `seek_min + (seek_max − seek_min) ·
//! √(distance / capacity)` plus a rotational delay uniform in
//! `[0, 60 s / rpm)` (deterministic from the seed), then the transfer at
//! `mbps`.
//!
//! Ignores: NCQ/elevator reordering, zoned (outer/inner) transfer rates,
//! on-disk write cache, track skew, head switches.

use super::{DeviceModel, EIO};
use blkqos_core::{Duration, Instant, Io, IoOp};

#[derive(Debug, Clone)]
pub struct Hdd {
    pub rpm: u32,
    pub seek_min_ns: u64,
    pub seek_max_ns: u64,
    pub bps: u64,
    pub nr_requests: u32,
    pub capacity: u64,
    head: u64,
    busy_until: Instant,
    rng: u64,
}

impl Hdd {
    pub fn new(
        rpm: u32,
        seek_min_ns: u64,
        seek_max_ns: u64,
        bps: u64,
        nr_requests: u32,
        capacity: u64,
        seed: u64,
    ) -> Self {
        Hdd {
            rpm: rpm.max(1),
            seek_min_ns,
            seek_max_ns: seek_max_ns.max(seek_min_ns),
            bps: bps.max(1),
            nr_requests: nr_requests.max(1),
            capacity: capacity.max(1),
            head: 0,
            busy_until: Instant::ZERO,
            rng: seed | 1,
        }
    }
    fn next_rand(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Positioning time for a request at `offset`.
    fn position_ns(&mut self, offset: u64) -> u64 {
        if offset == self.head {
            return 0;
        }
        let dist = offset.abs_diff(self.head) as f64 / self.capacity as f64;
        let seek = self.seek_min_ns as f64
            + (self.seek_max_ns - self.seek_min_ns) as f64 * dist.min(1.0).sqrt();
        let rev_ns = 60_000_000_000 / u64::from(self.rpm);
        seek as u64 + self.next_rand() % rev_ns
    }
}

impl DeviceModel for Hdd {
    fn nr_requests(&self) -> u32 {
        self.nr_requests
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn rotational(&self) -> bool {
        true
    }
    fn default_max_sectors(&self) -> u32 {
        super::HDD_MAX_SECTORS
    }
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let start = now.max(self.busy_until);
        let svc = match io.op {
            IoOp::Flush => 0,
            IoOp::Discard => 0,
            _ => {
                let pos = self.position_ns(io.offset);
                pos + (u128::from(io.len) * 1_000_000_000 / u128::from(self.bps)) as u64
            }
        };
        self.head = io.offset + io.len;
        let done = start + Duration(svc);
        self.busy_until = done;
        let err = if io.offset.saturating_add(io.len) > self.capacity {
            EIO
        } else {
            0
        };
        (done, err)
    }
    fn describe(&self) -> String {
        format!(
            "hdd: {} rpm, seek {}-{} us, {} MB/s, nr_requests {}",
            self.rpm,
            self.seek_min_ns / 1000,
            self.seek_max_ns / 1000,
            self.bps / 1_000_000,
            self.nr_requests
        )
    }
}
