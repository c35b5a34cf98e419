//! Model families fitted to the measurements, and the choice between them.
//!
//! Each candidate is a simulated device (`--device=` spec) plus the host's
//! submit cost; its parameters come from the rounds' fits (mean and 95%
//! interval). The fit check replays every measurement job on each
//! candidate, and the one whose replay is closest to the measurements is
//! chosen: the error of a candidate is, averaged over the jobs,
//! `|ln(IOPS_sim / IOPS)| + |ln(p50_sim / p50)| / 2 + |ln(p99_sim / p99)| / 4`
//! (throughput first, then the median, then the tail, which is the
//! noisiest measurement). A tie goes to the earlier candidate.
//!
//! Families: `ssd` (parallel units, base latency plus transfer time: most
//! real devices) with its depth-1 spread as jitter on the units or as an
//! exponential tail outside them (a completion path that wakes threads),
//! `null` with its `mbps` throttle and `null` without (null_blk, where the
//! throttle's 20 ms ticks shape the latency), and `fes` (one queue whose
//! service time is the measured time between completions at each depth:
//! devices whose throughput grows with depth in a way parallel units do
//! not follow), when the rounds have the depth sweep.

use super::fit::RoundFit;
use super::measure::{self, Target};
use super::plan::Job;
use super::raw::Measured;
use super::stats::Estimate;
use blkqos_engine::StopOnSignal;
use blkqos_experiment::failure::Failure;
use std::fmt::Write;

/// One job replayed on a candidate.
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

impl CheckRow {
    fn error(&self) -> f64 {
        let l = |sim: f64, meas: f64| (sim.max(1.0) / meas.max(1.0)).ln().abs();
        l(self.iops_predicted, self.iops_measured)
            + l(self.p50_predicted_ns as f64, self.p50_measured_ns) / 2.0
            + l(self.p99_predicted_ns as f64, self.p99_measured_ns) / 4.0
    }
}

/// A fitted device.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The model (`ssd`, `null`).
    pub model: &'static str,
    /// What it stands for, for the report.
    pub label: &'static str,
    /// Fitted parameters, in spec order.
    pub params: Vec<(&'static str, Estimate)>,
    /// Parameters taken from the target as they are (size, request slots).
    pub fixed: Vec<(&'static str, u64)>,
    pub submit_ns: Estimate,
    pub check: Vec<CheckRow>,
}

/// The index of the smallest error, the first among equals (a grid's
/// order puts the simpler choices first).
fn first_best(errors: &[f64]) -> usize {
    let mut best = 0;
    for (i, e) in errors.iter().enumerate() {
        if e.total_cmp(&errors[best]).is_lt() {
            best = i;
        }
    }
    best
}

/// The (share, run) points a spread is chosen from, simpler first: no
/// random share (whose run length changes nothing), then each share with
/// each run.
fn spread_grid() -> impl Iterator<Item = (u32, u32)> {
    SPREAD_PCTS.iter().flat_map(|&pct| {
        let runs: &[u32] = if pct == 0 { &[1] } else { &SPREAD_RUNS };
        runs.iter().map(move |&run| (pct, run))
    })
}

/// The run lengths `fes`'s `spread_run` is chosen from.
pub const SPREAD_RUNS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The random shares (%) `fes`'s `spread_pct` is chosen from, in quarters:
/// with the run lengths, 29 replays of the depth sweep. (Tenths, 71
/// replays, took 38-53 s to refit the recorded RAM loop devices, and
/// lowered the sweep's error by 0-9%.)
pub const SPREAD_PCTS: [u32; 5] = [0, 25, 50, 75, 100];

/// A parameter's value in a spec: a whole number, at least `min`.
fn whole(e: &Estimate, min: u64) -> u64 {
    (e.mean.round().max(0.0) as u64).max(min)
}

/// The smallest value each parameter may take in a spec.
fn min_of(key: &str) -> u64 {
    match key {
        "jitter_pct" | "mbps" | "read_delay_ns" | "write_delay_ns" | "read_tail_ns"
        | "write_tail_ns" | "spread_pct" | "shared_spread_pct" | "shared_spread_run" => 0,
        k if k.contains("_ps_per_byte_")
            || k.ends_with("_max_bps")
            || k.ends_with("_shared_ns")
            || k.ends_with("_shared_queue") =>
        {
            0
        }
        _ => 1,
    }
}

impl Candidate {
    /// `model,key=value,...` for `--device=`.
    pub fn spec(&self) -> String {
        let mut s = self.model.to_string();
        for (k, e) in &self.params {
            write!(s, ",{k}={}", whole(e, min_of(k))).unwrap();
        }
        for (k, v) in &self.fixed {
            write!(s, ",{k}={v}").unwrap();
        }
        s
    }
    pub fn submit_ns(&self) -> u64 {
        whole(&self.submit_ns, 0)
    }
    /// The mean error over the checked jobs (None: not checked).
    pub fn error(&self) -> Option<f64> {
        (!self.check.is_empty())
            .then(|| self.check.iter().map(CheckRow::error).sum::<f64>() / self.check.len() as f64)
    }

    /// Set a parameter (replacing it if present).
    fn set_param(&mut self, key: &'static str, e: Estimate) {
        match self.params.iter_mut().find(|(k, _)| *k == key) {
            Some(p) => p.1 = e,
            None => self.params.push((key, e)),
        }
    }

    /// `fes`: the random share (`spread_pct`) and the run length
    /// (`spread_run`: requests in a row sharing one draw of it) whose
    /// replay of the random 4 KiB jobs deeper than 1 is closest to them, by
    /// the fit check's error; the first among equals (the smaller share,
    /// then the shorter run). Deeper than 1, independent draws average out in the
    /// queue and runs keep the spread: the depth sweep's p99s tell how much
    /// of the service varies and how long its slowness lasts. Depth 1 is
    /// left out: there every request waits for the host to wake a sleeping
    /// thread (the submitting program, the device's worker), and that
    /// spread is the host's. On this machine's loop device over RAM, 4 KiB
    /// reads at depth 1 had p99 72-78 µs with the CPUs' idle states on and
    /// 10-11 µs with idle polling, and 40 minutes later 5.8-13 µs either
    /// way (lab/calibrate/idle/).
    pub fn choose_spread(
        &mut self,
        name: &str,
        jobs: &[(Job, f64, f64, f64)],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<(), Failure> {
        let sweep: Vec<_> = jobs
            .iter()
            .filter(|(j, ..)| j.bs_bytes == 4096 && j.iodepth > 1 && j.rw.starts_with("rand"))
            .cloned()
            .collect();
        if sweep.is_empty() {
            return Ok(());
        }
        let points: Vec<(u32, u32)> = spread_grid().collect();
        let keys = ["spread_pct", "spread_run"];
        self.choose_by_replay(name, keys, &sweep, &points, secs, signals)?;
        Ok(())
    }

    /// `fes` with a shared resource it queues at: the resource's own
    /// spread (`shared_spread_pct`, `shared_spread_run`; the sim's `fes`
    /// module header) whose replay of the random jobs that load it (larger
    /// than 4 KiB, deeper than 1: 32 KiB at depth 16, 128 KiB at depth 64)
    /// is closest to them, after [`Candidate::choose_spread`]. The first
    /// point is none of its own (`shared_spread_run=0`), kept unless a
    /// spread of its own is closer. True when one was chosen (the 4 KiB
    /// jobs hold the resource's time too, so the path's spread is then
    /// chosen again). Where the resource binds, the time
    /// between completions is its time, and its variability is what those
    /// jobs' latencies show: on this machine's RAM loop device their
    /// medians were 0.85-0.88 of their means where the 4 KiB jobs' were
    /// 0.98-1.12 (lab/calibrate/fixtures/, docs/calibrate.md).
    pub fn choose_shared_spread(
        &mut self,
        name: &str,
        jobs: &[(Job, f64, f64, f64)],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<bool, Failure> {
        let queued = self
            .params
            .iter()
            .any(|(k, e)| k.ends_with("_shared_queue") && e.mean >= 0.5);
        let loading: Vec<_> = jobs
            .iter()
            .filter(|(j, ..)| j.bs_bytes > 4096 && j.iodepth > 1 && j.rw.starts_with("rand"))
            .cloned()
            .collect();
        if !queued || loading.is_empty() {
            return Ok(false);
        }
        let points: Vec<(u32, u32)> = std::iter::once((0, 0)).chain(spread_grid()).collect();
        let keys = ["shared_spread_pct", "shared_spread_run"];
        let (_, run) = self.choose_by_replay(name, keys, &loading, &points, secs, signals)?;
        Ok(run > 0)
    }

    /// Set `keys` to the (share, run) of `points` whose replay of `jobs`
    /// is closest to them, the first among equals; returns it.
    fn choose_by_replay(
        &mut self,
        name: &str,
        keys: [&'static str; 2],
        jobs: &[(Job, f64, f64, f64)],
        points: &[(u32, u32)],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<(u32, u32), Failure> {
        let errors = self.replay_spreads(name, keys, jobs, points, secs, signals)?;
        let (pct, run) = points[first_best(&errors)];
        self.set_param(keys[0], Estimate::chosen(f64::from(pct)));
        self.set_param(keys[1], Estimate::chosen(f64::from(run)));
        Ok((pct, run))
    }

    /// The fit check's error of `sweep` replayed with each (share, run) of
    /// `points` set as `keys`, in order; the replays run on all CPUs (each
    /// is deterministic, so the answer does not depend on how many).
    fn replay_spreads(
        &self,
        name: &str,
        keys: [&'static str; 2],
        sweep: &[(Job, f64, f64, f64)],
        points: &[(u32, u32)],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<Vec<f64>, Failure> {
        let replay = |&(pct, run): &(u32, u32)| -> Result<f64, Failure> {
            let mut c = self.clone();
            c.set_param(keys[0], Estimate::chosen(f64::from(pct)));
            c.set_param(keys[1], Estimate::chosen(f64::from(run)));
            c.run_check(name, sweep, secs, signals)?;
            Ok(c.error().unwrap_or(f64::INFINITY))
        };
        // a failed replay (a stop signal, a job refused) stops the others
        // from starting; a failure is the answer
        use rayon::prelude::*;
        points.par_iter().with_max_len(1).map(replay).collect()
    }

    /// Replay `jobs` on this candidate; `measured(name)` is the job's
    /// (IOPS, p50, p99) over the rounds.
    pub fn run_check(
        &mut self,
        name: &str,
        jobs: &[(Job, f64, f64, f64)],
        secs: u32,
        signals: &StopOnSignal,
    ) -> Result<(), Failure> {
        let spec = format!("{},name={name}", self.spec());
        let (device, seed_explicit) =
            blkqos_experiment::flags::parse_device(&spec).map_err(|e| Failure {
                code: 2,
                err: e.context(format!("calibrate: the fitted device `{spec}`")),
            })?;
        let target = Target::Sim {
            device,
            seed_explicit,
            submit_ns: self.submit_ns(),
        };
        self.check.clear();
        for (j, iops, p50, p99) in jobs {
            let p = measure::run(j, &target, secs, signals)?;
            self.check.push(CheckRow {
                name: j.key.to_string(),
                iops_measured: *iops,
                iops_predicted: p.iops(),
                p50_measured_ns: *p50,
                p50_predicted_ns: p.lat_p50_ns,
                p99_measured_ns: *p99,
                p99_predicted_ns: p.lat_p99_ns,
            });
        }
        Ok(())
    }
}

fn est<F: Fn(&RoundFit) -> f64>(fits: &[RoundFit], f: F) -> Estimate {
    Estimate::of(&fits.iter().map(f).collect::<Vec<_>>())
}

/// Every family fitted to `fits`.
pub fn candidates(m: &Measured, fits: &[RoundFit]) -> Vec<Candidate> {
    let t = &m.target;
    let submit_ns = est(fits, |f| f.submit_ns);
    let slots = t.nr_requests.filter(|&n| n > 0);
    let max_kb = t.max_sectors_kb.filter(|kb| (4..=1 << 20).contains(kb));
    let size = ("size", t.size_bytes.max(4096));
    let ssd_fixed: Vec<_> = std::iter::once(size)
        .chain(slots.map(|n| ("nr_requests", n)))
        .chain(max_kb.map(|kb| ("max_sectors_kb", kb)))
        .collect();
    // null_blk: tags = the target's request slots on one hardware queue
    let null_fixed: Vec<_> = std::iter::once(size)
        .chain(slots.map(|n| ("queue_depth", n)))
        .chain(max_kb.map(|kb| ("max_sectors_kb", kb)))
        .collect();
    let cand = |model, label, params, fixed: &Vec<(&'static str, u64)>| Candidate {
        model,
        label,
        params,
        fixed: fixed.clone(),
        submit_ns,
        check: Vec::new(),
    };
    let mut out = vec![
        cand(
            "ssd",
            "parallel units: base latency + transfer time",
            ssd_jitter_params(fits),
            &ssd_fixed,
        ),
        // the same units with the spread as a completion-path tail
        cand(
            "ssd",
            "parallel units, completion-path tail",
            ssd_tail_params(fits),
            &ssd_fixed,
        ),
    ];
    let completion = est(fits, |f| f.null.completion_ns);
    let mbps = est(fits, |f| f.null.mbps);
    if mbps.mean.round() >= 1.0 {
        out.push(cand(
            "null",
            "null_blk with its mbps throttle",
            vec![("completion_ns", completion), ("mbps", mbps)],
            &null_fixed,
        ));
    }
    out.push(cand(
        "null",
        "null_blk without a throttle",
        vec![("completion_ns", completion)],
        &null_fixed,
    ));
    if fits.iter().all(|f| f.fes.is_some()) {
        out.push(cand(
            "fes",
            "one queue, service time by depth (flow-equivalent server)",
            fes_params(fits),
            &ssd_fixed,
        ));
    }
    out
}

/// The `fes` family (every fit has one).
fn fes_params(fits: &[RoundFit]) -> Vec<(&'static str, Estimate)> {
    type Pick = fn(&super::fit::FesFit) -> Option<super::fit::FesDirFit>;
    let dirs: [(Pick, [&'static str; 13]); 2] = [
        (
            |f| Some(f.read),
            [
                "read_ns_q1",
                "read_ns_q2",
                "read_ns_q4",
                "read_ns_q8",
                "read_ns_q16",
                "read_ns_q32",
                "read_ns_q64",
                "read_ps_per_byte_q1",
                "read_ps_per_byte_q16",
                "read_ps_per_byte_q64",
                "read_shared_ns",
                "read_max_bps",
                "read_shared_queue",
            ],
        ),
        (
            |f| f.write,
            [
                "write_ns_q1",
                "write_ns_q2",
                "write_ns_q4",
                "write_ns_q8",
                "write_ns_q16",
                "write_ns_q32",
                "write_ns_q64",
                "write_ps_per_byte_q1",
                "write_ps_per_byte_q16",
                "write_ps_per_byte_q64",
                "write_shared_ns",
                "write_max_bps",
                "write_shared_queue",
            ],
        ),
    ];
    let mut params = Vec::new();
    for (pick, keys) in dirs {
        if fits[0].fes.and_then(|f| pick(&f)).is_none() {
            continue;
        }
        let value = |f: &RoundFit, i: usize| {
            let d = f
                .fes
                .and_then(|x| pick(&x))
                .expect("every fit has this direction");
            match i {
                0..=6 => d.ns_4k[i],
                7..=9 => d.ps_per_byte[i - 7],
                10 => d.shared_ns,
                11 => d.max_bps,
                _ => f64::from(u8::from(d.shared_queue)),
            }
        };
        for (i, key) in keys.into_iter().enumerate() {
            params.push((key, est(fits, |f| value(f, i))));
        }
    }
    params.push((
        "spread_pct",
        est(fits, |f| f.fes.map_or(0.0, |x| x.spread_pct)),
    ));
    params
}

/// The `ssd` family with jitter on the units.
fn ssd_jitter_params(fits: &[RoundFit]) -> Vec<(&'static str, Estimate)> {
    let mut params = vec![
        ("channels", est(fits, |f| f.channels)),
        ("read_ns", est(fits, |f| f.read.base_ns)),
        ("read_bps", est(fits, |f| f.read.rate_bps)),
        ("jitter_pct", est(fits, |f| f.read.jitter_pct)),
        ("read_delay_ns", est(fits, |f| f.read.delay_ns)),
    ];
    if fits[0].write.is_some() {
        params.extend([
            (
                "write_ns",
                est(fits, |f| f.write.map_or(0.0, |w| w.base_ns)),
            ),
            (
                "write_bps",
                est(fits, |f| f.write.map_or(0.0, |w| w.rate_bps)),
            ),
            (
                "write_delay_ns",
                est(fits, |f| f.write.map_or(0.0, |w| w.delay_ns)),
            ),
        ]);
    }
    params
}

/// The `ssd` family with the depth-1 spread as a completion-path tail.
fn ssd_tail_params(fits: &[RoundFit]) -> Vec<(&'static str, Estimate)> {
    let mut params = vec![
        ("channels", est(fits, |f| f.channels)),
        ("read_ns", est(fits, |f| f.read_tail.base_ns)),
        ("read_bps", est(fits, |f| f.read.rate_bps)),
        ("read_delay_ns", est(fits, |f| f.read_tail.delay_ns)),
        ("read_tail_ns", est(fits, |f| f.read_tail.tail_ns)),
    ];
    if fits[0].write.is_some() {
        params.extend([
            (
                "write_ns",
                est(fits, |f| f.write_tail.map_or(0.0, |w| w.base_ns)),
            ),
            (
                "write_bps",
                est(fits, |f| f.write.map_or(0.0, |w| w.rate_bps)),
            ),
            (
                "write_delay_ns",
                est(fits, |f| f.write_tail.map_or(0.0, |w| w.delay_ns)),
            ),
            (
                "write_tail_ns",
                est(fits, |f| f.write_tail.map_or(0.0, |w| w.tail_ns)),
            ),
        ]);
    }
    params
}

/// The candidate with the smallest error (the first when unchecked).
pub fn best(cands: &[Candidate]) -> usize {
    let mut best = 0;
    for (i, c) in cands.iter().enumerate() {
        if let (Some(e), Some(b)) = (c.error(), cands[best].error()) {
            if e < b {
                best = i;
            }
        }
    }
    best
}
