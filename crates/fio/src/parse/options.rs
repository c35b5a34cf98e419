//! What an option is: fio's option types (`parse.h: enum fio_opt_type`),
//! the [`OptDef`] each family's table lists (name, alias, type, priority,
//! the family's apply function), the registry of families, and the lookup
//! that tells *unsupported* fio options from *unknown* names.

use super::known::{CORE_OPTIONS, ENGINE_OPTIONS};
use super::state::JobState;
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
    /// An engine-private option ([`super::engine_opts::DEFS`]).
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

/// How an option's value is applied to the job being parsed: the option's
/// family's function (an error is a message; the caller adds the place,
/// the option and the value).
pub(crate) type ApplyFn = fn(&mut JobState, &OptDef, Option<&str>) -> Result<(), String>;

/// One supported option: its name, fio's type and priority, and the
/// family function that applies it.
pub(crate) struct OptDef {
    /// Canonical name (what `"job options"` shows).
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub opt: Opt,
    /// fio sorts a section's options by descending priority before parsing
    /// them (`parse.c: sort_options`).
    pub prio: i32,
    pub apply: ApplyFn,
}

impl std::fmt::Debug for OptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptDef")
            .field("name", &self.name)
            .field("alias", &self.alias)
            .field("kind", &self.kind)
            .field("opt", &self.opt)
            .field("prio", &self.prio)
            .finish()
    }
}

impl OptDef {
    /// Option `name` of fio type `kind`, applied by `apply` (its family's).
    pub(crate) const fn new(name: &'static str, kind: Kind, opt: Opt, apply: ApplyFn) -> Self {
        OptDef {
            name,
            alias: None,
            kind,
            opt,
            prio: 0,
            apply,
        }
    }

    /// fio's other name for it.
    pub(crate) const fn alias(self, alias: &'static str) -> Self {
        OptDef {
            alias: Some(alias),
            ..self
        }
    }

    /// fio's sort priority (`parse.c: sort_options`).
    pub(crate) const fn prio(self, prio: i32) -> Self {
        OptDef { prio, ..self }
    }
}

/// The option families, each a module that owns its options' table, how
/// they are applied and how a job's values are rendered back as fio
/// options: what `lookup` searches. Adding an option is a line in its
/// family's `DEFS` and that family's apply and render.
static FAMILIES: &[&[OptDef]] = &[
    super::apply::DEFS,
    super::apply_ext::DEFS,
    super::apply_verify::DEFS,
    super::apply_prio::DEFS,
    super::apply_run::DEFS,
    super::apply_steady::DEFS,
    super::apply_zone::DEFS,
    super::apply_submit::DEFS,
    super::engine_mapped::DEFS,
];

/// fio's core options blkqos implements (its engine and profile options
/// aside), family by family.
pub(crate) fn core_defs() -> impl Iterator<Item = &'static OptDef> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

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
    if let Some(d) = core_defs()
        .chain(super::apply_ext::PROFILE_DEFS)
        .chain(super::engine_opts::DEFS)
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
    let names = core_defs()
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
        for d in core_defs() {
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
