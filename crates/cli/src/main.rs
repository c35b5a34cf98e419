//! `blkqos`: Linux's cgroup block IO controllers and IO accounting, run on a
//! deterministic simulator (default) with fio's inputs and outputs.

mod accounting;
mod bench;
mod calibrate;
mod experiment;
mod failure;
mod files;
#[cfg(test)]
mod fuzz_tests;
mod iostat_cmd;
mod job_logs;
mod kernel;
mod lab;
mod lat_report;
mod live;
mod outcome;
mod output;
mod pagecache;
mod progress;
mod real;
mod real_meta;
mod real_report;
mod report;
mod request_trace;
mod scenario;
mod status;
mod stdout;
mod streams;
mod summary;
mod sweep;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "blkqos", version, about = "cgroup block IO controllers (io.max, io.weight, io.cost.*) and IO accounting, simulated or for real", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file or fio jobs on the simulated device.
    #[command(long_about = RUN_HELP)]
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
    Sweep {
        /// SCENARIO.toml and --vary/--objective/... options, or --merge and shard files.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "SCENARIO|--OPTION"
        )]
        args: Vec<String>,
    },
    /// List the simulated device models and their parameters.
    Devices,
    #[command(long_about = calibrate::HELP)]
    Calibrate(calibrate::Args),
    /// Compare blkqos with real kernels' recorded runs (lab/, docs/fidelity.md).
    #[command(long_about = LAB_HELP)]
    Lab {
        /// `compare`, then options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Measure blkqos itself (see docs/BENCHMARKS.md): `sim`, `throttle`, `sweep` or `all`.
    Bench {
        /// Which benchmark, then options such as --seconds=N.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
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

const RUN_HELP: &str = "\
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

blkqos flags:
  --device=MODEL[,key=value...]  simulated device (default: null); see `blkqos devices`
  --seed=N                       seed for randrepeat=0 streams and device jitter (default 1)
  --submit-ns=N                  CPU time of one submit call, shown as slat (default 1000)
  --backend=sim|real|io_uring|threads
                                 sim (default): the simulated --device; real: the jobs' file or
                                 block device with io_uring, falling back to a thread pool
  --allow-destructive            real engine: write to a block device even if it carries a
                                 partition table or filesystem signature
  --overwrite                    real engine: write to an existing file blkqos did not lay out
  --pagecache=on|off             simulator: buffered (direct=0) jobs go through a simulated page
                                 cache with writeback (on, default) or straight to the device (off);
                                 real engine: on = blkqos's own write-back buffer (writeback under
                                 the group's limits, drained and fsynced before the run ends)
  --writeback=async|sync|root    how writeback meets the controllers: async (default; charged to
                                 the dirtier's group, held IO released on its own, as Linux cgroup
                                 writeback), sync (one flusher waits while its IO is held), root
                                 (cgroup v1: charged to the root, the limits miss it)
  --pagecache-report=FILE        per-second writeback per group and per task; FILE.json = JSON
  --io-max='MAJ:MIN key=val'   an io.max line for the job's cgroup (--cgroup=NAME)
  --throttle=VARIANT             io.max implementation: mainline (default), legacy,
                                 slice-remainder, linux-4.18 ... linux-6.18, or paced
  --io-weight='N|MAJ:MIN N'       an io.weight line for the job's cgroup
  --io-cost-qos='MAJ:MIN ...'    the root's io.cost.qos line (enable=1 turns iocost on)
  --io-cost-model='MAJ:MIN ...'  the root's io.cost.model line
  --iocost=VARIANT               hold (default: busy_level kept when a period has no
                                 completions but lagging IO, 7.1+), reset (<= 7.0), hold-v2
  --blkcg-debug-stats=0|1        io.stat also shows iocost's cost.wait, cost.indebt, cost.indelay
  --check-invariants             check every controller's invariants after each pass of the driver
                                 loop (a violation, a bug, ends the run with exit 1); debug builds
                                 check every 64th pass, every run checks once at its end
  --iocost-trace=FILE            per-period iocost trace (iocost_monitor style); FILE.jsonl = JSON
  --kernel=VER[,hz=N][,throttling_low=y]
                                 every controller and accounting rule of a kernel release as
                                 distributions build it: 6.1, 6.12, 7.2 (HZ=250, no
                                 THROTTLING_LOW); flags after it override single choices
  --hz=N                         kernel HZ for blk-throttle: 100, 250, 300, 1000 (default)
  --io-stat=FILE                 after the run, write every cgroup's io.stat to FILE
  --iostats=MODE                 busy-time accounting: precise (default), inflight (6.10+),
                                 sampling-v2 (5.7-6.9), sampling-v1 (5.0-5.6), round-stats (<=4.20),
                                 off (queue/iostats=0: no disk accounting)
  --eta=auto|always|never        real engine: a status line (elapsed, ETA, IOPS and bandwidth
                                 per job) on stderr every second; auto (default) = if a terminal
  --live=SECONDS                 a block on stderr every SECONDS of run time (bare --live: every
                                 second; simulated time on the simulator): device line (iocost vrate, busy_level,
                                 total IOPS/bw), then per cgroup r/w IOPS and bandwidth, p99
                                 latency, IOs io.max holds and the longest wait, iocost hweight
                                 active/inuse%, debt and delay; redrawn in place on a terminal;
                                 replaces the --eta line
  --live-json=FILE               the same per interval as JSON lines (exact counts) to FILE, with
                                 latency percentiles, the device's %util, and whole-run latency
                                 CDFs on the last line (docs/live.md)
  --report=FILE                  after the run, an HTML report of its time series (charts per
                                 cgroup and device; docs/report.md), as `blkqos report`
  --diskstats-every=T            snapshot /proc/diskstats every T (default 1s when needed)
  --diskstats-dir=DIR            write snapshots as DIR/NNNN/{diskstats,uptime}
  --iostat='ARGS'                print sysstat's iostat over the snapshots, e.g. --iostat='-x 1'
  --lat-hist=FILE                after the run, write latency percentiles per device (request
                                 start -> completion) and per cgroup (submit -> completion, with
                                 io.max/iocost wait) to FILE; FILE.json = JSON
  --request-trace=FILE           write every request (cgroup, direction, submit, start and
                                 completion ns) to FILE, one line each, as the run goes

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

const LAB_HELP: &str = "\
Compare blkqos with real kernels.

  blkqos lab compare [--lab=DIR] [--kernel=K]... [--job=SUBSTR]... [--seeds=N]
                     [--expect=FILE] [--markdown] [--real-engine]
                     [--throttle=V] [--iocost=V] [--hz=N] [--summary]

DIR (default: lab) holds matrix.toml, the scenarios in matrix/ and the real
kernels' runs in fixtures/KVER/runN/JOB/ (lab/record.sh records them). Each
job runs in the simulator under the kernel's profile (--kernel) with seeds
1..N (default 5); every metric (IOPS, bandwidth, completion-latency
percentiles and max, iocost device-time shares, %util) must fall in the
real runs' range: rates +-3%, latencies +-max(10%, one jiffy), shares +-5
points, %util +-2 points. --expect: the misses must be exactly those FILE
lists ([[miss]] kernel, job, metric, why); exit 1 otherwise.
--real-engine compares blkqos's real engine in the lab with the kernel's
own enforcement instead. --throttle, --iocost and --hz replace one choice of
the kernel's profile (what-if comparisons). --summary: one line per kernel
and job (matched metrics, and each miss with both ranges).";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let res = match cli.cmd {
        Cmd::Run { args } => output::run_command(&args),
        Cmd::Sweep { args } => sweep::run_command(&args),
        Cmd::Calibrate(a) => calibrate::run_command(&a),
        Cmd::Devices => {
            stdout::write_out(&blkqos_sim::DeviceSpec::help()).map_err(|e| failure::Failure {
                code: 1,
                err: e.into(),
            })
        }
        Cmd::Bench { args } => bench::run(&args).map_err(|err| failure::Failure { code: 2, err }),
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
        Cmd::Lab { args } => match lab::run(&args) {
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
    /// Every blkqos flag `run --help` lists is accepted on a fio command line.
    #[test]
    fn every_listed_run_flag_is_accepted() {
        let flags: Vec<&str> = super::RUN_HELP
            .lines()
            .skip_while(|l| !l.starts_with("blkqos flags:"))
            .filter_map(|l| l.strip_prefix("  --"))
            .map(|l| l.split(['=', ' ']).next().unwrap_or(""))
            .collect();
        assert!(flags.len() > 20, "{flags:?}");
        for f in flags {
            let known = crate::experiment::FOREIGN_FLAGS
                .iter()
                .any(|k| k.trim_end_matches('?') == f);
            assert!(known, "--{f} is in `run --help` but not accepted");
        }
    }
}
