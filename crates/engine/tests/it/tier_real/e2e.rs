//! `blkqos_driver::run` on the real backends: a 1 s randread job with
//! `rate_iops=500` does 500 IOPS ±2%, on each backend.

use crate::util;

use blkqos_core::{ControllerStack, Duration, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::RunOptions;
use blkqos_engine::{host_model, BackendKind, EngineOptions};
use blkqos_workload::{IoEngine, JobSpec, RwMode};

fn rate_iops_500(kind: BackendKind, direct: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e2e.dat");
    let size = 16u64 << 20;
    let Some(mut b) = util::open(
        kind,
        &path,
        EngineOptions {
            direct,
            size_needed: size,
            depth: 32,
            max_io: 4096,
            verify: true,
            ..EngineOptions::default()
        },
    ) else {
        return;
    };
    let mut spec = JobSpec::new("rate");
    spec.rw = RwMode::RandRead;
    spec.ioengine = IoEngine::IoUring;
    spec.iodepth = 4;
    spec.direct = direct;
    spec.time_based = true;
    spec.runtime = Some(Duration::from_secs(1));
    spec.rate_iops.read = Some(500);
    let setup = JobSetup {
        spec,
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: size,
        seed: 7,
        files: Vec::new(),
    };
    let mut stack = ControllerStack::pass_through();
    // wall time is printed, never asserted (docs/TESTING.md: timing belongs
    // to benchmarks)
    let wall = std::time::Instant::now();
    let r = blkqos_driver::run(
        &mut b,
        &mut stack,
        vec![setup],
        &RunOptions {
            host: host_model(),
            ..RunOptions::default()
        },
    )
    .expect("run");
    let wall = wall.elapsed();
    let j = &r.jobs[0];
    let d = &j.stats.dirs.read;
    assert_eq!(j.error, 0, "job error");
    assert_eq!(j.stats.total_err, 0, "IO errors (verify on)");
    assert!(d.runtime_ms > 0);
    let iops = d.total_ios as f64 * 1000.0 / d.runtime_ms as f64;
    eprintln!(
        "{kind} direct={direct}: {} IOs in {} ms = {iops:.1} IOPS (wall {wall:?}, {} batches, {} sleeps)",
        d.total_ios,
        d.runtime_ms,
        b.stats().batches,
        b.stats().sleeps
    );
    assert!(
        (490.0..=510.0).contains(&iops),
        "{kind}: {iops:.1} IOPS is not 500 ±2% ({} IOs / {} ms)",
        d.total_ios,
        d.runtime_ms
    );
    // the rate is paced by sleeping, not spinning: about one sleep per IO
    assert!(b.stats().sleeps >= d.total_ios / 2, "{:?}", b.stats());
    // diskstats count every completed read, the job those it reaped in its runtime
    assert!(
        (d.total_ios..=d.total_ios + 4).contains(&r.disk.ios[0]),
        "diskstats reads {} vs job reads {}",
        r.disk.ios[0],
        d.total_ios
    );
}

#[test]
#[ignore = "tier real"]
fn uring_rate_iops_500_buffered() {
    rate_iops_500(BackendKind::IoUring, false);
}

#[test]
#[ignore = "tier real"]
fn uring_rate_iops_500_direct() {
    rate_iops_500(BackendKind::IoUring, true);
}

#[test]
#[ignore = "tier real"]
fn threads_rate_iops_500_buffered() {
    rate_iops_500(BackendKind::Threads, false);
}

#[test]
#[ignore = "tier real"]
fn threads_rate_iops_500_direct() {
    rate_iops_500(BackendKind::Threads, true);
}
