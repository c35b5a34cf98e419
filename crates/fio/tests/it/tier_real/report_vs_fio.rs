//! Differential tests against the installed fio 3.33 (skipped, with a
//! printed reason, when `fio` is missing or another version).
//!
//! 1. Structure: for a real fio run, our JSON for a JobSpec with the same
//!    options and synthetic stats has the same keys in the same order,
//!    recursively (values and `disk_util` contents ignored).
//! 2. Bytes: fio runs with per-IO logs; replaying the logs into `JobStats`
//!    must reproduce fio's json+ and normal output exactly, except rusage,
//!    ETA and wall-clock fields.

use crate::report_util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use blkqos_fio::report::{json_tree, write_json, write_normal, ReportInput, ReportJob};
use blkqos_workload::spec::{JobSpec, UnifiedRw};
use blkqos_workload::stats::JobStats;
use blkqos_workload::Ddir;
use report_util::*;
use serde_json::Value;

fn fio_33() -> bool {
    match Command::new("fio").arg("--version").output() {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if v == "fio-3.33" {
                true
            } else {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Fio,
                    format!("fio is {v}, these tests compare with fio-3.33"),
                );
                false
            }
        }
        _ => {
            blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio not found on PATH");
            false
        }
    }
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

fn scratch(tag: &str) -> PathBuf {
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("blkqos-report-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

struct Run {
    dir: PathBuf,
    doc: Value,
    json: String,
    normal: String,
}

/// Run fio with `args` on a scratch file; `extra` are options we add
/// (output format, logs) that are not part of the job's own options.
fn run_fio(tag: &str, args: &[String], extra: &[String]) -> Run {
    let dir = scratch(tag);
    let out = Command::new("fio")
        .args(args)
        .args(extra)
        .current_dir(&dir)
        .output()
        .expect("run fio");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "fio failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (json, normal) = split_output(&stdout);
    let doc: Value = serde_json::from_str(&json).expect("fio JSON");
    Run {
        dir,
        doc,
        json,
        normal,
    }
}

/// `--k=v` / `--k` as fio's "job options" would list them.
fn opts_of(args: &[String]) -> Vec<(String, String)> {
    args.iter()
        .filter_map(|a| a.strip_prefix("--"))
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (a.to_string(), String::new()),
        })
        .collect()
}

fn args(list: &[&str], file: &Path) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.insert(1, format!("--filename={}", file.display()));
    v
}

/// Synthetic stats for a psync randrw clone: reads and writes, clat/lat only.
fn synthetic(seed: u64) -> JobStats {
    let mut s = JobStats::default();
    for i in 0..200u64 {
        let d = [Ddir::Read, Ddir::Write][(i % 2) as usize];
        let clat = 20_000 + (i * 7919 + seed * 13) % 300_000;
        s.dirs[d].record(
            4096,
            None,
            clat,
            clat + 150,
            blkqos_workload::stats::HistMask::ALL,
        );
        s.lat_buckets.mark(clat);
    }
    for d in [Ddir::Read, Ddir::Write] {
        s.dirs[d].runtime_ms = 1001;
        s.dirs[d].bw.add(400 + seed);
        s.dirs[d].bw.add(420);
        s.dirs[d].iops.add(100);
        s.dirs[d].iops.add(105);
    }
    s.depth_level[0] = 200;
    s.submit_batches[1] = 200;
    s.complete_batches[1] = 200;
    s.job_runtime_ms = 1000;
    s.elapsed_s = 2;
    s.members = 1;
    s
}

fn keys(v: &Value) -> Vec<String> {
    let mut k = Vec::new();
    key_paths(v, "", &mut k);
    k
}

fn structure_case(tag: &str, fio_args: &[&str], nclones: usize, tweak: impl Fn(&mut JobSpec)) {
    let dir = scratch(tag);
    let file = dir.join("data");
    let a = args(fio_args, &file);
    let run = run_fio(tag, &a, &["--output-format=json".to_string()]);
    let mut spec = JobSpec::new(a[0].trim_start_matches("--name="));
    spec.job_options = opts_of(&a);
    tweak(&mut spec);
    let stats: Vec<JobStats> = (0..nclones as u64).map(synthetic).collect();
    let input = ReportInput {
        jobs: stats
            .iter()
            .map(|s| ReportJob {
                spec: &spec,
                stats: s,
                error: 0,
                pid: 1,
            })
            .collect(),
        global_options: &[],
        timestamp_ms: 1_795_293_556_978,
        disk_util: disk_utils(&run.doc),
        utc_offset_s: 0,
        blkqos_disk_util: vec![],
        fio_version: "fio-3.33",
    };
    let mut ours = String::new();
    write_json(&input, false, &mut ours);
    let ours_doc: Value = serde_json::from_str(&ours).expect("our JSON parses");
    let (ka, kb) = (keys(&ours_doc), keys(&run.doc));
    if ka != kb {
        let i = ka
            .iter()
            .zip(&kb)
            .position(|(x, y)| x != y)
            .unwrap_or(ka.len().min(kb.len()));
        panic!(
            "key structure differs at #{i}: ours {:?} fio {:?}\nours: {ours}\nfio: {}",
            ka.get(i),
            kb.get(i),
            run.json
        );
    }
    // the in-memory tree is what was printed
    let mut again = String::new();
    blkqos_fio::report::jsonfmt::print_root(&json_tree(&input, false), &mut again);
    assert_eq!(again + "\n", ours);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&run.dir);
}

#[test]
fn structure_mixed_matches_fio() {
    if !fio_33() {
        return;
    }
    structure_case(
        "smixed",
        &[
            "--name=cgB",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--unified_rw_reporting=mixed",
        ],
        1,
        |s| s.unified_rw_reporting = UnifiedRw::Mixed,
    );
}

#[test]
#[ignore = "tier real"]
fn structure_group_reporting_ignore_error_matches_fio() {
    if !fio_33() {
        return;
    }
    structure_case(
        "sgroup",
        &[
            "--name=grp",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--group_reporting",
            "--numjobs=2",
            "--ignore_error=EIO",
            "--description=two \"clones\"",
        ],
        2,
        |s| {
            s.group_reporting = true;
            s.numjobs = 2;
            s.ignore_error.read = vec![5];
            s.ignore_error.continue_on = blkqos_workload::spec::ERROR_TYPE_READ;
            s.description = Some("two \"clones\"".into());
        },
    );
}

/// Replay fio's per-IO logs and compare the whole output.
fn bytes_case(tag: &str, fio_args: &[&str], nclones: usize, tweak: impl Fn(&mut JobSpec)) {
    let dir = scratch(tag);
    let file = dir.join("data");
    let a = args(fio_args, &file);
    let logs = |k: &str| format!("--write_{k}_log={}", dir.join(k).display());
    let extra = vec![
        "--output-format=json+,normal".to_string(),
        logs("lat"),
        logs("bw"),
        logs("iops"),
        "--log_avg_msec=0".to_string(),
    ];
    let run = run_fio(tag, &a, &extra);
    let doc = &run.doc;
    let mut spec = JobSpec::new(doc["jobs"][0]["jobname"].as_str().unwrap_or(""));
    spec.job_options = job_options(doc, 0);
    tweak(&mut spec);

    let rt = runtimes(doc, 0);
    let read = |k: &str, j: usize| {
        std::fs::read_to_string(dir.join(format!("{k}.{j}.log"))).unwrap_or_default()
    };
    let mut stats: Vec<JobStats> = (1..=nclones)
        .map(|j| {
            let l = Logs {
                clat: read("lat_clat", j),
                lat: read("lat_lat", j),
                slat: read("lat_slat", j),
                bw: read("bw_bw", j),
                iops: read("iops_iops", j),
            };
            replay(&l, rt)
        })
        .collect();
    // summed over clones by fio; give it all to the first
    stats[0].job_runtime_ms = doc["jobs"][0]["job_runtime"].as_u64().unwrap_or(0);
    stats[0].elapsed_s = doc["jobs"][0]["elapsed"].as_u64().unwrap_or(0);

    let input = ReportInput {
        jobs: stats
            .iter()
            .map(|s| ReportJob {
                spec: &spec,
                stats: s,
                error: 0,
                pid: header_pid(&run.normal),
            })
            .collect(),
        global_options: &[],
        timestamp_ms: doc["timestamp_ms"].as_u64().unwrap_or(0),
        disk_util: disk_utils(doc),
        utc_offset_s: 0,
        blkqos_disk_util: vec![],
        fio_version: "fio-3.33",
    };
    let mut json = String::new();
    write_json(&input, true, &mut json);
    if let Some(d) = diff_json_text(&json, &run.json) {
        panic!("{tag}: JSON differs from fio's {d}");
    }
    let mut normal = String::new();
    write_normal(&input, &mut normal);
    if let Some(d) = diff_normal_text(&normal, &run.normal) {
        panic!(
            "{tag}: normal output differs from fio's {d}\nours:\n{normal}\nfio:\n{}",
            run.normal
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&run.dir);
}

#[test]
#[ignore = "tier real"]
fn bytes_mixed_match_fio() {
    if !fio_33() {
        return;
    }
    bytes_case(
        "bmixed",
        &[
            "--name=cgB",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--unified_rw_reporting=mixed",
        ],
        1,
        |s| s.unified_rw_reporting = UnifiedRw::Mixed,
    );
}

#[test]
#[ignore = "tier real"]
fn bytes_group_reporting_match_fio() {
    if !fio_33() {
        return;
    }
    bytes_case(
        "bgroup",
        &[
            "--name=grp",
            "--ioengine=psync",
            "--rw=randrw",
            "--rwmixread=70",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--group_reporting",
            "--numjobs=2",
            "--ignore_error=EIO",
        ],
        2,
        |s| {
            s.group_reporting = true;
            s.numjobs = 2;
            s.ignore_error.read = vec![5];
            s.ignore_error.continue_on = blkqos_workload::spec::ERROR_TYPE_READ;
        },
    );
}

#[test]
#[ignore = "tier real"]
fn bytes_both_si_custom_percentiles_match_fio() {
    if !fio_33() {
        return;
    }
    bytes_case(
        "bboth",
        &[
            "--name=both",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--unified_rw_reporting=both",
            "--lat_percentiles=1",
            "--percentile_list=50:99.5:10:99.99",
            "--kb_base=1000",
            "--description=a \"quoted\" \\ job",
        ],
        1,
        |s| {
            s.unified_rw_reporting = UnifiedRw::Both;
            s.lat_percentiles = true;
            s.percentile_list = vec![50.0, 99.5, 10.0, 99.99];
            s.kb_base = 1000;
            s.description = Some("a \"quoted\" \\ job".into());
        },
    );
}

#[test]
#[ignore = "tier real"]
fn bytes_libaio_slat_match_fio() {
    if !fio_33() {
        return;
    }
    bytes_case(
        "blibaio",
        &[
            "--name=aio",
            "--ioengine=libaio",
            "--iodepth=1",
            "--rw=randread",
            "--size=8M",
            "--runtime=1",
            "--time_based",
            "--slat_percentiles=1",
            "--percentile_list=1:50:99:99.999",
        ],
        1,
        |s| {
            s.ioengine = blkqos_workload::spec::IoEngine::Libaio;
            s.slat_percentiles = true;
            s.percentile_list = vec![1.0, 50.0, 99.0, 99.999];
        },
    );
}

#[test]
#[ignore = "tier real"]
fn bytes_mixed_group_of_three_match_fio() {
    if !fio_33() {
        return;
    }
    bytes_case(
        "bmixgrp",
        &[
            "--name=mg",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=4M",
            "--runtime=1",
            "--time_based",
            "--unified_rw_reporting=mixed",
            "--group_reporting",
            "--numjobs=3",
        ],
        3,
        |s| {
            s.unified_rw_reporting = UnifiedRw::Mixed;
            s.group_reporting = true;
            s.numjobs = 3;
        },
    );
}
