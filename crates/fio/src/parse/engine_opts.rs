//! Engine-private options (fio 3.33 `engines/io_uring.c` `options[]`,
//! `engines/sg.c` `options[]`): io_uring's and io_uring_cmd's ring flags,
//! `cmd_type`, `sg_write_mode`. fio parses them only for the engine that
//! owns them ("Bad option" otherwise); here they are applied as they come
//! and checked against the job's engine when the job is complete
//! ([`finish`]), which also decides what the real engine must refuse.

use blkqos_workload::spec::{EngineSpec, IoEngine, JobSpec, SgWriteMode, StatType};
use blkqos_workload::Ddir;

use super::error::{Loc, ParseError};
use super::options::{Kind, Opt, OptDef};
use super::state::{Given, JobState};
use super::units::parse_plain_int;

/// The engines an option belongs to (fio: the engine whose `options[]`
/// lists it).
fn owners(name: &str) -> &'static [IoEngine] {
    match name {
        "cmd_type" => &[IoEngine::IoUringCmd],
        "sg_write_mode" => &[IoEngine::Sg],
        "stat_type" => &[IoEngine::Filestat, IoEngine::Dirstat],
        "cpuload" | "cpuchunks" | "cpumode" | "exit_on_io_done" => &[IoEngine::Cpuio],
        "program" | "arguments" | "grace_time" | "std_redirect" => &[IoEngine::Exec],
        "donorname" | "inplace" => &[IoEngine::E4defrag],
        "hipri" => &[IoEngine::IoUring, IoEngine::IoUringCmd, IoEngine::Sg],
        // fio 3.33: libaio's and io_uring's tables (CMDPRIO_OPTIONS)
        "cmdprio" | "cmdprio_bssplit" | "cmdprio_class" | "cmdprio_percentage" => {
            &[IoEngine::IoUring, IoEngine::IoUringCmd, IoEngine::Libaio]
        }
        _ => &[IoEngine::IoUring, IoEngine::IoUringCmd],
    }
}

fn flag(value: Option<&str>) -> Result<bool, String> {
    match value {
        None => Ok(true),
        Some(v) => Ok(parse_plain_int(v)? != 0),
    }
}

/// An engine option of fio type `kind`.
const fn engine_def(name: &'static str, kind: Kind) -> OptDef {
    // fio parses a section's engine options after all of its core options
    // (`fio_options_parse`, then the engine's own table), so they come last
    // in its option list
    OptDef::new(name, kind, Opt::EngineOption, apply_def).prio(-2)
}

/// The engine options blkqos implements (applied in `engine_opts`), with fio's types.
pub(crate) static DEFS: &[OptDef] = &[
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

/// [`apply`] as the engine options' [`OptDef::apply`].
fn apply_def(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    apply(st, def.name, value).map(|_| ())
}

/// Applies engine option `name`; whether the value asks for something.
pub(crate) fn apply(st: &mut JobState, name: &str, value: Option<&str>) -> Result<bool, String> {
    match name {
        "cmdprio" | "cmdprio_bssplit" | "cmdprio_class" | "cmdprio_percentage" => {
            super::apply_prio::apply_engine(st, name, required_value(name, value)?)
        }
        "cmd_type" | "sqthread_poll" | "sqthread_poll_cpu" | "fixedbufs" | "registerfiles"
        | "nonvectored" | "hipri" | "force_async" | "uncached" | "nowait" => {
            apply_uring(&mut st.spec.engine, name, value)
        }
        _ => apply_other_engines(&mut st.spec.engine, name, value),
    }
}

/// The value of option `name`, which takes one.
fn required_value<'v>(name: &str, value: Option<&'v str>) -> Result<&'v str, String> {
    value.ok_or_else(|| format!("Option {name} requires an argument"))
}

/// The refusal of a name that is no engine option.
fn not_an_engine_option(name: &str) -> String {
    format!("`{name}` is not an engine option blkqos knows")
}

/// Applies one of io_uring's (and io_uring_cmd's) options.
fn apply_uring(e: &mut EngineSpec, name: &str, value: Option<&str>) -> Result<bool, String> {
    let need = || required_value(name, value);
    let on = match name {
        "cmd_type" => match need()? {
            "nvme" => false,
            v => return Err(format!("invalid value `{v}` (valid values: nvme)")),
        },
        "sqthread_poll" => {
            e.sqthread_poll = flag(value)?;
            e.sqthread_poll
        }
        "sqthread_poll_cpu" => {
            let cpu = parse_plain_int(need()?)?;
            e.sqthread_poll_cpu =
                Some(u32::try_from(cpu).map_err(|_| format!("CPU {cpu} out of range"))?);
            true
        }
        "fixedbufs" => {
            e.fixedbufs = flag(value)?;
            e.fixedbufs
        }
        "registerfiles" => {
            e.registerfiles = flag(value)?;
            e.registerfiles
        }
        "nonvectored" => {
            // fio's default is -1, and any value but 0 means plain
            // buffers (fio_ioring_prep tests `o->nonvectored`): only 0
            // asks for something else, READV/WRITEV
            let v = need()?;
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("invalid integer `{v}`"))?;
            e.vectored = n == 0;
            e.vectored
        }
        "hipri" => {
            e.hipri = flag(value)?;
            e.hipri
        }
        "force_async" | "uncached" => parse_plain_int(need()?)? != 0,
        "nowait" => match need()? {
            "0" => false,
            "1" => true,
            v => return Err(format!("invalid value `{v}` (valid values: 0, 1)")),
        },
        _ => return Err(not_an_engine_option(name)),
    };
    Ok(on)
}

/// Applies an option of sg, filestat/dirstat, cpuio, e4defrag or exec.
fn apply_other_engines(
    e: &mut EngineSpec,
    name: &str,
    value: Option<&str>,
) -> Result<bool, String> {
    let need = || required_value(name, value);
    let on = match name {
        "sg_write_mode" => {
            e.sg_write_mode = parse_sg_write_mode(need()?)?;
            e.sg_write_mode != SgWriteMode::Write
        }
        "stat_type" => {
            e.stat_type = match need()? {
                "stat" => StatType::Stat,
                "lstat" => StatType::Lstat,
                "statx" => StatType::Statx,
                v => {
                    return Err(format!(
                        "invalid value `{v}` (valid values: stat, lstat, statx)"
                    ))
                }
            };
            // every backend that runs filestat does what it says
            false
        }
        "cpuload" | "cpuchunks" | "cpumode" | "exit_on_io_done" => {
            super::engine_host::apply_cpu(&mut e.cpu, name, value)?
            // (true: exit_on_io_done=1, which the real engine refuses)
        }
        "donorname" => {
            e.donor_name = Some(need()?.to_string());
            false
        }
        "inplace" => {
            e.inplace = match parse_plain_int(need()?)? {
                0 => false,
                1 => true,
                v => return Err(format!("value {v} out of range (0 to 1)")),
            };
            false
        }
        "program" | "arguments" | "grace_time" | "std_redirect" => {
            super::engine_host::apply_exec(&mut e.exec, name, value)?;
            false
        }
        _ => return Err(not_an_engine_option(name)),
    };
    Ok(on)
}

/// The engine option `name` back at its default: an option of another
/// engine inherited from `[global]`, which fio never applies to the job.
fn forget(e: &mut blkqos_workload::spec::EngineSpec, name: &str) {
    let d = blkqos_workload::spec::EngineSpec::default();
    match name {
        "donorname" => e.donor_name = d.donor_name,
        "inplace" => e.inplace = d.inplace,
        "stat_type" => e.stat_type = d.stat_type,
        "sg_write_mode" => e.sg_write_mode = d.sg_write_mode,
        "cpuload" | "cpuchunks" | "cpumode" => e.cpu = d.cpu,
        "program" | "arguments" | "grace_time" | "std_redirect" => e.exec = d.exec,
        "sqthread_poll" => e.sqthread_poll = d.sqthread_poll,
        "sqthread_poll_cpu" => e.sqthread_poll_cpu = d.sqthread_poll_cpu,
        "fixedbufs" => e.fixedbufs = d.fixedbufs,
        "registerfiles" => e.registerfiles = d.registerfiles,
        "nonvectored" => e.vectored = d.vectored,
        _ => {}
    }
}

/// `sg_write_mode=` values (fio 3.33, deprecated aliases included).
fn parse_sg_write_mode(v: &str) -> Result<SgWriteMode, String> {
    Ok(match v {
        "write" => SgWriteMode::Write,
        "write_and_verify" | "verify" => SgWriteMode::WriteAndVerify,
        "write_same" | "same" => SgWriteMode::WriteSame,
        "write_same_ndob" => SgWriteMode::WriteSameNdob,
        "verify_bytchk_00" => SgWriteMode::VerifyBytchk00,
        "verify_bytchk_01" => SgWriteMode::VerifyBytchk01,
        "verify_bytchk_11" => SgWriteMode::VerifyBytchk11,
        "write_stream" => SgWriteMode::WriteStream,
        _ => {
            return Err(format!(
                "invalid value `{v}` (valid values: write, write_and_verify, verify, write_same, \
                 same, write_same_ndob, verify_bytchk_00, verify_bytchk_01, verify_bytchk_11, \
                 write_stream)"
            ))
        }
    })
}

/// Remembers where an engine option or `ioengine` was given (a later
/// value of the same option replaces it).
pub(crate) fn record(
    st: &mut JobState,
    def: &OptDef,
    on: bool,
    written: (&str, Option<&str>),
    loc: &Loc,
) {
    st.engine_given.retain(|g| g.name != def.name);
    st.engine_given.push(Given {
        name: def.name,
        written: written.0.to_string(),
        value: written.1.map(str::to_string),
        on,
        loc: loc.clone(),
        from_global: false,
    });
}

/// Why the simulator (and the real engine) cannot honour an option: its
/// refusal, or None when the simulator runs it.
fn refused_everywhere(name: &str) -> Option<&'static str> {
    Some(match name {
        "force_async" => {
            "force_async=N hands every Nth IO to io_uring's worker threads (IOSQE_ASYNC): \
             neither backend has such workers; leave force_async out"
        }
        "uncached" => {
            "uncached=N asks for RWF_UNCACHED, which Linux never merged: fio 3.33 sends flag \
             0x40, which Linux 6.11+ reads as RWF_ATOMIC; leave uncached out (buffered IO \
             goes through the page cache)"
        }
        "nowait" => {
            "nowait=1 makes IO that would block fail with EAGAIN (RWF_NOWAIT): blkqos models \
             no such failure; leave nowait out"
        }
        _ => return None,
    })
}

/// Why the real engine cannot honour an option that is on.
fn refused_on_real(name: &str) -> &'static str {
    match name {
        "nonvectored" => {
            "nonvectored=0 asks for READV/WRITEV; the real engine issues plain READ/WRITE \
             (what fio does with nonvectored at its default, -1, or 1); leave nonvectored=0 \
             out or run it on the simulator"
        }
        "sg_write_mode" => "the sg engine does not run on the real engine",
        "exit_on_io_done" => {
            "exit_on_io_done=1 ends a cpuio job when fio's IO jobs are done; the real engine \
             runs cpuio jobs only beside other jobs that do no block IO, so there are none to \
             wait for: give the job a runtime instead"
        }
        _ => "the real engine does not implement it; run it on the simulator",
    }
}

/// What the real engine says about a passthrough engine.
fn real_engine_refusal(e: IoEngine) -> &'static str {
    match e {
        IoEngine::IoUringCmd => {
            "ioengine=io_uring_cmd sends NVMe commands to an NVMe generic character device \
             (/dev/ngXnY); the real engine drives files and block devices with read/write \
             IO only: run it on the simulator (the default backend), or use ioengine=io_uring \
             on the namespace's block device (/dev/nvmeXnY)"
        }
        _ => {
            "ioengine=sg sends SCSI commands by SG_IO; the real engine drives files and block \
             devices with read/write IO only: run it on the simulator (the default backend), \
             or use ioengine=psync or io_uring on the block device"
        }
    }
}

/// Checks the engine options given against the job's engine (fio: "Bad
/// option"), refuses what no backend honours, notes what the simulator
/// does with the rest, and records the real engine's refusal.
pub(crate) fn finish(s: &mut JobSpec, given: &[Given]) -> Result<(), ParseError> {
    let engine = s.ioengine;
    for g in given.iter().filter(|g| g.name != "ioengine") {
        check_given(s, given, g)?;
    }
    if engine.is_file_metadata() {
        super::engine_meta::check(s, given)?;
    }
    if engine == IoEngine::Libzbc {
        let why = "ioengine=libzbc needs libzbc and a zoned SCSI or ATA disk (ZBC/ZAC); the real \
                   engine does not run it: use ioengine=psync or libaio with zonemode=zbd, or run \
                   the job on the simulator (a zoned null_blk)";
        s.engine.real_refusal = Some(match given.iter().find(|g| g.name == "ioengine") {
            Some(g) => refusal_text(g, why),
            None => why.to_string(),
        });
    }
    if engine.is_file_call() {
        super::engine_meta::file_call_refusal(s, given)?;
    }
    if engine.is_host_task() {
        super::engine_host::check(s, given)?;
    }
    super::engine_mapped::check(s, given)?;
    if engine.is_passthrough() {
        passthrough_checks(s, given)?;
        if let Some(g) = given.iter().find(|g| g.name == "ioengine") {
            s.engine.real_refusal = Some(refusal_text(g, real_engine_refusal(engine)));
        } else {
            s.engine.real_refusal = Some(real_engine_refusal(engine).to_string());
        }
    }
    Ok(())
}

/// The error for engine option `g` of job `job`.
fn given_error(g: &Given, job: &str, m: String) -> ParseError {
    g.loc
        .option_error(&g.written, g.value.as_deref(), format!("job `{job}`: {m}"))
}

/// One engine option given to the job: dropped when it is another
/// engine's from `[global]`, refused, or recorded when it is on.
fn check_given(s: &mut JobSpec, given: &[Given], g: &Given) -> Result<(), ParseError> {
    let engine = s.ioengine;
    let err = |m: String| Err(given_error(g, &s.name, m));
    let job_engine = given.iter().any(|i| i.name == "ioengine" && !i.from_global);
    if !owners(g.name).contains(&engine) && g.from_global && job_engine {
        // fio parsed it into the [global] engine's options; the job's
        // own engine never sees it
        s.notes.push(format!(
            "{}{}: an option of the [global] section's engine, not of this job's                  ioengine={}: fio ignores it here",
            g.written,
            g.value.as_deref().map_or(String::new(), |v| format!("={v}")),
            engine.fio_name()
        ));
        forget(&mut s.engine, g.name);
        return Ok(());
    }
    if !owners(g.name).contains(&engine) {
        let names: Vec<&str> = owners(g.name).iter().map(|e| e.fio_name()).collect();
        return err(format!(
            "`{}` is an option of ioengine={}, but the job uses ioengine={} \
             (fio 3.33: \"Bad option\")",
            g.name,
            names.join(" and "),
            engine.fio_name()
        ));
    }
    if !g.on {
        return Ok(());
    }
    refuse_given(s, g)?;
    record_given(s, g);
    Ok(())
}

/// What no backend runs of engine option `g`, which is on: its refusal.
fn refuse_given(s: &JobSpec, g: &Given) -> Result<(), ParseError> {
    let engine = s.ioengine;
    let err = |m: String| Err(given_error(g, &s.name, m));
    if let Some(why) = refused_everywhere(g.name) {
        return err(format!("unsupported: {why}"));
    }
    if g.name == "sg_write_mode"
        && s.engine.sg_write_mode.compares_data()
        && !known_contents(&s.buffers)
    {
        return err(format!(
            "unsupported on the simulator: sg_write_mode={} has the device compare the data sent with its \
             medium, and the job's write buffers are fio's random fill, whose bytes the simulator \
             does not reproduce (so whether the compare fails, a MISCOMPARE that fio reports as \
             EIO, cannot be known); give the job buffer_pattern= (or zero_buffers) as the data to \
             compare, or use verify_bytchk_00 (the device checks its medium only)",
            s.engine.sg_write_mode.fio_name()
        ));
    }
    if g.name == "sqthread_poll" && s.iodepth_batch > 1 {
        return err(format!(
            "unsupported: sqthread_poll=1 with iodepth_batch_submit={}: the simulator's batched submit \
             calls are system calls, which a polled submission queue does away with; \
             leave iodepth_batch_submit out (or 1)",
            s.iodepth_batch
        ));
    }
    if g.name == "hipri" && s.ioengine != IoEngine::IoUring {
        return err(format!(
            "unsupported: hipri=1 with ioengine={}: blkqos polls completions only on \
             the real engine's io_uring ring; use ioengine=io_uring",
            engine.fio_name()
        ));
    }
    Ok(())
}

/// What the backends make of engine option `g`, which is on: the
/// simulator's or the real engine's refusal, or the simulator's note.
fn record_given(s: &mut JobSpec, g: &Given) {
    let engine = s.ioengine;
    if g.name == "hipri" {
        if s.engine.sim_refusal.is_none() {
            s.engine.sim_refusal = Some(refusal_text(
                g,
                "unsupported on the simulator: hipri=1 polls for completions \
                 (IORING_SETUP_IOPOLL) to save the interrupt, and the simulated device \
                 raises none: run it with --backend=real on a device with poll queues \
                 (e.g. nvme poll_queues=N; files on a file system fail it with \
                 EOPNOTSUPP, as in fio), or leave hipri out",
            ));
        }
        return;
    }
    if matches!(g.name, "sqthread_poll" | "sqthread_poll_cpu") && engine == IoEngine::IoUring {
        // the real engine's ring takes IORING_SETUP_SQPOLL (and the CPU)
        if let Some(n) = sim_note(g.name, s) {
            s.notes.push(n);
        }
        return;
    }
    if g.name.starts_with("cmdprio") {
        // both backends tag the IOs; the real engine sets the SQE's ioprio
        return;
    }
    if matches!(g.name, "fixedbufs" | "registerfiles") {
        // checked when the real engine has opened its ring
        if s.engine.registration_at.is_none() {
            let at = g.loc.option_error(&g.written, g.value.as_deref(), "");
            let at = at.to_string();
            s.engine.registration_at = Some(at.trim_end_matches(": ").to_string());
        }
    } else if s.engine.real_refusal.is_none() {
        s.engine.real_refusal = Some(refusal_text(g, refused_on_real(g.name)));
    }
    if let Some(n) = sim_note(g.name, s) {
        s.notes.push(n);
    }
}

/// The job's write buffers hold what the simulator can compare: a
/// pattern or zeros, without compression or dedupe (fio `fill_io_buffer`).
fn known_contents(b: &blkqos_workload::spec_verify::BufferSpec) -> bool {
    b.compress_percentage == 0
        && b.dedupe_percentage == 0
        && (b.pattern.as_ref().is_some_and(|p| !p.is_empty()) || b.zero)
}

/// The logical block size of a simulated device.
const PASSTHROUGH_LBA_BYTES: u64 = 512;

/// What the simulator cannot run of a passthrough engine's job.
fn passthrough_checks(s: &JobSpec, given: &[Given]) -> Result<(), ParseError> {
    let Some(g) = given.iter().find(|g| g.name == "ioengine") else {
        return Ok(());
    };
    let err = |m: String| {
        Err(g.loc.option_error(
            &g.written,
            g.value.as_deref(),
            format!("job `{}`: {m}", s.name),
        ))
    };
    if s.iodepth_batch > 1 {
        return err(format!(
            "unsupported: ioengine={} with iodepth_batch_submit={}: the simulator's batched submit runs \
             bios through a plug, and passthrough requests are no bios; leave \
             iodepth_batch_submit out (or 1)",
            s.ioengine.fio_name(),
            s.iodepth_batch
        ));
    }
    // fio: sg's fio_sgio_prep fails an IO that is not a whole number of
    // sectors (EINVAL); io_uring_cmd refuses a block size that is not a
    // multiple of the namespace's LBA size. Simulated devices have 512.
    let sizes = Ddir::ALL.into_iter().flat_map(|d| {
        let split = s
            .bssplit
            .as_ref()
            .map(|b| b[d].iter().map(|e| e.bs).collect::<Vec<_>>());
        [s.min_bs(d), s.max_bs(d)]
            .into_iter()
            .chain(split.unwrap_or_default())
    });
    if let Some(bad) = sizes.into_iter().find(|b| b % PASSTHROUGH_LBA_BYTES != 0) {
        return err(format!(
            "unsupported: ioengine={} sends commands in whole logical blocks ({PASSTHROUGH_LBA_BYTES} bytes \
             on the simulated device): block size {bad} is not a multiple",
            s.ioengine.fio_name()
        ));
    }
    if s.ioengine == IoEngine::IoUringCmd && s.rw.has_trim() {
        return err(format!(
            "unsupported: ioengine=io_uring_cmd with rw={}: fio 3.33 builds NVMe read and write commands \
             only (fio_nvme_uring_cmd_prep fails others with ENOTSUP); use rw= without trims",
            s.rw.fio_name()
        ));
    }
    Ok(())
}

fn refusal_text(g: &Given, why: &str) -> String {
    let e = g.loc.option_error(&g.written, g.value.as_deref(), why);
    e.to_string()
}

/// What the simulator does with an engine option that is on.
fn sim_note(name: &str, s: &JobSpec) -> Option<String> {
    Some(match name {
        "nonvectored" => "nonvectored=0 (simulator only): READV/WRITEV instead of READ/WRITE \
                          changes only the kernel's per-IO work, which the simulator's submit \
                          cost (submit_ns) does not separate; the IOs, their order, sizes and \
                          offsets are the same"
            .into(),
        "fixedbufs" | "registerfiles" => format!(
            "{name}=1: on the simulator it saves the kernel work of mapping buffers or looking \
             the file up per IO, which the modelled submit cost (submit_ns) does not separate \
             (the IOs, their order, sizes and offsets are the same); the real engine's io_uring \
             ring registers them"
        ),
        "sqthread_poll_cpu" if !s.engine.sqthread_poll => {
            "sqthread_poll_cpu has no effect without sqthread_poll=1 (as in fio)".into()
        }
        "sqthread_poll_cpu" => "sqthread_poll_cpu (simulator only): the simulator models no CPUs; \
                                where the polling thread runs changes nothing it shows"
            .into(),
        _ => return None,
    })
}

/// Engine-private options that differ from their defaults, as fio options
/// (`to_fio_args`).
pub(crate) fn render(j: &blkqos_workload::JobSpec, push: &mut impl FnMut(&str, String)) {
    let e = &j.engine;
    if j.ioengine == blkqos_workload::IoEngine::IoUringCmd {
        push("cmd_type", "nvme".into());
    }
    for (name, on) in [
        ("sqthread_poll", e.sqthread_poll),
        ("fixedbufs", e.fixedbufs),
        ("registerfiles", e.registerfiles),
    ] {
        if on {
            push(name, "1".into());
        }
    }
    if let Some(cpu) = e.sqthread_poll_cpu {
        push("sqthread_poll_cpu", cpu.to_string());
    }
    if e.vectored {
        push("nonvectored", "0".into());
    }
    super::apply_prio::render(j, push);
    if matches!(
        j.ioengine,
        blkqos_workload::IoEngine::Filestat | blkqos_workload::IoEngine::Dirstat
    ) {
        push("stat_type", e.stat_type.fio_name().into());
    }
    if e.sg_write_mode != blkqos_workload::spec::SgWriteMode::Write {
        push("sg_write_mode", e.sg_write_mode.fio_name().into());
    }
    super::engine_mapped::render(j, push);
    match j.ioengine {
        blkqos_workload::IoEngine::Cpuio => {
            push("cpuload", e.cpu.load_pct.to_string());
            push("cpuchunks", e.cpu.chunk_us.to_string());
            push("cpumode", e.cpu.mode.fio_name().into());
            if e.cpu.exit_on_io_done {
                push("exit_on_io_done", "1".into());
            }
        }
        blkqos_workload::IoEngine::E4defrag => {
            if let Some(d) = &e.donor_name {
                push("donorname", d.clone());
            }
            push("inplace", u8::from(e.inplace).to_string());
        }
        blkqos_workload::IoEngine::Exec => {
            if let Some(p) = &e.exec.program {
                push("program", p.clone());
            }
            if let Some(a) = &e.exec.arguments {
                push("arguments", a.clone());
            }
            push("grace_time", e.exec.grace_time_s.to_string());
            push("std_redirect", u8::from(e.exec.std_redirect).to_string());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defs_are_fio_engine_options() {
        for d in super::DEFS {
            assert!(
                super::super::known::ENGINE_OPTIONS.contains(&d.name),
                "{}",
                d.name
            );
        }
        assert!(super::DEFS.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn sg_modes_and_what_they_become() {
        assert_eq!(
            parse_sg_write_mode("same"),
            Ok(SgWriteMode::WriteSame),
            "deprecated alias"
        );
        assert!(parse_sg_write_mode("verify_bytchk_01")
            .unwrap()
            .device_reads());
        assert!(!parse_sg_write_mode("write_same_ndob")
            .unwrap()
            .device_reads());
        assert!(parse_sg_write_mode("bytchk").is_err());
    }

    fn job(text: &str) -> Result<JobSpec, ParseError> {
        let fs = super::super::ini::tests::MemFs::default();
        let no_env = |_: &str| None;
        super::super::parse_files_with(&[("t.fio".into(), text.into())], &no_env, &fs)
            .map(|mut set| set.jobs.remove(0))
    }

    #[test]
    fn uring_cmd_job() {
        let j = job(
            "[a]\nioengine=io_uring_cmd\ncmd_type=nvme\nsqthread_poll=1\n\
                     registerfiles\nnonvectored=1\niodepth=8\n",
        )
        .unwrap();
        assert_eq!(j.ioengine, IoEngine::IoUringCmd);
        assert!(j.ioengine.is_passthrough() && !j.ioengine.is_sync());
        assert!(j.engine.sqthread_poll && j.engine.registerfiles && !j.engine.vectored);
        let why = j.engine.real_refusal.unwrap();
        assert!(
            why.starts_with("t.fio:2: option `ioengine`: value `io_uring_cmd`: "),
            "{why}"
        );
        assert!(j.notes.iter().any(|n| n.starts_with("registerfiles=1")));
    }

    #[test]
    fn uring_flags_on_io_uring() {
        let j = job("[a]\nioengine=io_uring\nsqthread_poll=1\nfixedbufs\n").unwrap();
        assert_eq!(
            j.engine.registration_at.as_deref(),
            Some("t.fio:4: option `fixedbufs`")
        );
        assert!(j.engine.sqthread_poll);
        assert_eq!(j.engine.real_refusal, None, "the real ring takes SQPOLL");
        // off values ask for nothing
        let j = job("[a]\nioengine=io_uring\nsqthread_poll=0\nnonvectored=-1\n").unwrap();
        assert_eq!(j.engine.real_refusal, None);
        assert!(!j.engine.sqthread_poll && !j.engine.vectored);
        let j = job("[a]\nioengine=io_uring\nnonvectored=0\n").unwrap();
        assert!(j.engine.vectored && j.engine.real_refusal.is_some());
        // given before ioengine in the section, as fio allows
        let j = job("[a]\nsqthread_poll=1\nioengine=io_uring\n").unwrap();
        assert!(j.engine.sqthread_poll);
    }

    #[test]
    fn refusals() {
        let msg = |t: &str| job(t).unwrap_err().to_string();
        let m = msg("[a]\nioengine=libaio\nsqthread_poll=1\n");
        assert!(m.starts_with("t.fio:3: option `sqthread_poll`: value `1`: job `a`: `sqthread_poll` is an option of ioengine=io_uring and io_uring_cmd, but the job uses ioengine=libaio"), "{m}");
        let m = msg("[global]\nsqthread_poll=1\n[a]\n");
        assert!(m.contains("ioengine=psync"), "{m}");
        // hipri: the real engine's ring polls; the simulator refuses it
        let j = job("[a]\nioengine=io_uring\nhipri\n").unwrap();
        assert!(j.engine.hipri && j.engine.real_refusal.is_none());
        let why = j.engine.sim_refusal.unwrap();
        assert!(
            why.starts_with("t.fio:3: option `hipri`") && why.contains("IOPOLL"),
            "{why}"
        );
        assert!(msg("[a]\nioengine=sg\nhipri\n").contains("use ioengine=io_uring"));
        let j = job("[a]\nioengine=io_uring\nsqthread_poll=1\nsqthread_poll_cpu=0\n").unwrap();
        assert!(
            j.engine.real_refusal.is_none(),
            "the real ring takes SQPOLL"
        );
        for (opt, says) in [
            ("force_async=2", "IOSQE_ASYNC"),
            ("uncached=1", "RWF_ATOMIC"),
            ("nowait=1", "EAGAIN"),
        ] {
            let m = msg(&format!("[a]\nioengine=io_uring\n{opt}\n"));
            assert!(m.starts_with("t.fio:3: option `"), "{m}");
            assert!(m.contains(says), "{m}");
        }
        assert!(job("[a]\nioengine=io_uring\nforce_async=0\nuncached=0\nnowait=0\n").is_ok());
        let m = msg("[a]\nioengine=io_uring_cmd\ncmd_type=scsi\n");
        assert!(m.contains("valid values: nvme"), "{m}");
        let m = msg("[a]\nioengine=io_uring_cmd\nrw=randtrim\n");
        assert!(m.contains("ENOTSUP"), "{m}");
        let m = msg("[a]\nioengine=sg\nbs=1000\n");
        assert!(m.contains("block size 1000"), "{m}");
        let m = msg("[a]\nioengine=sg\nrw=write\nsg_write_mode=verify_bytchk_01\n");
        assert!(
            m.starts_with("t.fio:4: option `sg_write_mode`") && m.contains("random fill"),
            "{m}"
        );
        let ok = "[a]\nioengine=sg\nrw=write\nbs=512\nbuffer_pattern=0x01\nsg_write_mode=verify_bytchk_11\n";
        assert!(job(ok).is_ok());
        let m = msg("[a]\nioengine=io_uring_cmd\niodepth=8\niodepth_batch_submit=4\n");
        assert!(m.contains("plug"), "{m}");
        let m = msg("[a]\nioengine=io_uring\nsqthread_poll\niodepth=8\niodepth_batch_submit=4\n");
        assert!(m.contains("polled submission queue"), "{m}");
    }

    #[test]
    fn sg_job() {
        let j = job("[a]\nioengine=sg\nrw=write\nbs=512\nsg_write_mode=write_same_ndob\n").unwrap();
        assert!(j.ioengine.is_sync() && j.ioengine.is_passthrough());
        assert_eq!(j.engine.sg_write_mode, SgWriteMode::WriteSameNdob);
        assert!(j.engine.real_refusal.unwrap().contains("SG_IO"));
    }

    #[test]
    fn metadata_engines() {
        let j = job("[a]\nioengine=filestat\nstat_type=statx\nnrfiles=3\nunlink=0\n").unwrap();
        assert_eq!(j.engine.stat_type, StatType::Statx);
        assert!(j.ioengine.is_file_metadata() && j.ioengine.is_sync());
        let why = j.engine.sim_refusal.unwrap();
        assert!(
            why.starts_with("t.fio:2: option `ioengine`: value `filestat`"),
            "{why}"
        );
        assert_eq!(j.engine.real_refusal, None);
        let msg = |t: &str| job(t).unwrap_err().to_string();
        let m = msg("[a]\nioengine=filecreate\nruntime=1\ntime_based\n");
        assert!(m.contains("time_based"), "{m}");
        let m = msg("[a]\nioengine=filecreate\nstat_type=lstat\n");
        assert!(m.contains("option of ioengine=filestat"), "{m}");
        let m = msg("[a]\nioengine=filestat\nrate_iops=10\n");
        assert!(m.contains("with rate_iops"), "{m}");
        let m = msg("[a]\nioengine=filedelete\nunlink=1\n");
        assert!(m.contains("not implemented"), "{m}");
    }
}
