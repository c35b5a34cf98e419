//! What a real run's reports take from the host rather than from blkqos's
//! own accounting: the CPU the run used (getrusage) and the kernel's
//! statistics of the disk under the target (`/sys/block/DEV/stat`).
//!
//! CPU: fio charges each job what its own process or thread used
//! (`update_rusage_stat`: `getrusage(RUSAGE_THREAD)` deltas from the
//! job's start to its end). blkqos runs every job in one thread, so it
//! measures the whole process over the driver run (`RUSAGE_SELF`: the
//! driver thread, the thread pool's workers, io_uring's io-wq workers)
//! and splits each counter between the jobs in proportion to the IOs and
//! syncs each completed (largest remainder: the parts add up to the
//! process's total; all jobs alike if none completed any). A job's
//! `usr_cpu` is then its share of user time over its own runtime, as fio
//! divides `usr_time` by `total_run_time`. The ramp time is included,
//! where fio's `reset_all_stats` starts over after it.

use blkqos_driver::JobResult;
use blkqos_engine::diskutil::DiskDelta;
use blkqos_engine::usage::{apportion, ProcessUsage};
use blkqos_fio::report::{DiskAgg, DiskUtil};
use blkqos_workload::stats::CpuUsage;

/// Charge `used` (the process over the run) to `jobs`, as described above.
pub fn charge_cpu(jobs: &mut [JobResult], used: &ProcessUsage) {
    let weights: Vec<u64> = jobs
        .iter()
        .map(|j| j.stats.dirs.values().map(|d| d.total_ios).sum::<u64>() + j.stats.sync_ios)
        .collect();
    let split = |total: u64| apportion(total, &weights);
    let (usr, sys) = (split(used.user_us / 1000), split(used.sys_us / 1000));
    let (ctx, majf, minf) = (split(used.ctx), split(used.majflt), split(used.minflt));
    for (i, j) in jobs.iter_mut().enumerate() {
        j.stats.cpu = CpuUsage {
            usr_ms: usr[i],
            sys_ms: sys[i],
            ctx: ctx[i],
            majf: majf[i],
            minf: minf[i],
        };
    }
}

/// The kernel's disk statistics as fio's `disk_util` entries, in fio's
/// order (a stacked device, then its components); a stacked device gets
/// its components' `aggr_*` (`aggregate_slaves_stats`).
pub fn kernel_disk_util(deltas: &[DiskDelta]) -> Vec<DiskUtil> {
    deltas
        .iter()
        .map(|d| DiskUtil {
            name: d.name.clone(),
            read_ios: d.stat.ios[0],
            write_ios: d.stat.ios[1],
            read_merges: d.stat.merges[0],
            write_merges: d.stat.merges[1],
            read_ticks: d.stat.ticks[0],
            write_ticks: d.stat.ticks[1],
            in_queue: d.stat.time_in_queue,
            util: d.util(),
            agg: aggregate(deltas, &d.slaves),
        })
        .collect()
}

/// `aggregate_slaves_stats`: the components' counters summed and divided
/// by their number, and the busiest one's util (capped at 100).
fn aggregate(deltas: &[DiskDelta], slaves: &[usize]) -> Option<DiskAgg> {
    let parts: Vec<&DiskDelta> = slaves.iter().filter_map(|&i| deltas.get(i)).collect();
    let n = parts.len() as u64;
    if n == 0 {
        return None;
    }
    let sum = |f: &dyn Fn(&DiskDelta) -> u64| parts.iter().map(|d| f(d)).sum::<u64>() / n;
    let util = parts.iter().map(|d| d.util()).fold(0.0, f64::max);
    Some(DiskAgg {
        read_ios: sum(&|d| d.stat.ios[0]),
        write_ios: sum(&|d| d.stat.ios[1]),
        read_merges: sum(&|d| d.stat.merges[0]),
        write_merges: sum(&|d| d.stat.merges[1]),
        read_ticks: sum(&|d| d.stat.ticks[0]),
        write_ticks: sum(&|d| d.stat.ticks[1]),
        in_queue: sum(&|d| d.stat.time_in_queue),
        util: util.min(100.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_engine::diskutil::DiskStat;

    fn delta(name: &str, ios: u64, io_ticks: u64, slaves: Vec<usize>) -> DiskDelta {
        DiskDelta {
            name: name.into(),
            stat: DiskStat {
                ios: [ios, 1],
                io_ticks,
                time_in_queue: ios * 2,
                ..DiskStat::default()
            },
            msec: 1000,
            slaves,
        }
    }

    #[test]
    fn a_stacked_device_aggregates_its_components() {
        let list = [
            delta("dm-0", 100, 500, vec![1, 2]),
            delta("loop0", 60, 400, vec![]),
            delta("loop1", 41, 900, vec![]),
        ];
        let du = kernel_disk_util(&list);
        assert_eq!(du.len(), 3);
        assert_eq!(du[0].name, "dm-0");
        assert!((du[0].util - 50.0).abs() < 1e-9);
        let a = du[0].agg.as_ref().expect("components");
        assert_eq!(a.read_ios, 50); // (60 + 41) / 2, truncated as fio's
        assert_eq!(a.in_queue, 101);
        assert!((a.util - 90.0).abs() < 1e-9);
        assert!(du[1].agg.is_none() && du[2].agg.is_none());
    }
}
