//! What a run did, when none of its reports went to stdout: a scenario
//! whose fio invocations all write `--output=FILE` would otherwise end with
//! nothing but the stderr lines naming those files.
//!
//! One line per job and direction that moved data, clones of one job in
//! one cgroup merged (as `group_reporting` merges them): IOs, IOPS and
//! MiB/s over the direction's runtime, and the completion latency's p50,
//! p99 (fio's nearest-rank rule over its histogram buckets, capped at the
//! largest sample) and maximum.

use crate::experiment::Ran;
use blkqos_workload::DirStats;
use std::fmt::Write as _;

/// One merged row: (job name, cgroup path, direction, statistics).
type Row<'a> = (&'a str, &'a str, &'static str, DirStats);

/// The table, or `None` when no job moved any data.
pub fn table(ran: &Ran) -> Option<String> {
    let rows = rows(ran);
    if rows.is_empty() {
        return None;
    }
    let head = [
        "job", "cgroup", "dir", "ios", "iops", "MiB/s", "p50", "p99", "max",
    ];
    let mut lines: Vec<[String; 9]> = vec![head.map(String::from)];
    for (job, group, dir, s) in &rows {
        lines.push(cells(job, group, dir, s));
    }
    let widths: Vec<usize> = (0..9)
        .map(|c| lines.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::from(
        "# what ran (every report went to a file): clat p50/p99/max in ms, \
         IOPS and MiB/s over each direction's runtime\n",
    );
    for l in &lines {
        let mut line = String::new();
        for (c, cell) in l.iter().enumerate() {
            // names left-aligned, numbers right-aligned
            if c < 3 {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            } else {
                let _ = write!(line, "{cell:>w$}  ", w = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    Some(out)
}

/// Clones merged per (job, cgroup), then one row per direction with IO,
/// in the order the jobs were set up.
fn rows(ran: &Ran) -> Vec<Row<'_>> {
    let mut merged: Vec<Row<'_>> = Vec::new();
    for job in &ran.result.jobs {
        let group = ran.tree.path(job.group);
        for (dir, stats) in [
            ("read", &job.stats.dirs.read),
            ("write", &job.stats.dirs.write),
            ("trim", &job.stats.dirs.trim),
        ] {
            if stats.total_ios == 0 {
                continue;
            }
            let same = |r: &&mut Row<'_>| r.0 == job.spec.name && r.1 == group && r.2 == dir;
            match merged.iter_mut().find(same) {
                // group_reporting: counts add, the longest runtime stays
                Some(row) => row.3.merge(stats),
                None => merged.push((&job.spec.name, group, dir, stats.clone())),
            }
        }
    }
    merged
}

fn cells(job: &str, group: &str, dir: &str, s: &DirStats) -> [String; 9] {
    let per_s = |v: f64| {
        if s.runtime_ms == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", v * 1000.0 / s.runtime_ms as f64)
        }
    };
    let pct = s.clat_hist.percentiles(&[50.0, 99.0]);
    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
    // a bucket's value can lie past the largest sample: capped at it
    let pct_of = |i: usize| {
        pct.get(i)
            .map_or("-".to_string(), |&(_, ns)| ms(ns.min(s.clat.max)))
    };
    let max = if s.clat.n == 0 {
        "-".to_string()
    } else {
        ms(s.clat.max)
    };
    [
        job.to_string(),
        group.to_string(),
        dir.to_string(),
        s.total_ios.to_string(),
        per_s(s.total_ios as f64),
        per_s(s.io_bytes as f64 / 1_048_576.0),
        pct_of(0),
        pct_of(1),
        max,
    ]
}
