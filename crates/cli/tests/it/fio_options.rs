//! The fio options of several files per job, block-size splits, offset
//! distributions, start gates, flow control and the engines, run on the
//! simulator from the job files in `examples/fio/` (the project's own
//! tier: nothing outside the repository).

use crate::common;

use common::*;
use serde_json::Value;

fn run_example(name: &str) -> (Value, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fio")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run".to_string(),
        path.display().to_string(),
        "--output-format=json".into(),
    ];
    let r = blkqos(&args, Some(dir.path()));
    r.ok();
    (r.json(), r.stderr.clone())
}

fn job<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

fn n(j: &Value, ptr: &str) -> f64 {
    num(j, ptr)
}

#[test]
fn engines() {
    let (d, err) = run_example("engines.fio");
    for name in ["null", "pvsync2", "posixaio"] {
        assert_eq!(n(job(&d, name), "/read/total_ios"), 1024.0, "{name}");
    }
    // sync engines: no slat; the note says iodepth changes nothing
    assert_eq!(n(job(&d, "pvsync2"), "/read/slat_ns/N"), 0.0);
    assert!(n(job(&d, "posixaio"), "/read/slat_ns/N") > 0.0);
    assert!(
        err.contains("ioengine=pvsync2 does one IO per system call"),
        "{err}"
    );
    // null: nothing reaches the device
    assert!(n(job(&d, "null"), "/read/clat_ns/mean") < 1000.0);
}

#[test]
fn several_files() {
    let (d, err) = run_example("files.fio");
    assert_eq!(
        n(job(&d, "shared"), "/read/total_ios"),
        2048.0,
        "4 files of 2 MiB"
    );
    let ranged = n(job(&d, "ranged"), "/read/io_bytes");
    assert!(
        (3.0 * 1048576.0..=6.0 * 1048576.0).contains(&ranged),
        "{ranged}"
    );
    for note in ["openfiles=2", "create_on_open=1", "fallocate=none"] {
        assert!(err.contains(note), "no note for {note}: {err}");
    }
}

#[test]
fn block_sizes_and_offsets() {
    let (d, _) = run_example("offsets.fio");
    let split = job(&d, "split");
    let ios = n(split, "/read/total_ios") + n(split, "/write/total_ios");
    let bytes = n(split, "/read/io_bytes") + n(split, "/write/io_bytes");
    // size ends the job before number_ios, its last IO passing the 16 MiB
    // by 512 bytes; fio 3.33 on this job: reads 6,318,080 bytes in 381
    // IOs, writes 10,459,648 in 628 (its bssplit and rwmix draws)
    assert_eq!(bytes, 16.0 * 1048576.0 + 512.0);
    assert_eq!(
        [
            n(split, "/read/io_bytes"),
            n(split, "/write/io_bytes"),
            n(split, "/read/total_ios"),
            n(split, "/write/total_ios")
        ],
        [6_318_080.0, 10_459_648.0, 381.0, 628.0]
    );
    // mean of 512/10 4k/70 64k/20 is 16025.6 bytes
    assert!(
        (bytes / ios - 16025.6).abs() < 1600.0,
        "mean bs {}",
        bytes / ios
    );
    let zipf = job(&d, "zipf");
    assert_eq!(n(zipf, "/read/io_bytes"), 8.0 * 1048576.0, "io_size");
    assert_eq!(n(zipf, "/read/clat_ns/N"), 0.0, "gtod_reduce: no latencies");
    assert_eq!(
        n(job(&d, "backwards"), "/read/total_ios"),
        512.0,
        "2 loops of 1 MiB"
    );
    assert_eq!(
        n(job(&d, "strided"), "/read/total_ios"),
        512.0,
        "number_ios"
    );
}

#[test]
fn start_gates_and_flow() {
    let (d, _) = run_example("start.fio");
    assert_eq!(n(job(&d, "first"), "/write/total_ios"), 1024.0);
    assert_eq!(n(job(&d, "second"), "/read/total_ios"), 1024.0);
    let light = n(job(&d, "light"), "/read/total_ios");
    let heavy = n(job(&d, "heavy"), "/read/total_ios");
    assert!(
        (heavy / light - 3.0).abs() < 0.15,
        "flow 3:1 gave {heavy}:{light}"
    );
}

/// A stonewalled job starts when the one before it has ended: the disk
/// sees the writes, then the reads, each stream sequential on its own;
/// run together the two streams make an HDD seek between them.
#[test]
fn stonewall_runs_jobs_one_after_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[global]\nbs=4k\nsize=8m\ndirect=1\nioengine=libaio\niodepth=4\n\
                [w]\nrw=write\n[r]\nstonewall\nrw=read\n";
    write_file(dir.path(), "s.fio", text);
    let together = text.replace("stonewall\n", "");
    write_file(dir.path(), "t.fio", &together);
    let run = |f: &str| {
        let r = blkqos(
            &["run", f, "--output-format=json", "--device=hdd"],
            Some(dir.path()),
        );
        r.ok();
        r.json()
    };
    let (s, t) = (run("s.fio"), run("t.fio"));
    let bw = |d: &Value| n(job(d, "r"), "/read/bw");
    assert!(
        bw(&s) > 10.0 * bw(&t),
        "serial {} KiB/s vs together {}",
        bw(&s),
        bw(&t)
    );
}
