//! The file-call engines (falloc, ftruncate) and fio 3.34's directory
//! engines (dircreate, dirstat, dirdelete) on the real engine, in a
//! scratch directory: the files' sizes and allocated blocks after
//! fallocate and punched holes, the size left by ftruncate, the
//! directories made and removed; and, where fio 3.33 has the engine, the
//! same job run by fio must leave the same file behind and count the same
//! IOs. The simulator refuses these engines at the `ioengine` line.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// (size, allocated bytes) of `path`.
fn size_and_blocks(path: &Path) -> (u64, u64) {
    let m = std::fs::metadata(path).expect("file left behind");
    (m.len(), m.blocks() * 512)
}

/// ext4 may count a block or two of its own beside the data (an extent
/// tree block, the real engine's marker xattr): allocations agree within
/// this much.
const FS_SLACK_BYTES: u64 = 8 * 1024;

/// The size is `want.0`, the allocation `want.1` give or take the slack.
fn assert_file(path: &Path, want: (u64, u64), what: &str) {
    let (size, alloc) = size_and_blocks(path);
    assert!(
        size == want.0 && alloc.abs_diff(want.1) <= FS_SLACK_BYTES,
        "{what}: (size, allocated) ({size}, {alloc}), want {want:?}"
    );
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

const KIB: u64 = 1024;

#[test]
fn falloc_allocates_each_write_and_punches_each_trim() {
    let _x = exclusive();
    let s = Scratch::new();
    // sequential writes over an empty (fallocate=none) file: every 64k
    // write allocates its range, the file grows to cover it
    let doc = run_real(
        s.dir.path(),
        "[w]\nioengine=falloc\nfilename=f\nsize=1m\nbs=64k\nrw=write\nfallocate=none\n",
    );
    assert_eq!(num(&doc["jobs"][0], "/write/total_ios"), 16.0);
    assert_file(&s.path("f"), (1024 * KIB, 1024 * KIB), "written");
    // then 4k holes punched at every other 8k: half the blocks go, the
    // size stays (KEEP_SIZE)
    run_real(
        s.dir.path(),
        "[t]\nioengine=falloc\nfilename=f\nsize=1m\nbs=4k\nrw=trim:4k\n",
    );
    assert_file(&s.path("f"), (1024 * KIB, 512 * KIB), "punched");
    // reads allocate with KEEP_SIZE: the holes fill, the size stays
    let doc = run_real(
        s.dir.path(),
        "[r]\nioengine=falloc\nfilename=f\nsize=1m\nbs=4k\nrw=read\n",
    );
    assert_eq!(num(&doc["jobs"][0], "/read/total_ios"), 256.0);
    assert_file(&s.path("f"), (1024 * KIB, 1024 * KIB), "read");
}

#[test]
fn falloc_lays_a_new_file_out_by_fallocate_option() {
    let _x = exclusive();
    for (mode, want) in [
        ("native", (1024 * KIB, 1024 * KIB)),
        ("keep", (256 * KIB, 1024 * KIB)),
        ("truncate", (1024 * KIB, 256 * KIB)),
        ("none", (256 * KIB, 256 * KIB)),
    ] {
        let s = Scratch::new();
        // four 64k writes at the start of the file
        run_real(
            s.dir.path(),
            &format!(
                "[w]\nioengine=falloc\nfilename=f\nsize=1m\nbs=64k\nrw=write\nnumber_ios=4\n\
                 fallocate={mode}\n"
            ),
        );
        assert_file(&s.path("f"), want, &format!("fallocate={mode}"));
    }
}

#[test]
fn ftruncate_leaves_the_last_writes_offset() {
    let _x = exclusive();
    let s = Scratch::new();
    let doc = run_real(
        s.dir.path(),
        "[t]\nioengine=ftruncate\nfilename=f\nsize=1m\nbs=64k\nrw=write\nnumber_ios=3\n",
    );
    assert_eq!(num(&doc["jobs"][0], "/write/total_ios"), 3.0);
    // offsets 0, 64k, 128k: the last truncate leaves 128k
    assert_eq!(size_and_blocks(&s.path("f")).0, 128 * KIB);
    // a read is EINVAL, as in fio
    std::fs::write(
        s.path("r.fio"),
        "[r]\nioengine=ftruncate\nfilename=f\nsize=1m\nbs=64k\nrw=read\n",
    )
    .unwrap();
    let r = blkqos(&["run", "r.fio", "--backend=real"], s.dir.path());
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout_str().contains("err=22"), "{}", r.stdout_str());
}

#[test]
#[ignore = "tier real"]
fn same_file_and_ios_as_fio() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let _x = exclusive();
    let cases = [
        "[w]\nioengine=falloc\nfilename=f\nsize=1m\nbs=64k\nrw=write\nfallocate=none\nnumber_ios=5\n",
        "[w]\nioengine=falloc\nfilename=f\nsize=1m\nbs=64k\nrw=write\n[t]\nstonewall\n\
         ioengine=falloc\nfilename=f\nsize=1m\nbs=4k\nrw=trim:12k\n",
        "[w]\nioengine=ftruncate\nfilename=f\nsize=1m\nbs=4k\nrw=write\nnumber_ios=7\n",
    ];
    let mut bad = Vec::new();
    for text in cases {
        let ours = Scratch::new();
        let fio = Scratch::new();
        let a = run_real(ours.dir.path(), text);
        let b = run_fio(fio.dir.path(), text);
        let ios = |d: &Value| -> Vec<(f64, f64, f64)> {
            d["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| {
                    (
                        num(j, "/read/total_ios"),
                        num(j, "/write/total_ios"),
                        num(j, "/trim/total_ios"),
                    )
                })
                .collect()
        };
        if ios(&a) != ios(&b) {
            bad.push(format!(
                "{text}: IOs blkqos {:?}, fio {:?}",
                ios(&a),
                ios(&b)
            ));
        }
        let (x, y) = (
            size_and_blocks(&ours.path("f")),
            size_and_blocks(&fio.path("f")),
        );
        if x.0 != y.0 || x.1.abs_diff(y.1) > FS_SLACK_BYTES {
            bad.push(format!("{text}: (size, allocated) blkqos {x:?}, fio {y:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn dirs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn directory_engines_make_stat_and_remove_directories() {
    let _x = exclusive();
    let s = Scratch::new();
    let text = |engine: &str| {
        format!("[global]\nioengine={engine}\nnrfiles=3\nfilesize=4k\n[d]\nnumjobs=2\n")
    };
    let doc = run_real(
        s.dir.path(),
        &format!("{}create_on_open=1\n", text("dircreate")),
    );
    assert_eq!(num(&doc["jobs"][0], "/read/clat_ns/N"), 3.0);
    let made = dirs(s.dir.path());
    assert_eq!(made, ["d.0.0", "d.0.1", "d.0.2", "d.1.0", "d.1.1", "d.1.2"]);
    let mode = std::fs::metadata(s.path("d.0.0")).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "mkdir(0700), as fio 3.34");
    let doc = run_real(s.dir.path(), &text("dirstat"));
    assert_eq!(num(&doc["jobs"][0], "/read/clat_ns/N"), 3.0);
    run_real(s.dir.path(), &text("dirdelete"));
    assert!(dirs(s.dir.path()).is_empty(), "{:?}", dirs(s.dir.path()));
}

#[test]
fn simulator_refuses_and_real_refuses_a_mix() {
    let s = Scratch::new();
    std::fs::write(
        s.path("j.fio"),
        "[a]\nioengine=falloc\nfilename=f\nsize=1m\nrw=write\n",
    )
    .unwrap();
    let r = blkqos(&["run", "j.fio"], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "j.fio:2: option `ioengine`: value `falloc`: ioengine=falloc calls fallocate(2)"
        ) && r.stderr.contains("--backend=real"),
        "{}",
        r.stderr
    );
    std::fs::write(
        s.path("m.fio"),
        "[a]\nioengine=ftruncate\nfilename=f\nsize=1m\nrw=write\n\
         [b]\nioengine=cpuio\ncpuload=10\nruntime=1\n",
    )
    .unwrap();
    // beside block IO jobs they run (engine_fio_mixed.rs); beside a host
    // engine's, not
    let r = blkqos(&["run", "m.fio", "--backend=real"], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("does not run jobs of ioengine=falloc, ftruncate or e4defrag beside"),
        "{}",
        r.stderr
    );
    // fio_e4defrag_init: a donor is required
    std::fs::write(
        s.path("e.fio"),
        "[a]\nioengine=e4defrag\nfilename=f\nsize=1m\nrw=write\n",
    )
    .unwrap();
    let r = blkqos(&["run", "e.fio", "--backend=real"], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("'donorname' options required"),
        "{}",
        r.stderr
    );
}

/// sync(1): ext4 moves no block whose page is dirty or still held by the
/// journal (EXT4_IOC_MOVE_EXT fails with EBUSY, for fio too).
fn sync_all() {
    let ok = Command::new("sync").status().is_ok_and(|s| s.success());
    assert!(ok, "sync(1)");
}

fn is_ext4(dir: &Path) -> bool {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir)
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "ext2/ext3")
}

#[test]
fn e4defrag_moves_every_write_and_keeps_the_data() {
    let _x = exclusive();
    let s = Scratch::new();
    run_real(
        s.dir.path(),
        "[w]\nioengine=psync\nfilename=f\nsize=1m\nbs=64k\nrw=write\n",
    );
    let before = std::fs::read(s.path("f")).unwrap();
    sync_all();
    let text = |inplace: u8, donor: &str| {
        format!(
            "[d]\nioengine=e4defrag\nfilename=f\nsize=1m\nfilesize=1m\nbs=64k\nrw=write\n\
             donorname={donor}\ninplace={inplace}\n"
        )
    };
    std::fs::write(s.path("d.fio"), text(1, "dn1")).unwrap();
    let r = blkqos(
        &["run", "d.fio", "--backend=real", "--output-format=json"],
        s.dir.path(),
    );
    if !is_ext4(s.dir.path()) {
        // another file system refuses the ioctl: the job fails, as fio's
        assert_ne!(r.code, Some(0), "{}", r.stderr);
        return;
    }
    r.ok();
    let j = &r.json_docs()[0]["jobs"][0];
    // every ioctl moved its 64k
    assert_eq!(num(j, "/write/total_ios"), 16.0);
    assert_eq!(num(j, "/write/io_bytes"), 1024.0 * 1024.0);
    assert_eq!(num(j, "/error"), 0.0);
    // inplace: the donor is allocated per move and truncated after it
    assert_eq!(size_and_blocks(&s.path("dn1")), (0, 0));
    assert_eq!(std::fs::read(s.path("f")).unwrap(), before, "data kept");
    sync_all();
    // not inplace: the donor is allocated over the file's size first and
    // ends up with the file's old blocks
    run_real(s.dir.path(), &text(0, "dn0"));
    assert_file(&s.path("dn0"), (1024 * KIB, 1024 * KIB), "donor");
    assert_eq!(std::fs::read(s.path("f")).unwrap(), before, "data kept");
    // reads are EINVAL, as in fio
    std::fs::write(
        s.path("r.fio"),
        "[r]\nioengine=e4defrag\nfilename=f\nsize=1m\nbs=64k\nrw=read\ndonorname=dn\n",
    )
    .unwrap();
    let r = blkqos(&["run", "r.fio", "--backend=real"], s.dir.path());
    assert!(r.stdout_str().contains("err=22"), "{}", r.stdout_str());
}

#[test]
#[ignore = "tier real"]
fn e4defrag_counts_as_fio() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let _x = exclusive();
    let text = "[d]\nioengine=e4defrag\nfilename=f\nsize=1m\nbs=64k\nrw=write\n\
                donorname=dn\ninplace=1\n";
    let mut counts = Vec::new();
    for who in ["blkqos", "fio"] {
        let s = Scratch::new();
        if !is_ext4(s.dir.path()) {
            blkqos_testkit::skip(blkqos_testkit::Reason::Host, "not ext4");
            return;
        }
        run_real(
            s.dir.path(),
            "[w]\nioengine=psync\nfilename=f\nsize=1m\nbs=64k\nrw=write\n",
        );
        sync_all();
        let doc = if who == "blkqos" {
            run_real(s.dir.path(), text)
        } else {
            run_fio(s.dir.path(), text)
        };
        let j = &doc["jobs"][0];
        counts.push((
            num(j, "/write/total_ios"),
            num(j, "/write/io_bytes"),
            num(j, "/error"),
            size_and_blocks(&s.path("dn")),
        ));
    }
    assert_eq!(counts[0], counts[1], "blkqos, fio");
}
