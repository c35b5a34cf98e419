//! Reading a sweep's JSON report (`blkqos sweep ... --json`, docs/SWEEP.md).

use anyhow::{bail, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize)]
pub struct Limit {
    pub metric: String,
    /// `<=`, `<`, `>=` or `>` (absent in reports that did not carry it).
    #[serde(default)]
    pub op: Option<String>,
    #[serde(default)]
    pub limit: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Objective {
    pub text: String,
    pub metric: String,
    pub limits: Vec<Limit>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Knob {
    pub name: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Point {
    pub point: u64,
    pub knobs: BTreeMap<String, String>,
    pub feasible: bool,
    pub error: Option<String>,
    pub metrics: serde_json::Map<String, serde_json::Value>,
}

impl Point {
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(|v| v.as_f64())
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct FrontierPoint {
    pub level: Option<f64>,
    pub objective: Option<f64>,
}

/// One of iocost-tune's named solutions a vrate sweep found.
#[derive(Clone, Debug, Deserialize)]
pub struct NamedSolution {
    pub name: String,
    pub point: u64,
    /// The io.cost.qos fields it sets (`min=60 max=60`).
    pub qos: String,
}

/// The sweep's report.
#[derive(Clone, Debug, Deserialize)]
pub struct Sweep {
    pub blkqos_sweep: u32,
    pub scenario: String,
    pub seed: u64,
    pub knobs: Vec<Knob>,
    pub objective: Option<Objective>,
    pub points: Vec<Point>,
    pub solution: Option<Point>,
    pub frontier: Option<Vec<FrontierPoint>>,
    #[serde(default)]
    pub named_solutions: Vec<NamedSolution>,
}

impl Sweep {
    pub fn parse(source: &str, text: &str) -> Result<Self> {
        let s: Sweep = serde_json::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "{source}:{}: not a sweep report (`blkqos sweep ... --json`): {e}",
                e.line()
            )
        })?;
        if s.blkqos_sweep != 1 {
            bail!(
                "{source}: sweep report version {} (this blkqos reads 1)",
                s.blkqos_sweep
            );
        }
        Ok(s)
    }

    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = super::read_input(path)?;
        Sweep::parse(&path.display().to_string(), &text)
    }

    /// The metric names of the points' columns, in the report's order.
    pub fn metrics(&self) -> Vec<String> {
        self.points
            .first()
            .map(|p| p.metrics.keys().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file() {
        let e = Sweep::parse("s.json", "{\n\"x\": 1\n}").unwrap_err();
        assert!(
            format!("{e}").starts_with("s.json:3: not a sweep report"),
            "{e}"
        );
    }
}
