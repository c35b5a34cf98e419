//! Stopping a run, in virtual time: a random reader under blk-throttle
//! (`riops=100`, 16 reads in flight, so about 15 wait in the throttle at
//! any time) is stopped at t = 1 s by the stop flag, with or without the
//! abandon flag (set together: a SIGTERM, or a second signal).
//!
//! * stop: the job stops issuing and waits for its reads; the throttle
//!   releases them at 100 IOPS, so the drain takes about 0.15 s and every
//!   read issued completes.
//! * stop + abandon: the run waits only for what the device has, drops
//!   what the throttle holds and ends at once; the job's report ends there
//!   (runtime ≈ 1 s, every read it reaped counted).

use blkqos_core::throttle::knob::{parse_io_max, Limits};
use blkqos_core::throttle::{Throttle, ThrottleConfig, Variant};
use blkqos_core::{CgroupTree, ControllerStack, Duration, GroupId, Instant, Io, Jiffies};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{Backend, Completion, RunOptions, RunResult};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A backend that raises flags once its clock passes `at` (the signal).
struct SignalAt<B: Backend> {
    inner: B,
    at: Instant,
    flags: Vec<Arc<AtomicBool>>,
}

impl<B: Backend> Backend for SignalAt<B> {
    fn now(&self) -> Instant {
        self.inner.now()
    }
    fn nr_requests(&self) -> u32 {
        self.inner.nr_requests()
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn max_io_bytes(&self) -> u64 {
        self.inner.max_io_bytes()
    }
    fn buffer_write(&mut self, offset: u64, len: u64) {
        self.inner.buffer_write(offset, len)
    }
    fn max_segments(&self) -> u32 {
        self.inner.max_segments()
    }
    fn plug_merges(&self) -> bool {
        self.inner.plug_merges()
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        self.inner.submit(io, now)
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        // wake up at the signal as a real run would
        let d = match deadline {
            Some(d) if self.inner.now() < self.at => Some(d.min(self.at)),
            None if self.inner.now() < self.at => Some(self.at),
            d => d,
        };
        self.inner.wait(d, out);
        if self.inner.now() >= self.at {
            for f in &self.flags {
                f.store(true, Ordering::SeqCst);
            }
        }
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

fn throttled(line: &str) -> (ControllerStack, GroupId) {
    let mut tree = CgroupTree::new();
    let g = tree.ensure("/cg").expect("cgroup");
    let cfg = ThrottleConfig {
        variant: Variant::by_name("mainline").expect("variant"),
        hz: 1000,
        rotational: false,
        flat: false,
        jiffies_at_start: Jiffies::ZERO,
        tick_phase_ns: 0,
    };
    let mut th = Throttle::new(cfg, &tree);
    let mut l = Limits::default();
    parse_io_max(line).expect("io.max line").apply(&mut l);
    th.set_limits(g, l, Instant::ZERO);
    let mut stack = ControllerStack::new();
    stack.push(Box::new(th));
    (stack, g)
}

/// The reader stopped at 1 s; `abandon`: the abandon flag is set too.
fn stopped_at_one_second(abandon: bool) -> RunResult {
    let dev = DeviceSpec::parse("ssd").expect("device");
    let (mut stack, g) = throttled("1:0 riops=100");
    let mut spec = JobSpec::new("r");
    spec.rw = RwMode::RandRead;
    spec.bs = PerDir {
        read: 4096,
        write: 4096,
        trim: 4096,
    };
    spec.ioengine = IoEngine::Libaio;
    spec.iodepth = 16;
    spec.direct = true;
    spec.time_based = true;
    spec.runtime = Some(Duration::from_secs(100));
    let setup = JobSetup {
        spec,
        clone: 0,
        group: g,
        region_start: 0,
        region_len: 1 << 30,
        seed: 1,
        files: Vec::new(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let abandon_flag = Arc::new(AtomicBool::new(false));
    let mut flags = vec![stop.clone()];
    if abandon {
        flags.push(abandon_flag.clone());
    }
    let mut backend = SignalAt {
        inner: dev.backend(),
        at: Instant::ZERO + Duration::from_secs(1),
        flags,
    };
    let opts = RunOptions {
        hz: 1000,
        stop: Some(stop),
        abandon: Some(abandon_flag),
        ..RunOptions::default()
    };
    blkqos_driver::run(&mut backend, &mut stack, vec![setup], &opts).expect("run")
}

#[test]
fn stop_drains_what_the_throttle_holds() {
    let r = stopped_at_one_second(false);
    let j = &r.jobs[0];
    let ended_ms = r.ended_at.as_ns() / 1_000_000;
    eprintln!(
        "stop: ended at {ended_ms} ms, {} reads, runtime {} ms",
        j.stats.dirs.read.total_ios, j.stats.dirs.read.runtime_ms
    );
    assert!(r.interrupted && !r.abandoned);
    assert_eq!(r.dropped_ios, 0);
    // ~15 reads held at 100 IOPS: 0.1-0.2 s of drain
    assert!((1_100..=1_200).contains(&ended_ms), "{ended_ms} ms");
    assert_eq!(
        r.disk.ios[0], j.stats.dirs.read.total_ios,
        "every read issued completed"
    );
}

#[test]
fn abandon_drops_what_the_throttle_holds() {
    let r = stopped_at_one_second(true);
    let j = &r.jobs[0];
    let ended_ms = r.ended_at.as_ns() / 1_000_000;
    eprintln!(
        "abandon: ended at {ended_ms} ms, {} reads, {} dropped, runtime {} ms",
        j.stats.dirs.read.total_ios, r.dropped_ios, j.stats.dirs.read.runtime_ms
    );
    assert!(r.interrupted && r.abandoned);
    assert!(ended_ms < 1_010, "ends at once: {ended_ms} ms");
    assert!(
        (10..=16).contains(&r.dropped_ios),
        "the reads the throttle held: {}",
        r.dropped_ios
    );
    // what completed is the job's, and its report ends at the abandon
    assert_eq!(r.disk.ios[0], j.stats.dirs.read.total_ios);
    assert!((990..=1_010).contains(&j.stats.dirs.read.runtime_ms));
    assert!((95..=105).contains(&j.stats.dirs.read.total_ios));
}
