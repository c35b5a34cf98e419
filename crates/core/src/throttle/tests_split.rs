//! Bios split to the device's max IO size: what each variant charges.

use super::paced::{Paced, PacedConfig};
use super::tests::{cfg, io, limits, tree};
use super::*;
use crate::time::Duration;
use proptest::prelude::*;

/// Drive `c` as the driver does for a device that cuts bios into pieces of
/// `piece` bytes: when a bio (or the rest of one) passes, its front piece
/// goes to the device and the rest is resubmitted at once, flagged
/// `SPLIT_REST`, before anything else is submitted. Returns each bio's
/// (id, time its last piece passed), in completion order.
fn drive_split(
    c: &mut dyn Controller,
    subs: &[Io],
    piece: u64,
    until: Instant,
) -> Vec<(u64, Instant)> {
    let mut done = Vec::new();
    let mut i = 0;
    let mut now = Instant::ZERO;
    let mut rel = Vec::new();
    loop {
        let next_sub = subs.get(i).map(|s| s.submitted_at);
        let t = match (next_sub, c.next_deadline()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        if t > until {
            break;
        }
        assert!(t >= now, "time went back");
        now = t;
        rel.clear();
        c.on_timer(now, &mut rel);
        for b in rel.clone() {
            cut(c, b, piece, now, &mut done);
        }
        while i < subs.len() && subs[i].submitted_at <= now {
            if c.on_submit(&mut { subs[i] }, now) == Verdict::Dispatch {
                cut(c, subs[i], piece, now, &mut done);
            }
            i += 1;
        }
    }
    done
}

/// `b` passed: cut pieces off its front until the rest is held or gone.
fn cut(
    c: &mut dyn Controller,
    mut b: Io,
    piece: u64,
    now: Instant,
    done: &mut Vec<(u64, Instant)>,
) {
    while b.len > piece {
        b = Io {
            offset: b.offset + piece,
            len: b.len - piece,
            flags: b.flags.with(IoFlags::SPLIT_REST),
            submitted_at: now,
            cost_vtime: 0,
            ..b
        };
        if c.on_submit(&mut b, now) == Verdict::Held {
            return;
        }
    }
    done.push((b.id.0, now));
}

const MIB: u64 = 1 << 20;
const PIECE: u64 = 128 << 10;

fn last(out: &[(u64, Instant)]) -> f64 {
    out.iter().map(|x| x.1).max().unwrap().as_ns() as f64 / 1e9
}

fn flood(g: GroupId, n: u64, len: u64) -> Vec<Io> {
    (0..n)
        .map(|i| io(i, g, IoOp::Read, len, Instant::ZERO))
        .collect()
}

/// `riops=100`, 200 × 1 MiB reads cut into 8 pieces: kernels that charge
/// the pieces admit 12.5 bios/s (16 s), those whose pieces bypass
/// 100 bios/s (2 s).
#[test]
fn riops_counts_pieces_except_on_legacy() {
    let t = tree(&["/cg1"]);
    let g = t.get("/cg1").unwrap();
    for (v, want) in [
        ("mainline", 16.0),
        ("linux-6.12", 16.0),
        ("linux-6.6", 16.0),
        ("linux-6.1", 16.0),
        ("linux-5.15", 16.0),
        ("legacy", 2.0),
        ("slice-remainder", 2.0),
        ("linux-4.19", 2.0),
    ] {
        let mut th = Throttle::new(cfg(v), &t);
        th.set_limits(g, limits("8:0 riops=100"), Instant::ZERO);
        let out = drive_split(
            &mut th,
            &flood(g, 200, MIB),
            PIECE,
            Instant::from_ms(100_000),
        );
        assert_eq!(out.len(), 200, "{v}: all done");
        let secs = last(&out);
        assert!(
            (secs - want).abs() <= want * 0.05,
            "{v}: 200 bios took {secs} s, want {want}"
        );
        th.invariants().unwrap();
        assert_eq!(th.held(), 0);
    }
}

/// `rbps=1MiB`: the bytes of a split bio are charged once, on every
/// variant (20 × 1 MiB in 20 s, not 160 s).
#[test]
fn rbps_charges_the_bytes_once() {
    let t = tree(&["/cg1"]);
    let g = t.get("/cg1").unwrap();
    for v in [
        "mainline",
        "linux-6.12",
        "linux-6.1",
        "linux-5.15",
        "legacy",
    ] {
        for line in ["8:0 rbps=1048576", "8:0 rbps=1048576 riops=100000"] {
            let mut th = Throttle::new(cfg(v), &t);
            th.set_limits(g, limits(line), Instant::ZERO);
            let out = drive_split(
                &mut th,
                &flood(g, 20, MIB),
                PIECE,
                Instant::from_ms(400_000),
            );
            assert_eq!(out.len(), 20, "{v} {line}");
            let secs = last(&out);
            assert!((19.0..=21.0).contains(&secs), "{v} {line}: {secs} s");
        }
    }
}

/// The bug v6.16's split queues fixed (blktests throtl/007): two 1 MiB
/// writes at `wbps=1MiB` with a huge IOPS limit. With one queue the first
/// bio's pieces wait behind the second bio's bytes, so both finish at
/// ~2 s; with split queues the first finishes at ~1 s. Without an IOPS
/// limit the pieces skip blk-throttle and every variant gets 1 s and 2 s.
#[test]
fn pre_6_16_pieces_wait_behind_unpaid_bytes() {
    let t = tree(&["/cg1"]);
    let g = t.get("/cg1").unwrap();
    let two = |v: &str, line: &str| {
        let mut th = Throttle::new(cfg(v), &t);
        th.set_limits(g, limits(line), Instant::ZERO);
        let subs: Vec<Io> = (0..2)
            .map(|i| io(i, g, IoOp::Write, MIB, Instant::ZERO))
            .collect();
        let out = drive_split(&mut th, &subs, 4096, Instant::from_ms(10_000));
        th.invariants().unwrap();
        let at = |id| {
            let t = out.iter().find(|x| x.0 == id).expect("done").1;
            (t.as_ns() as f64 / 1e8).round() / 10.0
        };
        (at(0), at(1))
    };
    let both = "8:0 wbps=1048576 wiops=1000000";
    let bps = "8:0 wbps=1048576";
    assert_eq!(two("mainline", both), (1.0, 2.0));
    assert_eq!(two("mainline-ssd-slice", both), (1.0, 2.0));
    assert_eq!(two("linux-6.12", both), (2.0, 2.0));
    assert_eq!(two("linux-6.1", both), (2.0, 2.0));
    for v in ["mainline", "linux-6.12", "linux-6.1", "legacy"] {
        assert_eq!(two(v, bps), (1.0, 2.0), "{v}");
    }
}

/// 5.15's split charges never delay the pieces of the bio itself, only
/// later bios; 6.1 makes the pieces wait.
#[test]
fn linux_5_15_counts_pieces_without_waiting() {
    let t = tree(&["/cg1"]);
    let g = t.get("/cg1").unwrap();
    let first_done = |v: &str| {
        let mut th = Throttle::new(cfg(v), &t);
        th.set_limits(g, limits("8:0 riops=100"), Instant::ZERO);
        let out = drive_split(&mut th, &flood(g, 2, MIB), PIECE, Instant::from_ms(10_000));
        assert_eq!(out.len(), 2);
        (out[0].1, out[1].1)
    };
    let (a, b) = first_done("linux-5.15");
    assert_eq!(a, Instant::ZERO, "5.15: the first bio's pieces do not wait");
    // the second bio pays for all 8 IOs of the first: 8 IOs at 100/s
    assert!(b >= Instant::from_ms(60), "5.15: second bio at {b}");
    // with THROTTLING_LOW's 20 ms slice (2 IOs of budget) the pieces wait;
    // the 100 ms slice of distributions' builds has room for all 8
    let (a, _) = first_done("linux-6.1-low");
    assert!(
        a >= Instant::from_ms(60),
        "6.1: the first bio's pieces wait ({a})"
    );
    let (a, _) = first_done("linux-6.1");
    assert_eq!(a, Instant::ZERO, "6.1, 100 ms slice: 10 IOs of budget");
}

#[test]
fn paced_counts_pieces_and_bytes_once() {
    let t = tree(&["/cg1"]);
    let g = t.get("/cg1").unwrap();
    let mut p = Paced::new(PacedConfig::default(), &t, false);
    p.set_limits(g, limits("8:0 riops=100"), Instant::ZERO);
    let out = drive_split(
        &mut p,
        &flood(g, 200, MIB),
        PIECE,
        Instant::from_ms(100_000),
    );
    assert_eq!(out.len(), 200);
    assert!((15.5..=16.5).contains(&last(&out)), "{}", last(&out));
    let mut p = Paced::new(PacedConfig::default(), &t, false);
    p.set_limits(g, limits("8:0 rbps=1048576"), Instant::ZERO);
    let out = drive_split(&mut p, &flood(g, 20, MIB), PIECE, Instant::from_ms(400_000));
    assert_eq!(out.len(), 20);
    assert!((18.5..=20.5).contains(&last(&out)), "{}", last(&out));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random bios cut into random pieces under random limits: every bio
    /// finishes, nothing stays held and the structural invariants hold.
    /// (Bio order is not kept: a resubmitted remainder queues behind bios
    /// that arrived after its bio, in the kernel too.)
    #[test]
    fn split_chains_drain(
        lens in prop::collection::vec((1u64..64, 0u64..5000, any::<bool>()), 1..120),
        piece_kib in 4u64..256,
        riops in 20u64..3000,
        wbps_kib in 64u64..8192,
        variant in 0usize..6,
    ) {
        let names = ["legacy", "linux-5.15", "linux-6.1", "linux-6.12", "mainline", "slice-remainder"];
        let t = tree(&["/p/a"]);
        let (p, a) = (t.get("/p").unwrap(), t.get("/p/a").unwrap());
        let mut th = Throttle::new(cfg(names[variant]), &t);
        th.set_limits(p, limits(&format!("8:0 riops={riops} wbps={}", wbps_kib * 1024)), Instant::ZERO);
        th.set_limits(a, limits(&format!("8:0 riops={}", riops * 2)), Instant::ZERO);
        let mut now = Instant::ZERO;
        let subs: Vec<Io> = lens.iter().enumerate().map(|(i, &(kib, gap_us, w))| {
            now += Duration::from_us(gap_us);
            let op = if w { IoOp::Write } else { IoOp::Read };
            io(i as u64, a, op, kib * 16 * 1024, now)
        }).collect();
        let out = drive_split(&mut th, &subs, piece_kib * 1024, Instant::from_ms(100_000_000));
        prop_assert_eq!(out.len(), subs.len());
        prop_assert_eq!(th.held(), 0);
        if let Err(e) = th.invariants() { prop_assert!(false, "{}", e); }
    }
}
