//! An experiment: a device, knob writes and fio invocations, built from a
//! scenario file or from a command line, then run on a backend.

use crate::accounting::AccountingOptions;
use crate::scenario::{parse_at, scalar_to_string, Source};
use crate::streams::{ControllerTrace, SharedStreams, Streams};
use anyhow::{bail, Context, Result};
use blkqos_core::cgroupfs::{split_target, ControllerOptions, DeviceInfo, KnobFile};
use blkqos_core::ControllerStack;
use blkqos_core::{CgroupTree, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{HostModel, RunOptions, RunResult};
use blkqos_engine::StopOnSignal;
use blkqos_fio::parse::{parse_fio_args, parse_job_file, JobSet, OutputFormat, MAX_JOBS};
use blkqos_sim::{DeviceSpec, SimBackend};
use blkqos_workload::{JobSpec, SizeSpec};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use blkqos_core::cgroupfs::KnobWrite;

/// One fio process.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub jobs: JobSet,
    /// cgroup the process runs in (`echo $$ > cgroup.procs`); a job's own
    /// `cgroup=` option wins.
    pub cgroup: Option<String>,
    pub output: Option<PathBuf>,
    pub formats: Vec<OutputFormat>,
}

#[derive(Clone, Debug)]
pub struct Experiment {
    pub device: DeviceSpec,
    pub controllers: ControllerOptions,
    pub seed: u64,
    /// The device spec sets its own jitter seed (else the run's seed is used).
    pub device_seed_explicit: bool,
    pub host: HostModel,
    pub writes: Vec<KnobWrite>,
    pub invocations: Vec<Invocation>,
    /// Write every group's io.stat here after the run.
    pub io_stat_out: Option<PathBuf>,
    pub accounting: AccountingOptions,
    pub pagecache: crate::pagecache::PageCacheOptions,
    /// Run on the real engine instead of the simulator.
    pub real: Option<crate::real::RealOptions>,
    /// Write the controllers' per-period traces (iocost) here; `.jsonl` = JSON lines.
    pub trace_out: Option<PathBuf>,
    /// `--parse-only`: check everything, run nothing.
    pub parse_only: bool,
    /// Check the controllers' invariants after every driver pass.
    pub check_invariants: bool,
    /// `--showcmd`: print fio's command-line form of the job files, run nothing.
    pub showcmd: Option<String>,
    /// Outputs written during the run ([`Experiment::open_streams`]).
    pub streams: Option<SharedStreams>,
    /// `--live` / `--live-json`: per-interval rows per cgroup as the run goes.
    pub live: crate::live::LiveOptions,
    /// `--status-interval=T` (ms): the reports of the run so far every T
    /// ([`crate::status`]).
    pub status_every_ms: Option<u64>,
}

fn env_lookup(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// Flags blkqos adds to fio's command line.
pub const FOREIGN_FLAGS: &[&str] = &[
    "backend",
    "writeback",
    "pagecache",
    "pagecache-report",
    "device",
    "seed",
    "io-max",
    "io-weight",
    "io-cost-model",
    "io-cost-qos",
    "throttle",
    "kernel",
    "iocost",
    "submit-ns",
    "hz",
    "io-stat",
    "iostats",
    "diskstats-every",
    "diskstats-dir",
    "iostat",
    "lat-hist",
    "request-trace",
    "iocost-trace",
    "blkcg-debug-stats",
    "allow-destructive?",
    "overwrite?",
    "eta",
    "live?",
    "live-json",
    "check-invariants?",
    "report",
];

impl Experiment {
    /// Build from a scenario file.
    pub fn from_scenario(path: &std::path::Path) -> Result<Self> {
        let src = Source::load(path)?;
        let sc = src.parse()?;
        let mut real: Option<crate::real::RealOptions> = None;
        let device = match &sc.device {
            None => DeviceSpec::parse("null").expect("default device"),
            Some(t) => {
                let mut model = "null".to_string();
                let mut kv: Vec<(String, String)> = Vec::new();
                for (k, v) in t {
                    if k == "path" || k == "backend" {
                        let s = scalar_to_string(v.get_ref()).unwrap_or_default();
                        let r = real.get_or_insert_with(crate::real::RealOptions::default);
                        if k == "path" {
                            r.path = Some(src.resolve(&s));
                        } else {
                            r.kind = blkqos_engine::BackendKind::parse(&s).ok_or_else(|| {
                                src.err(
                                    v.span().start,
                                    format!(
                                        "[device] backend `{s}`: use auto, io_uring or threads"
                                    ),
                                )
                            })?;
                        }
                        continue;
                    }
                    let s = scalar_to_string(v.get_ref()).ok_or_else(|| {
                        src.err(
                            v.span().start,
                            format!("[device] `{k}`: expected a string or a number"),
                        )
                    })?;
                    if k == "model" {
                        model = s;
                    } else {
                        kv.push((k.clone(), s));
                    }
                }
                DeviceSpec::new(&model, kv.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(
                    |e| {
                        // point at the offending key's line (the model line otherwise)
                        use blkqos_sim::device::SpecError;
                        let key = match &e {
                            SpecError::UnknownKey { key, .. } | SpecError::BadValue { key, .. } => {
                                Some(key.as_str())
                            }
                            _ => None,
                        };
                        let at = key
                            .and_then(|k| t.get(k))
                            .or_else(|| t.get("model"))
                            .or_else(|| t.values().next())
                            .map(|v| v.span().start)
                            .unwrap_or(0);
                        src.err(at, e.to_string())
                    },
                )?
            }
        };
        let mut controllers = ControllerOptions::default();
        if let Some(c) = &sc.controllers {
            for (k, v) in c {
                let s = scalar_to_string(v.get_ref()).ok_or_else(|| {
                    src.err(
                        v.span().start,
                        format!("[controllers] `{k}`: expected a string or a number"),
                    )
                })?;
                controllers
                    .set(k, &s)
                    .map_err(|m| src.err(v.span().start, format!("[controllers] {m}")))?;
            }
        }
        let mut accounting = AccountingOptions::default();
        if let Some(c) = &sc.accounting {
            for (k, v) in c {
                let s = scalar_to_string(v.get_ref()).ok_or_else(|| {
                    src.err(
                        v.span().start,
                        format!("[accounting] `{k}`: expected a string or a number"),
                    )
                })?;
                // outputs: relative to the current directory, like fio's
                // (and [[fio]] output=); never next to the scenario
                accounting
                    .set(k, &s)
                    .map_err(|m| src.err(v.span().start, format!("[accounting] {m}")))?;
            }
        }
        let mut pagecache = crate::pagecache::PageCacheOptions::default();
        if let Some(c) = &sc.pagecache {
            for (k, v) in c {
                let s = scalar_to_string(v.get_ref()).ok_or_else(|| {
                    src.err(
                        v.span().start,
                        format!("[pagecache] `{k}`: expected a string or a number"),
                    )
                })?;
                pagecache
                    .set(k, &s)
                    .map_err(|m| src.err(v.span().start, format!("[pagecache] {m}")))?;
            }
        }
        let mut writes = Vec::new();
        for w in &sc.write {
            let (cgroup, knob) =
                split_target(w.file.get_ref()).map_err(|m| src.err(w.file.span().start, m))?;
            let at_ns = match &w.at {
                None => 0,
                Some(a) => parse_at(a.get_ref()).ok_or_else(|| {
                    src.err(
                        a.span().start,
                        format!(
                            "`at = \"{}\"`: expected a time like 5s or 1500ms",
                            a.get_ref()
                        ),
                    )
                })?,
            };
            writes.push(KnobWrite {
                at_ns,
                cgroup,
                knob,
                value: w.value.get_ref().clone(),
                origin: format!(
                    "{}:{}",
                    src.path.display(),
                    src.line_of(w.value.span().start)
                ),
            });
        }
        let mut known: std::collections::BTreeSet<String> =
            writes.iter().map(|w| w.cgroup.clone()).collect();
        for c in &sc.cgroups {
            known.insert(
                CgroupTree::normalize(c.get_ref())
                    .map_err(|e| src.err(c.span().start, e.to_string()))?,
            );
        }
        let mut invocations = Vec::new();
        let mut status_ms: Vec<(usize, Option<u64>)> = Vec::new();
        let mut run_clones = 0u64;
        for (i, f) in sc.fio.iter().enumerate() {
            let given = [f.job_file.is_some(), f.job.is_some(), f.args.is_some()];
            let anchor = f
                .job_file
                .as_ref()
                .map(|s| s.span().start)
                .or(f.job.as_ref().map(|s| s.span().start))
                .or(f.args.as_ref().map(|s| s.span().start))
                .or_else(|| src.table_header("fio", i))
                .unwrap_or(0);
            if given.iter().filter(|g| **g).count() != 1 {
                bail!(src.err(
                    anchor,
                    format!(
                        "[[fio]] #{}: give exactly one of job_file, job or args",
                        i + 1
                    )
                ));
            }
            let mut output = f.output.as_ref().map(PathBuf::from);
            let mut formats = match &f.output_format {
                Some(s) => parse_formats(s).map_err(|m| src.err(anchor, m))?,
                None => vec![OutputFormat::Normal],
            };
            let jobs = if let Some(p) = &f.job_file {
                let path = src.resolve(p.get_ref());
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    src.err(p.span().start, format!("job file {}: {e}", path.display()))
                })?;
                parse_job_file(&path.display().to_string(), &text, &env_lookup)?
            } else if let Some(t) = &f.job {
                let first = src.content_first_line(t.span());
                parse_job_file("<inline>", t.get_ref(), &env_lookup).map_err(|mut e| {
                    e.file = format!("{} ([[fio]] #{} inline job)", src.path.display(), i + 1);
                    e.line += first - 1;
                    e
                })?
            } else {
                let a = f.args.as_ref().expect("checked");
                let argv: Vec<String> =
                    a.get_ref().split_whitespace().map(str::to_string).collect();
                let cli = parse_fio_args(&argv, &[], &env_lookup).map_err(|mut e| {
                    e.file = format!("{} ([[fio]] #{} args)", src.path.display(), i + 1);
                    e.line = src.line_of(a.span().start);
                    e
                })?;
                if let Some(o) = cli.output {
                    output.get_or_insert(PathBuf::from(o));
                }
                if !cli.output_format.is_empty() && f.output_format.is_none() {
                    formats = cli.output_format;
                }
                status_ms.push((i, cli.status_interval_ms));
                cli.jobs
            };
            let cgroup = match &f.cgroup {
                Some(c) => {
                    let p = CgroupTree::normalize(c.get_ref())
                        .map_err(|e| src.err(c.span().start, e.to_string()))?;
                    if p != "/" && !known.contains(&p) {
                        bail!(src.err(
                            c.span().start,
                            format!(
                                "[[fio]] #{}: cgroup `{p}` does not exist: list it in `cgroups = [...]` or write a knob to it",
                                i + 1
                            )
                        ));
                    }
                    Some(p)
                }
                None => None,
            };
            run_clones += clones(&jobs);
            if run_clones > u64::from(MAX_JOBS) {
                bail!(src.err(anchor, too_many_clones(i, run_clones)));
            }
            invocations.push(Invocation {
                jobs,
                cgroup,
                output: output.map(|o| src.resolve_output(&o)),
                formats,
            });
        }
        if invocations.is_empty() {
            bail!(src.err(0, "the scenario has no [[fio]] invocation: nothing to run"));
        }
        let status_every_ms = one_status_interval(&status_ms, invocations.len())
            .map_err(|(i, m)| src.err(src.table_header("fio", i).unwrap_or(0), m))?;
        Ok(Experiment {
            parse_only: false,
            check_invariants: false,
            showcmd: None,
            device,
            controllers,
            seed: sc.seed.unwrap_or(1),
            device_seed_explicit: sc.device.as_ref().is_some_and(|t| t.contains_key("seed")),
            host: {
                let d = HostModel::default();
                let h = sc.host.as_ref();
                HostModel {
                    submit_ns: h.and_then(|h| h.submit_ns).unwrap_or(d.submit_ns),
                    wake_jitter_ns: h.and_then(|h| h.wake_jitter_ns).unwrap_or(d.wake_jitter_ns),
                    timer_dispatch_ns: h
                        .and_then(|h| h.timer_dispatch_ns)
                        .unwrap_or(d.timer_dispatch_ns),
                    timer_dispatch_jitter_ns: h
                        .and_then(|h| h.timer_dispatch_jitter_ns)
                        .unwrap_or(d.timer_dispatch_jitter_ns),
                    seed: sc.seed.unwrap_or(1),
                }
            },
            writes,
            invocations,
            io_stat_out: None,
            accounting,
            pagecache,
            real,
            trace_out: None,
            streams: None,
            live: Default::default(),
            status_every_ms,
        })
    }

    /// Build from fio-style arguments (job files and/or `--name=...` options).
    pub fn from_args(args: &[String]) -> Result<Self> {
        let cli = parse_fio_args(args, FOREIGN_FLAGS, &env_lookup)?;
        // parse_fio_args already read the job files named on the command line
        let jobs = cli.jobs;
        if jobs.jobs.is_empty() && cli.showcmd.is_none() {
            bail!("no jobs given: pass a scenario (.toml), a fio job file, or --name=... options");
        }
        let mut device = DeviceSpec::parse("null").expect("default device");
        let mut seed = 1;
        let mut host = HostModel::default();
        let mut check_invariants = false;
        let mut writes = Vec::new();
        let mut controllers = ControllerOptions::default();
        let mut io_stat_out = None;
        let mut accounting = AccountingOptions::default();
        let mut pagecache = crate::pagecache::PageCacheOptions::default();
        let mut real: Option<crate::real::RealOptions> = None;
        let mut consent = (false, false);
        let mut eta = crate::progress::Eta::default();
        let mut trace_out = None;
        let mut live = crate::live::LiveOptions::default();
        for (k, v) in &cli.other {
            match k.as_str() {
                "iostats" | "diskstats-every" | "diskstats-dir" | "iostat" | "lat-hist"
                | "request-trace" => accounting.set(k, v).map_err(|m| anyhow::anyhow!("--{m}"))?,
                "io-stat" => io_stat_out = Some(PathBuf::from(v)),
                "writeback" => pagecache
                    .set("writeback", v)
                    .map_err(|m| anyhow::anyhow!("--{m}"))?,
                "pagecache" => pagecache
                    .set("enable", v)
                    .map_err(|m| anyhow::anyhow!("--{m}"))?,
                "pagecache-report" => pagecache.report = Some(PathBuf::from(v)),
                "kernel" => {
                    let (p, low) = crate::kernel::KernelProfile::parse(v)
                        .map_err(|m| anyhow::anyhow!("--{m}"))?;
                    p.apply_build(&mut controllers, &mut accounting, low);
                }
                "throttle" | "hz" | "iocost" | "blkcg-debug-stats" => controllers
                    .set(k, v)
                    .map_err(|m| anyhow::anyhow!("--{m}"))?,
                "iocost-trace" => trace_out = Some(PathBuf::from(v)),
                "device" => {
                    device = DeviceSpec::parse(v).with_context(|| format!("--device={v}"))?
                }
                "seed" => {
                    seed = v
                        .parse()
                        .with_context(|| format!("--seed={v}: expected an unsigned integer"))?
                }
                "submit-ns" => {
                    host.submit_ns = v
                        .parse()
                        .with_context(|| format!("--submit-ns={v}: expected nanoseconds"))?
                }
                "backend" => {
                    if v == "sim" {
                        real = None;
                    } else {
                        let kind = blkqos_engine::BackendKind::parse(v).ok_or_else(|| {
                            anyhow::anyhow!("--backend={v}: use sim, real (io_uring, falling back to threads), io_uring or threads")
                        })?;
                        let r = real.get_or_insert_with(crate::real::RealOptions::default);
                        r.kind = if v == "real" {
                            blkqos_engine::BackendKind::Auto
                        } else {
                            kind
                        };
                    }
                }
                "eta" => {
                    eta = crate::progress::Eta::parse(v)
                        .ok_or_else(|| anyhow::anyhow!("--eta={v}: use auto, always or never"))?
                }
                "live" => live.set_every(v)?,
                "live-json" => live.json = Some(PathBuf::from(v)),
                "report" => live.set_report(v)?,
                "allow-destructive" => consent.0 = true,
                "check-invariants" => {
                    check_invariants = match v.as_str() {
                        "" | "1" => true,
                        "0" => false,
                        _ => bail!("--check-invariants={v}: expected 1 or 0 (or no value)"),
                    }
                }
                "overwrite" => consent.1 = true,
                "io-max" | "io-weight" | "io-cost-model" | "io-cost-qos" => {
                    let file = k.replacen("io-", "io.", 1).replace("cost-", "cost.");
                    let knob = KnobFile::from_name(&file).expect("known flag");
                    let cgroup = if knob.root_only() {
                        "/".to_string()
                    } else {
                        job_cgroup(&jobs.jobs)?
                    };
                    writes.push(KnobWrite {
                        at_ns: 0,
                        cgroup,
                        knob,
                        value: v.to_string(),
                        origin: format!("--{k}"),
                    });
                }
                other => bail!("--{other}={v}: not available in this build"),
            }
        }
        if let Some(r) = &mut real {
            r.allow_destructive = consent.0;
            r.overwrite = consent.1;
            r.eta = eta;
        } else if consent.0 || consent.1 {
            bail!("--allow-destructive/--overwrite apply to the real engine: add --backend=real");
        }
        Ok(Experiment {
            parse_only: cli.parse_only,
            check_invariants,
            showcmd: cli.showcmd.clone(),
            device,
            controllers,
            seed,
            device_seed_explicit: cli
                .other
                .iter()
                .any(|(k, v)| k == "device" && v.split(',').any(|p| p.trim().starts_with("seed="))),
            host,
            io_stat_out,
            accounting,
            pagecache,
            real,
            trace_out,
            streams: None,
            live,
            status_every_ms: cli.status_interval_ms,
            writes,
            invocations: vec![Invocation {
                jobs,
                cgroup: None,
                output: cli.output.map(PathBuf::from),
                formats: if cli.output_format.is_empty() {
                    vec![OutputFormat::Normal]
                } else {
                    cli.output_format
                },
            }],
        })
    }
}

/// The status interval of a scenario's `[[fio]]` invocations (`n` of
/// them; `given` lists each `args=` one's `--status-interval`): blkqos
/// runs them in one loop, so either none asks for one, or all ask for the
/// same.
fn one_status_interval(
    given: &[(usize, Option<u64>)],
    n: usize,
) -> Result<Option<u64>, (usize, String)> {
    let asked: Vec<(usize, u64)> = given.iter().filter_map(|&(i, v)| Some((i, v?))).collect();
    let Some(&(first_i, first)) = asked.first() else {
        return Ok(None);
    };
    if asked.len() == n && asked.iter().all(|&(_, v)| v == first) {
        return Ok(Some(first));
    }
    Err((
        first_i,
        format!(
            "[[fio]] #{}: --status-interval={first}ms: every [[fio]] of a scenario must give the same --status-interval (they run in one process), or none may: pass --status-interval after the scenario file instead",
            first_i + 1
        ),
    ))
}

/// The job clones of one invocation (`numjobs` each).
fn clones(jobs: &JobSet) -> u64 {
    jobs.jobs.iter().map(|j| u64::from(j.numjobs.max(1))).sum()
}

/// Why a scenario's `[[fio]]` #`i` (0-based) is refused: its invocations'
/// job clones add up to `total`. Each fio process has the limit (the fio
/// parser enforces it per invocation); blkqos runs all of them in one
/// process and keeps the same limit for the whole run, so the memory of a
/// run stays bounded.
fn too_many_clones(i: usize, total: u64) -> String {
    format!(
        "[[fio]] #{}: maximum number of jobs reached: the scenario's invocations add up to {total} jobs (numjobs clones included); blkqos runs at most {MAX_JOBS} per run (fio 3.33's limit per invocation)",
        i + 1
    )
}

/// The group the one-off knob flags apply to: the jobs' `cgroup=`.
fn job_cgroup(jobs: &[JobSpec]) -> Result<String> {
    let mut groups: Vec<&str> = jobs.iter().filter_map(|j| j.cgroup.as_deref()).collect();
    groups.dedup();
    match groups.as_slice() {
        [one] if jobs.iter().all(|j| j.cgroup.is_some()) => {
            CgroupTree::normalize(one)
                .map_err(|e| anyhow::anyhow!("--io-max/--io-weight: the job's cgroup `{one}`: {e}"))
        }
        [] => bail!("--io-max/--io-weight need the job's group: add --cgroup=NAME to the job"),
        _ => bail!("--io-max/--io-weight apply to one group, but the jobs run in several: use a scenario file"),
    }
}

pub fn parse_formats(s: &str) -> Result<Vec<OutputFormat>, String> {
    s.split(',')
        .map(|f| match f.trim() {
            "normal" => Ok(OutputFormat::Normal),
            "json" => Ok(OutputFormat::Json),
            "json+" => Ok(OutputFormat::JsonPlus),
            "terse" => Ok(OutputFormat::Terse),
            o => Err(format!(
                "output_format `{o}`: use normal, json, json+ or terse"
            )),
        })
        .collect()
}

impl Source {
    /// Outputs are written relative to the current directory, like fio.
    fn resolve_output(&self, p: &std::path::Path) -> PathBuf {
        p.to_path_buf()
    }
}

/// `file:line` of a job's section (`<command line>` for options).
fn origin(spec: &JobSpec) -> String {
    if spec.origin.line == 0 {
        spec.origin.file.clone()
    } else {
        format!("{}:{}", spec.origin.file, spec.origin.line)
    }
}

/// Where each job clone lives on the device: a file gets its own extent, a
/// device path covers the device.
struct Layout {
    next_free: u64,
    files: Vec<(String, u64, u64)>,
    /// A filename that names the whole target (the real engine's path).
    whole: Option<String>,
}

impl Layout {
    /// Bytes from `start` to the end of the file laid out around it, or
    /// of the device (fio `real_file_size - file_offset`).
    fn tail(&self, start: u64, dev: &DeviceSpec) -> u64 {
        self.files
            .iter()
            .find(|(_, s, l)| (*s..s + l).contains(&start))
            .map_or(dev.capacity, |(_, s, l)| s + l)
            .saturating_sub(start)
    }

    fn region(&mut self, spec: &JobSpec, dev: &DeviceSpec) -> Result<(u64, u64)> {
        let cap = dev.capacity;
        let name = spec
            .filename
            .clone()
            .unwrap_or_else(|| format!("{}.0.0", spec.name));
        let is_device = name.starts_with("/dev/")
            || name == dev.name
            || self.whole.as_deref() == Some(name.as_str());
        let size = match spec.size {
            Some(SizeSpec::Bytes(b)) => Some(b),
            Some(SizeSpec::Percent(p)) => Some(cap / 100 * u64::from(p)),
            None => None,
        };
        let offset = match spec.offset {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => cap / 100 * u64::from(p),
        };
        if is_device {
            // fio: "you need to specify valid offset=" (setup_files)
            if offset >= cap {
                bail!(
                    "job `{}` ({}): offset={offset} is at or past the end of `{name}` ({cap} bytes)",
                    spec.name,
                    origin(spec)
                );
            }
            // fio clamps the IO size to the end of a device (a 2m job on a
            // 1 MiB device reads 1 MiB and exits 0)
            let len = size.unwrap_or(cap - offset).min(cap - offset);
            return Ok((offset, len));
        }
        let Some(size) = size else {
            bail!(
                "job `{}`: file `{name}` needs a size= (a simulated file has no existing size)",
                spec.name
            );
        };
        self.place(spec, &name, offset, size, dev)
    }

    /// The file `name` of `size` bytes (IO from `offset` in it): where an
    /// earlier job laid it out, else at the next free extent.
    fn place(
        &mut self,
        spec: &JobSpec,
        name: &str,
        offset: u64,
        size: u64,
        dev: &DeviceSpec,
    ) -> Result<(u64, u64)> {
        let cap = dev.capacity;
        if let Some((_, start, len)) = self.files.iter().find(|(n, _, _)| n == name) {
            if offset >= *len {
                bail!(
                    "job `{}` ({}): offset={offset} is at or past the end of file `{name}` ({len} bytes, laid out by an earlier job)",
                    spec.name,
                    origin(spec)
                );
            }
            return Ok((start + offset, size.min(len - offset)));
        }
        let start = self.next_free;
        let extent = offset + size;
        if start + extent > cap {
            bail!(
                "job `{}`: file `{name}` ({extent} bytes) does not fit on device {} ({cap} bytes)",
                spec.name,
                dev.name
            );
        }
        self.next_free = (start + extent).next_multiple_of(1 << 20);
        self.files.push((name.to_string(), start, extent));
        Ok((start + offset, size))
    }

    /// Clone `clone`'s files when the job has several (`nrfiles`,
    /// `filename=a:b`, `directory`, `filesize`; fio `setup_files`): each
    /// laid out on the device like a file of its own.
    fn files(&mut self, spec: &JobSpec, clone: u32, dev: &DeviceSpec) -> Result<Vec<(u64, u64)>> {
        let paths = spec
            .files
            .paths(spec.filename.as_deref(), &spec.name, clone);
        if let Some(p) = paths
            .iter()
            .find(|p| p.starts_with("/dev/") || **p == dev.name)
        {
            bail!(
                "job `{}` ({}): `{p}` is a device among several files: blkqos runs one device, so a job's several files must be files",
                spec.name,
                origin(spec)
            );
        }
        let sizes = crate::files::file_sizes(spec, paths.len(), clone, dev.capacity)?;
        let offset = match spec.offset {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => sizes.first().copied().unwrap_or(0) / 100 * u64::from(p),
        };
        paths
            .iter()
            .zip(sizes)
            .map(|(name, size)| {
                let (start, len) = self.place(spec, name, 0, size, dev)?;
                let off = offset.min(len.saturating_sub(1));
                Ok((start + off, len - off))
            })
            .collect()
    }
}

/// The run: which invocation each job clone belongs to.
pub struct Ran {
    pub result: RunResult,
    /// For each job result, the index of its invocation.
    pub invocation_of: Vec<usize>,
    pub tree: CgroupTree,
    /// `io.stat` counters per group (own IO only), indexed by group id.
    pub iostat: Vec<blkqos_core::controller::IoStat>,
    /// Controller keys of each group's io.stat line (iocost's cost.*).
    pub iostat_suffix: Vec<String>,
    /// Controllers' per-period trace (text, or JSON lines for `.jsonl`).
    pub trace: String,
    /// What job offsets are offsets of (the real target's path, or the
    /// simulated device), for messages.
    pub target: String,
    /// Acknowledged pages the real engine's write-back buffer could not
    /// put on the target.
    pub lost_pages: u64,
    /// The device as reports name it.
    pub dev_name: String,
    pub devid: blkqos_core::DevId,
    /// A real run: the kernel's statistics of the disk under the target
    /// (fio's `disk_util`; empty when it has none); blkqos's own
    /// accounting is then reported apart. None: simulated, where blkqos's
    /// accounting is the device's.
    pub kernel_disks: Option<Vec<blkqos_fio::report::DiskUtil>>,
}

impl Experiment {
    /// Run on the simulator.
    /// The cgroup tree and the job clones of the run, laid out on a device
    /// of `capacity` bytes named `dev_name`.
    pub fn plan(&self, layout_dev: &DeviceSpec, whole: Option<&str>) -> Result<Plan> {
        let mut tree = self.cgroup_tree()?;
        let mut layout = Layout {
            next_free: 0,
            files: Vec::new(),
            whole: whole.map(str::to_string),
        };
        let mut setups = Vec::new();
        let mut invocation_of = Vec::new();
        for (i, inv) in self.invocations.iter().enumerate() {
            for spec in &inv.jobs.jobs {
                let cg = spec.cgroup.as_deref().or(inv.cgroup.as_deref());
                let group = match cg {
                    Some(p) => tree.ensure(p).map_err(|e| {
                        anyhow::anyhow!("job `{}` ({}): cgroup=`{p}`: {e}", spec.name, origin(spec))
                    })?,
                    None => GroupId::ROOT,
                };
                let multi = spec.files.is_multi(spec.filename.as_deref());
                let (start, len) = if multi {
                    (0, 0)
                } else {
                    layout.region(spec, layout_dev)?
                };
                let mut job_spec = crate::files::with_io_size(spec);
                job_spec.control.invocation = i as u32;
                if !multi {
                    // strided zones wrap at the end of the file or device
                    job_spec.zones.file_tail_bytes = layout.tail(start, layout_dev);
                }
                for clone in 0..spec.numjobs.max(1) {
                    let files = if multi {
                        layout.files(spec, clone, layout_dev)?
                    } else {
                        Vec::new()
                    };
                    let (start, len) = files.first().copied().unwrap_or((start, len));
                    setups.push(JobSetup {
                        spec: job_spec.clone(),
                        clone,
                        group,
                        region_start: start,
                        region_len: len,
                        seed: self.seed ^ (setups.len() as u64).wrapping_mul(0x9E37_79B9),
                        files,
                    });
                    invocation_of.push(i);
                }
            }
        }
        Ok(Plan {
            tree,
            setups,
            invocation_of,
        })
    }

    /// The run's cgroups: those knobs are written to, then the jobs' (in
    /// the order [`Experiment::plan`] meets them, so ids agree).
    pub fn cgroup_tree(&self) -> Result<CgroupTree> {
        let mut tree = CgroupTree::new();
        for w in &self.writes {
            tree.ensure(&w.cgroup)
                .map_err(|e| anyhow::anyhow!("{}: {e}", w.origin))?;
        }
        for inv in &self.invocations {
            for spec in &inv.jobs.jobs {
                if let Some(p) = spec.cgroup.as_deref().or(inv.cgroup.as_deref()) {
                    tree.ensure(p).map_err(|e| {
                        anyhow::anyhow!("job `{}` ({}): cgroup=`{p}`: {e}", spec.name, origin(spec))
                    })?;
                }
            }
        }
        Ok(tree)
    }

    /// The run's job clones in the driver's order ([`Experiment::plan`]),
    /// each with its fio job number: 1-based within its invocation, clones
    /// counted (fio's `thread_number`).
    fn job_numbers(&self) -> impl Iterator<Item = (&JobSpec, usize)> {
        self.invocations.iter().flat_map(|inv| {
            inv.jobs
                .jobs
                .iter()
                .flat_map(|spec| std::iter::repeat_n(spec, spec.numjobs.max(1) as usize))
                .enumerate()
                .map(|(i, spec)| (spec, i + 1))
        })
    }

    /// Open the outputs written while the run goes: the request trace and,
    /// on the simulator, the controllers' trace (the real engine's device
    /// name is known only once its target is open: its trace is written
    /// after the run).
    pub fn open_streams(&mut self) -> Result<()> {
        let mut s = Streams::default();
        if let Some(p) = &self.accounting.request_trace {
            let trace = crate::request_trace::RequestTrace::create(p, self.cgroup_tree()?)?;
            s.requests = Some(trace);
        }
        if let (Some(p), None) = (&self.trace_out, &self.real) {
            s.controllers = Some(ControllerTrace::create(p, &self.device.name)?);
        }
        if self.live.is_on() {
            let tree = self.cgroup_tree()?;
            let paths = tree.ids().map(|g| tree.path(g).to_string()).collect();
            // the real engine's device is named once its target is open
            let dev = if self.real.is_some() {
                "target"
            } else {
                &self.device.name
            };
            let mut opts = self.live.clone();
            if opts.report.is_some() && self.real.is_none() {
                // the simulator writes its trace as the run goes: complete
                // by the time the live view finishes (Streams::finish)
                opts.report_trace = self
                    .trace_out
                    .clone()
                    .filter(|p| p.extension().is_some_and(|e| e == "jsonl"));
            }
            s.live = Some(crate::live::LiveView::create(&opts, dev, paths)?);
        }
        let logs = crate::job_logs::JobLogs::create(self.job_numbers())?;
        if !logs.is_empty() {
            s.job_logs = Some(logs);
        }
        if self.status_every_ms.is_some() {
            let invocation_of = self
                .invocations
                .iter()
                .enumerate()
                .flat_map(|(i, inv)| {
                    let clones: usize = inv
                        .jobs
                        .jobs
                        .iter()
                        .map(|j| j.numjobs.max(1) as usize)
                        .sum();
                    std::iter::repeat_n(i, clones)
                })
                .collect();
            s.status = Some(crate::status::StatusReports::create(
                &self.invocations,
                invocation_of,
                &self.device.name,
            )?);
        }
        self.streams = (!s.is_empty()).then(|| Arc::new(std::sync::Mutex::new(s)));
        Ok(())
    }

    /// Driver options for this experiment with a given host model.
    /// The driver's options; `signals` sets its stop and abandon flags.
    pub fn run_options(&self, host: HostModel, signals: Option<&StopOnSignal>) -> RunOptions {
        RunOptions {
            host,
            stop: signals.map(StopOnSignal::flag),
            abandon: signals.map(StopOnSignal::abandon_flag),
            // the simulator's waits take no wall time
            poll_every: None,
            ticks_mode: self.accounting.mode,
            hz: self.accounting.hz,
            tick_phase_ns: self.tick_phase_ns(),
            diskstats_every: if self.accounting.wants_snapshots() {
                Some(blkqos_core::Duration(
                    self.accounting.every_ns.unwrap_or(1_000_000_000),
                ))
            } else {
                None
            },
            // the request trace streams to its file (open_streams)
            trace_requests: false,
            check_invariants: self.check_invariants,
            sink: self.streams.clone().map(|s| s as blkqos_driver::SharedSink),
            lat_hist: self.accounting.lat_hist.is_some(),
            // the real engine's buffered IO goes through the kernel's cache
            pagecache: None,
            status_every: self.status_every_ms.map(blkqos_core::Duration::from_ms),
        }
    }

    /// Where in its jiffy the simulated run starts (ns): the explicit
    /// `tick_phase_ns`, else drawn from the seed (a real run starts at an
    /// arbitrary point of a jiffy). One phase for every jiffy user
    /// (blk-throttle, iocost's period timer, io_ticks), each taking it
    /// modulo its own tick.
    pub fn tick_phase_ns(&self) -> u64 {
        if self.controllers.tick_phase_explicit {
            return self.controllers.tick_phase_ns;
        }
        // splitmix64 of the seed (well spread for consecutive seeds), below
        // one second: each jiffy user puts its boundaries at multiples of
        // its own tick of (run time + phase)
        splitmix64(self.seed) % 1_000_000_000
    }

    /// `jiffies` when the simulated run starts: the explicit
    /// `jiffies_at_start`, else drawn from the seed (a real machine's
    /// jiffies depend on its uptime; blk-throttle rounds slice ends to
    /// absolute multiples of the slice).
    pub fn jiffies_at_start(&self) -> u64 {
        if self.controllers.jiffies_explicit {
            return self.controllers.jiffies_at_start;
        }
        splitmix64(self.seed ^ 0x6A09_E667_F3BC_C908) % (3600 * self.controllers.hz)
    }

    /// Run on the simulator.
    /// `--parse-only`: what a run checks before it starts (job layout on
    /// the device, the knob writes replayed on the controllers), nothing run.
    pub fn check(&self) -> Result<()> {
        let plan = self.plan(&self.device, None)?;
        let model = self.device.build();
        ControllerStack::from_writes(
            &self.controllers,
            &plan.tree,
            DeviceInfo {
                dev: self.device.devid,
                rotational: model.rotational(),
                nr_requests: model.nr_requests(),
            },
            &self.writes,
        )?;
        Ok(())
    }

    /// Run on the simulator, stopped (and its drain given up) by `signals`.
    pub fn run_sim(&self, signals: Option<&StopOnSignal>) -> Result<Ran> {
        self.run_sim_with(
            signals.map(StopOnSignal::flag),
            signals.map(StopOnSignal::abandon_flag),
        )
    }

    /// Run on the simulator with explicit stop and abandon flags
    /// ([`RunOptions::stop`], [`RunOptions::abandon`]).
    pub fn run_sim_with(
        &self,
        stop: Option<Arc<AtomicBool>>,
        abandon: Option<Arc<AtomicBool>>,
    ) -> Result<Ran> {
        let Plan {
            tree,
            setups,
            invocation_of,
        } = self.plan(&self.device, None)?;
        let mut dev = self.device.clone();
        if !self.device_seed_explicit {
            dev.seed = self.seed;
        }
        let model = dev.build();
        let mut controllers = self.controllers;
        controllers.tick_phase_ns = self.tick_phase_ns() % (1_000_000_000 / controllers.hz);
        controllers.jiffies_at_start = self.jiffies_at_start();
        let mut stack = ControllerStack::from_writes(
            &controllers,
            &tree,
            DeviceInfo {
                dev: self.device.devid,
                rotational: model.rotational(),
                nr_requests: model.nr_requests(),
            },
            &self.writes,
        )?;
        // traces only when written (they grow with groups × periods)
        stack.set_trace(self.trace_out.is_some());
        let mut backend = SimBackend::new(model).with_max_sectors(dev.max_sectors);
        let mut opts = self.run_options(
            HostModel {
                seed: self.seed,
                ..self.host
            },
            None,
        );
        opts.stop = stop;
        opts.abandon = abandon;
        opts.pagecache = self.pagecache.config();
        let result = blkqos_driver::run(&mut backend, &mut stack, setups, &opts)?;
        let iostat = tree.ids().map(|g| stack.iostat(g)).collect();
        let iostat_suffix = tree.ids().map(|g| stack.iostat_suffix(g)).collect();
        let trace = trace_for(&mut stack, &self.device.name, self.trace_out.as_deref());
        Ok(Ran {
            result,
            invocation_of,
            tree,
            iostat,
            iostat_suffix,
            trace,
            target: format!("simulated device {}", self.device.name),
            lost_pages: 0,
            dev_name: self.device.name.clone(),
            devid: self.device.devid,
            kernel_disks: None,
        })
    }
}

/// splitmix64: a well-spread value for consecutive seeds.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stack's per-period trace in the form `out` asks for: JSON lines
/// for a `.jsonl` file, text otherwise; empty when no trace is wanted.
pub fn trace_for(
    stack: &mut blkqos_core::ControllerStack,
    dev: &str,
    out: Option<&std::path::Path>,
) -> String {
    let mut s = String::new();
    if let Some(p) = out {
        stack.drain_trace(dev, p.extension().is_some_and(|e| e == "jsonl"), &mut s);
        let dropped = stack.trace_dropped();
        if dropped > 0 {
            eprintln!(
                "blkqos: warning: {}: the trace holds the first {} periods; {dropped} later periods were not recorded",
                p.display(),
                blkqos_core::iocost::trace::TRACE_CAPACITY
            );
        }
    }
    s
}

/// Groups and job clones of a run.
pub struct Plan {
    pub tree: CgroupTree,
    pub setups: Vec<JobSetup>,
    pub invocation_of: Vec<usize>,
}
