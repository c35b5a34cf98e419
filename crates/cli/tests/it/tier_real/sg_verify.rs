//! The sg engine's VERIFY commands that compare data on the simulator
//! (`sg_write_mode=verify_bytchk_01|11`, after writes and WRITE SAME with
//! NDOB): the simulated medium keeps what was written, a compare that
//! differs fails the command (SCSI MISCOMPARE, EIO in fio), the job ends
//! with error 5 and fio's `td->verror` text, and the run exits 1 as fio
//! does. The jobs are those of fio's examples sg_verify.fio,
//! sg_verify-fail.fio and sg_write_same_ndob.fio.

use crate::common;

use common::{blkqos, num, write_file};
use serde_json::Value;
use std::path::PathBuf;

fn scratch(tag: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("sg-verify-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

const GLOBAL: &str = "[global]\nfilename=/dev/sdb\nbuffer_pattern=0x01\nioengine=sg\n\
                      rw=write\nbs=512\nnumber_ios=20\nstonewall\n[precon]\n";

fn run(tag: &str, jobs: &str) -> common::Ran {
    let dir = scratch(tag);
    let f = write_file(&dir, "t.fio", &format!("{GLOBAL}{jobs}"));
    blkqos(
        &["run", f.to_str().unwrap(), "--output-format=json"],
        Some(&dir),
    )
}

fn errors(doc: &Value) -> Vec<(String, i64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["error"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn verifies_of_what_was_written_pass() {
    let r = run(
        "pass",
        "[v00]\nsg_write_mode=verify_bytchk_00\n\
         [v01]\nsg_write_mode=verify_bytchk_01\n\
         [v01-two]\nsg_write_mode=verify_bytchk_01\nbs=5120\nnumber_ios=2\n\
         [v11-five]\nsg_write_mode=verify_bytchk_11\nbs=2048\nnumber_ios=5\n\
         [v11-one]\nsg_write_mode=verify_bytchk_11\nbs=10240\nnumber_ios=1\n",
    );
    let doc = r.ok().json();
    assert!(errors(&doc).iter().all(|(_, e)| *e == 0), "{doc}");
    // VERIFY counts as writes, as fio counts it
    assert_eq!(num(&doc, "/jobs/3/write/total_ios"), 2.0);
    assert_eq!(num(&doc, "/jobs/3/write/io_bytes"), 10240.0);
    assert!(
        !r.stderr.contains("buffer contents options change nothing"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_miscompare_fails_the_job_with_eio_and_the_run_exits_1() {
    let r = run(
        "fail",
        "[v01]\nsg_write_mode=verify_bytchk_01\n\
         [v01-fail]\nsg_write_mode=verify_bytchk_01\nnumber_ios=21\n\
         [v11-fail]\nsg_write_mode=verify_bytchk_11\nnumber_ios=1\nbs=10752\n",
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let doc = r.json();
    let want = [("precon", 0), ("v01", 0), ("v01-fail", 5), ("v11-fail", 5)];
    let got = errors(&doc);
    assert_eq!(
        got,
        want.iter()
            .map(|(n, e)| (n.to_string(), *e))
            .collect::<Vec<_>>()
    );
    // the 21st VERIFY fails: 21 issued, 20 blocks' bytes done
    assert_eq!(num(&doc, "/jobs/2/write/total_ios"), 21.0);
    assert_eq!(num(&doc, "/jobs/2/write/io_bytes"), 10240.0);
    assert!(
        r.stderr.contains("job `v01-fail` (clone 0): error 5 (Input/output error): write offset=10240, buflen=512")
            && r.stderr.contains("sense key MISCOMPARE"),
        "{}",
        r.stderr
    );
    // fio's text: fio_sgio_doio's td_verror on a block device
    let dir = scratch("fail-text");
    let f = write_file(
        &dir,
        "t.fio",
        &format!("{GLOBAL}[v11-fail]\nsg_write_mode=verify_bytchk_11\nnumber_ios=1\nbs=10752\n"),
    );
    let t = blkqos(&["run", f.to_str().unwrap()], Some(&dir));
    assert_eq!(t.code, Some(1));
    assert!(
        t.stdout_str().contains(
            "v11-fail: (groupid=1, jobs=1): err= 5 (file:engines/sg.c:545, func=fio_sgio_doio, error=Input/output error)"
        ),
        "{}",
        t.stdout_str()
    );
}

#[test]
fn write_same_ndob_zeroes_the_range() {
    let r = run(
        "ndob",
        "[ndob]\nsg_write_mode=write_same_ndob\nnumber_ios=19\n\
         [pass]\nsg_write_mode=verify_bytchk_01\nbuffer_pattern=0x00\nnumber_ios=19\n\
         [fail]\nsg_write_mode=verify_bytchk_01\nbuffer_pattern=0x00\nnumber_ios=20\n",
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let got = errors(&r.json());
    assert_eq!(
        got.iter().map(|(_, e)| *e).collect::<Vec<_>>(),
        [0, 0, 0, 5]
    );
}

#[test]
fn random_buffers_cannot_be_compared_on_the_simulator() {
    let dir = scratch("random");
    let f = write_file(
        &dir,
        "t.fio",
        "[a]\nfilename=/dev/sdb\nioengine=sg\nrw=write\nbs=512\nsg_write_mode=verify_bytchk_01\n",
    );
    let r = blkqos(&["run", f.to_str().unwrap()], Some(&dir));
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("t.fio:6: option `sg_write_mode`") && r.stderr.contains("buffer_pattern"),
        "{}",
        r.stderr
    );
    let real = blkqos(&["run", f.to_str().unwrap(), "--backend=real"], Some(&dir));
    assert_ne!(real.code, Some(0));
}
