//! Unit tests: exact numbers worked out from blk-iocost.c, knob syntax, and the
//! controller's mechanics on hand-driven scenarios.

use super::knob::*;
use super::model::*;
use super::period::{next_busy_level, LatStat};
use super::variant::{NoDoneRule, NAMES};
use super::vtime::*;
use super::*;
use crate::io::{IoFlags, IoId, IoOp};
use crate::time::Duration;

pub(super) fn tree(paths: &[&str]) -> CgroupTree {
    let mut t = CgroupTree::new();
    for p in paths {
        t.ensure(p).unwrap();
    }
    t
}

pub(super) fn enabled(t: &CgroupTree, variant: &str) -> IoCost {
    let cfg = IoCostConfig {
        variant: Variant::by_name(variant).unwrap(),
        ..IoCostConfig::default()
    };
    let mut c = IoCost::new(cfg, t);
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    c
}

/// A 4 KiB (× `pages`) IO far from everything else (random).
pub(super) fn io(id: u64, g: GroupId, op: IoOp, pages: u64) -> Io {
    Io {
        ioprio: 0,
        id: IoId(id),
        submitter: crate::Submitter(0),
        group: g,
        op,
        flags: IoFlags::default(),
        offset: (id + 1) * (1 << 30),
        len: pages * 4096,
        submitted_at: Instant::ZERO,
        cost_vtime: 0,
    }
}

// ---- the cost model (calc_lcoefs, autop[]) -------------------------------------------

#[test]
fn coefficient_table_matches_reference() {
    // (class, [rpage, rseqio, rrandio, wpage, wseqio, wrandio]) from blk-iocost.c's autop[] table
    let want = [
        (
            AutopClass::Hdd,
            [3234924, 60342, 368221708, 3161261, 57074, 360433855],
        ),
        (
            AutopClass::SsdQd1,
            [2289734, 0, 17497044, 3982238, 94134, 1146847],
        ),
        (
            AutopClass::SsdDfl,
            [1152074, 14235181, 14983047, 1315634, 3464021, 4948676],
        ),
        (AutopClass::SsdFast, [181449, 8171, 0, 323018, 0, 0]),
    ];
    for (class, coefs) in want {
        assert_eq!(Params::from_autop(class).lcoefs, coefs, "{class:?}");
    }
}

#[test]
fn cost_examples_ssd_dfl() {
    let p = Params::from_autop(AutopClass::SsdDfl);
    let g = GroupId(1);
    // 4 KiB random read: far from the cursor
    let r = io(7, g, IoOp::Read, 1);
    assert_eq!(p.vtime_cost(&r, 1, false), 16_135_121);
    // = 117.40 µs of device time (to nearest)
    assert_eq!(
        (16_135_121 * 100 + VTIME_PER_USEC / 2) / VTIME_PER_USEC,
        11_740
    );
    // 1 MiB sequential read: at the cursor (or no cursor yet)
    let mut s = io(1, g, IoOp::Read, 256);
    assert_eq!(p.vtime_cost(&s, 0, false), 309_166_125);
    assert_eq!(p.vtime_cost(&s, s.sector(), false), 309_166_125);
    // exactly 16 MiB (4096 pages) from the cursor is still sequential,
    // one page more is random
    s.offset = (16 << 20) + 8192;
    assert_eq!(p.vtime_cost(&s, 16, false), 14_235_181 + 256 * 1_152_074);
    assert_eq!(p.vtime_cost(&s, 8, false), 14_983_047 + 256 * 1_152_074);
    // merged: size only; size-only cost has no one-page minimum
    assert_eq!(p.vtime_cost(&r, 1, true), 1_152_074);
    let tiny = Io { len: 512, ..r };
    assert_eq!(p.vtime_cost(&tiny, 0, false), 14_235_181 + 1_152_074);
    assert_eq!(p.size_vtime_cost(&tiny), 0);
    assert_eq!(p.size_vtime_cost(&s), 256 * 1_152_074);
    // flush, discard and empty IO are free
    for op in [IoOp::Flush, IoOp::Discard] {
        assert_eq!(p.vtime_cost(&io(1, g, op, 1), 0, false), 0);
    }
    assert_eq!(p.vtime_cost(&Io { len: 0, ..r }, 0, false), 0);
    // writes use the write coefficients
    assert_eq!(
        p.vtime_cost(&io(1, g, IoOp::Write, 1), 1, false),
        4_948_676 + 1_315_634
    );
}

#[test]
fn calc_lcoefs_edges() {
    // a 4 KiB seq IO costs exactly 1/seqiops s, randio likewise
    let (page, seq, rand) = calc_lcoefs(4096 * 10_000, 2000, 500);
    assert_eq!(page + seq, VTIME_PER_SEC.div_ceil(2000));
    assert_eq!(page + rand, VTIME_PER_SEC.div_ceil(500));
    // iops slower than the page rate: no per-IO cost
    assert_eq!(
        calc_lcoefs(4096 * 1000, 5000, 0),
        (VTIME_PER_SEC.div_ceil(1000), 0, 0)
    );
    // bps below one page/s: one page/s
    assert_eq!(calc_lcoefs(1, 0, 0).0, VTIME_PER_SEC);
    assert_eq!(calc_lcoefs(0, 0, 0), (0, 0, 0));
}

// ---- periods (ioc_timer_fn) --------------------------------------------------------

#[test]
fn period_lengths_per_class() {
    let t = tree(&["/a"]);
    let mk = |rotational, queue_depth| {
        IoCost::new(
            IoCostConfig {
                rotational,
                queue_depth,
                ..IoCostConfig::default()
            },
            &t,
        )
    };
    let hdd = mk(true, 32);
    assert_eq!(
        (hdd.autop_class(), hdd.period_us()),
        (AutopClass::Hdd, 500_000)
    );
    let qd1 = mk(false, 1);
    assert_eq!(
        (qd1.autop_class(), qd1.period_us()),
        (AutopClass::SsdQd1, 50_000)
    );
    let dfl = mk(false, 64);
    assert_eq!(
        (dfl.autop_class(), dfl.period_us()),
        (AutopClass::SsdDfl, 50_000)
    );
    assert_eq!(Params::from_autop(AutopClass::SsdFast).period_us(), 10_000);
    // p50 → 10× the latency, p90+ → 2×, clamped to [1 ms, 1 s]
    assert_eq!(period_us_for(500_000, 25_000, 0, 25_000), 250_000);
    assert_eq!(period_us_for(990_000, 25_000, 0, 0), 50_000);
    assert_eq!(period_us_for(0, 100, 0, 0), 1_000);
    assert_eq!(period_us_for(0, 0, 0, 4_000_000), 1_000_000);
    // margins and slack of a 50 ms period at 100%
    assert_eq!(dfl.margins().target, 25_000 * 137_438);
    assert_eq!(dfl.margins().low, 10_000 * 137_438);
    assert_eq!(timer_slack_ns(50_000), 500_000);
}

#[test]
fn period_timer_is_jiffy_quantised() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    // the timer wheel runs a timer a tick after `expires` (calc_index)
    for (hz, at_us, want_ms) in [(1000, 1_500, 52), (250, 1_500, 56), (100, 0, 60)] {
        let mut c = IoCost::new(
            IoCostConfig {
                hz,
                ..IoCostConfig::default()
            },
            &t,
        );
        c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
        assert_eq!(
            c.on_submit(&mut io(1, a, IoOp::Read, 1), Instant::from_us(at_us)),
            Verdict::Dispatch
        );
        // expires = jiffies(now) + usecs_to_jiffies(50 ms), run one tick later
        assert_eq!(
            c.next_deadline(),
            Some(Instant::from_ms(want_ms)),
            "HZ={hz}"
        );
    }
}

/// The first `n` period timer runs (ms) at HZ=250 with the default 50 ms
/// period (usecs_to_jiffies: 13 ticks), a group's IO in flight from 1.5
/// ms (jiffy 0) on, the host's timer lateness `quantiles_ns` (after an
/// on-time run, after a late one).
fn period_runs_ms(quantiles_ns: Option<[[u64; 7]; 2]>, n: usize) -> Vec<u64> {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let timer_late = quantiles_ns.map(|q| crate::time::TimerLateness {
        quantiles_ns: q,
        seed: 3,
    });
    let mut c = IoCost::new(
        IoCostConfig {
            hz: 250,
            timer_late,
            ..IoCostConfig::default()
        },
        &t,
    );
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    let _ = c.on_submit(&mut io(1, a, IoOp::Read, 1), Instant::from_us(1_500));
    let mut runs_ms = Vec::new();
    let mut rel = Vec::new();
    for _ in 0..n {
        let d = c.next_deadline().unwrap();
        runs_ms.push(d.0 / 1_000_000);
        c.on_timer(d, &mut rel);
    }
    runs_ms
}

#[test]
fn a_late_period_timer_starts_the_next_period_from_when_it_ran() {
    // due at jiffy 13 + 1 (56 ms), run `late` after it; the IO is still
    // in flight, so the next period starts at the run: a late run in
    // jiffy 15 (60 ms) rather than 14 is due at 15 + 13 + 1
    assert_eq!(period_runs_ms(None, 2), [56, 112]);
    assert_eq!(period_runs_ms(Some([[0; 7]; 2]), 2), [56, 112]);
    assert_eq!(period_runs_ms(Some([[5_000_000; 7]; 2]), 2), [61, 121]);
}

#[test]
fn the_lateness_after_a_late_run_is_drawn_from_its_own_distribution() {
    // 5 ms (more than a 4 ms tick) after a run on time, none after a
    // late one: the runs alternate. Due 56 (late: 61), from jiffy 15 due
    // 116 (on time), from jiffy 29 due 172 (late: 177), from jiffy 44 due
    // 232
    assert_eq!(
        period_runs_ms(Some([[5_000_000; 7], [0; 7]]), 4),
        [61, 116, 177, 232]
    );
}

// ---- weights (propagate_weights, current_hweight) ----------------------------------------------------------

#[test]
fn hweight_example_a_b_a0_a1() {
    let t = tree(&["/A/A0", "/A/A1", "/B"]);
    let [a, a0, a1, b] = ["/A", "/A/A0", "/A/A1", "/B"].map(|p| t.get(p).unwrap());
    let mut c = enabled(&t, "hold");
    c.set_weight(b, WeightWrite::Default(300)).unwrap();
    let now = Instant::from_ms(1);
    for (i, g) in [a0, a1].into_iter().enumerate() {
        assert_eq!(
            c.on_submit(&mut io(i as u64, g, IoOp::Read, 1), now),
            Verdict::Dispatch
        );
    }
    // B idle: A0 and A1 split the device
    assert_eq!(c.hweights(a0), (32768, 32768));
    assert_eq!(c.hweights(a1), (32768, 32768));
    let _ = c.on_submit(&mut io(9, b, IoOp::Read, 1), now);
    assert_eq!(c.hweights(b), (49152, 49152));
    assert_eq!(c.hweights(a0), (8192, 8192));
    assert_eq!(c.hweights(a1), (8192, 8192));
    // the inner node is active with its weight, never on the active list
    assert!(!c.is_active(a));
    // the leaf-only rule: A's own IO while A0/A1 are active is uncontrolled
    let v0 = c.vtime(a);
    assert_eq!(
        c.on_submit(&mut io(10, a, IoOp::Read, 256), now),
        Verdict::Dispatch
    );
    assert_eq!(c.vtime(a), v0);
    // root IO is never charged
    assert_eq!(
        c.on_submit(&mut io(11, GroupId::ROOT, IoOp::Read, 256), now),
        Verdict::Dispatch
    );
    c.invariants().unwrap();
    // cost scales with 1/hweight: A0 pays 8× the absolute cost (rounded up)
    let v = c.vtime(a0);
    let _ = c.on_submit(&mut io(12, a0, IoOp::Read, 1), now);
    assert_eq!(c.vtime(a0).since(v), 16_135_121 * 8);
}

#[test]
fn weight_knob_changes_share_at_once() {
    let t = tree(&["/x", "/y"]);
    let [x, y] = ["/x", "/y"].map(|p| t.get(p).unwrap());
    let mut c = enabled(&t, "hold");
    let _ = c.on_submit(&mut io(1, x, IoOp::Read, 1), Instant::from_ms(1));
    let _ = c.on_submit(&mut io(2, y, IoOp::Read, 1), Instant::from_ms(1));
    assert_eq!(c.hweights(x).0, 32768);
    c.set_weight(x, WeightWrite::Device(DevId::new(8, 0), 300))
        .unwrap();
    assert_eq!(c.hweights(x).0, 49152);
    assert_eq!(c.weight_lines(x, DevId::new(8, 0)), "default 100\n8:0 300");
    c.set_weight(x, WeightWrite::DeviceDefault(DevId::new(8, 0)))
        .unwrap();
    assert_eq!(c.hweights(x).0, 32768);
    assert_eq!(c.weight_lines(x, DevId::new(8, 0)), "default 100");
    assert!(c.set_weight(x, WeightWrite::Default(0)).is_err());
    assert!(c
        .set_weight(GroupId::ROOT, WeightWrite::Default(5))
        .is_err());
    c.invariants().unwrap();
}

// ---- vrate (ioc_adjust_base_vrate) ------------------------------------------------------

/// Base vrate after `n` consecutive saturated periods from 100%.
fn vrate_after(n: i32) -> u64 {
    let (lo, hi) = (vrate_bound(VRATE_MIN_PPM), vrate_bound(VRATE_MAX_PPM));
    let mut v = VTIME_PER_USEC;
    for level in 1..=n {
        if let Some(x) = adjust_base_vrate(v, lo, hi, level, 0) {
            v = x;
        }
    }
    v
}

#[test]
fn vrate_after_busy_periods() {
    let pct = |v: u64| v as f64 * 100.0 / VTIME_PER_USEC as f64;
    // nothing for levels 1..3
    assert_eq!(vrate_after(3), VTIME_PER_USEC);
    // 16 × 1% then one 2% step
    assert!(
        (83.3..83.5).contains(&pct(vrate_after(20))),
        "{}",
        pct(vrate_after(20))
    );
    assert!(
        (61.5..62.0).contains(&pct(vrate_after(35))),
        "{}",
        pct(vrate_after(35))
    );
    assert!(
        (18.5..19.5).contains(&pct(vrate_after(52))),
        "{}",
        pct(vrate_after(52))
    );
    assert!(
        (4.5..5.0).contains(&pct(vrate_after(60))),
        "{}",
        pct(vrate_after(60))
    );
    // the steps round up
    assert_eq!(
        adjust_base_vrate(137_438, 1375, 13_743_800, 4, 0),
        Some(136_064)
    );
    // up: negative levels, but not while IO lags
    assert_eq!(
        adjust_base_vrate(137_438, 1375, 13_743_800, -4, 0),
        Some(138_813)
    );
    assert_eq!(adjust_base_vrate(137_438, 1375, 13_743_800, -4, 1), None);
    assert_eq!(adjust_base_vrate(137_438, 1375, 13_743_800, 0, 0), None);
    // outside the bounds: walk 4% per period toward them
    assert_eq!(
        adjust_base_vrate(100_000, 110_000, 200_000, 9, 0),
        Some(104_000)
    );
    assert_eq!(
        adjust_base_vrate(108_000, 110_000, 200_000, 9, 0),
        Some(110_000)
    );
    assert_eq!(
        adjust_base_vrate(300_000, 1375, 200_000, -9, 0),
        Some(288_000)
    );
    assert_eq!(
        adjust_base_vrate(137_438, 1375, 137_438, -60, 0),
        Some(137_438)
    );
}

/// Drive one group through `n` periods whose completions all waited 10 ms
/// for a request (rq_wait 20% of a 50 ms period: saturated).
fn saturated_periods(c: &mut IoCost, g: GroupId, n: usize) {
    let mut rel = Vec::new();
    let mut t = Instant::from_ms(1);
    for k in 0..=n {
        let mut x = io(k as u64, g, IoOp::Read, 1);
        assert_eq!(c.on_submit(&mut x, t), Verdict::Dispatch);
        let start = t + Duration::from_ms(10);
        c.on_complete(&x, t, start, start + Duration::from_ms(1));
        if k == n {
            break;
        }
        t = c.next_deadline().unwrap();
        c.on_timer(t, &mut rel);
        c.invariants().unwrap();
    }
}

#[test]
fn vrate_falls_through_the_controller() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    saturated_periods(&mut c, a, 20);
    assert_eq!(c.busy_level(), 20);
    assert_eq!(c.vrate(), vrate_after(20));
    let want = format!(" cost.vrate={} ", format_vrate(vrate_after(20)));
    assert!(want.starts_with(" cost.vrate=83.4"), "{want}");
    assert!(c.iostat_suffix(GroupId::ROOT).starts_with(&want));
    let mut tr = Vec::new();
    c.take_trace(&mut tr);
    assert_eq!(tr.len(), 20);
    assert!(tr
        .iter()
        .all(|p| p.signals.lat.rq_wait_pct == 20 && p.signals.lat.nr_done == 1));
    assert_eq!(
        tr.iter().map(|p| p.busy_level).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<_>>()
    );
}

/// Traces off (a run that writes none): same control, no records.
#[test]
fn traces_off_record_nothing_and_change_nothing() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    c.set_trace(false);
    saturated_periods(&mut c, a, 20);
    assert_eq!(c.vrate(), vrate_after(20));
    let mut tr = Vec::new();
    c.take_trace(&mut tr);
    assert!(tr.is_empty());
    assert_eq!(c.trace_dropped(), 0);
}

#[test]
fn set_vrate_is_the_starting_point_of_the_controller() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    // 127.50%: where the seed's pre-fix kernel had left vrate
    let v = VTIME_PER_USEC * 12_750 / 10_000;
    c.set_vrate(v);
    assert_eq!(c.vrate(), v);
    assert_eq!(format_vrate(c.vrate()), "127.50");
    assert_eq!(c.margins(), Margins::new(c.period_us(), v));
    // the controller moves on from there: 4 saturated periods, one 1% cut
    saturated_periods(&mut c, a, 4);
    assert_eq!(c.busy_level(), 4);
    assert_eq!(c.vrate(), mul_div_ceil_u64(v, 99, 100));
    // a later io.cost.qos write with ctrl=user keeps it (no class change)
    c.apply_qos(&parse_qos("8:0 rpct=90 rlat=3500").unwrap())
        .unwrap();
    assert_eq!(c.vrate(), mul_div_ceil_u64(v, 99, 100));
    // out-of-range values are clamped to 1%..10000%
    c.set_vrate(0);
    assert_eq!(c.vrate(), vrate_bound(VRATE_MIN_PPM));
    c.set_vrate(u64::MAX);
    assert_eq!(c.vrate(), vrate_bound(VRATE_MAX_PPM));
}

fn mul_div_ceil_u64(a: u64, b: u64, c: u64) -> u64 {
    (a * b).div_ceil(c)
}

// ---- delay (ioc_rqos_throttle, blkcg_set_delay) -----------------------------------------------------------

#[test]
fn delay_curve_endpoints() {
    assert_eq!(delay_for_overage_pct(-5), 0);
    assert_eq!(delay_for_overage_pct(500), 0);
    assert_eq!(delay_for_overage_pct(501), 250 + 249_750 / 24_500);
    assert_eq!(delay_for_overage_pct(12_750), 250 + 249_750 / 2);
    assert_eq!(
        delay_for_overage_pct(24_999),
        250 + 249_750 * 24_499 / 24_500
    );
    assert_eq!(delay_for_overage_pct(25_000), 250_000);
    assert_eq!(delay_for_overage_pct(i64::MAX), 250_000);
}

#[test]
fn debt_delay_and_forgiveness() {
    let t = tree(&["/a", "/b"]);
    let [a, b] = ["/a", "/b"].map(|p| t.get(p).unwrap());
    let mut c = enabled(&t, "hold");
    let now = Instant::from_ms(1);
    let mut x = io(900, b, IoOp::Read, 1);
    let _ = c.on_submit(&mut x, now);
    c.on_complete(&x, now, now, now);
    // a has 50%: 25 ms of budget = 5 random 1 MiB reads at twice 2.26 ms
    let mut meta = io(1, a, IoOp::Read, 256);
    meta.flags = IoFlags::META;
    let mut n = 0;
    while c.debt(a) == 0 {
        n += 1;
        meta.id = IoId(n);
        meta.offset = n << 30;
        assert_eq!(
            c.on_submit(&mut meta, now),
            Verdict::Dispatch,
            "debt IO never waits"
        );
    }
    assert_eq!(n, 6);
    // in debt: inuse 1, donating everything to b
    assert_eq!(c.hweights(a), (32768, 1));
    assert_eq!(c.hweights(b), (32768, 65535));
    // pile up ~1 s of debt: 250%+ of a period over → a delay
    for k in 0..500 {
        meta.id = IoId(1000 + k);
        meta.offset = (1000 + k) << 30;
        let _ = c.on_submit(&mut meta, now);
    }
    assert!(c.debt(a) > 400 * 300_000_000);
    let d = c.delay_us(a).expect("delay in effect");
    assert!((250..=250_000).contains(&d), "{d}");
    // a plain IO now waits behind the debt
    assert_eq!(
        c.on_submit(&mut io(5000, a, IoOp::Read, 1), now),
        Verdict::Held
    );
    c.invariants().unwrap();
    // the device is idle: forgiveness halves the debt every 100 ms; the
    // waiter is released long before the debt could be paid at 100%
    let mut rel = Vec::new();
    let mut t_now = now;
    while rel.is_empty() {
        t_now = c.next_deadline().unwrap();
        c.on_timer(t_now, &mut rel);
        c.invariants().unwrap();
        assert!(t_now < Instant::from_ms(20_000), "waiter stuck behind debt");
    }
    assert_eq!(rel[0].id, IoId(5000));
    assert!(t_now < Instant::from_ms(2_000), "{t_now}");
    let st = c.stats(a);
    assert!(
        st.indebt_us > 0 && st.wait_us > 0 && st.indelay_us > 0,
        "{st:?}"
    );
    c.invariants().unwrap();
    // the kernel's iocost_iocg_forgive_debt line for each forgiveness:
    // the debt shrinks (halved per 100 ms, then paid by the kick)
    let (debts, text) = forgiven_debts(&mut c, "/a");
    assert!(!debts.is_empty(), "no forgiveness traced:\n{text}");
    for (old, new) in &debts {
        assert!(new <= &(old / 2).max(1), "debt {old} -> {new}");
    }
}

/// (old, new) debt of each `iocost_iocg_forgive_debt` line for `group` in
/// `c`'s drained trace, as the kernel's trace buffer prints it, and the
/// whole trace.
fn forgiven_debts(c: &mut IoCost, group: &str) -> (Vec<(u64, u64)>, String) {
    let mut recs: Vec<Box<dyn crate::controller::TraceRecord>> = Vec::new();
    crate::controller::Controller::drain_trace(c, &mut recs);
    let dev = crate::io::DevId {
        major: 254,
        minor: 0,
    };
    let mut text = String::new();
    for r in &recs {
        r.format(
            "nullb0",
            crate::controller::TraceFormat::Ftrace(dev),
            &mut text,
        );
    }
    let key = format!(" iocost_iocg_forgive_debt: [nullb0:{group}] now=");
    let debts = text
        .lines()
        .filter_map(|l| l.split_once(key.as_str()))
        .filter_map(|(_, f)| {
            let d = f.split_whitespace().find_map(|w| w.strip_prefix("debt="))?;
            let (old, new) = d.split_once("->")?;
            Some((old.parse().ok()?, new.parse().ok()?))
        })
        .collect();
    (debts, text)
}

// ---- issue path ---------------------------------------------------------------

#[test]
fn waiters_are_fifo_and_woken_by_their_timer() {
    let t = tree(&["/a", "/b"]);
    let [a, b] = ["/a", "/b"].map(|p| t.get(p).unwrap());
    let mut c = enabled(&t, "hold");
    let now = Instant::from_ms(1);
    let _ = c.on_submit(&mut io(100, b, IoOp::Read, 1), now);
    // a has 50% share: 25 ms budget ≈ 106 random 4 KiB reads at 2× cost
    let mut held = Vec::new();
    for i in 0..300 {
        if c.on_submit(&mut io(i, a, IoOp::Read, 1), now) == Verdict::Held {
            held.push(i);
        }
    }
    assert_eq!(300 - held.len(), 106);
    assert_eq!(c.held(), held.len());
    let first = c.next_deadline().unwrap();
    // the timer is for the head: ~2×117 µs + 1% of a period of slack away
    assert!(first > now && first < now + Duration::from_ms(1), "{first}");
    let mut out = Vec::new();
    let mut rel = Vec::new();
    while c.held() > 0 {
        let d = c.next_deadline().unwrap();
        rel.clear();
        c.on_timer(d, &mut rel);
        out.extend(rel.iter().map(|x| x.id.0));
        c.invariants().unwrap();
    }
    assert_eq!(out, held, "FIFO");
    let s = c.stats(a);
    assert_eq!(s.usage_us, c.stats(a).usage_us);
}

#[test]
fn idle_group_deactivates_and_restarts_with_target_budget() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    let mut x = io(1, a, IoOp::Read, 1);
    let _ = c.on_submit(&mut x, Instant::from_ms(1));
    assert!(c.is_active(a));
    // in flight: not idle
    let mut rel = Vec::new();
    for _ in 0..3 {
        let d = c.next_deadline().unwrap();
        c.on_timer(d, &mut rel);
    }
    assert!(c.is_active(a));
    c.on_complete(
        &x,
        Instant::from_ms(1),
        Instant::from_ms(1),
        Instant::from_ms(160),
    );
    let d = c.next_deadline().unwrap();
    c.on_timer(d, &mut rel);
    assert!(!c.is_active(a));
    assert_eq!(c.next_deadline(), None, "IDLE: the timer stops");
    c.invariants().unwrap();
    let t1 = Instant::from_ms(900);
    let _ = c.on_submit(&mut io(2, a, IoOp::Read, 1), t1);
    let target = c.margins().target as u64;
    assert_eq!(c.vtime(a), c.vnow(t1).minus(target).plus(16_135_121));
}

// ---- busy_level rules (ioc_timer_fn; seed 001) --------------------------------

#[test]
fn seed_001_busy_level_rules() {
    let thr = [100_000, 100_000];
    let none = LatStat::default();
    let missed = LatStat {
        missed_ppm: [1_000_000, 0],
        rq_wait_pct: 0,
        nr_done: 3,
    };
    let rule =
        |r, level, lat: &LatStat, lag, short| next_busy_level(r, level, lat, thr, lag, short);
    use NoDoneRule::*;
    // saturated: up from max(level, 0)
    for r in [Reset, Hold, HoldClamp] {
        assert_eq!(rule(r, -7, &missed, 1, 1), 1);
        assert_eq!(rule(r, 7, &missed, 0, 0), 8);
    }
    // no completions, lagging IO, shortages
    assert_eq!(rule(Reset, 7, &none, 2, 1), 0);
    assert_eq!(rule(Hold, 7, &none, 2, 1), 7);
    assert_eq!(rule(HoldClamp, 7, &none, 2, 1), 4);
    assert_eq!(rule(HoldClamp, -9, &none, 2, 1), -4);
    // no completions, no lagging, shortages: reset and hold decrement
    assert_eq!(rule(Reset, 7, &none, 0, 1), -1);
    assert_eq!(rule(Hold, 7, &none, 0, 1), -1);
    assert_eq!(rule(HoldClamp, 7, &none, 0, 1), 0);
    assert_eq!(rule(HoldClamp, -3, &none, 0, 1), -3);
    // no completions, nothing throttled
    for r in [Reset, Hold, HoldClamp] {
        assert_eq!(rule(r, 7, &none, 0, 0), 0);
    }
    // the hysteresis band: between 75% and 100% of a threshold
    let band = LatStat {
        missed_ppm: [90_000, 0],
        rq_wait_pct: 0,
        nr_done: 5,
    };
    assert_eq!(rule(Hold, -5, &band, 0, 1), 0);
    // rq_wait: > 5% busy, ≤ 3% fine, 4–5% band
    let rq = |p| LatStat {
        missed_ppm: [0, 0],
        rq_wait_pct: p,
        nr_done: 1,
    };
    assert_eq!(rule(Hold, 0, &rq(6), 0, 1), 1);
    assert_eq!(rule(Hold, 0, &rq(5), 0, 1), 0);
    assert_eq!(rule(Hold, 0, &rq(3), 0, 1), -1);
    // clamp
    assert_eq!(rule(Hold, 1000, &missed, 0, 0), 1000);
    assert_eq!(rule(Hold, -1000, &rq(0), 0, 1), -1000);
}

#[test]
fn variant_names_resolve() {
    for (n, _) in NAMES {
        assert!(Variant::by_name(n).is_some(), "{n}");
    }
    assert_eq!(
        Variant::by_name("linux-6.18").unwrap().no_done,
        NoDoneRule::Reset
    );
    assert_eq!(
        Variant::by_name("mainline").unwrap().no_done,
        NoDoneRule::Hold
    );
    assert_eq!(
        Variant::by_name("linux-7.1").unwrap().no_done,
        NoDoneRule::Hold
    );
    assert_eq!(Variant::default().no_done, NoDoneRule::Hold);
    assert!(Variant::by_name("linux-5.4").is_none());
}

#[test]
fn scheduled_writes_apply_at_their_time() {
    let t = tree(&["/x", "/y"]);
    let [x, y] = ["/x", "/y"].map(|p| t.get(p).unwrap());
    let mut c = enabled(&t, "hold");
    c.schedule(
        Instant::from_ms(20),
        Reconfig::Weight(x, WeightWrite::Default(300)),
    );
    c.schedule(
        Instant::from_ms(30),
        Reconfig::Weight(y, WeightWrite::Default(0)),
    );
    let bad = parse_qos("8:0 min=500 max=200").unwrap();
    c.schedule(Instant::from_ms(30), Reconfig::Qos(bad));
    let now = Instant::from_ms(1);
    let _ = c.on_submit(&mut io(1, x, IoOp::Read, 1), now);
    let _ = c.on_submit(&mut io(2, y, IoOp::Read, 1), now);
    assert_eq!(c.hweights(x).0, 32768);
    assert_eq!(c.next_deadline(), Some(Instant::from_ms(20)));
    let mut rel = Vec::new();
    c.on_timer(Instant::from_ms(20), &mut rel);
    assert_eq!(c.hweights(x).0, 49152);
    c.on_timer(Instant::from_ms(30), &mut rel);
    let mut rej = Vec::new();
    c.take_rejected(&mut rej);
    assert_eq!(rej.len(), 2, "{rej:?}");
    assert!(rej
        .iter()
        .all(|(at, e)| *at == Instant::from_ms(30) && e.errno_name() == "EINVAL"));
    c.invariants().unwrap();
}

#[test]
fn queue_depth_picks_the_class() {
    let t = tree(&["/a"]);
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    assert_eq!(c.autop_class(), AutopClass::SsdDfl);
    c.set_queue_depth(1);
    assert_eq!(c.autop_class(), AutopClass::SsdQd1);
    assert_eq!(c.params().i_lcoefs[I_LCOEF_RRANDIOPS], 6_946);
    // a user model is kept across the class change
    c.apply_model(&parse_model("8:0 rrandiops=5").unwrap());
    c.set_queue_depth(32);
    assert_eq!(c.autop_class(), AutopClass::SsdDfl);
    assert_eq!(c.params().i_lcoefs[I_LCOEF_RRANDIOPS], 5);
}

#[test]
fn io_while_disabled_or_uncosted_bypasses() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    // disabled: nothing is charged
    for i in 0..1000 {
        assert_eq!(
            c.on_submit(&mut io(i, a, IoOp::Read, 256), Instant::ZERO),
            Verdict::Dispatch
        );
    }
    assert!(!c.is_active(a));
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    for op in [IoOp::Flush, IoOp::Discard] {
        assert_eq!(
            c.on_submit(&mut io(1, a, op, 256), Instant::ZERO),
            Verdict::Dispatch
        );
    }
    assert!(!c.is_active(a));
    assert_eq!(c.iostat_suffix(GroupId(99)), "");
    c.invariants().unwrap();
    c.check().unwrap();
}

/// An IO of a group the controller does not know, and time running
/// backwards, break the call protocol: a debug build panics, a release
/// build passes the IO on and `check` reports the fault.
#[test]
fn protocol_faults_are_loud() {
    use crate::controller::Controller as _;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        c.on_submit(&mut io(1, GroupId(99), IoOp::Read, 1), Instant::ZERO)
    }));
    if cfg!(debug_assertions) {
        let msg = *r.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.contains("group 99, which is not among the 2 online groups"),
            "{msg}"
        );
    } else {
        assert_eq!(r.unwrap(), Verdict::Dispatch);
        let v = c.check().unwrap_err();
        assert!(
            v.to_string().starts_with("iocost: invariant violated: IO"),
            "{v}"
        );
    }
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    let _ = c.on_submit(&mut io(1, a, IoOp::Read, 1), Instant::from_ms(5));
    let r = catch_unwind(AssertUnwindSafe(|| {
        c.on_submit(&mut io(2, a, IoOp::Read, 1), Instant::from_ms(4))
    }));
    if cfg!(debug_assertions) {
        let msg = *r.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.contains("time ran backwards: 4000000 ns after 5000000 ns"),
            "{msg}"
        );
    } else {
        let _ = r.unwrap();
        assert!(c.check().unwrap_err().what.contains("time ran backwards"));
    }
}

// ---- ioc_rqos_merge -------------------------------------------------------

/// A bio merged into a charged request pays its size cost only, moves the
/// cursor on a back merge at the cursor, and completes like any IO.
#[test]
fn a_merge_within_budget_pays_the_size_cost_only() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    let mut first = io(1, a, IoOp::Read, 1);
    assert_eq!(c.on_submit(&mut first, Instant::ZERO), Verdict::Dispatch);
    let g = a.idx();
    let end = first.sector() + first.sectors();
    assert_eq!(c.groups[g].cursor, end);
    let usage = c.groups[g].abs_vusage;
    let mut next = io(2, a, IoOp::Read, 1);
    next.offset = first.offset + first.len;
    let size_only = c.params.vtime_cost(&next, c.groups[g].cursor, true);
    let full = c.params.vtime_cost(&next, c.groups[g].cursor, false);
    assert!(size_only > 0 && size_only < full, "{size_only} vs {full}");
    let delayed = c.merge(&next, &mut first, Instant::ZERO);
    assert!(!delayed);
    assert_eq!(c.groups[g].abs_vusage - usage, size_only);
    assert_eq!(c.groups[g].abs_vdebt, 0);
    assert_eq!(
        c.groups[g].cursor,
        end + next.sectors(),
        "back merge at the cursor"
    );
    c.invariants().unwrap();
    // the merged bio's cost is done with its request
    assert!(c.groups[g].vtime.after(c.groups[g].done_vtime));
    c.on_complete(&first, Instant::ZERO, Instant::ZERO, Instant(1_000_000));
    assert_eq!(c.groups[g].vtime, c.groups[g].done_vtime);
    assert_eq!(c.groups[g].inflight_cost, 0);
    c.invariants().unwrap();
}

/// `ioc_rqos_merge` prices a merged bio through
/// `adjust_inuse_and_calc_cost`: a group that donated (inuse < active) and
/// has too little margin first takes its weight back, so a merge that the
/// full weight's budget covers is committed rather than turned into debt.
#[test]
fn a_merge_of_a_donating_group_takes_its_weight_back() {
    let t = tree(&["/a", "/b"]);
    let (a, b) = (t.get("/a").unwrap(), t.get("/b").unwrap());
    let mut c = enabled(&t, "hold");
    let mut first = io(1, a, IoOp::Write, 1);
    assert_eq!(c.on_submit(&mut first, Instant::ZERO), Verdict::Dispatch);
    assert_eq!(
        c.on_submit(&mut io(2, b, IoOp::Write, 1), Instant::ZERO),
        Verdict::Dispatch
    );
    let g = a.idx();
    let now = c.snapshot(0);
    let active = c.groups[g].active;
    let full_hwi = c.current_hweight(g).1;
    // donate nine tenths of the weight
    c.propagate_weights(g, active, active / 10, true, &now);
    let donated_hwi = c.current_hweight(g).1;
    assert!(donated_hwi < full_hwi / 5, "{donated_hwi} vs {full_hwi}");
    let mut next = io(3, a, IoOp::Write, 64);
    next.offset = first.offset + first.len;
    let abs = c.params.vtime_cost(&next, c.groups[g].cursor, true);
    let (at_full, at_donated) = (
        abs_cost_to_cost(abs, full_hwi),
        abs_cost_to_cost(abs, donated_hwi),
    );
    assert!(at_full < at_donated);
    // budget for the full-weight price, not for the donated one
    let target = now.vnow.plus_signed(-(((at_full + at_donated) / 2) as i64));
    let shift = target.since(c.groups[g].vtime);
    c.groups[g].vtime = target;
    c.groups[g].done_vtime = c.groups[g].done_vtime.plus_signed(shift);
    let vtime0 = c.groups[g].vtime;
    assert!(!c.merge(&next, &mut first, Instant::ZERO));
    assert_eq!(c.groups[g].abs_vdebt, 0, "committed, not debt");
    assert!(c.groups[g].inuse > active / 10, "inuse snapped back");
    let charged = c.groups[g].vtime.since(vtime0) as u64;
    assert!(charged < at_donated && charged >= at_full, "{charged}");
    c.invariants().unwrap();
}

/// Over budget (or into a request without a cost) a merge cannot wait: it
/// is charged as debt, which pushes the group into issuer delay once the
/// overage is large enough.
#[test]
fn a_merge_over_budget_becomes_debt_and_delay() {
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    let mut first = io(1, a, IoOp::Write, 256);
    assert_eq!(c.on_submit(&mut first, Instant::ZERO), Verdict::Dispatch);
    let g = a.idx();
    // into an uncharged request (no cost record): debt even with budget left
    let mut x = io(2, a, IoOp::Write, 1);
    x.offset = first.offset + first.len;
    let mut uncharged = Io {
        id: crate::IoId(999),
        cost_vtime: 0,
        ..first
    };
    assert!(!c.merge(&x, &mut uncharged, Instant::ZERO));
    assert!(c.groups[g].abs_vdebt > 0);
    assert_eq!(c.groups[g].inuse, 1, "a debtor keeps the minimum inuse");
    // many 1 MiB merges at one instant: far over budget → issuer delay
    let mut delayed = false;
    for k in 0..400u64 {
        let mut m = io(10 + k, a, IoOp::Write, 256);
        m.offset = first.offset + (k + 2) * (1 << 20);
        delayed |= c.merge(&m, &mut first, Instant::ZERO);
    }
    assert!(delayed, "debt {}", c.groups[g].abs_vdebt);
    // the submitter sleeps the group's delay (blkcg_set_delay: µs → ns)
    assert_eq!(
        c.issuer_delay(a).map(|d| d.0),
        c.delay_us(a).map(|us| us * 1_000)
    );
    assert_eq!(
        c.on_merge(&io(900, a, IoOp::Write, 256), &mut first, Instant::ZERO),
        c.issuer_delay(a)
    );
    assert!(
        c.delay_us(a).is_some_and(|d| d >= 250),
        "{:?}",
        c.delay_us(a)
    );
    c.invariants().unwrap();
}

#[test]
fn vrate_adj_fires_as_ioc_adjust_base_vrate_traces() {
    // ioc_adjust_base_vrate(): it traces every adjustment (busy_level not
    // 0 and not negative with lagging groups), and otherwise only when
    // busy_level changed or a group lags
    let t = tree(&["/a"]);
    let a = t.get("/a").unwrap();
    let mut c = enabled(&t, "hold");
    saturated_periods(&mut c, a, 4);
    let mut tr = Vec::new();
    c.take_trace(&mut tr);
    assert!(!tr.is_empty());
    let mut p = tr[0].clone();
    let fires = |p: &mut super::trace::PeriodTrace, prev: i32, now: i32, lagging: u32| {
        p.signals.prev_busy_level = prev;
        p.signals.busy_level = now;
        p.signals.nr_lagging = lagging;
        let mut s = String::new();
        p.format_ftrace("nullb1", &mut s);
        assert_eq!(p.vrate_adj_fires(), !s.is_empty());
        p.vrate_adj_fires()
    };
    assert!(!fires(&mut p, 0, 0, 0), "nothing changed: silent");
    assert!(fires(&mut p, 1, 0, 0), "busy_level changed");
    assert!(fires(&mut p, 0, 0, 1), "a lagging group");
    assert!(fires(&mut p, 3, 3, 0), "adjusting (busy): always");
    assert!(fires(&mut p, -2, -2, 0), "adjusting (idle): always");
    assert!(fires(&mut p, -2, -2, 1), "negative with lagging: lagging");
    // the line is the kernel's format (include/trace/events/iocost.h)
    p.signals.busy_level = 5;
    p.signals.vtime_rate = 137_438;
    p.vrate = 136_064;
    p.signals.lat.missed_ppm = [250_000, 0];
    p.signals.lat.rq_wait_pct = 7;
    p.signals.nr_lagging = 1;
    p.signals.nr_shortages = 2;
    p.at = crate::Instant(1_500_000_000);
    let mut s = String::new();
    p.format_ftrace("nullb1", &mut s);
    assert!(
        s.ends_with("1.500000: iocost_ioc_vrate_adj: [nullb1] vrate=137438->136064 busy=5 missed_ppm=250000:0 rq_wait_pct=7 lagging=1 shortages=2\n"),
        "{s}"
    );
}
