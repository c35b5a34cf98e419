//! fio's per-job sample logs (`write_bw_log`, `write_iops_log`,
//! `write_lat_log`, `log_avg_msec`, `log_max_value`, `log_offset`): the
//! samples a job produces, as fio 3.33's `iolog.c`/`stat.c` produce them.
//! The job queues [`LogSample`]s; the driver hands them on (to files) at
//! every pass of its loop, so the queue stays short whatever the run's
//! length.
//!
//! * `log_avg_msec=0`: one sample per completed IO (fio's `per_unit_log`):
//!   lat/clat/slat in ns, bw as `bytes * 10^6 / clat_ns` (fio
//!   `add_bw_sample`), iops as 1 (fio `add_iops_sample`), each with the
//!   IO's size (and offset).
//! * `log_avg_msec=N`: per direction, the samples of a window of N ms are
//!   averaged (rounded half up) or, with `log_max_value`, their maximum;
//!   a window is written by the first sample at or past its end (fio
//!   `add_log_sample` / `__add_stat_to_log`), with size 0; bw and iops
//!   logs take the job's bw/iops samples (every `bwavgtime`/`iopsavgtime`);
//!   what is left is written when the job ends (fio `finalize_logs`).

use crate::ddir::{Ddir, PerDir};
use crate::histlog::HistLog;

/// Which log a sample goes to (fio's `enum io_log_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogKind {
    Bw,
    Iops,
    Lat,
    Clat,
    Slat,
}

impl LogKind {
    pub const ALL: [LogKind; 5] = [
        LogKind::Bw,
        LogKind::Iops,
        LogKind::Lat,
        LogKind::Clat,
        LogKind::Slat,
    ];
    /// The file name's infix: `NAME_<suffix>.N.log`.
    pub fn suffix(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// The logs a job writes (fio's `write_*_log` and their modifiers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSpec {
    /// `write_bw_log=NAME`: `NAME_bw.N.log`.
    pub bw: Option<String>,
    /// `write_iops_log=NAME`: `NAME_iops.N.log`.
    pub iops: Option<String>,
    /// `write_lat_log=NAME`: `NAME_lat.N.log`, `NAME_clat.N.log`,
    /// `NAME_slat.N.log`.
    pub lat: Option<String>,
    /// `log_avg_msec` (0: a sample per IO).
    pub avg_msec: u64,
    /// `log_max_value`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `log_offset`: an offset column before the priority.
    pub offset: bool,
    /// `write_hist_log=NAME`: `NAME_clat_hist.N.log`
    /// ([`crate::histlog`]).
    pub hist: Option<String>,
    /// `log_hist_msec` (0: no histogram line).
    pub hist_msec: u64,
    /// `log_hist_coarseness`, 0 to [`crate::histlog::MAX_HIST_COARSENESS`].
    pub hist_coarseness: u32,
}

impl LogSpec {
    /// Any log asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some() || self.hist.is_some()
    }
    /// fio's histogram log file name for job number `n`:
    /// `NAME_clat_hist.1.log`.
    pub fn hist_file_name(&self, n: usize) -> Option<String> {
        self.hist.as_ref().map(|p| format!("{p}_clat_hist.{n}.log"))
    }
    /// The name prefix of a log kind's file, if the job writes it.
    pub fn prefix(&self, kind: LogKind) -> Option<&str> {
        match kind {
            LogKind::Bw => self.bw.as_deref(),
            LogKind::Iops => self.iops.as_deref(),
            _ => self.lat.as_deref(),
        }
    }
    /// fio's file name for job number `n` (1-based, `td->thread_number`):
    /// `NAME_bw.1.log`.
    pub fn file_name(&self, kind: LogKind, n: usize) -> Option<String> {
        self.prefix(kind)
            .map(|p| format!("{p}_{}.{n}.log", kind.suffix()))
    }
}

/// One line of a log (fio's `struct io_sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSample {
    pub kind: LogKind,
    /// ms since the job's epoch (fio `mtime_since_now(&td->epoch)`).
    pub time_ms: u64,
    pub value: u64,
    pub ddir: Ddir,
    /// The IO's size; 0 for averaged samples.
    pub bs: u64,
    /// The IO's offset (written with `log_offset=1`); 0 when averaged.
    pub offset: u64,
    /// The IO's priority (`class << 13 | level`); 0 when averaged.
    pub ioprio: u16,
}

/// fio's `LOG_MSEC_SLACK`: a bw/iops window this close to its end counts
/// as ended (not for the latency logs, fio's `inline_log`).
const LOG_MSEC_SLACK_MS: u64 = 1;

/// One direction's averaging window (fio's `avg_window[ddir]`).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    sum: u128,
    n: u64,
    max: u64,
    /// Start of the window, ms (`avg_last[ddir]`).
    last_ms: u64,
}

/// A job's logging state: the averaging windows and the queue of samples
/// not yet handed to the driver.
#[derive(Clone, Debug)]
pub struct JobLog {
    spec: LogSpec,
    /// `[kind][ddir]`.
    windows: [PerDir<Window>; 5],
    /// Samples produced since the driver last took them.
    pub pending: Vec<LogSample>,
    /// The histogram log (`write_hist_log`), if the job writes it.
    pub hist: Option<HistLog>,
}

impl JobLog {
    /// The job's logging state (its `JobSpec::logs`), if it writes any log.
    pub fn new(logs: &LogSpec) -> Option<Box<JobLog>> {
        logs.any().then(|| {
            Box::new(JobLog {
                spec: logs.clone(),
                windows: [PerDir::all(Window::default()); 5],
                pending: Vec::with_capacity(64),
                hist: logs
                    .hist
                    .as_ref()
                    .map(|_| HistLog::new(logs.hist_msec, logs.hist_coarseness)),
            })
        })
    }

    /// A sample per IO (`log_avg_msec=0`): bw and iops logs follow the IOs.
    pub fn per_io(&self) -> bool {
        self.spec.avg_msec == 0
    }

    /// The job writes `kind`'s log.
    pub fn wants(&self, kind: LogKind) -> bool {
        self.spec.prefix(kind).is_some()
    }

    /// A completed IO (fio `add_clat_sample`, `add_lat_sample`,
    /// `add_slat_sample`, and with per-IO logs `add_bw_sample` and
    /// `add_iops_sample`). Latencies in ns.
    #[allow(clippy::too_many_arguments)]
    pub fn io(
        &mut self,
        time_ms: u64,
        ddir: Ddir,
        bytes: u64,
        offset: u64,
        ioprio: u16,
        slat_ns: Option<u64>,
        clat_ns: u64,
        lat_ns: u64,
    ) {
        let io = |kind, value| LogSample {
            kind,
            time_ms,
            value,
            ddir,
            bs: bytes,
            offset,
            ioprio,
        };
        if self.wants(LogKind::Lat) {
            if let Some(s) = slat_ns {
                self.add(io(LogKind::Slat, s));
            }
            self.add(io(LogKind::Clat, clat_ns));
            self.add(io(LogKind::Lat, lat_ns));
        }
        if self.per_io() {
            if self.wants(LogKind::Bw) {
                let bw = bytes.saturating_mul(1_000_000).checked_div(clat_ns);
                self.add(io(LogKind::Bw, bw.unwrap_or(0)));
            }
            if self.wants(LogKind::Iops) {
                self.add(io(LogKind::Iops, 1));
            }
        }
    }

    /// A windowed bw (KiB/s) or iops sample of the job (fio `__add_samples`
    /// feeding `add_log_sample`); only when the logs are averaged.
    pub fn rate_sample(&mut self, kind: LogKind, time_ms: u64, ddir: Ddir, value: u64) {
        if !self.per_io() && self.wants(kind) {
            self.add(LogSample {
                kind,
                time_ms,
                value,
                ddir,
                bs: 0,
                offset: 0,
                ioprio: 0,
            });
        }
    }

    /// fio `add_log_sample`: straight to the log, or into the window.
    fn add(&mut self, s: LogSample) {
        let avg = self.spec.avg_msec;
        if avg == 0 {
            self.pending.push(s);
            return;
        }
        let inline = !matches!(s.kind, LogKind::Bw | LogKind::Iops);
        let w = &mut self.windows[s.kind.index()][s.ddir];
        w.sum += u128::from(s.value);
        w.n += 1;
        w.max = w.max.max(s.value);
        if s.time_ms < w.last_ms {
            return;
        }
        let this_window = s.time_ms - w.last_ms;
        if this_window < avg && (inline || avg - this_window > LOG_MSEC_SLACK_MS) {
            return;
        }
        self.flush_window(s.kind, s.ddir, s.time_ms);
        let w = &mut self.windows[s.kind.index()][s.ddir];
        w.last_ms = s.time_ms - s.time_ms % avg;
    }

    /// fio `__add_stat_to_log`: the window's mean (rounded half up) or
    /// maximum at `time_ms`, if it holds samples; the window restarts.
    fn flush_window(&mut self, kind: LogKind, ddir: Ddir, time_ms: u64) {
        let w = &mut self.windows[kind.index()][ddir];
        if w.n > 0 {
            let value = if self.spec.max_value {
                w.max
            } else {
                ((w.sum * 2 + u128::from(w.n)) / (u128::from(w.n) * 2)) as u64
            };
            self.pending.push(LogSample {
                kind,
                time_ms,
                value,
                ddir,
                bs: 0,
                offset: 0,
                ioprio: 0,
            });
        }
        w.sum = 0;
        w.n = 0;
        w.max = 0;
    }

    /// The job ended at `time_ms` (fio `finalize_logs`): what the windows
    /// hold goes to the logs.
    pub fn finish(&mut self, time_ms: u64) {
        if self.spec.avg_msec == 0 {
            return;
        }
        for kind in LogKind::ALL {
            for ddir in Ddir::ALL {
                self.flush_window(kind, ddir, time_ms);
            }
        }
    }
}

/// One line of a log file as fio 3.33 writes it (`flush_samples`):
/// `time, value, ddir, bs, prio`, or with `log_offset=1`
/// `time, value, ddir, bs, offset, prio`, the direction as fio numbers it
/// ([`Ddir::fio_index`]). The priority column is the IO's
/// priority as `0x%04x` with `log_prio=1`, else 1 for the real-time class
/// and 0 for any other (`ioprio_value_is_class_rt`).
pub fn format_sample(s: &LogSample, with_offset: bool, log_prio: bool, out: &mut String) {
    use std::fmt::Write;
    let _ = if with_offset {
        write!(
            out,
            "{}, {}, {}, {}, {}, ",
            s.time_ms,
            s.value,
            s.ddir.fio_index(),
            s.bs,
            s.offset
        )
    } else {
        let ddir = s.ddir.fio_index();
        write!(out, "{}, {}, {ddir}, {}, ", s.time_ms, s.value, s.bs)
    };
    let _ = if log_prio {
        writeln!(out, "0x{:04x}", s.ioprio)
    } else {
        let rt = crate::prio::ioprio_class(s.ioprio) == crate::prio::IOPRIO_CLASS_RT;
        writeln!(out, "{}", u8::from(rt))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::JobSpec;

    fn spec(avg_msec: u64) -> JobSpec {
        let mut s = JobSpec::new("j");
        s.logs = LogSpec {
            bw: Some("a".into()),
            iops: Some("a".into()),
            lat: Some("a".into()),
            avg_msec,
            ..LogSpec::default()
        };
        s
    }

    #[test]
    fn per_io_samples_like_fio() {
        let mut l = JobLog::new(&spec(0).logs).unwrap();
        l.io(5, Ddir::Read, 4096, 8192, 0x2003, None, 118_948, 119_628);
        let kinds: Vec<_> = l.pending.iter().map(|s| (s.kind, s.value)).collect();
        assert_eq!(
            kinds,
            [
                (LogKind::Clat, 118_948),
                (LogKind::Lat, 119_628),
                (LogKind::Bw, 34_435),
                (LogKind::Iops, 1)
            ]
        );
        let mut line = String::new();
        format_sample(&l.pending[2], false, false, &mut line);
        assert_eq!(line, "5, 34435, 0, 4096, 1\n", "1: the real-time class");
        line.clear();
        format_sample(&l.pending[2], true, false, &mut line);
        assert_eq!(line, "5, 34435, 0, 4096, 8192, 1\n");
        line.clear();
        format_sample(&l.pending[2], false, true, &mut line);
        assert_eq!(line, "5, 34435, 0, 4096, 0x2003\n", "log_prio=1");
        let mut idle = l.pending[2];
        idle.ioprio = 0x6000;
        line.clear();
        format_sample(&idle, false, false, &mut line);
        assert_eq!(line, "5, 34435, 0, 4096, 0\n");
    }

    #[test]
    fn averaged_windows_and_final_flush() {
        let mut l = JobLog::new(&spec(500).logs).unwrap();
        l.io(100, Ddir::Read, 4096, 0, 0, Some(10), 1000, 2000);
        l.io(499, Ddir::Read, 4096, 0, 0, Some(10), 3000, 4001);
        assert!(l.pending.is_empty());
        l.io(500, Ddir::Read, 4096, 0, 0, Some(10), 5000, 6000);
        let lat: Vec<_> = l
            .pending
            .iter()
            .filter(|s| s.kind == LogKind::Lat)
            .collect();
        assert_eq!(lat.len(), 1);
        assert_eq!((lat[0].time_ms, lat[0].value, lat[0].bs), (500, 4000, 0));
        l.pending.clear();
        l.io(700, Ddir::Read, 4096, 0, 0, Some(10), 5000, 7000);
        l.finish(800);
        let lat: Vec<_> = l
            .pending
            .iter()
            .filter(|s| s.kind == LogKind::Lat)
            .collect();
        assert_eq!((lat[0].time_ms, lat[0].value), (800, 7000));
        // bw/iops: only the job's windowed samples, with fio's 1 ms slack
        l.pending.clear();
        l.rate_sample(LogKind::Bw, 499, Ddir::Write, 800);
        assert_eq!(l.pending.len(), 1);
    }

    #[test]
    fn file_names() {
        let s = spec(0);
        assert_eq!(s.logs.file_name(LogKind::Clat, 3).unwrap(), "a_clat.3.log");
    }
}
