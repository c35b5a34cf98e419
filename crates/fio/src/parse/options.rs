//! The option table: the fio 3.33 options blkqos implements, with fio's
//! option types (`parse.h: enum fio_opt_type`), aliases and priorities, and
//! the lookup that tells *unsupported* fio options from *unknown* names.

use super::known::{CORE_OPTIONS, ENGINE_OPTIONS};
use blkqos_workload::Ddir;

/// fio's option types, for the ones blkqos uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `FIO_OPT_STR`: one of a set of strings (or a callback); a value is
    /// required in practice.
    Str,
    /// `FIO_OPT_STR_STORE`: a non-empty string.
    StrStore,
    /// `FIO_OPT_INT`: 32-bit integer, size suffixes allowed.
    Int,
    /// `FIO_OPT_ULL`: 64-bit integer, size suffixes allowed.
    Ull,
    /// `FIO_OPT_STR_VAL` / `FIO_OPT_STR_VAL_ZONE`: 64-bit size.
    StrVal,
    /// `FIO_OPT_STR_VAL_TIME`.
    Time,
    /// `FIO_OPT_RANGE`: `lo-hi` or `lo:hi`, per direction.
    Range,
    /// `FIO_OPT_BOOL`: `0` or `1`, value required.
    Bool,
    /// `FIO_OPT_STR_SET`: bare flag, or an integer.
    StrSet,
    /// `FIO_OPT_FLOAT_LIST`: `a:b:c`.
    FloatList,
}

/// The options blkqos implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opt {
    Name,
    Description,
    Filename,
    Size,
    Offset,
    Rw,
    RwMixRead,
    RwMixWrite,
    Bs,
    BsRange,
    Direct,
    Buffered,
    IoEngine,
    IoDepth,
    IoDepthBatch,
    NumJobs,
    Runtime,
    TimeBased,
    RampTime,
    Rate,
    RateIops,
    RateProcess,
    RateIgnoreThinktime,
    Thinktime,
    ThinktimeSpin,
    ThinktimeBlocks,
    ThinktimeBlocksType,
    NoRandomMap,
    RandRepeat,
    RandSeed,
    GroupReporting,
    UnifiedRwReporting,
    PercentileList,
    ClatPercentiles,
    LatPercentiles,
    SlatPercentiles,
    Cgroup,
    IgnoreError,
    ContinueOnError,
    BwAvgTime,
    IopsAvgTime,
    KbBase,
    Fsync,
    Fdatasync,
    EndFsync,
    Stonewall,
    NewGroup,
    Thread,
    ProfileThreads,
    StartDelay,
    Loops,
    NumberIos,
    IoSize,
    BsSplit,
    BlockAlign,
    RandomDistribution,
    GtodReduce,
    Directory,
    NrFiles,
    FileSize,
    FilenameFormat,
    OpenFiles,
    FileServiceType,
    CreateOnOpen,
    Fallocate,
    Flow,
    FlowId,
    FlowWatermark,
    FlowSleep,
    RateMin,
    RateCycle,
    WriteBwLog,
    WriteIopsLog,
    WriteLatLog,
    LogAvgMsec,
    LogMaxValue,
    LogOffset,
    PerJobLogs,
    WriteHistLog,
    LogHistMsec,
    LogHistCoarseness,
    Unlink,
    /// `sync=` (fio's `sync_io`; [`super::engine_mapped`]).
    Sync,
    /// `invalidate=` ([`super::engine_mapped`]).
    Invalidate,
    DisableLat,
    DisableClat,
    DisableSlat,
    /// An engine-private option ([`ENGINE_DEFS`]).
    EngineOption,
    // verification and buffer contents (apply_verify.rs)
    Verify,
    DoVerify,
    VerifyOnly,
    VerifyBacklog,
    VerifyBacklogBatch,
    VerifyFatal,
    VerifyDump,
    VerifyAsync,
    VerifyPattern,
    VerifyInterval,
    VerifyOffset,
    BufferPattern,
    ZeroBuffers,
    RefillBuffers,
    ScrambleBuffers,
    BufferCompressPercentage,
    BufferCompressChunk,
    DedupePercentage,
    DedupeMode,
    DedupeWorkingSetPercentage,
    DedupeGlobal,
    FillDevice,
    CreateSerialize,
    ErrorDump,
    OffsetIncrement,
    WaitFor,
    SteadyState,
    SteadyStateDuration,
    SteadyStateRampTime,
    ExitAll,
    ExitWhat,
    ExitAllOnError,
    ZoneMode,
    ZoneSize,
    ZoneRange,
    ZoneSkip,
    ZoneCapacity,
    MaxOpenZones,
    JobMaxOpenZones,
    IgnoreZoneLimits,
    ZoneResetThreshold,
    ZoneResetFrequency,
    ReadBeyondWp,
    IoSubmitMode,
    RandomGenerator,
    LatencyTarget,
    LatencyWindow,
    LatencyPercentile,
    LatencyRun,
    IoDepthLow,
    // priorities and CPU placement (apply_prio.rs)
    Prio,
    PrioClass,
    LogPrio,
    Nice,
    CpusAllowed,
    CpuMask,
    CpusAllowedPolicy,
    NumaCpuNodes,
    NumaMemPolicy,
}

/// One supported option.
#[derive(Debug)]
pub(crate) struct OptDef {
    /// Canonical name (what `"job options"` shows).
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub opt: Opt,
    /// fio sorts a section's options by descending priority before parsing
    /// them (`parse.c: sort_options`).
    pub prio: i32,
}

const fn def(name: &'static str, kind: Kind, opt: Opt) -> OptDef {
    OptDef {
        name,
        alias: None,
        kind,
        opt,
        prio: 0,
    }
}

const fn aliased(name: &'static str, alias: &'static str, kind: Kind, opt: Opt) -> OptDef {
    OptDef {
        alias: Some(alias),
        ..def(name, kind, opt)
    }
}

/// Types, aliases and priorities as in fio 3.33 `options.c`.
pub(crate) static OPTIONS: &[OptDef] = &[
    def("name", Kind::StrStore, Opt::Name),
    def("description", Kind::StrStore, Opt::Description),
    def("prio", Kind::Int, Opt::Prio),
    def("prioclass", Kind::Int, Opt::PrioClass),
    def("log_prio", Kind::Bool, Opt::LogPrio),
    def("nice", Kind::Int, Opt::Nice),
    def("cpus_allowed", Kind::Str, Opt::CpusAllowed),
    def("cpumask", Kind::Int, Opt::CpuMask),
    OptDef {
        // fio: FIO_OPT_C_GENERAL prio 1 (before cpus_allowed)
        prio: 1,
        ..def("cpus_allowed_policy", Kind::Str, Opt::CpusAllowedPolicy)
    },
    def("numa_cpu_nodes", Kind::Str, Opt::NumaCpuNodes),
    def("numa_mem_policy", Kind::Str, Opt::NumaMemPolicy),
    OptDef {
        prio: -1,
        ..def("filename", Kind::StrStore, Opt::Filename)
    },
    def("size", Kind::StrVal, Opt::Size),
    aliased("offset", "fileoffset", Kind::StrVal, Opt::Offset),
    aliased("rw", "readwrite", Kind::Str, Opt::Rw),
    def("rwmixread", Kind::Int, Opt::RwMixRead),
    def("rwmixwrite", Kind::Int, Opt::RwMixWrite),
    aliased("bs", "blocksize", Kind::Ull, Opt::Bs),
    aliased("bsrange", "blocksize_range", Kind::Range, Opt::BsRange),
    def("direct", Kind::Bool, Opt::Direct),
    def("buffered", Kind::Bool, Opt::Buffered),
    def("ioengine", Kind::StrStore, Opt::IoEngine),
    def("iodepth", Kind::Int, Opt::IoDepth),
    aliased(
        "iodepth_batch",
        "iodepth_batch_submit",
        Kind::Int,
        Opt::IoDepthBatch,
    ),
    def("numjobs", Kind::Int, Opt::NumJobs),
    aliased("runtime", "timeout", Kind::Time, Opt::Runtime),
    def("time_based", Kind::StrSet, Opt::TimeBased),
    def("ramp_time", Kind::Time, Opt::RampTime),
    def("rate", Kind::Ull, Opt::Rate),
    def("rate_iops", Kind::Int, Opt::RateIops),
    def("rate_process", Kind::Str, Opt::RateProcess),
    def(
        "rate_ignore_thinktime",
        Kind::Bool,
        Opt::RateIgnoreThinktime,
    ),
    def("thinktime", Kind::Int, Opt::Thinktime),
    def("thinktime_spin", Kind::Int, Opt::ThinktimeSpin),
    def("thinktime_blocks", Kind::Int, Opt::ThinktimeBlocks),
    def("thinktime_blocks_type", Kind::Str, Opt::ThinktimeBlocksType),
    def("norandommap", Kind::StrSet, Opt::NoRandomMap),
    def("randrepeat", Kind::Bool, Opt::RandRepeat),
    def("randseed", Kind::StrVal, Opt::RandSeed),
    def("group_reporting", Kind::StrSet, Opt::GroupReporting),
    def("unified_rw_reporting", Kind::Str, Opt::UnifiedRwReporting),
    def("percentile_list", Kind::FloatList, Opt::PercentileList),
    def("clat_percentiles", Kind::Bool, Opt::ClatPercentiles),
    def("lat_percentiles", Kind::Bool, Opt::LatPercentiles),
    def("slat_percentiles", Kind::Bool, Opt::SlatPercentiles),
    def("cgroup", Kind::StrStore, Opt::Cgroup),
    def("ignore_error", Kind::Str, Opt::IgnoreError),
    def("continue_on_error", Kind::Str, Opt::ContinueOnError),
    def("bwavgtime", Kind::Int, Opt::BwAvgTime),
    def("iopsavgtime", Kind::Int, Opt::IopsAvgTime),
    OptDef {
        prio: 1,
        ..def("kb_base", Kind::Str, Opt::KbBase)
    },
    def("fsync", Kind::Int, Opt::Fsync),
    def("fdatasync", Kind::Int, Opt::Fdatasync),
    def("end_fsync", Kind::Bool, Opt::EndFsync),
    aliased(
        "stonewall",
        "wait_for_previous",
        Kind::StrSet,
        Opt::Stonewall,
    ),
    def("new_group", Kind::StrSet, Opt::NewGroup),
    def("thread", Kind::StrSet, Opt::Thread),
    def("startdelay", Kind::Time, Opt::StartDelay),
    def("loops", Kind::Int, Opt::Loops),
    def("number_ios", Kind::StrVal, Opt::NumberIos),
    aliased("io_size", "io_limit", Kind::StrVal, Opt::IoSize),
    def("bssplit", Kind::Str, Opt::BsSplit),
    aliased("ba", "blockalign", Kind::Ull, Opt::BlockAlign),
    def("random_distribution", Kind::Str, Opt::RandomDistribution),
    def("gtod_reduce", Kind::Bool, Opt::GtodReduce),
    def("directory", Kind::StrStore, Opt::Directory),
    aliased("nrfiles", "nr_files", Kind::Int, Opt::NrFiles),
    def("filesize", Kind::StrVal, Opt::FileSize),
    OptDef {
        prio: -1,
        ..def("filename_format", Kind::StrStore, Opt::FilenameFormat)
    },
    def("openfiles", Kind::Int, Opt::OpenFiles),
    def("file_service_type", Kind::Str, Opt::FileServiceType),
    def("create_on_open", Kind::Bool, Opt::CreateOnOpen),
    def("fallocate", Kind::Str, Opt::Fallocate),
    def("flow", Kind::Int, Opt::Flow),
    def("flow_id", Kind::Int, Opt::FlowId),
    def("flow_watermark", Kind::Int, Opt::FlowWatermark),
    def("flow_sleep", Kind::Int, Opt::FlowSleep),
    aliased("rate_min", "ratemin", Kind::Ull, Opt::RateMin),
    aliased("rate_cycle", "ratecycle", Kind::Int, Opt::RateCycle),
    def("write_bw_log", Kind::StrStore, Opt::WriteBwLog),
    def("write_iops_log", Kind::StrStore, Opt::WriteIopsLog),
    def("write_lat_log", Kind::StrStore, Opt::WriteLatLog),
    def("log_avg_msec", Kind::Int, Opt::LogAvgMsec),
    def("log_max_value", Kind::Bool, Opt::LogMaxValue),
    def("log_offset", Kind::Bool, Opt::LogOffset),
    def("per_job_logs", Kind::Bool, Opt::PerJobLogs),
    def("write_hist_log", Kind::StrStore, Opt::WriteHistLog),
    def("log_hist_msec", Kind::Int, Opt::LogHistMsec),
    def("log_hist_coarseness", Kind::Int, Opt::LogHistCoarseness),
    def("unlink", Kind::Bool, Opt::Unlink),
    def("sync", Kind::Str, Opt::Sync),
    def("invalidate", Kind::Bool, Opt::Invalidate),
    def("disable_lat", Kind::Bool, Opt::DisableLat),
    def("disable_clat", Kind::Bool, Opt::DisableClat),
    def("disable_slat", Kind::Bool, Opt::DisableSlat),
    def("verify", Kind::Str, Opt::Verify),
    def("do_verify", Kind::Bool, Opt::DoVerify),
    def("verify_only", Kind::StrSet, Opt::VerifyOnly),
    def("verify_backlog", Kind::StrVal, Opt::VerifyBacklog),
    def("verify_backlog_batch", Kind::Int, Opt::VerifyBacklogBatch),
    def("verify_fatal", Kind::Bool, Opt::VerifyFatal),
    def("verify_dump", Kind::Bool, Opt::VerifyDump),
    def("verify_async", Kind::Int, Opt::VerifyAsync),
    def("verify_pattern", Kind::Str, Opt::VerifyPattern),
    def("verify_interval", Kind::Int, Opt::VerifyInterval),
    def("verify_offset", Kind::Int, Opt::VerifyOffset),
    def("buffer_pattern", Kind::Str, Opt::BufferPattern),
    def("zero_buffers", Kind::StrSet, Opt::ZeroBuffers),
    def("refill_buffers", Kind::StrSet, Opt::RefillBuffers),
    def("scramble_buffers", Kind::Bool, Opt::ScrambleBuffers),
    def(
        "buffer_compress_percentage",
        Kind::Int,
        Opt::BufferCompressPercentage,
    ),
    def("buffer_compress_chunk", Kind::Int, Opt::BufferCompressChunk),
    def("dedupe_percentage", Kind::Int, Opt::DedupePercentage),
    def("dedupe_mode", Kind::Str, Opt::DedupeMode),
    def(
        "dedupe_working_set_percentage",
        Kind::Int,
        Opt::DedupeWorkingSetPercentage,
    ),
    def("dedupe_global", Kind::Bool, Opt::DedupeGlobal),
    aliased("fill_device", "fill_fs", Kind::Bool, Opt::FillDevice),
    def("create_serialize", Kind::Bool, Opt::CreateSerialize),
    def("error_dump", Kind::Bool, Opt::ErrorDump),
    def("offset_increment", Kind::StrVal, Opt::OffsetIncrement),
    def("wait_for", Kind::StrStore, Opt::WaitFor),
    aliased("steadystate", "ss", Kind::Str, Opt::SteadyState),
    aliased(
        "steadystate_duration",
        "ss_dur",
        Kind::Time,
        Opt::SteadyStateDuration,
    ),
    aliased(
        "steadystate_ramp_time",
        "ss_ramp",
        Kind::Time,
        Opt::SteadyStateRampTime,
    ),
    def("exitall", Kind::StrSet, Opt::ExitAll),
    def("exit_what", Kind::Str, Opt::ExitWhat),
    def("exitall_on_error", Kind::StrSet, Opt::ExitAllOnError),
    def("zonemode", Kind::Str, Opt::ZoneMode),
    def("zonesize", Kind::StrVal, Opt::ZoneSize),
    def("zonerange", Kind::StrVal, Opt::ZoneRange),
    def("zoneskip", Kind::StrVal, Opt::ZoneSkip),
    def("zonecapacity", Kind::StrVal, Opt::ZoneCapacity),
    def("max_open_zones", Kind::Int, Opt::MaxOpenZones),
    def("job_max_open_zones", Kind::Int, Opt::JobMaxOpenZones),
    def("ignore_zone_limits", Kind::Bool, Opt::IgnoreZoneLimits),
    def(
        "zone_reset_threshold",
        Kind::FloatList,
        Opt::ZoneResetThreshold,
    ),
    def(
        "zone_reset_frequency",
        Kind::FloatList,
        Opt::ZoneResetFrequency,
    ),
    def("read_beyond_wp", Kind::Bool, Opt::ReadBeyondWp),
    def("io_submit_mode", Kind::Str, Opt::IoSubmitMode),
    def("random_generator", Kind::Str, Opt::RandomGenerator),
    def("latency_target", Kind::Time, Opt::LatencyTarget),
    def("latency_window", Kind::Time, Opt::LatencyWindow),
    def(
        "latency_percentile",
        Kind::FloatList,
        Opt::LatencyPercentile,
    ),
    def("latency_run", Kind::Bool, Opt::LatencyRun),
    def("iodepth_low", Kind::Int, Opt::IoDepthLow),
];

const fn engine_def(name: &'static str, kind: Kind) -> OptDef {
    OptDef {
        name,
        alias: None,
        kind,
        opt: Opt::EngineOption,
        // fio parses a section's engine options after all of its core
        // options (`fio_options_parse`, then the engine's own table), so
        // they come last in its option list
        prio: -2,
    }
}

/// The engine options blkqos implements (applied in `engine_opts`), with fio's types.
pub(crate) static ENGINE_DEFS: &[OptDef] = &[
    engine_def("arguments", Kind::Str),
    engine_def("cmd_type", Kind::Str),
    engine_def("cmdprio", Kind::Int),
    engine_def("cmdprio_bssplit", Kind::Str),
    engine_def("cmdprio_class", Kind::Int),
    engine_def("cmdprio_percentage", Kind::Int),
    engine_def("cpuchunks", Kind::Int),
    engine_def("cpuload", Kind::Int),
    engine_def("cpumode", Kind::Str),
    engine_def("donorname", Kind::Str),
    engine_def("exit_on_io_done", Kind::Bool),
    engine_def("fixedbufs", Kind::StrSet),
    engine_def("force_async", Kind::Int),
    engine_def("grace_time", Kind::Int),
    engine_def("hipri", Kind::StrSet),
    engine_def("inplace", Kind::Int),
    engine_def("nonvectored", Kind::Int),
    engine_def("nowait", Kind::Bool),
    engine_def("program", Kind::Str),
    engine_def("registerfiles", Kind::StrSet),
    engine_def("sg_write_mode", Kind::Str),
    engine_def("sqthread_poll", Kind::StrSet),
    engine_def("sqthread_poll_cpu", Kind::Int),
    engine_def("stat_type", Kind::Str),
    engine_def("std_redirect", Kind::Bool),
    engine_def("uncached", Kind::Int),
];

/// Options of fio's profiles (`--profile=`): fio accepts them in any job
/// and, without their profile, they change nothing.
pub(crate) static PROFILE_OPTIONS: &[OptDef] = &[def("threads", Kind::Int, Opt::ProfileThreads)];

/// What an option name refers to.
#[derive(Debug)]
pub(crate) enum Lookup {
    Supported(&'static OptDef),
    /// A fio 3.33 option (core, engine or profile) blkqos does not
    /// implement; carries the canonical name.
    Unsupported(&'static str),
    Unknown,
}

/// Finds an option by name or alias; names are case-sensitive (`o_match`).
pub(crate) fn lookup(name: &str) -> Lookup {
    if let Some(d) = OPTIONS
        .iter()
        .chain(PROFILE_OPTIONS)
        .chain(ENGINE_DEFS)
        .find(|d| d.name == name || d.alias == Some(name))
    {
        return Lookup::Supported(d);
    }
    if let Some((canonical, _)) = CORE_OPTIONS
        .iter()
        .find(|(n, a)| *n == name || (!a.is_empty() && *a == name))
    {
        return Lookup::Unsupported(canonical);
    }
    match ENGINE_OPTIONS.binary_search(&name) {
        Ok(i) => Lookup::Unsupported(ENGINE_OPTIONS[i]),
        Err(_) => Lookup::Unknown,
    }
}

/// The option name closest to a misspelt `name` (fio's own options first,
/// then `extra`, e.g. the caller's flags): within two edits (Damerau-
/// Levenshtein) and less than half the name, as a "did you mean".
pub(crate) fn suggest(name: &str, extra: &[&str]) -> Option<String> {
    let names = OPTIONS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.alias))
        .chain(CORE_OPTIONS.iter().map(|(n, _)| *n))
        .chain(ENGINE_OPTIONS.iter().copied())
        .chain(
            extra
                .iter()
                .map(|f| f.trim_start_matches('-').trim_end_matches('?')),
        );
    let mut best: Option<(usize, &str)> = None;
    for cand in names {
        let d = strsim::damerau_levenshtein(name, cand);
        if d <= 2 && d * 2 < name.len() && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, n)| n.to_string())
}

/// fio's sort priority of an option name (unknown names: 0).
pub(crate) fn prio(name: &str) -> i32 {
    match lookup(name) {
        Lookup::Supported(d) => d.prio,
        Lookup::Unsupported("lockfile" | "unit_base") => 1,
        _ => 0,
    }
}

/// Splits a value into the pieces fio hands to `__handle_option` one by one
/// (`parse.c: handle_option`):
/// * strings (`Str`, `StrStore`) are one piece;
/// * float lists split at every `:`;
/// * ranges split at `,` only;
/// * everything else splits, at each step, at the first `,`, or if there is
///   none at the first `:`, or if there is none at the first `-` (so
///   `bs=4k:8k` means `bs=4k,8k`).
///
/// An empty piece (`rate=,1m`, a trailing `,`) keeps the default in fio.
pub(crate) fn pieces(kind: Kind, value: &str) -> Vec<&str> {
    match kind {
        Kind::Str | Kind::StrStore => vec![value],
        Kind::FloatList => value.split(':').collect(),
        Kind::Range => value.split(',').collect(),
        _ => {
            let mut out = Vec::new();
            let mut rest = value;
            loop {
                let cut = rest
                    .find(',')
                    .or_else(|| rest.find(':'))
                    .or_else(|| rest.find('-'));
                match cut {
                    Some(i) => {
                        out.push(&rest[..i]);
                        rest = &rest[i + 1..];
                    }
                    None => {
                        out.push(rest);
                        return out;
                    }
                }
            }
        }
    }
}

/// The directions piece `curr` of a per-direction value sets (fio
/// `__handle_option`: each piece its own direction, the last piece the
/// rest too): `bs=4k,8k` is read 4k, write and trim 8k.
pub(crate) fn piece_dirs(curr: usize, last: bool) -> &'static [Ddir] {
    let rest = &Ddir::ALL[curr.min(Ddir::ALL.len())..];
    if last {
        rest
    } else {
        &rest[..rest.len().min(1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_piece_sets_the_remaining_directions() {
        assert_eq!(piece_dirs(0, true), Ddir::ALL);
        assert_eq!(piece_dirs(0, false), [Ddir::Read]);
        assert_eq!(piece_dirs(1, false), [Ddir::Write]);
        assert_eq!(piece_dirs(1, true), [Ddir::Write, Ddir::Trim]);
        assert_eq!(piece_dirs(2, true), [Ddir::Trim]);
        assert!(piece_dirs(3, true).is_empty());
    }

    #[test]
    fn known_tables_sorted() {
        assert!(CORE_OPTIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(ENGINE_OPTIONS.windows(2).all(|w| w[0] < w[1]));
        // Every supported option is a real fio option.
        for d in OPTIONS {
            assert!(
                CORE_OPTIONS
                    .iter()
                    .any(|(n, a)| *n == d.name && d.alias.unwrap_or("") == *a),
                "{} not in fio's table with that alias",
                d.name
            );
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("iodpeth", &[]).as_deref(), Some("iodepth"));
        assert_eq!(suggest("runtim", &[]).as_deref(), Some("runtime"));
        assert_eq!(suggest("directt", &[]).as_deref(), Some("direct"));
        assert_eq!(suggest("startdelya", &[]).as_deref(), Some("startdelay"));
        assert_eq!(suggest("io-mx", &["io-max"]).as_deref(), Some("io-max"));
        assert_eq!(suggest("xyzzy", &[]), None);
        assert_eq!(suggest("bq", &[]), None, "too short to guess");
    }

    #[test]
    fn lookup_kinds() {
        assert!(matches!(lookup("readwrite"), Lookup::Supported(d) if d.name == "rw"));
        assert!(matches!(lookup("blocksize"), Lookup::Supported(d) if d.name == "bs"));
        assert!(matches!(lookup("timeout"), Lookup::Supported(d) if d.name == "runtime"));
        assert!(
            matches!(lookup("wait_for_previous"), Lookup::Supported(d) if d.name == "stonewall")
        );
        assert!(matches!(
            lookup("startdelay"),
            Lookup::Supported(d) if d.name == "startdelay"
        ));
        assert!(
            matches!(lookup("iodepth_batch_submit"), Lookup::Supported(d) if d.name == "iodepth_batch")
        );
        assert!(matches!(
            lookup("iodepth_batch_complete"),
            Lookup::Unsupported("iodepth_batch_complete_min")
        ));
        assert!(
            matches!(lookup("ss_dur"), Lookup::Supported(d) if d.name == "steadystate_duration")
        );
        assert!(matches!(lookup("hipri"), Lookup::Supported(d) if d.name == "hipri"));
        assert!(matches!(lookup("readfua"), Lookup::Unsupported("readfua")));
        assert!(matches!(lookup("ratemin"), Lookup::Supported(d) if d.name == "rate_min"));
        assert_eq!(prio("filename_format"), -1);
        assert!(matches!(lookup("BS"), Lookup::Unknown));
        assert!(matches!(lookup("bogus"), Lookup::Unknown));
        assert_eq!(prio("kb_base"), 1);
        assert_eq!(prio("filename"), -1);
        assert_eq!(prio("bs"), 0);
    }

    #[test]
    fn value_pieces() {
        assert_eq!(pieces(Kind::Ull, "4k"), ["4k"]);
        assert_eq!(pieces(Kind::Ull, "4k,8k"), ["4k", "8k"]);
        assert_eq!(pieces(Kind::Ull, "4k,8k:16k"), ["4k", "8k", "16k"]);
        assert_eq!(pieces(Kind::Ull, "4k-8k"), ["4k", "8k"]);
        assert_eq!(pieces(Kind::Ull, "500k,"), ["500k", ""]);
        assert_eq!(pieces(Kind::Ull, ",500k"), ["", "500k"]);
        assert_eq!(pieces(Kind::Int, "-1"), ["", "1"]);
        assert_eq!(pieces(Kind::Range, "1k-4k,8k:16k"), ["1k-4k", "8k:16k"]);
        assert_eq!(pieces(Kind::FloatList, "1:5:99.9"), ["1", "5", "99.9"]);
        assert_eq!(pieces(Kind::StrStore, "a:b,c-d"), ["a:b,c-d"]);
    }
}
