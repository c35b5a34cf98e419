//! Running one calibration job: a job of fio options (the same options for
//! every runner), planned by the experiment library with the target's
//! device, host and engine set in place, on the real target (io_uring,
//! `direct=1`) or on a simulated device, or handed to fio itself (the
//! program the kernel's `iocost_coef_gen.py` drives), reduced to the
//! numbers the fit needs.

use super::plan::Job;
use anyhow::{bail, Result};
use blkqos_engine::StopOnSignal;
use blkqos_experiment::experiment::{Ran, RealOptions};
use blkqos_experiment::failure::Failure;
use blkqos_sim::DeviceSpec;
use std::path::PathBuf;

/// Where the jobs run.
#[derive(Clone, Debug)]
pub enum Target {
    /// A file or block device on the real engine.
    Real {
        path: PathBuf,
        /// `--size=` for the jobs (a file blkqos lays out); None: the
        /// target's own size.
        size: Option<String>,
        /// The engine, its consents and status line.
        engine: RealOptions,
    },
    /// A file or block device measured by fio (`--runner=fio`): the
    /// host cost the fit sees is fio's own, so the fitted model predicts
    /// fio's runs on the device. The safety rules were checked by the
    /// engine before the first job.
    Fio {
        path: PathBuf,
        size: Option<String>,
        /// The `fio` program.
        program: PathBuf,
    },
    /// A simulated device, with the host's submit cost.
    Sim {
        device: DeviceSpec,
        /// The spec named its own `seed=`.
        seed_explicit: bool,
        submit_ns: u64,
    },
}

/// One job's result, for the direction it measured.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    pub ios: u64,
    pub bytes: u64,
    pub runtime_ms: u64,
    /// Total latency (fio's `lat`: submission to completion).
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    /// The submit call (fio's `slat`).
    pub slat_mean_ns: f64,
}

impl Point {
    pub fn iops(&self) -> f64 {
        self.ios as f64 * 1000.0 / self.runtime_ms.max(1) as f64
    }
    pub fn bytes_per_sec(&self) -> f64 {
        self.bytes as f64 * 1000.0 / self.runtime_ms.max(1) as f64
    }
    /// Mean time from one IO's submission to the next one's at depth 1.
    pub fn cycle_ns(&self) -> f64 {
        1e9 / self.iops().max(1e-9)
    }
}

/// The fio options of `job` on `target` for `secs` seconds.
pub fn job_args(job: &Job, target: &Target, secs: u32) -> Vec<String> {
    let mut a = vec![
        "--name=calibrate".to_string(),
        format!("--rw={}", job.rw),
        format!("--bs={}", job.bs_bytes),
        format!("--iodepth={}", job.iodepth),
        "--ioengine=io_uring".into(),
        "--direct=1".into(),
        "--norandommap".into(),
        "--randrepeat=0".into(),
        format!("--runtime={secs}"),
        "--time_based".into(),
        "--lat_percentiles=1".into(),
    ];
    match target {
        Target::Real { path, size, .. } => {
            a.push(format!("--filename={}", path.display()));
            if let Some(s) = size {
                a.push(format!("--size={s}"));
            }
        }
        Target::Fio { path, size, .. } => {
            a.push(format!("--filename={}", path.display()));
            if let Some(s) = size {
                a.push(format!("--size={s}"));
            }
            a.push("--output-format=json".into());
        }
        Target::Sim { device, .. } => a.push(format!("--filename=/dev/{}", device.name)),
    }
    a
}

/// Run `job` and measure it. A job the planner refuses is bad input
/// (exit 2: a target it cannot use); a failing run is a run failure (1).
pub fn run(
    job: &Job,
    target: &Target,
    secs: u32,
    signals: &StopOnSignal,
) -> Result<Point, Failure> {
    let args = job_args(job, target, secs);
    if let Target::Fio { program, .. } = target {
        return run_fio(job, program, &args);
    }
    let mut exp = blkqos_experiment::flags::experiment_from_fio_args(&args)
        .map_err(|f| f.context(format!("calibration job `{}`", job.key)))?;
    match target {
        Target::Real { engine, .. } => exp.real = Some(engine.clone()),
        Target::Sim {
            device,
            seed_explicit,
            submit_ns,
        } => {
            exp.set_device(device.clone(), *seed_explicit);
            exp.host.submit_ns = *submit_ns;
        }
        Target::Fio { .. } => unreachable!("fio runs its own command line"),
    }
    let ran = match &exp.real {
        Some(r) => blkqos_experiment::real::run_real(&exp, r, signals).map_err(Failure::of_run),
        None => exp.run_sim(Some(signals)),
    }
    .map_err(|f| f.context(format!("calibration job `{}`", job.key)))?;
    point_of(&ran, job).map_err(|err| Failure { code: 1, err })
}

/// Run `job` with fio and read its JSON output.
fn run_fio(job: &Job, program: &std::path::Path, args: &[String]) -> Result<Point, Failure> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(|e| Failure {
            code: 2,
            err: anyhow::anyhow!(
                "calibrate --runner=fio: cannot run `{}`: {e}",
                program.display()
            ),
        })?;
    let fail = |what: String| Failure {
        code: 1,
        err: anyhow::anyhow!(
            "calibration job `{}` (fio {}): {what}",
            job.key,
            args.join(" ")
        ),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    // fio prints notes before its JSON on the same stream
    let json = stdout.find('{').map_or("", |i| &stdout[i..]);
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        fail(format!(
            "exit {}, no JSON result ({e}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })?;
    fio_point(&v, job.write).map_err(|e| fail(e.to_string()))
}

/// The measured direction of fio's first job in its JSON output.
pub fn fio_point(v: &serde_json::Value, write: bool) -> Result<Point> {
    let j = &v["jobs"][0];
    if let Some(err) = j["error"].as_i64().filter(|&e| e != 0) {
        bail!("failed: {}", std::io::Error::from_raw_os_error(err as i32));
    }
    let d = &j[if write { "write" } else { "read" }];
    let num = |x: &serde_json::Value, what: &str| {
        x.as_f64()
            .ok_or_else(|| anyhow::anyhow!("fio's JSON has no {what}"))
    };
    let ios = num(&d["total_ios"], "total_ios")? as u64;
    if ios == 0 {
        bail!("completed no IO");
    }
    let pct = &d["lat_ns"]["percentile"];
    Ok(Point {
        ios,
        bytes: num(&d["io_bytes"], "io_bytes")? as u64,
        runtime_ms: num(&d["runtime"], "runtime")? as u64,
        lat_mean_ns: num(&d["lat_ns"]["mean"], "lat_ns.mean")?,
        lat_p50_ns: num(
            &pct["50.000000"],
            "lat_ns 50th percentile (lat_percentiles=1)",
        )? as u64,
        lat_p99_ns: num(
            &pct["99.000000"],
            "lat_ns 99th percentile (lat_percentiles=1)",
        )? as u64,
        slat_mean_ns: num(&d["slat_ns"]["mean"], "slat_ns.mean")?,
    })
}

fn point_of(ran: &Ran, job: &Job) -> Result<Point> {
    let Some(j) = ran.result.jobs.first() else {
        bail!("job `{}` produced no result", job.key);
    };
    if j.error != 0 {
        let what = j.failure.as_ref().map_or(String::new(), |f| {
            format!(" at offset {} (length {})", f.offset, f.len)
        });
        bail!(
            "job `{}` on {} failed: {}{what}",
            job.key,
            ran.target,
            std::io::Error::from_raw_os_error(j.error)
        );
    }
    let ddir = if job.write {
        blkqos_workload::Ddir::Write
    } else {
        blkqos_workload::Ddir::Read
    };
    let d = &j.stats.dirs[ddir];
    if d.total_ios == 0 {
        bail!("job `{}` on {} completed no IO", job.key, ran.target);
    }
    let p = d.lat_hist.percentiles(&[50.0, 99.0]);
    Ok(Point {
        ios: d.total_ios,
        bytes: d.io_bytes,
        runtime_ms: if d.runtime_ms > 0 {
            d.runtime_ms
        } else {
            j.stats.job_runtime_ms
        },
        lat_mean_ns: d.lat.mean,
        lat_p50_ns: p.first().map_or(0, |x| x.1),
        lat_p99_ns: p.get(1).map_or(0, |x| x.1),
        slat_mean_ns: d.slat.mean,
    })
}
