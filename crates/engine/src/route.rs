//! Several files in one run: each file has an extent `[start, start +
//! len)` of one virtual address space (the plan's, as the simulator lays
//! files out on its device), and an IO's offset in that space names the
//! file and the offset in it. fio keeps a `struct fio_file` per file and
//! each `io_u` carries its file (`io_u->file`, `get_next_file`); blkqos's
//! jobs address the space, and the engine turns each IO back into (the
//! file's fd, offset in the file) before it reaches the kernel.
//!
//! A file may be open twice: buffered and with `O_DIRECT`, when jobs that
//! share it disagree on `direct=` (fio opens a file per job, each with its
//! own flags: `generic_open_file`); an IO takes the fd of its job's mode.

/// One file's extent and its fds (indexes into the backend's open files,
/// = the io_uring fixed-file slots): `[buffered, O_DIRECT]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Start in the virtual address space.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// The fd for buffered IO and for `O_DIRECT` IO, where opened so.
    pub fds: [Option<u32>; 2],
}

/// The run's files by extent, and each job's mode (`direct=`).
#[derive(Clone, Debug, Default)]
pub struct Router {
    /// Sorted by `start`, not overlapping.
    extents: Vec<Extent>,
    /// By [`blkqos_core::Submitter`]: the job opens its files `O_DIRECT`.
    direct: Vec<bool>,
}

impl Router {
    /// A router over `extents` (any order; they must not overlap) for jobs
    /// whose `direct=` is `direct[submitter]`.
    pub fn new(mut extents: Vec<Extent>, direct: Vec<bool>) -> Result<Router, String> {
        extents.sort_by_key(|e| e.start);
        for w in extents.windows(2) {
            if w[0].start + w[0].len > w[1].start {
                return Err(format!(
                    "file extents overlap: [{}, +{}) and [{}, +{})",
                    w[0].start, w[0].len, w[1].start, w[1].len
                ));
            }
        }
        Ok(Router { extents, direct })
    }

    /// The extents, by start.
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// The fd index and the offset in its file of an IO of `len` bytes at
    /// virtual `offset` from job `submitter`; `EINVAL` when it starts in
    /// no file or crosses its file's end (a job's IO never does: its files'
    /// offsets stay inside them, fio `get_next_offset`), `EBADF` when the
    /// file is not open in the job's mode. A job beyond the list (the
    /// driver's own IO) takes the buffered fd, else the direct one.
    pub fn route(&self, submitter: u32, offset: u64, len: u64) -> Result<(u32, u64), i32> {
        let i = self.extents.partition_point(|e| e.start <= offset);
        let Some(e) = i.checked_sub(1).map(|i| &self.extents[i]) else {
            return Err(libc::EINVAL);
        };
        let rel = offset - e.start;
        if rel >= e.len.max(1) || rel + len > e.len {
            return Err(libc::EINVAL);
        }
        let fd = match self.direct.get(submitter as usize) {
            Some(&d) => e.fds[usize::from(d)],
            None => e.fds[0].or(e.fds[1]),
        };
        fd.map(|fd| (fd, rel)).ok_or(libc::EBADF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(start: u64, len: u64, fd: u32) -> Extent {
        Extent {
            start,
            len,
            fds: [Some(fd), None],
        }
    }

    fn three() -> Router {
        // out of order on purpose, with a gap between the second and third
        Router::new(
            vec![
                ext(2 << 20, 1 << 20, 2),
                ext(0, 1 << 20, 0),
                ext(1 << 20, 4096, 1),
            ],
            vec![false, false],
        )
        .unwrap()
    }

    #[test]
    fn an_io_goes_to_the_file_whose_extent_holds_it_at_its_offset_there() {
        let r = three();
        assert_eq!(r.route(0, 0, 4096), Ok((0, 0)));
        assert_eq!(
            r.route(0, (1 << 20) - 4096, 4096),
            Ok((0, (1 << 20) - 4096))
        );
        assert_eq!(r.route(1, 1 << 20, 4096), Ok((1, 0)));
        assert_eq!(r.route(0, (2 << 20) + 8192, 4096), Ok((2, 8192)));
    }

    #[test]
    fn an_io_that_crosses_a_file_end_or_lies_between_files_is_refused() {
        let r = three();
        // crosses from file 0 into file 1
        assert_eq!(r.route(0, (1 << 20) - 4096, 8192), Err(libc::EINVAL));
        // in the gap after file 1
        assert_eq!(r.route(0, (1 << 20) + 4096, 4096), Err(libc::EINVAL));
        // past the last file
        assert_eq!(r.route(0, 3 << 20, 4096), Err(libc::EINVAL));
        assert_eq!(r.route(0, (3 << 20) - 512, 1024), Err(libc::EINVAL));
    }

    #[test]
    fn every_io_of_a_sweep_lands_in_exactly_one_file_with_its_bytes() {
        let r = three();
        let mut per_fd = [0u64; 3];
        let mut off = 0;
        while off < 3 << 20 {
            if let Ok((fd, rel)) = r.route(0, off, 4096) {
                let e = r.extents().iter().find(|e| e.fds[0] == Some(fd)).unwrap();
                assert!(rel + 4096 <= e.len);
                assert_eq!(e.start + rel, off);
                per_fd[fd as usize] += 4096;
            }
            off += 4096;
        }
        assert_eq!(per_fd, [1 << 20, 4096, 1 << 20]);
    }

    #[test]
    fn a_job_takes_the_fd_of_its_direct_mode() {
        let e = Extent {
            start: 0,
            len: 1 << 20,
            fds: [Some(0), Some(1)],
        };
        let r = Router::new(vec![e], vec![false, true]).unwrap();
        assert_eq!(r.route(0, 4096, 4096), Ok((0, 4096)));
        assert_eq!(r.route(1, 4096, 4096), Ok((1, 4096)));
        let only_direct = Extent {
            fds: [None, Some(0)],
            ..e
        };
        let r = Router::new(vec![only_direct], vec![false, true]).unwrap();
        assert_eq!(r.route(0, 0, 4096), Err(libc::EBADF));
        assert_eq!(r.route(1, 0, 4096), Ok((0, 0)));
        // the driver's own IO (no job): whichever fd there is
        assert_eq!(r.route(7, 0, 4096), Ok((0, 0)));
    }

    #[test]
    fn overlapping_extents_are_refused() {
        let err = Router::new(vec![ext(0, 8192, 0), ext(4096, 8192, 1)], vec![]);
        assert!(err.unwrap_err().contains("overlap"));
    }
}
