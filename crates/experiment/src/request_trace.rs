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
//! completion. Lines are in completion order. They are written while the
//! run goes (through a buffer), so a trace of any length takes constant
//! memory.

use crate::file_out::FileOut;
use anyhow::Result;
use blkqos_core::CgroupTree;
use blkqos_driver::lathist::DIR_NAMES;
use blkqos_driver::RequestRecord;
use std::io::Write;
use std::path::Path;

/// The trace file, open for the run.
#[derive(Debug)]
pub struct RequestTrace {
    out: FileOut,
    /// Names the requests' groups.
    tree: CgroupTree,
}

impl RequestTrace {
    /// Create `path` and write the header line.
    pub fn create(path: &Path, tree: CgroupTree) -> Result<Self> {
        let mut out = FileOut::create(path)?;
        out.write_with(|o| o.write_all(b"# group dir submit_ns start_ns complete_ns\n"));
        Ok(RequestTrace { out, tree })
    }

    /// One request's line.
    pub fn record(&mut self, r: &RequestRecord) {
        let path = if r.group.idx() < self.tree.len() {
            self.tree.path(r.group)
        } else {
            "?"
        };
        self.out.write_with(|o| {
            writeln!(
                o,
                "{path} {} {} {} {}",
                DIR_NAMES[r.op.stat_group()],
                r.submitted_at.as_ns(),
                r.started_at.as_ns(),
                r.completed_at.as_ns()
            )
        });
    }

    /// Flush: the first error of the whole trace, if any.
    pub fn finish(&mut self) -> Result<()> {
        self.out.finish()
    }
}
