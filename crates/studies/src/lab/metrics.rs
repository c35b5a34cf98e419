//! The numbers a lab job is judged by, taken the same way from a real
//! kernel's run (fio JSON, io.stat) and from a simulated one.
//!
//! The simulated side goes through the fio JSON blkqos prints (and the
//! io.stat it writes) on purpose: the lab judges what a user of either
//! would read, with one reader for both. Numbers taken from the run's
//! statistics directly would need a second copy of fio's report
//! arithmetic (IOPS over the group's runtime, the percentile rule, the
//! printed precision), which could drift from what blkqos prints.

use serde_json::Value;
use std::collections::BTreeMap;

/// How a metric is compared (docs/fidelity.md, "Tolerances").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// IOs or bytes per second: the real range widened by ±3%.
    Rate,
    /// A latency (ns): the real range widened by 10% or one jiffy,
    /// whichever is more.
    Latency,
    /// A share of device time in percent: the real range ± 5 points.
    Share,
    /// `%util`: the real range ± 2 points.
    Util,
    /// iocost's base vrate in percent over one second (`vrate`
    /// module): the real range widened by ±10%.
    Vrate,
    /// A number from a kernel-format trace (`ktrace` module): the real
    /// range widened by 10%. Shown by `lab compare --traces`, not
    /// judged.
    Trace,
}

/// One run's values by metric name (`job.dir.metric`, `/cg.share`,
/// `disk.util`).
pub type RunMetrics = BTreeMap<String, (Kind, f64)>;

/// fio's percentile keys and the names used here.
const PCTS: [(&str, &str); 5] = [
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p99.9"),
];

/// Metrics of one fio JSON report: per job and direction with IO, its
/// IOPS, bandwidth and completion-latency percentiles and max. With
/// `with_util`, the first disk's `util` too.
pub fn from_fio_json(v: &Value, with_util: bool, out: &mut RunMetrics) {
    for job in v["jobs"].as_array().into_iter().flatten() {
        let name = job["jobname"].as_str().unwrap_or("job");
        for dir in ["read", "write", "mixed"] {
            let d = &job[dir];
            if d.is_null() || d["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let key = |m: &str| format!("{name}.{dir}.{m}");
            out.insert(key("iops"), (Kind::Rate, d["iops"].as_f64().unwrap_or(0.0)));
            out.insert(
                key("bw"),
                (Kind::Rate, d["bw_bytes"].as_f64().unwrap_or(0.0)),
            );
            let clat = &d["clat_ns"];
            for (k, n) in PCTS {
                if let Some(x) = clat["percentile"][k].as_f64() {
                    out.insert(key(n), (Kind::Latency, x));
                }
            }
            if let Some(x) = clat["max"].as_f64() {
                out.insert(key("max"), (Kind::Latency, x));
            }
        }
    }
    if with_util {
        if let Some(u) = v["disk_util"][0]["util"].as_f64() {
            out.insert("disk.util".into(), (Kind::Util, u));
        }
    }
}

/// Device-time shares from `io.stat` text (`/cg MAJ:MIN k=v...` lines as
/// the lab records them, or `# /cg io.stat` headers as blkqos writes
/// them): each listed group's `cost.usage` over their sum, in percent.
pub fn shares_from_io_stat(text: &str, groups: &[String], out: &mut RunMetrics) {
    let usage = usage_by_group(text);
    let total: f64 = groups.iter().filter_map(|g| usage.get(g)).sum();
    if total <= 0.0 || groups.len() < 2 {
        return;
    }
    for g in groups {
        let u = usage.get(g).copied().unwrap_or(0.0);
        out.insert(format!("{g}.share"), (Kind::Share, 100.0 * u / total));
    }
}

/// The lab's per-second samples (`samples.jsonl`: `t` and each group's
/// io.stat): each listed group's `wbytes` charged per second over `window`
/// seconds from the first sample that shows writeback from it.
pub fn writeback_rates_from_samples(
    text: &str,
    groups: &[String],
    window: f64,
    out: &mut RunMetrics,
) {
    let samples: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for g in groups {
        let series: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|s| {
                let t = s["t"].as_f64()?;
                let line = s["io_stat"][g.as_str()].as_str().unwrap_or("");
                let w = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("wbytes="))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0);
                Some((t, w))
            })
            .collect();
        let Some(i0) = series.iter().position(|&(_, w)| w > 0.0) else {
            continue;
        };
        // the sample before the first writeback is the window's start
        let (t0, w0) = series[i0.saturating_sub(1)];
        if let Some(&(t1, w1)) = series.iter().find(|&&(t, _)| t >= t0 + window) {
            out.insert(
                format!("{g}.writeback/s"),
                (Kind::Rate, (w1 - w0) / (t1 - t0)),
            );
        }
    }
}

/// The simulator's per-second writeback series (`[pagecache] report`'s
/// `series`): each listed group's bytes per second over the first
/// `window` seconds from its first writeback.
pub fn writeback_rates_from_series(
    series: &Value,
    groups: &[String],
    window: f64,
    out: &mut RunMetrics,
) {
    let rows = series.as_array().map(Vec::as_slice).unwrap_or(&[]);
    for g in groups {
        let per_s: Vec<f64> = rows
            .iter()
            .map(|r| r["writeback_bytes"][g.as_str()].as_f64().unwrap_or(0.0))
            .collect();
        let Some(i0) = per_s.iter().position(|&b| b > 0.0) else {
            continue;
        };
        let n = window as usize;
        if per_s.len() >= i0 + n {
            let sum: f64 = per_s[i0..i0 + n].iter().sum();
            out.insert(format!("{g}.writeback/s"), (Kind::Rate, sum / window));
        }
    }
}

fn usage_by_group(text: &str) -> BTreeMap<String, f64> {
    value_by_group(text, "cost.usage")
}

/// One `key=value` of every group's io.stat line.
fn value_by_group(text: &str, key: &str) -> BTreeMap<String, f64> {
    let prefix = format!("{key}=");
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            current = rest.strip_suffix(" io.stat").map(str::to_string);
            continue;
        }
        let mut words = line.split_whitespace();
        let group = if line.starts_with('/') {
            words.next().map(str::to_string)
        } else {
            current.clone()
        };
        let Some(group) = group else { continue };
        for w in words {
            if let Some(v) = w.strip_prefix(prefix.as_str()) {
                if let Ok(x) = v.parse::<f64>() {
                    out.insert(group.clone(), x);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_from_both_io_stat_forms() {
        let lab = "/a 254:0 rbytes=1 rios=1 cost.usage=100\n/b 254:0 rbytes=1 cost.usage=300\n";
        let ours = "# / io.stat\n254:0 rbytes=9 cost.vrate=100.00 cost.usage=400\n# /a io.stat\n254:0 rbytes=1 cost.usage=100\n# /b io.stat\n254:0 cost.usage=300\n";
        let groups = vec!["/a".to_string(), "/b".to_string()];
        for text in [lab, ours] {
            let mut m = RunMetrics::new();
            shares_from_io_stat(text, &groups, &mut m);
            assert_eq!(m["/a.share"], (Kind::Share, 25.0));
            assert_eq!(m["/b.share"], (Kind::Share, 75.0));
        }
    }

    #[test]
    fn fio_directions_with_io_only() {
        let v: Value = serde_json::from_str(
            r#"{"jobs":[{"jobname":"r","read":{"total_ios":10,"iops":100.0,"bw_bytes":409600,
            "clat_ns":{"max":5.0,"percentile":{"50.000000":1,"99.000000":4}}},
            "write":{"total_ios":0,"iops":0.0}}],"disk_util":[{"util":12.5}]}"#,
        )
        .unwrap();
        let mut m = RunMetrics::new();
        from_fio_json(&v, true, &mut m);
        assert_eq!(m["r.read.iops"].1, 100.0);
        assert_eq!(m["r.read.p99"].1, 4.0);
        assert_eq!(m["r.read.max"].1, 5.0);
        assert!(!m.contains_key("r.write.iops"));
        assert_eq!(m["disk.util"], (Kind::Util, 12.5));
    }
}
