//! `io_submit_mode=offload` against inline submission.

use super::*;
use crate::spec::{IoEngine, PerDir};

/// A closed loop with the driver's offload delivery: every IO completes
/// `lat` after it is issued and, offloaded, is reaped at that instant
/// (inline, the job reaps when it asks). Returns the job and the issue
/// times with the most IOs ever in flight.
fn run(spec: JobSpec, lat: Duration, horizon: Instant) -> (Job, Vec<Instant>, u32) {
    let offload = spec.submit.mode == IoSubmitMode::Offload;
    let mut job = Job::new(spec, 0, 0, 1 << 30, 42, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut issued = Vec::new();
    let mut max_in_flight = 0;
    let mut ring: Vec<Reaped> = Vec::new();
    let reaped = |io: JobIo| Reaped {
        io,
        issue_time: io.start_time,
        error: 0,
        bytes_done: io.len,
    };
    // completions up to `t` arrive: offloaded ones are reaped then
    let arrive = |job: &mut Job,
                  inflight: &mut Vec<(Instant, JobIo)>,
                  ring: &mut Vec<Reaped>,
                  t: Instant| {
        inflight.sort_by_key(|x| x.0);
        while inflight.first().is_some_and(|x| x.0 <= t) {
            let (at, io) = inflight.remove(0);
            if offload {
                job.reap_offloaded(reaped(io), at);
            } else {
                ring.push(reaped(io));
            }
        }
    };
    while now < horizon {
        arrive(&mut job, &mut inflight, &mut ring, now);
        match job.next_action(now) {
            JobAction::Issue(io) => {
                issued.push(now);
                inflight.push((now + lat, io));
                max_in_flight = max_in_flight.max(job.in_flight());
                job.submitted(now);
            }
            JobAction::WaitCompletion => {
                if ring.is_empty() {
                    now = inflight.iter().map(|x| x.0).min().expect("in flight");
                    arrive(&mut job, &mut inflight, &mut ring, now);
                }
                if !ring.is_empty() {
                    job.reap(&ring, now);
                    ring.clear();
                }
            }
            JobAction::SleepUntil(t) => {
                arrive(&mut job, &mut inflight, &mut ring, t);
                now = t;
            }
            JobAction::Done => break,
            a => panic!("unexpected {a:?}"),
        }
    }
    (job, issued, max_in_flight)
}

fn rated(mode: IoSubmitMode) -> JobSpec {
    let mut s = JobSpec::new("r");
    s.rw = RwMode::RandRead;
    s.iodepth = 8;
    s.ioengine = IoEngine::Libaio;
    s.rate_iops = PerDir::all(Some(500));
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(1));
    s.submit.mode = mode;
    s
}

#[test]
fn offload_issues_on_schedule_without_quiescing() {
    // 5 ms per IO, one due every 2 ms: offloaded, the job never waits
    // for its IO before a rate sleep (fio rate_ddir quiesces only inline)
    let lat = Duration::from_ms(5);
    let (job, issued, max_in_flight) =
        run(rated(IoSubmitMode::Offload), lat, Instant::from_ms(1000));
    assert!((499..=501).contains(&issued.len()), "{}", issued.len());
    for (k, t) in issued.iter().enumerate() {
        assert_eq!(t.as_ns(), k as u64 * 2_000_000, "IO {k} off its schedule");
    }
    assert_eq!(max_in_flight, 3);
    // each worker reaps its IO as it completes: clat is the device's 5 ms
    let d = &job.stats.dirs[Ddir::Read];
    assert_eq!(d.total_ios, issued.len() as u64 - 2);
    // a worker submits at depth 1 (fio io_u_mark_depth in the worker)
    assert_eq!(job.stats.depth_level[0], job.stats.issued[Ddir::Read]);

    // inline, the job quiesces before every rate sleep: an IO waits for
    // the one before it, and the schedule is only caught up in bursts
    let (_, issued, max_in_flight) = run(rated(IoSubmitMode::Inline), lat, Instant::from_ms(1000));
    assert!(issued
        .iter()
        .enumerate()
        .any(|(k, t)| t.as_ns() != k as u64 * 2_000_000));
    assert!(max_in_flight >= 2, "catch-up bursts overlap");
}

#[test]
fn offload_clat_ends_at_completion() {
    let mut s = rated(IoSubmitMode::Offload);
    s.rate_iops = PerDir::all(Some(100));
    let (job, _, _) = run(s, Duration::from_ms(3), Instant::from_ms(1000));
    let d = &job.stats.dirs[Ddir::Read];
    assert!(d.total_ios > 90);
    assert_eq!(d.clat.min, 3_000_000);
    assert_eq!(d.clat.max, 3_000_000);
}

/// The number in flight before each submission, inline, with IOs taking
/// `lat` and submit calls 1 µs, reaping one completion per call.
fn depths_at_issue(spec: JobSpec, lat: Duration, n: usize) -> Vec<u32> {
    let mut job = Job::new(spec, 0, 0, 1 << 30, 42, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        match job.next_action(now) {
            JobAction::Issue(io) => {
                out.push(job.in_flight() - 1);
                inflight.push((now + lat, io));
                now += Duration::from_us(1);
                job.submitted(now);
            }
            JobAction::WaitCompletion => {
                inflight.sort_by_key(|x| x.0);
                let (at, io) = inflight.remove(0);
                now = now.max(at);
                let r = Reaped {
                    io,
                    issue_time: io.start_time,
                    error: 0,
                    bytes_done: io.len,
                };
                job.reap(&[r], now);
            }
            a => panic!("unexpected {a:?}"),
        }
    }
    out
}

#[test]
fn iodepth_low_reaps_a_full_queue_down_before_refilling() {
    let mut s = JobSpec::new("low");
    s.rw = RwMode::RandRead;
    s.ioengine = IoEngine::Libaio;
    s.iodepth = 8;
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(1));
    let lat = Duration::from_us(100);
    // fio's default (iodepth_low = iodepth): one reap, one submit
    let d = depths_at_issue(s.clone(), lat, 40);
    assert_eq!(&d[..8], &[0, 1, 2, 3, 4, 5, 6, 7]);
    assert!(d[8..].iter().all(|&x| x == 7), "{d:?}");
    // iodepth_low=2: reaped down to 2, then refilled to 8
    s.submit.iodepth_low = 2;
    let d = depths_at_issue(s.clone(), lat, 40);
    assert_eq!(&d[8..20], &[2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7], "{d:?}");
    // more than the iodepth is the iodepth (fio fixup_options)
    s.submit.iodepth_low = 100;
    let d = depths_at_issue(s, lat, 40);
    assert!(d[8..].iter().all(|&x| x == 7), "{d:?}");
}
