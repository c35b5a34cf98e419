//! The read-back phases of a verifying job (fio 3.33 backend.c
//! `do_verify`, io_u.c `check_get_verify`), driven by a closed loop.

use super::*;
use crate::spec::{IoEngine, SizeSpec, VerifyKind};

/// Every IO completes `lat` after its submit call (1 µs); the job's region
/// is its `size`. Returns the job and what it issued, syncs as `None`.
fn run(spec: JobSpec, lat: Duration, horizon: Instant) -> (Job, Vec<JobIo>) {
    let Some(SizeSpec::Bytes(len)) = spec.size else {
        panic!("tests give a size in bytes")
    };
    let mut job = Job::new(spec, 0, 0, len, 42, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut issued = Vec::new();
    while now < horizon {
        match job.next_action(now) {
            JobAction::ZoneReset { .. } | JobAction::WaitZone => {
                unreachable!("no zonemode=zbd here")
            }
            JobAction::Issue(io) => {
                issued.push(io);
                now += Duration::from_us(1);
                inflight.push((now + lat, io));
                job.submitted(now);
            }
            JobAction::WaitCompletion => {
                now = now.max(inflight.iter().map(|x| x.0).min().expect("in flight"));
                let (done, rest): (Vec<_>, Vec<_>) = inflight.into_iter().partition(|x| x.0 <= now);
                inflight = rest;
                let batch: Vec<Reaped> = done
                    .iter()
                    .map(|&(_, io)| Reaped {
                        io,
                        issue_time: io.start_time,
                        error: 0,
                        bytes_done: io.len,
                    })
                    .collect();
                job.reap(&batch, now);
            }
            JobAction::SleepUntil(t) => now = t,
            JobAction::Fsync => job.fsync_done(now),
            JobAction::WaitFlow => panic!("no flow control here"),
            JobAction::Done => break,
        }
    }
    (job, issued)
}

fn verifying(rw: RwMode, size: u64) -> JobSpec {
    let mut s = JobSpec::new("v");
    s.rw = rw;
    s.size = Some(SizeSpec::Bytes(size));
    s.direct = true;
    s.ioengine = IoEngine::Psync;
    s.verify.kind = VerifyKind::Crc32c;
    s.verify.kind_set = true;
    s
}

fn dirs(ios: &[JobIo]) -> String {
    ios.iter()
        .map(|i| if i.ddir == Ddir::Read { 'r' } else { 'w' })
        .collect()
}

#[test]
fn reads_back_after_the_writes_in_offset_order() {
    let s = verifying(RwMode::Write, 16 << 10);
    let (job, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    assert_eq!(dirs(&ios), "wwwwrrrr");
    let offs: Vec<u64> = ios.iter().map(|i| i.offset).collect();
    assert_eq!(offs, [0, 4096, 8192, 12288, 0, 4096, 8192, 12288]);
    assert!(ios.iter().all(|i| i.len == 4096));
    assert_eq!(job.stats.dirs[Ddir::Read].total_ios, 4);
}

#[test]
fn random_writes_are_read_back_in_issue_order_or_sorted() {
    let s = verifying(RwMode::RandWrite, 64 << 10);
    let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    let (w, r): (Vec<&JobIo>, Vec<&JobIo>) = ios.iter().partition(|i| i.ddir == Ddir::Write);
    assert_eq!(w.len(), 16);
    let wo: Vec<u64> = w.iter().map(|i| i.offset).collect();
    let ro: Vec<u64> = r.iter().map(|i| i.offset).collect();
    assert_eq!(ro, wo, "random map: the list in issue order");
    let mut s = verifying(RwMode::RandWrite, 64 << 10);
    s.norandommap = true;
    let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    let ro: Vec<u64> = ios
        .iter()
        .filter(|i| i.ddir == Ddir::Read)
        .map(|i| i.offset)
        .collect();
    let mut sorted = ro.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(ro, sorted, "no random map: sorted, each block once");
    assert!(ro.len() < 16, "overwritten blocks are read back once");
}

#[test]
fn backlog_interleaves_rounds_of_the_batch() {
    let mut s = verifying(RwMode::RandWrite, 64 << 10);
    s.verify.backlog = 3;
    s.verify.backlog_batch = 2;
    let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    assert!(dirs(&ios).starts_with("wwwrrwwrrwwrr"), "{}", dirs(&ios));
    assert_eq!(ios.iter().filter(|i| i.ddir == Ddir::Read).count(), 16);
    // every read-back is of a block written before it, oldest first
    let mut written = std::collections::VecDeque::new();
    for io in &ios {
        if io.ddir == Ddir::Write {
            written.push_back(io.offset);
        } else {
            assert_eq!(Some(io.offset), written.pop_front());
        }
    }
}

#[test]
fn each_direction_runs_for_its_phases() {
    let s = verifying(RwMode::Write, 64 << 10);
    let (job, _) = run(s, Duration::from_ms(1), Instant::from_ms(1000));
    let (r, w) = (
        job.stats.dirs[Ddir::Read].runtime_ms,
        job.stats.dirs[Ddir::Write].runtime_ms,
    );
    // 16 writes then 16 reads of ~1 ms each: each direction ~16 ms, the
    // job ~32 ms
    assert!((16..=18).contains(&w), "write runtime {w}");
    assert!((16..=18).contains(&r), "read runtime {r}");
    assert!(job.stats.job_runtime_ms >= 32);
}

#[test]
fn no_read_back_when_the_runtime_ends_during_the_writes() {
    let mut s = verifying(RwMode::Write, 64 << 10);
    s.runtime = Some(Duration::from_ms(5));
    let (_, ios) = run(s, Duration::from_ms(1), Instant::from_ms(1000));
    assert!(ios.iter().all(|i| i.ddir == Ddir::Write));
    let mut s = verifying(RwMode::Write, 16 << 10);
    s.verify.do_verify = false;
    let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    assert_eq!(dirs(&ios), "wwww");
}

#[test]
fn loops_repeat_writes_then_read_back() {
    let mut s = verifying(RwMode::Write, 8 << 10);
    s.loops = 2;
    let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
    assert_eq!(dirs(&ios), "wwrrwwrr");
}

#[test]
fn time_based_reads_back_per_pass_only_with_a_queued_engine() {
    let timed = |engine: IoEngine| {
        let mut s = verifying(RwMode::RandWrite, 64 << 10);
        s.ioengine = engine;
        s.iodepth = 4;
        s.time_based = true;
        s.runtime = Some(Duration::from_ms(50));
        let (_, ios) = run(s, Duration::from_us(100), Instant::from_ms(1000));
        let reads = ios.iter().filter(|i| i.ddir == Ddir::Read).count();
        (reads, ios.len() - reads)
    };
    let (r, w) = timed(IoEngine::Psync);
    assert_eq!(r, 0, "sync engine: the writes never end ({w} writes)");
    let (r, w) = timed(IoEngine::Libaio);
    assert!(
        r >= 16 && w >= 32,
        "passes of 16 writes, each read back: {r} reads, {w} writes"
    );
}
