//! The engines that do no IO but work the host (`FIO_NOIO`): `cpuio`
//! (fio 3.33 engines/cpu.c: `cpuload`, `cpuchunks`, `cpumode`,
//! `exit_on_io_done`) and `exec` (engines/exec.c: `program`,
//! `arguments`, `grace_time`, `std_redirect`). Their options are applied
//! here; they run on the real engine only (`crates/experiment/src/real/host.rs`),
//! and the simulator's refusal is recorded with the place `ioengine` was
//! given.

use blkqos_workload::spec::{CpuMode, CpuSpec, ExecSpec, IoEngine, JobSpec};

use super::error::ParseError;
use super::state::Given;
use super::units::parse_plain_int;

fn bool_value(value: Option<&str>) -> Result<bool, String> {
    match value {
        None => Ok(true),
        Some(v) => Ok(parse_plain_int(v)? != 0),
    }
}

fn need<'a>(name: &str, value: Option<&'a str>) -> Result<&'a str, String> {
    value.ok_or_else(|| format!("Option {name} requires an argument"))
}

/// Applies a cpuio option; true for `exit_on_io_done=1` (which the real
/// engine refuses).
pub(crate) fn apply_cpu(c: &mut CpuSpec, name: &str, value: Option<&str>) -> Result<bool, String> {
    match name {
        "cpuload" => {
            let v = parse_plain_int(need(name, value)?)?;
            // fio_cpuio_init: more than 100 is 100
            c.load_pct = u32::try_from(v.min(100)).unwrap_or(100);
        }
        "cpuchunks" => c.chunk_us = parse_plain_int(need(name, value)?)?,
        "cpumode" => {
            c.mode = match need(name, value)? {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                v => return Err(format!("invalid value `{v}` (valid values: noop, qsort)")),
            }
        }
        _ => {
            c.exit_on_io_done = bool_value(value)?;
            return Ok(c.exit_on_io_done);
        }
    }
    Ok(false)
}

/// Applies an exec option.
pub(crate) fn apply_exec(x: &mut ExecSpec, name: &str, value: Option<&str>) -> Result<(), String> {
    match name {
        "program" => x.program = Some(need(name, value)?.to_string()),
        "arguments" => x.arguments = Some(need(name, value)?.to_string()),
        "grace_time" => x.grace_time_s = parse_plain_int(need(name, value)?)?,
        _ => x.std_redirect = bool_value(value)?,
    }
    Ok(())
}

/// Checks a cpuio or exec job (what fio's engine init refuses, and what
/// blkqos needs: a runtime) and records the simulator's refusal.
pub(crate) fn check(s: &mut JobSpec, given: &[Given]) -> Result<(), ParseError> {
    let Some(g) = given.iter().find(|g| g.name == "ioengine") else {
        return Ok(());
    };
    let engine = s.ioengine.fio_name();
    let err = |m: String| {
        Err(g.loc.option_error(
            &g.written,
            g.value.as_deref(),
            format!("job `{}`: {m}", s.name),
        ))
    };
    if s.ioengine == IoEngine::Cpuio && s.engine.cpu.load_pct == 0 {
        // fio_cpuio_init: EINVAL
        return err("cpu thread needs rate (cpuload=)".into());
    }
    if s.ioengine == IoEngine::Cpuio && s.engine.cpu.chunk_us == 0 {
        return err("cpuchunks=0: a burn cycle must last at least 1 µs".into());
    }
    if s.ioengine == IoEngine::Exec && s.engine.exec.program.is_none() {
        // fio_exec_init: EINVAL
        return err("no program is defined, it is mandatory to define one".into());
    }
    if s.runtime.is_none() {
        return err(format!(
            "unsupported: ioengine={engine} without runtime: the job has no IO to end it \
             (fio's would run on its size in zero-byte IOs); give runtime= and time_based"
        ));
    }
    let what = match s.ioengine {
        IoEngine::Cpuio => "burns the host's CPU",
        _ => "runs a program on the host",
    };
    let e = g.loc.option_error(
        &g.written,
        g.value.as_deref(),
        format!(
            "ioengine={engine} {what}: a simulation has no host to work; run it with \
             --backend=real"
        ),
    );
    s.engine.sim_refusal = Some(e.to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_exec_options() {
        let mut c = CpuSpec::default();
        assert_eq!(c.chunk_us, 50_000);
        apply_cpu(&mut c, "cpuload", Some("150")).unwrap();
        assert_eq!(c.load_pct, 100, "clamped as fio_cpuio_init");
        apply_cpu(&mut c, "cpumode", Some("qsort")).unwrap();
        assert_eq!(c.mode, CpuMode::Qsort);
        assert!(apply_cpu(&mut c, "cpumode", Some("x")).is_err());
        assert!(apply_cpu(&mut c, "exit_on_io_done", Some("1")).unwrap());
        let mut x = ExecSpec::default();
        assert_eq!((x.grace_time_s, x.std_redirect), (1, true));
        apply_exec(&mut x, "arguments", Some("%r %n")).unwrap();
        apply_exec(&mut x, "std_redirect", Some("0")).unwrap();
        assert_eq!(x.arguments.as_deref(), Some("%r %n"));
        assert!(!x.std_redirect);
    }
}
