//! Fitting the simulator's `ssd` model and the host's submit cost to one
//! round of measurements, and the kernel's linear cost model
//! (`io.cost.model`) as `iocost_coef_gen.py` derives it.
//!
//! The `ssd` model (crates/sim `device/ssd.rs`) serves each request on the
//! first of `channels` free units in `base + len / rate + U[0, J]` (J =
//! `jitter_pct` % of base); the simulated job spends `submit_ns` in each
//! submit call before the IO enters the block layer, and issues its next IO
//! as one completes. So, at queue depth 1 (one IO at a time):
//!
//! * the time from one IO's submission to the next one's is
//!   `cycle(len) = submit + base + J/2 + len / rate`: a line in `len`, whose
//!   slope is `1 / rate` and whose intercept is `submit + base + J/2`;
//! * the latency spread is the jitter's: `p99 − p50 = 0.49 J`;
//! * `submit` is what the real engine measures as `slat` (the submit call).
//!
//! At depth 64 the device saturates: 4 KiB IOPS `X = channels / S(4k)`
//! with `S(4k) = base + J/2 + 4096 / rate` the mean service time, which
//! gives `channels = X · S(4k)`. When the host, not the device, sets the
//! pace (`X · submit ≈ 1`) this estimate only says the device is at least
//! that parallel, which is all a prediction needs.
//!
//! Each quantity is fitted per round; `super::stats` turns the rounds into
//! means and confidence intervals.

use super::measure::Point;
use std::collections::BTreeMap;

/// The measurements of one round by job name (`rbps`, `rlat_4k`...).
pub type Round = BTreeMap<String, Point>;

/// One direction of the fitted device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirFit {
    /// Service time with no transfer (`read_ns` / `write_ns`).
    pub base_ns: f64,
    /// Transfer rate per channel, bytes/s (`read_bps` / `write_bps`).
    pub rate_bps: f64,
    /// Jitter bound as % of `base_ns`.
    pub jitter_pct: f64,
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

/// Everything fitted from one round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundFit {
    pub submit_ns: f64,
    pub channels: f64,
    pub read: DirFit,
    pub write: Option<DirFit>,
    pub null: NullFit,
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

fn get<'a>(r: &'a Round, name: &str) -> Result<&'a Point, FitError> {
    r.get(name).ok_or_else(|| FitError::Missing(name.to_string()))
}

/// The smallest base latency the fit keeps, as a share of the depth-1
/// intercept: jitter larger than that would make the base negative, so the
/// spread is capped and reported by the fit check instead.
const MIN_BASE_SHARE: f64 = 0.1;

/// One direction's depth-1 line and spread (`d` = 'r' or 'w').
fn fit_dir(r: &Round, d: char, submit_ns: f64) -> Result<(DirFit, f64), FitError> {
    let mut pts = Vec::new();
    for bs in super::plan::LAT_SIZES {
        let p = get(r, &format!("{d}lat_{}k", bs >> 10))?;
        pts.push((bs as f64, p.cycle_ns() - submit_ns));
    }
    let (intercept, slope) = line(&pts);
    let intercept = intercept.max(1.0);
    let small = get(r, &format!("{d}lat_4k"))?;
    let spread = small.lat_p99_ns.saturating_sub(small.lat_p50_ns) as f64;
    let mut jitter_ns = spread / 0.49;
    let mut base_ns = intercept - jitter_ns / 2.0;
    if base_ns < MIN_BASE_SHARE * intercept {
        base_ns = MIN_BASE_SHARE * intercept;
        jitter_ns = 2.0 * (intercept - base_ns);
    }
    // a slope lost in the noise (no measurable cost per byte): take the
    // rate from the sequential bandwidth job instead, spread over channels
    // by the caller
    let rate_bps = if slope > 0.0 { 1e9 / slope } else { 0.0 };
    let fit = DirFit {
        base_ns,
        rate_bps,
        jitter_pct: 100.0 * jitter_ns / base_ns,
    };
    Ok((fit, intercept + 4096.0 * slope.max(0.0)))
}

/// Fit one round; `writes`: the round measured writes too.
pub fn fit_round(r: &Round, writes: bool) -> Result<RoundFit, FitError> {
    let submit_ns = get(r, "rlat_4k")?.slat_mean_ns.max(0.0);
    let (mut read, service_4k) = fit_dir(r, 'r', submit_ns)?;
    let sat = get(r, "rrandiops")?.iops();
    let channels = (sat * service_4k / 1e9).max(1.0);
    let mut coef = BTreeMap::new();
    coef.insert("rbps", get(r, "rbps")?.bytes_per_sec());
    coef.insert("rseqiops", get(r, "rseqiops")?.iops());
    coef.insert("rrandiops", sat);
    if read.rate_bps == 0.0 {
        read.rate_bps = coef["rbps"] / channels;
    }
    let write = if writes {
        let (mut w, _) = fit_dir(r, 'w', submit_ns)?;
        coef.insert("wbps", get(r, "wbps")?.bytes_per_sec());
        coef.insert("wseqiops", get(r, "wseqiops")?.iops());
        coef.insert("wrandiops", get(r, "wrandiops")?.iops());
        if w.rate_bps == 0.0 {
            w.rate_bps = coef["wbps"] / channels;
        }
        Some(w)
    } else {
        None
    };
    let null = NullFit {
        completion_ns: (get(r, "rlat_4k")?.cycle_ns() - submit_ns).max(1.0),
        mbps: r.values().map(Point::bytes_per_sec).fold(0.0, f64::max) / f64::from(1u32 << 20),
    };
    Ok(RoundFit {
        submit_ns,
        channels,
        read,
        write,
        null,
        coef,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_through_exact_points() {
        let (a, b) = line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]);
        assert!((a - 1.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-9);
        // one x only: no slope
        assert_eq!(line(&[(4.0, 2.0), (4.0, 4.0)]), (3.0, 0.0));
    }

    fn pt(iops: f64, p50: u64, p99: u64, slat: f64, bs: u64) -> Point {
        Point {
            ios: (iops * 2.0) as u64,
            bytes: (iops * 2.0) as u64 * bs,
            runtime_ms: 2000,
            lat_mean_ns: 0.0,
            lat_p50_ns: p50,
            lat_p99_ns: p99,
            slat_mean_ns: slat,
        }
    }

    /// A device with base 20 µs, 1 GB/s per channel, no jitter, 4
    /// channels, 1 µs submit: the fit returns it.
    #[test]
    fn fit_recovers_an_exact_device() {
        let submit = 1000.0;
        let base = 20_000.0;
        let rate = 1e9;
        let mut r = Round::new();
        for bs in super::super::plan::LAT_SIZES {
            let cycle = submit + base + bs as f64 * 1e9 / rate;
            let lat = cycle as u64;
            r.insert(
                format!("rlat_{}k", bs >> 10),
                pt(1e9 / cycle, lat, lat, submit, bs),
            );
        }
        let s4k = base + 4096.0 * 1e9 / rate;
        r.insert("rrandiops".into(), pt(4.0 * 1e9 / s4k, 0, 0, submit, 4096));
        r.insert("rseqiops".into(), pt(4.0 * 1e9 / s4k, 0, 0, submit, 4096));
        r.insert("rbps".into(), pt(30.0, 0, 0, submit, 128 << 20));
        let f = fit_round(&r, false).unwrap();
        assert!((f.submit_ns - submit).abs() < 1e-6);
        assert!((f.read.base_ns - base).abs() < 1.0, "{f:?}");
        assert!((f.read.rate_bps / rate - 1.0).abs() < 1e-3, "{f:?}");
        assert!((f.channels - 4.0).abs() < 0.01, "{f:?}");
        assert_eq!(f.read.jitter_pct, 0.0);
        assert!(f.write.is_none());
    }

    #[test]
    fn a_missing_measurement_is_named() {
        let e = fit_round(&Round::new(), false).unwrap_err();
        assert_eq!(e, FitError::Missing("rlat_4k".into()));
    }
}
