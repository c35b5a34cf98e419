//! `blkqos bench accounting`, latency histogram part: what
//! `--lat-hist` costs per IO, with the histograms on vs off.
//!
//! * micro: one disk-statistics start + completion (precise mode) per IO,
//!   with and without recording the IO in the device's and its group's
//!   histograms (`LatHists::record`), latencies varying over ~500
//!   buckets, groups round-robin;
//! * end to end: the simulator benchmark's job (`bench sim`, 1 s
//!   simulated) with `RunOptions::lat_hist` off and on, in alternating
//!   pairs.

use anyhow::Result;
use blkqos_core::{GroupId, Instant, IoOp};
use blkqos_driver::{DiskStats, LatHists, TicksMode};
use std::time::Instant as WallClock;

/// ns per IO of `n` start + done calls, recording into `hists` if given.
fn micro(n: u64, groups: u32, mut hists: Option<&mut LatHists>) -> f64 {
    let mut d = DiskStats::new(TicksMode::Precise, 1000);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let t0 = WallClock::now();
    for i in 0..n {
        // xorshift: device time 15..47 µs, plus a wait of 0..4 µs
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let dev_ns = 15_000 + (x & 0x7fff);
        let wait_ns = (x >> 20) & 0xfff;
        let start = Instant(i * 50_000);
        let end = Instant(i * 50_000 + dev_ns);
        d.start(IoOp::Read, std::hint::black_box(start));
        d.done(IoOp::Read, 4096, start, std::hint::black_box(end));
        if let Some(h) = hists.as_deref_mut() {
            let g = GroupId((i % u64::from(groups)) as u32);
            h.record(IoOp::Read, g, dev_ns, dev_ns + wait_ns);
        }
    }
    std::hint::black_box(&d);
    t0.elapsed().as_nanos() as f64 / n as f64
}

/// Alternating off/on runs of the simulator job.
const PAIRS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(n: u64) -> Result<()> {
    for groups in [1u32, 64] {
        let off = micro(n, groups, None);
        let mut h = LatHists::new(groups as usize);
        let on = micro(n, groups, Some(&mut h));
        std::hint::black_box(&h);
        blkqos_experiment::outln!(
            "lat-hist: micro, {groups:>2} groups: {off:>6.2} ns per IO off, {on:>6.2} on: {:+.2} ns ({:.2}x)",
            on - off,
            on / off
        )?;
    }
    // alternating pairs; the per-pair ratio cancels slow drifts in load
    let (mut off, mut on, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let per_io = |lat| -> Result<f64> {
            let (ios, wall, _) = super::sim_job(1, false, lat)?;
            Ok(wall * 1e9 / ios as f64)
        };
        let (a, b) = (per_io(false)?, per_io(true)?);
        off.push(a);
        on.push(b);
        ratio.push(b / a);
    }
    let (off, on, ratio) = (median(off), median(on), median(ratio));
    blkqos_experiment::outln!(
        "lat-hist: simulator (bench sim job, 1 s simulated, {PAIRS} pairs, medians): {off:.1} ns per IO off, {on:.1} on: {:+.1} ns; on/off per pair {ratio:.3}",
        on - off
    )?;
    Ok(())
}
