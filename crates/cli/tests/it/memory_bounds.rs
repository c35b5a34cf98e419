//! Memory stays bounded, whatever the input asks for: each run is a child
//! process under a data limit (`ulimit -d`, `RLIMIT_DATA`: the heap and
//! private anonymous mappings; the simulator runs on one thread, so thread
//! stacks and io_uring rings do not count against it).
//!
//! Before the fixes each of these grew past the limit and was killed by a
//! failed allocation: 100 million job clones (GBs in seconds), a request
//! trace kept in memory (32 bytes per IO, plus the whole file as one
//! string), and one 4 MiB IO at 1 byte/s (48 simulated days: the page
//! cache's per-second series had 4 million empty seconds, 201 MB). What is
//! kept up to a limit says so on stderr when the limit cuts it.
//!
//! The timeout is a hang guard only; nothing here is timed.

use crate::common;

use common::{assert_no_panic, run_bounded, Ran, BIN, EPOCH};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The data limit: 128 MiB (the bounded runs need about 5 MB).
const DATA_LIMIT_KIB: u64 = 128 * 1024;

/// Hang guard.
const GUARD: Duration = Duration::from_secs(300);

/// `PROGRAM ARGS` in `dir` under [`DATA_LIMIT_KIB`].
fn limited(program: &str, args: &[&str], dir: &Path) -> Ran {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("ulimit -d {DATA_LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_bounded(cmd, GUARD)
}

/// `blkqos ARGS` in `dir` under [`DATA_LIMIT_KIB`].
fn blkqos_limited(args: &[&str], dir: &Path) -> Ran {
    limited(BIN, args, dir)
}

/// Newlines in a file, read in chunks (the trace is large).
fn count_lines(path: &Path) -> u64 {
    use std::io::Read;
    let mut f = std::fs::File::open(path).expect("trace file");
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let got = f.read(&mut buf).expect("read trace");
        if got == 0 {
            return n;
        }
        n += buf[..got].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

#[test]
fn the_limit_is_in_force() {
    // the harness itself: the child runs with the data limit set
    let d = tempfile::tempdir().unwrap();
    let r = limited("/bin/cat", &["/proc/self/limits"], d.path());
    let limits = r.stdout_str();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max data size"))
        .unwrap_or_else(|| panic!("no data limit line in:\n{limits}"));
    let bytes = (DATA_LIMIT_KIB * 1024).to_string();
    assert_eq!(
        line.split_whitespace().filter(|w| *w == bytes).count(),
        2,
        "soft and hard limits: {line}"
    );
}

#[test]
fn numjobs_beyond_fios_maximum_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let r = blkqos_limited(
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--size=4m",
            "--direct=1",
            "--numjobs=100000000",
        ],
        d.path(),
    );
    assert_no_panic(&r);
    assert_eq!(r.code, Some(2), "bad input: {}", r.stderr);
    for word in ["numjobs", "100000000", "maximum number of jobs", "4088"] {
        assert!(r.stderr.contains(word), "`{word}` in: {}", r.stderr);
    }
}

#[test]
fn job_clones_of_a_job_file_add_up_to_fios_maximum() {
    let d = tempfile::tempdir().unwrap();
    let job = "[global]\nrw=read\nsize=4m\n\n[a]\nnumjobs=4000\n\n[b]\nnumjobs=89\n";
    std::fs::write(d.path().join("many.fio"), job).unwrap();
    let r = blkqos_limited(&["run", "many.fio"], d.path());
    assert_no_panic(&r);
    assert_eq!(r.code, Some(2), "bad input: {}", r.stderr);
    // file, line of job b, option and value
    for word in ["many.fio:8", "numjobs", "`89`", "job `b`", "4089"] {
        assert!(r.stderr.contains(word), "`{word}` in: {}", r.stderr);
    }
}

#[test]
fn scenario_invocations_share_the_maximum() {
    let d = tempfile::tempdir().unwrap();
    let sc = "[[fio]]\nargs = \"--name=a --rw=read --size=4m --numjobs=3000\"\n\n\
              [[fio]]\nargs = \"--name=b --rw=read --size=4m --numjobs=1089\"\n";
    std::fs::write(d.path().join("s.toml"), sc).unwrap();
    let r = blkqos_limited(&["run", "s.toml"], d.path());
    assert_no_panic(&r);
    assert_eq!(r.code, Some(2), "bad input: {}", r.stderr);
    for word in ["s.toml:5", "[[fio]] #2", "4089", "4088"] {
        assert!(r.stderr.contains(word), "`{word}` in: {}", r.stderr);
    }
}

#[test]
fn request_trace_of_a_long_busy_run_streams_to_its_file() {
    // 10 simulated seconds at 333k IOPS: 3.3 million requests (the old
    // in-memory trace needed ~250 MB)
    let d = tempfile::tempdir().unwrap();
    let r = blkqos_limited(
        &[
            "run",
            "--name=x",
            "--rw=randread",
            "--bs=4k",
            "--size=1g",
            "--runtime=10",
            "--time_based",
            "--direct=1",
            "--iodepth=16",
            "--output-format=json",
            "--request-trace=trace.txt",
        ],
        d.path(),
    );
    r.ok();
    let v = r.json();
    let ios = v["jobs"][0]["read"]["total_ios"]
        .as_u64()
        .expect("total_ios");
    let requests = v["disk_util"][0]["read_ios"].as_u64().expect("read_ios");
    assert!(ios > 3_000_000, "a busy run: {ios} IOs");
    assert_eq!(requests, ios, "4k direct reads: one request per IO");
    // a header line, then one line per request
    assert_eq!(count_lines(&d.path().join("trace.txt")), ios + 1);
}

#[test]
fn a_run_stretched_by_a_limit_completes_in_bounded_memory() {
    // one 4 MiB read at 1 byte/s: 4,194,304 simulated seconds
    let d = tempfile::tempdir().unwrap();
    let r = blkqos_limited(
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--bs=4m",
            "--size=32m",
            "--runtime=1",
            "--time_based",
            "--direct=1",
            "--cgroup=a",
            "--io-max=253:0 rbps=1",
            "--output-format=json",
        ],
        d.path(),
    );
    r.ok();
    let v = r.json();
    let read = &v["jobs"][0]["read"];
    // the job stopped issuing at 1 s; the IO it had in flight was waited
    // for, as fio waits for it, and the report says how long it took
    assert_eq!(read["total_ios"].as_u64(), Some(1));
    assert_eq!(read["io_bytes"].as_u64(), Some(4 << 20));
    let runtime_ms = read["runtime"].as_u64().expect("runtime");
    assert!(runtime_ms >= 4_194_304_000, "run={runtime_ms}ms");
    assert!(
        r.stderr.contains("runtime=") && r.stderr.contains("waited for"),
        "the overrun is explained: {}",
        r.stderr
    );
}

#[test]
fn diskstats_snapshots_beyond_the_cap_are_counted_not_kept() {
    // 101 s at 1 ms: 101,000 snapshots, 100,000 kept
    let d = tempfile::tempdir().unwrap();
    let r = blkqos_limited(
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--size=1m",
            "--rate_iops=10",
            "--runtime=101",
            "--time_based",
            "--direct=1",
            "--diskstats-every=1ms",
            "--iostat=-d 1 1",
        ],
        d.path(),
    );
    r.ok();
    assert!(
        r.stderr.contains("warning: diskstats snapshots")
            && r.stderr.contains("100000 were kept")
            && r.stderr.contains("1000 later ones were not taken"),
        "{}",
        r.stderr
    );
}

#[test]
fn writeback_series_beyond_the_cap_says_where_it_stops() {
    // a write every second for 100,010 s: more seconds with writes than kept
    let d = tempfile::tempdir().unwrap();
    let r = blkqos_limited(
        &[
            "run",
            "--name=x",
            "--rw=write",
            "--size=1m",
            "--rate_iops=1",
            "--runtime=100010",
            "--time_based",
            "--direct=1",
            "--pagecache-report=wb.json",
        ],
        d.path(),
    );
    r.ok();
    assert!(
        r.stderr
            .contains("warning: wb.json: writeback series truncated: seconds 100001"),
        "{}",
        r.stderr
    );
    let text = std::fs::read_to_string(d.path().join("wb.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["series"].as_array().map(Vec::len), Some(100_000));
    assert_eq!(v["series_truncated_at_second"].as_u64(), Some(100_001));
}
