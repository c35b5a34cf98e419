//! What an option is: fio's option types (`parse.h: enum fio_opt_type`),
//! the [`OptDef`] each family's table lists (name, alias, type, priority,
//! the family's apply function), and how a value splits into pieces per
//! direction (and is written back).

use super::state::JobState;
use blkqos_workload::spec::PerDir;
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

/// A per-direction value as fio writes it: `read,write,trim`.
pub(crate) fn per_dir_text<T: Copy>(p: &PerDir<T>, f: impl Fn(T) -> String) -> String {
    format!("{},{},{}", f(p.read), f(p.write), f(p.trim))
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
