//! `cargo xtask instructions [--case=N] [--seconds=S] [--bin=PATH]`: the
//! simulator's cost per IO as a count of instructions, the figure that stays
//! put on a shared, noisy machine where wall times do not.
//!
//! It runs `blkqos bench sim --case=N` under valgrind's callgrind twice, for
//! S and 2·S simulated seconds, and divides the difference of the two
//! instruction totals by the difference of the two IO counts, so start-up
//! and report printing cancel out. `--bin` measures another build (an older
//! commit's `target/release/blkqos`) for a before/after ratio; without it
//! the workspace's release build is built and used.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One callgrind run: instructions executed and IOs simulated.
struct Count {
    instructions: u64,
    ios: u64,
}

/// Parse callgrind's `Collected : N` line (on stderr).
fn collected(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| l.split_once("Collected :").map(|(_, n)| n.trim()))
        .and_then(|n| n.parse().ok())
}

/// Parse `bench sim`'s `… simulated: N IOs (…` report.
fn ios(report: &str) -> Option<u64> {
    let (_, rest) = report.split_once("simulated: ")?;
    rest.split_whitespace().next()?.parse().ok()
}

fn run_once(bin: &Path, case: u32, seconds: u32) -> Result<Count, String> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(bin)
        .args(["bench", "sim"])
        .arg(format!("--case={case}"))
        .arg(format!("--seconds={seconds}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run valgrind ({e}): install it (apt-get install valgrind)"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{} bench sim failed under valgrind:\n{stderr}",
            bin.display()
        ));
    }
    let instructions = collected(&stderr)
        .ok_or_else(|| format!("no `Collected :` line from callgrind:\n{stderr}"))?;
    let ios = ios(&stdout)
        .or_else(|| ios(&stderr))
        .ok_or_else(|| format!("no IO count in the bench report:\n{stdout}{stderr}"))?;
    Ok(Count { instructions, ios })
}

/// Instructions per IO between an S-second and a 2S-second run.
fn per_io(short: &Count, long: &Count) -> Result<f64, String> {
    if long.ios <= short.ios || long.instructions < short.instructions {
        return Err(format!(
            "the longer run did not do more: {} IOs / {} instructions vs {} / {}",
            long.ios, long.instructions, short.ios, short.instructions
        ));
    }
    Ok((long.instructions - short.instructions) as f64 / (long.ios - short.ios) as f64)
}

pub const USAGE: &str = "usage: cargo xtask instructions [--case=N] [--seconds=S] [--bin=PATH]\n\
    instructions per simulated IO of `blkqos bench sim --case=N` (default 0) under callgrind:\n\
    (run of 2·S s − run of S s) / IO difference (S default 1); --bin measures another build\n";

/// Build the workspace's release `blkqos` and return its path.
pub fn build_release(workspace: &Path) -> Result<PathBuf, String> {
    let ok = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "-q", "-p", "blkqos"])
        .current_dir(workspace)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?
        .success();
    if !ok {
        return Err("cargo build --release -p blkqos failed".into());
    }
    Ok(super::target_dir().join("release/blkqos"))
}

pub fn main(args: &[String], workspace: &Path) -> Result<(), String> {
    let (mut case, mut seconds, mut bin) = (0u32, 1u32, None::<PathBuf>);
    for a in args {
        let bad = || format!("cargo xtask instructions: bad option `{a}`\n{USAGE}");
        if let Some(v) = a.strip_prefix("--case=") {
            case = v.parse().map_err(|_| bad())?;
        } else if let Some(v) = a.strip_prefix("--seconds=") {
            seconds = v.parse().ok().filter(|&s| s > 0).ok_or_else(bad)?;
        } else if let Some(v) = a.strip_prefix("--bin=") {
            bin = Some(PathBuf::from(v));
        } else {
            return Err(bad());
        }
    }
    let bin = match bin {
        Some(b) => b,
        None => build_release(workspace)?,
    };
    let short = run_once(&bin, case, seconds)?;
    let long = run_once(&bin, case, 2 * seconds)?;
    let v = per_io(&short, &long)?;
    println!(
        "bench sim --case={case}: {v:.1} instructions per IO (callgrind: ({} − {}) / ({} − {}) IOs, {} s and {} s simulated; {})",
        long.instructions,
        short.instructions,
        long.ios,
        short.ios,
        seconds,
        2 * seconds,
        bin.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrind_and_bench_lines() {
        let err = "==27491== Events    : Ir\n==27491== Collected : 1482378832\n==27491==\n";
        assert_eq!(collected(err), Some(1_482_378_832));
        let rep = "sim: ssd,channels=64 QD32 4k randread (norandommap), 1 s simulated: 841807 IOs (841807 IOPS simulated) in 8.046 s wall";
        assert_eq!(ios(rep), Some(841_807));
        assert_eq!(ios("nothing here"), None);
    }

    #[test]
    fn per_io_is_the_difference_over_the_difference() {
        let a = Count {
            instructions: 1_482_378_832,
            ios: 841_807,
        };
        let b = Count {
            instructions: 2_963_737_314,
            ios: 1_683_571,
        };
        let v = per_io(&a, &b).unwrap();
        assert!((v - 1759.83).abs() < 0.01, "{v}");
        assert!(per_io(&b, &a).is_err());
    }
}
