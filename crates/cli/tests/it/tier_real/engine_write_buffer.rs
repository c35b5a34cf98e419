//! The real engine's userspace write-back buffer (`--pagecache=on` on the
//! engine): a buffered sequential writer under `io.max wbps` is
//! interrupted while the buffer holds far more than the limit let
//! through. Whatever the signals, the run writes its JSON report, exits
//! 128 + the first signal, and every byte the report says was written
//! (fio's `io_bytes`: acknowledged writes) is read back from the file and
//! checked against the job's data by checksum. The file was extended
//! sparse, so a lost page would read back as zeros.
//!
//! * SIGINT: the buffer drains under the limit (no second of writeback
//!   above it), the target is fsynced, exit 130.
//! * SIGTERM: the drain is given up at once; the buffer is written out
//!   unthrottled and fsynced, exit 143.
//! * SIGINT, then SIGINT or SIGTERM 1 s later, during the drain (at
//!   `wbps=1MiB/s` it takes over 10 s): the drain is given up, the rest is
//!   written out unthrottled, exit 130.

use crate::engine_util;

use blkqos_engine::pattern;
use engine_util::*;
use std::time::Duration;

const MIB: f64 = 1048576.0;

fn interrupted_keeps_every_acknowledged_byte(be: Be, signals: &[&str], wbps: f64) {
    let s = Scratch::new();
    let file = s.path("wbuf.dat");
    let scenario = format!(
        "cgroups = [\"/w\"]\n{}\
         [pagecache]\nenable = true\nmemory = \"64m\"\nwriteback_io = \"256k\"\nreport = \"wb.txt\"\n\
         [[write]]\nfile = \"/sys/fs/cgroup/w/io.max\"\nvalue = \"{} wbps={}\"\n\
         [[fio]]\nargs = \"--name=w --cgroup=/w --filename={} --rw=write --bs=64k --size=256m \
         --direct=0 --ioengine=psync\"\n",
        be.device_toml(&file, &s.devid),
        s.devid,
        wbps as u64,
        file.display()
    );
    std::fs::write(s.path("s.toml"), scenario).unwrap();
    let args: Vec<String> = ["run", "s.toml", "--output-format=json"]
        .map(String::from)
        .to_vec();
    let sg = signal_blkqos(
        &args,
        s.dir.path(),
        Duration::from_millis(1500),
        signals,
        Duration::from_secs(1),
        Duration::from_secs(90),
    );
    let what = format!("{} {signals:?}", be.name());
    let r = &sg.ran;
    let refusal = ["io_uring is unavailable", "O_DIRECT is not supported"];
    if let Some(why) = refusal.iter().find(|w| r.stderr.contains(*w)) {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, format!("{what}: {why}"));
        return;
    }
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
    let want_code = if signals[0] == "INT" { 130 } else { 143 };
    assert_eq!(r.code, Some(want_code), "{what}: {}", r.stderr);
    assert_eq!(
        sg.sent,
        signals.len(),
        "{what}: exited before the last signal"
    );
    let abandons = signals.len() > 1 || signals[0] == "TERM";
    assert_eq!(
        r.stderr.contains("gave up the drain"),
        abandons,
        "{what}: {}",
        r.stderr
    );
    assert_eq!(
        r.stderr.contains("unthrottled and fsynced"),
        abandons,
        "{what}: the rest is written out unthrottled\n{}",
        r.stderr
    );
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("{what}: no JSON report ({e}): {}", r.stderr));
    let acked = num(&doc["jobs"][0], "/write/io_bytes") as u64;
    let runtime_s = num(&doc["jobs"][0], "/write/runtime") / 1000.0;
    assert!(runtime_s > 0.0, "{what}: the report ends when the job did");
    // the buffer held much more than the limit let through by the signal
    assert!(
        acked as f64 > 2.0 * wbps * runtime_s.max(1.0),
        "{what}: {acked} bytes in {runtime_s} s: the buffer was not exercised"
    );
    assert!(
        r.stderr.contains(" 0 left, 0 failed writebacks"),
        "{}",
        r.stderr
    );
    // read back every acknowledged byte
    let data = std::fs::read(&file).unwrap();
    assert!(data.len() as u64 >= acked);
    let mut want = vec![0u8; acked as usize];
    pattern::fill(&mut want, 0);
    let (got_sum, want_sum) = (checksum(&data[..acked as usize]), checksum(&want));
    assert_eq!(
        got_sum,
        want_sum,
        "{what}: checksum of the first {acked} bytes differs; first bad byte at {:?}",
        pattern::check(&data[..acked as usize], 0)
    );
    eprintln!(
        "{what}: {acked} bytes acknowledged in {runtime_s:.2} s, {acked} verified by checksum; \
         exit {want_code} {:?} after the first signal, {:?} after the last; stderr:\n{}",
        sg.after_first,
        sg.after_last,
        r.stderr.trim()
    );
    let seconds = writeback_within_limit(&what, &s.path("wb.txt"), wbps);
    assert!(seconds >= 1, "{what}: no writeback series");
}

/// No second of the driver's writeback (the pagecache report: MB/s per
/// group each second) exceeded `wbps` (+15%); the unthrottled write-out
/// after an abandoned drain is not in it. Returns the seconds seen.
fn writeback_within_limit(what: &str, report: &std::path::Path, wbps: f64) -> usize {
    let report = std::fs::read_to_string(report).unwrap();
    let series = report
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("sec"))
        .skip(1)
        .take_while(|l| !l.starts_with('#'));
    let mut seconds = 0;
    for line in series {
        seconds += 1;
        let cols: Vec<f64> = line
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect();
        if cols.len() >= 3 {
            assert!(
                cols[2] * 1e6 <= wbps * 1.15,
                "{what}: writeback of /w at {} MB/s in second {}:\n{report}",
                cols[2],
                cols[0]
            );
        }
    }
    seconds
}

fn sigint_drains_under_the_limit(be: Be) {
    let _x = exclusive();
    interrupted_keeps_every_acknowledged_byte(be, &["INT"], 4.0 * MIB);
}

fn sigterm_writes_out_unthrottled(be: Be) {
    let _x = exclusive();
    interrupted_keeps_every_acknowledged_byte(be, &["TERM"], 4.0 * MIB);
}

fn second_sigint_abandons_the_drain(be: Be) {
    let _x = exclusive();
    interrupted_keeps_every_acknowledged_byte(be, &["INT", "INT"], MIB);
}

fn sigterm_during_the_drain_abandons_it(be: Be) {
    let _x = exclusive();
    interrupted_keeps_every_acknowledged_byte(be, &["INT", "TERM"], MIB);
}

/// A writeback that fails is reported by the job's fsync, as fsync(2)
/// reports a failed writeback: the target is a loop device over a sparse
/// 8 MiB file on a 1 MiB tmpfs, so writing back past the first MiB fails
/// with ENOSPC. A 4 MiB buffered writer with `end_fsync=1` has every
/// write acknowledged by the buffer, its writebacks partly fail, and its
/// fsync ends the job with the error (fio's `error`); the buffer keeps
/// the pages that did not reach the target and says so, and the run exits
/// 1 naming the job and its error.
fn failed_writeback_fails_the_fsync(be: Be) {
    let Some(fs) = Mounted::tmpfs("1m") else {
        return;
    };
    let backing = fs.dir.path().join("backing.img");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let Some(lo) = LoopDev::attach(&backing) else {
        return;
    };
    let s = Scratch::new();
    let r = blkqos(
        &[
            "run".to_string(),
            "--name=w".into(),
            format!("--filename={}", lo.dev.display()),
            "--rw=write".into(),
            "--bs=64k".into(),
            "--size=4m".into(),
            "--end_fsync=1".into(),
            "--ioengine=io_uring".into(),
            "--iodepth=4".into(),
            "--pagecache=on".into(),
            be.flag(),
            "--output-format=json".into(),
        ],
        s.dir.path(),
    );
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return;
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let docs = r.json_docs();
    let j = job(&docs, "w");
    let error = num(j, "/error") as i32;
    assert!(
        error == 28 || error == 5,
        "{}: the fsync reports ENOSPC (or EIO): error {error}\n{}",
        be.name(),
        r.stderr
    );
    assert_eq!(num(j, "/write/io_bytes"), (4 << 20) as f64, "acknowledged");
    assert_eq!(r.code, Some(1), "{}: a failed job fails the run", be.name());
    assert!(
        r.stderr
            .contains(&format!("job `w` (clone 0): error {error} (")),
        "{}: stderr names the job and its error\n{}",
        be.name(),
        r.stderr
    );
    assert!(
        r.stderr.contains("failed writeback") && r.stderr.contains("not on the target"),
        "{}: the buffer reports what did not reach the target\n{}",
        be.name(),
        r.stderr
    );
}

on_real_backends!(
    sigint_drains_under_the_limit,
    sigterm_writes_out_unthrottled,
    second_sigint_abandons_the_drain,
    sigterm_during_the_drain_abandons_it,
    failed_writeback_fails_the_fsync,
);
