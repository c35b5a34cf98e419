//! blk-wbt's tracepoints (include/trace/events/wbt.h) as the kernel
//! prints them: `wbt_step` when the depth scales, `wbt_timer` at every
//! window's end, `wbt_lat` when a read's latency is over the target.

use crate::controller::{ftrace_prefix, TraceFormat, TraceRecord};
use crate::time::Instant;
use std::fmt::Write as _;

/// Records kept between two drains; more are counted as dropped.
pub const EVENTS_CAPACITY: usize = 100_000;

/// One blk-wbt tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WbtEvent {
    /// `wbt_step`: the depth scaled.
    Step {
        /// When.
        at: Instant,
        /// `"scale up"` or `"scale down"`.
        msg: &'static str,
        /// The new `scale_step`.
        step: i32,
        /// `cur_win_nsec` in µs.
        window_us: u64,
        /// `wb_background` at the new step.
        background: u32,
        /// `wb_normal` at the new step.
        normal: u32,
        /// `max_depth` at the new step.
        max: u32,
    },
    /// `wbt_timer`: a window ended with this status
    /// (0 ok, 1 exceeded, 2 unknown, 3 unknown with writes).
    Timer {
        /// When.
        at: Instant,
        /// The window's status.
        status: u32,
        /// `scale_step` before the window's verdict is applied.
        step: i32,
        /// Tracked requests in flight.
        inflight: u32,
    },
    /// `wbt_lat`: the latency that exceeded the target.
    Lat {
        /// When.
        at: Instant,
        /// The latency in µs.
        lat_us: u64,
    },
}

impl TraceRecord for WbtEvent {
    /// The tracepoint's line in the kernel's trace format (the device by
    /// its `MAJ:MIN`, as the bdi's name); nothing in the other forms.
    fn format(&self, _dev: &str, format: TraceFormat, out: &mut String) {
        let TraceFormat::Ftrace(devid) = format else {
            return;
        };
        let dev = format!("{}:{}", devid.major, devid.minor);
        match *self {
            WbtEvent::Step {
                at,
                msg,
                step,
                window_us,
                background,
                normal,
                max,
            } => {
                ftrace_prefix(at, out);
                let _ = writeln!(
                    out,
                    " wbt_step: {dev}: {msg}: step={step}, window={window_us}us, background={background}, normal={normal}, max={max}"
                );
            }
            WbtEvent::Timer {
                at,
                status,
                step,
                inflight,
            } => {
                ftrace_prefix(at, out);
                let _ = writeln!(
                    out,
                    " wbt_timer: {dev}: status={status}, step={step}, inflight={inflight}"
                );
            }
            WbtEvent::Lat { at, lat_us } => {
                ftrace_prefix(at, out);
                let _ = writeln!(out, " wbt_lat: {dev}: latency {lat_us}us");
            }
        }
    }
}
