//! The fio command line (mirrors fio 3.33 `init.c: parse_cmd_line`,
//! `parse_output_format`, `parse_options`).
//!
//! * `--name=X` ends the current job and starts a new one; `--name=global`
//!   (any name starting with `global`) makes the following options global.
//! * Other job options apply to the current job, or to the globals before
//!   the first `--name`.
//! * `--opt=value` or `--opt value`; flag options (`--time_based`) take a
//!   value only with `=`. A single leading `-` works too
//!   (`getopt_long_only`). Unlike getopt, abbreviations are not accepted.
//! * Bare arguments are job files, parsed after the command-line jobs: the
//!   command-line globals carry into the first file, later files start from
//!   fio's defaults and are separated by a stonewall.
//! * Flags named in `foreign` are the caller's, and are returned untouched.

use super::apply::JobState;
use super::error::{Loc, ParseError};
use super::ini::Fs;
use super::job::{find_option, set_option, Builder};
use super::options::{Kind, Opt};
use super::registry::{lookup, suggest, Lookup};
use super::{CliParse, OutputFormat};

/// fio's command-line-only options other than `--output` and
/// `--output-format`, none of which blkqos implements (`init.c: l_opts`).
const FIO_CLI_ONLY: &[&str] = &[
    "latency-log",
    "bandwidth-log",
    "minimal",
    "append-terse",
    "version",
    "help",
    "cmdhelp",
    "enghelp",
    "readonly",
    "eta",
    "eta-interval",
    "eta-newline",
    "debug",
    "section",
    "inflate-log",
    "alloc-size",
    "profile",
    "warnings-fatal",
    "max-jobs",
    "terse-version",
    "server",
    "server-internal",
    "daemonize",
    "client",
    "remote-config",
    "cpuclock-test",
    "crctest",
    "memcpytest",
    "idle-prof",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
    "aux-path",
    "merge-blktrace-only",
];

/// A caller flag: `name` takes a value (`--name=v` or `--name v`); `name?`
/// is a switch (bare, or `--name=v`). `-` in its name may be written `_`.
struct Foreign<'f> {
    name: &'f str,
    switch: bool,
}

fn find_foreign<'f>(foreign: &[&'f str], name: &str) -> Option<Foreign<'f>> {
    foreign.iter().find_map(|f| {
        let f = f.trim_start_matches('-');
        let (n, switch) = match f.strip_suffix('?') {
            Some(n) => (n, true),
            None => (f, false),
        };
        // fio spells its options with `_`: the caller's `a-b` is also `a_b`
        let same = n.len() == name.len()
            && n.bytes()
                .zip(name.bytes())
                .all(|(a, b)| a == b || (a == b'-' && b == b'_'));
        same.then_some(Foreign { name: n, switch })
    })
}

/// Where command-line options currently go.
enum Target {
    /// Nothing yet since the start or the last `--name` (fio: `td == NULL`).
    None,
    Global,
    Job(Box<JobState>),
}

/// `parse_output_format`: a comma list; each use replaces the previous.
fn parse_output_format(v: &str) -> Result<Vec<OutputFormat>, String> {
    let mut out = Vec::new();
    for f in v.split(',') {
        let fmt = match f {
            "normal" => OutputFormat::Normal,
            "json" => OutputFormat::Json,
            "json+" => OutputFormat::JsonPlus,
            "terse" => OutputFormat::Terse,
            "minimal" | "csv" => {
                return Err(format!(
                    "unsupported output format `{f}` (blkqos writes normal, json, json+ and terse)"
                ))
            }
            _ => {
                return Err(format!(
                    "invalid output format `{f}` (valid: normal, json, json+, terse)"
                ))
            }
        };
        if !out.contains(&fmt) {
            out.push(fmt);
        }
    }
    Ok(out)
}

struct Args<'a> {
    args: &'a [String],
    pos: usize,
}

impl<'a> Args<'a> {
    /// The value of a required-argument option: after `=`, else the next
    /// argument whatever it looks like (getopt's `required_argument`).
    fn value(
        &mut self,
        inline: Option<&'a str>,
        name: &str,
        loc: &Loc,
    ) -> Result<&'a str, ParseError> {
        if let Some(v) = inline {
            return Ok(v);
        }
        let v = self.args.get(self.pos).ok_or_else(|| {
            loc.option_error(name, None, format!("option {name} requires an argument"))
        })?;
        self.pos += 1;
        Ok(v)
    }
}

/// The command line read so far: the jobs being built and what fio's own
/// command-line options and the caller's flags said.
struct CmdLine<'a> {
    loc: Loc,
    b: Builder<'a>,
    target: Target,
    output: Option<String>,
    output_format: Vec<OutputFormat>,
    job_files: Vec<String>,
    other: Vec<(String, String)>,
    parse_only: bool,
    showcmd: bool,
    status_interval_ms: Option<u64>,
}

/// Parses fio's command line `args` (see the module documentation).
pub(crate) fn parse_args(
    args: &[String],
    foreign: &[&str],
    env: &dyn Fn(&str) -> Option<String>,
    fs: &dyn Fs,
) -> Result<CliParse, ParseError> {
    let mut cl = CmdLine {
        loc: Loc::command_line(),
        b: Builder::new(env, fs),
        target: Target::None,
        output: None,
        output_format: vec![OutputFormat::Normal],
        job_files: Vec::new(),
        other: Vec::new(),
        parse_only: false,
        showcmd: false,
        status_interval_ms: None,
    };
    let mut it = Args { args, pos: 0 };
    let mut only_files = false;

    while let Some(arg) = args.get(it.pos) {
        it.pos += 1;
        if only_files || !arg.starts_with('-') || arg == "-" {
            cl.job_file(arg)?;
            continue;
        }
        if arg == "--" {
            only_files = true;
            continue;
        }
        cl.option(arg, &mut it, foreign)?;
    }
    cl.finish()
}

impl CmdLine<'_> {
    /// A bare argument: a job file to parse after the command-line jobs.
    fn job_file(&mut self, arg: &str) -> Result<(), ParseError> {
        if arg == "-" {
            return Err(self
                .loc
                .error("reading a job file from standard input (`-`) is not supported"));
        }
        self.job_files.push(arg.to_string());
        Ok(())
    }

    /// One `-opt` or `--opt[=value]` argument: a caller's flag, one of fio's
    /// command-line options, or a job option.
    fn option<'s>(
        &mut self,
        arg: &'s str,
        it: &mut Args<'s>,
        foreign: &[&str],
    ) -> Result<(), ParseError> {
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        if let Some(f) = find_foreign(foreign, name) {
            let value = match inline {
                Some(v) => v,
                None if f.switch => "",
                None => it.value(None, name, &self.loc)?,
            };
            self.other.push((f.name.to_string(), value.to_string()));
            return Ok(());
        }
        let loc = &self.loc;
        match name {
            "output" => self.output = Some(it.value(inline, name, loc)?.to_string()),
            "parse-only" => self.parse_only = switch(name, inline, loc)?,
            "showcmd" => self.showcmd = switch(name, inline, loc)?,
            "status-interval" => {
                let v = it.value(inline, name, loc)?;
                let ms =
                    parse_status_interval(v).map_err(|m| loc.option_error(name, Some(v), m))?;
                self.status_interval_ms = Some(ms);
            }
            "output-format" => {
                let v = it.value(inline, name, loc)?;
                self.output_format =
                    parse_output_format(v).map_err(|m| loc.option_error(name, Some(v), m))?;
            }
            _ if FIO_CLI_ONLY.contains(&name) => {
                return Err(loc.option_error(
                    name,
                    inline,
                    format!("unsupported fio command-line option `--{name}`"),
                ));
            }
            _ => self.job_option(name, inline, it, foreign)?,
        }
        Ok(())
    }

    /// A fio job option, applied to the current job or to the globals.
    fn job_option<'s>(
        &mut self,
        name: &'s str,
        inline: Option<&'s str>,
        it: &mut Args<'s>,
        foreign: &[&str],
    ) -> Result<(), ParseError> {
        let loc = &self.loc;
        if matches!(lookup(name), Lookup::Unknown) {
            return Err(unknown_flag(name, inline, foreign, loc));
        }
        let def = find_option(name, (name, inline), loc)?;
        let value = match inline {
            None if def.kind == Kind::StrSet => None,
            _ => Some(it.value(inline, name, loc)?),
        };
        if value == Some("") && def.kind != Kind::StrSet {
            return Err(loc.option_error(
                name,
                value,
                format!("option {name} requires an argument"),
            ));
        }
        self.retarget(def.opt, value)?;
        let st = match &mut self.target {
            Target::Job(st) => st,
            _ => &mut self.b.globals,
        };
        set_option(st, name, value, (name, value), &self.loc)
    }

    /// Points the target where option `opt` (with `value`) goes: `--name`
    /// ends the current job; with no target (at the start, after `--name`),
    /// `--name=global…` or any other option selects the globals, another
    /// `--name` starts a job.
    fn retarget(&mut self, opt: Opt, value: Option<&str>) -> Result<(), ParseError> {
        if opt == Opt::Name {
            if let Target::Job(st) = std::mem::replace(&mut self.target, Target::None) {
                self.b.add_job(*st, &self.loc)?;
            }
        }
        if let Target::None = self.target {
            let global = opt != Opt::Name || value.is_some_and(|v| v.starts_with("global"));
            self.target = if global {
                Target::Global
            } else {
                Target::Job(Box::new(self.b.globals.child()))
            };
        }
        Ok(())
    }

    /// Adds the last command-line job, parses the job files and returns
    /// what the command line defines.
    fn finish(mut self) -> Result<CliParse, ParseError> {
        if let Target::Job(st) = self.target {
            self.b.add_job(*st, &self.loc)?;
        }
        for (n, path) in self.job_files.iter().enumerate() {
            if n > 0 {
                self.b.reset_globals();
            }
            let text = self.b.fs().read(path).map_err(|e| {
                Loc::new(path, 0).error(format!("unable to open '{path}' job file: {e}"))
            })?;
            self.b.add_file(path, &text, n > 0)?;
        }
        let showcmd_text = self.showcmd.then(|| self.b.showcmd.concat());
        let jobs = self.b.finish();
        if jobs.jobs.is_empty() && showcmd_text.is_none() {
            return Err(self.loc.error("No job(s) defined"));
        }
        Ok(CliParse {
            jobs,
            output: self.output,
            output_format: self.output_format,
            job_files: self.job_files,
            other: self.other,
            parse_only: self.parse_only,
            showcmd: showcmd_text,
            status_interval_ms: self.status_interval_ms,
        })
    }
}

/// `--status-interval=T` in ms: a time in seconds unless a unit says
/// otherwise, at least 1 ms (fio `parse_cmd_line`: `check_str_time`, then
/// "status interval too small" below 1000 us).
pub fn parse_status_interval(v: &str) -> Result<u64, String> {
    let us = super::units::parse_time_us(v, true)?;
    if us < 1000 {
        return Err("status interval too small (at least 1 ms)".into());
    }
    Ok(us / 1000)
}

/// A command-line switch: bare, or `=1`/`=0` (fio's `--parse-only` takes no
/// value; a value other than a boolean is refused).
fn switch(name: &str, inline: Option<&str>, loc: &Loc) -> Result<bool, ParseError> {
    match inline {
        None | Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(v) => Err(loc.option_error(name, Some(v), format!("--{name} takes no value"))),
    }
}

/// An argument that is neither a fio option nor one of the caller's flags,
/// with the closest of either as a suggestion.
fn unknown_flag(name: &str, inline: Option<&str>, foreign: &[&str], loc: &Loc) -> ParseError {
    let mut extra: Vec<&str> = foreign.to_vec();
    extra.extend([
        "output",
        "output-format",
        "parse-only",
        "showcmd",
        "status-interval",
    ]);
    let hint = suggest(name, &extra).map_or(String::new(), |s| format!("; did you mean `--{s}`?"));
    loc.option_error(
        name,
        inline,
        format!("unknown option `--{name}` (neither a fio 3.33 option nor a blkqos flag){hint}"),
    )
}
