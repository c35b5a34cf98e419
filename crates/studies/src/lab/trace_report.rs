//! `lab compare --traces --report=FILE.html`: the kernel's and blkqos's
//! trace numbers side by side, per kernel and job: the base vrate second
//! by second as a chart (the real runs' lowest and highest beside
//! blkqos's seeds'), and every number in a table.

use super::metrics::Kind;
use super::{fmt_range, Row};
use anyhow::Result;
use blkqos_experiment::report::chart::{Line, LineChart};
use blkqos_experiment::report::page::{esc, CSS};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The page for `rows` (one `lab compare --traces` table).
pub fn render(rows: &[Row]) -> Result<String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>blkqos lab: kernel traces</title><style>{CSS}</style></head><body>\n<h1>blkqos lab: the kernel's traces beside blkqos's</h1>\n<p class=\"note\">Each number reduced the same way from the kernel's trace of a lab run (tracefs, in the lab's guest) and from blkqos's <code>--ktrace</code> of the same job (lab/README.md, \"Traces\"). Shown, not judged: <em>close</em> is within the real runs' range widened by 10%.</p>\n"
    );
    let mut by_job: BTreeMap<(&str, &str), Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.kind == Kind::Trace) {
        by_job.entry((&r.kernel, &r.job)).or_default().push(r);
    }
    for ((kernel, job), rows) in by_job {
        let _ = writeln!(h, "<h2>{} on {}</h2>", esc(job), esc(kernel));
        let chart = vrate_chart(job, &rows);
        if chart.has_data() {
            let _ = writeln!(
                h,
                "<figure class=\"chart\">\n{}\n<figcaption>iocost's base vrate at the end of each second of the job (the last iocost_ioc_vrate_adj)</figcaption></figure>",
                chart.svg()?
            );
        }
        h += "<table><tr><th>metric</th><th>real</th><th>blkqos</th><th></th></tr>\n";
        for r in rows {
            let verdict = if r.ok { "close" } else { "differs" };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{verdict}</td></tr>",
                esc(&r.metric),
                fmt_range(r.kind, r.real),
                fmt_range(r.kind, r.sim)
            );
        }
        h += "</table>\n";
    }
    h += "</body></html>\n";
    Ok(h)
}

/// `trace.vrate.sNN` as four lines: the real runs' lowest and highest,
/// blkqos's lowest and highest.
fn vrate_chart(job: &str, rows: &[&Row]) -> LineChart {
    let mut c = LineChart::over_time(&format!("{job}: base vrate"), "vrate (%)");
    c.fit_y = true;
    let mut lines: [Vec<(f64, f64)>; 4] = Default::default();
    for r in rows {
        let Some(s) = r.metric.strip_prefix("trace.vrate.s") else {
            continue;
        };
        let Ok(sec) = s.parse::<f64>() else {
            continue;
        };
        for (k, v) in [r.real.0, r.real.1, r.sim.0, r.sim.1]
            .into_iter()
            .enumerate()
        {
            if v.is_finite() {
                lines[k].push((sec, v));
            }
        }
    }
    let names = [
        "kernel, lowest run",
        "kernel, highest run",
        "blkqos, lowest seed",
        "blkqos, highest seed",
    ];
    for (name, points) in names.into_iter().zip(lines) {
        c.lines.push(Line::new(name, points));
    }
    c
}
