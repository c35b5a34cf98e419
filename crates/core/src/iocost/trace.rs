//! Observability: one [`PeriodTrace`] per period timer run (the state
//! iocost_monitor.py samples, plus the signals of the kernel's
//! `iocost_ioc_vrate_adj` tracepoint), formatted as a monitor text block or
//! a JSON line; and the iocost part of `io.stat`.
//!
//! Glossary (text columns as iocost_monitor.py):
//! * `RUN|IDLE|OFF` — timer running / no active group / controller disabled.
//! * `per` — period length; `cur_per=W:vV` — start of the next period in
//!   wall seconds and device-vtime seconds.
//! * `busy` — busy_level (+ saturated, − throttling with spare capacity).
//! * `vrate` — base vrate (% of the cost model's device speed).
//! * `params` — autop class; `(C)`/`(Q)`/`(CQ)` for a user model / user QoS.
//! * per group: `*` active, `weight` inuse/active (configured units),
//!   `hweight%` inuse/active shares of the device, `inflt%` in-flight cost
//!   in % of a period, `debt` ms of device time owed, `delay` issuer delay
//!   ms (0 unless in effect), `usage%` device time used last period.

use super::model::AutopClass;
use super::period::PeriodSignals;
use super::vtime::{vrate_hundredths, VTIME_PER_SEC, VTIME_PER_USEC, WEIGHT_ONE};
use super::IoCost;
use crate::cgroup::GroupId;
use crate::controller::{ftrace_prefix, IostatKey, IostatValue, TraceFormat};
use crate::time::Instant;
use std::fmt::Write as _;

/// At most this many traces are kept between [`IoCost::take_trace`] calls
/// (one per period: 10 minutes of 10 ms periods); more are counted as
/// dropped ([`IoCost::trace_dropped`], which blkqos warns about). The
/// simulator drains the trace every simulated second.
pub const TRACE_CAPACITY: usize = 60_000;

/// Controller state as the monitor prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// `RUN`: the period timer runs (some group is active).
    Run,
    /// `IDLE`: enabled, no active group; the timer is stopped.
    Idle,
    /// `OFF`: iocost is disabled on the device.
    Off,
}

impl RunState {
    /// The label iocost_monitor.py prints: `RUN`, `IDLE` or `OFF`.
    pub const fn name(self) -> &'static str {
        match self {
            RunState::Run => "RUN",
            RunState::Idle => "IDLE",
            RunState::Off => "OFF",
        }
    }
}

/// One active group at the end of a period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTrace {
    /// The group.
    pub group: GroupId,
    /// The group's cgroup path.
    pub path: String,
    /// `iocg->weight` ×65536: the configured weight (`io.weight`).
    pub weight: u32,
    /// `iocg->active` ×65536: the weight it competes with while active.
    pub active: u32,
    /// `iocg->inuse` ×65536: the weight it uses after donation (≤ `active`).
    pub inuse: u32,
    /// `hweight_active` ×65536: share of the device by active weights
    /// (`current_hweight`).
    pub hweight_active: u32,
    /// `hweight_inuse` ×65536: share by in-use weights.
    pub hweight_inuse: u32,
    /// `vtime − done_vtime`.
    pub inflight_vtime: u64,
    /// Absolute vtime owed.
    pub debt_vtime: u64,
    /// `blkg->use_delay`: the group's submitting tasks are delayed
    /// (`blkcg_schedule_throttle`).
    pub use_delay: bool,
    /// `blkg->delay_nsec`: that delay, ns (meaningful only with
    /// `use_delay`).
    pub delay_nsec: u64,
    /// Device time charged during the period (µs).
    pub usage_us: u64,
    /// Bios on the group's wait queue (`iocg->waitq`).
    pub waiters: usize,
}

/// The state after one period timer run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodTrace {
    /// When the period timer ran (run time).
    pub at: Instant,
    /// Number of the period that just ended.
    pub period: u64,
    /// RUN, IDLE or OFF after the timer ran.
    pub state: RunState,
    /// `ioc->period_us`: the period length, µs.
    pub period_us: u64,
    /// `ioc->period_at`: start of the next period, µs of run time.
    pub period_at_us: u64,
    /// `ioc->period_at_vtime`: device vtime at the start of the next period.
    pub period_at_vtime: u64,
    /// `ioc->busy_level` after this period's update.
    pub busy_level: i32,
    /// `ioc->vtime_base_rate`: the base vrate, vtime per µs (137438 =
    /// 100%).
    pub vrate: u64,
    /// `ioc->vtime_rate`: the rate vtime runs at this period, base vrate plus
    /// error compensation (vtime per µs).
    pub vtime_rate: u64,
    /// The autop class in effect (`params=` in the monitor).
    pub autop: AutopClass,
    /// The cost model was written by the user (`(C)` in the monitor).
    pub user_model: bool,
    /// The QoS parameters were written by the user (`(Q)` in the monitor).
    pub user_qos: bool,
    /// The signals the vrate controller used (`iocost_ioc_vrate_adj`).
    pub signals: PeriodSignals,
    /// Active groups at the period end, by group index.
    pub groups: Vec<GroupTrace>,
}

/// `x / whole` in parts per million (0 when `whole` is 0).
fn ppm(x: u64, whole: u64) -> u64 {
    (u128::from(x) * 1_000_000 / u128::from(whole.max(1))) as u64
}

fn pct(x: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        x as f64 * 100.0 / whole as f64
    }
}

impl GroupTrace {
    /// `inuse` in configured weight units (the monitor's first `weight`).
    pub fn weight_inuse(&self) -> f64 {
        self.inuse as f64 / WEIGHT_ONE as f64
    }
    /// `active` in configured weight units (the monitor's second `weight`).
    pub fn weight_active(&self) -> f64 {
        self.active as f64 / WEIGHT_ONE as f64
    }
    /// `hweight_inuse` in % of the device.
    pub fn hweight_inuse_pct(&self) -> f64 {
        pct(self.hweight_inuse as u64, WEIGHT_ONE as u64)
    }
    /// `hweight_active` in % of the device.
    pub fn hweight_active_pct(&self) -> f64 {
        pct(self.hweight_active as u64, WEIGHT_ONE as u64)
    }
    /// Debt as device time at 100% vrate, ms (`debt`).
    pub fn debt_ms(&self) -> f64 {
        self.debt_vtime as f64 / VTIME_PER_USEC as f64 / 1000.0
    }
    /// Submitter delay in effect, ms; 0 when `use_delay` is off (`delay`).
    pub fn delay_ms(&self) -> f64 {
        if self.use_delay {
            self.delay_nsec as f64 / 1e6
        } else {
            0.0
        }
    }
}

impl crate::controller::TraceRecord for PeriodTrace {
    /// iocost_monitor.py's line ([`PeriodTrace::format_text`]), a JSON
    /// line ([`PeriodTrace::format_json`]) or the kernel's tracepoint
    /// ([`PeriodTrace::format_ftrace`]).
    fn format(&self, dev: &str, format: TraceFormat, out: &mut String) {
        match format {
            TraceFormat::Monitor => out.push_str(&self.format_text(dev)),
            TraceFormat::Json => out.push_str(&self.format_json(dev)),
            TraceFormat::Ftrace(_) => {
                self.format_ftrace(dev, out);
                return;
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
}

/// A group joining or leaving the active list: the kernel's
/// `iocost_iocg_activate` (`iocg_activate()`) and `iocost_iocg_idle`
/// (`ioc_check_iocgs()`), with their fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IocgEvent {
    /// When it happened (run time).
    pub at: Instant,
    /// `true`: activated; `false`: went idle.
    pub activate: bool,
    /// The group's cgroup path.
    pub path: String,
    /// `now->now`, µs.
    pub now_us: u64,
    /// `now->vnow`: device vtime.
    pub vnow: u64,
    /// `now->vrate`: vtime per µs.
    pub vrate: u64,
    /// The group's `active_period` before the event.
    pub last_period: u64,
    /// The device's `cur_period`.
    pub cur_period: u64,
    /// The group's vtime.
    pub vtime: u64,
    /// Its inuse weight (configured units × `WEIGHT_ONE`).
    pub inuse: u32,
    /// Its active weight.
    pub weight: u32,
    /// Its hierarchical inuse share (`WEIGHT_ONE` = all).
    pub hweight_inuse: u32,
    /// Its hierarchical active share.
    pub hweight_active: u32,
}

impl crate::controller::TraceRecord for IocgEvent {
    /// The tracepoint's line in the kernel's trace format; nothing in the
    /// monitor and JSON forms (their per-period records show the active
    /// groups).
    fn format(&self, dev: &str, format: TraceFormat, out: &mut String) {
        if !matches!(format, TraceFormat::Ftrace(_)) {
            return;
        }
        let name = if self.activate {
            "iocost_iocg_activate"
        } else {
            "iocost_iocg_idle"
        };
        ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " {name}: [{dev}:{}] now={}:{} vrate={} period={}->{} vtime={} weight={}/{} hweight={}/{}",
            self.path,
            self.now_us,
            self.vnow,
            self.vrate,
            self.last_period,
            self.cur_period,
            self.vtime,
            self.inuse,
            self.weight,
            self.hweight_inuse,
            self.hweight_active
        );
    }
}

/// A group's debt and delay forgiven: the kernel's
/// `iocost_iocg_forgive_debt` (`ioc_forgive_debts()`), with its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForgiveEvent {
    /// When it happened (run time).
    pub at: Instant,
    /// The group's cgroup path.
    pub path: String,
    /// `now->now`, µs.
    pub now_us: u64,
    /// `now->vnow`: device vtime.
    pub vnow: u64,
    /// The device's usage over the forgiveness period, %.
    pub usage_pct: u32,
    /// `abs_vdebt` before and after (after the wait queue was kicked).
    pub old_debt: u64,
    /// `abs_vdebt` after.
    pub new_debt: u64,
    /// `delay` (µs) before.
    pub old_delay: u64,
    /// `delay` (µs) after.
    pub new_delay: u64,
}

impl crate::controller::TraceRecord for ForgiveEvent {
    /// The tracepoint's line in the kernel's trace format; nothing in the
    /// monitor and JSON forms.
    fn format(&self, dev: &str, format: TraceFormat, out: &mut String) {
        if !matches!(format, TraceFormat::Ftrace(_)) {
            return;
        }
        ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " iocost_iocg_forgive_debt: [{dev}:{}] now={}:{} usage={} debt={}->{} delay={}->{}",
            self.path,
            self.now_us,
            self.vnow,
            self.usage_pct,
            self.old_debt,
            self.new_debt,
            self.old_delay,
            self.new_delay
        );
    }
}

/// Which `iocg_inuse_update` tracepoint an [`InuseEvent`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InuseKind {
    /// `iocost_inuse_shortage` (`ioc_timer_fn()`): a group with nothing to
    /// donate gets its inuse back to active.
    Shortage,
    /// `iocost_inuse_transfer` (`transfer_surpluses()`): a donor's inuse
    /// set to what it keeps.
    Transfer,
    /// `iocost_inuse_adjust` (`adjust_inuse_and_calc_cost()`): a donor
    /// that ran short raises its inuse on the issue path.
    Adjust,
}

/// A group's inuse weight changed: the kernel's `iocg_inuse_update`
/// tracepoints, with their fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InuseEvent {
    /// When it happened (run time).
    pub at: Instant,
    /// Which tracepoint.
    pub kind: InuseKind,
    /// The group's cgroup path.
    pub path: String,
    /// `now->now`, µs.
    pub now_us: u64,
    /// Inuse before (configured units × `WEIGHT_ONE`).
    pub old_inuse: u32,
    /// Inuse after.
    pub new_inuse: u32,
    /// Hierarchical inuse share before, as the call site gives it
    /// (`WEIGHT_ONE` = all).
    pub old_hweight_inuse: u32,
    /// Hierarchical inuse share after, as the call site gives it.
    pub new_hweight_inuse: u32,
}

impl crate::controller::TraceRecord for InuseEvent {
    /// The tracepoint's line in the kernel's trace format; nothing in the
    /// monitor and JSON forms.
    fn format(&self, dev: &str, format: TraceFormat, out: &mut String) {
        if !matches!(format, TraceFormat::Ftrace(_)) {
            return;
        }
        let name = match self.kind {
            InuseKind::Shortage => "iocost_inuse_shortage",
            InuseKind::Transfer => "iocost_inuse_transfer",
            InuseKind::Adjust => "iocost_inuse_adjust",
        };
        ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " {name}: [{dev}:{}] now={} inuse={}->{} hw_inuse={}->{}",
            self.path,
            self.now_us,
            self.old_inuse,
            self.new_inuse,
            self.old_hweight_inuse,
            self.new_hweight_inuse
        );
    }
}

impl IoCost {
    /// `iocost_iocg_forgive_debt` for group `g`: its debt and delay
    /// (old, new) with the period's usage (while tracing, within
    /// [`TRACE_CAPACITY`] between drains).
    #[cold]
    pub(super) fn record_forgive_debt(
        &mut self,
        g: usize,
        now: &super::vtime::Now,
        usage_pct: u32,
        debt: (u64, u64),
        delay: (u64, u64),
    ) {
        if self.forgive_events.len() >= TRACE_CAPACITY {
            self.trace_dropped += 1;
            return;
        }
        self.forgive_events.push(ForgiveEvent {
            at: Instant(now.now_ns),
            path: self.paths[g].clone(),
            now_us: now.now_us,
            vnow: now.vnow.0,
            usage_pct,
            old_debt: debt.0,
            new_debt: debt.1,
            old_delay: delay.0,
            new_delay: delay.1,
        });
    }

    /// `iocost_inuse_shortage` for group `g` ([`IoCost::record_inuse`]).
    #[cold]
    pub(super) fn record_inuse_shortage(
        &mut self,
        g: usize,
        now: &super::vtime::Now,
        inuse: (u32, u32),
        hwi: (u32, u32),
    ) {
        self.record_inuse(g, InuseKind::Shortage, now, inuse, hwi);
    }

    /// `iocost_inuse_transfer` for group `g` ([`IoCost::record_inuse`]).
    #[cold]
    pub(super) fn record_inuse_transfer(
        &mut self,
        g: usize,
        now: &super::vtime::Now,
        inuse: (u32, u32),
        hwi: (u32, u32),
    ) {
        self.record_inuse(g, InuseKind::Transfer, now, inuse, hwi);
    }

    /// `iocost_inuse_adjust` for group `g` ([`IoCost::record_inuse`]).
    #[cold]
    pub(super) fn record_inuse_adjust(
        &mut self,
        g: usize,
        now: &super::vtime::Now,
        inuse: (u32, u32),
        hwi: (u32, u32),
    ) {
        self.record_inuse(g, InuseKind::Adjust, now, inuse, hwi);
    }

    /// Record an `iocg_inuse_update` tracepoint for group `g`: inuse
    /// `inuse` (old, new) and hweight_inuse `hwi` (old, new), as the
    /// kernel's call site passes them (while tracing, within
    /// [`TRACE_CAPACITY`] between drains).
    #[cold]
    fn record_inuse(
        &mut self,
        g: usize,
        kind: InuseKind,
        now: &super::vtime::Now,
        inuse: (u32, u32),
        hwi: (u32, u32),
    ) {
        if self.inuse_events.len() >= TRACE_CAPACITY {
            self.trace_dropped += 1;
            return;
        }
        self.inuse_events.push(InuseEvent {
            at: Instant(now.now_ns),
            kind,
            path: self.paths[g].clone(),
            now_us: now.now_us,
            old_inuse: inuse.0,
            new_inuse: inuse.1,
            old_hweight_inuse: hwi.0,
            new_hweight_inuse: hwi.1,
        });
    }
}

impl IoCost {
    /// Record `iocost_iocg_activate` / `iocost_iocg_idle` for group `g`
    /// (while tracing, within [`TRACE_CAPACITY`] between drains).
    #[cold]
    pub(super) fn record_iocg(
        &mut self,
        g: usize,
        activate: bool,
        last_period: u64,
        now: &super::vtime::Now,
    ) {
        if self.iocg_events.len() >= TRACE_CAPACITY {
            self.trace_dropped += 1;
            return;
        }
        let grp = &self.groups[g];
        let (hwa, hwi) = self.compute_hweight(g);
        let e = IocgEvent {
            at: Instant(now.now_ns),
            activate,
            path: self.paths[g].clone(),
            now_us: now.now_us,
            vnow: now.vnow.0,
            vrate: self.vtime_rate,
            last_period,
            cur_period: self.cur_period,
            vtime: grp.vtime.0,
            inuse: grp.inuse,
            weight: grp.weight,
            hweight_inuse: hwi,
            hweight_active: hwa,
        };
        self.iocg_events.push(e);
    }
}

impl PeriodTrace {
    /// Whether the kernel's `iocost_ioc_vrate_adj` tracepoint fires for
    /// this period. `ioc_adjust_base_vrate()` fires it whenever it adjusts
    /// (busy_level not 0, and not negative with lagging groups), and
    /// otherwise only when busy_level changed or a group lags; so it is
    /// silent exactly when busy_level was 0 before and after and nothing
    /// lags.
    pub fn vrate_adj_fires(&self) -> bool {
        let s = &self.signals;
        !(s.busy_level == 0 && s.prev_busy_level == 0 && s.nr_lagging == 0)
    }

    /// The kernel's `iocost_ioc_vrate_adj` line as the trace buffer prints
    /// it (include/trace/events/iocost.h; the task, CPU and flags columns
    /// are blkqos's: `blkqos-0 [000] .....`), or nothing when the kernel
    /// would not fire it. `vrate=OLD->NEW` is `ioc->vtime_rate` of the
    /// period that ended and the new base vrate (137438 = 100%).
    pub fn format_ftrace(&self, dev: &str, out: &mut String) {
        if !self.vrate_adj_fires() {
            return;
        }
        let s = &self.signals;
        ftrace_prefix(self.at, out);
        let _ = writeln!(
            out,
            " iocost_ioc_vrate_adj: [{dev}] vrate={}->{} busy={} missed_ppm={}:{} rq_wait_pct={} lagging={} shortages={}",
            s.vtime_rate,
            self.vrate,
            s.busy_level,
            s.lat.missed_ppm[0],
            s.lat.missed_ppm[1],
            s.lat.rq_wait_pct,
            s.nr_lagging,
            s.nr_shortages
        );
    }

    /// Base vrate in percent.
    pub fn vrate_pct(&self) -> f64 {
        pct(self.vrate, VTIME_PER_USEC)
    }
    /// A group's in-flight cost in % of a period (`inflt%`).
    pub fn inflight_pct(&self, g: &GroupTrace) -> f64 {
        pct(
            g.inflight_vtime,
            self.period_us.saturating_mul(self.vtime_rate),
        )
    }
    /// A group's device time last period in % of the period (`usage%`).
    pub fn usage_pct(&self, g: &GroupTrace) -> f64 {
        pct(g.usage_us, self.period_us)
    }
    fn params_name(&self) -> String {
        let mut s = self.autop.name().to_string();
        if self.user_model || self.user_qos {
            s.push('(');
            if self.user_model {
                s.push('C');
            }
            if self.user_qos {
                s.push('Q');
            }
            s.push(')');
        }
        s
    }

    /// The monitor's text block: a device line, a header, one row per
    /// active group (each line ends with `\n`).
    pub fn format_text(&self, dev: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{dev} {:4} per={}ms cur_per={:.3}:v{:.3} busy={:+3} vrate={:6.2}% params={}",
            self.state.name(),
            self.period_us / 1000,
            self.period_at_us as f64 / 1e6,
            self.period_at_vtime as f64 / VTIME_PER_SEC as f64,
            self.busy_level,
            self.vrate_pct(),
            self.params_name()
        );
        let _ = writeln!(
            s,
            "{:25} active {:>11} {:>13} {:>6} {:>7} {:>7} usage%",
            "", "weight", "hweight%", "inflt%", "debt", "delay"
        );
        for g in &self.groups {
            let n = g.path.chars().count();
            let path: String = g.path.chars().skip(n.saturating_sub(28)).collect();
            let _ = writeln!(
                s,
                "{path:28} * {:5}/{:5} {:6.2}/{:6.2} {:6.2} {:7.2} {:7.2} {:6.2}",
                g.weight_inuse().round(),
                g.weight_active().round(),
                g.hweight_inuse_pct(),
                g.hweight_active_pct(),
                self.inflight_pct(g),
                g.debt_ms(),
                g.delay_ms(),
                self.usage_pct(g).min(999.0),
            );
        }
        s
    }

    /// One JSON object per line: the device, then each group (no trailing
    /// newline on the last line).
    pub fn format_json(&self, dev: &str) -> String {
        let t = self.at.as_ns() as f64 / 1e9;
        let sig = &self.signals;
        let mut s = format!(
            "{{\"device\": {}, \"timestamp\": {t:.6}, \"period\": {}, \"state\": \"{}\", \
             \"enabled\": {}, \"running\": {}, \"period_ms\": {}, \"period_at\": {:.6}, \
             \"period_vtime_at\": {:.6}, \"busy_level\": {}, \"vrate_pct\": {:.4}, \
             \"params\": \"{}\", \"missed_ppm\": [{}, {}], \"rq_wait_pct\": {}, \"nr_done\": {}, \
             \"nr_lagging\": {}, \"nr_shortages\": {}, \"nr_donors\": {}, \"nr_debtors\": {}}}",
            json_str(dev),
            self.period,
            self.state.name(),
            self.state != RunState::Off,
            self.state == RunState::Run,
            self.period_us as f64 / 1000.0,
            self.period_at_us as f64 / 1e6,
            self.period_at_vtime as f64 / VTIME_PER_SEC as f64,
            self.busy_level,
            self.vrate_pct(),
            self.params_name(),
            sig.lat.missed_ppm[0],
            sig.lat.missed_ppm[1],
            sig.lat.rq_wait_pct,
            sig.lat.nr_done,
            sig.nr_lagging,
            sig.nr_shortages,
            sig.nr_donors,
            sig.nr_debtors,
        );
        for g in &self.groups {
            let _ = write!(
                s,
                "\n{{\"cgroup\": {}, \"timestamp\": {t:.6}, \"is_active\": true, \
                 \"weight\": {}, \"weight_active\": {}, \"weight_inuse\": {}, \
                 \"hweight_active_pct\": {:.4}, \"hweight_inuse_pct\": {:.4}, \
                 \"inflight_pct\": {:.4}, \"debt_ms\": {:.4}, \"use_delay\": {}, \
                 \"delay_ms\": {:.4}, \"usage_pct\": {:.4}, \"waiters\": {}}}",
                json_str(&g.path),
                g.weight as f64 / WEIGHT_ONE as f64,
                g.weight_active(),
                g.weight_inuse(),
                g.hweight_active_pct(),
                g.hweight_inuse_pct(),
                self.inflight_pct(g),
                g.debt_ms(),
                u8::from(g.use_delay),
                g.delay_ms(),
                self.usage_pct(g),
                g.waiters,
            );
        }
        s
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl IoCost {
    pub(super) fn run_state(&self) -> RunState {
        if !self.enabled {
            RunState::Off
        } else if self.running {
            RunState::Run
        } else {
            RunState::Idle
        }
    }

    pub(super) fn group_trace(&self, g: usize) -> GroupTrace {
        let grp = &self.groups[g];
        let (hwa, hwi) = self.compute_hweight(g);
        GroupTrace {
            group: GroupId(g as u32),
            path: self.paths[g].clone(),
            weight: grp.weight,
            active: grp.active,
            inuse: grp.inuse,
            hweight_active: hwa,
            hweight_inuse: hwi,
            inflight_vtime: grp.vtime.since(grp.done_vtime).max(0) as u64,
            debt_vtime: grp.abs_vdebt,
            use_delay: grp.use_delay,
            delay_nsec: grp.delay_nsec,
            usage_us: grp.usage_delta_us,
            waiters: grp.waitq.len(),
        }
    }

    /// The state iocost_monitor.py samples (`ioc_now`-free: values as of
    /// the last period end and the last issue), for live monitors.
    pub(super) fn live_state(&self, into: &mut crate::controller::LiveState) {
        into.iocost = Some(crate::controller::IocostDeviceLive {
            enabled: self.enabled,
            running: self.running,
            vrate_ppm: ppm(self.vtime_base_rate, VTIME_PER_USEC),
            busy_level: self.busy_level,
        });
        if !self.enabled {
            return;
        }
        for (g, live) in into.groups.iter_mut().enumerate().take(self.groups.len()) {
            let t = self.group_trace(g);
            live.iocost = Some(crate::controller::IocostGroupLive {
                active: self.active_list.contains(&g),
                hweight_active_ppm: ppm(t.hweight_active.into(), WEIGHT_ONE.into()) as u32,
                hweight_inuse_ppm: ppm(t.hweight_inuse.into(), WEIGHT_ONE.into()) as u32,
                debt_us: t.debt_vtime / VTIME_PER_USEC,
                usage_us: self.groups[g].last_stat.usage_us,
                delay_us: if t.use_delay { t.delay_nsec / 1000 } else { 0 },
                waiting_ios: t.waiters as u32,
            });
        }
    }

    pub(super) fn record_trace(&mut self, ns: u64, period: u64, signals: PeriodSignals) {
        if !self.trace_on {
            return;
        }
        if self.trace.len() >= TRACE_CAPACITY {
            self.trace_dropped += 1;
            return;
        }
        let mut groups: Vec<GroupTrace> = self
            .active_list
            .iter()
            .map(|&g| self.group_trace(g))
            .collect();
        groups.sort_by_key(|g| g.group);
        let t = PeriodTrace {
            at: Instant(ns),
            period,
            state: self.run_state(),
            period_us: self.period_us,
            period_at_us: self.period_at_us,
            period_at_vtime: self.period_at_vtime.0,
            busy_level: self.busy_level,
            vrate: self.vtime_base_rate,
            vtime_rate: self.vtime_rate,
            autop: self.autop_idx.unwrap_or(AutopClass::SsdDfl),
            user_model: self.user_model,
            user_qos: self.user_qos,
            signals,
            groups,
        };
        self.trace.push(t);
    }

    /// The iocost keys of a group's `io.stat` line (`ioc_pd_stat`):
    /// `cost.vrate` (hundredths of a percent) on the root only, then
    /// `cost.usage`; with `debug` (`blkcg_debug_stats`) also `cost.wait`,
    /// `cost.indebt`, `cost.indelay` (µs). None when iocost is disabled.
    /// The values are those flushed at the last period end.
    pub fn iostat_keys_with(&self, group: GroupId, debug: bool, out: &mut Vec<IostatKey>) {
        let g = group.idx();
        if !self.enabled || g >= self.groups.len() {
            return;
        }
        let key = |name, value| IostatKey { name, value };
        if self.groups[g].level == 0 {
            out.push(key(
                "cost.vrate",
                IostatValue::Hundredths(vrate_hundredths(self.vtime_base_rate)),
            ));
        }
        let st = &self.groups[g].last_stat;
        out.push(key("cost.usage", IostatValue::Count(st.usage_us)));
        if debug {
            out.push(key("cost.wait", IostatValue::Count(st.wait_us)));
            out.push(key("cost.indebt", IostatValue::Count(st.indebt_us)));
            out.push(key("cost.indelay", IostatValue::Count(st.indelay_us)));
        }
    }

    /// [`IoCost::iostat_keys_with`] as the line prints them, each with a
    /// leading space (` cost.vrate=127.50 cost.usage=1234`).
    pub fn iostat_suffix_with(&self, group: GroupId, debug: bool) -> String {
        let mut keys = Vec::new();
        self.iostat_keys_with(group, debug, &mut keys);
        let mut s = String::new();
        for k in keys {
            let _ = write!(s, " {k}");
        }
        s
    }
}
