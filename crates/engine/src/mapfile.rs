//! Opening what the memory-mapped engines map ([`crate::mapped`]): a
//! libpmem job's file, laid out as `pmem_map_file(PMEM_FILE_CREATE)`
//! does, and a device-DAX character device, recognised and sized as fio's
//! `fio_devdax_get_file_size` does.

use crate::{BackendKind, EngineError, EngineOptions, TargetKind};
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Open the libpmem file at `path` for a mapping of `len` bytes, under the
/// real engine's safety rules (an existing file is written only with
/// `overwrite`): a new file is created and, when a job reads it, laid out
/// with data (fio prepopulates it, `generic_prepopulate_file`); then, as
/// libpmem's `pmem_map_file(PMEM_FILE_CREATE)`, a file shorter than `len`
/// is extended and allocated (`posix_fallocate`). A longer existing file
/// keeps its length (libpmem would truncate it to `len`). No cache is
/// dropped: fio 3.33 invalidates nothing for libpmem (`FIO_DISKLESSIO`).
pub fn open_pmem_file(
    path: &Path,
    len: u64,
    reads: bool,
    overwrite: bool,
) -> Result<File, EngineError> {
    let o = EngineOptions {
        kind: BackendKind::Threads,
        direct: false,
        size_needed: len,
        reads,
        writes: true,
        overwrite,
        ..EngineOptions::default()
    };
    let t = crate::target::open_target(path, &o)?;
    if t.info.kind != TargetKind::File {
        return Err(EngineError::Unsupported {
            path: path.to_path_buf(),
            what: "not a regular file (libpmem maps a file; for a device-DAX character device \
                   use ioengine=dev-dax)"
                .into(),
        });
    }
    let err = |op: &'static str| {
        move |e: std::io::Error| EngineError::Io {
            path: path.to_path_buf(),
            op,
            error: e,
        }
    };
    let size = t.file.metadata().map_err(err("stat"))?.len();
    if size < len {
        t.file.set_len(len).map_err(err("truncate"))?;
    }
    crate::sys::fallocate(t.file.as_fd(), 0, 0, len).map_err(err("fallocate"))?;
    Ok(t.file)
}

/// `MAP_SYNC` (linux uapi asm-generic/mman-common.h).
const MAP_SYNC: libc::c_int = 0x80000;

/// Is `file` on persistent memory by DAX? What libpmem's `pmem_map_file`
/// learns as `is_pmem`: a `MAP_SHARED_VALIDATE | MAP_SYNC` mapping of it
/// succeeds only on a DAX file system (else EOPNOTSUPP). One page is
/// mapped and unmapped at once.
pub fn on_dax(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh mapping at an address of the kernel's choice, of a
    // file we hold open; it is unmapped before returning and never read.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED_VALIDATE | MAP_SYNC,
            file.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, 4096);
        true
    }
}

/// A device-DAX character device: its size (`/sys/dev/char/M:m/size`).
#[derive(Debug)]
pub struct DaxDevice {
    /// The device, opened read-write (no `O_DIRECT`: fio's comment in
    /// examples/dev-dax.fio, the device refuses it).
    pub file: File,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// Why `path` cannot be mapped as a device-DAX device, or the device
/// (fio `fio_devdax_get_file_size`: a character device whose
/// `/sys/dev/char/M:m/subsystem` is `/sys/class/dax`).
pub fn open_dax_device(path: &Path) -> Result<DaxDevice, String> {
    let how = "device DAX comes from persistent memory (`ndctl create-namespace \
               --mode=devdax` makes /dev/daxX.Y; `ls /sys/bus/dax/devices` lists them)";
    let meta = std::fs::metadata(path).map_err(|e| {
        format!(
            "{}: {e}: this machine has no such device-DAX device; {how}",
            path.display()
        )
    })?;
    if !meta.file_type().is_char_device() {
        return Err(format!(
            "{} is not a character device, so not a device-DAX device; {how}",
            path.display()
        ));
    }
    let rdev = meta.rdev();
    // glibc's gnu_dev_major/minor encoding
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    let sys = format!("/sys/dev/char/{major}:{minor}");
    let subsystem = std::fs::canonicalize(format!("{sys}/subsystem")).ok();
    if subsystem.as_deref() != Some(Path::new("/sys/class/dax")) {
        return Err(format!(
            "{} ({major}:{minor}) is not a device-DAX device ({sys}/subsystem is not \
             /sys/class/dax); {how}",
            path.display()
        ));
    }
    let size_bytes = std::fs::read_to_string(format!("{sys}/size"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("{}: cannot read {sys}/size", path.display()))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: open: {e}", path.display()))?;
    Ok(DaxDevice { file, size_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmem_file_is_created_extended_and_allocated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = open_pmem_file(&p, 1 << 20, false, false).unwrap();
        let m = f.metadata().unwrap();
        assert_eq!(m.len(), 1 << 20);
        assert!(
            m.blocks() * 512 >= 1 << 20,
            "allocated: {}",
            m.blocks() * 512
        );
        // a directory is refused
        assert!(open_pmem_file(dir.path(), 4096, false, false).is_err());
        // tmpfs has no DAX: MAP_SYNC is refused there
        if let Ok(shm) = tempfile::tempfile_in("/dev/shm") {
            shm.set_len(4096).unwrap();
            assert!(!on_dax(&shm));
        }
    }

    #[test]
    fn dax_refusals_say_what_is_missing() {
        let missing = Path::new("/dev/dax-blkqos-missing");
        let e = open_dax_device(missing).unwrap_err();
        assert!(e.contains("ndctl create-namespace"), "{e}");
        let e = open_dax_device(Path::new("/dev/null")).unwrap_err();
        assert!(e.contains("not a device-DAX device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = open_dax_device(dir.path()).unwrap_err();
        assert!(e.contains("not a character device"), "{e}");
    }
}
