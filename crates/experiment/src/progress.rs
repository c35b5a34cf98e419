//! The status line of a real run (fio's ETA line, blkqos's own format):
//!
//! ```text
//! blkqos: [00m:02s 40%][eta 00m:03s] a: r=3906KiB/s 1000 IOPS | b: r=39.1MiB/s 10.0k IOPS
//! ```
//!
//! elapsed time and share of the run done, ETA, then per job (clones of a
//! job add up) the bandwidth and IOPS of the last second, per direction.
//! On stderr, every second: rewritten in place when stderr is a terminal
//! (`--eta=auto`, the default), one line per update with `--eta=always`
//! (logs), never with `--eta=never`; `auto` off a terminal is quiet.
//!
//! The driver loop has no callback: the run's backend is wrapped in
//! [`Counting`], which adds each completion to its job's atomic counters,
//! and a thread reads them. Without a status line nothing is wrapped.

use blkqos_core::{Instant, Io, IoOp};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{Backend, Completion};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// When to show the status line (`--eta=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eta {
    /// When stderr is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

impl Eta {
    pub fn parse(s: &str) -> Option<Eta> {
        match s {
            "auto" => Some(Eta::Auto),
            "always" => Some(Eta::Always),
            "never" => Some(Eta::Never),
            _ => None,
        }
    }
}

/// Completed IOs and bytes of one job, per direction (read, write).
#[derive(Default)]
struct Counters {
    ios: [AtomicU64; 2],
    bytes: [AtomicU64; 2],
}

/// What the line knows of one job (all its clones).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    name: String,
    /// Ramp + runtime, when the job has a runtime.
    end_ns: Option<u64>,
    time_based: bool,
    /// Bytes the clones address (a size-based job's amount of IO).
    total_bytes: u64,
}

struct Shared {
    jobs: Vec<Counters>,
    done: AtomicBool,
}

/// The running status line; stops (and clears a terminal line) on drop.
pub struct Progress {
    shared: Arc<Shared>,
    /// Display slot of each job clone (index of the run's setups).
    slot_of: Vec<u32>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Start the line for these job clones, or `None` if `eta` says no.
    pub fn start(setups: &[JobSetup], eta: Eta) -> Option<Progress> {
        let tty = std::io::stderr().is_terminal();
        match eta {
            Eta::Never => return None,
            Eta::Auto if !tty => return None,
            _ => {}
        }
        let (plans, slot_of) = plans(setups);
        let shared = Arc::new(Shared {
            jobs: plans.iter().map(|_| Counters::default()).collect(),
            done: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("blkqos-eta".into())
            .spawn(move || show(&s, &plans, tty))
            .ok()?;
        Some(Progress {
            shared,
            slot_of,
            thread: Some(thread),
        })
    }

    /// `backend`, counting completions for the line.
    pub fn wrap<'a, B: Backend>(&'a self, backend: &'a mut B) -> Counting<'a, B> {
        Counting {
            inner: backend,
            shared: &self.shared,
            slot_of: &self.slot_of,
            owner: Vec::new(),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// One display line entry per job name; every clone maps to its name's.
fn plans(setups: &[JobSetup]) -> (Vec<Plan>, Vec<u32>) {
    let mut plans: Vec<Plan> = Vec::new();
    let mut slot_of = Vec::with_capacity(setups.len());
    for s in setups {
        let end_ns = s.spec.runtime.map(|r| s.spec.ramp_time.as_ns() + r.as_ns());
        let i = match plans.iter().position(|p| p.name == s.spec.name) {
            Some(i) => i,
            None => {
                plans.push(Plan {
                    name: s.spec.name.clone(),
                    end_ns,
                    time_based: s.spec.time_based,
                    total_bytes: 0,
                });
                plans.len() - 1
            }
        };
        plans[i].total_bytes += s.region_len;
        slot_of.push(i as u32);
    }
    (plans, slot_of)
}

/// A backend that counts completions per job for the status line.
pub struct Counting<'a, B> {
    inner: &'a mut B,
    shared: &'a Shared,
    slot_of: &'a [u32],
    /// By IO slot (the low half of `IoId`): display slot and direction of
    /// the IO in flight there (direction 2: not counted).
    owner: Vec<(u32, u8)>,
}

impl<B: Backend> Backend for Counting<'_, B> {
    fn now(&self) -> Instant {
        self.inner.now()
    }
    fn nr_requests(&self) -> u32 {
        self.inner.nr_requests()
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn max_io_bytes(&self) -> u64 {
        self.inner.max_io_bytes()
    }
    fn plug_merges(&self) -> bool {
        self.inner.plug_merges()
    }
    fn max_segments(&self) -> u32 {
        self.inner.max_segments()
    }
    fn buffer_write(&mut self, offset: u64, len: u64) {
        self.inner.buffer_write(offset, len)
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        let i = (io.id.0 & 0xffff_ffff) as usize;
        if self.owner.len() <= i {
            self.owner.resize(i + 1, (0, 2));
        }
        let dir = match io.op {
            IoOp::Read => 0,
            IoOp::Write => 1,
            IoOp::Discard | IoOp::Flush => 2,
        };
        let slot = self
            .slot_of
            .get(io.submitter.0 as usize)
            .copied()
            .unwrap_or(0);
        self.owner[i] = (slot, dir);
        self.inner.submit(io, now);
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let from = out.len();
        self.inner.wait(deadline, out);
        for c in &out[from..] {
            let Some(&(slot, dir)) = self.owner.get((c.id.0 & 0xffff_ffff) as usize) else {
                continue;
            };
            let d = usize::from(dir);
            if let (Some(j), true) = (self.shared.jobs.get(slot as usize), d < 2) {
                j.ios[d].fetch_add(1, Ordering::Relaxed);
                j.bytes[d].fetch_add(c.bytes, Ordering::Relaxed);
            }
        }
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

/// Counters of every job at one time: [job][dir] (ios, bytes).
fn snapshot(s: &Shared) -> Vec<[(u64, u64); 2]> {
    s.jobs
        .iter()
        .map(|c| {
            [0, 1].map(|d| {
                (
                    c.ios[d].load(Ordering::Relaxed),
                    c.bytes[d].load(Ordering::Relaxed),
                )
            })
        })
        .collect()
}

/// The status thread: a line every second until the run is done.
fn show(s: &Shared, plans: &[Plan], tty: bool) {
    const EVERY: Duration = Duration::from_secs(1);
    let t0 = std::time::Instant::now();
    let mut last = (t0, snapshot(s));
    let mut next = t0 + EVERY;
    let mut shown = false;
    while !s.done.load(Ordering::Acquire) {
        let now = std::time::Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
            continue;
        }
        next += EVERY;
        let snap = snapshot(s);
        let dt = now.duration_since(last.0).as_secs_f64().max(1e-3);
        let line = format_line(plans, &last.1, &snap, dt, now.duration_since(t0));
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r{line}\x1b[K")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
        shown = true;
        last = (now, snap);
    }
    if tty && shown {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
    }
}

/// The line: elapsed and share done, ETA, per-job rates over `dt` seconds.
fn format_line(
    plans: &[Plan],
    before: &[[(u64, u64); 2]],
    now: &[[(u64, u64); 2]],
    dt: f64,
    elapsed: Duration,
) -> String {
    let el = elapsed.as_nanos() as u64;
    let done: Vec<u64> = now.iter().map(|j| j[0].1 + j[1].1).collect();
    let eta = eta_ns(plans, &done, el);
    let (pct, eta_s) = match eta {
        Some(e) => (
            format!("{:.0}%", el as f64 * 100.0 / (el + e).max(1) as f64),
            fmt_dur(e),
        ),
        None => ("--%".to_string(), "--m:--s".to_string()),
    };
    let mut line = format!("blkqos: [{} {pct}][eta {eta_s}]", fmt_dur(el));
    for (k, p) in plans.iter().enumerate() {
        line += if k == 0 { " " } else { " | " };
        line += &p.name;
        line += ":";
        let mut any = false;
        for (d, tag) in ["r", "w"].iter().enumerate() {
            let (ios, bytes) = now[k][d];
            if ios == 0 {
                continue;
            }
            let (ios0, bytes0) = before.get(k).map_or((0, 0), |b| b[d]);
            line += &format!(
                "{} {tag}={} {} IOPS",
                if any { "," } else { "" },
                fmt_bw((bytes - bytes0) as f64 / dt),
                fmt_iops((ios - ios0) as f64 / dt)
            );
            any = true;
        }
        if !any {
            line += " -";
        }
    }
    line
}

/// Time left: the latest job end. A time-based job ends at ramp + runtime;
/// a size-based one when its bytes are done at its average rate so far (or
/// at its runtime, if sooner). `None` while that rate is unknown.
fn eta_ns(plans: &[Plan], done_bytes: &[u64], elapsed_ns: u64) -> Option<u64> {
    let mut eta = 0u64;
    for (p, &done) in plans.iter().zip(done_bytes) {
        let by_time = p.end_ns.map(|e| e.saturating_sub(elapsed_ns));
        let left = if p.time_based && by_time.is_some() {
            by_time
        } else if done >= p.total_bytes {
            Some(0)
        } else if done == 0 {
            by_time
        } else {
            let est =
                (elapsed_ns as u128 * u128::from(p.total_bytes - done) / u128::from(done)) as u64;
            Some(by_time.map_or(est, |t| t.min(est)))
        };
        eta = eta.max(left?);
    }
    Some(eta)
}

/// fio's ETA time format, to the nearest second: `05m:07s`, `1h:02m:03s`.
fn fmt_dur(ns: u64) -> String {
    let s = (ns + 500_000_000) / 1_000_000_000;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}h:{m:02}m:{s:02}s")
    } else {
        format!("{m:02}m:{s:02}s")
    }
}

pub(crate) fn fmt_bw(bytes_per_s: f64) -> String {
    let k = bytes_per_s / 1024.0;
    if k < 10.0 * 1024.0 {
        format!("{k:.0}KiB/s")
    } else if k < 1024.0 * 1024.0 {
        format!("{:.1}MiB/s", k / 1024.0)
    } else {
        format!("{:.2}GiB/s", k / (1024.0 * 1024.0))
    }
}

pub(crate) fn fmt_iops(iops: f64) -> String {
    if iops < 10_000.0 {
        format!("{iops:.0}")
    } else if iops < 10_000_000.0 {
        format!("{:.1}k", iops / 1000.0)
    } else {
        format!("{:.1}M", iops / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(name: &str, end_s: Option<u64>, time_based: bool, total: u64) -> Plan {
        Plan {
            name: name.into(),
            end_ns: end_s.map(|s| s * 1_000_000_000),
            time_based,
            total_bytes: total,
        }
    }

    #[test]
    fn eta_of_time_and_size_based_jobs() {
        let s = 1_000_000_000;
        let tb = plan("t", Some(5), true, 1 << 30);
        assert_eq!(eta_ns(std::slice::from_ref(&tb), &[0], 2 * s), Some(3 * s));
        assert_eq!(eta_ns(std::slice::from_ref(&tb), &[0], 7 * s), Some(0));
        // size-based: half done in 2 s -> 2 s left
        let sz = plan("s", None, false, 100);
        assert_eq!(eta_ns(std::slice::from_ref(&sz), &[50], 2 * s), Some(2 * s));
        assert_eq!(eta_ns(std::slice::from_ref(&sz), &[0], 2 * s), None);
        assert_eq!(eta_ns(std::slice::from_ref(&sz), &[100], 2 * s), Some(0));
        // a runtime caps a size-based job
        let capped = plan("c", Some(3), false, 100);
        assert_eq!(eta_ns(&[capped], &[10], 2 * s), Some(s));
        // the latest job decides
        assert_eq!(eta_ns(&[tb, sz], &[0, 50], 2 * s), Some(3 * s));
    }

    #[test]
    fn line_shows_rates_per_job_and_direction() {
        let plans = [plan("a", Some(5), true, 0), plan("b", Some(5), true, 0)];
        let before = [[(0, 0), (0, 0)], [(100, 409600), (0, 0)]];
        let now = [
            [(1000, 4_096_000), (0, 0)],
            [(10_100, 41_369_600), (50, 51200)],
        ];
        let l = format_line(&plans, &before, &now, 1.0, Duration::from_secs(2));
        assert_eq!(
            l,
            "blkqos: [00m:02s 40%][eta 00m:03s] a: r=4000KiB/s 1000 IOPS | b: r=39.1MiB/s 10.0k IOPS, w=50KiB/s 50 IOPS"
        );
        let idle = format_line(&plans[..1], &[], &[[(0, 0), (0, 0)]], 1.0, Duration::ZERO);
        assert_eq!(idle, "blkqos: [00m:00s 0%][eta 00m:05s] a: -");
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_dur(0), "00m:00s");
        assert_eq!(fmt_dur(61_500_000_000), "01m:02s");
        assert_eq!(fmt_dur(3_723_000_000_000), "1h:02m:03s");
        assert_eq!(fmt_iops(9_999.4), "9999");
        assert_eq!(fmt_iops(1_234_567.0), "1234.6k");
        assert_eq!(fmt_bw(2.0 * 1024.0 * 1024.0 * 1024.0), "2.00GiB/s");
        assert_eq!(Eta::parse("always"), Some(Eta::Always));
        assert_eq!(Eta::parse("yes"), None);
    }
}
