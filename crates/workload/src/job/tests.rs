use super::map::BlockMap;
use super::*;
use crate::spec::{IoEngine, PerDir, SizeSpec};

/// A minimal closed loop: every IO completes `lat` after submission, submit
/// returns immediately.
fn run(spec: JobSpec, lat: Duration, horizon: Instant) -> (Job, Vec<JobIo>) {
    drive(
        Job::new(spec, 0, 0, 1 << 30, 42, Instant::ZERO),
        |_| lat,
        horizon,
    )
}

/// Run `job` until `horizon` or its end, IO `k` (in issue order) taking
/// `lat(k)`; a submit call takes 1 µs.
fn drive(mut job: Job, lat: impl Fn(usize) -> Duration, horizon: Instant) -> (Job, Vec<JobIo>) {
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut issued = Vec::new();
    while now < horizon {
        match job.next_action(now) {
            JobAction::ZoneReset { .. } | JobAction::WaitZone => {
                unreachable!("no zonemode=zbd here")
            }
            JobAction::Issue(io) => {
                inflight.push((now + lat(issued.len()), io));
                issued.push(io);
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
            JobAction::Fsync => job.fsync_done(now),
            JobAction::WaitFlow => panic!("no flow control in these tests"),
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
    let reads = ios.iter().filter(|i| i.ddir == Ddir::Read).count();
    let writes = ios.iter().filter(|i| i.ddir == Ddir::Write).count();
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
    assert_eq!(job.stats.depth_level[0], job.stats.issued[Ddir::Read]);
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
    assert!(job.stats.depth_level[0] as f64 / job.stats.issued[Ddir::Read] as f64 > 0.97);
}

/// The first IO after a thinktime sleep says so (the device model may
/// complete it later); the others do not.
#[test]
fn the_first_io_after_a_thinktime_sleep_is_marked() {
    let mut s = JobSpec::new("t");
    s.rw = RwMode::RandRead;
    s.thinktime = Duration::from_ms(1);
    s.thinktime_blocks = 2;
    s.time_based = true;
    s.runtime = Some(Duration::from_ms(20));
    let (_, ios) = run(s, Duration::from_us(10), Instant::from_ms(20));
    let marks: Vec<bool> = ios.iter().map(|io| io.after_sleep).collect();
    // two IOs per sleep: the first of each pair after the first is marked
    assert!(marks.len() >= 10, "{}", marks.len());
    for (k, m) in marks.iter().enumerate() {
        assert_eq!(*m, k >= 2 && k % 2 == 0, "IO {k}: {marks:?}");
    }
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
            JobAction::ZoneReset { .. } | JobAction::WaitZone => {
                unreachable!("no zonemode=zbd here")
            }
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
            JobAction::Fsync => job.fsync_done(now),
            JobAction::WaitFlow => panic!("no flow control in these tests"),
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

/// Like [`run`], and the job's timers (ramp end, bw/iops samples) fire as
/// the driver fires them. Returns the issued IOs' count per direction.
fn run_timed(spec: JobSpec, lat: Duration, horizon: Instant) -> (Job, PerDir<u64>) {
    let mut job = Job::new(spec, 0, 0, 1 << 30, 42, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut inflight: Vec<(Instant, JobIo)> = Vec::new();
    let mut issued = PerDir::all(0u64);
    let mut steps = 0u64;
    while now < horizon {
        steps += 1;
        assert!(steps < 10_000_000, "no progress at {now:?}");
        if job.next_timer().is_some_and(|t| t <= now) {
            job.on_timer(now);
        }
        match job.next_action(now) {
            JobAction::ZoneReset { .. } | JobAction::WaitZone => {
                unreachable!("no zonemode=zbd here")
            }
            JobAction::Issue(io) => {
                issued[io.ddir] += 1;
                inflight.push((now + lat, io));
                now += Duration::from_us(1);
                job.submitted(now);
            }
            JobAction::WaitCompletion => {
                let t = inflight.iter().map(|x| x.0).min().expect("in flight");
                let t = job.next_timer().map_or(t, |tm| tm.min(t));
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
            JobAction::SleepUntil(t) => {
                now = job.next_timer().map_or(t, |tm| tm.min(t)).max(now);
            }
            JobAction::Fsync => job.fsync_done(now),
            JobAction::WaitFlow => panic!("no flow control in these tests"),
            JobAction::Done => break,
        }
    }
    (job, issued)
}

#[test]
fn ramp_time_ends_and_timers_do_not_spin() {
    // a ramp longer than the sample interval used to leave a sample timer
    // due forever (the driver looped at 500 ms)
    let mut s = JobSpec::new("r");
    s.rw = RwMode::RandRead;
    s.rate_iops = PerDir::all(Some(100));
    s.ramp_time = Duration::from_secs(1);
    s.runtime = Some(Duration::from_secs(2));
    s.time_based = true;
    assert_eq!(
        Job::new(s.clone(), 0, 0, 1 << 30, 1, Instant::ZERO).next_timer(),
        Some(Instant::from_ms(1000)),
        "during the ramp the only timer is its end"
    );
    let (job, _) = run_timed(s, Duration::from_us(50), Instant::from_ms(10_000));
    assert!(job.is_done());
    // stats cover the 2 s after the ramp: 200 IOs (the schedule restarts)
    let n = job.stats.dirs[Ddir::Read].total_ios;
    assert!((199..=201).contains(&n), "{n}");
    assert!(
        job.stats.dirs[Ddir::Read].iops.n > 0,
        "no iops samples after the ramp"
    );
}

#[test]
fn thinktime_after_ramp_waits_for_the_old_block_count() {
    // fio 3.33 zeroes io_blocks at the ramp end but keeps
    // last_thinktime_blocks: ~20 IOs run without pause after a 1 s ramp of
    // 50 ms thinktimes, then one IO per pause (fio: 60 IOs reported)
    let mut s = JobSpec::new("t");
    s.rw = RwMode::RandRead;
    s.thinktime = Duration::from_ms(50);
    s.ramp_time = Duration::from_secs(1);
    s.runtime = Some(Duration::from_secs(2));
    s.time_based = true;
    let (job, _) = run_timed(s, Duration::from_us(50), Instant::from_ms(10_000));
    let n = job.stats.dirs[Ddir::Read].total_ios;
    assert!((59..=61).contains(&n), "{n}");
}

#[test]
fn full_queue_reaps_one_completion_per_wait() {
    // completions (2 µs) arrive while the queue fills (1 µs per submit):
    // fio reaps one per wait (iodepth_batch_complete_max = min = 1), so
    // the completed-block count reaches thinktime_blocks=4 only after
    // 10 or 1 issues per pause: 11 + 1 + 14 × 11 = 166 IOs in 3 s (the
    // real fio 3.33 gives 166), not 8 per pause
    let mut s = JobSpec::new("b");
    s.rw = RwMode::RandRead;
    s.ioengine = IoEngine::Libaio;
    s.iodepth = 8;
    s.thinktime = Duration::from_ms(100);
    s.thinktime_blocks = 4;
    s.runtime = Some(Duration::from_secs(3));
    s.time_based = true;
    let (job, ios) = run(s, Duration::from_us(2), Instant::from_ms(10_000));
    assert_eq!(ios.len(), 166);
    // every full-queue reap took exactly one event (the final drain of
    // the last pause's burst is the only exception, and it is empty here)
    let batches = &job.stats.complete_batches;
    assert_eq!(
        batches.iter().sum::<u64>(),
        batches[JobStats::batch_index(1)]
    );
}

#[test]
fn thinktime_pause_is_not_cut_at_the_runtime() {
    // fio sleeps the whole pause and checks the runtime after it
    let mut s = JobSpec::new("g");
    s.rw = RwMode::RandRead;
    s.thinktime = Duration::from_secs(2);
    s.runtime = Some(Duration::from_secs(1));
    s.time_based = true;
    let (job, ios) = run(s, Duration::from_us(50), Instant::from_ms(10_000));
    assert_eq!(ios.len(), 1);
    let end = job.finished_at().expect("finished");
    assert!(end >= Instant::from_ms(2000), "{end:?}");
    assert_eq!(job.stats.job_runtime_ms, 2000);
}

#[test]
fn rwmix_long_run_mix_is_rwmixread() {
    // fio's switch bookkeeping (set_rwmix_bytes: on a switch the budget is
    // io_issues[old] × rwmix[new] / 100, computed before rwmix_ddir
    // changes) shapes run lengths, not the long-run mix: 90/10 stays 90/10
    let mut s = JobSpec::new("m");
    s.rw = RwMode::RandRw;
    s.rwmixread = 90;
    s.ioengine = IoEngine::Libaio;
    s.time_based = true;
    s.runtime = Some(Duration::from_ms(200));
    let (_, ios) = run(s, Duration::from_us(10), Instant::from_ms(10_000));
    let reads = ios.iter().filter(|i| i.ddir == Ddir::Read).count() as f64;
    let frac = reads / ios.len() as f64;
    assert!((0.88..0.92).contains(&frac), "{frac}");
}

fn ran(spec: JobSpec) -> Vec<JobIo> {
    run(
        spec,
        Duration::from_us(100),
        Instant::ZERO + Duration::from_secs(60),
    )
    .1
}

#[test]
fn bssplit_shares() {
    let mut spec = JobSpec::new("j");
    spec.rw = RwMode::RandRead;
    spec.norandommap = true;
    spec.size = Some(SizeSpec::Bytes(1 << 30));
    spec.number_ios = 10_000;
    let split = vec![
        spec::BsSplit { bs: 65536, pct: 70 },
        spec::BsSplit { bs: 4096, pct: 30 },
    ];
    spec.bssplit = Some(PerDir {
        read: split.clone(),
        write: split.clone(),
        trim: split,
    });
    let ios = ran(spec);
    assert_eq!(ios.len(), 10_000, "number_ios stops the job");
    let big = ios.iter().filter(|io| io.len == 65536).count();
    assert!((6_700..7_300).contains(&big), "{big} of 10000 are 64k");
    assert!(ios.iter().all(|io| io.offset % 4096 == 0));
}

#[test]
fn backwards_sequential_postfix() {
    let mut spec = JobSpec::new("j");
    spec.rw_seq = spec::RwSeq::Add(-8192);
    let mut job = Job::new(spec, 0, 0, 64 << 10, 1, Instant::ZERO);
    let mut offs = Vec::new();
    for _ in 0..4 {
        match job.next_action(Instant::ZERO) {
            JobAction::Issue(io) => {
                offs.push(io.offset);
                job.submitted(Instant::ZERO);
                job.reap(
                    &[Reaped {
                        io,
                        issue_time: Instant::ZERO,
                        error: 0,
                        bytes_done: io.len,
                    }],
                    Instant::ZERO,
                );
            }
            a => panic!("{a:?}"),
        }
    }
    // fio: 0, then from the end backwards one block at a time
    assert_eq!(offs, [0, 56 << 10, 52 << 10, 48 << 10]);
}

#[test]
fn loops_repeat_the_region_and_files_take_turns() {
    let mut spec = JobSpec::new("j");
    spec.loops = 3;
    let mut job = Job::with_files(spec, 0, &[(0, 8192), (1 << 20, 8192)], 1, Instant::ZERO);
    let mut offs = Vec::new();
    while let JobAction::Issue(io) = job.next_action(Instant::ZERO) {
        offs.push(io.offset);
        job.submitted(Instant::ZERO);
        job.reap(
            &[Reaped {
                io,
                issue_time: Instant::ZERO,
                error: 0,
                bytes_done: io.len,
            }],
            Instant::ZERO,
        );
    }
    let pass = [0, 1 << 20, 4096, (1 << 20) + 4096];
    assert_eq!(offs, [pass, pass, pass].concat(), "round robin, 3 loops");
}

#[test]
fn random_every_n_goes_sequential_between() {
    let mut spec = JobSpec::new("j");
    spec.rw = RwMode::RandRead;
    spec.norandommap = true;
    spec.rw_seq = spec::RwSeq::Every(4);
    spec.number_ios = 400;
    let ios = ran(spec);
    let follow = ios
        .windows(2)
        .filter(|w| w[1].offset == w[0].offset + w[0].len)
        .count();
    // three of every four IOs follow on from the one before
    assert!((280..=310).contains(&follow), "{follow}");
}

/// Like [`run`] on a region of `region` bytes to the job's end, IO `k`
/// (in issue order) taking `lat(k)`.
fn run_with(spec: JobSpec, region: u64, lat: impl Fn(usize) -> Duration) -> Job {
    let job = Job::new(spec, 0, 0, region, 42, Instant::ZERO);
    drive(job, lat, Instant(u64::MAX)).0
}

#[test]
fn the_last_ios_are_reaped_together_when_the_last_completes() {
    // fio do_io: 4 IOs fill the queue (1 µs per submit), a full queue
    // reaps one (the 1 ms IO), the size is issued, and the loop's end
    // reaps the other three with io_u_queued_complete(td, cur_depth): one
    // getevents call waiting for all, so their clat ends at 4 ms
    let mut s = JobSpec::new("d");
    s.rw = RwMode::RandRead;
    s.ioengine = IoEngine::Libaio;
    s.iodepth = 4;
    s.size = Some(SizeSpec::Bytes(16 << 10));
    let job = run_with(s, 16 << 10, |k| Duration::from_ms(k as u64 + 1));
    let d = &job.stats.dirs[Ddir::Read];
    assert_eq!(d.total_ios, 4);
    assert_eq!(d.clat.min, 1_000_000);
    // issued at 0, 1, 2, 3 µs; the last three reaped together when the
    // last completes, at 3 µs + 4 ms (one by one: 2, 3 and 4 ms)
    assert_eq!(d.clat.max, 4_002_000);
    let mean_ns = (1_000_000.0 + 4_002_000.0 + 4_001_000.0 + 4_000_000.0) / 4.0;
    assert!((d.clat.mean - mean_ns).abs() < 1.0, "{}", d.clat.mean);
    // two getevents calls: one event, then three
    assert_eq!(job.stats.complete_batches.iter().sum::<u64>(), 2);
}
