//! Fitting the simulator's `ssd` model and the host's submit cost to one
//! round of measurements, and the kernel's linear cost model
//! (`io.cost.model`) as `iocost_coef_gen.py` derives it.
//!
//! The `ssd` model (crates/sim `device/ssd.rs`) serves each request on the
//! first of `c` free units, holding it for the service time
//! `S(len) = base + J/2 + len·σ` on average (σ = 1 / rate per unit, J the
//! jitter bound), then adds `delay` outside the units; the simulated job
//! spends `h` (`submit_ns`) in each submit call and issues its next IO as
//! one completes. Per direction, the measurements give:
//!
//! * depth 1, three sizes: the time from one IO's submission to the next
//!   one's is `cycle(len) = h + delay + S(len)`, a line in `len` whose
//!   slope is σ and whose intercept is `I = h + delay + base + J/2`
//!   (sizes larger than one request are left out: the simulator splits
//!   them);
//! * depth 1, 4 KiB: the spread `p99 − p50 = 0.49 J` (uniform jitter);
//! * depth 64, 4 KiB: the saturated rate `X = c / S(4k)`;
//! * the sequential job (iocost_coef_gen.py's 128 MiB reads, split into
//!   requests of `m` = max_sectors_kb): the bandwidth `bps = c·m / S(m)`.
//!
//! The last two give `S(4k)` and `c`:
//! `base + J/2 = σ·m·(bps − 4k·X) / (X·m − bps)` and `c = X·S(4k)`, with
//! `σ ≥ 1 / bps` (a unit is not faster than the device). `c` is rounded
//! to whole units and `S(4k) = c / X` recomputed so the saturated rate
//! stays exact; what is left of `I` is `delay` (never negative: a device
//! whose depth-1 cycle is shorter than that gets `delay = 0` and a
//! shorter service). The host's `h` is the measured submit call (`slat`
//! at depth 1), at most `1 / X`: the simulator's submit calls are serial,
//! and a larger `h` would cap the rate below the measured one.
//!
//! Writes share `c` (one `channels`) and the jitter share; their service
//! is `c / X_write` at 4 KiB, their delay what is left of their `I`.
//!
//! The `fes` model (crates/sim `device/fes.rs`, a flow-equivalent server)
//! needs no solving: with `n` requests in it, it serves one request in
//! `t(n)`, the time between completions at depth `n`, so per direction
//! `t(2)` ... `t(64)` are `1 / IOPS` of the random 4 KiB jobs at those
//! depths, and `t(1)` the depth-1 cycle less the submit call (at
//! depth 1 nothing overlaps the call; deeper, the calls overlap the
//! device's work). A byte beyond 4 KiB costs on its own request's path
//! (`per_byte(n)`) or on a resource the requests share (`shared_ns` plus
//! the bytes at `max_bps`). On its own
//! path it costs the depth-1 line's slope at depth 1 (nothing overlaps
//! there). Deeper, the random 32 KiB job at depth 16 and the random
//! 128 KiB job at depth 64 tell the two apart:
//!
//! * if both ran at the pace of one shared resource, the line through
//!   their times between completions (against their sizes) gives its time
//!   per request (the intercept) and per byte (the slope); that holds
//!   when the intercept is not negative and the resource would not slow
//!   4 KiB requests at depth 64 below their measured time. Whether it
//!   holds is decided once for the device ([`ByteCosts`]): only when it
//!   holds in every round, and then every round is fitted by it (one
//!   device, one structure: means over rounds fitted two ways would mix
//!   the two). The resource is then a station the requests queue at
//!   (`shared_queue`), and the device the closed network of it and the
//!   per-request station; the line is only the start: the time per
//!   request and per byte are solved so that the network gives the two
//!   jobs their measured times ([`queue_resource`]). The bytes cost
//!   nothing more on their own path at depths 16 and 64, and at depth 1,
//!   where the two stations' times add up, the latency line's slope less
//!   the resource's;
//! * otherwise the shared resource is the 128 KiB job's bandwidth alone,
//!   a floor under each request's own time (the larger of the two, a
//!   roofline), and the 32 KiB job was on its own path: the difference between its
//!   time and the 4 KiB job's at depth 16, over the 28 KiB between them,
//!   is the cost of a byte there (nothing, if it ran at that bandwidth);
//!   at depth 64 the same difference for 128 KiB, at most depth 16's.
//!
//! The share of the service that is random starts as the depth-1
//! spread's (`p99 − p50` of an exponential of mean `m` is `m · ln 50`);
//! the fit check replaces it with the share its replay of the deeper
//! jobs chooses (`super::candidate::Candidate::choose_spread`), and
//! `--no-check` keeps it. A queue's own spread is chosen there too, on
//! the jobs that load it (`Candidate::choose_shared_spread`); without
//! the check it has none.
//!
//! Each quantity is fitted per round; `super::stats` turns the rounds into
//! means and confidence intervals.

use super::measure::Point;
use super::plan::{Key, Measure, MID};
use std::collections::BTreeMap;

/// The measurements of one round by job (`rbps`, `rlat_4k`...).
pub type Round = BTreeMap<Key, Point>;

/// One direction of the fitted device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirFit {
    /// Service time with no transfer (`read_ns` / `write_ns`).
    pub base_ns: f64,
    /// Transfer rate per channel, bytes/s (`read_bps` / `write_bps`).
    pub rate_bps: f64,
    /// Jitter bound as % of `base_ns`.
    pub jitter_pct: f64,
    /// Latency outside the units (`read_delay_ns` / `write_delay_ns`).
    pub delay_ns: f64,
}

/// The same direction with its spread as an exponential tail outside the
/// units instead of jitter on the units' base: `p99 − p50` of an
/// exponential of mean `m` is `m · ln 50 = 3.912 m`, and the delay keeps
/// the mean depth-1 cycle (`delay + m` is what `delay` was).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TailFit {
    pub base_ns: f64,
    pub delay_ns: f64,
    /// `read_tail_ns` / `write_tail_ns`.
    pub tail_ns: f64,
}

impl DirFit {
    /// This direction with its spread moved into a tail ([`TailFit`]);
    /// `spread_ns` is `p99 − p50` at depth 1, 4 KiB.
    pub fn with_tail(&self, spread_ns: f64) -> TailFit {
        let mean_base = self.base_ns * (1.0 + self.jitter_pct / 200.0);
        let room = mean_base + self.delay_ns;
        let tail_ns = (spread_ns / 50f64.ln()).min(room - mean_base).max(0.0);
        TailFit {
            base_ns: mean_base,
            delay_ns: room - mean_base - tail_ns,
            tail_ns,
        }
    }
}

/// The `null` model (null_blk, crates/sim `device/null.rs`): every request
/// completes `completion_ns` after it starts, under null_blk's `mbps`
/// bandwidth throttle (whole MiB/s, as the module parameter).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NullFit {
    /// The depth-1 4 KiB cycle less the submit call.
    pub completion_ns: f64,
    /// The highest bandwidth any job reached, MiB/s: the throttle, if the
    /// device has one (the fit check decides whether it does).
    pub mbps: f64,
}

/// One direction of the `fes` model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FesDirFit {
    /// 4 KiB service time at depths 1, 2, 4 ... 64 (`read_ns_q1`...).
    pub ns_4k: [f64; 7],
    /// Cost of a byte beyond 4 KiB on its request's own path at depths 1,
    /// 16 and 64, picoseconds.
    pub ps_per_byte: [f64; 3],
    /// The shared resource's time per request, ns.
    pub shared_ns: f64,
    /// The shared resource's rate (bytes/s; 0: not measured, a round recorded
    /// before the depth-16 32 KiB job, fitted with the line from depth 1
    /// to 64 as before).
    pub max_bps: f64,
    /// The shared resource is a station the requests queue at (claimed
    /// from the deep jobs, [`ByteCosts`]), not a floor under their own
    /// time (`read_shared_queue`).
    pub shared_queue: bool,
}

/// The `fes` model: reads, writes when measured, and the random share of
/// the service (`spread_pct`, from the depth-1 read spread).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FesFit {
    pub read: FesDirFit,
    pub write: Option<FesDirFit>,
    pub spread_pct: f64,
}

/// Everything fitted from one round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundFit {
    pub submit_ns: f64,
    pub channels: f64,
    pub read: DirFit,
    pub write: Option<DirFit>,
    /// The same fits with the spread as a tail outside the units.
    pub read_tail: TailFit,
    pub write_tail: Option<TailFit>,
    pub null: NullFit,
    /// None when the round has no depth sweep (recorded before it existed).
    pub fes: Option<FesFit>,
    /// iocost_coef_gen.py's six numbers (write ones when measured).
    pub coef: BTreeMap<&'static str, f64>,
}

/// The least-squares line through `(x, y)`: (intercept, slope).
pub fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

/// Why a round cannot be fitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    #[error("measurement `{0}` is missing")]
    Missing(String),
}

fn get(r: &Round, key: Key) -> Result<&Point, FitError> {
    r.get(&key)
        .ok_or_else(|| FitError::Missing(key.to_string()))
}

/// The smallest base latency the fit keeps, as a share of the mean
/// service time: jitter larger than that would make the base negative.
const MIN_BASE_SHARE: f64 = 0.1;

/// What one direction's jobs say before the model is solved.
struct DirRaw {
    /// Depth-1 line: intercept (ns) and slope (ns per byte).
    intercept_ns: f64,
    slope_ns_per_byte: f64,
    /// p99 − p50 at depth 1, 4 KiB, over 0.49: the jitter bound.
    jitter_ns: f64,
    /// Saturated 4 KiB IOPS at depth 64.
    sat_iops: f64,
    /// Sequential bandwidth, bytes/s.
    seq_bps: f64,
}

fn raw_dir(r: &Round, write: bool, request_bytes: u64) -> Result<DirRaw, FitError> {
    let key = |what| Key::new(write, what);
    let mut pts = Vec::new();
    for bs in super::plan::LAT_SIZES {
        let p = get(r, key(Measure::Lat(bs)))?;
        if bs <= request_bytes || pts.len() < 2 {
            pts.push((bs as f64, p.cycle_ns()));
        }
    }
    let (intercept_ns, slope_ns_per_byte) = line(&pts);
    let small = get(r, key(Measure::Lat(4096)))?;
    Ok(DirRaw {
        intercept_ns,
        slope_ns_per_byte,
        jitter_ns: small.lat_p99_ns.saturating_sub(small.lat_p50_ns) as f64 / 0.49,
        sat_iops: get(r, key(Measure::RandIops))?.iops(),
        seq_bps: get(r, key(Measure::Bps))?.bytes_per_sec(),
    })
}

/// One direction of the `fes` model; None without the depth sweep.
/// A shared resource that would pace both the 32 KiB job at depth 16
/// (`g32`, ns between completions) and the 128 KiB job at depth 64
/// (`g128`): its time per request (ns) and rate (bytes/s) from the line
/// through the two, or None when no such resource fits: a negative time
/// per request, or one that would slow 4 KiB requests at depth 64 below
/// their measured `q64`.
fn shared_resource(g32: f64, g128: f64, q64: f64) -> Option<(f64, f64)> {
    let (mid_bs, big_bs) = (super::plan::MID_BS as f64, super::plan::RAND_BPS_BS as f64);
    if g128 <= g32 {
        return None;
    }
    let ns_per_byte = (g128 - g32) / (big_bs - mid_bs);
    let ns = g32 - mid_bs * ns_per_byte;
    (ns >= 0.0 && ns + 4096.0 * ns_per_byte <= q64).then(|| (ns, 1e9 / ns_per_byte))
}

/// Per direction, whether a shared resource paces the deep jobs with
/// large requests (see the header): decided once for the device, so that
/// every round is fitted the same way, and only when every round's
/// measurements show it. A resource that one round's times rule out is
/// not claimed for the device: its bytes stay on each request's path, the
/// structure that needs no hypothesis beyond the measured jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteCosts {
    pub read_shared: bool,
    pub write_shared: bool,
}

impl ByteCosts {
    pub fn of(rounds: &[Round]) -> ByteCosts {
        let gap = |r: &Round, key: Key| r.get(&key).map(|p| 1e9 / p.iops().max(1e-9));
        let shared = |write: bool| -> bool {
            let mid = Key::new(write, MID);
            let (big, q64) = (
                Key::new(write, Measure::RandBps),
                Key::new(write, Measure::RandIops),
            );
            !rounds.is_empty()
                && rounds
                    .iter()
                    .all(|r| match (gap(r, mid), gap(r, big), gap(r, q64)) {
                        (Some(g32), Some(g128), Some(q64)) => {
                            shared_resource(g32, g128, q64).is_some()
                        }
                        _ => false,
                    })
        };
        ByteCosts {
            read_shared: shared(false),
            write_shared: shared(true),
        }
    }
}

fn fes_dir(
    r: &Round,
    write: bool,
    raw: &DirRaw,
    submit_ns: f64,
    shared: bool,
) -> Option<FesDirFit> {
    let point = |what| r.get(&Key::new(write, what));
    let gap = |what| point(what).map(|p| 1e9 / p.iops().max(1e-9));
    let [q2, q4, q8, q16, q32] = super::plan::SWEEP_DEPTHS.map(|q| gap(Measure::Depth(q)));
    let q64 = gap(Measure::RandIops)?;
    let q64_big = gap(Measure::RandBps)?;
    let q1 = (point(Measure::Lat(4096))?.cycle_ns() - submit_ns).max(1.0);
    let ps = |dt_ns: f64, bytes: u64| (dt_ns / (bytes - 4096) as f64 * 1000.0).max(0.0);
    let p1 = (raw.slope_ns_per_byte * 1000.0).max(0.0);
    let p64 = ps(q64_big - q64, super::plan::RAND_BPS_BS);
    let mid = point(MID);
    let (p16, p64, shared_ns, max_bps) = match mid {
        Some(m) => {
            let g32 = 1e9 / m.iops().max(1e-9);
            match shared_resource(g32, q64_big, q64) {
                // the shared resource explains the 32 KiB job: nothing of
                // it is put on the request's own path at depth, and it is
                // a station the requests queue at
                Some((ns, bps)) if shared => {
                    let ns_4k = [q1, q2?, q4?, q8?, q16?, q32?, q64];
                    let (p1, ns, bps) = queue_resource(ns_4k, p1, (ns, bps), g32, q64_big);
                    return Some(FesDirFit {
                        ns_4k,
                        ps_per_byte: [p1, 0.0, 0.0],
                        shared_ns: ns,
                        max_bps: bps,
                        shared_queue: true,
                    });
                }
                _ => {
                    // the 32 KiB job on its own path (unless it ran at the
                    // 128 KiB job's bandwidth), that bandwidth shared
                    let max_bps = point(Measure::RandBps)?.bytes_per_sec();
                    let at_bandwidth_ns = super::plan::MID_BS as f64 * 1e9 / max_bps.max(1.0);
                    let p16 = if g32 <= at_bandwidth_ns {
                        0.0
                    } else {
                        ps(g32 - q16?, super::plan::MID_BS)
                    };
                    (p16, p64.min(p16), 0.0, max_bps)
                }
            }
        }
        // recorded before the job existed: the line from depth 1 to 64
        None => (p1 + (p64 - p1) * 4.0 / 6.0, p64, 0.0, 0.0),
    };
    Some(FesDirFit {
        ns_4k: [q1, q2?, q4?, q8?, q16?, q32?, q64],
        ps_per_byte: [p1, p16, p64],
        shared_ns,
        max_bps,
        shared_queue: false,
    })
}

/// The shared resource as a station the requests queue at (crates/sim
/// `device/fes.rs`, `FesDir::tandem_ns`): its time per request and rate
/// such that the network of it and the per-request station gives the
/// 32 KiB job at depth 16 (`g32`, ns between completions) and the
/// 128 KiB job at depth 64 (`g128`) their measured times, starting from
/// the line through the two (`line`: the resource alone, the roofline's
/// reading). At depth 1 the two stations' times add up, so the own path's
/// cost per byte there is the depth-1 latency line's slope (`slope_ps`)
/// less the resource's. Returns that cost (ps per byte), the time per
/// request (ns) and the rate (bytes/s).
///
/// Each step moves the two jobs' times on the resource by what the
/// network misses them by and takes the line through them again: where
/// the resource is the busier station (as both jobs' are, or it would
/// not have been claimed), a job's time moves with its time there
/// nearly one for one, so the steps converge in a few rounds; 50 at most.
fn queue_resource(
    ns_4k: [f64; 7],
    slope_ps: f64,
    line: (f64, f64),
    g32: f64,
    g128: f64,
) -> (f64, f64, f64) {
    let (mid_bs, big_bs) = (super::plan::MID_BS as f64, super::plan::RAND_BPS_BS as f64);
    let (mut c32, mut c128) = (
        line.0 + mid_bs * 1e9 / line.1,
        line.0 + big_bs * 1e9 / line.1,
    );
    let at = |c32: f64, c128: f64| {
        let ns_per_byte = ((c128 - c32) / (big_bs - mid_bs)).max(1e-6);
        let ns = (c32 - mid_bs * ns_per_byte).max(0.0);
        let p1 = (slope_ps - ns_per_byte * 1000.0).max(0.0);
        (p1, ns, 1e9 / ns_per_byte)
    };
    for _ in 0..50 {
        let (p1, ns, bps) = at(c32, c128);
        let dir = blkqos_sim::device::FesDir {
            ns_4k: ns_4k.map(|t| t.round().max(1.0) as u64),
            ps_per_byte: [p1.round() as u64, 0, 0],
            shared_ns: ns.round() as u64,
            max_bps: bps.round() as u64,
            shared_queue: true,
        };
        let miss32 = g32 - dir.tandem_ns(super::plan::MID_DEPTH, super::plan::MID_BS);
        let miss128 = g128 - dir.tandem_ns(64, super::plan::RAND_BPS_BS);
        if miss32.abs() < 0.5 && miss128.abs() < 0.5 {
            break;
        }
        c32 += miss32;
        c128 += miss128;
    }
    at(c32, c128)
}

/// Split a mean service time into base and jitter, and what is left of
/// the depth-1 intercept into delay.
fn dir_fit(
    raw: &DirRaw,
    mean_base_ns: f64,
    sigma: f64,
    submit_ns: f64,
    jitter_share: f64,
) -> DirFit {
    let room = (raw.intercept_ns - submit_ns).max(1.0);
    let mean_base_ns = mean_base_ns.clamp(1.0, room);
    let jitter_ns = (jitter_share * mean_base_ns).min(2.0 * (1.0 - MIN_BASE_SHARE) * mean_base_ns);
    let base_ns = mean_base_ns - jitter_ns / 2.0;
    DirFit {
        base_ns,
        rate_bps: 1e9 / sigma,
        jitter_pct: 100.0 * jitter_ns / base_ns,
        delay_ns: room - mean_base_ns,
    }
}

/// Fit one round; `writes`: the round measured writes too;
/// `request_bytes`: the largest request (max_sectors_kb) the fitted device
/// will have.
pub fn fit_round(
    r: &Round,
    writes: bool,
    request_bytes: u64,
    costs: ByteCosts,
) -> Result<RoundFit, FitError> {
    let m = request_bytes as f64;
    let rd = raw_dir(r, false, request_bytes)?;
    let x = rd.sat_iops.max(1e-9);
    let lat_4k = Key::new(false, Measure::Lat(4096));
    let submit_ns = get(r, lat_4k)?.slat_mean_ns.clamp(0.0, 1e9 / x);
    // a unit is not faster than the whole device
    let sigma = rd.slope_ns_per_byte.max(1e9 / rd.seq_bps.max(1.0));
    let mut mean_base = sigma * m * (rd.seq_bps - 4096.0 * x) / (x * m - rd.seq_bps);
    if mean_base.is_nan() || mean_base <= 0.0 {
        // big requests no faster than 4 KiB ones: one unit
        mean_base = 1e9 / x - 4096.0 * sigma;
    }
    let channels = (x * (mean_base + 4096.0 * sigma) / 1e9).round().max(1.0);
    // whole units: the service that keeps the saturated rate exact
    let mean_base = channels * 1e9 / x - 4096.0 * sigma;
    let jitter_share = rd.jitter_ns / mean_base.max(1.0);
    let read = dir_fit(&rd, mean_base, sigma, submit_ns, jitter_share);
    let mut coef = BTreeMap::new();
    coef.insert("rbps", rd.seq_bps);
    coef.insert(
        "rseqiops",
        get(r, Key::new(false, Measure::SeqIops))?.iops(),
    );
    coef.insert("rrandiops", rd.sat_iops);
    let mut fes_write = None;
    let write = if writes {
        let wd = raw_dir(r, true, request_bytes)?;
        fes_write = fes_dir(r, true, &wd, submit_ns, costs.write_shared);
        let sigma_w = wd.slope_ns_per_byte.max(1e9 / wd.seq_bps.max(1.0));
        let mean_base_w = channels * 1e9 / wd.sat_iops.max(1e-9) - 4096.0 * sigma_w;
        coef.insert("wbps", wd.seq_bps);
        coef.insert("wseqiops", get(r, Key::new(true, Measure::SeqIops))?.iops());
        coef.insert("wrandiops", wd.sat_iops);
        Some(dir_fit(&wd, mean_base_w, sigma_w, submit_ns, jitter_share))
    } else {
        None
    };
    let spread = |write: bool| -> Result<f64, FitError> {
        let p = get(r, Key::new(write, Measure::Lat(4096)))?;
        Ok(p.lat_p99_ns.saturating_sub(p.lat_p50_ns) as f64)
    };
    let read_tail = read.with_tail(spread(false)?);
    let write_tail = match &write {
        Some(w) => Some(w.with_tail(spread(true)?)),
        None => None,
    };
    let read_spread_ns = spread(false)?;
    let fes = fes_dir(r, false, &rd, submit_ns, costs.read_shared)
        .filter(|_| !writes || fes_write.is_some())
        .map(|read| FesFit {
            read,
            write: fes_write,
            // the exponential's mean m from p99 − p50 = m · ln 50
            spread_pct: (100.0 * read_spread_ns / 50f64.ln() / read.ns_4k[0]).clamp(0.0, 100.0),
        });
    let null = NullFit {
        completion_ns: (get(r, lat_4k)?.cycle_ns() - submit_ns).max(1.0),
        mbps: r.values().map(Point::bytes_per_sec).fold(0.0, f64::max) / f64::from(1u32 << 20),
    };
    Ok(RoundFit {
        submit_ns,
        channels,
        read,
        write,
        read_tail,
        write_tail,
        null,
        fes,
        coef,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round's key by its name.
    fn key(name: &str) -> Key {
        name.parse().unwrap()
    }

    /// A read job's key.
    fn key_of(what: Measure) -> Key {
        Key::new(false, what)
    }

    #[test]
    fn line_through_exact_points() {
        let (a, b) = line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]);
        assert!((a - 1.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-9);
        // one x only: no slope
        assert_eq!(line(&[(4.0, 2.0), (4.0, 4.0)]), (3.0, 0.0));
    }

    fn pt(iops: f64, p50: u64, p99: u64, slat: f64, bs: u64) -> Point {
        Point {
            ios: (iops * 2000.0) as u64,
            bytes: (iops * 2000.0) as u64 * bs,
            runtime_ms: 2_000_000,
            lat_mean_ns: 0.0,
            lat_p50_ns: p50,
            lat_p99_ns: p99,
            slat_mean_ns: slat,
        }
    }

    /// A device with base 20 µs, 1 GB/s per channel, a 5 µs delay, no
    /// jitter, 4 channels, 1 µs submit, 128 KiB requests: the fit returns it.
    #[test]
    fn fit_recovers_an_exact_device() {
        let (submit, base, delay, rate, c) = (1000.0, 20_000.0, 5000.0, 1e9, 4.0);
        let m = 128.0 * 1024.0;
        let service = |len: f64| base + len * 1e9 / rate;
        let mut r = Round::new();
        for bs in super::super::plan::LAT_SIZES {
            let cycle = submit + delay + service(bs as f64);
            let lat = cycle as u64;
            r.insert(
                key_of(Measure::Lat(bs)),
                pt(1e9 / cycle, lat, lat, submit, bs),
            );
        }
        let x = c * 1e9 / service(4096.0);
        r.insert(key("rrandiops"), pt(x, 0, 0, submit, 4096));
        r.insert(key("rseqiops"), pt(x, 0, 0, submit, 4096));
        let bps = c * m * 1e9 / service(m);
        let bs_seq = 128u64 << 20;
        r.insert(key("rbps"), pt(bps / bs_seq as f64, 0, 0, submit, bs_seq));
        let f = fit_round(&r, false, m as u64, ByteCosts::default()).unwrap();
        assert!((f.submit_ns - submit).abs() < 1e-6);
        assert_eq!(f.channels, 4.0, "{f:?}");
        assert!((f.read.base_ns - base).abs() < 50.0, "{f:?}");
        assert!((f.read.rate_bps / rate - 1.0).abs() < 1e-3, "{f:?}");
        assert!((f.read.delay_ns - delay).abs() < 50.0, "{f:?}");
        assert!(f.read.jitter_pct.abs() < 1e-9, "{f:?}");
        assert!(f.write.is_none());
    }

    /// The reads' deep jobs of one round, as times between completions
    /// (ns): 32 KiB at depth 16, 128 KiB and 4 KiB at depth 64.
    fn deep_round(g32: f64, g128: f64, q64: f64) -> Round {
        let mut r = Round::new();
        r.insert(key("rdepth_16_32k"), pt(1e9 / g32, 0, 0, 0.0, 32 << 10));
        r.insert(key("rrandbps"), pt(1e9 / g128, 0, 0, 0.0, 128 << 10));
        r.insert(key("rrandiops"), pt(1e9 / q64, 0, 0, 0.0, 4096));
        r
    }

    /// A shared resource is claimed only when every round shows it: the
    /// line through 7.4 and 28 µs gives 4 KiB requests 1.39 µs on it, which
    /// a round whose 4 KiB requests at depth 64 came 1.3 µs apart rules
    /// out, though the rounds' mean (1.75 µs) would allow it.
    #[test]
    fn a_shared_resource_must_hold_in_every_round() {
        let holds = deep_round(7400.0, 28_000.0, 2200.0);
        let ruled_out = deep_round(7400.0, 28_000.0, 1300.0);
        assert!(shared_resource(7400.0, 28_000.0, 1750.0).is_some());
        assert!(ByteCosts::of(&[holds.clone(), holds.clone()]).read_shared);
        assert!(!ByteCosts::of(&[holds.clone(), ruled_out.clone()]).read_shared);
        assert!(!ByteCosts::of(&[ruled_out, holds]).read_shared);
        // no rounds, or a round without the jobs: nothing claimed
        assert!(!ByteCosts::of(&[]).read_shared);
        assert!(!ByteCosts::of(&[Round::new()]).read_shared);
    }

    #[test]
    fn a_missing_measurement_is_named() {
        let e = fit_round(&Round::new(), false, 131072, ByteCosts::default()).unwrap_err();
        assert_eq!(e, FitError::Missing("rlat_4k".into()));
    }
}
