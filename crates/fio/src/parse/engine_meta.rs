//! The file system metadata engines (`filecreate`, `filestat`,
//! `filedelete`; fio 3.33 `engines/filecreate.c`, `filestat.c`,
//! `filedelete.c`; and fio 3.34's `dircreate`, `dirstat`, `dirdelete`): what a job of theirs may ask for. They run on the real
//! engine only (`crates/experiment/src/real/meta.rs`); the simulator's refusal is
//! recorded here with the place `ioengine` was given.

use blkqos_workload::spec::JobSpec;

use super::error::ParseError;
use super::state::Given;

/// Checks a metadata engine's job and records the simulator's refusal.
pub(crate) fn check(s: &mut JobSpec, given: &[Given]) -> Result<(), ParseError> {
    let Some(g) = given.iter().find(|g| g.name == "ioengine") else {
        return Ok(());
    };
    let engine = s.ioengine.fio_name();
    let err = |m: String| {
        Err(g.loc.option_error(
            &g.written,
            g.value.as_deref(),
            format!("job `{}`: unsupported: {m}", s.name),
        ))
    };
    if s.time_based {
        return err(format!(
            "ioengine={engine} with time_based: fio goes over the files again until the time is \
             up, which blkqos does not implement; leave time_based out (each file once)"
        ));
    }
    if s.loops > 1 {
        return err(format!(
            "ioengine={engine} with loops={}: blkqos does each file once; leave loops out",
            s.loops
        ));
    }
    if s.rw.has_trim() {
        return err(format!(
            "ioengine={engine} with rw={}: the engine's latency is counted as reads or writes; \
             use rw=read or rw=write",
            s.rw.fio_name()
        ));
    }
    if let Some(opt) = unhonoured(s) {
        return err(format!(
            "ioengine={engine} with {opt}: blkqos runs these engines one call per file, in \
             file order, with no pacing or logs; leave {opt} out"
        ));
    }
    if let Some((lo, hi)) = s.files.filesize {
        if lo != hi {
            return err(format!(
                "ioengine={engine} with filesize={lo}-{hi}: a size range per file is not \
                 implemented for this engine; give one size"
            ));
        }
    }
    // what these options mean for the block-IO engines does not hold here:
    // the engine's call is the file's one open, and it closes at once
    s.notes.retain(|n| {
        !(n.starts_with("create_on_open=")
            || n.starts_with("openfiles=")
            || n.starts_with("fallocate="))
    });
    s.notes.push(format!(
        "ioengine={engine}: one call per file, closed at once (openfiles and fallocate change \
         nothing); {}",
        match (s.files.create_on_open, s.ioengine) {
            (true, _) => "create_on_open=1: no file is laid out before the job",
            (false, blkqos_workload::IoEngine::Dirstat | blkqos_workload::IoEngine::Dirdelete) => {
                "the directories are made before the job, as fio 3.34's setup_dirs does"
            }
            _ => "the files are laid out (written) before the job, as fio's file setup does",
        }
    ));
    let what = match s.ioengine {
        blkqos_workload::IoEngine::Filecreate => "creates files with open(O_CREAT)",
        blkqos_workload::IoEngine::Filestat => "stats files",
        blkqos_workload::IoEngine::Dircreate => "makes directories with mkdir",
        blkqos_workload::IoEngine::Dirstat => "stats directories",
        blkqos_workload::IoEngine::Dirdelete => "removes directories with rmdir",
        _ => "unlinks files",
    };
    let e = g.loc.option_error(
        &g.written,
        g.value.as_deref(),
        format!(
            "ioengine={engine} {what}: a simulated device has no file system; run it with \
             --backend=real (in the job's directory, or the current one)"
        ),
    );
    s.engine.sim_refusal = Some(e.to_string());
    Ok(())
}

/// The first option given that the metadata runner does not honour.
fn unhonoured(s: &JobSpec) -> Option<&'static str> {
    use blkqos_workload::spec::{FileService, PerDir, RandomDist};
    let d = JobSpec::new("");
    let any = |p: &PerDir<Option<u64>>| p.read.is_some() || p.write.is_some() || p.trim.is_some();
    [
        (any(&s.rate_bps), "rate"),
        (any(&s.rate_iops), "rate_iops"),
        (any(&s.rate_min), "rate_min"),
        (s.thinktime != d.thinktime, "thinktime"),
        (s.start_delay != d.start_delay, "startdelay"),
        (s.ramp_time != d.ramp_time, "ramp_time"),
        (s.number_ios != 0, "number_ios"),
        (s.io_size.is_some(), "io_size"),
        (s.flow.weight != 0, "flow"),
        (s.logs.any(), "write_*_log"),
        (s.bssplit.is_some(), "bssplit"),
        (s.bsrange.is_some(), "bsrange"),
        (s.random_dist != RandomDist::Random, "random_distribution"),
        (
            s.files.service != FileService::RoundRobin,
            "file_service_type",
        ),
        (s.fsync_blocks != 0 || s.fdatasync_blocks != 0, "fsync"),
        (s.end_fsync, "end_fsync"),
        (s.offset != d.offset, "offset"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

/// Records the simulator's refusal of a file-call engine's job (`falloc`:
/// `fallocate(2)` per IO, `ftruncate`: `ftruncate(2)` per write; fio 3.33
/// engines/falloc.c, ftruncate.c): the real engine runs them on the file.
pub(crate) fn file_call_refusal(s: &mut JobSpec, given: &[Given]) -> Result<(), ParseError> {
    if s.ioengine == blkqos_workload::IoEngine::E4defrag
        && s.engine.donor_name.as_deref().is_none_or(str::is_empty)
    {
        // fio_e4defrag_init
        if let Some(g) = given.iter().find(|g| g.name == "ioengine") {
            let msg = format!("job `{}`: 'donorname' options required", s.name);
            return Err(g.loc.option_error(&g.written, g.value.as_deref(), msg));
        }
    }
    let what = match s.ioengine {
        blkqos_workload::IoEngine::Ftruncate => "truncates the file to each write's offset",
        blkqos_workload::IoEngine::E4defrag => {
            "moves each write's blocks to a donor file (EXT4_IOC_MOVE_EXT)"
        }
        _ => "calls fallocate(2) on each IO's range (allocate, keep-size, punch a hole)",
    };
    let msg = format!(
        "ioengine={} {what}: a simulated device has no file system; run it with \
         --backend=real (in the job's directory, or the current one)",
        s.ioengine.fio_name()
    );
    // the real runner lays a new file out as fio does for the engine
    s.notes.retain(|n| !n.starts_with("fallocate="));
    s.engine.sim_refusal = Some(match given.iter().find(|g| g.name == "ioengine") {
        Some(g) => g
            .loc
            .option_error(&g.written, g.value.as_deref(), msg)
            .to_string(),
        None => msg,
    });
    Ok(())
}
