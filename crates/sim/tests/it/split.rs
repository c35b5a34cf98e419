//! IOs longer than the device's max IO size, through the driver loop on
//! the simulator: one job IO becomes several requests (diskstats,
//! rq-qos stage, device), the job sees one IO, and blk-throttle charges
//! the pieces as the kernel generation it models does.

use blkqos_core::throttle::knob::{parse_io_max, Limits};
use blkqos_core::throttle::{Throttle, ThrottleConfig, Variant};
use blkqos_core::{
    CgroupTree, Controller, ControllerStack, Duration, GroupId, Instant, Io, IoFlags, Jiffies,
    PassThrough, Verdict,
};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{RunOptions, RunResult};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode};
use std::cell::RefCell;
use std::rc::Rc;

const MIB: u64 = 1 << 20;

fn job(name: &str, rw: RwMode, bs: u64, iodepth: u32) -> JobSpec {
    let mut s = JobSpec::new(name);
    s.rw = rw;
    s.bs = PerDir {
        read: bs,
        write: bs,
        trim: bs,
    };
    s.ioengine = IoEngine::Libaio;
    s.iodepth = iodepth;
    s.direct = true;
    s
}

fn timed(mut s: JobSpec, secs: u64) -> JobSpec {
    s.time_based = true;
    s.runtime = Some(Duration::from_secs(secs));
    s
}

/// One IO per job: `size` = `bs`.
fn once(mut s: JobSpec) -> JobSpec {
    s.size = Some(blkqos_workload::SizeSpec::Bytes(s.bs.read.max(s.bs.write)));
    s
}

fn run_on(dev: &str, stack: &mut ControllerStack, specs: Vec<(JobSpec, GroupId)>) -> RunResult {
    let dev = DeviceSpec::parse(dev).expect("device");
    let mut backend = dev.backend();
    let setups = specs
        .into_iter()
        .enumerate()
        .map(|(i, (spec, group))| {
            // a sized job covers its own region, one after the other
            let len = match spec.size {
                Some(blkqos_workload::SizeSpec::Bytes(b)) => b,
                _ => dev.capacity,
            };
            JobSetup {
                spec,
                clone: 0,
                group,
                region_start: (i as u64 * len) % dev.capacity,
                region_len: len,
                seed: 1 + i as u64,
                files: Vec::new(),
            }
        })
        .collect();
    let opts = RunOptions {
        hz: 1000,
        ..RunOptions::default()
    };
    blkqos_driver::run(&mut backend, stack, setups, &opts).expect("run")
}

fn limits(line: &str) -> Limits {
    let mut l = Limits::default();
    parse_io_max(line).expect("io.max line").apply(&mut l);
    l
}

/// A stack with blk-throttle (`variant`) limiting `/cg` to `line`.
fn throttled(variant: &str, line: &str) -> (ControllerStack, GroupId) {
    let mut tree = CgroupTree::new();
    let g = tree.ensure("/cg").expect("cgroup");
    let cfg = ThrottleConfig {
        variant: Variant::by_name(variant).expect("variant"),
        hz: 1000,
        rotational: false,
        flat: false,
        jiffies_at_start: Jiffies::ZERO,
        tick_phase_ns: 0,
    };
    let mut th = Throttle::new(cfg, &tree);
    th.set_limits(g, limits(line), Instant::ZERO);
    let mut stack = ControllerStack::new();
    stack.push(Box::new(th));
    (stack, g)
}

/// Every IO (id, offset, len, flags) a stage-1 controller was given, and
/// every completion it was told about.
#[derive(Default)]
struct Seen {
    submitted: Vec<Io>,
    completed: usize,
}

/// A stage-1 controller (where iocost sits) that records what it sees.
struct Recorder(Rc<RefCell<Seen>>);

impl Controller for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn on_submit(&mut self, io: &mut Io, _now: Instant) -> Verdict {
        self.0.borrow_mut().submitted.push(*io);
        Verdict::Dispatch
    }
    fn on_timer(&mut self, _now: Instant, _released: &mut Vec<Io>) {}
    fn on_complete(&mut self, _io: &Io, _a: Instant, _s: Instant, _now: Instant) {
        self.0.borrow_mut().completed += 1;
    }
    fn next_deadline(&self) -> Option<Instant> {
        None
    }
    fn held(&self) -> usize {
        0
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

/// 1 MiB reads on a device with `max_sectors_kb=128`: the disk counts 8
/// requests of 128 KiB per IO, stage 1 sees 8 contiguous pieces, io.stat
/// counts the bytes once and 8 IOs, and the job counts one IO of 1 MiB.
#[test]
fn one_mib_read_is_eight_requests_and_one_fio_io() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut stack = ControllerStack::new();
    stack.push(Box::new(PassThrough));
    stack.push(Box::new(Recorder(seen.clone())));
    let spec = timed(job("r", RwMode::RandRead, MIB, 4), 1);
    let r = run_on(
        "null,max_sectors_kb=128,size=1g",
        &mut stack,
        vec![(spec, GroupId::ROOT)],
    );
    let d = &r.jobs[0].stats.dirs.read;
    assert!(d.total_ios > 100, "{}", d.total_ios);
    assert_eq!(d.io_bytes, d.total_ios * MIB, "fio: one 1 MiB IO each");
    assert_eq!(
        r.disk.ios[0],
        8 * d.total_ios,
        "diskstats: 8 requests per IO"
    );
    assert_eq!(r.disk.sectors[0], 2048 * d.total_ios);
    let st = stack.iostat(GroupId::ROOT);
    assert_eq!(st.bytes[0], d.total_ios * MIB, "io.stat: bytes once");
    assert_eq!(st.ios[0], 8 * d.total_ios, "io.stat: one IO per piece");
    let seen = seen.borrow();
    assert_eq!(seen.submitted.len() as u64, 8 * d.total_ios);
    assert_eq!(seen.completed as u64, 8 * d.total_ios);
    for chunk in seen.submitted.chunks(8) {
        assert!(chunk.iter().all(|p| p.len == 128 << 10));
        assert!(chunk.iter().all(|p| p.flags.contains(IoFlags::FRAGMENT)));
        assert!(
            chunk
                .windows(2)
                .all(|w| w[1].offset == w[0].offset + (128 << 10)),
            "the pieces of an IO are contiguous (iocost: sequential)"
        );
    }
}

/// The same device with its default max IO size: 64 KiB IOs are never split.
#[test]
fn ios_within_the_limit_are_one_request() {
    let mut stack = ControllerStack::pass_through();
    let spec = timed(job("r", RwMode::RandRead, 64 << 10, 4), 1);
    let r = run_on("null,size=1g", &mut stack, vec![(spec, GroupId::ROOT)]);
    let d = &r.jobs[0].stats.dirs.read;
    assert_eq!(r.disk.ios[0], d.total_ios);
    // null_blk's default, 255 sectors: a 128 KiB IO is 255 + 1 sectors
    let spec = once(job("r", RwMode::Read, 128 << 10, 1));
    let r = run_on("null,size=1g", &mut stack, vec![(spec, GroupId::ROOT)]);
    assert_eq!(r.disk.ios[0], 2);
    assert_eq!(r.disk.sectors[0], 256);
}

/// `riops=100` with 1 MiB reads split 8 ways: mainline admits 12.5 IOs/s
/// (8 requests each), legacy 100 IOs/s (the pieces bypass).
#[test]
fn riops_counts_requests_on_mainline_bios_on_legacy() {
    for (v, want) in [("mainline", 12.5), ("linux-6.1", 12.5), ("legacy", 100.0)] {
        let (mut stack, g) = throttled(v, "8:0 riops=100");
        let spec = timed(job("r", RwMode::RandRead, MIB, 8), 20);
        let r = run_on(
            "null,max_sectors_kb=128,size=4g",
            &mut stack,
            vec![(spec, g)],
        );
        let d = &r.jobs[0].stats.dirs.read;
        let iops = d.total_ios as f64 / 20.0;
        assert!((iops - want).abs() <= want * 0.05, "{v}: {iops} IOs/s");
        assert_eq!(r.disk.ios[0], 8 * d.total_ios, "{v}");
        assert_eq!(d.io_bytes, d.total_ios * MIB, "{v}");
    }
}

/// `rbps=1MiB` admits 1 MiB/s of 1 MiB reads split 8 ways, as many as
/// without a split: bytes once.
#[test]
fn rbps_counts_the_bytes_once() {
    for v in ["mainline", "linux-6.12", "linux-5.15", "legacy"] {
        let ios = |max_kb: u32| {
            let (mut stack, g) = throttled(v, "8:0 rbps=1048576");
            let spec = timed(job("r", RwMode::RandRead, MIB, 4), 20);
            let dev = format!("null,max_sectors_kb={max_kb},size=4g");
            let r = run_on(&dev, &mut stack, vec![(spec, g)]);
            r.jobs[0].stats.dirs.read.total_ios
        };
        let (split, whole) = (ios(128), ios(1024));
        eprintln!("{v}: {split} {whole}");
        assert!(split.abs_diff(whole) <= 1, "{v}: {split} vs {whole} IOs");
        assert!((20..=24).contains(&split), "{v}: {split} MiB in 20 s");
    }
}

/// blktests throtl/007 on the simulator: two writers, one 1 MiB write each,
/// `wbps=1MiB` and a huge `wiops`, 4 KiB max IO size. Before v6.16 both
/// finish at ~2 s; v6.16's split queues let the first finish at ~1 s.
#[test]
fn v6_16_split_queues_let_the_first_writer_finish_first() {
    let finish = |v: &str| {
        let (mut stack, g) = throttled(v, "8:0 wbps=1048576 wiops=1000000");
        let specs = (0..2)
            .map(|i| (once(job(&format!("w{i}"), RwMode::Write, MIB, 1)), g))
            .collect();
        let r = run_on("null,max_sectors_kb=4,size=1g", &mut stack, specs);
        let mut t: Vec<f64> = r
            .jobs
            .iter()
            .map(|j| {
                assert_eq!(j.stats.dirs.write.total_ios, 1);
                (j.stats.dirs.write.clat.max as f64 / 1e8).round() / 10.0
            })
            .collect();
        t.sort_by(f64::total_cmp);
        assert_eq!(r.disk.ios[1], 2 * 256, "{v}: 256 requests per write");
        t
    };
    assert_eq!(finish("mainline"), vec![1.0, 2.0]);
    assert_eq!(finish("linux-6.12"), vec![2.0, 2.0]);
}
