//! The real engine's userspace write-back buffer (`--pagecache=on` on the
//! engine): a buffered sequential writer under `io.max wbps=4MiB/s` is
//! interrupted with SIGINT while the buffer holds far more than the limit
//! let through; the run drains the buffer under the limit, flushes, and
//! writes its report. Then every byte the report says was written (fio's
//! `io_bytes`: acknowledged writes) is read back from the file and checked
//! against the job's data by checksum. The file was extended sparse, so a
//! lost page would read back as zeros.

mod engine_util;

use blkqos_engine::pattern;
use engine_util::*;
use std::process::{Command, Stdio};
use std::time::Duration;

const WBPS: f64 = 4.0 * 1048576.0;

/// FNV-1a, 64-bit.
fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn sigint_keeps_every_acknowledged_byte(be: Be) {
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
        WBPS as u64,
        file.display()
    );
    std::fs::write(s.path("s.toml"), scenario).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "s.toml", "--output-format=json"])
        .current_dir(s.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = std::time::Instant::now();
    let mut child = cmd.spawn().expect("spawn blkqos");
    let (out, err) = drain(&mut child);
    std::thread::sleep(Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(st.success());
    let signalled = t0.elapsed();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(40) {
            child.kill().ok();
            panic!("{}: still running long after SIGINT", be.name());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let drained_in = t0.elapsed() - signalled;
    let stdout = out.join().unwrap();
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    let refusal = ["io_uring is unavailable", "O_DIRECT is not supported"];
    if let Some(why) = refusal.iter().find(|w| stderr.contains(*w)) {
        eprintln!("SKIP {}: {why}", be.name());
        return;
    }
    assert_eq!(status.code(), Some(0), "{}: {stderr}", be.name());
    assert!(stderr.contains("interrupted"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&stdout)
        .unwrap_or_else(|e| panic!("{}: no JSON report after SIGINT ({e}): {stderr}", be.name()));
    let acked = num(&doc["jobs"][0], "/write/io_bytes") as u64;
    let runtime_s = num(&doc["jobs"][0], "/write/runtime") / 1000.0;
    eprintln!(
        "{}: {acked} bytes acknowledged in {runtime_s:.2} s; drained in {drained_in:?} after SIGINT; {}",
        be.name(),
        stderr.trim()
    );
    // the buffer held much more than the limit let through by the signal
    assert!(
        acked as f64 > 2.0 * WBPS * runtime_s.max(1.0),
        "{acked} bytes in {runtime_s} s: the buffer was not exercised"
    );
    assert!(stderr.contains(" 0 left, 0 failed writebacks"), "{stderr}");
    // read back every acknowledged byte
    let data = std::fs::read(&file).unwrap();
    assert!(data.len() as u64 >= acked);
    let mut want = vec![0u8; acked as usize];
    pattern::fill(&mut want, 0);
    let (got_sum, want_sum) = (checksum(&data[..acked as usize]), checksum(&want));
    assert_eq!(
        got_sum,
        want_sum,
        "{}: checksum of the first {acked} bytes differs; first bad byte at {:?}",
        be.name(),
        pattern::check(&data[..acked as usize], 0)
    );
    // the limit held for the writeback (report: per-second MB/s per group)
    let report = std::fs::read_to_string(s.path("wb.txt")).unwrap();
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
                cols[2] * 1e6 <= WBPS * 1.15,
                "{}: writeback of /w at {} MB/s in second {}:\n{report}",
                be.name(),
                cols[2],
                cols[0]
            );
        }
    }
    assert!(
        seconds >= 3,
        "{}: no writeback series:\n{report}",
        be.name()
    );
}

#[test]
fn sigint_keeps_every_acknowledged_byte_io_uring() {
    let _x = exclusive();
    sigint_keeps_every_acknowledged_byte(Be::Uring);
}

#[test]
fn sigint_keeps_every_acknowledged_byte_threads() {
    let _x = exclusive();
    sigint_keeps_every_acknowledged_byte(Be::Threads);
}

/// A writeback that fails is reported by the job's fsync, as fsync(2)
/// reports a failed writeback: the target is a loop device over a sparse
/// 8 MiB file on a 1 MiB tmpfs, so writing back past the first MiB fails
/// with ENOSPC. A 4 MiB buffered writer with `end_fsync=1` has every
/// write acknowledged by the buffer, its writebacks partly fail, and its
/// fsync ends the job with the error (fio's `error`); the buffer keeps
/// the pages that did not reach the target and says so.
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
        eprintln!("SKIP {}: {why}", be.name());
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
    assert!(
        r.stderr.contains("failed writeback") && r.stderr.contains("not on the target"),
        "{}: the buffer reports what did not reach the target\n{}",
        be.name(),
        r.stderr
    );
}

#[test]
fn failed_writeback_fails_the_fsync_io_uring() {
    failed_writeback_fails_the_fsync(Be::Uring);
}

#[test]
fn failed_writeback_fails_the_fsync_threads() {
    failed_writeback_fails_the_fsync(Be::Threads);
}
