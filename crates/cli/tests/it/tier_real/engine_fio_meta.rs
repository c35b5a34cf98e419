//! The file system metadata engines (filecreate, filestat with each
//! stat_type, filedelete) on the real engine against fio 3.33: the same job
//! file run by `blkqos run --backend=real` and by `fio` in two scratch
//! directories. Per job, the IOs, bytes and clat samples (one per call)
//! must be equal, and so must the files left behind. The simulator
//! refuses these engines (exit 2, at the `ioengine` line), and the real
//! engine refuses them beside block-IO jobs.

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

/// Per job: (name, IOs, bytes, clat samples) of the stat direction (read).
fn per_job(doc: &Value) -> Vec<(String, f64, f64, f64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or("").to_string(),
                num(j, "/read/total_ios"),
                num(j, "/read/io_bytes"),
                num(j, "/read/clat_ns/N"),
            )
        })
        .collect()
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('m'))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().map_or(0, |m| m.len()),
            )
        })
        .collect();
    v.sort();
    v
}

fn job_text(engine_lines: &str) -> String {
    format!("[global]\n{engine_lines}nrfiles=8\nfilesize=8k\nbs=4k\n[m1]\n[m2]\nnumjobs=2\n")
}

#[test]
#[ignore = "tier real"]
fn same_calls_as_fio() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let _x = exclusive();
    let cases = [
        ("filecreate", "ioengine=filecreate\ncreate_on_open=1\n"),
        ("filestat", "ioengine=filestat\n"),
        ("lstat", "ioengine=filestat\nstat_type=lstat\n"),
        ("statx", "ioengine=filestat\nstat_type=statx\n"),
        ("filedelete", "ioengine=filedelete\n"),
    ];
    let mut bad = Vec::new();
    for (name, lines) in cases {
        let ours_dir = Scratch::new();
        let fio_dir = Scratch::new();
        let text = job_text(lines);
        let mut docs = Vec::new();
        for (who, dir) in [("blkqos", &ours_dir), ("fio", &fio_dir)] {
            let jf = dir.path("j.fio");
            std::fs::write(&jf, &text).unwrap();
            let r = if who == "blkqos" {
                blkqos(
                    &["run", "j.fio", "--backend=real", "--output-format=json"],
                    dir.dir.path(),
                )
            } else {
                let mut cmd = Command::new("fio");
                cmd.arg("j.fio")
                    .arg("--output-format=json")
                    .current_dir(dir.dir.path());
                run_bounded(cmd, TIMEOUT)
            };
            r.ok();
            docs.push(per_job(&r.json_docs()[0]));
        }
        let (ours, theirs) = (&docs[0], &docs[1]);
        assert_eq!(ours.len(), 3, "{name}: two jobs, one of two clones");
        if ours != theirs {
            bad.push(format!("{name}: blkqos {ours:?}, fio {theirs:?}"));
        }
        // one clat sample per file, each file 8k in 4k IOs
        for (j, ios, bytes, clat_n) in ours {
            if (*ios, *bytes, *clat_n) != (16.0, 16.0 * 4096.0, 8.0) {
                bad.push(format!(
                    "{name} {j}: ios {ios}, bytes {bytes}, clat N {clat_n}"
                ));
            }
        }
        let (left_ours, left_fio) = (listing(ours_dir.dir.path()), listing(fio_dir.dir.path()));
        if left_ours != left_fio {
            bad.push(format!(
                "{name}: files left: blkqos {left_ours:?}, fio {left_fio:?}"
            ));
        }
        let want = if name == "filedelete" { 0 } else { 24 };
        if left_ours.len() != want {
            bad.push(format!(
                "{name}: {} files left, want {want}",
                left_ours.len()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn simulator_refuses_at_the_ioengine_line() {
    let s = Scratch::new();
    std::fs::write(s.path("j.fio"), job_text("ioengine=filestat\n")).unwrap();
    let r = blkqos(&["run", "j.fio"], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("j.fio:2: option `ioengine`: value `filestat`: ioengine=filestat stats files: a simulated device has no file system; run it with --backend=real"),
        "{}",
        r.stderr
    );
    assert!(listing(s.dir.path()).is_empty(), "nothing laid out");
}

#[test]
fn real_engine_refuses_a_mix_with_block_io() {
    let s = Scratch::new();
    std::fs::write(
        s.path("j.fio"),
        "[c]\nioengine=filecreate\nnrfiles=2\n[d]\nioengine=psync\nfilename=data\nsize=1m\n",
    )
    .unwrap();
    let r = blkqos(&["run", "j.fio", "--backend=real"], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("on their own"), "{}", r.stderr);
}

#[test]
fn real_engine_refuses_controllers_it_cannot_apply() {
    let s = Scratch::new();
    std::fs::write(s.path("j.fio"), job_text("ioengine=filecreate\n")).unwrap();
    let r = blkqos(
        &[
            "run",
            "j.fio",
            "--backend=real",
            "--cgroup=g",
            "--io-max=8:0 wiops=10",
        ],
        s.dir.path(),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("issue none"), "{}", r.stderr);
    assert!(listing(s.dir.path()).is_empty(), "no file created");
}
