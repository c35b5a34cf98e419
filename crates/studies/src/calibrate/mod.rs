//! `blkqos calibrate TARGET`: measure a file or block device on the real
//! engine and print what an SRE needs to model it: the `io.cost.model` line
//! the kernel's `tools/cgroup/iocost_coef_gen.py` would print, and a
//! simulated `ssd` device (plus the host's submit cost) fitted to it, with
//! 95% confidence intervals over repeated rounds and a check of the fit
//! (every measurement job replayed on the fitted device).
//!
//! Modules: [`plan`] (the jobs), [`measure`] (one job on the engine),
//! [`fit`] (one round into model parameters), [`stats`] (rounds into
//! estimates), [`report`] (text and JSON).

pub mod candidate;
pub mod fit;
mod from;
pub mod idle;
pub mod measure;
pub mod plan;
pub mod raw;
pub mod report;
pub mod stats;

use crate::progress::Progress;
use anyhow::anyhow;
use blkqos_engine::StopOnSignal;
use blkqos_experiment::failure::Failure;
use measure::Target;
use std::path::PathBuf;

pub const HELP: &str = "\
Measure a file or block device on the real engine (io_uring, direct=1) and
fit models to it: the io.cost.model line of the kernel's
tools/cgroup/iocost_coef_gen.py (rbps, rseqiops, rrandiops and, with
--write, wbps, wseqiops, wrandiops), and a simulated device with the
host's submit cost (blkqos run --device=... --submit-ns=...), each with a
95% confidence interval over the rounds. Five model families are fitted
(ssd with jitter or with a completion tail, null with or without its mbps
throttle, fes: service time by queue depth); the fit check replays every
measurement job on each and keeps the closest, printing measured against
predicted.

Each round runs, per direction: sequential IO with one large block in
flight (bps), sequential and random 4 KiB IOs at depth 64 (iops), random
4 KiB IOs at depths 2 to 32 (throughput against depth), random 32 KiB IOs
at depth 16 and 128 KiB IOs at depth 64 (what a byte costs), and random
IOs at depth 1 of 4, 32 and 128 KiB (latency against size). Reads only
unless --write: the engine's safety rules apply to writes (a block device
with a signature needs --allow-destructive, a file blkqos did not lay out
needs --overwrite). blkqos's real engine runs the jobs, or fio with
--runner=fio (as iocost_coef_gen.py does): the fitted host cost is the
runner's, so fit with the program whose runs the model is to predict.

  blkqos calibrate /dev/nvme0n1                 # read-only, 3 rounds x 2 s per job
  blkqos calibrate /dev/loop0 --write --rounds=5 --time=4
  blkqos calibrate /var/tmp/cal.dat --size=1g --write
  blkqos calibrate /dev/nvme0n1 --runner=fio    # fio runs the jobs
  blkqos calibrate /dev/nvme0n1 --cpu-idle=poll # idle CPUs poll while measuring
  blkqos calibrate --device=ssd,channels=4      # calibrate a simulated device";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// File or block device to measure
    #[arg(value_name = "TARGET", required_unless_present_any = ["device", "refit", "from"])]
    target: Option<PathBuf>,
    /// Measure a simulated device (a `blkqos devices` spec) instead
    #[arg(long, conflicts_with = "target")]
    device: Option<String>,
    /// Host submit cost of the simulated --device, ns
    #[arg(long = "submit-ns", default_value_t = 1000, requires = "device")]
    submit_ns: u64,
    /// Repetitions of the measurement set (confidence intervals need 2+)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Seconds per measurement job
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=3600))]
    time: u32,
    /// Measure writes too (destroys the target's data)
    #[arg(long)]
    write: bool,
    /// Size of the region to use (fio size=; needed for a new file)
    #[arg(long)]
    size: Option<String>,
    /// real (io_uring, falling back to threads), io_uring or threads
    #[arg(long, default_value = "io_uring")]
    backend: String,
    /// Who runs the jobs: blkqos (its real engine) or fio (the `fio` on
    /// PATH, as the kernel's iocost_coef_gen.py does): the fitted host
    /// cost is the runner's, so fit with the program whose runs the
    /// model is to predict
    #[arg(long, default_value = "blkqos", conflicts_with = "device")]
    runner: String,
    /// Write to a block device even if it carries a signature
    #[arg(long = "allow-destructive", alias = "allow_destructive")]
    allow_destructive: bool,
    /// Write to an existing file blkqos did not lay out
    #[arg(long)]
    overwrite: bool,
    /// normal or json
    #[arg(long = "output-format", default_value = "normal")]
    output_format: String,
    /// Skip replaying the jobs on the fitted device
    #[arg(long = "no-check")]
    no_check: bool,
    /// as-is, or poll: hold a 0 us CPU latency request
    /// (/dev/cpu_dma_latency, root) while measuring, so that idle CPUs
    /// poll and a sleeping thread wakes without an idle state's exit
    #[arg(long = "cpu-idle", default_value = "as-is", conflicts_with = "device")]
    cpu_idle: String,
    /// Take the io.cost.model of a resctl-bench result (JSON) or a systemd
    /// hwdb record (iocost-benchmarks), and print it with a simulated ssd
    /// of its rates (checked by a replay), measuring nothing
    #[arg(long, value_name = "FILE", conflicts_with_all = ["target", "device", "write", "size", "runner", "cpu_idle", "refit"])]
    from: Option<PathBuf>,
    /// --from a hwdb record: the solution whose model to take (default
    /// naive, the unscaled one, else the first listed)
    #[arg(long = "from-solution", value_name = "NAME", requires = "from")]
    from_solution: Option<String>,
    /// --from: the simulated ssd's channels (its depth-1 latency is
    /// channels / rrandiops: the model carries no latency)
    #[arg(long, default_value_t = 8, requires = "from", value_parser = clap::value_parser!(u32).range(1..=1024))]
    channels: u32,
    /// Fit again from a calibration's JSON output (its `measured` part),
    /// measuring nothing: e.g. measurements taken on another machine
    #[arg(long, value_name = "CALIBRATION.json", conflicts_with_all = ["target", "device", "write", "size", "runner", "cpu_idle"])]
    refit: Option<PathBuf>,
}

/// Seconds each measurement job runs on the fitted device in the check.
const CHECK_SECS: u32 = 1;

fn bad(err: anyhow::Error) -> Failure {
    Failure { code: 2, err }
}

/// The target, its `MAJ:MIN`, name, and the bytes the jobs may use.
fn resolve(a: &Args) -> Result<(Target, raw::TargetInfo), Failure> {
    if let Some(spec) = &a.device {
        return resolve_sim(a, spec);
    }
    let path = a.target.clone().expect("clap requires TARGET or --device");
    let (devid, name) = blkqos_experiment::real::target_identity(&path);
    let size_bytes = target_size(a, &path, &devid)?;
    let kind = match a.backend.as_str() {
        "real" => blkqos_engine::BackendKind::Auto,
        "io_uring" | "threads" => {
            blkqos_engine::BackendKind::parse(&a.backend).expect("the engine's own backend names")
        }
        _ => {
            return Err(bad(anyhow!(
                "calibrate: --backend={}: use real, io_uring or threads",
                a.backend
            )))
        }
    };
    let engine = blkqos_experiment::experiment::RealOptions {
        kind,
        allow_destructive: a.allow_destructive,
        overwrite: a.overwrite,
        eta: blkqos_experiment::progress::Eta::Never,
        ..Default::default()
    };
    let info = raw::TargetInfo {
        path: path.display().to_string(),
        devid: devid.to_string(),
        name,
        size_bytes,
        nr_requests: sys_u64(&devid, "queue/nr_requests"),
        max_sectors_kb: sys_u64(&devid, "queue/max_sectors_kb"),
    };
    match a.runner.as_str() {
        "blkqos" => {}
        "fio" => {
            if let Err(e) = std::process::Command::new("fio").arg("--version").output() {
                return Err(bad(anyhow!(
                    "calibrate: --runner=fio: cannot run `fio` (install fio, or use --runner=blkqos): {e}"
                )));
            }
            check_for_fio(a, &path, size_bytes)?;
            let target = Target::Fio {
                path,
                size: a.size.clone(),
                program: PathBuf::from("fio"),
            };
            return Ok((target, info));
        }
        r => return Err(bad(anyhow!("calibrate: --runner={r}: use blkqos or fio"))),
    }
    Ok((
        Target::Real {
            path,
            size: a.size.clone(),
            engine,
        },
        info,
    ))
}

/// The engine's safety rules for a target fio will measure: open it as
/// blkqos's own jobs would (a file is laid out, a block device with a
/// signature needs --allow-destructive), then leave it to fio.
fn check_for_fio(a: &Args, path: &std::path::Path, size_bytes: u64) -> Result<(), Failure> {
    let opts = blkqos_engine::EngineOptions {
        direct: true,
        size_needed: size_bytes,
        reads: true,
        writes: a.write,
        allow_destructive: a.allow_destructive,
        overwrite: a.overwrite,
        ..Default::default()
    };
    blkqos_engine::open_backend(path, opts)
        .map(drop)
        .map_err(|e| bad(anyhow!("calibrate: {e}")))
}

/// The version fio prints, for the record.
fn fio_version() -> String {
    std::process::Command::new("fio")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "fio".into())
}

/// `--device=SPEC`: a simulated target.
fn resolve_sim(a: &Args, spec: &str) -> Result<(Target, raw::TargetInfo), Failure> {
    let (d, seed_explicit) = blkqos_experiment::flags::parse_device(spec)
        .map_err(|e| bad(anyhow!("calibrate: --device={spec}: {e}")))?;
    let info = raw::TargetInfo {
        path: format!("simulated {}", d.kind.name()),
        devid: d.devid.to_string(),
        name: d.name.clone(),
        size_bytes: d.capacity,
        nr_requests: None,
        max_sectors_kb: None,
    };
    Ok((
        Target::Sim {
            device: d,
            seed_explicit,
            submit_ns: a.submit_ns,
        },
        info,
    ))
}

/// The bytes to calibrate over: `--size`, else the block device's or the
/// file's size (at least 1 MiB).
fn target_size(
    a: &Args,
    path: &std::path::Path,
    devid: &blkqos_core::DevId,
) -> Result<u64, Failure> {
    let meta = std::fs::metadata(path);
    let size_arg = match &a.size {
        Some(s) => Some(
            blkqos_sim::device::parse_size(s)
                .filter(|&b| b >= 1 << 20)
                .ok_or_else(|| {
                    bad(anyhow!(
                        "calibrate: --size={s}: expected a size of at least 1m, e.g. 1g"
                    ))
                })?,
        ),
        None => None,
    };
    use std::os::unix::fs::FileTypeExt;
    Ok(match (&meta, size_arg) {
        (_, Some(b)) => b,
        (Ok(m), None) if m.file_type().is_block_device() => {
            sys_u64(devid, "size").map(|s| s * 512).ok_or_else(|| {
                bad(anyhow!(
                    "calibrate: {}: cannot read its size",
                    path.display()
                ))
            })?
        }
        (Ok(m), None) if m.len() >= 1 << 20 => m.len(),
        (Ok(_), None) => {
            return Err(bad(anyhow!(
                "calibrate: {}: smaller than 1 MiB: give --size= (blkqos lays the file out)",
                path.display()
            )))
        }
        (Err(e), None) => {
            return Err(bad(anyhow!(
                "calibrate: {}: {e}: give --size= to have blkqos create and lay it out",
                path.display()
            )))
        }
    })
}

/// A number from `/sys/dev/block/MAJ:MIN/FILE`, or from the whole disk's
/// directory for a partition (which has no `queue/`).
fn sys_u64(devid: &blkqos_core::DevId, file: &str) -> Option<u64> {
    let dir = format!("/sys/dev/block/{}:{}", devid.major, devid.minor);
    [format!("{dir}/{file}"), format!("{dir}/../{file}")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| s.trim().parse().ok())
}

/// `blkqos calibrate`.
pub fn run_command(a: &Args, progress: &dyn Progress) -> Result<(), Failure> {
    let json = match a.output_format.as_str() {
        "normal" => false,
        "json" => true,
        f => {
            return Err(bad(anyhow!(
                "calibrate: --output-format={f}: use normal or json"
            )))
        }
    };
    if let Some(path) = &a.from {
        return from_model(a, path, json);
    }
    let signals = StopOnSignal::install().map_err(|e| Failure {
        code: 1,
        err: anyhow!("cannot install the SIGINT/SIGTERM handler: {e}"),
    })?;
    let measured = match &a.refit {
        Some(path) => raw::Measured::load(path).map_err(bad)?,
        None => measure_all(a, &signals, progress)?,
    };
    let costs = fit::ByteCosts::of(&measured.rounds);
    let fits = measured
        .rounds
        .iter()
        .map(|r| fit::fit_round(r, measured.writes, measured.request_bytes(), costs))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure {
            code: if a.refit.is_some() { 2 } else { 1 },
            err: anyhow!("calibrate: {e}"),
        })?;
    let mut rep = report::Report::new(&measured, &fits);
    if !a.no_check && !measured.interrupted {
        let jobs = plan::round(measured.target.size_bytes, measured.writes);
        rep.check(&jobs, CHECK_SECS, &signals)?;
    }
    let text = if json { rep.json() } else { rep.text() };
    blkqos_experiment::stdout::write_out(&text).map_err(|e| Failure {
        code: 1,
        err: e.into(),
    })?;
    match signals.exit_status() {
        Some(code) if measured.interrupted => Err(Failure {
            code,
            err: anyhow!(
                "calibrate: interrupted: the results above come from {} whole round(s)",
                measured.rounds.len()
            ),
        }),
        _ => Ok(()),
    }
}

/// `--from FILE`: the model, its device, and the device's rates beside
/// the model's.
fn from_model(a: &Args, path: &std::path::Path, json: bool) -> Result<(), Failure> {
    let m = from::load(path, a.from_solution.as_deref()).map_err(bad)?;
    let device = m.device(a.channels).map_err(bad)?;
    let checks = from::check(&m, &device, a.channels).map_err(|err| Failure { code: 1, err })?;
    let text = if json {
        let rows: Vec<serde_json::Value> = checks
            .iter()
            .map(|(what, want, got, unit)| serde_json::json!({"job": what, "unit": unit, "model": want, "device": got}))
            .collect();
        let doc = serde_json::json!({
            "from": m.source,
            "io_cost_model": m.line("MAJ:MIN"),
            "device": device,
            "check": rows,
        });
        serde_json::to_string_pretty(&doc).expect("JSON prints") + "\n"
    } else {
        let mut t = format!("# io.cost.model of {}\n", m.source);
        t += &format!("io.cost.model: {}\n", m.line("MAJ:MIN"));
        t += &format!("device:        --device={device}\n");
        t += "# the device on a saturating depth, 1 simulated second each (model's rate, device's)\n";
        for (what, want, got, unit) in &checks {
            t += &format!(
                "check: {what:<20} {want:>14.0} {got:>14.0} {unit} ({:+.1}%)\n",
                (got / want - 1.0) * 100.0
            );
        }
        t += "# rseqiops and wseqiops have no counterpart: the ssd model reads and writes sequentially as fast as randomly\n";
        t
    };
    blkqos_experiment::stdout::write_out(&text).map_err(|e| Failure {
        code: 1,
        err: e.into(),
    })
}

/// Run the rounds on the target; a signal ends them after the job that is
/// running (the whole rounds before it are kept).
fn measure_all(
    a: &Args,
    signals: &StopOnSignal,
    progress: &dyn Progress,
) -> Result<raw::Measured, Failure> {
    let cpu_idle = idle::CpuIdle::parse(&a.cpu_idle)?;
    let (target, info) = resolve(a)?;
    // held until the rounds end
    let _idle = idle::hold(cpu_idle)?;
    let jobs = plan::round(info.size_bytes, a.write);
    progress.begin((a.rounds as usize * jobs.len()) as u64, "jobs");
    let mut rounds: Vec<fit::Round> = Vec::new();
    'rounds: for r in 0..a.rounds {
        let mut round = fit::Round::new();
        for job in &jobs {
            progress.doing(&format!("round {}/{}: {}", r + 1, a.rounds, job.key));
            let p = measure::run(job, &target, a.time, signals)?;
            if signals.stopped() {
                break 'rounds;
            }
            round.insert(job.key, p);
            progress.done_one();
        }
        rounds.push(round);
    }
    progress.end();
    if rounds.is_empty() {
        return Err(Failure {
            code: signals.exit_status().unwrap_or(130),
            err: anyhow!("calibrate: interrupted before a whole round was measured"),
        });
    }
    Ok(raw::Measured {
        blkqos: env!("CARGO_PKG_VERSION").to_string(),
        target: info,
        backend: match &target {
            Target::Real { .. } => format!(
                "real engine ({}, direct=1){}",
                a.backend,
                cpu_idle.describe()
            ),
            Target::Fio { .. } => format!(
                "{} (io_uring, direct=1){}",
                fio_version(),
                cpu_idle.describe()
            ),
            Target::Sim { submit_ns, .. } => {
                format!(
                    "simulator (--device={}, --submit-ns={submit_ns})",
                    a.device.as_deref().unwrap_or("")
                )
            }
        },
        secs_per_job: a.time,
        writes: a.write,
        interrupted: signals.stopped(),
        rounds,
    })
}
