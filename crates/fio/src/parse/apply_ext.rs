//! Applying the options of several files per job, block-size splits,
//! offset distributions, start delays and flow control (fio 3.33
//! `options.c` callbacks: `str_bssplit_cb`, `str_random_distribution_cb`,
//! `zone_split_ddir`, `str_fst_cb`, `str_gtod_reduce_cb`...).

use blkqos_core::Duration;
use blkqos_workload::spec::{
    BsSplit, Fallocate, FileService, JobSpec, PerDir, RandomDist, Zone, ZoneSize,
};

use super::options::{piece_dirs, pieces, Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_count, parse_float, parse_plain_int, parse_time_us};

/// Several files per job, block-size splits, offset distributions, start
/// delays, flow control and the other extended options.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("thread", Kind::StrSet, Opt::Thread, apply),
    OptDef::new("startdelay", Kind::Time, Opt::StartDelay, apply),
    OptDef::new("loops", Kind::Int, Opt::Loops, apply),
    OptDef::new("number_ios", Kind::StrVal, Opt::NumberIos, apply),
    OptDef::new("io_size", Kind::StrVal, Opt::IoSize, apply).alias("io_limit"),
    OptDef::new("bssplit", Kind::Str, Opt::BsSplit, apply),
    OptDef::new("ba", Kind::Ull, Opt::BlockAlign, apply).alias("blockalign"),
    OptDef::new(
        "random_distribution",
        Kind::Str,
        Opt::RandomDistribution,
        apply,
    ),
    OptDef::new("gtod_reduce", Kind::Bool, Opt::GtodReduce, apply),
    OptDef::new("directory", Kind::StrStore, Opt::Directory, apply),
    OptDef::new("nrfiles", Kind::Int, Opt::NrFiles, apply).alias("nr_files"),
    OptDef::new("filesize", Kind::StrVal, Opt::FileSize, apply),
    OptDef::new(
        "filename_format",
        Kind::StrStore,
        Opt::FilenameFormat,
        apply,
    )
    .prio(-1),
    OptDef::new("openfiles", Kind::Int, Opt::OpenFiles, apply),
    OptDef::new("file_service_type", Kind::Str, Opt::FileServiceType, apply),
    OptDef::new("create_on_open", Kind::Bool, Opt::CreateOnOpen, apply),
    OptDef::new("fallocate", Kind::Str, Opt::Fallocate, apply),
    OptDef::new("flow", Kind::Int, Opt::Flow, apply),
    OptDef::new("flow_id", Kind::Int, Opt::FlowId, apply),
    OptDef::new("flow_watermark", Kind::Int, Opt::FlowWatermark, apply),
    OptDef::new("flow_sleep", Kind::Int, Opt::FlowSleep, apply),
    OptDef::new("rate_min", Kind::Ull, Opt::RateMin, apply).alias("ratemin"),
    OptDef::new("rate_cycle", Kind::Int, Opt::RateCycle, apply).alias("ratecycle"),
    OptDef::new("disable_lat", Kind::Bool, Opt::DisableLat, apply),
    OptDef::new("disable_clat", Kind::Bool, Opt::DisableClat, apply),
    OptDef::new("disable_slat", Kind::Bool, Opt::DisableSlat, apply),
];

/// Options of fio's profiles (`--profile=`): fio accepts them in any job
/// and, without their profile, they change nothing.
pub(crate) static PROFILE_DEFS: &[OptDef] = &[OptDef::new(
    "threads",
    Kind::Int,
    Opt::ProfileThreads,
    apply,
)];

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    match (def.opt, value) {
        (Opt::Thread, None) => {
            st.spec.thread = true;
            Ok(())
        }
        (Opt::DisableLat | Opt::DisableClat | Opt::DisableSlat, None) => {
            apply_value(st, def.opt, "1")
        }
        (_, None) => Err(format!("Option {} requires an argument", def.name)),
        (opt, Some(v)) => apply_value(st, opt, v),
    }
}

fn apply_value(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let kb = st.spec.kb_base;
    let s = &mut st.spec;
    match opt {
        Opt::Thread => s.thread = parse_plain_int(v)? != 0,
        Opt::ProfileThreads => {
            int_in(v, kb, 0, u64::from(u32::MAX))?;
            s.notes.push(
                "`threads` is an option of fio's tiobench profile (--profile=tiobench): \
                 without the profile fio 3.33 accepts it and it changes nothing, as here"
                    .into(),
            );
        }
        Opt::StartDelay => s.start_delay = time_range(v)?,
        Opt::Loops => s.loops = to_u32(int_in(v, kb, 1, u64::from(u32::MAX))?),
        Opt::NumberIos => s.number_ios = parse_count(one(v)?, kb)?,
        Opt::IoSize => s.io_size = nonzero(parse_count(one(v)?, kb)?),
        Opt::BsSplit => s.bssplit = Some(parse_bssplit(v, kb)?),
        Opt::BlockAlign => per_dir_bytes(&mut s.blockalign, v, kb, 1)?,
        Opt::RateMin => per_dir_bytes(&mut s.rate_min, v, kb, 0)?,
        Opt::RateCycle => s.rate_cycle = Duration::from_ms(int_in(v, kb, 1, u64::from(u32::MAX))?),
        Opt::RandomDistribution => s.random_dist = parse_random_dist(v, kb)?,
        Opt::DisableLat => s.disable_lat = bool_value(v)?,
        Opt::DisableClat => s.disable_clat = bool_value(v)?,
        Opt::DisableSlat => s.disable_slat = bool_value(v)?,
        Opt::GtodReduce => {
            // str_gtod_reduce_cb: only `1` changes anything
            if bool_value(v)? {
                s.gtod_reduce = true;
                s.clat_percentiles = false;
                s.lat_percentiles = false;
                s.slat_percentiles = false;
            }
        }
        Opt::CreateOnOpen => {
            s.files.create_on_open = bool_value(v)?;
            if s.files.create_on_open {
                s.notes.push(
                    "create_on_open=1: on the simulator creating a file takes no time; \
                     on the real engine a run over several files creates the job's files \
                     empty when it opens them and lays none out (its writes extend them), \
                     as fio; a run on one target lays the target out before it starts"
                        .into(),
                );
            }
        }
        _ => return apply_file_option(st, opt, v),
    }
    Ok(())
}

fn apply_file_option(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let kb = st.spec.kb_base;
    let s = &mut st.spec;
    match opt {
        Opt::Directory => s.files.directory = split_names(non_empty(v)?),
        Opt::NrFiles => s.files.nrfiles = to_u32(int_in(v, kb, 1, u64::from(u32::MAX))?),
        Opt::FileSize => s.files.filesize = Some(size_range(v, kb)?),
        Opt::FilenameFormat => s.files.filename_format = non_empty(v)?.to_string(),
        Opt::OpenFiles => {
            s.files.openfiles = to_u32(int_in(v, kb, 0, u64::from(u32::MAX))?);
            s.notes.push(format!(
                "openfiles={}: every file stays open for the whole run (fio closes and \
                 reopens files beyond the limit; opening costs nothing here); the files \
                 take turns as file_service_type says",
                s.files.openfiles
            ));
        }
        Opt::FileServiceType => {
            let (service, batch) = parse_file_service(v)?;
            s.files.service = service;
            s.files.service_batch = batch;
        }
        Opt::Fallocate => {
            s.files.fallocate = parse_fallocate(v)?;
            s.notes.push(format!(
                "fallocate={v}: on the simulator allocation is free and files are \
                 laid out at once; on the real engine a run over several files lays \
                 out a file no job reads as fio does (posix and native allocate it, \
                 keep with KEEP_SIZE, truncate sizes it, none leaves it empty), and a \
                 run on one target lays it out itself (written for jobs that read, \
                 extended sparse for write-only jobs)"
            ));
        }
        Opt::Flow => {
            let w = parse_signed(v)?;
            if w < 0 {
                return Err(format!(
                    "flow={w} is negative: fio 3.33 keeps the jobs' IO counts in the ratio \
                     of their weights, which must be positive"
                ));
            }
            s.flow.weight = w;
        }
        Opt::FlowId => s.flow.id = to_u32(int_in(v, kb, 0, u64::from(u32::MAX))?),
        Opt::FlowWatermark => s.flow.watermark = to_u32(int_in(v, kb, 0, u64::from(u32::MAX))?),
        Opt::FlowSleep => {
            let us = parse_time_us(one(v)?, false)?;
            s.flow.sleep = Duration::from_us(us);
        }
        _ => {}
    }
    Ok(())
}

fn to_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn nonzero(v: u64) -> Option<u64> {
    (v > 0).then_some(v)
}

fn non_empty(v: &str) -> Result<&str, String> {
    if v.is_empty() {
        Err("empty value".into())
    } else {
        Ok(v)
    }
}

fn bool_value(v: &str) -> Result<bool, String> {
    match parse_plain_int(v)? {
        0 => Ok(false),
        1 => Ok(true),
        n => Err(format!("max value out of range: {n} (1 max)")),
    }
}

/// The single piece of a single-valued option (fio would drop the rest).
fn one(v: &str) -> Result<&str, String> {
    if v.trim_start().starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    match pieces(Kind::Int, v).as_slice() {
        [p] => Ok(p),
        _ => Err("this option takes a single value".into()),
    }
}

fn int_in(v: &str, kb: u32, min: u64, max: u64) -> Result<u64, String> {
    let n = parse_count(one(v)?, kb)?;
    if n < min {
        Err(format!("min value out of range: {n} ({min} min)"))
    } else if n > max {
        Err(format!("max value out of range: {n} ({max} max)"))
    } else {
        Ok(n)
    }
}

/// `flow=`: a signed 32-bit weight.
fn parse_signed(v: &str) -> Result<i32, String> {
    let t = v.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let n = parse_count(body, 1024)?;
    let n = i64::try_from(n).map_err(|_| "value out of range".to_string())?;
    let n = if neg { -n } else { n };
    i32::try_from(n).map_err(|_| format!("value out of range: {t}"))
}

/// `startdelay=T` or `T1-T2` (`FIO_OPT_STR_VAL_TIME` with `off2`): seconds
/// by default.
fn time_range(v: &str) -> Result<(Duration, Duration), String> {
    let parts = pieces(Kind::Time, v);
    let us = |p: &str| parse_time_us(p, true).map(Duration::from_us);
    match parts.as_slice() {
        [one] => {
            let d = us(one)?;
            Ok((d, d))
        }
        [lo, hi] => {
            let (lo, hi) = (us(lo)?, us(hi)?);
            Ok((lo.min(hi), lo.max(hi)))
        }
        _ => Err("expected a time or a range LO-HI".into()),
    }
}

/// `filesize=S` or `LO-HI` (`FIO_OPT_STR_VAL` with `off2`, `minval` 1).
fn size_range(v: &str, kb: u32) -> Result<(u64, u64), String> {
    let parts = pieces(Kind::StrVal, v);
    let size = |p: &str| -> Result<u64, String> {
        match parse_count(p, kb)? {
            0 => Err("min value out of range: 0 (1 min)".into()),
            n => Ok(n),
        }
    };
    match parts.as_slice() {
        [one] => {
            let n = size(one)?;
            Ok((n, n))
        }
        [lo, hi] => {
            let (lo, hi) = (size(lo)?, size(hi)?);
            Ok((lo.min(hi), lo.max(hi)))
        }
        _ => Err("expected a size or a range LO-HI".into()),
    }
}

/// `ba=`, `rate_min=`: `R[,W[,T]]`, the last value filling the rest.
fn per_dir_bytes(
    out: &mut blkqos_workload::PerDir<Option<u64>>,
    v: &str,
    kb: u32,
    min: u64,
) -> Result<(), String> {
    if v.trim_start().starts_with('-') || v.contains(",-") {
        return Err("negative values are not allowed".into());
    }
    let parts = pieces(Kind::Ull, v);
    if parts.len() > 3 {
        return Err("at most three values (read,write,trim)".into());
    }
    for (curr, piece) in parts.iter().enumerate() {
        if piece.trim().is_empty() {
            continue;
        }
        let n = parse_count(piece, kb)?;
        if n < min {
            return Err(format!("min value out of range: {n} ({min} min)"));
        }
        for &d in piece_dirs(curr, curr + 1 == parts.len()) {
            out[d] = (n > 0).then_some(n);
        }
    }
    Ok(())
}

pub(crate) use blkqos_workload::spec_ext::split_names;

/// One `A/B:C/D` list of a direction (fio `split_parse_ddir`): `None`
/// for a missing second value.
fn split_entries<T>(
    list: &str,
    first: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<(T, Option<u32>)>, String> {
    let mut out = Vec::new();
    for item in list.split(':').filter(|i| !i.is_empty()) {
        let (a, b) = match item.split_once('/') {
            Some((a, b)) => (a, b),
            None => (item, ""),
        };
        let pct = if b.is_empty() {
            None
        } else {
            let p = parse_plain_int(b)?;
            Some(u32::try_from(p).map_err(|_| format!("percentage `{b}` out of range"))?)
        };
        out.push((first(a)?, pct));
    }
    Ok(out)
}

/// Percentages without a value share what the others leave of 100
/// (`bssplit_ddir`, `zone_split_ddir`).
fn fill_missing(pcts: &mut [Option<u32>]) -> Result<Vec<u32>, String> {
    let given: u32 = pcts.iter().flatten().sum();
    let missing = pcts.iter().filter(|p| p.is_none()).count() as u32;
    if given > 100 {
        return Err(format!("percentages add to more than 100% ({given})"));
    }
    let share = (100 - given).checked_div(missing).unwrap_or(0);
    Ok(pcts.iter().map(|p| p.unwrap_or(share)).collect())
}

/// The `,`-separated lists per direction; one list serves all three,
/// two: read and write (trim takes write's), as `str_split_parse` does.
fn per_dir_lists(v: &str) -> Result<PerDir<&str>, String> {
    let lists: Vec<&str> = v.split(',').collect();
    let dirs = |read, write, trim| PerDir { read, write, trim };
    match lists.as_slice() {
        [a] => Ok(PerDir::all(a)),
        [a, b] => Ok(dirs(*a, *b, *b)),
        [a, b, c] => Ok(dirs(*a, *b, *c)),
        _ => Err("at most three lists (read,write,trim)".into()),
    }
}

/// `bssplit=BS/PCT:BS/PCT,...` (`str_bssplit_cb`, `bssplit_ddir`): sorted
/// by share, smallest first, as fio sorts them for the lookup (`bs_cmp`
/// compares `perc` ascending; glibc's merge sort keeps equal shares in
/// the order given).
fn parse_bssplit(v: &str, kb: u32) -> Result<PerDir<Vec<BsSplit>>, String> {
    let lists = per_dir_lists(v.trim())?;
    let mut out: PerDir<Vec<BsSplit>> = Default::default();
    for (d, list) in lists.iter() {
        let entries = split_entries(list, |b| {
            let bs = parse_count(b, kb)?;
            if bs == 0 {
                return Err("a block size of 0".into());
            }
            Ok(bs)
        })?;
        if entries.is_empty() {
            return Err("no block size given".into());
        }
        let mut pcts: Vec<Option<u32>> = entries.iter().map(|e| e.1).collect();
        if pcts.len() == 1 && pcts[0].is_none() {
            pcts[0] = Some(100);
        }
        let pcts = fill_missing(&mut pcts)?;
        let mut split: Vec<BsSplit> = entries
            .iter()
            .zip(pcts)
            .map(|((bs, _), pct)| BsSplit { bs: *bs, pct })
            .collect();
        split.sort_by_key(|e| e.pct);
        out[d] = split;
    }
    Ok(out)
}

/// `random_distribution=` (`str_random_distribution_cb`).
fn parse_random_dist(v: &str, kb: u32) -> Result<RandomDist, String> {
    let (kind, postfix) = match v.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (v, None),
    };
    let float = |def: f64| -> Result<f64, String> {
        match postfix {
            Some(p) => parse_float(p).map_err(|_| "random postfix parsing failed".to_string()),
            None => Ok(def),
        }
    };
    match kind {
        "random" => Ok(RandomDist::Random),
        "zipf" => {
            let theta = float(1.1)?;
            if theta == 1.0 || theta <= 0.0 {
                return Err("zipf theta must be > 0 and different than 1.0".into());
            }
            Ok(RandomDist::Zipf(theta))
        }
        "pareto" => {
            let h = float(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return Err("pareto input out of range (0 < input < 1.0)".into());
            }
            Ok(RandomDist::Pareto(h))
        }
        "normal" | "gauss" => {
            let dev = float(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return Err("normal deviation out of range (0 <= input < 100.0)".into());
            }
            Ok(RandomDist::Normal(dev))
        }
        "zoned" | "zoned_abs" => {
            parse_zones(postfix.unwrap_or(""), kind == "zoned_abs", kb).map(RandomDist::Zoned)
        }
        _ => Err(format!(
            "invalid value `{v}` (valid values: random, zipf, pareto, normal, gauss, zoned, zoned_abs)"
        )),
    }
}

/// `zoned:A/S:...` / `zoned_abs:A/BYTES:...` (`zone_split_ddir`). blkqos
/// takes one list for every direction: a per-direction list (`,`) must
/// give the same zones to each direction the job does.
fn parse_zones(v: &str, absolute: bool, kb: u32) -> Result<Vec<Zone>, String> {
    let lists = per_dir_lists(v.trim())?;
    if lists.values().any(|l| *l != lists.read) {
        return Err("different zones per direction are not supported (give one list)".into());
    }
    let entries = split_entries(lists.read, |a| {
        let p = parse_plain_int(a)?;
        u32::try_from(p).map_err(|_| format!("access percentage `{a}` out of range"))
    })?;
    if entries.is_empty() {
        return Err("no zones given".into());
    }
    let access: u32 = entries.iter().map(|e| e.0).sum();
    if access != 100 {
        return Err(format!(
            "access percentage don't add up to 100 for zoned random distribution (got={access})"
        ));
    }
    if absolute {
        return zones_abs(v, kb);
    }
    let mut sizes: Vec<Option<u32>> = entries.iter().map(|e| e.1).collect();
    if sizes.len() == 1 && sizes[0].is_none() {
        sizes[0] = Some(100);
    }
    let sizes = fill_missing(&mut sizes)?;
    Ok(entries
        .iter()
        .zip(sizes)
        .map(|((a, _), s)| Zone {
            access_pct: *a,
            size: ZoneSize::Percent(s),
        })
        .collect())
}

/// `zoned_abs`: each zone's size in bytes (required).
fn zones_abs(v: &str, kb: u32) -> Result<Vec<Zone>, String> {
    let list = per_dir_lists(v.trim())?.read;
    let mut out = Vec::new();
    for item in list.split(':').filter(|i| !i.is_empty()) {
        let (a, b) = item
            .split_once('/')
            .ok_or_else(|| format!("missing '/' in zone `{item}`"))?;
        let access = u32::try_from(parse_plain_int(a)?).map_err(|_| "out of range".to_string())?;
        let bytes = parse_count(b, kb)?;
        out.push(Zone {
            access_pct: access,
            size: ZoneSize::Bytes(bytes),
        });
    }
    Ok(out)
}

/// `file_service_type=random|roundrobin|sequential[:N]` (`str_fst_cb`);
/// zipf/pareto/normal file choice is refused.
fn parse_file_service(v: &str) -> Result<(FileService, u32), String> {
    let (kind, postfix) = match v.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (v, None),
    };
    let service = match kind {
        "random" => FileService::Random,
        "roundrobin" => FileService::RoundRobin,
        "sequential" => FileService::Sequential,
        "zipf" | "pareto" | "normal" | "gauss" => {
            return Err(format!(
                "unsupported file_service_type `{kind}` (blkqos implements random, roundrobin and sequential)"
            ))
        }
        _ => {
            return Err(format!(
                "invalid value `{v}` (valid values: random, roundrobin, sequential, zipf, pareto, normal, gauss)"
            ))
        }
    };
    let batch = match postfix {
        Some(p) => to_u32(parse_plain_int(p)?).max(1),
        None => 1,
    };
    Ok((service, batch))
}

/// `fallocate=` (`posval`: none, native, posix, keep, truncate, 0, 1).
fn parse_fallocate(v: &str) -> Result<Fallocate, String> {
    Ok(match v {
        "none" | "0" => Fallocate::None,
        "posix" | "1" => Fallocate::Posix,
        "keep" => Fallocate::Keep,
        "native" => Fallocate::Native,
        "truncate" => Fallocate::Truncate,
        _ => {
            return Err(format!(
                "invalid value `{v}` (valid values: none, native, posix, keep, truncate, 0, 1)"
            ))
        }
    })
}

/// These options of a job back as fio options (`to_fio_args`): start,
/// loops, splits, distributions and rate checks (`d`: fio's defaults).
pub(crate) fn render(j: &JobSpec, d: &JobSpec, push: &mut impl FnMut(&str, String)) {
    if j.start_delay != d.start_delay {
        let (lo, hi) = j.start_delay;
        push("startdelay", format!("{}us-{}us", lo.as_us(), hi.as_us()));
    }
    if j.thread {
        push("thread", "1".into());
    }
    if j.loops != 1 {
        push("loops", j.loops.to_string());
    }
    if j.number_ios != 0 {
        push("number_ios", j.number_ios.to_string());
    }
    if let Some(n) = j.io_size {
        push("io_size", n.to_string());
    }
    if let Some(split) = &j.bssplit {
        let list = |l: &[BsSplit]| {
            l.iter()
                .map(|e| format!("{}/{}", e.bs, e.pct))
                .collect::<Vec<_>>()
                .join(":")
        };
        push(
            "bssplit",
            format!(
                "{},{},{}",
                list(&split.read),
                list(&split.write),
                list(&split.trim)
            ),
        );
    }
    if j.blockalign != d.blockalign {
        push(
            "ba",
            super::options::per_dir_text(&j.blockalign, |v| v.unwrap_or(0).to_string()),
        );
    }
    if j.random_dist != d.random_dist {
        push("random_distribution", random_dist(&j.random_dist));
    }
    if j.rate_min != d.rate_min {
        push(
            "rate_min",
            super::options::per_dir_text(&j.rate_min, |v| v.unwrap_or(0).to_string()),
        );
    }
    if j.rate_cycle != d.rate_cycle {
        push("rate_cycle", j.rate_cycle.as_ms().to_string());
    }
}

/// The options of several files and flow control back as fio options.
pub(crate) fn render_files(j: &JobSpec, d: &JobSpec, push: &mut impl FnMut(&str, String)) {
    let (f, df) = (&j.files, &d.files);
    if !f.directory.is_empty() {
        let dirs: Vec<String> = f.directory.iter().map(|s| s.replace(':', "\\:")).collect();
        push("directory", dirs.join(":"));
    }
    if f.nrfiles != df.nrfiles {
        push("nrfiles", f.nrfiles.to_string());
    }
    if let Some((lo, hi)) = f.filesize {
        push("filesize", format!("{lo}-{hi}"));
    }
    if f.filename_format != df.filename_format {
        push("filename_format", f.filename_format.clone());
    }
    if f.openfiles != df.openfiles {
        push("openfiles", f.openfiles.to_string());
    }
    if (f.service, f.service_batch) != (df.service, df.service_batch) {
        let kind = match f.service {
            FileService::Random => "random",
            FileService::RoundRobin => "roundrobin",
            FileService::Sequential => "sequential",
        };
        push("file_service_type", format!("{kind}:{}", f.service_batch));
    }
    if f.create_on_open {
        push("create_on_open", "1".into());
    }
    if f.fallocate != df.fallocate {
        let mode = match f.fallocate {
            Fallocate::None => "none",
            Fallocate::Posix => "posix",
            Fallocate::Keep => "keep",
            Fallocate::Native => "native",
            Fallocate::Truncate => "truncate",
        };
        push("fallocate", mode.into());
    }
    if j.flow != d.flow {
        push("flow", j.flow.weight.to_string());
        push("flow_id", j.flow.id.to_string());
        push("flow_watermark", j.flow.watermark.to_string());
        push("flow_sleep", j.flow.sleep.as_us().to_string());
    }
}

fn random_dist(r: &RandomDist) -> String {
    match r {
        RandomDist::Random => "random".into(),
        RandomDist::Zipf(t) => format!("zipf:{t}"),
        RandomDist::Pareto(h) => format!("pareto:{h}"),
        RandomDist::Normal(dev) => format!("normal:{dev}"),
        RandomDist::Zoned(zones) => {
            let abs = zones.iter().any(|z| matches!(z.size, ZoneSize::Bytes(_)));
            let list: Vec<String> = zones
                .iter()
                .map(|z| match z.size {
                    ZoneSize::Percent(p) => format!("{}/{p}", z.access_pct),
                    ZoneSize::Bytes(b) => format!("{}/{b}", z.access_pct),
                })
                .collect();
            format!(
                "{}:{}",
                if abs { "zoned_abs" } else { "zoned" },
                list.join(":")
            )
        }
    }
}
