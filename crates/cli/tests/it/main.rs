//! The `blkqos` crate's integration tests: one binary, a module per area.
//!
//! Tiers (docs/TESTING.md): the modules at the top level run by default
//! (`cargo test --workspace`, or `cargo xtask test` with skips counted);
//! the `tier_*` modules hold the slow tests, `#[ignore]`d with the tier's
//! name and run by `cargo xtask test TIER` (or `cargo test --workspace --
//! --ignored tier_TIER::`). A slow-tier module may keep a small test in
//! the default run (one differential against fio per area): the tests not
//! marked `#[ignore]` run by default wherever they are.

mod calibrate_from;
mod calibrate_util;
mod common;
#[macro_use]
mod engine_util;
mod apply;
mod bad_input;
mod determinism;
mod fio_draws;
mod fio_options;
mod function_length;
mod golden_unsplit;
mod idle_passes;
mod in_process;
mod invariants;
mod iocost_weights;
mod lab_fidelity;
mod lab_traces;
mod lat_hist;
mod live_view;
mod memory_bounds;
mod module_cycles;
mod outputs_cwd;
mod parse_only_showcmd;
mod plug_merge_e2e;
mod report;
mod seed_001_iocost;
mod split_e2e;
mod sweep;
mod throttle_e2e;
mod writeback_e2e;
mod zoned_null;

/// The real engine (io_uring, threads) on files, loop devices and tmpfs, and the differentials against real fio.
mod tier_real {
    mod engine_conformance;
    mod engine_exit_status;
    mod engine_faults;
    mod engine_fio_depth;
    mod engine_fio_diff;
    mod engine_fio_fileops;
    mod engine_fio_hist;
    mod engine_fio_host;
    mod engine_fio_logs;
    mod engine_fio_mapped;
    mod engine_fio_meta;
    mod engine_fio_mixed;
    mod engine_fio_prio;
    mod engine_fio_status;
    mod engine_fio_terse;
    mod engine_fio_verify;
    mod engine_fio_zones;
    mod engine_job_order;
    mod engine_live;
    mod engine_progress;
    mod engine_several_files;
    mod engine_truth;
    mod engine_uring_flags;
    mod engine_weights;
    mod engine_write_buffer;
    mod exit_scope;
    mod fio_agreement;
    mod fio_draws;
    mod latency_target_fio;
    mod passthrough_engines;
    mod sg_verify;
    mod signals;
    mod steadystate;
    mod verify;
    mod zbd;
}

/// Calibrations of real loop devices and refits of every recorded device.
mod tier_calibrate {
    mod calibrate;
    mod engine_calibrate;
}

/// fio's own example job files, run on both backends and compared with fio;
/// the README's commands, run as written.
mod tier_examples {
    mod fio_examples_run;
    mod readme_commands;
}
