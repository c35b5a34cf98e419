//! Several files per job (fio `setup_files`): each file's size from
//! `filesize` (a range drawn per file) or `size` shared out, and the job's
//! IO size when both are given.

use anyhow::{bail, Result};
use blkqos_workload::rng::Stream;
use blkqos_workload::{JobSpec, SizeSpec};

/// The sizes of `n` files of clone `clone` of `spec` on a device of
/// `capacity` bytes: `filesize=LO-HI` draws each in the range (aligned
/// down to the smallest block size, as fio does), else `size` is divided
/// between them.
pub fn file_sizes(spec: &JobSpec, n: usize, clone: u32, capacity: u64) -> Result<Vec<u64>> {
    let min_bs = blkqos_workload::Ddir::ALL
        .map(|d| spec.min_bs(d))
        .into_iter()
        .min()
        .unwrap_or(4096)
        .max(1);
    if let Some((lo, hi)) = spec.files.filesize {
        let mut rng = Stream::new(spec.randseed, clone, 8);
        return Ok((0..n)
            .map(|_| {
                if hi <= lo {
                    lo
                } else {
                    let fs = lo + rng.below(hi - lo);
                    (fs - fs % min_bs).max(min_bs)
                }
            })
            .collect());
    }
    let total = match spec.size {
        Some(SizeSpec::Bytes(b)) => b,
        Some(SizeSpec::Percent(p)) => capacity / 100 * u64::from(p),
        None => bail!(
            "job `{}`: its {n} files need a size= or filesize= (a simulated file has no existing size)",
            spec.name
        ),
    };
    let each = total / n.max(1) as u64;
    if each < min_bs {
        bail!(
            "job `{}`: size={total} over {n} files leaves {each} bytes a file, less than the block size {min_bs}",
            spec.name
        );
    }
    Ok(vec![each; n])
}

/// With `filesize` and `size` both given, the job does `size` bytes of IO
/// over its files (fio: `io_size` defaults to `size`), at most what its
/// files hold when they all have one size: fio filesetup.c `setup_files`
/// cuts `size` to the files' total (`o->size > total_size`).
pub fn with_io_size(spec: &JobSpec) -> JobSpec {
    let mut s = spec.clone();
    if let (Some((lo, hi)), Some(SizeSpec::Bytes(b)), None) = (s.files.filesize, s.size, s.io_size)
    {
        let files = s
            .files
            .paths(s.filename.as_deref(), &s.name, 0)
            .len()
            .max(1) as u64;
        let total = if lo == hi {
            lo.saturating_mul(files)
        } else {
            u64::MAX
        };
        s.io_size = Some(b.min(total));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        let parsed = blkqos_fio::parse::parse_job_file("t.fio", text, &|_| None).expect("parses");
        parsed.jobs.into_iter().next().expect("a job")
    }

    #[test]
    fn size_beyond_the_files_is_cut_to_what_they_hold() {
        // fio 3.33 writes 4 MiB here (64 IOs of 64 KiB), and 8 MiB with two files
        let one = job("[a]\nnrfiles=1\nsize=16m\nfilesize=4m\nrw=write\nbs=64k\n");
        assert_eq!(with_io_size(&one).io_size, Some(4 << 20));
        let two = job("[a]\nnrfiles=2\nsize=16m\nfilesize=4m\nrw=write\nbs=64k\n");
        assert_eq!(with_io_size(&two).io_size, Some(8 << 20));
        let less = job("[a]\nnrfiles=1\nsize=1m\nfilesize=4m\nrw=write\nbs=64k\n");
        assert_eq!(with_io_size(&less).io_size, Some(1 << 20));
    }
}
