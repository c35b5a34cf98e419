//! `--output-format=json` / `json+` (fio 3.33 `stat.c`:
//! `__show_run_stats`, `show_thread_status_json`, `add_ddir_status_json`,
//! `add_ddir_lat_json`, `json_add_job_opts`, `json_array_add_disk_util`).

use blkqos_core::hist::{LatHist, LatStat};
use blkqos_workload::prio::{ioprio_class, ioprio_level};
use blkqos_workload::spec::UnifiedRw;
use blkqos_workload::stats::{prios_with_samples, DirStats, JobStats};
use blkqos_workload::Ddir;

use super::cfmt;
use super::jsonfmt::{print_root, Obj, Value};
use super::merge::{
    agg_percent, build_entries, calc_dist, calc_lat, calc_lat_dist, cpu_percent, gen_mixed,
    group_runs, wsum, Entry, GroupRun,
};
use super::ReportInput;

/// Write the JSON document (with its final newline) fio prints at the end
/// of a run. `plus` selects `json+` (adds latency `bins`).
pub fn write_json(input: &ReportInput, plus: bool, out: &mut String) {
    print_root(&json_tree(input, plus), out);
    out.push('\n');
}

/// The document as a tree (what [`write_json`] prints).
pub fn json_tree(input: &ReportInput, plus: bool) -> Obj {
    let entries = build_entries(input);
    let rs = group_runs(&entries);
    let secs = input.timestamp_ms / 1000;

    let mut root = Obj::new();
    root.str("fio version", input.fio_version);
    root.uint("timestamp", secs);
    root.uint("timestamp_ms", input.timestamp_ms);
    root.str("time", &cfmt::ctime(secs, input.utc_offset_s));
    if let Some(g) = job_opts(input.global_options) {
        root.obj("global options", g);
    }
    let jobs = entries
        .iter()
        .map(|e| Value::Obj(entry_json(e, &rs[e.group_id() as usize], plus)))
        .collect();
    root.arr("jobs", jobs);
    if !input.disk_util.is_empty() {
        root.arr("disk_util", disk_util_json(&input.disk_util));
    }
    if !input.blkqos_disk_util.is_empty() {
        root.arr("blkqos_disk_util", disk_util_json(&input.blkqos_disk_util));
    }
    root
}

/// `json_object_add_disk_utils`: one object per device
/// (`json_array_add_disk_util`), with `aggr_*` for a stacked device.
fn disk_util_json(list: &[super::DiskUtil]) -> Vec<Value> {
    list.iter()
        .map(|du| {
            let mut o = Obj::new();
            o.str("name", &du.name);
            o.uint("read_ios", du.read_ios);
            o.uint("write_ios", du.write_ios);
            o.uint("read_merges", du.read_merges);
            o.uint("write_merges", du.write_merges);
            o.uint("read_ticks", du.read_ticks);
            o.uint("write_ticks", du.write_ticks);
            o.uint("in_queue", du.in_queue);
            o.float("util", du.util_capped());
            if let Some(a) = &du.agg {
                o.uint("aggr_read_ios", a.read_ios);
                o.uint("aggr_write_ios", a.write_ios);
                o.uint("aggr_read_merges", a.read_merges);
                // sic: fio 3.33 spells this one without the "s"
                o.uint("aggr_write_merge", a.write_merges);
                o.uint("aggr_read_ticks", a.read_ticks);
                o.uint("aggr_write_ticks", a.write_ticks);
                o.uint("aggr_in_queue", a.in_queue);
                o.float("aggr_util", a.util);
            }
            Value::Obj(o)
        })
        .collect()
}

/// `json_add_job_opts`: nothing for an empty list; empty values dropped.
fn job_opts(list: &[(String, String)]) -> Option<Obj> {
    if list.is_empty() {
        return None;
    }
    let mut o = Obj::new();
    for (k, v) in list {
        o.str(k, v);
    }
    Some(o)
}

/// What the latency objects of an entry need.
struct LatCfg {
    slat: bool,
    clat: bool,
    lat: bool,
    plist: Vec<f64>,
    plus: bool,
}

/// `show_thread_status_json`.
fn entry_json(e: &Entry, rs: &GroupRun, plus: bool) -> Obj {
    let ts = &e.ts;
    let cfg = LatCfg {
        slat: e.last.slat_percentiles,
        clat: e.last.clat_percentiles,
        lat: e.last.lat_percentiles,
        plist: e.plist(),
        plus,
    };
    let mut o = Obj::new();
    o.str("jobname", &e.first.name);
    o.int("groupid", e.group_id() as i64);
    o.int("error", e.error as i64);
    o.uint("eta", ts.eta_s);
    o.uint("elapsed", ts.elapsed_s);
    if let Some(opts) = job_opts(&e.last.job_options) {
        o.obj("job options", opts);
    }
    dir_objs(&mut o, e, rs, &cfg);
    cpu_fields(&mut o, ts);
    let total = e.total_rw_ios();
    depth_objs(&mut o, ts, total);
    lat_bucket_objs(&mut o, ts, total);
    error_latency_fields(&mut o, e);
    o
}

/// The direction objects: `mixed` alone, or `read`, `write`, `trim`,
/// `sync` (and `mixed` with `unified_rw_reporting=both`).
fn dir_objs(o: &mut Obj, e: &Entry, rs: &GroupRun, cfg: &LatCfg) {
    let ts = &e.ts;
    if e.unified() == UnifiedRw::Mixed {
        // fio sums every direction into the read slot
        o.obj("mixed", dir_json(&ts.dirs.read, rs.agg.read, cfg));
    } else {
        for d in Ddir::ALL {
            o.obj(d.name(), dir_json(&ts.dirs[d], rs.agg[d], cfg));
        }
        let mut sync = Obj::new();
        sync.uint("total_ios", ts.sync_ios);
        sync.obj(
            "lat_ns",
            lat_json(cfg.lat | cfg.clat, &ts.sync_lat, &ts.sync_hist, cfg),
        );
        o.obj("sync", sync);
        if e.unified() == UnifiedRw::Both {
            // add_mixed_ddir_status_json: reported as DDIR_READ, so its
            // bw_agg is relative to the group's read aggregate.
            o.obj("mixed", dir_json(&gen_mixed(ts), rs.agg.read, cfg));
        }
    }
}

/// The job's run time and CPU usage: the real engine's getrusage share;
/// 0 on the simulator.
fn cpu_fields(o: &mut Obj, ts: &JobStats) {
    o.uint("job_runtime", ts.job_runtime_ms);
    let (usr, sys) = cpu_percent(ts);
    o.float("usr_cpu", usr);
    o.float("sys_cpu", sys);
    o.uint("ctx", ts.cpu.ctx);
    o.uint("majf", ts.cpu.majf);
    o.uint("minf", ts.cpu.minf);
}

/// The IO depth distribution and the submit and complete batch
/// distributions of `total` IOs.
fn depth_objs(o: &mut Obj, ts: &JobStats, total: u64) {
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    let dist = |keys: &[&str], map: &[u64], total: u64| {
        let mut m = Obj::new();
        for (k, v) in keys.iter().zip(calc_dist(map, total)) {
            m.float(k, v);
        }
        m
    };
    o.obj("iodepth_level", dist(&level_keys, &ts.depth_level, total));
    let sub_total = wsum(ts.submit_batches.iter().copied());
    o.obj(
        "iodepth_submit",
        dist(&batch_keys, &ts.submit_batches, sub_total),
    );
    let comp_total = wsum(ts.complete_batches.iter().copied());
    o.obj(
        "iodepth_complete",
        dist(&batch_keys, &ts.complete_batches, comp_total),
    );
}

/// The share of the `total` IOs in each latency range, in ns, µs and ms.
fn lat_bucket_objs(o: &mut Obj, ts: &JobStats, total: u64) {
    let ranges = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    let b = &ts.lat_buckets;
    for (name, map) in [
        ("latency_ns", &b.ns[..]),
        ("latency_us", &b.us[..]),
        ("latency_ms", &b.ms[..]),
    ] {
        let mut m = Obj::new();
        for (k, v) in ranges.iter().zip(calc_lat_dist(map, total)) {
            m.float(k, v);
        }
        o.obj(name, m);
    }
}

/// The errors (with `continue_on_error`), the latency target, the
/// description and the steady state.
fn error_latency_fields(o: &mut Obj, e: &Entry) {
    let ts = &e.ts;
    if e.continue_on_error() {
        o.uint("total_err", ts.total_err);
        o.int("first_error", ts.first_error as i64);
    }
    // latency_depth is td->latency_qd = iodepth (as given), never 0
    let lat = &e.last.submit.latency;
    if lat.enabled() {
        // the probe's depth; the target in ns, the window in µs
        o.uint("latency_depth", u64::from(ts.latency_depth));
        o.uint("latency_target", lat.target.as_ns());
        o.float("latency_percentile", lat.percentile);
        o.uint("latency_window", lat.window.as_us());
    } else if e.last.iodepth != 0 {
        let depth = e.last.iodepth;
        o.uint("latency_depth", depth as u64);
        o.int("latency_target", 0);
        o.float("latency_percentile", 100.0);
        o.int("latency_window", 0);
    }
    if let Some(desc) = &e.first.description {
        o.str("desc", desc);
    }
    if let Some(ss) = &ts.steadystate {
        o.obj("steadystate", super::steady::json(ss));
    }
}

/// `add_ddir_status_json` for a read/write/trim/mixed direction.
fn dir_json(d: &DirStats, agg: u64, cfg: &LatCfg) -> Obj {
    let mut o = Obj::new();
    let (mut bw_bytes, mut bw, mut iops) = (0u64, 0u64, 0.0f64);
    if d.runtime_ms != 0 {
        let runt = d.runtime_ms;
        bw_bytes = d.io_bytes.wrapping_mul(1000) / runt;
        bw = bw_bytes / 1024;
        iops = (1000.0 * d.total_ios as f64) / runt as f64;
    }
    o.uint("io_bytes", d.io_bytes);
    o.uint("io_kbytes", d.io_bytes >> 10);
    o.uint("bw_bytes", bw_bytes);
    o.uint("bw", bw);
    o.float("iops", iops);
    o.uint("runtime", d.runtime_ms);
    o.uint("total_ios", d.total_ios);
    o.uint("short_ios", d.short_ios);
    o.uint("drop_ios", d.drop_ios);
    o.obj("slat_ns", lat_json(cfg.slat, &d.slat, &d.slat_hist, cfg));
    o.obj("clat_ns", lat_json(cfg.clat, &d.clat, &d.clat_hist, cfg));
    o.obj("lat_ns", lat_json(cfg.lat, &d.lat, &d.lat_hist, cfg));
    if let Some(prios) = prios_json(d, cfg) {
        o.arr("prios", prios);
    }

    let (min, max, agg_p, mean, dev) = match calc_lat(&d.bw) {
        Some((min, max, mean, dev)) => (min, max, agg_percent(agg, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.uint("bw_min", min);
    o.uint("bw_max", max);
    o.float("bw_agg", agg_p);
    o.float("bw_mean", mean);
    o.float("bw_dev", dev);
    o.uint("bw_samples", d.bw.n);

    let (min, max, mean, dev) = calc_lat(&d.iops).unwrap_or((0, 0, 0.0, 0.0));
    o.uint("iops_min", min);
    o.uint("iops_max", max);
    o.float("iops_mean", mean);
    o.float("iops_stddev", dev);
    o.uint("iops_samples", d.iops.n);
    o
}

/// The `prios` array of `add_ddir_status_json` (fio 3.33): each
/// priority that completed IOs, with its latencies, when two or more did.
fn prios_json(d: &DirStats, cfg: &LatCfg) -> Option<Vec<Value>> {
    if prios_with_samples(&d.prios) < 2 {
        return None;
    }
    let name = if cfg.lat { "lat_ns" } else { "clat_ns" };
    let out = d
        .prios
        .iter()
        .filter(|p| p.stat.n > 0)
        .map(|p| {
            let mut o = Obj::new();
            o.uint("prioclass", u64::from(ioprio_class(p.ioprio)));
            o.uint("prio", u64::from(ioprio_level(p.ioprio)));
            o.obj(name, lat_json(cfg.clat || cfg.lat, &p.stat, &p.hist, cfg));
            Value::Obj(o)
        })
        .collect();
    Some(out)
}

/// `add_ddir_lat_json`.
fn lat_json(percentiles: bool, s: &LatStat, hist: &LatHist, cfg: &LatCfg) -> Obj {
    let (min, max, mean, dev) = calc_lat(s).unwrap_or((0, 0, 0.0, 0.0));
    let mut o = Obj::new();
    o.uint("min", min);
    o.uint("max", max);
    o.float("mean", mean);
    o.float("stddev", dev);
    o.uint("N", s.n);
    // like fio, an empty list still gives an (empty) percentile object
    if percentiles && s.n != 0 {
        let mut p = Obj::new();
        for (pct, v) in hist.percentiles(&cfg.plist) {
            p.uint(&cfmt::f6(pct), v);
        }
        o.obj("percentile", p);
        if cfg.plus {
            let mut bins = Obj::new();
            for (v, c) in hist.bins() {
                bins.uint(&v.to_string(), c);
            }
            o.obj("bins", bins);
        }
    }
    o
}
