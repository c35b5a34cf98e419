//! What each backend does with the options about data (`verify` and its
//! family, buffer contents, `fill_device`; docs/fio-options.md, "Data
//! verification and buffer contents").
//!
//! * The simulator has no data: a verifying job issues fio's read-back IOs
//!   (count, order, sizes, `verify_backlog` interleaving) and nothing is
//!   checked; buffer contents change nothing. A note says so. Buffered
//!   verification is refused: fio drops the file's cached pages before the
//!   read-back (`file_invalidate_cache`), which the page-cache model does
//!   not do.
//! * The real engine writes blkqos's own pattern, not fio's verify headers
//!   or buffer contents: every such option is refused, by file, line,
//!   option and value.

use anyhow::{bail, Result};
use blkqos_workload::spec_verify::asks_for_data;
use blkqos_workload::JobSpec;

fn asks(j: &JobSpec) -> bool {
    asks_for_data(&j.verify, &j.buffers, j.fill_device)
}

/// Refusals on the simulator; `page_cache`: the page-cache model is on.
pub fn check_sim<'a>(jobs: impl IntoIterator<Item = &'a JobSpec>, page_cache: bool) -> Result<()> {
    for j in jobs {
        if page_cache && !j.direct && j.verify.logs_writes() && j.rw.has_write() {
            let at = j
                .data_options
                .iter()
                .find(|o| o.option == "verify" || o.option == "verify_pattern")
                .map_or_else(|| format!("job `{}`", j.name), |o| o.to_string());
            bail!(
                "{at}: job `{}` verifies buffered writes: fio drops the file's cached pages before \
                 reading back (file_invalidate_cache), which the simulated page cache does not: \
                 use direct=1, or turn the page cache off (--pagecache-enable=off)",
                j.name
            );
        }
    }
    Ok(())
}

/// The simulator's note for a job that asks for data, if any.
pub fn sim_note(j: &JobSpec) -> Option<String> {
    if !asks(j) {
        return None;
    }
    let mut what = Vec::new();
    if j.verify.enabled() && j.verify.do_verify && j.rw.has_write() {
        what.push("the verify read-backs are issued as fio issues them, nothing is checked");
    } else if j.verify.enabled() {
        what.push("the reads are not checked");
    }
    if !j.buffers.is_default() {
        what.push("buffer contents options change nothing");
    }
    if j.fill_device {
        what.push("fill_device writes to the end of the simulated target (its ENOSPC)");
    }
    Some(format!(
        "simulated devices hold no data: {}",
        what.join("; ")
    ))
}

/// Refusals on the real engine.
pub fn check_real<'a>(jobs: impl IntoIterator<Item = &'a JobSpec>) -> Result<()> {
    if let Some(j) = jobs.into_iter().find(|j| asks(j)) {
        let at = j
            .data_options
            .first()
            .map_or_else(|| format!("job `{}`", j.name), |o| o.to_string());
        bail!(
            "{at}: job `{}`: the real engine writes blkqos's own data pattern, not fio's verify \
             headers, checksums or buffer contents, and does not fill a target to ENOSPC: run \
             the job on the simulator (without --backend), which issues fio's IOs for it, or \
             drop the data options (verify, buffer_*, *_buffers, dedupe_*, fill_device)",
            j.name
        );
    }
    Ok(())
}
