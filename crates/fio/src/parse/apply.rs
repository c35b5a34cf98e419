//! Applying one option value to a job (fio 3.33 `parse.c: handle_option`,
//! `__handle_option`, and the option callbacks in `options.c`).

use blkqos_core::Duration;
use blkqos_workload::spec::{
    IgnoreErrors, IoEngine, RateProcess, RwMode, RwSeq, SizeSpec, ThinkBlocksType, UnifiedRw,
};

use super::ini::{strip_blank_end, strip_blank_front};
use super::options::{piece_dirs, pieces, Kind, Opt, OptDef};
pub(crate) use super::state::JobState;
use super::units::{
    parse_count, parse_float, parse_plain_int, parse_size, parse_time_us, SizeValue,
};

/// The core options (fio 3.33 `options.c`): the job's layout, its IO
/// pattern, pacing, statistics and logs.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("name", Kind::StrStore, Opt::Name, apply_core),
    OptDef::new("description", Kind::StrStore, Opt::Description, apply_core),
    OptDef::new("filename", Kind::StrStore, Opt::Filename, apply_core).prio(-1),
    OptDef::new("size", Kind::StrVal, Opt::Size, apply_core),
    OptDef::new("offset", Kind::StrVal, Opt::Offset, apply_core).alias("fileoffset"),
    OptDef::new("rw", Kind::Str, Opt::Rw, apply_core).alias("readwrite"),
    OptDef::new("rwmixread", Kind::Int, Opt::RwMixRead, apply_core),
    OptDef::new("rwmixwrite", Kind::Int, Opt::RwMixWrite, apply_core),
    OptDef::new("bs", Kind::Ull, Opt::Bs, apply_core).alias("blocksize"),
    OptDef::new("bsrange", Kind::Range, Opt::BsRange, apply_core).alias("blocksize_range"),
    OptDef::new("direct", Kind::Bool, Opt::Direct, apply_core),
    OptDef::new("buffered", Kind::Bool, Opt::Buffered, apply_core),
    OptDef::new("ioengine", Kind::StrStore, Opt::IoEngine, apply_core),
    OptDef::new("iodepth", Kind::Int, Opt::IoDepth, apply_core),
    OptDef::new("iodepth_batch", Kind::Int, Opt::IoDepthBatch, apply_core)
        .alias("iodepth_batch_submit"),
    OptDef::new("numjobs", Kind::Int, Opt::NumJobs, apply_core),
    OptDef::new("runtime", Kind::Time, Opt::Runtime, apply_core).alias("timeout"),
    OptDef::new("time_based", Kind::StrSet, Opt::TimeBased, apply_core),
    OptDef::new("ramp_time", Kind::Time, Opt::RampTime, apply_core),
    OptDef::new("rate", Kind::Ull, Opt::Rate, apply_core),
    OptDef::new("rate_iops", Kind::Int, Opt::RateIops, apply_core),
    OptDef::new("rate_process", Kind::Str, Opt::RateProcess, apply_core),
    OptDef::new(
        "rate_ignore_thinktime",
        Kind::Bool,
        Opt::RateIgnoreThinktime,
        apply_core,
    ),
    OptDef::new("thinktime", Kind::Int, Opt::Thinktime, apply_core),
    OptDef::new("thinktime_spin", Kind::Int, Opt::ThinktimeSpin, apply_core),
    OptDef::new(
        "thinktime_blocks",
        Kind::Int,
        Opt::ThinktimeBlocks,
        apply_core,
    ),
    OptDef::new(
        "thinktime_blocks_type",
        Kind::Str,
        Opt::ThinktimeBlocksType,
        apply_core,
    ),
    OptDef::new("norandommap", Kind::StrSet, Opt::NoRandomMap, apply_core),
    OptDef::new("randrepeat", Kind::Bool, Opt::RandRepeat, apply_core),
    OptDef::new("randseed", Kind::StrVal, Opt::RandSeed, apply_core),
    OptDef::new(
        "group_reporting",
        Kind::StrSet,
        Opt::GroupReporting,
        apply_core,
    ),
    OptDef::new(
        "unified_rw_reporting",
        Kind::Str,
        Opt::UnifiedRwReporting,
        apply_core,
    ),
    OptDef::new(
        "percentile_list",
        Kind::FloatList,
        Opt::PercentileList,
        apply_core,
    ),
    OptDef::new(
        "clat_percentiles",
        Kind::Bool,
        Opt::ClatPercentiles,
        apply_core,
    ),
    OptDef::new(
        "lat_percentiles",
        Kind::Bool,
        Opt::LatPercentiles,
        apply_core,
    ),
    OptDef::new(
        "slat_percentiles",
        Kind::Bool,
        Opt::SlatPercentiles,
        apply_core,
    ),
    OptDef::new("cgroup", Kind::StrStore, Opt::Cgroup, apply_core),
    OptDef::new("ignore_error", Kind::Str, Opt::IgnoreError, apply_core),
    OptDef::new(
        "continue_on_error",
        Kind::Str,
        Opt::ContinueOnError,
        apply_core,
    ),
    OptDef::new("bwavgtime", Kind::Int, Opt::BwAvgTime, apply_core),
    OptDef::new("iopsavgtime", Kind::Int, Opt::IopsAvgTime, apply_core),
    OptDef::new("kb_base", Kind::Str, Opt::KbBase, apply_core).prio(1),
    OptDef::new("fsync", Kind::Int, Opt::Fsync, apply_core),
    OptDef::new("fdatasync", Kind::Int, Opt::Fdatasync, apply_core),
    OptDef::new("end_fsync", Kind::Bool, Opt::EndFsync, apply_core),
    OptDef::new("stonewall", Kind::StrSet, Opt::Stonewall, apply_core).alias("wait_for_previous"),
    OptDef::new("new_group", Kind::StrSet, Opt::NewGroup, apply_core),
    OptDef::new("write_bw_log", Kind::StrStore, Opt::WriteBwLog, apply_core),
    OptDef::new(
        "write_iops_log",
        Kind::StrStore,
        Opt::WriteIopsLog,
        apply_core,
    ),
    OptDef::new(
        "write_lat_log",
        Kind::StrStore,
        Opt::WriteLatLog,
        apply_core,
    ),
    OptDef::new("log_avg_msec", Kind::Int, Opt::LogAvgMsec, apply_core),
    OptDef::new("log_max_value", Kind::Bool, Opt::LogMaxValue, apply_core),
    OptDef::new("log_offset", Kind::Bool, Opt::LogOffset, apply_core),
    OptDef::new("per_job_logs", Kind::Bool, Opt::PerJobLogs, apply_core),
    OptDef::new(
        "write_hist_log",
        Kind::StrStore,
        Opt::WriteHistLog,
        apply_core,
    ),
    OptDef::new("log_hist_msec", Kind::Int, Opt::LogHistMsec, apply_core),
    OptDef::new(
        "log_hist_coarseness",
        Kind::Int,
        Opt::LogHistCoarseness,
        apply_core,
    ),
    OptDef::new("unlink", Kind::Bool, Opt::Unlink, apply_core),
];

/// fio's `PATH_MAX` limit on `filename=`.
const FILENAME_MAX_LEN: usize = 4096;
/// `FIO_IO_U_LIST_MAX_LEN`.
const PERCENTILE_LIST_MAX: usize = 20;

/// Applies `value` (`None` = the option given bare) for `def` to `st`:
/// the option's family applies it ([`OptDef::apply`]). Errors are
/// messages; the caller adds location, option and value.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    (def.apply)(st, def, value)
}

/// Applies one of the core options ([`DEFS`]).
fn apply_core(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    if def.opt == Opt::Unlink {
        // fio's default; unlink=1 (remove the job's files when it ends)
        // would delete what the jobs made
        return match value {
            Some("0") => Ok(()),
            Some("1") | None => Err("unlink=1 (remove the job's files when it ends) is not \
                                     implemented; leave it out (unlink=0 is fio's default)"
                .into()),
            Some(v) => Err(format!("invalid value `{v}` (valid values: 0, 1)")),
        };
    }
    let Some(v) = value else {
        return match def.kind {
            Kind::StrSet => {
                set_flag(st, def.opt, true);
                Ok(())
            }
            // a bare write_*_log: the logs are named after the job (fio
            // make_log_name); the name is known when the job is complete
            _ if matches!(
                def.opt,
                Opt::WriteBwLog | Opt::WriteIopsLog | Opt::WriteLatLog | Opt::WriteHistLog
            ) =>
            {
                let l = &mut st.spec.logs;
                let slot = match def.opt {
                    Opt::WriteBwLog => &mut l.bw,
                    Opt::WriteIopsLog => &mut l.iops,
                    Opt::WriteLatLog => &mut l.lat,
                    _ => &mut l.hist,
                };
                *slot = Some(String::new());
                Ok(())
            }
            _ => Err(format!("Option {} requires an argument", def.name)),
        };
    };
    match def.kind {
        Kind::Str | Kind::StrStore => apply_string(st, def.opt, v),
        Kind::FloatList => apply_percentiles(st, v),
        Kind::Range => apply_bsrange(st, v),
        _ if matches!(def.opt, Opt::Bs | Opt::Rate | Opt::RateIops) => {
            apply_per_dir(st, def.opt, v)
        }
        _ => {
            let piece = single(def.kind, v)?;
            apply_scalar(st, def, piece)
        }
    }
}

/// The one piece of a single-valued option: fio would split the value at
/// `,`, `:` or `-` and silently drop the rest.
fn single(kind: Kind, v: &str) -> Result<&str, String> {
    if v.trim_start().starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    match pieces(kind, v).as_slice() {
        [one] => Ok(one),
        _ => Err(
            "this option takes a single value (fio would keep only part of a `,`/`:`/`-` list)"
                .into(),
        ),
    }
}

fn set_flag(st: &mut JobState, opt: Opt, on: bool) {
    match opt {
        Opt::TimeBased => st.spec.time_based = on,
        Opt::NoRandomMap => st.spec.norandommap = on,
        Opt::GroupReporting => st.spec.group_reporting = on,
        Opt::Stonewall => st.stonewall = on,
        Opt::NewGroup => st.new_group = on,
        _ => {}
    }
}

fn set_bool(st: &mut JobState, opt: Opt, on: bool) {
    let s = &mut st.spec;
    match opt {
        Opt::Direct => s.direct = on,
        // `buffered` is stored inverted into the same field (`.neg = 1`).
        Opt::Buffered => s.direct = !on,
        Opt::RateIgnoreThinktime => s.rate_ignore_thinktime = on,
        Opt::RandRepeat => s.randrepeat = on,
        Opt::ClatPercentiles => s.clat_percentiles = on,
        Opt::LatPercentiles => s.lat_percentiles = on,
        Opt::SlatPercentiles => s.slat_percentiles = on,
        Opt::EndFsync => s.end_fsync = on,
        Opt::LogMaxValue => s.logs.max_value = on,
        Opt::LogOffset => s.logs.offset = on,
        _ => {}
    }
}

/// `[min, max]` of an integer option; `FIO_OPT_INT` without a `maxval`
/// stores into a 32-bit field. A few minimums are stricter than fio's (which
/// has none) where 0 would hang or misbehave: `bwavgtime`, `iopsavgtime`
/// (`numjobs`: [`super::limits::numjobs`]).
fn int_range(opt: Opt) -> (u64, u64) {
    let max = u64::from(u32::MAX);
    match opt {
        Opt::RwMixRead | Opt::RwMixWrite => (0, 100),
        Opt::IoDepth | Opt::BwAvgTime | Opt::IopsAvgTime => (1, max),
        // options.c's help: "Integer in range [0,6]"
        Opt::LogHistCoarseness => (0, u64::from(blkqos_workload::histlog::MAX_HIST_COARSENESS)),
        _ => (0, max),
    }
}

fn check_range(v: u64, (min, max): (u64, u64)) -> Result<u64, String> {
    if v < min {
        Err(format!("min value out of range: {v} ({min} min)"))
    } else if v > max {
        Err(format!("max value out of range: {v} ({max} max)"))
    } else {
        Ok(v)
    }
}

fn to_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn duration_us(us: u64) -> Result<Duration, String> {
    us.checked_mul(1_000)
        .map(Duration::from_ns)
        .ok_or_else(|| "value out of range".into())
}

/// Applies `piece`, the one value of a single-valued option, by its kind.
fn apply_scalar(st: &mut JobState, def: &OptDef, piece: &str) -> Result<(), String> {
    match def.kind {
        Kind::Bool => {
            let n = parse_plain_int(piece)?;
            let n = check_range(n, (0, 1))?;
            if def.opt == Opt::PerJobLogs && n == 0 {
                return Err(
                    "per_job_logs=0 (one log file shared by all jobs) is not supported".into(),
                );
            }
            set_bool(st, def.opt, n == 1);
        }
        Kind::StrSet => {
            let n = parse_plain_int(piece)?;
            set_flag(st, def.opt, n != 0);
        }
        Kind::Time => {
            let d = duration_us(parse_time_us(piece, true)?)?;
            let s = &mut st.spec;
            match def.opt {
                Opt::Runtime => s.runtime = (d > Duration::ZERO).then_some(d),
                _ => s.ramp_time = d,
            }
        }
        Kind::Int => apply_int(st, def.opt, piece)?,
        Kind::StrVal => apply_str_val(st, def.opt, piece)?,
        _ => {}
    }
    Ok(())
}

/// An integer option: the think times (in µs), `numjobs`, or a count in
/// its [`int_range`].
fn apply_int(st: &mut JobState, opt: Opt, piece: &str) -> Result<(), String> {
    let kb_base = st.spec.kb_base;
    match opt {
        Opt::Thinktime | Opt::ThinktimeSpin => {
            let us = check_range(parse_time_us(piece, false)?, int_range(opt))?;
            let d = duration_us(us)?;
            let s = &mut st.spec;
            match opt {
                Opt::Thinktime => s.thinktime = d,
                _ => s.thinktime_spin = d,
            }
        }
        Opt::NumJobs => {
            st.spec.numjobs = super::limits::numjobs(parse_count(piece, kb_base)?)?;
        }
        _ => {
            let n = to_u32(check_range(parse_count(piece, kb_base)?, int_range(opt))?);
            let s = &mut st.spec;
            match opt {
                // str_rwmix_read_cb / str_rwmix_write_cb set both sides.
                Opt::RwMixRead => s.rwmixread = n,
                Opt::RwMixWrite => s.rwmixread = 100 - n.min(100),
                Opt::IoDepth => s.iodepth = n,
                Opt::IoDepthBatch => s.iodepth_batch = n,
                Opt::ThinktimeBlocks => s.thinktime_blocks = n,
                Opt::BwAvgTime => s.bw_avg_time = Duration::from_ms(u64::from(n)),
                Opt::IopsAvgTime => s.iops_avg_time = Duration::from_ms(u64::from(n)),
                Opt::Fsync => s.fsync_blocks = n,
                Opt::Fdatasync => s.fdatasync_blocks = n,
                Opt::LogAvgMsec => s.logs.avg_msec = u64::from(n),
                Opt::LogHistMsec => s.logs.hist_msec = u64::from(n),
                Opt::LogHistCoarseness => s.logs.hist_coarseness = n,
                _ => {}
            }
        }
    }
    Ok(())
}

/// `size`, `offset` (bytes, a percentage or zones) and `randseed`.
fn apply_str_val(st: &mut JobState, opt: Opt, piece: &str) -> Result<(), String> {
    let kb_base = st.spec.kb_base;
    match opt {
        // str_size_cb: 0 means "not set" (the whole file or device).
        Opt::Size => {
            st.spec.zones.size_nz = 0;
            if let Some(n) = super::apply_zone::zones_of(piece)? {
                // resolved with the zone size (fio str_size_cb: size_nz)
                st.spec.zones.size_nz = n;
                st.spec.size = None;
                return Ok(());
            }
            st.spec.size = match parse_size(piece, kb_base)? {
                SizeValue::Bytes(0) => None,
                SizeValue::Bytes(b) => Some(SizeSpec::Bytes(b)),
                SizeValue::Percent(0) => return Err("size=0% is not a valid size".into()),
                SizeValue::Percent(p) => Some(SizeSpec::Percent(p)),
            }
        }
        Opt::Offset => {
            st.spec.zones.offset_nz = 0;
            if let Some(n) = super::apply_zone::zones_of(piece)? {
                // fio str_offset_cb: start_offset_nz
                st.spec.zones.offset_nz = n;
                st.spec.offset = SizeSpec::Bytes(0);
                return Ok(());
            }
            st.spec.offset = match parse_size(piece, kb_base)? {
                SizeValue::Bytes(b) => SizeSpec::Bytes(b),
                SizeValue::Percent(p) => SizeSpec::Percent(p),
            }
        }
        _ => {
            st.spec.randseed = parse_count(piece, kb_base)?;
            st.randseed_set = true;
        }
    }
    Ok(())
}

/// `bs`, `rate`, `rate_iops`: `R[,W[,T]]`. A piece sets its direction; the
/// last piece also sets the directions after it; an empty piece keeps what
/// was there (`__handle_option` with `first`, `more`, `curr`).
fn apply_per_dir(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    // `-` also separates pieces (fio: `bs=4k-8k` is read 4k, write 8k), so
    // fio reads `rate=-1` as "read unchanged, write 1 B/s": a minus sign
    // where a number starts is a negative value, refused
    let t = v.trim_start();
    if t.starts_with('-') || [",-", ":-", "--"].iter().any(|p| t.contains(p)) {
        return Err("negative values are not allowed".into());
    }
    let parts = pieces(Kind::Ull, v);
    if parts.len() > 3 {
        return Err("at most three values (read,write,trim)".into());
    }
    let kb_base = st.spec.kb_base;
    let mut any = false;
    for (curr, piece) in parts.iter().enumerate() {
        if piece.trim().is_empty() {
            continue;
        }
        let n = parse_count(piece, kb_base)?;
        for &d in piece_dirs(curr, curr + 1 == parts.len()) {
            match opt {
                Opt::Bs => st.spec.bs[d] = check_range(n, (1, u64::MAX))?,
                Opt::Rate => st.spec.rate_bps[d] = (n > 0).then_some(n),
                _ => {
                    let n = check_range(n, (0, u64::from(u32::MAX)))?;
                    st.spec.rate_iops[d] = (n > 0).then_some(n);
                }
            }
        }
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err("no value given".into())
    }
}

/// `bsrange=lo-hi[,lo-hi[,lo-hi]]` (`FIO_OPT_RANGE`; `lo:hi` works too; the
/// bounds are swapped if `lo > hi`).
fn apply_bsrange(st: &mut JobState, v: &str) -> Result<(), String> {
    let parts = pieces(Kind::Range, v);
    if parts.len() > 3 {
        return Err("at most three ranges (read,write,trim)".into());
    }
    let kb_base = st.spec.kb_base;
    let mut any = false;
    for (curr, piece) in parts.iter().enumerate() {
        if piece.trim().is_empty() {
            continue;
        }
        let (lo, hi) = piece
            .split_once('-')
            .or_else(|| piece.split_once(':'))
            .ok_or_else(|| format!("`{piece}` is not a range (lo-hi or lo:hi)"))?;
        let lo = check_range(parse_count(lo, kb_base)?, (1, u64::MAX))?;
        let hi = check_range(parse_count(hi, kb_base)?, (1, u64::MAX))?;
        let range = (lo.min(hi), lo.max(hi));
        for &d in piece_dirs(curr, curr + 1 == parts.len()) {
            st.bsrange[d] = Some(range);
        }
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err("no range given".into())
    }
}

/// `percentile_list=a:b:c`: at most 20 values, each in (0, 100]. Stored
/// sorted, as fio sorts the list before using it.
fn apply_percentiles(st: &mut JobState, v: &str) -> Result<(), String> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() > PERCENTILE_LIST_MAX {
        return Err(format!(
            "the list exceeding max length {PERCENTILE_LIST_MAX}"
        ));
    }
    let mut list = Vec::with_capacity(parts.len());
    for p in parts {
        let f = parse_float(p)?;
        if !(f > 0.0 && f <= 100.0) {
            return Err(format!("percentile {p} out of range (0, 100]"));
        }
        list.push(f);
    }
    list.sort_by(f64::total_cmp);
    st.spec.percentile_list = list;
    Ok(())
}

/// A `write_*_log` value: the prefix of the log files' names (a path).
fn log_prefix(v: &str) -> Result<String, String> {
    if v.is_empty() {
        return Err("the log name prefix is empty".into());
    }
    Ok(v.to_string())
}

fn apply_string(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let s = &mut st.spec;
    match opt {
        Opt::Rw => (s.rw, s.rw_seq) = parse_rw(v, s.kb_base)?,
        Opt::WriteBwLog => s.logs.bw = Some(log_prefix(v)?),
        Opt::WriteIopsLog => s.logs.iops = Some(log_prefix(v)?),
        Opt::WriteLatLog => s.logs.lat = Some(log_prefix(v)?),
        Opt::WriteHistLog => s.logs.hist = Some(log_prefix(v)?),
        Opt::RateProcess => {
            s.rate_process = match v {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(invalid(v, &["linear", "poisson"])),
            }
        }
        Opt::ThinktimeBlocksType => {
            s.thinktime_blocks_type = match v {
                "complete" => ThinkBlocksType::Complete,
                "issue" => ThinkBlocksType::Issue,
                _ => return Err(invalid(v, &["complete", "issue"])),
            }
        }
        Opt::UnifiedRwReporting => {
            s.unified_rw_reporting = match v {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                _ => return Err(invalid(v, &["none", "mixed", "both", "0", "1", "2"])),
            }
        }
        Opt::KbBase => {
            s.kb_base = match v {
                "1024" => 1024,
                "1000" => 1000,
                _ => return Err(invalid(v, &["1024", "1000"])),
            }
        }
        Opt::IgnoreError => parse_ignore_error(v, &mut s.ignore_error)?,
        Opt::ContinueOnError => s.ignore_error.continue_on = parse_continue_on_error(v)?,
        _ if v.is_empty() => return Err("empty value".into()),
        Opt::Name => s.name = v.to_string(),
        Opt::Description => s.description = Some(v.to_string()),
        Opt::Cgroup => s.cgroup = Some(v.to_string()),
        Opt::Filename => {
            if v.len() > FILENAME_MAX_LEN - 1 {
                return Err(format!("value exceeds max length of {FILENAME_MAX_LEN}"));
            }
            s.filename = Some(v.to_string());
        }
        Opt::IoEngine => s.ioengine = parse_ioengine(v)?,
        _ => {}
    }
    Ok(())
}

fn invalid(v: &str, valid: &[&str]) -> String {
    format!("invalid value `{v}` (valid values: {})", valid.join(", "))
}

fn parse_ioengine(v: &str) -> Result<IoEngine, String> {
    match v {
        "libaio" => Ok(IoEngine::Libaio),
        "io_uring" => Ok(IoEngine::IoUring),
        "psync" => Ok(IoEngine::Psync),
        "sync" => Ok(IoEngine::Sync),
        "pvsync" => Ok(IoEngine::Pvsync),
        "pvsync2" => Ok(IoEngine::Pvsync2),
        "posixaio" => Ok(IoEngine::Posixaio),
        "null" => Ok(IoEngine::Null),
        "io_uring_cmd" => Ok(IoEngine::IoUringCmd),
        "sg" => Ok(IoEngine::Sg),
        "libzbc" => Ok(IoEngine::Libzbc),
        "filecreate" => Ok(IoEngine::Filecreate),
        "filestat" => Ok(IoEngine::Filestat),
        "filedelete" => Ok(IoEngine::Filedelete),
        "dircreate" => Ok(IoEngine::Dircreate),
        "dirstat" => Ok(IoEngine::Dirstat),
        "dirdelete" => Ok(IoEngine::Dirdelete),
        "falloc" => Ok(IoEngine::Falloc),
        "ftruncate" => Ok(IoEngine::Ftruncate),
        "e4defrag" => Ok(IoEngine::E4defrag),
        "cpuio" => Ok(IoEngine::Cpuio),
        "exec" => Ok(IoEngine::Exec),
        "libpmem" => Ok(IoEngine::Libpmem),
        "dev-dax" => Ok(IoEngine::DevDax),
        "page_fault" => Ok(IoEngine::PageFault),
        _ => Err(super::engines::out_of_scope(v)),
    }
}

/// `rw=` (`str_rw_cb`). The value up to `:` must be one of fio's names; a
/// `:N` postfix is `ddir_seq_nr` (random modes: a new random offset every N
/// IOs) or `ddir_seq_add` (sequential modes: bytes added to each next
/// offset, negative to go backwards).
fn parse_rw(v: &str, kb_base: u32) -> Result<(RwMode, RwSeq), String> {
    const VALID: &[&str] = &[
        "read",
        "write",
        "trim",
        "randread",
        "randwrite",
        "randtrim",
        "rw",
        "readwrite",
        "randrw",
    ];
    if v.contains(',') {
        return Err(invalid(v, VALID));
    }
    let (mode, postfix) = match v.split_once(':') {
        Some((m, p)) => (m, Some(p)),
        None => (v, None),
    };
    let rw = match mode {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "trim" => RwMode::Trim,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "randtrim" => RwMode::RandTrim,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trimwrite" | "randtrimwrite" => {
            return Err(format!("unsupported rw mode `{mode}`"));
        }
        _ => return Err(invalid(v, VALID)),
    };
    let Some(p) = postfix else {
        return Ok((rw, RwSeq::None));
    };
    let bad = |why: String| format!("rw postfix parsing failed: `:{p}`: {why}");
    if rw.is_random() {
        // atoi: 0 and 1 both mean a random offset for every IO
        let n = super::units::parse_plain_int(p).map_err(bad)?;
        let n = u32::try_from(n).map_err(|_| bad("out of range".into()))?;
        return Ok((rw, if n > 1 { RwSeq::Every(n) } else { RwSeq::None }));
    }
    let (neg, body) = match p.trim().strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, p),
    };
    let n = parse_count(body, kb_base).map_err(bad)?;
    let n = i64::try_from(n).map_err(|_| bad("out of range".into()))?;
    let add = if neg { -n } else { n };
    Ok((
        rw,
        if add == 0 {
            RwSeq::None
        } else {
            RwSeq::Add(add)
        },
    ))
}

/// The errno names fio knows (`options.c: str2error`): EPERM (1) ... ERANGE (34).
const ERRNO_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// `continue_on_error=` (fio's posval table): the error types whose
/// non-fatal errors let a job go on; it replaces the bits `ignore_error`
/// set before it.
fn parse_continue_on_error(v: &str) -> Result<u8, String> {
    use blkqos_workload::spec::{
        ERROR_TYPE_READ as R, ERROR_TYPE_VERIFY as V, ERROR_TYPE_WRITE as W,
    };
    Ok(match v {
        "none" | "0" => 0,
        "read" => R,
        "write" => W,
        "io" => R | W,
        "verify" => V,
        "all" | "1" => R | W | V,
        _ => {
            return Err(invalid(
                v,
                &["none", "read", "write", "io", "verify", "all", "0", "1"],
            ))
        }
    })
}

/// `ignore_error=READLIST,WRITELIST,VERIFYLIST` (`str_ignore_error_cb`,
/// `ignore_error_type`): `,` separates the lists, `:` the errors within one.
/// Only the lists present are replaced; an empty list clears its direction.
/// A list given turns on `continue_on_error` for its type, as in fio.
fn parse_ignore_error(v: &str, out: &mut IgnoreErrors) -> Result<(), String> {
    let v = strip_blank_end(strip_blank_front(v));
    let lists: Vec<&str> = v.split(',').collect();
    if lists.len() > 3 {
        return Err("Illegal error type: at most three lists (READ,WRITE,VERIFY)".into());
    }
    for (i, list) in lists.iter().enumerate() {
        let errs = parse_error_list(list)?;
        if !errs.is_empty() {
            out.continue_on |= 1 << i;
        }
        match i {
            0 => out.read = errs,
            1 => out.write = errs,
            _ => out.verify = errs,
        }
    }
    Ok(())
}

fn parse_error_list(list: &str) -> Result<Vec<i32>, String> {
    let items: Vec<&str> = list.split(':').collect();
    let mut out = Vec::new();
    for (j, item) in items.iter().enumerate() {
        if item.is_empty() {
            // fio stops at the first empty item; accept that only at the end.
            if items[j..].iter().all(|i| i.is_empty()) {
                break;
            }
            return Err(format!(
                "empty error in `{list}` (fio would ignore the errors after it)"
            ));
        }
        out.push(parse_errno(item)?);
    }
    Ok(out)
}

fn parse_errno(item: &str) -> Result<i32, String> {
    let unknown = || format!("Unknown error {item}, please use number value");
    if item.starts_with('E') {
        return ERRNO_NAMES
            .iter()
            .position(|n| *n == item)
            .and_then(|i| i32::try_from(i + 1).ok())
            .ok_or_else(unknown);
    }
    // atoi, with the sign dropped as fio does.
    let digits = item.strip_prefix('-').unwrap_or(item);
    match digits.parse::<i32>() {
        Ok(n) if n > 0 && !digits.starts_with('+') => Ok(n),
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::registry::{lookup, Lookup};

    fn run(st: &mut JobState, name: &str, v: Option<&str>) -> Result<(), String> {
        match lookup(name) {
            Lookup::Supported(d) => apply(st, d, v),
            other => panic!("{name}: {other:?}"),
        }
    }

    fn with(opts: &[(&str, Option<&str>)]) -> Result<JobState, String> {
        let mut st = JobState::new();
        for (n, v) in opts {
            run(&mut st, n, *v)?;
        }
        Ok(st)
    }

    #[test]
    fn sample_log_options() {
        let st = with(&[
            ("write_lat_log", Some("out/x")),
            ("write_bw_log", Some("b")),
            ("log_avg_msec", Some("250")),
            ("log_max_value", Some("1")),
            ("log_offset", Some("1")),
            ("per_job_logs", Some("1")),
        ])
        .unwrap();
        let l = &st.spec.logs;
        assert_eq!(l.lat.as_deref(), Some("out/x"));
        assert_eq!(l.bw.as_deref(), Some("b"));
        assert_eq!(l.iops, None);
        assert_eq!((l.avg_msec, l.max_value, l.offset), (250, true, true));
        assert!(with(&[("per_job_logs", Some("0"))]).is_err());
        assert!(with(&[("log_avg_msec", Some("-1"))]).is_err());
        assert!(with(&[("log_avg_msec", Some("x"))]).is_err());
        // bare: named after the job once it is complete (job.rs finalize)
        let bare = with(&[("write_iops_log", None)]).unwrap();
        assert_eq!(bare.spec.logs.iops.as_deref(), Some(""));
    }

    #[test]
    fn hist_log_options() {
        let st = with(&[
            ("write_hist_log", Some("h")),
            ("log_hist_msec", Some("500")),
            ("log_hist_coarseness", Some("6")),
        ])
        .unwrap();
        let l = &st.spec.logs;
        assert_eq!(l.hist.as_deref(), Some("h"));
        assert_eq!((l.hist_msec, l.hist_coarseness), (500, 6));
        assert_eq!(l.hist_file_name(2).as_deref(), Some("h_clat_hist.2.log"));
        let e = with(&[("log_hist_coarseness", Some("99"))]).unwrap_err();
        assert!(e.contains("99") && e.contains("6 max"), "{e}");
        assert!(with(&[("log_hist_msec", Some("x"))]).is_err());
        assert!(with(&[("write_hist_log", Some(""))]).is_err());
    }

    #[test]
    fn per_direction_lists() {
        let bs = |v| with(&[("bs", Some(v))]).map(|s| s.spec.bs);
        fn pd<T>(read: T, write: T, trim: T) -> blkqos_workload::PerDir<T> {
            blkqos_workload::PerDir { read, write, trim }
        }
        assert_eq!(bs("8k"), Ok(pd(8192, 8192, 8192)));
        assert_eq!(
            bs("8k,32k"),
            Ok(pd(8192, 32768, 32768)),
            "no trailing comma: later dirs get it"
        );
        assert_eq!(bs("8k,32k,1k"), Ok(pd(8192, 32768, 1024)));
        assert_eq!(
            bs("8k:32k"),
            Ok(pd(8192, 32768, 32768)),
            "`:` separates like `,`"
        );
        assert_eq!(
            bs("8k,"),
            Ok(pd(8192, 4096, 4096)),
            "trailing comma: read only"
        );
        assert_eq!(
            bs(",8k"),
            Ok(pd(4096, 8192, 8192)),
            "empty slot keeps the default"
        );
        assert!(bs("0").is_err());
        assert!(bs(",").is_err());
        assert!(bs("1k,2k,3k,4k").is_err());
        assert!(bs("4k,bogus").is_err());

        let rate = |v| with(&[("rate", Some(v))]).map(|s| s.spec.rate_bps);
        assert_eq!(rate(",500k"), Ok(pd(None, Some(512_000), Some(512_000))));
        assert_eq!(rate("500k,"), Ok(pd(Some(512_000), None, None)));
        let iops = |v| with(&[("rate_iops", Some(v))]).map(|s| s.spec.rate_iops);
        assert_eq!(iops("100"), Ok(pd(Some(100), Some(100), Some(100))));
        assert_eq!(iops("50,50"), Ok(pd(Some(50), Some(50), Some(50))));
        assert_eq!(iops("0,7"), Ok(pd(None, Some(7), Some(7))));
        // `-` separates pieces, but a leading one is a negative number
        assert_eq!(bs("4k-8k"), Ok(pd(4096, 8192, 8192)));
        for neg in ["-4k", " -4k", "4k,-8k", "4k:-8k", "4k--8k"] {
            assert_eq!(
                bs(neg).unwrap_err(),
                "negative values are not allowed",
                "bs={neg}"
            );
        }
        assert!(rate("-1").unwrap_err().contains("negative"));
        assert!(iops("-1").unwrap_err().contains("negative"));
    }

    #[test]
    fn bsrange_values() {
        let r = |v| with(&[("bsrange", Some(v))]).map(|s| s.bsrange.into_fio_array());
        assert_eq!(r("1k-4k"), Ok([Some((1024, 4096)); 3]));
        assert_eq!(r("4k:1k"), Ok([Some((1024, 4096)); 3]), "swapped, `:` form");
        assert_eq!(
            r("1k-4k,8k-16k"),
            Ok([Some((1024, 4096)), Some((8192, 16384)), Some((8192, 16384))])
        );
        assert_eq!(
            r(",1k-2k"),
            Ok([None, Some((1024, 2048)), Some((1024, 2048))])
        );
        for bad in ["4k", "0-4k", "1k-4k-8k", ""] {
            assert!(r(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rwmix_interplay() {
        let mix = |o: &[(&str, Option<&str>)]| with(o).map(|s| s.spec.rwmixread);
        assert_eq!(mix(&[("rwmixread", Some("70"))]), Ok(70));
        assert_eq!(mix(&[("rwmixwrite", Some("70"))]), Ok(30));
        assert_eq!(
            mix(&[("rwmixread", Some("60")), ("rwmixwrite", Some("10"))]),
            Ok(90)
        );
        assert_eq!(
            mix(&[("rwmixwrite", Some("10")), ("rwmixread", Some("60"))]),
            Ok(60)
        );
        let e = mix(&[("rwmixread", Some("101"))]).unwrap_err();
        assert_eq!(e, "max value out of range: 101 (100 max)");
    }

    #[test]
    fn bools_and_flags() {
        assert_eq!(
            with(&[("direct", None)]).unwrap_err(),
            "Option direct requires an argument"
        );
        assert!(with(&[("direct", Some("1"))]).unwrap().spec.direct);
        assert!(
            !with(&[("direct", Some("1")), ("buffered", Some("1"))])
                .unwrap()
                .spec
                .direct
        );
        assert!(with(&[("direct", Some("2"))]).is_err());
        assert!(with(&[("direct", Some("yes"))]).is_err());
        assert!(with(&[("direct", Some("-1"))]).is_err());
        assert!(with(&[("time_based", None)]).unwrap().spec.time_based);
        assert!(with(&[("time_based", Some("1"))]).unwrap().spec.time_based);
        assert!(
            !with(&[("time_based", None), ("time_based", Some("0"))])
                .unwrap()
                .spec
                .time_based
        );
        assert!(with(&[("time_based", Some(""))]).is_err());
        assert!(with(&[("stonewall", None)]).unwrap().stonewall);
        assert!(with(&[("wait_for_previous", None)]).unwrap().stonewall);
    }

    #[test]
    fn scalars() {
        let st = with(&[
            ("iodepth", Some("16")),
            ("numjobs", Some("4")),
            ("thinktime", Some("4ms")),
            ("thinktime_spin", Some("100")),
            ("runtime", Some("60")),
            ("ramp_time", Some("2s")),
            ("bwavgtime", Some("1000")),
            ("randseed", Some("0x1234")),
            ("fsync", Some("8")),
            ("fdatasync", Some("3")),
        ])
        .unwrap();
        assert_eq!(st.spec.iodepth, 16);
        assert_eq!(st.spec.numjobs, 4);
        assert_eq!(st.spec.thinktime, Duration::from_us(4000));
        assert_eq!(st.spec.thinktime_spin, Duration::from_us(100));
        assert_eq!(st.spec.runtime, Some(Duration::from_secs(60)));
        assert_eq!(st.spec.ramp_time, Duration::from_secs(2));
        assert_eq!(st.spec.bw_avg_time, Duration::from_ms(1000));
        assert_eq!((st.spec.randseed, st.randseed_set), (0x1234, true));
        assert_eq!(st.spec.fsync_blocks, 8);
        assert_eq!(st.spec.fdatasync_blocks, 3);
        // runtime=1sec: `sec` is not a unit fio knows (fio: 1 µs): refused
        assert!(with(&[("runtime", Some("1sec"))])
            .unwrap_err()
            .contains("unknown time unit `sec`"));
        assert_eq!(with(&[("runtime", Some("0"))]).unwrap().spec.runtime, None);
        assert_eq!(
            with(&[("iodepth", Some("0"))]).unwrap_err(),
            "min value out of range: 0 (1 min)"
        );
        assert_eq!(with(&[("iodepth", Some("1k"))]).unwrap().spec.iodepth, 1024);
        for (o, v) in [
            ("iodepth", "4,8"),
            ("iodepth", "-1"),
            ("iodepth", "4294967296"),
            ("numjobs", "0"),
            ("thinktime", "2h"),
            ("runtime", "1:30"),
            ("iodepth", "50%"),
        ] {
            assert!(with(&[(o, Some(v))]).is_err(), "{o}={v}");
        }
    }

    #[test]
    fn sizes_and_offsets() {
        let st = with(&[("size", Some("50%")), ("offset", Some("10%"))]).unwrap();
        assert_eq!(st.spec.size, Some(SizeSpec::Percent(50)));
        assert_eq!(st.spec.offset, SizeSpec::Percent(10));
        let st = with(&[("size", Some("1mi")), ("fileoffset", Some("4k"))]).unwrap();
        assert_eq!(st.spec.size, Some(SizeSpec::Bytes(1 << 20)));
        assert_eq!(st.spec.offset, SizeSpec::Bytes(4096));
        assert_eq!(with(&[("size", Some("0"))]).unwrap().spec.size, None);
        let st = with(&[("kb_base", Some("1000")), ("size", Some("1m"))]).unwrap();
        assert_eq!(st.spec.size, Some(SizeSpec::Bytes(1_000_000)));
        assert!(with(&[("size", Some("4x"))]).is_err());
        assert!(with(&[("size", Some("0%"))]).is_err());
        // zones: counted here, resolved with zonesize (apply_zone::fixup)
        let st = with(&[("size", Some("10z")), ("offset", Some("524z"))]).unwrap();
        assert_eq!((st.spec.zones.size_nz, st.spec.zones.offset_nz), (10, 524));
        assert_eq!(st.spec.size, None);
        assert!(with(&[("size", Some("xz"))]).is_err());
    }

    #[test]
    fn strings() {
        let rw = |v| with(&[("rw", Some(v))]).map(|s| s.spec.rw);
        assert_eq!(rw("randrw"), Ok(RwMode::RandRw));
        assert_eq!(rw("readwrite"), Ok(RwMode::ReadWrite));
        assert_eq!(rw("randread:1"), Ok(RwMode::RandRead));
        let seq = |v| with(&[("rw", Some(v))]).map(|s| s.spec.rw_seq);
        assert_eq!(seq("randread:8"), Ok(RwSeq::Every(8)));
        assert_eq!(seq("read:-8k"), Ok(RwSeq::Add(-8192)));
        assert_eq!(seq("write:112k"), Ok(RwSeq::Add(114_688)));
        assert_eq!(seq("read:0"), Ok(RwSeq::None));
        for bad in [
            "bogus",
            "read,write",
            " read",
            "randread:x",
            "read:4q",
            "trimwrite",
            "",
            "READ",
        ] {
            assert!(rw(bad).is_err(), "{bad}");
        }
        assert!(with(&[("rw", None)]).is_err());
        let eng = |v| with(&[("ioengine", Some(v))]).map(|s| s.spec.ioengine);
        assert_eq!(eng("io_uring"), Ok(IoEngine::IoUring));
        assert_eq!(eng("sync"), Ok(IoEngine::Sync));
        assert_eq!(eng("null"), Ok(IoEngine::Null));
        assert_eq!(eng("pvsync2"), Ok(IoEngine::Pvsync2));
        let e = eng("net").unwrap_err();
        assert!(
            e.contains("unsupported ioengine `net`") && e.contains("network"),
            "{e}"
        );
        assert!(eng("libaio:x").is_err());
        assert!(with(&[("name", Some(""))]).is_err());
        assert!(with(&[("filename", Some(&"f".repeat(5000)))]).is_err());
        let st = with(&[("unified_rw_reporting", Some("1")), ("cgroup", Some("a/b"))]).unwrap();
        assert_eq!(st.spec.unified_rw_reporting, UnifiedRw::Mixed);
        assert_eq!(st.spec.cgroup.as_deref(), Some("a/b"));
        assert!(with(&[("kb_base", Some("1k"))]).is_err());
    }

    #[test]
    fn percentiles() {
        let p = |v| with(&[("percentile_list", Some(v))]).map(|s| s.spec.percentile_list);
        assert_eq!(p("99.9:50:1"), Ok(vec![1.0, 50.0, 99.9]));
        assert_eq!(p("100"), Ok(vec![100.0]));
        let twenty = vec!["1"; 20].join(":");
        assert!(p(&twenty).is_ok());
        let twenty_one = vec!["1"; 21].join(":");
        assert!(p(&twenty_one).is_err());
        for bad in ["0", "100.1", "-5", "1::5", "x", ""] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ignore_error_lists() {
        let ie = |v| with(&[("ignore_error", Some(v))]).map(|s| s.spec.ignore_error);
        fn e(r: &[i32], w: &[i32], v: &[i32]) -> IgnoreErrors {
            let bit = |l: &[i32], b: u8| if l.is_empty() { 0 } else { b };
            IgnoreErrors {
                read: r.to_vec(),
                write: w.to_vec(),
                verify: v.to_vec(),
                continue_on: bit(r, 1) | bit(w, 2) | bit(v, 4),
            }
        }
        assert_eq!(
            ie("EIO:EIO"),
            Ok(e(&[5, 5], &[], &[])),
            "`:` stays within the READ list"
        );
        assert_eq!(ie("EIO,EIO"), Ok(e(&[5], &[5], &[])));
        assert_eq!(
            ie(",ENOSPC:5,EILSEQ"),
            Err("Unknown error EILSEQ, please use number value".into())
        );
        assert_eq!(ie(",ENOSPC:5,84"), Ok(e(&[], &[28, 5], &[84])));
        assert_eq!(ie("-5"), Ok(e(&[5], &[], &[])));
        assert_eq!(ie("EIO:"), Ok(e(&[5], &[], &[])));
        for bad in ["EIO,EIO,EIO,EIO", "eio", "0", "EIO::EPERM", "5x"] {
            assert!(ie(bad).is_err(), "{bad}");
        }
        // A later ignore_error replaces only the lists it gives.
        let st = with(&[
            ("ignore_error", Some("EIO,EIO")),
            ("ignore_error", Some("EPERM")),
        ])
        .unwrap();
        assert_eq!(st.spec.ignore_error, e(&[1], &[5], &[]));
    }

    #[test]
    fn continue_on_error_types() {
        let coe =
            |opts: &[(&'static str, Option<&'static str>)]| with(opts).map(|s| s.spec.ignore_error);
        let bits = |v| coe(&[("continue_on_error", Some(v))]).map(|i| i.continue_on);
        assert_eq!(bits("none"), Ok(0));
        assert_eq!(bits("write"), Ok(2));
        assert_eq!(bits("io"), Ok(3));
        assert_eq!(bits("all"), Ok(7));
        assert_eq!(bits("1"), Ok(7));
        assert!(bits("sometimes").is_err());
        // the default non-fatal errors: EIO and EILSEQ (a verify error)
        let w = coe(&[("continue_on_error", Some("write"))]).unwrap();
        assert!(w.non_fatal(false, 5) && !w.non_fatal(false, 28));
        assert!(!w.non_fatal(true, 5), "reads are not covered");
        assert!(!w.non_fatal(false, 84), "EILSEQ is a verify error");
        // a list replaces the defaults of its type and turns the type on
        let l = coe(&[
            ("continue_on_error", Some("write")),
            ("ignore_error", Some(",ENOSPC")),
        ])
        .unwrap();
        assert!(l.non_fatal(false, 28) && !l.non_fatal(false, 5));
        let r = coe(&[("ignore_error", Some("EIO"))]).unwrap();
        assert!(r.non_fatal(true, 5) && !r.non_fatal(false, 5));
        // continue_on_error=none after ignore_error: every error is fatal
        let n = coe(&[
            ("ignore_error", Some("EIO")),
            ("continue_on_error", Some("none")),
        ])
        .unwrap();
        assert!(!n.non_fatal(true, 5) && !n.is_set());
    }
}
