//! `verify` and its family on the simulator, against real fio 3.33.
//!
//! The simulator has no data, but a verifying job's read-back IOs exist:
//! the same job file run by `fio` (on a scratch file) and by `blkqos run`
//! (simulated) issues the same reads and writes: `total_ios` per direction
//! are equal, and with `verify_backlog` at iodepth 1 the order of reads
//! and writes is fio's (its `write_iolog` against blkqos's request trace).
//! Without fio installed those tests skip; the refusals are tested always.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"fio-3"))
}

fn scratch(tag: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("verify-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// A one-job file on `dir/data`: 1 MiB, 4 KiB blocks, direct.
fn job(dir: &Path, name: &str, body: &str) -> PathBuf {
    write_file(
        dir,
        &format!("{name}.fio"),
        &format!(
            "[{name}]\nfilename={}\nsize=1m\nbs=4k\ndirect=1\n{body}",
            dir.join("data").display()
        ),
    )
}

/// (read, write) `total_ios` of the one job of a JSON report.
fn ios(doc: &Value) -> (u64, u64) {
    let j = &doc["jobs"][0];
    (
        num(j, "/read/total_ios") as u64,
        num(j, "/write/total_ios") as u64,
    )
}

/// fio run in the job file's directory (where it leaves its
/// `*-verify.state` files).
fn fio_json(jf: &Path, extra: &[&str]) -> Value {
    let o = Command::new("fio")
        .current_dir(jf.parent().expect("job file's directory"))
        .arg("--output-format=json")
        .args(extra)
        .arg(jf)
        .output()
        .expect("fio");
    assert!(
        o.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("fio JSON")
}

fn blkqos_json(jf: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["run".to_string(), jf.display().to_string()];
    args.push("--output-format=json".into());
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = blkqos(&args, None);
    r.ok();
    r.json()
}

/// Jobs whose IO counts do not depend on a random stream: the read-backs
/// after the writes, during them (`verify_backlog`), per loop, or none.
const SAME_COUNTS: [(&str, &str); 7] = [
    ("seq", "rw=write\nioengine=libaio\niodepth=4\nverify=crc32c\n"),
    ("rand", "rw=randwrite\nioengine=libaio\niodepth=4\nverify=md5\n"),
    (
        "backlog",
        "rw=randwrite\nioengine=libaio\niodepth=16\nverify=crc32c\nverify_backlog=7\n",
    ),
    (
        "batch",
        "rw=write\nioengine=libaio\niodepth=4\nverify=crc32c-intel\nverify_backlog=16\nverify_backlog_batch=4\n",
    ),
    ("loops", "rw=write\nioengine=psync\nverify=meta\nloops=2\n"),
    ("noverify", "rw=write\nioengine=psync\nverify=crc32c\ndo_verify=0\n"),
    (
        "interval",
        "rw=write\nbs=64k\nioengine=psync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n",
    ),
];

#[test]
#[ignore = "tier real"]
fn read_backs_count_as_fio_s() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio 3.x is not installed");
        return;
    }
    let dir = scratch("counts");
    let mut bad = Vec::new();
    for (name, body) in SAME_COUNTS {
        let jf = job(&dir, name, body);
        let fio = ios(&fio_json(&jf, &[]));
        let ours = ios(&blkqos_json(&jf, &[]));
        eprintln!("{name:<9} fio {fio:?} blkqos {ours:?}");
        if fio != ours {
            bad.push(format!(
                "{name}: fio (reads, writes) {fio:?}, blkqos {ours:?}"
            ));
        }
    }
    // a mixed job reads back only what it wrote, after its own reads
    let jf = job(
        &dir,
        "mixed",
        "rw=randrw\nioengine=libaio\niodepth=4\nverify=crc32c\n",
    );
    let (r, w) = ios(&blkqos_json(&jf, &[]));
    let plain = job(&dir, "plain", "rw=randrw\nioengine=libaio\niodepth=4\n");
    let (pr, pw) = ios(&blkqos_json(&plain, &[]));
    assert_eq!((r, w), (pr + pw, pw), "reads: its own plus one per write");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn backlog_interleaves_as_fio_does() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio 3.x is not installed");
        return;
    }
    let dir = scratch("order");
    let body = "rw=randwrite\nioengine=psync\nsize=64k\nverify=crc32c\nverify_backlog=3\nverify_backlog_batch=2\n";
    let jf = job(&dir, "order", body);
    let iolog = dir.join("fio.iolog");
    let log_arg = format!("--write_iolog={}", iolog.display());
    fio_json(&jf, &[&log_arg]);
    let fio: String = std::fs::read_to_string(&iolog)
        .unwrap()
        .lines()
        .filter_map(|l| match l.split_whitespace().nth(2) {
            Some("read") => Some('r'),
            Some("write") => Some('w'),
            _ => None,
        })
        .collect();
    let trace = dir.join("trace.txt");
    let trace_arg = format!("--request-trace={}", trace.display());
    blkqos_json(&jf, &[&trace_arg]);
    // the trace also has the sync before the read-back (fio's iolog does not)
    let ours: String = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| match l.split_whitespace().nth(1) {
            Some("read") => Some('r'),
            Some("write") => Some('w'),
            _ => None,
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fio.starts_with("wwwrrwwrr"), "fio's order: {fio}");
    assert_eq!(ours, fio, "reads and writes in fio's order");
}

fn refused(r: &Ran, needles: &[&str]) {
    assert_eq!(r.code, Some(2), "exit 2; stderr: {}", r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "`{n}` in: {}", r.stderr);
    }
}

#[test]
fn real_engine_refuses_data_options_by_line() {
    let dir = scratch("real");
    let jf = job(&dir, "v", "rw=write\nbuffer_compress_percentage=50\n");
    let r = blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            "--backend=real".into(),
        ],
        None,
    );
    refused(
        &r,
        &[
            "v.fio:7: option `buffer_compress_percentage`: value `50`",
            "simulator",
        ],
    );
    let jf = job(&dir, "z", "rw=write\nrefill_buffers\n");
    let r = blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            "--backend=real".into(),
        ],
        None,
    );
    refused(&r, &["z.fio:7: option `refill_buffers`"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulator_refuses_what_it_cannot_show() {
    let dir = scratch("sim");
    for (opt, why) in [
        ("verify_only", "verify_only"),
        ("error_dump=1", "error_dump=0"),
        ("verify=crc33", "invalid value `crc33`"),
        ("verify_pattern=%o", "formats"),
        ("buffer_pattern=\"ab", "unterminated"),
        ("buffer_compress_percentage=101", "100 max"),
        ("dedupe_mode=all", "repeat, working_set"),
        ("verify_interval=40", "80 min"),
        ("offset_increment=10%", "give it in bytes"),
    ] {
        let jf = write_file(
            &dir,
            "o.fio",
            &format!("[o]\nfilename=f\nsize=1m\ndirect=1\nrw=write\n{opt}\n"),
        );
        let r = blkqos(&["run".to_string(), jf.display().to_string()], Some(&dir));
        refused(&r, &["o.fio:6:", why]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Buffered writes are read back from the device: the sync before the
/// read-back writes the dirty pages back, then the file's cached pages are
/// dropped (fio `file_invalidate_cache`); without the drop every read-back
/// would hit the simulated page cache.
#[test]
fn buffered_read_back_reaches_the_device() {
    let dir = scratch("buffered");
    let jf = write_file(
        &dir,
        "b.fio",
        "[b]\nfilename=f\nsize=1m\nrw=write\nioengine=psync\nverify=md5\n",
    );
    let r = blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            "--output-format=json".into(),
        ],
        Some(&dir),
    );
    r.ok();
    let doc = r.json();
    assert_eq!(ios(&doc), (256, 256));
    assert_eq!(num(&doc["disk_util"][0], "/read_ios"), 256.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn content_options_run_on_the_simulator_with_a_note() {
    let dir = scratch("note");
    let jf = write_file(
        &dir,
        "d.fio",
        "[global]\nsize=4m\nbs=4k\nrw=write\ndedupe_mode=working_set\ndedupe_global=1\n\
         dedupe_percentage=50\nbuffer_compress_percentage=50\n\
         dedupe_working_set_percentage=50\n[a]\n[b]\n",
    );
    let r = blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            "--output-format=json".into(),
        ],
        Some(&dir),
    );
    r.ok();
    assert!(
        r.stderr.contains("simulated devices hold no data"),
        "{}",
        r.stderr
    );
    let doc = r.json();
    assert_eq!(num(&doc["jobs"][0], "/write/total_ios"), 1024.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write job on `path` with `body`, 256 KiB in 4 KiB random writes.
fn writer(dir: &Path, name: &str, path: &Path, body: &str) -> PathBuf {
    write_file(
        dir,
        &format!("{name}.fio"),
        &format!(
            "[{name}]\nfilename={}\nsize=256k\nbs=4k\ndirect=1\nioengine=psync\nrw=randwrite\n{body}",
            path.display()
        ),
    )
}

/// The kernel refuses O_DIRECT on the scratch file system (tmpfs): the
/// real-engine tests skip, saying why.
fn no_direct_io(r: &Ran) -> bool {
    let refused = r.code != Some(0) && r.stderr.contains("O_DIRECT is not supported");
    if refused {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, r.stderr.trim());
    }
    refused
}

fn real_run(jf: &Path) -> Ran {
    blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            "--backend=real".into(),
        ],
        None,
    )
}

#[test]
#[ignore = "tier real"]
fn real_engine_writes_buffer_patterns_as_fio() {
    let dir = scratch("contents");
    // zeros: no fio needed to know what they are
    let zeros = dir.join("zeros");
    let r = real_run(&writer(&dir, "z", &zeros, "zero_buffers\n"));
    if no_direct_io(&r) {
        return;
    }
    r.ok();
    let data = std::fs::read(&zeros).unwrap();
    assert_eq!(data.len(), 256 << 10);
    assert!(data.iter().all(|&b| b == 0), "zero_buffers writes zeros");
    // a 3-byte pattern restarts at every 4 KiB write, as fio's does
    let ours = dir.join("ours");
    real_run(&writer(&dir, "p", &ours, "buffer_pattern=\"ab\"0x01\n")).ok();
    let data = std::fs::read(&ours).unwrap();
    for block in data.chunks(4096) {
        let want: Vec<u8> = b"ab\x01".iter().copied().cycle().take(4096).collect();
        assert_eq!(
            block,
            &want[..],
            "every block holds the pattern from its start"
        );
    }
    if fio_installed() {
        for (name, body) in [
            ("p3", "buffer_pattern=\"ab\"0x01\n"),
            ("hex", "buffer_pattern=0xdeadbeef\n"),
            ("dec", "buffer_pattern=258\n"),
            ("zero", "zero_buffers\n"),
        ] {
            let theirs = dir.join(format!("{name}.fio-data"));
            let ours = dir.join(format!("{name}.blkqos-data"));
            fio_json(&writer(&dir, &format!("{name}-fio"), &theirs, body), &[]);
            real_run(&writer(&dir, &format!("{name}-blkqos"), &ours, body)).ok();
            let (a, b) = (
                std::fs::read(&theirs).unwrap(),
                std::fs::read(&ours).unwrap(),
            );
            assert!(a == b, "{name}: blkqos's file differs from fio's");
        }
    } else {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "(fio part) fio 3.x is not installed",
        );
    }
    // what the real engine cannot write as fio does is refused
    let r = real_run(&writer(
        &dir,
        "c",
        &dir.join("c"),
        "buffer_compress_percentage=50\n",
    ));
    refused(
        &r,
        &["c.fio:8: option `buffer_compress_percentage`: value `50`"],
    );
    let r = real_run(&writer(
        &dir,
        "s",
        &dir.join("s"),
        "zero_buffers\nscramble_buffers=1\n",
    ));
    refused(&r, &["s.fio:9: option `scramble_buffers`"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `offset_increment`: clone `n` writes from `offset + n × increment`; with
/// a fixed pattern the file fio writes and the one the real engine writes
/// are the same bytes (the regions, the holes between them, the length).
#[test]
fn offset_increment_places_clones_as_fio() {
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio 3.x is not installed");
        return;
    }
    let dir = scratch("increment");
    let job = |name: &str| {
        write_file(
            &dir,
            &format!("{name}.fio"),
            &format!(
                "[{name}]\nfilename={}\nsize=64k\nbs=4k\nioengine=psync\ndirect=1\nrw=write\n\
                 offset=8k\noffset_increment=128k\nnumjobs=3\nbuffer_pattern=0xff\n",
                dir.join(name).display()
            ),
        )
    };
    let r = real_run(&job("ours"));
    if no_direct_io(&r) {
        return;
    }
    r.ok();
    fio_json(&job("theirs"), &[]);
    let (a, b) = (
        std::fs::read(dir.join("theirs")).unwrap(),
        std::fs::read(dir.join("ours")).unwrap(),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        a.len(),
        8192 + 2 * 131072 + 65536,
        "fio's file ends after the last clone"
    );
    assert!(a == b, "blkqos's file differs from fio's");
}
