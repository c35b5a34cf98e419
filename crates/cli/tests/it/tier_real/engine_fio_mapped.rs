//! The memory-mapped engines on the real engine, in a scratch directory:
//!
//! * libpmem against fio 3.33's own libpmem engine on the same job (fio
//!   refuses a file that is not on persistent memory unless
//!   `PMEM_IS_PMEM_FORCE=1`, which the test sets for it): the IOs and
//!   bytes per job, and the files the writing jobs leave, byte for byte.
//!   Skipped when fio or its libpmem engine is missing.
//! * page_fault (an engine of a fio newer than 3.33, so its source is
//!   the reference, not a run): each page the job writes first is one
//!   minor fault charged to the job (`minf`), a second pass faults none.
//! * dev-dax without a device-DAX device: refused, naming what is
//!   missing; and the simulator refuses the three engines.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// fio with a loadable libpmem engine.
fn fio_has_libpmem() -> bool {
    // fio 3.33 exits 1 after "IO engine libpmem has no options" (its
    // engine has none), and with "engine foo not loadable" when it is
    // missing: the text says which
    Command::new("fio")
        .arg("--enghelp=libpmem")
        .output()
        .is_ok_and(|o| {
            let text = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            text.contains("IO engine libpmem") && !text.contains("not loadable")
        })
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
        .env("PMEM_IS_PMEM_FORCE", "1")
        .current_dir(dir);
    let r = run_bounded(cmd, TIMEOUT);
    r.ok();
    r.json_docs().remove(0)
}

/// Per job: (name, read IOs, read bytes, write IOs, write bytes).
fn counts(doc: &Value) -> Vec<(String, [f64; 4])> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
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

/// A libpmem job file in `dir`: a sequential writer (sync=1, direct=1,
/// libpmem.fio's settings), a random writer with drains by fsync, and a
/// reader, each on its own file.
fn libpmem_job(dir: &Path) -> String {
    format!(
        "[global]\nioengine=libpmem\ndirectory={}\nsize=2m\nbuffer_pattern=0xdeadbeef\n\
         iodepth=1\nthread\ninvalidate=1\ndisable_lat=1\ndisable_slat=1\n\
         [seq]\nrw=write\nbs=4k\nsync=1\ndirect=1\nstonewall\n\
         [rand]\nrw=randwrite\nbs=8k\nfsync=16\ndisable_clat=1\nstonewall\n\
         [read]\nrw=read\nbs=16k\nstonewall\n",
        dir.display()
    )
}

#[test]
#[ignore = "tier real"]
fn libpmem_does_what_fio_does_on_the_same_job() {
    if !fio_has_libpmem() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "fio with its libpmem engine is not installed",
        );
        return;
    }
    let _x = exclusive();
    let (ours, theirs) = (Scratch::new(), Scratch::new());
    let mine = run_real(ours.dir.path(), &libpmem_job(ours.dir.path()));
    let fio = run_fio(theirs.dir.path(), &libpmem_job(theirs.dir.path()));
    assert_eq!(counts(&mine), counts(&fio));
    let want = [
        ("seq", [0.0, 0.0, 512.0, 2097152.0]),
        ("rand", [0.0, 0.0, 256.0, 2097152.0]),
        ("read", [128.0, 2097152.0, 0.0, 0.0]),
    ];
    for ((name, c), (wn, wc)) in counts(&mine).iter().zip(want) {
        assert_eq!((name.as_str(), *c), (wn, wc));
    }
    // the writers' files hold the same bytes (every block written once)
    for f in ["seq.0.0", "rand.0.0"] {
        let a = std::fs::read(ours.path(f)).unwrap();
        let b = std::fs::read(theirs.path(f)).unwrap();
        assert_eq!(a.len(), 2 << 20, "{f}");
        assert!(a == b, "{f}: blkqos's file differs from fio's");
        assert!(a.chunks(4).all(|w| w == [0xde, 0xad, 0xbe, 0xef]), "{f}");
    }
    // disable_lat, disable_slat (all), disable_clat (rand): the samples
    // each job keeps are fio's, and without clat no latency buckets
    for (m, f) in mine["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(fio["jobs"].as_array().unwrap())
    {
        for p in [
            "/read/lat_ns/N",
            "/read/clat_ns/N",
            "/read/slat_ns/N",
            "/write/lat_ns/N",
            "/write/clat_ns/N",
            "/write/slat_ns/N",
        ] {
            assert_eq!(num(m, p), num(f, p), "{}: {p}", m["jobname"]);
        }
        let buckets = |j: &Value| -> f64 {
            j["latency_us"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum()
        };
        assert_eq!(buckets(m) == 0.0, buckets(f) == 0.0, "{}", m["jobname"]);
    }
    let seq = &mine["jobs"][0];
    assert_eq!(num(seq, "/write/lat_ns/N"), 0.0);
    assert_eq!(num(seq, "/write/clat_ns/N"), 512.0);
    let rand = &mine["jobs"][1];
    assert_eq!(num(rand, "/write/clat_ns/N"), 0.0);
    // no disk section: fio's libpmem is FIO_NODISKUTIL
    assert!(mine.get("disk_util").is_none() && fio.get("disk_util").is_none());
    assert!(mine.get("blkqos_disk_util").is_none());
}

#[test]
fn page_fault_charges_each_first_touch_to_the_job() {
    let _x = exclusive();
    let s = Scratch::new();
    // 8 MiB of anonymous memory: 2048 pages written once, then twice
    let doc = run_real(
        s.dir.path(),
        "[global]\nioengine=page_fault\nsize=8m\nbs=4k\nrw=write\nstonewall\n\
         [once]\n[twice]\nloops=2\n[read]\nrw=randread\nbs=64k\n",
    );
    let jobs = doc["jobs"].as_array().unwrap();
    let pages = 2048.0;
    assert_eq!(num(&jobs[0], "/write/total_ios"), pages);
    assert_eq!(num(&jobs[1], "/write/total_ios"), 2.0 * pages);
    // the first pass faults every page in; the second finds them there
    for j in &jobs[..2] {
        let minf = num(j, "/minf");
        assert!(
            (pages..pages * 1.25).contains(&minf),
            "{}: {minf} minor faults for {pages} pages",
            j["jobname"]
        );
    }
    // reads of untouched memory fault in the zero page, one per page
    let minf = num(&jobs[2], "/minf");
    assert!((pages..pages * 1.25).contains(&minf), "read: {minf}");
    assert!(s.dir.path().read_dir().unwrap().all(|e| {
        // no file is made: the memory is anonymous
        e.unwrap().file_name() == "j.fio"
    }));
}

#[test]
fn dev_dax_without_a_device_is_refused_with_the_way_to_make_one() {
    let s = Scratch::new();
    std::fs::write(
        s.path("d.fio"),
        "[d]\nioengine=dev-dax\nfilename=/dev/dax-blkqos-test9.9\nsize=2m\nbs=2m\nrw=randwrite\n",
    )
    .unwrap();
    let r = blkqos(&["run", "d.fio", "--backend=real"], s.dir.path());
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("d.fio:1: job `d`")
            && r.stderr.contains("/dev/dax-blkqos-test9.9")
            && r.stderr.contains("ndctl create-namespace"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_simulator_refuses_the_mapped_engines_at_their_line() {
    let s = Scratch::new();
    for e in ["libpmem", "dev-dax", "page_fault"] {
        std::fs::write(
            s.path("j.fio"),
            format!("[j]\nsize=1m\nioengine={e}\nrw=write\nfilename=f\n"),
        )
        .unwrap();
        let r = blkqos(&["run", "j.fio"], s.dir.path());
        assert_ne!(r.code, Some(0), "{e}");
        assert!(
            r.stderr
                .contains(&format!("j.fio:3: option `ioengine`: value `{e}`"))
                && r.stderr.contains("--backend=real"),
            "{e}: {}",
            r.stderr
        );
    }
}
