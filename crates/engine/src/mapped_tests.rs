use super::*;
use blkqos_core::{GroupId, IoFlags, IoId, Submitter};
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;

fn io(op: IoOp, clone: u32, offset: u64, len: u64) -> Io {
    Io {
        id: IoId(offset),
        submitter: Submitter(clone),
        group: GroupId::default(),
        op,
        flags: IoFlags::default(),
        offset,
        len,
        submitted_at: Instant(0),
        cost_vtime: 0,
        ioprio: 0,
    }
}

fn setup(engine: MapEngine, fill: Option<Vec<u8>>, regions: Vec<usize>) -> CloneSetup {
    CloneSetup {
        engine,
        sync: false,
        direct: false,
        fill,
        scramble: false,
        seed: 7,
        max_io_bytes: 64 << 10,
        regions,
    }
}

/// Submit `io` and return its completion.
fn run(b: &mut MappedBackend, io: Io) -> Completion {
    b.submit(&io, Instant(0));
    let mut out = Vec::new();
    b.wait(None, &mut out);
    assert_eq!(out.len(), 1);
    out.remove(0)
}

fn pmem_file(dir: &std::path::Path, len: u64) -> (PathBuf, File) {
    let path = dir.join("pmem");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.set_len(len).unwrap();
    (path, f)
}

#[test]
fn libpmem_writes_land_in_the_file_and_reads_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let (path, f) = pmem_file(dir.path(), 1 << 20);
    // the region lies at 8 MiB on the ledger
    let base = 8 << 20;
    let r = Region::shared(path, &f, base, 1 << 20).unwrap();
    let mut s = setup(MapEngine::Libpmem, Some(b"pmem".to_vec()), vec![0]);
    s.sync = true;
    let mut b = MappedBackend::new(vec![r], vec![s]);
    let c = run(&mut b, io(IoOp::Write, 0, base + 3 * PAGE, 2 * PAGE));
    assert_eq!((c.error, c.bytes), (0, 2 * PAGE));
    // sync=1: one drain (msync) per write
    assert_eq!(b.msyncs(), 1);
    let mut back = vec![0u8; 2 * PAGE as usize];
    f.read_exact_at(&mut back, 3 * PAGE).unwrap();
    assert!(back.chunks(4).all(|w| w == b"pmem"));
    let c = run(&mut b, io(IoOp::Read, 0, base + 3 * PAGE, PAGE));
    assert_eq!((c.error, c.bytes), (0, PAGE));
    // a trim is EINVAL, as in fio's engine
    let c = run(&mut b, io(IoOp::Discard, 0, base, PAGE));
    assert_eq!(c.error, libc::EINVAL);
    // a sync IO drains the whole mapping
    let c = run(&mut b, io(IoOp::Flush, 0, base, 0));
    assert_eq!(c.error, 0);
    assert_eq!(b.msyncs(), 2);
}

#[test]
fn libpmem_without_sync_drains_at_the_end_unless_direct() {
    let dir = tempfile::tempdir().unwrap();
    let (path, f) = pmem_file(dir.path(), 1 << 20);
    let regions = vec![Region::shared(path, &f, 0, 1 << 20).unwrap()];
    let plain = setup(MapEngine::Libpmem, Some(vec![0x5a]), vec![0]);
    let mut direct = plain.clone();
    direct.direct = true;
    direct.fill = Some(vec![0xa5]);
    let mut b = MappedBackend::new(regions, vec![plain, direct]);
    run(&mut b, io(IoOp::Write, 0, 0, PAGE));
    // non-temporal copy, at an offset that is not 16-byte aligned
    run(&mut b, io(IoOp::Write, 1, PAGE + 3, 1000));
    assert_eq!(b.msyncs(), 0);
    b.close().unwrap();
    // only the clone without direct=1 drains (fio_libpmem_close_file)
    assert_eq!(b.msyncs(), 1);
    let mut back = vec![0u8; 2 * PAGE as usize];
    f.read_exact_at(&mut back, 0).unwrap();
    assert!(back[..PAGE as usize].iter().all(|&x| x == 0x5a));
    assert!(back[PAGE as usize + 3..PAGE as usize + 1003]
        .iter()
        .all(|&x| x == 0xa5));
    assert_eq!(back[PAGE as usize + 1003], 0);
}

#[test]
fn scrambled_writes_carry_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let (path, f) = pmem_file(dir.path(), 1 << 20);
    let regions = vec![Region::shared(path, &f, 0, 1 << 20).unwrap()];
    let mut s = setup(MapEngine::Libpmem, None, vec![0]);
    s.scramble = true;
    let mut b = MappedBackend::new(regions, vec![s]);
    run(&mut b, io(IoOp::Write, 0, 64 << 10, 1024));
    let mut back = vec![0u8; 1024];
    f.read_exact_at(&mut back, 64 << 10).unwrap();
    // each 512-byte block holds its own offset at one cache line's start
    let has = |block: &[u8], v: u64| (0..8).any(|l| block[l * 64..l * 64 + 8] == v.to_ne_bytes());
    assert!(has(&back[..512], 64 << 10));
    assert!(has(&back[512..], (64 << 10) + 512));
}

#[test]
fn page_fault_touches_every_page_it_writes() {
    let pages = 512u64;
    let r = Region::anonymous(0, pages * PAGE).unwrap();
    let s = setup(MapEngine::PageFault, Some(vec![1]), vec![0]);
    let mut b = MappedBackend::new(vec![r], vec![s]);
    let before = crate::usage::ProcessUsage::thread_now().unwrap();
    for p in 0..pages {
        let c = run(&mut b, io(IoOp::Write, 0, p * PAGE, PAGE));
        assert_eq!(c.error, 0);
    }
    let after = crate::usage::ProcessUsage::thread_now().unwrap();
    let faults = after.since(&before).minflt;
    // one minor fault per page first written (more with the test's own)
    assert!(faults >= pages, "{faults} minor faults for {pages} pages");
    // the backend charges them to the clone
    let (minor, _) = b.faults(0).unwrap();
    assert!((pages..=faults).contains(&minor), "{minor} of {faults}");
    // written again: the pages are there, (almost) no new faults
    let before = crate::usage::ProcessUsage::thread_now().unwrap();
    for p in 0..pages {
        run(&mut b, io(IoOp::Write, 0, p * PAGE, PAGE));
    }
    let again = crate::usage::ProcessUsage::thread_now()
        .unwrap()
        .since(&before)
        .minflt;
    assert!(again < pages / 4, "{again} faults rewriting {pages} pages");
    // past the mapping: EINVAL (fio_page_fault_queue)
    let c = run(&mut b, io(IoOp::Write, 0, (pages - 1) * PAGE, 2 * PAGE));
    assert_eq!(c.error, libc::EINVAL);
}

#[test]
fn page_fault_clones_have_their_own_memory() {
    let regions = vec![
        Region::anonymous(0, 16 * PAGE).unwrap(),
        Region::anonymous(16 * PAGE, 16 * PAGE).unwrap(),
    ];
    let a = setup(MapEngine::PageFault, Some(vec![0xaa]), vec![0]);
    let bb = setup(MapEngine::PageFault, Some(vec![0xbb]), vec![1]);
    let mut b = MappedBackend::new(regions, vec![a, bb]);
    run(&mut b, io(IoOp::Write, 0, PAGE, PAGE));
    // clone 1's region starts where clone 0's ends: its own pages
    let c = run(&mut b, io(IoOp::Read, 1, 17 * PAGE, PAGE));
    assert_eq!(c.error, 0);
    assert!(b.clones[1].buf[..PAGE as usize].iter().all(|&x| x == 0));
    let c = run(&mut b, io(IoOp::Read, 0, PAGE, PAGE));
    assert_eq!(c.error, 0);
    assert!(b.clones[0].buf[..PAGE as usize].iter().all(|&x| x == 0xaa));
    // a clone's IO outside its own regions fails
    let c = run(&mut b, io(IoOp::Read, 0, 17 * PAGE, PAGE));
    assert_eq!(c.error, libc::EINVAL);
    // a sync does nothing and succeeds
    assert_eq!(run(&mut b, io(IoOp::Flush, 0, 0, 0)).error, 0);
}

#[test]
fn dev_dax_copies_persist_through_the_cache() {
    // no device here: the same copy on a shared file mapping
    let dir = tempfile::tempdir().unwrap();
    let (path, f) = pmem_file(dir.path(), 1 << 20);
    let regions = vec![Region::shared(path, &f, 0, 1 << 20).unwrap()];
    let s = setup(MapEngine::DevDax, Some(vec![3]), vec![0]);
    let mut b = MappedBackend::new(regions, vec![s]);
    assert_eq!(run(&mut b, io(IoOp::Write, 0, 2 << 10, 8 << 10)).error, 0);
    // dev-dax's writes do not msync
    assert_eq!(b.msyncs(), 0);
    let mut back = vec![0u8; 8 << 10];
    f.read_exact_at(&mut back, 2 << 10).unwrap();
    assert!(back.iter().all(|&x| x == 3));
}
