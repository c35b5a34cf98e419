//! fio 3.33's end-of-run reports: `--output-format=json`, `json+` and
//! `normal`, written from [`JobStats`] exactly as fio prints its
//! `thread_stat`s (`stat.c: __show_run_stats`).
//!
//! * [`write_json`]: `show_thread_status_json` + `json.c`'s printer;
//! * [`write_normal`]: `show_thread_status_normal`, `show_group_stats`,
//!   `show_disk_util`;
//! * [`num2str()`](num2str::num2str) mirrors `lib/num2str.c`.
//!
//! The input is one [`ReportJob`] per job clone in run order; this module
//! folds them into report entries the way `__show_run_stats` does (one per
//! clone, or one per reporting group with `group_reporting`), see
//! [`merge`].
//!
//! Checked byte for byte against fio 3.33 by replaying a real run's per-IO
//! logs (`tests/it/report_vs_fio.rs`, `tests/it/report_fixture.rs`). What cannot
//! match, by design:
//! * `usr_cpu`, `sys_cpu`, `ctx`, `majf`, `minf` are what
//!   [`JobStats::cpu`] holds (the real engine's share of the process's
//!   getrusage; 0 on the simulator); `eta` is 0;
//! * times are [`ReportInput::timestamp_ms`] in the zone
//!   [`ReportInput::utc_offset_s`] says (the caller's local time, as fio
//!   prints it; fio's job header uses the time of printing);
//! * `percentile_precision` is derived from the values, so `99.50` in a job
//!   file prints with 1 decimal where fio prints 2;
//! * `td->verror` in the job header is fio's text for the engine's error
//!   path (`engines/sync.c:126` for sync engines, `io_u.c:1876` otherwise;
//!   a failed verify: `io_u.c:2152`/`2190`, the completion functions);
//! * [`write_terse`]: `show_thread_status_terse_all`, version 3;
//! * not produced: terse versions other than 3, `prios`, `cachehit`, `block`,
//!   `latency_target` runs, bit-based `unit_base`,
//!   `significant_figures` other than 4.

pub mod cfmt;
pub mod json;
pub mod jsonfmt;
pub mod merge;
pub mod normal;
pub mod num2str;
pub mod steady;
pub mod terse;

use blkqos_workload::spec::JobSpec;
use blkqos_workload::stats::JobStats;

pub use json::{json_tree, write_json};
pub use normal::{percentile_block, write_normal, PctUnit};
pub use num2str::{num2str, N2sUnit};
pub use terse::write_terse;

/// Everything a report needs.
#[derive(Clone, Debug)]
pub struct ReportInput<'a> {
    /// One per job clone, in run order.
    pub jobs: Vec<ReportJob<'a>>,
    /// `[global]` options as given (JSON `"global options"`, omitted if empty).
    pub global_options: &'a [(String, String)],
    /// End of the run, ms since the Unix epoch (real or virtual clock).
    pub timestamp_ms: u64,
    /// Offset of the local time zone from UTC at `timestamp_ms`, in
    /// seconds east (fio prints `ctime()`: local time); 0 prints UTC.
    pub utc_offset_s: i32,
    /// Per-device utilisation; `disk_util` / "Disk stats" only if non-empty.
    pub disk_util: Vec<DiskUtil>,
    /// blkqos's own accounting of the requests it issued, when
    /// `disk_util` holds the kernel's numbers (the real engine): JSON
    /// `blkqos_disk_util` and a "blkqos request stats" section, each entry
    /// named by the target's path; nothing if empty.
    pub blkqos_disk_util: Vec<DiskUtil>,
    /// `"fio version"`; pass `"fio-3.33"` for compatibility.
    pub fio_version: &'a str,
}

/// One job clone.
#[derive(Clone, Copy, Debug)]
pub struct ReportJob<'a> {
    pub spec: &'a JobSpec,
    pub stats: &'a JobStats,
    /// errno that ended the job, 0 if it ran to completion.
    pub error: i32,
    pub pid: u32,
}

/// One device of fio's disk utilisation report (`struct disk_util_stat`
/// differences over the run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Percent busy (`100 * io_ticks / msec`); capped at 100 when printed.
    pub util: f64,
    /// A stacked device's (dm, md) components, summed: `aggr_*`.
    pub agg: Option<DiskAgg>,
}

/// The components of a stacked device (fio's `struct disk_util_agg` after
/// `aggregate_slaves_stats`), already divided by their count as printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskAgg {
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// The busiest component's util, capped at 100.
    pub util: f64,
}

impl DiskUtil {
    /// `util`, capped as `print_disk_util` / `json_array_add_disk_util` do.
    pub fn util_capped(&self) -> f64 {
        if self.util > 100.0 {
            100.0
        } else {
            self.util
        }
    }
}

/// fio's `significant_figures` default (`ts->sig_figs`).
pub const SIG_FIGS: i32 = 4;
