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
//! The ticks fall on a grid fixed when the device powered on
//! (`hrtimer_forward_now` keeps it), at a phase drawn from the device's
//! seed: a run starts at an arbitrary point of it. The timer stops at the
//! first tick that finds the budget full; the next request restarts it
//! (`hrtimer_restart` at the past expiry fires at once) and the refill
//! lands after that request took its bytes, so the first request after an
//! idle tick is free.
//!
//! `zoned=1`: null_blk's zoned mode ([`super::zoned`]): a request the
//! zone rules fail completes after `completion_ns` with their errno.
//!
//! Ignores: CPU cost, memory-backed mode, bad blocks, fault injection.

use super::zoned::Zones;
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
    /// Offset of the tick grid (ns, below one tick).
    phase_ns: u64,
    /// The bandwidth timer runs through this tick interval (it stops at the
    /// start of the next one unless a request consumed budget meanwhile).
    active_until: Option<u64>,
    /// `zoned=1`: the zones and their write pointers.
    zones: Option<Zones>,
}

impl NullBlk {
    pub fn new(
        completion_ns: u64,
        hw_queues: u32,
        queue_depth: u32,
        mbps: Option<u32>,
        capacity: u64,
        seed: u64,
    ) -> Self {
        // splitmix64: a phase in [0, tick)
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        NullBlk {
            phase_ns: z % TICK_NS,
            active_until: None,
            completion_ns,
            hw_queues: hw_queues.max(1),
            queue_depth: queue_depth.max(1),
            mbps,
            capacity,
            tick: u64::MAX,
            budget: 0,
            next_free_tick: 0,
            zones: None,
        }
    }

    /// null_blk's zoned mode over the whole device.
    pub fn with_zones(mut self, zones: Zones) -> Self {
        self.zones = Some(zones);
        self
    }

    /// The zones (`zoned=1`).
    pub fn zones(&self) -> Option<&Zones> {
        self.zones.as_ref()
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
        if let Some(z) = &mut self.zones {
            // null_process_zoned_cmd fails the request before it is served
            let e = z.apply(io);
            if e != 0 {
                return (now + lat, e);
            }
        }
        let Some(mbps) = self.mbps else {
            return (now + lat, 0);
        };
        let per_tick = Self::per_tick(mbps);
        let arrival_tick = (now.as_ns() + self.phase_ns) / TICK_NS;
        if arrival_tick >= self.next_free_tick && self.active_until.is_none_or(|a| arrival_tick > a)
        {
            // timer stopped with a full budget: this request restarts it
            // and the immediate refill makes it free
            self.tick = arrival_tick;
            self.budget = per_tick;
            self.active_until = Some(arrival_tick);
            return (now + lat, 0);
        }
        let mut tick = arrival_tick.max(self.next_free_tick);
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
                self.active_until = Some(self.active_until.map_or(tick + 1, |a| a.max(tick + 1)));
                let start = now.max(Instant((tick * TICK_NS).saturating_sub(self.phase_ns)));
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
            ioprio: 0,
            id: IoId(0),
            submitter: blkqos_core::Submitter(0),
            group: GroupId::ROOT,
            op: IoOp::Read,
            flags: IoFlags::default(),
            offset: 0,
            len,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        }
    }

    #[test]
    fn mbps_cap_is_per_20ms_tick() {
        // 4 MB/s: 20971*4 = 83884 bytes per tick = 20 x 4 KiB
        let mut d = NullBlk::new(2_000, 1, 64, Some(4), 1 << 40, 1);
        d.phase_ns = 0;
        // the first request restarts the stopped timer and is free: 21
        // go in the first tick
        let mut last = Instant::ZERO;
        for i in 0..42 {
            let (t, e) = d.service(&io(4096), Instant::ZERO);
            assert_eq!(e, 0);
            let expect_tick = if i == 0 { 0 } else { (i - 1) / 20 };
            assert_eq!(t, Instant(expect_tick * TICK_NS + 2_000), "io {i}");
            last = t;
        }
        assert_eq!(last, Instant(2 * TICK_NS + 2_000));
    }

    #[test]
    fn ticks_follow_the_seeded_grid_and_stop_when_idle() {
        let mut d = NullBlk::new(0, 1, 64, Some(4), 1 << 40, 7);
        d.phase_ns = 5_000_000;
        // 21 requests at t = 0: the 22nd waits for the next grid tick, at
        // 20 ms - 5 ms = 15 ms of run time
        for _ in 0..21 {
            assert_eq!(d.service(&io(4096), Instant::ZERO).0, Instant::ZERO);
        }
        assert_eq!(d.service(&io(4096), Instant::ZERO).0, Instant::from_ms(15));
        // idle for two ticks: the timer stopped, the next request is free
        // and the following 20 fit the refilled budget
        let t = Instant::from_ms(100);
        for _ in 0..21 {
            assert_eq!(d.service(&io(4096), t).0, t);
        }
        assert!(d.service(&io(4096), t).0 > t);
    }

    #[test]
    fn beyond_capacity_is_eio() {
        let mut d = NullBlk::new(1_000, 1, 64, None, 8192, 1);
        let mut x = io(4096);
        x.offset = 8192;
        assert_eq!(d.service(&x, Instant::ZERO).1, EIO);
    }
}
