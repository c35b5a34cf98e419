//! `blkqos sweep`: run a scenario over a grid of knob settings on the
//! simulator and pick the best setting for an objective, in the spirit of
//! resctl-bench's iocost-tune (which sweeps io.cost.qos on a real machine
//! and proposes QoS lines): here any io.cost.qos/io.cost.model field,
//! io.weight, io.max field, device parameter or controller option can be
//! varied, every point is a full simulated run of the scenario, and the
//! points run in parallel on all cores or on many machines (`--shard`,
//! `--merge`). docs/SWEEP.md is the user's guide.

mod apply;
mod args;
mod named;
mod objective;
mod report;
mod run;
mod shard;
mod spec;

pub use apply::Base;
pub use spec::parse_vary;

use anyhow::{bail, Context, Result};
use args::SweepArgs;
pub use args::SweepCli;
use blkqos_experiment::failure::Failure;
use blkqos_experiment::metrics;
use run::{KnobDef, PointResult, SweepDef};
use spec::Knob;
use std::path::Path;

pub const HELP: &str = "\
Run a scenario over a grid of knob settings on the simulator, all cores in
parallel, and find the best setting for an objective.

  blkqos sweep SCENARIO.toml --vary TARGET=VALUES... [--objective TEXT]
               [--show METRIC,...] [--json] [--jobs=N] [--out=FILE]
               [--seed=N] [--kernel=VER] [--shard=I/N] [--dry-run]
  blkqos sweep --merge SHARD.json... [--json] [--out=FILE]

--vary TARGET=VALUES (repeatable; the points are every combination, the
last --vary changing fastest). TARGET:
  io.cost.qos:F        F = enable, ctrl, rpct, rlat, wpct, wlat, min, max
  io.cost.model:F      F = ctrl, rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops
  /CG/io.max:F         F = rbps, wbps, riops, wiops (a value may be max)
  /CG/io.weight        the group's weight on the scenario's device
  /CG/blkio.throttle.read_bps_device (and the other v1 files): the limit
  device:K             a [device] parameter (see `blkqos devices`)
  controllers:K        a [controllers] option (iocost, throttle, hz, ...)
VALUES: a list (25,50,75) or a range: LO..HI:N or LO..HI:lin:N (N values,
ends included), LO..HI:log:N (log-spaced), LO..HI:step:S. Values keep the
precision of the bounds (0.5..2.0:4 = 0.5,1.0,1.5,2.0).
A knob changes the scenario's line at the start of the run: the last
[[write]] of that file at time 0 (a field merged into it), or a new write
at time 0; later writes (at = ...) stay.

--objective 'max|min METRIC [subject to METRIC<=N [and METRIC>=N]...]'
  e.g. 'max total_bw_mbps subject to /cgB.clat_p99_ms<=5'
METRIC: total_bw_mbps, total_iops, util_pct, vrate_pct (iocost's vrate
when the run ends), or /CG.NAME with NAME one of bw_mbps, iops,
clat_{mean,p50,p90,p99,p999,max}_ms (fio's clat), lat_..._ms (fio's lat:
with the submit call, where iocost makes the submitter wait). MB/s are
10^6 bytes/s; a group includes its descendants.

Output: a table (one row per point: knob values, the objective's metrics
and --show's, feasible yes/no), the solution (the best point meeting every
limit, the lowest point number on a tie, and the cgroupfs lines to write
for it) and the frontier (the best objective at each level of the first
limit). --json: all of it and every metric of every point as JSON.
Every point runs with the scenario's seed (--seed=N changes it): results
do not depend on --jobs (default: all cores) or on sharding.

--shard=I/N runs points I-1, I-1+N, ... and writes a shard file (always
JSON);
--merge checks the N shard files belong to one sweep and prints exactly
what the sweep run on one machine prints. --dry-run checks everything
and prints the points without running them. docs/SWEEP.md has a
Kubernetes Indexed Job and a Slurm array recipe.

Exit status: 0 ok (also when no point is feasible: the report says so),
1 a point's run failed (an IO error; the report lists it), 2 bad input.";

/// Most points one sweep may have.
pub const MAX_POINTS: u64 = 1_000_000;

fn input(err: anyhow::Error) -> Failure {
    Failure { code: 2, err }
}

/// `blkqos sweep ARGS`.
pub fn run_command(cli: SweepCli, progress: &dyn crate::progress::Progress) -> Result<(), Failure> {
    let a = cli.check().map_err(input)?;
    if let Some(files) = &a.merge {
        let (def, results) = shard::merge(files).map_err(input)?;
        let text = render(&def, &results, a.json);
        emit(a.out.as_deref(), &text)?;
        return status(&results);
    }
    let scenario = a.scenario.as_deref().expect("parse checked");
    let (base, knobs, def) = prepare(&a, scenario).map_err(input)?;
    if a.dry_run {
        return emit(a.out.as_deref(), &dry_run(&def, a.shard));
    }
    if let Some(p) = &a.out {
        // refused before the points run, not after
        check_out(p).map_err(input)?;
    }
    let indices: Vec<u64> = match a.shard {
        Some((i, n)) => shard::shard_indices(def.points, i, n),
        None => (0..def.points).collect(),
    };
    let threads = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let t0 = std::time::Instant::now();
    let results = run::run_points(&base, &knobs, &def, &indices, threads, progress);
    let wall_s = t0.elapsed().as_secs_f64();
    log::info!(
        "blkqos: sweep: {} points in {wall_s:.1} s on {threads} threads ({:.1} points/s)",
        results.len(),
        results.len() as f64 / wall_s.max(1e-9)
    );
    let text = match a.shard {
        Some((i, n)) => shard_text(def, i, n, &results),
        None => render(&def, &results, a.json),
    };
    emit(a.out.as_deref(), &text)?;
    status(&results)
}

/// Load the scenario, parse and check the knobs and the objective, and
/// check every point's settings before any runs.
fn prepare(a: &SweepArgs, scenario: &Path) -> Result<(Base, Vec<Knob>, SweepDef)> {
    let base = Base::load(scenario, a.seed, a.kernel.as_deref())?;
    let mut knobs: Vec<Knob> = Vec::new();
    for v in &a.vary {
        let k = spec::parse_vary(v).map_err(anyhow::Error::msg)?;
        if knobs.iter().any(|o| o.name == k.name) {
            bail!("--vary `{v}`: {} is already varied", k.name);
        }
        knobs.push(k);
    }
    let tree = base.exp.cgroup_tree()?;
    let groups = metrics::group_paths(&tree);
    check_knob_groups(&knobs, &groups)?;
    let objective = a
        .objective
        .as_deref()
        .map(|o| objective::parse_objective(o, &groups))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let columns = columns(objective.as_ref(), &a.show, &groups)?;
    let points = knobs.iter().try_fold(1u64, |n, k| {
        n.checked_mul(k.values.len() as u64)
            .filter(|&n| n <= MAX_POINTS)
    });
    let Some(points) = points else {
        bail!("the --vary values make more than {MAX_POINTS} points: vary fewer values");
    };
    let mut def = SweepDef {
        id: String::new(),
        blkqos: env!("CARGO_PKG_VERSION").into(),
        scenario: scenario.display().to_string(),
        seed: base.exp.seed,
        kernel: a.kernel.clone(),
        knobs: knobs
            .iter()
            .map(|k| KnobDef {
                name: k.name.clone(),
                spec: k.spec.clone(),
                values: k.values.clone(),
            })
            .collect(),
        objective,
        columns,
        metrics: metrics::metric_names(&groups),
        groups,
        points,
    };
    def.id = shard::sweep_id(&def, &base.inputs);
    check_points(&base, &knobs, &def)?;
    iocost_note(&base, &knobs);
    Ok((base, knobs, def))
}

/// A knob's cgroup must be one of the scenario's (a new one would hold no
/// job, and would change the metrics a point reports).
fn check_knob_groups(knobs: &[Knob], groups: &[String]) -> Result<()> {
    for k in knobs {
        if let spec::Target::Field { cgroup, .. } | spec::Target::Line { cgroup, .. } = &k.target {
            if !groups.contains(cgroup) {
                bail!(
                    "--vary `{}={}`: the scenario has no cgroup `{cgroup}` (it has {})",
                    k.name,
                    k.spec,
                    groups.join(", ")
                );
            }
        }
    }
    Ok(())
}

/// The table's metric columns: the objective's, then --show's; without
/// either, the total bandwidth, %util and each group's bandwidth and p99.
fn columns(
    objective: Option<&objective::Objective>,
    show: &[String],
    groups: &[String],
) -> Result<Vec<String>> {
    let mut cols: Vec<String> = Vec::new();
    if let Some(o) = objective {
        cols.push(o.metric.clone());
        cols.extend(o.constraints.iter().map(|c| c.metric.clone()));
    }
    for m in show {
        objective::check_metric(m, groups).map_err(|e| anyhow::anyhow!("--show: {e}"))?;
        cols.push(m.clone());
    }
    if cols.is_empty() {
        cols = vec!["total_bw_mbps".into(), "util_pct".into()];
        for g in groups.iter().filter(|g| *g != "/") {
            cols.push(format!("{g}.bw_mbps"));
            cols.push(format!("{g}.clat_p99_ms"));
        }
    }
    let mut seen = Vec::new();
    cols.retain(|c| {
        let new = !seen.contains(c);
        seen.push(c.clone());
        new
    });
    Ok(cols)
}

/// Every value alone, then every point, as a run would set it up (knob
/// lines parsed and replayed, the device built, jobs laid out): bad input
/// is refused before anything runs, naming the argument and value.
fn check_points(base: &Base, knobs: &[Knob], def: &SweepDef) -> Result<()> {
    for k in knobs {
        for v in &k.values {
            base.point(std::slice::from_ref(k), &[v])
                .and_then(|(exp, _)| Ok(exp.check()?))
                .map_err(|e| {
                    anyhow::anyhow!("--vary `{}={}`: value `{v}`: {e:#}", k.name, k.spec)
                })?;
        }
    }
    if knobs.len() > 1 {
        for i in 0..def.points {
            base.point(knobs, &def.values(i))
                .and_then(|(exp, _)| Ok(exp.check()?))
                .map_err(|e| anyhow::anyhow!("point {i} ({}): {e:#}", def.describe(i)))?;
        }
    }
    Ok(())
}

/// Varying iocost settings on a scenario that never turns iocost on
/// measures nothing: say so.
fn iocost_note(base: &Base, knobs: &[Knob]) {
    use blkqos_core::cgroupfs::KnobFile;
    let iocost_knob = knobs.iter().any(|k| match &k.target {
        spec::Target::Field { knob, .. } | spec::Target::Line { knob, .. } => matches!(
            knob,
            KnobFile::IoCostQos | KnobFile::IoCostModel | KnobFile::IoWeight
        ),
        _ => false,
    });
    let varies_enable = knobs.iter().any(|k| k.name.ends_with("io.cost.qos:enable"));
    let enabled = base.exp.writes.iter().any(|w| {
        w.knob == KnobFile::IoCostQos && w.value.split_whitespace().any(|t| t == "enable=1")
    });
    if iocost_knob && !enabled && !varies_enable {
        log::info!(
            "blkqos: note: no io.cost.qos write of the scenario has enable=1: iocost stays off and its knobs change nothing (add the write, or --vary io.cost.qos:enable=1)"
        );
    }
}

/// The report of a whole sweep.
fn render(def: &SweepDef, results: &[PointResult], json: bool) -> String {
    if json {
        report::json(def, results)
    } else {
        report::text(def, results)
    }
}

/// A shard's file.
fn shard_text(def: SweepDef, i: u64, n: u64, results: &[PointResult]) -> String {
    let file = shard::ShardFile {
        format: shard::FORMAT.into(),
        shard: [i, n],
        sweep: def,
        results: results.to_vec(),
    };
    let mut s = serde_json::to_string(&file).expect("a shard serialises");
    s.push('\n');
    s
}

/// `--dry-run`: the points, and a shard's, without running them.
fn dry_run(def: &SweepDef, shard: Option<(u64, u64)>) -> String {
    let mut out = format!("points {}\n", def.points);
    for k in &def.knobs {
        out += &format!("vary {} = {}\n", k.name, k.values.join(","));
    }
    if let Some(o) = &def.objective {
        out += &format!("objective {}\n", o.text());
    }
    out += &format!("sweep id {}\n", def.id);
    if let Some((i, n)) = shard {
        let idx = shard::shard_indices(def.points, i, n);
        out += &format!("shard {i}/{n}: {} points\n", idx.len());
    }
    out
}

/// `--out` can be written (a directory or a missing parent is bad input).
fn check_out(p: &Path) -> Result<()> {
    if p.is_dir() {
        bail!("--out={}: it is a directory", p.display());
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .with_context(|| format!("--out={}: cannot write", p.display()))?;
    Ok(())
}

/// Write the report to `--out` or stdout.
fn emit(out: Option<&Path>, text: &str) -> Result<(), Failure> {
    let res = match out {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => blkqos_experiment::stdout::write_out(text).map_err(anyhow::Error::from),
    };
    res.map_err(|err| Failure { code: 1, err })
}

/// Exit status 1 when a point's run failed.
fn status(results: &[PointResult]) -> Result<(), Failure> {
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    if failed == 0 {
        return Ok(());
    }
    Err(Failure {
        code: 1,
        err: anyhow::anyhow!(
            "sweep: {failed} of {} points failed (the report lists them)",
            results.len()
        ),
    })
}

/// The sweep `blkqos bench sweep` times (docs/BENCHMARKS.md): 10 rlat ×
/// 10 min × 10 cgB weights = 1,000 points of a 10 s two-cgroup scenario.
pub const BENCH_VARY: [&str; 3] = [
    "io.cost.qos:rlat=250..20000:log:10",
    "io.cost.qos:min=10..100:10",
    "/cgB/io.weight=100..1000:10",
];
pub const BENCH_OBJECTIVE: &str = "max total_bw_mbps subject to /cgB.clat_p99_ms<=5";
pub const BENCH_SCENARIO: &str = "examples/sweep/iocost-two-groups.toml";

/// `blkqos bench sweep [--scenario=FILE] [--jobs=N]`: wall time of the
/// benchmark sweep, points per second, threads and the machine's load.
pub fn bench(scenario: &str, jobs: Option<usize>) -> Result<()> {
    let a = SweepArgs {
        scenario: Some(scenario.into()),
        vary: BENCH_VARY.iter().map(|v| v.to_string()).collect(),
        objective: Some(BENCH_OBJECTIVE.to_string()),
        ..Default::default()
    };
    let threads =
        jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_string();
    let t0 = std::time::Instant::now();
    let (base, knobs, def) = prepare(&a, Path::new(scenario))?;
    let check_s = t0.elapsed().as_secs_f64();
    let indices: Vec<u64> = (0..def.points).collect();
    let results = run::run_points(
        &base,
        &knobs,
        &def,
        &indices,
        threads,
        &crate::progress::Silent,
    );
    let wall_s = t0.elapsed().as_secs_f64();
    let best = report::solution(&def, &results).map_or("none".into(), |r| r.index.to_string());
    blkqos_experiment::outln!(
        "sweep: {} points of {scenario} on {threads} threads ({} cores, load {load} at start): {wall_s:.2} s wall ({check_s:.3} s checking the points), {:.1} points/s; solution: point {best}",
        results.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        results.len() as f64 / wall_s
    )?;
    Ok(())
}
