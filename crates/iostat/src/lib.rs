//! sysstat 12.6-compatible `iostat` over `/proc/diskstats` snapshots.
//!
//! - [`diskstats`]: parse `/proc/diskstats` lines (4, 11, 15 or 17
//!   counters) and write them in the kernel's format
//!   ([`format_diskstats_line`]), so simulated devices can publish
//!   snapshots that real tools read.
//! - [`sample`]: `/proc/uptime`, `/proc/stat` and one [`Sample`] of them.
//! - [`metrics`]: the columns of `iostat -x` (and of the basic and `-s`
//!   reports, and `avg-cpu`) from two samples, with sysstat's arithmetic.
//! - [`options`]: sysstat's command line (`-x -d -c -s -k -m -p -y -z -t
//!   --dec -o JSON`, `ALL`, device names, `interval [count]`).
//! - [`run`]: the report loop, printing what sysstat prints, byte for byte
//!   (checked against sysstat's own test fixtures).
//!
//! Not implemented (rejected as usage errors): device groups (`-g`, `-H`),
//! `--human`/`-h`, `--pretty`, `--compact`, persistent names (`-j`), device
//! mapper names (`-N`), alternate directories (`-f`/`+f`), colors.
//! Dates are UTC.

mod devlist;
pub mod diskstats;
pub mod error;
mod format;
pub mod metrics;
pub mod options;
mod report;
pub mod sample;
pub mod time;

pub use diskstats::{
    format_diskstats, format_diskstats_line, parse_diskstats, parse_diskstats_line, DiskCounters,
    DiskStatsLine,
};
pub use error::{Error, ParseError};
pub use metrics::{ext_stats, ExtStats, Unit};
pub use options::{parse_args, parse_args_env, Options, USAGE};
pub use report::{render, run, Banner, RunSummary};
pub use sample::{parse_stat, parse_uptime, read_proc_dir, read_sys_block, CpuTimes, Sample};
