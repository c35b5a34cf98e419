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

mod live;
mod plan;
mod readback;

use crate::failure::Failure;
use anyhow::{anyhow, Context, Result};
use blkqos_core::DevId;
use std::path::PathBuf;

pub const HELP: &str = "\
Write a scenario's settings, or a sweep's chosen point, to a live cgroup v2
hierarchy: io.cost.model, io.cost.qos, io.weight and io.max as the
simulator ran them, on the real device.

  blkqos apply SCENARIO.toml --device=MAJ:MIN [--dry-run]
  blkqos apply --sweep=sweep.json --device=MAJ:MIN [--point=N] [--create]

Everything is checked before anything is written: the device exists
(/sys/dev/block/MAJ:MIN), each cgroup exists (--create makes missing ones),
io is enabled in its parent's cgroup.subtree_control, each file is there.
Then each file is written in the scenario's order and read back; the first
write the kernel refuses, or that reads back otherwise, stops the apply and
what was written is put back (last first), the cgroups made removed.

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
}

fn bad(err: anyhow::Error) -> Failure {
    Failure { code: 2, err }
}

/// `blkqos apply ARGS`.
pub fn run_command(a: &Args) -> Result<(), Failure> {
    let (exp, mut notes) = experiment(a).map_err(bad)?;
    let scenario_dev = exp.device.devid;
    let dev = match &a.device {
        Some(d) => d
            .parse::<DevId>()
            .map_err(|_| bad(anyhow!("--device `{d}`: expected MAJ:MIN, e.g. 8:16")))?,
        None => scenario_dev,
    };
    let p = plan::plan(&exp.writes, scenario_dev, dev, &a.root).map_err(bad)?;
    notes.extend(p.notes.iter().cloned());
    let mut log = Vec::new();
    let checked = live::check(&p, &a.sysfs, a.create, &mut log);
    let say = |lines: &[String]| {
        for l in lines {
            eprintln!("blkqos: apply: {l}");
        }
    };
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
        return crate::stdout::write_out(&out).map_err(|e| Failure {
            code: 1,
            err: e.into(),
        });
    }
    let res = live::apply(&p, &checked, &mut log);
    say(&log);
    res.map_err(|err| Failure { code: 1, err })
}

/// The experiment whose writes to apply, and notes on what a sweep point
/// sets that is not a cgroup file.
fn experiment(a: &Args) -> Result<(crate::experiment::Experiment, Vec<String>)> {
    let Some(sweep_path) = &a.sweep else {
        let path = a
            .scenario
            .as_ref()
            .ok_or_else(|| anyhow!("give a SCENARIO.toml or --sweep=FILE"))?;
        return Ok((crate::scenario_build::experiment(path)?, Vec::new()));
    };
    let sweep = crate::report::Sweep::read(sweep_path)?;
    let scenario = match &a.scenario {
        Some(s) => s.clone(),
        None => PathBuf::from(&sweep.scenario),
    };
    let point = match a.point {
        Some(n) => sweep
            .points
            .iter()
            .find(|p| p.point == n)
            .ok_or_else(|| anyhow!("{}: no point {n}", sweep_path.display()))?,
        None => sweep.solution.as_ref().ok_or_else(|| {
            anyhow!(
                "{}: the sweep chose no point (none met its objective); give --point=N",
                sweep_path.display()
            )
        })?,
    };
    let base = crate::sweep::Base::load(&scenario, Some(sweep.seed), None)
        .with_context(|| format!("the sweep's scenario {}", scenario.display()))?;
    let mut knobs = Vec::new();
    let mut values: Vec<&str> = Vec::new();
    let mut notes = Vec::new();
    for k in &sweep.knobs {
        let v = point.knobs.get(&k.name).ok_or_else(|| {
            anyhow!(
                "{}: point {} has no value of `{}`",
                sweep_path.display(),
                point.point,
                k.name
            )
        })?;
        let knob = crate::sweep::parse_vary(&format!("{}={v}", k.name))
            .map_err(|m| anyhow!("{}: {m}", sweep_path.display()))?;
        if !knob.writes_a_file() {
            notes.push(format!(
                "{}={v} is a setting of the simulated device or controllers: not applied",
                k.name
            ));
        }
        knobs.push(knob);
        values.push(v.as_str());
    }
    let (exp, _) = base.point(&knobs, &values)?;
    notes.insert(
        0,
        format!(
            "point {} of {} ({})",
            point.point,
            sweep_path.display(),
            point_text(&point.knobs)
        ),
    );
    Ok((exp, notes))
}

fn point_text(knobs: &std::collections::BTreeMap<String, String>) -> String {
    knobs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
