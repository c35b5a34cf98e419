//! `cargo xtask pgo`: a profile-guided release build of blkqos, for long
//! sweeps, calibrations and lab comparisons (docs/BENCHMARKS.md, "A
//! profile-guided build").
//!
//! Three steps, each a plain cargo or LLVM command anyone can repeat:
//!
//! 1. build blkqos with `-Cprofile-generate` into `target/pgo/gen`;
//! 2. run that build on a training set that covers what users run (the
//!    simulator's bench cases, the seed examples, a fio job file, an
//!    io.max job and one lab comparison), each in a fresh directory; the
//!    raw profiles are merged with the toolchain's own `llvm-profdata`
//!    (`rustup component add llvm-tools`: it must match rustc's LLVM);
//! 3. build again with `-Cprofile-use` into `target/pgo/use` and copy the
//!    binary to `target/pgo/blkqos`.
//!
//! The profile changes which code the compiler lays out hot and inlines,
//! never what the program computes: `cargo xtask same
//! --base=target/release/blkqos --bin=target/pgo/blkqos` shows every
//! output byte-identical (`.ci/run` does).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const USAGE: &str = "usage: cargo xtask pgo [--profdata=LLVM_PROFDATA]\n\
    a profile-guided release build of blkqos in target/pgo/blkqos: an instrumented build,\n\
    trained on the bench cases, the seed examples and a lab comparison, then rebuilt with\n\
    the merged profile (llvm-profdata from `rustup component add llvm-tools` by default)\n";

/// The training runs: blkqos's arguments, `{root}` the workspace.
const TRAINING: &[&[&str]] = &[
    &["bench", "sim", "--case=0", "--seconds=1"],
    &["bench", "sim", "--case=1", "--seconds=1"],
    &["run", "{root}/examples/seed-000-throttle/scenario.toml"],
    &["run", "{root}/examples/seed-001-iocost/scenario.toml"],
    &["run", "{root}/examples/seed-003-writeback/scenario.toml"],
    &["run", "{root}/examples/fio/offsets.fio"],
    &[
        "run",
        "{root}/examples/seed-004-accounting/job.fio",
        "--cgroup=cg1",
        "--io-max=253:0 riops=100",
    ],
    &[
        "lab",
        "compare",
        "--lab={root}/lab",
        "--seeds=1",
        "--summary",
    ],
];

/// The host triple rustc builds for (`rustc -vV`'s `host:` line).
fn host_triple(verbose_version: &str) -> Option<&str> {
    verbose_version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::trim)
}

fn rustc_output(args: &[&str]) -> Result<String, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !out.status.success() {
        return Err(format!("rustc {} failed", args.join(" ")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The toolchain's `llvm-profdata` (the llvm-tools component's).
fn toolchain_profdata() -> Result<PathBuf, String> {
    let sysroot = rustc_output(&["--print", "sysroot"])?;
    let vv = rustc_output(&["-vV"])?;
    let host = host_triple(&vv).ok_or("no `host:` line in `rustc -vV`")?;
    let p = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-profdata");
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found: install the toolchain's LLVM tools with \
             `rustup component add llvm-tools` (or name one with --profdata=PATH; \
             it must read the profiles of rustc's own LLVM version)",
            p.display()
        ))
    }
}

/// `cargo build --release -p blkqos` into `target_dir` with `flag` added
/// to RUSTFLAGS.
fn build(ws: &Path, target_dir: &Path, flag: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
    if !flags.is_empty() {
        flags.push(' ');
    }
    flags.push_str(flag);
    eprintln!(
        "pgo: RUSTFLAGS='{flags}' cargo build --release -p blkqos --target-dir {}",
        target_dir.display()
    );
    let status = Command::new(cargo)
        .current_dir(ws)
        .args(["build", "--release", "-p", "blkqos", "--target-dir"])
        .arg(target_dir)
        .env("RUSTFLAGS", &flags)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build with {flag} failed"));
    }
    Ok(target_dir.join("release/blkqos"))
}

/// One training run's arguments with `{root}` replaced.
fn training_args(args: &[&str], root: &Path) -> Vec<String> {
    let root = root.display().to_string();
    args.iter().map(|a| a.replace("{root}", &root)).collect()
}

/// Run the instrumented build on every training run, each in a fresh
/// directory under `scratch`; the profiles go to `profiles`.
fn train(bin: &Path, root: &Path, scratch: &Path, profiles: &Path) -> Result<(), String> {
    for (i, args) in TRAINING.iter().enumerate() {
        let args = training_args(args, root);
        let dir = scratch.join(format!("run{i}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!("pgo: training: blkqos {}", args.join(" "));
        let out = Command::new(bin)
            .current_dir(&dir)
            .args(&args)
            .env("LLVM_PROFILE_FILE", profiles.join("blkqos-%p-%m.profraw"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "training run `blkqos {}` failed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

fn merge(profdata: &Path, profiles: &Path, merged: &Path) -> Result<(), String> {
    let status = Command::new(profdata)
        .arg("merge")
        .arg("-o")
        .arg(merged)
        .arg(profiles)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", profdata.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} merge failed", profdata.display()))
    }
}

fn fresh_dir(p: &Path) -> Result<(), String> {
    if p.exists() {
        std::fs::remove_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))
}

pub fn main(args: &[String], ws: &Path) -> Result<(), String> {
    let mut profdata = None;
    for a in args {
        match a.split_once('=') {
            Some(("--profdata", p)) => profdata = Some(PathBuf::from(p)),
            _ => return Err(format!("cargo xtask pgo: unknown argument `{a}`\n{USAGE}")),
        }
    }
    let profdata = match profdata {
        Some(p) => p,
        None => toolchain_profdata()?,
    };
    let ws = ws
        .canonicalize()
        .map_err(|e| format!("{}: {e}", ws.display()))?;
    let pgo = crate::target_dir().join("pgo");
    std::fs::create_dir_all(&pgo).map_err(|e| format!("{}: {e}", pgo.display()))?;
    let pgo = pgo
        .canonicalize()
        .map_err(|e| format!("{}: {e}", pgo.display()))?;
    let (profiles, scratch) = (pgo.join("profiles"), pgo.join("training"));
    fresh_dir(&profiles)?;
    fresh_dir(&scratch)?;
    let gen = build(
        &ws,
        &pgo.join("gen"),
        &format!("-Cprofile-generate={}", profiles.display()),
    )?;
    train(&gen, &ws, &scratch, &profiles)?;
    let merged = pgo.join("blkqos.profdata");
    merge(&profdata, &profiles, &merged)?;
    let used = build(
        &ws,
        &pgo.join("use"),
        &format!("-Cprofile-use={}", merged.display()),
    )?;
    let out = pgo.join("blkqos");
    std::fs::copy(&used, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "pgo: {} (the same results as the release build: cargo xtask same \
         --base=target/release/blkqos --bin={})",
        out.display(),
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_host_triple() {
        let vv = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\n";
        assert_eq!(host_triple(vv), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(host_triple("rustc 1.95.0\n"), None);
    }

    #[test]
    fn training_runs_name_files_of_this_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for args in TRAINING {
            for a in training_args(args, &root) {
                let path = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
                if path.starts_with(&root.display().to_string()) {
                    assert!(
                        Path::new(path).exists(),
                        "training names {path}, which is missing"
                    );
                }
            }
        }
    }
}
