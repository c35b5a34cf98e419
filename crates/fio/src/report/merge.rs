//! From job clones to report entries and group totals, as fio's
//! `__show_run_stats` does it (`stat.c`, fio 3.33):
//!
//! * clones are folded into entries: a clone opens a new entry unless it has
//!   `group_reporting` and the previous clone had the same `groupid`;
//! * each clone is added with `sum_thread_stats`: latency stats pooled
//!   (`__sum_stat`), bw/iops sample stats summed field by field (`sum_stat`
//!   with `pure_sum`: min+min, max+max, mean+mean, S+S, N+N), counts summed,
//!   runtime = max, `job_runtime` summed; with `unified_rw_reporting=mixed`
//!   every direction of every clone is folded into direction 0, in the order
//!   clone1 read, write, trim, clone2 read, ...;
//! * name, description, groupid, pid, kb_base and unified_rw_reporting come
//!   from the first clone; options, percentile settings and
//!   continue_on_error from the last (fio overwrites them per clone);
//! * per group: min/max runtime and bandwidth of its entries, bytes and the
//!   aggregate bandwidth `agg = bytes * 1000 / max_run`.
//!
//! The arithmetic mirrors fio's expression order, so means and deviations
//! are bit-identical to fio's for the same samples.

use blkqos_core::hist::LatStat;
use blkqos_workload::spec::{IoEngine, JobSpec, UnifiedRw};
use blkqos_workload::stats::{DirStats, JobStats};
use blkqos_workload::{Ddir, PerDir};

use super::{cfmt, ReportInput};

/// fio's `FIO_IO_U_LIST_MAX_LEN`.
pub const LIST_MAX_LEN: usize = 20;

/// One report entry: fio's summed `struct thread_stat`.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    /// First clone: name, description, groupid, kb_base, unified mode.
    pub first: &'a JobSpec,
    /// Last clone: job options, percentile settings, continue_on_error,
    /// latency depth.
    pub last: &'a JobSpec,
    pub members: u32,
    pub pid: u32,
    pub error: i32,
    pub verror: String,
    /// The summed stats. With `unified_rw_reporting=mixed`, `dirs.read`
    /// holds everything and the write and trim directions are empty.
    pub ts: JobStats,
}

impl Entry<'_> {
    pub fn unified(&self) -> UnifiedRw {
        self.first.unified_rw_reporting
    }
    pub fn group_id(&self) -> u32 {
        self.first.group_id
    }
    /// `ts->continue_on_error`: `continue_on_error=`, or any `ignore_error`
    /// list, sets it.
    pub fn continue_on_error(&self) -> bool {
        self.last.ignore_error.is_set()
    }
    /// `ddir_rw_sum(ts->total_io_u)`.
    pub fn total_rw_ios(&self) -> u64 {
        wsum(self.ts.dirs.values().map(|d| d.total_ios))
    }
    /// The percentile list fio uses: up to the first 0.0, at most 20 values.
    pub fn plist(&self) -> Vec<f64> {
        plist(&self.last.percentile_list)
    }
    /// `percentile_precision`.
    pub fn precision(&self) -> usize {
        precision(&self.plist())
    }
}

/// A sum that wraps like C's unsigned arithmetic instead of panicking.
pub fn wsum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::wrapping_add)
}

/// The list as `calc_clat_percentiles` sees it (unsorted).
pub fn plist(list: &[f64]) -> Vec<f64> {
    list.iter()
        .take(LIST_MAX_LEN)
        .take_while(|&&p| p != 0.0)
        .copied()
        .collect()
}

/// fio derives `percentile_precision` from the option text (most digits
/// after a `.`); we derive it from the shortest decimal form of each value,
/// which agrees unless the text had trailing zeros (`99.50`).
pub fn precision(list: &[f64]) -> usize {
    list.iter()
        .map(|p| {
            let s = format!("{p}");
            s.find('.').map_or(0, |i| s.len() - i - 1)
        })
        .max()
        .unwrap_or(0)
}

/// `sum_stat(dst, src, pure_sum)` + `__sum_stat`.
pub fn sum_stat(dst: &mut LatStat, src: &LatStat, pure_sum: bool) {
    if src.n == 0 {
        return;
    }
    let first = dst.n == 0;
    if first {
        // __sum_stat with first: min(ULONG_MAX, src), max(0, src), copy
        // mean and S; the pure sum copies everything too.
        *dst = *src;
        return;
    }
    if pure_sum {
        dst.min = dst.min.wrapping_add(src.min);
        dst.max = dst.max.wrapping_add(src.max);
        dst.n += src.n;
        dst.mean += src.mean;
        dst.m2 += src.m2;
        return;
    }
    dst.min = dst.min.min(src.min);
    dst.max = dst.max.max(src.max);
    let delta = src.mean - dst.mean;
    let mean = ((src.mean * src.n as f64) + (dst.mean * dst.n as f64)) / (dst.n + src.n) as f64;
    let s = src.m2
        + dst.m2
        + delta * delta * (dst.n.wrapping_mul(src.n)) as f64 / (dst.n + src.n) as f64;
    dst.n += src.n;
    dst.mean = mean;
    dst.m2 = s;
}

/// One direction of `sum_thread_stats`.
pub fn sum_dir(dst: &mut DirStats, src: &DirStats) {
    sum_stat(&mut dst.clat, &src.clat, false);
    sum_stat(&mut dst.slat, &src.slat, false);
    sum_stat(&mut dst.lat, &src.lat, false);
    sum_stat(&mut dst.bw, &src.bw, true);
    sum_stat(&mut dst.iops, &src.iops, true);
    dst.io_bytes = dst.io_bytes.wrapping_add(src.io_bytes);
    dst.runtime_ms = dst.runtime_ms.max(src.runtime_ms);
    dst.total_ios += src.total_ios;
    dst.short_ios += src.short_ios;
    dst.drop_ios += src.drop_ios;
    dst.slat_hist.merge(&src.slat_hist);
    dst.clat_hist.merge(&src.clat_hist);
    dst.lat_hist.merge(&src.lat_hist);
    // fio sum_clat_prio_stats: entries of the same priority pool
    blkqos_workload::stats::merge_prios(&mut dst.prios, &src.prios);
}

/// `sum_thread_stats(dst, src)`; `mixed` = `dst->unified_rw_rep == UNIFIED_MIXED`.
/// `first_error` is left to the caller (fio copies it, it does not sum it).
pub fn sum_thread_stats(dst: &mut JobStats, src: &JobStats, mixed: bool) {
    for l in Ddir::ALL {
        let to = if mixed { Ddir::Read } else { l };
        sum_dir(&mut dst.dirs[to], &src.dirs[l]);
    }
    sum_stat(&mut dst.sync_lat, &src.sync_lat, false);
    for k in 0..dst.depth_level.len() {
        dst.depth_level[k] += src.depth_level[k];
        dst.submit_batches[k] += src.submit_batches[k];
        dst.complete_batches[k] += src.complete_batches[k];
    }
    dst.lat_buckets.merge(&src.lat_buckets);
    dst.sync_ios += src.sync_ios;
    dst.sync_hist.merge(&src.sync_hist);
    dst.job_runtime_ms += src.job_runtime_ms;
    dst.elapsed_s = dst.elapsed_s.max(src.elapsed_s);
    dst.eta_s = dst.eta_s.max(src.eta_s);
    dst.total_err += src.total_err;
    dst.cpu.add(&src.cpu);
    // fio __show_run_stats sets latency_depth from each job in turn
    dst.latency_depth = src.latency_depth;
    // and the ss_* fields: the last job's (the one of a group that keeps
    // the samples, with group_reporting)
    dst.steadystate.clone_from(&src.steadystate);
    dst.nr_zone_resets += src.nr_zone_resets;
}

/// `(usr_cpu, sys_cpu)` in percent of the entry's `total_run_time`, as
/// `show_thread_status_normal` / `_json` compute them (0 without runtime).
pub fn cpu_percent(ts: &JobStats) -> (f64, f64) {
    if ts.job_runtime_ms == 0 {
        return (0.0, 0.0);
    }
    let runt = ts.job_runtime_ms as f64;
    (
        ts.cpu.usr_ms as f64 * 100.0 / runt,
        ts.cpu.sys_ms as f64 * 100.0 / runt,
    )
}

/// `gen_mixed_ddir_stats_from_ts`: the `mixed` direction of an entry for
/// `unified_rw_reporting=both` (its read, write and trim folded in order).
pub fn gen_mixed(ts: &JobStats) -> DirStats {
    let mut m = DirStats::default();
    for d in ts.dirs.values() {
        sum_dir(&mut m, d);
    }
    m
}

/// Linux `EILSEQ`: what a failed verify sets.
const EILSEQ: i32 = 84;

/// `td->verror` for the entry's error. fio's text names the C source line
/// that raised it: sync engines fail in `fio_io_end` (`engines/sync.c`),
/// async engines in `__io_u_log_error`, which does not record ignored errors.
fn verror(spec: &JobSpec, err: i32, ignored: bool) -> String {
    let msg = cfmt::strerror(err);
    let sync = matches!(
        spec.ioengine,
        IoEngine::Psync | IoEngine::Sync | IoEngine::Pvsync | IoEngine::Pvsync2
    );
    if err == EILSEQ && spec.verify.enabled() && !ignored {
        // a failed verify (verify.c verify_io_u) is the completion's error:
        // io_u.c io_u_sync_complete / io_u_queued_complete raise it
        return if sync {
            format!("file:io_u.c:2152, func=io_u_sync_complete, error={msg}")
        } else {
            format!("file:io_u.c:2190, func=io_u_queued_complete, error={msg}")
        };
    }
    match spec.ioengine {
        IoEngine::Psync | IoEngine::Sync | IoEngine::Pvsync | IoEngine::Pvsync2 => {
            format!("file:engines/sync.c:126, func=xfer, error={msg}")
        }
        _ if ignored => String::new(),
        // fio_sgio_doio: td_verror on the SG_IO ioctl path of a block
        // device, and on a character device (/dev/sgN) written and read
        // back synchronously (direct=1); else the io_u error path
        IoEngine::Sg if !sg_char_dev(spec) => {
            format!("file:engines/sg.c:545, func=fio_sgio_doio, error={msg}")
        }
        IoEngine::Sg if spec.direct => {
            format!("file:engines/sg.c:549, func=fio_sgio_doio, error={msg}")
        }
        _ => {
            format!("file:io_u.c:1876, func=io_u error, error={msg}")
        }
    }
}

/// The sg job's target is an sg character device (`/dev/sgN`).
fn sg_char_dev(spec: &JobSpec) -> bool {
    spec.filename.as_deref().is_some_and(|f| {
        f.split(':')
            .next()
            .is_some_and(|f| f.starts_with("/dev/sg"))
    })
}

/// The first loops of `__show_run_stats`: clones to entries.
pub fn build_entries<'a>(input: &ReportInput<'a>) -> Vec<Entry<'a>> {
    let mut out: Vec<Entry<'a>> = Vec::new();
    let mut last_gid: Option<u32> = None;
    for job in &input.jobs {
        let spec = job.spec;
        let join = last_gid.is_some() && spec.group_reporting && last_gid == Some(spec.group_id);
        last_gid = Some(spec.group_id);
        if !join {
            out.push(Entry {
                first: spec,
                last: spec,
                members: 0,
                pid: job.pid,
                error: 0,
                verror: String::new(),
                ts: JobStats::default(),
            });
        }
        let Some(e) = out.last_mut() else { continue };
        e.last = spec;
        let coe = spec.ignore_error.is_set();
        e.ts.first_error = job.stats.first_error;
        if e.error == 0 {
            if job.error == 0 && coe && job.stats.first_error != 0 {
                e.error = job.stats.first_error;
                e.verror = verror(spec, e.error, true);
            } else if job.error != 0 {
                e.error = job.error;
                e.verror = verror(spec, e.error, false);
            }
        }
        let mixed = e.first.unified_rw_reporting == UnifiedRw::Mixed;
        sum_thread_stats(&mut e.ts, job.stats, mixed);
        e.members += 1;
    }
    for e in &mut out {
        e.ts.members = e.members;
    }
    out
}

/// `struct group_run_stats`.
#[derive(Clone, Debug)]
pub struct GroupRun {
    pub min_run: PerDir<u64>,
    pub max_run: PerDir<u64>,
    pub min_bw: PerDir<u64>,
    pub max_bw: PerDir<u64>,
    pub iobytes: PerDir<u64>,
    pub agg: PerDir<u64>,
    pub kb_base: u32,
    /// OR of the entries' `unified_rw_rep` (none 0, mixed 1, both 2).
    pub unified: u32,
}

impl Default for GroupRun {
    fn default() -> Self {
        // init_group_run_stat
        GroupRun {
            min_run: PerDir::all(u64::MAX),
            max_run: PerDir::all(0),
            min_bw: PerDir::all(u64::MAX),
            max_bw: PerDir::all(0),
            iobytes: PerDir::all(0),
            agg: PerDir::all(0),
            kb_base: 0,
            unified: 0,
        }
    }
}

impl GroupRun {
    pub fn i2p(&self) -> bool {
        self.kb_base.is_power_of_two()
    }
    pub fn is_mixed(&self) -> bool {
        self.unified == 1
    }
    pub fn is_both(&self) -> bool {
        self.unified == 2
    }
}

pub fn unified_code(u: UnifiedRw) -> u32 {
    match u {
        UnifiedRw::None => 0,
        UnifiedRw::Mixed => 1,
        UnifiedRw::Both => 2,
    }
}

/// `runstats[]`, indexed by group id, for groups `0..=max groupid`.
pub fn group_runs(entries: &[Entry]) -> Vec<GroupRun> {
    let n = entries.iter().map(|e| e.group_id()).max().unwrap_or(0) as usize + 1;
    let mut rs = vec![GroupRun::default(); n];
    for e in entries {
        let g = &mut rs[e.group_id() as usize];
        g.kb_base = e.first.kb_base;
        g.unified |= unified_code(e.unified());
        for j in Ddir::ALL {
            let d = &e.ts.dirs[j];
            if d.runtime_ms == 0 {
                continue;
            }
            if d.runtime_ms < g.min_run[j] || g.min_run[j] == 0 {
                g.min_run[j] = d.runtime_ms;
            }
            g.max_run[j] = g.max_run[j].max(d.runtime_ms);
            let bw = d.io_bytes.wrapping_mul(1000) / d.runtime_ms;
            g.min_bw[j] = g.min_bw[j].min(bw);
            g.max_bw[j] = g.max_bw[j].max(bw);
            g.iobytes[j] = g.iobytes[j].wrapping_add(d.io_bytes);
        }
    }
    for g in &mut rs {
        for j in Ddir::ALL {
            if let Some(agg) = g.iobytes[j].wrapping_mul(1000).checked_div(g.max_run[j]) {
                g.agg[j] = agg;
            }
        }
    }
    rs
}

/// `convert_agg_kbytes_percent(rs, ddir, int mean)`: note the mean is
/// truncated to an `int` by the call.
pub fn agg_percent(agg: u64, mean: f64) -> f64 {
    let mut p = 100.0;
    if agg > 1024 {
        let m = mean as i32; // C double -> int conversion (saturating here)
        p = m as f64 * 100.0 / (agg as f64 / 1024.0);
        if p > 100.0 {
            p = 100.0;
        }
    }
    p
}

/// `calc_lat`: (min, max, mean, dev) if there are samples.
pub fn calc_lat(s: &LatStat) -> Option<(u64, u64, f64, f64)> {
    if s.n == 0 {
        return None;
    }
    let n = s.n as f64;
    let dev = if n > 1.0 {
        (s.m2 / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Some((s.min, s.max, s.mean, dev))
}

/// `stat_calc_dist`: percentages of `total`, a non-zero share below 0.1
/// shown as 0.1.
pub fn calc_dist(map: &[u64], total: u64) -> Vec<f64> {
    map.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.1 && c != 0 {
                0.1
            } else {
                v
            }
        })
        .collect()
}

/// `stat_calc_lat`: percentages of all read/write/trim IOs, a non-zero
/// share below 0.01 shown as 0.01.
pub fn calc_lat_dist(map: &[u64], total: u64) -> Vec<f64> {
    map.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c != 0 {
                0.01
            } else {
                v
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(xs: &[u64]) -> LatStat {
        let mut s = LatStat::default();
        xs.iter().for_each(|&x| s.add(x));
        s
    }

    #[test]
    fn pure_sum_adds_s_without_cross_term() {
        // fio's group bw_dev: sqrt((S1 + S2) / (n1 + n2 - 1)), verified
        // against a real fio 3.33 run with per-IO bw logs.
        let a = stat(&[10, 20, 30]);
        let b = stat(&[100, 300]);
        let mut d = LatStat::default();
        sum_stat(&mut d, &a, true);
        sum_stat(&mut d, &b, true);
        assert_eq!((d.min, d.max, d.n), (110, 330, 5));
        assert_eq!(d.mean, 20.0 + 200.0);
        assert_eq!(d.m2, a.m2 + b.m2);
    }

    #[test]
    fn pooled_sum_is_exact_variance() {
        let a = stat(&[10, 20, 30]);
        let b = stat(&[100, 300]);
        let all = stat(&[10, 20, 30, 100, 300]);
        let mut d = LatStat::default();
        sum_stat(&mut d, &a, false);
        sum_stat(&mut d, &b, false);
        assert_eq!((d.min, d.max, d.n), (10, 300, 5));
        assert!((d.mean - all.mean).abs() < 1e-9);
        assert!((d.m2 - all.m2).abs() < 1e-6);
    }

    #[test]
    fn dist_floors() {
        assert_eq!(calc_dist(&[1, 9999, 0], 10000), vec![0.1, 99.99, 0.0]);
        assert_eq!(calc_lat_dist(&[1, 0], 100_000), vec![0.01, 0.0]);
        assert_eq!(calc_dist(&[3], 0), vec![0.0]);
    }

    #[test]
    fn percent_of_agg_truncates_mean() {
        // 26990 KiB/s of a 29343072 B/s group: per=94.19% (fio output)
        assert_eq!(cfmt::fixed(agg_percent(29343072, 26990.7), 2), "94.19");
        assert_eq!(agg_percent(1000, 5.0), 100.0);
        assert_eq!(agg_percent(2048, 5.0), 100.0);
    }

    #[test]
    fn precision_from_list() {
        assert_eq!(precision(&blkqos_core::hist::DEFAULT_PERCENTILES), 2);
        assert_eq!(precision(&[50.0, 99.5, 10.0]), 1);
        assert_eq!(precision(&[50.0, 90.0]), 0);
        assert_eq!(plist(&[5.0, 0.0, 7.0]), vec![5.0]);
    }
}
