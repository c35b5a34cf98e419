//! A recorded fio 3.33 run (psync, randrw, 64 KiB, `unified_rw_reporting=both`,
//! per-IO logs) and its JSON + normal output, embedded so that the
//! byte-for-byte replay check also runs where fio is not installed.
//! Command: `fio --name=fx --filename=/tmp/fx/data --size=64k --rw=randrw
//! --ioengine=psync --unified_rw_reporting=both --write_lat_log=lat
//! --write_bw_log=bw --write_iops_log=iops --log_avg_msec=0
//! --output-format=json,normal`.

use crate::report_util;

use blkqos_fio::report::{write_json, write_normal, ReportInput, ReportJob};
use blkqos_workload::spec::{JobSpec, UnifiedRw};
use report_util::*;
use serde_json::Value;

const CLAT_LOG: &str = r###"0, 327857, 0, 4096, 0
0, 162604, 0, 4096, 0
0, 132687, 0, 4096, 0
0, 16030, 1, 4096, 0
1, 123591, 0, 4096, 0
1, 125886, 0, 4096, 0
1, 8967, 1, 4096, 0
1, 13625, 1, 4096, 0
1, 4409, 1, 4096, 0
1, 124372, 0, 4096, 0
1, 9157, 1, 4096, 0
1, 117119, 0, 4096, 0
1, 8075, 1, 4096, 0
1, 113262, 0, 4096, 0
1, 120836, 0, 4096, 0
1, 130083, 0, 4096, 0
"###;
const LAT_LOG: &str = r###"0, 328608, 0, 4096, 0
0, 162894, 0, 4096, 0
0, 132938, 0, 4096, 0
0, 16441, 1, 4096, 0
1, 123701, 0, 4096, 0
1, 126126, 0, 4096, 0
1, 9268, 1, 4096, 0
1, 13786, 1, 4096, 0
1, 4509, 1, 4096, 0
1, 124462, 0, 4096, 0
1, 9428, 1, 4096, 0
1, 117189, 0, 4096, 0
1, 8355, 1, 4096, 0
1, 113342, 0, 4096, 0
1, 121046, 0, 4096, 0
1, 130454, 0, 4096, 0
"###;
const BW_LOG: &str = r###"0, 12493, 0, 4096, 0
0, 25190, 0, 4096, 0
0, 30869, 0, 4096, 0
0, 255520, 1, 4096, 0
1, 33141, 0, 4096, 0
1, 32537, 0, 4096, 0
1, 456785, 1, 4096, 0
1, 300623, 1, 4096, 0
1, 929008, 1, 4096, 0
1, 32933, 0, 4096, 0
1, 447308, 1, 4096, 0
1, 34972, 0, 4096, 0
1, 507244, 1, 4096, 0
1, 36163, 0, 4096, 0
1, 33897, 0, 4096, 0
1, 31487, 0, 4096, 0
"###;
const IOPS_LOG: &str = r###"0, 1, 0, 4096, 0
0, 1, 0, 4096, 0
0, 1, 0, 4096, 0
0, 1, 1, 4096, 0
1, 1, 0, 4096, 0
1, 1, 0, 4096, 0
1, 1, 1, 4096, 0
1, 1, 1, 4096, 0
1, 1, 1, 4096, 0
1, 1, 0, 4096, 0
1, 1, 1, 4096, 0
1, 1, 0, 4096, 0
1, 1, 1, 4096, 0
1, 1, 0, 4096, 0
1, 1, 0, 4096, 0
1, 1, 0, 4096, 0
"###;

/// fio's stdout from the JSON document on (banner lines dropped).
const FIO_OUT: &str = r###"{
  "fio version" : "fio-3.33",
  "timestamp" : 1795294959,
  "timestamp_ms" : 1795294959944,
  "time" : "Sat Nov 21 21:02:39 2026",
  "jobs" : [
    {
      "jobname" : "fx",
      "groupid" : 0,
      "error" : 0,
      "eta" : 2147483647,
      "elapsed" : 1,
      "job options" : {
        "name" : "fx",
        "filename" : "/tmp/fx/data",
        "size" : "64k",
        "rw" : "randrw",
        "ioengine" : "psync",
        "unified_rw_reporting" : "both",
        "write_lat_log" : "lat",
        "write_bw_log" : "bw",
        "write_iops_log" : "iops",
        "log_avg_msec" : "0"
      },
      "read" : {
        "io_bytes" : 40960,
        "io_kbytes" : 40,
        "bw_bytes" : 20480000,
        "bw" : 20000,
        "iops" : 5000.000000,
        "runtime" : 2,
        "total_ios" : 10,
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
          "min" : 113262,
          "max" : 327857,
          "mean" : 147829.700000,
          "stddev" : 64685.901318,
          "N" : 10,
          "percentile" : {
            "1.000000" : 113152,
            "5.000000" : 113152,
            "10.000000" : 113152,
            "20.000000" : 117248,
            "30.000000" : 121344,
            "40.000000" : 123392,
            "50.000000" : 124416,
            "60.000000" : 125440,
            "70.000000" : 130560,
            "80.000000" : 132096,
            "90.000000" : 162816,
            "95.000000" : 329728,
            "99.000000" : 329728,
            "99.500000" : 329728,
            "99.900000" : 329728,
            "99.950000" : 329728,
            "99.990000" : 329728
          }
        },
        "lat_ns" : {
          "min" : 113342,
          "max" : 328608,
          "mean" : 148076.000000,
          "stddev" : 64872.278467,
          "N" : 10
        },
        "bw_min" : 12493,
        "bw_max" : 36163,
        "bw_agg" : 100.000000,
        "bw_mean" : 30368.200000,
        "bw_dev" : 6944.513963,
        "bw_samples" : 10,
        "iops_min" : 1,
        "iops_max" : 1,
        "iops_mean" : 1.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 10
      },
      "write" : {
        "io_bytes" : 24576,
        "io_kbytes" : 24,
        "bw_bytes" : 12288000,
        "bw" : 12000,
        "iops" : 3000.000000,
        "runtime" : 2,
        "total_ios" : 6,
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
          "min" : 4409,
          "max" : 16030,
          "mean" : 10043.833333,
          "stddev" : 4152.893951,
          "N" : 6,
          "percentile" : {
            "1.000000" : 4384,
            "5.000000" : 4384,
            "10.000000" : 4384,
            "20.000000" : 8096,
            "30.000000" : 8096,
            "40.000000" : 9024,
            "50.000000" : 9024,
            "60.000000" : 9152,
            "70.000000" : 13632,
            "80.000000" : 13632,
            "90.000000" : 16064,
            "95.000000" : 16064,
            "99.000000" : 16064,
            "99.500000" : 16064,
            "99.900000" : 16064,
            "99.950000" : 16064,
            "99.990000" : 16064
          }
        },
        "lat_ns" : {
          "min" : 4509,
          "max" : 16441,
          "mean" : 10297.833333,
          "stddev" : 4219.198095,
          "N" : 6
        },
        "bw_min" : 255520,
        "bw_max" : 929008,
        "bw_agg" : 100.000000,
        "bw_mean" : 482748.000000,
        "bw_dev" : 239365.909099,
        "bw_samples" : 6,
        "iops_min" : 1,
        "iops_max" : 1,
        "iops_mean" : 1.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 6
      },
      "trim" : {
        "io_bytes" : 0,
        "io_kbytes" : 0,
        "bw_bytes" : 0,
        "bw" : 0,
        "iops" : 0.000000,
        "runtime" : 0,
        "total_ios" : 0,
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
          "min" : 0,
          "max" : 0,
          "mean" : 0.000000,
          "stddev" : 0.000000,
          "N" : 0
        },
        "lat_ns" : {
          "min" : 0,
          "max" : 0,
          "mean" : 0.000000,
          "stddev" : 0.000000,
          "N" : 0
        },
        "bw_min" : 0,
        "bw_max" : 0,
        "bw_agg" : 0.000000,
        "bw_mean" : 0.000000,
        "bw_dev" : 0.000000,
        "bw_samples" : 0,
        "iops_min" : 0,
        "iops_max" : 0,
        "iops_mean" : 0.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 0
      },
      "sync" : {
        "total_ios" : 0,
        "lat_ns" : {
          "min" : 0,
          "max" : 0,
          "mean" : 0.000000,
          "stddev" : 0.000000,
          "N" : 0
        }
      },
      "mixed" : {
        "io_bytes" : 65536,
        "io_kbytes" : 64,
        "bw_bytes" : 32768000,
        "bw" : 32000,
        "iops" : 8000.000000,
        "runtime" : 2,
        "total_ios" : 16,
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
          "min" : 4409,
          "max" : 327857,
          "mean" : 96160.000000,
          "stddev" : 85220.564441,
          "N" : 16,
          "percentile" : {
            "1.000000" : 4384,
            "5.000000" : 4384,
            "10.000000" : 8096,
            "20.000000" : 9152,
            "30.000000" : 13632,
            "40.000000" : 113152,
            "50.000000" : 117248,
            "60.000000" : 123392,
            "70.000000" : 125440,
            "80.000000" : 130560,
            "90.000000" : 162816,
            "95.000000" : 329728,
            "99.000000" : 329728,
            "99.500000" : 329728,
            "99.900000" : 329728,
            "99.950000" : 329728,
            "99.990000" : 329728
          }
        },
        "lat_ns" : {
          "min" : 4509,
          "max" : 328608,
          "mean" : 96409.187500,
          "stddev" : 85303.500445,
          "N" : 16
        },
        "bw_min" : 268013,
        "bw_max" : 965171,
        "bw_agg" : 100.000000,
        "bw_mean" : 513116.200000,
        "bw_dev" : 138302.621971,
        "bw_samples" : 16,
        "iops_min" : 2,
        "iops_max" : 2,
        "iops_mean" : 2.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 16
      },
      "job_runtime" : 1,
      "usr_cpu" : 0.000000,
      "sys_cpu" : 100.000000,
      "ctx" : 10,
      "majf" : 0,
      "minf" : 47,
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
        "8" : 0.000000,
        "16" : 0.000000,
        "32" : 0.000000,
        "64" : 0.000000,
        ">=64" : 0.000000
      },
      "iodepth_complete" : {
        "0" : 0.000000,
        "4" : 100.000000,
        "8" : 0.000000,
        "16" : 0.000000,
        "32" : 0.000000,
        "64" : 0.000000,
        ">=64" : 0.000000
      },
      "latency_ns" : {
        "2" : 0.000000,
        "4" : 0.000000,
        "10" : 0.000000,
        "20" : 0.000000,
        "50" : 0.000000,
        "100" : 0.000000,
        "250" : 0.000000,
        "500" : 0.000000,
        "750" : 0.000000,
        "1000" : 0.000000
      },
      "latency_us" : {
        "2" : 0.000000,
        "4" : 0.000000,
        "10" : 25.000000,
        "20" : 12.500000,
        "50" : 0.000000,
        "100" : 0.000000,
        "250" : 56.250000,
        "500" : 6.250000,
        "750" : 0.000000,
        "1000" : 0.000000
      },
      "latency_ms" : {
        "2" : 0.000000,
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
  ],
  "disk_util" : [
    {
      "name" : "vda",
      "read_ios" : 0,
      "write_ios" : 0,
      "read_merges" : 0,
      "write_merges" : 0,
      "read_ticks" : 0,
      "write_ticks" : 0,
      "in_queue" : 0,
      "util" : 0.000000
    }
  ]
}

fx: (groupid=0, jobs=1): err= 0: pid=13870: Sat Nov 21 21:02:39 2026
  read: IOPS=5000, BW=19.5MiB/s (20.5MB/s)(40.0KiB/2msec)
    clat (usec): min=113, max=327, avg=147.83, stdev=64.69
     lat (usec): min=113, max=328, avg=148.08, stdev=64.87
    clat percentiles (usec):
     |  1.00th=[  114],  5.00th=[  114], 10.00th=[  114], 20.00th=[  118],
     | 30.00th=[  122], 40.00th=[  124], 50.00th=[  125], 60.00th=[  126],
     | 70.00th=[  131], 80.00th=[  133], 90.00th=[  163], 95.00th=[  330],
     | 99.00th=[  330], 99.50th=[  330], 99.90th=[  330], 99.95th=[  330],
     | 99.99th=[  330]
   bw (  KiB/s): min=12493, max=36163, per=100.00%, avg=30368.20, stdev=6944.51, samples=10
   iops        : min=    1, max=    1, avg= 1.00, stdev= 0.00, samples=10
  write: IOPS=3000, BW=11.7MiB/s (12.3MB/s)(24.0KiB/2msec); 0 zone resets
    clat (nsec): min=4409, max=16030, avg=10043.83, stdev=4152.89
     lat (nsec): min=4509, max=16441, avg=10297.83, stdev=4219.20
    clat percentiles (nsec):
     |  1.00th=[ 4384],  5.00th=[ 4384], 10.00th=[ 4384], 20.00th=[ 8096],
     | 30.00th=[ 8096], 40.00th=[ 9024], 50.00th=[ 9024], 60.00th=[ 9152],
     | 70.00th=[13632], 80.00th=[13632], 90.00th=[16064], 95.00th=[16064],
     | 99.00th=[16064], 99.50th=[16064], 99.90th=[16064], 99.95th=[16064],
     | 99.99th=[16064]
   bw (  KiB/s): min=255520, max=929008, per=100.00%, avg=482748.00, stdev=239365.91, samples=6
   iops        : min=    1, max=    1, avg= 1.00, stdev= 0.00, samples=6
  mixed: IOPS=0, BW=0 (0)(0B/2msec)
    clat (usec): min=4, max=327, avg=96.16, stdev=85.22
     lat (usec): min=4, max=328, avg=96.41, stdev=85.30
    clat percentiles (usec):
     |  1.00th=[    5],  5.00th=[    5], 10.00th=[    9], 20.00th=[   10],
     | 30.00th=[   14], 40.00th=[  114], 50.00th=[  118], 60.00th=[  124],
     | 70.00th=[  126], 80.00th=[  131], 90.00th=[  163], 95.00th=[  330],
     | 99.00th=[  330], 99.50th=[  330], 99.90th=[  330], 99.95th=[  330],
     | 99.99th=[  330]
   bw (  KiB/s): min=268013, max=965171, per=100.00%, avg=513116.20, stdev=138302.62, samples=16
   iops        : min=    2, max=    2, avg= 2.00, stdev= 0.00, samples=16
  lat (usec)   : 10=25.00%, 20=12.50%, 250=56.25%, 500=6.25%
  cpu          : usr=0.00%, sys=100.00%, ctx=10, majf=0, minf=47
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=10,6,0,0 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
   READ: bw=19.5MiB/s (20.5MB/s), 19.5MiB/s-19.5MiB/s (20.5MB/s-20.5MB/s), io=40.0KiB (41.0kB), run=2-2msec
  WRITE: bw=11.7MiB/s (12.3MB/s), 11.7MiB/s-11.7MiB/s (12.3MB/s-12.3MB/s), io=24.0KiB (24.6kB), run=2-2msec
  MIXED: bw=31.2MiB/s (32.8MB/s), 11.7MiB/s-19.5MiB/s (12.3MB/s-20.5MB/s), io=64.0KiB (65.5kB), run=2-2msec

Disk stats (read/write):
  vda: ios=0/0, merge=0/0, ticks=0/0, in_queue=0, util=0.00%
"###;

#[test]
fn replayed_fixture_matches_fio_output() {
    let (fio_json, fio_normal) = split_output(FIO_OUT);
    let doc: Value = serde_json::from_str(&fio_json).expect("fixture JSON");
    let mut spec = JobSpec::new("fx");
    spec.unified_rw_reporting = UnifiedRw::Both;
    spec.job_options = job_options(&doc, 0);
    let logs = Logs {
        clat: CLAT_LOG.into(),
        lat: LAT_LOG.into(),
        slat: String::new(),
        bw: BW_LOG.into(),
        iops: IOPS_LOG.into(),
    };
    let mut stats = replay(&logs, runtimes(&doc, 0));
    stats.job_runtime_ms = doc["jobs"][0]["job_runtime"].as_u64().unwrap_or(0);
    stats.elapsed_s = doc["jobs"][0]["elapsed"].as_u64().unwrap_or(0);
    let input = ReportInput {
        jobs: vec![ReportJob {
            spec: &spec,
            stats: &stats,
            error: 0,
            pid: header_pid(&fio_normal),
        }],
        global_options: &[],
        timestamp_ms: doc["timestamp_ms"].as_u64().unwrap_or(0),
        disk_util: disk_utils(&doc),
        utc_offset_s: 0,
        blkqos_disk_util: vec![],
        fio_version: "fio-3.33",
    };
    let mut json = String::new();
    write_json(&input, false, &mut json);
    if let Some(d) = diff_json_text(&json, &fio_json) {
        panic!("JSON differs: {d}");
    }
    let mut normal = String::new();
    write_normal(&input, &mut normal);
    if let Some(d) = diff_normal_text(&normal, &fio_normal) {
        panic!("normal output differs: {d}\n{normal}");
    }
    // the only differences allowed are rusage / clock fields
    let cpu = normal
        .lines()
        .find(|l| l.starts_with("  cpu"))
        .unwrap_or("");
    assert_eq!(
        cpu,
        "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0"
    );
    assert!(normal.contains("  mixed: IOPS=0, BW=0 (0)(0B/2msec)\n"));
}
