//! `blkqos summary FILE.json...`: seed 001's result table from fio JSON
//! reports, as the seed script's `get_result` prints it (the v3 posting,
//! with the slat column): one line per report from `.jobs[0].mixed`, so
//! the reports must come from `--unified_rw_reporting=mixed`.

use anyhow::{anyhow, Context};
use blkqos_experiment::failure::Failure;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

pub const HELP: &str = "\
Print seed 001's result table from fio JSON reports (fio, or blkqos run with
--output-format=json), one line per FILE:

  CGROUP   IOPS   MB/s    slat avg(ms)  clat avg(ms) max(ms) P90(ms) P99 P99.9 P99.99

The columns are the seed script's get_result on `.jobs[0].mixed`, with its
printf widths: IOPS rounded (jq round), MB/s = bw_bytes / 2^20, times in ms
from slat_ns.mean, clat_ns.mean, clat_ns.max and clat_ns.percentile. The
reports need --unified_rw_reporting=mixed (and --group_reporting for one
job per file). The label is the job name and its bs (\"cgA-1m\"). A blank line
starts each repeat of the first file's job name, so

  blkqos summary a_4k/cgA_1m.json a_4k/cgB_4k.json a_32k/cgA_1m.json a_32k/cgB_32k.json

groups the lines as the seed's table does. Values a report lacks print as -.
Text before the JSON object (fio warnings) is skipped.
Exit status: 0 ok, 2 unreadable or unsuitable report.";

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub job: String,
    pub label: String,
    pub iops: Option<f64>,
    pub mbps: Option<f64>,
    /// ms
    pub slat_avg: Option<f64>,
    pub clat_avg: Option<f64>,
    pub clat_max: Option<f64>,
    /// P90, P99, P99.9, P99.99 (ms)
    pub pct: [Option<f64>; 4],
}

const PCT_KEYS: [&str; 4] = ["90.000000", "99.000000", "99.900000", "99.990000"];

/// The fio JSON object in `text` (skipping anything before the first line
/// that starts with `{`).
fn parse_report(text: &str) -> anyhow::Result<Value> {
    let start = if text.trim_start().starts_with('{') {
        0
    } else {
        text.match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&i| text[i..].starts_with('{'))
            .ok_or_else(|| anyhow!("no JSON object: expected fio --output-format=json"))?
    };
    serde_json::from_str(&text[start..]).context("not a fio JSON report")
}

/// The row for one report.
pub fn row(report: &Value) -> anyhow::Result<Row> {
    let job = report
        .get("jobs")
        .and_then(|j| j.get(0))
        .ok_or_else(|| anyhow!("no `jobs[0]` in the report"))?;
    let mixed = job.get("mixed").ok_or_else(|| {
        anyhow!("`jobs[0]` has no `mixed` section: run fio with --unified_rw_reporting=mixed")
    })?;
    let name = job
        .get("jobname")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let bs = job
        .get("job options")
        .and_then(|o| o.get("bs"))
        .or_else(|| report.get("global options").and_then(|o| o.get("bs")))
        .and_then(Value::as_str);
    let label = match bs {
        Some(bs) => format!("{name}-{bs}"),
        None => name.clone(),
    };
    let num = |v: Option<&Value>| -> Option<f64> {
        let v = v?;
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    };
    let ms = |section: &str, key: &str| {
        num(mixed.get(section).and_then(|s| s.get(key))).map(|ns| ns / 1e6)
    };
    let pct_of = |k: &str| {
        num(mixed
            .get("clat_ns")
            .and_then(|c| c.get("percentile"))
            .and_then(|p| p.get(k)))
        .map(|ns| ns / 1e6)
    };
    Ok(Row {
        job: name,
        label,
        iops: num(mixed.get("iops")).map(f64::round),
        mbps: num(mixed.get("bw_bytes")).map(|b| b / 1024.0 / 1024.0),
        slat_avg: ms("slat_ns", "mean"),
        clat_avg: ms("clat_ns", "mean"),
        clat_max: ms("clat_ns", "max"),
        pct: PCT_KEYS.map(pct_of),
    })
}

/// `printf "%-8s %-6s %-7s %-8s %-8s %-8s %-8s %-8s %-8s %-8s\n"` of the
/// two header lines and a blank line.
pub fn header() -> String {
    let mut s = String::new();
    for cols in [
        [
            "", "", "", "slat", "clat", "clat", "clat", "clat", "clat", "clat",
        ],
        [
            "CGROUP", "IOPS", "MB/s", "avg(ms)", "avg(ms)", "max(ms)", "P90(ms)", "P99", "P99.9",
            "P99.99",
        ],
    ] {
        let _ = writeln!(
            s,
            "{:<8} {:<6} {:<7} {:<8} {:<8} {:<8} {:<8} {:<8} {:<8} {:<8}",
            cols[0],
            cols[1],
            cols[2],
            cols[3],
            cols[4],
            cols[5],
            cols[6],
            cols[7],
            cols[8],
            cols[9]
        );
    }
    s.push('\n');
    s
}

/// `printf "%-8s %-6s %-7.2f %-8.2f ... %-8.2f\n"` of one row.
pub fn format_row(r: &Row) -> String {
    let f = |v: Option<f64>, w: usize| match v {
        Some(x) => format!("{:<w$.2}", x, w = w),
        None => format!("{:<w$}", "-", w = w),
    };
    let iops = r.iops.map_or("-".to_string(), |x| format!("{x:.0}"));
    let mut s = format!("{:<8} {:<6} {}", r.label, iops, f(r.mbps, 7));
    for v in [r.slat_avg, r.clat_avg, r.clat_max]
        .into_iter()
        .chain(r.pct)
    {
        s.push(' ');
        s.push_str(&f(v, 8));
    }
    s.push('\n');
    s
}

/// The whole table for `rows`: header, then the rows with a blank line
/// before each repeat of the first row's job name.
pub fn table(rows: &[Row]) -> String {
    let mut s = header();
    for (i, r) in rows.iter().enumerate() {
        if i > 0 && r.job == rows[0].job {
            s.push('\n');
        }
        s.push_str(&format_row(r));
    }
    s
}

pub fn run(args: &[String]) -> Result<(), Failure> {
    let bad = |err: anyhow::Error| Failure { code: 2, err };
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return blkqos_experiment::stdout::write_out(&format!("{HELP}\n")).map_err(|e| Failure {
            code: 1,
            err: e.into(),
        });
    }
    if args.is_empty() {
        return Err(bad(anyhow!(
            "summary: give one or more fio JSON reports (see blkqos summary --help)"
        )));
    }
    let mut rows = Vec::with_capacity(args.len());
    for a in args {
        let path = Path::new(a);
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))
            .map_err(bad)?;
        let r = parse_report(&text)
            .and_then(|v| row(&v))
            .with_context(|| path.display().to_string())
            .map_err(bad)?;
        rows.push(r);
    }
    blkqos_experiment::stdout::write_out(&table(&rows)).map_err(|e| Failure {
        code: 1,
        err: e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(job: &str, bs: &str, iops: f64, bw: u64, slat: f64, clat: f64) -> Value {
        serde_json::json!({
            "fio version": "fio-3.33",
            "jobs": [{
                "jobname": job,
                "job options": { "name": job, "bs": bs },
                "mixed": {
                    "iops": iops,
                    "bw_bytes": bw,
                    "slat_ns": { "mean": slat },
                    "clat_ns": {
                        "mean": clat, "max": 26_110_000.0,
                        "percentile": {
                            "90.000000": 2_867_200, "99.000000": 6_258_688,
                            "99.900000": 12_386_304, "99.990000": 26_083_328
                        }
                    }
                }
            }]
        })
    }

    #[test]
    fn row_matches_the_seed_script_printf() {
        // the seed's "After" cgB-4k line (v1 table), with a slat of 0.01 ms
        let r = row(&report("cgB", "4k", 199.6, 817_889, 10_000.0, 2_010_000.0)).unwrap();
        assert_eq!(r.label, "cgB-4k");
        assert_eq!(
            format_row(&r),
            "cgB-4k   200    0.78    0.01     2.01     26.11    2.87     6.26     12.39    26.08   \n"
        );
    }

    #[test]
    fn header_has_the_v3_columns() {
        let h = header();
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[1],
            "CGROUP   IOPS   MB/s    avg(ms)  avg(ms)  max(ms)  P90(ms)  P99      P99.9    P99.99  "
        );
        assert!(lines[0].starts_with("                        slat     clat"));
        assert_eq!(lines[2], "");
    }

    #[test]
    fn table_groups_repeats_of_the_first_job() {
        let a = row(&report("cgA", "1m", 166.6, 174_700_000, 3.0e6, 7.5e8)).unwrap();
        let b = row(&report("cgB", "4k", 5.0, 20_000, 2.0e4, 1.9e8)).unwrap();
        let t = table(&[a.clone(), b.clone(), a, b]);
        let body: Vec<&str> = t.lines().skip(3).collect();
        assert_eq!(body.len(), 5);
        assert!(body[0].starts_with("cgA-1m   167    166.61 "));
        assert!(body[1].starts_with("cgB-4k   5      0.02   "));
        assert_eq!(body[2], "");
    }

    #[test]
    fn missing_mixed_or_values() {
        let v = serde_json::json!({"jobs": [{"jobname": "x", "read": {}}]});
        let e = row(&v).unwrap_err().to_string();
        assert!(e.contains("unified_rw_reporting=mixed"), "{e}");
        let v = serde_json::json!({"jobs": [{"jobname": "x", "mixed": {"iops": 3}}]});
        let r = row(&v).unwrap();
        assert_eq!(r.label, "x");
        assert!(format_row(&r).starts_with("x        3      -       -        "));
    }

    #[test]
    fn text_before_the_json_is_skipped() {
        let v = parse_report("note: a warning\n{\"jobs\": []}\n").unwrap();
        assert!(v.get("jobs").is_some());
        assert!(parse_report("no json here").is_err());
    }
}
