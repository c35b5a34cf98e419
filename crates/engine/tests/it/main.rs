//! The engine's integration tests: one binary, a module per area
//! (docs/TESTING.md). `tier_real` holds the slow ones (`#[ignore]`d, run by
//! `cargo xtask test real`): rates paced in real time, io.max windows on
//! both backends, a run stopped by SIGINT, how long a deadline wait
//! sleeps. `tests/fallback.rs` stays a
//! binary of its own: it sets `BLKQOS_NO_IO_URING` for its whole process.

mod util;

mod engine;
mod safety;

/// Real-time runs: paced rates, io.max dispatch windows, SIGINT.
mod tier_real {
    mod e2e;
    mod qos;
    mod stop;
    mod wait_timing;
}
