//! fio's verify format on the real engine, against real fio 3.33: blocks
//! `blkqos run --backend=real` writes with `verify=<type>` pass fio's
//! `verify_only=1`, blocks fio writes pass blkqos's verifying reads, and a
//! byte corrupted between the write and the read is reported with fio's
//! own stderr lines and error (EILSEQ, err=84, exit status 1). Without fio
//! installed the comparisons skip; blkqos's own round trip and its report
//! of a corruption are tested always.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"fio-3"))
}

fn scratch(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fio-verify-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// A job on `dir/data`: 1 MiB in 4 KiB blocks, direct, libaio at depth 4.
fn job_text(dir: &Path, rw: &str, body: &str) -> String {
    format!(
        "[v]\nfilename={}\nsize=1m\nbs=4k\ndirect=1\nioengine=libaio\niodepth=4\nrw={rw}\n{body}",
        dir.join("data").display()
    )
}

fn run_blkqos(dir: &Path, name: &str, text: &str) -> Ran {
    let f = write_file(dir, name, text);
    blkqos(
        &[
            "run",
            f.to_str().unwrap(),
            "--backend=real",
            "--output-format=json",
        ],
        Some(dir),
    )
}

/// fio on the same file: (exit status, stdout, stderr).
fn run_fio(dir: &Path, name: &str, text: &str) -> (Option<i32>, String, String) {
    let f = write_file(dir, name, text);
    let o = Command::new("fio")
        .arg(&f)
        .arg("--output-format=json")
        .current_dir(dir)
        .output()
        .expect("fio runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// fio's verify lines in a stderr (what both tools print on a failure).
fn verify_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.starts_with("verify: ")
                || l.contains(": verify failed at file ")
                || l.starts_with("       Expected CRC: ")
                || l.starts_with("       Received CRC: ")
                || l.starts_with("fio: got pattern ")
                || l.starts_with("fio: bad pattern block offset ")
                || l.starts_with("fio: verify type mismatch ")
        })
        .map(str::to_string)
        .collect()
}

fn read_bytes(json: &serde_json::Value) -> f64 {
    num(json, "/jobs/0/read/io_bytes")
}

const TYPES: [&str; 15] = [
    "md5",
    "crc64",
    "crc32",
    "crc32c",
    "crc32c-intel",
    "crc16",
    "crc7",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
];

/// Extra formats: intervals, a moved header, a pattern with and without
/// a header.
const FORMATS: [&str; 4] = [
    "verify=crc32c\nverify_interval=512\n",
    "verify=md5\nverify_offset=512\n",
    "verify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n",
    "verify_pattern=\"blkqos\"\n",
];

fn bodies() -> Vec<String> {
    TYPES
        .iter()
        .map(|t| format!("verify={t}\n"))
        .chain(FORMATS.iter().map(|f| f.to_string()))
        .collect()
}

#[test]
#[ignore = "tier real"]
fn blkqos_writes_what_it_and_fio_verify() {
    let fio = fio_installed();
    if !fio {
        eprintln!("fio not installed: blkqos's own round trip only");
    }
    for body in bodies() {
        let dir = scratch("w");
        // write and read back in one job (fio's do_verify)
        let r = run_blkqos(&dir, "w.fio", &job_text(&dir, "randwrite", &body));
        assert_eq!(r.code, Some(0), "{body}: {}", r.stderr);
        assert!(verify_lines(&r.stderr).is_empty(), "{body}: {}", r.stderr);
        assert_eq!(read_bytes(&r.json()), 1048576.0, "{body}: read back all");
        if !fio {
            continue;
        }
        let v = job_text(&dir, "randwrite", &format!("{body}verify_only=1\n"));
        let (code, out, err) = run_fio(&dir, "vo.fio", &v);
        assert_eq!(code, Some(0), "{body}: fio verify_only: {err}");
        assert!(verify_lines(&err).is_empty(), "{body}: {err}");
        let doc: serde_json::Value = serde_json::from_str(&out).expect("fio json");
        assert_eq!(read_bytes(&doc), 1048576.0, "{body}: fio read it all back");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
#[ignore = "tier real"]
fn fio_writes_what_blkqos_verifies() {
    if !fio_installed() {
        eprintln!("fio not installed: skipped");
        return;
    }
    for body in bodies() {
        let dir = scratch("r");
        let w = job_text(&dir, "randwrite", &format!("{body}do_verify=0\n"));
        let (code, _, err) = run_fio(&dir, "w.fio", &w);
        assert_eq!(code, Some(0), "{body}: {err}");
        let r = run_blkqos(&dir, "r.fio", &job_text(&dir, "read", &body));
        assert_eq!(r.code, Some(0), "{body}: {}", r.stderr);
        assert!(verify_lines(&r.stderr).is_empty(), "{body}: {}", r.stderr);
        assert_eq!(read_bytes(&r.json()), 1048576.0, "{body}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Flip the byte at `at` of `dir/data`.
fn corrupt(dir: &Path, at: usize) {
    let p = dir.join("data");
    let mut b = std::fs::read(&p).expect("data");
    b[at] ^= 0x5a;
    std::fs::write(&p, b).expect("write back");
}

#[test]
#[ignore = "tier real"]
fn a_corrupted_byte_is_reported_as_fio_reports_it() {
    let fio = fio_installed();
    // data, header magic, header offset field, a verify_pattern byte
    let cases = [
        ("verify=crc32c\n", 5000, "crc32c: verify failed at file "),
        ("verify=crc32c\n", 8192, "verify: bad magic header "),
        ("verify=sha1\n", 4096 + 17, "verify: bad header offset "),
        (
            "verify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n",
            7 * 512 + 100,
            "fio: got pattern '",
        ),
        // no header: fio reads the failure line's length from the data
        (
            "verify=pattern\nverify_pattern=\"blkqos\"\n",
            3 * 4096 + 5,
            "fio: got pattern '",
        ),
    ];
    for (body, at, first) in cases {
        corrupted_case(fio, body, at, first);
    }
    // fio keeps the last interval's verdict: a bad pattern in the 4th of
    // 8 intervals of a read is reported, and the job ends without error
    let dir = scratch("mid");
    let body = "verify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n";
    let w = run_blkqos(
        &dir,
        "w.fio",
        &job_text(&dir, "write", &format!("{body}do_verify=0\n")),
    );
    assert_eq!(w.code, Some(0), "{}", w.stderr);
    corrupt(&dir, 3 * 512 + 100);
    let text = job_text(&dir, "read", body);
    let r = run_blkqos(&dir, "r.fio", &text);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(verify_lines(&r.stderr).len(), 3, "{}", r.stderr);
    if fio {
        let (code, _, err) = run_fio(&dir, "r.fio", &text);
        assert_eq!(code, Some(0), "fio: {err}");
        assert_eq!(verify_lines(&r.stderr), verify_lines(&err));
    }
}

fn corrupted_case(fio: bool, body: &str, at: usize, first: &str) {
    let dir = scratch("c");
    let w = run_blkqos(
        &dir,
        "w.fio",
        &job_text(&dir, "write", &format!("{body}do_verify=0\n")),
    );
    assert_eq!(w.code, Some(0), "{}", w.stderr);
    corrupt(&dir, at);
    let text = job_text(&dir, "read", body);
    let r = run_blkqos(&dir, "r.fio", &text);
    assert_eq!(r.code, Some(1), "{body}: {}", r.stderr);
    let ours = verify_lines(&r.stderr);
    assert!(
        ours.first().is_some_and(|l| l.starts_with(first)),
        "{body}: {ours:?}"
    );
    assert!(
        ours.iter()
            .any(|l| l.contains(&format!("at file {} offset", dir.join("data").display()))),
        "{body}: {ours:?}"
    );
    assert_eq!(num(&r.json(), "/jobs/0/error"), 84.0, "{body}: EILSEQ");
    if fio {
        let (code, _, err) = run_fio(&dir, "r.fio", &text);
        assert_eq!(code, Some(1), "{body}: fio: {err}");
        assert_eq!(ours, verify_lines(&err), "{body}: fio's lines");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `verify_dump=1`: the bad block as read, and the block the header's seed
/// regenerates, in the current directory as fio names them
/// (`<file>.<offset>.received` / `.expected`); the received block is the
/// one fio dumps from the same file.
#[test]
#[ignore = "tier real"]
fn verify_dump_writes_fio_s_files() {
    let dir = scratch("dump");
    let body = "verify=crc32c\nverify_dump=1\n";
    let w = run_blkqos(
        &dir,
        "w.fio",
        &job_text(&dir, "write", &format!("{body}do_verify=0\n")),
    );
    assert_eq!(w.code, Some(0), "{}", w.stderr);
    let good = std::fs::read(dir.join("data")).expect("data");
    corrupt(&dir, 4096 + 300);
    let text = job_text(&dir, "read", body);
    let r = run_blkqos(&dir, "r.fio", &text);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("       received data dumped as data.4096.received\n")
            && r.stderr
                .contains("       expected data dumped as data.4096.expected\n"),
        "{}",
        r.stderr
    );
    let received = std::fs::read(dir.join("data.4096.received")).expect("received");
    let expected = std::fs::read(dir.join("data.4096.expected")).expect("expected");
    let bad = std::fs::read(dir.join("data")).expect("data");
    assert!(received == bad[4096..8192], "the block as read");
    assert!(expected == good[4096..8192], "the block as written");
    if fio_installed() {
        std::fs::remove_file(dir.join("data.4096.received")).unwrap();
        let (code, _, err) = run_fio(&dir, "r.fio", &text);
        assert_eq!(code, Some(1), "{err}");
        let theirs = std::fs::read(dir.join("data.4096.received")).expect("fio's dump");
        assert!(theirs == received, "fio dumps the same block");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fill_device=1` on the real engine: with `size` it writes `size` (fio
/// sets the size only when none is given), verified as fio would; without
/// `size` (fill the file system) it is refused naming the option.
#[test]
fn fill_device_is_bounded_by_size_on_the_real_engine() {
    let dir = scratch("fill");
    let text = format!(
        "[f]\nfilename={}\nrw=write\nbs=64k\nverify=meta\nverify_pattern=0xaa555aa5\n\
         verify_interval=512\nfill_device=1\n",
        dir.join("data").display()
    );
    let r = run_blkqos(&dir, "f.fio", &format!("{text}size=2m\n"));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(num(&r.json(), "/jobs/0/write/io_bytes"), 2097152.0);
    assert_eq!(read_bytes(&r.json()), 2097152.0, "read back");
    let r = run_blkqos(&dir, "g.fio", &text);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("g.fio:8: option `fill_device`: value `1`"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}
