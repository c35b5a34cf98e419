//! `blkqos bench`: measurements recorded in docs/BENCHMARKS.md.
//!
//! * `sim`: simulator throughput — simulated IOs completed per wall-clock
//!   second on one core for a QD32 4 KiB random-read job on the `ssd` model
//!   widened to 64 channels at 25 µs reads (`ssd,channels=64,read_ns=25000`,
//!   so the device is not the bottleneck) (pass-through controller stack), and the process's peak memory for the
//!   run (10 simulated seconds at ≈0.84M IOPS by default; `--seconds=N`,
//!   `--case=0` norandommap only, `--case=1` random map only).
//! * `accounting`: disk statistics cost per IO per busy-time mode, and
//!   the latency histograms' cost per IO (`bench_lat`).
//! * `throttle`: controller cost per IO (submit + dispatch + complete, no
//!   device) for io.max with no limit, a non-binding limit, and a binding
//!   limit over 64 groups.
//! * `iocost`: iocost cost per IO and per period with 2, 64 and 1024
//!   active groups (`--groups=N`: that many only; `--ios=N` IOs each;
//!   `--depth=N`: at most N IOs outstanding per group, as jobs at their
//!   iodepth, instead of unbounded wait queues).
//! * `sweep`: `blkqos sweep`'s wall time for 1,000 points of a 10 s
//!   two-cgroup iocost scenario (`--scenario=FILE`, `--jobs=N`; run from
//!   the repository root for the default scenario).

mod lat;

use anyhow::{bail, Result};
use blkqos_core::throttle::knob::{parse_io_max, Limits};
use blkqos_core::throttle::{Throttle, ThrottleConfig, Variant};
use blkqos_core::{
    CgroupTree, Controller, ControllerStack, GroupId, Instant, Io, IoFlags, IoId, IoOp, Jiffies,
};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{HostModel, RunOptions};
use blkqos_sim::DeviceSpec;
use blkqos_workload::{IoEngine, JobSpec, RwMode};
use std::time::Instant as WallClock;

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The simulated device of `bench sim`: an `ssd` with 64 channels.
pub(crate) const SIM_DEVICE: &str = "ssd,channels=64,read_ns=25000,jitter_pct=10,size=64g";

/// The simulator benchmark's job: QD32 4 KiB random reads on the `ssd`
/// model with 64 channels and 25 µs reads ([`SIM_DEVICE`]) for `seconds` of simulated time. Returns (IOs, wall seconds, passes of the driver loop).
pub(crate) fn sim_job(seconds: u64, randommap: bool, lat_hist: bool) -> Result<(u64, f64, u64)> {
    let mut spec = JobSpec::new("bench");
    spec.rw = RwMode::RandRead;
    spec.ioengine = IoEngine::IoUring;
    spec.iodepth = 32;
    spec.time_based = true;
    spec.runtime = Some(blkqos_core::Duration::from_secs(seconds));
    spec.norandommap = !randommap;
    let dev = DeviceSpec::parse(SIM_DEVICE).expect("valid");
    let mut backend = dev.backend();
    let mut stack = ControllerStack::pass_through();
    let setup = JobSetup {
        spec,
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: dev.capacity,
        seed: 1,
        files: Vec::new(),
    };
    let t0 = WallClock::now();
    let r = blkqos_driver::run(
        &mut backend,
        &mut stack,
        vec![setup],
        &RunOptions {
            host: HostModel::default(),
            stop: None,
            lat_hist,
            ..RunOptions::default()
        },
    )?;
    let wall = t0.elapsed().as_secs_f64();
    let ios: u64 = r.jobs[0].stats.dirs.values().map(|d| d.total_ios).sum();
    Ok((ios, wall, r.passes))
}

/// Simulator throughput.
fn bench_sim(seconds: u64, randommap: bool) -> Result<()> {
    let (ios, wall, passes) = sim_job(seconds, randommap, false)?;
    blkqos_experiment::outln!(
        "sim: {SIM_DEVICE} QD32 4k randread ({}), {seconds} s simulated: {ios} IOs ({:.0} IOPS simulated) in {wall:.3} s wall = {:.2} M IOs/s; {:.3} driver passes per IO; peak RSS {} KiB",
        if randommap { "random map" } else { "norandommap" },
        ios as f64 / seconds as f64,
        ios as f64 / wall / 1e6,
        passes as f64 / ios.max(1) as f64,
        peak_rss_kib().map_or("?".into(), |k| k.to_string())
    )?;
    Ok(())
}

fn io(id: u64, g: GroupId, at: Instant) -> Io {
    Io {
        ioprio: 0,
        id: IoId(id),
        submitter: blkqos_core::Submitter(0),
        group: g,
        op: IoOp::Read,
        flags: IoFlags::default(),
        offset: id * 4096,
        len: 4096,
        submitted_at: at,
        cost_vtime: 0,
    }
}

/// Controller cost per IO: `n` IOs offered round-robin over `groups`, one
/// every `gap_ns`; each group keeps at most `depth` IOs outstanding (like a
/// job's iodepth), and every released IO completes at once.
fn throttle_cost(
    label: &str,
    groups: usize,
    limit: Option<&str>,
    n: u64,
    gap_ns: u64,
) -> Result<()> {
    const DEPTH: u32 = 8;
    let mut tree = CgroupTree::new();
    let ids: Vec<GroupId> = (0..groups)
        .map(|i| tree.ensure(&format!("/g{i}")).expect("valid"))
        .collect();
    let mut t = Throttle::new(
        ThrottleConfig {
            variant: Variant::by_name("mainline").expect("known"),
            hz: 1000,
            rotational: false,
            flat: false,
            jiffies_at_start: Jiffies::ZERO,
            tick_phase_ns: 0,
        },
        &tree,
    );
    if let Some(line) = limit {
        let mut l = Limits::default();
        parse_io_max(line).expect("valid").apply(&mut l);
        for &g in &ids {
            t.set_limits(g, l, Instant::ZERO);
        }
    }
    let mut outstanding = vec![0u32; tree.len()];
    let mut rel = Vec::with_capacity(64);
    let t0 = WallClock::now();
    let mut now = Instant::ZERO;
    let (mut offered, mut passed) = (0u64, 0u64);
    for i in 0..n {
        now = Instant(i * gap_ns);
        if t.next_deadline().is_some_and(|d| d <= now) {
            rel.clear();
            t.on_timer(now, &mut rel);
            for r in &rel {
                t.on_complete(r, now, now, now);
                outstanding[r.group.idx()] -= 1;
                passed += 1;
            }
        }
        let g = ids[(i as usize) % groups];
        if outstanding[g.idx()] >= DEPTH {
            continue;
        }
        offered += 1;
        let mut x = io(i, g, now);
        if t.on_submit(&mut x, now) == blkqos_core::Verdict::Dispatch {
            t.on_complete(&x, now, now, now);
            passed += 1;
        } else {
            outstanding[g.idx()] += 1;
        }
    }
    let ns = t0.elapsed().as_nanos() as f64 / offered.max(1) as f64;
    blkqos_experiment::outln!(
        "throttle: {label:<30} {groups:>3} groups: {ns:>7.1} ns per offered IO ({offered} offered, {passed} released, {:.1} s simulated)",
        now.as_ns() as f64 / 1e9
    )?;
    Ok(())
}

/// Accounting cost per IO: one `start` and one `done` on the disk stats,
/// with timestamps the driver already has (no clock read), per mode.
fn accounting_cost(n: u64) -> Result<()> {
    use blkqos_driver::{DiskStats, TicksMode};
    let mut base = 0.0;
    for mode in [
        None,
        Some(TicksMode::Inflight),
        Some(TicksMode::SamplingV2),
        Some(TicksMode::Precise),
    ] {
        let mut d = DiskStats::new(mode.unwrap_or_default(), 1000);
        let t0 = WallClock::now();
        let mut sink = 0u64;
        for i in 0..n {
            // a 15 µs IO every 20 µs
            let start = Instant(i * 20_000);
            let end = Instant(i * 20_000 + 15_000);
            match mode {
                Some(_) => {
                    d.start(IoOp::Read, std::hint::black_box(start));
                    d.done(IoOp::Read, 4096, start, std::hint::black_box(end));
                }
                None => sink = sink.wrapping_add(std::hint::black_box(end.as_ns())),
            }
        }
        std::hint::black_box(sink);
        let ns = t0.elapsed().as_nanos() as f64 / n as f64;
        if mode.is_none() {
            base = ns;
        }
        blkqos_experiment::outln!(
            "accounting: {:<12} {ns:>6.2} ns per IO (start + done){}",
            mode.map_or("off", |m| m.name()),
            if mode.is_some() {
                format!(", {:+.2} ns over off", ns - base)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// `blkqos bench`'s options.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Which benchmark: sim, throttle, accounting, iocost, sweep (1,000
    /// simulated runs), or all (every one but sweep)
    #[arg(value_name = "WHAT", default_value = "all",
          value_parser = ["sim", "throttle", "accounting", "iocost", "sweep", "all"])]
    what: String,
    /// sim: simulated seconds per case
    #[arg(long, value_name = "N", default_value_t = 10)]
    seconds: u64,
    /// sim: 0 (norandommap) or 1 (random map) only; throttle: one case, 0..3
    #[arg(long, value_name = "K")]
    case: Option<usize>,
    /// throttle, accounting, iocost: IOs per case (accounting: ten times as many)
    #[arg(long, value_name = "N", default_value_t = 2_000_000)]
    ios: u64,
    /// iocost: this many active groups only
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    groups: Option<u64>,
    /// iocost: at most N IOs outstanding per group
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    depth: Option<u64>,
    /// sweep: the scenario to sweep
    #[arg(long, value_name = "FILE", default_value = crate::sweep::BENCH_SCENARIO)]
    scenario: String,
    /// sweep: threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let (seconds, case, ios) = (args.seconds, args.case, args.ios);
    match args.what.as_str() {
        "sim" => {
            // --case=0: norandommap only, --case=1: random map only
            if case.is_none_or(|c| c == 0) {
                bench_sim(seconds, false)?;
            }
            if case.is_none_or(|c| c == 1) {
                bench_sim(seconds, true)?;
            }
        }
        "throttle" => run_throttle(case, ios)?,
        "accounting" => {
            accounting_cost(ios * 10)?;
            lat::run(ios * 10)?;
        }
        "iocost" => run_iocost(ios, args.groups.map(|g| g as usize), args.depth)?,
        "all" => {
            bench_sim(seconds, false)?;
            bench_sim(seconds, true)?;
            run_throttle(None, ios)?;
            accounting_cost(ios * 10)?;
            lat::run(ios * 10)?;
            run_iocost(ios, None, None)?;
        }
        "sweep" => crate::sweep::bench(&args.scenario, args.jobs.map(|j| j as usize))?,
        other => bail!(
            "unknown benchmark `{other}`: use sim, throttle, accounting, iocost, sweep or all"
        ),
    }
    Ok(())
}

fn run_throttle(only: Option<usize>, n: u64) -> Result<()> {
    // (label, groups, limit, ns between offered IOs)
    let cases: [(&str, usize, Option<&str>, u64); 4] = [
        ("no limit configured", 1, None, 1_000),
        (
            "limit set, not binding",
            1,
            Some("8:0 riops=10000000"),
            1_000,
        ),
        (
            "limit set, not binding",
            64,
            Some("8:0 riops=10000000"),
            1_000,
        ),
        // 64 groups × 1000 IOPS = 64k IOPS, offered 83k IOPS: binding
        ("limit binding", 64, Some("8:0 riops=1000"), 12_000),
    ];
    for (k, (label, groups, limit, gap)) in cases.iter().enumerate() {
        if only.is_none_or(|o| o == k) {
            throttle_cost(label, *groups, *limit, n, *gap)?;
        }
    }
    Ok(())
}

/// iocost cost per IO with `groups` active groups (equal weights, 4 KiB
/// random reads offered round-robin, one every `gap_ns`, each completing
/// 100 µs after dispatch), and the period timer's cost. With `depth`, a
/// group with that many IOs outstanding (waiting or in flight) is skipped
/// in the round (a job at its iodepth); without, nothing limits the wait
/// queues (most of the 2M IOs are still queued at the end).
fn iocost_cost(groups: usize, n: u64, gap_ns: u64, depth: Option<u64>) -> Result<()> {
    use blkqos_core::iocost::knob::parse_qos;
    use blkqos_core::iocost::{IoCost, IoCostConfig};
    use std::collections::VecDeque;
    let mut tree = CgroupTree::new();
    let ids: Vec<GroupId> = (0..groups)
        .map(|i| tree.ensure(&format!("/g{i}")).expect("valid"))
        .collect();
    let mut c = IoCost::new(IoCostConfig::default(), &tree);
    c.apply_qos(&parse_qos("8:0 enable=1").expect("valid"))
        .expect("valid qos");
    let lat = 100_000u64;
    let mut inflight: VecDeque<(Instant, Io)> = VecDeque::new();
    let mut rel = Vec::with_capacity(64);
    let (mut timer_ns, mut timer_calls) = (0u128, 0u64);
    let (mut completed, mut offered) = (0u64, 0u64);
    let mut outstanding = vec![0u64; tree.len()];
    let t0 = WallClock::now();
    let mut now = Instant::ZERO;
    for i in 0..n {
        now = Instant(i * gap_ns);
        while let Some(&(t, io)) = inflight.front() {
            if t > now {
                break;
            }
            inflight.pop_front();
            c.on_complete(&io, t, t, t);
            outstanding[io.group.idx()] -= 1;
            completed += 1;
        }
        if c.next_deadline().is_some_and(|d| d <= now) {
            rel.clear();
            let tt = WallClock::now();
            c.on_timer(now, &mut rel);
            timer_ns += tt.elapsed().as_nanos();
            timer_calls += 1;
            for r in &rel {
                inflight.push_back((now + blkqos_core::Duration(lat), *r));
            }
        }
        let g = ids[(i as usize) % groups];
        if depth.is_some_and(|d| outstanding[g.idx()] >= d) {
            continue;
        }
        let mut x = io(i, g, now);
        x.offset = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (1 << 26)) * 4096;
        offered += 1;
        outstanding[g.idx()] += 1;
        if c.on_submit(&mut x, now) == blkqos_core::Verdict::Dispatch {
            inflight.push_back((now + blkqos_core::Duration(lat), x));
        }
    }
    let total = t0.elapsed().as_nanos() as f64;
    let per_io = (total - timer_ns as f64) / offered.max(1) as f64;
    let periods = now.as_ns() / (c.period_us() * 1000).max(1);
    let limit = depth.map_or(String::new(), |d| format!(" depth {d}, {offered} offered,"));
    blkqos_experiment::outln!(
        "iocost: {groups:>5} groups:{limit} {per_io:>7.1} ns per IO outside timers; timers {:.1} us per period ({} calls, {periods} periods, {completed} completions, vrate {:.2}%)",
        timer_ns as f64 / 1000.0 / periods.max(1) as f64,
        timer_calls,
        c.vrate() as f64 * 100.0 / 137_438.0
    )?;
    Ok(())
}

/// `blkqos bench iocost`: 2, 64 and 1024 groups, or `--groups=N` only;
/// `--depth=N`: at most N IOs outstanding per group.
pub fn run_iocost(n: u64, only: Option<usize>, depth: Option<u64>) -> Result<()> {
    let all = [2, 64, 1024];
    for groups in only.as_ref().map_or(&all[..], std::slice::from_ref) {
        iocost_cost(*groups, n, 2_000, depth)?;
    }
    Ok(())
}
