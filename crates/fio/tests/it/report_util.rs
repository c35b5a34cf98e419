//! Helpers shared by the `report_*` tests.
//!
//! The central trick: run fio 3.33 with per-IO logs (`write_lat_log`,
//! `write_bw_log`, `write_iops_log`, `log_avg_msec=0`). The logs hold every
//! sample fio fed into its stats, in order, in ns / KiB/s / IOPS, so
//! replaying them into `JobStats` reproduces fio's `thread_stat` exactly,
//! and our report must then match fio's byte for byte (except rusage and
//! wall-clock fields, which a replay cannot know).
#![allow(dead_code)]

use blkqos_workload::spec::JobSpec;
use blkqos_workload::stats::JobStats;
use blkqos_workload::{Ddir, PerDir};
use serde_json::Value;

/// One fio log line: (value, ddir, bs); fio writes the direction as its
/// number ([`Ddir::fio_index`]).
pub fn parse_log(text: &str) -> Vec<(u64, Ddir, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<u64> = l
                .split(',')
                .map(|x| x.trim().parse().expect("log field"))
                .collect();
            let ddir = Ddir::from_fio_index(f[2] as usize).expect("log ddir");
            (f[1], ddir, f[3])
        })
        .collect()
}

/// The per-IO logs of one job clone.
pub struct Logs {
    pub clat: String,
    pub lat: String,
    pub slat: String,
    pub bw: String,
    pub iops: String,
}

/// Replay one clone's logs into `JobStats` (a psync job: every IO at depth 1,
/// one IO per submit/complete call). `runtime_ms` is per direction.
pub fn replay(logs: &Logs, runtime_ms: PerDir<u64>) -> JobStats {
    let mut s = JobStats::default();
    for (v, d, bs) in parse_log(&logs.clat) {
        let dir = &mut s.dirs[d];
        dir.clat.add(v);
        dir.clat_hist.record(v);
        dir.io_bytes += bs;
        dir.total_ios += 1;
        s.lat_buckets.mark(v);
    }
    for (v, d, _) in parse_log(&logs.lat) {
        s.dirs[d].lat.add(v);
        s.dirs[d].lat_hist.record(v);
    }
    for (v, d, _) in parse_log(&logs.slat) {
        s.dirs[d].slat.add(v);
        s.dirs[d].slat_hist.record(v);
    }
    for (v, d, _) in parse_log(&logs.bw) {
        s.dirs[d].bw.add(v);
    }
    for (v, d, _) in parse_log(&logs.iops) {
        s.dirs[d].iops.add(v);
    }
    for (d, dir) in s.dirs.iter_mut() {
        if dir.total_ios > 0 {
            dir.runtime_ms = runtime_ms[d];
        }
    }
    let total: u64 = s.dirs.values().map(|d| d.total_ios).sum();
    s.depth_level[0] = total;
    s.submit_batches[1] = total;
    s.complete_batches[1] = total;
    s.members = 1;
    s
}

/// Split fio's `--output-format=json[+],normal` stdout into the JSON
/// document (with its newline) and the normal part that follows it.
pub fn split_output(out: &str) -> (String, String) {
    let start = out.find("\n{\n").map(|i| i + 1).unwrap_or(0);
    let rest = &out[start..];
    let end = rest.find("\n}\n").expect("end of fio JSON") + 3;
    (rest[..end].to_string(), rest[end..].to_string())
}

/// Keys whose values a replay cannot reproduce (rusage, wall clock, ETA).
pub const JSON_VOLATILE: [&str; 8] = [
    "time", "eta", "usr_cpu", "sys_cpu", "ctx", "majf", "minf", "util",
];

/// Compare two JSON texts line by line; for lines `"key" : value` with a
/// volatile key only the key part must match. Returns the first difference.
pub fn diff_json_text(ours: &str, fio: &str) -> Option<String> {
    let a: Vec<&str> = ours.lines().collect();
    let b: Vec<&str> = fio.lines().collect();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied(), b.get(i).copied());
        if x == y {
            continue;
        }
        if let (Some(x), Some(y)) = (x, y) {
            let kx = x.split(" : ").next().unwrap_or("");
            let ky = y.split(" : ").next().unwrap_or("");
            let key = kx.trim().trim_matches('"');
            if kx == ky && x.contains(" : ") && JSON_VOLATILE.contains(&key) {
                continue;
            }
        }
        return Some(format!("line {}:\n ours: {:?}\n  fio: {:?}", i + 1, x, y));
    }
    None
}

/// Compare normal outputs line by line, skipping the `cpu` line, the
/// wall-clock time of job headers and the `util=` of disk lines.
pub fn diff_normal_text(ours: &str, fio: &str) -> Option<String> {
    let a: Vec<&str> = ours.split('\n').collect();
    let b: Vec<&str> = fio.split('\n').collect();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied(), b.get(i).copied());
        if x == y {
            continue;
        }
        if let (Some(x), Some(y)) = (x, y) {
            if x.starts_with("  cpu          :") && y.starts_with("  cpu          :") {
                continue;
            }
            // job header: the wall-clock time after "pid=N: " may differ
            let hx = upto(x, "pid=", ':');
            if x.contains("(groupid=") && hx.is_some() && hx == upto(y, "pid=", ':') {
                continue;
            }
            // disk line: util is re-rounded from fio's 6-decimal JSON value
            let ux = upto(x, "util=", '=');
            if x.contains(": ios=") && ux.is_some() && ux == upto(y, "util=", '=') {
                continue;
            }
        }
        return Some(format!("line {}:\n ours: {:?}\n  fio: {:?}", i + 1, x, y));
    }
    None
}

/// `s` up to and including the first `end` after `marker` (None if absent).
fn upto<'s>(s: &'s str, marker: &str, end: char) -> Option<&'s str> {
    let p = s.find(marker)?;
    let q = s[p..].find(end)?;
    Some(&s[..p + q + 1])
}

/// The keys of a JSON value, recursively, as "path" lines in order.
/// `disk_util` contents are ignored.
pub fn key_paths(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                out.push(p.clone());
                if k != "disk_util" {
                    key_paths(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                key_paths(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A spec configured like a fio job's reported options.
pub fn spec_like(name: &str, job_options: &[(&str, &str)]) -> JobSpec {
    let mut s = JobSpec::new(name);
    s.job_options = job_options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s
}

/// `jobs[i].<dir>.runtime` of a fio JSON document.
pub fn runtimes(doc: &Value, job: usize) -> PerDir<u64> {
    let j = &doc["jobs"][job];
    let r = |d: &str| j[d]["runtime"].as_u64().unwrap_or(0);
    if j.get("mixed").is_some() && j.get("read").is_none() {
        let m = r("mixed");
        return PerDir::all(m);
    }
    PerDir::from_fn(|d| r(d.name()))
}

/// The pid in fio's first normal-output job header.
pub fn header_pid(normal: &str) -> u32 {
    normal
        .lines()
        .find(|l| l.contains("(groupid="))
        .and_then(|l| l.split("pid=").nth(1))
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// fio's `disk_util` entries as our input.
pub fn disk_utils(doc: &Value) -> Vec<blkqos_fio::report::DiskUtil> {
    doc["disk_util"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| blkqos_fio::report::DiskUtil {
                    name: d["name"].as_str().unwrap_or("").to_string(),
                    read_ios: d["read_ios"].as_u64().unwrap_or(0),
                    write_ios: d["write_ios"].as_u64().unwrap_or(0),
                    read_merges: d["read_merges"].as_u64().unwrap_or(0),
                    write_merges: d["write_merges"].as_u64().unwrap_or(0),
                    read_ticks: d["read_ticks"].as_u64().unwrap_or(0),
                    write_ticks: d["write_ticks"].as_u64().unwrap_or(0),
                    in_queue: d["in_queue"].as_u64().unwrap_or(0),
                    util: d["util"].as_f64().unwrap_or(0.0),
                    agg: None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `"job options"` of a fio JSON job, in order.
pub fn job_options(doc: &Value, job: usize) -> Vec<(String, String)> {
    doc["jobs"][job]["job options"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}
