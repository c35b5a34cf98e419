//! Several files in one real run: a job with `nrfiles=4` and
//! `file_service_type=roundrobin` beside a job on a file of its own, run
//! by blkqos's real engine and by fio 3.33 in scratch directories. Both
//! must leave the same files (names, sizes, every byte where the jobs
//! wrote it), count the same IOs per direction, and list the same jobs;
//! /dev/null and /dev/zero serve jobs of one run; trims on a file fail
//! as fio's BLKDISCARD does. Skips the fio half without `fio`.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes with a pattern: a byte of it in a file shows the write reached
/// that file at that offset. fallocate=none: a file is as long as the
/// writes made it.
const JOBS: &str = "[global]\nioengine=io_uring\nbs=4k\nbuffer_pattern=0xab\n\
    [multi]\nnrfiles=4\nsize=1m\nrw=write\nfile_service_type=roundrobin\nfallocate=none\nend_fsync=1\n\
    directory=DIR\n\
    [other]\nfilename=DIR/other.dat\nsize=512k\nrw=read\n";

fn job_file(dir: &Path) -> String {
    JOBS.replace("DIR", &dir.display().to_string())
}

/// Each file of the directory but the job file: its size and how many of
/// its bytes are the pattern.
fn files_left(dir: &Path) -> BTreeMap<String, (u64, usize)> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name() != "j.fio")
        .map(|e| {
            let data = std::fs::read(e.path()).unwrap();
            let marked = data.iter().filter(|&&b| b == 0xab).count();
            (
                e.file_name().to_string_lossy().into_owned(),
                (data.len() as u64, marked),
            )
        })
        .collect()
}

/// Per job: name, (read IOs, read bytes, write IOs, write bytes).
fn counts(doc: &Value) -> Vec<(String, [f64; 4])> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or("").to_string(),
                [
                    num(j, "/read/total_ios"),
                    num(j, "/read/io_bytes"),
                    num(j, "/write/total_ios"),
                    num(j, "/write/io_bytes"),
                ],
            )
        })
        .collect()
}

fn run_blkqos(dir: &Path, text: &str) -> Ran {
    std::fs::write(dir.join("j.fio"), text).unwrap();
    blkqos(
        &["run", "j.fio", "--backend=real", "--output-format=json"],
        dir,
    )
}

#[test]
fn four_round_robin_files_and_a_second_job_agree_with_fio() {
    let _x = exclusive();
    let ours = Scratch::new();
    let r = run_blkqos(ours.dir.path(), &job_file(ours.dir.path()));
    r.ok();
    let doc = r.json_docs().remove(0);
    let left = files_left(ours.dir.path());
    // round robin over four 256 KiB files: 64 writes each, every byte
    // written with the pattern, nothing anywhere else
    let quarter = 256 << 10;
    for i in 0..4 {
        assert_eq!(
            left.get(&format!("multi.0.{i}")),
            Some(&(quarter, quarter as usize)),
            "{left:?}"
        );
    }
    // the read job's file is laid out (written) to its size, not with
    // the writers' pattern
    assert_eq!(left["other.dat"].0, 512 << 10, "{left:?}");
    assert_eq!(left.len(), 5, "{left:?}");
    let c = counts(&doc);
    assert_eq!(c[0], ("multi".into(), [0.0, 0.0, 256.0, 1048576.0]));
    assert_eq!(c[1], ("other".into(), [128.0, 524288.0, 0.0, 0.0]));
    if !fio_installed() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "the comparison: `fio` is not installed",
        );
        return;
    }
    let theirs = Scratch::new();
    let text = job_file(theirs.dir.path());
    std::fs::write(theirs.dir.path().join("j.fio"), &text).unwrap();
    let mut cmd = Command::new("fio");
    cmd.arg("j.fio")
        .arg("--output-format=json")
        .current_dir(theirs.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    f.ok();
    let fio_doc = f.json_docs().remove(0);
    assert_eq!(counts(&fio_doc), c, "IO counts per job and direction");
    let fio_left = files_left(theirs.dir.path());
    let shape = |m: &BTreeMap<String, (u64, usize)>| -> Vec<(String, u64, Option<usize>)> {
        m.iter()
            .map(|(n, &(len, marked))| {
                // the read job's layout bytes are each tool's own
                let marked = n.starts_with("multi").then_some(marked);
                (n.clone(), len, marked)
            })
            .collect()
    };
    assert_eq!(shape(&fio_left), shape(&left), "files left behind");
}

#[test]
fn dev_null_writes_and_dev_zero_reads_in_one_run() {
    let _x = exclusive();
    let s = Scratch::new();
    let text = "[global]\nbs=64k\nsize=8m\n\
        [w]\nfilename=/dev/null\nrw=write\nnumjobs=2\n\
        [r]\nfilename=/dev/zero\nrw=randread\n";
    let r = run_blkqos(s.dir.path(), text);
    r.ok();
    let doc = r.json_docs().remove(0);
    let c = counts(&doc);
    assert_eq!(c.len(), 3, "{c:?}");
    for (name, n) in &c[..2] {
        assert_eq!((name.as_str(), n[2], n[3]), ("w", 128.0, 8388608.0));
    }
    assert_eq!(c[2].1[..2], [128.0, 8388608.0]);
    // character devices: no disk under them, as in fio
    assert_eq!(doc["disk_util"].as_array().map_or(0, Vec::len), 0);
}

#[test]
fn a_trim_on_a_file_fails_with_enotty_as_fio_does() {
    let _x = exclusive();
    let s = Scratch::new();
    let text = "[t]\nioengine=io_uring\nfilename=f\nsize=1m\nrw=randtrim\nbs=4k\n\
        [w]\nioengine=io_uring\nfilename=g\nsize=64k\nrw=write\nbs=4k\n";
    let r = run_blkqos(s.dir.path(), text);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("error 25 (Inappropriate ioctl for device): trim offset="),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("on {}", s.path("f").display())) || r.stderr.contains("on f;"),
        "{}",
        r.stderr
    );
    let doc = r.json_docs().remove(0);
    let errors: Vec<f64> = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| num(j, "/error"))
        .collect();
    assert_eq!(errors, [25.0, 0.0]);
}
