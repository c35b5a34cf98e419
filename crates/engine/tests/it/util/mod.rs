//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use blkqos_core::{GroupId, Instant, Io, IoFlags, IoId, IoOp};
use blkqos_driver::{Backend, Completion};
use blkqos_engine::{open_backend, BackendKind, EngineError, EngineOptions, RealBackend};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub fn io(id: u64, op: IoOp, offset: u64, len: u64) -> Io {
    Io {
        ioprio: 0,
        id: IoId(id),
        submitter: blkqos_core::Submitter(0),
        group: GroupId::ROOT,
        op,
        flags: IoFlags::default(),
        offset,
        len,
        submitted_at: Instant::ZERO,
        cost_vtime: 0,
    }
}

/// Open, or `None` (with the reason printed) if the kernel here refuses
/// io_uring or O_DIRECT: the only reasons a test may skip.
pub fn open(kind: BackendKind, path: &Path, opts: EngineOptions) -> Option<RealBackend> {
    let opts = EngineOptions { kind, ..opts };
    match open_backend(path, opts) {
        Ok(b) => {
            assert_eq!(b.kind(), kind, "asked for {kind}, got {}", b.kind());
            Some(b)
        }
        Err(e @ EngineError::UringUnavailable { .. })
        | Err(e @ EngineError::DirectUnsupported { .. }) => {
            blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, e);
            None
        }
        Err(e) => panic!("open {}: {e}", path.display()),
    }
}

/// Submit `ios` at once, wait for all their completions (5 s at most),
/// returned in submission order.
pub fn run_ios(b: &mut RealBackend, ios: &[Io]) -> Vec<Completion> {
    let now = b.now();
    for io in ios {
        b.submit(io, now);
    }
    let limit = std::time::Instant::now() + Duration::from_secs(5);
    let mut got: Vec<Completion> = Vec::new();
    while got.len() < ios.len() {
        assert!(
            std::time::Instant::now() < limit,
            "IOs did not complete in 5 s: {got:?}"
        );
        let d = b.now() + blkqos_core::Duration::from_ms(100);
        b.wait(Some(d), &mut got);
    }
    assert_eq!(b.in_flight(), 0);
    ios.iter()
        .map(|io| {
            *got.iter()
                .find(|c| c.id == io.id)
                .unwrap_or_else(|| panic!("no completion for {io:?}"))
        })
        .collect()
}

pub fn run_one(b: &mut RealBackend, io: Io) -> Completion {
    run_ios(b, &[io])[0]
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A loop device over a backing file, detached on drop.
pub struct LoopDev {
    pub dev: PathBuf,
    pub backing: PathBuf,
}

impl LoopDev {
    /// Attach `backing`, or `None` with the reason (not root, no losetup).
    pub fn attach(backing: &Path) -> Option<LoopDev> {
        if !is_root() {
            blkqos_testkit::skip(blkqos_testkit::Reason::Root, "loop devices need root");
            return None;
        }
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(backing)
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
                Some(LoopDev {
                    dev: PathBuf::from(dev),
                    backing: backing.to_path_buf(),
                })
            }
            Ok(o) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!(
                        "losetup failed: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                );
                None
            }
            Err(e) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!("cannot run losetup: {e}"),
                );
                None
            }
        }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A tmpfs mounted on a fresh directory, unmounted on drop.
pub struct Tmpfs {
    pub dir: tempfile::TempDir,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        if !is_root() {
            blkqos_testkit::skip(blkqos_testkit::Reason::Root, "mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size}"))
            .arg("tmpfs")
            .arg(dir.path())
            .status();
        match st {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            other => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!("mount -t tmpfs failed: {other:?}"),
                );
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        for _ in 0..20 {
            let st = Command::new("umount").arg(self.dir.path()).status();
            if matches!(st, Ok(s) if s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // still busy: detach it lazily rather than leak a mount
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// CPU time this thread has used, in ns (`/proc/thread-self/schedstat`).
pub fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
