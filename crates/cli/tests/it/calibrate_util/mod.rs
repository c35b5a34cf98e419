//! The held-out check of `blkqos calibrate`: a fitted simulated device must
//! predict a fio job that no calibration job resembles
//! (`lab/calibrate/heldout.fio`: randrw 70/30, 16 KiB, depth 8) within
//! ±10% IOPS and ±25% p50/p99 of what fio measured on the real device.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_blkqos");

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn heldout_job() -> PathBuf {
    repo().join("lab/calibrate/heldout.fio")
}

/// IOPS and total-latency percentiles of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dir {
    pub iops: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
}

/// Read and write of fio's (or blkqos's) JSON for the job.
pub fn dirs_of(doc: &Value) -> [Dir; 2] {
    let j = &doc["jobs"][0];
    ["read", "write"].map(|d| {
        let p = &j[d]["lat_ns"]["percentile"];
        Dir {
            iops: j[d]["iops"].as_f64().unwrap_or(0.0),
            p50_ns: p["50.000000"].as_f64().unwrap_or(0.0),
            p99_ns: p["99.000000"].as_f64().unwrap_or(0.0),
        }
    })
}

/// The mean of several runs of the job, and each quantity's spread
/// (max/min − 1, %), to print.
pub fn mean_of(runs: &[[Dir; 2]]) -> ([Dir; 2], String) {
    let n = runs.len() as f64;
    let mut m = [Dir::default(); 2];
    let mut spread = String::new();
    for d in 0..2 {
        let f = |g: fn(&Dir) -> f64| {
            let v: Vec<f64> = runs.iter().map(|r| g(&r[d])).collect();
            let mean = v.iter().sum::<f64>() / n;
            let lo = v.iter().cloned().fold(f64::MAX, f64::min);
            let hi = v.iter().cloned().fold(0.0, f64::max);
            (
                mean,
                if lo > 0.0 {
                    100.0 * (hi / lo - 1.0)
                } else {
                    0.0
                },
            )
        };
        let (iops, s1) = f(|x| x.iops);
        let (p50, s2) = f(|x| x.p50_ns);
        let (p99, s3) = f(|x| x.p99_ns);
        m[d] = Dir {
            iops,
            p50_ns: p50,
            p99_ns: p99,
        };
        spread += &format!(
            "{}: spread IOPS {s1:.1}% p50 {s2:.1}% p99 {s3:.1}%; ",
            ["read", "write"][d]
        );
    }
    (m, spread)
}

/// The job on the fitted device: `spec` and `submit_ns` from a
/// calibration's JSON (`device`), the target named `/dev/NAME`.
pub fn predict(calibration: &Value) -> [Dir; 2] {
    let d = &calibration["device"];
    let name = calibration["measured"]["target"]["name"].as_str().unwrap();
    let out = Command::new(BIN)
        .arg("run")
        .arg(heldout_job())
        .arg(format!("--filename=/dev/{name}"))
        .arg(format!(
            "--device={},name={name}",
            d["spec"].as_str().unwrap()
        ))
        .arg(format!("--submit-ns={}", d["submit_ns"]))
        .arg("--output-format=json")
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "prediction failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dirs_of(&serde_json::from_slice(&out.stdout).unwrap())
}

/// Judge `pred` against `real`: IOPS ±10%, p50 and p99 ±25%, per
/// direction. Returns the misses as (metric, description) and prints the
/// table.
pub fn judge(what: &str, real: &[Dir; 2], pred: &[Dir; 2]) -> Vec<(String, String)> {
    let mut bad = Vec::new();
    eprintln!("{what}: held-out job, fio on the device against the fitted simulated device:");
    for (d, name) in ["read", "write"].iter().enumerate() {
        for (q, key, r, p, tol) in [
            ("IOPS", "iops", real[d].iops, pred[d].iops, 10.0),
            ("lat p50", "p50", real[d].p50_ns, pred[d].p50_ns, 25.0),
            ("lat p99", "p99", real[d].p99_ns, pred[d].p99_ns, 25.0),
        ] {
            let err = 100.0 * (p / r - 1.0);
            eprintln!("  {name:<5} {q:<8} fio {r:>12.0}  sim {p:>12.0}  {err:>+6.1}% (±{tol}%)");
            if err.is_nan() || err.abs() > tol {
                bad.push((
                    format!("{name}.{key}"),
                    format!(
                        "{name} {q}: fio {r:.0}, predicted {p:.0} ({err:+.1}%, allowed ±{tol}%)"
                    ),
                ));
            }
        }
    }
    bad
}

/// `*` matches any run of characters.
pub fn glob(pat: &str, s: &str) -> bool {
    match pat.split_once('*') {
        None => pat == s,
        Some((head, tail)) => {
            s.starts_with(head)
                && (0..=s.len() - head.len()).any(|i| glob(tail, &s[head.len() + i..]))
        }
    }
}

/// A known miss (`lab/calibrate/expected.toml`).
#[derive(Debug, serde::Deserialize)]
pub struct Miss {
    pub device: String,
    pub metric: String,
    pub why: String,
}

pub fn known_misses() -> Vec<Miss> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        miss: Vec<Miss>,
    }
    let text = std::fs::read_to_string(repo().join("lab/calibrate/expected.toml")).unwrap();
    toml::from_str::<File>(&text).unwrap().miss
}
