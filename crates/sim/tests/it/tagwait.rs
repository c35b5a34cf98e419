//! Tag waits block the submitter, as in the kernel: `blk_mq_get_tag`
//! (block/blk-mq-tag.c) sleeps in the task that allocates the request, so a
//! libaio job's `io_submit` returns only once its IO holds a tag (its
//! `slat` includes the wait), the job has at most one IO waiting for a tag
//! at a time, and the pieces of a split bio after the one waiting for a tag
//! are cut only once it has one (`__submit_bio_noacct` takes the next bio
//! off `current->bio_list` after `blk_mq_submit_bio` returned).

use blkqos_core::{ControllerStack, Duration, GroupId};
use blkqos_driver::run::{JobSetup, RequestRecord};
use blkqos_driver::{RunOptions, RunResult};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// 4 tags (`nr_requests` = hw_queues × queue_depth), 100 µs per request.
const DEV: &str = "null,queue_depth=4,completion_ns=100000,max_sectors_kb=128,size=1g";

fn job(bs: u64, iodepth: u32, size: u64) -> JobSpec {
    let mut s = JobSpec::new("tagwait");
    s.rw = RwMode::RandRead;
    s.bs = PerDir {
        read: bs,
        write: bs,
        trim: bs,
    };
    s.ioengine = IoEngine::Libaio;
    s.iodepth = iodepth;
    s.direct = true;
    s.size = Some(blkqos_workload::SizeSpec::Bytes(size));
    s
}

fn run(spec: JobSpec) -> RunResult {
    let dev = DeviceSpec::parse(DEV).expect("device");
    let mut backend = dev.backend();
    let len = match spec.size {
        Some(blkqos_workload::SizeSpec::Bytes(b)) => b,
        _ => dev.capacity,
    };
    let setups = vec![JobSetup {
        spec,
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: len,
        seed: 1,
        files: Vec::new(),
    }];
    let opts = RunOptions {
        hz: 1000,
        trace_requests: true,
        ..RunOptions::default()
    };
    let mut stack = ControllerStack::new();
    blkqos_driver::run(&mut backend, &mut stack, setups, &opts).expect("run")
}

/// The most requests waiting for a tag at once: a request waits from
/// entering the block layer (`submitted_at`) until it starts.
fn max_waiting(trace: &[RequestRecord]) -> usize {
    let mut ev: Vec<(u64, i32)> = Vec::new();
    for r in trace.iter().filter(|r| r.started_at > r.submitted_at) {
        ev.push((r.submitted_at.as_ns(), 1));
        ev.push((r.started_at.as_ns(), -1));
    }
    // at equal times the ends come first
    ev.sort_unstable();
    let (mut n, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        n += d;
        max = max.max(n);
    }
    max as usize
}

/// QD128 on 4 tags: the device runs 4 at a time, the 5th IO waits for a
/// tag inside its submit call, and the job cannot queue the other 123
/// behind it: at most one waits at any time, and the submit call's slat
/// is the wait for a completion (up to 100 µs), not the bare 1 µs call.
#[test]
fn qd128_on_four_tags_has_one_tag_waiter() {
    let r = run(job(4 * KIB, 128, 4 * MIB));
    let d = &r.jobs[0].stats.dirs.read;
    assert_eq!(d.total_ios, 1024);
    let w = max_waiting(&r.request_trace);
    assert_eq!(w, 1, "at most one IO of the job waits for a tag");
    // the device stays saturated: 4 requests per 100 µs
    let ms = r.ended_at.as_ns() as f64 / 1e6;
    assert!((25.0..27.0).contains(&ms), "ran {ms} ms");
    // the submit calls that found no tag returned with their IO's tag
    // (the 5th entered the block layer 4 µs after the 1st started)
    assert!(d.slat.max >= 96_000, "slat max {}", d.slat.max);
    // the requests complete 1 µs apart, as they started: the call that
    // finds no tag waits up to a request's 100 µs, the next ones about
    // a call's 1 µs (a completion frees a tag as they enter): a quarter
    // wait long, so the mean is ~25 µs, not the 1 µs of a free tag
    assert!(d.slat.mean > 20_000.0, "slat mean {}", d.slat.mean);
    // and that wait is in the request: rq_wait, not the device's time
    assert!(r
        .request_trace
        .iter()
        .all(|t| (t.completed_at - t.started_at) == Duration(100_000)));
}

/// One 1 MiB read on 128 KiB requests and 4 tags: pieces 1-4 get tags,
/// piece 5 waits for one, and pieces 6-8 are cut only after piece 5 got
/// its tag (at the first completion, 100 µs in); the submit call returns
/// when the last piece has its tag.
#[test]
fn split_rest_waits_for_front_piece_tag() {
    let r = run(job(MIB, 1, MIB));
    let mut t = r.request_trace.clone();
    assert_eq!(t.len(), 8);
    assert!(t.iter().all(|p| p.bytes == 128 * KIB));
    t.sort_by_key(|p| (p.submitted_at, p.started_at));
    let t0 = t[0].submitted_at;
    let first: Vec<_> = t.iter().filter(|p| p.submitted_at == t0).collect();
    assert_eq!(first.len(), 5, "4 pieces with tags, 1 waiting: {t:#?}");
    let fifth = first
        .iter()
        .find(|p| p.started_at > t0)
        .expect("a piece waits");
    assert_eq!(fifth.started_at - t0, Duration(100_000));
    for p in t.iter().filter(|p| p.submitted_at > t0) {
        assert!(p.submitted_at >= fifth.started_at, "{p:?} before {fifth:?}");
    }
    assert!(max_waiting(&r.request_trace) <= 1);
    let d = &r.jobs[0].stats.dirs.read;
    assert!(d.slat.min >= 100_000, "slat {}", d.slat.min);
}
