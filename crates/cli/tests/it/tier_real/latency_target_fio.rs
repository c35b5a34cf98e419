//! `latency_target` on the real engine against fio 3.33, the same job
//! file on the same scratch file: a target no IO misses, so fio's probe
//! doubles the depth each window up to `iodepth`, runs one more window
//! there and ends the job. Both report the same `latency_depth`,
//! `latency_target` (ns), `latency_window` (µs) and `latency_percentile`.
//! The job is time-based so that the probe, not the size, ends it: a
//! disk whose host caches the file reads the 64 MiB in 12-19 ms, before
//! the first 50 ms window, and fio then reports the depth it started at.
//! Skipped when fio is not installed.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::process::Command;

const JOB: &str = "rw=randread\nbs=4k\niodepth=8\nsize=64m\nruntime=20\ntime_based\n\
                   latency_target=100ms\nlatency_window=50ms\nlatency_percentile=99\n";

fn latency_keys(doc: &Value) -> [f64; 4] {
    let j = &doc["jobs"][0];
    [
        num(j, "/latency_depth"),
        num(j, "/latency_target"),
        num(j, "/latency_window"),
        num(j, "/latency_percentile"),
    ]
}

#[test]
fn probe_ends_at_the_same_depth_as_fio() {
    let _x = exclusive();
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let file = s.path("scratch.dat");
    let jf = s.dir.path().join("lat.fio");
    std::fs::write(
        &jf,
        format!(
            "[lat]\nfilename={}\nioengine=io_uring\ndirect=1\n{JOB}",
            file.display()
        ),
    )
    .unwrap();
    let r = blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            Be::Uring.flag(),
            "--output-format=json".into(),
        ],
        s.dir.path(),
    );
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    r.ok();
    let ours = latency_keys(&r.json_docs()[0]);
    let mut cmd = Command::new("fio");
    cmd.arg(&jf)
        .arg("--output-format=json")
        .current_dir(s.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let fio = latency_keys(&f.json_docs()[0]);
    assert_eq!(fio, [8.0, 100_000_000.0, 50_000.0, 99.0], "fio's own");
    assert_eq!(ours, fio);
}
