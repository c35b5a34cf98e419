//! An [`Experiment`] from a scenario file: its `[device]`, option tables,
//! knob writes and `[[fio]]` invocations, each checked with the file and
//! line of what it refuses.

use crate::experiment::{env_lookup, parse_formats, Experiment, Invocation};
use crate::scenario::{parse_at, scalar_to_string, FioTable, ScenarioFile, Source};
use anyhow::{bail, Result};
use blkqos_core::cgroupfs::{split_target, ControllerOptions, KnobWrite};
use blkqos_core::CgroupTree;
use blkqos_driver::HostModel;
use blkqos_fio::parse::{parse_fio_args, parse_job_file, JobSet, OutputFormat, MAX_JOBS};
use blkqos_sim::DeviceSpec;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use toml::Spanned;

/// A scenario table of `key = value` options.
type Table = BTreeMap<String, Spanned<toml::Value>>;

/// The experiment the scenario at `path` describes.
pub fn experiment(path: &std::path::Path) -> Result<Experiment, crate::failure::Failure> {
    from_file(path).map_err(crate::failure::Failure::input)
}

fn from_file(path: &std::path::Path) -> Result<Experiment> {
    let src = Source::load(path)?;
    let sc = src.parse()?;
    let mut real: Option<crate::experiment::RealOptions> = None;
    let device = match &sc.device {
        None => DeviceSpec::parse("null").expect("default device"),
        Some(t) => device(&src, t, &mut real)?,
    };
    let mut controllers = ControllerOptions::default();
    options(&src, sc.controllers.as_ref(), "controllers", |k, v| {
        controllers.set(k, v)
    })?;
    let mut accounting = crate::accounting::AccountingOptions::default();
    // outputs: relative to the current directory, like fio's (and [[fio]]
    // output=); never next to the scenario
    options(&src, sc.accounting.as_ref(), "accounting", |k, v| {
        accounting.set(k, v)
    })?;
    let mut pagecache = crate::pagecache::PageCacheOptions::default();
    options(&src, sc.pagecache.as_ref(), "pagecache", |k, v| {
        pagecache.set(k, v)
    })?;
    let writes = writes(&src, &sc, &mut pagecache, &mut controllers, &device.name)?;
    let known = known_cgroups(&src, &sc, &writes)?;
    memory_max_groups_known(&src, &sc, &pagecache, &known)?;
    let (invocations, status_every_ms) = invocations(&src, &sc, &known)?;
    Ok(Experiment {
        parse_only: false,
        check_invariants: false,
        showcmd: None,
        device,
        controllers,
        seed: sc.seed.unwrap_or(1),
        device_seed_explicit: sc.device.as_ref().is_some_and(|t| t.contains_key("seed")),
        device_given: sc.device.is_some(),
        host: host(&sc),
        writes,
        invocations,
        io_stat_out: None,
        accounting,
        pagecache,
        real,
        trace_out: None,
        ktrace_out: None,
        streams: None,
        live: Default::default(),
        status_every_ms,
        from_scenario: true,
    })
}

/// `[device]`: the simulated device, or (`path`, `backend`) the real
/// engine's target.
fn device(
    src: &Source,
    t: &Table,
    real: &mut Option<crate::experiment::RealOptions>,
) -> Result<DeviceSpec> {
    let mut model = "null".to_string();
    let mut kv: Vec<(String, String)> = Vec::new();
    for (k, v) in t {
        let s = scalar_to_string(v.get_ref());
        if k == "path" || k == "backend" {
            let s = s.unwrap_or_default();
            let r = real.get_or_insert_with(crate::experiment::RealOptions::default);
            if k == "path" {
                r.path = Some(src.resolve(&s));
            } else {
                r.kind = blkqos_engine::BackendKind::parse(&s).ok_or_else(|| {
                    src.err(
                        v.span().start,
                        format!("[device] backend `{s}`: use auto, io_uring or threads"),
                    )
                })?;
            }
            continue;
        }
        let s = s.ok_or_else(|| {
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
    DeviceSpec::new(&model, kv.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| {
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
        src.err(at, e.to_string()).into()
    })
}

/// Each `key = value` of table `[name]` given to `set`; a refusal points
/// at its line.
fn options(
    src: &Source,
    table: Option<&Table>,
    name: &str,
    mut set: impl FnMut(&str, &str) -> Result<(), String>,
) -> Result<()> {
    for (k, v) in table.into_iter().flatten() {
        let s = scalar_to_string(v.get_ref()).ok_or_else(|| {
            src.err(
                v.span().start,
                format!("[{name}] `{k}`: expected a string or a number"),
            )
        })?;
        set(k, &s).map_err(|m| src.err(v.span().start, format!("[{name}] {m}")))?;
    }
    Ok(())
}

/// `[[write]]`: the knob writes, with their times; `memory.max` writes
/// go to the page cache ([`memory_max`]), `queue/wbt_lat_usec` to the
/// controllers ([`wbt_lat_usec`]).
fn writes(
    src: &Source,
    sc: &ScenarioFile,
    pagecache: &mut crate::pagecache::PageCacheOptions,
    controllers: &mut ControllerOptions,
    device_name: &str,
) -> Result<Vec<KnobWrite>> {
    let mut writes = Vec::new();
    for w in &sc.write {
        if let Some(dir) = w.file.get_ref().trim().strip_suffix("/memory.max") {
            pagecache.memory_max.push(memory_max(src, w, dir)?);
            continue;
        }
        if let Some(dir) = w.file.get_ref().trim().strip_suffix("/queue/wbt_lat_usec") {
            controllers.wbt_lat_usec = Some(wbt_lat_usec(src, w, dir, device_name)?);
            continue;
        }
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
    Ok(writes)
}

/// A `/sys/block/NAME/queue/wbt_lat_usec` write: blk-wbt's latency
/// target in µs (0 turns it off) for the scenario's device, before the
/// run only.
fn wbt_lat_usec(
    src: &Source,
    w: &crate::scenario::WriteTable,
    dir: &str,
    device_name: &str,
) -> Result<u64> {
    let at = |m: String| anyhow::Error::from(src.err(w.value.span().start, m));
    if w.at
        .as_ref()
        .is_some_and(|a| parse_at(a.get_ref()) != Some(0))
    {
        return Err(at(
            "queue/wbt_lat_usec is set before the run only (at = \"0\")".into(),
        ));
    }
    if dir != format!("/sys/block/{device_name}") {
        return Err(anyhow::Error::from(src.err(
            w.file.span().start,
            format!(
                "`{}`: the scenario's device is /sys/block/{device_name}",
                w.file.get_ref()
            ),
        )));
    }
    let v = w.value.get_ref().trim();
    v.parse().map_err(|_| {
        at(format!(
            "wbt_lat_usec `{v}`: expected microseconds (0 turns blk-wbt off)"
        ))
    })
}

/// A `memory.max` write: the group's page cache limit (bytes, or `max`),
/// before the run only.
fn memory_max(src: &Source, w: &crate::scenario::WriteTable, dir: &str) -> Result<(String, u64)> {
    let at = |m: String| anyhow::Error::from(src.err(w.value.span().start, m));
    if w.at
        .as_ref()
        .is_some_and(|a| parse_at(a.get_ref()) != Some(0))
    {
        return Err(at(format!(
            "{}: memory.max is set before the run only (at = \"0\")",
            w.file.get_ref()
        )));
    }
    let dir = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .find_map(|p| dir.strip_prefix(p))
        .unwrap_or(dir);
    let path = blkqos_core::CgroupTree::normalize(if dir.is_empty() { "/" } else { dir })
        .map_err(|e| at(format!("{}: {e}", w.file.get_ref())))?;
    if path == "/" {
        return Err(at("memory.max does not exist in the root cgroup".into()));
    }
    let v = w.value.get_ref().trim();
    let bytes = if v == "max" {
        u64::MAX
    } else {
        blkqos_sim::device::parse_size(v)
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                at(format!(
                    "memory.max `{v}`: expected bytes (like 268435456 or 256m) or max"
                ))
            })?
    };
    Ok((path, bytes))
}

/// A `memory.max` must name a cgroup the scenario has (in `cgroups` or
/// written to): a mistyped path would leave the intended group unlimited.
fn memory_max_groups_known(
    src: &Source,
    sc: &ScenarioFile,
    pagecache: &crate::pagecache::PageCacheOptions,
    known: &BTreeSet<String>,
) -> Result<()> {
    for (path, _) in &pagecache.memory_max {
        if known.contains(path) {
            continue;
        }
        let w = sc
            .write
            .iter()
            .find(|w| w.file.get_ref().contains(&format!("{path}/memory.max")));
        let at = w.map_or(0, |w| w.file.span().start);
        bail!(src.err(
            at,
            format!("memory.max of `{path}`: no such cgroup; list it in `cgroups = [...]`")
        ));
    }
    Ok(())
}

/// The cgroups a `[[fio]]` may run in: those written to, and `cgroups`.
fn known_cgroups(
    src: &Source,
    sc: &ScenarioFile,
    writes: &[KnobWrite],
) -> Result<BTreeSet<String>> {
    let mut known: BTreeSet<String> = writes.iter().map(|w| w.cgroup.clone()).collect();
    for c in &sc.cgroups {
        known.insert(
            CgroupTree::normalize(c.get_ref())
                .map_err(|e| src.err(c.span().start, e.to_string()))?,
        );
    }
    Ok(known)
}

/// `[[fio]]`: the invocations, and the status interval they share.
fn invocations(
    src: &Source,
    sc: &ScenarioFile,
    known: &BTreeSet<String>,
) -> Result<(Vec<Invocation>, Option<u64>)> {
    let mut invocations = Vec::new();
    let mut status_ms: Vec<(usize, Option<u64>)> = Vec::new();
    let mut run_clones = 0u64;
    for (i, f) in sc.fio.iter().enumerate() {
        let (inv, status) = invocation(src, i, f, known)?;
        status_ms.extend(status.map(|s| (i, s)));
        run_clones += clones(&inv.jobs);
        if run_clones > u64::from(MAX_JOBS) {
            bail!(src.err(anchor(src, i, f), too_many_clones(i, run_clones)));
        }
        invocations.push(inv);
    }
    if invocations.is_empty() {
        bail!(src.err(0, "the scenario has no [[fio]] invocation: nothing to run"));
    }
    let status_every_ms = one_status_interval(&status_ms, invocations.len())
        .map_err(|(i, m)| src.err(src.table_header("fio", i).unwrap_or(0), m))?;
    Ok((invocations, status_every_ms))
}

/// Where `[[fio]]` #`i` is, for messages: its job source, else its header.
fn anchor(src: &Source, i: usize, f: &FioTable) -> usize {
    f.job_file
        .as_ref()
        .map(|s| s.span().start)
        .or(f.job.as_ref().map(|s| s.span().start))
        .or(f.args.as_ref().map(|s| s.span().start))
        .or_else(|| src.table_header("fio", i))
        .unwrap_or(0)
}

/// `[[fio]]` #`i` (0-based), and the `--status-interval` of its `args=`
/// (`None` when it has no `args=`).
fn invocation(
    src: &Source,
    i: usize,
    f: &FioTable,
    known: &BTreeSet<String>,
) -> Result<(Invocation, Option<Option<u64>>)> {
    let at = anchor(src, i, f);
    let given = [f.job_file.is_some(), f.job.is_some(), f.args.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        bail!(src.err(
            at,
            format!(
                "[[fio]] #{}: give exactly one of job_file, job or args",
                i + 1
            )
        ));
    }
    let mut output = f.output.as_ref().map(PathBuf::from);
    let mut formats = match &f.output_format {
        Some(s) => parse_formats(s).map_err(|m| src.err(at, m))?,
        None => vec![OutputFormat::Normal],
    };
    let mut status = None;
    let jobs = if let Some(p) = &f.job_file {
        let path = src.resolve(p.get_ref());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| src.err(p.span().start, format!("job file {}: {e}", path.display())))?;
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
        let argv: Vec<String> = a.get_ref().split_whitespace().map(str::to_string).collect();
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
        status = Some(cli.status_interval_ms);
        cli.jobs
    };
    let inv = Invocation {
        jobs,
        cgroup: fio_cgroup(src, i, f, known)?,
        // outputs are written relative to the current directory, like fio
        output,
        formats,
    };
    Ok((inv, status))
}

/// A `[[fio]]`'s `cgroup =`, which must exist.
fn fio_cgroup(
    src: &Source,
    i: usize,
    f: &FioTable,
    known: &BTreeSet<String>,
) -> Result<Option<String>> {
    let Some(c) = &f.cgroup else {
        return Ok(None);
    };
    let p =
        CgroupTree::normalize(c.get_ref()).map_err(|e| src.err(c.span().start, e.to_string()))?;
    if p != "/" && !known.contains(&p) {
        bail!(src.err(
            c.span().start,
            format!(
                "[[fio]] #{}: cgroup `{p}` does not exist: list it in `cgroups = [...]` or write a knob to it",
                i + 1
            )
        ));
    }
    Ok(Some(p))
}

/// `[host]`, over the defaults.
fn host(sc: &ScenarioFile) -> HostModel {
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
        writeback_piece_ns: h
            .and_then(|h| h.writeback_piece_ns)
            .unwrap_or(d.writeback_piece_ns),
        cpus: h.and_then(|h| h.cpus).unwrap_or(d.cpus),
        seed: sc.seed.unwrap_or(1),
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
