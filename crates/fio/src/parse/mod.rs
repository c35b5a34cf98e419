//! fio 3.33 job files and command lines → typed [`JobSpec`]s.
//!
//! * [`parse_job_file`] / [`parse_job_files`]: INI job files (`[sections]`,
//!   `[global]`, comments, `include`, `${VAR}`, `$pagesize`/`$mb_memory`/
//!   `$ncpus`).
//! * [`parse_fio_args`]: a fio command line (`--name=X --opt=value ... FILE`),
//!   with room for the caller's own flags.
//! * [`showcmd`]: what `fio --showcmd FILE` prints.
//! * [`to_fio_args`]: typed jobs back to a fio command line.
//!
//! The parser follows what fio 3.33's code does (option types, value
//! splitting, unit suffixes, aliases, option order, reporting groups), and
//! is stricter where fio silently misreads input: trailing junk after a
//! number (`4x`, `1.5k`), list syntax on single-valued options, negative
//! numbers. fio options blkqos does not implement are rejected as
//! *unsupported*; names fio does not know are *unknown*.
//!
//! Modules: `units` (numbers with units), `ini` (file structure), `subst`
//! (substitutions), `options` (option types and the `OptDef` a family's
//! table lists), `registry` (the families and the lookup), `job`
//! (sections → jobs), `cli` (command line), `showcmd`, `render` (jobs →
//! command line, in fio's order), `known` (the names of all fio 3.33
//! options).
//!
//! Each option belongs to one family, a module that holds the family's
//! table (`DEFS`: name, alias, fio type, priority and the function that
//! applies it), how its values are applied, and how a job's values are
//! rendered back: `apply` (the core options; their rendering is `render`'s
//! own), `apply_ext` (files, splits, distributions, flow), `apply_verify`
//! (verify and buffer contents), `apply_prio` (priorities and CPUs),
//! `apply_run` (`wait_for`, `exitall`), `apply_steady` (steady state),
//! `apply_zone` (zones), `apply_submit` (submission and latency target),
//! `engine_mapped` (`sync`, `invalidate`) and `engine_opts` (engine-private
//! options). Adding an option is a line in its family's table, its apply
//! and render arms, and the field it sets; `tests.rs`'s
//! `every_option_round_trips_through_fio_args` fails until the three agree.

mod apply;
mod apply_ext;
mod apply_prio;
mod apply_run;
mod apply_steady;
mod apply_submit;
mod apply_verify;
mod apply_zone;
mod cli;
mod engine_host;
mod engine_mapped;
mod engine_meta;
mod engine_opts;
mod engines;
mod error;
mod ini;
mod job;
mod known;
mod limits;
mod options;
mod registry;
mod render;
mod showcmd;
mod state;
mod subst;
mod units;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use blkqos_workload::spec::JobSpec;

pub use cli::parse_status_interval;
pub use error::{ParseError, COMMAND_LINE};
pub use limits::MAX_JOBS;
pub use render::to_fio_args;

use error::Loc;
use ini::{Fs, RealFs};
use job::Builder;

/// The jobs of one fio invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSet {
    /// In definition order, before `numjobs` cloning.
    pub jobs: Vec<JobSpec>,
    /// fio's JSON `"global options"`: canonical name, verbatim value, in the
    /// order fio parsed them (bare flags left out). With several job files
    /// these are the last file's, as fio resets its globals per file.
    pub global_options: Vec<(String, String)>,
}

/// `--output-format=` values blkqos can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    /// `json+`: JSON with the latency bucket maps (implies JSON).
    JsonPlus,
    /// `terse`: fio's terse version 3 line per job.
    Terse,
}

/// A parsed fio command line.
#[derive(Clone, Debug, PartialEq)]
pub struct CliParse {
    /// The command-line jobs followed by those of the job files.
    pub jobs: JobSet,
    /// `--output=FILE`.
    pub output: Option<String>,
    /// `--output-format=`, in the order given, without duplicates;
    /// `[Normal]` when not given (fio's default).
    pub output_format: Vec<OutputFormat>,
    /// The job files named on the command line (already parsed into `jobs`).
    pub job_files: Vec<String>,
    /// The caller's `foreign` flags, `(name, value)` in order (value `""`
    /// for a bare switch).
    pub other: Vec<(String, String)>,
    /// `--parse-only`: parse (and check) everything, run nothing.
    pub parse_only: bool,
    /// `--showcmd`: what fio prints for the job files named (one line each,
    /// see [`showcmd`]); nothing runs.
    pub showcmd: Option<String>,
    /// `--status-interval=T`: a full report every T (ms), fio's
    /// `status_interval`.
    pub status_interval_ms: Option<u64>,
}

fn no_jobs(path: &str) -> ParseError {
    Loc::new(path, 0).error("No job(s) defined")
}

fn parse_files_with(
    files: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
    fs: &dyn Fs,
) -> Result<JobSet, ParseError> {
    let mut b = Builder::new(env, fs);
    for (n, (path, text)) in files.iter().enumerate() {
        if n > 0 {
            b.reset_globals();
        }
        b.add_file(path, text, n > 0)?;
    }
    let set = b.finish();
    if set.jobs.is_empty() {
        let path = files.last().map_or(COMMAND_LINE, |(p, _)| p.as_str());
        return Err(no_jobs(path));
    }
    Ok(set)
}

/// Parses one job file. `path` is used in errors, in [`JobSpec::origin`] and
/// to resolve `include` (files are read through `std::fs`); `env` supplies
/// `${VAR}` values (unset = empty).
pub fn parse_job_file(
    path: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobSet, ParseError> {
    parse_files_with(&[(path.to_string(), text.to_string())], env, &RealFs)
}

/// Parses job files given together (`fio a.fio b.fio`): each file after the
/// first starts from fio's defaults and with a new reporting group.
pub fn parse_job_files(
    files: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobSet, ParseError> {
    parse_files_with(files, env, &RealFs)
}

/// Parses a fio command line (without the program name). Job files named on
/// it are read through `std::fs` and their jobs follow the command-line
/// ones in [`CliParse::jobs`].
///
/// `foreign` lists the caller's own flags (without dashes): `"device"` takes
/// a value (`--device=X` or `--device X`), `"dry-run?"` is a switch (bare or
/// `--dry-run=V`). They are returned in [`CliParse::other`] and take
/// precedence over fio's options of the same name. Any other argument that
/// is not a fio option is an error naming it.
pub fn parse_fio_args(
    args: &[String],
    foreign: &[&str],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<CliParse, ParseError> {
    cli::parse_args(args, foreign, env, &RealFs)
}

/// What `fio --showcmd FILE` prints for a job file that parses: one line,
/// `fio --opt=value ... --name=JOB --opt=value ... \n` (globals are shown
/// without a `--name`, and a `[global]` section shows all globals so far).
pub fn showcmd(
    path: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ParseError> {
    let mut b = Builder::new(env, &RealFs);
    b.add_file(path, text, false)?;
    Ok(b.showcmd.concat())
}
