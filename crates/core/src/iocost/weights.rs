//! Hierarchical weights: `active`/`inuse` propagation up the tree, the
//! generation-cached hweights, and the "hweight at full inuse" bound.
//!
//! Worked example (the kernel header's tree): root{A(100){A0(100), A1(100)},
//! B(300)}, all leaves active. At the root `child_active_sum = 400·2^16`, so
//! `hwa(A) = 65536·100/400 = 16384`, `hwa(B) = 49152`; under A the sum is
//! `200·2^16`, so `hwa(A0) = 16384·100/200 = 8192` = 12.5%.
//!
//! Products of a weight and a weight sum are 64-bit in the kernel and wrap
//! (silently) with more than ~40 heavy siblings; they wrap here too.

use super::vtime::{Now, WEIGHT_ONE};
use super::IoCost;
use crate::math::div_round_up;

/// `DIV64_U64_ROUND_UP(a, b)`; a zero divisor (which the kernel's
/// invariants exclude) is treated as 1 rather than panicking.
#[inline]
pub(super) fn ceil_div(a: u64, b: u64) -> u64 {
    div_round_up(a, b.max(1))
}

impl IoCost {
    /// linux block/blk-iocost.c: __propagate_weights()
    /// — set `active`/`inuse` of `g`, update each ancestor's child sums and
    /// its own `inuse = ceil(active × child_inuse_sum / child_active_sum)`,
    /// stopping where nothing changes. With `save`, remember the margin.
    pub(super) fn propagate_weights_nocommit(
        &mut self,
        g: usize,
        active: u32,
        inuse: u32,
        save: bool,
        now: &Now,
    ) {
        let grp = &mut self.groups[g];
        // an active internal node's inuse follows its children's ratio
        let mut inuse = if !grp.on_active_list && grp.child_active_sum != 0 {
            ceil_div(
                (active as u64).wrapping_mul(grp.child_inuse_sum),
                grp.child_active_sum,
            ) as u32
        } else if active == 0 {
            0
        } else {
            inuse.clamp(1, active)
        };
        grp.last_inuse = grp.inuse;
        if save {
            grp.saved_margin = now.vnow.since(grp.vtime);
        }
        if active == grp.active && inuse == grp.inuse {
            return;
        }
        let mut active = active;
        let level = grp.level;
        for lvl in (0..level).rev() {
            let parent = self.groups[g].ancestors[lvl];
            let child = self.groups[g].ancestors[lvl + 1];
            let (c_active, c_inuse) = (self.groups[child].active, self.groups[child].inuse);
            let p = &mut self.groups[parent];
            // (s32)(new − old) added to a u64 sum
            p.child_active_sum = p
                .child_active_sum
                .wrapping_add(active.wrapping_sub(c_active) as i32 as i64 as u64);
            p.child_inuse_sum = p
                .child_inuse_sum
                .wrapping_add(inuse.wrapping_sub(c_inuse) as i32 as i64 as u64);
            let (mut parent_active, mut parent_inuse) = (0, 0);
            if p.child_active_sum != 0 {
                parent_active = p.weight;
                parent_inuse = ceil_div(
                    (parent_active as u64).wrapping_mul(p.child_inuse_sum),
                    p.child_active_sum,
                ) as u32;
            }
            let same = parent_active == p.active && parent_inuse == p.inuse;
            let c = &mut self.groups[child];
            c.active = active;
            c.inuse = inuse;
            if same {
                break;
            }
            active = parent_active;
            inuse = parent_inuse;
        }
        self.weights_updated = true;
    }

    /// linux block/blk-iocost.c: commit_weights() — bump the generation.
    pub(super) fn commit_weights(&mut self) {
        if self.weights_updated {
            self.hweight_gen = self.hweight_gen.wrapping_add(1);
            self.weights_updated = false;
        }
    }

    /// linux block/blk-iocost.c: propagate_weights().
    pub(super) fn propagate_weights(
        &mut self,
        g: usize,
        active: u32,
        inuse: u32,
        save: bool,
        now: &Now,
    ) {
        self.propagate_weights_nocommit(g, active, inuse, save, now);
        self.commit_weights();
    }

    /// The hweights of `g` from the current sums, without touching the cache.
    pub(super) fn compute_hweight(&self, g: usize) -> (u32, u32) {
        let grp = &self.groups[g];
        let (mut hwa, mut hwi) = (WEIGHT_ONE, WEIGHT_ONE);
        for lvl in 0..grp.level {
            let parent = &self.groups[grp.ancestors[lvl]];
            let child = &self.groups[grp.ancestors[lvl + 1]];
            let (active_sum, inuse_sum) = (parent.child_active_sum, parent.child_inuse_sum);
            if active_sum == 0 || inuse_sum == 0 {
                continue;
            }
            let active_sum = active_sum.max(child.active as u64);
            hwa = (hwa as u64 * child.active as u64 / active_sum) as u32;
            let inuse_sum = inuse_sum.max(child.inuse as u64);
            hwi = (hwi as u64 * child.inuse as u64 / inuse_sum) as u32;
        }
        (hwa.max(1), hwi.max(1))
    }

    /// linux block/blk-iocost.c: current_hweight()
    /// — `(hweight_active, hweight_inuse)`, each the product of the
    /// per-level shares (truncating), at least 1; cached per generation.
    pub(super) fn current_hweight(&mut self, g: usize) -> (u32, u32) {
        if self.groups[g].hweight_gen != self.hweight_gen {
            let (hwa, hwi) = self.compute_hweight(g);
            let grp = &mut self.groups[g];
            grp.hweight_active = hwa;
            grp.hweight_inuse = hwi;
            grp.hweight_gen = self.hweight_gen;
        }
        let grp = &self.groups[g];
        (grp.hweight_active, grp.hweight_inuse)
    }

    /// linux block/blk-iocost.c: current_hweight_max()
    /// — the hweight_inuse `g` would have with `inuse = active`, all other
    /// weights unchanged: the ceiling for donation.
    pub(super) fn current_hweight_max(&self, g: usize) -> u32 {
        let grp = &self.groups[g];
        let mut hwm: u32 = WEIGHT_ONE;
        let mut inuse = grp.active;
        for lvl in (0..grp.level).rev() {
            let parent = &self.groups[grp.ancestors[lvl]];
            let child = &self.groups[grp.ancestors[lvl + 1]];
            let child_inuse_sum = parent
                .child_inuse_sum
                .wrapping_add(inuse as u64)
                .wrapping_sub(child.inuse as u64);
            hwm = (hwm as u64 * inuse as u64 / child_inuse_sum.max(1)) as u32;
            inuse = ceil_div(
                (parent.active as u64).wrapping_mul(child_inuse_sum),
                parent.child_active_sum,
            ) as u32;
        }
        hwm.max(1)
    }

    /// linux block/blk-iocost.c: weight_updated()
    /// — the effective weight is the per-device override or the cgroup
    /// default; an active group propagates the change at once.
    pub(super) fn weight_updated(&mut self, g: usize, now: &Now) {
        let grp = &self.groups[g];
        let weight = if grp.cfg_weight != 0 {
            grp.cfg_weight
        } else {
            grp.dfl_weight
        };
        if weight != grp.weight && grp.active != 0 {
            let inuse = grp.inuse;
            self.propagate_weights(g, weight, inuse, true, now);
        }
        self.groups[g].weight = weight;
    }
}
