//! Jobs that share fewer CPUs than they are (`HostModel::cpus`): a job
//! that wakes waits until the running one sleeps, so on one CPU each job
//! submits its whole batch before the other runs, where with a CPU each
//! their submissions interleave.

use blkqos_core::{ControllerStack, GroupId, Instant};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{HostModel, RunOptions, RunResult};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode, SizeSpec};

const KIB: u64 = 1024;
const REGION: u64 = 1 << 20;

/// Two 4 KiB readers at `iodepth` (the first on the device's first MiB,
/// the second on its second) on `device`, each submit call `submit_ns`,
/// sharing `cpus` CPUs: the run, with its request trace.
fn two_jobs(
    rw: RwMode,
    iodepth: u32,
    size: u64,
    device: &str,
    submit_ns: u64,
    cpus: u32,
) -> RunResult {
    two_jobs_with(rw, iodepth, size, device, submit_ns, cpus, |_, _| {})
}

/// [`two_jobs`] with `tweak(k, spec)` applied to job `k`'s spec.
fn two_jobs_with(
    rw: RwMode,
    iodepth: u32,
    size: u64,
    device: &str,
    submit_ns: u64,
    cpus: u32,
    tweak: impl Fn(u64, &mut JobSpec),
) -> RunResult {
    let setups = (0..2)
        .map(|k| {
            let mut s = JobSpec::new(if k == 0 { "a" } else { "b" });
            s.rw = rw;
            s.bs = PerDir::all(4 * KIB);
            s.ioengine = IoEngine::Libaio;
            s.iodepth = iodepth;
            s.direct = true;
            s.size = Some(SizeSpec::Bytes(size));
            tweak(k, &mut s);
            JobSetup {
                spec: s,
                clone: 0,
                group: GroupId::ROOT,
                region_start: k * REGION,
                region_len: REGION,
                seed: 1,
                files: Vec::new(),
            }
        })
        .collect();
    let mut backend = DeviceSpec::parse(device).expect("device").backend();
    let opts = RunOptions {
        hz: 1000,
        trace_requests: true,
        host: HostModel {
            submit_ns,
            cpus,
            ..HostModel::default()
        },
        ..RunOptions::default()
    };
    blkqos_driver::run(
        &mut backend,
        &mut ControllerStack::pass_through(),
        setups,
        &opts,
    )
    .expect("run")
}

/// Two jobs reading their MiB each at QD4 (the first the device's first
/// MiB, the second its second) on a null_blk that completes
/// in 100 µs, each submit call 50 µs, the jobs sharing `cpus` CPUs.
fn two_readers(cpus: u32) -> RunResult {
    let device = "null,completion_ns=100000,size=1g";
    two_jobs(RwMode::Read, 4, REGION, device, 50_000, cpus)
}

/// The jobs' requests in the order they entered the block layer, as runs
/// of one job's: their mean length.
fn mean_run(r: &RunResult) -> f64 {
    let mut reqs: Vec<(Instant, u64)> = r
        .request_trace
        .iter()
        .map(|q| (q.submitted_at, q.offset / REGION))
        .collect();
    reqs.sort();
    let runs = 1 + reqs.windows(2).filter(|w| w[0].1 != w[1].1).count();
    reqs.len() as f64 / runs as f64
}

#[test]
fn one_cpu_runs_one_job_until_it_sleeps() {
    let shared = two_readers(1);
    let own = two_readers(0);
    for r in [&shared, &own] {
        assert_eq!(r.request_trace.len(), 512, "every read completes");
    }
    // one CPU: a job submits its four, sleeps in io_getevents, then the
    // other job reaps and submits its four
    let (shared_run, own_run) = (mean_run(&shared), mean_run(&own));
    assert!(shared_run >= 3.5, "one CPU: runs of {shared_run}");
    assert!(own_run <= 1.5, "a CPU each: runs of {own_run}");
    // the submissions, one after another on one CPU, take longer
    let end = |r: &RunResult| {
        r.request_trace
            .iter()
            .map(|q| q.completed_at)
            .max()
            .unwrap()
    };
    assert!(end(&shared) > end(&own));
}

/// Two CPUs for two jobs is no limit at all: the same run as without one.
#[test]
fn as_many_cpus_as_jobs_changes_nothing() {
    let (a, b) = (two_readers(2), two_readers(0));
    assert_eq!(a.request_trace, b.request_trace);
}

/// Two readers at QD16 on a 4 MiB/s null_blk (20 requests a tick) whose worker takes 50 µs per
/// request it dispatches after a tick (and 10 µs per completion): the
/// worker's bursts, as (its first dispatch, the last completion), and
/// when every request entered the block layer.
fn bursts_and_submissions(cpus: u32) -> (Vec<(Instant, Instant)>, Vec<Instant>) {
    let r = two_jobs(
        RwMode::RandRead,
        16,
        REGION / 2,
        "null,completion_ns=20000,mbps=4,size=1g,dispatch_p50_ns=50000,dispatch_p90_ns=50000,\
         dispatch_p99_ns=50000,irq_p50_ns=10000,irq_p90_ns=10000,irq_p99_ns=10000",
        20_000,
        cpus,
    );
    // the worker's dispatches (a request held for a tick), split where
    // 5 ms pass between two
    let mut held: Vec<(Instant, Instant)> = r
        .request_trace
        .iter()
        .filter(|q| q.dispatched_at > q.submitted_at)
        .map(|q| (q.dispatched_at, q.completed_at))
        .collect();
    held.sort();
    let mut bursts: Vec<(Instant, Instant)> = Vec::new();
    for (d, c) in held {
        match bursts.last_mut() {
            Some(b) if d.as_ns() < b.1.as_ns() + 5_000_000 => b.1 = b.1.max(c),
            _ => bursts.push((d, c)),
        }
    }
    let submitted = r.request_trace.iter().map(|q| q.submitted_at).collect();
    (bursts, submitted)
}

/// With one CPU the null worker's dispatch of a restarted queue and its
/// completion interrupts hold the CPU the fio processes run on: no request
/// enters the block layer while a tick's burst is being served, where
/// with a CPU each the woken processes submit during it.
#[test]
fn one_cpu_is_the_null_workers_too() {
    let inside = |cpus: u32| {
        let (bursts, submitted) = bursts_and_submissions(cpus);
        assert!(bursts.len() > 20, "bursts: {}", bursts.len());
        submitted
            .iter()
            .filter(|&&s| bursts.iter().any(|&(a, b)| s > a && s < b))
            .count()
    };
    assert_eq!(inside(1), 0);
    assert!(inside(0) > 20, "with a CPU each: {}", inside(0));
}

/// One CPU for a QD1 reader with a 30 µs thinktime and a QD1 reader
/// without, submit calls of 1 ms, a 20 µs device: the sleeper's time
/// often comes while the other holds the CPU inside a submit call, with
/// nothing on the device. It waits for the CPU (the pass that brings a
/// free one), not at its own past wake-up time: the run goes on and ends,
/// every read done, no two reads entering the block layer within one
/// submit call of each other.
#[test]
fn a_sleeper_whose_time_came_waits_for_the_cpu() {
    let r = two_jobs_with(
        RwMode::Read,
        1,
        REGION,
        "null,completion_ns=20000,size=1g",
        1_000_000,
        1,
        |k, s| {
            if k == 0 {
                s.thinktime = blkqos_core::Duration(30_000);
            }
        },
    );
    assert_eq!(r.request_trace.len(), 512, "every read completes");
    // on one CPU two requests never enter the block layer within one
    // submit call of each other
    let mut entered: Vec<Instant> = r.request_trace.iter().map(|q| q.submitted_at).collect();
    entered.sort();
    assert!(entered
        .windows(2)
        .all(|w| w[1] - w[0] >= blkqos_core::Duration(1_000_000)));
}
