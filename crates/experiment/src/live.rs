//! `--live[=SECONDS]`: a block per interval on stderr while the run goes,
//! modelled on the kernel's `tools/cgroup/iocost_monitor.py` but for
//! blkqos's own controllers: a device line (run time, iocost's vrate and
//! busy_level when iocost is on, total IOPS and bandwidth), a header, then
//! one row per cgroup: IOPS and bandwidth per direction, the interval's
//! p99 completion latency, the IOs io.max holds and the longest current
//! wait, and under iocost the group's hweight active/inuse, debt and delay.
//!
//! ```text
//! live t=2.000s nullb1 iocost RUN  vrate=100.00% busy= -4 total 2550 IOPS 10200KiB/s
//!   cgroup               r_iops w_iops       r_bw       w_bw   p99_ms qwait_ms  held  wait_ms hw_act% hw_inu% debt_ms delay_ms
//!   /a                      718      0  2872KiB/s          -   24.773      5.6     0      0.0   20.00   26.03    0.00     0.00
//!   /b                     1832      0  7328KiB/s          -   20.054      0.0     0      0.0   80.00   73.97    0.00     0.00
//! ```
//!
//! Per cgroup, over the interval: `r_iops`/`w_iops` and `r_bw`/`w_bw`
//! (requests completed, per second), `p99_ms` (completion latency from
//! block-layer entry, io.max and iocost waits included, as `--lat-hist`
//! counts it per cgroup) and `qwait_ms` (the longest a completed request
//! waited before the device: controllers and request slots). At the
//! interval's end: `held` and `wait_ms`, the IOs io.max (blk-throttle or
//! `paced`) holds for the cgroup now and how long the oldest has waited
//! (`throtl_service_queue` contents by owner); under iocost the device
//! line's `vrate` and `busy` and per cgroup `hw_act%`/`hw_inu%`
//! (`hweight_active`/`hweight_inuse`), `debt_ms` (`abs_vdebt`) and
//! `delay_ms` (issuer delay in effect), the columns iocost_monitor.py
//! shows.
//!
//! Rows come from the requests the driver completes ([`RunSink::request`]:
//! one per request as the device sees them, after splits, like `iostat`)
//! and the stack's state ([`ControllerStack::live`]) at each of the
//! driver's once-a-second sink calls, in run time: on the simulator the
//! blocks come in simulated time and are deterministic. A cgroup has a row
//! once it has completed IO or while controllers hold some of its IO.
//! Memory is one fio histogram per cgroup, cleared every interval. The
//! controllers are read at the first loop pass after each second, before
//! that pass runs their due timers.
//!
//! On a terminal each block replaces the previous one; otherwise blocks
//! follow each other (logs). `--live-json=FILE` writes the same data as
//! JSON lines (exact counts, for scripts and tests).

use crate::file_out::FileOut;
use blkqos_core::{ControllerStack, Instant, IoOp, LatHist, LiveState};
use blkqos_driver::{DiskStats, RequestRecord};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

/// A text block covers at least this much run time (ns).
const MIN_TEXT_BLOCK_NS: u64 = 250_000_000;

/// What `--live` and `--live-json` asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveOptions {
    /// Print blocks on stderr, one per this many seconds (None: no text).
    pub every_s: Option<u32>,
    /// JSON lines go here.
    pub json: Option<std::path::PathBuf>,
    /// `--report=FILE`: the JSON lines kept in memory and rendered as an
    /// HTML report at the run's end ([`crate::report`]).
    pub report: Option<std::path::PathBuf>,
    /// The report's title (the command that ran).
    pub report_title: String,
    /// The run's iocost trace, when the report can read it at the end
    /// (the simulator's `--iocost-trace=FILE.jsonl`, written as it goes).
    pub report_trace: Option<std::path::PathBuf>,
}

impl LiveOptions {
    /// `--live` (bare: every second) or `--live=SECONDS`.
    pub fn set_every(&mut self, v: &str) -> anyhow::Result<()> {
        let s = match v {
            "" | "1" | "true" | "yes" => 1,
            _ => v
                .parse::<u32>()
                .ok()
                .filter(|&s| s >= 1)
                .ok_or_else(|| anyhow::anyhow!("--live={v}: expected whole seconds >= 1"))?,
        };
        self.every_s = Some(s);
        Ok(())
    }

    /// `--report=FILE`.
    pub fn set_report(&mut self, v: &str) -> anyhow::Result<()> {
        if v.is_empty() {
            anyhow::bail!("--report `{v}`: expected a file name (FILE.html)");
        }
        self.report = Some(std::path::PathBuf::from(v));
        Ok(())
    }

    pub fn is_on(&self) -> bool {
        self.every_s.is_some() || self.json.is_some() || self.report.is_some()
    }
}

/// One cgroup's completions over the current interval.
#[derive(Clone, Debug)]
struct GroupInterval {
    /// Requests and bytes per direction (read, write).
    ios: [u64; 2],
    bytes: [u64; 2],
    lat: LatHist,
    /// Longest completion latency of the interval (ns).
    lat_max_ns: u64,
    /// Longest time a completed request spent between block-layer entry
    /// and the device (io.max, iocost and request-slot waits), ns.
    wait_max_ns: u64,
    /// Has completed IO at some point of the run.
    seen: bool,
    /// The whole run: IOs per direction, latencies and the longest.
    run_ios: [u64; 2],
    run_lat: LatHist,
    run_lat_max_ns: u64,
}

impl GroupInterval {
    fn new() -> Self {
        GroupInterval {
            ios: [0; 2],
            bytes: [0; 2],
            lat: LatHist::new(),
            lat_max_ns: 0,
            wait_max_ns: 0,
            seen: false,
            run_ios: [0; 2],
            run_lat: LatHist::new(),
            run_lat_max_ns: 0,
        }
    }

    fn record(&mut self, d: usize, bytes: u64, lat_ns: u64) {
        self.ios[d] += 1;
        self.bytes[d] += bytes;
        self.lat.record(lat_ns);
        self.lat_max_ns = self.lat_max_ns.max(lat_ns);
        self.run_ios[d] += 1;
        self.run_lat.record(lat_ns);
        self.run_lat_max_ns = self.run_lat_max_ns.max(lat_ns);
        self.seen = true;
    }

    /// The interval's latency summary; clears the interval's counters.
    fn take(&mut self) -> (Latency, [u64; 2], [u64; 2]) {
        let lat = Latency::of(&self.lat, self.lat_max_ns);
        let out = (lat, self.ios, self.bytes);
        self.ios = [0; 2];
        self.bytes = [0; 2];
        self.lat_max_ns = 0;
        self.wait_max_ns = 0;
        if self.lat.count() > 0 {
            self.lat.clear();
        }
        out
    }

    fn run_summary(&self, name: &str) -> RunLatency {
        RunLatency::of(name, self.run_ios, &self.run_lat, self.run_lat_max_ns)
    }
}

/// Percentiles of an interval's completion latencies (ns); all None
/// without IO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl Latency {
    fn of(h: &LatHist, max_ns: u64) -> Self {
        if h.count() == 0 {
            return Latency::default();
        }
        let p = h.percentiles(&[50.0, 90.0, 99.0]);
        Latency {
            p50_ns: Some(p[0].1),
            p90_ns: Some(p[1].1),
            p99_ns: Some(p[2].1),
            max_ns: Some(max_ns),
        }
    }
}

/// The percentiles the run summary lists (fio's default list and more).
pub const RUN_PERCENTILES: [f64; 19] = [
    1.0, 5.0, 10.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 90.0, 95.0, 99.0, 99.5,
    99.9, 99.95, 99.99,
];

/// A cgroup's or the device's latencies over the whole run: the last
/// JSON line's `run` member, from which a CDF can be drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct RunLatency {
    pub name: String,
    pub ios: [u64; 2],
    pub max_ns: u64,
    /// `(percentile, ns)` for [`RUN_PERCENTILES`].
    pub percentiles: Vec<(f64, u64)>,
    /// `(ns, IOs at or below it)`: the histogram's non-empty buckets
    /// (fio's buckets, ~1.6% wide), counts cumulated.
    pub cdf: Vec<(u64, u64)>,
}

impl RunLatency {
    fn of(name: &str, ios: [u64; 2], h: &LatHist, max_ns: u64) -> Self {
        let mut n = 0;
        let cdf = h
            .bins()
            .map(|(v, c)| {
                n += c;
                (v, n)
            })
            .collect();
        RunLatency {
            name: name.to_string(),
            ios,
            max_ns,
            percentiles: h.percentiles(&RUN_PERCENTILES),
            cdf,
        }
    }

    fn json(&self, key: &str) -> serde_json::Value {
        serde_json::json!({
            key: self.name,
            "ios": self.ios,
            "latency_ns_max": self.max_ns,
            "latency_ns_percentiles": self.percentiles.iter().map(|&(p, v)| serde_json::json!([p, v])).collect::<Vec<_>>(),
            "latency_ns_cdf": self.cdf.iter().map(|&(v, c)| [v, c]).collect::<Vec<_>>(),
        })
    }
}

/// The device over an interval: the requests it completed (start to
/// completion latency, as `--lat-hist`'s device part) and its busy time.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRow {
    pub name: String,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub latency: Latency,
    /// `/proc/diskstats` field 10 (io_ticks, ms) at the interval's end.
    pub io_ticks_ms: u64,
    /// iostat's `%util` over the interval: Δio_ticks / Δt (sysstat's
    /// `S_VALUE`), None when the run has no device accounting.
    pub util_pct: Option<f64>,
}

/// One row of a block: what a cgroup did over the interval and its state.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub cgroup: String,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    /// p99 of the interval's completion latencies (ns), None without IO.
    pub p99_ns: Option<u64>,
    /// p50/p90/p99/max of them.
    pub latency: Latency,
    /// Longest wait before the device among them (ns).
    pub wait_max_ns: u64,
    pub state: blkqos_core::GroupLive,
}

/// One interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Run time at the interval's end and its length (ns).
    pub at_ns: u64,
    pub len_ns: u64,
    pub iocost: Option<blkqos_core::IocostDeviceLive>,
    pub rows: Vec<Row>,
    /// The device over the interval.
    pub device: Option<DeviceRow>,
    /// The last block of a run: whole-run latencies per cgroup and device.
    pub run: Option<(Vec<RunLatency>, RunLatency)>,
}

/// The live view: a run sink part ([`crate::streams::Streams`]).
#[derive(Debug)]
pub struct LiveView {
    every_s: u32,
    text: bool,
    tty: bool,
    json: Option<FileOut>,
    dev: String,
    paths: Vec<String>,
    groups: Vec<GroupInterval>,
    /// The device's requests (start to completion).
    device: GroupInterval,
    /// io_ticks (ms) at the last disk call and at the interval's start.
    io_ticks_ms: Option<u64>,
    io_ticks_from_ms: u64,
    /// The last block, written when the next one comes (or at the end,
    /// with the run's summary).
    pending: Option<Block>,
    /// `--report`: every JSON line, kept for the report.
    kept: Option<Vec<String>>,
    report: Option<std::path::PathBuf>,
    report_title: String,
    report_trace: Option<std::path::PathBuf>,
    state: LiveState,
    started: Instant,
    from: Instant,
    ticks: u32,
    last_tick: Instant,
    /// Lines of the block on screen (terminal redraw).
    shown_lines: usize,
}

impl LiveView {
    /// A view over the cgroups `paths` (by group index) of device `dev`.
    pub fn create(opts: &LiveOptions, dev: &str, paths: Vec<String>) -> anyhow::Result<Self> {
        let json = opts.json.as_deref().map(FileOut::create).transpose()?;
        Ok(LiveView {
            every_s: opts.every_s.unwrap_or(1),
            text: opts.every_s.is_some(),
            tty: std::io::stderr().is_terminal(),
            json,
            dev: dev.to_string(),
            groups: vec![GroupInterval::new(); paths.len()],
            device: GroupInterval::new(),
            io_ticks_ms: None,
            io_ticks_from_ms: 0,
            pending: None,
            kept: opts.report.as_ref().map(|_| Vec::new()),
            report: opts.report.clone(),
            report_title: opts.report_title.clone(),
            report_trace: opts.report_trace.clone(),
            paths,
            state: LiveState::default(),
            started: Instant(0),
            from: Instant(0),
            ticks: 0,
            last_tick: Instant(0),
            shown_lines: 0,
        })
    }

    /// The device's name, once known (the real engine's target).
    pub fn set_device(&mut self, dev: &str) {
        self.dev = dev.to_string();
    }

    pub fn started(&mut self, at: Instant) {
        self.started = at;
        self.from = at;
    }

    pub fn request(&mut self, r: &RequestRecord) {
        let d = match r.op {
            IoOp::Read => 0,
            IoOp::Write => 1,
            IoOp::Discard | IoOp::Flush => return,
        };
        self.device
            .record(d, r.bytes, (r.completed_at - r.started_at).as_ns());
        let Some(g) = self.groups.get_mut(r.group.idx()) else {
            return;
        };
        g.record(d, r.bytes, (r.completed_at - r.submitted_at).as_ns());
        g.wait_max_ns = g.wait_max_ns.max((r.started_at - r.submitted_at).as_ns());
    }

    /// The device's accounting at a sink call (before [`LiveView::tick`]).
    pub fn disk(&mut self, d: &DiskStats) {
        if d.mode() != blkqos_driver::TicksMode::Off {
            self.io_ticks_ms = Some(d.io_ticks_ms());
        }
    }

    /// A sink call (once a second of run time, and at the end): every
    /// `every_s` of them ends an interval.
    pub fn tick(&mut self, now: Instant, stack: &ControllerStack) {
        self.ticks += 1;
        self.last_tick = now;
        stack.live(now, self.paths.len(), &mut self.state);
        if self.ticks >= self.every_s {
            self.emit(now);
        }
    }

    /// The run is over: the last partial interval, if any.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        if self.ticks > 0 {
            // the end-of-run sink call's time and state are the last read
            self.emit(self.last_tick);
        }
        if let Some(mut last) = self.pending.take() {
            let groups = self
                .groups
                .iter()
                .zip(&self.paths)
                .filter(|(g, _)| g.seen)
                .map(|(g, p)| g.run_summary(p))
                .collect();
            last.run = Some((groups, self.device.run_summary(&self.dev)));
            self.write_json(&last);
        }
        let json = match &mut self.json {
            Some(j) => j.finish(),
            None => Ok(()),
        };
        json?;
        if let (Some(path), Some(lines)) = (&self.report, self.kept.take()) {
            crate::report::write_run_report(
                path,
                &self.report_title,
                &lines,
                self.report_trace.as_deref(),
            )?;
        }
        Ok(())
    }

    fn write_json(&mut self, b: &Block) {
        if self.json.is_none() && self.kept.is_none() {
            return;
        }
        let line = json_line(b);
        if let Some(j) = &mut self.json {
            j.write_with(|o| writeln!(o, "{line}"));
        }
        if let Some(k) = &mut self.kept {
            k.push(line);
        }
    }

    fn emit(&mut self, now: Instant) {
        let block = self.take_block(now);
        self.ticks = 0;
        self.from = now;
        // only the end-of-run block can be this short: its rates over a
        // sliver of time would mislead (the JSON line keeps its counts)
        if self.text && block.len_ns >= MIN_TEXT_BLOCK_NS {
            self.print(&format_block(&block, &self.dev));
        }
        if let Some(prev) = self.pending.replace(block) {
            self.write_json(&prev);
        }
    }

    /// The interval's rows; clears the counters for the next one.
    fn take_block(&mut self, now: Instant) -> Block {
        let mut rows = Vec::new();
        for (k, g) in self.groups.iter_mut().enumerate() {
            let state = self.state.groups.get(k).copied().unwrap_or_default();
            let held = state.throttled.ios > 0 || state.iocost.is_some_and(|c| c.waiting_ios > 0);
            if !g.seen && !held {
                continue;
            }
            let wait_max_ns = g.wait_max_ns;
            let (latency, ios, bytes) = g.take();
            rows.push(Row {
                cgroup: self.paths[k].clone(),
                ios,
                bytes,
                p99_ns: latency.p99_ns,
                latency,
                wait_max_ns,
                state,
            });
        }
        let len_ns = (now - self.from).as_ns();
        let (latency, ios, bytes) = self.device.take();
        let util_pct = self.io_ticks_ms.map(|t| {
            let d = t.saturating_sub(self.io_ticks_from_ms);
            // sysstat's S_VALUE over the interval in ms (`get_interval`: at least 1)
            blkqos_iostat::metrics::s_value(d as f64, (len_ns / 1_000_000).max(1))
        });
        let device = DeviceRow {
            name: self.dev.clone(),
            ios,
            bytes,
            latency,
            io_ticks_ms: self.io_ticks_ms.unwrap_or(0),
            util_pct,
        };
        self.io_ticks_from_ms = self.io_ticks_ms.unwrap_or(0);
        Block {
            at_ns: (now - self.started).as_ns(),
            len_ns,
            iocost: self.state.iocost,
            rows,
            device: Some(device),
            run: None,
        }
    }

    /// On a terminal, over the previous block (cursor up, clear below).
    fn print(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty && self.shown_lines > 0 {
            let _ = write!(err, "\x1b[{}A\x1b[J", self.shown_lines);
        }
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        self.shown_lines = text.lines().count();
    }
}

fn per_s(n: u64, len_ns: u64) -> f64 {
    n as f64 * 1e9 / len_ns.max(1) as f64
}

fn pct(ppm: u64) -> f64 {
    ppm as f64 / 10_000.0
}

/// The text block: device line, header, a row per cgroup.
pub fn format_block(b: &Block, dev: &str) -> String {
    let mut s = format!("live t={:.3}s {dev}", b.at_ns as f64 / 1e9);
    if let Some(c) = &b.iocost {
        let run = match (c.enabled, c.running) {
            (false, _) => "OFF",
            (true, true) => "RUN",
            (true, false) => "IDLE",
        };
        let _ = write!(
            s,
            " iocost {run:4} vrate={:6.2}% busy={:+3}",
            pct(c.vrate_ppm),
            c.busy_level
        );
    }
    let ios: u64 = b.rows.iter().map(|r| r.ios[0] + r.ios[1]).sum();
    let bytes: u64 = b.rows.iter().map(|r| r.bytes[0] + r.bytes[1]).sum();
    let _ = writeln!(
        s,
        " total {} IOPS {}",
        crate::progress::fmt_iops(per_s(ios, b.len_ns)),
        crate::progress::fmt_bw(per_s(bytes, b.len_ns))
    );
    let cost = b.iocost.is_some_and(|c| c.enabled);
    let _ = write!(
        s,
        "  {:20} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8} {:>5} {:>8}",
        "cgroup", "r_iops", "w_iops", "r_bw", "w_bw", "p99_ms", "qwait_ms", "held", "wait_ms"
    );
    if cost {
        s += " hw_act% hw_inu% debt_ms delay_ms";
    }
    s.push('\n');
    for r in &b.rows {
        format_row(&mut s, r, b.len_ns, cost);
    }
    s
}

fn format_row(s: &mut String, r: &Row, len_ns: u64, cost: bool) {
    let bw = |d: usize| {
        if r.ios[d] == 0 {
            "-".to_string()
        } else {
            crate::progress::fmt_bw(per_s(r.bytes[d], len_ns))
        }
    };
    let p99 = r
        .p99_ns
        .map_or("-".to_string(), |ns| format!("{:.3}", ns as f64 / 1e6));
    let t = r.state.throttled;
    let _ = write!(
        s,
        "  {:20} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8.1} {:>5} {:>8.1}",
        r.cgroup,
        crate::progress::fmt_iops(per_s(r.ios[0], len_ns)),
        crate::progress::fmt_iops(per_s(r.ios[1], len_ns)),
        bw(0),
        bw(1),
        p99,
        r.wait_max_ns as f64 / 1e6,
        t.ios,
        t.oldest_wait_ns as f64 / 1e6
    );
    if let (true, Some(c)) = (cost, r.state.iocost) {
        let _ = write!(
            s,
            " {:7.2} {:7.2} {:7.2} {:8.2}",
            pct(c.hweight_active_ppm.into()),
            pct(c.hweight_inuse_ppm.into()),
            c.debt_us as f64 / 1000.0,
            c.delay_us as f64 / 1000.0
        );
    }
    s.push('\n');
}

/// The block as one JSON object (exact counts; rates are derived).
pub fn json_line(b: &Block) -> String {
    let rows: Vec<serde_json::Value> = b
        .rows
        .iter()
        .map(|r| {
            let t = r.state.throttled;
            let cost = r.state.iocost.map(|c| {
                serde_json::json!({
                    "active": c.active,
                    "hweight_active_ppm": c.hweight_active_ppm,
                    "hweight_inuse_ppm": c.hweight_inuse_ppm,
                    "debt_us": c.debt_us,
                    "usage_us": c.usage_us,
                    "delay_us": c.delay_us,
                    "waiting_ios": c.waiting_ios,
                })
            });
            serde_json::json!({
                "cgroup": r.cgroup,
                "ios": r.ios,
                "bytes": r.bytes,
                "p99_ns": r.p99_ns,
                "queue_wait_max_ns": r.wait_max_ns,
                "held_ios": t.ios,
                "oldest_wait_ns": t.oldest_wait_ns,
                "iocost": cost,
                "latency_ns_p50": r.latency.p50_ns,
                "latency_ns_p90": r.latency.p90_ns,
                "latency_ns_p99": r.latency.p99_ns,
                "latency_ns_max": r.latency.max_ns,
            })
        })
        .collect();
    let cost = b.iocost.map(|c| {
        serde_json::json!({
            "enabled": c.enabled,
            "running": c.running,
            "vrate_ppm": c.vrate_ppm,
            "busy_level": c.busy_level,
        })
    });
    let mut doc = serde_json::json!({
        "t_ns": b.at_ns,
        "interval_ns": b.len_ns,
        "iocost": cost,
        "cgroups": rows,
    });
    if let Some(d) = &b.device {
        doc["device"] = serde_json::json!({
            "name": d.name,
            "ios": d.ios,
            "bytes": d.bytes,
            "latency_ns_p50": d.latency.p50_ns,
            "latency_ns_p90": d.latency.p90_ns,
            "latency_ns_p99": d.latency.p99_ns,
            "latency_ns_max": d.latency.max_ns,
            "io_ticks_ms": d.io_ticks_ms,
            "util_pct": d.util_pct.map(|u| (u * 100.0).round() / 100.0),
        });
    }
    if let Some((groups, dev)) = &b.run {
        doc["run"] = serde_json::json!({
            "cgroups": groups.iter().map(|g| g.json("cgroup")).collect::<Vec<_>>(),
            "device": dev.json("name"),
        });
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::{GroupLive, HeldLive, IocostDeviceLive, IocostGroupLive};

    fn row(cgroup: &str, ios: [u64; 2], state: GroupLive) -> Row {
        Row {
            cgroup: cgroup.into(),
            ios,
            bytes: [ios[0] * 4096, ios[1] * 65536],
            p99_ns: (ios[0] + ios[1] > 0).then_some(1_234_567),
            latency: Latency::default(),
            wait_max_ns: 99_900_000,
            state,
        }
    }

    #[test]
    fn block_text_throttle_and_iocost() {
        let held = GroupLive {
            throttled: HeldLive {
                ios: 4,
                oldest_wait_ns: 12_500_000,
            },
            iocost: None,
        };
        let b = Block {
            at_ns: 3_000_000_000,
            len_ns: 1_000_000_000,
            iocost: None,
            rows: vec![row("/a", [200, 10], held), row("/b", [0, 0], held)],
            device: None,
            run: None,
        };
        assert_eq!(
            format_block(&b, "nullb1"),
            "live t=3.000s nullb1 total 210 IOPS 1440KiB/s\n\
             \x20 cgroup               r_iops w_iops       r_bw       w_bw   p99_ms qwait_ms  held  wait_ms\n\
             \x20 /a                      200     10   800KiB/s   640KiB/s    1.235     99.9     4     12.5\n\
             \x20 /b                        0      0          -          -        -     99.9     4     12.5\n"
        );
        let cost = GroupLive {
            throttled: HeldLive::default(),
            iocost: Some(IocostGroupLive {
                active: true,
                hweight_active_ppm: 200_000,
                hweight_inuse_ppm: 262_619,
                debt_us: 1500,
                usage_us: 42_000,
                delay_us: 0,
                waiting_ios: 2,
            }),
        };
        let b = Block {
            iocost: Some(IocostDeviceLive {
                enabled: true,
                running: true,
                vrate_ppm: 875_000,
                busy_level: 2,
            }),
            rows: vec![row("/a", [100, 0], cost)],
            ..b
        };
        let text = format_block(&b, "sda");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "live t=3.000s sda iocost RUN  vrate= 87.50% busy= +2 total 100 IOPS 400KiB/s"
        );
        assert!(
            lines[1].ends_with(" hw_act% hw_inu% debt_ms delay_ms"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].ends_with("   20.00   26.26    1.50     0.00"),
            "{}",
            lines[2]
        );
        let j: serde_json::Value = serde_json::from_str(&json_line(&b)).unwrap();
        assert_eq!(j["iocost"]["vrate_ppm"], 875_000);
        assert_eq!(j["cgroups"][0]["iocost"]["waiting_ios"], 2);
        assert_eq!(j["cgroups"][0]["iocost"]["usage_us"], 42_000);
        assert_eq!(j["cgroups"][0]["ios"], serde_json::json!([100, 0]));
    }

    #[test]
    fn json_line_device_and_run_summary() {
        let mut h = LatHist::new();
        for ns in [1_000, 2_000, 2_000, 50_000] {
            h.record(ns);
        }
        let lat = Latency::of(&h, 50_000);
        assert!(lat.p50_ns <= lat.p90_ns && lat.p90_ns <= lat.p99_ns);
        let run = RunLatency::of("/a", [4, 0], &h, 50_000);
        assert_eq!(run.cdf.last().map(|c| c.1), Some(4), "{:?}", run.cdf);
        assert_eq!(run.cdf.len(), 3, "three distinct buckets: {:?}", run.cdf);
        assert_eq!(run.percentiles.len(), RUN_PERCENTILES.len());
        let b = Block {
            at_ns: 1_000_000_000,
            len_ns: 1_000_000_000,
            iocost: None,
            rows: vec![Row {
                latency: lat,
                p99_ns: lat.p99_ns,
                ..row("/a", [4, 0], GroupLive::default())
            }],
            device: Some(DeviceRow {
                name: "nullb1".into(),
                ios: [4, 0],
                bytes: [16384, 0],
                latency: lat,
                io_ticks_ms: 250,
                util_pct: Some(25.0),
            }),
            run: Some((
                vec![run.clone()],
                RunLatency {
                    name: "nullb1".into(),
                    ..run
                },
            )),
        };
        let j: serde_json::Value = serde_json::from_str(&json_line(&b)).unwrap();
        let c = &j["cgroups"][0];
        assert_eq!(c["latency_ns_p99"], c["p99_ns"]);
        assert_eq!(c["latency_ns_max"], 50_000);
        assert_eq!(j["device"]["util_pct"], 25.0);
        assert_eq!(j["device"]["io_ticks_ms"], 250);
        assert_eq!(j["run"]["cgroups"][0]["cgroup"], "/a");
        assert_eq!(j["run"]["device"]["name"], "nullb1");
        assert_eq!(j["run"]["device"]["latency_ns_cdf"][2][1], 4);
    }

    #[test]
    fn live_option_values() {
        let mut o = LiveOptions::default();
        assert!(!o.is_on());
        o.set_every("").unwrap();
        assert_eq!(o.every_s, Some(1));
        o.set_every("5").unwrap();
        assert_eq!(o.every_s, Some(5));
        assert!(o.set_every("0").is_err() && o.set_every("1s").is_err());
    }
}
