//! The simulator's zoned null_blk (`--device=null,zoned=1,...`): fio jobs
//! meet the kernel's zone rules (drivers/block/null_blk/zoned.c) as on a
//! real zoned null_blk without `zonemode=zbd`: sequential writes from a
//! zone's start succeed, a write off the write pointer fails with EIO,
//! the active-zone limit fails a write to one zone too many with
//! EOVERFLOW, the open limit alone closes zones instead; and a job's
//! error with `exitall_on_error` stops the other jobs.

use crate::common;

use common::{blkqos, num, write_file};
use serde_json::Value;

const DEVICE: &str = "--device=null,zoned=1,zone_size=4,size=64m,completion_ns=10000";

fn run(job: &str, device: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let jf = write_file(dir.path(), "z.fio", job);
    let r = blkqos(
        &["run", jf.to_str().unwrap(), device, "--output-format=json"],
        Some(dir.path()),
    );
    common::assert_no_panic(&r);
    r.json()
}

/// Per job: (name, error, write IOs, read IOs, runtime ms).
fn jobs(doc: &Value) -> Vec<(String, i64, u64, u64, u64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["error"].as_i64().unwrap(),
                num(j, "/write/total_ios") as u64,
                num(j, "/read/total_ios") as u64,
                num(j, "/job_runtime") as u64,
            )
        })
        .collect()
}

const GLOBAL: &str = "[global]\nfilename=/dev/nullb0\ndirect=1\nbs=64k\nioengine=psync\n";

#[test]
fn sequential_writes_follow_the_write_pointer() {
    let doc = run(
        &format!("{GLOBAL}[seq]\nrw=write\nsize=8m\n[again]\nstonewall\nrw=write\nsize=8m\n"),
        DEVICE,
    );
    let j = jobs(&doc);
    assert_eq!((j[0].1, j[0].2), (0, 128), "8 MiB in two empty zones");
    // the zones are full now: the same offsets again fail at once
    assert_eq!((j[1].1, j[1].2), (5, 1), "EIO on a full zone: {j:?}");
    // the same jobs on the plain null device both succeed
    let plain = jobs(&run(
        &format!("{GLOBAL}[seq]\nrw=write\nsize=8m\n[again]\nstonewall\nrw=write\nsize=8m\n"),
        "--device=null,size=64m",
    ));
    assert_eq!((plain[1].1, plain[1].2), (0, 128));
}

#[test]
fn a_random_write_off_the_write_pointer_is_eio() {
    let j = jobs(&run(
        &format!("{GLOBAL}[rnd]\nrw=randwrite\nsize=16m\n"),
        DEVICE,
    ));
    assert_eq!(j[0].1, 5, "{j:?}");
    // reads anywhere succeed
    let j = jobs(&run(
        &format!("{GLOBAL}[rnd]\nrw=randread\nsize=16m\n"),
        DEVICE,
    ));
    assert_eq!((j[0].1, j[0].3), (0, 256), "{j:?}");
}

/// Three jobs each writing its own zone from its start, at once.
fn three_zones() -> String {
    let mut s = GLOBAL.to_string();
    for z in 0..3 {
        s += &format!("[z{z}]\nrw=write\noffset={}m\nsize=1m\n", z * 4);
    }
    s
}

#[test]
fn zone_limits() {
    let active = jobs(&run(&three_zones(), &format!("{DEVICE},zone_max_active=2")));
    let errors: Vec<i64> = active.iter().map(|j| j.1).collect();
    assert_eq!(
        errors,
        [0, 0, 75],
        "the third zone is one active zone too many"
    );
    let open = jobs(&run(&three_zones(), &format!("{DEVICE},zone_max_open=2")));
    assert!(
        open.iter().all(|j| j.1 == 0 && j.2 == 16),
        "the open limit closes a zone instead: {open:?}"
    );
}

#[test]
fn exitall_on_error_stops_the_others() {
    let job = |flag: &str| {
        format!(
            "{GLOBAL}[bad]\nrw=randwrite\nsize=16m\n{flag}\n\
             [reader]\nrw=randread\nsize=16m\ntime_based\nruntime=5\n"
        )
    };
    let stopped = jobs(&run(&job("exitall_on_error"), DEVICE));
    assert_eq!(stopped[0].1, 5);
    assert!(stopped[1].4 < 1000, "reader stopped: {stopped:?}");
    let ran = jobs(&run(&job(""), DEVICE));
    assert!(ran[1].4 >= 5000, "without exitall_on_error: {ran:?}");
}

#[test]
fn bad_zone_parameters_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let jf = write_file(
        dir.path(),
        "z.fio",
        &format!("{GLOBAL}[r]\nrw=read\nsize=1m\n"),
    );
    for (dev, key) in [
        ("null,zoned=1,zone_size=3", "zone_size"),
        ("null,zoned=1,zone_size=4,zone_capacity=8", "zone_capacity"),
        ("null,zoned=2", "zoned"),
    ] {
        let r = blkqos(
            &["run", jf.to_str().unwrap(), &format!("--device={dev}")],
            Some(dir.path()),
        );
        assert_eq!(r.code, Some(2), "{dev}: {}", r.stderr);
        assert!(r.stderr.contains(key), "{dev}: {}", r.stderr);
    }
}
