//! fio 3.33's limit on the number of jobs in one invocation.
//!
//! fio keeps its jobs (every `numjobs` clone is a job) in shared memory
//! segments of `JOBS_PER_SEG` (8) slots, at most `REAL_MAX_SEG` =
//! `REAL_MAX_JOBS / JOBS_PER_SEG` = 4096 / 8 of them (`fio.h`).
//! `add_thread_segment` (`init.c`) refuses the segment that would make
//! `nr_segments + 1 >= REAL_MAX_SEG`, so 511 segments hold at most 4088
//! jobs: `get_new_job` then fails with "error: maximum number of jobs
//! reached." and fio exits with status 1. (Checked with fio 3.33:
//! `--numjobs=4088` runs, `--numjobs=4089` fails, and so do job files whose
//! jobs' `numjobs` add up to 4089.)
//!
//! blkqos refuses the same inputs while parsing, before anything is
//! allocated per clone.

/// The most jobs (clones included) one fio 3.33 invocation runs.
pub const MAX_JOBS: u32 = 4088;

/// What exceeding [`MAX_JOBS`] is called (fio's own message).
const REACHED: &str = "maximum number of jobs reached";

/// A `numjobs=` value: at least 1 (0 would run nothing, fio has no minimum)
/// and at most [`MAX_JOBS`].
pub(crate) fn numjobs(n: u64) -> Result<u32, String> {
    match u32::try_from(n) {
        Ok(0) => Err("min value out of range: 0 (1 min)".into()),
        Ok(v) if v <= MAX_JOBS => Ok(v),
        _ => Err(format!(
            "{REACHED}: fio 3.33 runs at most {MAX_JOBS} jobs (numjobs clones included)"
        )),
    }
}

/// The clones of one more job (`numjobs`) added to the `so_far` of the
/// invocation: the new total, or why fio would refuse it.
pub(crate) fn add_clones(so_far: u32, numjobs: u32) -> Result<u32, String> {
    match so_far.checked_add(numjobs.max(1)) {
        Some(total) if total <= MAX_JOBS => Ok(total),
        _ => Err(format!(
            "{REACHED}: this job brings the invocation to {} jobs (numjobs clones included); fio 3.33 runs at most {MAX_JOBS}",
            u64::from(so_far) + u64::from(numjobs.max(1))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numjobs_bounds() {
        assert_eq!(numjobs(1), Ok(1));
        assert_eq!(numjobs(4088), Ok(4088));
        assert!(numjobs(0).unwrap_err().contains("min value"));
        for n in [4089, 100_000_000, u64::from(u32::MAX) + 1, u64::MAX] {
            let e = numjobs(n).unwrap_err();
            assert!(
                e.contains("maximum number of jobs") && e.contains("4088"),
                "{e}"
            );
        }
    }

    #[test]
    fn clone_total() {
        assert_eq!(add_clones(4000, 88), Ok(4088));
        let e = add_clones(4000, 89).unwrap_err();
        assert!(e.contains("4089 jobs") && e.contains("4088"), "{e}");
        assert!(add_clones(u32::MAX, 2).is_err());
    }

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn numjobs_beyond_the_limit_names_file_line_option_and_value() {
        let text = "[global]\nsize=4m\n[a]\nrw=read\nnumjobs=100000000\n";
        let e = crate::parse::parse_job_file("big.fio", text, &none).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("big.fio", 5));
        assert_eq!(e.option.as_deref(), Some("numjobs"));
        assert_eq!(e.value.as_deref(), Some("100000000"));
        assert!(e.message.contains("maximum number of jobs"), "{e}");
        let args: Vec<String> = ["--name=x", "--size=4m", "--numjobs=4089"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = crate::parse::parse_fio_args(&args, &[], &none).unwrap_err();
        assert_eq!(e.file, crate::parse::COMMAND_LINE);
        assert_eq!(e.value.as_deref(), Some("4089"));
    }

    #[test]
    fn the_jobs_of_an_invocation_add_up() {
        let ok = "[global]\nsize=4m\n[a]\nnumjobs=4000\n[b]\nnumjobs=88\n";
        let set = crate::parse::parse_job_file("ok.fio", ok, &none).unwrap();
        assert_eq!(set.jobs.iter().map(|j| j.numjobs).sum::<u32>(), MAX_JOBS);
        let over = "[global]\nsize=4m\n[a]\nnumjobs=4000\n[b]\nnumjobs=89\n";
        let e = crate::parse::parse_job_file("over.fio", over, &none).unwrap_err();
        // the job that crosses the limit, at its section header
        assert_eq!((e.line, e.value.as_deref()), (5, Some("89")));
        assert!(
            e.message.contains("job `b`") && e.message.contains("4089"),
            "{e}"
        );
    }
}
