//! Accounting outputs of a simulated run: `/proc/diskstats` snapshots
//! (as `/proc`-like directories that `blkqos iostat --proc` and other tools
//! read) and sysstat's `iostat` report over them.

use anyhow::{Context, Result};
use blkqos_core::{DevId, Instant};
use blkqos_driver::TicksMode;
use blkqos_iostat::{
    format_diskstats_line, parse_args, render, Banner, DiskCounters, DiskStatsLine, Sample,
};
use std::path::PathBuf;

/// What to account and what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountingOptions {
    pub mode: TicksMode,
    pub hz: u64,
    /// Snapshot interval (ns); the end of the run is always a snapshot.
    pub every_ns: Option<u64>,
    /// Write snapshots as DIR/0000, DIR/0001, ... each with `diskstats`
    /// and `uptime`.
    pub diskstats_dir: Option<PathBuf>,
    /// Print `iostat` with these arguments over the snapshots after the run.
    pub iostat_args: Option<String>,
    /// Write the per-device and per-group latency histograms here after
    /// the run (`FILE.json`: JSON, else text); see `crate::lat_report`.
    pub lat_hist: Option<PathBuf>,
    /// Write every request (group, direction, submit/start/completion
    /// times) here after the run; see `crate::request_trace`.
    pub request_trace: Option<PathBuf>,
}

impl Default for AccountingOptions {
    fn default() -> Self {
        AccountingOptions {
            mode: TicksMode::Precise,
            hz: 1000,
            every_ns: None,
            diskstats_dir: None,
            iostat_args: None,
            lat_hist: None,
            request_trace: None,
        }
    }
}

impl AccountingOptions {
    /// Set one option by name; the error says what is accepted.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "mode" | "iostats" => {
                self.mode = TicksMode::by_name(value).ok_or_else(|| {
                    format!("{key} `{value}`: use one of {}", TicksMode::NAMES.join(", "))
                })?
            }
            "hz" => {
                self.hz = value
                    .parse()
                    .ok()
                    .filter(|h| crate::controllers::VALID_HZ.contains(h))
                    .ok_or_else(|| format!("hz `{value}`: expected 100, 250, 300 or 1000"))?
            }
            "diskstats_every" | "diskstats-every" => {
                let ns = crate::scenario::parse_at(value)
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{key} `{value}`: expected a time like 1s or 500ms"))?;
                self.every_ns = Some(ns);
            }
            "diskstats_dir" | "diskstats-dir" => self.diskstats_dir = Some(PathBuf::from(value)),
            "iostat" => {
                let args: Vec<&str> = value.split_whitespace().collect();
                parse_args(&args).map_err(|e| format!("iostat `{value}`: {e}"))?;
                self.iostat_args = Some(value.to_string());
            }
            "lat_hist" | "lat-hist" => {
                if value.trim().is_empty() {
                    return Err(format!(
                        "{key} `{value}`: expected a file name (FILE for text, FILE.json for JSON)"
                    ));
                }
                self.lat_hist = Some(PathBuf::from(value));
            }
            "request_trace" | "request-trace" => {
                if value.trim().is_empty() {
                    return Err(format!("{key} `{value}`: expected a file name"));
                }
                self.request_trace = Some(PathBuf::from(value));
            }
            _ => {
                return Err(format!(
                    "unknown accounting option `{key}`: use mode, hz, diskstats_every, diskstats_dir, iostat, lat_hist, request_trace"
                ))
            }
        }
        Ok(())
    }

    /// Snapshots are needed for any output.
    pub fn wants_snapshots(&self) -> bool {
        self.diskstats_dir.is_some() || self.iostat_args.is_some()
    }
}

fn samples(dev: (&str, DevId), snaps: &[(Instant, [u64; 17])]) -> Vec<(String, String, Sample)> {
    let (name, devid) = dev;
    snaps
        .iter()
        .map(|(t, f)| {
            let counters = DiskCounters::from_fields(*f);
            let line = format_diskstats_line(devid.major, devid.minor, name, &counters);
            let cs = t.as_ns() / 10_000_000;
            let uptime = format!(
                "{}.{:02} {}.{:02}\n",
                cs / 100,
                cs % 100,
                cs / 100,
                cs % 100
            );
            let sample = Sample::new(
                cs,
                vec![DiskStatsLine {
                    major: devid.major,
                    minor: devid.minor,
                    name: name.to_string(),
                    counters,
                    nr_counters: 17,
                }],
            );
            (line, uptime, sample)
        })
        .collect()
}

/// Write the snapshot directories and/or the iostat report.
pub fn write_outputs(
    opts: &AccountingOptions,
    dev: (&str, DevId),
    snaps: &[(Instant, [u64; 17])],
    epoch_s: i64,
    out: &mut String,
) -> Result<()> {
    let s = samples(dev, snaps);
    if let Some(dir) = &opts.diskstats_dir {
        for (k, (line, uptime, _)) in s.iter().enumerate() {
            let d = dir.join(format!("{k:04}"));
            std::fs::create_dir_all(&d)
                .with_context(|| format!("cannot create {}", d.display()))?;
            std::fs::write(d.join("diskstats"), line)
                .with_context(|| format!("cannot write {}/diskstats", d.display()))?;
            std::fs::write(d.join("uptime"), uptime)
                .with_context(|| format!("cannot write {}/uptime", d.display()))?;
        }
    }
    if let Some(args) = &opts.iostat_args {
        let argv: Vec<&str> = args.split_whitespace().collect();
        let o = parse_args(&argv).map_err(|e| anyhow::anyhow!("iostat `{args}`: {e}"))?;
        let banner = Banner {
            sysname: "Linux".into(),
            release: "blkqos-sim".into(),
            nodename: "blkqos".into(),
            machine: "x86_64".into(),
            nr_cpus: 1,
            time: epoch_s,
        };
        let samples: Vec<Sample> = s.into_iter().map(|x| x.2).collect();
        out.push_str(&render(&o, &banner, &samples).map_err(|e| anyhow::anyhow!("iostat: {e}"))?);
    }
    Ok(())
}
