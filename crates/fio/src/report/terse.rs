//! `--output-format=terse`: fio 3.33's terse version 3 line per report
//! entry (`stat.c: show_thread_status_terse_all` with `terse_version=3`,
//! `show_ddir_status_terse`, and `show_disk_util` in terse mode): 130
//! `;`-separated fields for one disk, then `total_err;first_error` with
//! `continue_on_error`, then the description if the job has one.

use super::cfmt::{f6, fixed_w};
use super::merge::{
    agg_percent, build_entries, calc_dist, calc_lat, calc_lat_dist, cpu_percent, group_runs, Entry,
    GroupRun,
};
use super::{DiskUtil, ReportInput};
use blkqos_core::hist::LatStat;
use blkqos_workload::stats::DirStats;
use blkqos_workload::Ddir;
use std::fmt::Write;

/// fio's `FIO_IO_U_LIST_MAX_LEN`: percentile fields per direction.
const PERCENTILE_FIELDS: usize = 20;

/// Every report entry's terse line.
pub fn write_terse(input: &ReportInput, out: &mut String) {
    let entries = build_entries(input);
    let rs = group_runs(&entries);
    for e in &entries {
        entry_terse(e, &rs[e.group_id() as usize], input, out);
    }
}

/// `show_thread_status_terse_all` (version 3) for one entry.
fn entry_terse(e: &Entry, rs: &GroupRun, input: &ReportInput, out: &mut String) {
    let ts = &e.ts;
    let _ = write!(
        out,
        "3;{};{};{};{}",
        input.fio_version,
        e.first.name,
        e.group_id(),
        e.error
    );
    // version 3 has read and write only
    for d in [Ddir::Read, Ddir::Write] {
        ddir_terse(e, &ts.dirs[d], rs.agg[d], out);
    }
    let (usr, sys) = cpu_percent(ts);
    let _ = write!(
        out,
        ";{}%;{}%;{};{};{}",
        f6(usr),
        f6(sys),
        ts.cpu.ctx,
        ts.cpu.majf,
        ts.cpu.minf
    );
    let total = e.total_rw_ios();
    for v in calc_dist(&ts.depth_level, total) {
        let _ = write!(out, ";{}%", fixed_w(v, 3, 1));
    }
    for v in lat_nu(ts, total) {
        let _ = write!(out, ";{}%", fixed_w(v, 3, 2));
    }
    for v in calc_lat_dist(&ts.lat_buckets.ms, total) {
        let _ = write!(out, ";{}%", fixed_w(v, 3, 2));
    }
    for du in &input.disk_util {
        disk_terse(du, out);
    }
    if e.continue_on_error() {
        let _ = write!(out, ";{};{}", ts.total_err, ts.first_error);
    }
    if let Some(desc) = &e.first.description {
        let _ = write!(out, ";{desc}");
    }
    out.push('\n');
}

/// `stat_calc_lat_nu`: the µs buckets with every ns bucket added to the
/// first.
fn lat_nu(ts: &blkqos_workload::JobStats, total: u64) -> Vec<f64> {
    let mut us = calc_lat_dist(&ts.lat_buckets.us, total);
    let ns: f64 = calc_lat_dist(&ts.lat_buckets.ns, total).iter().sum();
    us[0] += ns;
    us
}

/// `show_ddir_status_terse` for one direction.
fn ddir_terse(e: &Entry, d: &DirStats, agg: u64, out: &mut String) {
    let per_s = |x: u64| x.wrapping_mul(1000).checked_div(d.runtime_ms).unwrap_or(0);
    let (bw, iops) = (per_s(d.io_bytes) / 1024, per_s(d.total_ios));
    let _ = write!(
        out,
        ";{};{};{};{}",
        d.io_bytes >> 10,
        bw,
        iops,
        d.runtime_ms
    );
    lat_us(&d.slat, out);
    lat_us(&d.clat, out);
    let (hist, stat) = if e.last.lat_percentiles {
        (Some(&d.lat_hist), &d.lat)
    } else if e.last.clat_percentiles {
        (Some(&d.clat_hist), &d.clat)
    } else {
        (None, &d.clat)
    };
    let vals = match hist {
        Some(h) if stat.n > 0 => h.percentiles(&e.plist()),
        _ => Vec::new(),
    };
    for i in 0..PERCENTILE_FIELDS {
        match vals.get(i) {
            Some((p, v)) => {
                let _ = write!(out, ";{}%={}", f6(*p), v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    lat_us(&d.lat, out);
    let (min, max, p_agg, mean, dev) = match calc_lat(&d.bw) {
        Some((min, max, mean, dev)) => (min, max, agg_percent(agg, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    let _ = write!(out, ";{min};{max};{}%;{};{}", f6(p_agg), f6(mean), f6(dev));
}

/// A latency as `min;max;mean;dev` in µs (ns / 1000, min and max
/// truncated), zeros without samples.
fn lat_us(s: &LatStat, out: &mut String) {
    let (min, max, mean, dev) = calc_lat(s).unwrap_or((0, 0, 0.0, 0.0));
    let _ = write!(
        out,
        ";{};{};{};{}",
        min / 1000,
        max / 1000,
        f6(mean / 1000.0),
        f6(dev / 1000.0)
    );
}

/// `print_disk_util` in terse mode, with a stacked device's aggregate.
fn disk_terse(du: &DiskUtil, out: &mut String) {
    let _ = write!(
        out,
        ";{};{};{};{};{};{};{};{};{}%",
        du.name,
        du.read_ios,
        du.write_ios,
        du.read_merges,
        du.write_merges,
        du.read_ticks,
        du.write_ticks,
        du.in_queue,
        fixed_w(du.util_capped(), 3, 2)
    );
    if let Some(a) = &du.agg {
        let _ = write!(
            out,
            ";{};{};{};{};{};{};{};{}%",
            a.read_ios,
            a.write_ios,
            a.read_merges,
            a.write_merges,
            a.read_ticks,
            a.write_ticks,
            a.in_queue,
            fixed_w(a.util, 3, 2)
        );
    }
}
