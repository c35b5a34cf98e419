//! The verification and buffer-contents options of a [`JobSpec`] back to
//! fio options (see [`super::render`]). Order matters as it does to fio:
//! `verify_pattern` before `verify` (a pattern alone means
//! `verify=pattern`), `buffer_pattern` and `dedupe_percentage` before the
//! `*_buffers` flags they change.

use blkqos_workload::spec::{BufferSpec, DedupeMode, JobSpec, VerifyKind, VerifySpec};

fn flag(on: bool) -> String {
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
pub(super) fn data_args(j: &JobSpec, d: &JobSpec, push: &mut impl FnMut(&str, String)) {
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
        push("do_verify", flag(v.do_verify));
    }
    if v.backlog != dv.backlog {
        push("verify_backlog", v.backlog.to_string());
    }
    if v.backlog_batch != dv.backlog_batch {
        push("verify_backlog_batch", v.backlog_batch.to_string());
    }
    if v.fatal != dv.fatal {
        push("verify_fatal", flag(v.fatal));
    }
    if v.dump != dv.dump {
        push("verify_dump", flag(v.dump));
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
        push("dedupe_global", flag(b.dedupe_global));
    }
    // the flags last: buffer_pattern and dedupe_percentage set them
    if b.pattern.is_some() || b.dedupe_percentage > 0 || b.refill != db.refill {
        push("refill_buffers", flag(b.refill));
    }
    if b.pattern.is_some() || b.zero != db.zero {
        push("zero_buffers", flag(b.zero));
    }
    if b.pattern.is_some() || b.scramble != db.scramble {
        push("scramble_buffers", flag(b.scramble));
    }
}
