//! The objective: `max METRIC subject to METRIC<=LIMIT and ...`.
//!
//! Like resctl-bench's iocost-tune, a sweep asks for the best setting under
//! a protection requirement ("cgB's p99 at most 5 ms, and then as much
//! bandwidth as possible"): one metric to maximise or minimise, and any
//! number of limits on other metrics. A point meets the objective's
//! constraints ("feasible") when every constrained metric exists and is
//! within its limit.
//!
//! Metric values are kept in thousandths of their unit as integers
//! (`Milli`): comparisons are exact and a value survives a JSON round trip
//! unchanged, so a merged sweep decides exactly as a single run.

use blkqos_experiment::metric_names::{Milli, GROUP_METRICS, RUN_METRICS};
use serde::{Deserialize, Serialize};

/// Check a metric name against the scenario's cgroups: `NAME` for a run
/// metric, `/CG.NAME` for a group's.
pub fn check_metric(name: &str, groups: &[String]) -> Result<(), String> {
    if !name.starts_with('/') {
        if RUN_METRICS.contains(&name) {
            return Ok(());
        }
        return Err(format!(
            "unknown metric `{name}`: use {} or /CGROUP.METRIC with METRIC one of {}",
            RUN_METRICS.join(", "),
            GROUP_METRICS.join(", ")
        ));
    }
    let Some((group, metric)) = name.rsplit_once('.') else {
        return Err(format!(
            "metric `{name}`: write /CGROUP.METRIC, e.g. /cgB.clat_p99_ms"
        ));
    };
    if !GROUP_METRICS.contains(&metric) {
        return Err(format!(
            "metric `{name}`: unknown group metric `{metric}`: use {}",
            GROUP_METRICS.join(", ")
        ));
    }
    if !groups.iter().any(|g| g == group) {
        return Err(format!(
            "metric `{name}`: the scenario has no cgroup `{group}` (it has {})",
            groups.join(", ")
        ));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    Max,
    Min,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }
    pub fn holds(self, value: Milli, limit: Milli) -> bool {
        match self {
            Op::Le => value <= limit,
            Op::Lt => value < limit,
            Op::Ge => value >= limit,
            Op::Gt => value > limit,
        }
    }
    /// An upper limit (tighter levels are smaller values).
    pub fn is_upper(self) -> bool {
        matches!(self, Op::Le | Op::Lt)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraint {
    pub metric: String,
    pub op: Op,
    /// The limit in thousandths.
    pub limit: Milli,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Objective {
    pub goal: Goal,
    pub metric: String,
    pub constraints: Vec<Constraint>,
}

impl Objective {
    /// Canonical text (`max total_bw_mbps subject to /cgB.clat_p99_ms <= 5`).
    pub fn text(&self) -> String {
        let goal = match self.goal {
            Goal::Max => "max",
            Goal::Min => "min",
        };
        let mut s = format!("{goal} {}", self.metric);
        for (i, c) in self.constraints.iter().enumerate() {
            s += if i == 0 { " subject to " } else { " and " };
            s += &format!("{} {} {}", c.metric, c.op.symbol(), milli_text(c.limit));
        }
        s
    }

    /// Is `a` a better objective value than `b`?
    pub fn better(&self, a: Milli, b: Milli) -> bool {
        match self.goal {
            Goal::Max => a > b,
            Goal::Min => a < b,
        }
    }
}

/// A thousandths value as the shortest decimal (`5`, `4.71`, `0.005`).
pub fn milli_text(v: Milli) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    let frac = format!("{:03}", a % 1000);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        format!("{sign}{}", a / 1000)
    } else {
        format!("{sign}{}.{frac}", a / 1000)
    }
}

/// A decimal with at most three decimals, in thousandths.
fn parse_milli(s: &str) -> Option<Milli> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 15 || !digits(int) || frac.len() > 3 || !digits(frac) {
        return None;
    }
    let whole: i64 = int.parse().ok()?;
    let f: i64 = format!("{frac:0<3}").parse().ok()?;
    Some(whole * 1000 + f)
}

/// Parse `--objective`: `max|min METRIC [subject to C [and C]...]`, each C
/// `METRIC <=|<|>=|> NUMBER` (also `s.t.` for `subject to`, `,` for `and`).
pub fn parse_objective(text: &str, groups: &[String]) -> Result<Objective, String> {
    let bad = |why: String| format!("--objective `{text}`: {why}");
    let t = text.trim();
    let (goal_word, rest) = t.split_once(char::is_whitespace).ok_or_else(|| {
        bad("expected `max METRIC` or `min METRIC`, then `subject to` limits".into())
    })?;
    let goal = match goal_word {
        "max" | "maximise" | "maximize" => Goal::Max,
        "min" | "minimise" | "minimize" => Goal::Min,
        o => return Err(bad(format!("`{o}`: start with max or min"))),
    };
    let rest = rest.trim();
    let (metric, limits) = match ["subject to", "s.t."]
        .iter()
        .find_map(|k| rest.split_once(k))
    {
        Some((m, l)) => (m.trim(), Some(l)),
        None => (rest, None),
    };
    if metric.contains(char::is_whitespace) || metric.is_empty() {
        return Err(bad(format!(
            "`{metric}`: one metric, then `subject to` and the limits"
        )));
    }
    check_metric(metric, groups).map_err(bad)?;
    let mut constraints = Vec::new();
    if let Some(l) = limits {
        for part in l.split(',').flat_map(|p| p.split(" and ")) {
            constraints.push(parse_constraint(part.trim(), groups).map_err(bad)?);
        }
    }
    Ok(Objective {
        goal,
        metric: metric.to_string(),
        constraints,
    })
}

fn parse_constraint(c: &str, groups: &[String]) -> Result<Constraint, String> {
    let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    let Some((at, sym, op)) = ops
        .iter()
        .find_map(|(s, op)| c.find(s).map(|i| (i, *s, *op)))
    else {
        return Err(format!(
            "limit `{c}`: expected METRIC<=NUMBER (or <, >=, >)"
        ));
    };
    let metric = c[..at].trim();
    let num = c[at + sym.len()..].trim();
    check_metric(metric, groups)?;
    let limit = parse_milli(num).ok_or_else(|| {
        format!("limit `{c}`: `{num}` is not a non-negative number with at most 3 decimals")
    })?;
    Ok(Constraint {
        metric: metric.to_string(),
        op,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Vec<String> {
        vec!["/".into(), "/cgA".into(), "/cgB".into()]
    }

    #[test]
    fn parses_the_issue_example() {
        let o = parse_objective(
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            &groups(),
        )
        .unwrap();
        assert_eq!(o.goal, Goal::Max);
        assert_eq!(o.metric, "total_bw_mbps");
        assert_eq!(
            o.constraints,
            vec![Constraint {
                metric: "/cgB.clat_p99_ms".into(),
                op: Op::Le,
                limit: 5000
            }]
        );
        assert_eq!(
            o.text(),
            "max total_bw_mbps subject to /cgB.clat_p99_ms <= 5"
        );
        let o = parse_objective(
            "min /cgB.lat_p99_ms s.t. total_bw_mbps >= 400.5, /cgA.iops>10 and util_pct < 99.125",
            &groups(),
        )
        .unwrap();
        assert_eq!(o.constraints.len(), 3);
        assert_eq!(o.constraints[0].limit, 400_500);
        assert_eq!(o.constraints[2].op, Op::Lt);
        assert_eq!(o.constraints[2].limit, 99_125);
        assert!(o.better(1, 2));
    }

    #[test]
    fn bad_objectives_say_why() {
        for (s, needle) in [
            ("total_bw_mbps", "expected `max METRIC`"),
            ("best total_bw_mbps", "`best`"),
            ("max bw", "unknown metric `bw`"),
            ("max /cgC.bw_mbps", "no cgroup `/cgC`"),
            ("max /cgB.p99", "unknown group metric `p99`"),
            (
                "max total_bw_mbps subject to /cgB.clat_p99_ms=5",
                "expected METRIC<=NUMBER",
            ),
            (
                "max total_bw_mbps subject to /cgB.clat_p99_ms<=5ms",
                "`5ms`",
            ),
            (
                "max total_bw_mbps subject to /cgB.clat_p99_ms<=0.0001",
                "3 decimals",
            ),
            ("max total_bw_mbps util_pct", "one metric"),
        ] {
            let e = parse_objective(s, &groups()).expect_err(s);
            assert!(e.starts_with("--objective `"), "{e}");
            assert!(e.contains(needle), "{s}: {e}");
        }
    }

    #[test]
    fn milli_round_trip() {
        for (v, s) in [
            (5000, "5"),
            (4710, "4.71"),
            (5, "0.005"),
            (0, "0"),
            (-1500, "-1.5"),
        ] {
            assert_eq!(milli_text(v), s);
        }
        assert_eq!(parse_milli("4.71"), Some(4710));
    }
}
