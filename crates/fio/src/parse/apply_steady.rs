//! Applying `steadystate` (`ss`), `steadystate_duration` (`ss_dur`) and
//! `steadystate_ramp_time` (`ss_ramp`) (fio 3.33 `options.c`:
//! `str_steadystate_cb` and the option table; `td_steadystate_init`
//! keeps whole seconds of the duration).

use blkqos_core::Duration;
use blkqos_workload::steadystate::SsMetric;

use super::ini::strip_blank_end;
use super::options::{Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_count, parse_float, parse_time_us};

/// Steady-state detection.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("steadystate", Kind::Str, Opt::SteadyState, apply).alias("ss"),
    OptDef::new(
        "steadystate_duration",
        Kind::Time,
        Opt::SteadyStateDuration,
        apply,
    )
    .alias("ss_dur"),
    OptDef::new(
        "steadystate_ramp_time",
        Kind::Time,
        Opt::SteadyStateRampTime,
        apply,
    )
    .alias("ss_ramp"),
];

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    let Some(v) = value else {
        return Err(format!("Option {} requires an argument", def.name));
    };
    let kb = st.spec.kb_base;
    let ss = &mut st.spec.steadystate;
    match def.opt {
        Opt::SteadyState => criterion(v, kb).map(|(metric, slope, pct, limit)| {
            ss.metric = metric;
            ss.slope = slope;
            ss.pct = pct;
            ss.limit = limit;
        }),
        // whole seconds: fio divides the µs by 10^6
        Opt::SteadyStateDuration => parse_time_us(v, true).map(|us| ss.dur_s = us / 1_000_000),
        _ => parse_time_us(v, true).map(|us| ss.ramp = Duration::from_us(us)),
    }
}

/// `ss=CRITERION:LIMIT` (`str_steadystate_cb`): `iops`, `iops_slope`,
/// `bw` or `bw_slope`; the limit a percentage (`%`), else IOPS (a float)
/// or bytes/s (a size).
fn criterion(v: &str, kb_base: u32) -> Result<(SsMetric, bool, bool, f64), String> {
    let (name, limit) = match v.split_once(':') {
        Some((n, l)) => (n, Some(l)),
        None => (v, None),
    };
    let (metric, slope) = match name {
        "iops" => (SsMetric::Iops, false),
        "iops_slope" => (SsMetric::Iops, true),
        "bw" => (SsMetric::Bw, false),
        "bw_slope" => (SsMetric::Bw, true),
        _ => {
            return Err(format!(
                "invalid criterion `{name}` (valid values: iops, iops_slope, bw, bw_slope)"
            ))
        }
    };
    let Some(limit) = limit else {
        return Err("steadystate threshold must be specified in addition to criterion".into());
    };
    if let Some((n, _)) = limit.split_once('%') {
        let pct = parse_float(strip_blank_end(n))
            .map_err(|e| format!("could not parse steadystate threshold percentage: {e}"))?;
        return Ok((metric, slope, true, pct));
    }
    let limit = match metric {
        SsMetric::Iops => parse_float(limit)
            .map_err(|e| format!("steadystate IOPS threshold postfix parsing failed: {e}"))?,
        SsMetric::Bw => parse_count(limit, kb_base)
            .map_err(|e| format!("steadystate BW threshold postfix parsing failed: {e}"))?
            as f64,
    };
    Ok((metric, slope, false, limit))
}

/// The steady-state options of a job back as fio options (`to_fio_args`).
pub(crate) fn render(j: &blkqos_workload::JobSpec, push: &mut impl FnMut(&str, String)) {
    let ss = &j.steadystate;
    if ss.enabled() {
        let limit = if ss.pct {
            format!("{}%", ss.limit)
        } else {
            format!("{}", ss.limit)
        };
        push("steadystate", format!("{}:{limit}", ss.criterion_name()));
        push("steadystate_duration", format!("{}s", ss.dur_s));
        push("steadystate_ramp_time", format!("{}us", ss.ramp.as_us()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_and_limits() {
        let c = |v| criterion(v, 1024);
        assert_eq!(c("iops:10%").unwrap(), (SsMetric::Iops, false, true, 10.0));
        assert_eq!(c("bw_slope:1%").unwrap(), (SsMetric::Bw, true, true, 1.0));
        assert_eq!(c("bw_slope:2 %").unwrap(), (SsMetric::Bw, true, true, 2.0));
        assert_eq!(
            c("iops_slope:0.5").unwrap(),
            (SsMetric::Iops, true, false, 0.5)
        );
        // a bandwidth limit is a size: 10m = 10 MiB/s with kb_base 1024
        assert_eq!(
            c("bw:10m").unwrap(),
            (SsMetric::Bw, false, false, 10.0 * 1024.0 * 1024.0)
        );
        assert!(c("iops")
            .unwrap_err()
            .contains("threshold must be specified"));
        assert!(c("IOPS:5%").unwrap_err().contains("valid values"));
        assert!(c("iops_slope:abc").is_err());
    }
}
