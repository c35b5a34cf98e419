//! Jobs of different engines in one real run, each IO on its own job's
//! engine (as fio runs each job with its own engine): `falloc` and
//! `e4defrag` jobs beside `libaio` (direct) and `sync` (buffered) jobs on
//! one file. Per job, the IOs counted per direction and the errors must
//! be fio 3.33's on the same job file (when fio is installed), and the
//! data a job wrote must still verify after e4defrag moved its blocks.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Each job's (name, error, reads, writes, trims).
fn per_job(doc: &Value) -> Vec<(String, i64, f64, f64, f64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or("").to_string(),
                j["error"].as_i64().unwrap_or(-1),
                num(j, "/read/total_ios"),
                num(j, "/write/total_ios"),
                num(j, "/trim/total_ios"),
            )
        })
        .collect()
}

fn run_real(dir: &Path, text: &str) -> Value {
    std::fs::write(dir.join("j.fio"), text).unwrap();
    let r = blkqos(
        &["run", "j.fio", "--backend=real", "--output-format=json"],
        dir,
    );
    r.ok();
    r.json_docs().remove(0)
}

fn run_fio(dir: &Path, text: &str) -> Value {
    std::fs::write(dir.join("j.fio"), text).unwrap();
    let mut cmd = Command::new("fio");
    cmd.arg("j.fio")
        .arg("--output-format=json")
        .current_dir(dir);
    let r = run_bounded(cmd, TIMEOUT);
    r.ok();
    r.json_docs().remove(0)
}

/// falloc.fio's shape, bounded by size: fallocate then punch holes, then
/// an O_DIRECT libaio write and a buffered sync read of the same file.
const FALLOC_THEN_BLOCK: &str = "[global]\nfilename=f\nsize=1m\n\
[alloc]\nioengine=falloc\nrw=write\nbs=64k\n\
[punch]\nioengine=falloc\nrw=randtrim\nbs=4k\nnumber_ios=32\n\
[aio-dio write]\nstonewall\nioengine=libaio\niodepth=16\ndirect=1\nrw=write\nbs=64k\n\
[buffered read]\nstonewall\nioengine=sync\nrw=read\nbs=64k\n";

#[test]
#[ignore = "tier real"]
fn falloc_jobs_then_block_jobs_on_one_file_count_as_fio() {
    let _x = exclusive();
    let s = Scratch::new();
    let ours = per_job(&run_real(s.dir.path(), FALLOC_THEN_BLOCK));
    let want = [
        ("alloc", 0, 0.0, 16.0, 0.0),
        ("punch", 0, 0.0, 0.0, 32.0),
        ("aio-dio write", 0, 0.0, 16.0, 0.0),
        ("buffered read", 0, 16.0, 0.0, 0.0),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|&(n, e, r, w, t)| (n.to_string(), e, r, w, t))
        .collect();
    assert_eq!(ours, want);
    if !fio_installed() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "the comparison with fio: `fio` is not installed",
        );
        return;
    }
    let f = Scratch::new();
    assert_eq!(per_job(&run_fio(f.dir.path(), FALLOC_THEN_BLOCK)), ours);
}

/// Data written with fio's md5 headers, its blocks moved to a donor by
/// e4defrag, then read back and verified; the buffered and O_DIRECT
/// readers open the file each their own way. (fio allocates the donor up
/// to `filesize`: without it fio's e4defrag init fails.)
const WRITE_DEFRAG_VERIFY: &str = "[global]\nfilename=f\nsize=1m\nfilesize=1m\nbs=64k\n\
[write]\nioengine=libaio\ndirect=1\niodepth=8\nrw=write\nverify=md5\ndo_verify=0\n\
[defrag]\nstonewall\nioengine=e4defrag\ndonorname=f.def\ninplace=0\nrw=write\n\
[verify direct]\nstonewall\nioengine=libaio\ndirect=1\niodepth=8\nrw=read\nverify=md5\n\
[verify buffered]\nstonewall\nioengine=sync\nrw=read\nverify=md5\n";

#[test]
#[ignore = "tier real"]
fn data_still_verifies_after_e4defrag_moved_its_blocks() {
    let _x = exclusive();
    let s = Scratch::new();
    std::fs::write(s.dir.path().join("j.fio"), WRITE_DEFRAG_VERIFY).unwrap();
    let r = blkqos(
        &["run", "j.fio", "--backend=real", "--output-format=json"],
        s.dir.path(),
    );
    let doc = r.json_docs().remove(0);
    let ours = per_job(&doc);
    // a file system without EXT4_IOC_MOVE_EXT (tmpfs, xfs): the move fails
    if ours.iter().any(|j| j.0 == "defrag" && j.1 != 0) {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Host,
            format!("the scratch file system does not move ext4 extents: {ours:?}"),
        );
        return;
    }
    r.ok();
    let want: Vec<_> = [
        ("write", 0.0, 16.0),
        ("defrag", 0.0, 16.0),
        ("verify direct", 16.0, 0.0),
        ("verify buffered", 16.0, 0.0),
    ]
    .iter()
    .map(|&(n, rd, wr)| (n.to_string(), 0, rd, wr, 0.0))
    .collect();
    assert_eq!(ours, want);
    // the donor was allocated to the file's size (fio_e4defrag_init)
    assert!(s.path("f.def").exists());
    if !fio_installed() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "the comparison with fio: `fio` is not installed",
        );
        return;
    }
    let f = Scratch::new();
    assert_eq!(per_job(&run_fio(f.dir.path(), WRITE_DEFRAG_VERIFY)), ours);
}
