use super::*;
use crate::spec::{IoEngine, PerDir, SizeSpec};

/// A minimal closed loop: every IO completes `lat` after submission, submit
/// returns immediately.
fn run(spec: JobSpec, lat: Duration, horizon: Instant) -> (Job, Vec<JobIo>) {
    let mut job = Job::new(spec, 0, 0, 1 << 30, 42, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut issued = Vec::new();
    while now < horizon {
        match job.next_action(now) {
            JobAction::Issue(io) => {
                issued.push(io);
                inflight.push((now + lat, io));
                // a submit call takes 1 µs, so completions trickle in
                now += Duration::from_us(1);
                job.submitted(now);
            }
            JobAction::WaitCompletion => {
                let t = inflight
                    .iter()
                    .map(|x| x.0)
                    .min()
                    .expect("waiting with nothing in flight");
                now = now.max(t);
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
            JobAction::Done => break,
        }
    }
    (job, issued)
}

#[test]
fn rate_iops_is_per_direction() {
    let mut s = JobSpec::new("b");
    s.rw = RwMode::RandRw;
    s.rate_iops = PerDir::all(Some(100));
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(10));
    s.ioengine = IoEngine::Libaio;
    let (_, ios) = run(s, Duration::from_us(50), Instant::from_ms(10_000));
    let reads = ios.iter().filter(|i| i.ddir == 0).count();
    let writes = ios.iter().filter(|i| i.ddir == 1).count();
    // 100 reads/s and 100 writes/s: ~1000 each over 10 s
    assert!((990..=1010).contains(&reads), "reads {reads}");
    assert!((990..=1010).contains(&writes), "writes {writes}");
}

#[test]
fn rate_quiesces_to_depth_one() {
    let mut s = JobSpec::new("q");
    s.rw = RwMode::RandRead;
    s.iodepth = 8;
    s.ioengine = IoEngine::Libaio;
    s.rate_iops = PerDir::all(Some(500));
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(2));
    let (job, ios) = run(s, Duration::from_us(100), Instant::from_ms(2000));
    assert!((995..=1005).contains(&ios.len()), "{}", ios.len());
    // every submission happened at depth 1
    assert_eq!(job.stats.depth_level[0], job.stats.issued[0]);
}

#[test]
fn thinktime_blocks_burst() {
    let mut s = JobSpec::new("t");
    s.rw = RwMode::RandRead;
    s.iodepth = 8;
    s.ioengine = IoEngine::Libaio;
    s.thinktime = Duration::from_ms(2);
    s.thinktime_blocks = 8;
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(1));
    let (_, ios) = run(s.clone(), Duration::from_us(10), Instant::from_ms(1000));
    // bursts of 8 then a 2 ms pause: ~8 / 2.01ms ≈ 3980 IOPS
    assert!((3800..=4100).contains(&ios.len()), "{}", ios.len());
    s.thinktime_blocks = 1;
    let (job, ios) = run(s, Duration::from_us(10), Instant::from_ms(1000));
    // after the first fill, depth 1 with a pause per IO: ~1/2.01ms
    assert!((490..=510).contains(&ios.len()), "{}", ios.len());
    assert!(job.stats.depth_level[0] as f64 / job.stats.issued[0] as f64 > 0.97);
}

#[test]
fn size_bound_job_covers_region_once() {
    let mut s = JobSpec::new("m");
    s.rw = RwMode::RandRead;
    s.size = Some(SizeSpec::Bytes(1 << 20));
    let mut job = Job::new(s, 0, 0, 1 << 20, 1, Instant::ZERO);
    let mut offs = Vec::new();
    let mut now = Instant::ZERO;
    loop {
        match job.next_action(now) {
            JobAction::Issue(io) => {
                offs.push(io.offset);
                job.submitted(now);
                now += Duration::from_us(1);
                job.reap(
                    &[Reaped {
                        io,
                        issue_time: now,
                        error: 0,
                        bytes_done: io.len,
                    }],
                    now,
                );
            }
            JobAction::Done => break,
            a => panic!("unexpected {a:?}"),
        }
    }
    offs.sort_unstable();
    let expect: Vec<u64> = (0..256).map(|b| b * 4096).collect();
    assert_eq!(offs, expect);
}

#[test]
fn block_map_wraps_and_resets() {
    let mut m = BlockMap::new(130);
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..130 {
        assert!(seen.insert(m.take_near((i * 7) % 130)));
    }
    assert_eq!(seen.len(), 130);
    // new pass
    assert_eq!(m.take_near(5), 5);
}
