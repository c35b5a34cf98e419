//! Exit status and stderr of runs whose jobs fail, against fio 3.33 on the
//! same failing targets:
//!
//! * ENOSPC: 16 MiB of 64 KiB writes to a file on an 8 MiB tmpfs;
//! * EIO: 4 KiB direct reads of a loop device whose backing file was cut
//!   to 256 KiB after attaching.
//!
//! fio and blkqos (io_uring and the thread pool) both exit 1, report the
//! same errno in the JSON `error` and the same bytes done before it;
//! blkqos's stderr names the job, the error, the offset and the count of
//! failed IOs. `continue_on_error=write` leaves ENOSPC fatal (its default
//! non-fatal errors are EIO and EILSEQ): exit 1 again. When
//! `ignore_error` or `continue_on_error` covers the error both exit 0 with
//! the same `error`, `total_err` and `first_error`. The simulator's own
//! failure (reads past the device's end) exits 1 too.
//! Cases needing root, tmpfs or loop devices skip, saying why.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `fio ARGS` in `dir`, or None (SKIP printed) when fio is missing.
fn fio(args: &[String], dir: &Path) -> Option<Ran> {
    if Command::new("fio").arg("--version").output().is_err() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return None;
    }
    let mut cmd = Command::new("fio");
    cmd.args(args).current_dir(dir);
    Some(run_bounded(cmd, TIMEOUT))
}

/// (error, read bytes, write bytes) of the one job. fio prints its
/// `fio: pid=N, err=E/...` line on stdout before the JSON.
fn outcome(what: &str, r: &Ran) -> (i64, f64, f64) {
    let text = r.stdout_str();
    let json = text.find("\n{").map_or(text.as_str(), |at| &text[at + 1..]);
    let doc: Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("{what}: no JSON report ({e}):\n{text}\n{}", r.stderr));
    let j = &doc["jobs"][0];
    let error = j["error"].as_i64().unwrap_or(-1);
    (error, num(j, "/read/io_bytes"), num(j, "/write/io_bytes"))
}

/// Run `args` with fio and with blkqos on both real backends (`fresh`
/// restores the target before each run): same exit status 1, same
/// `error`, same bytes done; blkqos's stderr carries `line`.
fn like_fio(args: &[String], dir: &Path, fresh: &dyn Fn(), errno: i64, line: &str) {
    fresh();
    let Some(f) = fio(args, dir) else {
        return;
    };
    let want = outcome("fio", &f);
    eprintln!(
        "fio: exit {:?}, (error, read, write bytes) {want:?}; stderr: {}",
        f.code,
        f.stderr.trim()
    );
    assert_eq!(f.code, Some(1), "fio exits 1: {}", f.stderr);
    assert_eq!(want.0, errno, "fio's error");
    for be in [Be::Uring, Be::Threads] {
        fresh();
        let mut a = vec!["run".to_string()];
        a.extend(args.iter().cloned());
        a.push(be.flag());
        let r = blkqos(&a, dir);
        if let Some(why) = r.kernel_refusal() {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::IoUring,
                format!("{}: {why}", be.name()),
            );
            continue;
        }
        let got = outcome(be.name(), &r);
        eprintln!(
            "blkqos {}: exit {:?}, (error, read, write bytes) {got:?}; stderr: {}",
            be.name(),
            r.code,
            r.stderr.trim()
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert_eq!(
            r.code,
            Some(1),
            "{}: exits 1 like fio\n{}",
            be.name(),
            r.stderr
        );
        assert_eq!(got, want, "{}: same error and bytes as fio", be.name());
        assert!(
            r.stderr.contains(line),
            "{}: `{line}` in\n{}",
            be.name(),
            r.stderr
        );
        assert!(
            r.stderr.contains("failed IO"),
            "{}: the count\n{}",
            be.name(),
            r.stderr
        );
        assert!(
            r.stderr
                .contains("1 of 1 job ended with an IO error (exit status 1)"),
            "{}",
            r.stderr
        );
    }
}

/// (error, total_err, first_error) of the one job.
fn errors(r: &Ran) -> [i64; 3] {
    let text = r.stdout_str();
    let json = text.find("\n{").map_or(text.as_str(), |at| &text[at + 1..]);
    let doc: Value = serde_json::from_str(json).expect("JSON report");
    let j = &doc["jobs"][0];
    ["error", "total_err", "first_error"].map(|k| j[k].as_i64().unwrap_or(-1))
}

/// Both exit 0, with the same error counts, when `ignore_error` /
/// `continue_on_error` covers the error.
fn ignored_like_fio(args: &[String], dir: &Path, fresh: &dyn Fn()) {
    fresh();
    let Some(f) = fio(args, dir) else {
        return;
    };
    assert_eq!(f.code, Some(0), "fio: {}", f.stderr);
    let want = errors(&f);
    for be in [Be::Uring, Be::Threads] {
        fresh();
        let mut a = vec!["run".to_string()];
        a.extend(args.iter().cloned());
        a.push(be.flag());
        let r = blkqos(&a, dir);
        if r.kernel_refusal().is_some() {
            continue;
        }
        let got = errors(&r);
        eprintln!(
            "{:?}: fio (error, total_err, first_error) {want:?}, blkqos {}: exit {:?} {got:?}",
            args.last(),
            be.name(),
            r.code
        );
        r.ok();
        assert!(!r.stderr.contains("IO error"), "{}", r.stderr);
        assert_eq!(got, want, "{}: the same counts as fio", be.name());
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
#[ignore = "tier real"]
fn enospc_on_a_full_tmpfs_exits_1_like_fio() {
    let _x = exclusive();
    let Some(fs) = Mounted::tmpfs("8m") else {
        return;
    };
    let file = fs.dir.path().join("f");
    let fresh = || {
        let _ = std::fs::remove_file(&file);
    };
    let mut args = strings(&["--name=w", "--size=16m", "--rw=write", "--bs=64k"]);
    args.push(format!("--filename={}", file.display()));
    args.push("--output-format=json".into());
    let line = format!(
        "job `w` (clone 0): error 28 (No space left on device): write offset=8388608, buflen=65536 on {}",
        file.display()
    );
    like_fio(&args, fs.dir.path(), &fresh, 28, &line);
    let with = |extra: &str| {
        let mut a = args.clone();
        a.push(extra.into());
        a
    };
    like_fio(
        &with("--continue_on_error=write"),
        fs.dir.path(),
        &fresh,
        28,
        &line,
    );
    ignored_like_fio(&with("--ignore_error=,ENOSPC"), fs.dir.path(), &fresh);
}

#[test]
#[ignore = "tier real"]
fn eio_on_a_cut_loop_device_exits_1_like_fio() {
    let _x = exclusive();
    let s = Scratch::new();
    let Some(lo) = LoopDev::cut_short(&s) else {
        return;
    };
    let mut args = strings(&[
        "--name=eio",
        "--rw=read",
        "--bs=4k",
        "--size=1m",
        "--direct=1",
    ]);
    args.push(format!("--filename={}", lo.dev.display()));
    args.push("--output-format=json".into());
    let line = format!(
        "job `eio` (clone 0): error 5 (Input/output error): read offset=262144, buflen=4096 on {}",
        lo.dev.display()
    );
    like_fio(&args, s.dir.path(), &|| {}, 5, &line);
    for extra in ["--ignore_error=EIO", "--continue_on_error=read"] {
        let mut a = args.clone();
        a.push(extra.into());
        ignored_like_fio(&a, s.dir.path(), &|| {});
    }
}

/// A job larger than the simulated device reads up to its end and no
/// further, as fio clamps a job to a block device's size (fio 3.33 on a
/// 1 MiB loop device: `size=2m` reads 1 MiB, exit 0); two clones.
#[test]
fn simulated_job_past_the_device_end_is_clamped_like_fio() {
    let s = Scratch::new();
    let args = strings(&[
        "run",
        "--name=x",
        "--filename=/dev/sdz",
        "--rw=read",
        "--bs=64k",
        "--size=2m",
        "--numjobs=2",
        "--device=null,size=1m",
        "--output-format=json",
    ]);
    let r = blkqos(&args, s.dir.path());
    r.ok();
    let doc = &r.json_docs()[0];
    for clone in 0..2 {
        let j = &doc["jobs"][clone];
        assert_eq!(j["error"], 0);
        assert_eq!(num(j, "/read/io_bytes"), (1 << 20) as f64, "clone {clone}");
    }
}
