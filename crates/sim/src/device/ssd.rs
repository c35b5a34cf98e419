//! `ssd`: an NVMe-class flash device.
//!
//! `channels` independent units serve requests; a request takes the unit
//! that frees first (FIFO), and occupies it for
//! `base + len / bandwidth` (read or write parameters), so small random IO
//! is latency-bound and large IO bandwidth-bound; aggregate throughput
//! saturates at `channels / service time`. A deterministic jitter of up to
//! `jitter_pct` % of the base latency is added.
//!
//! Ignores: garbage collection and write amplification, SLC caches,
//! read/write interference inside a unit, queue-depth dependent firmware
//! behaviour, thermal throttling.

use super::{DeviceModel, EIO};
use blkqos_core::{Duration, Instant, Io, IoOp};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone)]
pub struct Ssd {
    pub channels: u32,
    pub read_ns: u64,
    pub write_ns: u64,
    /// Bytes per second per channel.
    pub read_bps: u64,
    pub write_bps: u64,
    pub nr_requests: u32,
    pub capacity: u64,
    pub jitter_pct: u32,
    /// (time the channel frees, channel): the earliest-free channel on top.
    free_at: BinaryHeap<Reverse<(Instant, u32)>>,
    rng: u64,
}

impl Ssd {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        channels: u32,
        read_ns: u64,
        write_ns: u64,
        read_bps: u64,
        write_bps: u64,
        nr_requests: u32,
        capacity: u64,
        jitter_pct: u32,
        seed: u64,
    ) -> Self {
        Ssd {
            channels: channels.max(1),
            read_ns,
            write_ns,
            read_bps: read_bps.max(1),
            write_bps: write_bps.max(1),
            nr_requests: nr_requests.max(1),
            capacity,
            jitter_pct,
            free_at: (0..channels.max(1))
                .map(|c| Reverse((Instant::ZERO, c)))
                .collect(),
            rng: seed | 1,
        }
    }
    /// xorshift64*: cheap deterministic jitter.
    fn next_rand(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl DeviceModel for Ssd {
    fn nr_requests(&self) -> u32 {
        self.nr_requests
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn rotational(&self) -> bool {
        false
    }
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let (base, bps) = match io.op {
            IoOp::Read => (self.read_ns, self.read_bps),
            IoOp::Write => (self.write_ns, self.write_bps),
            IoOp::Discard | IoOp::Flush => (self.write_ns, u64::MAX),
        };
        let xfer = if matches!(io.op, IoOp::Read | IoOp::Write) {
            (u128::from(io.len) * 1_000_000_000 / u128::from(bps)) as u64
        } else {
            0
        };
        let jitter = if self.jitter_pct > 0 {
            self.next_rand() % (base * u64::from(self.jitter_pct) / 100 + 1)
        } else {
            0
        };
        let Reverse((free, ch)) = self.free_at.pop().expect("at least one channel");
        let start = now.max(free);
        let done = start + Duration(base + xfer + jitter);
        self.free_at.push(Reverse((done, ch)));
        let err = if io.offset.saturating_add(io.len) > self.capacity {
            EIO
        } else {
            0
        };
        (done, err)
    }
    fn describe(&self) -> String {
        format!(
            "ssd: {} channels, read {} ns + {} MB/s/ch, write {} ns + {} MB/s/ch, nr_requests {}",
            self.channels,
            self.read_ns,
            self.read_bps / 1_000_000,
            self.write_ns,
            self.write_bps / 1_000_000,
            self.nr_requests
        )
    }
}
