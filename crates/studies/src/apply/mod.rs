//! `blkqos apply`: a scenario's settings, or a sweep's chosen point, written
//! to a live cgroup v2 hierarchy.
//!
//! # Design
//!
//! 1. **Plan** ([`plan`]): the scenario's writes at time 0 as the
//!    simulator ran them (with `--sweep`, the chosen point's knob values
//!    merged in by the sweep's own code), the scenario's device number
//!    replaced by the target's, `/sys/fs/cgroup` by `--root`. Writes later
//!    in the run are events, not settings: listed, not applied. Values were
//!    checked when the scenario was built, by the parsers that mirror the
//!    kernel's (`ioc_qos_write`, `tg_set_limit`, ...).
//! 2. **Check** ([`live::check`]) everything before writing anything: the
//!    device exists (`/sys/dev/block/MAJ:MIN`), the root is a cgroup v2
//!    hierarchy, each cgroup exists (or `--create`), `io` is enabled in
//!    its parent's `cgroup.subtree_control`, each file is there.
//! 3. **Write** ([`live::apply`]) in the scenario's order, each file read
//!    back as the kernel prints it ([`readback`]); the first write the
//!    kernel refuses or that reads back otherwise stops the apply, and
//!    what was written is put back, last first (the line each file held
//!    for the device before, or the line that clears it), and the cgroups
//!    created are removed.
//!
//! `--dry-run` does 1 and 2 and prints the writes.

mod emit;
mod live;

pub use emit::property_name as hwdb_property;

mod plan;
mod readback;

use anyhow::{anyhow, Context, Result};
use blkqos_core::DevId;
use blkqos_experiment::failure::Failure;
use std::path::PathBuf;

pub const HELP: &str = "\
Write a scenario's settings, or a sweep's chosen point, to a live cgroup v2
hierarchy: io.cost.model, io.cost.qos, io.weight and io.max as the
simulator ran them, on the real device.

  blkqos apply SCENARIO.toml --device=MAJ:MIN [--dry-run]
  blkqos apply --sweep=sweep.json --device=MAJ:MIN [--point=N] [--create]
  blkqos apply --sweep=tune.json --solution=NAME --device=MAJ:MIN

--solution=NAME applies one of iocost-tune's named solutions (isolation,
isolated-bandwidth, bandwidth, naive) that a sweep of io.cost.qos:vrate
with a limit found (docs/SWEEP.md).

Everything is checked before anything is written: the device exists
(/sys/dev/block/MAJ:MIN), each cgroup exists (--create makes missing ones),
io is enabled in its parent's cgroup.subtree_control, each file is there.
Then each file is written in the scenario's order and read back; the first
write the kernel refuses, or that reads back otherwise, stops the apply and
what was written is put back (last first), the cgroups made removed.

--emit=FORMAT prints the settings for the tool that applies them instead,
checking and writing nothing:
  hwdb         a systemd hwdb record for the device model (--model=ID_MODEL,
               as `udevadm info -q property -n /dev/X` shows it) with the
               io.cost.model and io.cost.qos as solution --solution=NAME
               (default blkqos; a vrate sweep's record carries all its named
               solutions); install as /etc/udev/hwdb.d/90-blkqos.hwdb,
               run `systemd-hwdb update`; systemd's 90-iocost.rules applies it
  iocost.conf  /etc/udev/iocost.conf choosing that solution
  systemd      a drop-in per cgroup for its slice (/a/b is a-b.slice):
               IOWeight=, IODeviceWeight=, IO{Read,Write}{Bandwidth,IOPS}Max=
               on --dev-path=/dev/X
  goresctrl    containerd's and CRI-O's blockio classes (blockio_config_file):
               a class per cgroup, Weight (10-1000) and Throttle* on --dev-path

--root=DIR writes under DIR instead of /sys/fs/cgroup (a test hierarchy);
--sysfs=DIR looks for the device under DIR instead of /sys. Exit status: 0
applied (or the dry run's checks passed), 1 a write failed and was rolled
back, 2 bad input or a check failed (nothing written).";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario (default with --sweep: the scenario the sweep ran)
    #[arg(value_name = "SCENARIO.toml")]
    scenario: Option<PathBuf>,
    /// A sweep's JSON report: apply its chosen point (or --point)
    #[arg(long, value_name = "FILE")]
    sweep: Option<PathBuf>,
    /// With --sweep: this point instead of the chosen one
    #[arg(long, requires = "sweep")]
    point: Option<u64>,
    /// The target device, MAJ:MIN (default: the scenario's devid)
    #[arg(long, value_name = "MAJ:MIN")]
    device: Option<String>,
    /// The cgroup v2 mount
    #[arg(long, default_value = "/sys/fs/cgroup")]
    root: PathBuf,
    /// Where sysfs is mounted (the device check)
    #[arg(long, default_value = "/sys")]
    sysfs: PathBuf,
    /// Create the scenario's cgroups that do not exist
    #[arg(long)]
    create: bool,
    /// Check and print the writes; write nothing
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Print the settings as hwdb, iocost.conf, systemd or goresctrl
    #[arg(long, value_name = "FORMAT", value_parser = ["hwdb", "iocost.conf", "systemd", "goresctrl"])]
    emit: Option<String>,
    /// --emit=hwdb: the device's udev ID_MODEL
    #[arg(long, value_name = "ID_MODEL")]
    model: Option<String>,
    /// A sweep's named solution to apply (isolation, isolated-bandwidth,
    /// bandwidth, naive); else the name --emit=hwdb/iocost.conf give the
    /// settings (default blkqos)
    #[arg(long)]
    solution: Option<String>,
    /// --emit=systemd/goresctrl: the device node the settings name
    #[arg(long = "dev-path", value_name = "/dev/X")]
    dev_path: Option<String>,
}

fn bad(err: anyhow::Error) -> Failure {
    Failure { code: 2, err }
}

/// `blkqos apply ARGS`.
pub fn run_command(a: &Args) -> Result<(), Failure> {
    let (chosen, mut notes) = choose(a).map_err(bad)?;
    let scenario_dev = chosen[0].1.device.devid;
    let dev = match &a.device {
        Some(d) => d
            .parse::<DevId>()
            .map_err(|_| bad(anyhow!("--device `{d}`: expected MAJ:MIN, e.g. 8:16")))?,
        None => scenario_dev,
    };
    let mut plans = Vec::new();
    for (name, exp) in &chosen {
        let p = plan::plan(&exp.writes, scenario_dev, dev, &a.root).map_err(bad)?;
        notes.extend(p.notes.iter().cloned());
        plans.push((name.clone(), p));
    }
    notes.dedup();
    let say = |lines: &[String]| {
        for l in lines {
            log::info!("blkqos: apply: {l}");
        }
    };
    if let Some(format) = &a.emit {
        say(&notes);
        let text = emitted(a, format, &plans).map_err(bad)?;
        return blkqos_experiment::stdout::write_out(&text).map_err(|e| Failure {
            code: 1,
            err: e.into(),
        });
    }
    let p = &plans[0].1;
    let mut log = Vec::new();
    let checked = live::check(p, &a.sysfs, a.create, &mut log);
    say(&notes);
    say(&log);
    log.clear();
    let checked = checked.map_err(bad)?;
    if a.dry_run {
        let mut out = String::new();
        for dir in &checked.create {
            out += &format!("mkdir {}\n", dir.display());
        }
        for s in &p.steps {
            out += &format!("echo \"{}\" > {}\n", s.value, s.path.display());
        }
        return blkqos_experiment::stdout::write_out(&out).map_err(|e| Failure {
            code: 1,
            err: e.into(),
        });
    }
    let res = live::apply(p, &checked, &mut log);
    say(&log);
    res.map_err(|err| Failure { code: 1, err })
}

/// The plans as `--emit=FORMAT` prints them (all of them for hwdb, the
/// first for the others).
fn emitted(a: &Args, format: &str, plans: &[(String, plan::Plan)]) -> Result<String> {
    let dev_path = || {
        a.dev_path.clone().ok_or_else(|| {
            anyhow!("--emit={format} needs --dev-path=/dev/X (the device node the settings name)")
        })
    };
    let p = &plans[0].1;
    Ok(match format {
        "hwdb" => {
            let model = a.model.as_deref().ok_or_else(|| {
                anyhow!("--emit=hwdb needs --model=ID_MODEL (`udevadm info -q property -n /dev/X | grep ID_MODEL=`)")
            })?;
            let list: Vec<(String, &plan::Plan)> =
                plans.iter().map(|(n, p)| (n.clone(), p)).collect();
            emit::hwdb(&list, model)?
        }
        "iocost.conf" => emit::iocost_conf(&plans[0].0),
        "systemd" => {
            let mut out = String::new();
            for (path, text) in emit::systemd_units(p, &dev_path()?)? {
                out += &format!("# {path}\n{text}\n");
            }
            out
        }
        _ => emit::goresctrl(p, &dev_path()?)?,
    })
}

type Chosen = Vec<(String, blkqos_experiment::experiment::Experiment)>;

/// What to apply, named (the hwdb's solution name): the scenario's
/// settings; a sweep's chosen point, `--point`, or named solution
/// (`--solution`); or, for `--emit=hwdb` of a sweep that found iocost-tune's
/// named solutions, each of them. And notes on what is not applied.
fn choose(a: &Args) -> Result<(Chosen, Vec<String>)> {
    let own_name = a.solution.clone().unwrap_or_else(|| "blkqos".into());
    let Some(sweep_path) = &a.sweep else {
        let path = a
            .scenario
            .as_ref()
            .ok_or_else(|| anyhow!("give a SCENARIO.toml or --sweep=FILE"))?;
        return Ok((
            vec![(
                own_name,
                blkqos_experiment::scenario_build::experiment(path)?,
            )],
            Vec::new(),
        ));
    };
    let sweep = blkqos_experiment::report::Sweep::read(sweep_path)?;
    let scenario = match &a.scenario {
        Some(s) => s.clone(),
        None => PathBuf::from(&sweep.scenario),
    };
    let base = crate::sweep::Base::load(&scenario, Some(sweep.seed), None)
        .with_context(|| format!("the sweep's scenario {}", scenario.display()))?;
    let at = |n: u64| {
        sweep
            .points
            .iter()
            .find(|p| p.point == n)
            .ok_or_else(|| anyhow!("{}: no point {n}", sweep_path.display()))
    };
    let named = &sweep.named_solutions;
    let mut notes = Vec::new();
    let mut out = Vec::new();
    if let Some(n) = a.point {
        out.push((
            own_name,
            point_experiment(&base, &sweep, at(n)?, None, &mut notes)?,
        ));
    } else if let (Some(want), false) = (&a.solution, named.is_empty()) {
        let n = named.iter().find(|n| &n.name == want).ok_or_else(|| {
            let names: Vec<&str> = named.iter().map(|n| n.name.as_str()).collect();
            anyhow!(
                "{}: no named solution `{want}` (it has {})",
                sweep_path.display(),
                names.join(", ")
            )
        })?;
        let exp = point_experiment(&base, &sweep, at(n.point)?, Some(&n.qos), &mut notes)?;
        out.push((n.name.clone(), exp));
    } else if a.emit.as_deref() == Some("hwdb") && !named.is_empty() {
        for n in named {
            let exp = point_experiment(&base, &sweep, at(n.point)?, Some(&n.qos), &mut notes)?;
            out.push((n.name.clone(), exp));
        }
    } else {
        let p = sweep.solution.as_ref().ok_or_else(|| {
            anyhow!(
                "{}: the sweep chose no point (none met its objective); give --point=N",
                sweep_path.display()
            )
        })?;
        out.push((
            own_name,
            point_experiment(&base, &sweep, p, None, &mut notes)?,
        ));
    }
    Ok((out, notes))
}

/// The experiment of sweep point `point` (its knob values merged in as the
/// sweep ran it), with a named solution's io.cost.qos fields on top.
fn point_experiment(
    base: &crate::sweep::Base,
    sweep: &blkqos_experiment::report::Sweep,
    point: &blkqos_experiment::report::sweep::Point,
    qos: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<blkqos_experiment::experiment::Experiment> {
    let mut args = Vec::new();
    for k in &sweep.knobs {
        let v = point
            .knobs
            .get(&k.name)
            .ok_or_else(|| anyhow!("point {} has no value of `{}`", point.point, k.name))?;
        args.push(format!("{}={v}", k.name));
    }
    for kv in qos.unwrap_or("").split_whitespace() {
        args.push(format!("io.cost.qos:{kv}"));
    }
    let mut knobs = Vec::new();
    let mut values = Vec::new();
    for arg in &args {
        let knob = crate::sweep::parse_vary(arg).map_err(anyhow::Error::msg)?;
        if !knob.writes_a_file() {
            notes.push(format!(
                "{arg} is a setting of the simulated device or controllers: not applied"
            ));
        }
        values.push(arg.split_once('=').map_or("", |x| x.1).to_string());
        knobs.push(knob);
    }
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let (exp, _) = base.point(&knobs, &values)?;
    notes.push(format!("point {} ({})", point.point, args.join(" ")));
    Ok(exp)
}
