//! The file system calls of fio's metadata engines (fio 3.33
//! engines/filestat.c `stat_file`): `stat(2)`, `lstat(2)` and `statx(2)`
//! by path, each timed by the caller as the job's clat. (`filecreate`'s
//! `open(O_CREAT)` and `filedelete`'s `unlink(2)` need no `unsafe`: the
//! caller makes them with `std::fs`.)

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Which stat call (`stat_type=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatCall {
    /// `stat(2)`.
    Stat,
    /// `lstat(2)`.
    Lstat,
    /// `statx(-1, abspath, 0, STATX_ALL)` of the absolute path,
    /// as fio resolves it with `realpath` first.
    Statx,
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// One stat call on `path` (the path must already be absolute for
/// [`StatCall::Statx`]; see [`absolute`]).
pub fn stat_path(path: &Path, call: StatCall) -> io::Result<()> {
    let p = c_path(path)?;
    let ret = match call {
        StatCall::Stat | StatCall::Lstat => {
            let mut buf = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: `p` is a NUL-terminated path and `buf` a writable
            // `struct stat` the call fills.
            unsafe {
                if call == StatCall::Stat {
                    libc::stat(p.as_ptr(), buf.as_mut_ptr())
                } else {
                    libc::lstat(p.as_ptr(), buf.as_mut_ptr())
                }
            }
        }
        StatCall::Statx => {
            let mut buf = std::mem::MaybeUninit::<libc::statx>::uninit();
            // SAFETY: as above, `buf` a writable `struct statx`; fio passes
            // dirfd -1 with an absolute path, which the kernel accepts.
            unsafe { libc::statx(-1, p.as_ptr(), 0, libc::STATX_ALL, buf.as_mut_ptr()) }
        }
    };
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `realpath(3)` of `path`, as fio's statx branch does before the call.
pub fn absolute(path: &Path) -> io::Result<std::path::PathBuf> {
    std::fs::canonicalize(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_a_file_and_fails_on_none() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(&f, b"x").unwrap();
        for call in [StatCall::Stat, StatCall::Lstat] {
            stat_path(&f, call).unwrap();
        }
        stat_path(&absolute(&f).unwrap(), StatCall::Statx).unwrap();
        let e = stat_path(&dir.path().join("none"), StatCall::Stat).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    }
}
