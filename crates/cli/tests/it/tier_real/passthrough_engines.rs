//! `ioengine=io_uring_cmd` and `ioengine=sg` on the simulator: their
//! commands are passthrough requests, which blk-throttle, iocost and the
//! disk statistics never see; `sg_write_mode` decides the device operation;
//! `sqthread_poll` takes the submit call off the job. The real engine
//! refuses them, naming the file, line, option and value.

use crate::common;

use common::{blkqos, num, write_file};
use std::path::PathBuf;

fn scratch(tag: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("passthrough-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

fn job(engine: &str, extra: &str) -> String {
    format!("[a]\nioengine={engine}\nrw=randread\nbs=4k\nsize=4m\niodepth=8\ndirect=1\n{extra}")
}

/// Reads under io.max riops=1000: io_uring is held to 1000 IOPS,
/// io_uring_cmd and sg pass by the throttle, and the disk statistics
/// count only io_uring's requests.
#[test]
fn passthrough_bypasses_io_max_and_diskstats() {
    let dir = scratch("iomax");
    let mut seen = Vec::new();
    for engine in ["io_uring", "io_uring_cmd", "sg"] {
        let f = write_file(&dir, &format!("{engine}.fio"), &job(engine, ""));
        let r = blkqos(
            &[
                "run",
                f.to_str().unwrap(),
                "--cgroup=g",
                "--io-max=253:0 riops=1000",
                "--output-format=json",
            ],
            Some(&dir),
        );
        let doc = r.ok().json();
        let ios = num(&doc, "/jobs/0/read/total_ios");
        assert_eq!(ios, 1024.0, "{engine}: every IO of the 4 MiB");
        seen.push((
            engine,
            num(&doc, "/jobs/0/read/iops"),
            num(&doc, "/disk_util/0/read_ios"),
        ));
    }
    let (_, uring_iops, uring_disk) = seen[0];
    assert!(uring_iops <= 1100.0, "io_uring must be throttled: {seen:?}");
    assert_eq!(uring_disk, 1024.0, "{seen:?}");
    for &(engine, iops, disk) in &seen[1..] {
        assert!(iops > 10_000.0, "{engine} must pass by io.max: {seen:?}");
        assert_eq!(disk, 0.0, "{engine}: passthrough is not in diskstats");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same under iocost with a tight model: io_uring waits for budget,
/// io_uring_cmd never enters iocost.
#[test]
fn passthrough_bypasses_iocost() {
    let dir = scratch("iocost");
    let mut lat = Vec::new();
    for engine in ["io_uring", "io_uring_cmd"] {
        let f = write_file(&dir, &format!("{engine}.fio"), &job(engine, ""));
        let r = blkqos(
            &[
                "run",
                f.to_str().unwrap(),
                "--cgroup=g",
                "--io-weight=100",
                "--io-cost-qos=253:0 enable=1 ctrl=user min=100.00 max=100.00",
                "--io-cost-model=253:0 ctrl=user model=linear rbps=4194304 rseqiops=1000 rrandiops=1000 wbps=4194304 wseqiops=1000 wrandiops=1000",
                "--output-format=json",
            ],
            Some(&dir),
        );
        let doc = r.ok().json();
        lat.push((engine, num(&doc, "/jobs/0/job_runtime")));
    }
    assert!(
        lat[0].1 > 10.0 * lat[1].1.max(1.0),
        "iocost must slow io_uring, not io_uring_cmd: {lat:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// sg's VERIFY BYTCHK 00 reads the medium; its writes and WRITE SAME
/// write it; fio counts all of them as writes.
#[test]
fn sg_write_mode_is_the_device_op() {
    let dir = scratch("sg");
    for (mode, dev_op) in [
        ("write", "write"),
        ("write_same_ndob", "write"),
        ("write_and_verify", "write"),
        ("verify_bytchk_00", "read"),
    ] {
        let text = format!("[a]\nioengine=sg\nrw=write\nbs=4k\nsize=64k\nsg_write_mode={mode}\n");
        let f = write_file(&dir, &format!("{mode}.fio"), &text);
        let trace = dir.join(format!("{mode}.trace"));
        let r = blkqos(
            &[
                "run",
                f.to_str().unwrap(),
                &format!("--request-trace={}", trace.display()),
                "--output-format=json",
            ],
            Some(&dir),
        );
        let doc = r.ok().json();
        assert_eq!(num(&doc, "/jobs/0/write/total_ios"), 16.0, "{mode}");
        assert_eq!(num(&doc, "/jobs/0/read/total_ios"), 0.0, "{mode}");
        let text = std::fs::read_to_string(&trace).expect("trace");
        let ops: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
            .collect();
        assert_eq!(ops.len(), 16, "{mode}: {text}");
        assert!(ops.iter().all(|o| *o == dev_op), "{mode}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// sqthread_poll=1: no submit call, so no slat; without it each submit
/// call costs the simulator's submit_ns.
#[test]
fn sqthread_poll_takes_the_submit_call_away() {
    let dir = scratch("sqpoll");
    let mut slat = Vec::new();
    for extra in ["", "sqthread_poll=1\n"] {
        let f = write_file(&dir, "j.fio", &job("io_uring", extra));
        let r = blkqos(
            &["run", f.to_str().unwrap(), "--output-format=json"],
            Some(&dir),
        );
        let doc = r.ok().json();
        assert_eq!(num(&doc, "/jobs/0/read/total_ios"), 1024.0);
        slat.push(num(&doc, "/jobs/0/read/slat_ns/mean"));
    }
    assert!(slat[0] > 0.0 && slat[1] == 0.0, "{slat:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real engine refuses passthrough engines (and libzbc) before it
/// opens anything: exit 2, naming the file, line, option and value.
#[test]
fn real_engine_refuses_with_the_place() {
    let dir = scratch("real");
    for (text, want) in [
        (
            job("io_uring_cmd", "filename=ng0n1\n"),
            "j.fio:2: option `ioengine`: value `io_uring_cmd`: ",
        ),
        (
            job("sg", "filename=sdb\n"),
            "j.fio:2: option `ioengine`: value `sg`: ",
        ),
        (
            job("libzbc", "filename=sdb\nzonemode=zbd\n"),
            "j.fio:2: option `ioengine`: value `libzbc`: ",
        ),
    ] {
        let f = write_file(&dir, "j.fio", &text);
        let r = blkqos(&["run", f.to_str().unwrap(), "--backend=real"], Some(&dir));
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains(want), "{}", r.stderr);
        assert!(
            !dir.join("ng0n1").exists() && !dir.join("sdb").exists() && !dir.join("f").exists(),
            "nothing is created"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under iocost at 1000 IOPS the job's submit call waits for budget
/// (slat near 1 ms); with sqthread_poll=1 the polling thread waits instead:
/// slat 0, the wait shows in clat, and the throughput is the same.
#[test]
fn sqthread_poll_moves_the_iocost_wait_off_the_job() {
    let dir = scratch("sqpoll-iocost");
    let mut seen = Vec::new();
    for extra in ["", "sqthread_poll=1\n"] {
        let f = write_file(&dir, "j.fio", &job("io_uring", extra));
        let r = blkqos(
            &[
                "run",
                f.to_str().unwrap(),
                "--cgroup=g",
                "--io-weight=100",
                "--io-cost-qos=253:0 enable=1 ctrl=user min=100.00 max=100.00",
                "--io-cost-model=253:0 ctrl=user model=linear rbps=4194304 rseqiops=1000 rrandiops=1000 wbps=4194304 wseqiops=1000 wrandiops=1000",
                "--output-format=json",
            ],
            Some(&dir),
        );
        let doc = r.ok().json();
        seen.push((
            num(&doc, "/jobs/0/read/iops"),
            num(&doc, "/jobs/0/read/slat_ns/mean"),
            num(&doc, "/jobs/0/read/clat_ns/mean"),
        ));
    }
    let ((iops0, slat0, clat0), (iops1, slat1, clat1)) = (seen[0], seen[1]);
    assert!(
        slat0 > 100_000.0,
        "the job waits in its submit call: {seen:?}"
    );
    assert_eq!(slat1, 0.0, "{seen:?}");
    assert!(clat1 > clat0, "the wait moves into clat: {seen:?}");
    assert!((iops0 - iops1).abs() <= iops0 * 0.02, "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
