//! A sweep's report: one row per point, the solution (the best point that
//! meets every limit, and the lines to write for it), and the frontier.
//!
//! The frontier follows resctl-bench's iocost-tune, which shows what each
//! level of protection costs: for the objective's first limit it lists,
//! from the tightest level reached to the loosest, each point that gives a
//! better objective than every point at a tighter level (other limits
//! met). Reading down the list: "with cgB's p99 at 3.3 ms the best total
//! bandwidth is 182 MB/s; accept 12.1 ms and it is 685 MB/s".
//!
//! The report depends only on the definition and the points' results
//! (never on threads, shards or time), so a merged sweep prints the same
//! bytes as a single run.

use super::objective::{milli_text, Objective};
use super::run::{PointResult, SweepDef};
use blkqos_experiment::metric_names::Milli;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;

/// Does point `r` meet every limit of the objective?
pub fn feasible(def: &SweepDef, r: &PointResult) -> bool {
    r.error.is_none()
        && def.objective.as_ref().is_none_or(|o| {
            o.constraints.iter().all(|c| {
                r.value(def, &c.metric)
                    .is_some_and(|v| c.op.holds(v, c.limit))
            })
        })
}

/// The best feasible point: best objective value, the lowest number on a tie.
pub fn solution<'a>(def: &SweepDef, results: &'a [PointResult]) -> Option<&'a PointResult> {
    let o = def.objective.as_ref()?;
    let mut best: Option<(&PointResult, Milli)> = None;
    for r in results.iter().filter(|r| feasible(def, r)) {
        let Some(v) = r.value(def, &o.metric) else {
            continue;
        };
        if best.is_none_or(|(_, b)| o.better(v, b)) {
            best = Some((r, v));
        }
    }
    best.map(|(r, _)| r)
}

/// The frontier of the objective against its first limit: (level, objective, point).
pub fn frontier<'a>(
    def: &SweepDef,
    results: &'a [PointResult],
) -> Vec<(Milli, Milli, &'a PointResult)> {
    let Some(o) = &def.objective else {
        return Vec::new();
    };
    let Some((first, others)) = o.constraints.split_first() else {
        return Vec::new();
    };
    let mut cands: Vec<(Milli, Milli, &PointResult)> = results
        .iter()
        .filter(|r| r.error.is_none())
        .filter(|r| {
            others.iter().all(|c| {
                r.value(def, &c.metric)
                    .is_some_and(|v| c.op.holds(v, c.limit))
            })
        })
        .filter_map(|r| Some((r.value(def, &first.metric)?, r.value(def, &o.metric)?, r)))
        .collect();
    // tightest level first; at one level the best objective first
    cands.sort_by(|a, b| {
        let level = if first.op.is_upper() {
            a.0.cmp(&b.0)
        } else {
            b.0.cmp(&a.0)
        };
        level
            .then_with(|| objective_order(o, a.1, b.1))
            .then(a.2.index.cmp(&b.2.index))
    });
    let mut out: Vec<(Milli, Milli, &PointResult)> = Vec::new();
    for c in cands {
        if out.last().is_none_or(|l| o.better(c.1, l.1)) {
            out.push(c);
        }
    }
    out
}

fn objective_order(o: &Objective, a: Milli, b: Milli) -> Ordering {
    if o.better(a, b) {
        Ordering::Less
    } else if o.better(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// A value with three decimals (`-` when absent).
fn cell(v: Option<Milli>) -> String {
    match v {
        Some(v) => format!("{}.{:03}", v / 1000, (v % 1000).abs()),
        None => "-".into(),
    }
}

/// Right-aligned columns.
fn table(header: &[String], rows: &[Vec<String>], out: &mut String) {
    let mut width: Vec<usize> = header.iter().map(String::len).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = r
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
}

fn status(def: &SweepDef, r: &PointResult) -> &'static str {
    match (&r.error, feasible(def, r)) {
        (Some(_), _) => "error",
        (None, true) => "yes",
        (None, false) => "no",
    }
}

/// The text report.
pub fn text(def: &SweepDef, results: &[PointResult]) -> String {
    let mut out = format!(
        "# blkqos sweep of {} (seed {}{}): {} points, sweep id {}\n",
        def.scenario,
        def.seed,
        def.kernel
            .as_ref()
            .map_or(String::new(), |k| format!(", kernel {k}")),
        def.points,
        def.id
    );
    for k in &def.knobs {
        out += &format!(
            "# vary {} = {} ({} values)\n",
            k.name,
            k.spec,
            k.values.len()
        );
    }
    if let Some(o) = &def.objective {
        out += &format!("# objective: {}\n", o.text());
    }
    out.push('\n');
    let mut header = vec!["point".to_string()];
    header.extend(def.knobs.iter().map(|k| k.name.clone()));
    header.extend(def.columns.iter().cloned());
    // without an objective every point that ran is "feasible": no column
    let judged = def.objective.is_some();
    if judged {
        header.push("feasible".into());
    }
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let mut row = vec![r.index.to_string()];
            row.extend(def.values(r.index).into_iter().map(str::to_string));
            row.extend(def.columns.iter().map(|c| cell(r.value(def, c))));
            if judged {
                row.push(status(def, r).into());
            }
            row
        })
        .collect();
    table(&header, &rows, &mut out);
    for r in results {
        if let Some(e) = &r.error {
            out += &format!("point {}: error: {e}\n", r.index);
        }
    }
    if def.objective.is_some() {
        solution_text(def, results, &mut out);
        frontier_text(def, results, &mut out);
    }
    named_text(def, results, &mut out);
    out
}

/// The protected group's bandwidth and limit metric, and the total
/// bandwidth, at each named solution's point: (name, metrics).
fn named_columns(def: &SweepDef) -> Vec<String> {
    let Some(c) = def.objective.as_ref().and_then(|o| o.constraints.first()) else {
        return Vec::new();
    };
    let mut cols = vec![c.metric.clone()];
    if let Some((g, _)) = c.metric.rsplit_once('.') {
        cols.push(format!("{g}.bw_mbps"));
    }
    cols.push("total_bw_mbps".into());
    cols
}

/// iocost-tune's named solutions, when the sweep varies vrate alone.
fn named_text(def: &SweepDef, results: &[PointResult], out: &mut String) {
    let named = super::named::solutions(def, results);
    if named.is_empty() {
        return;
    }
    *out += "\nnamed solutions (iocost-tune's, as systemd's hwdb carries them; docs/SWEEP.md)\n";
    let cols = named_columns(def);
    let mut header: Vec<String> = vec!["solution".into(), "point".into(), "io.cost.qos".into()];
    header.extend(cols.iter().cloned());
    let rows: Vec<Vec<String>> = named
        .iter()
        .map(|n| {
            let r = results.iter().find(|r| r.index == n.point);
            let mut row = vec![n.name.to_string(), n.point.to_string(), n.qos.clone()];
            row.extend(cols.iter().map(|m| cell(r.and_then(|r| r.value(def, m)))));
            row
        })
        .collect();
    table(&header, &rows, out);
    for n in &named {
        *out += &format!("  {}: {}\n", n.name, n.rule);
    }
}

fn solution_text(def: &SweepDef, results: &[PointResult], out: &mut String) {
    let o = def.objective.as_ref().expect("caller checked");
    out.push('\n');
    let Some(best) = solution(def, results) else {
        out.push_str("solution: none: no point meets every limit of the objective\n");
        return;
    };
    let mut what = vec![format!(
        "{} {} ({})",
        o.metric,
        milli_text(best.value(def, &o.metric).unwrap_or_default()),
        if o.better(1, 0) { "max" } else { "min" }
    )];
    for c in &o.constraints {
        what.push(format!(
            "{} {} {} {}",
            c.metric,
            best.value(def, &c.metric).map_or("-".into(), milli_text),
            c.op.symbol(),
            milli_text(c.limit)
        ));
    }
    *out += &format!("solution: point {}: {}\n", best.index, what.join(", "));
    *out += &format!("  {}\n", def.describe(best.index));
    for l in &best.lines {
        *out += &format!("  {l}\n");
    }
}

fn frontier_text(def: &SweepDef, results: &[PointResult], out: &mut String) {
    let o = def.objective.as_ref().expect("caller checked");
    let f = frontier(def, results);
    let Some(first) = o.constraints.first() else {
        return;
    };
    *out += &format!(
        "\nfrontier: the best {} at each level of {}{}\n",
        o.metric,
        first.metric,
        if o.constraints.len() > 1 {
            " (the other limits met)"
        } else {
            ""
        }
    );
    let mut header = vec![first.metric.clone(), o.metric.clone(), "point".into()];
    header.extend(def.knobs.iter().map(|k| k.name.clone()));
    let rows: Vec<Vec<String>> = f
        .iter()
        .map(|(level, obj, r)| {
            let mut row = vec![cell(Some(*level)), cell(Some(*obj)), r.index.to_string()];
            row.extend(def.values(r.index).into_iter().map(str::to_string));
            row
        })
        .collect();
    table(&header, &rows, out);
}

/// A thousandths value as a JSON number (exact: the nearest double to it
/// prints as its decimal).
fn num(v: Option<Milli>) -> Value {
    v.and_then(|v| serde_json::Number::from_f64(v as f64 / 1000.0))
        .map_or(Value::Null, Value::Number)
}

fn point_json(def: &SweepDef, r: &PointResult) -> Value {
    let knobs: Map<String, Value> = def
        .knobs
        .iter()
        .zip(def.values(r.index))
        .map(|(k, v)| (k.name.clone(), Value::String(v.into())))
        .collect();
    let metrics: Map<String, Value> = def
        .metrics
        .iter()
        .zip(&r.values)
        .map(|(m, v)| (m.clone(), num(*v)))
        .collect();
    json!({
        "point": r.index,
        "knobs": knobs,
        "feasible": feasible(def, r),
        "error": r.error,
        "metrics": metrics,
        "lines": r.lines,
    })
}

/// The JSON report.
pub fn json(def: &SweepDef, results: &[PointResult]) -> String {
    let objective = def.objective.as_ref().map(|o| {
        let limits: Vec<Value> = o
            .constraints
            .iter()
            .map(|c| json!({"metric": c.metric, "op": c.op.symbol(), "limit": num(Some(c.limit))}))
            .collect();
        json!({"text": o.text(), "goal": o.goal, "metric": o.metric, "limits": limits})
    });
    let best = solution(def, results).map(|r| point_json(def, r));
    let named: Vec<Value> = super::named::solutions(def, results)
        .into_iter()
        .map(|n| json!({"name": n.name, "rule": n.rule, "point": n.point, "vrate": num(Some(n.vrate)), "qos": n.qos}))
        .collect();
    let frontier: Vec<Value> = frontier(def, results)
        .into_iter()
        .map(|(level, obj, r)| json!({"level": num(Some(level)), "objective": num(Some(obj)), "point": r.index}))
        .collect();
    let doc = json!({
        "blkqos_sweep": 1,
        "id": def.id,
        "blkqos": def.blkqos,
        "scenario": def.scenario,
        "seed": def.seed,
        "kernel": def.kernel,
        "knobs": def.knobs.iter().map(|k| json!({"name": k.name, "spec": k.spec, "values": k.values})).collect::<Vec<_>>(),
        "objective": objective,
        "points": results.iter().map(|r| point_json(def, r)).collect::<Vec<_>>(),
        "solution": best,
        "frontier": if def.objective.as_ref().is_some_and(|o| !o.constraints.is_empty()) { Value::from(frontier) } else { Value::Null },
        "named_solutions": named,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("a JSON value prints");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::objective::parse_objective;
    use crate::sweep::run::KnobDef;

    /// Two metrics (objective `total_bw_mbps`, limit on `/b.clat_p99_ms`).
    fn def(objective: &str) -> SweepDef {
        SweepDef {
            id: "x".into(),
            blkqos: "0".into(),
            scenario: "s.toml".into(),
            seed: 1,
            kernel: None,
            knobs: vec![KnobDef {
                name: "k".into(),
                spec: "1..5:5".into(),
                values: ["1", "2", "3", "4", "5"].map(String::from).to_vec(),
            }],
            objective: Some(parse_objective(objective, &["/".into(), "/b".into()]).unwrap()),
            columns: vec!["total_bw_mbps".into(), "/b.clat_p99_ms".into()],
            groups: vec!["/".into(), "/b".into()],
            metrics: vec!["total_bw_mbps".into(), "/b.clat_p99_ms".into()],
            points: 5,
        }
    }

    fn point(index: u64, bw: Milli, p99: Milli) -> PointResult {
        PointResult {
            index,
            values: vec![Some(bw), Some(p99)],
            lines: vec![format!("echo {index}")],
            error: None,
        }
    }

    fn results() -> Vec<PointResult> {
        vec![
            point(0, 100_000, 2_000),
            point(1, 300_000, 4_000),
            point(2, 250_000, 4_500),
            point(3, 500_000, 9_000),
            point(4, 500_000, 6_000),
        ]
    }

    #[test]
    fn best_feasible_point_and_frontier() {
        let d = def("max total_bw_mbps subject to /b.clat_p99_ms <= 5");
        let r = results();
        assert_eq!(solution(&d, &r).map(|p| p.index), Some(1));
        let f: Vec<u64> = frontier(&d, &r).iter().map(|x| x.2.index).collect();
        // 2 is dominated by 1 (tighter and better); 3 by 4
        assert_eq!(f, vec![0, 1, 4]);
        let d = def("min /b.clat_p99_ms subject to total_bw_mbps >= 250");
        assert_eq!(solution(&d, &r).map(|p| p.index), Some(1));
        let f: Vec<u64> = frontier(&d, &r).iter().map(|x| x.2.index).collect();
        assert_eq!(f, vec![4, 1, 0]);
    }

    #[test]
    fn ties_and_errors() {
        let d = def("max total_bw_mbps subject to /b.clat_p99_ms <= 10");
        let mut r = results();
        // 3 and 4 tie at 500: the lower number wins
        assert_eq!(solution(&d, &r).map(|p| p.index), Some(3));
        r[3].error = Some("job failed".into());
        assert_eq!(solution(&d, &r).map(|p| p.index), Some(4));
        let t = text(&d, &r);
        assert!(t.contains("point 3: error: job failed"), "{t}");
        assert!(
            t.contains("solution: point 4: total_bw_mbps 500 (max), /b.clat_p99_ms 6 <= 10"),
            "{t}"
        );
        assert!(t.contains("  k=5\n  echo 4\n"), "{t}");
    }

    #[test]
    fn table_layout() {
        let d = def("max total_bw_mbps subject to /b.clat_p99_ms <= 5");
        let t = text(&d, &results());
        let want = "\
point  k  total_bw_mbps  /b.clat_p99_ms  feasible
    0  1        100.000           2.000       yes
    1  2        300.000           4.000       yes
    2  3        250.000           4.500       yes
    3  4        500.000           9.000        no
";
        assert!(t.contains(want), "{t}");
        let j: Value = serde_json::from_str(&json(&d, &results())).unwrap();
        assert_eq!(j["solution"]["point"], 1);
        assert_eq!(j["points"][2]["metrics"]["/b.clat_p99_ms"], 4.5);
        assert_eq!(j["objective"]["limits"][0]["limit"], 5.0);
        assert_eq!(j["frontier"].as_array().map(Vec::len), Some(3));
    }
}
