//! The report's charts from its inputs, and the HTML page around them.

use super::chart::{tick_text, Line, LineChart};
use super::series::{Interval, Series};
use super::sweep::Limit;
use super::sweep::Sweep;
use super::trace::Trace;
use super::Inputs;
use anyhow::Result;
use std::fmt::Write as _;

/// Intervals shorter than this are not plotted over time (the end-of-run
/// sliver: a rate or percentile over a few ms of draining would draw a
/// cliff at the right edge; its IOs still count in the totals and the
/// CDF), as `--live` skips them.
const MIN_PLOTTED_INTERVAL_NS: u64 = 250_000_000;

/// A chart and what it shows.
pub struct Figure {
    /// Stable id (`chart-iops`, ...): the page's anchors and the tests.
    pub id: &'static str,
    pub caption: String,
    pub chart: LineChart,
}

/// A section: a heading, a note, its figures, extra HTML (tables).
struct Section {
    title: String,
    note: String,
    figures: Vec<Figure>,
    html: String,
}

fn s(ns: u64) -> f64 {
    ns as f64 / 1e9
}
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// HTML-escape.
pub fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Intervals long enough to plot over time (every chart over run time
/// uses the same ones).
fn plotted_intervals(se: &Series) -> Vec<&Interval> {
    let long: Vec<&Interval> = se
        .intervals
        .iter()
        .filter(|i| i.interval_ns >= MIN_PLOTTED_INTERVAL_NS)
        .collect();
    if long.is_empty() {
        se.intervals.iter().filter(|i| i.interval_ns > 0).collect()
    } else {
        long
    }
}

/// One line per cgroup (and direction with IO) of `f(row, interval)`.
fn per_group_lines(
    se: &Series,
    ivs: &[&Interval],
    dirs: bool,
    f: impl Fn(&super::series::GroupRow, &Interval, usize) -> Option<f64>,
) -> Vec<Line> {
    let mut lines = Vec::new();
    for g in se.cgroups() {
        let tot = se.total_ios(&g);
        let ds: &[(usize, &str)] = if dirs {
            &[(0, " read"), (1, " write")]
        } else {
            &[(0, "")]
        };
        for &(d, dn) in ds {
            if dirs && tot[d] == 0 {
                continue;
            }
            let pts: Vec<(f64, f64)> = ivs
                .iter()
                .filter_map(|iv| {
                    let r = iv.cgroups.iter().find(|c| c.cgroup == g);
                    match r {
                        Some(r) => f(r, iv, d).map(|v| (s(iv.t_ns), v)),
                        // no row: the cgroup did nothing and holds nothing
                        None if dirs => Some((s(iv.t_ns), 0.0)),
                        None => None,
                    }
                })
                .collect();
            if !pts.is_empty() {
                lines.push(Line::new(format!("{g}{dn}"), pts));
            }
        }
    }
    lines
}

fn run_section(se: &Series, trace: Option<&Trace>) -> Vec<Section> {
    let ivs = plotted_intervals(se);
    let mut out = vec![throughput_section(se, &ivs), latency_section(se, &ivs)];
    out.extend(util_section(se, &ivs));
    out.push(waits_section(se, &ivs));
    if let Some(sec) = iocost_section(se, &ivs, trace) {
        out.push(sec);
    }
    out
}

/// IOPS and bandwidth per cgroup over the rate intervals `ivs`.
fn throughput_section(se: &Series, ivs: &[&Interval]) -> Section {
    let per_s = |n: u64, iv: &Interval| n as f64 * 1e9 / iv.interval_ns.max(1) as f64;
    let mut iops = LineChart::over_time("IOPS per cgroup", "IOPS");
    iops.lines = per_group_lines(se, ivs, true, |r, iv, d| Some(per_s(r.ios[d], iv)));
    let mut bw = LineChart::over_time("Bandwidth per cgroup", "MiB/s");
    bw.lines = per_group_lines(se, ivs, true, |r, iv, d| {
        Some(per_s(r.bytes[d], iv) / 1048576.0)
    });
    Section {
        title: "Throughput".into(),
        note: "Requests completed per second and their bytes, per cgroup and direction, over each interval (requests as the device sees them: after splits, writeback included).".into(),
        figures: vec![
            Figure { id: "chart-iops", caption: "IOPS per cgroup over time".into(), chart: iops },
            Figure { id: "chart-bandwidth", caption: "Bandwidth per cgroup over time".into(), chart: bw },
        ],
        html: String::new(),
    }
}

/// Latency per cgroup and device over time, and the whole run's CDF.
fn latency_section(se: &Series, ivs: &[&Interval]) -> Section {
    let mut figs = Vec::new();
    let mut lat = LineChart::over_time("Completion latency per cgroup (p50, p99)", "latency (ms)");
    for (name, pick) in [("p99", 0), ("p50", 1)] {
        let lines = per_group_lines(se, ivs, false, |r, _, _| match pick {
            0 => r.p99_ns.map(ms),
            _ => r.latency_ns_p50.map(ms),
        });
        lat.lines.extend(lines.into_iter().map(|mut l| {
            l.name = format!("{} {name}", l.name);
            l
        }));
    }
    figs.push(Figure {
        id: "chart-latency",
        caption: "Completion latency per cgroup, per interval (block-layer entry to completion, io.max and iocost waits included)".into(),
        chart: lat,
    });
    figs.push(device_latency_figure(se, ivs));
    if let Some(f) = cdf_figure(se) {
        figs.push(f);
    }
    Section {
        title: "Latency".into(),
        note: String::new(),
        figures: figs,
        html: String::new(),
    }
}

/// The device's latency percentiles per interval.
fn device_latency_figure(se: &Series, ivs: &[&Interval]) -> Figure {
    let dev = se.device_name();
    let mut dlat = LineChart::over_time(
        &format!("Device latency ({dev}): p50, p90, p99, max"),
        "latency (ms)",
    );
    type Pick = fn(&super::series::DeviceRow) -> Option<u64>;
    let picks: [(&str, Pick); 4] = [
        ("p50", |d| d.latency_ns_p50),
        ("p90", |d| d.latency_ns_p90),
        ("p99", |d| d.latency_ns_p99),
        ("max", |d| d.latency_ns_max),
    ];
    for (name, f) in picks {
        let pts: Vec<(f64, f64)> = ivs
            .iter()
            .filter_map(|iv| iv.device.as_ref().and_then(f).map(|v| (s(iv.t_ns), ms(v))))
            .collect();
        if !pts.is_empty() {
            dlat.lines.push(Line::new(format!("{dev} {name}"), pts));
        }
    }
    Figure {
        id: "chart-device-latency",
        caption: "Device latency per interval (request start to completion)".into(),
        chart: dlat,
    }
}

/// The latency CDF of every cgroup and the device over the whole run.
fn cdf_figure(se: &Series) -> Option<Figure> {
    let sum = se.summary()?;
    let mut cdf = LineChart::new(
        "Latency CDF per cgroup and device (whole run)",
        "latency (ms, log scale)",
        "fraction of IOs at or below",
    );
    cdf.log_x = true;
    cdf.legend_low = true;
    for r in sum.cgroups.iter().chain(std::iter::once(&sum.device)) {
        let n = r.latency_ns_cdf.last().map_or(0, |c| c.1).max(1) as f64;
        // a staircase: up by each bucket's share at its value
        let mut pts: Vec<(f64, f64)> = Vec::new();
        let mut below = 0.0;
        for &(v, c) in &r.latency_ns_cdf {
            let x = ms(v.max(1));
            pts.push((x, below));
            below = c as f64 / n;
            pts.push((x, below));
        }
        let name = if std::ptr::eq(r, &sum.device) {
            format!("{} (device)", r.name)
        } else {
            r.name.clone()
        };
        if !pts.is_empty() {
            cdf.lines.push(Line::new(name, pts));
        }
    }
    Some(Figure {
        id: "chart-cdf",
        caption: "Latency CDF: cgroups from block-layer entry, the device from request start, to completion".into(),
        chart: cdf,
    })
}

/// `%util` of the device per interval (none when it has no accounting).
fn util_section(se: &Series, ivs: &[&Interval]) -> Option<Section> {
    let dev = se.device_name();
    let util: Vec<(f64, f64)> = ivs
        .iter()
        .filter_map(|iv| {
            iv.device
                .as_ref()
                .and_then(|d| d.util_pct)
                .map(|u| (s(iv.t_ns), u))
        })
        .collect();
    if util.is_empty() {
        return None;
    }
    let mut c = LineChart::over_time(&format!("%util of {dev}"), "%util");
    c.lines.push(Line::new(format!("{dev} %util"), util));
    Some(Section {
        title: "Device utilization".into(),
        note: "iostat's %util per interval: the change of /proc/diskstats io_ticks over the interval's length, under the run's --iostats rule.".into(),
        figures: vec![Figure { id: "chart-util", caption: "%util over time".into(), chart: c }],
        html: String::new(),
    })
}

/// The longest waits before the device, and what io.max holds.
fn waits_section(se: &Series, all: &[&Interval]) -> Section {
    let mut figs = Vec::new();
    let mut qw = LineChart::over_time("Longest wait before the device per cgroup", "wait (ms)");
    qw.lines = per_group_lines(se, all, false, |r, _, _| Some(ms(r.queue_wait_max_ns)));
    figs.push(Figure {
        id: "chart-waits",
        caption: "The longest a completed request waited between block-layer entry and the device over each interval (io.max, iocost and request-slot waits)".into(),
        chart: qw,
    });
    let held = se
        .intervals
        .iter()
        .flat_map(|i| &i.cgroups)
        .any(|c| c.held_ios > 0);
    if held {
        let mut h = LineChart::over_time("IOs io.max holds per cgroup", "held IOs");
        h.lines = per_group_lines(se, all, false, |r, _, _| Some(r.held_ios as f64));
        let mut w = LineChart::over_time("Oldest held IO's wait per cgroup (io.max)", "wait (ms)");
        w.lines = per_group_lines(se, all, false, |r, _, _| Some(ms(r.oldest_wait_ns)));
        figs.push(Figure {
            id: "chart-held",
            caption: "IOs io.max (blk-throttle or paced) holds at each interval's end".into(),
            chart: h,
        });
        figs.push(Figure {
            id: "chart-held-wait",
            caption: "How long the oldest of them has waited".into(),
            chart: w,
        });
    }
    Section {
        title: "Waits and io.max".into(),
        note: if held {
            String::new()
        } else {
            "io.max held no IO at any interval's end in this run.".into()
        },
        figures: figs,
        html: String::new(),
    }
}

/// vrate, busy_level and hweights: per period from the trace, else per interval.
fn iocost_section(se: &Series, ivs: &[&Interval], trace: Option<&Trace>) -> Option<Section> {
    let on = se
        .intervals
        .iter()
        .any(|i| i.iocost.as_ref().is_some_and(|c| c.enabled));
    if !on && trace.is_none() {
        return None;
    }
    let mut vr = LineChart::over_time("iocost vrate", "vrate (%)");
    let mut busy = LineChart::over_time("iocost busy_level", "busy_level");
    let mut hw = LineChart::over_time(
        "iocost hweight per cgroup (active, inuse)",
        "share of the device (%)",
    );
    let note = match trace {
        Some(t) => {
            periods_charts(t, &mut vr, &mut busy, &mut hw);
            format!("Per iocost period, from {}.", esc(&t.source))
        }
        None => {
            interval_charts(se, ivs, &mut vr, &mut busy, &mut hw);
            "Per interval, at its end (give the run's --iocost-trace=FILE.jsonl for every period)."
                .into()
        }
    };
    hw.lines.retain(|l| !l.points.is_empty());
    let mut figures = vec![
        Figure {
            id: "chart-iocost-vrate",
            caption: "iocost's vrate (% of the cost model)".into(),
            chart: vr,
        },
        Figure {
            id: "chart-iocost-busy",
            caption: "iocost's busy_level".into(),
            chart: busy,
        },
    ];
    if hw.has_data() {
        figures.push(Figure {
            id: "chart-iocost-hweight",
            caption: "hweight_active and hweight_inuse per cgroup".into(),
            chart: hw,
        });
    }
    Some(Section {
        title: "iocost".into(),
        note,
        figures,
        html: String::new(),
    })
}

/// vrate, busy_level and hweights per iocost period, from a trace.
fn periods_charts(t: &Trace, vr: &mut LineChart, busy: &mut LineChart, hw: &mut LineChart) {
    vr.lines.push(Line::new(
        "vrate",
        t.periods.iter().map(|p| (p.t_s, p.vrate_pct)).collect(),
    ));
    busy.lines.push(Line::new(
        "busy_level",
        t.periods
            .iter()
            .map(|p| (p.t_s, p.busy_level as f64))
            .collect(),
    ));
    let mut names: Vec<&str> = Vec::new();
    for p in &t.periods {
        for g in &p.groups {
            if !names.contains(&g.0.as_str()) {
                names.push(&g.0);
            }
        }
    }
    for (k, name) in [("active", 1), ("inuse", 2)] {
        for g in &names {
            let pts = t
                .periods
                .iter()
                .filter_map(|p| {
                    p.groups
                        .iter()
                        .find(|x| x.0 == *g)
                        .map(|x| (p.t_s, if name == 1 { x.1 } else { x.2 }))
                })
                .collect();
            hw.lines.push(Line::new(format!("{g} {k}"), pts));
        }
    }
}

/// vrate, busy_level and hweights at each interval's end.
fn interval_charts(
    se: &Series,
    ivs: &[&Interval],
    vr: &mut LineChart,
    busy: &mut LineChart,
    hw: &mut LineChart,
) {
    let pts = |f: fn(&super::series::IocostDevice) -> f64| {
        ivs.iter()
            .filter_map(|i| i.iocost.as_ref().map(|c| (s(i.t_ns), f(c))))
            .collect::<Vec<_>>()
    };
    vr.lines
        .push(Line::new("vrate", pts(|c| c.vrate_ppm as f64 / 10_000.0)));
    busy.lines
        .push(Line::new("busy_level", pts(|c| c.busy_level as f64)));
    for (k, active) in [("active", true), ("inuse", false)] {
        let lines = per_group_lines(se, ivs, false, |r, _, _| {
            r.iocost.as_ref().map(|c| {
                let ppm = if active {
                    c.hweight_active_ppm
                } else {
                    c.hweight_inuse_ppm
                };
                ppm as f64 / 10_000.0
            })
        });
        hw.lines.extend(lines.into_iter().map(|mut l| {
            l.name = format!("{} {k}", l.name);
            l
        }));
    }
}

/// The per-cgroup totals table (and the device's).
fn totals_table(se: &Series) -> String {
    let run_s = s(se.run_ns()).max(1e-9);
    let sum = se.summary();
    let mut h = String::from("<table class=\"totals\" id=\"totals\"><thead><tr><th>cgroup</th><th>read IOs</th><th>write IOs</th><th>read MiB</th><th>write MiB</th><th>IOPS</th><th>MiB/s</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr></thead><tbody>\n");
    let pct = |name: &str, dev: bool| -> [String; 3] {
        let r = sum.and_then(|s| {
            if dev {
                Some(&s.device)
            } else {
                s.cgroups.iter().find(|c| c.name == name)
            }
        });
        match r {
            Some(r) => {
                let p = |q: f64| {
                    r.latency_ns_percentiles
                        .iter()
                        .find(|x| (x.0 - q).abs() < 1e-9)
                        .map_or("-".to_string(), |x| format!("{:.3}", ms(x.1)))
                };
                [p(50.0), p(99.0), format!("{:.3}", ms(r.latency_ns_max))]
            }
            None => ["-".into(), "-".into(), "-".into()],
        }
    };
    let mut row = |name: &str, ios: [u64; 2], bytes: [u64; 2], lat: [String; 3]| {
        let _ = writeln!(
            h,
            "<tr data-cgroup=\"{}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(name),
            esc(name),
            ios[0],
            ios[1],
            bytes[0] as f64 / 1048576.0,
            bytes[1] as f64 / 1048576.0,
            (ios[0] + ios[1]) as f64 / run_s,
            (bytes[0] + bytes[1]) as f64 / 1048576.0 / run_s,
            lat[0],
            lat[1],
            lat[2]
        );
    };
    for g in se.cgroups() {
        row(&g, se.total_ios(&g), se.total_bytes(&g), pct(&g, false));
    }
    if se.intervals.iter().any(|i| i.device.is_some()) {
        let mut ios = [0; 2];
        let mut bytes = [0; 2];
        for d in se.intervals.iter().filter_map(|i| i.device.as_ref()) {
            for k in 0..2 {
                ios[k] += d.ios[k];
                bytes[k] += d.bytes[k];
            }
        }
        row(
            &format!("{} (device)", se.device_name()),
            ios,
            bytes,
            pct("", true),
        );
    }
    h += "</tbody></table>\n";
    h
}

fn sweep_section(sw: &Sweep) -> Section {
    let mut figures = Vec::new();
    let mut note = format!(
        "Sweep of {} (seed {}), {} points.",
        esc(&sw.scenario),
        sw.seed,
        sw.points.len()
    );
    if let Some(o) = &sw.objective {
        let _ = write!(note, " Objective: {}.", esc(&o.text));
        figures.extend(frontier_figure(sw, o));
    }
    let mut h = named_table(sw);
    h += &points_table(sw);
    if let Some(p) = &sw.solution {
        let _ = write!(note, " Chosen: point {}.", p.point);
    } else if sw.objective.is_some() {
        note += " No point meets every limit.";
    }
    if !sw.named_solutions.is_empty() {
        note += " iocost-tune's named solutions (docs/SWEEP.md) are in the table below and ringed in the chart.";
    }
    Section {
        title: "Sweep".into(),
        note,
        figures,
        html: h,
    }
}

/// Every point's objective against the first limit's metric, with the
/// frontier, the limit and the chosen point. The y axis is fitted to the
/// points; the x axis is logarithmic when the points span 20× or more (a
/// latency limit's feasible points sit near zero on a linear one).
fn frontier_figure(sw: &Sweep, o: &super::sweep::Objective) -> Option<Figure> {
    use crate::metric_names::metric_title;
    let limit = o.limits.first();
    let x_metric = limit.map(|l| l.metric.clone());
    let x_desc = match &x_metric {
        Some(m) => metric_title(m),
        None => "point".to_string(),
    };
    let x_of = |p: &super::sweep::Point| match &x_metric {
        Some(m) => p.metric(m),
        None => Some(p.point as f64),
    };
    let y_desc = metric_title(&o.metric);
    let mut c = LineChart::new(&format!("{y_desc} against {x_desc}"), &x_desc, &y_desc);
    c.fit_y = true;
    for (name, feas) in [("feasible points", true), ("other points", false)] {
        let pts: Vec<(f64, f64)> = sw
            .points
            .iter()
            .filter(|p| p.feasible == feas && p.error.is_none())
            .filter_map(|p| Some((x_of(p)?, p.metric(&o.metric)?)))
            .collect();
        if !pts.is_empty() {
            let mut l = Line::new(name, pts);
            l.scatter = true;
            c.lines.push(l);
        }
    }
    let mut chart = c;
    if let Some(f) = &sw.frontier {
        let pts: Vec<(f64, f64)> = f
            .iter()
            .filter_map(|p| Some((p.level?, p.objective?)))
            .collect();
        if !pts.is_empty() {
            chart.lines.push(Line::new("frontier", pts));
        }
    }
    mark_points(sw, &mut chart, &x_of, &o.metric);
    if let Some(Limit {
        metric,
        op: Some(op),
        limit: Some(v),
        ..
    }) = limit
    {
        chart
            .vlines
            .push((format!("limit: {metric} {op} {}", tick_text(*v)), *v));
    }
    let xs: Vec<f64> = chart
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .chain(chart.vlines.iter().map(|v| v.1))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    if x_metric.is_some() && lo > 0.0 && hi / lo >= 20.0 {
        chart.log_x = true;
        chart.x_desc += ", log scale";
    }
    chart.has_data().then(|| Figure {
            id: "chart-sweep-frontier",
            caption: format!(
                "Every point's {} against {}; the frontier (the best objective at each level), the limit and the chosen point",
                o.metric, x_desc
            ),
            chart,
        })
}

/// Ring the chosen point and the named solutions on `chart`, one ring per
/// point naming every solution there.
fn mark_points(
    sw: &Sweep,
    chart: &mut LineChart,
    x_of: &dyn Fn(&super::sweep::Point) -> Option<f64>,
    metric: &str,
) {
    let mut marked: Vec<(u64, Vec<&str>)> = Vec::new();
    let named = sw
        .named_solutions
        .iter()
        .map(|n| (n.point, n.name.as_str()));
    for (point, name) in sw.solution.iter().map(|p| (p.point, "chosen")).chain(named) {
        match marked.iter_mut().find(|m| m.0 == point) {
            Some(m) => m.1.push(name),
            None => marked.push((point, vec![name])),
        }
    }
    for (point, names) in marked {
        let Some(p) = sw.points.iter().find(|p| p.point == point) else {
            continue;
        };
        if let (Some(x), Some(y)) = (x_of(p), p.metric(metric)) {
            chart
                .marks
                .push((format!("{}: point {point}", names.join(", ")), x, y));
        }
    }
}

/// iocost-tune's named solutions of a vrate sweep: name, point, the
/// io.cost.qos fields (none without them).
fn named_table(sw: &Sweep) -> String {
    if sw.named_solutions.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<table class=\"sweep\" id=\"sweep-named\"><thead><tr><th>solution</th><th>point</th><th>io.cost.qos</th></tr></thead><tbody>\n",
    );
    for n in &sw.named_solutions {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&n.name),
            n.point,
            esc(&n.qos)
        );
    }
    h += "</tbody></table>\n";
    h
}

/// The table of every point: its knobs, metrics and feasibility.
fn points_table(sw: &Sweep) -> String {
    let chosen = sw.solution.as_ref().map(|p| p.point);
    let metrics = sw.metrics();
    let mut h =
        String::from("<div class=\"scroll\"><table class=\"sweep\" id=\"sweep-points\"><thead><tr><th>point</th>");
    for k in &sw.knobs {
        let _ = write!(h, "<th>{}</th>", esc(&k.name));
    }
    for m in &metrics {
        let _ = write!(h, "<th>{}</th>", esc(m));
    }
    h += "<th>feasible</th></tr></thead><tbody>\n";
    for p in &sw.points {
        let cls = if Some(p.point) == chosen {
            " class=\"chosen\""
        } else {
            ""
        };
        let _ = write!(h, "<tr{cls}><td class=\"num\">{}</td>", p.point);
        for k in &sw.knobs {
            let _ = write!(
                h,
                "<td>{}</td>",
                esc(p.knobs.get(&k.name).map_or("", String::as_str))
            );
        }
        for m in &metrics {
            let v = p.metric(m).map_or("-".to_string(), |v| format!("{v:.3}"));
            let _ = write!(h, "<td class=\"num\">{v}</td>");
        }
        let f = match (&p.error, p.feasible) {
            (Some(e), _) => format!("error: {}", esc(e)),
            (None, true) => "yes".into(),
            (None, false) => "no".into(),
        };
        let _ = writeln!(h, "<td>{f}</td></tr>");
    }
    h += "</tbody></table></div>\n";
    h
}

pub const CSS: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1140px;color:#222;background:#fff}\
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}\
figure.chart{margin:1em 0;border:1px solid #ddd}figure.chart svg{display:block;width:100%;height:auto}\
figcaption{font-size:.9em;color:#555;padding:.3em .6em}\
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}th,td{border:1px solid #ccc;padding:.2em .5em}\
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.chosen{background:#ffe8a8;font-weight:bold}\
p.note{color:#444}div.scroll{overflow-x:auto}dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}dt{font-weight:bold}";

/// The page.
pub fn render(inp: &Inputs) -> Result<String> {
    let mut sections = Vec::new();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n<h1>{}</h1>\n<dl>",
        esc(&inp.title),
        esc(&inp.title)
    );
    if let Some(se) = &inp.series {
        let _ = write!(
            h,
            "<dt>time series</dt><dd>{}</dd><dt>device</dt><dd>{}</dd><dt>run time</dt><dd>{:.3} s, {} intervals</dd>",
            esc(&se.source),
            esc(&se.device_name()),
            s(se.run_ns()),
            se.intervals.len()
        );
    }
    if let Some(t) = &inp.trace {
        let _ = write!(
            h,
            "<dt>iocost trace</dt><dd>{}, {} periods</dd>",
            esc(&t.source),
            t.periods.len()
        );
    }
    if let Some(sw) = &inp.sweep {
        let _ = write!(h, "<dt>sweep</dt><dd>{}</dd>", esc(&inp.sweep_source));
        sections.push(sweep_section(sw));
    }
    h += "</dl>\n";
    if let Some(se) = &inp.series {
        h += "<h2 id=\"totals-heading\">Totals</h2>\n";
        h += &totals_table(se);
        sections.extend(run_section(se, inp.trace.as_ref()));
    } else if let Some(t) = &inp.trace {
        // a trace alone: its iocost charts
        let empty = Series {
            source: String::new(),
            intervals: Vec::new(),
        };
        sections.extend(iocost_section(&empty, &[], Some(t)));
    }
    for sec in sections {
        let _ = writeln!(h, "<h2>{}</h2>", esc(&sec.title));
        if !sec.note.is_empty() {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", sec.note);
        }
        for f in sec.figures {
            if !f.chart.has_data() {
                continue;
            }
            let svg = f.chart.svg()?;
            let _ = writeln!(
                h,
                "<figure class=\"chart\" id=\"{}\">\n{svg}\n<figcaption>{}</figcaption></figure>",
                f.id,
                esc(&f.caption)
            );
        }
        h += &sec.html;
    }
    h += "</body></html>\n";
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One time series line: a cgroup and the device over `interval_ns`
    /// ending at `t_ns`, with latencies of `lat_ns`.
    fn line(t_ns: u64, interval_ns: u64, lat_ns: u64) -> String {
        format!(
            concat!(
                "{{\"t_ns\":{t},\"interval_ns\":{i},\"iocost\":{{\"enabled\":true,\"vrate_ppm\":1000000,\"busy_level\":0}},",
                "\"cgroups\":[{{\"cgroup\":\"/a\",\"ios\":[100,0],\"bytes\":[409600,0],\"p99_ns\":{l},",
                "\"latency_ns_p50\":{l},\"queue_wait_max_ns\":{l},\"held_ios\":0,\"oldest_wait_ns\":0,",
                "\"iocost\":{{\"hweight_active_ppm\":1000000,\"hweight_inuse_ppm\":1000000}}}}],",
                "\"device\":{{\"name\":\"nullb0\",\"ios\":[100,0],\"bytes\":[409600,0],\"latency_ns_p50\":{l},",
                "\"latency_ns_p90\":{l},\"latency_ns_p99\":{l},\"latency_ns_max\":{l},\"util_pct\":50.0}}}}"
            ),
            t = t_ns,
            i = interval_ns,
            l = lat_ns
        )
    }

    #[test]
    fn the_end_of_run_sliver_is_left_out_of_every_chart_over_time() {
        // two 1 s intervals, then 1 ms of draining with a latency far off
        let text = [
            line(1_000_000_000, 1_000_000_000, 1_000_000),
            line(2_000_000_000, 1_000_000_000, 1_000_000),
            line(2_001_000_000, 1_000_000, 90_000_000),
        ]
        .join("\n");
        let se = Series::parse("live.jsonl", text.lines()).unwrap();
        let sections = run_section(&se, None);
        let mut charts = 0;
        for f in sections.iter().flat_map(|s| &s.figures) {
            if f.id == "chart-cdf" {
                continue;
            }
            charts += 1;
            for l in &f.chart.lines {
                let xs: Vec<f64> = l.points.iter().map(|p| p.0).collect();
                assert_eq!(xs, [1.0, 2.0], "{} {}", f.id, l.name);
            }
        }
        // iops, bandwidth, latency, device latency, util, waits, vrate,
        // busy_level, hweight
        assert_eq!(charts, 9);
    }
}
