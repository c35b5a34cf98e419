//! The issue path: activation, the in-period inuse snapback, the fast
//! path, debt and issuer delay, the FIFO wait queue with its wake-up timer,
//! and completion accounting (vtime done + latency QoS samples).

use super::group::Waiter;
use super::model::{QOS_RLAT, QOS_WLAT};
use super::vtime::{
    abs_cost_to_cost, cost_to_abs_cost, delay_for_overage_pct, Now, INUSE_ADJ_STEP_PCT, MIN_DELAY,
    VTIME_PER_NSEC,
};
use super::weights::ceil_div;
use super::IoCost;
use crate::controller::Verdict;
use crate::io::{Io, IoFlags, IoOp};
use crate::math::div_round_up;

/// Bound on snapback steps. The step is `ceil(active × 25 / 100)` computed
/// in 32 bits as the kernel does, which wraps for weights ≥ 2622: then the
/// step is small and reaching `active` takes up to 174,685 steps (weight
/// 5243). The bound is above that, so it never binds for a valid weight.
const MAX_INUSE_STEPS: u32 = 1 << 18;

impl IoCost {
    /// `ioc_now`: the device vtime at `ns`.
    pub(super) fn snapshot(&self, ns: u64) -> Now {
        let us = ns / 1_000;
        let vnow = self.period_at_vtime.plus(
            us.wrapping_sub(self.period_at_us)
                .wrapping_mul(self.vtime_rate),
        );
        Now {
            now_ns: ns,
            now_us: us,
            vnow,
        }
    }

    /// linux block/blk-iocost.c: iocg_activate()
    /// — an idle group joins the active list with exactly the target budget
    /// (`vtime = vnow − margins.target`; idle credit and old overage are
    /// discarded) and its remembered inuse; the first one starts the timer.
    /// `false`: the leaf-only rule refuses it (its IO goes uncontrolled).
    pub(super) fn activate(&mut self, g: usize, now: &mut Now) -> bool {
        *now = self.snapshot(now.now_ns);
        if self.groups[g].on_active_list {
            self.groups[g].active_period = self.cur_period;
            return true;
        }
        if self.groups[g].child_active_sum != 0 {
            return false;
        }
        let last_period = self.groups[g].active_period;
        self.groups[g].active_period = self.cur_period;
        let level = self.groups[g].level;
        for i in (1..level).rev() {
            if self.groups[self.groups[g].ancestors[i]].on_active_list {
                return false;
            }
        }
        let vtarget = now.vnow.minus(self.margins.target as u64);
        let grp = &mut self.groups[g];
        let delta = vtarget.since(grp.vtime);
        grp.vtime = grp.vtime.plus_signed(delta);
        grp.done_vtime = grp.done_vtime.plus_signed(delta);
        grp.hweight_gen = self.hweight_gen.wrapping_sub(1);
        grp.on_active_list = true;
        let (weight, last_inuse) = (grp.weight, grp.last_inuse);
        // list_add: the newest is at the head
        self.active_list.push_front(g);
        let inuse = if last_inuse != 0 { last_inuse } else { weight };
        self.propagate_weights(g, weight, inuse, true, now);
        if self.trace_on {
            self.record_iocg(g, true, last_period, now);
        }
        self.groups[g].activated_at_us = now.now_us;
        if !self.running {
            self.running = true;
            self.dfgv_period_at_us = now.now_us;
            self.dfgv_period_rem_us = 0;
            self.start_period(now);
        }
        true
    }

    /// linux block/blk-iocost.c: adjust_inuse_and_calc_cost()
    /// — the relative cost at the current hweight_inuse; if the group
    /// donated weight and its margin shrank below both the saved margin and
    /// 20% of a period, raise inuse in 25%-of-active steps until the IO fits.
    pub(super) fn adjust_inuse_and_calc_cost(&mut self, g: usize, abs_cost: u64, now: &Now) -> u64 {
        let vtime = self.groups[g].vtime;
        let (_, mut hwi) = self.current_hweight(g);
        let mut cost = abs_cost_to_cost(abs_cost, hwi);
        let margin = now.vnow.since(vtime).wrapping_sub(cost as i64);
        let grp = &self.groups[g];
        if grp.abs_vdebt != 0 {
            return cost;
        }
        if margin >= grp.saved_margin || margin >= self.margins.low || grp.inuse == grp.active {
            return cost;
        }
        if !grp.on_active_list {
            return cost;
        }
        let active = grp.active;
        // u32 × int in the kernel: wraps for large weights (reproduced)
        let adj_step = ceil_div(active.wrapping_mul(INUSE_ADJ_STEP_PCT as u32) as u64, 100) as u32;
        let (old_inuse, old_hwi) = (grp.inuse, hwi);
        let mut new_inuse = grp.inuse;
        for _ in 0..MAX_INUSE_STEPS {
            new_inuse = new_inuse.saturating_add(adj_step);
            self.propagate_weights(g, active, new_inuse, true, now);
            hwi = self.current_hweight(g).1;
            cost = abs_cost_to_cost(abs_cost, hwi);
            let grp = &self.groups[g];
            if !vtime.plus(cost).after(now.vnow) || grp.inuse == grp.active {
                break;
            }
        }
        if self.trace_on {
            let inuse = (old_inuse, self.groups[g].inuse);
            self.record_inuse_adjust(g, now, inuse, (old_hwi, hwi));
        }
        cost
    }

    /// linux block/blk-iocost.c: iocg_commit_bio() — charge the group;
    /// returns the charge, which the caller stores on the IO it belongs
    /// to ([`Io::cost_vtime`], the kernel's `bio->bi_iocost_cost`): the
    /// IO's own, or the request a merged bio joined (both complete
    /// together).
    pub(super) fn commit_bio(&mut self, g: usize, abs_cost: u64, cost: u64) -> u64 {
        let grp = &mut self.groups[g];
        grp.vtime = grp.vtime.plus(cost);
        grp.abs_vusage = grp.abs_vusage.wrapping_add(abs_cost);
        grp.inflight_cost = grp.inflight_cost.wrapping_add(cost);
        cost
    }

    /// linux block/blk-iocost.c: ioc_rqos_throttle() — `Dispatch`, or
    /// `Held` when the submitter sleeps in the group's wait queue.
    pub(super) fn throttle(&mut self, io: &mut Io, ns: u64) -> Verdict {
        let g = io.group.idx();
        if !self.is_online(g) {
            let n = self.groups.len();
            self.fault.raise(|| {
                format!(
                    "IO {:?} of group {g}, which is not among the {n} online groups",
                    io.id
                )
            });
            return Verdict::Dispatch;
        }
        if !self.enabled || self.groups[g].level == 0 {
            return Verdict::Dispatch;
        }
        let abs_cost = self.params.vtime_cost(io, self.groups[g].cursor, false);
        if abs_cost == 0 {
            return Verdict::Dispatch;
        }
        // iocg_activate() takes the ioc_now snapshot
        let mut now = Now {
            now_ns: ns,
            ..Now::default()
        };
        if !self.activate(g, &mut now) {
            return Verdict::Dispatch;
        }
        self.groups[g].cursor = io.sector().wrapping_add(io.sectors());
        let vtime = self.groups[g].vtime;
        let cost = self.adjust_inuse_and_calc_cost(g, abs_cost, &now);
        let grp = &self.groups[g];
        if grp.waitq.is_empty() && grp.abs_vdebt == 0 && vtime.plus(cost).before_eq(now.vnow) {
            io.cost_vtime = self.commit_bio(g, abs_cost, cost);
            return Verdict::Dispatch;
        }
        // over budget: REQ_META / REQ_SWAP-like IO is issued as debt
        let use_debt =
            io.flags.contains(IoFlags::META) || io.flags.contains(IoFlags::ISSUE_AS_ROOT);
        let mut pay_debt = use_debt || grp.abs_vdebt != 0;
        if !grp.on_active_list {
            io.cost_vtime = self.commit_bio(g, abs_cost, cost);
            return Verdict::Dispatch;
        }
        if use_debt {
            self.incur_debt(g, abs_cost, &now);
            // the delay would make the task sleep on return to userspace
            self.kick_delay(g, &now);
            return Verdict::Dispatch;
        }
        // waiters always have maximum inuse
        let grp = &self.groups[g];
        if grp.abs_vdebt == 0 && grp.inuse != grp.active {
            pay_debt = true;
            let active = grp.active;
            self.propagate_weights(g, active, active, true, &now);
        }
        self.groups[g].waitq.push_back(Waiter { io: *io, abs_cost });
        self.waiting += 1;
        self.kick_waitq(g, pay_debt, &now);
        // committed by its own kick: it never sleeps
        if self.out.last().is_some_and(|x| x.id == io.id) {
            if let Some(charged) = self.out.pop() {
                io.cost_vtime = charged.cost_vtime;
            }
            return Verdict::Dispatch;
        }
        Verdict::Held
    }

    /// linux block/blk-iocost.c: ioc_rqos_merge() — bio `io` joins request
    /// `rq` (its extent before the merge; the request "carries a cost"
    /// when its [`Io::cost_vtime`] is set, as `rq->bio->bi_iocost_cost`).
    /// A merged bio pays its size cost only (no seek base:
    /// `Params::vtime_cost` with `is_merge`); it cannot wait, so over
    /// budget it becomes debt. A charged bio's cost is added to the
    /// request's charge: `ioc_rqos_done_bio` runs for every bio of the request when
    /// it completes, which the request's completion does here. `true`
    /// when the debt put the group in issuer delay (the kernel then calls
    /// `blkcg_schedule_throttle`: the submitter sleeps
    /// [`IoCost::issuer_delay`] on its way back to userspace).
    pub fn merge(&mut self, io: &Io, rq: &mut Io, at: crate::time::Instant) -> bool {
        let ns = self.clock(at);
        let g = io.group.idx();
        if !self.is_online(g) {
            let n = self.groups.len();
            self.fault.raise(|| {
                format!(
                    "merge of IO {:?} of group {g}, which is not among the {n} online groups",
                    io.id
                )
            });
            return false;
        }
        if !self.enabled || self.groups[g].level == 0 {
            return false;
        }
        let abs_cost = self.params.vtime_cost(io, self.groups[g].cursor, true);
        if abs_cost == 0 {
            return false;
        }
        let now = self.snapshot(ns);
        // priced like a submitted bio: a group that donated takes its
        // weight back when it has no margin left
        let cost = self.adjust_inuse_and_calc_cost(g, abs_cost, &now);
        // a back merge into the request ending at the cursor moves it
        let bio_end = io.sector().wrapping_add(io.sectors());
        let (rq_start, rq_end) = (rq.sector(), rq.sector().wrapping_add(rq.sectors()));
        if rq_start < bio_end && rq_end == self.groups[g].cursor {
            self.groups[g].cursor = bio_end;
        }
        let rq_charged = rq.cost_vtime != 0;
        if rq_charged && self.groups[g].vtime.plus(cost).before_eq(now.vnow) {
            rq.cost_vtime = rq
                .cost_vtime
                .wrapping_add(self.commit_bio(g, abs_cost, cost));
            return false;
        }
        if self.groups[g].on_active_list {
            self.incur_debt(g, abs_cost, &now);
            self.kick_delay(g, &now)
        } else {
            rq.cost_vtime = rq
                .cost_vtime
                .wrapping_add(self.commit_bio(g, abs_cost, cost));
            false
        }
    }

    /// How long a task of `group` sleeps on its way back to userspace
    /// after `blkcg_schedule_throttle` (linux block/blk-cgroup.c:
    /// blkcg_maybe_throttle_blkg()): the largest `delay_nsec` set by
    /// `blkcg_set_delay` on the group or an ancestor, unscaled and
    /// unclamped (iocost's own cap is 250 ms). None: no delay in effect.
    pub fn issuer_delay(&self, group: crate::GroupId) -> Option<crate::time::Duration> {
        let grp = self.groups.get(group.idx())?;
        grp.ancestors
            .iter()
            .filter_map(|&a| {
                let x = &self.groups[a];
                (x.use_delay && x.delay_nsec > 0).then_some(x.delay_nsec)
            })
            .max()
            .map(crate::time::Duration)
    }

    /// linux block/blk-iocost.c: iocg_incur_debt() — debtors donate all but
    /// the minimum inuse until paid off.
    pub(super) fn incur_debt(&mut self, g: usize, abs_cost: u64, now: &Now) {
        if self.groups[g].abs_vdebt == 0 && abs_cost != 0 {
            self.groups[g].indebt_since_us = Some(now.now_us);
            let active = self.groups[g].active;
            self.propagate_weights(g, active, 0, false, now);
        }
        let grp = &mut self.groups[g];
        grp.abs_vdebt = grp.abs_vdebt.wrapping_add(abs_cost);
        grp.abs_vusage = grp.abs_vusage.wrapping_add(abs_cost);
    }

    /// linux block/blk-iocost.c: iocg_pay_debt() — paid in full restores inuse.
    fn pay_debt(&mut self, g: usize, abs_vpay: u64, now: &Now) {
        let grp = &mut self.groups[g];
        grp.abs_vdebt -= abs_vpay.min(grp.abs_vdebt);
        if grp.abs_vdebt == 0 {
            let since = grp.indebt_since_us.take().unwrap_or(now.now_us);
            grp.stat.indebt_us = grp
                .stat
                .indebt_us
                .wrapping_add(now.now_us.saturating_sub(since));
            let (active, last_inuse) = (grp.active, grp.last_inuse);
            self.propagate_weights(g, active, last_inuse, false, now);
        }
    }

    /// linux block/blk-iocost.c: iocg_kick_delay()
    /// — the delay decays by half per second; a new one follows the overage
    /// (vtime + debt beyond vnow, in % of a period) on the 500%..25000%
    /// ramp; the larger applies. `true` if a delay (≥ 250 µs) is in effect.
    pub(super) fn kick_delay(&mut self, g: usize, now: &Now) -> bool {
        if now.now_us < self.groups[g].delay_at_us {
            return false;
        }
        let grp = &self.groups[g];
        let shift = (now.now_us - grp.delay_at_us) / 1_000_000;
        let mut delay = if grp.delay_us != 0 && shift < 64 {
            grp.delay_us >> shift
        } else {
            0
        };
        let (hwa, _) = self.current_hweight(g);
        let grp = &self.groups[g];
        let vover = grp
            .vtime
            .plus(abs_cost_to_cost(grp.abs_vdebt, hwa))
            .since(now.vnow);
        let period_vtime = (self.period_us as i128 * self.vtime_base_rate as i128).max(1);
        let vover_pct = (100 * vover as i128 / period_vtime) as i64;
        let new_delay = delay_for_overage_pct(vover_pct);
        let grp = &mut self.groups[g];
        if new_delay > delay {
            grp.delay_us = new_delay;
            grp.delay_at_us = now.now_us;
            delay = new_delay;
        }
        if delay >= MIN_DELAY {
            grp.indelay_since_us.get_or_insert(now.now_us);
            // blkcg_set_delay()
            grp.use_delay = true;
            grp.delay_nsec = delay * 1_000;
            true
        } else {
            if let Some(since) = grp.indelay_since_us.take() {
                grp.stat.indelay_us = grp
                    .stat
                    .indelay_us
                    .wrapping_add(now.now_us.saturating_sub(since));
            }
            grp.delay_us = 0;
            // blkcg_clear_delay()
            grp.use_delay = false;
            false
        }
    }

    /// linux block/blk-iocost.c: iocg_kick_waitq()
    /// — pay debt from the budget (if allowed), then wake waiters in FIFO
    /// order while the budget covers their cost at the current
    /// hweight_inuse; re-arm the wake-up timer for the first one that does
    /// not fit, `ceil(shortage / base_vrate)` µs plus slack ahead.
    pub(super) fn kick_waitq(&mut self, g: usize, pay_debt: bool, now: &Now) {
        let (hwa, _) = self.current_hweight(g);
        let mut vbudget = now.vnow.since(self.groups[g].vtime);
        if pay_debt && self.groups[g].abs_vdebt != 0 && vbudget > 0 {
            let abs_vbudget = cost_to_abs_cost(vbudget as u64, hwa);
            let abs_vpay = abs_vbudget.min(self.groups[g].abs_vdebt);
            let vpay = abs_cost_to_cost(abs_vpay, hwa);
            let grp = &mut self.groups[g];
            grp.vtime = grp.vtime.plus(vpay);
            grp.done_vtime = grp.done_vtime.plus(vpay);
            self.pay_debt(g, abs_vpay, now);
            vbudget = vbudget.wrapping_sub(vpay as i64);
        }
        if self.groups[g].abs_vdebt != 0 || self.groups[g].delay_us != 0 {
            self.kick_delay(g, now);
        }
        if self.groups[g].abs_vdebt != 0 {
            let vdebt = abs_cost_to_cost(self.groups[g].abs_vdebt, hwa) as i64;
            vbudget = vbudget.wrapping_sub(vdebt).min(0);
        }
        let (_, hw_inuse) = self.current_hweight(g);
        // read only the first waiter's cost until it is known to fit
        while let Some(abs_cost) = self.groups[g].waitq.front().map(|w| w.abs_cost) {
            let cost = abs_cost_to_cost(abs_cost, hw_inuse);
            vbudget = vbudget.wrapping_sub(cost as i64);
            if vbudget < 0 {
                break;
            }
            let Some(w) = self.groups[g].waitq.pop_front() else {
                break;
            };
            self.waiting -= 1;
            let mut io = w.io;
            io.cost_vtime = self.commit_bio(g, w.abs_cost, cost);
            self.out.push(io);
        }
        let slack = self.timer_slack_ns;
        let base = self.vtime_base_rate;
        let grp = &mut self.groups[g];
        if grp.waitq.is_empty() {
            if let Some(since) = grp.wait_since_us.take() {
                grp.stat.wait_us = grp
                    .stat
                    .wait_us
                    .wrapping_add(now.now_us.saturating_sub(since));
            }
            return;
        }
        grp.wait_since_us.get_or_insert(now.now_us);
        if vbudget >= 0 {
            return;
        }
        let vshortage = vbudget.unsigned_abs();
        let expires = now
            .now_ns
            .saturating_add(div_round_up(vshortage, base.max(1)).saturating_mul(1_000))
            .saturating_add(slack);
        if self
            .waitq_timers
            .get(g)
            .is_some_and(|o| o.abs_diff(expires) <= slack)
        {
            return;
        }
        self.waitq_timers.set(g, Some(expires));
    }

    /// linux block/blk-iocost.c: iocg_waitq_timer_fn().
    pub(super) fn waitq_timer_fired(&mut self, g: usize, ns: u64) {
        self.waitq_timers.set(g, None);
        let now = self.snapshot(ns);
        let pay_debt = self.groups[g].abs_vdebt != 0;
        self.kick_waitq(g, pay_debt, &now);
    }

    /// linux block/blk-iocost.c: ioc_rqos_done_bio() + ioc_rqos_done()
    /// — the IO's cost is done; a read/write request is a latency sample:
    /// met if its time since allocation, less its size-only cost, is within
    /// rlat/wlat; the wait for a request slot is the rq_wait signal.
    pub(super) fn complete(&mut self, io: &Io, alloc_ns: u64, start_ns: u64, ns: u64) {
        if io.cost_vtime != 0 {
            let (g, cost) = (io.group.idx(), io.cost_vtime);
            let Some(grp) = self.groups.get_mut(g) else {
                let n = self.groups.len();
                self.fault.raise(|| {
                    format!(
                        "IO {:?} completed with a charge for group {g} of {n}",
                        io.id
                    )
                });
                return;
            };
            grp.done_vtime = grp.done_vtime.plus(cost);
            grp.inflight_cost = grp.inflight_cost.wrapping_sub(cost);
            self.free_if_done(g, ns);
        }
        if !self.enabled {
            return;
        }
        let (rw, pidx) = match io.op {
            IoOp::Read => (0, QOS_RLAT),
            IoOp::Write => (1, QOS_WLAT),
            IoOp::Discard | IoOp::Flush => return,
        };
        let on_q_ns = ns.saturating_sub(alloc_ns);
        let rq_wait_ns = start_ns.saturating_sub(alloc_ns);
        let size_nsec = self.params.size_vtime_cost(io) / VTIME_PER_NSEC;
        let lat_ns = self.params.qos[pidx] as u64 * 1_000;
        if on_q_ns <= size_nsec || on_q_ns - size_nsec <= lat_ns {
            self.lat.nr_met[rw] = self.lat.nr_met[rw].wrapping_add(1);
        } else {
            self.lat.nr_missed[rw] = self.lat.nr_missed[rw].wrapping_add(1);
        }
        self.lat.rq_wait_ns = self.lat.rq_wait_ns.wrapping_add(rq_wait_ns);
    }
}
