//! `null`: null_blk (`drivers/block/null_blk/main.c`).
//!
//! Each request completes `completion_ns` after it starts (null_blk's
//! `irqmode=2` timer mode; with the default softirq mode this is the
//! softirq latency, a few µs). Tags: `hw_queues × queue_depth`.
//!
//! `mbps` mirrors null_blk's bandwidth throttle (`null_handle_throttled`,
//! `nullb_bwtimer_fn`): a byte budget of `(1 MiB / 50) × mbps` is reset
//! every 20 ms tick (`TICKS_PER_SEC = 50`). A request that would drive the
//! budget negative is not served; the queue stays stopped until the next
//! tick restarts it. Unused budget does not carry over.
//!
//! Ignores: CPU cost, memory-backed mode, zones, bad blocks, fault injection.

use super::{DeviceModel, EIO};
use blkqos_core::{Duration, Instant, Io};

const TICKS_PER_SEC: u64 = 50;
const TICK_NS: u64 = 1_000_000_000 / TICKS_PER_SEC;

#[derive(Debug, Clone)]
pub struct NullBlk {
    pub completion_ns: u64,
    pub hw_queues: u32,
    pub queue_depth: u32,
    pub mbps: Option<u32>,
    pub capacity: u64,
    /// Budget state: the tick it belongs to and bytes left.
    tick: u64,
    budget: i64,
    /// Requests wait for budget in FIFO order: the earliest tick the next
    /// throttled request may be served in.
    next_free_tick: u64,
}

impl NullBlk {
    pub fn new(
        completion_ns: u64,
        hw_queues: u32,
        queue_depth: u32,
        mbps: Option<u32>,
        capacity: u64,
    ) -> Self {
        NullBlk {
            completion_ns,
            hw_queues: hw_queues.max(1),
            queue_depth: queue_depth.max(1),
            mbps,
            capacity,
            tick: u64::MAX,
            budget: 0,
            next_free_tick: 0,
        }
    }
    fn per_tick(mbps: u32) -> i64 {
        ((1u64 << 20) / TICKS_PER_SEC * u64::from(mbps)) as i64
    }
}

impl DeviceModel for NullBlk {
    fn nr_requests(&self) -> u32 {
        self.hw_queues * self.queue_depth
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn rotational(&self) -> bool {
        false
    }
    fn default_max_sectors(&self) -> u32 {
        super::NULL_MAX_SECTORS
    }
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let lat = Duration(self.completion_ns);
        if io.offset.saturating_add(io.len) > self.capacity {
            return (now + lat, EIO);
        }
        let Some(mbps) = self.mbps else {
            return (now + lat, 0);
        };
        let per_tick = Self::per_tick(mbps);
        let mut tick = (now.as_ns() / TICK_NS).max(self.next_free_tick);
        loop {
            if tick != self.tick {
                self.tick = tick;
                self.budget = per_tick;
            }
            if self.budget - io.len as i64 >= 0 || (self.budget == per_tick) {
                // a request larger than a whole tick's budget still goes
                // when the budget is full (it drives it negative once)
                self.budget -= io.len as i64;
                self.next_free_tick = tick;
                let start = now.max(Instant(tick * TICK_NS));
                return (start + lat, 0);
            }
            tick += 1;
        }
    }
    fn describe(&self) -> String {
        format!(
            "null: completion {} ns, {} hw queue(s) x depth {}, mbps {}",
            self.completion_ns,
            self.hw_queues,
            self.queue_depth,
            self.mbps.map_or("unlimited".to_string(), |m| m.to_string())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::{GroupId, IoFlags, IoId, IoOp};

    fn io(len: u64) -> Io {
        Io {
            id: IoId(0),
            job: 0,
            group: GroupId::ROOT,
            op: IoOp::Read,
            flags: IoFlags::default(),
            offset: 0,
            len,
            submitted_at: Instant::ZERO,
        }
    }

    #[test]
    fn mbps_cap_is_per_20ms_tick() {
        // 4 MB/s: 20971*4 = 83884 bytes per tick = 20 x 4 KiB
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40);
        let mut last = Instant::ZERO;
        for i in 0..41 {
            let (t, e) = d.service(&io(4096), Instant::ZERO);
            assert_eq!(e, 0);
            let expect_tick = i / 20;
            assert_eq!(t, Instant(expect_tick * TICK_NS + 2_000), "io {i}");
            last = t;
        }
        assert_eq!(last, Instant(2 * TICK_NS + 2_000));
    }

    #[test]
    fn beyond_capacity_is_eio() {
        let mut d = NullBlk::new(1_000, 1, 64, None, 8192);
        let mut x = io(4096);
        x.offset = 8192;
        assert_eq!(d.service(&x, Instant::ZERO).1, EIO);
    }
}
