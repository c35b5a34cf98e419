//! Reading iocost's per-period trace (`blkqos run --iocost-trace=FILE.jsonl`):
//! a device line per period (vrate, busy_level) followed by a line per
//! active cgroup (hweights, debt, delay), as iocost_monitor.py prints them.

use anyhow::{bail, Result};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
struct DeviceLine {
    timestamp: f64,
    vrate_pct: f64,
    busy_level: i64,
}

#[derive(Clone, Debug, Deserialize)]
struct GroupLine {
    cgroup: String,
    timestamp: f64,
    hweight_active_pct: f64,
    hweight_inuse_pct: f64,
    debt_ms: f64,
    delay_ms: f64,
}

/// One period: the device and the cgroups listed after it.
#[derive(Clone, Debug, Default)]
pub struct Period {
    /// Run time at the period's end (s).
    pub t_s: f64,
    pub vrate_pct: f64,
    pub busy_level: i64,
    /// (cgroup, hweight_active %, hweight_inuse %, debt ms, delay ms)
    pub groups: Vec<(String, f64, f64, f64, f64)>,
}

/// The trace.
#[derive(Clone, Debug)]
pub struct Trace {
    pub source: String,
    pub periods: Vec<Period>,
}

impl Trace {
    pub fn parse<'a>(source: &str, lines: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut periods: Vec<Period> = Vec::new();
        for (k, line) in lines.into_iter().enumerate() {
            let n = k + 1;
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                anyhow::anyhow!("{source}:{n}: not a JSON line ({e}); write the trace as FILE.jsonl (`--iocost-trace=trace.jsonl`)")
            })?;
            let what = |e: serde_json::Error| {
                anyhow::anyhow!("{source}:{n}: not an iocost trace line: {e}")
            };
            if v.get("device").is_some() {
                let d: DeviceLine = serde_json::from_value(v).map_err(what)?;
                periods.push(Period {
                    t_s: d.timestamp,
                    vrate_pct: d.vrate_pct,
                    busy_level: d.busy_level,
                    groups: Vec::new(),
                });
            } else if v.get("cgroup").is_some() {
                let g: GroupLine = serde_json::from_value(v).map_err(what)?;
                let Some(p) = periods.last_mut() else {
                    bail!("{source}:{n}: a cgroup line before any device (period) line");
                };
                let _ = g.timestamp;
                p.groups.push((
                    g.cgroup,
                    g.hweight_active_pct,
                    g.hweight_inuse_pct,
                    g.debt_ms,
                    g.delay_ms,
                ));
            } else {
                bail!("{source}:{n}: not an iocost trace line: neither `device` nor `cgroup`");
            }
        }
        if periods.is_empty() {
            bail!("{source}: no iocost periods (was iocost on?)");
        }
        Ok(Trace {
            source: source.to_string(),
            periods,
        })
    }

    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = super::read_input(path)?;
        Trace::parse(&path.display().to_string(), text.lines())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_errors() {
        let dev = r#"{"device": "nullb1", "timestamp": 0.5, "period": 0, "busy_level": -1, "vrate_pct": 100.0}"#;
        let g = r#"{"cgroup": "/a", "timestamp": 0.5, "hweight_active_pct": 20.0, "hweight_inuse_pct": 26.8, "debt_ms": 0.0, "delay_ms": 0.0}"#;
        let t = Trace::parse("t.jsonl", [dev, g, dev]).unwrap();
        assert_eq!(t.periods.len(), 2);
        assert_eq!(t.periods[0].groups[0].0, "/a");
        let e = Trace::parse("t.jsonl", [g]).unwrap_err();
        assert!(
            format!("{e}").starts_with("t.jsonl:1: a cgroup line"),
            "{e}"
        );
        let e = Trace::parse("t.jsonl", [dev, "nullb1 0.5 RUN"]).unwrap_err();
        assert!(
            format!("{e}").starts_with("t.jsonl:2: not a JSON line"),
            "{e}"
        );
    }
}
