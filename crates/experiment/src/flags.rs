//! blkqos's own `run` flags: one table from which the fio parser's list of
//! foreign flags, the "blkqos flags" block of `run --help`, the flags
//! accepted after a scenario file (and the refusal that lists them) and
//! the handling of each value all come. Adding a flag is one entry here
//! and one arm in [`apply`].

use crate::accounting::AccountingOptions;
use crate::experiment::{env_lookup, Experiment, Invocation};
use crate::failure::Failure;
use anyhow::{bail, Context, Result};
use blkqos_core::cgroupfs::ControllerOptions;
use blkqos_driver::HostModel;
use blkqos_fio::parse::{parse_fio_args, CliParse, OutputFormat};
use blkqos_sim::DeviceSpec;
use std::path::PathBuf;

/// How a flag takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// `--flag=VALUE`, a value is required.
    Value,
    /// `--flag` alone, or `--flag=VALUE`.
    Optional,
}

/// One flag of `blkqos run`.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The name without dashes (`device`).
    pub name: &'static str,
    pub takes: Takes,
    /// The left column of `--help` (`--device=MODEL[,key=value...]`).
    pub usage: &'static str,
    /// The help text, one entry per line of the right column.
    pub help: &'static [&'static str],
    /// Also accepted after a scenario file (it then overrides the scenario).
    pub after_scenario: bool,
    /// A fio option (`--output-format`...): on a fio command line the fio
    /// parser reads it; listed here for what follows a scenario file.
    pub fio: bool,
    /// A value the flag accepts, for the tests (`None`: bare).
    #[cfg_attr(not(test), allow(dead_code))]
    pub example: Option<&'static str>,
}

const fn flag(
    name: &'static str,
    takes: Takes,
    usage: &'static str,
    help: &'static [&'static str],
    after_scenario: bool,
    example: Option<&'static str>,
) -> Flag {
    Flag {
        name,
        takes,
        usage,
        help,
        after_scenario,
        fio: false,
        example,
    }
}

const fn fio_option(name: &'static str, takes: Takes, example: Option<&'static str>) -> Flag {
    Flag {
        name,
        takes,
        usage: "",
        help: &[],
        after_scenario: true,
        fio: true,
        example,
    }
}

use Takes::{Optional, Value};

/// Every flag, in `--help` order.
pub const FLAGS: &[Flag] = &[
    flag("device", Value, "--device=MODEL[,key=value...]", &["simulated device (default: null); see `blkqos devices`"], false, Some("ssd,channels=2")),
    flag("seed", Value, "--seed=N", &["seed for randrepeat=0 streams and device jitter (default 1)"], true, Some("7")),
    flag("submit-ns", Value, "--submit-ns=N", &["CPU time of one submit call, shown as slat (default 1000)"], false, Some("2000")),
    flag("backend", Value, "--backend=sim|real|io_uring|threads", &[
        "sim (default): the simulated --device; real: the jobs' file or",
        "block device with io_uring, falling back to a thread pool",
    ], false, Some("sim")),
    flag("allow-destructive", Optional, "--allow-destructive", &[
        "real engine: write to a block device even if it carries a",
        "partition table or filesystem signature",
    ], false, None),
    flag("overwrite", Optional, "--overwrite", &["real engine: write to an existing file blkqos did not lay out"], false, None),
    flag("pagecache", Value, "--pagecache=on|off", &[
        "simulator: buffered (direct=0) jobs go through a simulated page",
        "cache with writeback (on, default) or straight to the device (off);",
        "real engine: on = blkqos's own write-back buffer (writeback under",
        "the group's limits, drained and fsynced before the run ends)",
    ], true, Some("off")),
    flag("writeback", Value, "--writeback=async|sync|root", &[
        "how writeback meets the controllers: async (default; charged to",
        "the dirtier's group, held IO released on its own, as Linux cgroup",
        "writeback), sync (one flusher waits while its IO is held), root",
        "(cgroup v1: charged to the root, the limits miss it)",
    ], true, Some("sync")),
    flag("pagecache-report", Value, "--pagecache-report=FILE", &["per-second writeback per group and per task; FILE.json = JSON"], true, Some("wb.txt")),
    flag("io-max", Value, "--io-max='MAJ:MIN key=val'", &["an io.max line for the job's cgroup (--cgroup=NAME)"], false, Some("254:0 riops=100")),
    flag("throttle", Value, "--throttle=VARIANT", &[
        "io.max implementation: mainline (default), legacy,",
        "slice-remainder, linux-4.18 ... linux-6.18, or paced",
    ], true, Some("legacy")),
    flag("io-weight", Value, "--io-weight='N|MAJ:MIN N'", &["an io.weight line for the job's cgroup"], false, Some("200")),
    flag("io-cost-qos", Value, "--io-cost-qos='MAJ:MIN ...'", &["the root's io.cost.qos line (enable=1 turns iocost on)"], false, Some("254:0 enable=1")),
    flag("io-cost-model", Value, "--io-cost-model='MAJ:MIN ...'", &["the root's io.cost.model line"], false, Some("254:0 ctrl=user model=linear rbps=1000000000 rseqiops=10000 rrandiops=10000 wbps=1000000000 wseqiops=10000 wrandiops=10000")),
    flag("iocost", Value, "--iocost=VARIANT", &[
        "hold (default: busy_level kept when a period has no",
        "completions but lagging IO, 7.1+), reset (<= 7.0), hold-v2",
    ], true, Some("reset")),
    flag("blkcg-debug-stats", Value, "--blkcg-debug-stats=0|1", &["io.stat also shows iocost's cost.wait, cost.indebt, cost.indelay"], true, Some("1")),
    flag("check-invariants", Optional, "--check-invariants", &[
        "check every controller's invariants after each pass of the driver",
        "loop (a violation, a bug, ends the run with exit 1); debug builds",
        "check every 64th pass, every run checks once at its end",
    ], true, None),
    flag("iocost-trace", Value, "--iocost-trace=FILE", &["per-period iocost trace (iocost_monitor style); FILE.jsonl = JSON"], true, Some("trace.txt")),
    flag("ktrace", Value, "--ktrace=FILE", &[
        "write the run as the kernel's trace shows it (iocost_ioc_vrate_adj,",
        "block_getrq, block_rq_issue, block_rq_complete, blk-throttle's throtl",
        "messages), in the text /sys/kernel/tracing/trace prints",
    ], true, Some("ktrace.txt")),
    flag("kernel", Value, "--kernel=VER[,hz=N][,throttling_low=y]", &[
        "every controller and accounting rule of a kernel release as",
        "distributions build it: 6.1, 6.12, 7.2 (HZ=250, no",
        "THROTTLING_LOW); flags after it override single choices",
    ], true, Some("6.12")),
    flag("hz", Value, "--hz=N", &["kernel HZ for blk-throttle: 100, 250, 300, 1000 (default)"], true, Some("250")),
    flag("io-stat", Value, "--io-stat=FILE", &["after the run, write every cgroup's io.stat to FILE"], true, Some("io.stat")),
    flag("iostats", Value, "--iostats=MODE", &[
        "busy-time accounting: precise (default), inflight (6.10+),",
        "sampling-v2 (5.7-6.9), sampling-v1 (5.0-5.6), round-stats (<=4.20),",
        "off (queue/iostats=0: no disk accounting)",
    ], true, Some("inflight")),
    flag("eta", Value, "--eta=auto|always|never", &[
        "real engine: a status line (elapsed, ETA, IOPS and bandwidth",
        "per job) on stderr every second; auto (default) = if a terminal",
    ], true, Some("never")),
    flag("live", Optional, "--live=SECONDS", &[
        "a block on stderr every SECONDS of run time (bare --live: every",
        "second; simulated time on the simulator): device line (iocost",
        "vrate, busy_level, total IOPS/bw), then per cgroup r/w IOPS and",
        "bandwidth, p99 latency, IOs io.max holds and the longest wait,",
        "iocost hweight active/inuse%, debt and delay; redrawn in place on",
        "a terminal; replaces the --eta line",
    ], true, Some("2")),
    flag("live-json", Value, "--live-json=FILE", &[
        "the same per interval as JSON lines (exact counts) to FILE, with",
        "latency percentiles, the device's %util, and whole-run latency",
        "CDFs on the last line (docs/live.md)",
    ], true, Some("live.jsonl")),
    flag("report", Value, "--report=FILE", &[
        "after the run, an HTML report of its time series (charts per",
        "cgroup and device; docs/report.md), as `blkqos report`",
    ], true, Some("report.html")),
    flag("diskstats-every", Value, "--diskstats-every=T", &["snapshot /proc/diskstats every T (default 1s when needed)"], true, Some("500ms")),
    flag("diskstats-dir", Value, "--diskstats-dir=DIR", &["write snapshots as DIR/NNNN/{diskstats,uptime}"], true, Some("snaps")),
    flag("iostat", Value, "--iostat='ARGS'", &["print sysstat's iostat over the snapshots, e.g. --iostat='-x 1'"], true, Some("-x 1")),
    flag("lat-hist", Value, "--lat-hist=FILE", &[
        "after the run, write latency percentiles per device (request",
        "start -> completion) and per cgroup (submit -> completion, with",
        "io.max/iocost wait) to FILE; FILE.json = JSON",
    ], true, Some("lat.txt")),
    flag("request-trace", Value, "--request-trace=FILE", &[
        "write every request (cgroup, direction, submit, start and",
        "completion ns) to FILE, one line each, as the run goes",
    ], true, Some("requests.txt")),
    fio_option("output-format", Value, Some("json")),
    fio_option("status-interval", Value, Some("1")),
    fio_option("parse-only", Optional, None),
];

/// An experiment from fio-style arguments (job files and/or `--name=...`
/// options) and blkqos's flags.
pub fn experiment_from_args(args: &[String]) -> Result<Experiment, Failure> {
    from_args(args).map_err(Failure::input)
}

fn from_args(args: &[String]) -> Result<Experiment> {
    let foreign = foreign();
    let mut cli = parse_fio_args(args, &foreign, &env_lookup)?;
    let flags = std::mem::take(&mut cli.other);
    let mut e = experiment_of_fio(cli)?;
    let mut pending = Pending::default();
    for (k, v) in &flags {
        apply(&mut e, &mut pending, k, v)?;
    }
    pending.finish(&mut e)?;
    Ok(e)
}

/// An experiment from fio's arguments alone (job files and/or `--name=...`
/// options; a blkqos flag is an unknown option): the null device, the
/// default host and the simulator, for a study to set in place
/// ([`Experiment::set_device`], `host`, `real`).
pub fn experiment_from_fio_args(args: &[String]) -> Result<Experiment, Failure> {
    parse_fio_args(args, &[], &env_lookup)
        .map_err(anyhow::Error::from)
        .and_then(experiment_of_fio)
        .map_err(Failure::input)
}

/// The experiment of parsed fio arguments, before blkqos's flags.
fn experiment_of_fio(cli: CliParse) -> Result<Experiment> {
    // parse_fio_args already read the job files named on the command line
    let jobs = cli.jobs;
    if jobs.jobs.is_empty() && cli.showcmd.is_none() {
        bail!("no jobs given: pass a scenario (.toml), a fio job file, or --name=... options");
    }
    Ok(Experiment {
        parse_only: cli.parse_only,
        check_invariants: false,
        showcmd: cli.showcmd.clone(),
        device: DeviceSpec::parse("null").expect("default device"),
        controllers: ControllerOptions::default(),
        seed: 1,
        device_seed_explicit: false,
        device_given: false,
        host: HostModel::default(),
        io_stat_out: None,
        accounting: AccountingOptions::default(),
        pagecache: crate::pagecache::PageCacheOptions::default(),
        real: None,
        trace_out: None,
        ktrace_out: None,
        streams: None,
        live: crate::live::LiveOptions::default(),
        status_every_ms: cli.status_interval_ms,
        from_scenario: false,
        writes: Vec::new(),
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

/// The experiment of `blkqos run ARGS`: a scenario file and the flags
/// after it, or fio's command line with blkqos's flags.
pub fn build(args: &[String]) -> Result<Experiment, Failure> {
    build_checked(args).map_err(Failure::input)
}

fn build_checked(args: &[String]) -> Result<Experiment> {
    let mut e = build_experiment(args)?;
    if e.real.is_none() {
        let jobs = e
            .invocations
            .iter_mut()
            .flat_map(|i| i.jobs.jobs.iter_mut());
        crate::zbd_plan::settle_device(&mut e.device, e.device_given, jobs)?;
    }
    // the report's title: the command, without the report's own file
    let shown: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--report="))
        .collect();
    e.live.report_title = format!("blkqos run {}", shown.join(" "));
    Ok(e)
}

fn build_experiment(args: &[String]) -> Result<Experiment> {
    let Some(first) = args.first() else {
        bail!("nothing to run: give a scenario (.toml), a job file, or fio options (see `blkqos run --help`)");
    };
    Ok(if first.ends_with(".toml") {
        let mut e = crate::scenario_build::experiment(std::path::Path::new(first))?;
        apply_after_scenario(&mut e, &args[1..])?;
        e
    } else {
        from_args(args)?
    })
}

/// The flags the fio parser leaves to blkqos (`name`, or `name?` when the
/// value may be left out).
pub fn foreign() -> Vec<&'static str> {
    FLAGS
        .iter()
        .filter(|f| !f.fio)
        .map(|f| match f.takes {
            Value => f.name,
            Optional => optional_name(f.name),
        })
        .collect()
}

/// `name?` for the fio parser, built once per flag.
fn optional_name(name: &'static str) -> &'static str {
    use std::sync::OnceLock;
    static NAMES: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            FLAGS
                .iter()
                .filter(|f| f.takes == Optional)
                .map(|f| (f.name, &*Box::leak(format!("{}?", f.name).into_boxed_str())))
                .collect()
        })
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(name, |(_, q)| q)
}

/// The "blkqos flags" block of `run --help`, and the list of those also
/// accepted after a scenario file.
pub fn help_block() -> String {
    const COL: usize = 33;
    let mut s = String::from("blkqos flags:\n");
    for f in FLAGS.iter().filter(|f| !f.fio) {
        let mut lines = f.help.iter();
        if f.usage.len() + 2 < COL {
            let first = lines.next().copied().unwrap_or("");
            s += &format!("  {:<w$}{first}\n", f.usage, w = COL - 2);
        } else {
            s += &format!("  {}\n", f.usage);
        }
        for l in lines {
            s += &format!("{:COL$}{l}\n", "");
        }
    }
    s += "\nAfter a scenario file (overriding it): ";
    s += &after_scenario_list();
    s += ".\n";
    s
}

/// `--seed, --kernel, ... and --parse-only`.
fn after_scenario_list() -> String {
    let names: Vec<String> = FLAGS
        .iter()
        .filter(|f| f.after_scenario)
        .map(|f| format!("--{}", f.name))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// Values given by flags that take effect once all are read.
#[derive(Default)]
pub struct Pending {
    allow_destructive: bool,
    overwrite: bool,
    eta: Option<crate::progress::Eta>,
}

impl Pending {
    /// Apply what waited for every flag: the real engine's consents and
    /// status line.
    pub fn finish(self, e: &mut Experiment) -> Result<()> {
        if let Some(r) = &mut e.real {
            r.allow_destructive |= self.allow_destructive;
            r.overwrite |= self.overwrite;
            if let Some(eta) = self.eta {
                r.eta = eta;
            }
        } else if self.allow_destructive || self.overwrite {
            bail!("--allow-destructive/--overwrite apply to the real engine: add --backend=real");
        }
        Ok(())
    }
}

/// The flags given after a scenario file (`--name` or `--name=value`),
/// applied to its experiment.
pub fn apply_after_scenario(e: &mut Experiment, args: &[String]) -> Result<()> {
    let mut pending = Pending::default();
    for a in args {
        let (name, value) = match a.strip_prefix("--") {
            Some(rest) => rest.split_once('=').unwrap_or((rest, "")),
            None => ("", ""),
        };
        let Some(f) = FLAGS.iter().find(|f| f.name == name && f.after_scenario) else {
            bail!(
                "`{a}`: after a scenario file only {} are accepted",
                after_scenario_list()
            );
        };
        if f.takes == Value && !a.contains('=') {
            bail!("`{a}`: --{name} needs a value (--{name}=...)");
        }
        apply(e, &mut pending, name, value)?;
    }
    pending.finish(e)
}

/// A device spec (`--device=MODEL[,key=value...]`) and whether it names
/// its own `seed=` (otherwise the run's seed picks the device's).
pub fn parse_device(text: &str) -> Result<(DeviceSpec, bool)> {
    let spec = DeviceSpec::parse(text)?;
    Ok((spec, text.split(',').any(|p| p.trim().starts_with("seed="))))
}

/// `--backend=sim|real|io_uring|threads`.
fn set_backend(e: &mut Experiment, v: &str) -> Result<()> {
    if v == "sim" {
        e.real = None;
    } else {
        let kind = blkqos_engine::BackendKind::parse(v).ok_or_else(|| {
            anyhow::anyhow!(
                "--backend={v}: use sim, real (io_uring, falling back to threads), io_uring or threads"
            )
        })?;
        let r = e
            .real
            .get_or_insert_with(crate::experiment::RealOptions::default);
        r.kind = if v == "real" {
            blkqos_engine::BackendKind::Auto
        } else {
            kind
        };
    }
    Ok(())
}

/// Apply flag `name` with `value` (`""` when given bare) to `e`.
pub fn apply(e: &mut Experiment, p: &mut Pending, name: &str, value: &str) -> Result<()> {
    let v = value;
    let m = |m: String| anyhow::anyhow!("--{m}");
    match name {
        "iostats" | "diskstats-every" | "diskstats-dir" | "iostat" | "lat-hist"
        | "request-trace" => e.accounting.set(name, v).map_err(m)?,
        "io-stat" => e.io_stat_out = Some(PathBuf::from(v)),
        "writeback" => e.pagecache.set("writeback", v).map_err(m)?,
        "pagecache" => e.pagecache.set("enable", v).map_err(m)?,
        "pagecache-report" => e.pagecache.report = Some(PathBuf::from(v)),
        "kernel" => {
            let (prof, low) = crate::kernel::KernelProfile::parse(v).map_err(m)?;
            prof.apply_build(&mut e.controllers, &mut e.accounting, low);
            prof.apply_pagecache(&mut e.pagecache.cfg);
        }
        "throttle" | "hz" | "iocost" | "blkcg-debug-stats" => {
            e.controllers.set(name, v).map_err(m)?
        }
        "iocost-trace" => e.trace_out = Some(PathBuf::from(v)),
        "ktrace" => e.ktrace_out = Some(PathBuf::from(v)),
        "device" => {
            let (spec, seed_explicit) = parse_device(v).with_context(|| format!("--device={v}"))?;
            e.set_device(spec, seed_explicit);
        }
        "seed" => {
            e.seed = v
                .parse()
                .with_context(|| format!("--seed={v}: expected an unsigned integer"))?
        }
        "submit-ns" => {
            e.host.submit_ns = v
                .parse()
                .with_context(|| format!("--submit-ns={v}: expected nanoseconds"))?
        }
        "backend" => set_backend(e, v)?,
        "eta" => {
            p.eta = Some(
                crate::progress::Eta::parse(v)
                    .ok_or_else(|| anyhow::anyhow!("--eta={v}: use auto, always or never"))?,
            )
        }
        "live" => e.live.set_every(v)?,
        "live-json" => e.live.json = Some(PathBuf::from(v)),
        "report" => e.live.set_report(v)?,
        "allow-destructive" => p.allow_destructive = true,
        "overwrite" => p.overwrite = true,
        "check-invariants" => {
            e.check_invariants = match v {
                "" | "1" => true,
                "0" => false,
                _ => bail!("--check-invariants={v}: expected 1 or 0 (or no value)"),
            }
        }
        "io-max" | "io-weight" | "io-cost-model" | "io-cost-qos" => e.knob_flag(name, v)?,
        "output-format" => {
            let f = crate::experiment::parse_formats(v).map_err(m)?;
            for inv in &mut e.invocations {
                inv.formats = f.clone();
            }
        }
        "status-interval" => {
            let ms = blkqos_fio::parse::parse_status_interval(v).map_err(|m| {
                anyhow::anyhow!("<command line>: option `status-interval`: value `{v}`: {m}")
            })?;
            e.status_every_ms = Some(ms);
        }
        "parse-only" => e.parse_only = true,
        other => bail!("--{other}={v}: not available in this build"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_help_lists_every_blkqos_flag() {
        let mut names: Vec<&str> = FLAGS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a flag is listed twice");
        let help = help_block();
        for f in FLAGS.iter().filter(|f| !f.fio) {
            assert!(help.contains(&format!("  {}", f.usage)), "{}", f.name);
        }
    }

    /// `--name` or `--name=example`.
    fn arg(f: &Flag) -> String {
        match f.example {
            Some(v) => format!("--{}={v}", f.name),
            None => format!("--{}", f.name),
        }
    }

    /// Every flag of the help's "blkqos flags" block is taken on a fio
    /// command line, with the value its table entry gives.
    #[test]
    fn every_flag_is_taken_with_fio_jobs() {
        for f in FLAGS.iter().filter(|f| !f.fio) {
            let mut args: Vec<String> = [
                "--name=a",
                "--rw=read",
                "--size=1m",
                "--filename=f",
                "--cgroup=/a",
            ]
            .map(String::from)
            .to_vec();
            if matches!(f.name, "allow-destructive" | "overwrite") {
                args.push("--backend=real".into());
            }
            args.push(arg(f));
            let e = experiment_from_args(&args);
            assert!(e.is_ok(), "{}: {:#}", arg(f), e.err().unwrap());
        }
    }

    /// The flags the help says follow a scenario file do, and the others
    /// are refused there with the list.
    #[test]
    fn after_a_scenario_exactly_the_listed_flags_are_taken() {
        let sc = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/seed-000-throttle/scenario.toml");
        let help = help_block();
        for f in FLAGS {
            let mut e = crate::scenario_build::experiment(&sc).expect("scenario");
            let r = apply_after_scenario(&mut e, &[arg(f)]);
            let listed = help.contains(&format!("--{},", f.name))
                || help.contains(&format!("--{}.", f.name))
                || help.contains(&format!("--{} and", f.name));
            if f.after_scenario {
                assert!(listed, "{} is taken but not listed", f.name);
                assert!(r.is_ok(), "{}: {:#}", arg(f), r.err().unwrap());
            } else {
                let err = format!("{:#}", r.expect_err(f.name));
                assert!(err.contains("after a scenario file only --seed"), "{err}");
            }
        }
        // a flag that needs a value says so
        let mut e = crate::scenario_build::experiment(&sc).unwrap();
        let err = apply_after_scenario(&mut e, &["--seed".into()]).unwrap_err();
        assert!(err.to_string().contains("needs a value"), "{err}");
    }
}
