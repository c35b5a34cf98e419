//! The engine against real files and devices. Every body is written once and
//! runs on both backends (`uring::*` and `threads::*`).
//!
//! Error injection without special kernel modules:
//! * ENOSPC: writes to `/dev/full` (always), and a file on a 64 KiB tmpfs
//!   (when root can mount one);
//! * EIO: a loop device whose backing file was truncated after attaching:
//!   reads past the backing file's new end fail with EIO (root + losetup);
//! * EINVAL: misaligned O_DIRECT IO on the temp dir's filesystem;
//! * EBADF: a write to a target opened read-only.
//!
//! A test skips (printing why) only if the kernel refuses io_uring or
//! O_DIRECT, or, for the loop/tmpfs cases, if not run as root.

use crate::util;

use blkqos_core::{Duration, IoOp};
use blkqos_driver::Backend;
use blkqos_engine::{pattern, BackendKind, EngineOptions, RealBackend, TargetKind};
use std::os::unix::fs::FileExt;
use util::*;

fn rw_opts(size: u64) -> EngineOptions {
    EngineOptions {
        size_needed: size,
        reads: true,
        writes: true,
        verify: true,
        depth: 16,
        max_io: 128 << 10,
        ..EngineOptions::default()
    }
}

/// Write the pattern with the engine, check it independently on disk, read
/// it back with verify, and catch a corrupted block.
fn round_trip(kind: BackendKind, direct: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.dat");
    let size = 1 << 20;
    let Some(mut b) = open(
        kind,
        &path,
        EngineOptions {
            direct,
            ..rw_opts(size)
        },
    ) else {
        return;
    };
    assert_eq!(b.capacity_bytes(), size);
    assert_eq!(b.target().direct, direct);
    // overwrite the layout with a zero file first, so the pattern we find
    // afterwards can only come from the engine's writes
    let plain = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    plain.write_all_at(&vec![0u8; size as usize], 0).unwrap();
    plain.sync_all().unwrap();
    drop(plain);
    // 16 writes of mixed sizes at once: one batch
    let ios: Vec<_> = (0..16u64)
        .map(|i| io(i, IoOp::Write, i * 65536, 4096 * (1 + i % 4)))
        .collect();
    for c in run_ios(&mut b, &ios) {
        assert_eq!(c.error, 0, "{c:?}");
    }
    for (c, io) in run_ios(&mut b, &ios).iter().zip(&ios) {
        assert_eq!((c.error, c.bytes), (0, io.len), "rewrite {io:?}");
    }
    let f = std::fs::File::open(&path).unwrap();
    for io in &ios {
        let mut buf = vec![0u8; io.len as usize];
        f.read_exact_at(&mut buf, io.offset).unwrap();
        assert_eq!(
            pattern::check(&buf, io.offset),
            None,
            "on-disk data of {io:?}"
        );
        // and the byte after each write is still zero
        let mut one = [9u8];
        f.read_exact_at(&mut one, io.offset + io.len).unwrap();
        assert_eq!(one[0], 0, "write {io:?} spilled over");
    }
    // read back through the engine, verified
    let reads: Vec<_> = ios
        .iter()
        .map(|w| io(100 + w.id.0, IoOp::Read, w.offset, w.len))
        .collect();
    for (c, r) in run_ios(&mut b, &reads).iter().zip(&reads) {
        assert_eq!((c.error, c.bytes), (0, r.len), "read back {r:?}");
    }
    // a block that never got the pattern fails verification with EILSEQ
    let c = run_one(&mut b, io(999, IoOp::Read, 32768, 4096));
    assert_eq!(
        (c.error, c.bytes),
        (libc::EILSEQ, 0),
        "zeros must not verify"
    );
    assert!(b.stats().verify_failures >= 1);
    assert_eq!(b.stats().first_verify_failure, Some(32768));
    // completion timestamps are run time, after the epoch, and move forward
    assert!(c.at > blkqos_core::Instant::ZERO);
    assert!(b.now() >= c.at);
}

fn round_trip_buffered(kind: BackendKind) {
    round_trip(kind, false);
}

fn round_trip_direct(kind: BackendKind) {
    round_trip(kind, true);
}

/// A new file for a read job is laid out with the pattern and marked;
/// a write-only job only extends it (sparse).
fn layout(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.dat");
    let opts = EngineOptions {
        size_needed: 3 << 20,
        reads: true,
        writes: false,
        ..EngineOptions::default()
    };
    let Some(b) = open(kind, &path, opts.clone()) else {
        return;
    };
    let info = b.target().clone();
    assert_eq!(info.kind, TargetKind::File);
    assert!(info.created);
    assert_eq!(info.laid_out_bytes, 3 << 20);
    assert_eq!(info.max_io_bytes, u64::MAX, "files are not split here");
    assert!(!info.writable);
    drop(b);
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), 3 << 20);
    assert_eq!(pattern::check(&data, 0), None);
    // reopening for writes needs no consent: blkqos laid it out
    let b = open(
        kind,
        &path,
        EngineOptions {
            writes: true,
            ..opts.clone()
        },
    )
    .unwrap();
    assert_eq!(b.target().laid_out_bytes, 0, "already laid out");
    drop(b);
    // write-only: extended, not written
    let wpath = dir.path().join("w.dat");
    let b = open(
        kind,
        &wpath,
        EngineOptions {
            reads: false,
            writes: true,
            ..opts
        },
    )
    .unwrap();
    assert_eq!(b.target().laid_out_bytes, 0);
    assert_eq!(b.capacity_bytes(), 3 << 20);
    drop(b);
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(&wpath).unwrap();
    assert_eq!(m.len(), 3 << 20);
    assert!(
        m.blocks() * 512 < 1 << 20,
        "write-only layout must be sparse"
    );
}

/// `wait(deadline)` returns at once with nothing in flight and no
/// deadline, sleeps once (in the kernel) until a future deadline and never
/// wakes before it, does not sleep for a past deadline, and returns early
/// when an IO completes. How long the sleep overshoots and how much CPU it
/// burns are wall-clock measurements: `tier_real::wait_timing`.
fn deadline_wait(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.dat");
    let Some(mut b) = open(kind, &path, rw_opts(1 << 20)) else {
        return;
    };
    let mut out = Vec::new();
    // nothing in flight, no deadline: returns without sleeping
    let sleeps0 = b.stats().sleeps;
    b.wait(None, &mut out);
    assert!(out.is_empty());
    assert_eq!(
        b.stats().sleeps,
        sleeps0,
        "nothing to wait for, yet it slept"
    );

    // an idle 50 ms wait: one sleep, not early
    let sleeps0 = b.stats().sleeps;
    let deadline = b.now() + Duration::from_ms(50);
    b.wait(Some(deadline), &mut out);
    let after = b.now();
    assert!(out.is_empty());
    assert!(after >= deadline, "woke early: {after} < {deadline}");
    assert_eq!(b.stats().sleeps, sleeps0 + 1, "one sleep in the kernel");

    // a past deadline: no sleep
    let sleeps0 = b.stats().sleeps;
    let past = b.now();
    b.wait(Some(past), &mut out);
    assert_eq!(
        b.stats().sleeps,
        sleeps0,
        "slept for a deadline already past"
    );

    // an IO completes long before a far deadline: wait returns with it
    let now = b.now();
    b.submit(&io(1, IoOp::Read, 0, 4096), now);
    let far = now + Duration::from_secs(10);
    while out.is_empty() {
        b.wait(Some(far), &mut out);
        assert!(b.now() < far, "IO never completed");
    }
    assert!(out[0].at < far);
    assert_eq!((out[0].error, out[0].bytes), (0, 4096));
    // ordering of timestamps: completion after submission, before now
    assert!(out[0].at >= now && out[0].at <= b.now());
}

/// Misaligned O_DIRECT IO is an EINVAL completion, not a panic; aligned IO works.
fn direct_alignment(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dat");
    let Some(mut b) = open(
        kind,
        &path,
        EngineOptions {
            direct: true,
            ..rw_opts(1 << 20)
        },
    ) else {
        return;
    };
    let info = b.target().clone();
    assert!(info.buffer_align() >= 4096);
    assert!(info.buffer_align() >= info.dio_mem_align as usize);
    let ok = run_one(&mut b, io(1, IoOp::Read, 4096, 4096));
    assert_eq!((ok.error, ok.bytes), (0, 4096));
    let cases = [
        io(2, IoOp::Read, 1, 4096),
        io(3, IoOp::Read, 4096, 100),
        io(4, IoOp::Write, 513, 512),
    ];
    for (c, io) in run_ios(&mut b, &cases).iter().zip(&cases) {
        if info.dio_offset_align > 1 {
            assert_eq!(
                (c.error, c.bytes),
                (libc::EINVAL, 0),
                "misaligned direct {io:?} (dio_offset_align {})",
                info.dio_offset_align
            );
        } else {
            // a filesystem that takes unaligned direct IO must still not fail oddly
            assert!(c.error == 0 || c.error == libc::EINVAL, "{c:?}");
        }
    }
}

/// Reads past the end of a file are short (reported in `bytes`); an IO
/// larger than `max_io` is EINVAL; more IOs than slots still all complete.
fn short_reads_and_limits(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.dat");
    std::fs::write(&path, vec![7u8; 10_000]).unwrap();
    let Some(mut b) = open(
        kind,
        &path,
        EngineOptions {
            depth: 2,
            max_io: 8192,
            size_needed: 10_000,
            ..EngineOptions::default()
        },
    ) else {
        return;
    };
    assert!(!b.target().created);
    let c = run_one(&mut b, io(1, IoOp::Read, 8192, 4096));
    assert_eq!((c.error, c.bytes), (0, 10_000 - 8192), "short read");
    let c = run_one(&mut b, io(2, IoOp::Read, 20_000, 4096));
    assert_eq!((c.error, c.bytes), (0, 0), "read at EOF");
    let c = run_one(&mut b, io(3, IoOp::Read, 0, 16384));
    assert_eq!((c.error, c.bytes), (libc::EINVAL, 0), "larger than max_io");
    // opened read-only: a write is EBADF
    let c = run_one(&mut b, io(4, IoOp::Write, 0, 4096));
    assert_eq!(c.error, libc::EBADF, "{c:?}");
    // 10 IOs on 2 slots
    let many: Vec<_> = (0..10)
        .map(|i| io(10 + i, IoOp::Read, i * 512, 512))
        .collect();
    for c in run_ios(&mut b, &many) {
        assert_eq!((c.error, c.bytes), (0, 512));
    }
    assert_eq!(b.stats().completed, b.stats().submitted);
}

/// Flush is fsync; discard punches a hole.
fn flush_and_discard(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.dat");
    let Some(mut b) = open(kind, &path, rw_opts(1 << 20)) else {
        return;
    };
    let c = run_one(&mut b, io(1, IoOp::Flush, 0, 0));
    assert_eq!(c.error, 0, "{c:?}");
    let c = run_one(&mut b, io(2, IoOp::Discard, 65536, 65536));
    assert_eq!(c.error, 0, "{c:?}");
    let mut buf = vec![1u8; 65536];
    std::fs::File::open(&path)
        .unwrap()
        .read_exact_at(&mut buf, 65536)
        .unwrap();
    assert!(
        buf.iter().all(|&x| x == 0),
        "discarded range reads as zeros"
    );
    assert_eq!(b.capacity_bytes(), 1 << 20, "KEEP_SIZE");
}

/// ENOSPC from /dev/full is a completion error.
fn enospc_dev_full(kind: BackendKind) {
    let path = std::path::Path::new("/dev/full");
    if !path.exists() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Host, "no /dev/full");
        return;
    }
    let Some(mut b) = open(
        kind,
        path,
        EngineOptions {
            writes: true,
            size_needed: 1 << 20,
            ..EngineOptions::default()
        },
    ) else {
        return;
    };
    assert_eq!(b.target().kind, TargetKind::MemoryDevice);
    let c = run_one(&mut b, io(1, IoOp::Write, 0, 4096));
    assert_eq!((c.error, c.bytes), (libc::ENOSPC, 0));
    let c = run_one(&mut b, io(2, IoOp::Read, 0, 4096));
    assert_eq!((c.error, c.bytes), (0, 4096));
    assert_eq!(b.stats().errors, 1);
}

/// ENOSPC on a full filesystem (a 64 KiB tmpfs).
fn enospc_tmpfs(kind: BackendKind) {
    let Some(fs) = Tmpfs::mount("64k") else {
        return;
    };
    let path = fs.dir.path().join("full.dat");
    let Some(mut b) = open(
        kind,
        &path,
        EngineOptions {
            reads: false,
            writes: true,
            size_needed: 1 << 20,
            ..EngineOptions::default()
        },
    ) else {
        return;
    };
    let ios: Vec<_> = (0..64)
        .map(|i| io(i, IoOp::Write, i * 8192, 4096))
        .collect();
    let comps: Vec<_> = ios.chunks(8).flat_map(|c| run_ios(&mut b, c)).collect();
    let ok = comps.iter().filter(|c| c.error == 0).count();
    let nospc = comps.iter().filter(|c| c.error == libc::ENOSPC).count();
    assert!(ok >= 1, "some writes fit: {comps:?}");
    assert!(nospc >= 1, "64 × 4 KiB cannot fit in 64 KiB: {comps:?}");
    assert_eq!(
        ok + nospc,
        comps.len(),
        "only successes and ENOSPC: {comps:?}"
    );
    drop(b);
}

/// EIO from a loop device whose backing file was cut short.
fn eio_loop(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing.img");
    let mut data = vec![0u8; 1 << 20];
    pattern::fill(&mut data, 0);
    std::fs::write(&backing, &data).unwrap();
    let Some(lo) = LoopDev::attach(&backing) else {
        return;
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(&backing)
        .unwrap()
        .set_len(256 << 10)
        .unwrap();
    let Some(mut b) = open(
        kind,
        &lo.dev,
        EngineOptions {
            direct: true,
            verify: true,
            ..EngineOptions::default()
        },
    ) else {
        return;
    };
    assert_eq!(b.target().kind, TargetKind::BlockDevice);
    assert_eq!(
        b.capacity_bytes(),
        1 << 20,
        "BLKGETSIZE64 of the loop device"
    );
    // the driver splits to the device's max IO size, as the kernel would
    let name = lo.dev.file_name().unwrap().to_string_lossy().into_owned();
    let kb: u64 = std::fs::read_to_string(format!("/sys/block/{name}/queue/max_sectors_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(b.max_io_bytes(), kb << 10, "queue/max_sectors_kb");
    let c = run_one(&mut b, io(1, IoOp::Read, 0, 4096));
    assert_eq!(
        (c.error, c.bytes),
        (0, 4096),
        "inside the backing file (verified)"
    );
    let c = run_one(&mut b, io(2, IoOp::Read, 512 << 10, 4096));
    assert_eq!(
        (c.error, c.bytes),
        (libc::EIO, 0),
        "past the backing file's end"
    );
    drop(b);
}

/// Block devices: a clean device is writable, one with a filesystem is
/// refused unless `allow_destructive`.
fn block_device_safety(kind: BackendKind) {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("dev.img");
    std::fs::write(&backing, vec![0u8; 2 << 20]).unwrap();
    let Some(lo) = LoopDev::attach(&backing) else {
        return;
    };
    let wopts = EngineOptions {
        writes: true,
        verify: true,
        size_needed: 1 << 20,
        ..EngineOptions::default()
    };
    {
        let Some(mut b) = open(kind, &lo.dev, wopts.clone()) else {
            return;
        };
        let c = run_one(&mut b, io(1, IoOp::Write, 8192, 4096));
        assert_eq!((c.error, c.bytes), (0, 4096));
        let c = run_one(&mut b, io(2, IoOp::Read, 8192, 4096));
        assert_eq!((c.error, c.bytes), (0, 4096), "read back, verified");
    }
    // too small for the job
    let e = blkqos_engine::open_backend(
        &lo.dev,
        EngineOptions {
            kind,
            size_needed: 4 << 20,
            ..wopts.clone()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, blkqos_engine::EngineError::TooSmall { .. }),
        "{e}"
    );
    // an ext2/3/4 magic and an MBR
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    f.write_all_at(&[0x53, 0xef], 1080).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let e = blkqos_engine::open_backend(
        &lo.dev,
        EngineOptions {
            kind,
            ..wopts.clone()
        },
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("ext2/3/4") && msg.contains("1080"), "{msg}");
    assert!(msg.contains("--allow-destructive"), "{msg}");
    // reading is always allowed
    open(kind, &lo.dev, EngineOptions::default()).expect("read-only open");
    // explicit consent
    let b = open(
        kind,
        &lo.dev,
        EngineOptions {
            allow_destructive: true,
            ..wopts
        },
    );
    assert!(b.is_some());
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod uring {
            $(#[test] fn $name() { super::$name(blkqos_engine::BackendKind::IoUring) })*
        }
        mod threads {
            $(#[test] fn $name() { super::$name(blkqos_engine::BackendKind::Threads) })*
        }
    };
}

on_both_backends!(
    round_trip_buffered,
    round_trip_direct,
    layout,
    deadline_wait,
    direct_alignment,
    short_reads_and_limits,
    flush_and_discard,
    enospc_dev_full,
    enospc_tmpfs,
    eio_loop,
    block_device_safety,
);

#[test]
fn auto_picks_io_uring_here_or_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let b = blkqos_engine::open_backend(&dir.path().join("x"), EngineOptions::default()).unwrap();
    eprintln!("auto chose {}", b.kind());
    let _: &RealBackend = &b;
}
