//! Per-cgroup iocost state (the kernel's `struct ioc_gq`, "iocg"), kept in a
//! flat vector indexed like the [`crate::CgroupTree`].

use super::knob::WEIGHT_DFL;
use super::vtime::{VTime, WEIGHT_ONE};
use crate::io::Io;
use std::collections::VecDeque;

/// A submitter blocked in the wait queue (`struct iocg_wait`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Waiter {
    pub io: Io,
    pub abs_cost: u64,
}

/// The cumulative per-group counters `io.stat` prints (`struct iocg_stat`),
/// in µs. They include descendants (flushed upward each period).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostStats {
    /// `cost.usage`: device time charged (absolute cost at the base vrate).
    pub usage_us: u64,
    /// `cost.wait`: time with at least one waiter queued.
    pub wait_us: u64,
    /// `cost.indebt`: time carrying debt.
    pub indebt_us: u64,
    /// `cost.indelay`: time with issuer delay in effect.
    pub indelay_us: u64,
}

impl CostStats {
    fn delta(&self, o: &CostStats) -> CostStats {
        CostStats {
            usage_us: self.usage_us.wrapping_sub(o.usage_us),
            wait_us: self.wait_us.wrapping_sub(o.wait_us),
            indebt_us: self.indebt_us.wrapping_sub(o.indebt_us),
            indelay_us: self.indelay_us.wrapping_sub(o.indelay_us),
        }
    }
    pub(super) fn add(&mut self, d: &CostStats) {
        self.usage_us = self.usage_us.wrapping_add(d.usage_us);
        self.wait_us = self.wait_us.wrapping_add(d.wait_us);
        self.indebt_us = self.indebt_us.wrapping_add(d.indebt_us);
        self.indelay_us = self.indelay_us.wrapping_add(d.indelay_us);
    }
    /// What `iocg_flush_stat_upward` adds to the parent.
    pub(super) fn unflushed(&self, last: &CostStats) -> CostStats {
        self.delta(last)
    }
}

/// One cgroup on the device.
///
/// Laid out by use (`repr(C)`, line-aligned): the first three cache lines
/// hold everything the issue and completion paths touch, the rest is
/// period-timer and configuration state. With many groups the per-IO
/// path then misses on three lines of its group instead of six.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(super) struct CostGroup {
    // ---- line 0: charge and complete ----
    /// Advanced by the relative cost of every issued IO; `done_vtime` by
    /// the same at completion (so `vtime − done_vtime` is in flight).
    pub vtime: VTime,
    pub done_vtime: VTime,
    /// Debt in absolute vtime (IO issued over budget as root / META).
    pub abs_vdebt: u64,
    /// End sector of the last charged bio (0 = none): seq/rand detection.
    pub cursor: u64,
    /// The period this group last issued in.
    pub active_period: u64,
    /// Budget when inuse was last set (`vnow − vtime`), for snapback.
    pub saved_margin: i64,
    /// Cumulative absolute vtime charged (the kernel's per-CPU `abs_vusage`).
    pub abs_vusage: u64,
    /// Sum of the costs of this group's committed IOs still in flight
    /// (not in the kernel: the invariant `vtime − done_vtime` is checked against it).
    pub inflight_cost: u64,

    // ---- line 1: waiting ----
    /// The wait queue; its timer is in [`super::timerq::TimerQueue`].
    pub waitq: VecDeque<Waiter>,
    /// Issuer delay (µs) in effect since `delay_at_us`, halving per second.
    pub delay_us: u64,
    pub wait_since_us: Option<u64>,
    /// Depth (root = 0); the ancestors are in `ancestors`.
    pub level: usize,

    // ---- line 2: weights ----
    /// Cached hweights and the generation they were computed at.
    pub hweight_gen: u32,
    pub hweight_active: u32,
    pub hweight_inuse: u32,
    /// Effective weight; `active` is it while active (0 idle); `inuse` ≤
    /// `active` after donation; `last_inuse` remembers inuse.
    pub weight: u32,
    pub active: u32,
    pub inuse: u32,
    pub last_inuse: u32,
    pub hweight_donating: u32,
    pub hweight_after_donation: u32,
    /// `ioc_cgrp.dfl_weight` (×WEIGHT_ONE): the cgroup's default weight.
    pub dfl_weight: u32,
    /// Per-device override (×WEIGHT_ONE), 0 = none.
    pub cfg_weight: u32,
    /// Whether the group is on the active list.
    pub on_active_list: bool,
    /// On the pre-order inner-node walk (`walk_list` non-empty).
    pub on_walk: bool,
    /// blkcg `use_delay` / `delay_nsec` (set by `blkcg_set_delay`).
    pub use_delay: bool,
    pub delay_nsec: u64,
    pub delay_at_us: u64,

    // ---- the period timer's and the tree's ----
    /// The ancestors from the root down to self (`level + 1` entries).
    pub ancestors: Vec<usize>,
    pub child_active_sum: u64,
    pub child_inuse_sum: u64,
    pub child_adjusted_sum: u64,
    /// Last activation (µs).
    pub activated_at_us: u64,
    pub stat: CostStats,
    pub last_stat: CostStats,
    pub last_stat_abs_vusage: u64,
    pub usage_delta_us: u64,
    pub indebt_since_us: Option<u64>,
    pub indelay_since_us: Option<u64>,
}

impl CostGroup {
    pub fn new(level: usize, ancestors: Vec<usize>, vnow: VTime, cur_period: u64) -> Self {
        CostGroup {
            level,
            ancestors,
            dfl_weight: WEIGHT_DFL * WEIGHT_ONE,
            cfg_weight: 0,
            weight: 0,
            active: 0,
            inuse: 0,
            last_inuse: 0,
            saved_margin: 0,
            cursor: 0,
            vtime: vnow,
            done_vtime: vnow,
            abs_vdebt: 0,
            delay_us: 0,
            delay_at_us: 0,
            active_period: cur_period,
            on_active_list: false,
            child_active_sum: 0,
            child_inuse_sum: 0,
            child_adjusted_sum: 0,
            hweight_gen: 0,
            hweight_active: WEIGHT_ONE,
            hweight_inuse: WEIGHT_ONE,
            hweight_donating: 0,
            hweight_after_donation: 0,
            on_walk: false,
            waitq: VecDeque::new(),
            activated_at_us: 0,
            stat: CostStats::default(),
            last_stat: CostStats::default(),
            abs_vusage: 0,
            last_stat_abs_vusage: 0,
            usage_delta_us: 0,
            wait_since_us: None,
            indebt_since_us: None,
            indelay_since_us: None,
            use_delay: false,
            delay_nsec: 0,
            inflight_cost: 0,
        }
    }

    /// The parent's index (`ancestors[level − 1]`), `None` for the root.
    pub fn parent(&self) -> Option<usize> {
        self.level.checked_sub(1).map(|l| self.ancestors[l])
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// What the issue and completion paths read lies in the first three
    /// cache lines (see [`CostGroup`]).
    #[test]
    fn issue_path_fields_share_three_lines() {
        let hot = [
            ("vtime", offset_of!(CostGroup, vtime), 8),
            ("done_vtime", offset_of!(CostGroup, done_vtime), 8),
            ("abs_vdebt", offset_of!(CostGroup, abs_vdebt), 8),
            ("cursor", offset_of!(CostGroup, cursor), 8),
            ("active_period", offset_of!(CostGroup, active_period), 8),
            ("saved_margin", offset_of!(CostGroup, saved_margin), 8),
            ("abs_vusage", offset_of!(CostGroup, abs_vusage), 8),
            ("inflight_cost", offset_of!(CostGroup, inflight_cost), 8),
            (
                "waitq",
                offset_of!(CostGroup, waitq),
                size_of::<VecDeque<Waiter>>(),
            ),
            ("delay", offset_of!(CostGroup, delay_us), 8),
            ("wait_since_us", offset_of!(CostGroup, wait_since_us), 16),
            ("level", offset_of!(CostGroup, level), 8),
            ("hweight_gen", offset_of!(CostGroup, hweight_gen), 4),
            ("hweight_active", offset_of!(CostGroup, hweight_active), 4),
            ("hweight_inuse", offset_of!(CostGroup, hweight_inuse), 4),
            ("active", offset_of!(CostGroup, active), 4),
            ("inuse", offset_of!(CostGroup, inuse), 4),
            ("on_active_list", offset_of!(CostGroup, on_active_list), 1),
        ];
        for (name, off, size) in hot {
            assert!(off + size <= 3 * 64, "{name} at {off}..{}", off + size);
        }
        assert_eq!(std::mem::align_of::<CostGroup>(), 64);
    }
}
