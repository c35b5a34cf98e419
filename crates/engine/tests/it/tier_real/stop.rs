//! Signals stop a real run early and the driver still returns its results:
//! SIGINT stops it gracefully; SIGINT then SIGTERM (or a second SIGINT)
//! gives up the drain. The process is never ended by them.
//! (One test in this binary: signals are process-wide.)

use crate::util;

use blkqos_core::{ControllerStack, Duration, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::RunOptions;
use blkqos_engine::{host_model, BackendKind, EngineOptions, StopOnSignal};
use blkqos_workload::{IoEngine, JobSpec, RwMode};

#[test]
#[ignore = "tier real"]
fn sigint_stops_a_run_and_keeps_the_results() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let guard = StopOnSignal::install().unwrap();
    let cases = [
        (BackendKind::IoUring, &[SIGINT][..]),
        (BackendKind::Threads, &[SIGINT][..]),
        (BackendKind::IoUring, &[SIGINT, SIGTERM][..]),
        (BackendKind::Threads, &[SIGINT, SIGINT][..]),
    ];
    for (kind, signals) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stop.dat");
        let Some(mut b) = util::open(
            kind,
            &path,
            EngineOptions {
                size_needed: 4 << 20,
                ..EngineOptions::default()
            },
        ) else {
            continue;
        };
        let mut spec = JobSpec::new("long");
        spec.rw = RwMode::RandRead;
        spec.ioengine = IoEngine::IoUring;
        spec.time_based = true;
        spec.runtime = Some(Duration::from_secs(30));
        spec.rate_iops.read = Some(1000);
        let setup = JobSetup {
            spec,
            clone: 0,
            group: GroupId::ROOT,
            region_start: 0,
            region_len: 4 << 20,
            seed: 1,
            files: Vec::new(),
        };
        let sender = std::thread::spawn(move || {
            for &sig in signals {
                std::thread::sleep(std::time::Duration::from_millis(300));
                signal_hook::low_level::raise(sig).unwrap();
            }
        });
        let t0 = std::time::Instant::now();
        let r = blkqos_driver::run(
            &mut b,
            &mut ControllerStack::pass_through(),
            vec![setup],
            &RunOptions {
                host: host_model(),
                stop: Some(guard.flag()),
                abandon: Some(guard.abandon_flag()),
                ..RunOptions::default()
            },
        )
        .unwrap();
        sender.join().unwrap();
        let wall = t0.elapsed();
        assert!(r.interrupted, "{kind}: run not marked interrupted");
        assert_eq!(guard.signal(), Some(SIGINT));
        assert_eq!(guard.exit_status(), Some(130), "the first signal decides");
        assert_eq!(guard.count() as usize, signals.len());
        // a lone SIGINT drains; the run (no controller holds IO) is over
        // before a second signal could come
        assert_eq!(guard.abandoned(), signals.len() > 1, "{kind} {signals:?}");
        assert!(
            wall < std::time::Duration::from_secs(10),
            "{kind}: took {wall:?}"
        );
        let ios = r.jobs[0].stats.dirs.read.total_ios;
        assert!(
            ios >= 100,
            "{kind}: the partial results are kept: {ios} IOs"
        );
        // re-arm for the next case
        guard.reset();
    }
}
