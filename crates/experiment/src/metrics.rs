//! The numbers of one simulated run that a sweep compares, computed the
//! way fio reports them, per cgroup and for the whole run.
//!
//! * `bw_mbps`, `iops`: every direction of every job clone in the group
//!   (descendants included, as io.stat counts them), bytes and IOs over
//!   the longest of their runtimes: the aggregate of fio's "Run status
//!   group" line (io / max run), in MB/s (10^6 bytes).
//! * `clat_*`: fio's completion latency (submission to completion);
//!   `lat_*`: fio's total latency, which adds the submit call (slat) and
//!   so the time iocost keeps a submitter asleep. Percentiles use fio's
//!   histogram and rule (bucket midpoints); `p999` is the 99.9th.
//! * `total_*`: every job of the run, as fio's "All clients" line would
//!   add them up; `util_pct`: the disk's busy time over the run
//!   (diskstats io_ticks, fio's "util"); `vrate_pct`: iocost's vrate when
//!   the run ended (the root's `cost.vrate` in io.stat), absent without
//!   iocost.
//!
//! All values are thousandths of their unit ([`Milli`]), rounded to the
//! nearest where they are not already integers.

use crate::experiment::Ran;
use crate::metric_names::{Milli, GROUP_METRICS, RUN_METRICS};
use blkqos_core::hist::{LatHist, LatStat};
use blkqos_core::CgroupTree;
use blkqos_driver::JobResult;

/// The cgroups a sweep reports on: the scenario's, in its tree's order.
pub fn group_paths(tree: &CgroupTree) -> Vec<String> {
    tree.ids().map(|g| tree.path(g).to_string()).collect()
}

/// Every metric name a sweep of these cgroups reports, in report order.
pub fn metric_names(groups: &[String]) -> Vec<String> {
    let mut names: Vec<String> = RUN_METRICS.iter().map(|m| m.to_string()).collect();
    for path in groups {
        // the root's read `/.iops`
        names.extend(GROUP_METRICS.iter().map(|m| format!("{path}.{m}")));
    }
    names
}

/// IO of a set of job clones, summed as fio sums a reporting group.
#[derive(Default)]
struct Totals {
    bytes: u64,
    ios: u64,
    runtime_ms: u64,
    clat: LatStat,
    clat_hist: LatHist,
    lat: LatStat,
    lat_hist: LatHist,
}

impl Totals {
    fn add(&mut self, j: &JobResult) {
        for d in j.stats.dirs.values() {
            self.bytes += d.io_bytes;
            self.ios += d.total_ios;
            self.runtime_ms = self.runtime_ms.max(d.runtime_ms);
            self.clat.merge(&d.clat);
            self.clat_hist.merge(&d.clat_hist);
            self.lat.merge(&d.lat);
            self.lat_hist.merge(&d.lat_hist);
        }
    }

    /// bytes per ms = kB/s = thousandths of MB/s.
    fn bw(&self) -> Option<Milli> {
        (self.runtime_ms > 0).then(|| (self.bytes / self.runtime_ms) as Milli)
    }

    fn iops(&self) -> Option<Milli> {
        (self.runtime_ms > 0)
            .then(|| (u128::from(self.ios) * 1_000_000 / u128::from(self.runtime_ms)) as Milli)
    }

    /// The group's values in [`GROUP_METRICS`] order.
    fn group_values(&self, out: &mut Vec<Option<Milli>>) {
        out.push(self.bw());
        out.push(self.iops());
        latency_values(&self.clat, &self.clat_hist, out);
        latency_values(&self.lat, &self.lat_hist, out);
    }
}

/// mean, p50, p90, p99, p99.9, max (ns → µs, the thousandths of a ms).
fn latency_values(stat: &LatStat, hist: &LatHist, out: &mut Vec<Option<Milli>>) {
    let us = |ns: u64| ((ns + 500) / 1000) as Milli;
    if stat.n == 0 {
        out.extend([None; 6]);
        return;
    }
    out.push(Some((stat.mean / 1000.0).round() as Milli));
    let pct = hist.percentiles(&[50.0, 90.0, 99.0, 99.9]);
    if pct.len() == 4 {
        out.extend(pct.iter().map(|&(_, ns)| Some(us(ns))));
    } else {
        out.extend([None; 4]);
    }
    out.push(Some(us(stat.max)));
}

/// iocost's vrate at the end of the run from the root's io.stat keys
/// (`cost.vrate`), in thousandths of a percent.
fn vrate(ran: &Ran) -> Option<Milli> {
    ran.iostat_keys.first()?.iter().find_map(|k| match k {
        blkqos_core::IostatKey {
            name: "cost.vrate",
            value: blkqos_core::IostatValue::Hundredths(v),
        } => Milli::try_from(*v).ok().map(|v| v * 10),
        _ => None,
    })
}

/// Every metric of [`metric_names`] of `groups` for a run, in that order.
/// Groups are found by path: a point's writes may create them in another
/// order than the scenario does.
pub fn extract(ran: &Ran, groups: &[String]) -> Vec<Option<Milli>> {
    let jobs = &ran.result.jobs;
    let mut all = Totals::default();
    jobs.iter().for_each(|j| all.add(j));
    let elapsed_ns = ran.result.ended_at.as_ns();
    let util = (elapsed_ns > 0)
        .then(|| (u128::from(ran.result.disk.busy_ns) * 100_000 / u128::from(elapsed_ns)) as Milli);
    let mut out = vec![all.bw(), all.iops(), util, vrate(ran)];
    for path in groups {
        let mut t = Totals::default();
        if let Some(g) = ran.tree.get(path) {
            jobs.iter()
                .filter(|j| ran.tree.is_ancestor_or_self(g, j.group))
                .for_each(|j| t.add(j));
        }
        t.group_values(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_tree() {
        let mut tree = CgroupTree::new();
        tree.ensure("/cgA").unwrap();
        let names = metric_names(&group_paths(&tree));
        assert_eq!(names.len(), RUN_METRICS.len() + 2 * GROUP_METRICS.len());
        assert!(names.contains(&"/.iops".to_string()), "{names:?}");
        assert!(names.contains(&"/cgA.clat_p99_ms".to_string()));
    }

    #[test]
    fn latency_in_microseconds() {
        let mut stat = LatStat::default();
        let mut hist = LatHist::new();
        for ns in [1_000_000u64, 2_000_000, 3_000_400] {
            stat.add(ns);
            hist.record(ns);
        }
        let mut out = Vec::new();
        latency_values(&stat, &hist, &mut out);
        assert_eq!(out.len(), 6);
        assert_eq!(out[0], Some(2000));
        assert_eq!(out[5], Some(3000));
        let mut empty = Vec::new();
        latency_values(&LatStat::default(), &LatHist::new(), &mut empty);
        assert_eq!(empty, vec![None; 6]);
    }
}
