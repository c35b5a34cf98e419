//! How `wait(deadline)` spends wall-clock time: an idle 200 ms wait wakes
//! not far past its deadline and sleeps rather than spins. The fast tier
//! checks what does not depend on the machine's load (one sleep, never
//! early: `engine::deadline_wait`); these bounds do, so they live here.

use crate::util::{open, thread_cpu_ns};

use blkqos_core::Duration;
use blkqos_driver::Backend;
use blkqos_engine::{BackendKind, EngineOptions};

fn sleeps_without_spinning(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions {
        size_needed: 1 << 20,
        reads: true,
        ..EngineOptions::default()
    };
    let Some(mut b) = open(kind, &dir.path().join("w.dat"), opts) else {
        return;
    };
    let mut out = Vec::new();
    let cpu0 = thread_cpu_ns();
    let deadline = b.now() + Duration::from_ms(200);
    let w0 = std::time::Instant::now();
    b.wait(Some(deadline), &mut out);
    let wall = w0.elapsed();
    assert!(b.now() >= deadline, "woke early");
    assert!(
        wall < std::time::Duration::from_millis(1200),
        "woke far too late: {wall:?}"
    );
    if let (Some(c0), Some(c1)) = (cpu0, thread_cpu_ns()) {
        let cpu = c1 - c0;
        assert!(
            (cpu as f64) < wall.as_nanos() as f64 * 0.25,
            "waiting burned {cpu} ns of CPU in {wall:?}: busy-waiting?"
        );
    }
}

#[test]
#[ignore = "tier real"]
fn uring_sleeps_without_spinning() {
    sleeps_without_spinning(BackendKind::IoUring);
}

#[test]
#[ignore = "tier real"]
fn threads_sleep_without_spinning() {
    sleeps_without_spinning(BackendKind::Threads);
}
