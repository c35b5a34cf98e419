//! How `blkqos run` ends: what it says on stderr about signals and IO
//! errors, and its exit status, decided after every report is written.
//!
//! * A signal stopped the run: 128 + the first signal (130 SIGINT, 143
//!   SIGTERM), as a shell reports a signal death. fio 3.33 exits 128 for
//!   either (`sig_int` sets `exit_value = 128`); blkqos keeps the signal
//!   number so scripts can tell them apart.
//! * Otherwise a job ended with an IO error (`JobResult::error`), or the
//!   write-back buffer could not put acknowledged pages on the target: 1,
//!   as fio exits non-zero when a job has `td->error` (`reap_threads`
//!   counts them; blkqos keeps 1 because 2 means bad input).
//! * Otherwise 0. Errors `ignore_error` / `continue_on_error` make
//!   non-fatal leave the job's error at 0 (fio's `td_non_fatal_error`):
//!   they are counted in the report's `total_err`, not here.

use crate::experiment::Ran;
use crate::failure::Failure;
use blkqos_driver::{JobResult, RunResult};
use blkqos_engine::signal::signal_name;
use blkqos_engine::StopOnSignal;
use blkqos_fio::report::cfmt::strerror;
use blkqos_workload::FailedOp;

/// `1 IO`, `3 IOs`.
fn count(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The stderr line for a job that ended with an IO error (fio's
/// `io_u_log_error` and `show_thread_status` lines in one), or None.
pub fn job_error_line(j: &JobResult, target: &str) -> Option<String> {
    job_error_line_at(j, j.failure, target)
}

/// [`job_error_line`] on a run of several files (`files`: each one's
/// name, start and length in the run's address space): the failed IO's
/// file and offset in it, as fio names them.
fn job_error_line_in(j: &JobResult, files: &[(String, u64, u64)], target: &str) -> Option<String> {
    let at = j.failure.and_then(|f| {
        files
            .iter()
            .find(|(_, s, l)| (*s..s + (*l).max(1)).contains(&f.offset))
            .map(|(n, s, _)| (f, n, *s))
    });
    match at {
        Some((mut f, name, start)) => {
            f.offset -= start;
            job_error_line_at(j, Some(f), name)
        }
        None => job_error_line(j, target),
    }
}

fn job_error_line_at(
    j: &JobResult,
    failure: Option<blkqos_workload::JobFailure>,
    target: &str,
) -> Option<String> {
    if j.error == 0 {
        return None;
    }
    let what = match failure {
        Some(f) if f.op == FailedOp::Sync => format!("sync of {target}"),
        Some(f) => format!(
            "{} offset={}, buflen={} on {target}",
            f.op.name(),
            f.offset,
            f.len
        ),
        None => format!("on {target}"),
    };
    let mode = j.spec.engine.sg_write_mode;
    let what =
        if j.spec.ioengine == blkqos_workload::IoEngine::Sg && mode.compares_data() && j.error == 5
        {
            // fio_sgio_ioctl_doio: CHECK CONDITION (SG_INFO_CHECK) becomes EIO
            format!(
                "{what} (sg_write_mode={}: the VERIFY's compare failed, sense key MISCOMPARE)",
                mode.fio_name()
            )
        } else {
            what
        };
    Some(format!(
        "job `{}` (clone {}): error {} ({}): {what}; {}",
        j.spec.name,
        j.clone,
        j.error,
        strerror(j.error),
        count(j.failed_ios, "failed IO")
    ))
}

/// What the run did after a signal, on stderr (before the reports).
/// `buffer`: the real engine's write-back buffer was on.
pub fn say_interrupted(signals: &StopOnSignal, r: &RunResult, buffer: bool) {
    let Some(first) = signals.signal() else {
        return;
    };
    let by = match signals.last_signal() {
        Some(last) if signals.count() > 1 => {
            format!("{}, then {}", signal_name(first), signal_name(last))
        }
        _ => signal_name(first),
    };
    if r.abandoned {
        log::info!(
            "blkqos: interrupted by {by}: stopped issuing, gave up the drain: waited for the IO at the device, dropped {} not yet there (held by controllers or queued){}",
            count(r.dropped_ios, "IO"),
            if buffer {
                " (their data stays in the write-back buffer)"
            } else {
                ""
            }
        );
    } else if r.interrupted {
        log::info!(
            "blkqos: interrupted by {by}: stopped issuing, drained the IO in flight{}; writing the partial report",
            if buffer {
                " and the write-back buffer under the limits"
            } else {
                ""
            }
        );
    } else {
        log::info!("blkqos: {by} after the run ended; writing the report");
    }
}

/// After every report is written: say which jobs failed, then the exit
/// status (see the module docs). Keeps the signal handler armed until the
/// process exits.
pub fn finish(ran: &Ran, signals: StopOnSignal) -> Result<(), Failure> {
    let jobs = &ran.result.jobs;
    let mut failed = 0;
    let lines = jobs
        .iter()
        .filter_map(|j| job_error_line_in(j, &ran.files, &ran.target));
    for line in lines {
        log::error!("blkqos: {line}");
        failed += 1;
    }
    let status = signals.exit_status();
    let first = signals.signal();
    signals.keep_armed();
    if let (Some(code), Some(sig)) = (status, first) {
        return Err(Failure {
            code,
            err: anyhow::anyhow!(
                "interrupted by {}: partial report written (exit status {code})",
                signal_name(sig)
            ),
        });
    }
    if failed > 0 {
        let n = jobs.len();
        return Err(Failure {
            code: 1,
            err: anyhow::anyhow!(
                "{failed} of {} ended with an IO error (exit status 1)",
                count(n as u64, "job")
            ),
        });
    }
    if ran.lost_pages > 0 {
        return Err(Failure {
            code: 1,
            err: anyhow::anyhow!(
                "{} acknowledged pages of the write-back buffer are not on the target (exit status 1)",
                ran.lost_pages
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::GroupId;
    use blkqos_workload::{JobFailure, JobSpec, JobStats};

    fn result(error: i32, failure: Option<JobFailure>, failed_ios: u64) -> JobResult {
        JobResult {
            spec: JobSpec::new("w"),
            clone: 1,
            group: GroupId::ROOT,
            stats: JobStats::default(),
            error,
            failure,
            failed_ios,
        }
    }

    #[test]
    fn a_failed_job_names_job_error_offset_and_count() {
        let f = JobFailure {
            errno: 28,
            op: FailedOp::Write,
            offset: 8 << 20,
            len: 65536,
        };
        assert_eq!(
            job_error_line(&result(28, Some(f), 1), "/mnt/f").as_deref(),
            Some("job `w` (clone 1): error 28 (No space left on device): write offset=8388608, buflen=65536 on /mnt/f; 1 failed IO")
        );
        let sync = JobFailure {
            op: FailedOp::Sync,
            errno: 5,
            ..f
        };
        assert_eq!(
            job_error_line(&result(5, Some(sync), 3), "/dev/loop0").as_deref(),
            Some(
                "job `w` (clone 1): error 5 (Input/output error): sync of /dev/loop0; 3 failed IOs"
            )
        );
        // ignored errors (ignore_error) leave the job's error at 0
        assert_eq!(job_error_line(&result(0, None, 192), "/dev/loop0"), None);
    }

    #[test]
    fn a_failure_on_one_of_several_files_names_that_file_and_its_offset() {
        let f = JobFailure {
            errno: 25,
            op: FailedOp::Trim,
            offset: (3 << 20) + 4096,
            len: 4096,
        };
        let files = [
            ("/s/a".to_string(), 0, 1 << 20),
            ("/s/b".to_string(), 3 << 20, 1 << 20),
        ];
        let line = job_error_line_in(&result(25, Some(f), 1), &files, "2 files").unwrap();
        assert!(
            line.contains("trim offset=4096, buflen=4096 on /s/b;"),
            "{line}"
        );
        // an offset in no file: the run's label and the offset as it is
        let lost = JobFailure {
            offset: 2 << 20,
            ..f
        };
        let line = job_error_line_in(&result(25, Some(lost), 1), &files, "2 files").unwrap();
        assert!(
            line.contains("offset=2097152, buflen=4096 on 2 files;"),
            "{line}"
        );
    }
}
