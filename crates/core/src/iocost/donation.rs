//! Work conservation: a group that does not use its share donates it by
//! lowering its `inuse`, computed so that every non-donating group keeps
//! its relative share (Andy Newell's method, `transfer_surpluses`).
//!
//! Derivation, in our words. Let `b` be a subtree's absolute budget
//! (hweight_active), split into the donating part `t` and the rest `f`;
//! primes are values after donation and `r` is the root. Donors shrink from
//! `t` to `t'`; everyone else is scaled by the same factor
//! `γ = (1 − t'_r) / (1 − t_r)` so the total stays 1. A node's new budget is
//! `b' = γ·(b − t) + t'`. To realise it with local weights, each level's
//! weight sum is adjusted: the non-donating part of the children's weights
//! `s_f` is kept, the donating part `s_t` is scaled by `w'_t / w_t`
//! (`s' = s_f + s_t·w'_t/w_t`), and a node's new inuse is `w' = s'_p·b'/b'_p`.
//! At the root `s' = s·(1 − t_r)/(1 − t'_r)`. Every division rounds up, as
//! in the kernel, which is why the kernel clamps `t ≤ b` and `t' ≤ t − 1`.
//!
//! Worked example: root{A(100), B(100)}, A uses 10% of the device, B wants
//! more. `hwa = 32768` each; A's after-donation target is
//! `usage / (1 − 0.5 + delta)` ≈ 13% → A's inuse is lowered so that its
//! hweight_inuse is ≈ 13% and B's becomes ≈ 87%.

use super::vtime::{Now, MARGIN_TARGET_PCT, WEIGHT_ONE};
use super::weights::ceil_div;
use super::IoCost;
use crate::math::mul_div_floor;

impl IoCost {
    /// linux block/blk-iocost.c: hweight_after_donation()
    /// — the hweight_inuse `g` should donate down to: 1 for debtors, `hwm`
    /// (no donation) with waiters or under 10% of a period of budget; else
    /// throw away budget above the 50% target (as vrate error) and choose
    /// `usage / (1 − target + delta)` so the budget returns to the target
    /// by the end of the next period at the observed usage.
    pub(super) fn hweight_after_donation(
        &mut self,
        g: usize,
        old_hwi: u32,
        hwm: u32,
        usage: u32,
        now: &Now,
    ) -> u32 {
        let grp = &self.groups[g];
        if grp.abs_vdebt != 0 {
            return 1;
        }
        let mut vtime = grp.vtime;
        if !grp.waitq.is_empty() || vtime.after(now.vnow.minus(self.margins.min as u64)) {
            return hwm;
        }
        let excess = now.vnow.since(vtime).wrapping_sub(self.margins.target);
        if excess > 0 {
            let grp = &mut self.groups[g];
            grp.vtime = grp.vtime.plus(excess as u64);
            grp.done_vtime = grp.done_vtime.plus(excess as u64);
            vtime = grp.vtime;
            let lost = mul_div_floor(excess as u64, old_hwi as u64, WEIGHT_ONE as u64);
            self.vtime_err = self.vtime_err.wrapping_sub(lost as i64);
        }
        let one = WEIGHT_ONE as i128;
        let elapsed = (now.vnow.since(self.period_at_vtime) as i128).max(1);
        let delta = one * now.vnow.since(vtime) as i128 / elapsed;
        let target = one * MARGIN_TARGET_PCT as i128 / 100;
        let denom = one - target + delta;
        // `WEIGHT_ONE * usage` is a 32-bit product in the kernel: usage =
        // 100% (65536) wraps to 0 and gives the minimum (reproduced)
        let numer = WEIGHT_ONE.wrapping_mul(usage) as i128;
        let new_hwi = if denom > 0 {
            numer / denom
        } else {
            hwm as i128
        };
        new_hwi.clamp(1, hwm.max(1) as i128) as u32
    }

    /// linux block/blk-iocost.c: transfer_surpluses()
    /// — given donors with `hweight_donating` (= hwa) and
    /// `hweight_after_donation` set, lower their inuse so the tree
    /// distributes the surplus to non-donors proportionally (see the header
    /// of this file for the derivation). Each step below is one of the
    /// kernel function's commented blocks, in its order. The steps stay out
    /// of line: inlined, they changed the code layout of `on_timer`, which
    /// then ran 0.5–1% more instructions per period (`bench iocost`).
    pub(super) fn transfer_surpluses(&mut self, surpluses: &[usize], now: &Now) {
        self.scale_down_after_donation(surpluses);
        let mut walk = Vec::new();
        for &g in surpluses {
            self.build_inner_walk(g, &mut walk);
        }
        let Some(&root) = walk.first() else {
            return;
        };
        self.reset_inner_donation(&walk);
        self.propagate_donation_up(surpluses, &walk);
        self.inner_hwa_and_clamp(&walk);
        let gamma = self.donation_gamma(root);
        for &g in &walk {
            self.adjust_inner(g, gamma);
        }
        self.adjust_donor_inuse(surpluses, now);
        // the kernel's "walk list should be dropped after use"
        for &g in &walk {
            self.groups[g].on_walk = false;
        }
    }

    /// First block of transfer_surpluses(): keep Σ after-donation below
    /// WEIGHT_ONE by scaling down, equally, the donors above their hwa.
    #[inline(never)]
    fn scale_down_after_donation(&mut self, surpluses: &[usize]) {
        let (mut after_sum, mut over_sum) = (0u32, 0u32);
        let mut over_hwa = Vec::new();
        for &g in surpluses {
            let (hwa, _) = self.current_hweight(g);
            let after = self.groups[g].hweight_after_donation;
            after_sum = after_sum.wrapping_add(after);
            if after > hwa {
                over_sum = over_sum.wrapping_add(after);
                over_hwa.push(g);
            }
        }
        let over_target = if after_sum >= WEIGHT_ONE {
            let over_delta = after_sum - (WEIGHT_ONE - 1);
            over_sum.wrapping_sub(over_delta)
        } else {
            0
        };
        if over_target != 0 {
            for &g in &over_hwa {
                let grp = &mut self.groups[g];
                grp.hweight_after_donation = mul_div_floor(
                    grp.hweight_after_donation as u64,
                    over_target as u64,
                    (over_sum as u64).max(1),
                ) as u32;
            }
        }
    }

    /// transfer_surpluses()'s "prepare for donation adjustment
    /// calculations": zero the inner nodes' sums and donation budgets.
    #[inline(never)]
    fn reset_inner_donation(&mut self, walk: &[usize]) {
        for &g in walk {
            let grp = &mut self.groups[g];
            grp.child_adjusted_sum = 0;
            grp.hweight_donating = 0;
            grp.hweight_after_donation = 0;
        }
    }

    /// transfer_surpluses()'s "propagate the donating budget (b_t) and
    /// after donation budget (b'_t) up the hierarchy": donors, then the
    /// inner nodes bottom-up.
    #[inline(never)]
    fn propagate_donation_up(&mut self, surpluses: &[usize], walk: &[usize]) {
        for &g in surpluses.iter().chain(walk.iter().rev()) {
            if let Some(p) = self.groups[g].parent() {
                let (d, a) = (
                    self.groups[g].hweight_donating,
                    self.groups[g].hweight_after_donation,
                );
                let pg = &mut self.groups[p];
                pg.hweight_donating = pg.hweight_donating.wrapping_add(d);
                pg.hweight_after_donation = pg.hweight_after_donation.wrapping_add(a);
            }
        }
    }

    /// transfer_surpluses()'s global donation rate: gamma = (1 − t'_r) /
    /// (1 − t_r), the factor non-donating budgets are scaled by.
    #[inline(never)]
    fn donation_gamma(&self, root: usize) -> u32 {
        let root_g = &self.groups[root];
        // the numerator is a 32-bit product in the kernel
        ceil_div(
            WEIGHT_ONE
                .wrapping_sub(root_g.hweight_after_donation)
                .wrapping_mul(WEIGHT_ONE) as u64,
            (WEIGHT_ONE - root_g.hweight_donating.min(WEIGHT_ONE - 1)) as u64,
        ) as u32
    }

    /// transfer_surpluses()'s "determine leaf adjustments": each donor's
    /// new inuse `w' = s'_p·b'/b'_p`, propagated without commit (debtors
    /// are skipped: debt handling owns their inuse).
    #[inline(never)]
    fn adjust_donor_inuse(&mut self, surpluses: &[usize], now: &Now) {
        for &g in surpluses {
            if self.groups[g].abs_vdebt != 0 {
                // debt handling owns inuse
                continue;
            }
            let Some(p) = self.groups[g].parent() else {
                continue;
            };
            let inuse = ceil_div(
                self.groups[p]
                    .child_adjusted_sum
                    .wrapping_mul(self.groups[g].hweight_after_donation as u64),
                self.groups[p].hweight_inuse as u64,
            ) as u32;
            let active = self.groups[g].active;
            if self.trace_on {
                let grp = &self.groups[g];
                let hwi = (grp.hweight_inuse, grp.hweight_after_donation);
                self.record_inuse_transfer(g, now, (grp.inuse, inuse), hwi);
            }
            self.propagate_weights_nocommit(g, active, inuse, true, now);
        }
    }

    /// transfer_surpluses()'s "calculate inner hwa's (b)": inner nodes'
    /// hwa, pre-order, with the donation values clamped into range
    /// (`t ≤ b`, `t' ≤ t − 1`), as low-resolution round-ups can push them
    /// out.
    fn inner_hwa_and_clamp(&mut self, walk: &[usize]) {
        for &g in walk {
            if let Some(p) = self.groups[g].parent() {
                let (p_hwa, p_sum) = (
                    self.groups[p].hweight_active,
                    self.groups[p].child_active_sum,
                );
                let active = self.groups[g].active;
                self.groups[g].hweight_active =
                    ceil_div(p_hwa as u64 * active as u64, p_sum) as u32;
            }
            let grp = &mut self.groups[g];
            grp.hweight_donating = grp.hweight_donating.min(grp.hweight_active);
            grp.hweight_after_donation = grp
                .hweight_after_donation
                .min(grp.hweight_donating.wrapping_sub(1));
        }
    }

    /// One inner node of transfer_surpluses(): `b' = γ·b_f + t'`,
    /// `w' = s'_p·b'/b'_p`, `s' = s_f + s_t·w'_t/w_t` (root: `s' = s·b_pf/b'_pf`).
    fn adjust_inner(&mut self, g: usize, gamma: u32) {
        let Some(p) = self.groups[g].parent() else {
            let grp = &mut self.groups[g];
            grp.child_adjusted_sum = ceil_div(
                grp.child_active_sum
                    .wrapping_mul(WEIGHT_ONE.wrapping_sub(grp.hweight_donating) as u64),
                WEIGHT_ONE.wrapping_sub(grp.hweight_after_donation) as u64,
            );
            return;
        };
        let (p_adj, p_hwi) = (
            self.groups[p].child_adjusted_sum,
            self.groups[p].hweight_inuse,
        );
        let grp = &mut self.groups[g];
        let hwa = grp.hweight_active;
        let hwi = ceil_div(
            gamma as u64 * hwa.wrapping_sub(grp.hweight_donating) as u64,
            WEIGHT_ONE as u64,
        ) as u32;
        grp.hweight_inuse = hwi.wrapping_add(grp.hweight_after_donation);
        let inuse = ceil_div(p_adj.wrapping_mul(grp.hweight_inuse as u64), p_hwi as u64) as u32;
        let st = ceil_div(
            grp.child_active_sum
                .wrapping_mul(grp.hweight_donating as u64),
            hwa as u64,
        );
        let sf = grp.child_active_sum.wrapping_sub(st);
        let wpt = ceil_div(grp.active as u64 * grp.hweight_donating as u64, hwa as u64);
        let wptp = ceil_div(
            inuse as u64 * grp.hweight_after_donation as u64,
            grp.hweight_inuse as u64,
        );
        grp.child_adjusted_sum = sf.wrapping_add(ceil_div(st.wrapping_mul(wptp), wpt));
    }
}
