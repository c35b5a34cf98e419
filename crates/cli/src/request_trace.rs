//! `--request-trace=FILE` / `[accounting] request_trace`: every completed
//! request of a run, one line each, for analysis outside blkqos (and to
//! check `--lat-hist` against per-IO data).
//!
//! ```text
//! # group dir submit_ns start_ns complete_ns
//! /cgA read 0 10000000 10081234
//! ```
//!
//! Times are ns since the start of the run. `submit` is when the IO
//! entered the block layer (before io.max and iocost), `start` when its
//! request started on the device (`blk_account_io_start`), `complete` its
//! completion. Lines are in completion order. The trace grows by one
//! record (32 bytes) per IO during the run: meant for short runs.

use crate::experiment::Ran;
use blkqos_driver::lathist::DIR_NAMES;
use std::fmt::Write;

/// The trace file's text.
pub fn format_request_trace(ran: &Ran) -> String {
    let mut out = String::from("# group dir submit_ns start_ns complete_ns\n");
    for r in &ran.result.request_trace {
        let path = if r.group.idx() < ran.tree.len() {
            ran.tree.path(r.group)
        } else {
            "?"
        };
        let _ = writeln!(
            out,
            "{path} {} {} {} {}",
            DIR_NAMES[r.op.stat_group()],
            r.submitted_at.as_ns(),
            r.started_at.as_ns(),
            r.completed_at.as_ns()
        );
    }
    out
}
