//! SIGINT and SIGTERM on `blkqos run`, simulated and real (io_uring, the
//! thread pool): every sequence — SIGINT; SIGTERM; SIGINT then SIGINT;
//! SIGINT then SIGTERM — ends the run with its partial report on stdout
//! (valid fio JSON), a stderr line saying which signals interrupted it and
//! what was done, and exit status 128 + the first signal (130, 143).
//!
//! On the real engine the job has a throttled drain: 16 reads of 64 KiB in
//! flight under `io.max rbps=256KiB/s` take about 4 s to complete after
//! SIGINT stops the job. The second signal, 0.2 s after the first, lands
//! in that drain and gives it up (stderr says so): the run ends without
//! waiting for the reads io.max still holds. On the simulator a drain
//! takes no wall time: the second signal lands after the run, and is
//! then only counted. Nothing is timed: the waits before and between
//! signals only place them; the time limit is a hang guard.
//!
//! The write-back buffer's cases (every acknowledged byte on the target)
//! are in `engine_write_buffer.rs`.

use crate::engine_util;

use engine_util::*;
use std::time::Duration;

/// The job: runs far longer than the test (simulated: 100 000 s of 4 KiB
/// random reads on the ssd model, which takes hours of wall time; real: a
/// 30 s random read under io.max).
fn long_job(be: Be, s: &Scratch, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "run".to_string(),
        "--name=long".into(),
        "--rw=randread".into(),
        "--direct=1".into(),
        "--output-format=json".into(),
        be.flag(),
    ];
    if be.is_real() {
        a.extend([
            format!("--filename={}", s.path("sig.dat").display()),
            "--size=16m".into(),
            "--bs=64k".into(),
            "--ioengine=io_uring".into(),
            "--iodepth=16".into(),
            "--cgroup=/r".into(),
            format!("--io-max={} rbps=262144", s.devid),
        ]);
    } else {
        a.extend(["--size=64g".into(), "--bs=4k".into(), "--device=ssd".into()]);
    }
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

/// Exit status for a run whose first signal is `first`.
fn status_for(first: &str) -> i32 {
    match first {
        "INT" => 130,
        _ => 143,
    }
}

fn interrupted(be: Be, signals: &[&str]) {
    let s = Scratch::new();
    if be.is_real() {
        // lay the file out first, so the signals land in the run itself
        let r = blkqos(
            &long_job(be, &s, &["--runtime=1ms", "--time_based"]),
            s.dir.path(),
        );
        if let Some(why) = r.kernel_refusal() {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::IoUring,
                format!("{}: {why}", be.name()),
            );
            return;
        }
        r.ok();
    }
    let long: &[&str] = if be.is_real() {
        &["--runtime=30", "--time_based"]
    } else {
        &["--runtime=100000", "--time_based"]
    };
    let sg = signal_blkqos(
        &long_job(be, &s, long),
        s.dir.path(),
        Duration::from_millis(500),
        signals,
        Duration::from_millis(200),
        Duration::from_secs(60),
    );
    let r = &sg.ran;
    let what = format!("{} {signals:?}", be.name());
    eprintln!(
        "{what}: exit {:?} {:?} after the first signal, {:?} after the last; stderr:\n{}",
        r.code,
        sg.after_first,
        sg.after_last,
        r.stderr.trim()
    );
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
    assert_eq!(r.code, Some(status_for(signals[0])), "{what}: {}", r.stderr);
    let docs = r.json_docs();
    assert_eq!(docs.len(), 1, "{what}: one report");
    let j = job(&docs, "long");
    let ios = num(j, "/read/total_ios");
    let runtime = num(j, "/read/runtime");
    eprintln!("{what}: {ios} reads in {runtime} ms in the partial report");
    if ios > 0.0 {
        // an abandoned job's report ends when it was given up
        assert!(runtime > 0.0, "{what}: {ios} reads in {runtime} ms");
    }
    if signals == ["INT"] {
        // the graceful drain completes every read issued
        assert!(ios > 0.0, "{what}: the partial numbers are reported");
    }
    assert_eq!(num(j, "/error"), 0.0, "{what}: a signal is no IO error");
    let names: Vec<&str> = signals
        .iter()
        .map(|s| if *s == "INT" { "SIGINT" } else { "SIGTERM" })
        .collect();
    // the simulator's run is over before the second signal is due
    let landed = if be.is_real() { names.len() } else { 1 };
    if be.is_real() {
        assert_eq!(
            sg.sent,
            signals.len(),
            "{what}: exited before the last signal"
        );
    }
    let by = format!("interrupted by {}:", names[..landed].join(", then "));
    assert!(r.stderr.contains(&by), "{what}: `{by}` in\n{}", r.stderr);
    let abandons = landed > 1 || signals[0] == "TERM";
    assert_eq!(
        r.stderr.contains("gave up the drain"),
        abandons,
        "{what}: SIGTERM or a second signal gives up the drain\n{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains(&format!("exit status {}", status_for(signals[0]))),
        "{what}: {}",
        r.stderr
    );
}

fn sigint(be: Be) {
    interrupted(be, &["INT"]);
}
fn sigterm(be: Be) {
    interrupted(be, &["TERM"]);
}
fn sigint_then_sigint(be: Be) {
    interrupted(be, &["INT", "INT"]);
}
fn sigint_then_sigterm(be: Be) {
    interrupted(be, &["INT", "TERM"]);
}

on_every_backend!(sigint, sigterm, sigint_then_sigint, sigint_then_sigterm);

/// SIGINT while the real engine lays out a 4 GiB file for a read job:
/// the layout stops at its next 1 MiB chunk (the file keeps what was laid
/// out, the next run goes on from there), the run stops before any IO and
/// still writes its report, exit 130.
#[test]
fn sigint_during_layout() {
    for be in [Be::Uring, Be::Threads] {
        let s = Scratch::new();
        let file = s.path("big.dat");
        let args: Vec<String> = vec![
            "run".into(),
            "--name=r".into(),
            format!("--filename={}", file.display()),
            "--size=4g".into(),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--output-format=json".into(),
            be.flag(),
        ];
        let sg = signal_blkqos(
            &args,
            s.dir.path(),
            // at once: the layout has not begun, or is under way
            Duration::ZERO,
            &["INT"],
            Duration::ZERO,
            Duration::from_secs(60),
        );
        let r = &sg.ran;
        if let Some(why) = r.kernel_refusal().filter(|_| r.code != Some(130)) {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::IoUring,
                format!("{}: {why}", be.name()),
            );
            continue;
        }
        let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "{}: exit {:?} {:?} after SIGINT, file {len} bytes; stderr:\n{}",
            be.name(),
            r.code,
            sg.after_first,
            r.stderr.trim()
        );
        assert_eq!(r.code, Some(130), "{}", r.stderr);
        assert!(r.stderr.contains("interrupted at"), "{}", r.stderr);
        assert!(
            len < 4 << 30 && len.is_multiple_of(1 << 20),
            "laid out in part: {len}"
        );
        let docs = r.json_docs();
        assert_eq!(num(job(&docs, "r"), "/read/total_ios"), 0.0);
    }
}

/// A wait the next event puts far away still notices a signal: a job
/// with `thinktime=30s` sleeps 30 s after its first read, and with
/// `bwavgtime`/`iopsavgtime` at 60 s no sampling timer comes sooner, so
/// the driver waits 30 s. SIGTERM wakes it (io_uring's wait is cut short
/// by the signal; the thread pool's is not, and the driver wakes every
/// 50 ms to look): the run ends at once with its report, exit 143. The
/// 8 s limit is a hang guard (without the wake-ups the thread pool's run
/// sleeps the 30 s).
#[test]
#[ignore = "tier real"]
fn sigterm_ends_a_long_wait() {
    for be in [Be::Uring, Be::Threads] {
        let s = Scratch::new();
        let args = |extra: &[&str]| {
            let mut a: Vec<String> = vec![
                "run".into(),
                "--name=slow".into(),
                format!("--filename={}", s.path("slow.dat").display()),
                "--size=1m".into(),
                "--rw=read".into(),
                "--bs=64k".into(),
                "--direct=1".into(),
                "--output-format=json".into(),
                be.flag(),
            ];
            a.extend(extra.iter().map(|x| x.to_string()));
            a
        };
        let r = blkqos(&args(&["--runtime=1ms", "--time_based"]), s.dir.path());
        if let Some(why) = r.kernel_refusal() {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::IoUring,
                format!("{}: {why}", be.name()),
            );
            continue;
        }
        r.ok();
        let sg = signal_blkqos(
            &args(&[
                "--thinktime=30s",
                "--bwavgtime=60000",
                "--iopsavgtime=60000",
            ]),
            s.dir.path(),
            Duration::from_millis(500),
            &["TERM"],
            Duration::ZERO,
            Duration::from_secs(8),
        );
        eprintln!(
            "{}: exit {:?} {:?} after SIGTERM",
            be.name(),
            sg.ran.code,
            sg.after_first
        );
        assert_eq!(sg.ran.code, Some(143), "{}", sg.ran.stderr);
        let docs = sg.ran.json_docs();
        let reads = num(job(&docs, "slow"), "/read/total_ios");
        assert_eq!(reads, 1.0, "the read before the thinktime");
    }
}
