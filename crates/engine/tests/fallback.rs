//! `Auto` falls back to the thread pool when io_uring cannot be set up.
//! (`BLKQOS_NO_IO_URING=1` makes io_uring setup fail; this file holds one
//! test so the environment change races with nothing.)

use blkqos_engine::{open_backend, BackendKind, EngineError, EngineOptions};

#[test]
fn auto_falls_back_to_threads_and_explicit_uring_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fb.dat");
    std::env::set_var("BLKQOS_NO_IO_URING", "1");
    let b = open_backend(
        &path,
        EngineOptions {
            size_needed: 1 << 20,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    assert_eq!(b.kind(), BackendKind::Threads);
    drop(b);
    let e = open_backend(
        &path,
        EngineOptions {
            kind: BackendKind::IoUring,
            ..EngineOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, EngineError::UringUnavailable { .. }), "{e}");
    assert!(e.to_string().contains("BLKQOS_NO_IO_URING"), "{e}");
    std::env::remove_var("BLKQOS_NO_IO_URING");
}
