//! iocost-tune's named solutions over a vrate sweep.
//!
//! resctl-bench's `iocost-tune` runs a protection benchmark at fixed vrates
//! (min = max, 5–125%) and names four solutions, the ones systemd's hwdb
//! carries (`IOCOST_SOLUTIONS="isolation isolated-bandwidth bandwidth
//! naive"`). It judges protection by a memory-offload workload (MOF,
//! aMOF); a sweep judges it by the objective's first limit on the
//! protected group (`/cgB.clat_p99_ms<=5`). With `--vary
//! io.cost.qos:vrate=...` as the only knob and an objective with a limit:
//!
//! * **bandwidth** — iocost-tune's "maximum vrate at which the protected
//!   workload can be isolated sufficiently" (`AMOFMaxVrate`): the highest
//!   vrate whose point meets the limit.
//! * **isolation** — "the maximum vrate which renders the minimum
//!   aMOF-delta" (`AMOFDeltaMin`): the protected metric at its best (the
//!   least for an upper limit), the highest vrate among the points that
//!   reach it.
//! * **isolated-bandwidth** — "the maximum vrate at which the isolatable
//!   footprint is the biggest, clamped between isolation and bandwidth"
//!   (aMOF right-max, clamped): the highest vrate at which the protected
//!   group's bandwidth is at its most, clamped to `[isolation, bandwidth]`.
//! * **naive** — "100% of what the model describes, throttled down to 75%
//!   on the p99 read and write latencies": `min=75 max=100 rpct=99
//!   wpct=99`, `rlat` and `wlat` the highest p99 completion latency of the
//!   groups at vrate 100% (iocost-tune: the p99 at 100%); its prediction is
//!   the 100% point's (naive runs at 100% while those latencies hold).
//!
//! The fixed solutions set `min = max = vrate`; iocost-tune writes the same
//! budget as the model scaled by vrate/100 with `min = max = 100`.

use super::run::{PointResult, SweepDef};
use blkqos_experiment::metric_names::Milli;

/// The knob a vrate sweep varies.
pub const VRATE_KNOB: &str = "io.cost.qos:vrate";

/// One named solution.
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    pub name: &'static str,
    /// What it optimises, in words.
    pub rule: &'static str,
    /// The point its prediction comes from.
    pub point: u64,
    /// vrate at that point (thousandths of %).
    pub vrate: Milli,
    /// The io.cost.qos fields to write (after the device).
    pub qos: String,
}

/// Why no named solutions: `None` when the sweep has them.
pub fn unavailable(def: &SweepDef) -> Option<&'static str> {
    if def.knobs.len() != 1 || def.knobs[0].name != VRATE_KNOB {
        return Some("vary io.cost.qos:vrate alone");
    }
    match &def.objective {
        Some(o) if !o.constraints.is_empty() => None,
        _ => Some("give an objective with a limit on the protected group"),
    }
}

/// The vrate of a point, in thousandths.
fn vrate(def: &SweepDef, r: &PointResult) -> Option<Milli> {
    let v: f64 = def.values(r.index).first()?.parse().ok()?;
    Some((v * 1000.0).round() as Milli)
}

/// The highest-vrate point among `rs` with the best `key` (larger is better).
fn rightmost_best<'a>(
    def: &SweepDef,
    rs: impl Iterator<Item = &'a PointResult>,
    key: impl Fn(&PointResult) -> Option<Milli>,
) -> Option<&'a PointResult> {
    let mut best: Option<(&PointResult, Milli, Milli)> = None;
    for r in rs {
        let (Some(k), Some(v)) = (key(r), vrate(def, r)) else {
            continue;
        };
        if best.is_none_or(|(_, bk, bv)| k > bk || (k == bk && v > bv)) {
            best = Some((r, k, v));
        }
    }
    best.map(|b| b.0)
}

/// naive: vrate 100%, the highest group p99 there as the latency targets.
fn naive(def: &SweepDef, ok: &[&PointResult]) -> Option<Named> {
    let full = ok.iter().find(|r| vrate(def, r) == Some(100_000))?;
    // thousandths of a ms are µs
    let lat = def
        .groups
        .iter()
        .filter_map(|g| full.value(def, &format!("{g}.clat_p99_ms")))
        .max()?
        .max(1);
    Some(Named {
        name: "naive",
        rule: "vrate 100%, throttled down to 75% on the p99 latencies seen at 100%",
        point: full.index,
        vrate: 100_000,
        qos: format!("rpct=99 rlat={lat} wpct=99 wlat={lat} min=75 max=100"),
    })
}

/// The named solutions of a vrate sweep (those it can name: none before a
/// feasible point for bandwidth and isolated-bandwidth, no naive without a
/// 100% point), in the order of systemd's `IOCOST_SOLUTIONS`: isolation,
/// isolated-bandwidth, bandwidth, naive.
pub fn solutions(def: &SweepDef, results: &[PointResult]) -> Vec<Named> {
    if unavailable(def).is_some() {
        return Vec::new();
    }
    let o = def.objective.as_ref().expect("checked");
    let c = &o.constraints[0];
    let ok: Vec<&PointResult> = results.iter().filter(|r| r.error.is_none()).collect();
    // the protected metric, larger is better
    let protect = |r: &PointResult| {
        r.value(def, &c.metric)
            .map(|v| if c.op.is_upper() { -v } else { v })
    };
    let group_bw = c
        .metric
        .rsplit_once('.')
        .map(|(g, _)| format!("{g}.bw_mbps"));
    let fixed = |name, rule, r: &PointResult| {
        let v = vrate(def, r).unwrap_or(0);
        let pct = super::objective::milli_text(v);
        Named {
            name,
            rule,
            point: r.index,
            vrate: v,
            qos: format!("min={pct} max={pct}"),
        }
    };
    let mut out = Vec::new();
    let isolation = rightmost_best(def, ok.iter().copied(), protect);
    // every limit of the objective met (the sweep's `feasible`)
    let feasible = |r: &&PointResult| {
        o.constraints.iter().all(|c| {
            r.value(def, &c.metric)
                .is_some_and(|v| c.op.holds(v, c.limit))
        })
    };
    let bandwidth = rightmost_best(def, ok.iter().copied().filter(feasible), |r| vrate(def, r));
    if let Some(i) = isolation {
        out.push(fixed(
            "isolation",
            "the protected group's metric at its best; the highest vrate that reaches it",
            i,
        ));
    }
    if let (Some(i), Some(b), Some(gbw)) = (isolation, bandwidth, &group_bw) {
        let (lo, hi) = (vrate(def, i).unwrap_or(0), vrate(def, b).unwrap_or(0));
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let inside = ok
            .iter()
            .copied()
            .filter(|r| vrate(def, r).is_some_and(|v| (lo..=hi).contains(&v)));
        if let Some(r) = rightmost_best(def, inside, |r| r.value(def, gbw)) {
            out.push(fixed(
                "isolated-bandwidth",
                "the protected group's bandwidth at its most, clamped between isolation and bandwidth",
                r,
            ));
        }
    }
    if let Some(b) = bandwidth {
        out.push(fixed(
            "bandwidth",
            "the highest vrate at which the protected group's limit holds",
            b,
        ));
    }
    out.extend(naive(def, &ok));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::objective::parse_objective;
    use crate::sweep::run::KnobDef;

    /// A vrate sweep at 25..125 (5 points) of groups `/a` (the batch) and
    /// `/b` (protected: p99 at most 5 ms).
    fn def() -> SweepDef {
        let groups = vec!["/".to_string(), "/a".into(), "/b".into()];
        SweepDef {
            id: "x".into(),
            blkqos: "0".into(),
            scenario: "s.toml".into(),
            seed: 1,
            kernel: None,
            knobs: vec![KnobDef {
                name: VRATE_KNOB.into(),
                spec: "25..125:5".into(),
                values: ["25", "50", "75", "100", "125"].map(String::from).to_vec(),
            }],
            objective: Some(
                parse_objective("max total_bw_mbps subject to /b.clat_p99_ms<=5", &groups).unwrap(),
            ),
            columns: vec![],
            metrics: [
                "total_bw_mbps",
                "/a.clat_p99_ms",
                "/b.clat_p99_ms",
                "/b.bw_mbps",
            ]
            .map(String::from)
            .to_vec(),
            groups,
            points: 5,
        }
    }

    /// (total MB/s, /a p99, /b p99, /b MB/s), in thousandths.
    fn point(index: u64, v: [Milli; 4]) -> PointResult {
        PointResult {
            index,
            values: v.map(Some).to_vec(),
            lines: vec![],
            error: None,
        }
    }

    #[test]
    fn the_four_solutions_follow_iocost_tunes_rules() {
        let r = vec![
            point(0, [40_000, 30_000, 1_000, 790]),
            point(1, [70_000, 20_000, 1_000, 800]),
            point(2, [90_000, 15_000, 3_000, 810]),
            point(3, [98_000, 12_000, 4_900, 800]),
            point(4, [99_000, 10_000, 14_000, 750]),
        ];
        let got: Vec<(&str, u64, String)> = solutions(&def(), &r)
            .into_iter()
            .map(|n| (n.name, n.point, n.qos))
            .collect();
        assert_eq!(
            got,
            [
                // /b's p99 at its least (1 ms at 25% and 50%): the higher vrate
                ("isolation", 1, "min=50 max=50".to_string()),
                // /b's bandwidth at its most within [50, 100]: 75%
                ("isolated-bandwidth", 2, "min=75 max=75".into()),
                // the highest vrate with /b's p99 <= 5 ms
                ("bandwidth", 3, "min=100 max=100".into()),
                // 100%'s highest group p99 (/a: 12 ms) as the targets, in µs
                (
                    "naive",
                    3,
                    "rpct=99 rlat=12000 wpct=99 wlat=12000 min=75 max=100".into()
                ),
            ]
        );
    }

    #[test]
    fn only_a_vrate_sweep_with_a_limit_has_them() {
        let mut d = def();
        assert_eq!(unavailable(&d), None);
        d.knobs[0].name = "io.cost.qos:max".into();
        assert!(unavailable(&d).is_some());
        assert!(solutions(&d, &[]).is_empty());
        // no feasible point: no bandwidth, no isolated-bandwidth
        let d = def();
        let r = vec![point(3, [98_000, 12_000, 6_000, 800])];
        let names: Vec<&str> = solutions(&d, &r).iter().map(|n| n.name).collect();
        assert_eq!(names, ["isolation", "naive"]);
    }
}
