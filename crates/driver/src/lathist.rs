//! Per-device and per-group latency histograms in fio's bucket scheme
//! ([`blkqos_core::hist::LatHist`]), recorded by the driver loop at every
//! completion, for the simulator and the real engine alike.
//!
//! Two intervals are measured for every completed IO:
//!
//! * **device**: request start → completion — the interval the kernel adds
//!   to `nsecs[]` in `blk_account_io_done` (diskstats' ms-reading/writing
//!   fields, iostat's `r_await`/`w_await`). It excludes the time the IO
//!   waited in io.max, iocost or for a request slot.
//! * **group**: entering the block layer (`submit_bio`, before blk-throttle
//!   and iocost) → completion — what the group's tenant sees below its
//!   submit call: controller wait + request-slot wait + device time.
//!
//! Both are kept per kernel stat group (read, write, discard, flush:
//! `op_stat_group`), with min/max/sum beside the histogram.
//!
//! # Cost
//! Everything is allocated when the run starts (the groups are the jobs'
//! groups, known then): one 1856-bucket histogram (14.5 KiB) per device
//! direction and per group direction. Recording an IO is two bucket
//! increments and a few additions: no allocation, no clock read (the
//! driver already has both timestamps).

use blkqos_core::hist::LatHist;
use blkqos_core::{GroupId, IoOp};

/// Directions kept, indexed by [`IoOp::stat_group`].
pub const NR_DIRS: usize = 4;

/// Names of the directions, indexed by [`IoOp::stat_group`].
pub const DIR_NAMES: [&str; NR_DIRS] = ["read", "write", "discard", "flush"];

/// One latency distribution: fio's histogram plus exact count, min, max
/// and sum.
#[derive(Clone, Debug, Default)]
pub struct LatDist {
    /// The samples in fio's latency histogram (ns; its sample count is the
    /// distribution's count).
    pub hist: LatHist,
    /// Smallest sample in ns (0 when empty).
    pub latency_ns_min: u64,
    /// Largest sample in ns (0 when empty).
    pub latency_ns_max: u64,
    /// Exact sum of the samples (the mean is `sum / count`).
    pub latency_ns_sum: u128,
}

impl LatDist {
    /// Add one latency sample of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if self.hist.count() == 0 || ns < self.latency_ns_min {
            self.latency_ns_min = ns;
        }
        if ns > self.latency_ns_max {
            self.latency_ns_max = ns;
        }
        self.latency_ns_sum += u128::from(ns);
        self.hist.record(ns);
    }
    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.hist.count()
    }
    /// Mean in ns (0 when empty).
    pub fn latency_ns_mean(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.latency_ns_sum as f64 / n as f64,
        }
    }
    /// Add `o`'s samples (a parent group rolls up its children).
    pub fn merge(&mut self, o: &LatDist) {
        if o.count() == 0 {
            return;
        }
        if self.count() == 0 {
            self.latency_ns_min = o.latency_ns_min;
        } else {
            self.latency_ns_min = self.latency_ns_min.min(o.latency_ns_min);
        }
        self.latency_ns_max = self.latency_ns_max.max(o.latency_ns_max);
        self.latency_ns_sum += o.latency_ns_sum;
        self.hist.merge(&o.hist);
    }
}

/// One distribution per direction.
pub type DirDists = [LatDist; NR_DIRS];

/// The histograms of a run: the device's, and each group's own IO.
#[derive(Clone, Debug)]
pub struct LatHists {
    /// Request start → completion, per direction.
    pub device: DirDists,
    /// Submit (block layer entry) → completion, per direction, indexed by
    /// [`GroupId::idx`]: the group's own IO, descendants not rolled up.
    pub groups: Vec<DirDists>,
}

impl LatHists {
    /// Histograms for groups `0..nr_groups`, all allocated now.
    pub fn new(nr_groups: usize) -> Self {
        LatHists {
            device: Default::default(),
            groups: (0..nr_groups).map(|_| Default::default()).collect(),
        }
    }

    /// An IO of `op` charged to `group` completed: `device_ns` after its
    /// request started, `group_ns` after it entered the block layer.
    /// A group outside the preallocated range is not recorded (the driver
    /// sizes the table from the jobs' groups, so this does not happen).
    #[inline]
    pub fn record(&mut self, op: IoOp, group: GroupId, device_ns: u64, group_ns: u64) {
        let d = op.stat_group();
        self.device[d].record(device_ns);
        if let Some(g) = self.groups.get_mut(group.idx()) {
            g[d].record(group_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::hist::DEFAULT_PERCENTILES;

    #[test]
    fn records_both_intervals_per_direction() {
        let mut h = LatHists::new(3);
        h.record(IoOp::Read, GroupId(2), 100, 5_000);
        h.record(IoOp::Read, GroupId(2), 300, 300);
        h.record(IoOp::Write, GroupId(1), 50, 70);
        let r = &h.device[0];
        assert_eq!(
            (r.count(), r.latency_ns_min, r.latency_ns_max),
            (2, 100, 300)
        );
        assert_eq!(r.latency_ns_mean(), 200.0);
        let g = &h.groups[2][0];
        assert_eq!(
            (g.count(), g.latency_ns_min, g.latency_ns_max),
            (2, 300, 5_000)
        );
        assert_eq!(h.groups[1][1].count(), 1);
        assert_eq!(h.groups[0][0].count(), 0);
        // out of range: device recorded, no panic
        h.record(IoOp::Flush, GroupId(9), 1, 1);
        assert_eq!(h.device[3].count(), 1);
    }

    #[test]
    fn merge_is_recording_both() {
        let (mut a, mut b, mut both) = (LatDist::default(), LatDist::default(), LatDist::default());
        for (i, v) in [7u64, 90_000, 1_234_567, 3, 44_000].into_iter().enumerate() {
            if i % 2 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
            both.record(v);
        }
        let mut empty = LatDist::default();
        empty.merge(&a);
        empty.merge(&b);
        empty.merge(&LatDist::default());
        assert_eq!(empty.latency_ns_min, both.latency_ns_min);
        assert_eq!(empty.latency_ns_max, both.latency_ns_max);
        assert_eq!(empty.latency_ns_sum, both.latency_ns_sum);
        assert_eq!(
            empty.hist.percentiles(&DEFAULT_PERCENTILES),
            both.hist.percentiles(&DEFAULT_PERCENTILES)
        );
    }
}
