//! The typed forms of fio's submission and depth-control options:
//! `io_submit_mode`, `random_generator`, and the latency-target depth
//! probing (`latency_target`, `latency_window`, `latency_percentile`).
//! [`crate::spec::JobSpec::submit`] holds them.

use blkqos_core::Duration;

/// `io_submit_mode=` (fio `enum { IO_MODE_INLINE, IO_MODE_OFFLOAD }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IoSubmitMode {
    /// The job's thread submits and reaps its own IO (fio's default).
    #[default]
    Inline,
    /// `iodepth` worker threads submit one IO each and reap it at once
    /// (fio `rate-submit.c`): the job never quiesces before a rate or
    /// think-time sleep, and every IO's completion latency ends when it
    /// completes.
    Offload,
}

/// `random_generator=` (fio `enum fio_random_generator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RandomGenerator {
    /// `tausworthe` (fio's default) and `tausworthe64`: a uniform
    /// generator with the random map; blkqos draws from its own seeded
    /// generator (`crate::rng`), so the offsets are uniform as fio's are
    /// but not the same sequence.
    #[default]
    Tausworthe,
    /// `tausworthe64`.
    Tausworthe64,
    /// `lfsr`: a maximal-length linear feedback shift register over the
    /// blocks of the file, each block exactly once per pass, no random
    /// map (fio `lib/lfsr.c`).
    Lfsr,
}

impl RandomGenerator {
    /// fio's name of the value.
    pub fn fio_name(self) -> &'static str {
        match self {
            RandomGenerator::Tausworthe => "tausworthe",
            RandomGenerator::Tausworthe64 => "tausworthe64",
            RandomGenerator::Lfsr => "lfsr",
        }
    }
}

/// `latency_target=` with its window and percentile: fio's queue-depth
/// probing (`io_u.c` `lat_target_*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    /// `latency_target`: an IO whose total latency exceeds this fails the
    /// window (0: no probing, the job runs at `iodepth`).
    pub target: Duration,
    /// `latency_window` (fio default 0: every pass of the job's loop
    /// judges the window).
    pub window: Duration,
    /// `latency_percentile` (fio default 100): the share of a window's
    /// IOs that must meet the target.
    pub percentile: f64,
    /// `latency_run=1`: keep adjusting the depth instead of ending after
    /// a final window at the depth found.
    pub keep_running: bool,
}

impl Default for LatencyTarget {
    fn default() -> Self {
        LatencyTarget {
            target: Duration::ZERO,
            window: Duration::ZERO,
            percentile: 100.0,
            keep_running: false,
        }
    }
}

impl LatencyTarget {
    /// Is the depth probed (`latency_target` > 0)?
    pub fn enabled(&self) -> bool {
        self.target > Duration::ZERO
    }
}

/// What [`crate::spec::JobSpec::submit`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SubmitSpec {
    pub mode: IoSubmitMode,
    pub random_generator: RandomGenerator,
    /// `latency_target` and friends.
    pub latency: LatencyTarget,
    /// `iodepth_low`: a full queue is reaped down to this many IOs in
    /// flight before the job submits again (0: the iodepth, fio's
    /// default).
    pub iodepth_low: u32,
}
