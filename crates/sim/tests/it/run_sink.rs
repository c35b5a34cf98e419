//! The driver's sink (`RunOptions::sink`) sees every request the in-process
//! trace keeps, in the same order, and the controllers once a second; with
//! `RunOptions::status_every`, the jobs' results so far on time.

use blkqos_core::{ControllerStack, Duration, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{RequestRecord, RunOptions, RunSink, SharedSink};
use blkqos_sim::{DeviceSpec, SimBackend};
use std::sync::{Arc, Mutex};

/// Keeps the requests and counts the controller calls.
#[derive(Default)]
struct Recorder {
    requests: Vec<RequestRecord>,
    controller_calls: u64,
}

impl RunSink for Recorder {
    fn request(&mut self, r: &RequestRecord) {
        self.requests.push(*r);
    }
    fn controllers(&mut self, _stack: &mut ControllerStack) {
        self.controller_calls += 1;
    }
}

#[test]
fn the_sink_gets_what_the_in_process_trace_keeps() {
    let set = blkqos_fio::parse_job_file(
        "j.fio",
        "[j]\nrw=randrw\nbs=4k\nsize=64m\niodepth=8\nruntime=3\ntime_based\nrate_iops=2000\n",
        &|_| None,
    )
    .expect("job parses");
    let dev = DeviceSpec::parse("ssd").expect("device");
    let mut backend = SimBackend::new(dev.build());
    let mut stack = ControllerStack::pass_through();
    let setup = JobSetup {
        spec: set.jobs[0].clone(),
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: 64 << 20,
        seed: 1,
        files: Vec::new(),
    };
    let rec = Arc::new(Mutex::new(Recorder::default()));
    let opts = RunOptions {
        trace_requests: true,
        sink: Some(rec.clone() as SharedSink),
        ..RunOptions::default()
    };
    let r = blkqos_driver::run(&mut backend, &mut stack, vec![setup], &opts).expect("run");
    let rec = rec.lock().expect("not poisoned");
    assert!(r.request_trace.len() > 10_000, "{}", r.request_trace.len());
    assert_eq!(rec.requests, r.request_trace);
    // once per whole simulated second the run reached (IO goes on all the
    // time: a loop pass follows each second at once), and at the end
    let secs = r.ended_at.as_ns() / Duration::from_secs(1).as_ns();
    assert_eq!(rec.controller_calls, secs + 1, "ended at {}", r.ended_at);
}

#[test]
fn a_vec_is_a_sink() {
    let mut v: Vec<RequestRecord> = Vec::new();
    assert!(v.wants_requests());
    v.request(&RequestRecord {
        group: GroupId::ROOT,
        op: blkqos_core::IoOp::Read,
        submitted_at: blkqos_core::Instant(1),
        started_at: blkqos_core::Instant(2),
        dispatched_at: blkqos_core::Instant(2),
        completed_at: blkqos_core::Instant(3),
        bytes: 4096,
        offset: 0,
    });
    assert_eq!(v.len(), 1);
}

/// Records each status call: its time and the jobs' IO count and runtime.
#[derive(Default)]
struct Status {
    calls: Vec<(u64, u64, u64)>,
}

impl RunSink for Status {
    fn wants_requests(&self) -> bool {
        false
    }
    fn request(&mut self, _r: &RequestRecord) {}
    fn status(
        &mut self,
        now: blkqos_core::Instant,
        jobs: &[blkqos_driver::JobResult],
        _disk: &blkqos_driver::DiskStats,
    ) {
        let ios = jobs.iter().map(|j| j.stats.dirs.read.total_ios).sum();
        let runtime = jobs[0].stats.dirs.read.runtime_ms;
        self.calls.push((now.as_ns() / 1_000_000, ios, runtime));
    }
}

#[test]
fn status_reports_come_on_time_even_when_nothing_happens() {
    // an IO every 2 s (thinktime): the loop must wake up for the reports
    let set = blkqos_fio::parse_job_file(
        "j.fio",
        "[j]\nrw=read\nbs=4k\nsize=1m\nruntime=5\ntime_based\nthinktime=2s\n",
        &|_| None,
    )
    .expect("job parses");
    let dev = DeviceSpec::parse("ssd").expect("device");
    let mut backend = SimBackend::new(dev.build());
    let mut stack = ControllerStack::pass_through();
    let setup = JobSetup {
        spec: set.jobs[0].clone(),
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: 1 << 20,
        seed: 1,
        files: Vec::new(),
    };
    let rec = Arc::new(Mutex::new(Status::default()));
    let opts = RunOptions {
        sink: Some(rec.clone() as SharedSink),
        status_every: Some(Duration::from_ms(500)),
        ..RunOptions::default()
    };
    let r = blkqos_driver::run(&mut backend, &mut stack, vec![setup], &opts).expect("run");
    let rec = rec.lock().expect("not poisoned");
    let times: Vec<u64> = rec.calls.iter().map(|c| c.0).collect();
    let due: Vec<u64> = (1..=times.len() as u64).map(|k| k * 500).collect();
    assert_eq!(times, due);
    assert!(times.len() >= 9, "{times:?}, ended at {}", r.ended_at);
    // cumulative: IOs never go down, and the runtime is the time so far
    assert!(rec.calls.windows(2).all(|w| w[1].1 >= w[0].1));
    for &(t, ios, runtime) in &rec.calls {
        // the IO issued at a multiple of 2 s completes just after it
        assert_eq!(ios, (t - 1) / 2000 + 1, "at {t} ms");
        assert_eq!(runtime, t, "at {t} ms");
    }
    assert_eq!(
        r.jobs[0].stats.dirs.read.total_ios,
        rec.calls.last().unwrap().1
    );
}
