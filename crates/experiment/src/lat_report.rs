//! `--lat-hist=FILE` / `[accounting] lat_hist`: latency percentiles per
//! device and per cgroup after a run, from the driver's fio-bucket
//! histograms (`blkqos_driver::lathist`).
//!
//! * device: request start → completion (the diskstats `nsecs` interval);
//! * group: entering the block layer → completion, controller wait
//!   included, the group's descendants rolled in (as `io.stat` does).
//!
//! Percentiles are fio's default list with fio's rule (nearest rank,
//! bucket midpoint: `LatHist::percentiles`). Text: one block per device
//! and per group, each direction with its count, min/max/mean in µs and a
//! `percentiles (usec)` block laid out as fio's `show_clat_percentiles`.
//! JSON (`FILE.json`): `devices` and `groups` arrays of one object per
//! direction, fio's JSON layout and `percentile` keys. Directions and
//! groups without IO are omitted.

use crate::experiment::Ran;
use blkqos_core::hist::DEFAULT_PERCENTILES;
use blkqos_core::{CgroupTree, DevId};
use blkqos_driver::lathist::{DirDists, LatDist, DIR_NAMES};
use blkqos_fio::report::cfmt::{f6, fixed};
use blkqos_fio::report::jsonfmt::{print_root, Obj, Value};
use blkqos_fio::report::merge::precision;
use blkqos_fio::report::{percentile_block, PctUnit};
use std::path::Path;

/// What one report shows.
pub struct LatReport<'a> {
    pub devid: DevId,
    pub dev_name: &'a str,
    /// Request start → completion, per direction.
    pub device: &'a DirDists,
    /// (cgroup path, submit → completion per direction, descendants
    /// included), in tree order.
    pub groups: Vec<(&'a str, DirDists)>,
}

impl<'a> LatReport<'a> {
    /// The report of a run (empty if it kept no histograms).
    pub fn of(ran: &'a Ran, empty: &'a DirDists) -> Self {
        let (device, own): (&DirDists, &[DirDists]) = match &ran.result.lat_hists {
            Some(h) => (&h.device, &h.groups),
            None => (empty, &[]),
        };
        let rolled = roll_up(&ran.tree, own);
        LatReport {
            devid: ran.devid,
            dev_name: &ran.dev_name,
            device,
            groups: ran
                .tree
                .ids()
                .map(|g| ran.tree.path(g))
                .zip(rolled)
                .collect(),
        }
    }
}

/// Each group's distributions with its descendants' merged in, indexed by
/// group id (`own` may cover only the first groups).
pub fn roll_up(tree: &CgroupTree, own: &[DirDists]) -> Vec<DirDists> {
    let mut rolled: Vec<DirDists> = tree
        .ids()
        .map(|g| own.get(g.idx()).cloned().unwrap_or_default())
        .collect();
    // children come after parents in id order: fold from the back
    for g in tree.ids().collect::<Vec<_>>().into_iter().rev() {
        if let Some(p) = tree.parent(g) {
            let child = std::mem::take(&mut rolled[g.idx()]);
            for (d, c) in rolled[p.idx()].iter_mut().zip(&child) {
                d.merge(c);
            }
            rolled[g.idx()] = child;
        }
    }
    rolled
}

/// The report for `path`: JSON when it ends in `.json`, else text.
pub fn format_lat_hist(ran: &Ran, path: &Path) -> String {
    let empty = DirDists::default();
    let r = LatReport::of(ran, &empty);
    if path.extension().is_some_and(|e| e == "json") {
        json(&r)
    } else {
        text(&r)
    }
}

fn has_io(d: &DirDists) -> bool {
    d.iter().any(|x| x.count() > 0)
}

/// ns as µs with three decimals (exact).
fn usec(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// One block's directions.
fn text_dirs(dists: &DirDists, out: &mut String) {
    let prec = precision(&DEFAULT_PERCENTILES);
    for (name, d) in DIR_NAMES.iter().zip(dists) {
        if d.count() == 0 {
            continue;
        }
        out.push_str(&format!(
            "  {name}: count={}, min={}, max={}, mean={} (usec)\n",
            d.count(),
            usec(d.latency_ns_min),
            usec(d.latency_ns_max),
            fixed(d.latency_ns_mean() / 1000.0, 3)
        ));
        let vals = d.hist.percentiles(&DEFAULT_PERCENTILES);
        percentile_block(&vals, prec, "lat", PctUnit::Usec, out);
    }
}

/// The text report.
pub fn text(r: &LatReport) -> String {
    let mut out = String::from(
        "# blkqos latency histograms (fio buckets; percentiles are bucket midpoints, rounded up to usec)\n\
         # device: request start -> completion (diskstats nsecs); group: submit -> completion,\n\
         # including io.max/iocost and request-slot wait; a group includes its descendants\n",
    );
    if has_io(r.device) {
        out.push_str(&format!(
            "\ndevice {} {}: request start -> completion\n",
            r.devid, r.dev_name
        ));
        text_dirs(r.device, &mut out);
    }
    for (path, d) in &r.groups {
        if has_io(d) {
            out.push_str(&format!(
                "\ngroup {path} on {}: submit -> completion\n",
                r.devid
            ));
            text_dirs(d, &mut out);
        }
    }
    out
}

/// One JSON object per direction with IO, after the `head` keys.
fn json_dirs(head: &[(&str, String)], dists: &DirDists, out: &mut Vec<Value>) {
    for (name, d) in DIR_NAMES.iter().zip(dists) {
        if d.count() == 0 {
            continue;
        }
        out.push(Value::Obj(json_dist(head, name, d)));
    }
}

fn json_dist(head: &[(&str, String)], dir: &str, d: &LatDist) -> Obj {
    let mut o = Obj::new();
    for (k, v) in head {
        o.str(k, v);
    }
    o.str("dir", dir);
    o.uint("count", d.count());
    o.uint("min_ns", d.latency_ns_min);
    o.uint("max_ns", d.latency_ns_max);
    o.float("mean_ns", d.latency_ns_mean());
    let mut p = Obj::new();
    for (pct, v) in d.hist.percentiles(&DEFAULT_PERCENTILES) {
        p.uint(&f6(pct), v);
    }
    o.obj("percentile", p);
    o
}

/// The JSON report.
pub fn json(r: &LatReport) -> String {
    let dev = r.devid.to_string();
    let mut devices = Vec::new();
    json_dirs(
        &[("device", dev.clone()), ("name", r.dev_name.to_string())],
        r.device,
        &mut devices,
    );
    let mut groups = Vec::new();
    for (path, d) in &r.groups {
        json_dirs(
            &[("group", path.to_string()), ("device", dev.clone())],
            d,
            &mut groups,
        );
    }
    let mut root = Obj::new();
    root.arr("devices", devices);
    root.arr("groups", groups);
    let mut out = String::new();
    print_root(&root, &mut out);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::GroupId;

    fn dists(samples: &[(usize, u64)]) -> DirDists {
        let mut d = DirDists::default();
        for &(dir, ns) in samples {
            d[dir].record(ns);
        }
        d
    }

    /// 1..=100 µs reads (one each) on the device; a group with two writes.
    fn report_parts() -> (DirDists, DirDists) {
        let reads: Vec<(usize, u64)> = (1..=100).map(|k| (0, k * 1000)).collect();
        (dists(&reads), dists(&[(1, 2_500), (1, 7_000_000)]))
    }

    fn report<'a>(device: &'a DirDists, group: &DirDists) -> LatReport<'a> {
        LatReport {
            devid: DevId::new(253, 1),
            dev_name: "nullb1",
            device,
            groups: vec![("/", group.clone()), ("/idle", DirDists::default())],
        }
    }

    #[test]
    fn text_layout() {
        let (dev, grp) = report_parts();
        let t = text(&report(&dev, &grp));
        let want_dev = "\
device 253:1 nullb1: request start -> completion
  read: count=100, min=1.000, max=100.000, mean=50.500 (usec)
    lat percentiles (usec):
     |  1.00th=[    2],  5.00th=[    6], 10.00th=[   11], 20.00th=[   21],
     | 30.00th=[   31], 40.00th=[   41], 50.00th=[   50], 60.00th=[   61],
     | 70.00th=[   71], 80.00th=[   81], 90.00th=[   90], 95.00th=[   95],
     | 99.00th=[   99], 99.50th=[  100], 99.90th=[  100], 99.95th=[  100],
     | 99.99th=[  100]
";
        assert!(t.contains(want_dev), "{t}");
        // a 7 ms sample widens the value column (fio's time_width)
        let want_grp = "\
group / on 253:1: submit -> completion
  write: count=2, min=2.500, max=7000.000, mean=3501.250 (usec)
    lat percentiles (usec):
     |  1.00th=[    3],  5.00th=[    3], 10.00th=[    3], 20.00th=[    3],
     | 30.00th=[    3], 40.00th=[    3], 50.00th=[    3], 60.00th=[ 6980],
";
        assert!(t.contains(want_grp), "{t}");
        // no IO: no block, no empty direction
        assert!(!t.contains("/idle"), "{t}");
        assert!(!t.contains("discard"), "{t}");
        assert!(t.starts_with("# blkqos latency histograms"));
    }

    #[test]
    fn percentiles_are_fio_bucket_midpoints_rounded_up() {
        // 100 µs lands in the 1024 ns bucket [99328, 100352): midpoint
        // 99840, shown as 100 (fio rounds up when it scales to usec)
        let d = dists(&[(0, 100_000)]);
        let p = d[0].hist.percentiles(&[50.0]);
        assert_eq!(p, vec![(50.0, 99_840)]);
        let mut s = String::new();
        percentile_block(&p, 2, "lat", PctUnit::Usec, &mut s);
        assert_eq!(s, "    lat percentiles (usec):\n     | 50.00th=[  100]\n");
    }

    #[test]
    fn json_matches_text_numbers() {
        let (dev, grp) = report_parts();
        let r = report(&dev, &grp);
        let j: serde_json::Value = serde_json::from_str(&json(&r)).expect("valid JSON");
        let d = &j["devices"][0];
        assert_eq!(d["device"], "253:1");
        assert_eq!(d["name"], "nullb1");
        assert_eq!(d["dir"], "read");
        assert_eq!(d["count"], 100);
        assert_eq!(d["min_ns"], 1000);
        assert_eq!(d["max_ns"], 100_000);
        assert_eq!(d["mean_ns"].as_f64(), Some(50_500.0));
        // the values an independent port of fio's rule gives
        assert_eq!(d["percentile"]["1.000000"], 1004);
        assert_eq!(d["percentile"]["99.000000"], 98_816);
        assert_eq!(d["percentile"]["99.990000"], 99_840);
        assert_eq!(d["percentile"].as_object().map(|m| m.len()), Some(17));
        assert_eq!(j["devices"].as_array().map(Vec::len), Some(1));
        let g = &j["groups"];
        assert_eq!(g.as_array().map(Vec::len), Some(1), "{g}");
        assert_eq!(g[0]["group"], "/");
        assert_eq!(g[0]["device"], "253:1");
        assert_eq!(g[0]["dir"], "write");
        assert_eq!(g[0]["percentile"]["50.000000"], 2_512);
        assert_eq!(g[0]["percentile"]["60.000000"], 6_979_584);
        // fio's JSON layout: `"key" : value`, two-space indent, %f floats
        let raw = json(&r);
        assert!(
            raw.contains("\n      \"mean_ns\" : 50500.000000,\n"),
            "{raw}"
        );
    }

    #[test]
    fn empty_report_is_valid() {
        let e = DirDists::default();
        let r = LatReport {
            devid: DevId::new(8, 0),
            dev_name: "sda",
            device: &e,
            groups: vec![],
        };
        let j: serde_json::Value = serde_json::from_str(&json(&r)).expect("valid JSON");
        assert_eq!(j["devices"].as_array().map(Vec::len), Some(0));
        assert!(!text(&r).contains("device 8:0"));
    }

    #[test]
    fn groups_roll_up_descendants() {
        let mut tree = CgroupTree::new();
        let b = tree.ensure("/a/b").expect("valid");
        let a = tree.get("/a").expect("exists");
        let c = tree.ensure("/c").expect("valid");
        assert_eq!((a, b, c), (GroupId(1), GroupId(2), GroupId(3)));
        // own IO of /, /a, /a/b; /c beyond the recorded range
        let own = vec![
            dists(&[(0, 10)]),
            dists(&[(0, 20)]),
            dists(&[(0, 30), (1, 5)]),
        ];
        let r = roll_up(&tree, &own);
        let counts: Vec<(u64, u64)> = r.iter().map(|d| (d[0].count(), d[1].count())).collect();
        assert_eq!(counts, vec![(3, 1), (2, 1), (1, 1), (0, 0)]);
        assert_eq!((r[0][0].latency_ns_min, r[0][0].latency_ns_max), (10, 30));
        assert_eq!(r[1][0].latency_ns_min, 20);
    }
}
