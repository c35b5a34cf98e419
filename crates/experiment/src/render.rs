//! fio's reports of a run view (the run's results at its end, or while it
//! goes for `--status-interval`), with the time stamps fio prints.

use crate::invocation::Invocation;
use blkqos_fio::parse::OutputFormat;
use blkqos_fio::report::{write_json, write_normal, DiskUtil, ReportInput, ReportJob};

/// `SOURCE_DATE_EPOCH`, if set to a number of seconds.
pub(crate) fn source_date_epoch() -> Option<u64> {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
}

/// The local zone's offset from UTC at `secs`, in seconds east, which
/// fio's `ctime_r` applies through glibc's `localtime_r`: the zone `TZ`
/// names (an IANA name, a path or a POSIX rule), else /etc/localtime,
/// else UTC. With `SOURCE_DATE_EPOCH` set, 0: a pinned run prints UTC
/// whatever the machine's zone, so its bytes do not depend on it.
pub(crate) fn utc_offset_s(secs: u64) -> i32 {
    if source_date_epoch().is_some() {
        return 0;
    }
    let Ok(at) = jiff::Timestamp::from_second(i64::try_from(secs).unwrap_or(i64::MAX)) else {
        return 0;
    };
    jiff::tz::TimeZone::system().to_offset(at).seconds()
}

/// A report's time at run time `at`: `t0_ms` plus the run time, or on a
/// `real` run the wall clock now (unless `SOURCE_DATE_EPOCH` pins it).
pub(crate) fn report_time_at(t0_ms: u64, at: blkqos_core::Instant, real: bool) -> u64 {
    let virtual_end = t0_ms + at.as_ns() / 1_000_000;
    if !real || source_date_epoch().is_some() {
        return virtual_end;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(virtual_end, |d| d.as_millis() as u64)
}

/// What a report is made of: a run's results, at its end (`Ran`) or
/// while it goes (`--status-interval`, [`crate::status`]).
pub(crate) struct RunView<'a> {
    pub jobs: &'a [blkqos_driver::JobResult],
    /// For each job result, the index of its invocation.
    pub invocation_of: &'a [usize],
    pub disk: &'a blkqos_driver::DiskStats,
    /// Run time the disk's accounting covers.
    pub at: blkqos_core::Instant,
    /// The kernel's disks under a real target (`Ran::kernel_disks`).
    pub kernel_disks: Option<&'a [DiskUtil]>,
    pub dev_name: &'a str,
    pub target: &'a str,
}

/// What the reports list as disks: on the simulator, blkqos's accounting
/// under the device's name; on a real target, the kernel's numbers of the
/// disks under it (as fio reads them), and blkqos's own accounting apart,
/// named by the target's path.
fn disk_utils(ran: &RunView) -> (Vec<DiskUtil>, Vec<DiskUtil>) {
    let own = disk_util(ran);
    // the memory-mapped engines issue no requests (fio: FIO_NODISKUTIL,
    // FIO_DISKLESSIO): no disk section at all
    let no_requests = !ran.jobs.is_empty() && ran.jobs.iter().all(|j| j.spec.ioengine.is_mapped());
    match ran.kernel_disks {
        Some(kernel) if no_requests => (kernel.to_vec(), Vec::new()),
        None => (vec![own], Vec::new()),
        Some(kernel) => (
            kernel.to_vec(),
            vec![DiskUtil {
                name: ran.target.to_string(),
                ..own
            }],
        ),
    }
}

/// blkqos's own accounting of the requests it issued: diskstats-like
/// counters and busy time under the run's `--iostats` rule.
fn disk_util(ran: &RunView) -> DiskUtil {
    let d = ran.disk;
    let elapsed_ns = ran.at.as_ns().max(1);
    DiskUtil {
        name: ran.dev_name.to_string(),
        read_ios: d.ios[0],
        write_ios: d.ios[1],
        read_merges: d.merges[0],
        write_merges: d.merges[1],
        read_ticks: d.nsecs[0] / 1_000_000,
        write_ticks: d.nsecs[1] / 1_000_000,
        in_queue: (d.nsecs.iter().sum::<u64>()) / 1_000_000,
        util: d.busy_ns as f64 * 100.0 / elapsed_ns as f64,
        agg: None,
    }
}

/// Each invocation's report of `ran`, time-stamped `ts` (ms since the
/// Unix epoch): the final reports and `--status-interval`'s alike.
pub(crate) fn render_view(invocations: &[Invocation], ran: &RunView, ts: u64) -> Vec<String> {
    let utc_offset_s = utc_offset_s(ts / 1000);
    let (disk_util, blkqos_disk_util) = disk_utils(ran);
    let mut outs = Vec::with_capacity(invocations.len());
    for (i, inv) in invocations.iter().enumerate() {
        let jobs: Vec<ReportJob> = ran
            .jobs
            .iter()
            .zip(ran.invocation_of)
            .enumerate()
            .filter(|(_, (_, &inv_i))| inv_i == i)
            .map(|(k, (r, _))| ReportJob {
                spec: &r.spec,
                stats: &r.stats,
                error: r.error,
                pid: 1000 + k as u32,
            })
            .collect();
        let input = ReportInput {
            jobs,
            global_options: &inv.jobs.global_options,
            timestamp_ms: ts,
            utc_offset_s,
            disk_util: disk_util.clone(),
            blkqos_disk_util: blkqos_disk_util.clone(),
            fio_version: "fio-3.33",
        };
        let mut out = String::new();
        for f in &inv.formats {
            match f {
                OutputFormat::Normal => write_normal(&input, &mut out),
                OutputFormat::Json => write_json(&input, false, &mut out),
                OutputFormat::JsonPlus => write_json(&input, true, &mut out),
                OutputFormat::Terse => blkqos_fio::report::write_terse(&input, &mut out),
            }
        }
        outs.push(out);
    }
    outs
}
