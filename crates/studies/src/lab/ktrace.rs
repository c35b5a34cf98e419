//! A run's kernel-format trace reduced to numbers that can be put side by
//! side: the same reduction of a real kernel's trace (recorded in the
//! lab's guest, reduced by `blkqos lab reduce-trace` into each run's
//! `trace.json`) and of blkqos's own `--ktrace` of the same job.
//!
//! Time starts at the first `block_rq_issue`. The numbers (`trace.*`):
//!
//! | metric | from |
//! |---|---|
//! | `vrate_adj_per_s` | `iocost_ioc_vrate_adj` events per second (the tracepoint fires when the base vrate is adjusted, busy_level changes or a group lags) |
//! | `busy.max`, `busy.min`, `busy.ge4_pct` | `busy=` over those events; % of events at 4 or more (where vrate starts to fall) |
//! | `vrate.sNN` | the base vrate in % at the end of second NN: the new vrate of the last event that adjusted it (`busy > 0`, or `busy < 0` and nothing lagging); the others print 6.1's effective `vtime_rate` there |
//! | `rq_wait_pct.mean`, `missed_pct`, `lagging_pct`, `shortages_pct` | the mean `rq_wait_pct`; % of events with a missed latency target, a lagging group, a short group |
//! | `iocg.CGROUP.activations_per_s`, `.idles_per_s` | `iocost_iocg_activate` / `iocost_iocg_idle` per second, per cgroup |
//! | `d2c.p50`, `d2c.p99` | issue to completion per request, ms (matched by sector) |
//! | `complete_order_pct` | % of consecutive completions whose requests were issued in that order (each request's last issue: a timer interrupt completes the expired timers in expiry order) |
//! | `issue_gap.p50`, `issue_gap.p90`, `complete_gap.p90` | time between consecutive issues / completions, µs |
//! | `throtl.slices_per_s`, `throtl.trims_per_s`, `throtl.dispatches_per_s`, `throtl.timer_delay.p50` | blk-throttle's messages: `new slice`, `trim slice`, `bios disp=` rounds, `schedule timer. delay=` (jiffies) |
//! | `bdp.passes_per_s`, `bdp.hardlimit_pct`, `bdp.paused.max`, `bdp.pause_sum_per_s`, `bdp.dirtied.p50` | `writeback:balance_dirty_pages`: throttled passes per second (from the first pass to the last); % at the hard limit (`task_ratelimit=0`); the longest loop (`paused`, ms); pauses slept per second (ms); pages a task called in with |

use super::metrics::{Kind, RunMetrics};
use blkqos_experiment::ktrace::{parse_line, Event, RqKind};
use std::collections::HashMap;

/// Reduce a trace's text to its `trace.*` metrics (none when it has no
/// request).
pub fn reduce(text: &str) -> RunMetrics {
    let mut r = Reduction::default();
    for l in text.lines().filter_map(parse_line) {
        if matches!(
            l.event,
            Event::Rq {
                kind: RqKind::Issue,
                ..
            }
        ) {
            r.issue_cpus.insert(l.cpu);
        }
        r.add(l.t_ns, &l.event);
    }
    r.metrics()
}

#[derive(Default)]
struct Reduction {
    t_end: u64,
    /// (t, event) of `iocost_ioc_vrate_adj`.
    adj: Vec<(u64, blkqos_experiment::ktrace::VrateAdj)>,
    /// Per sector in flight: its last issue's time and number.
    issued: HashMap<u64, (u64, u64)>,
    /// Issues so far; the issue number of the last completion; and
    /// (consecutive completions, those issued in the other order).
    issues: u64,
    last_complete: Option<u64>,
    complete_pairs: (u64, u64),
    d2c_ns: Vec<u64>,
    issue_ns: Vec<u64>,
    complete_ns: Vec<u64>,
    slices: u64,
    trims: u64,
    dispatches: u64,
    timer_delay: Vec<u64>,
    /// The CPUs requests were issued on.
    issue_cpus: std::collections::BTreeSet<u32>,
    /// Per cgroup: (activations, times gone idle).
    iocg: std::collections::BTreeMap<String, (u64, u64)>,
    /// `balance_dirty_pages` passes, with their times.
    bdp: Vec<(u64, blkqos_experiment::ktrace::Bdp)>,
}

impl Reduction {
    fn add(&mut self, t: u64, e: &Event) {
        match *e {
            Event::Rq {
                kind: RqKind::Issue,
                sector,
                ..
            } => {
                self.issue_ns.push(t);
                self.issues += 1;
                self.issued.insert(sector, (t, self.issues));
                self.t_end = self.t_end.max(t);
            }
            Event::Rq {
                kind: RqKind::Complete,
                sector,
                ..
            } => {
                if let Some((i, n)) = self.issued.remove(&sector) {
                    self.d2c_ns.push(t.saturating_sub(i));
                    if let Some(prev) = self.last_complete.replace(n) {
                        self.complete_pairs.0 += 1;
                        self.complete_pairs.1 += u64::from(n < prev);
                    }
                }
                self.complete_ns.push(t);
                self.t_end = self.t_end.max(t);
            }
            Event::VrateAdj(v) => self.adj.push((t, v)),
            Event::Iocg { activate, path } => {
                let e = self.iocg.entry(path.to_string()).or_default();
                if activate {
                    e.0 += 1;
                } else {
                    e.1 += 1;
                }
            }
            Event::Note(text) => self.note(text),
            Event::Bdp(b) => self.bdp.push((t, b)),
            _ => {}
        }
    }

    fn note(&mut self, text: &str) {
        if !text.starts_with("throtl") {
            return;
        }
        if text.contains("new slice") {
            self.slices += 1;
        } else if text.contains("trim slice") {
            self.trims += 1;
        } else if text.contains("bios disp=") {
            self.dispatches += 1;
        } else if let Some(rest) = text.split("schedule timer. delay=").nth(1) {
            if let Some(d) = rest.split_whitespace().next().and_then(|d| d.parse().ok()) {
                self.timer_delay.push(d);
            }
        }
    }

    /// The dirty throttle's numbers, per second of the throttled span
    /// (first to last pass: a trace's own span differs between the guest,
    /// which stops tracing when fio ends, and blkqos, whose run goes on
    /// while held writeback completes).
    fn bdp_metrics(&self, put: &mut impl FnMut(&str, f64)) {
        let (Some(first), Some(last)) = (
            self.bdp.iter().map(|b| b.0).min(),
            self.bdp.iter().map(|b| b.0).max(),
        ) else {
            return;
        };
        let secs = (last - first) as f64 / 1e9;
        if secs <= 0.0 {
            return;
        }
        let n = self.bdp.len() as f64;
        put("bdp.passes_per_s", n / secs);
        let hard = self.bdp.iter().filter(|b| b.1.task_ratelimit == 0).count();
        put("bdp.hardlimit_pct", 100.0 * hard as f64 / n);
        put(
            "bdp.paused.max",
            self.bdp.iter().map(|b| b.1.paused_ms).max().unwrap_or(0) as f64,
        );
        let slept: i64 = self.bdp.iter().map(|b| b.1.pause_ms.max(0)).sum();
        put("bdp.pause_sum_per_s", slept as f64 / secs);
        let mut dirtied: Vec<u64> = self.bdp.iter().map(|b| b.1.dirtied).collect();
        dirtied.sort_unstable();
        put("bdp.dirtied.p50", dirtied[dirtied.len() / 2] as f64);
    }

    /// iocost's numbers: the `iocost_ioc_vrate_adj` events from `t0` on.
    fn iocost_metrics(&mut self, t0: u64, secs: f64, put: &mut impl FnMut(&str, f64)) {
        // events before the first request (the device's setup) are left out
        self.adj.retain(|&(t, _)| t >= t0);
        self.adj.sort_by_key(|a| a.0);
        if !self.adj.is_empty() {
            let n = self.adj.len() as f64;
            let share = |f: &dyn Fn(&blkqos_experiment::ktrace::VrateAdj) -> bool| {
                100.0 * self.adj.iter().filter(|(_, v)| f(v)).count() as f64 / n
            };
            put("vrate_adj_per_s", n / secs);
            put(
                "busy.max",
                self.adj.iter().map(|a| a.1.busy).max().unwrap_or(0).into(),
            );
            put(
                "busy.min",
                self.adj.iter().map(|a| a.1.busy).min().unwrap_or(0).into(),
            );
            put("busy.ge4_pct", share(&|v| v.busy >= 4));
            put(
                "missed_pct",
                share(&|v| v.missed_ppm.iter().any(|&p| p > 0)),
            );
            put("lagging_pct", share(&|v| v.lagging > 0));
            put("shortages_pct", share(&|v| v.shortages > 0));
            let wait: f64 = self.adj.iter().map(|a| f64::from(a.1.rq_wait_pct)).sum();
            put("rq_wait_pct.mean", wait / n);
            let whole = secs.floor() as u64;
            // ioc_adjust_base_vrate() passes the new base vrate only when
            // it adjusts; otherwise 6.1 passes atomic64_read(&vtime_rate),
            // the effective rate (6.2 on: the base again)
            let adjusts = |v: &blkqos_experiment::ktrace::VrateAdj| {
                v.busy > 0 || (v.busy < 0 && v.lagging == 0)
            };
            for s in 1..=whole {
                let at = t0 + s * 1_000_000_000;
                let last = self.adj.iter().rev().find(|(t, v)| *t <= at && adjusts(v));
                if let Some((_, v)) = last {
                    let pct = 100.0 * v.new as f64 / blkqos_core::iocost::VTIME_PER_USEC as f64;
                    put(&format!("vrate.s{s:02}"), pct);
                }
            }
        }
    }

    fn metrics(mut self) -> RunMetrics {
        let mut m = RunMetrics::new();
        let Some(&t0) = self.issue_ns.iter().min() else {
            return m;
        };
        let secs = (self.t_end.saturating_sub(t0)) as f64 / 1e9;
        if secs <= 0.0 {
            return m;
        }
        // kept with the run, not compared (the simulator has no CPUs)
        m.insert(
            "host.issue_cpus".into(),
            (Kind::Trace, self.issue_cpus.len() as f64),
        );
        let mut put = |k: &str, v: f64| {
            m.insert(format!("trace.{k}"), (Kind::Trace, v));
        };
        self.iocost_metrics(t0, secs, &mut put);
        self.bdp_metrics(&mut put);
        for (path, (act, idle)) in &self.iocg {
            put(
                &format!("iocg.{path}.activations_per_s"),
                *act as f64 / secs,
            );
            put(&format!("iocg.{path}.idles_per_s"), *idle as f64 / secs);
        }
        let us = |ns: u64| ns as f64 / 1e3;
        if !self.d2c_ns.is_empty() {
            put("d2c.p50", pctl(&mut self.d2c_ns, 50.0) as f64 / 1e6);
            put("d2c.p99", pctl(&mut self.d2c_ns, 99.0) as f64 / 1e6);
        }
        let (pairs, reversed) = self.complete_pairs;
        if pairs > 0 {
            put(
                "complete_order_pct",
                100.0 * (pairs - reversed) as f64 / pairs as f64,
            );
        }
        let mut issue_gap = gaps(&mut self.issue_ns);
        if !issue_gap.is_empty() {
            put("issue_gap.p50", us(pctl(&mut issue_gap, 50.0)));
            put("issue_gap.p90", us(pctl(&mut issue_gap, 90.0)));
        }
        let mut complete_gap = gaps(&mut self.complete_ns);
        if !complete_gap.is_empty() {
            put("complete_gap.p90", us(pctl(&mut complete_gap, 90.0)));
        }
        if self.slices + self.trims + self.dispatches > 0 {
            put("throtl.slices_per_s", self.slices as f64 / secs);
            put("throtl.trims_per_s", self.trims as f64 / secs);
            put("throtl.dispatches_per_s", self.dispatches as f64 / secs);
            if !self.timer_delay.is_empty() {
                put(
                    "throtl.timer_delay.p50",
                    pctl(&mut self.timer_delay, 50.0) as f64,
                );
            }
        }
        m
    }
}

/// The time between consecutive events (sorting `times`).
fn gaps(times: &mut [u64]) -> Vec<u64> {
    times.sort_unstable();
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The `p`th percentile (nearest rank) of `v`, sorting it.
fn pctl(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The metrics as the `trace.json` a lab run keeps.
pub fn to_json(m: &RunMetrics) -> String {
    let obj: serde_json::Map<String, serde_json::Value> = m
        .iter()
        .map(|(k, (_, v))| (k.clone(), serde_json::json!(v)))
        .collect();
    let mut s =
        serde_json::to_string_pretty(&serde_json::Value::Object(obj)).expect("numbers serialize");
    s.push('\n');
    s
}

/// A run's `trace.json` read back into metrics.
pub fn from_json(text: &str, out: &mut RunMetrics) -> anyhow::Result<()> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let obj = v
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("expected an object of metric: number"))?;
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("trace.")) {
        let x = v
            .as_f64()
            .ok_or_else(|| anyhow::anyhow!("{k}: expected a number, got {v}"))?;
        out.insert(k.clone(), (Kind::Trace, x));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t_us: u64, what: &str) -> String {
        format!(
            "             fio-1     [000] .....  {}.{:06}: {what}",
            t_us / 1_000_000,
            t_us % 1_000_000
        )
    }

    fn get_of(m: &RunMetrics, k: &str) -> f64 {
        m[&format!("trace.{k}")].1
    }

    #[test]
    fn reduces_requests_vrate_and_throttle_messages() {
        let mut t = vec!["# tracer: blk".to_string()];
        for k in 0..20u64 {
            let at = 100_000 * k;
            t.push(line(
                at,
                &format!("block_rq_issue: 254,0 R 4096 () {k} + 8 [fio]"),
            ));
            t.push(line(
                at + 2_000,
                &format!("block_rq_complete: 254,0 R () {k} + 8 [0]"),
            ));
        }
        t.push(line(500_000, "iocost_ioc_vrate_adj: [nullb1] vrate=137438->68719 busy=5 missed_ppm=1000:0 rq_wait_pct=10 lagging=0 shortages=1"));
        t.push(line(1_500_000, "iocost_ioc_vrate_adj: [nullb1] vrate=68719->137438 busy=-1 missed_ppm=0:0 rq_wait_pct=30 lagging=1 shortages=0"));
        // 6.1 without an adjustment: the effective rate, twice the base
        t.push(line(700_000, "iocost_ioc_vrate_adj: [nullb1] vrate=137438->137438 busy=0 missed_ppm=0:0 rq_wait_pct=0 lagging=1 shortages=0"));
        t.push(line(
            1_600_000,
            "254,0   1,0  m   N throtl [R] new slice start=1 end=26 jiffies=1",
        ));
        t.push(line(
            1_700_000,
            "254,0   1,0  m   N throtl schedule timer. delay=22 jiffies=5",
        ));
        t.push(line(10, "iocost_iocg_activate: [nullb1:/cgB] now=1:2 vrate=137438 period=0->0 vtime=1 weight=6553600/6553600 hweight=65536/65536"));
        // the kernel's writeback:balance_dirty_pages (6.12's format)
        for (at, trl, paused, pause, dirtied) in [
            (200_000, 0, 400, 200, 32),
            (900_000, 4984, 0, 20, 32),
            (1_000_000, 3000, 0, -8, 256),
        ] {
            t.push(line(at, &format!("balance_dirty_pages: bdi 254:0: limit=32768 setpoint=28672 dirty=30647 bdi_setpoint=18963 bdi_dirty=17648 dirty_ratelimit=5640 task_ratelimit={trl} dirtied={dirtied} dirtied_pause=32 paused={paused} pause={pause} period=24 think=4 cgroup_ino=28")));
        }
        let m = reduce(&t.join("\n"));
        // three passes over 0.8 s
        assert!(
            (get_of(&m, "bdp.hardlimit_pct") - 100.0 / 3.0).abs() < 1e-9,
            "{m:?}"
        );
        assert_eq!(get_of(&m, "bdp.paused.max"), 400.0);
        assert_eq!(get_of(&m, "bdp.dirtied.p50"), 32.0);
        assert!((get_of(&m, "bdp.pause_sum_per_s") - 220.0 / 0.8).abs() < 1e-6);
        assert!((get_of(&m, "bdp.passes_per_s") - 3.0 / 0.8).abs() < 1e-9);
        let get = |k: &str| m[&format!("trace.{k}")].1;
        assert!((get("d2c.p50") - 2.0).abs() < 1e-9, "{m:?}");
        assert!((get("issue_gap.p50") - 100_000.0).abs() < 1e-9);
        assert_eq!(get("busy.max"), 5.0);
        assert!((get("busy.ge4_pct") - 100.0 / 3.0).abs() < 1e-9);
        assert!((get("rq_wait_pct.mean") - 40.0 / 3.0).abs() < 1e-9);
        assert!((get("lagging_pct") - 200.0 / 3.0).abs() < 1e-9);
        // the run spans 1.902 s: second 1 ends with the first event's
        // vrate, the last that adjusted it
        assert!((get("vrate.s01") - 50.0).abs() < 0.01);
        assert!(!m.contains_key("trace.vrate.s02"));
        assert_eq!(get("throtl.timer_delay.p50"), 22.0);
        assert!((get("iocg./cgB.activations_per_s") - 1.0 / 1.902).abs() < 1e-9);
        assert_eq!(get("iocg./cgB.idles_per_s"), 0.0);
        assert_eq!(m["host.issue_cpus"].1, 1.0);
        let mut back = RunMetrics::new();
        from_json(&to_json(&m), &mut back).unwrap();
        let mut compared = m.clone();
        compared.remove("host.issue_cpus");
        assert_eq!(back, compared);
    }

    /// Completions in issue order: of the consecutive pairs of
    /// completions, those whose requests were issued the other way
    /// round count against it; a request's last issue is the one that
    /// counts (a refused request is issued again).
    #[test]
    fn counts_completions_out_of_issue_order() {
        let t = [
            line(0, "block_rq_issue: 254,0 R 4096 () 8 + 8 [fio]"),
            line(1, "block_rq_issue: 254,0 R 4096 () 16 + 8 [fio]"),
            line(3, "block_rq_complete: 254,0 R () 16 + 8 [0]"),
            line(4, "block_rq_complete: 254,0 R () 8 + 8 [0]"),
            // refused, then issued again after the next one
            line(5, "block_rq_issue: 254,0 R 4096 () 24 + 8 [fio]"),
            line(6, "block_rq_issue: 254,0 R 4096 () 32 + 8 [fio]"),
            line(7, "block_rq_issue: 254,0 R 4096 () 24 + 8 [kworker/0:1H]"),
            line(9, "block_rq_complete: 254,0 R () 32 + 8 [0]"),
            line(10, "block_rq_complete: 254,0 R () 24 + 8 [0]"),
        ]
        .join("\n");
        let m = reduce(&t);
        // pairs: 16 then 8 (reversed), 8 then 32, 32 then 24 (in order:
        // 24's last issue came after 32's)
        assert!(
            (get_of(&m, "complete_order_pct") - 200.0 / 3.0).abs() < 1e-9,
            "{m:?}"
        );
    }
}
