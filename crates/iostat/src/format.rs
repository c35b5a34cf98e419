//! Text of the reports, byte for byte as sysstat 12.6.1 prints them
//! (iostat.c `write_disk_stat_header`, `write_plain_ext_stat`,
//! `write_json_ext_stat`, `write_plain_basic_stat`, `write_json_basic_stat`,
//! `write_plain_cpu_stat`, `write_json_cpu_stat`; common.c `cprintf_f`,
//! `cprintf_pc`, `cprintf_u64`, `xprintf`). Colors are never used (sysstat
//! uses them only on a terminal with `S_COLORS` set).
//!
//! Rust's `{:.N}` rounds the exact binary value like glibc's `%.Nf`.

use crate::metrics::{BasicStats, CpuPct, ExtStats, Unit};
use crate::options::Options;
use std::fmt::Write as _;

/// `cprintf_f` / `cprintf_pc` without colors or units: `" %*.*f"`, the
/// decimals replaced by `--dec` when the column has decimals.
fn f(out: &mut String, wi: usize, wd: usize, dec: Option<usize>, v: f64) {
    let wd = match dec {
        Some(d) if wd > 0 => d,
        _ => wd,
    };
    let _ = write!(out, " {v:>wi$.wd$}");
}

/// `xprintf0`: `tab` tabs then the text.
pub(crate) fn tabs(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push('\t');
    }
}

/// (units, spacer) of the header, as `write_disk_stat_header` picks them.
fn units(o: &Options) -> (&'static str, &'static str) {
    match o.unit {
        Unit::Kilobytes => ("kB", " "),
        Unit::Megabytes => ("MB", " "),
        Unit::Sectors if o.extended => ("sec", ""),
        Unit::Sectors => ("Blk", ""),
    }
}

/// The plain header line (`write_disk_stat_header`, no `--pretty`).
pub(crate) fn plain_header(out: &mut String, o: &Options) {
    let (u, s) = units(o);
    out.push_str("Device       ");
    match (o.extended, o.short) {
        (true, true) => {
            let _ = write!(
                out,
                "      tps     {s}{u}/s    rqm/s   await  areq-sz  aqu-sz  %util"
            );
        }
        (true, false) => {
            let _ = write!(
                out,
                "     r/s    {s}r{u}/s   rrqm/s  %rrqm r_await rareq-sz     w/s    {s}w{u}/s   wrqm/s  %wrqm w_await wareq-sz     d/s    {s}d{u}/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util"
            );
        }
        (false, true) => {
            let _ = write!(
                out,
                "      tps   {s}{u}_read/s    {s}{u}_w+d/s   {s}{u}_read    {s}{u}_w+d"
            );
        }
        (false, false) => {
            let _ = write!(
                out,
                "      tps   {s}{u}_read/s   {s}{u}_wrtn/s   {s}{u}_dscd/s   {s}{u}_read   {s}{u}_wrtn   {s}{u}_dscd"
            );
        }
    }
    out.push('\n');
}

/// One device line of `iostat -x` (`write_plain_ext_stat`).
pub(crate) fn plain_ext(out: &mut String, o: &Options, name: &str, x: &ExtStats) {
    let d = o.decimals;
    let _ = write!(out, "{name:<13}");
    if o.short {
        f(out, 8, 2, d, x.tps);
        f(out, 9, 2, d, x.kb_s);
        f(out, 8, 2, d, x.rqm_s);
        f(out, 7, 2, d, x.await_);
        f(out, 8, 2, d, x.areq_sz);
        f(out, 7, 2, d, x.aqu_sz);
        f(out, 6, 2, d, x.util);
    } else {
        for (ios, kb, rqm, pct, aw, sz) in [
            (x.r_s, x.rkb_s, x.rrqm_s, x.rrqm_pct, x.r_await, x.rareq_sz),
            (x.w_s, x.wkb_s, x.wrqm_s, x.wrqm_pct, x.w_await, x.wareq_sz),
            (x.d_s, x.dkb_s, x.drqm_s, x.drqm_pct, x.d_await, x.dareq_sz),
        ] {
            f(out, 7, 2, d, ios);
            f(out, 9, 2, d, kb);
            f(out, 8, 2, d, rqm);
            f(out, 6, 2, d, pct);
            f(out, 7, 2, d, aw);
            f(out, 8, 2, d, sz);
        }
        f(out, 7, 2, d, x.f_s);
        f(out, 7, 2, d, x.f_await);
        f(out, 7, 2, d, x.aqu_sz);
        f(out, 6, 2, d, x.util);
    }
    out.push('\n');
}

/// One device line of the basic report (`write_plain_basic_stat`).
/// `short_totals` are the `-s` (read, written + discarded) totals.
pub(crate) fn plain_basic(
    out: &mut String,
    o: &Options,
    name: &str,
    b: &BasicStats,
    short_totals: (u64, u64),
) {
    let d = o.decimals;
    let _ = write!(out, "{name:<13}");
    f(out, 8, 2, d, b.tps);
    if o.short {
        f(out, 12, 2, d, b.read_s);
        f(out, 12, 2, d, b.wrtn_s + b.dscd_s);
        let _ = write!(out, " {:>10} {:>10}", short_totals.0, short_totals.1);
    } else {
        f(out, 12, 2, d, b.read_s);
        f(out, 12, 2, d, b.wrtn_s);
        f(out, 12, 2, d, b.dscd_s);
        let _ = write!(out, " {:>10} {:>10} {:>10}", b.read, b.wrtn, b.dscd);
    }
    out.push('\n');
}

/// JSON key prefix of the throughput columns.
fn json_unit(o: &Options, basic: bool) -> &'static str {
    match (o.unit, basic) {
        (Unit::Megabytes, _) => "MB",
        (Unit::Kilobytes, _) => "kB",
        (Unit::Sectors, false) => "sec",
        (Unit::Sectors, true) => "Blk",
    }
}

/// One device object of `-o JSON -x` (`write_json_ext_stat`), 6 tabs in,
/// no newline.
pub(crate) fn json_ext(out: &mut String, o: &Options, name: &str, x: &ExtStats) {
    let u = json_unit(o, false);
    tabs(out, 6);
    let _ = write!(out, "{{\"disk_device\": \"{name}\", ");
    if o.short {
        let _ = write!(
            out,
            "\"tps\": {:.2}, \"{u}/s\": {:.2}, \"rqm/s\": {:.2}, \"await\": {:.2}, \"areq-sz\": {:.2}, \"aqu-sz\": {:.2}, ",
            x.tps, x.kb_s, x.rqm_s, x.await_, x.areq_sz, x.aqu_sz
        );
    } else {
        let _ = write!(
            out,
            "\"r/s\": {:.2}, \"w/s\": {:.2}, \"d/s\": {:.2}, \"f/s\": {:.2}, \
             \"r{u}/s\": {:.2}, \"w{u}/s\": {:.2}, \"d{u}/s\": {:.2}, \
             \"rrqm/s\": {:.2}, \"wrqm/s\": {:.2}, \"drqm/s\": {:.2}, \
             \"rrqm\": {:.2}, \"wrqm\": {:.2}, \"drqm\": {:.2}, \
             \"r_await\": {:.2}, \"w_await\": {:.2}, \"d_await\": {:.2}, \"f_await\": {:.2}, \
             \"rareq-sz\": {:.2}, \"wareq-sz\": {:.2}, \"dareq-sz\": {:.2}, \"aqu-sz\": {:.2}, ",
            x.r_s,
            x.w_s,
            x.d_s,
            x.f_s,
            x.rkb_s,
            x.wkb_s,
            x.dkb_s,
            x.rrqm_s,
            x.wrqm_s,
            x.drqm_s,
            x.rrqm_pct,
            x.wrqm_pct,
            x.drqm_pct,
            x.r_await,
            x.w_await,
            x.d_await,
            x.f_await,
            x.rareq_sz,
            x.wareq_sz,
            x.dareq_sz,
            x.aqu_sz
        );
    }
    let _ = write!(out, "\"util\": {:.2}}}", x.util);
}

/// One device object of `-o JSON` basic (`write_json_basic_stat`; it has
/// no `-s` form).
pub(crate) fn json_basic(out: &mut String, o: &Options, name: &str, b: &BasicStats) {
    let u = json_unit(o, true);
    tabs(out, 6);
    let _ = write!(
        out,
        "{{\"disk_device\": \"{name}\", \"tps\": {:.2}, \
         \"{u}_read/s\": {:.2}, \"{u}_wrtn/s\": {:.2}, \"{u}_dscd/s\": {:.2}, \
         \"{u}_read\": {}, \"{u}_wrtn\": {}, \"{u}_dscd\": {}}}",
        b.tps, b.read_s, b.wrtn_s, b.dscd_s, b.read, b.wrtn, b.dscd
    );
}

/// The `avg-cpu` block (`write_plain_cpu_stat`), blank line included.
pub(crate) fn plain_cpu(out: &mut String, o: &Options, c: &CpuPct) {
    out.push_str("avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n       ");
    for v in [c.user, c.nice, c.system, c.iowait, c.steal, c.idle] {
        f(out, 7, 2, o.decimals, v);
    }
    out.push_str("\n\n");
}

/// `"avg-cpu"` of `-o JSON` (`write_json_cpu_stat`), 5 tabs in, no newline.
pub(crate) fn json_cpu(out: &mut String, c: &CpuPct) {
    tabs(out, 5);
    let _ = write!(
        out,
        "\"avg-cpu\":  {{\"user\": {:.2}, \"nice\": {:.2}, \"system\": {:.2}, \"iowait\": {:.2}, \"steal\": {:.2}, \"idle\": {:.2}}}",
        c.user, c.nice, c.system, c.iowait, c.steal, c.idle
    );
}
