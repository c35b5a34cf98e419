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
//! blkqos lab compare [--lab=DIR] [--kernel=K]... [--job=SUBSTR]... [--seeds=N]
//!                    [--expect=FILE] [--markdown] [--real-engine]
//!                    [--throttle=V] [--iocost=V] [--hz=N] [--summary | --values]
//! ```
//!
//! With `--expect`, the metrics that miss must be exactly those the file
//! lists (each with its reason); anything else fails the command.

pub mod ktrace;
pub mod metrics;
pub mod trace_report;
pub mod vrate;

use anyhow::{bail, Context, Result};
use blkqos_experiment::kernel::KernelProfile;
use metrics::{Kind, RunMetrics};
use std::collections::BTreeMap;
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
        self.values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
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
    /// Measures the guest host rather than a controller ([`LabHost`]).
    pub calibration: bool,
    /// Also compare each group's steady writeback rate (`writeback = true`):
    /// bytes charged to the group per second over [`WRITEBACK_WINDOW_S`]
    /// from its first writeback.
    pub writeback: bool,
    /// An iocost job whose base vrate is recovered second by second
    /// ([`vrate`]).
    pub vrate: Option<vrate::Probe>,
    /// The guest's vCPUs for this job (`smp = N`; else the host's).
    pub smp: Option<u32>,
    /// The job runs a filesystem (`fs = "ext4"`): the guest's null_blk is
    /// memory-backed and copies every request's data.
    pub memory_backed: bool,
}

/// The guest host's timing, measured on each kernel by the calibration
/// jobs (no controller, a 20 µs null_blk, 4 KiB random reads):
///
/// * `h03-qd32-pipelined`: one fio process with 32 IOs in flight; the
///   guest's CPU sets the pace, so 1/IOPS is the host's cost per IO when
///   submissions overlap completions. The simulated submit call takes
///   that long (`submit_ns`). Without h03 runs, the h02 cycle's host
///   share stands in (`1/IOPS − 20 µs`, an upper bound).
/// * `h01-qd1-thinktime`: QD1 with `thinktime=4ms`. A cycle (1/IOPS) minus
///   4 ms, minus what the simulator already accounts for one IO (the
///   submit cost and the device's 20 µs), is how much later on average the
///   next IO goes out than a simulated host would send it: the sleep's
///   lateness plus the part of the QD1 round trip the submit cost does not
///   cover (the interrupt, the reap, fio's bookkeeping;
///   `h02-qd1-roundtrip` measures that round trip alone). The simulated
///   sleep wakes up late by a uniform `[0, 2 × that]` (`wake_jitter_ns`),
///   which has that mean.
/// * `h04-buffered-copy`: one sync writer puts 1 MiB buffered writes into
///   ext4 below the dirty limits, so nothing waits for writeback: a
///   cycle (1/IOPS) less the submit call and the copy's fixed syscall
///   cost is the time to copy 1 MiB into the page cache
///   (`copy_bytes_per_s`). The emulated guest copies at 140-175 MB/s,
///   tens of times slower than a host: how long the writers of a
///   buffered job run free before `balance_dirty_pages` throttles them,
///   and their think time between pauses, follow from it.
///
/// * the `h02-qd1-roundtrip` traces (`block_rq_issue` to
///   `block_rq_complete`): the guest completes a 20 µs timer-mode
///   null_blk request in 70-100 µs at the median and 0.25-0.64 ms at p99.
///   The simulated null_blk completes each request late by a log-normal
///   delay with that median and p99 less 20 µs (`late_p50_ns`,
///   `late_p99_ns`), and the h01 sleep lateness above subtracts the mean
///   completion instead of 20 µs.
///
/// * the guest's vCPUs (`nproc` in the runs' `meta.json`): the CPUs fio's
///   processes submit from, each with its blk-mq software queue; the
///   simulated null_blk stages a stopped queue's requests that way
///   (`cpus`).
///
/// Means over the kernel's recorded runs. Nothing here looks at a
/// controller's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabHost {
    pub submit_ns: u64,
    pub wake_jitter_ns: u64,
    /// From `h04-buffered-copy`, when recorded.
    pub copy_bytes_per_s: Option<u64>,
    /// From `lab/traces/copy.json` (`copy.py` over the writeback traces):
    /// how fast the guest's memory-backed null_blk copies a request's
    /// data, its full-size writes' median issue-to-completion time less
    /// the 20 µs completion and the median completion lateness
    /// (`completion_late_ns`).
    pub null_copy_bytes_per_s: Option<u64>,
    pub cpus: u32,
    /// From the `h02-qd1-roundtrip` traces, when recorded: how late the
    /// guest completes a null_blk request, median and 99th percentile in
    /// ns (`trace.d2c` less the 20 µs completion time).
    pub completion_late_ns: Option<(u64, u64)>,
    /// From the `h01-qd1-thinktime` traces, the same for a request
    /// submitted right after fio's thinktime sleep: the guest was idle,
    /// and 6.1's completes later (median 0.10-0.11 ms against h02's
    /// 0.05-0.07 ms, p99 1.2-1.4 ms against 0.25-0.34).
    pub completion_late_after_sleep_ns: Option<(u64, u64)>,
    /// How late the guest completes a null_blk request it served at once,
    /// by what the submitter's CPU runs when the request's timer expires:
    /// the submitter itself (`.0`, fio busy submitting: h03) or nothing of
    /// it (`.1`, fio asleep waiting for the completion: h02); each a
    /// log-normal's median and p99 in ns. Its mean is the untraced runs'
    /// device time per request (`io_ticks` over the reads: one request on
    /// the device at a time, h02's always and h03's mostly) less the 20
    /// µs completion; its spread is h02's traced lateness's (the traced
    /// runs' own lateness is longer: a tracepoint's cost lands between a
    /// request's issue and its completion, `lab/traces/cpustate.json`).
    pub completion_late_by_cpu_ns: Option<((u64, u64), (u64, u64))>,
    /// From `lab/traces/restart.json` (`restart.py` over the kernel
    /// traces of a saturated null_blk): how long after its bandwidth tick
    /// the guest dispatches the restarted queue, median, p90 and p99 in
    /// ns, for a guest with two vCPUs and with one.
    pub restart_ns: Option<[(u64, u64, u64); 2]>,
    /// From `lab/traces/serial.json` (`serial.py` over the kernel's
    /// traces of a saturated null_blk): the guest's CPU time per request
    /// when its worker dispatches a restarted queue, and per completion
    /// in the timer interrupt, each median, p90 and p99 in ns.
    pub worker_cpu_ns: Option<([u64; 3], [u64; 3])>,
    /// From `lab/traces/held.json` (`hrtimers.py` over the kernel's c04
    /// traces with the scheduler's and the timer events): how late the
    /// worker's CPU takes its timer interrupt when the earliest pending
    /// timer expired while the worker dispatched, median, p90 and p99 in
    /// ns.
    pub worker_irq_late_ns: Option<[u64; 3]>,
    /// From `lab/traces/flusher.json` (`flusher.py` over the kernel's w02
    /// trace): a writeback flusher's CPU time per request of a split bio,
    /// the median gap between one kworker's consecutive `block_getrq`
    /// events that were not a sleep, in ns.
    pub writeback_piece_ns: Option<u64>,
    /// From `lab/traces/timer.json` (`timer.py` over the kernel's traces
    /// with iocost's tracepoints): how late the guest runs iocost's period
    /// timer past the tick it is due on, its p1, p10, p50, p75, p90, p95
    /// and p99 in ns (`iocost_timer_late_ns`) after a run on time (`[0]`)
    /// and after one a tick or more late (`[1]`).
    pub iocost_timer_late_ns: Option<[[u64; 7]; 2]>,
    /// From the `h02`/`h03` runs: how much longer than the job's runtime
    /// fio's disk-utilization window is (it opens when fio sets the job up
    /// and closes after it reaped it), the median of each run's
    /// `io_ticks` (diskstats end − start) ÷ fio's `util` − `job_runtime`,
    /// in ns. fio's `util` is busy time over that window.
    pub disk_util_window_ns: Option<u64>,
    /// The job's own recorded runs: the guest's free memory when it
    /// started (`meta.json` meminfo `MemFree`, their mean), which bounds
    /// the dirtyable memory the page cache's limits scale with
    /// (`global_dirtyable_memory`: free pages and file pages less the
    /// reserves; the last two are not recorded and are small beside it).
    pub mem_free_bytes: Option<u64>,
}

/// Seconds of steady writeback a writeback job's rates are taken over.
pub const WRITEBACK_WINDOW_S: f64 = 20.0;

/// The device latency of the calibration jobs (`completion_ns` there).
const CALIBRATION_COMPLETION_NS: f64 = 20_000.0;
/// `thinktime` of `h01-qd1-thinktime`.
const CALIBRATION_THINK_NS: f64 = 4_000_000.0;

/// The bytes of one write of `h04-buffered-copy`.
const CALIBRATION_COPY_BYTES: f64 = 1048576.0;

fn mean_iops(lab: &Path, kernel: &str, job: &str) -> Result<Option<f64>> {
    mean_of(lab, kernel, job, "r.read.iops")
}

fn mean_of(lab: &Path, kernel: &str, job: &str, metric: &str) -> Result<Option<f64>> {
    let j = LabJob {
        name: job.to_string(),
        scenario: PathBuf::new(),
        groups: vec!["/".into()],
        calibration: true,
        writeback: false,
        vrate: None,
        smp: None,
        memory_backed: false,
    };
    let (s, n) = real_spreads(lab, kernel, &j, false)?;
    Ok(s.get(metric)
        .filter(|_| n > 0)
        .map(|x| x.values.iter().sum::<f64>() / x.values.len() as f64))
}

impl LabHost {
    /// From the kernel's calibration runs; None if they were not recorded.
    pub fn measure(lab: &Path, kernel: &str) -> Result<Option<LabHost>> {
        let (Some(rt), Some(tt)) = (
            mean_iops(lab, kernel, "h02-qd1-roundtrip")?,
            mean_iops(lab, kernel, "h01-qd1-thinktime")?,
        ) else {
            return Ok(None);
        };
        let submit = match mean_iops(lab, kernel, "h03-qd32-pipelined")? {
            Some(pipelined) => 1e9 / pipelined,
            None => (1e9 / rt - CALIBRATION_COMPLETION_NS).max(0.0),
        };
        let completion_late_ns = completion_lateness(lab, kernel, "h02-qd1-roundtrip");
        let completion_late_after_sleep_ns = completion_lateness(lab, kernel, "h01-qd1-thinktime");
        let completion_late_by_cpu_ns = completion_late_ns.and_then(|law| {
            let mean = |job| untraced_device_ns_per_read(lab, kernel, job);
            Some((
                lognormal_with_mean(law, mean("h03-qd32-pipelined")? - CALIBRATION_COMPLETION_NS)?,
                lognormal_with_mean(law, mean("h02-qd1-roundtrip")? - CALIBRATION_COMPLETION_NS)?,
            ))
        });
        // the mean completion of the simulated calibration device, for
        // h01's IOs (each right after a sleep) when its traces say
        let completion = CALIBRATION_COMPLETION_NS
            + completion_late_after_sleep_ns
                .or(completion_late_ns)
                .map_or(0.0, |(p50, p99)| lognormal_mean(p50, p99));
        let late = (1e9 / tt - CALIBRATION_THINK_NS - submit - completion).max(0.0);
        let syscall_ns = blkqos_driver::pagecache::PageCacheConfig::default().syscall_ns as f64;
        let copy_bytes_per_s = mean_of(lab, kernel, "h04-buffered-copy", "r.write.iops")?
            .map(|iops| 1e9 / iops - submit - syscall_ns)
            .filter(|ns| *ns > 0.0)
            .map(|ns| (CALIBRATION_COPY_BYTES * 1e9 / ns).round() as u64);
        let null_copy_bytes_per_s =
            null_copy_rate(lab, kernel, completion_late_ns.map_or(0, |(p50, _)| p50));
        Ok(Some(LabHost {
            submit_ns: submit.round() as u64,
            wake_jitter_ns: (2.0 * late).round() as u64,
            copy_bytes_per_s,
            null_copy_bytes_per_s,
            cpus: guest_cpus(lab, kernel).unwrap_or(1),
            completion_late_ns,
            completion_late_after_sleep_ns,
            completion_late_by_cpu_ns,
            restart_ns: restart_delays(lab),
            worker_cpu_ns: worker_cpu(lab, kernel),
            worker_irq_late_ns: worker_irq_late(lab, kernel),
            writeback_piece_ns: writeback_piece(lab, kernel),
            iocost_timer_late_ns: iocost_timer_late(lab, kernel),
            disk_util_window_ns: disk_util_window(lab, kernel),
            mem_free_bytes: None,
        }))
    }
}

/// The jobs of `lab/matrix.toml`.
pub fn load_matrix(lab: &Path) -> Result<Vec<LabJob>> {
    let path = lab.join("matrix.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let v: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?;
    let mut jobs = Vec::new();
    for j in v
        .get("job")
        .and_then(|j| j.as_array())
        .into_iter()
        .flatten()
    {
        let Some(name) = j.get("name").and_then(|n| n.as_str()) else {
            bail!("{}: a [[job]] without name", path.display());
        };
        let scenario = lab.join("matrix").join(format!("{name}.toml"));
        let st = std::fs::read_to_string(&scenario)
            .with_context(|| format!("cannot read {}", scenario.display()))?;
        let sv: toml::Value = toml::from_str(&st)
            .with_context(|| format!("{}: not valid TOML", scenario.display()))?;
        let mut groups: Vec<String> = Vec::new();
        for f in sv
            .get("fio")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            let g = f.get("cgroup").and_then(|c| c.as_str()).unwrap_or("/");
            if !groups.iter().any(|x| x == g) {
                groups.push(g.to_string());
            }
        }
        let calibration = j
            .get("calibration")
            .and_then(|c| c.as_bool())
            .unwrap_or(false);
        let writeback = j
            .get("writeback")
            .and_then(|c| c.as_bool())
            .unwrap_or(false);
        jobs.push(LabJob {
            name: name.to_string(),
            scenario,
            groups,
            calibration,
            writeback,
            vrate: vrate::Probe::of_scenario(&sv),
            smp: j
                .get("smp")
                .and_then(|c| c.as_integer())
                .and_then(|n| u32::try_from(n).ok()),
            memory_backed: j.get("fs").is_some(),
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
    if job.writeback {
        if let Ok(text) = std::fs::read_to_string(dir.join("samples.jsonl")) {
            metrics::writeback_rates_from_samples(&text, &job.groups, WRITEBACK_WINDOW_S, &mut m);
        }
    }
    if let (Some(probe), Some(max)) = (&job.vrate, max_sectors(dir)) {
        if let Ok(text) = std::fs::read_to_string(dir.join("samples.jsonl")) {
            probe.measure_samples(&text, max, &mut m);
        }
    }
    let trace = dir.join("trace.json");
    if let Ok(text) = std::fs::read_to_string(&trace) {
        ktrace::from_json(&text, &mut m).with_context(|| format!("{}", trace.display()))?;
    }
    Ok(Some(m))
}

/// `max_sectors_kb` of a recorded run's device, in sectors.
fn max_sectors(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("meta.json")).ok()?;
    vrate::max_sectors_of_meta(&serde_json::from_str(&text).ok()?)
}

/// The guest's completion lateness: the mean over the kernel's recorded
/// runs of calibration job `job` with a trace of `trace.d2c.p50` and
/// `.p99` (ms), less the 20 µs completion time, in ns.
fn completion_lateness(lab: &Path, kernel: &str, job: &str) -> Option<(u64, u64)> {
    let kdir = lab.join("fixtures").join(kernel);
    let (mut p50, mut p99, mut n) = (0.0, 0.0, 0.0);
    for e in std::fs::read_dir(&kdir).ok()?.flatten() {
        let path = e.path().join(job).join("trace.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if let (Some(a), Some(b)) = (
            v.get("trace.d2c.p50").and_then(|x| x.as_f64()),
            v.get("trace.d2c.p99").and_then(|x| x.as_f64()),
        ) {
            p50 += a;
            p99 += b;
            n += 1.0;
        }
    }
    let ns = |ms_sum: f64| (ms_sum / n * 1e6 - CALIBRATION_COMPLETION_NS).round();
    (n > 0.0 && ns(p50) > 0.0).then(|| (ns(p50) as u64, ns(p99).max(ns(p50)) as u64))
}

/// The restart delays `lab/traces/restart.json` records: `[two vCPUs,
/// one vCPU]`, each `(p50, p90, p99)` in ns.
fn restart_delays(lab: &Path) -> Option<[(u64, u64, u64); 2]> {
    let text = std::fs::read_to_string(lab.join("traces/restart.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let q = |cpus: &str| -> Option<(u64, u64, u64)> {
        let t = v.get("vcpus")?.get(cpus)?;
        let g = |k: &str| t.get(k).and_then(|x| x.as_u64());
        Some((g("p50")?, g("p90")?, g("p99")?))
    };
    Some([q("2")?, q("1")?])
}

/// [`LabHost::null_copy_bytes_per_s`] from `traces/copy.json`, given the
/// median completion lateness `late_p50_ns`.
fn null_copy_rate(lab: &Path, kernel: &str, late_p50_ns: u64) -> Option<u64> {
    let text = std::fs::read_to_string(lab.join("traces/copy.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let k = v.get(kernel)?;
    let bytes = k.get("bytes")?.as_u64()?;
    let d2c = k.get("d2c_p50_ns")?.as_u64()?;
    let copy_ns = d2c.checked_sub(CALIBRATION_COMPLETION_NS as u64 + late_p50_ns)?;
    (copy_ns > 0).then(|| (u128::from(bytes) * 1_000_000_000 / u128::from(copy_ns)) as u64)
}

/// The worker's and the timer interrupt's CPU time per request
/// `lab/traces/serial.json` records for `kernel` (ns).
fn worker_cpu(lab: &Path, kernel: &str) -> Option<([u64; 3], [u64; 3])> {
    let text = std::fs::read_to_string(lab.join("traces/serial.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let q = |key: &str| -> Option<[u64; 3]> {
        let a = v.get(kernel)?.get(key)?.as_array()?;
        let g = |i: usize| a.get(i).and_then(|x| x.as_u64());
        Some([g(0)?, g(1)?, g(2)?])
    };
    Some((q("dispatch_ns")?, q("complete_ns")?))
}

/// The lateness of the worker's CPU's interrupts while it dispatches
/// `lab/traces/held.json` records for `kernel` (ns).
fn worker_irq_late(lab: &Path, kernel: &str) -> Option<[u64; 3]> {
    let text = std::fs::read_to_string(lab.join("traces/held.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let a = v.get(kernel)?.get("irq_late_ns")?.as_array()?;
    let g = |i: usize| a.get(i).and_then(|x| x.as_u64());
    Some([g(0)?, g(1)?, g(2)?])
}

/// The flusher's time per request `lab/traces/flusher.json` records for
/// `kernel` (ns).
fn writeback_piece(lab: &Path, kernel: &str) -> Option<u64> {
    let text = std::fs::read_to_string(lab.join("traces/flusher.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get(kernel)?.get("piece_ns")?.as_u64()
}

/// [`LabHost::iocost_timer_late_ns`] from `traces/timer.json`.
fn iocost_timer_late(lab: &Path, kernel: &str) -> Option<[[u64; 7]; 2]> {
    let text = std::fs::read_to_string(lab.join("traces/timer.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut out = [[0u64; 7]; 2];
    for (o, key) in out.iter_mut().zip(["after_on_time_ns", "after_late_ns"]) {
        let q = v.get(kernel)?.get(key)?.as_array()?;
        if q.len() != o.len() {
            return None;
        }
        for (x, y) in o.iter_mut().zip(q) {
            *x = y.as_u64()?;
        }
    }
    Some(out)
}

/// The mean of the log-normal law with this median and 99th percentile.
fn lognormal_mean(p50: u64, p99: u64) -> f64 {
    let sigma = (p99 as f64 / p50 as f64).ln() / 2.326_347_874;
    p50 as f64 * (sigma * sigma / 2.0).exp()
}

/// The (median, p99) in ns of the log-normal law with `law`'s spread
/// (its median and p99) and mean `mean_ns`; None when that is not
/// positive.
fn lognormal_with_mean(law: (u64, u64), mean_ns: f64) -> Option<(u64, u64)> {
    let sigma = (law.1 as f64 / law.0 as f64).ln() / 2.326_347_874;
    let p50 = mean_ns / (sigma * sigma / 2.0).exp();
    (p50 >= 1.0).then(|| {
        let p99 = p50 * (2.326_347_874 * sigma).exp();
        (p50.round() as u64, p99.round() as u64)
    })
}

/// The device's busy time per read of `job`'s untraced runs (those
/// without a `trace.json`), their mean in ns: diskstats' `io_ticks`
/// (end − start) over its reads. Busy time counts where a request is on
/// the device (6.10's `update_io_ticks`, which the lab's kernels count
/// by: `lab_traces::t08_io_ticks_replay_the_kernels_own_trace`), so with
/// one request at a time it is their mean time from issue to completion.
fn untraced_device_ns_per_read(lab: &Path, kernel: &str, job: &str) -> Option<f64> {
    let kdir = lab.join("fixtures").join(kernel);
    let fields = |p: PathBuf| -> Option<Vec<u64>> {
        let text = std::fs::read_to_string(p).ok()?;
        text.split_whitespace()
            .skip(3)
            .map(|w| w.parse().ok())
            .collect()
    };
    let mut v = Vec::new();
    for e in std::fs::read_dir(&kdir).ok()?.flatten() {
        let dir = e.path().join(job);
        if dir.join("trace.json").exists() {
            continue;
        }
        let (Some(a), Some(b)) = (
            fields(dir.join("diskstats.start")),
            fields(dir.join("diskstats.end")),
        ) else {
            continue;
        };
        let reads = b.first()?.checked_sub(*a.first()?)?;
        let ticks_ms = b.get(9)?.checked_sub(*a.get(9)?)?;
        if reads > 0 {
            v.push(ticks_ms as f64 * 1e6 / reads as f64);
        }
    }
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// [`LabHost::disk_util_window_ns`] from the kernel's `h02-qd1-roundtrip`
/// and `h03-qd32-pipelined` runs (one fio each, IO from start to end).
fn disk_util_window(lab: &Path, kernel: &str) -> Option<u64> {
    let kdir = lab.join("fixtures").join(kernel);
    let io_ticks = |p: PathBuf| -> Option<f64> {
        let text = std::fs::read_to_string(p).ok()?;
        text.split_whitespace().nth(12)?.parse().ok()
    };
    let mut extra_ms = Vec::new();
    for e in std::fs::read_dir(&kdir).ok()?.flatten() {
        for job in ["h02-qd1-roundtrip", "h03-qd32-pipelined"] {
            let dir = e.path().join(job);
            let (Some(t0), Some(t1)) = (
                io_ticks(dir.join("diskstats.start")),
                io_ticks(dir.join("diskstats.end")),
            ) else {
                continue;
            };
            let Some(v) = std::fs::read_to_string(dir.join("fio0.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            else {
                continue;
            };
            let util = v["disk_util"][0]["util"].as_f64().filter(|u| *u > 0.0);
            if let (Some(util), Some(rt)) = (util, v["jobs"][0]["job_runtime"].as_f64()) {
                extra_ms.push((t1 - t0) * 100.0 / util - rt);
            }
        }
    }
    extra_ms.sort_by(f64::total_cmp);
    let mid = extra_ms.get(extra_ms.len() / 2)?;
    Some((mid.max(0.0) * 1e6).round() as u64)
}

/// The guest's vCPU count (`nproc`) in the kernel's first recorded
/// calibration run.
fn guest_cpus(lab: &Path, kernel: &str) -> Option<u32> {
    let kdir = lab.join("fixtures").join(kernel);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&kdir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("h02-qd1-roundtrip/meta.json")))
        .collect();
    runs.sort();
    runs.iter().find_map(|m| {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(m).ok()?).ok()?;
        u32::try_from(v.get("nproc")?.as_u64()?).ok()
    })
}

/// The guest's `MemFree` when `job` started, mean over the kernel's
/// recorded runs ([`LabHost::mem_free_bytes`]).
fn recorded_mem_free(lab: &Path, kernel: &str, job: &LabJob) -> Option<u64> {
    let kdir = lab.join("fixtures").join(kernel);
    let (mut sum, mut n) = (0u64, 0u64);
    for e in std::fs::read_dir(&kdir).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join(&job.name).join("meta.json")) else {
            continue;
        };
        let kb = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| {
                let s = v.get("meminfo")?.get("MemFree")?.as_str()?.to_string();
                s.trim_end_matches(" kB").trim().parse::<u64>().ok()
            });
        if let Some(kb) = kb {
            sum += kb * 1024;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n)
}

/// What a job's simulated runs take from the kernel's recorded runs of it.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// The device's `max_sectors_kb` in sectors ([`recorded_max_sectors`]).
    pub max_sectors: Option<u64>,
    /// Per recorded run, each `[[fio]]` process's start of IO after the
    /// earliest one's, in ns ([`recorded_fio_starts`]).
    pub fio_starts_ns: Vec<Vec<u64>>,
}

impl Recorded {
    /// Seed `seed` replays the start offsets of recorded run
    /// `(seed − 1) mod runs`: each fio process's jobs start that much
    /// later (added to their own `startdelay`), as the kernel's did.
    pub fn start_fio(&self, exp: &mut blkqos_experiment::experiment::Experiment, seed: u64) {
        if self.fio_starts_ns.is_empty() {
            return;
        }
        let run =
            &self.fio_starts_ns[((seed.max(1) - 1) % self.fio_starts_ns.len() as u64) as usize];
        for (inv, &ns) in exp.invocations.iter_mut().zip(run) {
            for spec in &mut inv.jobs.jobs {
                let d = blkqos_core::Duration(ns);
                spec.start_delay = (spec.start_delay.0 + d, spec.start_delay.1 + d);
            }
        }
    }
}

/// A recorded fio process's start-of-IO offset at or below this is taken
/// as simultaneous: [`recorded_fio_starts`]'s estimate differs from the
/// first `block_rq_issue` of each fio process by up to 54 ms over the 16
/// traced runs of `lab/traces` (c05, c06, c07, c09).
const FIO_START_NOISE_NS: u64 = 60_000_000;

/// When each `[[fio]]` process of `job` started its IO in the kernel's
/// recorded runs, after the earliest one, in ns (one entry per run with
/// every `fioN.json`, runs in name order). fio's JSON has no start time: it
/// is `timestamp_ms` (when the report was written, after the job) less the
/// longest `job_runtime` of the process's jobs. In seed 001's layout cgA,
/// whose 128 MiB of buffers fio allocates and fills before its first IO,
/// starts 0.25-1.7 s after cgB; most jobs' processes start within the
/// estimate's error of each other ([`FIO_START_NOISE_NS`]: taken as 0).
fn recorded_fio_starts(lab: &Path, kernel: &str, job: &LabJob) -> Vec<Vec<u64>> {
    let kdir = lab.join("fixtures").join(kernel);
    let Ok(entries) = std::fs::read_dir(&kdir) else {
        return Vec::new();
    };
    let mut runs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path().join(&job.name)))
        .collect();
    runs.sort();
    runs.iter()
        .filter_map(|d| {
            let mut starts_ms = Vec::new();
            for i in 0.. {
                let Ok(text) = std::fs::read_to_string(d.join(format!("fio{i}.json"))) else {
                    break;
                };
                let v: serde_json::Value = serde_json::from_str(&text).ok()?;
                let end_ms = v["timestamp_ms"].as_i64()?;
                let run_ms = v["jobs"]
                    .as_array()?
                    .iter()
                    .filter_map(|j| j["job_runtime"].as_i64())
                    .max()?;
                starts_ms.push(end_ms - run_ms);
            }
            let first = *starts_ms.iter().min()?;
            (starts_ms.len() >= 2).then(|| {
                starts_ms
                    .iter()
                    .map(|&s| {
                        let ns = (s - first) as u64 * 1_000_000;
                        if ns <= FIO_START_NOISE_NS {
                            0
                        } else {
                            ns
                        }
                    })
                    .collect()
            })
        })
        .collect()
}

/// The device's `max_sectors_kb` (in sectors) in the kernel's first
/// recorded run of `job`: the simulated side's vrate recovery splits IO
/// the same way.
fn recorded_max_sectors(lab: &Path, kernel: &str, job: &LabJob) -> Option<u64> {
    let kdir = lab.join("fixtures").join(kernel);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&kdir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join(&job.name)))
        .collect();
    runs.sort();
    runs.iter().find_map(|d| max_sectors(d))
}

/// The real kernel's spread for one job: every `runN/JOB` (or
/// `runN/JOB/real` for blkqos's real engine in the lab).
pub fn real_spreads(
    lab: &Path,
    kernel: &str,
    job: &LabJob,
    engine: bool,
) -> Result<(Spreads, usize)> {
    let kdir = lab.join("fixtures").join(kernel);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&kdir)
        .with_context(|| format!("cannot read {}", kdir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("run"))
        })
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

/// The lab's measured host for a `null` device: the guest's vCPUs and
/// its lateness, copy, restart and per-request CPU costs as device
/// parameters.
fn null_host(
    exp: &mut blkqos_experiment::experiment::Experiment,
    job: &LabJob,
    h: &LabHost,
) -> Result<()> {
    let set = |exp: &mut blkqos_experiment::experiment::Experiment, k: &str, v: u64| {
        exp.device
            .set_param(k, &v.to_string())
            .map_err(|e| anyhow::anyhow!("{e}"))
    };
    set(exp, "cpus", u64::from(job.smp.unwrap_or(h.cpus)))?;
    if let Some((p50, p99)) = h.completion_late_ns {
        set(exp, "late_p50_ns", p50)?;
        set(exp, "late_p99_ns", p99)?;
    }
    if let Some(((busy50, busy99), (idle50, idle99))) = h.completion_late_by_cpu_ns {
        set(exp, "late_busy_p50_ns", busy50)?;
        set(exp, "late_busy_p99_ns", busy99)?;
        set(exp, "late_idle_p50_ns", idle50)?;
        set(exp, "late_idle_p99_ns", idle99)?;
    }
    if let Some((p50, p99)) = h.completion_late_after_sleep_ns {
        set(exp, "late_sleep_p50_ns", p50)?;
        set(exp, "late_sleep_p99_ns", p99)?;
    }
    if let (true, Some(rate)) = (
        job.memory_backed,
        h.null_copy_bytes_per_s.or(h.copy_bytes_per_s),
    ) {
        set(exp, "copy_bytes_per_s", rate)?;
    }
    if let (true, Some(free)) = (job.memory_backed, h.mem_free_bytes) {
        exp.pagecache.cfg.memory_bytes = free;
    }
    if let Some(r) = h.restart_ns {
        let (p50, p90, p99) = if job.smp.unwrap_or(h.cpus) > 1 {
            r[0]
        } else {
            r[1]
        };
        set(exp, "restart_p50_ns", p50)?;
        set(exp, "restart_p90_ns", p90)?;
        set(exp, "restart_p99_ns", p99)?;
    }
    if let Some((dispatch, irq)) = h.worker_cpu_ns {
        for (k, v) in ["dispatch_p50_ns", "dispatch_p90_ns", "dispatch_p99_ns"]
            .into_iter()
            .zip(dispatch)
            .chain(
                ["irq_p50_ns", "irq_p90_ns", "irq_p99_ns"]
                    .into_iter()
                    .zip(irq),
            )
        {
            set(exp, k, v)?;
        }
    }
    // measured where the worker dispatches without copying: a
    // memory-backed device's worker copies each request with the
    // interrupts off and takes them between copies (lab/traces/w02-6.12)
    if let (false, Some(late)) = (job.memory_backed, h.worker_irq_late_ns) {
        for (k, v) in [
            "irq_late_busy_p50_ns",
            "irq_late_busy_p90_ns",
            "irq_late_busy_p99_ns",
        ]
        .into_iter()
        .zip(late)
        {
            set(exp, k, v)?;
        }
    }
    Ok(())
}

/// One seed's simulated run of a lab job under a kernel profile, its
/// reports in fio's JSON.
fn sim_experiment(
    job: &LabJob,
    profile: &KernelProfile,
    overrides: &[(String, String)],
    host: Option<LabHost>,
    seed: u64,
) -> Result<blkqos_experiment::experiment::Experiment> {
    let mut exp = blkqos_experiment::scenario_build::experiment(&job.scenario)?;
    exp.seed = seed;
    if let Some(h) = host {
        exp.host.submit_ns = h.submit_ns;
        exp.host.wake_jitter_ns = h.wake_jitter_ns;
        // the guest's vCPUs run the fio processes
        exp.host.cpus = job.smp.unwrap_or(h.cpus);
        if let Some(ns) = h.writeback_piece_ns {
            exp.host.writeback_piece_ns = ns;
        }
        if let Some(q) = h.iocost_timer_late_ns {
            // the experiment seeds the draws from the run's seed
            exp.controllers.iocost_timer_late = Some(blkqos_core::time::TimerLateness {
                quantiles_ns: q,
                seed: 0,
            });
        }
        if let Some(rate) = h.copy_bytes_per_s {
            exp.pagecache.cfg.copy_bytes_per_s = rate;
        }
        if exp.device.kind == blkqos_sim::device::ModelKind::Null {
            null_host(&mut exp, job, &h)?;
        }
    }
    exp.host.seed = seed;
    profile.apply(&mut exp.controllers, &mut exp.accounting);
    profile.apply_pagecache(&mut exp.pagecache.cfg);
    // the guest's sampler reads every group's io.stat once a second
    // (lab/guest_run.py, samples.jsonl)
    exp.pagecache.cfg.io_stat_read_every_ns = 1_000_000_000;
    for (k, v) in overrides {
        exp.controllers
            .set(k, v)
            .map_err(|m| anyhow::anyhow!("--{m}"))?;
    }
    for inv in &mut exp.invocations {
        inv.formats = vec![blkqos_fio::parse::OutputFormat::Json];
        inv.output = None;
    }
    // the writeback rates come from the per-second series
    exp.pagecache.keep_series |= job.writeback;
    Ok(exp)
}

/// blkqos's simulated spread for one job under a kernel profile.
pub fn sim_spreads(
    job: &LabJob,
    profile: &KernelProfile,
    overrides: &[(String, String)],
    host: Option<LabHost>,
    seeds: u64,
    recorded: &Recorded,
    traces: Option<TraceRequest>,
) -> Result<Spreads> {
    let traced = traces.is_some();
    let mut spreads = Spreads::new();
    let probe = job.vrate.as_ref().zip(recorded.max_sectors);
    for seed in 1..=seeds {
        let mut exp = sim_experiment(job, profile, overrides, host, seed)?;
        recorded.start_fio(&mut exp, seed);
        // the vrate from the live view's per-second lines
        let live_dir = match (probe, traced) {
            (None, false) => None,
            _ => Some(tempfile::tempdir().context("a temporary directory")?),
        };
        if let Some(d) = &live_dir {
            if probe.is_some() {
                exp.live.json = Some(d.path().join("live.jsonl"));
            }
            if traced {
                exp.ktrace_out = Some(d.path().join("ktrace.txt"));
            }
            exp.open_streams()?;
        }
        let ran = exp
            .run_sim(None)
            .with_context(|| format!("{}: seed {seed}", job.name))?;
        if let Some(s) = &exp.streams {
            blkqos_experiment::streams::Streams::finish(s)?;
        }
        let mut m = RunMetrics::new();
        let reports = blkqos_experiment::output::render_reports(&exp, &ran, 0);
        for (i, text) in reports.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(text)
                .with_context(|| format!("{}: blkqos's own fio JSON", job.name))?;
            metrics::from_fio_json(&v, i == 0, &mut m);
        }
        if let (true, Some(dir)) = (traced, traces.and_then(|t| t.keep)) {
            keep_reports(dir, &job.name, seed, &reports)?;
        }
        fio_util_window(&mut m, host, ran.result.ended_at);
        let io_stat = blkqos_experiment::output::format_io_stat(&ran);
        metrics::shares_from_io_stat(&io_stat, &job.groups, &mut m);
        if let (true, Some(report)) = (job.writeback, &ran.result.pagecache) {
            let groups = |g| ran.tree.path(g).to_string();
            metrics::writeback_rates_from_series(
                &blkqos_experiment::pagecache::series_json(report, &groups),
                &job.groups,
                WRITEBACK_WINDOW_S,
                &mut m,
            );
        }
        if let (Some((p, max)), Some(d)) = (probe, &live_dir) {
            let path = d.path().join("live.jsonl");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: the live view's {}", job.name, path.display()))?;
            let lines: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            p.measure_live(&lines, max, &mut m);
        }
        if let (true, Some(d)) = (traced, &live_dir) {
            let path = d.path().join("ktrace.txt");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: blkqos's own {}", job.name, path.display()))?;
            m.extend(ktrace::reduce(&text));
            if let Some(dir) = traces.and_then(|t| t.keep) {
                keep_trace(dir, &job.name, seed, &text)?;
            }
        }
        add_run(&mut spreads, m);
    }
    Ok(spreads)
}

/// `--keep-traces`: blkqos's `--ktrace` of `job` at `seed` as
/// `dir/JOB-seedN.txt`.
fn keep_trace(dir: &Path, job: &str, seed: u64, text: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("{job}-seed{seed}.txt"));
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `--keep-traces`: blkqos's fio JSON reports of `job` at `seed`, one per
/// fio process as the lab records them, as `dir/JOB-seedN.fioI.json`.
fn keep_reports(dir: &Path, job: &str, seed: u64, reports: &[String]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (i, text) in reports.iter().enumerate() {
        let path = dir.join(format!("{job}-seed{seed}.fio{i}.json"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// fio's `%util` is busy time over its own window, which outlasts the run
/// by fio's setup and reaping ([`LabHost::disk_util_window_ns`]): the
/// simulated run's `disk.util`, over a run that ended at `end`, as fio on
/// the guest would read it.
fn fio_util_window(m: &mut RunMetrics, host: Option<LabHost>, end: blkqos_core::Instant) {
    if let (Some(w), Some((_, util))) = (
        host.and_then(|h| h.disk_util_window_ns),
        m.get_mut("disk.util"),
    ) {
        let run_ns = end.as_ns() as f64;
        *util *= run_ns / (run_ns + w as f64);
    }
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
        Kind::Vrate => (lo * 0.9, hi * 1.1),
        Kind::Trace => (lo - 0.1 * lo.abs(), hi + 0.1 * hi.abs()),
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
    /// Each recorded run's value, ascending.
    pub real_values: Vec<f64>,
    /// Each seed's value, seed 1 first.
    pub sim_values: Vec<f64>,
}

/// `--traces`: the kernel traces' numbers, and where blkqos's own
/// `--ktrace` of each job and seed is kept (`--keep-traces=DIR`: as
/// `DIR/KERNEL/JOB-seedN.txt`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceRequest<'a> {
    pub keep: Option<&'a Path>,
}

/// Compare one job on one kernel (`traces`: the traces' numbers only).
pub fn compare_job(
    lab: &Path,
    kernel: &str,
    job: &LabJob,
    overrides: &[(String, String)],
    seeds: u64,
    engine: bool,
    traces: Option<TraceRequest>,
) -> Result<Vec<Row>> {
    let profile = KernelProfile::for_release(kernel)
        .with_context(|| format!("lab/fixtures/{kernel}: no blkqos profile for this kernel"))?;
    let (mut real, n) = real_spreads(lab, kernel, job, engine)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    // the traces' numbers are shown on their own (`--traces`), not judged
    real.retain(|_, s| (s.kind == Some(Kind::Trace)) == traces.is_some());
    if real.is_empty() {
        return Ok(Vec::new());
    }
    if engine {
        // blkqos's real engine in the lab against the same kernel's own
        // enforcement: the kernel's runs are the reference
        let (mut k, _) = real_spreads(lab, kernel, job, false)?;
        // the real engine's runs keep no per-second io.stat: no vrate
        k.retain(|name, _| !name.starts_with("vrate."));
        return Ok(rows(kernel, job, &k, &real, profile.jiffy_ns()));
    }
    let host = LabHost::measure(lab, kernel)?.map(|h| LabHost {
        mem_free_bytes: recorded_mem_free(lab, kernel, job),
        ..h
    });
    let recorded = Recorded {
        max_sectors: recorded_max_sectors(lab, kernel, job),
        fio_starts_ns: recorded_fio_starts(lab, kernel, job),
    };
    let keep = traces.and_then(|t| t.keep).map(|d| d.join(kernel));
    let traces = traces.map(|_| TraceRequest {
        keep: keep.as_deref(),
    });
    let sim = sim_spreads(job, &profile, overrides, host, seeds, &recorded, traces)?;
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
        let mut real_values = r.values.clone();
        real_values.sort_by(f64::total_cmp);
        out.push(Row {
            kernel: kernel.to_string(),
            job: job.name.clone(),
            metric: name.clone(),
            kind,
            real: (r.min(), r.max()),
            sim: (smin, smax),
            ok,
            real_values,
            sim_values: sim.get(name).map(|s| s.values.clone()).unwrap_or_default(),
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
        Kind::Share | Kind::Util | Kind::Vrate => format!("{v:.1}"),
        Kind::Trace if v.abs() >= 100.0 => format!("{v:.0}"),
        Kind::Trace if v.abs() >= 1.0 => format!("{v:.1}"),
        Kind::Trace => format!("{v:.3}"),
    }
}

pub(crate) fn fmt_range(kind: Kind, r: (f64, f64)) -> String {
    if r.0 == r.1 || r.1.is_nan() {
        fmt_value(kind, r.0)
    } else {
        format!("{}–{}", fmt_value(kind, r.0), fmt_value(kind, r.1))
    }
}

/// The known misses: `[[miss]] kernel job metric why`. `kernel` is a
/// release directory name, a profile name (`6.12`) or `*`; `job` and
/// `metric` may hold `*` wildcards (`c0*`, `*.max`). An entry must still
/// cover at least one miss, or it is stale.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub misses: Vec<ExpectedMiss>,
}

/// One `[[miss]]` entry.
#[derive(Clone, Debug)]
pub struct ExpectedMiss {
    pub kernel: String,
    pub job: String,
    pub metric: String,
    pub why: String,
}

/// `*` matches any run of characters.
fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first)
        || !s[first.len()..].ends_with(last)
        || s.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

impl Expected {
    pub fn load(path: &Path) -> Result<Expected> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let v: toml::Value =
            toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?;
        let mut misses = Vec::new();
        for (i, m) in v
            .get("miss")
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let get = |k: &str| -> Result<String> {
                m.get(k)
                    .and_then(|x| x.as_str())
                    .map(str::to_string)
                    .with_context(|| {
                        format!("{}: [[miss]] #{} has no `{k}`", path.display(), i + 1)
                    })
            };
            misses.push(ExpectedMiss {
                kernel: get("kernel")?,
                job: get("job")?,
                metric: get("metric")?,
                why: get("why")?,
            });
        }
        Ok(Expected { misses })
    }

    /// The entry that lists this row's metric, if any.
    fn covers(&self, row: &Row) -> Option<usize> {
        self.misses
            .iter()
            .position(|m| m.applies_to(row) && glob(&m.metric, &row.metric))
    }
}

impl ExpectedMiss {
    /// Same kernel (release, profile name or `*`) and a matching job.
    fn applies_to(&self, row: &Row) -> bool {
        let short = KernelProfile::for_release(&row.kernel).map(|p| p.name);
        (self.kernel == "*" || self.kernel == row.kernel || Some(self.kernel.as_str()) == short)
            && glob(&self.job, &row.job)
    }
}

/// `blkqos lab`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCmd {
    /// Compare blkqos with the real kernels' recorded runs.
    #[command(long_about = HELP)]
    Compare(Box<CompareArgs>),
    /// One kernel-format trace's numbers as the JSON a lab run keeps.
    ReduceTrace {
        /// A trace as /sys/kernel/tracing/trace prints it
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// `blkqos lab compare`'s options.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The lab: matrix.toml, matrix/ and fixtures/
    #[arg(long, value_name = "DIR", default_value = "lab")]
    lab: PathBuf,
    /// Only this recorded kernel (a release or a profile name; repeatable)
    #[arg(long = "kernel", value_name = "K")]
    kernels: Vec<String>,
    /// Only jobs whose name contains SUBSTR (repeatable)
    #[arg(long = "job", value_name = "SUBSTR")]
    jobs: Vec<String>,
    /// Simulated runs per job, seeds 1..N
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = positive)]
    seeds: u64,
    /// The misses that are expected ([[miss]] kernel, job, metric, why)
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Markdown tables
    #[arg(long)]
    markdown: bool,
    /// One line per kernel and job
    #[arg(long)]
    summary: bool,
    /// Under each metric, every recorded run's value (ascending) and every
    /// seed's (seed 1 first): the spread's shape, two modes or one
    #[arg(long, conflicts_with = "summary")]
    values: bool,
    /// Compare blkqos's real engine in the lab with the kernel's own enforcement
    #[arg(long = "real-engine")]
    engine: bool,
    /// The kernel traces' numbers beside blkqos's own, shown and not judged
    #[arg(long)]
    traces: bool,
    /// With --traces: the numbers as an HTML page
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// With --traces: keep blkqos's own trace of each job and seed under DIR
    #[arg(long = "keep-traces", value_name = "DIR")]
    keep_traces: Option<PathBuf>,
    /// Replace the kernel profile's blk-throttle variant (what-if)
    #[arg(long, value_name = "V")]
    throttle: Option<String>,
    /// Replace the kernel profile's iocost variant (what-if)
    #[arg(long, value_name = "V")]
    iocost: Option<String>,
    /// Replace the kernel profile's HZ (what-if)
    #[arg(long, value_name = "N")]
    hz: Option<String>,
    /// Replace blk-wbt's latency target (what-if)
    #[arg(long = "wbt_lat_usec", value_name = "US")]
    wbt_lat_usec: Option<String>,
}

/// `--seeds=N`: at least one run.
fn positive(v: &str) -> Result<u64, String> {
    v.parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| "expected a positive integer".to_string())
}

impl CompareArgs {
    /// Controller choices over the kernel's profile (`--throttle=V`,
    /// `--iocost=V`, `--hz=N`, `--wbt_lat_usec=US`): what-if comparisons,
    /// each checked as a `[controllers]` option.
    fn overrides(&self) -> Result<Vec<(String, String)>> {
        let given = [
            ("throttle", &self.throttle),
            ("iocost", &self.iocost),
            ("hz", &self.hz),
            ("wbt_lat_usec", &self.wbt_lat_usec),
        ];
        let mut out = Vec::new();
        for (k, v) in given {
            let Some(v) = v else { continue };
            blkqos_core::cgroupfs::ControllerOptions::default()
                .set(k, v)
                .map_err(|m| anyhow::anyhow!("--{m}"))?;
            out.push((k.to_string(), v.clone()));
        }
        Ok(out)
    }
}

/// `blkqos lab --help` and `blkqos lab compare --help`.
pub const HELP: &str = "\
Compare blkqos with real kernels.

  blkqos lab compare [--lab=DIR] [--kernel=K]... [--job=SUBSTR]... [--seeds=N]
                     [--expect=FILE] [--markdown] [--real-engine]
                     [--throttle=V] [--iocost=V] [--hz=N] [--summary | --values]
                     [--traces [--summary] [--report=FILE.html]
                               [--keep-traces=DIR]]
  blkqos lab reduce-trace FILE

DIR (default: lab) holds matrix.toml, the scenarios in matrix/ and the real
kernels' runs in fixtures/KVER/runN/JOB/ (lab/record.sh records them). Each
job runs in the simulator under the kernel's profile (--kernel) with seeds
1..N (default 5); every metric (IOPS, bandwidth, completion-latency
percentiles and max, iocost device-time shares, %util) must fall in the
real runs' range: rates +-3%, latencies +-max(10%, one jiffy), shares +-5
points, %util +-2 points. --expect: the misses must be exactly those FILE
lists ([[miss]] kernel, job, metric, why); exit 1 otherwise.
--real-engine compares blkqos's real engine in the lab with the kernel's
own enforcement instead. --throttle, --iocost and --hz replace one choice of
the kernel's profile (what-if comparisons). --summary: one line per kernel
and job (matched metrics, and each miss with both ranges). --values: under
each metric, every recorded run's value (ascending) and every seed's (seed
1 first), to see a spread's shape (two modes or one).
--traces puts the numbers of the kernel's own traces (iocost's vrate and
busy level, activations, request gaps, blk-throttle's rounds) beside those
of blkqos's --ktrace, shown and not judged (close/differs); --report writes
them as an HTML page with a vrate chart per kernel and job; --keep-traces
writes blkqos's own trace of each job and seed to DIR/KERNEL/JOB-seedN.txt
and its fio JSON reports to DIR/KERNEL/JOB-seedN.fioI.json
(the kernel's own are under the lab's traces/ and fixtures/). reduce-trace prints
one trace's numbers as JSON.";

/// `--report` and `--keep-traces` need `--traces`.
fn check_trace_args(a: &CompareArgs) -> Result<()> {
    if a.report.is_some() && !a.traces {
        bail!(
            "blkqos lab compare: --report draws the kernel traces' numbers: give --traces with it"
        );
    }
    if a.keep_traces.is_some() && !a.traces {
        bail!("blkqos lab compare: --keep-traces keeps the traces --traces makes: give --traces with it");
    }
    Ok(())
}

/// `blkqos lab compare ...`: prints the table; with `--expect`, fails on
/// a miss the file does not list or a listed miss that now matches.
pub fn run(cmd: &LabCmd) -> Result<bool> {
    let a = match cmd {
        LabCmd::ReduceTrace { file } => return reduce_trace(file),
        LabCmd::Compare(a) => a,
    };
    check_trace_args(a)?;
    let overrides = a.overrides()?;
    let traces = a.traces.then_some(TraceRequest {
        keep: a.keep_traces.as_deref(),
    });
    let kernels = selected_kernels(a)?;
    let matrix = load_matrix(&a.lab)?;
    let expected = match &a.expect {
        Some(p) => Some(Expected::load(p)?),
        None => None,
    };
    let mut pairs = Vec::new();
    for k in &kernels {
        match LabHost::measure(&a.lab, k)? {
            Some(h) => log::info!("{}", describe_host(k, &h)),
            None => log::info!("lab: {k}: no calibration runs: the scenarios' own host model"),
        }
        for job in &matrix {
            if job.calibration
                || (!a.jobs.is_empty() && !a.jobs.iter().any(|s| job.name.contains(s.as_str())))
            {
                continue;
            }
            pairs.push((k, job));
        }
    }
    let compare = |&(k, job): &(&String, &LabJob)| {
        compare_job(&a.lab, k, job, &overrides, a.seeds, a.engine, traces)
    };
    // simulated jobs on every core (each is deterministic: the rows come
    // out in the same order either way); the real engine's one at a time
    let rows: Vec<Vec<Row>> = if a.engine {
        pairs.iter().map(compare).collect::<Result<_>>()?
    } else {
        use rayon::prelude::*;
        pairs.par_iter().map(compare).collect::<Result<_>>()?
    };
    let all: Vec<Row> = rows.into_iter().flatten().collect();
    let text = if a.summary {
        render_summary(&all, a.markdown)
    } else {
        render(&all, a.markdown, a.engine, a.values)
    };
    blkqos_experiment::stdout::write_out(&text)?;
    if let Some(p) = &a.report {
        std::fs::write(p, trace_report::render(&all)?)
            .with_context(|| format!("cannot write {}", p.display()))?;
        log::info!("lab: wrote {}", p.display());
    }
    Ok(match &expected {
        Some(exp) => judge(exp, &all),
        None => true,
    })
}

/// `blkqos lab reduce-trace FILE`: a kernel-format trace's `trace.*`
/// numbers as the JSON a lab run keeps (`trace.json`).
fn reduce_trace(path: &Path) -> Result<bool> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let m = ktrace::reduce(&text);
    if m.is_empty() {
        bail!(
            "{}: no block_rq_issue event: not a trace of a run",
            path.display()
        );
    }
    blkqos_experiment::stdout::write_out(&ktrace::to_json(&m))?;
    Ok(true)
}

/// The recorded kernels the arguments select (all by default).
fn selected_kernels(a: &CompareArgs) -> Result<Vec<String>> {
    let mut kernels = recorded_kernels(&a.lab)?;
    if !a.kernels.is_empty() {
        kernels.retain(|k| {
            a.kernels.iter().any(|want| {
                k == want || KernelProfile::for_release(k).is_some_and(|p| p.name == want)
            })
        });
        if kernels.is_empty() {
            bail!(
                "no recorded kernel matches {:?} under {}/fixtures",
                a.kernels,
                a.lab.display()
            );
        }
    }
    Ok(kernels)
}

/// What `lab compare` prints of a kernel's measured host.
fn describe_host(k: &str, h: &LabHost) -> String {
    let mut s = format!(
        "lab: {k}: host measured by the calibration jobs: submit {:.1} us, sleeps wake up late by U[0, {:.1} us]",
        h.submit_ns as f64 / 1e3,
        h.wake_jitter_ns as f64 / 1e3,
    );
    if let Some((p50, p99)) = h.completion_late_ns {
        s += &format!(
            ", null_blk completes late by {:.1} us (median), {:.1} us (p99)",
            p50 as f64 / 1e3,
            p99 as f64 / 1e3
        );
    }
    if let Some((busy, idle)) = h.completion_late_by_cpu_ns {
        s += &format!(
            "; a request issued at once completes late by {:.1} us (median) while its submitter runs, {:.1} us while it sleeps (the untraced runs' device time)",
            busy.0 as f64 / 1e3,
            idle.0 as f64 / 1e3
        );
    }
    if let Some(r) = h.copy_bytes_per_s {
        s += &format!(", page cache copies at {:.1} MB/s", r as f64 / 1e6);
    }
    if let Some(r) = h.null_copy_bytes_per_s {
        s += &format!(", memory-backed null_blk at {:.1} MB/s", r as f64 / 1e6);
    }
    if let Some(w) = h.disk_util_window_ns {
        s += &format!(", fio's %util window {:.0} ms past the run", w as f64 / 1e6);
    }
    if let Some(q) = h.iocost_timer_late_ns {
        s += &format!(
            ", iocost's period timer runs late by {:.2} ms (median), {:.2} ms (p90) after a run on time, {:.2} and {:.2} ms after one a tick late",
            q[0][2] as f64 / 1e6,
            q[0][4] as f64 / 1e6,
            q[1][2] as f64 / 1e6,
            q[1][4] as f64 / 1e6
        );
    }
    s
}

/// The comparisons against the expected misses: `false` when a miss is
/// not listed, or a listed one no longer happens (each said on stderr).
fn judge(exp: &Expected, all: &[Row]) -> bool {
    let mut ok = true;
    let mut used = vec![0usize; exp.misses.len()];
    let mut exact_ok: Vec<(usize, &Row)> = Vec::new();
    for r in all.iter().filter(|r| r.kind != Kind::Trace) {
        match (r.ok, exp.covers(r)) {
            (false, Some(i)) => used[i] += 1,
            (true, Some(i)) => exact_ok.push((i, r)),
            (false, None) => {
                ok = false;
                log::error!(
                    "lab: {} {} {}: blkqos {} outside the real {} (not a listed miss)",
                    r.kernel,
                    r.job,
                    r.metric,
                    fmt_range(r.kind, r.sim),
                    fmt_range(r.kind, r.real)
                );
            }
            (true, None) => {}
        }
    }
    // an entry without wildcards that now matches, or any entry that
    // covers no miss at all, is stale
    for (i, r) in exact_ok {
        let m = &exp.misses[i];
        if !m.job.contains('*') && !m.metric.contains('*') {
            ok = false;
            log::error!(
                "lab: {} {} {}: now matches; remove it from the expected misses",
                r.kernel,
                r.job,
                r.metric
            );
        }
    }
    let compared: Vec<&str> = all.iter().map(|r| r.kernel.as_str()).collect();
    for (m, &u) in exp.misses.iter().zip(&used) {
        if u > 0 {
            log::info!(
                "lab: expected: {} {} {} ({u} metric{}): {}",
                m.kernel,
                m.job,
                m.metric,
                if u == 1 { "" } else { "s" },
                m.why
            );
        }
        let in_scope = all.iter().any(|r| m.applies_to(r));
        if in_scope && u == 0 && !compared.is_empty() {
            ok = false;
            log::error!(
                "lab: expected miss {} {} {} covers no miss any more; remove it",
                m.kernel,
                m.job,
                m.metric
            );
        }
    }
    ok
}

/// Per kernel and job: how many metrics match, and which miss (with the
/// real and blkqos ranges).
pub fn render_summary(rows: &[Row], markdown: bool) -> String {
    let mut out = String::new();
    // a trace's numbers are shown, not judged: `close`, `differs`
    let traces = !rows.is_empty() && rows.iter().all(|r| r.kind == Kind::Trace);
    let (matched, missed, inside_what) = if traces {
        ("close", "differs", "close to the real traces")
    } else {
        ("match", "misses", "inside the real spread")
    };
    if markdown {
        out += &format!(
            "| kernel | job | {matched} | {missed} (real → blkqos) |\n|---|---|---|---|\n"
        );
    } else {
        if traces {
            out += "# close: trace numbers whose blkqos range (over the seeds) lies inside the\n\
                    # kernel's traced runs' range widened by 10%; the others read\n\
                    # `metric real-range → blkqos-range`\n";
        } else {
            out += "# match: metrics whose blkqos range (over the seeds) lies inside the real\n\
                    # kernel's run-to-run range, of those compared; a miss reads\n\
                    # `metric real-range → blkqos-range`\n";
        }
        out += &format!(
            "{:<6} {:<24} {:>7} {missed} (real → blkqos)\n",
            "kernel", "job", matched
        );
    }
    let mut i = 0;
    while i < rows.len() {
        let (k, j) = (&rows[i].kernel, &rows[i].job);
        let n = rows[i..]
            .iter()
            .take_while(|r| &r.kernel == k && &r.job == j)
            .count();
        let group = &rows[i..i + n];
        let ok = group.iter().filter(|r| r.ok).count();
        let misses: Vec<String> = group
            .iter()
            .filter(|r| !r.ok)
            .map(|r| {
                format!(
                    "{} {} → {}",
                    r.metric,
                    fmt_range(r.kind, r.real),
                    fmt_range(r.kind, r.sim)
                )
            })
            .collect();
        let short = KernelProfile::for_release(k).map_or(k.as_str(), |p| p.name);
        if markdown {
            out += &format!("| {short} | {j} | {ok}/{n} | {} |\n", misses.join("; "));
        } else {
            out += &format!("{short:<6} {j:<24} {ok:>3}/{n:<3} {}\n", misses.join("; "));
        }
        i += n;
    }
    let inside = rows.iter().filter(|r| r.ok).count();
    let pct = if rows.is_empty() {
        0.0
    } else {
        100.0 * inside as f64 / rows.len() as f64
    };
    let total = format!("{inside}/{}", rows.len());
    if markdown {
        out += &format!("| all | | {total} ({pct:.0}%) | |\n");
    } else {
        out += &format!(
            "{:<6} {:<24} {total:>7} ({pct:.0}% {inside_what})\n",
            "all", ""
        );
    }
    out
}

/// The comparison as a text or markdown table.
pub fn render(rows: &[Row], markdown: bool, engine: bool, values: bool) -> String {
    let (a, b) = if engine {
        ("kernel", "blkqos real engine")
    } else {
        ("real", "blkqos sim")
    };
    let mut out = String::new();
    let w = rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(0)
        .max(22);
    if markdown {
        out += &format!("| kernel | job | metric | {a} | {b} | |\n|---|---|---|---|---|---|\n");
    } else {
        out += &format!(
            "{:<22} {:<24} {:<w$} {:>17} {:>17}\n",
            "kernel", "job", "metric", a, b
        );
    }
    for r in rows {
        // a trace's numbers are shown, not judged
        let verdict = match (r.kind, r.ok) {
            (Kind::Trace, true) => "close",
            (Kind::Trace, false) => "differs",
            (_, true) => "ok",
            (_, false) => "MISS",
        };
        let (real, sim) = (fmt_range(r.kind, r.real), fmt_range(r.kind, r.sim));
        if markdown {
            out += &format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.kernel, r.job, r.metric, real, sim, verdict
            );
        } else {
            out += &format!(
                "{:<22} {:<24} {:<w$} {:>17} {:>17} {}\n",
                r.kernel, r.job, r.metric, real, sim, verdict
            );
        }
        if values {
            out += &values_line(r, markdown);
        }
    }
    out
}

/// `--values`: a row's recorded runs (ascending) and seeds (in order).
fn values_line(r: &Row, markdown: bool) -> String {
    let list = |v: &[f64]| {
        v.iter()
            .map(|&x| fmt_value(r.kind, x))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (runs, seeds) = (list(&r.real_values), list(&r.sim_values));
    if markdown {
        format!("| | | | runs: {runs} | seeds: {seeds} | |\n")
    } else {
        format!("    runs: {runs}\n    seeds: {seeds}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lab")
    }

    /// The guest's completion lateness is read from the h02 runs that
    /// carry a trace (6.12: runs 6 and 7, `trace.d2c.p50` 0.092 and 0.085
    /// ms, `p99` 0.639 and 0.337 ms), their mean less the 20 µs device.
    #[test]
    fn completion_lateness_is_the_h02_traces_less_the_device() {
        let late = completion_lateness(&lab(), "6.12.117+deb13-amd64", "h02-qd1-roundtrip");
        assert_eq!(late, Some((68_500, 468_000)));
        let host = LabHost::measure(&lab(), "6.12.117+deb13-amd64")
            .unwrap()
            .expect("6.12 has calibration runs");
        assert_eq!(host.completion_late_ns, late);
        // the log-normal's mean is above its median (the tail)
        let mean = lognormal_mean(68_500, 468_000);
        assert!((90_000.0..100_000.0).contains(&mean), "{mean}");
        assert_eq!(
            completion_lateness(&lab(), "no-such-kernel", "h02-qd1-roundtrip"),
            None
        );
        // after a sleep: h01's runs with a trace (6.1: d2c p50 0.122 and
        // 0.133 ms, p99 1.374 and 1.177 ms), later than h02's
        let host = LabHost::measure(&lab(), "6.1.0-50-amd64").unwrap().unwrap();
        assert_eq!(
            host.completion_late_after_sleep_ns,
            Some((107_500, 1_255_500))
        );
        assert!(host.completion_late_ns.unwrap().0 < 107_500);
    }

    /// A request served at once is late by what its submitter's CPU runs
    /// at the expiry: each law's mean is the untraced runs' device time per
    /// read less the 20 us completion (6.12: h02's 55.0 us with fio asleep,
    /// h03's 31.3 with fio submitting; the traced runs 6 and 7, slower, are
    /// left out), its spread h02's traced lateness's.
    #[test]
    fn lateness_by_cpu_is_the_untraced_runs_device_time() {
        let k = "6.12.117+deb13-amd64";
        let per_read = |job| untraced_device_ns_per_read(&lab(), k, job).unwrap();
        assert!((per_read("h02-qd1-roundtrip") - 55_020.0).abs() < 100.0);
        assert!((per_read("h03-qd32-pipelined") - 31_320.0).abs() < 100.0);
        let host = LabHost::measure(&lab(), k).unwrap().unwrap();
        let (busy, idle) = host.completion_late_by_cpu_ns.unwrap();
        let spread = |(p50, p99): (u64, u64)| p99 as f64 / p50 as f64;
        let traced = host.completion_late_ns.unwrap();
        for (law, device_ns) in [(busy, 31_320.0), (idle, 55_020.0)] {
            assert!((spread(law) - spread(traced)).abs() < 0.01, "{law:?}");
            let mean = lognormal_mean(law.0, law.1);
            assert!(
                (mean - (device_ns - 20_000.0)).abs() < 150.0,
                "{law:?}: {mean}"
            );
        }
        // the traced lateness's own mean is far above both
        assert!(lognormal_mean(traced.0, traced.1) > 90_000.0);
    }

    /// fio's %util window: a run whose device was busy 2,900 ms of a
    /// 3,000 ms job and whose fio read 93.5% had a 3,101.6 ms window; the
    /// median over runs is taken, and a kernel without runs has none.
    #[test]
    fn disk_util_window_is_io_ticks_over_util_less_the_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("fixtures/k");
        let run = |n: u32, job: &str, ticks: u64, util: f64| {
            let d = k.join(format!("run{n}/{job}"));
            std::fs::create_dir_all(&d).unwrap();
            let stat = |t: u64| format!("254 0 nullb1 1 0 8 1 0 0 0 0 0 {t} 1 0 0 0 0 0 0\n");
            std::fs::write(d.join("diskstats.start"), stat(100)).unwrap();
            std::fs::write(d.join("diskstats.end"), stat(100 + ticks)).unwrap();
            let fio = serde_json::json!({
                "jobs": [{"job_runtime": 3000}],
                "disk_util": [{"util": util}],
            });
            std::fs::write(d.join("fio0.json"), fio.to_string()).unwrap();
        };
        run(1, "h02-qd1-roundtrip", 2900, 93.5);
        run(1, "h03-qd32-pipelined", 2900, 2900.0 / 3200.0 * 100.0);
        run(2, "h03-qd32-pipelined", 2900, 2900.0 / 3050.0 * 100.0);
        // windows of 3101.6, 3200 and 3050 ms: the median 3101.6
        let w = disk_util_window(dir.path(), "k").unwrap();
        assert!((101_500_000..101_700_000).contains(&w), "{w}");
        assert_eq!(disk_util_window(dir.path(), "none"), None);
    }

    #[test]
    fn summary_has_a_legend_a_header_and_a_total() {
        let row = |job: &str, metric: &str, ok: bool| Row {
            kernel: "6.12.117+deb13-amd64".into(),
            job: job.into(),
            metric: metric.into(),
            kind: Kind::Rate,
            real: (100.0, 110.0),
            sim: if ok { (105.0, 106.0) } else { (90.0, 91.0) },
            ok,
            real_values: vec![100.0, 110.0],
            sim_values: if ok {
                vec![105.0, 106.0]
            } else {
                vec![90.0, 91.0]
            },
        };
        let rows = [
            row("t01", "a.read.iops", true),
            row("t01", "a.read.bw", false),
            row("t02", "a.read.iops", true),
        ];
        let text = render_summary(&rows, false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# match:"), "{text}");
        assert!(
            lines[3].starts_with("kernel ") && lines[3].contains("match"),
            "{text}"
        );
        assert!(
            lines[4].contains("t01") && lines[4].contains("1/2"),
            "{text}"
        );
        assert!(lines[4].contains("a.read.bw"), "{text}");
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("all") && last.contains("2/3 (67%"),
            "{text}"
        );
        let md = render_summary(&rows, true);
        assert!(md.ends_with("| all | | 2/3 (67%) | |\n"), "{md}");
        // a trace's numbers are shown as close or differing, not judged
        let traces: Vec<Row> = rows
            .iter()
            .map(|r| Row {
                kind: Kind::Trace,
                ..r.clone()
            })
            .collect();
        let text = render_summary(&traces, false);
        assert!(text.starts_with("# close:"), "{text}");
        assert!(text.contains(" close differs (real → blkqos)"), "{text}");
        assert!(
            text.ends_with("2/3 (67% close to the real traces)\n"),
            "{text}"
        );
        let text = render(&traces, false, false, false);
        assert!(
            text.contains("a.read.bw") && text.contains(" differs\n"),
            "{text}"
        );
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob("c0*", "c06-seed001-4k"));
        assert!(glob("*.max", "cgA.mixed.max"));
        assert!(glob("*.read.p9*", "a.read.p99.9"));
        assert!(glob("t01-riops-seed000", "t01-riops-seed000"));
        assert!(!glob("t01", "t01-riops-seed000"));
        assert!(!glob("*.max", "cgA.mixed.p99"));
        assert!(!glob("a*a", "a"));
        assert!(glob("*", ""));
    }

    #[test]
    fn tolerances_widen_the_real_range() {
        let s = Spread {
            kind: Some(Kind::Latency),
            values: vec![50e6, 60e6],
        };
        // 10% of 50 ms is more than a 4 ms jiffy; 10% of 60 ms too
        assert_eq!(accepted(Kind::Latency, &s, 4e6), (45e6, 66e6));
        let s = Spread {
            kind: Some(Kind::Latency),
            values: vec![20e3, 30e3],
        };
        // a jiffy is more than 10% of 30 us
        assert_eq!(accepted(Kind::Latency, &s, 4e6), (0.0, 4.03e6));
        let r = Spread {
            kind: Some(Kind::Rate),
            values: vec![100.0],
        };
        assert_eq!(accepted(Kind::Rate, &r, 4e6), (97.0, 103.0));
        assert_eq!(accepted(Kind::Share, &r, 4e6), (95.0, 105.0));
        assert_eq!(accepted(Kind::Util, &r, 4e6), (98.0, 102.0));
    }
}
