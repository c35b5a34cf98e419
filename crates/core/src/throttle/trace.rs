//! blk-throttle's own messages (`throtl_log`), which the kernel writes to
//! the blk tracer as notes: a new slice, a trim, a dispatch round, the
//! pending timer armed. Kept only while tracing is on (the `--ktrace`
//! writer turns it on), at most [`NOTES_CAPACITY`] between drains.

use crate::controller::{TraceFormat, TraceRecord};
use crate::time::Instant;
use std::fmt::Write as _;

/// Notes kept between two drains (the simulator drains every simulated
/// second); more are counted as dropped.
pub const NOTES_CAPACITY: usize = 100_000;

/// One `throtl_log` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrotlNote {
    /// When the kernel would log it.
    pub at: Instant,
    /// The message after `throtl ` (`[W] new slice start=.. end=..
    /// jiffies=..`).
    pub text: String,
}

impl TraceRecord for ThrotlNote {
    /// The blk tracer's message line (`254,0   1,0  m   N throtl ...`) in
    /// the kernel's trace format; nothing in the monitor and JSON forms,
    /// which are iocost's.
    fn format(&self, _dev: &str, format: TraceFormat, out: &mut String) {
        if let TraceFormat::Ftrace(devid) = format {
            let ns = self.at.as_ns();
            let _ = writeln!(
                out,
                "{:>16}-{:<7} [000] ..... {:>5}.{:06}: {},{}   1,0  m   N throtl {}",
                "blkqos",
                0,
                ns / 1_000_000_000,
                ns % 1_000_000_000 / 1000,
                devid.major,
                devid.minor,
                self.text
            );
        }
    }
}
