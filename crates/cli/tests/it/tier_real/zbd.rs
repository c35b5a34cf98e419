//! `zonemode=zbd` on the simulator's zoned null_blk, against what fio
//! 3.33's `zbd.c` does on a zoned disk: writes land on write pointers (the
//! device fails any other write with EIO, so a clean run proves it), full
//! zones are reset and counted ("; N zone resets"), the reset threshold
//! resets every Nth write, reads stop at the write pointer, trims reset
//! zones, and fio's refusals (zone size, open-zone limits, a device
//! without zones, the real engine).

use crate::common;

use common::{blkqos, num, write_file};
use serde_json::Value;

const DEVICE: &str = "--device=null,zoned=1,zone_size=4,size=64m,completion_ns=10000";
const GLOBAL: &str =
    "[global]\nfilename=/dev/nullb0\ndirect=1\nioengine=psync\nzonemode=zbd\nzonesize=4m\n";

fn run(job: &str, args: &[&str]) -> common::Ran {
    let dir = tempfile::tempdir().unwrap();
    let jf = write_file(dir.path(), "z.fio", job);
    let mut all = vec!["run", jf.to_str().unwrap()];
    all.extend_from_slice(args);
    let r = blkqos(&all, Some(dir.path()));
    common::assert_no_panic(&r);
    r
}

/// Per job: (error, write IOs, write bytes, read bytes, trim IOs).
fn jobs(doc: &Value) -> Vec<(i64, u64, u64, u64, u64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["error"].as_i64().unwrap(),
                num(j, "/write/total_ios") as u64,
                num(j, "/write/io_bytes") as u64,
                num(j, "/read/io_bytes") as u64,
                num(j, "/trim/total_ios") as u64,
            )
        })
        .collect()
}

fn json(job: &str) -> Vec<(i64, u64, u64, u64, u64)> {
    let r = run(job, &[DEVICE, "--output-format=json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    jobs(&r.json())
}

/// The "; N zone resets" of each write line of the normal report.
fn zone_resets(job: &str) -> Vec<u64> {
    let r = run(job, &[DEVICE]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r.stdout_str()
        .lines()
        .filter(|l| l.trim_start().starts_with("write:"))
        .map(|l| {
            let n = l.rsplit("; ").next().unwrap();
            n.trim_end_matches(" zone resets").parse().unwrap()
        })
        .collect()
}

const MIB: u64 = 1 << 20;

#[test]
fn full_zones_are_reset_before_they_are_written_again() {
    let job = format!(
        "{GLOBAL}bs=64k\n[fill]\nrw=write\nsize=16m\n[again]\nstonewall\nrw=write\nsize=16m\n"
    );
    // fio: the first job fills zones 0-3; the second finds each zone full
    // at its write pointer and resets it first (zbd_adjust_block)
    assert_eq!(zone_resets(&job), [0, 4]);
    let j = json(&job);
    assert_eq!(j[1], (0, 256, 16 * MIB, 0, 0));
    // without zonemode=zbd the second job fails on the full zone
    let plain = run(
        &job.replace("zonemode=zbd\nzonesize=4m\n", ""),
        &[DEVICE, "--output-format=json"],
    );
    assert_eq!(jobs(&plain.json())[1].0, 5, "EIO");
}

#[test]
fn random_writes_stay_on_write_pointers() {
    // 4 clones, 2 open zones at most, 4 times the range written: every
    // write the device accepts was at its zone's write pointer
    let job = format!(
        "{GLOBAL}bs=64k\nnumjobs=4\nmax_open_zones=2\n[rnd]\nrw=randwrite\nsize=16m\niodepth=1\n"
    );
    let j = json(&job);
    assert_eq!(j.len(), 4);
    assert!(j.iter().all(|c| *c == (0, 256, 16 * MIB, 0, 0)), "{j:?}");
    // 64 MiB into 16 MiB: at least 12 zones' worth was reset
    let resets: u64 = zone_resets(&job).iter().sum();
    assert!(resets >= 12, "{resets}");
    // libaio at depth 8, one clone: the same
    let deep = job
        .replace("ioengine=psync", "ioengine=libaio")
        .replace("iodepth=1", "iodepth=8")
        .replace("numjobs=4", "numjobs=1");
    assert_eq!(json(&deep)[0], (0, 256, 16 * MIB, 0, 0));
}

#[test]
fn the_reset_threshold_resets_every_write_past_it() {
    // threshold 0.5 of 16 MiB, frequency 1: from the 9th 1 MiB write on
    // (8 MiB written) every write resets the zone it goes to: zone 2 (empty
    // for the 9th, not counted), then 7 resets of zone 2 at 1 MiB each
    let job = format!(
        "{GLOBAL}bs=1m\n[gc]\nrw=write\nsize=16m\nzone_reset_threshold=0.5\nzone_reset_frequency=1\n"
    );
    assert_eq!(zone_resets(&job), [7]);
    assert_eq!(json(&job)[0], (0, 16, 16 * MIB, 0, 0));
}

#[test]
fn reads_stop_at_the_write_pointer() {
    let job = |beyond: u8| {
        format!(
            "{GLOBAL}bs=64k\n[w]\nrw=write\nsize=8m\n\
             [r]\nstonewall\nrw=read\nsize=16m\nread_beyond_wp={beyond}\n"
        )
    };
    // fio: zones 0 and 1 are read to their write pointers, zone 2 is
    // empty and nothing after it has data: the job's IO ends there
    assert_eq!(json(&job(0))[1].3, 8 * MIB);
    assert_eq!(json(&job(1))[1].3, 16 * MIB);
    // random reads: none on empty zones (fio finds no zone with data and
    // ends the job's IO), all 16 MiB from the one zone written
    let rnd = |w: &str| {
        format!(
            "{GLOBAL}bs=64k\n[w]\nrw=write\nsize={w}\n\
             [r]\nstonewall\nrw=randread\nsize=16m\n"
        )
    };
    assert_eq!(json(&rnd("4m"))[1].3, 16 * MIB);
    let empty = format!("{GLOBAL}bs=64k\n[r]\nrw=randread\nsize=16m\n");
    assert_eq!(json(&empty)[0].3, 0);
}

#[test]
fn trims_reset_zones() {
    let job = format!(
        "{GLOBAL}bs=64k\n[w]\nrw=write\nsize=16m\n\
         [t]\nstonewall\nrw=randtrim\nbs=4m\nsize=16m\n\
         [w2]\nstonewall\nrw=write\nsize=16m\n"
    );
    let j = json(&job);
    // each trim resets a zone with data; then no zone has any: done
    assert_eq!(j[1].4, 4);
    // the zones are empty again: written without a reset
    assert_eq!(j[2], (0, 256, 16 * MIB, 0, 0));
    assert_eq!(zone_resets(&job), [0, 0]);
}

#[test]
fn libzbc_runs_as_a_synchronous_zoned_engine() {
    let job =
        format!("{GLOBAL}bs=64k\n[z]\nioengine=libzbc\nrw=randwrite\nsize=16m\nmax_open_zones=2\n");
    let j = json(&job);
    assert_eq!(j[0], (0, 256, 16 * MIB, 0, 0));
}

#[test]
fn fio_refusals() {
    let refused = |job: &str, args: &[&str], want: &str| {
        let r = run(job, args);
        assert_eq!(r.code.map(|c| c != 0), Some(true), "{want}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{want}: {}", r.stderr);
    };
    let w = format!("{GLOBAL}bs=64k\n[w]\nrw=randwrite\nsize=16m\n");
    refused(
        &w.replace("zonesize=4m", "zonesize=8m"),
        &[DEVICE],
        "does not match disk zone size 4194304",
    );
    refused(
        &format!("{w}max_open_zones=4\n"),
        &[&format!("{DEVICE},zone_max_open=2")],
        "Specified --max_open_zones (4) is larger than max (2)",
    );
    refused(
        &format!("{w}job_max_open_zones=1\n"),
        &[DEVICE],
        "'job_max_open_zones' cannot be used without a global open zones limit",
    );
    refused(&w, &["--device=null,size=64m"], "has no zones");
    refused(
        &w.replace("direct=1", "direct=0"),
        &[DEVICE],
        "Using direct I/O is mandatory",
    );
    refused(
        &w.replace("rw=randwrite", "rw=randtrim"),
        &[DEVICE],
        "trim block size 65536 is not the zone size",
    );
    // a write range must hold a whole zone (zbd_zone_align_file_sizes)
    refused(
        &w.replace("size=16m", "size=2m"),
        &[DEVICE],
        "io_size must be at least one zone",
    );
    // the device limit is ignored when asked
    let ignored = run(
        &format!("{w}max_open_zones=4\nignore_zone_limits=1\n"),
        &[&format!("{DEVICE},zone_max_open=2"), "--output-format=json"],
    );
    assert_eq!(jobs(&ignored.json())[0].0, 0, "{}", ignored.stderr);
}

#[test]
fn zones_of_the_default_device() {
    // without --device a zbd job gets a zoned null_blk of its zonesize;
    // offset and size in zones
    let job = "[z]\nfilename=/dev/sdb\ndirect=1\nzonemode=zbd\nzonesize=4m\n\
               offset=10z\nsize=2z\nrw=write\nbs=1m\n";
    let r = run(job, &["--output-format=json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r
        .stderr
        .contains("zoned null_blk (--device=null,zoned=1,zone_size=4"));
    assert_eq!(jobs(&r.json())[0], (0, 8, 8 * MIB, 0, 0));
}

#[test]
fn the_real_engine_refuses_zbd_and_libzbc() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("target");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    for (opt, want) in [
        (
            "zonemode=zbd\nzonesize=256k",
            "option `zonemode`: value `zbd`",
        ),
        ("ioengine=libzbc", "ioengine=libzbc needs libzbc"),
    ] {
        let job = format!(
            "[z]\nfilename={}\ndirect=1\nrw=read\nbs=4k\nsize=1m\n{opt}\n",
            f.display()
        );
        let jf = write_file(dir.path(), "z.fio", &job);
        let r = blkqos(
            &["run", jf.to_str().unwrap(), "--backend=real"],
            Some(dir.path()),
        );
        assert_eq!(r.code.map(|c| c != 0), Some(true), "{}", r.stderr);
        assert!(r.stderr.contains(want), "{}", r.stderr);
    }
}
