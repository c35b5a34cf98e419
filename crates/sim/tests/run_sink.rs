//! The driver's sink (`RunOptions::sink`) sees every request the in-process
//! trace keeps, in the same order, and the controllers once a second.

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
        completed_at: blkqos_core::Instant(3),
        bytes: 4096,
    });
    assert_eq!(v.len(), 1);
}
