//! `blkqos lab`: blkqos against real kernels.
//!
//! `lab/matrix.toml` lists jobs; each is a scenario in `lab/matrix/` that
//! `lab/guest_run.py` replayed on a real kernel (null_blk, cgroup v2, fio)
//! and whose results `lab/record.sh` stored as `lab/fixtures/KVER/runN/JOB/`.
//! `blkqos lab compare` runs the same scenarios in the simulator under the
//! matching kernel profile (`--kernel`), over several seeds, and checks
//! every metric against the real runs' spread (docs/fidelity.md):
//!
//! ```text
//! blkqos lab compare [--lab DIR] [--kernel K]... [--job SUBSTR]... [--seeds N]
//!                    [--expect FILE] [--markdown] [--real-engine]
//! ```
//!
//! With `--expect`, the metrics that miss must be exactly those the file
//! lists (each with its reason); anything else fails the command.

pub mod metrics;

use crate::experiment::Experiment;
use crate::kernel::KernelProfile;
use anyhow::{bail, Context, Result};
use metrics::{Kind, RunMetrics};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A metric's values over runs (real) or seeds (blkqos).
#[derive(Clone, Debug, Default)]
pub struct Spread {
    pub kind: Option<Kind>,
    pub values: Vec<f64>,
}

impl Spread {
    pub fn min(&self) -> f64 {
        self.values.iter().copied().fold(f64::INFINITY, f64::min)
    }
    pub fn max(&self) -> f64 {
        self.values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }
}

pub type Spreads = BTreeMap<String, Spread>;

fn add_run(spreads: &mut Spreads, run: RunMetrics) {
    for (k, (kind, v)) in run {
        let s = spreads.entry(k).or_default();
        s.kind = Some(kind);
        s.values.push(v);
    }
}

/// A job of the matrix.
#[derive(Clone, Debug)]
pub struct LabJob {
    pub name: String,
    pub scenario: PathBuf,
    /// The cgroups the scenario's fio processes run in.
    pub groups: Vec<String>,
}

/// The jobs of `lab/matrix.toml`.
pub fn load_matrix(lab: &Path) -> Result<Vec<LabJob>> {
    let path = lab.join("matrix.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?;
    let mut jobs = Vec::new();
    for j in v.get("job").and_then(|j| j.as_array()).into_iter().flatten() {
        let Some(name) = j.get("name").and_then(|n| n.as_str()) else {
            bail!("{}: a [[job]] without name", path.display());
        };
        let scenario = lab.join("matrix").join(format!("{name}.toml"));
        let st = std::fs::read_to_string(&scenario)
            .with_context(|| format!("cannot read {}", scenario.display()))?;
        let sv: toml::Value = toml::from_str(&st)
            .with_context(|| format!("{}: not valid TOML", scenario.display()))?;
        let mut groups: Vec<String> = Vec::new();
        for f in sv.get("fio").and_then(|f| f.as_array()).into_iter().flatten() {
            let g = f.get("cgroup").and_then(|c| c.as_str()).unwrap_or("/");
            if !groups.iter().any(|x| x == g) {
                groups.push(g.to_string());
            }
        }
        jobs.push(LabJob {
            name: name.to_string(),
            scenario,
            groups,
        });
    }
    Ok(jobs)
}

/// The kernels recorded under `lab/fixtures` (directory names, sorted by
/// version).
pub fn recorded_kernels(lab: &Path) -> Result<Vec<String>> {
    let dir = lab.join("fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let e = e?;
        if e.file_type()?.is_dir() {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort_by_key(|k| {
        k.split(|c: char| !c.is_ascii_digit())
            .take(2)
            .map(|n| n.parse::<u32>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    Ok(out)
}

fn metrics_of_dir(dir: &Path, job: &LabJob) -> Result<Option<RunMetrics>> {
    let mut m = RunMetrics::new();
    let mut any = false;
    for i in 0.. {
        let p = dir.join(format!("fio{i}.json"));
        if !p.exists() {
            break;
        }
        let text = std::fs::read_to_string(&p)?;
        let v: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            // a fio that failed leaves a partial report: the run is skipped
            Err(_) => return Ok(None),
        };
        metrics::from_fio_json(&v, i == 0, &mut m);
        any = true;
    }
    if !any {
        return Ok(None);
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("io.stat")) {
        metrics::shares_from_io_stat(&text, &job.groups, &mut m);
    }
    Ok(Some(m))
}

/// The real kernel's spread for one job: every `runN/JOB` (or
/// `runN/JOB/real` for blkqos's real engine in the lab).
pub fn real_spreads(lab: &Path, kernel: &str, job: &LabJob, engine: bool) -> Result<(Spreads, usize)> {
    let kdir = lab.join("fixtures").join(kernel);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&kdir)
        .with_context(|| format!("cannot read {}", kdir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run")))
        .collect();
    runs.sort();
    let mut spreads = Spreads::new();
    let mut n = 0;
    for r in runs {
        let mut d = r.join(&job.name);
        if engine {
            d = d.join("real");
        }
        if let Some(m) = metrics_of_dir(&d, job)? {
            add_run(&mut spreads, m);
            n += 1;
        }
    }
    Ok((spreads, n))
}

/// blkqos's simulated spread for one job under a kernel profile.
pub fn sim_spreads(job: &LabJob, profile: &KernelProfile, seeds: u64) -> Result<Spreads> {
    let mut spreads = Spreads::new();
    for seed in 1..=seeds {
        let mut exp = Experiment::from_scenario(&job.scenario)?;
        exp.seed = seed;
        profile.apply(&mut exp.controllers, &mut exp.accounting);
        for inv in &mut exp.invocations {
            inv.formats = vec![blkqos_fio::parse::OutputFormat::Json];
            inv.output = None;
        }
        let ran = exp
            .run_sim(None)
            .with_context(|| format!("{}: seed {seed}", job.name))?;
        let mut m = RunMetrics::new();
        for (i, text) in crate::output::render_reports(&exp, &ran, 0)
            .iter()
            .enumerate()
        {
            let v: serde_json::Value = serde_json::from_str(text)
                .with_context(|| format!("{}: blkqos's own fio JSON", job.name))?;
            metrics::from_fio_json(&v, i == 0, &mut m);
        }
        metrics::shares_from_io_stat(&crate::output::format_io_stat(&ran), &job.groups, &mut m);
        add_run(&mut spreads, m);
    }
    Ok(spreads)
}

/// The accepted range around a real spread, by kind.
pub fn accepted(kind: Kind, real: &Spread, jiffy_ns: f64) -> (f64, f64) {
    let (lo, hi) = (real.min(), real.max());
    match kind {
        Kind::Rate => (lo * 0.97, hi * 1.03),
        Kind::Latency => (
            (lo - (0.10 * lo).max(jiffy_ns)).max(0.0),
            hi + (0.10 * hi).max(jiffy_ns),
        ),
        Kind::Share => (lo - 5.0, hi + 5.0),
        Kind::Util => (lo - 2.0, hi + 2.0),
    }
}

/// One compared metric.
#[derive(Clone, Debug)]
pub struct Row {
    pub kernel: String,
    pub job: String,
    pub metric: String,
    pub kind: Kind,
    pub real: (f64, f64),
    pub sim: (f64, f64),
    pub ok: bool,
}

/// Compare one job on one kernel.
pub fn compare_job(
    lab: &Path,
    kernel: &str,
    job: &LabJob,
    seeds: u64,
    engine: bool,
) -> Result<Vec<Row>> {
    let profile = KernelProfile::for_release(kernel)
        .with_context(|| format!("lab/fixtures/{kernel}: no blkqos profile for this kernel"))?;
    let (real, n) = real_spreads(lab, kernel, job, engine)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let sim = if engine {
        // the real engine's lab runs against the same kernel's (knobs in
        // the kernel) runs: engine = "sim" side
        let (k, _) = real_spreads(lab, kernel, job, false)?;
        return Ok(rows(kernel, job, &k, &real, profile.jiffy_ns()));
    } else {
        sim_spreads(job, &profile, seeds)?
    };
    Ok(rows(kernel, job, &real, &sim, profile.jiffy_ns()))
}

fn rows(kernel: &str, job: &LabJob, real: &Spreads, sim: &Spreads, jiffy_ns: f64) -> Vec<Row> {
    let mut out = Vec::new();
    for (name, r) in real {
        let kind = r.kind.expect("spreads carry their kind");
        let (lo, hi) = accepted(kind, r, jiffy_ns);
        let (smin, smax, ok) = match sim.get(name) {
            Some(s) if !s.values.is_empty() => {
                let ok = s.values.iter().all(|&v| v >= lo && v <= hi);
                (s.min(), s.max(), ok)
            }
            _ => (f64::NAN, f64::NAN, false),
        };
        out.push(Row {
            kernel: kernel.to_string(),
            job: job.name.clone(),
            metric: name.clone(),
            kind,
            real: (r.min(), r.max()),
            sim: (smin, smax),
            ok,
        });
    }
    out
}

/// A value as the tables print it (latencies in ms).
pub fn fmt_value(kind: Kind, v: f64) -> String {
    if v.is_nan() {
        return "-".into();
    }
    match kind {
        Kind::Latency => {
            let ms = v / 1e6;
            if ms < 1.0 {
                format!("{ms:.3}")
            } else {
                format!("{ms:.1}")
            }
        }
        Kind::Rate if v >= 100_000.0 => format!("{:.0}k", v / 1000.0),
        Kind::Rate => format!("{v:.1}"),
        Kind::Share | Kind::Util => format!("{v:.1}"),
    }
}

fn fmt_range(kind: Kind, r: (f64, f64)) -> String {
    if r.0 == r.1 || r.1.is_nan() {
        fmt_value(kind, r.0)
    } else {
        format!("{}–{}", fmt_value(kind, r.0), fmt_value(kind, r.1))
    }
}

/// The known misses: `[[miss]] kernel job metric why`.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub misses: BTreeMap<(String, String, String), String>,
}

impl Expected {
    pub fn load(path: &Path) -> Result<Expected> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let v: toml::Value =
            toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?;
        let mut misses = BTreeMap::new();
        for (i, m) in v.get("miss").and_then(|m| m.as_array()).into_iter().flatten().enumerate() {
            let get = |k: &str| -> Result<String> {
                m.get(k)
                    .and_then(|x| x.as_str())
                    .map(str::to_string)
                    .with_context(|| format!("{}: [[miss]] #{} has no `{k}`", path.display(), i + 1))
            };
            misses.insert((get("kernel")?, get("job")?, get("metric")?), get("why")?);
        }
        Ok(Expected { misses })
    }
    fn covers(&self, row: &Row) -> Option<&String> {
        let short = KernelProfile::for_release(&row.kernel).map(|p| p.name.to_string());
        [row.kernel.clone(), short.unwrap_or_default(), "*".into()]
            .iter()
            .find_map(|k| {
                self.misses
                    .get(&(k.clone(), row.job.clone(), row.metric.clone()))
            })
    }
}

struct Args {
    lab: PathBuf,
    kernels: Vec<String>,
    jobs: Vec<String>,
    seeds: u64,
    expect: Option<PathBuf>,
    markdown: bool,
    engine: bool,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut a = Args {
        lab: PathBuf::from("lab"),
        kernels: Vec::new(),
        jobs: Vec::new(),
        seeds: 5,
        expect: None,
        markdown: false,
        engine: false,
    };
    let mut it = args.iter();
    if it.next().map(String::as_str) != Some("compare") {
        bail!("usage: blkqos lab compare [--lab DIR] [--kernel K]... [--job SUBSTR]... [--seeds N] [--expect FILE] [--markdown] [--real-engine]");
    }
    for arg in it {
        let (k, v) = arg.split_once('=').unwrap_or((arg.as_str(), ""));
        match k {
            "--lab" => a.lab = PathBuf::from(v),
            "--kernel" => a.kernels.push(v.to_string()),
            "--job" => a.jobs.push(v.to_string()),
            "--seeds" => {
                a.seeds = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .with_context(|| format!("--seeds={v}: expected a positive integer"))?
            }
            "--expect" => a.expect = Some(PathBuf::from(v)),
            "--markdown" => a.markdown = true,
            "--real-engine" => a.engine = true,
            _ => bail!("blkqos lab compare: unknown option `{arg}`"),
        }
    }
    Ok(a)
}

/// `blkqos lab compare ...`: prints the table; with `--expect`, fails on
/// a miss the file does not list or a listed miss that now matches.
pub fn run(args: &[String]) -> Result<bool> {
    let a = parse_args(args)?;
    let matrix = load_matrix(&a.lab)?;
    let mut kernels = recorded_kernels(&a.lab)?;
    if !a.kernels.is_empty() {
        kernels.retain(|k| {
            a.kernels.iter().any(|want| {
                k == want || KernelProfile::for_release(k).is_some_and(|p| p.name == want)
            })
        });
        if kernels.is_empty() {
            bail!("no recorded kernel matches {:?} under {}/fixtures", a.kernels, a.lab.display());
        }
    }
    let expected = match &a.expect {
        Some(p) => Some(Expected::load(p)?),
        None => None,
    };
    let mut all = Vec::new();
    for k in &kernels {
        for job in &matrix {
            if !a.jobs.is_empty() && !a.jobs.iter().any(|s| job.name.contains(s.as_str())) {
                continue;
            }
            all.extend(compare_job(&a.lab, k, job, a.seeds, a.engine)?);
        }
    }
    print!("{}", render(&all, a.markdown, a.engine));
    let mut ok = true;
    if let Some(exp) = &expected {
        let mut seen = BTreeSet::new();
        for r in &all {
            match (r.ok, exp.covers(r)) {
                (false, None) => {
                    ok = false;
                    eprintln!(
                        "lab: {} {} {}: blkqos {} outside the real {} (not a listed miss)",
                        r.kernel,
                        r.job,
                        r.metric,
                        fmt_range(r.kind, r.sim),
                        fmt_range(r.kind, r.real)
                    );
                }
                (true, Some(_)) => {
                    ok = false;
                    eprintln!(
                        "lab: {} {} {}: now matches; remove it from the expected misses",
                        r.kernel, r.job, r.metric
                    );
                }
                _ => {}
            }
            if !r.ok {
                seen.insert((r.job.clone(), r.metric.clone()));
            }
        }
        let _ = seen;
    }
    Ok(ok)
}

/// The comparison as a text or markdown table.
pub fn render(rows: &[Row], markdown: bool, engine: bool) -> String {
    let (a, b) = if engine {
        ("kernel", "blkqos real engine")
    } else {
        ("real", "blkqos sim")
    };
    let mut out = String::new();
    if markdown {
        out += &format!("| kernel | job | metric | {a} | {b} | |\n|---|---|---|---|---|---|\n");
    } else {
        out += &format!(
            "{:<22} {:<24} {:<22} {:>17} {:>17}\n",
            "kernel", "job", "metric", a, b
        );
    }
    for r in rows {
        let verdict = if r.ok { "ok" } else { "MISS" };
        let (real, sim) = (fmt_range(r.kind, r.real), fmt_range(r.kind, r.sim));
        if markdown {
            out += &format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.kernel, r.job, r.metric, real, sim, verdict
            );
        } else {
            out += &format!(
                "{:<22} {:<24} {:<22} {:>17} {:>17} {}\n",
                r.kernel, r.job, r.metric, real, sim, verdict
            );
        }
    }
    out
}
