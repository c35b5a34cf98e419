//! Per-job statistics, kept the way fio keeps them (`struct thread_stat`), so
//! the report writers can print fio's numbers exactly.
//!
//! Everything is fixed-size: recording an IO never allocates.

use crate::ddir::{Ddir, PerDir};
use blkqos_core::hist::{LatHist, LatStat};

/// fio's `latency_ns/us/ms` bucket upper bounds within each unit.
pub const LAT_BUCKET_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

/// `LAT_BUCKET_OF[v]`: the first bucket whose bound exceeds `v` (< 1000).
const LAT_BUCKET_OF: [u8; 1000] = {
    let mut table = [0u8; 1000];
    let mut v = 0;
    while v < 1000 {
        let mut i = 0;
        while i < 9 && v as u64 >= LAT_BUCKET_BOUNDS[i] {
            i += 1;
        }
        table[v] = i as u8;
        v += 1;
    }
    table
};

/// Counts for fio's `latency_ns` (10), `latency_us` (10), `latency_ms` (12:
/// ..., 1000, 2000, >=2000) maps, filled from clat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatBuckets {
    pub ns: [u64; 10],
    pub us: [u64; 10],
    pub ms: [u64; 12],
}

impl LatBuckets {
    /// `io_u_mark_latency`: which bucket a clat value (ns) falls in.
    pub fn mark(&mut self, clat_ns: u64) {
        /// Bucket of a value below 1000 (one table load).
        fn idx(v: u64) -> usize {
            usize::from(LAT_BUCKET_OF[v as usize])
        }
        if clat_ns < 1000 {
            self.ns[idx(clat_ns)] += 1;
        } else if clat_ns < 1_000_000 {
            self.us[idx(clat_ns / 1000)] += 1;
        } else {
            let ms = clat_ns / 1_000_000;
            let i = if ms < 1000 {
                idx(ms)
            } else if ms < 2000 {
                10
            } else {
                11
            };
            self.ms[i] += 1;
        }
    }
    pub fn merge(&mut self, o: &LatBuckets) {
        for (a, b) in self.ns.iter_mut().zip(o.ns) {
            *a += b;
        }
        for (a, b) in self.us.iter_mut().zip(o.us) {
            *a += b;
        }
        for (a, b) in self.ms.iter_mut().zip(o.ms) {
            *a += b;
        }
    }
}

/// Which latency histograms to keep (fio's `*_percentiles` options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistMask {
    pub slat: bool,
    pub clat: bool,
    pub lat: bool,
}

impl HistMask {
    pub const ALL: HistMask = HistMask {
        slat: true,
        clat: true,
        lat: true,
    };
}

/// Statistics of one direction (fio: one `ddir` of a `thread_stat`).
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// ms, rounded up as fio's `update_runtime` does.
    pub runtime_ms: u64,
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    pub slat_hist: LatHist,
    pub clat_hist: LatHist,
    pub lat_hist: LatHist,
    /// bw samples in KiB/s (fio `bw_stat`).
    pub bw: LatStat,
    /// iops samples (fio `iops_stat`).
    pub iops: LatStat,
    /// Completion latencies by IO priority (fio `clat_prio[ddir]`), kept
    /// when the job gives some IOs a priority of their own (`cmdprio*`);
    /// entry 0 is the job's own priority. With `lat_percentiles` they hold
    /// total latencies instead, as in fio.
    pub prios: Vec<PrioStat>,
}

/// The latencies of one IO priority (fio `struct clat_prio_stat`).
#[derive(Clone, Debug, Default)]
pub struct PrioStat {
    /// `class << 13 | level`.
    pub ioprio: u16,
    pub stat: LatStat,
    pub hist: LatHist,
}

impl PrioStat {
    pub fn new(ioprio: u16) -> Self {
        PrioStat {
            ioprio,
            ..PrioStat::default()
        }
    }
}

/// fio `get_nr_prios_with_samples`: per-priority latencies are shown
/// only when two or more priorities completed IOs.
pub fn prios_with_samples(prios: &[PrioStat]) -> usize {
    prios.iter().filter(|p| p.stat.n > 0).count()
}

/// Add `from`'s priorities to `into`, pooling the ones with the same
/// priority value and appending the others (fio `sum_thread_stats`'s
/// `sum_clat_prio_stats`).
pub fn merge_prios(into: &mut Vec<PrioStat>, from: &[PrioStat]) {
    for p in from {
        match into.iter_mut().find(|q| q.ioprio == p.ioprio) {
            Some(q) => {
                q.stat.merge(&p.stat);
                q.hist.merge(&p.hist);
            }
            None => into.push(p.clone()),
        }
    }
}

impl DirStats {
    /// Record one completed IO. Latencies in ns. Histograms are kept only
    /// for the latency kinds whose percentiles are reported (`hists`).
    #[inline]
    pub fn record(
        &mut self,
        bytes: u64,
        slat_ns: Option<u64>,
        clat_ns: u64,
        lat_ns: u64,
        hists: HistMask,
    ) {
        self.record_some(bytes, [slat_ns, Some(clat_ns), Some(lat_ns)], hists);
    }

    /// [`DirStats::record`] of the latencies taken: `[slat, clat, lat]`,
    /// None for one not taken (no slat for a sync engine; fio's
    /// `disable_slat`, `disable_clat`, `disable_lat`).
    #[inline(always)]
    pub fn record_some(&mut self, bytes: u64, lats_ns: [Option<u64>; 3], hists: HistMask) {
        self.io_bytes += bytes;
        self.total_ios += 1;
        let [slat_ns, clat_ns, lat_ns] = lats_ns;
        if let Some(s) = slat_ns {
            self.slat.add(s);
            if hists.slat {
                self.slat_hist.record(s);
            }
        }
        if let Some(c) = clat_ns {
            self.clat.add(c);
            if hists.clat {
                self.clat_hist.record(c);
            }
        }
        if let Some(l) = lat_ns {
            self.lat.add(l);
            if hists.lat {
                self.lat_hist.record(l);
            }
        }
    }

    /// Sum another direction or job into this one (fio `sum_thread_stats`):
    /// counts add, runtime is the max, latency stats pool, histograms add,
    /// bw/iops sample stats add field by field.
    pub fn merge(&mut self, o: &DirStats) {
        self.io_bytes += o.io_bytes;
        self.total_ios += o.total_ios;
        self.short_ios += o.short_ios;
        self.drop_ios += o.drop_ios;
        self.runtime_ms = self.runtime_ms.max(o.runtime_ms);
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        self.slat_hist.merge(&o.slat_hist);
        self.clat_hist.merge(&o.clat_hist);
        self.lat_hist.merge(&o.lat_hist);
        sum_fieldwise(&mut self.bw, &o.bw);
        sum_fieldwise(&mut self.iops, &o.iops);
        merge_prios(&mut self.prios, &o.prios);
    }

    /// Record one IO's latency under its priority's entry (fio
    /// `add_clat_sample` / `add_lat_sample` with `clat_prio_index`).
    #[inline]
    pub fn record_prio(&mut self, index: u8, ns: u64, hist: bool) {
        if let Some(p) = self.prios.get_mut(usize::from(index)) {
            p.stat.add(ns);
            if hist {
                p.hist.record(ns);
            }
        }
    }
}

/// fio sums bw/iops sample stats field by field when it groups jobs or
/// builds `mixed` (fio's stat.c `sum_stat` with `pure_sum`): min+min,
/// max+max, mean+mean, N+N, and the sums of squared deviations add.
fn sum_fieldwise(a: &mut LatStat, b: &LatStat) {
    if b.n == 0 {
        return;
    }
    if a.n == 0 {
        *a = *b;
        return;
    }
    a.min += b.min;
    a.max += b.max;
    a.m2 += b.m2;
    a.mean += b.mean;
    a.n += b.n;
}

/// CPU time and scheduling counts charged to a job (fio's `thread_stat`
/// `usr_time`, `sys_time` in ms, `ctx`, `majf`, `minf`, which
/// `update_rusage_stat` takes from getrusage). The real engine fills them
/// from the process's usage over the run; the simulator leaves them 0 (its
/// run costs no modelled CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuUsage {
    pub usr_ms: u64,
    pub sys_ms: u64,
    /// Voluntary + involuntary context switches.
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
}

impl CpuUsage {
    /// Sum another job's (fio's `sum_thread_stats`).
    pub fn add(&mut self, o: &CpuUsage) {
        self.usr_ms += o.usr_ms;
        self.sys_ms += o.sys_ms;
        self.ctx += o.ctx;
        self.majf += o.majf;
        self.minf += o.minf;
    }
}

/// fio's `iodepth_level` buckets: 1, 2, 4, 8, 16, 32, >=64.
pub const DEPTH_LEVELS: usize = 7;
/// fio's `iodepth_submit`/`iodepth_complete` buckets: 0, 4, 8, 16, 32, 64, >=64.
pub const BATCH_LEVELS: usize = 7;

/// Statistics of one job clone (or a merged reporting group).
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// read, write, trim.
    pub dirs: PerDir<DirStats>,
    /// Issued IO counts per direction (fio `io_issues`), incl. in-flight at stop.
    pub issued: PerDir<u64>,
    /// Queue depth at submission (`io_u_map`) counts.
    pub depth_level: [u64; DEPTH_LEVELS],
    pub submit_batches: [u64; BATCH_LEVELS],
    pub complete_batches: [u64; BATCH_LEVELS],
    pub lat_buckets: LatBuckets,
    pub total_err: u64,
    /// First error as a positive errno (0 if none).
    pub first_error: i32,
    /// `job_runtime`: ms since the job's epoch, truncated.
    pub job_runtime_ms: u64,
    /// Seconds since the run started when this job ended (`elapsed`).
    pub elapsed_s: u64,
    /// fio's JSON `eta` (s): 0 in the final report; a status report's
    /// estimate of the time left (fio `calc_thread_status`).
    pub eta_s: u64,
    /// Number of jobs merged into this entry.
    pub members: u32,
    /// Number of fsync/fdatasync calls and their latency (fio `sync` object).
    pub sync_ios: u64,
    pub sync_lat: LatStat,
    pub sync_hist: LatHist,
    /// CPU usage (real engine only).
    pub cpu: CpuUsage,
    /// The depth the job ended at (fio `latency_qd`: the iodepth, or the
    /// depth `latency_target`'s probe settled on).
    pub latency_depth: u32,
    /// `steadystate`: the job's detector, with its samples when it keeps
    /// them (fio's `ss_*` fields of `thread_stat`).
    pub steadystate: Option<crate::steadystate::SteadyState>,
    /// Zones reset (`zonemode=zbd`: fio `nr_zone_resets`).
    pub nr_zone_resets: u64,
}

impl JobStats {
    /// fio's depth buckets 1, 2, 4, 8, 16, 32, >=64: the power of two
    /// at or below `depth` (0 counts as 1), capped at the last bucket.
    #[inline]
    pub fn depth_index(depth: u32) -> usize {
        ((31 - (depth | 1).leading_zeros()) as usize).min(6)
    }
    pub fn batch_index(n: u32) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }
    pub fn merge(&mut self, o: &JobStats) {
        for d in Ddir::ALL {
            self.dirs[d].merge(&o.dirs[d]);
            self.issued[d] += o.issued[d];
        }
        for i in 0..DEPTH_LEVELS {
            self.depth_level[i] += o.depth_level[i];
            self.submit_batches[i] += o.submit_batches[i];
            self.complete_batches[i] += o.complete_batches[i];
        }
        self.lat_buckets.merge(&o.lat_buckets);
        self.total_err += o.total_err;
        if o.first_error != 0 {
            self.first_error = o.first_error;
        }
        // fio sums job runtimes of grouped clones
        self.job_runtime_ms += o.job_runtime_ms;
        self.elapsed_s = self.elapsed_s.max(o.elapsed_s);
        self.members += o.members.max(1);
        self.sync_ios += o.sync_ios;
        self.sync_lat.merge(&o.sync_lat);
        self.sync_hist.merge(&o.sync_hist);
        self.cpu.add(&o.cpu);
        // fio __show_run_stats: the last job's
        self.latency_depth = o.latency_depth;
        self.nr_zone_resets += o.nr_zone_resets;
    }
    /// The `mixed` direction: all directions summed as fio does for
    /// `unified_rw_reporting=mixed`.
    pub fn mixed(&self) -> DirStats {
        let mut m = self.dirs.read.clone();
        m.merge(&self.dirs.write);
        m.merge(&self.dirs.trim);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_table_matches_the_bounds() {
        for v in 0..1000u64 {
            let want = LAT_BUCKET_BOUNDS.iter().position(|&b| v < b).unwrap_or(9);
            assert_eq!(usize::from(LAT_BUCKET_OF[v as usize]), want, "{v}");
        }
    }

    /// fio's depth buckets: 1, 2–3, 4–7, 8–15, 16–31, 32–63, 64+ (0 as 1).
    #[test]
    fn depth_buckets() {
        let by_range = |d: u32| match d {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        for d in (0..5000).chain([u32::MAX - 1, u32::MAX]) {
            assert_eq!(JobStats::depth_index(d), by_range(d), "{d}");
        }
    }

    #[test]
    fn latency_buckets() {
        let mut b = LatBuckets::default();
        b.mark(999); // ns "1000"
        b.mark(1000); // us "2"
        b.mark(150_000); // us "250"
        b.mark(2_500_000); // ms "4"
        b.mark(1_500_000_000); // ms "2000"
        b.mark(2_000_000_000); // ms ">=2000"
        assert_eq!(b.ns[9], 1);
        assert_eq!(b.us[0], 1);
        assert_eq!(b.us[6], 1);
        assert_eq!(b.ms[1], 1);
        assert_eq!(b.ms[10], 1);
        assert_eq!(b.ms[11], 1);
    }

    #[test]
    fn fieldwise_sum_like_fio_mixed() {
        let mut r = DirStats::default();
        let mut w = DirStats::default();
        for v in [400, 400, 400, 400, 400] {
            r.bw.add(v);
            w.bw.add(v);
        }
        r.merge(&w);
        assert_eq!(r.bw.min, 800);
        assert_eq!(r.bw.n, 10);
        assert!((r.bw.mean - 800.0).abs() < 1e-9);
    }

    #[test]
    fn priorities_pool_by_value() {
        let mut a = DirStats {
            prios: vec![PrioStat::new(0), PrioStat::new(0x2000)],
            ..DirStats::default()
        };
        a.record_prio(1, 100, true);
        a.record_prio(0, 300, true);
        a.record_prio(9, 300, true); // no such entry: ignored
        let mut b = DirStats {
            prios: vec![PrioStat::new(0x6000), PrioStat::new(0x2000)],
            ..DirStats::default()
        };
        b.record_prio(1, 200, true);
        b.record_prio(0, 50, true);
        a.merge(&b);
        let got: Vec<(u16, u64)> = a.prios.iter().map(|p| (p.ioprio, p.stat.n)).collect();
        assert_eq!(got, vec![(0, 1), (0x2000, 2), (0x6000, 1)]);
        assert_eq!(prios_with_samples(&a.prios), 3);
        assert_eq!(a.prios[1].hist.count(), 2);
    }
}
