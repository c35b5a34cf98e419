//! Golden tests: hand-built `JobStats` with known latencies; expected
//! values worked out independently (by hand and with a Python port of
//! fio's histogram rule), not taken from our own output.

use blkqos_fio::report::{write_json, write_normal, DiskUtil, ReportInput, ReportJob};
use blkqos_workload::spec::{IoEngine, JobSpec, UnifiedRw};
use blkqos_workload::stats::JobStats;
use blkqos_workload::Ddir;

/// Sat Nov 21 20:39:16 2026 UTC
const TS: u64 = 1_795_293_556_978;

/// 100 reads, clat = 10 µs, 20 µs, ..., 1000 µs; lat = clat + 500 ns;
/// 4 KiB each over 1000 ms; two bw samples of 400 KiB/s, two iops samples
/// of 100.
fn hundred_reads() -> JobStats {
    let mut s = JobStats::default();
    for i in 1..=100u64 {
        let clat = i * 10_000;
        s.dirs[Ddir::Read].record(
            4096,
            None,
            clat,
            clat + 500,
            blkqos_workload::stats::HistMask::ALL,
        );
        s.lat_buckets.mark(clat);
    }
    s.dirs[Ddir::Read].runtime_ms = 1000;
    for _ in 0..2 {
        s.dirs[Ddir::Read].bw.add(400);
        s.dirs[Ddir::Read].iops.add(100);
    }
    s.depth_level[0] = 100;
    s.submit_batches[1] = 100;
    s.complete_batches[1] = 100;
    s.job_runtime_ms = 1000;
    s.elapsed_s = 2;
    s.members = 1;
    s
}

fn mixed_spec() -> JobSpec {
    let mut spec = JobSpec::new("cgB");
    spec.unified_rw_reporting = UnifiedRw::Mixed;
    spec.job_options = vec![
        ("name".into(), "cgB".into()),
        ("rw".into(), "randrw".into()),
        ("time_based".into(), String::new()),
        ("unified_rw_reporting".into(), "mixed".into()),
    ];
    spec
}

fn input<'a>(jobs: Vec<ReportJob<'a>>, disk: Vec<DiskUtil>) -> ReportInput<'a> {
    ReportInput {
        jobs,
        global_options: &[],
        timestamp_ms: TS,
        disk_util: disk,
        utc_offset_s: 0,
        blkqos_disk_util: vec![],
        fio_version: "fio-3.33",
    }
}

#[test]
fn mixed_json_document() {
    let spec = mixed_spec();
    let stats = hundred_reads();
    let inp = input(
        vec![ReportJob {
            spec: &spec,
            stats: &stats,
            error: 0,
            pid: 4242,
        }],
        vec![],
    );
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    let head = r#"{
  "fio version" : "fio-3.33",
  "timestamp" : 1795293556,
  "timestamp_ms" : 1795293556978,
  "time" : "Sat Nov 21 20:39:16 2026",
  "jobs" : [
    {
      "jobname" : "cgB",
      "groupid" : 0,
      "error" : 0,
      "eta" : 0,
      "elapsed" : 2,
      "job options" : {
        "name" : "cgB",
        "rw" : "randrw",
        "unified_rw_reporting" : "mixed"
      },
      "mixed" : {
        "io_bytes" : 409600,
        "io_kbytes" : 400,
        "bw_bytes" : 409600,
        "bw" : 400,
        "iops" : 100.000000,
        "runtime" : 1000,
        "total_ios" : 100,
        "short_ios" : 0,
        "drop_ios" : 0,
        "slat_ns" : {
          "min" : 0,
          "max" : 0,
          "mean" : 0.000000,
          "stddev" : 0.000000,
          "N" : 0
        },
        "clat_ns" : {
          "min" : 10000,
          "max" : 1000000,
          "mean" : 505000.000000,
          "stddev" : 290114.919759,
          "N" : 100,
          "percentile" : {
            "1.000000" : 10048,
            "5.000000" : 49920,
            "10.000000" : 99840,
            "20.000000" : 199680,
            "30.000000" : 301056,
            "40.000000" : 399360,
            "50.000000" : 501760,
            "60.000000" : 602112,
            "70.000000" : 700416,
            "80.000000" : 798720,
            "90.000000" : 897024,
            "95.000000" : 946176,
            "99.000000" : 987136,
            "99.500000" : 1003520,
            "99.900000" : 1003520,
            "99.950000" : 1003520,
            "99.990000" : 1003520
          }
        },
        "lat_ns" : {
          "min" : 10500,
          "max" : 1000500,
          "mean" : 505500.000000,
          "stddev" : 290114.919759,
          "N" : 100
        },
        "bw_min" : 400,
        "bw_max" : 400,
        "bw_agg" : 100.000000,
        "bw_mean" : 400.000000,
        "bw_dev" : 0.000000,
        "bw_samples" : 2,
        "iops_min" : 100,
        "iops_max" : 100,
        "iops_mean" : 100.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 2
      },
      "job_runtime" : 1000,
      "usr_cpu" : 0.000000,
      "sys_cpu" : 0.000000,
      "ctx" : 0,
      "majf" : 0,
      "minf" : 0,
      "iodepth_level" : {
        "1" : 100.000000,
        "2" : 0.000000,
        "4" : 0.000000,
        "8" : 0.000000,
        "16" : 0.000000,
        "32" : 0.000000,
        ">=64" : 0.000000
      },
      "iodepth_submit" : {
        "0" : 0.000000,
        "4" : 100.000000,
"#;
    assert!(j.starts_with(head), "got:\n{j}");
    let tail = r#"      "latency_us" : {
        "2" : 0.000000,
        "4" : 0.000000,
        "10" : 0.000000,
        "20" : 1.000000,
        "50" : 3.000000,
        "100" : 5.000000,
        "250" : 15.000000,
        "500" : 25.000000,
        "750" : 25.000000,
        "1000" : 25.000000
      },
      "latency_ms" : {
        "2" : 1.000000,
        "4" : 0.000000,
        "10" : 0.000000,
        "20" : 0.000000,
        "50" : 0.000000,
        "100" : 0.000000,
        "250" : 0.000000,
        "500" : 0.000000,
        "750" : 0.000000,
        "1000" : 0.000000,
        "2000" : 0.000000,
        ">=2000" : 0.000000
      },
      "latency_depth" : 1,
      "latency_target" : 0,
      "latency_percentile" : 100.000000,
      "latency_window" : 0
    }
  ]
}
"#;
    assert!(j.ends_with(tail), "got:\n{j}");
    // no read/write/trim/sync objects in mixed mode, no error fields
    for k in [
        "\"read\"",
        "\"sync\"",
        "total_err",
        "\"desc\"",
        "global options",
    ] {
        assert!(!j.contains(k), "{k} in:\n{j}");
    }
}

#[test]
fn mixed_normal_block() {
    let spec = mixed_spec();
    let stats = hundred_reads();
    let disk = vec![DiskUtil {
        name: "vda".into(),
        read_ios: 90,
        write_ios: 91,
        read_merges: 0,
        write_merges: 3,
        read_ticks: 10,
        write_ticks: 12,
        in_queue: 20,
        util: 0.4,
        agg: None,
    }];
    let inp = input(
        vec![ReportJob {
            spec: &spec,
            stats: &stats,
            error: 0,
            pid: 4242,
        }],
        disk,
    );
    let mut n = String::new();
    write_normal(&inp, &mut n);
    let want = "
cgB: (groupid=0, jobs=1): err= 0: pid=4242: Sat Nov 21 20:39:16 2026
  mixed: IOPS=100, BW=400KiB/s (410kB/s)(400KiB/1000msec)
    clat (usec): min=10, max=1000, avg=505.00, stdev=290.11
     lat (usec): min=10, max=1000, avg=505.50, stdev=290.11
    clat percentiles (usec):
     |  1.00th=[   11],  5.00th=[   50], 10.00th=[  100], 20.00th=[  200],
     | 30.00th=[  302], 40.00th=[  400], 50.00th=[  502], 60.00th=[  603],
     | 70.00th=[  701], 80.00th=[  799], 90.00th=[  898], 95.00th=[  947],
     | 99.00th=[  988], 99.50th=[ 1004], 99.90th=[ 1004], 99.95th=[ 1004],
     | 99.99th=[ 1004]
   bw (  KiB/s): min=  400, max=  400, per=100.00%, avg=400.00, stdev= 0.00, samples=2
   iops        : min=  100, max=  100, avg=100.00, stdev= 0.00, samples=2
  lat (usec)   : 20=1.00%, 50=3.00%, 100=5.00%, 250=15.00%, 500=25.00%
  lat (usec)   : 750=25.00%, 1000=25.00%
  lat (msec)   : 2=1.00%
  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=100,0,0,0 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
  MIXED: bw=400KiB/s (410kB/s), 400KiB/s-400KiB/s (410kB/s-410kB/s), io=400KiB (410kB), run=1000-1000msec

Disk stats (read/write):
  vda: ios=90/91, merge=0/3, ticks=10/12, in_queue=20, util=0.40%
";
    assert_eq!(n, want);
}

/// Two clones of a group_reporting job with ignore_error: pooled latency
/// stats, field-by-field summed bw stats (S added, no cross term), summed
/// job_runtime, max runtime, the error of the clone that had one.
fn group_pair() -> (JobSpec, JobStats, JobStats) {
    let mut spec = JobSpec::new("g");
    spec.group_reporting = true;
    spec.numjobs = 2;
    spec.ignore_error.read = vec![5];
    spec.ignore_error.continue_on = blkqos_workload::spec::ERROR_TYPE_READ;
    spec.description = Some("pair".into());
    spec.ioengine = IoEngine::Psync;
    let mut a = JobStats::default();
    let mut b = JobStats::default();
    for v in [1000, 3000] {
        a.dirs[Ddir::Read].record(4096, None, v, v + 10, blkqos_workload::stats::HistMask::ALL);
        a.lat_buckets.mark(v);
    }
    b.dirs[Ddir::Read].record(
        4096,
        None,
        2000,
        2010,
        blkqos_workload::stats::HistMask::ALL,
    );
    b.lat_buckets.mark(2000);
    a.dirs[Ddir::Write].record(
        8192,
        None,
        50_000,
        50_100,
        blkqos_workload::stats::HistMask::ALL,
    );
    a.lat_buckets.mark(50_000);
    a.dirs[Ddir::Read].runtime_ms = 1000;
    b.dirs[Ddir::Read].runtime_ms = 800;
    a.dirs[Ddir::Write].runtime_ms = 900;
    a.dirs[Ddir::Read].bw.add(100);
    a.dirs[Ddir::Read].bw.add(300);
    b.dirs[Ddir::Read].bw.add(1000);
    a.sync_ios = 2;
    for v in [5000, 7000] {
        a.sync_lat.add(v);
        a.sync_hist.record(v);
    }
    a.job_runtime_ms = 500;
    b.job_runtime_ms = 700;
    a.total_err = 1;
    b.total_err = 2;
    b.first_error = 5;
    (spec, a, b)
}

#[test]
fn group_reporting_json_fields() {
    let (spec, a, b) = group_pair();
    let inp = input(
        vec![
            ReportJob {
                spec: &spec,
                stats: &a,
                error: 0,
                pid: 100,
            },
            ReportJob {
                spec: &spec,
                stats: &b,
                error: 0,
                pid: 101,
            },
        ],
        vec![],
    );
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    let doc: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    assert_eq!(doc["jobs"].as_array().map(|a| a.len()), Some(1));
    let job = &doc["jobs"][0];
    assert_eq!(job["jobname"], "g");
    assert_eq!(job["error"], 5);
    assert_eq!(job["total_err"], 3);
    assert_eq!(job["first_error"], 5);
    assert_eq!(job["job_runtime"], 1200);
    assert_eq!(job["desc"], "pair");
    let r = &job["read"];
    assert_eq!(r["runtime"], 1000);
    assert_eq!(r["total_ios"], 3);
    assert_eq!(r["io_bytes"], 12288);
    assert_eq!(r["bw_bytes"], 12288);
    assert_eq!(r["clat_ns"]["min"], 1000);
    assert_eq!(r["clat_ns"]["max"], 3000);
    assert_eq!(r["clat_ns"]["N"], 3);
    // bw: min 100+1000, max 300+1000, mean 200+1000, dev sqrt(20000/2)
    assert_eq!(r["bw_min"], 1100);
    assert_eq!(r["bw_max"], 1300);
    assert_eq!(r["bw_samples"], 3);
    // exact printed text of the floats
    for line in [
        "          \"mean\" : 2000.000000,\n          \"stddev\" : 1000.000000,",
        "        \"bw_mean\" : 1200.000000,\n        \"bw_dev\" : 100.000000,",
        // per of the group's 12 KiB/s aggregate: capped at 100
        "        \"bw_agg\" : 100.000000,",
        "      \"sync\" : {\n        \"total_ios\" : 2,\n        \"lat_ns\" : {\n          \"min\" : 5000,",
        "      \"total_err\" : 3,\n      \"first_error\" : 5,\n      \"latency_depth\" : 1,",
        "      \"latency_window\" : 0,\n      \"desc\" : \"pair\"\n    }",
    ] {
        assert!(j.contains(line), "missing {line:?} in\n{j}");
    }
    // latency percentages of 4 IOs: 1000 ns -> us "2", 2000/3000 -> us "4",
    // 50 us -> us "100"
    let us = &job["latency_us"];
    assert_eq!(us["2"].as_f64(), Some(25.0));
    assert_eq!(us["4"].as_f64(), Some(50.0));
    assert_eq!(us["100"].as_f64(), Some(25.0));
}

#[test]
fn group_reporting_normal_lines() {
    let (spec, a, b) = group_pair();
    let inp = input(
        vec![
            ReportJob {
                spec: &spec,
                stats: &a,
                error: 0,
                pid: 100,
            },
            ReportJob {
                spec: &spec,
                stats: &b,
                error: 0,
                pid: 101,
            },
        ],
        vec![],
    );
    let mut n = String::new();
    write_normal(&inp, &mut n);
    for line in [
        "g: (groupid=0, jobs=2): err= 5 (file:engines/sync.c:126, func=xfer, error=Input/output error): pid=100: Sat Nov 21 20:39:16 2026\n",
        "  Description  : [pair]\n",
        "  read: IOPS=3, BW=12.0KiB/s (12.3kB/s)(12.0KiB/1000msec)\n",
        "    clat (nsec): min=1000, max=3000, avg=2000.00, stdev=1000.00\n",
        "   bw (  KiB/s): min= 1100, max= 1300, per=100.00%, avg=1200.00, stdev=100.00, samples=3\n",
        "  write: IOPS=1, BW=9102B/s (9102B/s)(8192B/900msec); 0 zone resets\n",
        "  lat (usec)   : 2=25.00%, 4=50.00%, 100=25.00%\n",
        "  fsync/fdatasync/sync_file_range:\n    sync (nsec): min=5000, max=7000, avg=6000.00, stdev=1414.21\n    sync percentiles (nsec):\n",
        "     issued rwts: total=3,1,0,2 short=0,0,0,0 dropped=0,0,0,0\n",
        "     errors    : total=3, first_error=5/<Input/output error>\n",
        "\nRun status group 0 (all jobs):\n   READ: bw=12.0KiB/s (12.3kB/s), 12.0KiB/s-12.0KiB/s (12.3kB/s-12.3kB/s), io=12.0KiB (12.3kB), run=1000-1000msec\n  WRITE: bw=9102B/s (9102B/s), 9102B/s-9102B/s (9102B/s-9102B/s), io=8192B (8192B), run=900-900msec\n",
    ] {
        assert!(n.contains(line), "missing {line:?} in\n{n}");
    }
    assert!(!n.contains("Disk stats"));
}

#[test]
fn clones_without_group_reporting_stay_separate() {
    let (mut spec, a, b) = group_pair();
    spec.group_reporting = false;
    spec.ignore_error.read.clear();
    spec.ignore_error.continue_on = 0;
    let inp = input(
        vec![
            ReportJob {
                spec: &spec,
                stats: &a,
                error: 0,
                pid: 100,
            },
            ReportJob {
                spec: &spec,
                stats: &b,
                error: 5,
                pid: 101,
            },
        ],
        vec![],
    );
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    let doc: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    assert_eq!(doc["jobs"].as_array().map(|a| a.len()), Some(2));
    assert_eq!(doc["jobs"][0]["error"], 0);
    assert_eq!(doc["jobs"][1]["error"], 5);
    assert!(doc["jobs"][0].get("total_err").is_none());
    let mut n = String::new();
    write_normal(&inp, &mut n);
    assert!(n.contains("g: (groupid=0, jobs=1): err= 0: pid=100: "));
    assert!(n.contains(
        "g: (groupid=0, jobs=1): err= 5 (file:engines/sync.c:126, func=xfer, error=Input/output error): pid=101: "
    ));
    // group line spans both entries: 12288 B/1000 ms and 4096 B/800 ms
    assert!(n.contains("   READ: bw=12.0KiB/s (12.3kB/s), 5120B/s-8192B/s (5120B/s-8192B/s), io=12.0KiB (12.3kB), run=800-1000msec\n"), "{n}");
}

#[test]
fn json_plus_bins_and_custom_percentiles() {
    let mut spec = mixed_spec();
    spec.percentile_list = vec![99.0, 50.0];
    spec.lat_percentiles = true;
    let stats = hundred_reads();
    let inp = input(
        vec![ReportJob {
            spec: &spec,
            stats: &stats,
            error: 0,
            pid: 1,
        }],
        vec![],
    );
    let mut j = String::new();
    write_json(&inp, true, &mut j);
    let doc: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    let clat = &doc["jobs"][0]["mixed"]["clat_ns"];
    let keys: Vec<&String> = clat["percentile"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["50.000000", "99.000000"]);
    assert_eq!(clat["percentile"]["50.000000"], 501760);
    let bins = clat["bins"].as_object().expect("bins");
    assert_eq!(bins.len(), 100);
    assert_eq!(bins["10048"], 1);
    assert_eq!(bins.values().filter_map(|v| v.as_u64()).sum::<u64>(), 100);
    assert!(doc["jobs"][0]["mixed"]["lat_ns"]["bins"].is_object());
    assert!(doc["jobs"][0]["mixed"]["slat_ns"].get("bins").is_none());
    // plain json: no bins
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    assert!(!j.contains("\"bins\""));
    // text: precision 0 -> " %3.0fth=[%5llu]"
    let mut n = String::new();
    write_normal(&inp, &mut n);
    assert!(
        n.contains("    clat percentiles (usec):\n     |  50th=[  502],  99th=[  988]\n"),
        "{n}"
    );
    assert!(n.contains("    lat percentiles (usec):\n"), "{n}");
}

#[test]
fn no_io_job_prints_no_block_but_zero_objects() {
    let spec = JobSpec::new("idle");
    let stats = JobStats::default();
    let inp = input(
        vec![ReportJob {
            spec: &spec,
            stats: &stats,
            error: 0,
            pid: 1,
        }],
        vec![],
    );
    let mut n = String::new();
    write_normal(&inp, &mut n);
    assert_eq!(n, "\n\nRun status group 0 (all jobs):\n");
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    let doc: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    let r = &doc["jobs"][0]["read"];
    assert_eq!(r["iops"].as_f64(), Some(0.0));
    assert!(r["clat_ns"].get("percentile").is_none());
    assert!(doc["jobs"][0].get("job options").is_none());
    assert!(doc.get("disk_util").is_none());
}

/// A psync job whose every IO failed with an ignored EINVAL (fio 3.33 run
/// with `--bs=100 --direct=1 --ignore_error=EINVAL`): no direction lines,
/// the error comes from `first_error`, an empty run-status group.
#[test]
fn ignored_errors_only_job_like_fio() {
    let mut spec = JobSpec::new("e");
    spec.ignore_error.read = vec![22];
    spec.ignore_error.continue_on = blkqos_workload::spec::ERROR_TYPE_READ;
    let mut s = JobStats::default();
    s.dirs[Ddir::Read].total_ios = 531_867;
    s.depth_level[0] = 531_867;
    s.submit_batches[1] = 531_867;
    s.complete_batches[1] = 531_867;
    s.total_err = 531_867;
    s.first_error = 22;
    s.job_runtime_ms = 1000;
    let inp = input(
        vec![ReportJob {
            spec: &spec,
            stats: &s,
            error: 0,
            pid: 6282,
        }],
        vec![],
    );
    let mut n = String::new();
    write_normal(&inp, &mut n);
    // fio's output, except its cpu line (usr=23.90%, sys=75.40%, ctx=35, ...)
    let want = "
e: (groupid=0, jobs=1): err=22 (file:engines/sync.c:126, func=xfer, error=Invalid argument): pid=6282: Sat Nov 21 20:39:16 2026
  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=531867,0,0,0 short=0,0,0,0 dropped=0,0,0,0
     errors    : total=531867, first_error=22/<Invalid argument>
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
";
    assert_eq!(n, want);
    let mut j = String::new();
    write_json(&inp, false, &mut j);
    assert!(j.contains("      \"error\" : 22,\n"));
    assert!(j.contains("        \"runtime\" : 0,\n        \"total_ios\" : 531867,\n"));
    assert!(j.contains("      \"total_err\" : 531867,\n      \"first_error\" : 22,\n"));
}
