//! `--output-format=normal`: the end-of-run part of fio 3.33's human output
//! (`stat.c: show_thread_status_normal`, `show_ddir_status`, `display_lat`,
//! `show_clat_percentiles`, `show_latencies`, `show_group_stats`,
//! `show_mixed_group_stats`, `print_disk_util`). The job banner, "Starting
//! N processes" and ETA lines fio prints before it are not part of this.

use blkqos_core::hist::LatHist;
use blkqos_workload::prio::{ioprio_class, ioprio_level};
use blkqos_workload::spec::UnifiedRw;
use blkqos_workload::stats::{prios_with_samples, DirStats};
use blkqos_workload::Ddir;

use super::cfmt::{self, fixed_w};
use super::merge::{
    agg_percent, build_entries, calc_dist, calc_lat, calc_lat_dist, cpu_percent, gen_mixed,
    group_runs, wsum, Entry, GroupRun,
};
use super::num2str::{num2str, N2sUnit};
use super::{ReportInput, SIG_FIGS};

/// Write the normal report: a blank line, one block per entry, the
/// `Run status group` sections and, if `disk_util` is non-empty, the disk
/// stats.
pub fn write_normal(input: &ReportInput, out: &mut String) {
    let entries = build_entries(input);
    let rs = group_runs(&entries);
    let time = cfmt::ctime(input.timestamp_ms / 1000, input.utc_offset_s);
    // "don't overwrite last signal output"
    out.push('\n');
    for e in &entries {
        thread_status(e, &rs[e.group_id() as usize], &time, out);
    }
    for (i, g) in rs.iter().enumerate() {
        group_stats(i, g, out);
    }
    if !input.disk_util.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for du in &input.disk_util {
            disk_util_line(du, out);
        }
    }
    if !input.blkqos_disk_util.is_empty() {
        out.push_str("\nblkqos request stats (read/write):\n");
        for du in &input.blkqos_disk_util {
            disk_util_line(du, out);
        }
    }
}

/// `print_disk_util` (not terse): a stacked device's line is indented two
/// more columns and ends with its components' `aggr*` (`show_agg_stats`).
fn disk_util_line(du: &super::DiskUtil, out: &mut String) {
    if du.agg.is_some() {
        out.push_str("  ");
    }
    out.push_str(&format!(
        "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={}%",
        du.name,
        du.read_ios,
        du.write_ios,
        du.read_merges,
        du.write_merges,
        du.read_ticks,
        du.write_ticks,
        du.in_queue,
        fixed_w(du.util_capped(), 3, 2)
    ));
    if let Some(a) = &du.agg {
        out.push_str(&format!(
            ", aggrios={}/{}, aggrmerge={}/{}, aggrticks={}/{}, aggrin_queue={}, aggrutil={}%",
            a.read_ios,
            a.write_ios,
            a.read_merges,
            a.write_merges,
            a.read_ticks,
            a.write_ticks,
            a.in_queue,
            fixed_w(a.util, 3, 2)
        ));
    }
    out.push('\n');
}

/// How `show_ddir_status` prints one direction.
struct DirView<'a> {
    d: &'a DirStats,
    label: &'a str,
    /// the direction of the group's `agg` (and DDIR_WRITE adds the zone
    /// resets)
    ddir: Ddir,
    sig_figs: i32,
    unit_base: N2sUnit,
}

/// `show_thread_status_normal`.
fn thread_status(e: &Entry, rs: &GroupRun, time: &str, out: &mut String) {
    let ts = &e.ts;
    let bytes = wsum(ts.dirs.values().map(|d| d.io_bytes));
    if bytes == 0 && e.total_rw_ios() == 0 {
        return;
    }
    head_lines(e, time, out);
    ddir_blocks(e, rs, out);
    show_latencies(e, out);

    if let Some((min, max, mean, dev)) = calc_lat(&ts.sync_lat) {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat("sync", min, max, mean, dev, out);
        clat_percentiles(e, &ts.sync_hist, "sync", out);
    }
    cpu_depth_lines(e, out);
    issued_error_lines(e, out);
    latency_target_lines(e, out);
}

/// The job's first line (name, group, error, pid, time) and its description.
fn head_lines(e: &Entry, time: &str, out: &mut String) {
    let head = format!(
        "{}: (groupid={}, jobs={}): err={:2}",
        e.first.name,
        e.group_id(),
        e.members,
        e.error
    );
    if e.error == 0 {
        out.push_str(&format!("{head}: pid={}: {time}\n", e.pid));
    } else {
        out.push_str(&format!("{head} ({}): pid={}: {time}\n", e.verror, e.pid));
    }
    if let Some(desc) = e.first.description.as_deref().filter(|d| !d.is_empty()) {
        out.push_str(&format!("  Description  : [{desc}]\n"));
    }
}

/// The block of each direction that did IO and, with
/// `unified_rw_reporting=both`, the mixed block.
fn ddir_blocks(e: &Entry, rs: &GroupRun, out: &mut String) {
    let ts = &e.ts;
    let mixed = e.unified() == UnifiedRw::Mixed;
    for ddir in Ddir::ALL {
        if ts.dirs[ddir].io_bytes != 0 {
            let v = DirView {
                d: &ts.dirs[ddir],
                label: if mixed { "mixed" } else { ddir.name() },
                ddir,
                sig_figs: SIG_FIGS,
                unit_base: N2sUnit::BytePerSec,
            };
            ddir_status(e, rs, &v, out);
        }
    }
    if e.unified() == UnifiedRw::Both {
        // show_mixed_ddir_status: fio's local thread_stat has sig_figs and
        // unit_base left at 0, so IOPS/BW print as "0" there.
        let m = gen_mixed(ts);
        let v = DirView {
            d: &m,
            label: "mixed",
            ddir: Ddir::Read,
            sig_figs: 0,
            unit_base: N2sUnit::None,
        };
        ddir_status(e, rs, &v, out);
    }
}

/// The `cpu` line, the `IO depths` line and the submit and complete
/// batch distributions.
fn cpu_depth_lines(e: &Entry, out: &mut String) {
    let ts = &e.ts;
    let (usr, sys) = cpu_percent(ts);
    out.push_str(&format!(
        "  cpu          : usr={}%, sys={}%, ctx={}, majf={}, minf={}\n",
        fixed_w(usr, 3, 2),
        fixed_w(sys, 3, 2),
        ts.cpu.ctx,
        ts.cpu.majf,
        ts.cpu.minf
    ));
    let total = e.total_rw_ios();
    let p = |v: &[f64]| -> Vec<String> { v.iter().map(|x| fixed_w(*x, 3, 1)).collect() };
    let d = p(&calc_dist(&ts.depth_level, total));
    out.push_str(&format!(
        "  IO depths    : 1={}%, 2={}%, 4={}%, 8={}%, 16={}%, 32={}%, >=64={}%\n",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    ));
    for (label, map) in [
        ("     submit    ", &ts.submit_batches),
        ("     complete  ", &ts.complete_batches),
    ] {
        let d = p(&calc_dist(map, wsum(map.iter().copied())));
        out.push_str(&format!(
            "{label}: 0={}%, 4={}%, 8={}%, 16={}%, 32={}%, 64={}%, >=64={}%\n",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        ));
    }
}

/// The `issued rwts` counts and, with `continue_on_error`, the errors.
fn issued_error_lines(e: &Entry, out: &mut String) {
    let ts = &e.ts;
    let dr = &ts.dirs;
    out.push_str(&format!(
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0\n",
        dr.read.total_ios,
        dr.write.total_ios,
        dr.trim.total_ios,
        ts.sync_ios,
        dr.read.short_ios,
        dr.write.short_ios,
        dr.trim.short_ios,
        dr.read.drop_ios,
        dr.write.drop_ios,
        dr.trim.drop_ios
    ));
    if e.continue_on_error() {
        out.push_str(&format!(
            "     errors    : total={}, first_error={}/<{}>\n",
            ts.total_err,
            ts.first_error,
            cfmt::strerror(ts.first_error)
        ));
    }
}

/// The `latency` line (the target, or depth alone) and the steady-state
/// line.
fn latency_target_lines(e: &Entry, out: &mut String) {
    let ts = &e.ts;
    let lat = &e.last.submit.latency;
    if lat.enabled() {
        // fio show_thread_status_normal: the target in ns, the window in µs
        out.push_str(&format!(
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}\n",
            lat.target.as_ns(),
            lat.window.as_us(),
            lat.percentile,
            ts.latency_depth
        ));
    } else if e.last.iodepth != 0 {
        out.push_str(&format!(
            "     latency   : target=0, window=0, percentile=100.00%, depth={}\n",
            e.last.iodepth
        ));
    }
    if let Some(ss) = &ts.steadystate {
        super::steady::normal_line(ss, e.first.kb_base, SIG_FIGS, out);
    }
}

/// `show_ddir_status` for a read/write/trim/mixed direction.
fn ddir_status(e: &Entry, rs: &GroupRun, v: &DirView, out: &mut String) {
    let d = v.d;
    if d.runtime_ms == 0 {
        return;
    }
    let i2p = rs.i2p();
    let runt = d.runtime_ms;
    let bw = d.io_bytes.wrapping_mul(1000) / runt;
    let io_p = num2str(d.io_bytes, v.sig_figs, 1, i2p, N2sUnit::Byte);
    let bw_p = num2str(bw, v.sig_figs, 1, i2p, v.unit_base);
    let bw_p_alt = num2str(bw, v.sig_figs, 1, !i2p, v.unit_base);
    let iops = d.total_ios.wrapping_mul(1000) / runt;
    let iops_p = num2str(iops, v.sig_figs, 1, false, N2sUnit::None);
    // zbd_write_status: always "; N zone resets" for DDIR_WRITE
    let post = if v.ddir == Ddir::Write {
        format!("; {} zone resets", e.ts.nr_zone_resets)
    } else {
        String::new()
    };
    out.push_str(&format!(
        "  {}: IOPS={iops_p}, BW={bw_p} ({bw_p_alt})({io_p}/{runt}msec){post}\n",
        v.label
    ));
    ddir_lat_lines(e, d, out);
    bw_iops_lines(rs, v, out);
}

/// The latency lines of a direction, by priority too when it has
/// several, and the percentiles asked for.
fn ddir_lat_lines(e: &Entry, d: &DirStats, out: &mut String) {
    for (name, s) in [("slat", &d.slat), ("clat", &d.clat), (" lat", &d.lat)] {
        if let Some((min, max, mean, dev)) = calc_lat(s) {
            display_lat(name, min, max, mean, dev, out);
        }
    }
    let l = e.last;
    // fio 3.33: "clat" or, with lat_percentiles, "lat" for the priorities
    let prio_kind = if l.lat_percentiles { "lat" } else { "clat" };
    let by_prio = prios_with_samples(&d.prios) >= 2;
    if by_prio {
        for p in &d.prios {
            if let Some((min, max, mean, dev)) = calc_lat(&p.stat) {
                let name = format!("{prio_kind} {}", prio_name(p.ioprio));
                display_lat(&name, min, max, mean, dev, out);
            }
        }
    }
    for (on, name, s, h) in [
        (l.slat_percentiles, "slat", &d.slat, &d.slat_hist),
        (l.clat_percentiles, "clat", &d.clat, &d.clat_hist),
        (l.lat_percentiles, "lat", &d.lat, &d.lat_hist),
    ] {
        if on && s.n > 0 {
            clat_percentiles(e, h, name, out);
        }
    }
    if by_prio && (l.clat_percentiles || l.lat_percentiles) {
        prio_percentiles(e, d, prio_kind, out);
    }
}

/// The `bw` and `iops` sample lines of a direction.
fn bw_iops_lines(rs: &GroupRun, v: &DirView, out: &mut String) {
    let d = v.d;
    let i2p = rs.i2p();
    if let Some((mut min, mut max, mut mean, mut dev)) = calc_lat(&d.bw) {
        let kb = rs.kb_base as f64;
        let mut bw_str = if i2p { "KiB" } else { "kB" };
        let p_of_agg = agg_percent(rs.agg[v.ddir], mean);
        if mean > kb * kb {
            min = (min as f64 / kb) as u64;
            max = (max as f64 / kb) as u64;
            mean /= kb;
            dev /= kb;
            bw_str = "MiB";
        }
        out.push_str(&format!(
            "   bw ({bw_str:>5}/s): min={min:5}, max={max:5}, per={}%, avg={}, stdev={}, samples={}\n",
            fixed_w(p_of_agg, 3, 2),
            fixed_w(mean, 5, 2),
            fixed_w(dev, 5, 2),
            d.bw.n
        ));
    }
    if let Some((min, max, mean, dev)) = calc_lat(&d.iops) {
        out.push_str(&format!(
            "   iops        : min={min:5}, max={max:5}, avg={}, stdev={}, samples={}\n",
            fixed_w(mean, 5, 2),
            fixed_w(dev, 5, 2),
            d.iops.n
        ));
    }
}

/// `prio C/L` as fio 3.33 names a priority.
fn prio_name(ioprio: u16) -> String {
    format!("prio {}/{}", ioprio_class(ioprio), ioprio_level(ioprio))
}

/// fio 3.33 `show_ddir_status`: each priority's percentiles, with its
/// share of the direction's IOs (`{kind} prio C/L (P% of IOs)`).
fn prio_percentiles(e: &Entry, d: &DirStats, kind: &str, out: &mut String) {
    let total = if kind == "lat" { d.lat.n } else { d.clat.n };
    for p in d.prios.iter().filter(|p| p.stat.n > 0) {
        let share = 100.0 * p.stat.n as f64 / total.max(1) as f64;
        let pre = format!(
            "{kind} {} ({}% of IOs)",
            prio_name(p.ioprio),
            fixed_w(share, 0, 2)
        );
        clat_percentiles(e, &p.hist, &pre, out);
    }
}

/// `display_lat`: unit chosen from min, max and stdev.
fn display_lat(name: &str, min: u64, max: u64, mean: f64, dev: f64, out: &mut String) {
    let (mut min, mut max, mut mean, mut dev) = (min, max, mean, dev);
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        base = "(usec)";
    }
    out.push_str(&format!(
        "    {name} {base}: min={}, max={}, avg={}, stdev={}\n",
        num2str(min, 6, 1, false, N2sUnit::None),
        num2str(max, 6, 1, false, N2sUnit::None),
        fixed_w(mean, 5, 2),
        fixed_w(dev, 5, 2)
    ));
}

/// `show_clat_percentiles` for an entry's percentile list.
fn clat_percentiles(e: &Entry, hist: &LatHist, pre: &str, out: &mut String) {
    let vals = hist.percentiles(&e.plist());
    percentile_block(&vals, e.precision(), pre, PctUnit::Auto, out);
}

/// The unit of a percentile block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PctUnit {
    /// fio's rule (`show_clat_percentiles`): msec if the smallest value is
    /// above 2 ms and the largest above 99.999999 ms, usec if above 2 µs
    /// and 99.999 µs, else nsec.
    Auto,
    Nsec,
    Usec,
    Msec,
}

/// The block `show_clat_percentiles` prints for `vals` (sorted
/// `(percentile, ns)` pairs, as [`LatHist::percentiles`] returns them):
/// `    {pre} percentiles ({unit}):` then `     |` lines of
/// `{p}th=[{value}]` entries; values scaled to the unit are rounded up
/// (`(v + 999) / 1000` per step), as fio does. Nothing for no values.
pub fn percentile_block(
    vals: &[(f64, u64)],
    precision: usize,
    pre: &str,
    unit: PctUnit,
    out: &mut String,
) {
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let unit = match unit {
        PctUnit::Auto if minv > 2_000_000 && maxv > 99_999_999 => PctUnit::Msec,
        PctUnit::Auto if minv > 2000 && maxv > 99_999 => PctUnit::Usec,
        PctUnit::Auto => PctUnit::Nsec,
        u => u,
    };
    let (scale_down, divisor, unit) = match unit {
        PctUnit::Msec => (2, 1_000_000u64, "msec"),
        PctUnit::Usec => (1, 1000, "usec"),
        _ => (0, 1, "nsec"),
    };
    out.push_str(&format!("    {pre} percentiles ({unit}):\n     |"));
    // (int)(log10(maxv / divisor) + 1); log10(0) = -inf -> INT_MIN in C
    let time_width = (((maxv / divisor) as f64).log10() + 1.0) as i32;
    let time_width = time_width.max(5) as usize;
    let per_line = ((80 - 7) / (precision + 10 + time_width)).max(1);
    let len = vals.len();
    for (j, &(p, mut v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == len - 1;
        for _ in 0..scale_down {
            v = v.div_ceil(1000); // (v + 999) / 1000
        }
        out.push_str(&format!(
            " {}th=[{v:>time_width$}]{}",
            fixed_w(p, precision + 3, precision),
            if is_last { '\n' } else { ',' }
        ));
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// `show_latencies`: the `lat (nsec/usec/msec)` bucket lines.
fn show_latencies(e: &Entry, out: &mut String) {
    let ranges = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    let total = e.total_rw_ios();
    let b = &e.ts.lat_buckets;
    for (msg, map) in [
        ("nsec", &b.ns[..]),
        ("usec", &b.us[..]),
        ("msec", &b.ms[..]),
    ] {
        let vals = calc_lat_dist(map, total);
        let mut new_line = true;
        let mut shown = false;
        let mut line = 0;
        for (i, v) in vals.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            shown = true;
            if new_line {
                if line != 0 {
                    out.push('\n');
                }
                out.push_str(&format!("  lat ({msg})   : "));
                new_line = false;
                line = 0;
            }
            if line != 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("{}{}%", ranges[i], fixed_w(*v, 3, 2)));
            line += 1;
            if line == 5 {
                new_line = true;
            }
        }
        if shown {
            out.push('\n');
        }
    }
}

/// `show_group_stats` (+ `show_mixed_group_stats` for `both`).
fn group_stats(gid: usize, rs: &GroupRun, out: &mut String) {
    const STR: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    out.push_str(&format!("\nRun status group {gid} (all jobs):\n"));
    let i2p = rs.i2p();
    for (i, name) in Ddir::ALL.into_iter().zip(STR) {
        if rs.max_run[i] == 0 {
            continue;
        }
        let label = if rs.is_mixed() { "  MIXED" } else { name };
        group_line(
            label,
            i2p,
            rs.agg[i],
            rs.min_bw[i],
            rs.max_bw[i],
            rs.iobytes[i],
            (rs.min_run[i], rs.max_run[i]),
            out,
        );
    }
    if rs.is_both() {
        let (mut io, mut agg, mut min_bw, mut max_bw) = (0u64, 0u64, u64::MAX, 0u64);
        let (mut min_run, mut max_run) = (u64::MAX, 0u64);
        for i in Ddir::ALL {
            if rs.max_run[i] == 0 {
                continue;
            }
            io = io.wrapping_add(rs.iobytes[i]);
            agg = agg.wrapping_add(rs.agg[i]);
            min_bw = min_bw.min(rs.min_bw[i]);
            max_bw = max_bw.max(rs.max_bw[i]);
            min_run = min_run.min(rs.min_run[i]);
            max_run = max_run.max(rs.max_run[i]);
        }
        group_line(
            "  MIXED",
            i2p,
            agg,
            min_bw,
            max_bw,
            io,
            (min_run, max_run),
            out,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn group_line(
    label: &str,
    i2p: bool,
    agg: u64,
    min_bw: u64,
    max_bw: u64,
    io: u64,
    run: (u64, u64),
    out: &mut String,
) {
    let n = |v: u64, p: bool, u: N2sUnit| num2str(v, SIG_FIGS, 1, p, u);
    let bps = N2sUnit::BytePerSec;
    out.push_str(&format!(
        "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec\n",
        n(agg, i2p, bps),
        n(agg, !i2p, bps),
        n(min_bw, i2p, bps),
        n(max_bw, i2p, bps),
        n(min_bw, !i2p, bps),
        n(max_bw, !i2p, bps),
        n(io, i2p, N2sUnit::Byte),
        n(io, !i2p, N2sUnit::Byte),
        run.0,
        run.1
    ));
}
