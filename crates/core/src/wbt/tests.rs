//! blk-wbt against block/blk-wbt.c's rules, one rule per test.

use super::*;
use crate::controller::Controller;
use crate::GroupId;

const MS: u64 = 1_000_000;

fn cfg(recent_wait: RecentWait) -> WbtConfig {
    WbtConfig {
        min_lat_ns: default_min_lat_ns(false),
        queue_depth: 64,
        write_cache: false,
        recent_wait,
        hz: 250,
        tick_phase_ns: 0,
    }
}

fn io(id: u64, group: u32, op: IoOp, flags: IoFlags) -> Io {
    Io {
        id: IoId(id),
        submitter: crate::Submitter(0),
        group: GroupId(group),
        op,
        flags,
        offset: id * 4096,
        len: 4096,
        submitted_at: Instant::ZERO,
        cost_vtime: 0,
        ioprio: 0,
    }
}

fn background(id: u64, group: u32) -> Io {
    io(
        id,
        group,
        IoOp::Write,
        IoFlags::WRITEBACK.with(IoFlags::BACKGROUND),
    )
}

fn complete(w: &mut Wbt, io: &Io, now: u64) -> Vec<u64> {
    w.on_complete(io, Instant(now), Instant(now), Instant(now));
    let mut out = Vec::new();
    w.on_timer(Instant(now), &mut out);
    out.iter().map(|i| i.id.0).collect()
}

/// Background writeback at step 0 on a 64-slot queue: 4 slots
/// (`wb_background`); the fifth waits. A completion leaves 3 in flight,
/// below the wake limit `wb_normal` (8) by 5 ≥ `wb_background / 2`: the
/// waiter takes the freed slot.
#[test]
fn background_writeback_takes_wb_background_slots() {
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    let mut ios: Vec<Io> = (0..6).map(|i| background(i, 1)).collect();
    for (i, io) in ios.iter_mut().enumerate() {
        let want = if i < 4 {
            Verdict::Dispatch
        } else {
            Verdict::Held
        };
        assert_eq!(w.on_submit(io, Instant(MS)), want, "io {i}");
    }
    assert_eq!((w.inflight(), w.held()), (4, 2));
    assert_eq!(complete(&mut w, &ios[0], 2 * MS), [4]);
    assert_eq!((w.inflight(), w.held()), (4, 1));
}

/// `rq_qos_wait`: while others wait, a new request queues behind them
/// even when a slot is free, and wakes take the waiters in order: two
/// flushers' requests go out in the order they asked.
#[test]
fn waiters_take_slots_in_order() {
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    let mut first: Vec<Io> = (0..4).map(|i| background(i, 1)).collect();
    for io in &mut first {
        assert_eq!(w.on_submit(io, Instant(MS)), Verdict::Dispatch);
    }
    // a (group 1) and b (group 2) alternate asking
    let mut waiting: Vec<Io> = (10..16)
        .map(|i| background(i, 1 + (i % 2) as u32))
        .collect();
    for io in &mut waiting {
        assert_eq!(w.on_submit(io, Instant(MS)), Verdict::Held);
    }
    assert_eq!(w.blocked_submitters(GroupId(1)), 3);
    // every completion frees one slot for the next in line
    let mut order = Vec::new();
    for (k, io) in first.iter().enumerate() {
        order.extend(complete(&mut w, io, (2 + k as u64) * MS));
    }
    assert_eq!(order, [10, 11, 12, 13]);
    // a newcomer finds waiters: it waits although nothing changed
    let mut late = background(20, 1);
    assert_eq!(w.on_submit(&mut late, Instant(7 * MS)), Verdict::Held);
}

/// O_DIRECT writes (`REQ_SYNC | REQ_IDLE`) and reads are not tracked;
/// a sync's writeback (`WB_SYNC_ALL`) is, at `wb_normal`.
#[test]
fn direct_writes_and_reads_pass() {
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    for i in 0..100 {
        let mut d = io(i, 1, IoOp::Write, IoFlags::SYNC);
        assert_eq!(w.on_submit(&mut d, Instant(MS)), Verdict::Dispatch);
        let mut r = io(1000 + i, 1, IoOp::Read, IoFlags::default());
        assert_eq!(w.on_submit(&mut r, Instant(MS)), Verdict::Dispatch);
    }
    assert_eq!(w.inflight(), 0);
    // a read was just issued (close_io): a sync's writeback gets
    // wb_background; 100 ms later wb_normal
    let sync = IoFlags::WRITEBACK.with(IoFlags::SYNC);
    let passed = |w: &mut Wbt, base: u64, at: u64| {
        (0..20)
            .filter(|k| {
                let mut x = io(base + k, 1, IoOp::Write, sync);
                w.on_submit(&mut x, Instant(at)) == Verdict::Dispatch
            })
            .count()
    };
    assert_eq!(passed(&mut w, 2000, MS), 4);
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    assert_eq!(passed(&mut w, 3000, 500 * MS), 8);
}

/// `wb_recent_wait`: a task that slept in `balance_dirty_pages` in the
/// last second lets writeback use `max_depth` (16 at step 0). Since 6.8
/// any task's sleep counts; before, only a root-cgroup task's.
#[test]
fn a_dirty_sleep_opens_max_depth() {
    let fill = |w: &mut Wbt, at: u64| {
        (0..32)
            .filter(|k| w.on_submit(&mut background(*k, 1), Instant(at)) == Verdict::Dispatch)
            .count()
    };
    let mut any = Wbt::new(cfg(RecentWait::AnyTask));
    any.on_dirty_sleep(GroupId(1), Instant(MS));
    assert_eq!(fill(&mut any, 2 * MS), 16);
    let mut root_only = Wbt::new(cfg(RecentWait::RootWb));
    root_only.on_dirty_sleep(GroupId(1), Instant(MS));
    assert_eq!(fill(&mut root_only, 2 * MS), 4);
    let mut root = Wbt::new(cfg(RecentWait::RootWb));
    root.on_dirty_sleep(GroupId::ROOT, Instant(MS));
    assert_eq!(fill(&mut root, 2 * MS), 16);
    // a second (HZ jiffies) later it no longer counts
    let mut late = Wbt::new(cfg(RecentWait::AnyTask));
    late.on_dirty_sleep(GroupId(1), Instant(MS));
    assert_eq!(fill(&mut late, 1_010 * MS), 4);
}

/// Writes alone: each window (25 jiffies at HZ=250, run a tick after its
/// expiry: 104 ms) ends `LAT_UNKNOWN_WRITES` and scales up, to step -2
/// where the depth is capped at 48; the `wbt_step` lines are the 6.12
/// trace's.
#[test]
fn writes_alone_scale_up_to_the_cap() {
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    let mut x = background(0, 1);
    assert_eq!(w.on_submit(&mut x, Instant(0)), Verdict::Dispatch);
    assert_eq!(w.next_deadline(), Some(Instant(104 * MS)));
    let mut now = 0;
    let mut steps = Vec::new();
    for _ in 0..4 {
        now = w
            .next_deadline()
            .expect("a window while a write is in flight")
            .0;
        w.on_timer(Instant(now), &mut Vec::new());
        steps.push(w.limits());
    }
    assert_eq!(
        steps,
        [
            (-1, 31, 16, 8),
            (-2, 48, 24, 12),
            (-2, 48, 24, 12),
            (-2, 48, 24, 12)
        ]
    );
    let mut trace = Vec::new();
    w.drain_trace(&mut trace);
    let mut text = String::new();
    for r in &trace {
        r.format(
            "nullb0",
            crate::controller::TraceFormat::Ftrace(crate::DevId {
                major: 254,
                minor: 0,
            }),
            &mut text,
        );
    }
    assert!(
        text.contains(
            "wbt_step: 254:0: scale up: step=-1, window=100000us, background=8, normal=16, max=31"
        ),
        "{text}"
    );
    assert!(text.contains(
        "wbt_step: 254:0: scale up: step=-2, window=100000us, background=12, normal=24, max=48"
    ));
    assert!(text.contains("wbt_timer: 254:0: status=3, step=-2, inflight=1"));
    // the write completes; with nothing in flight the window ends
    // `LAT_UNKNOWN`, five of them walk the step back to 0 one at a time
    w.on_complete(&x, Instant(now), Instant(now), Instant(now + MS));
    for _ in 0..20 {
        match w.next_deadline() {
            Some(t) => w.on_timer(t, &mut Vec::new()),
            None => break,
        }
    }
    assert_eq!(w.limits(), (0, 16, 8, 4));
    assert_eq!(w.next_deadline(), None);
}

/// A read slower than the target (2 ms) in a window with writes is a
/// latency miss (`wbt_lat`): a hard throttle, from a deeper step straight
/// to 0, then shallower: step 1 has depth 8 and a window of
/// 100 ms × 16 / `int_sqrt(512)` = 72.7 ms.
#[test]
fn slow_reads_scale_down() {
    let mut w = Wbt::new(cfg(RecentWait::AnyTask));
    let mut writes: Vec<Io> = (0..40).map(|i| background(i, 1)).collect();
    assert_eq!(w.on_submit(&mut writes[0], Instant(0)), Verdict::Dispatch);
    // writes alone: step -1 at the first window's end (104 ms)
    w.on_timer(Instant(104 * MS), &mut Vec::new());
    assert_eq!(w.limits().0, -1);
    let mut next = 1;
    let mut miss_window = |w: &mut Wbt, at: u64| {
        // three writes and one 5 ms read complete inside the window
        for x in &mut writes[next..next + 3] {
            assert_eq!(w.on_submit(x, Instant(at)), Verdict::Dispatch);
        }
        let mut r = io(1000 + at, 1, IoOp::Read, IoFlags::default());
        assert_eq!(w.on_submit(&mut r, Instant(at)), Verdict::Dispatch);
        w.on_start(&r, Instant(at), Instant(at));
        for x in &writes[next..next + 3] {
            w.on_complete(x, Instant(at), Instant(at), Instant(at + MS));
        }
        next += 3;
        w.on_complete(&r, Instant(at), Instant(at), Instant(at + 5 * MS));
        let end = w.next_deadline().expect("a window");
        w.on_timer(end, &mut Vec::new());
    };
    miss_window(&mut w, 110 * MS);
    assert_eq!(w.limits(), (0, 16, 8, 4));
    let at = w.next_deadline().expect("re-armed: a write in flight").0 - 50 * MS;
    miss_window(&mut w, at);
    assert_eq!(w.limits(), (1, 8, 4, 2));
    assert_eq!(w.cur_win_ns, 72_727_272);
    let mut trace = Vec::new();
    w.drain_trace(&mut trace);
    let text: String = trace
        .iter()
        .map(|r| {
            let mut t = String::new();
            r.format(
                "nullb0",
                crate::controller::TraceFormat::Ftrace(crate::DevId {
                    major: 254,
                    minor: 0,
                }),
                &mut t,
            );
            t
        })
        .collect();
    assert!(text.contains("wbt_lat: 254:0: latency 5000us"), "{text}");
    assert!(
        text.contains("wbt_timer: 254:0: status=1, step=0"),
        "{text}"
    );
}
