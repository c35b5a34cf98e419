//! The process's CPU usage over a real run (getrusage), for the `cpu`
//! line of the reports (fio's `usr_cpu`, `sys_cpu`, `ctx`, `majf`,
//! `minf`).
//!
//! fio takes them per job from `getrusage(RUSAGE_THREAD)` (a job is a
//! process or a thread of its own: `update_rusage_stat`). blkqos runs every
//! job in one thread of one process, so it measures the process
//! (`RUSAGE_SELF`: the driver thread, the thread pool's workers and
//! io_uring's io-wq workers) from the start of the run to its end, and
//! [`apportion`]s it between the jobs.

/// CPU time and counts of the process (from `struct rusage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessUsage {
    /// User CPU time in µs (`ru_utime`; the basis of fio's `usr_cpu`).
    pub user_us: u64,
    /// System CPU time in µs (`ru_stime`; the basis of fio's `sys_cpu`).
    pub sys_us: u64,
    /// Voluntary + involuntary context switches (`ru_nvcsw + ru_nivcsw`).
    pub ctx: u64,
    /// Minor page faults (`ru_minflt`; fio's `minf`).
    pub minflt: u64,
    /// Major page faults (`ru_majflt`; fio's `majf`).
    pub majflt: u64,
}

fn timeval_us(tv: &libc::timeval) -> u64 {
    (tv.tv_sec.max(0) as u64) * 1_000_000 + tv.tv_usec.max(0) as u64
}

impl ProcessUsage {
    /// The process's usage so far; None if getrusage fails.
    pub fn now() -> Option<ProcessUsage> {
        Self::from_rusage(crate::sys::rusage_self().ok()?)
    }

    /// The calling thread's usage so far (`RUSAGE_THREAD`, what fio
    /// charges a job that is a thread); None if getrusage fails.
    pub fn thread_now() -> Option<ProcessUsage> {
        Self::from_rusage(crate::sys::rusage_thread().ok()?)
    }

    fn from_rusage(ru: libc::rusage) -> Option<ProcessUsage> {
        let n = |v: libc::c_long| v.max(0) as u64;
        Some(ProcessUsage {
            user_us: timeval_us(&ru.ru_utime),
            sys_us: timeval_us(&ru.ru_stime),
            ctx: n(ru.ru_nvcsw) + n(ru.ru_nivcsw),
            minflt: n(ru.ru_minflt),
            majflt: n(ru.ru_majflt),
        })
    }

    /// What was used from `earlier` to `self`.
    pub fn since(&self, earlier: &ProcessUsage) -> ProcessUsage {
        ProcessUsage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            ctx: self.ctx.saturating_sub(earlier.ctx),
            minflt: self.minflt.saturating_sub(earlier.minflt),
            majflt: self.majflt.saturating_sub(earlier.majflt),
        }
    }
}

/// Split `total` in proportion to `weights` (largest remainder: the parts
/// sum to `total`, ties to the earlier part). All-zero weights split it
/// evenly.
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let even = vec![1u64; weights.len()];
    let w = if weights.iter().all(|&x| x == 0) {
        &even[..]
    } else {
        weights
    };
    let sum: u128 = w.iter().map(|&x| u128::from(x)).sum();
    let exact: Vec<(u64, u128)> = w
        .iter()
        .map(|&x| {
            let num = u128::from(total) * u128::from(x);
            ((num / sum) as u64, num % sum)
        })
        .collect();
    let mut parts: Vec<u64> = exact.iter().map(|e| e.0).collect();
    let left = total - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..w.len()).collect();
    // larger remainder first; the sort is stable, so ties keep job order
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1));
    for &i in order.iter().take(left as usize) {
        parts[i] += 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_sums_to_the_total() {
        assert_eq!(apportion(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(apportion(7, &[0, 0]), vec![4, 3]);
        assert_eq!(apportion(100, &[3, 1]), vec![75, 25]);
        assert_eq!(apportion(5, &[0, 9]), vec![0, 5]);
        assert_eq!(apportion(0, &[2, 3]), vec![0, 0]);
        assert!(apportion(3, &[]).is_empty());
        let p = apportion(u64::MAX, &[u64::MAX, 1]);
        assert_eq!(p.iter().fold(0u64, |a, &b| a.wrapping_add(b)), u64::MAX);
    }

    #[test]
    fn the_process_has_used_some_cpu() {
        let a = ProcessUsage::now().expect("getrusage");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = ProcessUsage::now().expect("getrusage");
        let d = b.since(&a);
        assert!(b.user_us + b.sys_us > 0);
        assert!(d.user_us <= b.user_us);
    }
}
