//! `ssd`: an NVMe-class flash device.
//!
//! `channels` independent units serve requests; a request takes the unit
//! that frees first (FIFO), and occupies it for
//! `base + len / bandwidth` (read or write parameters), so small random IO
//! is latency-bound and large IO bandwidth-bound; aggregate throughput
//! saturates at `channels / service time`. A deterministic jitter of up to
//! `jitter_pct` % of the base latency is added.
//!
//! `read_delay_ns` / `write_delay_ns` (default 0) add latency that does not
//! hold a unit: the completion path outside the device (interrupt,
//! completion work, wake-ups), so it lengthens each IO without lowering
//! the saturated throughput. A device fitted by `blkqos calibrate` has it
//! where its depth-1 latency exceeds what its saturated throughput allows.
//! `read_tail_ns` / `write_tail_ns` (default 0) add, outside the units too,
//! an exponentially distributed latency of that mean (seeded): the
//! scheduling noise of a completion path that wakes threads.
//!
//! Ignores: garbage collection and write amplification, SLC caches,
//! read/write interference inside a unit, queue-depth dependent firmware
//! behaviour, thermal throttling.

use super::{DeviceModel, EIO};
use blkqos_core::{Duration, Instant, Io, IoOp};

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
    /// Latency outside the units (read, write), ns.
    pub delay_ns: [u64; 2],
    /// Mean of the exponential latency outside the units (read, write), ns.
    pub tail_ns: [u64; 2],
    free_at: FreeTimes,
    rng: u64,
    /// (len, bytes per second, transfer ns) of the last IO: jobs mostly use
    /// one block size, and this spares a 64-bit division per IO.
    xfer_memo: (u64, u64, u64),
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
            delay_ns: [0, 0],
            tail_ns: [0, 0],
            free_at: FreeTimes::new(channels.max(1) as usize),
            rng: seed | 1,
            xfer_memo: (0, 0, 0),
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
    /// [`transfer_ns`], remembering the last answer.
    #[inline]
    fn transfer(&mut self, len: u64, bps: u64) -> u64 {
        let (l, b, ns) = self.xfer_memo;
        if (l, b) == (len, bps) {
            return ns;
        }
        let ns = transfer_ns(len, bps);
        self.xfer_memo = (len, bps, ns);
        ns
    }
}

/// When each channel frees, in ascending order.
///
/// Channels are identical, so only these times matter (which of two equally
/// free channels serves an IO changes nothing): no channel index is kept.
/// A sorted array rather than a heap: a new free time is nearly always
/// among the latest, so inserting it is a step or two of insertion sort
/// from the back (at worst one step per channel), and taking the earliest
/// is a cursor move.
#[derive(Debug, Clone)]
struct FreeTimes {
    /// `times[head..]` is sorted; `times[..head]` were taken.
    times: Vec<Instant>,
    head: usize,
}

impl FreeTimes {
    fn new(channels: usize) -> Self {
        let mut times = Vec::with_capacity(2 * channels);
        times.resize(channels, Instant::ZERO);
        FreeTimes { times, head: 0 }
    }

    /// Remove and return the earliest time. Every take is followed by an
    /// [`FreeTimes::insert`], so the set is never empty.
    #[inline]
    fn take_earliest(&mut self) -> Instant {
        let t = self.times[self.head];
        self.head += 1;
        t
    }

    #[inline]
    fn insert(&mut self, t: Instant) {
        if self.head * 2 >= self.times.len() {
            // the taken prefix is as long as the live part: drop it
            // (amortised O(1) per insert)
            self.times.drain(..self.head);
            self.head = 0;
        }
        self.times.push(t);
        let mut i = self.times.len() - 1;
        while i > self.head && self.times[i - 1] > t {
            self.times[i] = self.times[i - 1];
            i -= 1;
        }
        self.times[i] = t;
    }
}

/// Nanoseconds to move `len` bytes at `bps` bytes per second, truncated:
/// `len * 10^9 / bps`, in 64-bit arithmetic when the product fits (it does
/// for any IO under 18 GB), else in 128-bit.
#[inline]
fn transfer_ns(len: u64, bps: u64) -> u64 {
    match len.checked_mul(1_000_000_000) {
        Some(p) => p / bps,
        None => (u128::from(len) * 1_000_000_000 / u128::from(bps)) as u64,
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
    fn default_max_sectors(&self) -> u32 {
        super::SSD_MAX_SECTORS
    }
    fn service(&mut self, io: &Io, now: Instant) -> (Instant, i32) {
        let (base, bps) = match io.op {
            IoOp::Read => (self.read_ns, self.read_bps),
            IoOp::Write => (self.write_ns, self.write_bps),
            IoOp::Discard | IoOp::Flush => (self.write_ns, u64::MAX),
        };
        let xfer = if matches!(io.op, IoOp::Read | IoOp::Write) {
            self.transfer(io.len, bps)
        } else {
            0
        };
        let jitter = if self.jitter_pct > 0 {
            self.next_rand() % (base * u64::from(self.jitter_pct) / 100 + 1)
        } else {
            0
        };
        // the channel that frees first serves it
        let free = self.free_at.take_earliest();
        let start = now.max(free);
        let unit_free = start + Duration(base + xfer + jitter);
        self.free_at.insert(unit_free);
        let d = usize::from(io.op != IoOp::Read);
        let tail = match self.tail_ns[d] {
            0 => 0,
            mean => {
                // -ln(U) × mean with U uniform in (0, 1]
                let u = ((self.next_rand() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                (-u.ln() * mean as f64) as u64
            }
        };
        let done = unit_free + Duration(self.delay_ns[d] + tail);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail outside the units: exponential with the configured mean
    /// (median ln 2 of it), holding no unit; none by default.
    #[test]
    fn completion_tail_is_exponential_and_holds_no_unit() {
        let mut d = Ssd::new(1, 1000, 1000, 1 << 40, 1 << 40, 64, 1 << 30, 0, 7);
        d.tail_ns = [10_000, 0];
        let io = |k: u64| Io {
            ioprio: 0,
            id: blkqos_core::IoId(k),
            submitter: blkqos_core::Submitter(0),
            group: blkqos_core::GroupId::ROOT,
            op: IoOp::Read,
            flags: Default::default(),
            offset: 0,
            len: 4096,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        };
        let n = 20_000u64;
        let mut extra: Vec<u64> = (0..n)
            .map(|k| {
                // one IO at a time, far apart: latency = base + transfer + tail
                let now = Instant(k * 1_000_000_000);
                let (done, err) = d.service(&io(k), now);
                assert_eq!(err, 0);
                (done - now).as_ns() - 1000
            })
            .collect();
        let mean = extra.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 10_000.0 - 1.0).abs() < 0.03, "mean {mean}");
        extra.sort_unstable();
        let median = extra[extra.len() / 2] as f64;
        assert!(
            (median / (10_000.0 * 2f64.ln()) - 1.0).abs() < 0.05,
            "median {median}"
        );
        // the unit is free again right after its base time: back-to-back IOs
        // are not slowed by each other's tails
        let t = Instant(n * 1_000_000_000);
        let (_, _) = d.service(&io(n), t);
        let (second, _) = d.service(&io(n + 1), t);
        assert!((second - t).as_ns() >= 2000);
        // writes have no tail here: base + transfer exactly
        let w = Io {
            op: IoOp::Write,
            ..io(n + 2)
        };
        let t2 = Instant((n + 10) * 1_000_000_000);
        assert_eq!(
            (d.service(&w, t2).0 - t2).as_ns(),
            1000 + transfer_ns(4096, 1 << 40)
        );
    }

    #[test]
    fn free_times_take_the_earliest() {
        let mut f = FreeTimes::new(3);
        let mut xs = 1u64;
        let mut model = vec![0u64; 3];
        for _ in 0..1000 {
            xs = xs
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            model.sort_unstable();
            let want = model.remove(0);
            assert_eq!(f.take_earliest(), Instant(want));
            let t = want + (xs >> 54);
            f.insert(Instant(t));
            model.push(t);
        }
    }

    #[test]
    fn transfer_time_matches_wide_math() {
        for (len, bps) in [
            (4096, 400_000_000),
            (1 << 20, 3),
            (u64::MAX / 1_000_000_000, 7),
            (u64::MAX / 1_000_000_000 + 1, 7),
            (u64::MAX, u64::MAX),
        ] {
            let wide = (u128::from(len) * 1_000_000_000 / u128::from(bps)) as u64;
            assert_eq!(transfer_ns(len, bps), wide, "{len} {bps}");
        }
    }
}
