//! What each backend does with the options about data (`verify` and its
//! family, buffer contents, `fill_device`; docs/fio-options.md, "Data
//! verification and buffer contents").
//!
//! * The simulator has no data: a verifying job issues fio's read-back IOs
//!   (count, order, sizes, `verify_backlog` interleaving) and nothing is
//!   checked; buffer contents change nothing. A note says so. Except: when
//!   an sg job compares data with the medium (`sg_write_mode=verify_bytchk_01|11`),
//!   the simulated medium keeps what every job of the run writes.
//! * The real engine writes `buffer_pattern` and `zero_buffers` as fio does
//!   (every write holds the pattern from its first byte, or zeros), and
//!   fio's verify headers and checksums ([`crate::real::verify`]); it does
//!   not write scrambled, compressible or deduplicated buffers, nor fill a
//!   file system (`fill_device` without `size`): those options are
//!   refused, by file, line, option and value.

use anyhow::{bail, Result};
use blkqos_workload::spec_verify::{asks_for_data, DataOption};
use blkqos_workload::JobSpec;

fn asks(j: &JobSpec) -> bool {
    asks_for_data(&j.verify, &j.buffers, j.fill_device)
}

/// The simulator's note for a job that asks for data, if any. `medium`:
/// an sg job of the run compares data with the medium, so the medium
/// keeps what every job writes (its buffer contents count).
pub fn sim_note(j: &JobSpec, medium: bool) -> Option<String> {
    if !asks(j) {
        return None;
    }
    let mut what = Vec::new();
    if j.verify.enabled() && j.verify.do_verify && j.rw.has_write() {
        what.push("the verify read-backs are issued as fio issues them, nothing is checked");
    } else if j.verify.enabled() {
        what.push("the reads are not checked");
    }
    if !j.buffers.is_default() && !medium {
        what.push("buffer contents options change nothing");
    }
    if j.fill_device {
        what.push("fill_device writes to the end of the simulated target (its ENOSPC)");
    }
    // fio's warnings (init.c fixup_options), as notes
    let writes = j.verify.logs_writes() && j.rw.has_write();
    if writes && j.numjobs > 1 && j.offset_increment == 0 {
        what.push(
            "fio warns: multiple writers may overwrite blocks that belong to other jobs; \
             this can cause verification failures",
        );
    }
    if writes && j.runtime.is_some() && j.time_based && !j.rw.has_read() && j.verify.backlog == 0 {
        what.push(
            "fio warns: verification read phase will never start because write phase uses \
             all of runtime (true of sync engines; with a queued engine fio, and blkqos, read \
             back after each pass of `size`)",
        );
    }
    if what.is_empty() {
        return None;
    }
    Some(format!(
        "simulated devices hold no data: {}",
        what.join("; ")
    ))
}

/// Data options the real engine honours or that change nothing there
/// (`verify_async`: the engine checks each read as it completes).
const REAL_OK: [&str; 22] = [
    "verify",
    "verify_pattern",
    "verify_interval",
    "verify_offset",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "fill_device",
    "fill_fs",
    "buffer_pattern",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "create_serialize",
    "error_dump",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "buffer_compress_chunk",
    "do_verify",
];

/// What every write of `j` holds on the real engine: `buffer_pattern`'s
/// bytes, or zeros for `zero_buffers` (fio io_u.c `fill_io_buffer`: the
/// pattern first, then zeros). None: neither.
fn fill_of(j: &JobSpec) -> Option<Vec<u8>> {
    j.buffers
        .pattern
        .clone()
        .or_else(|| j.buffers.zero.then(|| vec![0]))
}

/// Can the real engine write `j`'s data as fio would? Only fixed contents
/// (a pattern or zeros), not scrambled (fio scrambles only when
/// `scramble_buffers=1` is given with them), nothing compressible or
/// deduplicated, no verification, no filling.
fn real_can(j: &JobSpec) -> bool {
    let b = &j.buffers;
    let scrambled = j
        .data_options
        .iter()
        .any(|o| o.option == "scramble_buffers" && o.value.as_deref() != Some("0"));
    // fio's verify headers (real::verify) take the place of the buffer's
    // contents; fill_device is bounded by size= (fio fixup_options)
    let contents = j.verify.enabled() || fill_of(j).is_some() && !scrambled;
    !j.verify.only
        && (!j.fill_device || j.size.is_some())
        && b.compress_percentage == 0
        && b.dedupe_percentage == 0
        && contents
}

/// The real engine's write fill for the jobs (all on one target): the
/// writing jobs must agree; `write_buffer`: blkqos's write-back buffer is
/// on (it writes blkqos's own pattern).
pub fn real_write_fill<'a>(
    jobs: impl IntoIterator<Item = &'a JobSpec>,
    write_buffer: bool,
) -> Result<Option<Vec<u8>>> {
    let writers: Vec<&JobSpec> = jobs.into_iter().filter(|j| j.rw.has_write()).collect();
    let fill = writers.iter().find_map(|j| fill_of(j));
    if fill.is_none() {
        return Ok(None);
    }
    if let Some(j) = writers.iter().find(|j| fill_of(j) != fill) {
        bail!(
            "job `{}`: the jobs writing one target on the real engine must agree on buffer_pattern \
             and zero_buffers (the engine fills every write alike): give every writing job the \
             same, or run on the simulator",
            j.name
        );
    }
    if write_buffer {
        bail!(
            "buffer_pattern/zero_buffers with the real engine's write-back buffer \
             (--pagecache=on): the buffer writes blkqos's own pattern: drop one of them"
        );
    }
    Ok(fill)
}

/// Refusals on the real engine.
pub fn check_real<'a>(jobs: impl IntoIterator<Item = &'a JobSpec>) -> Result<()> {
    if let Some(j) = jobs.into_iter().find(|j| asks(j) && !real_can(j)) {
        let at = j
            .data_options
            .iter()
            .find(|o| !REAL_OK.contains(&o.option.as_str()) || o.option == "scramble_buffers")
            .or_else(|| {
                let fill = |o: &&DataOption| o.option == "fill_device" || o.option == "fill_fs";
                j.data_options
                    .iter()
                    .find(fill)
                    .filter(|_| j.size.is_none())
            })
            .or(j.data_options.first())
            .map_or_else(|| format!("job `{}`", j.name), |o| o.to_string());
        bail!(
            "{at}: job `{}`: the real engine writes fio's verify headers, buffer_pattern or \
             zero_buffers (unscrambled), but no scrambled, compressible or deduplicated \
             buffers, no verify_only and fills a target only up to size= (fill_device \
             without size= would fill the file system): run the job on the simulator \
             (without --backend), which issues fio's IOs for it",
            j.name
        );
    }
    Ok(())
}
