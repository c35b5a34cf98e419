//! `blkqos report`: one self-contained HTML file (inline SVG charts, a
//! small stylesheet, no JavaScript, nothing fetched) for a run's time
//! series (`--live-json`), its iocost trace (`--iocost-trace=FILE.jsonl`)
//! and a sweep (`blkqos sweep --json`). `blkqos run ... --report=FILE`
//! renders the run's time series straight from memory. See docs/report.md.
//!
//! * [`series`], [`trace`], [`sweep`]: the inputs, read with errors that
//!   name the file and line (exit status 2).
//! * [`chart`]: line and scatter charts drawn by plotters' SVG backend.
//! * [`page`]: which charts a report has, the tables, the HTML.

pub mod chart;
pub mod page;
pub mod series;
pub mod sweep;
pub mod trace;

pub use sweep::Sweep;

use crate::failure::Failure;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub const HELP: &str = "\
One self-contained HTML report (inline SVG charts, no JavaScript) of a run
or a sweep.

  blkqos report --timeseries=live.jsonl [--iocost-trace=trace.jsonl] -o report.html
  blkqos report --sweep=sweep.json -o sweep.html
  blkqos run SCENARIO.toml --report=report.html      (the run's time series, from memory)

--timeseries: the JSON lines of `blkqos run --live-json=FILE` (per interval:
per cgroup IOPS, bandwidth, latency percentiles, io.max held IOs and waits,
iocost state; the device's latency and %util; the last line adds whole-run
latency CDFs). Charts: IOPS and bandwidth per cgroup over time, latency
percentiles over time and CDFs per cgroup and device, %util over time,
waits before the device and io.max's held IOs, iocost's vrate, busy_level
and hweights (per period with --iocost-trace, else per interval), and a
totals table. --sweep: a `blkqos sweep --json` report: the frontier chart
(objective against the first limit, the chosen point marked) and the
points' table. See docs/report.md.

Exit status: 0 ok, 2 bad input (a missing or malformed file: the message
names the file and line) or an output that cannot be written.";

/// `blkqos report`'s options.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub timeseries: Option<PathBuf>,
    pub iocost_trace: Option<PathBuf>,
    pub sweep: Option<PathBuf>,
    pub output: PathBuf,
    pub title: Option<String>,
}

/// What a report is drawn from.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub title: String,
    pub series: Option<series::Series>,
    pub trace: Option<trace::Trace>,
    pub sweep: Option<sweep::Sweep>,
    pub sweep_source: String,
}

/// A file's text: "cannot read FILE: why".
pub(crate) fn read_input(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Can `path` be written? Checked before any work; a file this check
/// creates is removed again if the report is not written.
fn check_output(path: &Path) -> Result<bool> {
    if path.is_dir() {
        bail!("cannot write {}: it is a directory", path.display());
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(!existed)
}

fn write_output(path: &Path, html: &str) -> Result<()> {
    std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))
}

/// `blkqos report`.
pub fn run(a: &Args) -> Result<(), Failure> {
    let bad = |err| Failure { code: 2, err };
    if a.timeseries.is_none() && a.sweep.is_none() && a.iocost_trace.is_none() {
        return Err(bad(anyhow::anyhow!(
            "report: nothing to report: give --timeseries=FILE, --iocost-trace=FILE or --sweep=FILE (see `blkqos report --help`)"
        )));
    }
    let created = check_output(&a.output).map_err(bad)?;
    let res = (|| -> Result<()> {
        let mut inp = Inputs::default();
        if let Some(p) = &a.timeseries {
            inp.series = Some(series::Series::read(p)?);
        }
        if let Some(p) = &a.iocost_trace {
            inp.trace = Some(trace::Trace::read(p)?);
        }
        if let Some(p) = &a.sweep {
            inp.sweep = Some(sweep::Sweep::read(p)?);
            inp.sweep_source = p.display().to_string();
        }
        inp.title = a.title.clone().unwrap_or_else(|| default_title(&inp));
        let html = page::render(&inp)?;
        write_output(&a.output, &html)
    })();
    if res.is_err() && created {
        let _ = std::fs::remove_file(&a.output);
    }
    res.map_err(bad)
}

fn default_title(inp: &Inputs) -> String {
    match (&inp.series, &inp.sweep) {
        (Some(s), _) => format!("blkqos report: {}", s.source),
        (None, Some(sw)) => format!("blkqos sweep report: {}", sw.scenario),
        (None, None) => "blkqos report".to_string(),
    }
}

/// `blkqos run ... --report=FILE`: the run's time series lines, kept in
/// memory, and the simulator's iocost trace if the run wrote one as JSON.
pub fn write_run_report(
    path: &Path,
    title: &str,
    lines: &[String],
    trace: Option<&Path>,
) -> Result<()> {
    let series = series::Series::parse("this run (in memory)", lines.iter().map(String::as_str))?;
    let trace = trace.map(trace::Trace::read).transpose()?;
    let inp = Inputs {
        title: title.to_string(),
        series: Some(series),
        trace,
        ..Default::default()
    };
    let html = page::render(&inp)?;
    write_output(path, &html)
}
