//! Faults on the real engine, each body on both backends:
//!
//! * EIO: a loop device whose backing file was cut short after attaching
//!   (reads past the new end fail with EIO). The fio JSON carries the
//!   job's `error` (5), stderr names the job, the error, the offset and
//!   the failed IOs, and the run exits 1 after its report; with
//!   `ignore_error=EIO` the job carries on, counts `total_err` /
//!   `first_error` and the run exits 0 — as fio 3.33 does on the same job.
//! * SIGINT after ~1 s of a 30 s run: the report on stdout is complete,
//!   valid JSON with the partial numbers, and the run exits 130.
//! * A write job on a mounted loop device (ext4 made with mkfs.ext4) is
//!   refused: exit status ≠ 0 and a message saying it is mounted, with or
//!   without --allow-destructive. Everything is unmounted and detached
//!   whatever happens.
//!
//! The loop-device cases skip (saying why) without root or loop devices.

use crate::engine_util;

use engine_util::*;
use std::process::Command;
use std::time::Duration;

fn eio(be: Be) {
    let s = Scratch::new();
    let Some(lo) = LoopDev::cut_short(&s) else {
        return;
    };
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run".to_string(),
            "--name=eio".into(),
            format!("--filename={}", lo.dev.display()),
            "--rw=read".into(),
            "--bs=4k".into(),
            "--size=1m".into(),
            "--direct=1".into(),
            "--ioengine=io_uring".into(),
            be.flag(),
            "--output-format=json".into(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        blkqos(&args, s.dir.path())
    };
    // the first error ends the job (fio: 64 good reads + the failed one)
    let r = run(&[]);
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return;
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(
        r.code,
        Some(1),
        "an IO error fails the run: {:?}\n{}",
        r.code,
        r.stderr
    );
    // the first failed read: 256 KiB in, where the backing file ends
    let line = "job `eio` (clone 0): error 5 (Input/output error): read offset=262144, buflen=4096";
    assert!(r.stderr.contains(line), "stderr names it:\n{}", r.stderr);
    assert!(r.stderr.contains("failed IO"), "{}", r.stderr);
    let doc = &r.json_docs()[0];
    let j = &doc["jobs"][0];
    eprintln!(
        "{} EIO: exit {:?}, error={}, read total_ios={}, io_bytes={}",
        be.name(),
        r.code,
        j["error"],
        j["read"]["total_ios"],
        j["read"]["io_bytes"]
    );
    assert_eq!(j["error"], 5, "the job's error is EIO");
    assert_eq!(num(j, "/read/io_bytes"), (256 << 10) as f64, "good reads");
    assert_eq!(
        num(j, "/read/total_ios"),
        65.0,
        "64 good reads and the failed one"
    );
    // ignore_error=EIO: the job carries on, every error counted
    let r = run(&["--ignore_error=EIO"]);
    r.ok();
    let doc = &r.json_docs()[0];
    let j = &doc["jobs"][0];
    eprintln!(
        "{} EIO ignored: error={}, total_err={}, first_error={}, read total_ios={}",
        be.name(),
        j["error"],
        j["total_err"],
        j["first_error"],
        j["read"]["total_ios"]
    );
    assert_eq!(
        num(j, "/total_err"),
        192.0,
        "768 KiB past the end = 192 reads"
    );
    assert_eq!(j["first_error"], 5);
    assert_eq!(num(j, "/read/total_ios"), 256.0, "every read was issued");
    assert_eq!(num(j, "/read/io_bytes"), (256 << 10) as f64);
}

fn sigint_leaves_a_report(be: Be) {
    let s = Scratch::new();
    let file = s.path("sigint.dat");
    let job = |extra: &[&str]| {
        let mut a = vec![
            "run".to_string(),
            "--name=long".into(),
            format!("--filename={}", file.display()),
            "--size=16m".into(),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--direct=1".into(),
            "--ioengine=io_uring".into(),
            "--iodepth=4".into(),
            be.flag(),
            "--output-format=json".into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    // lay the file out first, so the signal lands in the run itself
    let r = blkqos(&job(&["--runtime=1ms", "--time_based"]), s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return;
    }
    r.ok();
    let mut cmd = Command::new(BIN);
    cmd.args(job(&["--runtime=30", "--time_based", "--rate_iops=1000"]))
        .current_dir(s.dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let t0 = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn blkqos");
    let (out, err) = drain(&mut child);
    std::thread::sleep(Duration::from_millis(1000));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(st.success());
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(15) {
            child.kill().ok();
            panic!("{}: still running 14 s after SIGINT", be.name());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall = t0.elapsed();
    let stdout = out.join().unwrap();
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "{}: the report after SIGINT is not JSON ({e}):\n{}\nstderr:\n{stderr}",
            be.name(),
            String::from_utf8_lossy(&stdout)
        )
    });
    let j = &doc["jobs"][0];
    let (ios, runtime) = (num(j, "/read/total_ios"), num(j, "/read/runtime"));
    eprintln!(
        "{}: SIGINT after 1 s: exit {:?} after {wall:?}, {ios} reads in {runtime} ms; stderr: {}",
        be.name(),
        status.code(),
        stderr.trim()
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(wall < Duration::from_secs(10), "{wall:?}");
    assert!(
        (300.0..=5000.0).contains(&ios),
        "partial numbers: {ios} reads at 1000 IOPS for ~1 s"
    );
    assert!(
        (300.0..10_000.0).contains(&runtime),
        "partial runtime {runtime} ms"
    );
    assert!(within(num(j, "/read/iops"), 1000.0, 10.0));
}

fn mounted_device_is_refused(be: Be) {
    let s = Scratch::new();
    let img = s.path("fs.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    match Command::new("mkfs.ext4")
        .args(["-F", "-q"])
        .arg(&img)
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::Tool,
                format!(
                    "mkfs.ext4 failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            );
            return;
        }
        Err(e) => {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::Tool,
                format!("cannot run mkfs.ext4: {e}"),
            );
            return;
        }
    }
    let Some(lo) = LoopDev::attach(&img) else {
        return;
    };
    // dropped before `lo`: unmount, then detach
    let Some(mnt) = Mounted::mount(&lo.dev) else {
        return;
    };
    for extra in [None, Some("--allow-destructive")] {
        let mut args = vec![
            "run".to_string(),
            "--name=w".into(),
            format!("--filename={}", lo.dev.display()),
            "--rw=write".into(),
            "--bs=4k".into(),
            "--size=1m".into(),
            "--direct=1".into(),
            be.flag(),
        ];
        args.extend(extra.map(str::to_string));
        let r = blkqos(&args, s.dir.path());
        eprintln!(
            "{} {}: exit {:?}: {}",
            be.name(),
            extra.unwrap_or(""),
            r.code,
            r.stderr.trim()
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(
            r.code.is_some_and(|c| c != 0),
            "writing to a mounted device must fail"
        );
        assert!(r.stderr.contains("mounted"), "{}", r.stderr);
    }
    // nothing was written: unmounted, the filesystem checks clean
    drop(mnt);
    let fsck = Command::new("e2fsck")
        .args(["-n", "-f"])
        .arg(&lo.dev)
        .output();
    if let Ok(o) = fsck {
        assert!(
            o.status.success(),
            "the filesystem was damaged: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

on_real_backends!(eio, sigint_leaves_a_report, mounted_device_is_refused);
