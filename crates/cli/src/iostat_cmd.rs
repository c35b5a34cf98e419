//! `blkqos iostat`: sysstat 12.6's `iostat` (extended and basic reports)
//! over the live `/proc` or over saved `/proc` snapshots (`--proc DIR`).

use anyhow::anyhow;
use blkqos_experiment::failure::Failure;
use blkqos_iostat::{
    parse_args_env, read_proc_dir, read_sys_block, Banner, Error, Options, Sample,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const HELP: &str = "\
Usage: blkqos iostat [ options ] [ <device> [...] | ALL ] [ <interval> [ <count> ] ] [--proc DIR]...

sysstat 12.6.1's iostat, with the same options, output and exit on the same
inputs: -x (extended), -d (devices only), -c (CPU only), -s (short),
-k | -m (units), -p [ <device>[,...] | ALL ] (partitions), -y (skip the
since-boot report), -z (skip idle devices), -t (timestamps), --dec=0|1|2,
-o JSON, device names or ALL (also show devices without IO).

--proc DIR   read a sample from DIR/diskstats and DIR/uptime (and, if it
             exists, DIR/stat for the avg-cpu report) instead of /proc.
             Repeat it: successive DIRs are successive samples, so
             `--proc a --proc b -x 1 2` prints what `iostat -x 1 2` prints
             when /proc goes from a to b. The interval is taken from the
             uptime files, as iostat does; nothing sleeps. Reports stop when
             the DIRs run out.

Without --proc, /proc is read every <interval> seconds. Whole devices are
the entries of /sys/block (with --proc: a partition is <disk><N>, or
<disk>p<N> when <disk> ends in a digit). The banner shows this host's name
and kernel and the date in UTC (SOURCE_DATE_EPOCH if set); with --proc
the CPU count comes from the first DIR/stat. Not supported: -g, -H, -h,
--human, --pretty, --compact, -j, -N, -f/+f, -V.
Exit status: 0 ok, 1 output failure, 2 bad option or unreadable input.";

fn fail(code: u8, e: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code,
        err: e.into(),
    }
}

fn error_code(e: &Error) -> u8 {
    match e {
        Error::Write(_) => 1,
        _ => 2,
    }
}

/// Split `--proc DIR` / `--proc=DIR` from sysstat's own arguments.
fn split_proc_args(args: &[String]) -> Result<(Vec<PathBuf>, Vec<String>), Failure> {
    let (mut dirs, mut rest) = (Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--proc" {
            let d = it
                .next()
                .ok_or_else(|| fail(2, anyhow!("--proc needs a directory")))?;
            dirs.push(PathBuf::from(d));
        } else if let Some(d) = a.strip_prefix("--proc=") {
            dirs.push(PathBuf::from(d));
        } else {
            rest.push(a.clone());
        }
    }
    Ok((dirs, rest))
}

fn now_unix() -> i64 {
    if let Some(s) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return s;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn kernel_field(name: &str, default: &str) -> String {
    std::fs::read_to_string(Path::new("/proc/sys/kernel").join(name))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| default.to_string())
}

/// `get_sys_cpu_nr`: the `cpuN` directories of /sys/devices/system/cpu.
fn live_cpu_count() -> u32 {
    let n = std::fs::read_dir("/sys/devices/system/cpu")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix("cpu")
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                        && e.path().is_dir()
                })
                .count()
        })
        .unwrap_or(0);
    if n > 0 {
        u32::try_from(n).unwrap_or(u32::MAX)
    } else {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| blkqos_iostat::parse_stat(&t).ok())
            .map_or(1, |s| s.nr_cpus)
    }
}

fn banner(nr_cpus: Option<u32>) -> Banner {
    Banner {
        sysname: kernel_field("ostype", "Linux"),
        release: kernel_field("osrelease", "unknown"),
        nodename: kernel_field("hostname", "localhost"),
        machine: std::env::consts::ARCH.to_string(),
        nr_cpus: nr_cpus.unwrap_or_else(live_cpu_count),
        time: now_unix(),
    }
}

/// One read of the live /proc (and /sys/block to tell disks from partitions).
fn read_live() -> Result<Sample, Error> {
    let (mut s, _) = read_proc_dir(Path::new("/proc"))?;
    s.whole_devices = read_sys_block(Path::new("/sys/block")).ok();
    s.time = now_unix();
    Ok(s)
}

pub fn run(args: &[String]) -> Result<(), Failure> {
    if args.iter().any(|a| a == "--help") {
        return blkqos_experiment::stdout::write_out(&format!("{HELP}\n")).map_err(|e| fail(1, e));
    }
    let (dirs, rest) = split_proc_args(args)?;
    let opts: Options = parse_args_env(&rest, |k| std::env::var(k).ok()).map_err(|e| fail(2, e))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let summary = if dirs.is_empty() {
        let interval = Duration::from_secs(opts.interval);
        let start = Instant::now();
        let mut k = 0u32;
        let mut live = std::iter::from_fn(|| {
            if k > 0 {
                // Sample k is due at start + k·interval (iostat uses alarm()).
                let due = start + interval * k;
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            k = k.saturating_add(1);
            Some(read_live())
        });
        blkqos_iostat::run(&opts, &banner(None), &mut live, &mut out)
    } else {
        let cpus = read_proc_dir(&dirs[0]).map_err(|e| fail(2, e))?.1;
        // Sample k is stamped start + k·interval, for -t.
        let (start, step) = (now_unix(), i64::try_from(opts.interval).unwrap_or(i64::MAX));
        let mut files = dirs.iter().zip(0i64..).map(|(d, k)| {
            read_proc_dir(d).map(|(mut s, _)| {
                s.time = start.saturating_add(step.saturating_mul(k));
                s
            })
        });
        blkqos_iostat::run(&opts, &banner(cpus), &mut files, &mut out)
    };
    let summary = summary.map_err(|e| fail(error_code(&e), e))?;
    if !dirs.is_empty() {
        if summary.ran_out && opts.count.is_some() {
            eprintln!(
                "blkqos iostat: the --proc directories ran out after {} report(s)",
                summary.reports
            );
        } else if summary.samples_used < dirs.len() {
            eprintln!(
                "blkqos iostat: {} of {} --proc directories were not needed",
                dirs.len() - summary.samples_used,
                dirs.len()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_args_are_split_out() {
        let a: Vec<String> = ["-x", "--proc", "a", "1", "--proc=b", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (dirs, rest) = split_proc_args(&a).unwrap();
        assert_eq!(dirs, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(rest, ["-x", "1", "2"]);
        assert!(split_proc_args(&["--proc".to_string()]).is_err());
    }

    fn code(args: &[&str]) -> Option<u8> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        run(&a).err().map(|f| f.code)
    }

    #[test]
    fn bad_options_and_inputs_exit_2() {
        assert_eq!(code(&["-q"]), Some(2));
        assert_eq!(code(&["-x", "2", "0"]), Some(2));
        assert_eq!(code(&["--pretty"]), Some(2));
        assert_eq!(code(&["--proc"]), Some(2));
        let missing = std::env::temp_dir().join("blkqos-iostat-no-such-dir");
        let f = run(&["--proc".to_string(), missing.display().to_string()]).unwrap_err();
        assert_eq!(f.code, 2);
        assert!(format!("{:#}", f.err).contains("blkqos-iostat-no-such-dir/diskstats"));
    }
}
