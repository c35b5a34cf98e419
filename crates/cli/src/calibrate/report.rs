//! What `blkqos calibrate` prints: the measurements, the `io.cost.model`
//! line, the fitted simulated device (as `--device=` flags and as a
//! scenario's `[device]`/`[host]` tables) with confidence intervals, and
//! the fit check.

use super::fit::RoundFit;
use super::measure::{self, Target};
use super::plan::Job;
use super::stats::Estimate;
use super::raw::Measured;
use crate::output::Failure;
use blkqos_engine::StopOnSignal;
use serde_json::{json, Value};
use std::fmt::Write;

/// What was measured.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub devid: String,
    pub name: String,
    pub size_bytes: u64,
    /// `queue/nr_requests` and `queue/max_sectors_kb` of the disk.
    pub nr_requests: Option<u64>,
    pub max_sectors_kb: Option<u64>,
}

/// One measurement job over the rounds.
#[derive(Clone, Debug)]
pub struct JobRow {
    pub name: String,
    pub what: String,
    pub iops: Estimate,
    pub bytes_per_sec: Estimate,
    pub lat_p50_ns: Estimate,
    pub lat_p99_ns: Estimate,
}

/// One job replayed on the fitted device.
#[derive(Clone, Debug)]
pub struct CheckRow {
    pub name: String,
    pub iops_measured: f64,
    pub iops_predicted: f64,
    pub p50_measured_ns: f64,
    pub p50_predicted_ns: u64,
    pub p99_measured_ns: f64,
    pub p99_predicted_ns: u64,
}

/// The fitted device's parameters, each over the rounds.
#[derive(Clone, Debug)]
pub struct DeviceFit {
    pub channels: Estimate,
    pub submit_ns: Estimate,
    pub read_ns: Estimate,
    pub read_bps: Estimate,
    pub jitter_pct: Estimate,
    pub write_ns: Option<Estimate>,
    pub write_bps: Option<Estimate>,
}

pub struct Report {
    pub measured: Measured,
    pub jobs: Vec<JobRow>,
    /// iocost_coef_gen.py's keys in its order, with their estimates.
    pub coef: Vec<(&'static str, Estimate)>,
    pub device: DeviceFit,
    pub check: Vec<CheckRow>,
}

fn est<F: Fn(&RoundFit) -> f64>(fits: &[RoundFit], f: F) -> Estimate {
    Estimate::of(&fits.iter().map(f).collect::<Vec<_>>())
}

impl Report {
    pub fn new(m: &Measured, fits: &[RoundFit]) -> Report {
        let rounds = &m.rounds;
        let names: Vec<String> = rounds[0].keys().cloned().collect();
        let plan = super::plan::round(m.target.size_bytes, m.writes);
        let jobs = plan
            .iter()
            .filter(|j| names.contains(&j.name))
            .map(|j| {
                let pts: Vec<_> = rounds.iter().filter_map(|r| r.get(&j.name)).collect();
                let e = |f: &dyn Fn(&measure::Point) -> f64| {
                    Estimate::of(&pts.iter().map(|p| f(p)).collect::<Vec<_>>())
                };
                JobRow {
                    name: j.name.clone(),
                    what: format!("{} bs={} iodepth={}", j.rw, size_text(j.bs_bytes), j.iodepth),
                    iops: e(&|p| p.iops()),
                    bytes_per_sec: e(&|p| p.bytes_per_sec()),
                    lat_p50_ns: e(&|p| p.lat_p50_ns as f64),
                    lat_p99_ns: e(&|p| p.lat_p99_ns as f64),
                }
            })
            .collect();
        let keys = ["rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops"];
        let coef = keys
            .iter()
            .filter(|k| fits[0].coef.contains_key(*k))
            .map(|k| (*k, est(fits, |f| f.coef[*k])))
            .collect();
        let writes = fits[0].write.is_some();
        let device = DeviceFit {
            channels: est(fits, |f| f.channels),
            submit_ns: est(fits, |f| f.submit_ns),
            read_ns: est(fits, |f| f.read.base_ns),
            read_bps: est(fits, |f| f.read.rate_bps),
            jitter_pct: est(fits, |f| f.read.jitter_pct),
            write_ns: writes.then(|| est(fits, |f| f.write.map_or(0.0, |w| w.base_ns))),
            write_bps: writes.then(|| est(fits, |f| f.write.map_or(0.0, |w| w.rate_bps))),
        };
        Report {
            measured: m.clone(),
            jobs,
            coef,
            device,
            check: Vec::new(),
        }
    }

    /// The `io.cost.model` line (the kernel takes any subset of the keys).
    pub fn cost_model_line(&self) -> String {
        let mut s = format!("{} ctrl=user model=linear", self.measured.target.devid);
        for (k, e) in &self.coef {
            write!(s, " {k}={}", e.mean.round() as u64).unwrap();
        }
        s
    }

    /// The fitted device as a `--device=` spec.
    pub fn device_spec(&self) -> String {
        let d = &self.device;
        let r = |e: &Estimate| e.mean.round().max(0.0) as u64;
        let mut s = format!(
            "ssd,channels={},read_ns={},read_bps={},jitter_pct={}",
            r(&d.channels).max(1),
            r(&d.read_ns),
            r(&d.read_bps).max(1),
            r(&d.jitter_pct)
        );
        if let (Some(w), Some(b)) = (&d.write_ns, &d.write_bps) {
            write!(s, ",write_ns={},write_bps={}", r(w), r(b).max(1)).unwrap();
        }
        write!(s, ",size={}", self.measured.target.size_bytes.max(4096)).unwrap();
        if let Some(n) = self.measured.target.nr_requests.filter(|&n| n > 0) {
            write!(s, ",nr_requests={n}").unwrap();
        }
        if let Some(kb) = self.measured.target.max_sectors_kb.filter(|kb| (4..=1 << 20).contains(kb)) {
            write!(s, ",max_sectors_kb={kb}").unwrap();
        }
        s
    }

    pub fn submit_ns(&self) -> u64 {
        self.device.submit_ns.mean.round().max(0.0) as u64
    }

    /// Replay every job on the fitted device.
    pub fn check(&mut self, jobs: &[Job], secs: u32, signals: &StopOnSignal) -> Result<(), Failure> {
        let target = Target::Sim {
            device: format!("{},name={}", self.device_spec(), self.measured.target.name),
            name: self.measured.target.name.clone(),
            submit_ns: self.submit_ns(),
        };
        for j in jobs {
            let Some(row) = self.jobs.iter().find(|r| r.name == j.name) else {
                continue;
            };
            let p = measure::run(j, &target, secs, signals)?;
            self.check.push(CheckRow {
                name: j.name.clone(),
                iops_measured: row.iops.mean,
                iops_predicted: p.iops(),
                p50_measured_ns: row.lat_p50_ns.mean,
                p50_predicted_ns: p.lat_p50_ns,
                p99_measured_ns: row.lat_p99_ns.mean,
                p99_predicted_ns: p.lat_p99_ns,
            });
        }
        Ok(())
    }

    pub fn text(&self) -> String {
        let mut o = String::new();
        let m = &self.measured;
        let i = &m.target;
        writeln!(
            o,
            "calibrate {} ({} {}, {}): {} round(s) x {} jobs x {} s, {}{}",
            i.path,
            i.name,
            i.devid,
            size_text(i.size_bytes),
            m.rounds.len(),
            self.jobs.len(),
            m.secs_per_job,
            m.backend,
            if m.interrupted { ", INTERRUPTED" } else { "" }
        )
        .unwrap();
        writeln!(o, "\nmeasured (mean, ±95% confidence interval over rounds):").unwrap();
        writeln!(
            o,
            "  {:<11} {:<32} {:>18} {:>16} {:>16} {:>16}",
            "job", "fio", "IOPS", "bandwidth", "lat p50", "lat p99"
        )
        .unwrap();
        for r in &self.jobs {
            writeln!(
                o,
                "  {:<11} {:<32} {:>18} {:>16} {:>16} {:>16}",
                r.name,
                r.what,
                with_ci(&r.iops, |v| format!("{v:.0}")),
                with_ci(&r.bytes_per_sec, |v| format!("{}/s", size_text(v as u64))),
                with_ci(&r.lat_p50_ns, us),
                with_ci(&r.lat_p99_ns, us),
            )
            .unwrap();
        }
        writeln!(
            o,
            "\nio.cost.model (tools/cgroup/iocost_coef_gen.py's jobs; write it to /sys/fs/cgroup/io.cost.model):"
        )
        .unwrap();
        writeln!(o, "{}", self.cost_model_line()).unwrap();
        for (k, e) in &self.coef {
            writeln!(o, "  {k:<10} {}", with_ci(e, |v| format!("{v:.0}"))).unwrap();
        }
        if self.device.write_ns.is_none() {
            writeln!(
                o,
                "  (writes not measured: wbps, wseqiops, wrandiops keep the kernel's values; --write measures them)"
            )
            .unwrap();
        }
        writeln!(o, "\nsimulated device fitted to it:").unwrap();
        writeln!(
            o,
            "  blkqos run JOB.fio --device={} --submit-ns={}",
            self.device_spec(),
            self.submit_ns()
        )
        .unwrap();
        writeln!(o, "\n# or in a scenario:\n[device]\nmodel = \"ssd\"").unwrap();
        let d = &self.device;
        let mut rows: Vec<(&str, &Estimate)> = vec![
            ("channels", &d.channels),
            ("read_ns", &d.read_ns),
            ("read_bps", &d.read_bps),
            ("jitter_pct", &d.jitter_pct),
        ];
        if let (Some(w), Some(b)) = (&d.write_ns, &d.write_bps) {
            rows.push(("write_ns", w));
            rows.push(("write_bps", b));
        }
        for (k, e) in rows {
            let v = (e.mean.round().max(if k == "jitter_pct" { 0.0 } else { 1.0 })) as u64;
            writeln!(o, "{k} = {v:<14} # {}", ci_text(e)).unwrap();
        }
        writeln!(o, "size = \"{}\"", self.measured.target.size_bytes).unwrap();
        if let Some(n) = self.measured.target.nr_requests {
            writeln!(o, "nr_requests = {n}").unwrap();
        }
        if let Some(kb) = self.measured.target.max_sectors_kb {
            writeln!(o, "max_sectors_kb = {kb}").unwrap();
        }
        writeln!(
            o,
            "[host]\nsubmit_ns = {:<12} # {}",
            self.submit_ns(),
            ci_text(&d.submit_ns)
        )
        .unwrap();
        if d.write_ns.is_none() {
            writeln!(o, "# write_ns/write_bps: not measured (--write)").unwrap();
        }
        if !self.check.is_empty() {
            writeln!(
                o,
                "\nfit check: each job on the fitted device ({} s simulated) against the measurement:",
                CHECK_SECS_TEXT
            )
            .unwrap();
            writeln!(
                o,
                "  {:<11} {:>12} {:>12} {:>7}   {:>21}   {:>21}",
                "job", "IOPS meas", "IOPS sim", "err", "p50 meas/sim", "p99 meas/sim"
            )
            .unwrap();
            for c in &self.check {
                writeln!(
                    o,
                    "  {:<11} {:>12.0} {:>12.0} {:>+6.1}%   {:>10}/{:<10}   {:>10}/{:<10}",
                    c.name,
                    c.iops_measured,
                    c.iops_predicted,
                    100.0 * (c.iops_predicted / c.iops_measured - 1.0),
                    us(c.p50_measured_ns),
                    us(c.p50_predicted_ns as f64),
                    us(c.p99_measured_ns),
                    us(c.p99_predicted_ns as f64),
                )
                .unwrap();
            }
        }
        o
    }

    pub fn json(&self) -> String {
        let e = |e: &Estimate| json!({"mean": e.mean, "ci95": e.ci95, "rounds": e.rounds});
        let d = &self.device;
        let mut dev = serde_json::Map::new();
        dev.insert("spec".into(), json!(self.device_spec()));
        dev.insert("submit_ns".into(), json!(self.submit_ns()));
        for (k, v) in [
            ("channels", Some(&d.channels)),
            ("read_ns", Some(&d.read_ns)),
            ("read_bps", Some(&d.read_bps)),
            ("jitter_pct", Some(&d.jitter_pct)),
            ("write_ns", d.write_ns.as_ref()),
            ("write_bps", d.write_bps.as_ref()),
            ("host_submit_ns", Some(&d.submit_ns)),
        ] {
            if let Some(v) = v {
                dev.insert(format!("{k}_estimate"), e(v));
            }
        }
        let v = json!({
            "target": self.measured.target,
            "backend": self.measured.backend,
            "rounds": self.measured.rounds.len(),
            "secs_per_job": self.measured.secs_per_job,
            "interrupted": self.measured.interrupted,
            "jobs": self.jobs.iter().map(|r| json!({
                "name": r.name, "fio": r.what, "iops": e(&r.iops),
                "bytes_per_sec": e(&r.bytes_per_sec),
                "lat_p50_ns": e(&r.lat_p50_ns), "lat_p99_ns": e(&r.lat_p99_ns),
            })).collect::<Vec<Value>>(),
            "io_cost_model": {
                "line": self.cost_model_line(),
                "params": self.coef.iter().map(|(k, v)| (k.to_string(), e(v))).collect::<serde_json::Map<_, _>>(),
            },
            "device": dev,
            "check": self.check.iter().map(|c| json!({
                "name": c.name, "iops_measured": c.iops_measured, "iops_predicted": c.iops_predicted,
                "lat_p50_measured_ns": c.p50_measured_ns, "lat_p50_predicted_ns": c.p50_predicted_ns,
                "lat_p99_measured_ns": c.p99_measured_ns, "lat_p99_predicted_ns": c.p99_predicted_ns,
            })).collect::<Vec<Value>>(),
            "measured": self.measured,
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }
}

const CHECK_SECS_TEXT: u32 = super::CHECK_SECS;

fn ci_text(e: &Estimate) -> String {
    match (e.ci95, e.ci95_pct()) {
        (Some(c), Some(p)) => format!(
            "95% CI {:.0} .. {:.0} (±{p:.1}%, {} rounds)",
            e.mean - c,
            e.mean + c,
            e.rounds
        ),
        _ => "one round: no interval".into(),
    }
}

fn with_ci(e: &Estimate, f: impl Fn(f64) -> String) -> String {
    match e.ci95_pct() {
        Some(p) => format!("{} ±{p:.0}%", f(e.mean)),
        None => f(e.mean),
    }
}

fn us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.1}us", ns / 1e3)
    }
}

/// 4k, 128m, 1.5g: binary units as fio prints block sizes.
pub fn size_text(b: u64) -> String {
    const U: [(&str, u64); 4] = [("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)];
    for (s, m) in U {
        if b >= m {
            let v = b as f64 / m as f64;
            return if b % m == 0 {
                format!("{}{s}", b / m)
            } else {
                format!("{v:.1}{s}")
            };
        }
    }
    format!("{b}")
}
