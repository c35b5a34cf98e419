//! The seed document's jq program must run unchanged on our JSON.

use std::io::Write;
use std::process::{Command, Stdio};

use blkqos_fio::report::{write_json, ReportInput, ReportJob};
use blkqos_workload::spec::{JobSpec, UnifiedRw};
use blkqos_workload::stats::JobStats;
use blkqos_workload::Ddir;

const JQ: &str = "/usr/bin/jq";
const PROGRAM: &str = r#".jobs[0].mixed | ( .iops | tonumber | round ) as $iops | ( .bw_bytes / 1024 / 1024 ) as $bps | ( .clat_ns.mean / 1000000 ) as $avg | ( .clat_ns.max / 1000000 ) as $max | ( .clat_ns.percentile["90.000000"] / 1000000 ) as $p90 | ( .clat_ns.percentile["99.000000"] / 1000000 ) as $p99 | ( .clat_ns.percentile["99.900000"] / 1000000 ) as $p999 | ( .clat_ns.percentile["99.990000"] / 1000000 ) as $p9999 | "\($iops)|\($bps)|\($avg)|\($max)|\($p90)|\($p99)|\($p999)|\($p9999)""#;

/// Run jq -r PROGRAM on `json`: Ok(stdout) or Err(stderr).
fn jq(json: &str) -> Option<Result<String, String>> {
    if !std::path::Path::new(JQ).exists() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Tool, format!("{JQ} not found"));
        return None;
    }
    let mut child = Command::new(JQ)
        .args(["-r", PROGRAM])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn jq");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json.as_bytes())
        .expect("feed jq");
    let out = child.wait_with_output().expect("jq output");
    Some(if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    })
}

/// 100 reads, clat 10 µs .. 1000 µs in 10 µs steps, 4 KiB each, 1000 ms.
fn document(unified: UnifiedRw) -> String {
    let mut spec = JobSpec::new("cgB");
    spec.unified_rw_reporting = unified;
    let mut s = JobStats::default();
    for i in 1..=100u64 {
        let clat = i * 10_000;
        s.dirs[Ddir::Read].record(
            4096,
            None,
            clat,
            clat,
            blkqos_workload::stats::HistMask::ALL,
        );
        s.lat_buckets.mark(clat);
    }
    s.dirs[Ddir::Read].runtime_ms = 1000;
    let input = ReportInput {
        jobs: vec![ReportJob {
            spec: &spec,
            stats: &s,
            error: 0,
            pid: 1,
        }],
        global_options: &[],
        timestamp_ms: 0,
        disk_util: vec![],
        utc_offset_s: 0,
        blkqos_disk_util: vec![],
        fio_version: "fio-3.33",
    };
    let mut out = String::new();
    write_json(&input, false, &mut out);
    out
}

#[test]
fn seed_jq_program_reads_our_json() {
    let Some(res) = jq(&document(UnifiedRw::Mixed)) else {
        return;
    };
    // iops 100; 409600 B/s = 0.390625 MiB/s; mean 505 µs; max 1 ms;
    // p90/p99/p99.9/p99.99 are fio bucket midpoints (897024, 987136,
    // 1003520, 1003520 ns).
    assert_eq!(
        res.expect("jq ran"),
        "100|0.390625|0.505|1|0.897024|0.987136|1.00352|1.00352\n"
    );
}

#[test]
fn both_mode_also_has_mixed() {
    let Some(res) = jq(&document(UnifiedRw::Both)) else {
        return;
    };
    assert_eq!(
        res.expect("jq ran"),
        "100|0.390625|0.505|1|0.897024|0.987136|1.00352|1.00352\n"
    );
}

#[test]
fn without_unified_reporting_jq_fails_like_on_fio() {
    let Some(res) = jq(&document(UnifiedRw::None)) else {
        return;
    };
    let err = res.expect_err("no mixed object");
    // same message as for fio's own non-unified output
    assert!(
        err.contains("null (null) cannot be parsed as a number"),
        "{err}"
    );
}
