//! [`JobSpec`]s back to a fio command line (the inverse of
//! [`parse_fio_args`](super::parse_fio_args)): every modelled setting is
//! written out explicitly, sizes in bytes and times in µs or ms, so that the
//! result means the same to blkqos and to fio 3.33.

use super::options::per_dir_text as per_dir;
use blkqos_workload::spec::{
    IgnoreErrors, JobSpec, PerDir, RateProcess, RwSeq, SizeSpec, ThinkBlocksType, UnifiedRw,
    ERROR_TYPE_READ, ERROR_TYPE_VERIFY, ERROR_TYPE_WRITE, NON_FATAL_ERR,
};

fn size(s: SizeSpec) -> String {
    match s {
        SizeSpec::Bytes(b) => b.to_string(),
        SizeSpec::Percent(p) => format!("{p}%"),
    }
}

/// `ignore_error=` meaning what `e` means to fio on its own: a list for
/// each type `continue_on_error` covers (its defaults, EIO and EILSEQ,
/// when none was given), empty for the others.
fn errors(e: &IgnoreErrors) -> String {
    let list = |l: &[i32], bit: u8| {
        let l: &[i32] = match (e.continue_on & bit != 0, l.is_empty()) {
            (false, _) => &[],
            (true, true) => &NON_FATAL_ERR,
            (true, false) => l,
        };
        l.iter().map(i32::to_string).collect::<Vec<_>>().join(":")
    };
    format!(
        "{},{},{}",
        list(&e.read, ERROR_TYPE_READ),
        list(&e.write, ERROR_TYPE_WRITE),
        list(&e.verify, ERROR_TYPE_VERIFY)
    )
}

fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// The fio options for one job, `--name=` first.
fn job_args(j: &JobSpec, new_group: bool) -> Vec<String> {
    let mut a = vec![format!("--name={}", j.name)];
    let mut push = |k: &str, v: String| a.push(format!("--{k}={v}"));
    if new_group {
        push("new_group", "1".into());
    }
    layout_args(j, &mut push);
    super::engine_opts::render(j, &mut push);
    pace_args(j, &mut push);
    random_stats_args(j, &mut push);
    cgroup_error_args(j, &mut push);
    avg_sync_args(j, &mut push);
    ext_args(j, &mut push);
    super::apply_submit::render(j, &mut push);
    log_args(j, &mut push);
    a
}

/// `kb_base`, the description, where the job does IO, its pattern, block
/// sizes, `direct` and `ioengine`.
fn layout_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    if j.kb_base != 1024 {
        push("kb_base", j.kb_base.to_string());
    }
    if let Some(d) = &j.description {
        push("description", d.clone());
    }
    if let Some(f) = &j.filename {
        push("filename", f.clone());
    }
    if let Some(s) = j.size {
        push("size", size(s));
    }
    push("offset", size(j.offset));
    let postfix = match j.rw_seq {
        RwSeq::None => String::new(),
        RwSeq::Every(n) => format!(":{n}"),
        RwSeq::Add(a) => format!(":{a}"),
    };
    push("rw", format!("{}{postfix}", j.rw.fio_name()));
    push("rwmixread", j.rwmixread.to_string());
    push("bs", per_dir(&j.bs, |b| b.to_string()));
    if let Some(r) = &j.bsrange {
        push("bsrange", per_dir(r, |(lo, hi)| format!("{lo}-{hi}")));
    }
    push("direct", flag(j.direct).into());
    push("ioengine", j.ioengine.fio_name().into());
}

/// Queue depth, job count, run time, rates and think times.
fn pace_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    push("iodepth", j.iodepth.to_string());
    push("iodepth_batch", j.iodepth_batch.to_string());
    push("numjobs", j.numjobs.to_string());
    if let Some(r) = j.runtime {
        push("runtime", format!("{}us", r.as_us()));
    }
    push("time_based", flag(j.time_based).into());
    push("ramp_time", format!("{}us", j.ramp_time.as_us()));
    let opt = |v: Option<u64>| v.unwrap_or(0).to_string();
    if j.rate_bps != PerDir::all(None) {
        push("rate", per_dir(&j.rate_bps, opt));
    }
    if j.rate_iops != PerDir::all(None) {
        push("rate_iops", per_dir(&j.rate_iops, opt));
    }
    let process = match j.rate_process {
        RateProcess::Linear => "linear",
        RateProcess::Poisson => "poisson",
    };
    push("rate_process", process.into());
    push(
        "rate_ignore_thinktime",
        flag(j.rate_ignore_thinktime).into(),
    );
    push("thinktime", j.thinktime.as_us().to_string());
    push("thinktime_spin", j.thinktime_spin.as_us().to_string());
    push("thinktime_blocks", j.thinktime_blocks.to_string());
    let blocks_type = match j.thinktime_blocks_type {
        ThinkBlocksType::Complete => "complete",
        ThinkBlocksType::Issue => "issue",
    };
    push("thinktime_blocks_type", blocks_type.into());
}

/// The random map and seed, then what the job's statistics report.
fn random_stats_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    push("norandommap", flag(j.norandommap).into());
    if j.randrepeat && j.randseed != blkqos_workload::spec::FIO_RANDSEED {
        push("randseed", j.randseed.to_string());
    } else {
        push("randrepeat", flag(j.randrepeat).into());
    }
    push("group_reporting", flag(j.group_reporting).into());
    for (on, name) in [
        (j.disable_lat, "disable_lat"),
        (j.disable_clat, "disable_clat"),
        (j.disable_slat, "disable_slat"),
    ] {
        if on {
            push(name, "1".into());
        }
    }
    if j.gtod_reduce {
        push("gtod_reduce", "1".into());
    }
    let unified = match j.unified_rw_reporting {
        UnifiedRw::None => "none",
        UnifiedRw::Mixed => "mixed",
        UnifiedRw::Both => "both",
    };
    push("unified_rw_reporting", unified.into());
    let percentiles: Vec<String> = j.percentile_list.iter().map(f64::to_string).collect();
    push("percentile_list", percentiles.join(":"));
    push("clat_percentiles", flag(j.clat_percentiles).into());
    push("lat_percentiles", flag(j.lat_percentiles).into());
    push("slat_percentiles", flag(j.slat_percentiles).into());
}

/// `cgroup`, then the errors the job goes on after (`continue_on_error` or
/// `ignore_error`).
fn cgroup_error_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    if let Some(c) = &j.cgroup {
        push("cgroup", c.clone());
    }
    let e = &j.ignore_error;
    // continue_on_error alone (its default lists): said as it was given
    let coe_alone = match e.continue_on {
        _ if !(e.read.is_empty() && e.write.is_empty() && e.verify.is_empty()) => None,
        1 => Some("read"),
        2 => Some("write"),
        3 => Some("io"),
        4 => Some("verify"),
        7 => Some("all"),
        _ => None,
    };
    if let Some(c) = coe_alone {
        push("continue_on_error", c.into());
    } else if e.is_set() {
        push("ignore_error", errors(e));
    }
}

/// The bandwidth and IOPS averaging windows and the sync options.
fn avg_sync_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    push("bwavgtime", j.bw_avg_time.as_ms().to_string());
    push("iopsavgtime", j.iops_avg_time.as_ms().to_string());
    push("fsync", j.fsync_blocks.to_string());
    push("fdatasync", j.fdatasync_blocks.to_string());
    push("end_fsync", flag(j.end_fsync).into());
}

/// The `write_*_log` options and the settings of the logs written.
fn log_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    let logs = &j.logs;
    for (name, prefix) in [
        ("write_bw_log", &logs.bw),
        ("write_iops_log", &logs.iops),
        ("write_lat_log", &logs.lat),
        ("write_hist_log", &logs.hist),
    ] {
        if let Some(p) = prefix {
            push(name, p.clone());
        }
    }
    if logs.any() {
        push("log_avg_msec", logs.avg_msec.to_string());
        push("log_max_value", flag(logs.max_value).into());
        push("log_offset", flag(logs.offset).into());
    }
    if logs.hist.is_some() {
        push("log_hist_msec", logs.hist_msec.to_string());
        push("log_hist_coarseness", logs.hist_coarseness.to_string());
    }
}

/// `stonewall`, then the extended options, family by family, in the
/// order fio needs them.
fn ext_args(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    let d = JobSpec::new("");
    if j.stonewall {
        push("stonewall", "1".into());
    }
    super::apply_ext::render(j, &d, push);
    super::apply_steady::render(j, push);
    super::apply_ext::render_files(j, &d, push);
    super::apply_verify::render(j, &d, push);
    super::apply_run::render(j, push);
    super::apply_zone::render(j, push);
}

/// A fio command line (without the program name) that defines `jobs`:
/// each job as `--name=NAME` followed by all its settings, and `new_group`
/// where the reporting group changes.
///
/// Limits: a job named `""` or `global…` cannot be written on a fio command
/// line, and a `stonewall` shows only as the new group it makes.
pub fn to_fio_args(jobs: &[JobSpec]) -> Vec<String> {
    let mut out = Vec::new();
    let mut group = None;
    for j in jobs {
        let new_group = group.is_some_and(|g| g != j.group_id);
        group = Some(j.group_id);
        out.extend(job_args(j, new_group));
    }
    out
}
