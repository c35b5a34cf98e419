//! What `blkqos calibrate` prints: the measurements, the `io.cost.model`
//! line, the fitted simulated device (as `--device=` flags and as a
//! scenario's `[device]`/`[host]` tables) with confidence intervals, and
//! the fit check.

use super::candidate::Candidate;
use super::fit::RoundFit;
use super::measure;
use super::plan::Job;
use super::plan::Key;
use super::raw::Measured;
use super::stats::Estimate;
use blkqos_engine::StopOnSignal;
use blkqos_experiment::failure::Failure;
use serde_json::{json, Value};
use std::fmt::Write;

/// One measurement job over the rounds.
#[derive(Clone, Debug)]
pub struct JobRow {
    pub name: Key,
    pub what: String,
    pub iops: Estimate,
    pub bytes_per_sec: Estimate,
    pub lat_p50_ns: Estimate,
    pub lat_p99_ns: Estimate,
}

pub struct Report {
    pub measured: Measured,
    pub jobs: Vec<JobRow>,
    /// iocost_coef_gen.py's keys in its order, with their estimates.
    pub coef: Vec<(&'static str, Estimate)>,
    /// Every fitted family; `chosen` is the one the check found closest.
    pub candidates: Vec<Candidate>,
    pub chosen: usize,
}

fn est<F: Fn(&RoundFit) -> f64>(fits: &[RoundFit], f: F) -> Estimate {
    Estimate::of(&fits.iter().map(f).collect::<Vec<_>>())
}

impl Report {
    pub fn new(m: &Measured, fits: &[RoundFit]) -> Report {
        let rounds = &m.rounds;
        let keys: Vec<Key> = rounds[0].keys().copied().collect();
        let plan = super::plan::round(m.target.size_bytes, m.writes);
        let jobs = plan
            .iter()
            .filter(|j| keys.contains(&j.key))
            .map(|j| {
                let pts: Vec<_> = rounds.iter().filter_map(|r| r.get(&j.key)).collect();
                let e = |f: &dyn Fn(&measure::Point) -> f64| {
                    Estimate::of(&pts.iter().map(|p| f(p)).collect::<Vec<_>>())
                };
                JobRow {
                    name: j.key,
                    what: format!(
                        "{} bs={} iodepth={}",
                        j.rw,
                        size_text(j.bs_bytes),
                        j.iodepth
                    ),
                    iops: e(&|p| p.iops()),
                    bytes_per_sec: e(&|p| p.bytes_per_sec()),
                    lat_p50_ns: e(&|p| p.lat_p50_ns as f64),
                    lat_p99_ns: e(&|p| p.lat_p99_ns as f64),
                }
            })
            .collect();
        let keys = [
            "rbps",
            "rseqiops",
            "rrandiops",
            "wbps",
            "wseqiops",
            "wrandiops",
        ];
        let coef = keys
            .iter()
            .filter(|k| fits[0].coef.contains_key(*k))
            .map(|k| (*k, est(fits, |f| f.coef[*k])))
            .collect();
        Report {
            measured: m.clone(),
            jobs,
            coef,
            candidates: super::candidate::candidates(m, fits),
            chosen: 0,
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

    pub fn device(&self) -> &Candidate {
        &self.candidates[self.chosen]
    }

    /// Replay every job on every candidate and choose the closest.
    pub fn check(
        &mut self,
        jobs: &[Job],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<(), Failure> {
        let measured: Vec<(Job, f64, f64, f64)> = jobs
            .iter()
            .filter_map(|j| {
                let r = self.jobs.iter().find(|r| r.name == j.key)?;
                Some((j.clone(), r.iops.mean, r.lat_p50_ns.mean, r.lat_p99_ns.mean))
            })
            .collect();
        let name = self.measured.target.name.clone();
        let check_one = |c: &mut Candidate| -> Result<(), Failure> {
            if c.model == "fes" {
                c.choose_spread(&name, &measured, secs, signals)?;
                // the 4 KiB jobs' services hold the resource's time too:
                // with its spread told apart, the path's is chosen again
                if c.choose_shared_spread(&name, &measured, secs, signals)? {
                    c.choose_spread(&name, &measured, secs, signals)?;
                }
            }
            c.run_check(&name, &measured, secs, signals)
        };
        // the candidates on every core (each replay is deterministic, so
        // the answer does not depend on the order); the first failure in
        // the candidates' order is the one returned
        use rayon::prelude::*;
        let results: Vec<Result<(), Failure>> = self
            .candidates
            .par_iter_mut()
            .with_max_len(1)
            .map(check_one)
            .collect();
        results.into_iter().collect::<Result<(), Failure>>()?;
        self.chosen = super::candidate::best(&self.candidates);
        Ok(())
    }

    /// The report for a terminal: the measurements, the io.cost.model
    /// line, the fitted device and the fit check.
    pub fn text(&self) -> String {
        let mut o = self.measured_text();
        self.cost_model_text(&mut o);
        self.device_text(&mut o);
        self.check_text(&mut o);
        o
    }

    /// The header and the table of measured jobs.
    fn measured_text(&self) -> String {
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
        writeln!(
            o,
            "\nmeasured (mean, ±95% confidence interval over rounds):"
        )
        .unwrap();
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
        o
    }

    /// The io.cost.model line and its coefficients.
    fn cost_model_text(&self, o: &mut String) {
        writeln!(
            o,
            "\nio.cost.model (tools/cgroup/iocost_coef_gen.py's jobs; write it to /sys/fs/cgroup/io.cost.model):"
        )
        .unwrap();
        writeln!(o, "{}", self.cost_model_line()).unwrap();
        for (k, e) in &self.coef {
            writeln!(o, "  {k:<10} {}", with_ci(e, |v| format!("{v:.0}"))).unwrap();
        }
        if !self.measured.writes {
            writeln!(
                o,
                "  (writes not measured: wbps, wseqiops, wrandiops keep the kernel's values; --write measures them)"
            )
            .unwrap();
        }
    }

    /// The fitted device as flags and as a scenario's tables.
    fn device_text(&self, o: &mut String) {
        let d = self.device();
        writeln!(
            o,
            "\nsimulated device fitted to it ({}: {}{}):",
            d.model,
            d.label,
            if d.check.is_empty() {
                "; not checked"
            } else {
                ""
            }
        )
        .unwrap();
        writeln!(
            o,
            "  blkqos run JOB.fio --device={} --submit-ns={}",
            d.spec(),
            d.submit_ns()
        )
        .unwrap();
        writeln!(
            o,
            "\n# or in a scenario:\n[device]\nmodel = \"{}\"",
            d.model
        )
        .unwrap();
        for (k, e) in &d.params {
            let v = format!("{k} = {}", e.mean.round().max(0.0) as u64);
            let why = if k.ends_with("_shared_queue") {
                // decided once for the device (fit.rs ByteCosts), no interval
                if e.mean >= 0.5 {
                    "a queue: every round's deep jobs ran at one shared resource's pace".into()
                } else {
                    "a floor: the bytes cost on each request's path".into()
                }
            } else if k.starts_with("shared_spread_") {
                "chosen by replaying the jobs that load the shared resource".into()
            } else {
                ci_text(e)
            };
            writeln!(o, "{v:<28} # {why}").unwrap();
        }
        for (k, v) in &d.fixed {
            writeln!(o, "{k} = {v}").unwrap();
        }
        let v = format!("submit_ns = {}", d.submit_ns());
        writeln!(o, "[host]\n{v:<28} # {}", ci_text(&d.submit_ns)).unwrap();
        if d.model == "ssd" && !d.params.iter().any(|(k, _)| *k == "write_ns") {
            writeln!(o, "# write_ns, write_bps: not measured (--write)").unwrap();
        }
        if d.model == "fes" && !d.params.iter().any(|(k, _)| *k == "write_ns_q1") {
            writeln!(
                o,
                "# write_ns_q*, write_ps_per_byte_q*: not measured (--write)"
            )
            .unwrap();
        }
    }

    /// Every candidate's error, then the chosen one job by job.
    fn check_text(&self, o: &mut String) {
        let d = self.device();
        if d.check.is_empty() {
            return;
        }
        writeln!(
            o,
            "\nfit check: every job replayed on each fitted model ({CHECK_SECS_TEXT} s simulated); error = mean of |ln IOPS ratio| + |ln p50 ratio|/2 + |ln p99 ratio|/4:"
        )
        .unwrap();
        for (i, c) in self.candidates.iter().enumerate() {
            writeln!(
                o,
                "  {} {:<5} {:<46} error {:.3}",
                if i == self.chosen { "*" } else { " " },
                c.model,
                c.label,
                c.error().unwrap_or(f64::NAN)
            )
            .unwrap();
        }
        writeln!(o, "\nthe chosen model, job by job:").unwrap();
        writeln!(
            o,
            "  {:<11} {:>12} {:>12} {:>7}   {:>21}   {:>21}",
            "job", "IOPS meas", "IOPS sim", "err", "p50 meas/sim", "p99 meas/sim"
        )
        .unwrap();
        for c in &d.check {
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

    pub fn json(&self) -> String {
        let e = |e: &Estimate| json!({"mean": e.mean, "ci95": e.ci95, "rounds": e.rounds});
        let cand = |c: &Candidate| {
            json!({
                "model": c.model,
                "label": c.label,
                "spec": c.spec(),
                "submit_ns": c.submit_ns(),
                "params": c.params.iter().map(|(k, v)| (k.to_string(), e(v))).collect::<serde_json::Map<_, _>>(),
                "submit_ns_estimate": e(&c.submit_ns),
                "error": c.error(),
                "check": c.check.iter().map(|r| json!({
                    "name": r.name, "iops_measured": r.iops_measured, "iops_predicted": r.iops_predicted,
                    "lat_p50_measured_ns": r.p50_measured_ns, "lat_p50_predicted_ns": r.p50_predicted_ns,
                    "lat_p99_measured_ns": r.p99_measured_ns, "lat_p99_predicted_ns": r.p99_predicted_ns,
                })).collect::<Vec<Value>>(),
            })
        };
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
            "device": cand(self.device()),
            "candidates": self.candidates.iter().map(cand).collect::<Vec<Value>>(),
            "measured": self.measured,
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }
}

const CHECK_SECS_TEXT: u32 = super::CHECK_SECS;

fn ci_text(e: &Estimate) -> String {
    if e.rounds == 0 {
        return "chosen by replaying the depth sweep".into();
    }
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
    const U: [(&str, u64); 4] = [
        ("t", 1 << 40),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
    ];
    for (s, m) in U {
        if b >= m {
            let v = b as f64 / m as f64;
            return if b.is_multiple_of(m) {
                format!("{}{s}", b / m)
            } else {
                format!("{v:.1}{s}")
            };
        }
    }
    format!("{b}")
}
