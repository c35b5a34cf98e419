//! Batched submission and the plug merge through the driver loop on the
//! simulator, with a scripted rq-qos stage: which bios the stage sees
//! (`on_submit`) and which it is told merged (`on_merge`), the issuer
//! delay a merge imposes on the submit call (fio `slat`), and a bio
//! released from a submitter-blocking stage taking the next bios' merges.

use blkqos_core::{
    Controller, ControllerStack, Duration, GroupId, Instant, Io, PassThrough, Verdict,
};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{HostModel, RunOptions, RunResult};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode, SizeSpec};
use std::cell::RefCell;
use std::rc::Rc;

const KIB: u64 = 1024;

/// What the stage saw.
#[derive(Default)]
struct Seen {
    submitted: Vec<Io>,
    /// (bio, the request's extent before the merge)
    merged: Vec<(Io, Io)>,
    completed: Vec<Io>,
}

/// A stage-1 controller: each merge puts the submitter in `delay`; the
/// first bio it sees blocks the submitter for `hold_first` (0 = never).
struct Script {
    seen: Rc<RefCell<Seen>>,
    delay: Option<Duration>,
    hold_first: Duration,
    held: Option<(Instant, Io)>,
}

impl Controller for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    /// Charges a byte of vtime per byte (as iocost keeps its charge on
    /// the IO): at once when dispatched, at release when held.
    fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict {
        let mut seen = self.seen.borrow_mut();
        seen.submitted.push(*io);
        if seen.submitted.len() == 1 && self.hold_first > Duration::ZERO {
            self.held = Some((now + self.hold_first, *io));
            return Verdict::Held;
        }
        io.cost_vtime = io.len;
        Verdict::Dispatch
    }
    fn on_merge(&mut self, bio: &Io, rq: &mut Io, _now: Instant) -> Option<Duration> {
        self.seen.borrow_mut().merged.push((*bio, *rq));
        rq.cost_vtime += bio.len;
        self.delay
    }
    fn on_timer(&mut self, now: Instant, released: &mut Vec<Io>) {
        if self.held.is_some_and(|(t, _)| t <= now) {
            let mut io = self.held.take().expect("checked").1;
            io.cost_vtime = io.len;
            released.push(io);
        }
    }
    fn on_complete(&mut self, io: &Io, _a: Instant, _s: Instant, _now: Instant) {
        self.seen.borrow_mut().completed.push(*io);
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.held.map(|h| h.0)
    }
    fn hold_blocks_submitter(&self) -> bool {
        true
    }
    fn held(&self) -> usize {
        usize::from(self.held.is_some())
    }
    fn on_group_added(
        &mut self,
        _g: blkqos_core::GroupId,
        _p: blkqos_core::GroupId,
        _path: &str,
        _now: Instant,
    ) {
    }
    fn on_group_removed(&mut self, _g: blkqos_core::GroupId, _now: Instant) {}
}

/// One call of sixteen sequential 4 KiB writes (QD16, batch 16, 64 KiB in
/// all) on an ssd, through `PassThrough` + [`Script`].
fn sixteen_writes(
    delay: Option<Duration>,
    hold_first: Duration,
    batch: u32,
) -> (RunResult, Rc<RefCell<Seen>>) {
    sixteen_writes_on("ssd,size=1g", delay, hold_first, batch)
}

fn sixteen_writes_on(
    device: &str,
    delay: Option<Duration>,
    hold_first: Duration,
    batch: u32,
) -> (RunResult, Rc<RefCell<Seen>>) {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut stack = ControllerStack::new();
    stack.push(Box::new(PassThrough));
    stack.push(Box::new(Script {
        seen: seen.clone(),
        delay,
        hold_first,
        held: None,
    }));
    let mut s = JobSpec::new("w");
    s.rw = RwMode::Write;
    s.bs = PerDir::all(4 * KIB);
    s.ioengine = IoEngine::IoUring;
    s.iodepth = 16;
    s.iodepth_batch = batch;
    s.direct = true;
    s.size = Some(SizeSpec::Bytes(64 * KIB));
    let dev = DeviceSpec::parse(device).expect("device");
    let mut backend = dev.backend();
    let setups = vec![JobSetup {
        spec: s,
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: 64 * KIB,
        seed: 1,
        files: Vec::new(),
    }];
    let opts = RunOptions {
        hz: 1000,
        host: HostModel {
            submit_ns: 1_000,
            ..HostModel::default()
        },
        ..RunOptions::default()
    };
    let r = blkqos_driver::run(&mut backend, &mut stack, setups, &opts).expect("run");
    (r, seen)
}

/// The first bio becomes a request and goes through the stage; the other
/// fifteen merge into it (back merges, the request growing by 4 KiB each);
/// the disk serves one 64 KiB request and counts 15 merges; the job sees
/// sixteen 4 KiB writes complete, issued by one call of 16 × 1 µs.
#[test]
fn one_call_of_sixteen_is_one_request() {
    let (r, seen) = sixteen_writes(None, Duration::ZERO, 16);
    let seen = seen.borrow();
    assert_eq!(seen.submitted.len(), 1);
    assert_eq!(seen.merged.len(), 15);
    for (k, (bio, rq)) in seen.merged.iter().enumerate() {
        let k = k as u64;
        assert_eq!(rq.offset, 0);
        assert_eq!(rq.len, (k + 1) * 4 * KIB, "the request before merge {k}");
        assert_eq!(bio.offset, (k + 1) * 4 * KIB);
    }
    assert_eq!(seen.completed.len(), 1);
    assert_eq!(seen.completed[0].len, 64 * KIB);
    assert_eq!(
        seen.completed[0].cost_vtime,
        64 * KIB,
        "the request completes with its own charge and its 15 bios'"
    );
    assert_eq!(r.disk.ios[1], 1);
    assert_eq!(r.disk.merges[1], 15);
    assert_eq!(r.disk.sectors[1], 128);
    let st = &r.jobs[0].stats;
    let w = &st.dirs.write;
    assert_eq!((w.total_ios, w.io_bytes), (16, 64 * KIB));
    assert_eq!((w.slat.min, w.slat.max), (16_000, 16_000));
    assert_eq!(
        st.submit_batches,
        [0, 0, 0, 1, 0, 0, 0],
        "one call in fio's 9..16 bucket"
    );
}

/// Calls of one or two IOs are not plugged: sixteen requests.
#[test]
fn calls_of_two_or_fewer_do_not_merge() {
    for batch in [1, 2] {
        let (r, seen) = sixteen_writes(None, Duration::ZERO, batch);
        assert_eq!(seen.borrow().submitted.len(), 16, "batch {batch}");
        assert!(seen.borrow().merged.is_empty(), "batch {batch}");
        assert_eq!((r.disk.ios[1], r.disk.merges[1]), (16, 0), "batch {batch}");
    }
}

/// A merge that puts the group in issuer delay makes the submitter sleep
/// before its call returns: every IO of the call has slat = call + delay.
#[test]
fn issuer_delay_extends_the_submit_call() {
    let delay = Duration::from_ms(5);
    let (r, _) = sixteen_writes(Some(delay), Duration::ZERO, 16);
    let w = &r.jobs[0].stats.dirs.write;
    assert_eq!((w.slat.min, w.slat.max), (5_016_000, 5_016_000));
    // the request was at the device during the delay: it completed before
    // the call returned, and the job reaps it right after
    assert_eq!(w.clat.max, 0);
    assert_eq!(w.total_ios, 16);
}

/// The first bio sleeps 1 ms in the stage (the plug is flushed: nothing
/// in it); released, it becomes a request in the task's plug again, and
/// the other fifteen merge into it: still one request.
#[test]
fn a_released_bio_takes_the_next_merges() {
    let (r, seen) = sixteen_writes(None, Duration::from_ms(1), 16);
    let seen = seen.borrow();
    assert_eq!(seen.submitted.len(), 1);
    assert_eq!(seen.merged.len(), 15);
    assert_eq!((r.disk.ios[1], r.disk.merges[1]), (1, 15));
    assert_eq!(
        seen.completed
            .iter()
            .map(|io| io.cost_vtime)
            .collect::<Vec<_>>(),
        [64 * KIB],
        "the charge set at release, and the merged bios', reach the completion"
    );
    let w = &r.jobs[0].stats.dirs.write;
    assert_eq!(
        (w.slat.min, w.slat.max),
        (1_016_000, 1_016_000),
        "the call returns after the wait"
    );
}

/// `max_segments=4`: a request takes at most four 4 KiB bios (one segment
/// each), so the call makes four requests of 16 KiB; with 8 KiB of
/// max_sectors_kb instead, eight of two.
#[test]
fn merges_stop_at_max_segments_and_max_sectors() {
    for (dev, rqs) in [
        ("ssd,size=1g,max_segments=4", 4),
        ("ssd,size=1g,max_sectors_kb=8", 8),
    ] {
        let (r, seen) = sixteen_writes_on(dev, None, Duration::ZERO, 16);
        assert_eq!(r.disk.ios[1], rqs, "{dev}");
        assert_eq!(r.disk.merges[1], 16 - rqs, "{dev}");
        let seen = seen.borrow();
        assert_eq!(seen.submitted.len() as u64, rqs, "{dev}");
        let per_rq = 16 / rqs * 4 * KIB;
        assert!(seen.completed.iter().all(|io| io.len == per_rq), "{dev}");
        assert!(
            seen.completed.iter().all(|io| io.cost_vtime == per_rq),
            "{dev}: each request completes with its own charge"
        );
    }
}

/// Unplugged calls: the first write waits 1 ms in the stage and comes back
/// from its timer straight to a request. Every request, held or not,
/// completes with the charge the stage gave it (iocost's `bi_iocost_cost`
/// carried on the IO, not looked up).
#[test]
fn a_held_io_completes_with_the_charge_it_was_released_with() {
    let (r, seen) = sixteen_writes(None, Duration::from_ms(1), 1);
    let seen = seen.borrow();
    assert_eq!(r.disk.ios[1], 16);
    assert_eq!(seen.completed.len(), 16);
    assert!(
        seen.completed.iter().all(|io| io.cost_vtime == 4 * KIB),
        "{:?}",
        seen.completed
            .iter()
            .map(|io| io.cost_vtime)
            .collect::<Vec<_>>()
    );
}
