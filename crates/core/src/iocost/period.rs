//! The period timer (`ioc_timer_fn`) and what it drives: idle detection
//! and deactivation, usage accounting, donation decisions, the busy_level /
//! vrate controller, autop class re-evaluation, debt forgiveness and vrate
//! error compensation; plus parameter refresh and period start.

use super::model::{autop, AutopClass, Params, QOS_MAX, QOS_MIN, QOS_RPPM, QOS_WPPM};
use super::variant::NoDoneRule;
use super::vtime::{
    adjust_base_vrate, cost_to_abs_cost, timer_slack_ns, usecs_to_jiffies, vrate_bound,
    vrate_compensation, Margins, Now, AUTOP_CYCLE_NSEC, BUSY_LEVEL_MAX, DFGV_PERIOD,
    DFGV_USAGE_PCT, MAX_LAGGING_PERIODS, MILLION, RQ_WAIT_BUSY_PCT, UNBUSY_THR_PCT, VTIME_PER_USEC,
    WEIGHT_ONE,
};
use super::weights::ceil_div;
use super::IoCost;
use crate::math::mul_div_floor;
use crate::time::Jiffies;

/// Completion samples since the last period (the kernel's per-CPU
/// `ioc_pcpu_stat`, summed).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LatCounters {
    pub nr_met: [u32; 2],
    pub nr_missed: [u32; 2],
    pub rq_wait_ns: u64,
}

/// The timer's per-period signals (the `iocost_ioc_vrate_adj` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodSignals {
    /// What the period's completions said (`ioc_lat_stat`).
    pub lat: LatStat,
    /// `nr_lagging`: active groups with IO in flight for more than a period
    /// (they keep vrate from going up).
    pub nr_lagging: u32,
    /// `nr_shortages`: active groups short of budget this period (waiters,
    /// or less than `margins.low` left) with nothing to donate.
    pub nr_shortages: u32,
    /// Groups with budget to spare this period (the `surpluses` list of
    /// `ioc_timer_fn`): the donors.
    pub nr_donors: u32,
    /// Groups left with debt or a submitter delay after the period's kick
    /// (`nr_debtors` of `ioc_check_iocgs`).
    pub nr_debtors: u32,
    /// `busy_level` before this period's update.
    pub prev_busy_level: i32,
    /// Base vrate before this period's adjustment (vtime per µs).
    pub prev_vrate: u64,
    /// `busy_level` when the base vrate was adjusted (what
    /// `iocost_ioc_vrate_adj` prints; a timer that then finds no active
    /// group resets it to 0).
    pub busy_level: i32,
    /// `ioc->vtime_rate` during the period that ended: the tracepoint's
    /// old vrate (vtime per µs).
    pub vtime_rate: u64,
}

/// What the period's completions said (`ioc_lat_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatStat {
    /// Completions that missed their latency target (`rlat` / `wlat`), ppm of
    /// the period's completions, by direction (read, write).
    pub missed_ppm: [u32; 2],
    /// Time IOs waited for a request slot, % of the period (`rq_wait_pct`).
    pub rq_wait_pct: u32,
    /// Completions this period (the seed fix's `nr_done`).
    pub nr_done: u32,
}

/// linux block/blk-iocost.c: the busy_level update of ioc_timer_fn(),
/// with the three rules for a period without completions.
///
/// * `Reset` (≤ 7.0): no completions read as "QoS met with margin".
/// * `Hold` (f91ffe89b201, 7.1): no completions but lagging IO → unchanged.
/// * `HoldClamp` (v2 of the patch, not merged): no completions → lagging:
///   clamp to [−4, 4]; shortages: `min(level, 0)`; else 0.
pub fn next_busy_level(
    rule: NoDoneRule,
    busy_level: i32,
    lat: &LatStat,
    ppm_thr: [u32; 2],
    nr_lagging: u32,
    nr_shortages: u32,
) -> i32 {
    let mut level = busy_level;
    let no_done = lat.nr_done == 0;
    let missed = |d: usize, scale: u32| lat.missed_ppm[d] > ppm_thr[d] * scale / 100;
    if no_done && rule == NoDoneRule::Hold && nr_lagging > 0 {
        // saturation unknown: keep the level
    } else if no_done && rule == NoDoneRule::HoldClamp {
        level = if nr_lagging > 0 {
            level.clamp(-4, 4)
        } else if nr_shortages > 0 {
            level.min(0)
        } else {
            0
        };
    } else if lat.rq_wait_pct > RQ_WAIT_BUSY_PCT || missed(0, 100) || missed(1, 100) {
        // clearly missing QoS targets: slow down
        level = level.max(0) + 1;
    } else if lat.rq_wait_pct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
        && !missed(0, UNBUSY_THR_PCT)
        && !missed(1, UNBUSY_THR_PCT)
    {
        if nr_shortages > 0 {
            // throttling while the device has spare capacity
            level = level.min(0);
            if nr_lagging == 0 {
                level -= 1;
            }
        } else {
            // nobody throttled, device not saturated: coast
            level = 0;
        }
    } else {
        // inside the hysteresis band
        level = 0;
    }
    level.clamp(-BUSY_LEVEL_MAX, BUSY_LEVEL_MAX)
}

/// Add the time since `since` to `acc` and restart the interval (the
/// flush of `wait_since_us`/`indebt_since_us`/`indelay_since_us` in ioc_check_iocgs()).
fn flush_since(acc: &mut u64, since: &mut Option<u64>, now: u64) {
    if let Some(s) = since {
        *acc = acc.wrapping_add(now.saturating_sub(*s));
        *s = now;
    }
}

impl IoCost {
    /// linux block/blk-iocost.c: ioc_autop_idx()
    pub(super) fn autop_select(&mut self, now_ns: u64) -> AutopClass {
        if self.cfg.rotational {
            return AutopClass::Hdd;
        }
        if self.cfg.queue_depth == 1 {
            return AutopClass::SsdQd1;
        }
        let idx = match self.autop_idx {
            Some(c) if c >= AutopClass::SsdDfl => c,
            _ => return AutopClass::SsdDfl,
        };
        if self.user_qos || self.user_model {
            return idx;
        }
        let p = autop(idx);
        let vrate_pct = self.vtime_base_rate.saturating_mul(100) / VTIME_PER_USEC;
        if p.too_fast_vrate_pct != 0 && p.too_fast_vrate_pct as u64 <= vrate_pct {
            let at = *self.autop_too_fast_at_ns.get_or_insert(now_ns);
            if now_ns.saturating_sub(at) >= AUTOP_CYCLE_NSEC {
                return idx.up();
            }
        } else {
            self.autop_too_fast_at_ns = None;
        }
        if p.too_slow_vrate_pct != 0 && p.too_slow_vrate_pct as u64 >= vrate_pct {
            let at = *self.autop_too_slow_at_ns.get_or_insert(now_ns);
            if now_ns.saturating_sub(at) >= AUTOP_CYCLE_NSEC {
                return idx.down();
            }
        } else {
            self.autop_too_slow_at_ns = None;
        }
        idx
    }

    /// linux block/blk-iocost.c: ioc_refresh_params_disk()
    /// — re-evaluate the class; on a change (or `force`) reload the
    /// non-user parameters and everything derived. A class change resets
    /// vrate to 100%. `true` if anything was refreshed.
    pub(super) fn refresh_params(&mut self, force: bool, now_ns: u64) -> bool {
        let idx = self.autop_select(now_ns);
        if Some(idx) == self.autop_idx && !force {
            return false;
        }
        if Some(idx) != self.autop_idx {
            self.vtime_rate = VTIME_PER_USEC;
            self.vtime_base_rate = VTIME_PER_USEC;
        }
        self.autop_idx = Some(idx);
        self.autop_too_fast_at_ns = None;
        self.autop_too_slow_at_ns = None;
        let a = Params::from_autop(idx);
        if !self.user_qos {
            self.params.qos = a.qos;
        }
        if !self.user_model {
            self.params.i_lcoefs = a.i_lcoefs;
        }
        // ioc_refresh_period_us + ioc_refresh_lcoefs
        self.period_us = self.params.period_us();
        self.timer_slack_ns = timer_slack_ns(self.period_us);
        self.margins = Margins::new(self.period_us, self.vtime_base_rate);
        self.params.refresh_lcoefs();
        self.vrate_min = vrate_bound(self.params.qos[QOS_MIN]);
        self.vrate_max = vrate_bound(self.params.qos[QOS_MAX]);
        true
    }

    /// linux block/blk-iocost.c: ioc_start_period() — the timer is a
    /// jiffies timer: `expires = jiffies + usecs_to_jiffies(period_us)`,
    /// run by the timer wheel a tick after `expires`
    /// ([`crate::time::timer_wheel_expiry`]): a 10 ms period at HZ=250 is
    /// 16 ms from a period start on a tick (the lab's 6.12 trace of c04:
    /// median 16.0 ms between `iocost_ioc_vrate_adj` events). The host
    /// runs the function late by [`IoCostConfig::timer_late`].
    pub(super) fn start_period(&mut self, now: &Now) {
        self.period_at_us = now.now_us;
        self.period_at_vtime = now.vnow;
        let hz = self.cfg.hz.max(1);
        // the clamped tick, not `Instant::to_jiffies`: no HZ panics here
        let tick = self.tick_ns();
        let phase = self.cfg.tick_phase_ns % tick;
        let j = Jiffies((now.now_ns + phase) / tick);
        let expires = j + usecs_to_jiffies(self.period_us, hz).max(1);
        let runs = crate::time::timer_wheel_expiry(expires, j);
        // the host runs the function late (the timer softirq behind other
        // work, or left to ksoftirqd), and the next period starts from then
        let late_ns = match &self.cfg.timer_late {
            Some(l) => l.draw_ns(&mut self.timer_late_state, self.timer_ran_late),
            None => 0,
        };
        self.timer_ran_late = late_ns >= tick;
        self.period_timer_ns = Some((runs.0.saturating_mul(tick) - phase).saturating_add(late_ns));
    }

    /// linux block/blk-iocost.c: ioc_refresh_vrate().
    fn refresh_vrate(&mut self, now: &Now) {
        let pleft =
            (self.period_at_us.wrapping_add(self.period_us)).wrapping_sub(now.now_us) as i64;
        let (rate, err) =
            vrate_compensation(self.vtime_base_rate, self.vtime_err, pleft, self.period_us);
        if let Some(r) = rate {
            self.vtime_rate = r;
        }
        self.vtime_err = err;
    }

    /// linux block/blk-iocost.c: ioc_lat_stat() — deltas since last period.
    fn lat_stat(&mut self) -> LatStat {
        let c = std::mem::take(&mut self.lat);
        let mut missed_ppm = [0u32; 2];
        for (rw, m) in missed_ppm.iter_mut().enumerate() {
            let total = c.nr_met[rw] as u64 + c.nr_missed[rw] as u64;
            if total != 0 {
                *m = ceil_div(c.nr_missed[rw] as u64 * MILLION, total) as u32;
            }
        }
        let rq_wait_pct =
            (c.rq_wait_ns as u128 * 100 / (self.period_us as u128 * 1_000).max(1)) as u32;
        let nr_done = c.nr_met[0]
            .wrapping_add(c.nr_met[1])
            .wrapping_add(c.nr_missed[0])
            .wrapping_add(c.nr_missed[1]);
        LatStat {
            missed_ppm,
            rq_wait_pct,
            nr_done,
        }
    }

    /// linux block/blk-iocost.c: iocg_is_idle()
    fn is_idle(&self, g: usize) -> bool {
        let grp = &self.groups[g];
        grp.active_period != self.cur_period && grp.done_vtime == grp.vtime
    }

    /// linux block/blk-iocost.c: ioc_check_iocgs()
    /// — kick groups with waiters/debt/delay (they may oversleep a vrate
    /// rise), deactivate idle ones (budget above target counts as vrate
    /// error). Returns the number of debtors.
    fn check_iocgs(&mut self, now: &Now) -> u32 {
        let mut nr_debtors = 0;
        let mut deactivated = false;
        // the list is only pruned after the walk, so indices stay valid
        for i in 0..self.active_list.len() {
            let g = self.active_list[i];
            let grp = &self.groups[g];
            let busy = !grp.waitq.is_empty() || grp.abs_vdebt != 0 || grp.delay_us != 0;
            if !busy && !self.is_idle(g) {
                continue;
            }
            let grp = &mut self.groups[g];
            flush_since(&mut grp.stat.wait_us, &mut grp.wait_since_us, now.now_us);
            flush_since(
                &mut grp.stat.indebt_us,
                &mut grp.indebt_since_us,
                now.now_us,
            );
            flush_since(
                &mut grp.stat.indelay_us,
                &mut grp.indelay_since_us,
                now.now_us,
            );
            if busy {
                self.kick_waitq(g, true, now);
                let grp = &self.groups[g];
                if grp.abs_vdebt != 0 || grp.delay_us != 0 {
                    nr_debtors += 1;
                }
            } else {
                let excess = now.vnow.since(grp.vtime).wrapping_sub(self.margins.target);
                if excess > 0 {
                    let (_, old_hwi) = self.current_hweight(g);
                    let lost = mul_div_floor(excess as u64, old_hwi as u64, WEIGHT_ONE as u64);
                    self.vtime_err = self.vtime_err.wrapping_sub(lost as i64);
                }
                if self.trace_on {
                    let last_period = self.groups[g].active_period;
                    self.record_iocg(g, false, last_period, now);
                }
                self.propagate_weights_nocommit(g, 0, 0, false, now);
                self.groups[g].on_active_list = false;
                deactivated = true;
            }
        }
        if deactivated {
            // list_del of each idle group, in one pass
            let groups = &self.groups;
            self.active_list.retain(|&x| groups[x].on_active_list);
        }
        self.commit_weights();
        nr_debtors
    }

    /// linux block/blk-iocost.c: iocg_flush_stat_upward()
    fn flush_stat_upward(&mut self, g: usize) {
        if let Some(p) = self.groups[g].parent() {
            let d = self.groups[g].stat.unflushed(&self.groups[g].last_stat);
            self.groups[p].stat.add(&d);
        }
        self.groups[g].last_stat = self.groups[g].stat;
    }

    /// linux block/blk-iocost.c: iocg_build_inner_walk() — append the
    /// not-yet-visited ancestors of `g`, top-down, to a pre-order list.
    pub(super) fn build_inner_walk(&mut self, g: usize, walk: &mut Vec<usize>) {
        let level = self.groups[g].level;
        let mut first = 0;
        for lvl in (0..level).rev() {
            if self.groups[self.groups[g].ancestors[lvl]].on_walk {
                first = lvl + 1;
                break;
            }
        }
        for lvl in first..level {
            let inner = self.groups[g].ancestors[lvl];
            self.groups[inner].on_walk = true;
            walk.push(inner);
        }
    }

    /// linux block/blk-iocost.c: iocg_flush_stat() — usage this period
    /// (absolute vtime at the base vrate), then up the tree.
    fn flush_stat(&mut self) {
        let mut walk = Vec::new();
        for i in 0..self.active_list.len() {
            let g = self.active_list[i];
            let base = self.vtime_base_rate.max(1);
            let grp = &mut self.groups[g];
            let delta = grp.abs_vusage.wrapping_sub(grp.last_stat_abs_vusage);
            grp.last_stat_abs_vusage = grp.abs_vusage;
            grp.usage_delta_us = delta / base;
            grp.stat.usage_us = grp.stat.usage_us.wrapping_add(grp.usage_delta_us);
            self.flush_stat_upward(g);
            self.build_inner_walk(g, &mut walk);
        }
        for &g in walk.iter().rev() {
            self.flush_stat_upward(g);
            self.groups[g].on_walk = false;
        }
    }

    /// linux block/blk-iocost.c: ioc_forgive_debts()
    /// — if the device averaged ≤ 50% usage over ≥ 100 ms, halve every debt
    /// and delay once per 100 ms elapsed (remainder carried) and kick.
    fn forgive_debts(&mut self, usage_us_sum: u64, nr_debtors: u32, now: &Now) {
        if nr_debtors == 0 {
            self.dfgv_period_at_us = now.now_us;
            self.dfgv_period_rem_us = 0;
            self.dfgv_usage_us_sum = 0;
            return;
        }
        let mut usage = usage_us_sum;
        if self.busy_level > 0 {
            usage = usage.max(self.period_us);
        }
        self.dfgv_usage_us_sum = self.dfgv_usage_us_sum.wrapping_add(usage);
        if now.now_us < self.dfgv_period_at_us.saturating_add(DFGV_PERIOD) {
            return;
        }
        let dur = now.now_us - self.dfgv_period_at_us;
        let usage_pct = (self.dfgv_usage_us_sum as u128 * 100 / dur.max(1) as u128) as u64;
        self.dfgv_period_at_us = now.now_us;
        self.dfgv_usage_us_sum = 0;
        if usage_pct > DFGV_USAGE_PCT {
            self.dfgv_period_rem_us = 0;
            return;
        }
        let cycles = dur + self.dfgv_period_rem_us;
        self.dfgv_period_rem_us = cycles % DFGV_PERIOD;
        let shift = (cycles / DFGV_PERIOD).min(63);
        for i in 0..self.active_list.len() {
            let g = self.active_list[i];
            let grp = &mut self.groups[g];
            if grp.abs_vdebt == 0 && grp.delay_us == 0 {
                continue;
            }
            let (old_debt, old_delay) = (grp.abs_vdebt, grp.delay_us);
            if grp.abs_vdebt != 0 {
                grp.abs_vdebt = (grp.abs_vdebt >> shift).max(1);
            }
            if grp.delay_us != 0 {
                grp.delay_us = (grp.delay_us >> shift).max(1);
            }
            self.kick_waitq(g, true, now);
            if self.trace_on {
                let grp = &self.groups[g];
                let (debt, delay) = ((old_debt, grp.abs_vdebt), (old_delay, grp.delay_us));
                self.record_forgive_debt(g, now, usage_pct as u32, debt, delay);
            }
        }
    }

    /// linux block/blk-iocost.c: ioc_timer_fn() — one period ends.
    pub(super) fn period_timer_fired(&mut self, ns: u64) {
        self.period_timer_ns = None;
        let vtime_rate = self.vtime_rate;
        let lat = self.lat_stat();
        let ppm_thr = [
            (MILLION as u32).wrapping_sub(self.params.qos[QOS_RPPM]),
            (MILLION as u32).wrapping_sub(self.params.qos[QOS_WPPM]),
        ];
        let now = self.snapshot(ns);
        let period_vtime = now.vnow.since(self.period_at_vtime) as u64;
        if period_vtime == 0 {
            // WARN_ON_ONCE in the kernel (a period in which vtime did not
            // advance cannot happen while vrate > 0): a fault here, and the
            // timer is not re-armed, as there
            let at = self.period_at_vtime;
            self.fault
                .raise(|| format!("ioc_timer_fn: no vtime passed in the period (period_at_vtime {at:?} at {ns} ns)"));
            return;
        }
        let period = self.cur_period;
        let nr_debtors = self.check_iocgs(&now);
        self.flush_stat();
        let mut sig = PeriodSignals {
            lat,
            nr_debtors,
            ..PeriodSignals::default()
        };
        let usage_us_sum = self.period_donations(&now, ppm_thr, period_vtime, &mut sig);
        let prev_busy_level = self.busy_level;
        self.busy_level = next_busy_level(
            self.cfg.variant.no_done,
            self.busy_level,
            &lat,
            ppm_thr,
            sig.nr_lagging,
            sig.nr_shortages,
        );
        let prev_vrate = self.vtime_base_rate;
        sig.busy_level = self.busy_level;
        sig.vtime_rate = vtime_rate;
        if let Some(v) = adjust_base_vrate(
            self.vtime_base_rate,
            self.vrate_min,
            self.vrate_max,
            self.busy_level,
            sig.nr_lagging,
        ) {
            self.vtime_base_rate = v;
            self.margins = Margins::new(self.period_us, v);
        }
        self.refresh_params(false, now.now_ns);
        self.forgive_debts(usage_us_sum, nr_debtors, &now);
        self.cur_period += 1;
        if !self.active_list.is_empty() {
            self.start_period(&now);
        } else {
            self.busy_level = 0;
            self.vtime_err = 0;
            self.running = false;
        }
        self.refresh_vrate(&now);
        sig.prev_busy_level = prev_busy_level;
        sig.prev_vrate = prev_vrate;
        self.record_trace(ns, period, sig);
    }

    /// The per-group part of ioc_timer_fn(): lagging IO, usage, donors
    /// and shortages, then `transfer_surpluses`. Returns the usage sum (µs).
    fn period_donations(
        &mut self,
        now: &Now,
        ppm_thr: [u32; 2],
        period_vtime: u64,
        sig: &mut PeriodSignals,
    ) -> u64 {
        let mut usage_us_sum: u64 = 0;
        let mut surpluses: Vec<usize> = Vec::new();
        let qos_on = ppm_thr[0] != MILLION as u32 || ppm_thr[1] != MILLION as u32;
        for i in 0..self.active_list.len() {
            let g = self.active_list[i];
            let (vdone, vtime) = (self.groups[g].done_vtime, self.groups[g].vtime);
            let (hw_active, hw_inuse) = self.current_hweight(g);
            // IO in flight for more than a period: don't push vrate up
            if qos_on
                && !self.groups[g].use_delay
                && vtime.after(vdone)
                && vtime.after(
                    now.vnow
                        .minus(MAX_LAGGING_PERIODS.wrapping_mul(period_vtime)),
                )
                && vdone.before(now.vnow.minus(period_vtime))
            {
                sig.nr_lagging += 1;
            }
            let mut usage_us = self.groups[g].usage_delta_us;
            usage_us_sum = usage_us_sum.wrapping_add(usage_us);
            let no_waiters = self.groups[g].waitq.is_empty();
            let low = now.vnow.minus(self.margins.low as u64);
            if hw_inuse < hw_active || (no_waiters && vtime.before(low)) {
                if vdone != vtime {
                    let abs = cost_to_abs_cost(vtime.since(vdone) as u64, hw_inuse);
                    usage_us = usage_us.max(ceil_div(abs, self.vtime_base_rate));
                }
                let activated_at_us = self.groups[g].activated_at_us;
                let usage_dur = if activated_at_us > self.period_at_us {
                    now.now_us.saturating_sub(activated_at_us).max(1)
                } else {
                    now.now_us.saturating_sub(self.period_at_us).max(1)
                };
                // clamp_t(u32, …): truncate to 32 bits, then clamp
                let usage = (ceil_div(usage_us.wrapping_mul(WEIGHT_ONE as u64), usage_dur) as u32)
                    .clamp(1, WEIGHT_ONE);
                let (hwa, old_hwi) = self.current_hweight(g);
                let hwm = self.current_hweight_max(g);
                let new_hwi = self.hweight_after_donation(g, old_hwi, hwm, usage, now);
                if new_hwi < hwm && hwa >= 2 {
                    let grp = &mut self.groups[g];
                    grp.hweight_donating = hwa;
                    grp.hweight_after_donation = new_hwi;
                    // list_add: newest first (reversed below)
                    surpluses.push(g);
                } else if self.groups[g].abs_vdebt == 0 {
                    let active = self.groups[g].active;
                    if self.trace_on {
                        let grp = &self.groups[g];
                        let (inuse, hwi) = ((grp.inuse, active), (grp.hweight_inuse, new_hwi));
                        self.record_inuse_shortage(g, now, inuse, hwi);
                    }
                    self.propagate_weights_nocommit(g, active, active, true, now);
                    sig.nr_shortages += 1;
                }
            } else {
                // genuinely short on vtime
                sig.nr_shortages += 1;
            }
        }
        surpluses.reverse();
        sig.nr_donors = surpluses.len() as u32;
        if !surpluses.is_empty() && sig.nr_shortages > 0 {
            self.transfer_surpluses(&surpluses, now);
        }
        self.commit_weights();
        usage_us_sum
    }
}
