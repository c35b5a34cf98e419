//! Applying the verification options (`verify` and its family) and the
//! options that decide what write buffers hold (fio 3.33 `options.c`:
//! the `verify` posval table, `str_verify_pattern_cb`,
//! `str_buffer_pattern_cb`, `str_buffer_compress_cb`, `str_dedupe_cb`).

use blkqos_workload::spec::{BufferSpec, DedupeMode, JobSpec, VerifyKind, VerifySpec};

use super::options::{pieces, Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_count, parse_plain_int, parse_size, SizeValue};

/// Verification, buffer contents, dedupe and compression.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("verify", Kind::Str, Opt::Verify, apply),
    OptDef::new("do_verify", Kind::Bool, Opt::DoVerify, apply),
    OptDef::new("verify_only", Kind::StrSet, Opt::VerifyOnly, apply),
    OptDef::new("verify_backlog", Kind::StrVal, Opt::VerifyBacklog, apply),
    OptDef::new(
        "verify_backlog_batch",
        Kind::Int,
        Opt::VerifyBacklogBatch,
        apply,
    ),
    OptDef::new("verify_fatal", Kind::Bool, Opt::VerifyFatal, apply),
    OptDef::new("verify_dump", Kind::Bool, Opt::VerifyDump, apply),
    OptDef::new("verify_async", Kind::Int, Opt::VerifyAsync, apply),
    OptDef::new("verify_pattern", Kind::Str, Opt::VerifyPattern, apply),
    OptDef::new("verify_interval", Kind::Int, Opt::VerifyInterval, apply),
    OptDef::new("verify_offset", Kind::Int, Opt::VerifyOffset, apply),
    OptDef::new("buffer_pattern", Kind::Str, Opt::BufferPattern, apply),
    OptDef::new("zero_buffers", Kind::StrSet, Opt::ZeroBuffers, apply),
    OptDef::new("refill_buffers", Kind::StrSet, Opt::RefillBuffers, apply),
    OptDef::new("scramble_buffers", Kind::Bool, Opt::ScrambleBuffers, apply),
    OptDef::new(
        "buffer_compress_percentage",
        Kind::Int,
        Opt::BufferCompressPercentage,
        apply,
    ),
    OptDef::new(
        "buffer_compress_chunk",
        Kind::Int,
        Opt::BufferCompressChunk,
        apply,
    ),
    OptDef::new("dedupe_percentage", Kind::Int, Opt::DedupePercentage, apply),
    OptDef::new("dedupe_mode", Kind::Str, Opt::DedupeMode, apply),
    OptDef::new(
        "dedupe_working_set_percentage",
        Kind::Int,
        Opt::DedupeWorkingSetPercentage,
        apply,
    ),
    OptDef::new("dedupe_global", Kind::Bool, Opt::DedupeGlobal, apply),
    OptDef::new("fill_device", Kind::Bool, Opt::FillDevice, apply).alias("fill_fs"),
    OptDef::new("create_serialize", Kind::Bool, Opt::CreateSerialize, apply),
    OptDef::new("error_dump", Kind::Bool, Opt::ErrorDump, apply),
    OptDef::new(
        "offset_increment",
        Kind::StrVal,
        Opt::OffsetIncrement,
        apply,
    ),
];

/// fio `sizeof(struct verify_header)` (verify.h): the smallest
/// `verify_offset`, and half the smallest `verify_interval`.
const VERIFY_HEADER_BYTES: u64 = 40;
/// fio `MAX_PATTERN_SIZE` (stat.h).
const MAX_PATTERN_BYTES: usize = 512;

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    if def.opt == Opt::OffsetIncrement {
        return match value {
            Some(v) => offset_increment(st, v),
            None => Err(format!("Option {} requires an argument", def.name)),
        };
    }
    match (def.kind, value) {
        (Kind::StrSet, None) => {
            set_flag(st, def.opt, true);
            verify_only_refused(st)
        }
        (_, None) => Err(format!("Option {} requires an argument", def.name)),
        (_, Some(v)) => apply_value(st, def.opt, v),
    }
}

/// The options of this module: every one of them is about data.
pub(crate) fn is_data_option(opt: Opt) -> bool {
    matches!(
        opt,
        Opt::Verify
            | Opt::DoVerify
            | Opt::VerifyOnly
            | Opt::VerifyBacklog
            | Opt::VerifyBacklogBatch
            | Opt::VerifyFatal
            | Opt::VerifyDump
            | Opt::VerifyAsync
            | Opt::VerifyPattern
            | Opt::VerifyInterval
            | Opt::VerifyOffset
            | Opt::BufferPattern
            | Opt::ZeroBuffers
            | Opt::RefillBuffers
            | Opt::ScrambleBuffers
            | Opt::BufferCompressPercentage
            | Opt::BufferCompressChunk
            | Opt::DedupePercentage
            | Opt::DedupeMode
            | Opt::DedupeWorkingSetPercentage
            | Opt::DedupeGlobal
            | Opt::FillDevice
            | Opt::CreateSerialize
            | Opt::ErrorDump
    )
}

fn set_flag(st: &mut JobState, opt: Opt, on: bool) {
    let s = &mut st.spec;
    match opt {
        Opt::VerifyOnly => s.verify.only = on,
        Opt::ZeroBuffers => s.buffers.zero = on,
        Opt::RefillBuffers => s.buffers.refill = on,
        _ => {}
    }
}

/// Applies value `v` of `opt`, one of this module's options.
fn apply_value(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    match opt {
        Opt::VerifyOnly | Opt::ZeroBuffers | Opt::RefillBuffers => {
            set_flag(st, opt, parse_plain_int(v)? != 0);
            verify_only_refused(st)
        }
        Opt::Verify
        | Opt::DoVerify
        | Opt::VerifyBacklog
        | Opt::VerifyBacklogBatch
        | Opt::VerifyFatal
        | Opt::VerifyDump
        | Opt::VerifyAsync
        | Opt::VerifyPattern
        | Opt::VerifyInterval
        | Opt::VerifyOffset => apply_verify(st, opt, v),
        Opt::BufferPattern
        | Opt::ScrambleBuffers
        | Opt::BufferCompressPercentage
        | Opt::BufferCompressChunk
        | Opt::DedupePercentage
        | Opt::DedupeMode
        | Opt::DedupeWorkingSetPercentage
        | Opt::DedupeGlobal => apply_buffers(st, opt, v),
        _ => apply_other(st, opt, v),
    }
}

/// `verify` and the `verify_*` options that take a value.
fn apply_verify(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let kb = st.spec.kb_base;
    let s = &mut st.spec;
    match opt {
        Opt::Verify => {
            s.verify.kind = VerifyKind::from_name(v).ok_or_else(|| {
                let names: Vec<&str> = VerifyKind::NAMES.iter().map(|(n, _)| *n).collect();
                format!("invalid value `{v}` (valid values: {})", names.join(", "))
            })?;
            s.verify.kind_set = true;
        }
        Opt::DoVerify => s.verify.do_verify = bool_value(v)?,
        Opt::VerifyBacklog => s.verify.backlog = parse_count(one(v)?, kb)?,
        Opt::VerifyBacklogBatch => s.verify.backlog_batch = int_in(v, kb, 0, u32_max())?,
        Opt::VerifyFatal => s.verify.fatal = bool_value(v)?,
        Opt::VerifyDump => s.verify.dump = bool_value(v)?,
        Opt::VerifyAsync => s.verify.async_threads = int_in(v, kb, 0, u32_max())? as u32,
        Opt::VerifyPattern => {
            if v.contains('%') {
                return Err(
                    "verify_pattern formats (`%o`, the block's offset) are not supported: \
                     give the pattern as numbers and strings"
                        .into(),
                );
            }
            s.verify.pattern = Some(parse_pattern(v)?);
            // str_verify_pattern_cb: a pattern alone means verify=pattern
            if !s.verify.kind_set {
                s.verify.kind = VerifyKind::PatternHdr;
            }
        }
        Opt::VerifyInterval => {
            s.verify.interval = int_in(v, kb, 2 * VERIFY_HEADER_BYTES, u32_max())?
        }
        Opt::VerifyOffset => s.verify.offset = int_in(v, kb, VERIFY_HEADER_BYTES, u32_max())?,
        _ => {}
    }
    Ok(())
}

/// What write buffers hold: `buffer_pattern`, `scramble_buffers`,
/// compression and dedupe.
fn apply_buffers(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let kb = st.spec.kb_base;
    let reads = st.spec.rw.has_read();
    let s = &mut st.spec;
    match opt {
        Opt::BufferPattern => {
            s.buffers.pattern = Some(parse_pattern(v)?);
            // str_buffer_pattern_cb: refill when the job reads or
            // compresses, else the pattern is written once; no scrambling,
            // no zeroing
            s.buffers.refill = s.buffers.compress_percentage != 0 || reads;
            s.buffers.scramble = false;
            s.buffers.zero = false;
        }
        Opt::ScrambleBuffers => s.buffers.scramble = bool_value(v)?,
        Opt::BufferCompressPercentage => {
            s.buffers.compress_percentage = int_in(v, kb, 0, 100)? as u32
        }
        Opt::BufferCompressChunk => s.buffers.compress_chunk = int_in(v, kb, 0, u32_max())? as u32,
        Opt::DedupePercentage => {
            s.buffers.dedupe_percentage = int_in(v, kb, 0, 100)? as u32;
            // str_dedupe_cb
            s.buffers.refill = true;
        }
        Opt::DedupeMode => {
            s.buffers.dedupe_mode = match v {
                "repeat" => DedupeMode::Repeat,
                "working_set" => DedupeMode::WorkingSet,
                _ => {
                    return Err(format!(
                        "invalid value `{v}` (valid values: repeat, working_set)"
                    ))
                }
            }
        }
        Opt::DedupeWorkingSetPercentage => {
            s.buffers.dedupe_working_set_percentage = int_in(v, kb, 0, 100)? as u32
        }
        Opt::DedupeGlobal => s.buffers.dedupe_global = bool_value(v)?,
        _ => {}
    }
    Ok(())
}

/// `fill_device`, `create_serialize` and `error_dump`.
fn apply_other(st: &mut JobState, opt: Opt, v: &str) -> Result<(), String> {
    let s = &mut st.spec;
    match opt {
        Opt::FillDevice => s.fill_device = bool_value(v)?,
        Opt::CreateSerialize => {
            let on = bool_value(v)?;
            s.notes.push(format!(
                "create_serialize={}: files are laid out before any job starts either way \
                 (the simulator lays out in no time, the real engine lays out its target or \
                 its files before the run)",
                u8::from(on)
            ));
        }
        Opt::ErrorDump if bool_value(v)? => {
            return Err(
                "error_dump=1 (a line for every non-fatal IO error) is not supported: \
                 blkqos counts non-fatal errors (total_err, first_error) and prints only \
                 the error that stops a job: use error_dump=0"
                    .into(),
            );
        }
        _ => {}
    }
    Ok(())
}

/// `offset_increment=` (fio `str_offset_increment_cb`): bytes; the
/// percentage and zone forms are refused.
fn offset_increment(st: &mut JobState, v: &str) -> Result<(), String> {
    match parse_size(one(v)?, st.spec.kb_base)? {
        SizeValue::Bytes(b) => {
            st.spec.offset_increment = b;
            Ok(())
        }
        SizeValue::Percent(_) => Err(
            "offset_increment as a percentage of the file is not supported: give it in bytes"
                .into(),
        ),
    }
}

/// `verify_only`: fio's dry run (backend.c `do_dry_run`) counts the writes
/// it does not issue as done IO; blkqos does not model that yet.
fn verify_only_refused(st: &JobState) -> Result<(), String> {
    if st.spec.verify.only {
        return Err("verify_only (read back what the job would write, writing nothing) is                     not supported: run the writing job with verify and do_verify=1, or a                     read job with verify"
            .into());
    }
    Ok(())
}

fn u32_max() -> u64 {
    u64::from(u32::MAX)
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

/// A `buffer_pattern` / `verify_pattern` value as bytes (fio
/// lib/pattern.c `parse_and_fill_pattern`): a sequence of `"strings"`,
/// `'file names'` (the file's first bytes), hex numbers (`0x` then digit
/// pairs in the order written, a lone first digit standing for a byte of
/// its own) and decimal numbers (the value's bytes, least significant
/// first, as few as it needs; `0` is one zero byte).
pub(crate) fn parse_pattern(input: &str) -> Result<Vec<u8>, String> {
    let bad = |why: &str| format!("bad pattern `{input}`: {why}");
    let mut out: Vec<u8> = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let room = MAX_PATTERN_BYTES - out.len();
        if room == 0 {
            return Err(bad("longer than fio's 512 bytes"));
        }
        if let Some(body) = rest.strip_prefix('"') {
            let end = body.find('"').ok_or_else(|| bad("unterminated \""))?;
            if end > room {
                return Err(bad("longer than fio's 512 bytes"));
            }
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else if let Some(body) = rest.strip_prefix('\'') {
            let end = body.find('\'').ok_or_else(|| bad("unterminated '"))?;
            let data = std::fs::read(&body[..end])
                .map_err(|e| bad(&format!("cannot read `{}`: {e}", &body[..end])))?;
            out.extend_from_slice(&data[..data.len().min(room)]);
            rest = &body[end + 1..];
        } else {
            let (bytes, used) = pattern_number(rest).ok_or_else(|| bad("not a number"))?;
            if bytes.len() > room {
                return Err(bad("longer than fio's 512 bytes"));
            }
            out.extend_from_slice(&bytes);
            rest = &rest[used..];
        }
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    Ok(out)
}

/// One number of a pattern: its bytes and how many input bytes it took
/// (fio lib/pattern.c `parse_number`).
fn pattern_number(s: &str) -> Option<(Vec<u8>, usize)> {
    let b = s.as_bytes();
    let hex_prefix =
        |at: usize| b.len() > at + 1 && b[at] == b'0' && (b[at + 1] == b'x' || b[at + 1] == b'X');
    if hex_prefix(0) && b.len() > 2 && b[2].is_ascii_hexdigit() {
        let mut n = b[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        // `0xff0x14` is two numbers: the `0` before the next `x` is not a digit
        if 2 + n < b.len() && n > 1 && (b[2 + n] == b'x' || b[2 + n] == b'X') {
            n -= 1;
        }
        let digits = &s[2..2 + n];
        let mut out = Vec::with_capacity(n.div_ceil(2));
        let mut i = 0;
        if n % 2 == 1 {
            out.push(u8::from_str_radix(&digits[..1], 16).ok()?);
            i = 1;
        }
        while i < n {
            out.push(u8::from_str_radix(&digits[i..i + 2], 16).ok()?);
            i += 2;
        }
        return Some((out, 2 + n));
    }
    // decimal, up to a following `0x` (strtol's own end otherwise)
    let limit = s.to_ascii_lowercase().find("0x").filter(|&i| i > 0);
    let text = &s[..limit.unwrap_or(s.len())];
    let sign = usize::from(text.starts_with(['-', '+']));
    let digits = text[sign..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let used = sign + digits;
    let val: i64 = text[..used].parse().ok()?;
    if val > i64::from(i32::MAX) || val < i64::from(i32::MIN) {
        return None;
    }
    if val == 0 {
        return Some((vec![0], used));
    }
    let mut u = val as i32 as u32;
    let mut out = Vec::new();
    while u != 0 {
        out.push((u & 0xff) as u8);
        u >>= 8;
    }
    Some((out, used))
}

// The verification and buffer-contents options of a [`JobSpec`] back to
// fio options (see [`super::render`]). Order matters as it does to fio:
// `verify_pattern` before `verify` (a pattern alone means
// `verify=pattern`), `buffer_pattern` and `dedupe_percentage` before the
// `*_buffers` flags they change.

fn flag_text(on: bool) -> String {
    u8::from(on).to_string()
}

/// A pattern as one fio hex number (`0x` and two digits per byte).
fn hex(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn kind_name(k: VerifyKind) -> &'static str {
    VerifyKind::NAMES
        .iter()
        .find(|(_, v)| *v == k)
        .map_or("0", |(n, _)| n)
}

/// The verification and buffer options of `j` that differ from `d` (fio's
/// defaults), then `fill_device` and `offset_increment`.
pub(crate) fn render(j: &JobSpec, d: &JobSpec, push: &mut impl FnMut(&str, String)) {
    verify_args(&j.verify, &d.verify, push);
    buffer_args(&j.buffers, &d.buffers, push);
    if j.fill_device {
        push("fill_device", "1".into());
    }
    if j.offset_increment != d.offset_increment {
        push("offset_increment", j.offset_increment.to_string());
    }
}

/// The `verify*` options of `v` that differ from `dv`, `verify_pattern` first.
fn verify_args(v: &VerifySpec, dv: &VerifySpec, push: &mut impl FnMut(&str, String)) {
    if let Some(p) = &v.pattern {
        push("verify_pattern", hex(p));
    }
    if v.kind_set {
        push("verify", kind_name(v.kind).into());
    }
    if v.do_verify != dv.do_verify {
        push("do_verify", flag_text(v.do_verify));
    }
    if v.backlog != dv.backlog {
        push("verify_backlog", v.backlog.to_string());
    }
    if v.backlog_batch != dv.backlog_batch {
        push("verify_backlog_batch", v.backlog_batch.to_string());
    }
    if v.fatal != dv.fatal {
        push("verify_fatal", flag_text(v.fatal));
    }
    if v.dump != dv.dump {
        push("verify_dump", flag_text(v.dump));
    }
    if v.async_threads != dv.async_threads {
        push("verify_async", v.async_threads.to_string());
    }
    if v.interval != dv.interval {
        push("verify_interval", v.interval.to_string());
    }
    if v.offset != dv.offset {
        push("verify_offset", v.offset.to_string());
    }
}

/// The buffer-contents options of `b` that differ from `db`, the
/// `*_buffers` flags last.
fn buffer_args(b: &BufferSpec, db: &BufferSpec, push: &mut impl FnMut(&str, String)) {
    if let Some(p) = &b.pattern {
        push("buffer_pattern", hex(p));
    }
    if b.compress_percentage != db.compress_percentage {
        push(
            "buffer_compress_percentage",
            b.compress_percentage.to_string(),
        );
    }
    if b.compress_chunk != db.compress_chunk {
        push("buffer_compress_chunk", b.compress_chunk.to_string());
    }
    if b.dedupe_percentage != db.dedupe_percentage {
        push("dedupe_percentage", b.dedupe_percentage.to_string());
    }
    if b.dedupe_mode != db.dedupe_mode {
        let m = match b.dedupe_mode {
            DedupeMode::Repeat => "repeat",
            DedupeMode::WorkingSet => "working_set",
        };
        push("dedupe_mode", m.into());
    }
    if b.dedupe_working_set_percentage != db.dedupe_working_set_percentage {
        push(
            "dedupe_working_set_percentage",
            b.dedupe_working_set_percentage.to_string(),
        );
    }
    if b.dedupe_global != db.dedupe_global {
        push("dedupe_global", flag_text(b.dedupe_global));
    }
    // the flags last: buffer_pattern and dedupe_percentage set them
    if b.pattern.is_some() || b.dedupe_percentage > 0 || b.refill != db.refill {
        push("refill_buffers", flag_text(b.refill));
    }
    if b.pattern.is_some() || b.zero != db.zero {
        push("zero_buffers", flag_text(b.zero));
    }
    if b.pattern.is_some() || b.scramble != db.scramble {
        push("scramble_buffers", flag_text(b.scramble));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_as_fio_reads_them() {
        assert_eq!(parse_pattern("0x01").unwrap(), [0x01]);
        assert_eq!(
            parse_pattern("0xaa555aa5").unwrap(),
            [0xaa, 0x55, 0x5a, 0xa5]
        );
        assert_eq!(parse_pattern("0x123").unwrap(), [0x01, 0x23]);
        assert_eq!(parse_pattern("0xff0x14").unwrap(), [0xff, 0x14]);
        assert_eq!(parse_pattern("\"abc\"").unwrap(), b"abc");
        assert_eq!(parse_pattern("\"ab\"0x01").unwrap(), [b'a', b'b', 1]);
        assert_eq!(parse_pattern("0").unwrap(), [0]);
        assert_eq!(parse_pattern("258").unwrap(), [2, 1]);
        assert_eq!(parse_pattern("-1").unwrap(), [0xff; 4]);
        assert!(parse_pattern("\"abc").is_err());
        assert!(parse_pattern("xyz").is_err());
        assert!(parse_pattern("").is_err());
    }
}
