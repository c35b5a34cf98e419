//! `blkqos`: Linux's cgroup block IO controllers and IO accounting, run on a
//! deterministic simulator (default) with fio's inputs and outputs.
//!
//! The `blkqos` binary is [`cli_main`]: the command line, each
//! subcommand's dispatch, and failures mapped to exit statuses. What a run
//! is and how it runs is `blkqos-experiment`; the studies of many runs
//! (sweep, calibrate, lab, apply, bench) are `blkqos-studies`. The
//! experiment library's entry points are re-exported here for programs and
//! tests that call blkqos in-process: [`plan_run`] builds an
//! [`Experiment`] from `blkqos run`'s arguments (a scenario file, fio job
//! files, fio options and blkqos flags), [`run_simulated`] runs it on the
//! simulated device, and [`fio_reports`] renders fio's reports of the
//! result, byte for byte what the command prints.
//!
//! ```
//! let args: Vec<String> = ["--name=r", "--rw=randread", "--size=4m", "--output-format=json"]
//!     .iter()
//!     .map(|s| s.to_string())
//!     .collect();
//! let exp = blkqos::plan_run(&args).unwrap();
//! let ran = blkqos::run_simulated(&exp).unwrap();
//! assert_eq!(ran.result.jobs[0].stats.dirs.read.total_ios, 1024);
//! let reports = blkqos::fio_reports(&exp, &ran, 0);
//! assert!(reports[0].contains("\"jobname\" : \"r\""));
//! ```

mod iostat_cmd;
mod progress_bar;
mod run_cmd;
mod stderr_log;
mod summary;

use blkqos_experiment::{failure, flags, report, stdout};
use blkqos_studies::{apply, bench, calibrate, lab, sweep};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub use blkqos_experiment::{
    fio_reports, io_stat_text, pagecache_report_json, plan_run, run_simulated, Experiment,
    Invocation, Ran,
};

#[derive(Parser)]
#[command(name = "blkqos", version, about = "cgroup block IO controllers (io.max, io.weight, io.cost.*) and IO accounting, simulated or for real", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file or fio jobs on the simulated device.
    #[command(long_about = run_help())]
    Run {
        /// A scenario (.toml), fio job files, and fio-style options
        /// (--name=NAME --rw=randread ...), plus blkqos flags.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "SCENARIO|JOBFILE|--OPTION"
        )]
        args: Vec<String>,
    },
    /// Run a scenario over a grid of knob settings and pick the best one.
    #[command(long_about = sweep::HELP)]
    Sweep(sweep::SweepCli),
    /// Write a scenario's settings, or a sweep's chosen point, to a live cgroup v2 hierarchy.
    #[command(long_about = apply::HELP)]
    Apply(apply::Args),
    /// List the simulated device models and their parameters.
    Devices,
    /// Measure a real device: its io.cost.model and a simulated device fitted to it.
    #[command(long_about = calibrate::HELP)]
    Calibrate(calibrate::Args),
    /// Compare blkqos with real kernels' recorded runs (lab/, docs/fidelity.md).
    #[command(long_about = lab::HELP)]
    Lab {
        #[command(subcommand)]
        cmd: lab::LabCmd,
    },
    /// Measure blkqos itself (docs/BENCHMARKS.md): `sim`, `throttle`, `accounting`,
    /// `iocost`, `sweep` (1,000 simulated runs), or `all` (every one but `sweep`).
    Bench(bench::BenchArgs),
    /// sysstat's iostat (-x, -d, -p, ALL, ...) over /proc or saved /proc copies (--proc DIR).
    #[command(long_about = iostat_cmd::HELP, disable_help_flag = true)]
    Iostat {
        /// iostat options, devices, interval and count, and --proc DIR.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// One self-contained HTML report (inline SVG charts) of a run's time series or a sweep.
    #[command(long_about = report::HELP)]
    Report {
        /// A run's time series: the JSON lines of `blkqos run --live-json=FILE`.
        #[arg(long, value_name = "FILE")]
        timeseries: Option<std::path::PathBuf>,
        /// The run's iocost trace (`blkqos run --iocost-trace=FILE.jsonl`): iocost per period.
        #[arg(long = "iocost-trace", value_name = "FILE")]
        iocost_trace: Option<std::path::PathBuf>,
        /// A sweep's JSON report (`blkqos sweep ... --json`).
        #[arg(long, value_name = "FILE")]
        sweep: Option<std::path::PathBuf>,
        /// The HTML file to write.
        #[arg(short = 'o', long = "output", value_name = "FILE.html")]
        output: std::path::PathBuf,
        /// The page's title.
        #[arg(long)]
        title: Option<String>,
    },
    /// Seed 001's result table (IOPS, MB/s, slat/clat ms) from fio JSON reports.
    #[command(long_about = summary::HELP)]
    Summary {
        /// fio JSON reports written with --unified_rw_reporting=mixed.
        #[arg(value_name = "FILE.json", required = true)]
        files: Vec<String>,
    },
}

/// `run --help`: the usage, the "blkqos flags" block from the flag table
/// ([`flags::help_block`]), then the notes.
fn run_help() -> String {
    format!("{RUN_HELP_HEAD}{}\n{RUN_HELP_TAIL}", flags::help_block())
}

const RUN_HELP_HEAD: &str = "\
Run a scenario file or fio jobs on the simulated device (the default backend).

  blkqos run SCENARIO.toml [--seed=N]
  blkqos run JOBFILE... [fio options] [blkqos flags]
  blkqos run --name=job --rw=randread --bs=4k --size=1g --runtime=10 --time_based ...

fio options are fio 3.33's: --name starts a job, options before the first
--name (or after --name=global) are global. --output=FILE and
--output-format=normal|json|json+|terse (comma-separated; terse is fio's
version 3 line) work as in fio, and so do --parse-only (check everything, run
nothing), --showcmd JOBFILE... (print each job file as a fio command line) and
--status-interval=T (every T, seconds unless a unit is given, the full report
of the run so far in every output format, then the final one; simulated time
on the simulator). Options blkqos does not support are errors, never ignored;
a misspelt one gets a suggestion.

";

const RUN_HELP_TAIL: &str = "\
fio's sample logs are job options (write_bw_log=NAME, write_iops_log=NAME,
write_lat_log=NAME, log_avg_msec, log_max_value, log_offset, and the latency
histogram log write_hist_log=NAME with log_hist_msec, log_hist_coarseness):
fio 3.33's files (NAME_bw.N.log, NAME_clat_hist.N.log, ...) in the current
directory, written as the run goes, in simulated time on the simulator
(docs/SCENARIOS.md, \"fio's sample logs\").

A scenario file (TOML) holds a [device], cgroup knob writes ([[write]] file=...
value=...) and fio invocations ([[fio]] with job_file=, job= or args=, cgroup=,
output=, output_format=). See examples/ and docs/SCENARIOS.md.

Memory stays bounded: at most 4088 job clones (numjobs included) per fio
invocation and per run, as fio 3.33; --request-trace and the simulator's
--iocost-trace are written as the run goes; diskstats snapshots and the
writeback report's seconds keep at most 100,000 entries (the real engine's
iocost trace 60,000 periods), with a warning on stderr when that cuts them
(docs/SCENARIOS.md, \"Limits\").

Same scenario + same seed gives byte-identical output; timestamps come from
SOURCE_DATE_EPOCH when set (and print in UTC then; otherwise in local time,
TZ or /etc/localtime, as fio prints them).

Real engine reports: slat ends when the submit call returns (io_uring_enter,
or the thread pool's hand-off), cpu is the process's getrusage shared
between the jobs by the IOs they completed, and \"Disk stats\" / disk_util
are the kernel's numbers of the disk under the target, as fio reads them;
blkqos's own accounting of its requests follows as \"blkqos request stats\"
(JSON blkqos_disk_util).

Signals (simulated and real runs): SIGINT stops issuing, waits for the IO in
flight and drains the write-back buffer (--pagecache=on, real engine) under
its limits; SIGTERM, or a second signal, gives up the drain (IO still held
by io.max/iocost is dropped) and writes what the buffer holds to the target
unthrottled, then fsyncs. Either way every report is written and stderr
says what was done. Signals never end blkqos: only SIGKILL can lose
acknowledged bytes or the report.

Exit status (after every report is written):
  0        ok
  1        run failure: the run itself failed, a job ended with an IO error
           (stderr names the job, clone, errno, offset and failed IOs;
           errors that ignore_error or continue_on_error make non-fatal do
           not count, as in fio), or
           write-back buffer pages could not reach the target
  2        bad input
  130/143  interrupted by SIGINT/SIGTERM (128 + the first signal)";

/// The `blkqos` command: parse the process's arguments, run the
/// subcommand, print what failed; the exit status (0, 1 run failure,
/// 2 bad input, 141 closed stdout).
pub fn cli_main() -> ExitCode {
    stderr_log::install();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // every error of blkqos starts with its name, clap's too
            let text = e.render().to_string();
            match text.strip_prefix("error: ") {
                Some(rest) => eprint!("blkqos: {rest}"),
                // a help shown for a missing subcommand
                None => eprint!("{text}"),
            }
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let res = match cli.cmd {
        Cmd::Run { args } => run_cmd::run_command(flags::build(&args)),
        Cmd::Sweep(a) => sweep::run_command(a, &progress_bar::Bar::default()),
        Cmd::Calibrate(a) => calibrate::run_command(&a, &progress_bar::Bar::default()),
        Cmd::Apply(a) => apply::run_command(&a),
        Cmd::Devices => {
            stdout::write_out(&blkqos_sim::DeviceSpec::help()).map_err(|e| failure::Failure {
                code: 1,
                err: e.into(),
            })
        }
        Cmd::Bench(a) => bench::run(&a).map_err(|err| failure::Failure { code: 2, err }),
        Cmd::Iostat { args } => iostat_cmd::run(&args),
        Cmd::Summary { files } => summary::run(&files),
        Cmd::Report {
            timeseries,
            iocost_trace,
            sweep,
            output,
            title,
        } => report::run(&report::Args {
            timeseries,
            iocost_trace,
            sweep,
            output,
            title,
        }),
        Cmd::Lab { cmd } => match lab::run(&cmd) {
            Ok(true) => Ok(()),
            Ok(false) => Err(failure::Failure {
                code: 1,
                err: anyhow::anyhow!(
                    "lab: blkqos misses the real kernel where it is not expected to (above)"
                ),
            }),
            Err(err) => Err(failure::Failure { code: 2, err }),
        },
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if stdout::is_broken_pipe(&f.err) => ExitCode::from(stdout::BROKEN_PIPE_STATUS),
        Err(f) => {
            eprintln!("blkqos: {:#}", f.err);
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every blkqos flag `run --help` lists is one the fio parser leaves
    /// to blkqos.
    #[test]
    fn every_listed_run_flag_is_accepted() {
        let help = super::run_help();
        let flags: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("blkqos flags:"))
            .filter_map(|l| l.strip_prefix("  --"))
            .map(|l| l.split(['=', ' ']).next().unwrap_or(""))
            .collect();
        assert!(flags.len() > 20, "{flags:?}");
        let foreign = crate::flags::foreign();
        for f in flags {
            let known = foreign.iter().any(|k| k.trim_end_matches('?') == f);
            assert!(known, "--{f} is in `run --help` but not accepted");
        }
    }
}
