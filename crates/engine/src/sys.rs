//! Thin, checked wrappers over the few Linux calls `std` does not offer:
//! block-device ioctls, `statx(STATX_DIOALIGN)`, `fallocate`, and the
//! layout marker xattr. Every `unsafe` block passes a valid fd and pointers
//! to live, correctly sized locals.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `BLKGETSIZE64` = `_IOR(0x12, 114, size_t)`; the direction bits differ on
/// the architectures with a 3-bit `_IOC_DIR`.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
const BLKGETSIZE64: libc::Ioctl = 0x4008_1272u32 as libc::Ioctl;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const BLKGETSIZE64: libc::Ioctl = 0x8008_1272u32 as libc::Ioctl;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Size in bytes of a block device (`BLKGETSIZE64`).
pub fn blk_size_bytes(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: valid fd; BLKGETSIZE64 writes one u64 through the pointer.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) })?;
    Ok(size)
}

/// Logical block size of a block device (`BLKSSZGET`).
pub fn blk_logical_block_size(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: valid fd; BLKSSZGET writes one int through the pointer.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::BLKSSZGET, &mut v as *mut libc::c_int) })?;
    Ok(v.max(0) as u32)
}

/// `(dio_mem_align, dio_offset_align)` from `statx(STATX_DIOALIGN)` (Linux
/// 6.1+), `None` if the kernel or filesystem does not report it (then 0s
/// mean "direct IO not supported on this file").
pub fn dio_align(fd: BorrowedFd<'_>) -> Option<(u32, u32)> {
    // SAFETY: `statx` is plain old data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated empty path with AT_EMPTY_PATH, and a
    // pointer to a live `statx` the kernel fills.
    let r = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if r < 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// `fallocate(fd, mode, offset, len)`.
pub fn fallocate(fd: BorrowedFd<'_>, mode: libc::c_int, offset: u64, len: u64) -> io::Result<()> {
    let off =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: valid fd; plain integer arguments.
    cvt(unsafe { libc::fallocate(fd.as_raw_fd(), mode, off, len) })?;
    Ok(())
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`: drop the file's clean
/// cached pages (fio's `invalidate=1`, `file_invalidate_cache`).
pub fn drop_cache(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: valid fd; plain integer arguments.
    let r = unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `struct move_extent` of `EXT4_IOC_MOVE_EXT` (linux fs/ext4/ext4.h).
#[repr(C)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

/// `_IOWR('f', 15, struct move_extent)`.
const EXT4_IOC_MOVE_EXT: libc::c_ulong = (3 << 30)
    | ((std::mem::size_of::<MoveExtent>() as libc::c_ulong) << 16)
    | ((b'f' as libc::c_ulong) << 8)
    | 15;

/// `ioctl(fd, EXT4_IOC_MOVE_EXT)`: exchange `len_blocks` blocks of `fd`
/// from block `start` with the donor's at the same block (ext4's online
/// defragmentation, `ext4_move_extents`). Returns the call's error, if
/// any, and the blocks moved (the kernel reports them either way).
pub fn ext4_move_ext(
    fd: BorrowedFd<'_>,
    donor: BorrowedFd<'_>,
    start: u64,
    len_blocks: u64,
) -> (Option<io::Error>, u64) {
    let mut me = MoveExtent {
        reserved: 0,
        donor_fd: donor.as_raw_fd() as u32,
        orig_start: start,
        donor_start: start,
        len: len_blocks,
        moved_len: 0,
    };
    // SAFETY: valid fds; `me` is a live `struct move_extent` the kernel
    // reads and writes back (`moved_len`).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), EXT4_IOC_MOVE_EXT as _, &mut me) };
    let err = (r == -1).then(io::Error::last_os_error);
    (err, me.moved_len)
}

/// The extended attribute that marks a file blkqos created or laid out.
pub const MARKER_NAME: &CStr = c"user.blkqos.layout";
const MARKER_VALUE: &[u8] = b"v1";

/// Does the file carry blkqos's layout marker?
pub fn has_marker(fd: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16];
    // SAFETY: valid fd, NUL-terminated name, and a live buffer of the stated length.
    let n = unsafe {
        libc::fgetxattr(
            fd.as_raw_fd(),
            MARKER_NAME.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n >= 0 && &buf[..n as usize] == MARKER_VALUE
}

/// Mark the file as created/laid out by blkqos.
pub fn set_marker(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: valid fd, NUL-terminated name, value pointer and length of a live slice.
    cvt(unsafe {
        libc::fsetxattr(
            fd.as_raw_fd(),
            MARKER_NAME.as_ptr(),
            MARKER_VALUE.as_ptr().cast(),
            MARKER_VALUE.len(),
            0,
        )
    })?;
    Ok(())
}

/// `dev_t` → (major, minor).
pub fn split_dev(dev: u64) -> (u32, u32) {
    (
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t),
    )
}

/// `getrusage(RUSAGE_SELF)`: the whole process, every thread (finished
/// threads included).
pub fn rusage_self() -> io::Result<libc::rusage> {
    rusage(libc::RUSAGE_SELF)
}

/// `getrusage(RUSAGE_THREAD)`: the calling thread's usage.
pub fn rusage_thread() -> io::Result<libc::rusage> {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: libc::c_int) -> io::Result<libc::rusage> {
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one `struct rusage` through a valid pointer.
    cvt(unsafe { libc::getrusage(who, &mut ru) })?;
    Ok(ru)
}

/// `IOPRIO_WHO_PROCESS`: with id 0, the calling thread.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;

/// `ioprio_set(IOPRIO_WHO_PROCESS, 0, value)`: the calling thread's IO
/// priority (`class << 13 | level`; 0: none, the CPU nice level decides).
pub fn set_thread_ioprio(value: u16) -> io::Result<()> {
    // SAFETY: plain integer arguments.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            libc::c_long::from(value),
        )
    };
    cvt(r as libc::c_int).map(drop)
}

/// `ioprio_get(IOPRIO_WHO_PROCESS, tid)`: a thread's IO priority.
pub fn thread_ioprio(tid: i32) -> io::Result<u16> {
    // SAFETY: plain integer arguments.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_get,
            IOPRIO_WHO_PROCESS,
            libc::c_long::from(tid),
        )
    };
    cvt(r as libc::c_int).map(|v| v as u16)
}
