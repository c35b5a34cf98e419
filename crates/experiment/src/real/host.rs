//! The engines that do no IO but work the host, on the real engine (one
//! thread per clone, as the metadata engines: [`crate::real::meta`]):
//!
//! * `cpuio` (fio 3.33 engines/cpu.c `fio_cpuio_queue`, `fio_cpuio_init`):
//!   each "IO" burns `cpuchunks` µs of CPU — spinning on the clock
//!   (`cpumode=noop`) or sorting random numbers over and over (`qsort`) —
//!   then the job thinks `cpuchunks × (100 − cpuload) / cpuload` µs, so
//!   the thread uses `cpuload` percent of a CPU. The IO is a zero-byte
//!   read whose latency is the burn.
//! * `exec` (engines/exec.c `fio_exec_queue`, `exec_background`,
//!   `fio_exec_cleanup`): the first IO starts `program` with `arguments`
//!   (`%r`: the runtime in seconds, `%n`: the job's name; split at
//!   spaces), its stdout and stderr in `NAME.stdout` and `NAME.stderr`
//!   with `std_redirect=1`; every later IO waits 50 ms and, once the
//!   runtime is over, sends SIGTERM and waits `grace_time` seconds; the
//!   job then thinks 50 ms. At the job's end the program gets SIGKILL
//!   (and is reaped). Where fio's forked child crashes when the program
//!   cannot be started, blkqos fails the job with the `execvp` error.
//!
//! Both run until their `runtime` (the parser asks for one). The job's
//! usr/sys CPU is its thread's (`getrusage(RUSAGE_THREAD)`, as fio's
//! `update_rusage_stat` for a job that is a thread).

use blkqos_driver::run::JobSetup;
use blkqos_workload::spec::CpuMode;
use blkqos_workload::stats::JobStats;
use blkqos_workload::IoEngine;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant as WallInstant};

/// What one clone of a metadata or host engine did.
pub(crate) struct CloneRun {
    pub stats: JobStats,
    pub error: i32,
}

/// exec's pause per IO and think time (`o->thinktime = 50000`).
const EXEC_PAUSE: Duration = Duration::from_millis(50);

/// Longest single sleep, so that a signal ends a pause soon.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// One zero-byte read that took `ns`.
fn record(stats: &mut JobStats, spec: &blkqos_workload::JobSpec, ns: u64) {
    let d = &mut stats.dirs.read;
    d.total_ios += 1;
    if !spec.gtod_reduce {
        d.clat.add(ns);
        d.lat.add(ns);
        if spec.clat_percentiles {
            d.clat_hist.record(ns);
        }
        stats.lat_buckets.mark(ns);
    }
    stats.issued.read += 1;
    stats.depth_level[JobStats::depth_index(1)] += 1;
    stats.submit_batches[JobStats::batch_index(1)] += 1;
    stats.complete_batches[JobStats::batch_index(1)] += 1;
}

/// Sleep `d`, or until `end` or a stop.
fn pause(d: Duration, end: WallInstant, stop: &AtomicBool) {
    let until = (WallInstant::now() + d).min(end);
    while !stop.load(Ordering::Relaxed) {
        let now = WallInstant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(SLEEP_SLICE));
    }
}

/// Burn the CPU for `d` (fio `usec_spin`, or the qsort loop).
fn burn(mode: CpuMode, d: Duration, seed: &mut u64) {
    let t0 = WallInstant::now();
    match mode {
        CpuMode::Noop => {
            while t0.elapsed() < d {
                std::hint::spin_loop();
            }
        }
        CpuMode::Qsort => {
            let mut v = vec![0u64; 1024];
            while t0.elapsed() < d {
                for x in &mut v {
                    // xorshift64: fresh unsorted numbers each round
                    *seed ^= *seed << 13;
                    *seed ^= *seed >> 7;
                    *seed ^= *seed << 17;
                    *x = *seed;
                }
                v.sort_unstable();
                std::hint::black_box(&v);
            }
        }
    }
}

/// The end of a clone's runtime.
fn end_of(spec: &blkqos_workload::JobSpec, t0: WallInstant) -> WallInstant {
    t0 + Duration::from_nanos(spec.runtime.map_or(0, |r| r.as_ns()))
}

/// A cpuio clone.
fn run_cpu(setup: &JobSetup, stop: &AtomicBool) -> (JobStats, i32) {
    let s = &setup.spec;
    let c = &s.engine.cpu;
    let load = u64::from(c.load_pct.clamp(1, 100));
    let cycle = Duration::from_micros(c.chunk_us);
    let think = Duration::from_micros(c.chunk_us * (100 - load) / load);
    let mut stats = JobStats::default();
    let mut seed = setup.seed | 1;
    let t0 = WallInstant::now();
    let end = end_of(s, t0);
    while !stop.load(Ordering::Relaxed) && WallInstant::now() < end {
        let at = WallInstant::now();
        burn(c.mode, cycle, &mut seed);
        record(&mut stats, s, at.elapsed().as_nanos() as u64);
        pause(think, end, stop);
    }
    (stats, 0)
}

/// exec's `%r` and `%n` (exec.c `expand_variables`).
pub(crate) fn expand(arguments: &str, runtime_s: u64, name: &str) -> String {
    arguments
        .replace("%r", &runtime_s.to_string())
        .replace("%n", name)
}

/// The program's argv: program and expanded arguments split at spaces.
fn argv(spec: &blkqos_workload::JobSpec) -> Vec<String> {
    let x = &spec.engine.exec;
    let runtime_s = spec.runtime.map_or(0, |r| r.as_ns() / 1_000_000_000);
    let line = match &x.arguments {
        Some(a) => format!(
            "{} {}",
            x.program.as_deref().unwrap_or(""),
            expand(a, runtime_s, &spec.name)
        ),
        None => x.program.clone().unwrap_or_default(),
    };
    line.split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Start the program of an exec job.
fn spawn(spec: &blkqos_workload::JobSpec) -> std::io::Result<std::process::Child> {
    use std::process::{Command, Stdio};
    let argv = argv(spec);
    let Some((prog, args)) = argv.split_first() else {
        return Err(std::io::Error::from_raw_os_error(libc_enoent()));
    };
    let mut cmd = Command::new(prog);
    cmd.args(args).stdin(Stdio::null());
    if spec.engine.exec.std_redirect {
        let (out, err) = (
            format!("{}.stdout", spec.name),
            format!("{}.stderr", spec.name),
        );
        log::info!(
            "blkqos: job `{}`: saving output of {} : stdout={out} stderr={err}",
            spec.name,
            argv.join(" ")
        );
        cmd.stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?);
    } else {
        log::info!("blkqos: job `{}`: running {}", spec.name, argv.join(" "));
    }
    cmd.spawn()
}

/// ENOENT: an empty program line.
fn libc_enoent() -> i32 {
    2
}

/// An exec clone.
fn run_exec(setup: &JobSetup, stop: &AtomicBool) -> (JobStats, i32) {
    let s = &setup.spec;
    let mut stats = JobStats::default();
    let t0 = WallInstant::now();
    let end = end_of(s, t0);
    let at = WallInstant::now();
    let mut child = match spawn(s) {
        Ok(c) => c,
        Err(e) => {
            log::info!(
                "blkqos: job `{}`: cannot run {}: {e}",
                s.name,
                argv(s).join(" ")
            );
            stats.total_err += 1;
            let errno = e.raw_os_error().unwrap_or(libc_enoent());
            stats.first_error = errno;
            return (stats, errno);
        }
    };
    record(&mut stats, s, at.elapsed().as_nanos() as u64);
    pause(EXEC_PAUSE, end, stop);
    while !stop.load(Ordering::Relaxed) && WallInstant::now() < end {
        let at = WallInstant::now();
        std::thread::sleep(EXEC_PAUSE);
        if WallInstant::now() > end {
            // a program that already ended has nothing to stop
            let _ = blkqos_engine::signal::terminate(child.id());
            let grace = Duration::from_secs(s.engine.exec.grace_time_s);
            pause(grace, WallInstant::now() + grace, stop);
        }
        record(&mut stats, s, at.elapsed().as_nanos() as u64);
        pause(EXEC_PAUSE, end, stop);
    }
    // fio_exec_cleanup: SIGKILL; blkqos also reaps it
    let _ = child.kill();
    let _ = child.wait();
    (stats, 0)
}

/// Run a cpuio or exec clone; None for any other engine.
pub(crate) fn run_clone(
    setup: &JobSetup,
    run_t0: WallInstant,
    stop: &AtomicBool,
) -> Option<CloneRun> {
    let t0 = WallInstant::now();
    let (mut stats, error) = match setup.spec.ioengine {
        IoEngine::Cpuio => run_cpu(setup, stop),
        IoEngine::Exec => run_exec(setup, stop),
        _ => return None,
    };
    stats.members = 1;
    let took = t0.elapsed();
    // fio's read runtime stays 0: no byte moved (no bandwidth line)
    stats.dirs.read.runtime_ms = 0;
    stats.job_runtime_ms = took.as_millis() as u64;
    stats.elapsed_s = run_t0.elapsed().as_secs_f64().round() as u64;
    Some(CloneRun { stats, error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_runtime_and_name() {
        assert_eq!(expand("-t %r -n %n %r", 30, "job"), "-t 30 -n job 30");
    }

    #[test]
    fn burns_for_the_cycle() {
        let mut seed = 7;
        for mode in [CpuMode::Noop, CpuMode::Qsort] {
            let t0 = WallInstant::now();
            burn(mode, Duration::from_millis(20), &mut seed);
            assert!(t0.elapsed() >= Duration::from_millis(20));
        }
    }
}
