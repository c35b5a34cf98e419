//! blk-throttle's own messages (`throtl_log`), which the kernel writes to
//! the blk tracer as notes: a new slice, a trim, a dispatch round, the
//! pending timer armed. Kept only while tracing is on (the `--ktrace`
//! writer turns it on), at most [`NOTES_CAPACITY`] between drains.

use crate::controller::{ftrace_prefix, TraceFormat, TraceRecord};
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
            ftrace_prefix(self.at, out);
            let _ = writeln!(
                out,
                " {},{}   1,0  m   N throtl {}",
                devid.major, devid.minor, self.text
            );
        }
    }
}
