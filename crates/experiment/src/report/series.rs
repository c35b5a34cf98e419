//! Reading a blkqos time series: the JSON lines `--live-json` writes (one
//! per interval, the last with the run's latency summary, docs/live.md).

use anyhow::{bail, Result};
use serde::Deserialize;

/// iocost's device state at an interval's end.
#[derive(Clone, Debug, Deserialize)]
pub struct IocostDevice {
    pub enabled: bool,
    pub vrate_ppm: u64,
    pub busy_level: i64,
}

/// iocost's state of a cgroup at an interval's end.
#[derive(Clone, Debug, Deserialize)]
pub struct IocostGroup {
    pub hweight_active_ppm: u64,
    pub hweight_inuse_ppm: u64,
}

/// A cgroup over one interval.
#[derive(Clone, Debug, Deserialize)]
pub struct GroupRow {
    pub cgroup: String,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub p99_ns: Option<u64>,
    #[serde(default)]
    pub latency_ns_p50: Option<u64>,
    pub queue_wait_max_ns: u64,
    pub held_ios: u64,
    pub oldest_wait_ns: u64,
    pub iocost: Option<IocostGroup>,
}

/// The device over one interval.
#[derive(Clone, Debug, Deserialize)]
pub struct DeviceRow {
    pub name: String,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub latency_ns_p50: Option<u64>,
    pub latency_ns_p90: Option<u64>,
    pub latency_ns_p99: Option<u64>,
    pub latency_ns_max: Option<u64>,
    pub util_pct: Option<f64>,
}

/// Whole-run latencies of a cgroup or the device.
#[derive(Clone, Debug, Deserialize)]
pub struct RunLatency {
    #[serde(alias = "cgroup")]
    pub name: String,
    pub latency_ns_max: u64,
    pub latency_ns_percentiles: Vec<(f64, u64)>,
    /// `(ns, IOs at or below)`.
    pub latency_ns_cdf: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RunSummary {
    pub cgroups: Vec<RunLatency>,
    pub device: RunLatency,
}

/// One interval (one line).
#[derive(Clone, Debug, Deserialize)]
pub struct Interval {
    pub t_ns: u64,
    pub interval_ns: u64,
    pub iocost: Option<IocostDevice>,
    pub cgroups: Vec<GroupRow>,
    #[serde(default)]
    pub device: Option<DeviceRow>,
    #[serde(default)]
    pub run: Option<RunSummary>,
}

/// A run's time series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Where it came from (the report names it).
    pub source: String,
    pub intervals: Vec<Interval>,
}

impl Series {
    /// Parse JSON lines; `source` names the file in errors (`FILE:LINE: ...`).
    pub fn parse<'a>(source: &str, lines: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut intervals: Vec<Interval> = Vec::new();
        let mut summary_line = None;
        for (k, line) in lines.into_iter().enumerate() {
            let n = k + 1;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(s) = summary_line {
                bail!("{source}:{n}: a line after the run's last one (line {s}, the one with `run`): one run per time series file");
            }
            let iv: Interval = serde_json::from_str(line).map_err(|e| {
                anyhow::anyhow!(
                    "{source}:{n}: not a blkqos time series line (`blkqos run --live-json`): {e}"
                )
            })?;
            if iv.interval_ns == 0 && iv.t_ns > 0 {
                bail!("{source}:{n}: interval_ns is 0");
            }
            if let Some(prev) = intervals.last() {
                if iv.t_ns < prev.t_ns {
                    bail!(
                        "{source}:{n}: t_ns {} is before the previous line's {}",
                        iv.t_ns,
                        prev.t_ns
                    );
                }
            }
            if iv.run.is_some() {
                summary_line = Some(n);
            }
            intervals.push(iv);
        }
        if intervals.is_empty() {
            bail!("{source}: no time series lines (empty file)");
        }
        Ok(Series {
            source: source.to_string(),
            intervals,
        })
    }

    /// Read `path`.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = super::read_input(path)?;
        Series::parse(&path.display().to_string(), text.lines())
    }

    /// The cgroups in order of first appearance.
    pub fn cgroups(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for iv in &self.intervals {
            for c in &iv.cgroups {
                if !out.contains(&c.cgroup) {
                    out.push(c.cgroup.clone());
                }
            }
        }
        out
    }

    /// The run's length (ns): the last interval's end.
    pub fn run_ns(&self) -> u64 {
        self.intervals.last().map_or(0, |i| i.t_ns)
    }

    /// The whole-run summary, if the series has its last line.
    pub fn summary(&self) -> Option<&RunSummary> {
        self.intervals.last().and_then(|i| i.run.as_ref())
    }

    /// A cgroup's IOs per direction summed over the intervals.
    pub fn total_ios(&self, cgroup: &str) -> [u64; 2] {
        self.sum(cgroup, |c| c.ios)
    }

    /// A cgroup's bytes per direction summed over the intervals.
    pub fn total_bytes(&self, cgroup: &str) -> [u64; 2] {
        self.sum(cgroup, |c| c.bytes)
    }

    fn sum(&self, cgroup: &str, f: impl Fn(&GroupRow) -> [u64; 2]) -> [u64; 2] {
        let mut t = [0; 2];
        for c in self
            .intervals
            .iter()
            .flat_map(|i| &i.cgroups)
            .filter(|c| c.cgroup == cgroup)
        {
            let v = f(c);
            t[0] += v[0];
            t[1] += v[1];
        }
        t
    }

    /// The device's name (from the lines, or "device").
    pub fn device_name(&self) -> String {
        self.intervals
            .iter()
            .find_map(|i| i.device.as_ref().map(|d| d.name.clone()))
            .unwrap_or_else(|| "device".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"t_ns":1000000000,"interval_ns":1000000000,"iocost":null,"cgroups":[{"cgroup":"/a","ios":[10,2],"bytes":[40960,8192],"p99_ns":5,"queue_wait_max_ns":0,"held_ios":1,"oldest_wait_ns":3,"iocost":null}]}"#;

    #[test]
    fn errors_name_the_file_and_line() {
        let e = Series::parse("x.jsonl", [LINE, "{oops"]).unwrap_err();
        let m = format!("{e:#}");
        assert!(
            m.starts_with("x.jsonl:2: not a blkqos time series line"),
            "{m}"
        );
        let e = Series::parse("x.jsonl", [LINE, r#"{"t_ns":1}"#]).unwrap_err();
        assert!(format!("{e:#}").contains("x.jsonl:2: "), "{e:#}");
        assert!(Series::parse("x.jsonl", [""]).is_err());
    }

    #[test]
    fn older_lines_without_the_new_fields_parse() {
        let s = Series::parse("x", [LINE, LINE]).unwrap();
        assert_eq!(s.total_ios("/a"), [20, 4]);
        assert_eq!(s.total_bytes("/a"), [81920, 16384]);
        assert_eq!(s.cgroups(), vec!["/a".to_string()]);
        assert!(s.summary().is_none());
    }
}
