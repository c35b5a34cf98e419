//! The refusals: what blkqos will not write to, and that each says why.

use crate::util;

use blkqos_engine::{open_backend, BackendKind, EngineError, EngineOptions, Refusal};
use std::path::Path;
use util::*;

fn writes(size: u64) -> EngineOptions {
    EngineOptions {
        kind: BackendKind::Threads,
        writes: true,
        size_needed: size,
        ..EngineOptions::default()
    }
}

fn refusal(r: Result<blkqos_engine::RealBackend, EngineError>) -> (Refusal, String) {
    match r {
        Err(e @ EngineError::Refused { .. }) => {
            let msg = e.to_string();
            let EngineError::Refused { reason, .. } = e else {
                unreachable!()
            };
            (reason, msg)
        }
        Err(e) => panic!("expected a refusal, got: {e}"),
        Ok(b) => panic!("expected a refusal, got a backend on {:?}", b.target()),
    }
}

#[test]
fn existing_user_file_needs_overwrite_consent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("precious.txt");
    std::fs::write(&path, b"do not lose me\n").unwrap();
    let (r, msg) = refusal(open_backend(&path, writes(0)));
    assert_eq!(r, Refusal::ExistingFile { size: 15 });
    assert!(
        msg.contains("precious.txt") && msg.contains("overwrite"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"do not lose me\n");
    // too small for a read job: extending would write to it
    let (r, msg) = refusal(open_backend(
        &path,
        EngineOptions {
            writes: false,
            ..writes(1 << 20)
        },
    ));
    assert_eq!(
        r,
        Refusal::WouldExtend {
            size: 15,
            needed: 1 << 20
        }
    );
    assert!(msg.contains("smaller than"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), b"do not lose me\n");
    // reading what is there is fine
    open_backend(
        &path,
        EngineOptions {
            writes: false,
            ..writes(15)
        },
    )
    .unwrap();
    // with consent
    open_backend(
        &path,
        EngineOptions {
            overwrite: true,
            ..writes(1 << 20)
        },
    )
    .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
}

#[test]
fn files_blkqos_created_need_no_consent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.dat");
    drop(open_backend(&path, writes(1 << 20)).unwrap());
    drop(open_backend(&path, writes(1 << 20)).unwrap());
    // grows without consent too
    drop(open_backend(&path, writes(2 << 20)).unwrap());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 << 20);
    // an empty existing file holds nothing to lose
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    drop(open_backend(&empty, writes(4096)).unwrap());
}

#[test]
fn unsupported_targets_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_backend(dir.path(), writes(0)).unwrap_err();
    assert!(e.to_string().contains("a directory"), "{e}");
    if Path::new("/dev/mem").exists() {
        let e = open_backend(Path::new("/dev/mem"), EngineOptions::default()).unwrap_err();
        assert!(e.to_string().contains("character device 1:1"), "{e}");
    }
    if Path::new("/dev/null").exists() {
        let e = open_backend(
            Path::new("/dev/null"),
            EngineOptions {
                direct: true,
                ..EngineOptions::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, EngineError::DirectUnsupported { .. }), "{e}");
    }
    let e = open_backend(
        &dir.path().join("x"),
        EngineOptions {
            depth: 0,
            ..EngineOptions::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("depth=0"), "{e}");
}

/// The device of `/`, through a device node made in a temp dir (root only,
/// and only if `/` is on a real block device).
#[test]
fn mounted_device_is_refused() {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata("/").unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = format!("/sys/dev/block/{major}:{minor}");
    if major == 0 || !Path::new(&sys).exists() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Host,
            format!("/ is not on a block device ({major}:{minor})"),
        );
        return;
    }
    if !is_root() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Root,
            "making a device node needs root",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("rootdev");
    let st = std::process::Command::new("mknod")
        .arg(&node)
        .arg("b")
        .arg(major.to_string())
        .arg(minor.to_string())
        .status();
    if !matches!(st, Ok(s) if s.success()) {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Host,
            format!("mknod failed: {st:?}"),
        );
        return;
    }
    for kind in [BackendKind::Threads, BackendKind::IoUring] {
        let (r, msg) = refusal(open_backend(&node, EngineOptions { kind, ..writes(0) }));
        match r {
            Refusal::Mounted { mountpoints, .. } => {
                assert!(mountpoints.iter().any(|m| m == "/"), "{mountpoints:?}")
            }
            other => panic!("expected Mounted, got {other:?}"),
        }
        assert!(
            msg.contains(&format!("{major}:{minor} is mounted on")),
            "{msg}"
        );
        // even with allow_destructive the kernel refuses: O_EXCL on a
        // claimed device is EBUSY (a sandbox may say EPERM first)
        match open_backend(
            &node,
            EngineOptions {
                kind,
                allow_destructive: true,
                ..writes(0)
            },
        ) {
            Err(EngineError::Refused {
                reason: Refusal::Busy { .. },
                ..
            }) => {}
            Err(EngineError::Io { error, .. })
                if matches!(error.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) => {}
            Err(e) => panic!("unexpected error: {e}"),
            Ok(b) => panic!(
                "opened the mounted root device for writing: {:?}",
                b.target()
            ),
        }
    }
}
