//! The simulated page cache's options (`[pagecache]`, `--pagecache-*`) and
//! its writeback report: the per-second device and per-group writeback
//! series and the per-task throttling statistics.

use blkqos_core::GroupId;
use blkqos_driver::pagecache::{DirtyLimit, PAGE_BYTES};
use blkqos_driver::{PageCacheConfig, PageCacheReport, WritebackMode};
use std::io::Write;
use std::path::PathBuf;

/// Page cache settings of a run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PageCacheOptions {
    /// Model the page cache for buffered jobs (on by default).
    pub disabled: bool,
    /// `enable = on` was written: on the real engine this turns on blkqos's
    /// userspace write-back buffer (off by default there: buffered jobs
    /// use the kernel's page cache, as fio's do).
    pub enabled_explicitly: bool,
    pub cfg: PageCacheConfig,
    /// Write the writeback report here (JSON when it ends in `.json`).
    pub report: Option<PathBuf>,
    /// Keep the per-second series without a report (lab compare reads it).
    pub keep_series: bool,
    /// `memory.max` writes of the scenario: (cgroup path, bytes), resolved
    /// to groups when the run's cgroup tree is built.
    pub memory_max: Vec<(String, u64)>,
}

pub const KEYS: &str = "enable, memory, dirty_ratio, dirty_background_ratio, dirty_bytes, \
dirty_background_bytes, dirty_expire, writeback_interval, writeback_io, chunk, writeback, copy_rate, report";

impl PageCacheOptions {
    /// Set one option by name; the error says what is accepted.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let size = |v: &str| {
            blkqos_sim::device::parse_size(v)
                .filter(|&b| b > 0)
                .ok_or_else(|| format!("{key} `{v}`: expected a size like 512m, 64k or 1048576"))
        };
        let pct = |v: &str| {
            v.parse::<u32>()
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| format!("{key} `{v}`: expected a percentage 1..100"))
        };
        let time = |v: &str| {
            crate::scenario::parse_at(v)
                .filter(|&n| n > 0)
                .map(blkqos_core::Duration)
                .ok_or_else(|| format!("{key} `{v}`: expected a time like 5s or 500ms"))
        };
        let c = &mut self.cfg;
        match key {
            "enable" => {
                self.disabled = match value {
                    "1" | "true" | "on" => false,
                    "0" | "false" | "off" => true,
                    _ => return Err(format!("{key} `{value}`: expected on or off")),
                };
                self.enabled_explicitly = !self.disabled;
            }
            "memory" => c.memory_bytes = size(value)?,
            "dirty_ratio" => c.dirty = DirtyLimit::Percent(pct(value)?),
            "dirty_background_ratio" => c.dirty_background = DirtyLimit::Percent(pct(value)?),
            "dirty_bytes" => c.dirty = DirtyLimit::Bytes(size(value)?),
            "dirty_background_bytes" => c.dirty_background = DirtyLimit::Bytes(size(value)?),
            "dirty_expire" => c.dirty_expire = time(value)?,
            "writeback_interval" => c.writeback_interval = time(value)?,
            "writeback_io" | "chunk" => {
                let b = size(value)?;
                if b % PAGE_BYTES != 0 {
                    return Err(format!("{key} `{value}`: must be a multiple of 4k"));
                }
                if key == "chunk" {
                    c.chunk_bytes = b
                } else {
                    c.writeback_io_bytes = b
                }
            }
            "writeback" => {
                c.mode = WritebackMode::parse(value).ok_or_else(|| {
                    format!("{key} `{value}`: use async (Linux cgroup writeback, io-throttle's kiothrottled), sync or root")
                })?
            }
            // bytes per second a buffered IO copies between the user
            // buffer and the cache (a slower host, an emulated guest)
            "copy_rate" => c.copy_bytes_per_s = size(value)?,
            "report" => self.report = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown pagecache option `{key}`: use {KEYS}")),
        }
        Ok(())
    }

    /// The per-second series is kept only when something reads it.
    fn wants_series(&self) -> bool {
        self.report.is_some() || self.keep_series
    }

    pub fn config(&self) -> Option<PageCacheConfig> {
        (!self.disabled).then(|| PageCacheConfig {
            series: self.wants_series(),
            ..self.cfg.clone()
        })
    }

    /// The real engine's write-back buffer, if asked for: the same model,
    /// holding only unwritten pages and drained before the run ends.
    pub fn engine_buffer(&self) -> Option<PageCacheConfig> {
        self.enabled_explicitly.then(|| PageCacheConfig {
            cache_reads: false,
            drain_at_end: true,
            series: self.wants_series(),
            ..self.cfg.clone()
        })
    }
}

/// One task's identity for the report.
pub struct TaskName {
    pub job: String,
    pub group: String,
}

const MB: f64 = 1_000_000.0;
const MIB: f64 = 1_048_576.0;

/// The report as text: the per-second series (device writes and each
/// group's writeback in MB/s, dirty and writeback MiB) and per-task stats,
/// written as it is formatted (the series of a long run is long).
pub fn render_text(
    r: &PageCacheReport,
    groups: &dyn Fn(GroupId) -> String,
    tasks: &[TaskName],
    s: &mut dyn Write,
) -> std::io::Result<()> {
    let page_mib = |p: u64| (p * PAGE_BYTES) as f64 / MIB;
    writeln!(
        s,
        "# blkqos writeback: mode={} dirty_thresh={:.1}MiB dirty_background_thresh={:.1}MiB",
        r.mode,
        page_mib(r.thresh_pages),
        page_mib(r.bg_thresh_pages)
    )?;
    let mut owners: Vec<GroupId> = r.written_back_bytes.iter().map(|g| g.0).collect();
    owners.sort();
    write!(s, "{:>5} {:>10}", "sec", "disk MB/s")?;
    for g in &owners {
        write!(s, " {:>14}", format!("wb {} MB/s", groups(*g)))?;
    }
    writeln!(s, " {:>10} {:>14}", "dirty MiB", "writeback MiB")?;
    for (i, x) in r.series.iter().enumerate() {
        write!(s, "{:>5} {:>10.2}", i + 1, x.device_write_bytes as f64 / MB)?;
        for g in &owners {
            let b = x
                .writeback_bytes
                .iter()
                .find(|w| w.0 == *g)
                .map_or(0, |w| w.1);
            write!(s, " {:>14.2}", b as f64 / MB)?;
        }
        writeln!(
            s,
            " {:>10.1} {:>14.1}",
            page_mib(x.dirty_pages),
            page_mib(x.writeback_pages)
        )?;
    }
    if let Some(sec) = r.series.truncated_at() {
        writeln!(s, "# {}", truncation_note(sec))?;
    }
    writeln!(s, "# per group: dirtied vs written back (bytes)")?;
    for (g, d) in &r.dirtied_bytes {
        let w = r
            .written_back_bytes
            .iter()
            .find(|x| x.0 == *g)
            .map_or(0, |x| x.1);
        writeln!(s, "{} dirtied={d} written_back={w}", groups(*g))?;
    }
    render_tasks(r, tasks, s)
}

/// The per-task table (io-throttle's per-task stats).
fn render_tasks(r: &PageCacheReport, tasks: &[TaskName], s: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        s,
        "# per task: balance_dirty_pages pauses and fsync (io-throttle's per-task stats)"
    )?;
    writeln!(
        s,
        "{:<16} {:<12} {:>14} {:>8} {:>14} {:>12} {:>7} {:>10} {:>10}",
        "job",
        "cgroup",
        "dirtied_bytes",
        "pauses",
        "pause_ms_total",
        "pause_ms_max",
        "fsyncs",
        "fsync_ms",
        "dirty_end"
    )?;
    for (t, n) in r.tasks.iter().zip(tasks) {
        writeln!(
            s,
            "{:<16} {:<12} {:>14} {:>8} {:>14.1} {:>12.1} {:>7} {:>10.1} {:>10}",
            n.job,
            n.group,
            t.dirtied_bytes,
            t.pauses,
            t.pause_ns_total as f64 / 1e6,
            t.pause_ns_max as f64 / 1e6,
            t.fsyncs,
            t.fsync_ns_total as f64 / 1e6,
            t.dirty_pages_end
        )?;
    }
    Ok(())
}

/// What a truncated series says (report and stderr): from which second
/// (1-based, as the report counts them) nothing was recorded.
pub fn truncation_note(first_missing_sec: u64) -> String {
    format!(
        "writeback series truncated: seconds {} and later are not recorded (at most {} seconds with writes are kept)",
        first_missing_sec + 1,
        blkqos_driver::pagecache::MAX_SERIES_ENTRIES
    )
}

/// One second of the series as JSON.
fn second_json(
    i: usize,
    x: &blkqos_driver::pagecache::SecondSample,
    groups: &dyn Fn(GroupId) -> String,
) -> serde_json::Value {
    let wb: serde_json::Map<String, serde_json::Value> = x
        .writeback_bytes
        .iter()
        .map(|(g, b)| (groups(*g), serde_json::json!(b)))
        .collect();
    serde_json::json!({
        "second": i + 1,
        "device_write_bytes": x.device_write_bytes,
        "writeback_bytes": wb,
        "dirty_pages": x.dirty_pages,
        "writeback_pages": x.writeback_pages,
    })
}

/// The series as a JSON array (short runs: lab compare).
pub fn series_json(r: &PageCacheReport, groups: &dyn Fn(GroupId) -> String) -> serde_json::Value {
    r.series
        .iter()
        .enumerate()
        .map(|(i, x)| second_json(i, &x, groups))
        .collect()
}

/// The report as pretty-printed JSON (and a newline), written as it is
/// formatted: the document without its series, with the series' seconds
/// spliced in one by one, indented as `serde_json::to_string_pretty`
/// indents an array two levels deep.
pub fn render_json(
    r: &PageCacheReport,
    groups: &dyn Fn(GroupId) -> String,
    tasks: &[TaskName],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    const EMPTY: &str = "\"series\": []";
    let doc = serde_json::to_string_pretty(&json_without_series(r, groups, tasks))
        .expect("JSON values serialize");
    // the first key holding user text comes after the series
    let (head, tail) = doc.split_at(doc.find(EMPTY).unwrap_or(doc.len()));
    out.write_all(head.as_bytes())?;
    if r.series.is_empty() || !tail.starts_with(EMPTY) {
        out.write_all(tail.as_bytes())?;
        return out.write_all(b"\n");
    }
    out.write_all(b"\"series\": [")?;
    for (i, x) in r.series.iter().enumerate() {
        let one = serde_json::to_string_pretty(&second_json(i, &x, groups))
            .expect("JSON values serialize");
        out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        for (k, line) in one.lines().enumerate() {
            if k > 0 {
                out.write_all(b"\n")?;
            }
            write!(out, "    {line}")?;
        }
    }
    out.write_all(b"\n  ]")?;
    out.write_all(&tail.as_bytes()[EMPTY.len()..])?;
    out.write_all(b"\n")
}

/// The report as JSON with an empty series (see [`render_json`]).
fn json_without_series(
    r: &PageCacheReport,
    groups: &dyn Fn(GroupId) -> String,
    tasks: &[TaskName],
) -> serde_json::Value {
    use serde_json::json;
    let per_group = |v: &[(GroupId, u64)]| -> serde_json::Map<String, serde_json::Value> {
        v.iter().map(|(g, b)| (groups(*g), json!(b))).collect()
    };
    let tasks: Vec<_> = r
        .tasks
        .iter()
        .zip(tasks)
        .map(|(t, n)| {
            json!({
                "job": n.job, "cgroup": n.group,
                "dirtied_bytes": t.dirtied_bytes, "pauses": t.pauses,
                "pause_ns_total": t.pause_ns_total, "pause_ns_max": t.pause_ns_max,
                "fsyncs": t.fsyncs, "fsync_ns_total": t.fsync_ns_total,
                "dirty_pages_end": t.dirty_pages_end,
            })
        })
        .collect();
    let mut doc = json!({
        "mode": r.mode,
        "page_bytes": PAGE_BYTES,
        "dirty_thresh_pages": r.thresh_pages,
        "dirty_background_thresh_pages": r.bg_thresh_pages,
        "series": [],
    });
    if let (Some(sec), Some(m)) = (r.series.truncated_at(), doc.as_object_mut()) {
        m.insert("series_truncated_at_second".into(), json!(sec + 1));
    }
    let rest = json!({
        "dirtied_bytes": per_group(&r.dirtied_bytes),
        "written_back_bytes": per_group(&r.written_back_bytes),
        "double_writebacks": r.double_writebacks,
        "tasks": tasks,
    });
    if let (Some(m), serde_json::Value::Object(rest)) = (doc.as_object_mut(), rest) {
        m.extend(rest);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::Instant;
    use blkqos_driver::pagecache::PageCache;

    /// A report whose series has seconds with and without writes.
    fn report() -> PageCacheReport {
        let s = |sec: u64| Instant(sec * 1_000_000_000);
        let mut pc = PageCache::new(PageCacheConfig::default(), s(0), 1);
        let ino = pc.inode(0, GroupId(1));
        for (sec, off) in [(0, 0), (3, 1 << 20), (7, 2 << 20)] {
            let mut at = pc.start_write(0, ino, off, 1 << 20, s(sec));
            while let Some(next) = pc.step_write(0, at) {
                at = next;
            }
            pc.fsync(ino);
            let mut out = Vec::new();
            pc.poll(s(sec), &mut out);
            pc.writeback_dispatched();
            for io in out {
                pc.device_write_done(io.len, s(sec + 1));
                pc.writeback_done(io.offset, io.len, s(sec + 1));
            }
        }
        pc.report(s(12))
    }

    #[test]
    fn streamed_json_is_what_serde_pretty_prints() {
        let r = report();
        // seconds 1, 4 and 8 stored with writes, 12 the end; the rest rebuilt
        assert_eq!(r.series.len(), 13);
        assert_eq!(
            r.series.iter().filter(|x| x.device_write_bytes > 0).count(),
            3
        );
        let groups = |g: GroupId| format!("/g{}", g.idx());
        let tasks = [TaskName {
            job: "w".into(),
            group: "/g1".into(),
        }];
        let mut whole = json_without_series(&r, &groups, &tasks);
        whole["series"] = series_json(&r, &groups);
        let want = serde_json::to_string_pretty(&whole).unwrap() + "\n";
        let mut got = Vec::new();
        render_json(&r, &groups, &tasks, &mut got).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want);
        // and with no series
        let empty = PageCacheReport::default();
        let mut got = Vec::new();
        render_json(&empty, &groups, &[], &mut got).unwrap();
        let want = serde_json::to_string_pretty(&json_without_series(&empty, &groups, &[]))
            .unwrap()
            + "\n";
        assert_eq!(String::from_utf8(got).unwrap(), want);
    }
}
