//! Per-device disk statistics (`struct disk_stats`), updated where the
//! kernel updates them: at request start and request completion.
//!
//! This is the precise (nanosecond) flavour: busy time is the exact measure
//! of time with at least one request in flight, and the in-flight integral
//! is kept exactly. The kernel's jiffy-based generations are selectable in
//! the accounting module of a later layer; the fio report only needs these.

use blkqos_core::{Instant, IoOp};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Completed IOs per stat group (read, write, discard, flush).
    pub ios: [u64; 4],
    pub merges: [u64; 4],
    /// 512-byte sectors per stat group.
    pub sectors: [u64; 4],
    /// Sum of request times (start → completion) in ns per stat group.
    pub nsecs: [u64; 4],
    /// Requests in flight (read, write).
    pub in_flight: [u32; 2],
    /// ns with at least one request in flight.
    pub busy_ns: u64,
    /// ∫ in-flight dt, in ns (request-ns).
    pub inflight_integral_ns: u128,
    stamp: Instant,
}

impl DiskStats {
    fn advance(&mut self, now: Instant) {
        let n = u64::from(self.in_flight[0] + self.in_flight[1]);
        if now > self.stamp {
            let dt = (now - self.stamp).as_ns();
            if n > 0 {
                self.busy_ns += dt;
                self.inflight_integral_ns += u128::from(dt) * u128::from(n);
            }
            self.stamp = now;
        }
    }
    /// A request started (`blk_account_io_start`).
    #[inline]
    pub fn start(&mut self, op: IoOp, now: Instant) {
        self.advance(now);
        self.in_flight[op.dir().idx()] += 1;
    }
    /// A request completed (`blk_account_io_done`).
    #[inline]
    pub fn done(&mut self, op: IoOp, bytes: u64, started: Instant, now: Instant) {
        self.advance(now);
        let g = op.stat_group();
        self.ios[g] += 1;
        self.sectors[g] += bytes >> 9;
        self.nsecs[g] += (now - started).as_ns();
        self.in_flight[op.dir().idx()] -= 1;
    }
    /// Bring busy time up to `now` (readers do this before printing).
    pub fn sync(&mut self, now: Instant) {
        self.advance(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_union_of_intervals() {
        let mut d = DiskStats::default();
        d.start(IoOp::Read, Instant(10));
        d.start(IoOp::Write, Instant(15));
        d.done(IoOp::Read, 4096, Instant(10), Instant(20));
        d.done(IoOp::Write, 4096, Instant(15), Instant(30));
        d.start(IoOp::Read, Instant(40));
        d.done(IoOp::Read, 512, Instant(40), Instant(45));
        assert_eq!(d.busy_ns, 20 + 5);
        assert_eq!(d.inflight_integral_ns, 5 + 2 * 5 + 10 + 5);
        assert_eq!(d.ios, [2, 1, 0, 0]);
        assert_eq!(d.sectors, [9, 8, 0, 0]);
    }
}
