//! Running a sweep's points on the simulator, on all cores.
//!
//! Points are numbered in the order of the `--vary` arguments, the last
//! knob changing fastest (nested loops). Every point runs with the
//! scenario's seed: the points share their random streams (common random
//! numbers), so the difference between two rows comes from the knobs and
//! not from a different draw, and a point's result depends only on its
//! knob values: not on the thread that ran it, the number of threads, or
//! the shard.

use super::apply::Base;
use super::objective::Objective;
use super::spec::Knob;
use blkqos_experiment::metric_names::Milli;
use serde::{Deserialize, Serialize};

/// One varied knob as the results name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobDef {
    pub name: String,
    pub spec: String,
    pub values: Vec<String>,
}

/// Everything a sweep's results depend on and its report needs: two
/// shards of one sweep carry equal definitions (`id` checks it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepDef {
    /// FNV-1a of everything below but `scenario`, and of the scenario's
    /// text and job files (see `shard::sweep_id`).
    pub id: String,
    /// The blkqos version that ran it.
    pub blkqos: String,
    /// The scenario path as given on the command line.
    pub scenario: String,
    pub seed: u64,
    pub kernel: Option<String>,
    pub knobs: Vec<KnobDef>,
    pub objective: Option<Objective>,
    /// Metric columns of the table.
    pub columns: Vec<String>,
    /// The scenario's cgroups (their metrics are `/CG.NAME`).
    pub groups: Vec<String>,
    /// Names of each point's `values`, in order.
    pub metrics: Vec<String>,
    /// Number of points (the product of the knobs' value counts).
    pub points: u64,
}

impl SweepDef {
    /// The value index of each knob at point `index`.
    pub fn value_indices(&self, index: u64) -> Vec<usize> {
        let mut rest = index;
        let mut out = vec![0; self.knobs.len()];
        for (k, knob) in self.knobs.iter().enumerate().rev() {
            let n = knob.values.len() as u64;
            out[k] = (rest % n) as usize;
            rest /= n;
        }
        out
    }

    /// The knob values of point `index`.
    pub fn values(&self, index: u64) -> Vec<&str> {
        self.value_indices(index)
            .into_iter()
            .zip(&self.knobs)
            .map(|(i, k)| k.values[i].as_str())
            .collect()
    }

    /// `name=value, ...` of point `index`.
    pub fn describe(&self, index: u64) -> String {
        self.knobs
            .iter()
            .zip(self.values(index))
            .map(|(k, v)| format!("{}={v}", k.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Position of metric `name` in a point's values.
    pub fn metric_index(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m == name)
    }
}

/// The outcome of one point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointResult {
    pub index: u64,
    /// [`SweepDef::metrics`] in thousandths; None where the run has no
    /// such value (a group without IO, vrate without iocost).
    pub values: Vec<Option<Milli>>,
    /// The settings to apply on a real machine.
    pub lines: Vec<String>,
    /// Why the run failed (a job's IO error): the point is not feasible.
    pub error: Option<String>,
}

impl PointResult {
    pub fn value(&self, def: &SweepDef, metric: &str) -> Option<Milli> {
        self.values
            .get(def.metric_index(metric)?)
            .copied()
            .flatten()
    }
}

/// Run point `index`.
fn run_point(base: &Base, knobs: &[Knob], def: &SweepDef, index: u64) -> PointResult {
    let values = def.values(index);
    let fail = |e: anyhow::Error, lines| PointResult {
        index,
        values: vec![None; def.metrics.len()],
        lines,
        error: Some(format!("{e:#}")),
    };
    let (exp, lines) = match base.point(knobs, &values) {
        Ok(p) => p,
        Err(e) => return fail(e, Vec::new()),
    };
    let ran = match exp.run_sim_with(None, None) {
        Ok(r) => r,
        Err(e) => return fail(e.err, lines),
    };
    let error = ran.result.jobs.iter().find(|j| j.error != 0).map(|j| {
        format!(
            "job `{}` ended with error {} ({})",
            j.spec.name,
            j.error,
            std::io::Error::from_raw_os_error(j.error)
        )
    });
    PointResult {
        index,
        values: blkqos_experiment::metrics::extract(&ran, &def.groups),
        lines,
        error,
    }
}

/// Run `indices` on `threads` threads; results in index order.
pub fn run_points(
    base: &Base,
    knobs: &[Knob],
    def: &SweepDef,
    indices: &[u64],
    threads: usize,
    progress: &dyn crate::progress::Progress,
) -> Vec<PointResult> {
    use rayon::prelude::*;
    progress.begin(indices.len() as u64, "points");
    let point = |&index: &u64| {
        let r = run_point(base, knobs, def, index);
        progress.done_one();
        r
    };
    // the points on a pool of their own (`--jobs`), one at a time each
    // (`with_max_len(1)`: a point is a whole simulated run, worth a steal)
    let results = match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
    {
        Ok(pool) => pool.install(|| indices.par_iter().with_max_len(1).map(point).collect()),
        // no threads to be had: the points in turn on this one
        Err(_) => indices.iter().map(point).collect(),
    };
    progress.end();
    results
}
