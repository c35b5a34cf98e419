//! Accounting outputs of a simulated run: `/proc/diskstats` snapshots
//! (as `/proc`-like directories that `blkqos iostat --proc` and other tools
//! read) and sysstat's `iostat` report over them.

use anyhow::{Context, Result};
use blkqos_core::{DevId, Instant};
use blkqos_driver::{RunResult, TicksMode, MAX_DISKSTATS_SNAPSHOTS};
use blkqos_iostat::{
    format_diskstats_line, parse_args, Banner, DiskCounters, DiskStatsLine, Sample,
};
use std::io::Write;
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
                    .filter(|h| blkqos_core::cgroupfs::VALID_HZ.contains(h))
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

/// One snapshot as a `/proc` copy: its diskstats line, its uptime file
/// and the sample iostat reads.
fn snapshot(dev: (&str, DevId), t: Instant, fields: [u64; 17]) -> (String, String, Sample) {
    let (name, devid) = dev;
    let counters = DiskCounters::from_fields(fields);
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
}

/// Write snapshot `k` as `dir/NNNN/{diskstats,uptime}`.
fn write_snapshot_dir(dir: &std::path::Path, k: usize, line: &str, uptime: &str) -> Result<()> {
    let d = dir.join(format!("{k:04}"));
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    std::fs::write(d.join("diskstats"), line)
        .with_context(|| format!("cannot write {}/diskstats", d.display()))?;
    std::fs::write(d.join("uptime"), uptime)
        .with_context(|| format!("cannot write {}/uptime", d.display()))
}

/// Write the snapshot directories and/or the iostat report (to `out`),
/// one snapshot at a time.
pub fn write_outputs(
    opts: &AccountingOptions,
    dev: (&str, DevId),
    run: &RunResult,
    epoch_s: i64,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let snaps = &run.diskstats;
    if run.diskstats_dropped > 0 {
        log::warn!(
            "blkqos: warning: diskstats snapshots: the first {MAX_DISKSTATS_SNAPSHOTS} were kept and the end of the run; {} later ones were not taken (use a longer --diskstats-every)",
            run.diskstats_dropped
        );
    }
    if let Some(dir) = &opts.diskstats_dir {
        for (k, (t, f)) in snaps.iter().enumerate() {
            let (line, uptime, _) = snapshot(dev, *t, *f);
            write_snapshot_dir(dir, k, &line, &uptime)?;
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
        let mut samples = snaps.iter().map(|(t, f)| Ok(snapshot(dev, *t, *f).2));
        let mut w = std::io::BufWriter::new(out);
        blkqos_iostat::run(&o, &banner, &mut samples, &mut w)
            .map_err(|e| anyhow::anyhow!("iostat: {e}"))?;
        w.flush().context("cannot write the iostat report")?;
    }
    Ok(())
}
