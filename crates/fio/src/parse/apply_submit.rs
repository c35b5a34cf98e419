//! Applying the submission and depth-control options (fio 3.33
//! `options.c`: `io_submit_mode`, `random_generator`, `latency_target`,
//! `latency_window`, `latency_percentile`, `latency_run`).

use blkqos_core::Duration;
use blkqos_workload::spec::{IoEngine, JobSpec};
use blkqos_workload::spec_submit::{IoSubmitMode, RandomGenerator};

use super::options::{pieces, Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_float, parse_plain_int, parse_time_us};

/// Submission mode, random generator and the latency target.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("io_submit_mode", Kind::Str, Opt::IoSubmitMode, apply),
    OptDef::new("random_generator", Kind::Str, Opt::RandomGenerator, apply),
    OptDef::new("latency_target", Kind::Time, Opt::LatencyTarget, apply),
    OptDef::new("latency_window", Kind::Time, Opt::LatencyWindow, apply),
    OptDef::new(
        "latency_percentile",
        Kind::FloatList,
        Opt::LatencyPercentile,
        apply,
    ),
    OptDef::new("latency_run", Kind::Bool, Opt::LatencyRun, apply),
    OptDef::new("iodepth_low", Kind::Int, Opt::IoDepthLow, apply),
];

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    match value {
        None => Err(format!("Option {} requires an argument", def.name)),
        Some(v) => apply_value(st, def.opt, v),
    }
}

fn apply_value(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let sub = &mut st.spec.submit;
    match opt {
        Opt::IoSubmitMode => {
            sub.mode = match v {
                "inline" => IoSubmitMode::Inline,
                "offload" => IoSubmitMode::Offload,
                _ => return Err(invalid(v, &["inline", "offload"])),
            }
        }
        Opt::RandomGenerator => {
            sub.random_generator = match v {
                "tausworthe" => RandomGenerator::Tausworthe,
                "lfsr" => RandomGenerator::Lfsr,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                _ => return Err(invalid(v, &["tausworthe", "lfsr", "tausworthe64"])),
            }
        }
        // FIO_OPT_STR_VAL_TIME with `is_time` and no `is_seconds`: a bare
        // number is microseconds
        Opt::LatencyTarget => sub.latency.target = time_us(v)?,
        Opt::LatencyWindow => sub.latency.window = time_us(v)?,
        Opt::LatencyPercentile => {
            // FIO_OPT_FLOAT_LIST, maxlen 1, minfp 0, maxfp 100
            let f = match pieces(Kind::FloatList, v).as_slice() {
                [one] => parse_float(one)?,
                _ => return Err("this option takes a single value".into()),
            };
            if !(0.0..=100.0).contains(&f) {
                return Err(format!("value out of range: {f} (0 to 100)"));
            }
            sub.latency.percentile = f;
        }
        Opt::LatencyRun => {
            sub.latency.keep_running = match parse_plain_int(v)? {
                0 => false,
                1 => true,
                n => return Err(format!("max value out of range: {n} (1 max)")),
            }
        }
        Opt::IoDepthLow => {
            let n = match pieces(Kind::Int, v).as_slice() {
                [one] if !one.trim_start().starts_with('-') => parse_plain_int(one)?,
                _ => return Err("this option takes a single non-negative value".into()),
            };
            sub.iodepth_low =
                u32::try_from(n).map_err(|_| format!("max value out of range: {n}"))?;
        }
        _ => unreachable!("not an option of this module"),
    }
    Ok(())
}

fn time_us(v: &str) -> Result<Duration, String> {
    if v.trim_start().starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    let us = parse_time_us(v.trim(), false)?;
    us.checked_mul(1_000)
        .map(Duration::from_ns)
        .ok_or_else(|| "value out of range".into())
}

/// fio's message for a value outside an option's `posval` list.
fn invalid(v: &str, allowed: &[&str]) -> String {
    format!("invalid value `{v}` (valid values: {})", allowed.join(", "))
}

/// What `fixup_options` and the engines' setup make of these options
/// together with the job's others: `Err((option, value, why))` for what
/// blkqos cannot run.
pub(crate) fn check(s: &mut JobSpec) -> Result<(), (&'static str, String, String)> {
    if s.submit.mode == IoSubmitMode::Offload {
        if s.ioengine.is_sync() || s.ioengine == IoEngine::Null {
            return Err((
                "io_submit_mode",
                "offload".into(),
                format!(
                    "with ioengine={}: blkqos runs io_submit_mode=offload (iodepth workers, \
                     one IO each) for the queued engines only; use ioengine=libaio, \
                     io_uring or posixaio, or io_submit_mode=inline",
                    s.ioengine.fio_name()
                ),
            ));
        }
        if s.submit_batch() > 1 {
            s.notes.push(format!(
                "io_submit_mode=offload: each IO is submitted alone by its worker \
                 (fio rate-submit.c), so iodepth_batch_submit={} has no effect, as in fio",
                s.iodepth_batch
            ));
        }
    }
    Ok(())
}

/// These options as fio arguments (for `to_fio_args`), the defaults left
/// out.
pub(crate) fn render(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    let sub = &j.submit;
    if sub.mode == IoSubmitMode::Offload {
        push("io_submit_mode", "offload".into());
    }
    if sub.iodepth_low != 0 {
        push("iodepth_low", sub.iodepth_low.to_string());
    }
    if sub.random_generator != RandomGenerator::default() {
        push("random_generator", sub.random_generator.fio_name().into());
    }
    let lat = &sub.latency;
    if lat.enabled() {
        push("latency_target", format!("{}us", lat.target.as_us()));
        push("latency_window", format!("{}us", lat.window.as_us()));
        push("latency_percentile", lat.percentile.to_string());
        push("latency_run", u8::from(lat.keep_running).to_string());
    }
}
