//! Cgroups created and removed while a run goes on
//! (`ControllerStack::add_group` / `remove_group`), through the public
//! API an embedder uses: a closed loop of jobs over a small device, the
//! stack built by `from_writes`, and `check()` after every event.
//!
//! * blk-throttle: a group created under a limited parent is held by the
//!   parent's limit at once (`tg_update_has_rules` in `throtl_pd_online`);
//!   creating a top-level group leaves other groups' queued bios and
//!   timers working; removing a group flushes what it queued without its
//!   own limit (`tg_flush_bios`).
//! * iocost: a new group shares the device by weight from its first IO
//!   (`ioc_pd_init`); removal is refused while its submitters wait; once
//!   removed and drained its weight leaves the active tree
//!   (`ioc_pd_free`) and the others take the device.
//! * knob lines written into the running stack (`ControllerStack::write`)
//!   apply at once to new and old groups, and are refused as cgroupfs
//!   refuses them.

use blkqos_core::cgroupfs::{CgroupfsError, ControllerOptions, DeviceInfo, KnobFile, KnobWrite};
use blkqos_core::controller::StackVerdict;
use blkqos_core::{
    CgroupTree, ControllerStack, DevId, Duration, GroupId, Instant, Io, IoId, IoOp,
    RemoveGroupError, Submitter,
};
use std::collections::{BTreeMap, VecDeque};

const DEV: DevId = DevId { major: 8, minor: 0 };

struct Job {
    group: GroupId,
    depth: usize,
    outstanding: usize,
    /// Completions, with their times.
    done: Vec<Instant>,
    active: bool,
}

/// Jobs keeping `depth` 4 KiB random reads outstanding on a device with
/// `tags` slots that serves each in `lat`.
struct Loop {
    stack: ControllerStack,
    tree: CgroupTree,
    now: Instant,
    jobs: Vec<Job>,
    tags: usize,
    lat: Duration,
    /// (done at, id) → (job, io, start)
    serving: BTreeMap<(Instant, u64), (usize, Io, Instant)>,
    waiting_tag: VecDeque<Io>,
    next_id: u64,
    rng: u64,
}

impl Loop {
    fn new(tree: CgroupTree, writes: &[KnobWrite], tags: usize, lat: Duration) -> Self {
        let stack = ControllerStack::from_writes(
            &ControllerOptions::default(),
            &tree,
            DeviceInfo {
                dev: DEV,
                rotational: false,
                nr_requests: tags as u32,
            },
            writes,
        )
        .expect("stack");
        Loop {
            stack,
            tree,
            now: Instant::ZERO,
            jobs: Vec::new(),
            tags,
            lat,
            serving: BTreeMap::new(),
            waiting_tag: VecDeque::new(),
            next_id: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn start_job(&mut self, group: GroupId, depth: usize) -> usize {
        self.jobs.push(Job {
            group,
            depth,
            outstanding: 0,
            done: Vec::new(),
            active: true,
        });
        let j = self.jobs.len() - 1;
        self.top_up(j);
        j
    }

    fn top_up(&mut self, j: usize) {
        while self.jobs[j].active && self.jobs[j].outstanding < self.jobs[j].depth {
            self.next_id += 1;
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let mut io = Io {
                ioprio: 0,
                id: IoId(self.next_id),
                submitter: Submitter(j as u32),
                group: self.jobs[j].group,
                op: IoOp::Read,
                flags: Default::default(),
                offset: (self.rng % (1 << 26)) << 12,
                len: 4096,
                submitted_at: self.now,
                cost_vtime: 0,
            };
            self.jobs[j].outstanding += 1;
            match self.stack.submit(&mut io, self.now) {
                StackVerdict::Ready => self.dispatch(io),
                StackVerdict::Queued | StackVerdict::Blocked => {}
                StackVerdict::Split => unreachable!("4 KiB is never split"),
            }
        }
    }

    fn dispatch(&mut self, io: Io) {
        if self.serving.len() < self.tags {
            self.stack.on_start(&io, self.now, self.now);
            let j = io.submitter.0 as usize;
            self.serving
                .insert((self.now + self.lat, io.id.0), (j, io, self.now));
        } else {
            self.waiting_tag.push_back(io);
        }
    }

    /// Run until `until`.
    fn run(&mut self, until: Instant) {
        let (mut ready, mut unblocked) = (Vec::new(), Vec::new());
        loop {
            let next_done = self.serving.keys().next().map(|k| k.0);
            let next = [next_done, self.stack.next_deadline()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next.filter(|&t| t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(t);
            while let Some((&(at, id), _)) = self.serving.first_key_value() {
                if at > self.now {
                    break;
                }
                let (j, io, start) = self.serving.remove(&(at, id)).expect("served");
                self.stack.on_complete(&io, start, start, self.now);
                self.jobs[j].outstanding -= 1;
                self.jobs[j].done.push(self.now);
                if let Some(next) = self.waiting_tag.pop_front() {
                    self.dispatch(next);
                }
                self.top_up(j);
            }
            self.stack.on_timer(self.now, &mut ready, &mut unblocked);
            unblocked.clear();
            for io in std::mem::take(&mut ready) {
                self.dispatch(io);
            }
            self.stack.check().expect("controller invariants");
        }
    }

    fn write(&mut self, cgroup: &str, knob: KnobFile, value: &str) -> Result<(), CgroupfsError> {
        self.stack
            .write(&self.tree, DEV, &write(cgroup, knob, value), self.now)
    }

    fn add(&mut self, path: &str) -> GroupId {
        self.stack
            .add_group(&mut self.tree, path, self.now)
            .expect("add")
    }

    /// Completions of job `j` per second in `[from, to)`.
    fn iops(&self, j: usize, from_ms: u64, to_ms: u64) -> f64 {
        let (a, b) = (Instant(from_ms * 1_000_000), Instant(to_ms * 1_000_000));
        let n = self.jobs[j]
            .done
            .iter()
            .filter(|&&t| t >= a && t < b)
            .count();
        n as f64 * 1000.0 / (to_ms - from_ms) as f64
    }
}

fn write(cgroup: &str, knob: KnobFile, value: &str) -> KnobWrite {
    KnobWrite {
        at_ns: 0,
        cgroup: cgroup.into(),
        knob,
        value: value.into(),
        origin: format!("test: {cgroup}"),
    }
}

fn ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}

#[test]
fn throttle_new_group_is_held_by_its_parent() {
    let mut tree = CgroupTree::new();
    let x = tree.ensure("/a/x").unwrap();
    let c = tree.ensure("/c").unwrap();
    let writes = [
        write("/a", KnobFile::IoMax, "8:0 riops=1000"),
        write("/c", KnobFile::IoMax, "8:0 riops=100"),
    ];
    let mut l = Loop::new(tree, &writes, 64, Duration::from_us(100));
    let jx = l.start_job(x, 8);
    let jc = l.start_job(c, 8);
    l.run(ms(1000));
    // a new group under /a, and a new top-level group (the device-level
    // service queue moves: /c's queued bios and timer must keep working)
    let y = l.add("/a/y");
    let top = l.add("/top");
    assert_eq!((y, top), (GroupId(4), GroupId(5)));
    let jy = l.start_job(y, 8);
    let jt = l.start_job(top, 8);
    l.write("/top", KnobFile::IoMax, "8:0 riops=200").unwrap();
    l.run(ms(3000));
    let (ax, ay) = (l.iops(jx, 1500, 3000), l.iops(jy, 1500, 3000));
    assert!(
        (ax + ay - 1000.0).abs() < 50.0,
        "/a's two children together at /a's riops=1000: {ax} + {ay}"
    );
    assert!(ay > 300.0, "the new child gets a share of /a: {ay}");
    let cc = l.iops(jc, 1500, 3000);
    assert!((cc - 100.0).abs() < 10.0, "/c stays at riops=100: {cc}");
    let t = l.iops(jt, 1500, 3000);
    assert!((t - 200.0).abs() < 20.0, "the new group's own io.max: {t}");
    // lifted while the run goes on
    l.write("/top", KnobFile::IoMax, "8:0 riops=max").unwrap();
    l.run(ms(3500));
    let t = l.iops(jt, 3200, 3500);
    assert!(t > 50_000.0, "an unlimited group runs free: {t}");
}

#[test]
fn writes_are_refused_as_cgroupfs_refuses_them() {
    let mut tree = CgroupTree::new();
    tree.ensure("/a").unwrap();
    let writes = [write("/a", KnobFile::IoMax, "8:0 riops=100")];
    let mut l = Loop::new(tree, &writes, 8, Duration::from_us(100));
    let err = |r: Result<(), CgroupfsError>| r.unwrap_err().to_string();
    let e = err(l.write("/", KnobFile::IoMax, "8:0 riops=1"));
    assert!(e.contains("root cgroup cannot be limited"), "{e}");
    let e = err(l.write("/a", KnobFile::IoMax, "8:1 riops=1"));
    assert!(e.contains("no such device `8:1`"), "{e}");
    let e = err(l.write("/a", KnobFile::IoMax, "8:0 riops=x"));
    assert!(e.contains("invalid argument"), "{e}");
    let e = err(l.write("/nope", KnobFile::IoMax, "8:0 riops=1"));
    assert!(e.contains("no cgroup `/nope`"), "{e}");
    let e = err(l.write("/a", KnobFile::IoWeight, "200"));
    assert!(e.contains("no stage of this stack takes io.weight"), "{e}");
    let e = err(l.write(
        "/a",
        KnobFile::V1Throttle {
            write: false,
            iops: true,
        },
        "8:0 100",
    ));
    assert!(e.contains("cgroup v2"), "{e}");
    // a removed group's files are gone with it
    let b = l.add("/b");
    l.stack.remove_group(&mut l.tree, b, l.now).unwrap();
    let e = err(l.write("/b", KnobFile::IoMax, "8:0 riops=1"));
    assert!(e.contains("no cgroup `/b`"), "{e}");
    // iocost refuses min above max when the write happens
    let mut tree = CgroupTree::new();
    tree.ensure("/a").unwrap();
    let mut l = Loop::new(tree, &iocost_writes(), 8, Duration::from_us(100));
    let e = err(l.write("/", KnobFile::IoCostQos, "8:0 min=90 max=50"));
    assert!(e.contains("the write was `8:0 min=90 max=50`"), "{e}");
    let e = err(l.write("/a", KnobFile::IoCostQos, "8:0 enable=0"));
    assert!(e.contains("only in the root cgroup"), "{e}");
}

#[test]
fn throttle_removal_flushes_what_the_group_queued() {
    let mut tree = CgroupTree::new();
    let c = tree.ensure("/c").unwrap();
    let writes = [write("/c", KnobFile::IoMax, "8:0 riops=50")];
    let mut l = Loop::new(tree, &writes, 64, Duration::from_us(100));
    let jc = l.start_job(c, 32);
    l.run(ms(2000));
    // the job's task leaves the cgroup: it submits nothing more
    l.jobs[jc].active = false;
    let queued = l.stack.held();
    assert!(queued > 20, "bios wait under riops=50: {queued}");
    l.stack.remove_group(&mut l.tree, c, l.now).expect("remove");
    let (before, outstanding) = (l.jobs[jc].done.len(), l.jobs[jc].outstanding);
    // at riops=50 they would need `queued / 50` seconds; flushed, they go
    // together when the parent's timer fires next (at the head's due time)
    // (within one 100 ms throttle slice; riops=50 would take 540 ms)
    l.run(ms(2200));
    assert_eq!(l.stack.held(), 0, "all flushed");
    assert_eq!(l.jobs[jc].done.len() - before, outstanding);
    assert_eq!(
        l.stack.remove_group(&mut l.tree, c, l.now),
        Err(RemoveGroupError::NotFound(c))
    );
}

fn iocost_writes() -> Vec<KnobWrite> {
    vec![
        write(
            "/",
            KnobFile::IoCostModel,
            "8:0 ctrl=user model=linear rbps=2000000000 rseqiops=20000 rrandiops=20000 wbps=2000000000 wseqiops=20000 wrandiops=20000",
        ),
        write("/", KnobFile::IoCostQos, "8:0 enable=1 ctrl=user min=100 max=100"),
    ]
}

#[test]
fn iocost_new_group_shares_by_weight_and_leaves_when_removed() {
    let mut tree = CgroupTree::new();
    let a = tree.ensure("/a").unwrap();
    let mut l = Loop::new(tree, &iocost_writes(), 64, Duration::from_us(100));
    let ja = l.start_job(a, 16);
    l.run(ms(1000));
    let alone = l.iops(ja, 500, 1000);
    assert!((alone - 20_000.0).abs() < 2_000.0, "/a alone: {alone}");
    let b = l.add("/b");
    let jb = l.start_job(b, 16);
    l.run(ms(2000));
    let (sa, sb) = (l.iops(ja, 1500, 2000), l.iops(jb, 1500, 2000));
    assert!(
        (sa - sb).abs() < 0.15 * sa && (sa + sb - 20_000.0).abs() < 2_000.0,
        "equal default weights share the model's 20k IOPS: {sa} vs {sb}"
    );
    // io.weight written to the new group while it runs: 300 against 100
    l.write("/b", KnobFile::IoWeight, "300").unwrap();
    l.run(ms(3000));
    let (sa, sb) = (l.iops(ja, 2500, 3000), l.iops(jb, 2500, 3000));
    assert!(
        (sb / sa - 3.0).abs() < 0.45 && (sa + sb - 20_000.0).abs() < 2_000.0,
        "weights 100:300: {sa} vs {sb}"
    );
    // its submitters wait in iocost: rmdir says EBUSY and changes nothing
    match l.stack.remove_group(&mut l.tree, b, l.now) {
        Err(RemoveGroupError::Busy { controller, .. }) => assert_eq!(controller, "iocost"),
        other => panic!("remove with waiters: {other:?}"),
    }
    assert!(l.tree.is_online(b));
    // the job ends; once nobody waits, the group goes (its last IOs may
    // still be in flight: they complete under it)
    l.jobs[jb].active = false;
    let mut t = 3000;
    while l.stack.remove_group(&mut l.tree, b, l.now).is_err() {
        t += 1;
        l.run(ms(t));
        assert!(t < 4000, "the job's waiters never left");
    }
    l.run(ms(5000));
    let back = l.iops(ja, t + 500, 5000);
    assert!(
        (back - 20_000.0).abs() < 2_000.0,
        "/a has the device again once /b is gone: {back}"
    );
}

#[test]
fn removing_a_parent_with_children_is_refused() {
    let mut tree = CgroupTree::new();
    tree.ensure("/a").unwrap();
    let mut l = Loop::new(tree, &iocost_writes(), 8, Duration::from_us(100));
    let ab = l.add("/a/b");
    let a = l.tree.get("/a").unwrap();
    assert!(matches!(
        l.stack.remove_group(&mut l.tree, a, l.now),
        Err(RemoveGroupError::HasChildren { children: 1, .. })
    ));
    l.stack.remove_group(&mut l.tree, ab, l.now).unwrap();
    l.stack.remove_group(&mut l.tree, a, l.now).unwrap();
    assert_eq!(
        l.stack.remove_group(&mut l.tree, GroupId::ROOT, l.now),
        Err(RemoveGroupError::Root)
    );
    // the path again: a new group with a new id
    let a2 = l.add("/a");
    assert_ne!(a2, a);
    let j = l.start_job(a2, 4);
    l.run(ms(100));
    assert!(!l.jobs[j].done.is_empty());
    l.stack.check().unwrap();
}
