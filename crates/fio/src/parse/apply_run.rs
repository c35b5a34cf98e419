//! Applying the options that tie jobs together: `wait_for`, `exitall`,
//! `exit_what`, `exitall_on_error` (fio 3.33 `options.c`:
//! `str_exitall_cb`, the `exit_what` posval table).

use blkqos_workload::spec_run::ExitWhat;

use super::options::{Kind, Opt, OptDef};
use super::state::JobState;
use super::units::parse_plain_int;

/// Waiting for and ending other jobs.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("wait_for", Kind::StrStore, Opt::WaitFor, apply),
    OptDef::new("exitall", Kind::StrSet, Opt::ExitAll, apply),
    OptDef::new("exit_what", Kind::Str, Opt::ExitWhat, apply),
    OptDef::new("exitall_on_error", Kind::StrSet, Opt::ExitAllOnError, apply),
];

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    let c = &mut st.spec.control;
    match (def.opt, value) {
        (Opt::ExitAll, v) => {
            // str_exitall_cb sets fio's run-wide exitall_on_terminate
            // whatever the value: `exitall=0` turns it on too
            if let Some(v) = v {
                parse_plain_int(v)?;
                if v.trim() == "0" {
                    st.spec.notes.push(
                        "exitall=0 turns exitall on, as in fio 3.33 (its callback sets the \
                         flag whatever the value); leave the option out to keep it off"
                            .into(),
                    );
                }
            }
            c.exitall = true;
            Ok(())
        }
        (Opt::ExitAllOnError, None) => {
            c.exitall_on_error = true;
            Ok(())
        }
        (Opt::ExitAllOnError, Some(v)) => parse_plain_int(v).map(|n| c.exitall_on_error = n != 0),
        (Opt::ExitWhat, Some(v)) => parse_exit_what(v).map(|w| c.exit_what = w),
        (Opt::WaitFor, Some(v)) if !v.is_empty() => {
            c.wait_for = Some(v.to_string());
            Ok(())
        }
        (Opt::WaitFor, Some(_)) => Err("empty value".into()),
        (Opt::ExitWhat | Opt::WaitFor, None) => {
            Err(format!("Option {} requires an argument", def.name))
        }
        _ => unreachable!("DEFS lists the options apply_run owns"),
    }
}

fn parse_exit_what(v: &str) -> Result<ExitWhat, String> {
    match v {
        "group" => Ok(ExitWhat::Group),
        "stonewall" => Ok(ExitWhat::Stonewall),
        "all" => Ok(ExitWhat::All),
        _ => Err(format!(
            "invalid value `{v}` (valid values: group, stonewall, all)"
        )),
    }
}

/// These options of a job back as fio options (`to_fio_args`).
pub(crate) fn render(j: &blkqos_workload::JobSpec, push: &mut impl FnMut(&str, String)) {
    let c = &j.control;
    if let Some(w) = &c.wait_for {
        push("wait_for", w.clone());
    }
    if c.exitall {
        push("exitall", "1".into());
    }
    if c.exit_what != ExitWhat::default() {
        let w = match c.exit_what {
            ExitWhat::Group => "group",
            ExitWhat::Stonewall => "stonewall",
            ExitWhat::All => "all",
        };
        push("exit_what", w.into());
    }
    if c.exitall_on_error {
        push("exitall_on_error", "1".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::registry::{lookup, Lookup};

    fn with(opts: &[(&str, Option<&str>)]) -> Result<JobState, String> {
        let mut st = JobState::new();
        for (n, v) in opts {
            match lookup(n) {
                Lookup::Supported(d) => super::super::apply::apply(&mut st, d, *v)?,
                other => panic!("{n}: {other:?}"),
            }
        }
        Ok(st)
    }

    #[test]
    fn exit_options() {
        let c = with(&[("exitall", None)]).unwrap().spec.control;
        assert!(c.exitall && !c.exitall_on_error);
        assert_eq!(c.exit_what, ExitWhat::Group);
        let st = with(&[("exitall", Some("0"))]).unwrap();
        assert!(st.spec.control.exitall, "fio's callback ignores the value");
        assert!(st.spec.notes.iter().any(|n| n.contains("exitall=0")));
        let c = with(&[("exit_what", Some("stonewall")), ("exitall_on_error", None)])
            .unwrap()
            .spec
            .control;
        assert_eq!(c.exit_what, ExitWhat::Stonewall);
        assert!(c.exitall_on_error && !c.exitall);
        assert_eq!(
            with(&[("exit_what", Some("all"))])
                .unwrap()
                .spec
                .control
                .exit_what,
            ExitWhat::All
        );
        assert!(with(&[("exit_what", Some("everything"))]).is_err());
        assert!(with(&[("exit_what", None)]).is_err());
        assert!(
            !with(&[("exitall_on_error", Some("0"))])
                .unwrap()
                .spec
                .control
                .exitall_on_error
        );
        assert!(with(&[("exitall", Some("x"))]).is_err());
    }

    #[test]
    fn wait_for_names_a_job() {
        let c = with(&[("wait_for", Some("writers"))]).unwrap().spec.control;
        assert_eq!(c.wait_for.as_deref(), Some("writers"));
        assert!(with(&[("wait_for", Some(""))]).is_err());
        assert!(with(&[("wait_for", None)]).is_err());
    }
}
