//! fio's completion latency histogram log (`write_hist_log=NAME`,
//! `log_hist_msec`, `log_hist_coarseness`): `NAME_clat_hist.N.log`, one
//! line per direction every `log_hist_msec`, as fio 3.33 writes it.
//!
//! fio (`stat.c: add_clat_sample`) counts each completion of a direction;
//! the first one starts the direction's window, and the first completion
//! at or past `log_hist_msec` from the window's start writes a line: the
//! time (ms since the job's epoch), the direction, that IO's size, then
//! the clat histogram (fio's 1856 `io_u_plat` buckets, [`PLAT_NR`]) of
//! the IOs since the last line, the IO itself included
//! (`iolog.c: flush_hist_samples` subtracts the previous copy). The next
//! window starts `log_hist_msec` after the last one, less the drift
//! (`hist_last = elapsed - (this_window - hist_msec)`). What the last,
//! partial window holds is never written (fio has no final flush for this
//! log). `log_hist_coarseness=C` sums runs of `2^C` buckets
//! (`hist_sum`), giving `1856 >> C` columns. fio counts into the
//! histogram only with `clat_percentiles=1` (its default): without it the
//! lines are zeros, here too. `log_hist_msec=0` (the default) writes no
//! line, and the file is still created.

use crate::ddir::{Ddir, PerDir};
use blkqos_core::hist::{LatHist, PLAT_NR};

/// The largest `log_hist_coarseness` fio documents ("Integer in range
/// [0,6]"); 1856 buckets divide evenly up to it.
pub const MAX_HIST_COARSENESS: u32 = 6;

/// One direction's window (fio's `hist_window[ddir]`).
#[derive(Clone, Debug, Default)]
struct Window {
    /// Completions since the last line.
    hist: LatHist,
    /// Start of the window, ms since the epoch (`hist_last`; 0 = unset).
    last_ms: u64,
}

/// A job's histogram log state and the lines not yet written.
#[derive(Clone, Debug)]
pub struct HistLog {
    msec: u64,
    coarseness: u32,
    windows: PerDir<Window>,
    /// Lines produced since the driver last took them.
    pub pending: String,
}

impl HistLog {
    pub fn new(msec: u64, coarseness: u32) -> HistLog {
        HistLog {
            msec,
            coarseness: coarseness.min(MAX_HIST_COARSENESS),
            windows: Default::default(),
            pending: String::new(),
        }
    }

    /// A completion of direction `ddir` at `time_ms` (ms since the job's
    /// epoch), of `bytes`, with latency `clat_ns`, counted in the
    /// histogram if `counted` (fio: `clat_percentiles`).
    pub fn clat(&mut self, time_ms: u64, ddir: Ddir, bytes: u64, clat_ns: u64, counted: bool) {
        if self.msec == 0 {
            return;
        }
        let w = &mut self.windows[ddir];
        if counted {
            w.hist.record(clat_ns);
        }
        if w.last_ms == 0 {
            w.last_ms = time_ms;
        }
        let this_window = time_ms.saturating_sub(w.last_ms);
        if this_window < self.msec {
            return;
        }
        format_line(
            &w.hist,
            self.coarseness,
            (time_ms, ddir, bytes),
            &mut self.pending,
        );
        w.hist.clear();
        w.last_ms = time_ms - (this_window - self.msec);
    }
}

/// One line: `time, ddir, bs, ` (the direction as fio numbers it,
/// [`Ddir::fio_index`]) then the buckets summed by `2^coarseness` (fio
/// `flush_hist_samples`, `hist_sum`).
fn format_line(
    hist: &LatHist,
    coarseness: u32,
    (time_ms, ddir, bs): (u64, Ddir, u64),
    out: &mut String,
) {
    use std::fmt::Write;
    let stride = 1usize << coarseness;
    let _ = write!(out, "{time_ms}, {}, {bs}", ddir.fio_index());
    let mut sum = 0u64;
    for (i, c) in hist.all_counts().enumerate() {
        sum += c;
        if (i + 1) % stride == 0 {
            let _ = write!(out, ", {sum}");
            sum = 0;
        }
    }
    debug_assert_eq!(PLAT_NR % stride, 0);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(line: &str) -> Vec<u64> {
        line.split(", ").map(|t| t.parse().unwrap()).collect()
    }

    #[test]
    fn windows_drift_and_counts_like_fio() {
        let mut h = HistLog::new(100, 0);
        h.clat(5, Ddir::Read, 4096, 1_000, true); // starts the window at 5
        h.clat(104, Ddir::Read, 4096, 2_000, true);
        assert!(h.pending.is_empty());
        h.clat(107, Ddir::Read, 8192, 3_000, true); // 102 ms: a line, 7 - 5 + 5 drift
        let lines: Vec<&str> = h.pending.lines().collect();
        assert_eq!(lines.len(), 1);
        let c = cols(lines[0]);
        assert_eq!(&c[..3], &[107, 0, 8192]);
        assert_eq!(c.len(), 3 + PLAT_NR);
        assert_eq!(c[3..].iter().sum::<u64>(), 3);
        h.pending.clear();
        // the next window started at 107 - 2 = 105
        h.clat(205, Ddir::Read, 4096, 1_000, true);
        assert_eq!(cols(h.pending.trim_end())[3..].iter().sum::<u64>(), 1);
    }

    #[test]
    fn coarseness_sums_runs_of_buckets() {
        for c in 0..=MAX_HIST_COARSENESS {
            let mut h = HistLog::new(10, c);
            for (t, ns) in [(1, 100), (2, 5_000), (3, 7_000_000), (12, 123_456)] {
                h.clat(t, Ddir::Write, 4096, ns, true);
            }
            let v = cols(h.pending.trim_end());
            assert_eq!(v.len(), 3 + (PLAT_NR >> c), "coarseness {c}");
            assert_eq!(v[3..].iter().sum::<u64>(), 4);
        }
    }

    #[test]
    fn uncounted_and_disabled() {
        let mut h = HistLog::new(10, 0);
        h.clat(1, Ddir::Read, 4096, 100, false);
        h.clat(20, Ddir::Read, 4096, 100, false);
        assert_eq!(cols(h.pending.trim_end())[3..].iter().sum::<u64>(), 0);
        let mut off = HistLog::new(0, 0);
        off.clat(1, Ddir::Read, 4096, 100, true);
        off.clat(5000, Ddir::Read, 4096, 100, true);
        assert!(off.pending.is_empty());
    }
}
