//! `--ktrace=FILE`: a run as the kernel's own tracepoints show it, in the
//! text `/sys/kernel/tracing/trace` prints, and the reader of that text.
//!
//! blkqos writes the events its models have, with the kernel's names and
//! fields:
//!
//! ```text
//!           blkqos-0       [000] .....     1.012345: iocost_ioc_vrate_adj: [nullb1] vrate=137438->140186 busy=-1 missed_ppm=0:0 rq_wait_pct=0 lagging=0 shortages=0
//!              fio-1       [000] .....     1.012310: block_getrq: 254,0 R 505944 + 8 [fio]
//!           blkqos-0       [000] .....     1.012400: block_rq_issue: 254,0 R 4096 () 505944 + 8 [fio]
//!           blkqos-0       [000] .....     1.012420: block_rq_complete: 254,0 R () 505944 + 8 [0]
//! ```
//!
//! * `iocost_ioc_vrate_adj` (include/trace/events/iocost.h), one per
//!   period timer run that the kernel's `ioc_adjust_base_vrate()` would
//!   trace ([`blkqos_core::iocost::trace::PeriodTrace::format_ftrace`]);
//! * `iocost_iocg_activate`/`_idle`, `iocost_inuse_shortage`/`_transfer`/
//!   `_adjust` and `iocost_iocg_forgive_debt` where `iocg_activate()`,
//!   `ioc_check_iocgs()`, `ioc_timer_fn()`, `transfer_surpluses()`,
//!   `adjust_inuse_and_calc_cost()` and `ioc_forgive_debts()` fire them;
//! * `block_getrq` when a request got its tag, past the controllers
//!   (`blk_mq_submit_bio`: after `blk_mq_get_new_requests`), in the
//!   submitter's column: blkqos writes `fio-G`, G the request's group
//!   number (the kernel writes the process, `fio-PID`), so a group's
//!   requests can be told apart as a process's can in the kernel's trace;
//! * `block_rq_issue` when a request starts on the device and
//!   `block_rq_complete` when it completes (include/trace/events/block.h,
//!   in 6.1's form: no ioprio column);
//! * `writeback:balance_dirty_pages` for each pass of the page cache's
//!   dirty throttle that throttled, and `writeback:bdi_dirty_ratelimit`
//!   for each rate update (`cgroup_ino` is blkqos's group number), from
//!   [`blkqos_driver::pagecache::dirty`];
//! * blk-throttle's `throtl_log` messages as the blk tracer prints them
//!   (`254,0   1,0  m   N throtl [W] trim slice ...`): new slices, trims,
//!   dispatch rounds (`bios disp=N`) and the pending timer armed
//!   (`schedule timer. delay=N`) ([`blkqos_core::throttle::trace`]).
//!
//! The task, CPU and flags columns are blkqos's own (`blkqos-0 [000]
//! .....`): the simulator has no CPUs. A request's issue is known only
//! when it completes, so events wait (about 50 bytes each) until they are
//! 2 s older than the latest completion and are then written in time
//! order; only a request that spent longer than that on the device has
//! its issue line out of order.
//!
//! [`parse_line`] reads the kernel's trace and blkqos's alike, with or
//! without the ioprio column of 6.12+, and the blk tracer's messages
//! (`254,0 1,0 m N throtl [W] new slice ...`).

use crate::file_out::FileOut;
use anyhow::Result;
use blkqos_core::controller::{ftrace_prefix, ftrace_prefix_task, TraceFormat, TraceRecord};
use blkqos_core::{DevId, IoOp};
use blkqos_driver::RequestRecord;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// How far back a request's issue may lie behind the latest completion
/// and still be written in time order: lines older than this are written
/// once a newer completion arrives.
const REORDER_WINDOW_NS: u64 = 2_000_000_000;

/// The kernel-format trace of a run, written in time order as the run
/// goes (within [`REORDER_WINDOW_NS`]).
#[derive(Debug)]
pub struct KernelTrace {
    out: FileOut,
    /// The device as iocost's events name it (`[nullb1]`).
    dev: String,
    devid: DevId,
    /// Events not written yet: (time ns, order of arrival, event).
    pending: Vec<(u64, u64, Pending)>,
    seq: u64,
    /// Latest completion seen.
    latest_ns: u64,
    /// Written up to here.
    flushed_ns: u64,
    /// Reused for the controllers' records and the lines.
    buf: String,
}

/// An event waiting for its turn: requests kept small, the controllers'
/// (rare) lines as text.
#[derive(Debug)]
enum Pending {
    Rq {
        kind: RqKind,
        op: IoOp,
        bytes: u64,
        offset: u64,
    },
    /// `block_getrq` of a request of group `group`.
    GetRq {
        op: IoOp,
        bytes: u64,
        offset: u64,
        group: u32,
    },
    Text(String),
}

impl KernelTrace {
    pub fn create(path: &Path, dev: &str, devid: DevId) -> Result<Self> {
        let mut out = FileOut::create(path)?;
        out.write_with(|o| o.write_all(b"# tracer: nop\n#\n"));
        Ok(KernelTrace {
            out,
            dev: dev.to_string(),
            devid,
            pending: Vec::new(),
            seq: 0,
            latest_ns: 0,
            flushed_ns: 0,
            buf: String::new(),
        })
    }

    fn push(&mut self, t_ns: u64, e: Pending) {
        self.seq += 1;
        self.pending.push((t_ns, self.seq, e));
    }

    /// A completed request: its issue and its completion.
    pub fn request(&mut self, r: &RequestRecord) {
        let getrq = Pending::GetRq {
            op: r.op,
            bytes: r.bytes,
            offset: r.offset,
            group: r.group.0,
        };
        self.push(r.started_at.as_ns(), getrq);
        for (t, kind) in [
            (r.dispatched_at, RqKind::Issue),
            (r.completed_at, RqKind::Complete),
        ] {
            let e = Pending::Rq {
                kind,
                op: r.op,
                bytes: r.bytes,
                offset: r.offset,
            };
            self.push(t.as_ns(), e);
        }
        self.latest_ns = self.latest_ns.max(r.completed_at.as_ns());
        if self.latest_ns >= self.flushed_ns + 2 * REORDER_WINDOW_NS {
            self.write_before(self.latest_ns - REORDER_WINDOW_NS);
        }
    }

    /// The controllers' records since the last call.
    pub fn controllers(&mut self, recs: &[Box<dyn TraceRecord>]) {
        for r in recs {
            self.buf.clear();
            r.format(&self.dev, TraceFormat::Ftrace(self.devid), &mut self.buf);
            let lines: Vec<String> = self.buf.lines().map(str::to_string).collect();
            for l in lines {
                // the record's own timestamp leads the line
                let t_ns = parse_line(&l).map_or(0, |p| p.t_ns);
                self.push(t_ns, Pending::Text(l));
            }
        }
    }

    /// Write the events before `t_ns` in time order.
    fn write_before(&mut self, t_ns: u64) {
        self.pending.sort_unstable_by_key(|&(t, seq, _)| (t, seq));
        let n = self.pending.partition_point(|&(t, _, _)| t < t_ns);
        let mut text = std::mem::take(&mut self.buf);
        text.clear();
        let (maj, min) = (self.devid.major, self.devid.minor);
        for (t, _, e) in self.pending.drain(..n) {
            match e {
                Pending::Text(l) => text.push_str(&l),
                Pending::GetRq {
                    op,
                    bytes,
                    offset,
                    group,
                } => {
                    let (sector, nr) = (offset / 512, bytes.div_ceil(512));
                    ftrace_prefix_task(blkqos_core::Instant(t), "fio", group, &mut text);
                    let _ = write!(
                        text,
                        " block_getrq: {maj},{min} {} {sector} + {nr} [fio]",
                        rwbs(op)
                    );
                }
                Pending::Rq {
                    kind,
                    op,
                    bytes,
                    offset,
                } => {
                    let rwbs = rwbs(op);
                    let (sector, nr) = (offset / 512, bytes.div_ceil(512));
                    ftrace_prefix(blkqos_core::Instant(t), &mut text);
                    let _ = match kind {
                        RqKind::Complete => write!(
                            text,
                            " block_rq_complete: {maj},{min} {rwbs} () {sector} + {nr} [0]"
                        ),
                        _ => write!(
                            text,
                            " block_rq_issue: {maj},{min} {rwbs} {bytes} () {sector} + {nr} [fio]"
                        ),
                    };
                }
            }
            text.push('\n');
        }
        self.out.write_with(|o| o.write_all(text.as_bytes()));
        self.buf = text;
        self.flushed_ns = self.flushed_ns.max(t_ns);
    }

    /// Write what is left.
    pub fn finish(&mut self) -> Result<()> {
        self.write_before(u64::MAX);
        self.out.finish()
    }
}

/// The kernel's `rwbs` letters of an operation.
fn rwbs(op: IoOp) -> &'static str {
    match op {
        IoOp::Read => "R",
        IoOp::Write => "W",
        IoOp::Discard => "D",
        IoOp::Flush => "FN",
    }
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Line<'a> {
    /// The task column (`fio-200`, `<idle>-0`).
    pub task: &'a str,
    pub cpu: u32,
    /// The timestamp, ns.
    pub t_ns: u64,
    pub event: Event<'a>,
}

/// The events blkqos reads; anything else is [`Event::Other`].
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    /// `iocost_ioc_vrate_adj`.
    VrateAdj(VrateAdj),
    /// `block_rq_issue` / `block_rq_insert` / `block_rq_complete`.
    Rq {
        kind: RqKind,
        /// `R`, `W`, `WS`, `FN`...
        rwbs: &'a str,
        sector: u64,
        nr_sectors: u64,
    },
    /// `iocost_iocg_activate` (`activate`) or `iocost_iocg_idle`, with the
    /// group's cgroup path.
    Iocg { activate: bool, path: &'a str },
    /// A blk tracer message (`m N ...`): blk-throttle's `throtl ...`.
    Note(&'a str),
    /// `writeback:balance_dirty_pages`: a pass of the dirty throttle that
    /// throttled.
    Bdp(Bdp),
    /// Another tracepoint, by name.
    Other(&'a str),
}

/// `balance_dirty_pages`' fields the lab reduces (pages, KB/s, ms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bdp {
    pub dirtied: u64,
    pub task_ratelimit: u64,
    pub paused_ms: u64,
    pub pause_ms: i64,
}

/// Which request event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqKind {
    /// `block_getrq`: the request got its tag.
    GetRq,
    Insert,
    Issue,
    Complete,
}

/// `iocost_ioc_vrate_adj`'s fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VrateAdj {
    /// `ioc->vtime_rate` before (vtime per µs; 137438 = 100%).
    pub old: u64,
    /// The new base vrate.
    pub new: u64,
    pub busy: i32,
    pub missed_ppm: [u32; 2],
    pub rq_wait_pct: u32,
    pub lagging: i32,
    pub shortages: i32,
}

/// Read one line of a trace; `None` for comments and lines that are not
/// events.
pub fn parse_line(line: &str) -> Option<Line<'_>> {
    if line.starts_with('#') {
        return None;
    }
    // `TASK-PID [CPU] FLAGS SECONDS: REST`; a task name may hold spaces,
    // so the CPU column is found from its bracket
    let open = line.find(" [")?;
    let close = open + line[open..].find(']')?;
    let task = line[..open].trim();
    let cpu = line[open + 2..close].trim().parse().ok()?;
    let after = line[close + 1..].trim_start();
    let (_flags, after) = after.split_once(' ')?;
    let after = after.trim_start();
    let (stamp, rest) = after.split_once(": ")?;
    let t_ns = seconds_to_ns(stamp.trim())?;
    let rest = rest.trim_start();
    let event = match rest.split_once(": ") {
        Some((name, fields)) if !name.contains(' ') => event(name, fields),
        _ => blk_action(rest).or_else(|| note(rest))?,
    };
    Some(Line {
        task,
        cpu,
        t_ns,
        event,
    })
}

fn seconds_to_ns(s: &str) -> Option<u64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let whole: u64 = whole.parse().ok()?;
    let mut frac_ns = 0u64;
    let mut scale = 100_000_000u64;
    for c in frac.chars() {
        frac_ns += u64::from(c.to_digit(10)?) * scale;
        scale /= 10;
    }
    Some(whole * 1_000_000_000 + frac_ns)
}

fn event<'a>(name: &'a str, fields: &'a str) -> Event<'a> {
    let rq = |kind| rq(kind, fields).unwrap_or(Event::Other(name));
    match name {
        "iocost_ioc_vrate_adj" => vrate_adj(fields).map_or(Event::Other(name), Event::VrateAdj),
        "balance_dirty_pages" => bdp(fields).map_or(Event::Other(name), Event::Bdp),
        "block_getrq" => getrq(fields).unwrap_or(Event::Other(name)),
        "block_rq_issue" => rq(RqKind::Issue),
        "block_rq_insert" => rq(RqKind::Insert),
        "block_rq_complete" => rq(RqKind::Complete),
        "iocost_iocg_activate" | "iocost_iocg_idle" => {
            iocg_path(fields).map_or(Event::Other(name), |path| Event::Iocg {
                activate: name == "iocost_iocg_activate",
                path,
            })
        }
        _ => Event::Other(name),
    }
}

/// `bdi 254:0: limit=... dirtied=N ... task_ratelimit=N ... paused=N
/// pause=N ...`.
fn bdp(fields: &str) -> Option<Bdp> {
    let field = |k: &str| -> Option<i64> {
        fields
            .split_whitespace()
            .find_map(|w| w.strip_prefix(k))?
            .parse()
            .ok()
    };
    Some(Bdp {
        dirtied: field("dirtied=")? as u64,
        task_ratelimit: field("task_ratelimit=")? as u64,
        paused_ms: field("paused=")? as u64,
        pause_ms: field("pause=")?,
    })
}

/// The cgroup of `[dev:/path] now=...`.
fn iocg_path(fields: &str) -> Option<&str> {
    let inside = fields.strip_prefix('[')?.split(']').next()?;
    Some(inside.split_once(':')?.1)
}

/// `254,0 R 4096 () 505944 + 8 [be,0,4] [fio]` (issue, insert) or
/// `254,0 R () 505944 + 8 [be,0,4] [0]` (complete).
fn rq(kind: RqKind, fields: &str) -> Option<Event<'_>> {
    let mut it = fields.split_whitespace();
    let _dev = it.next()?;
    let rwbs = it.next()?;
    if kind != RqKind::Complete {
        let _bytes = it.next()?;
    }
    // the command, `()` for file system requests
    let cmd = it.next()?;
    if !cmd.starts_with('(') {
        return None;
    }
    rq_tail(kind, rwbs, it)
}

/// `254,0 R 505944 + 8 [fio]`: no byte count and no command column.
fn getrq(fields: &str) -> Option<Event<'_>> {
    let mut it = fields.split_whitespace();
    let _dev = it.next()?;
    let rwbs = it.next()?;
    rq_tail(RqKind::GetRq, rwbs, it)
}

/// The `SECTOR + NR` every request line ends with (before the ioprio and
/// task or error columns).
fn rq_tail<'a>(
    kind: RqKind,
    rwbs: &'a str,
    mut it: std::str::SplitWhitespace<'_>,
) -> Option<Event<'a>> {
    let sector = it.next()?.parse().ok()?;
    if it.next()? != "+" {
        return None;
    }
    let nr_sectors = it.next()?.parse().ok()?;
    Some(Event::Rq {
        kind,
        rwbs,
        sector,
        nr_sectors,
    })
}

/// `[dev] vrate=A->B busy=N missed_ppm=R:W rq_wait_pct=P lagging=L shortages=S`.
fn vrate_adj(fields: &str) -> Option<VrateAdj> {
    let mut v = VrateAdj::default();
    for kv in fields.split_whitespace().skip(1) {
        let (k, val) = kv.split_once('=')?;
        match k {
            "vrate" => {
                let (a, b) = val.split_once("->")?;
                v.old = a.parse().ok()?;
                v.new = b.parse().ok()?;
            }
            "busy" => v.busy = val.parse().ok()?,
            "missed_ppm" => {
                let (r, w) = val.split_once(':')?;
                v.missed_ppm = [r.parse().ok()?, w.parse().ok()?];
            }
            "rq_wait_pct" => v.rq_wait_pct = val.parse().ok()?,
            "lagging" => v.lagging = val.parse().ok()?,
            "shortages" => v.shortages = val.parse().ok()?,
            _ => {}
        }
    }
    Some(v)
}

/// The blk tracer's request lines: `254,0 D WS 505920 + 32 [fio]`
/// (`D` issued to the driver, `C` completed, `I` inserted).
fn blk_action(rest: &str) -> Option<Event<'_>> {
    let mut it = rest.split_whitespace();
    let _dev = it.next()?;
    let kind = match it.next()? {
        "D" => RqKind::Issue,
        "C" => RqKind::Complete,
        "I" => RqKind::Insert,
        _ => return None,
    };
    let rwbs = it.next()?;
    rq_tail(kind, rwbs, it)
}

/// The blk tracer's message line: `254,0 1,0 m N TEXT`.
fn note(rest: &str) -> Option<Event<'_>> {
    let at = rest.find(" m ")?;
    let text = rest[at + 3..].trim_start();
    let text = text.strip_prefix("N ").unwrap_or(text);
    Some(Event::Note(text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernels_lines() {
        let l = parse_line("             fio-200     [001] d.s2.    17.580460: iocost_ioc_vrate_adj: [nullb1] vrate=137438->140186 busy=-2 missed_ppm=1000000:0 rq_wait_pct=12 lagging=1 shortages=3").unwrap();
        assert_eq!(l.task, "fio-200");
        assert_eq!(l.cpu, 1);
        assert_eq!(l.t_ns, 17_580_460_000);
        assert_eq!(
            l.event,
            Event::VrateAdj(VrateAdj {
                old: 137_438,
                new: 140_186,
                busy: -2,
                missed_ppm: [1_000_000, 0],
                rq_wait_pct: 12,
                lagging: 1,
                shortages: 3
            })
        );
        let l = parse_line("             fio-200     [001] .....    17.571768: block_rq_issue: 254,0 R 4096 () 505944 + 8 be,0,4 [fio]").unwrap();
        assert_eq!(
            l.event,
            Event::Rq {
                kind: RqKind::Issue,
                rwbs: "R",
                sector: 505_944,
                nr_sectors: 8
            }
        );
        let l = parse_line("          <idle>-0       [001] d.h2.    13.931379: block_rq_complete: 254,0 WS () 505920 + 32 [0]").unwrap();
        assert_eq!(l.task, "<idle>-0");
        assert!(matches!(
            l.event,
            Event::Rq {
                kind: RqKind::Complete,
                rwbs: "WS",
                sector: 505_920,
                nr_sectors: 32
            }
        ));
    }

    #[test]
    fn reads_the_kernels_getrq() {
        let l = parse_line("             fio-199     [001] .....    17.571700: block_getrq: 254,0 R 505944 + 8 [fio]").unwrap();
        assert_eq!(l.task, "fio-199");
        assert_eq!(
            l.event,
            Event::Rq {
                kind: RqKind::GetRq,
                rwbs: "R",
                sector: 505944,
                nr_sectors: 8
            }
        );
    }

    #[test]
    fn reads_the_blk_tracers_lines() {
        let l = parse_line("             fio-195     [001] d..1.    13.916733: 254,0   1,0  m   N throtl [W] new slice start=4294895770 end=4294895795 jiffies=4294895770").unwrap();
        assert_eq!(
            l.event,
            Event::Note("throtl [W] new slice start=4294895770 end=4294895795 jiffies=4294895770")
        );
        let l = parse_line("             fio-200     [001] d..2.    17.569371: iocost_iocg_activate: [nullb1:/cgB] now=17521478:853991903576 vrate=137438 period=0->0 vtime=853510870576 weight=6553600/6553600 hweight=65536/65536").unwrap();
        assert_eq!(
            l.event,
            Event::Iocg {
                activate: true,
                path: "/cgB"
            }
        );
        assert_eq!(parse_line("# tracer: blk"), None);
        // the blk tracer's bio events: issue and completion are read,
        // the others are not events here
        assert_eq!(
            parse_line("             fio-195     [001] d..1.    13.927990: 254,0    Q  WS 505920 + 32 [fio]"),
            None
        );
        let l = parse_line(
            "             fio-195     [001] d..1.    13.929573: 254,0    D  WS 505920 + 32 [fio]",
        )
        .unwrap();
        assert_eq!(
            l.event,
            Event::Rq {
                kind: RqKind::Issue,
                rwbs: "WS",
                sector: 505_920,
                nr_sectors: 32
            }
        );
        assert!(matches!(
            parse_line(
                "          <idle>-0       [001] d.h2.    13.931379: 254,0    C  WS 505920 + 32 [0]"
            )
            .unwrap()
            .event,
            Event::Rq {
                kind: RqKind::Complete,
                ..
            }
        ));
    }

    #[test]
    fn writes_what_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.txt");
        let mut k = KernelTrace::create(
            &path,
            "nullb1",
            DevId {
                major: 254,
                minor: 0,
            },
        )
        .unwrap();
        k.request(&RequestRecord {
            group: blkqos_core::GroupId::ROOT,
            op: IoOp::Write,
            submitted_at: blkqos_core::Instant(1_000),
            started_at: blkqos_core::Instant(2_400_000_000),
            // held by the device until then: the issue line is its start
            dispatched_at: blkqos_core::Instant(2_500_000_000),
            completed_at: blkqos_core::Instant(2_500_020_000),
            bytes: 16384,
            offset: 8192,
        });
        k.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Line> = text.lines().filter_map(parse_line).collect();
        assert_eq!(lines.len(), 3, "{text}");
        // its tag, in its group's column
        assert_eq!(lines[0].t_ns, 2_400_000_000);
        assert_eq!(lines[0].task, "fio-0");
        assert_eq!(
            lines[0].event,
            Event::Rq {
                kind: RqKind::GetRq,
                rwbs: "W",
                sector: 16,
                nr_sectors: 32
            }
        );
        assert_eq!(lines[1].t_ns, 2_500_000_000);
        assert_eq!(lines[1].task, "blkqos-0");
        assert_eq!(
            lines[1].event,
            Event::Rq {
                kind: RqKind::Issue,
                rwbs: "W",
                sector: 16,
                nr_sectors: 32
            }
        );
        assert_eq!(lines[2].t_ns, 2_500_020_000);
    }
}
