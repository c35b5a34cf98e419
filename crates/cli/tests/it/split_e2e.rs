//! IOs longer than the device's max IO size (`max_sectors_kb`), end to
//! end and in-process (the library's `plan_run`, `run_simulated`,
//! `fio_reports`): fio's report counts the job's IOs, io.stat and the
//! disk count the requests, and io.max charges them per kernel
//! generation. Bad values are refused by the command itself (exit 2).

use crate::common;

use common::*;
use serde_json::Value;

/// A 1 MiB random reader in `/j` on a null device with 128 KiB requests,
/// limited by `io_max`; returns (fio JSON, the io.stat file).
fn one_mib_reader(io_max: &str, throttle: &str, secs: u32) -> (Value, String) {
    let r = run_in_process(&[
        "--name=r".to_string(),
        "--rw=randread".into(),
        "--bs=1m".into(),
        "--size=4g".into(),
        format!("--runtime={secs}"),
        "--time_based".into(),
        "--ioengine=libaio".into(),
        "--iodepth=8".into(),
        "--direct=1".into(),
        "--cgroup=/j".into(),
        "--device=null,max_sectors_kb=128".into(),
        format!("--io-max=253:0 {io_max}"),
        format!("--throttle={throttle}"),
        "--output-format=json".into(),
    ]);
    (r.json().clone(), r.io_stat)
}

/// `riops=100`: mainline charges each 128 KiB request, so 1 MiB reads go
/// at 12.5/s; legacy charges the bio once (100/s). fio counts 1 MiB IOs,
/// io.stat counts the bytes once and 8 IOs per read.
#[test]
fn riops_per_request_on_mainline_per_bio_on_legacy() {
    for (v, want) in [("mainline", 12.5), ("linux-6.1", 12.5), ("legacy", 100.0)] {
        let (doc, stat) = one_mib_reader("riops=100", v, 20);
        let iops = num(&doc, "/jobs/0/read/iops");
        assert_within(&format!("{v}: read IOs/s"), iops, want, 3.0);
        let ios = num(&doc, "/jobs/0/read/total_ios") as u64;
        let bytes = num(&doc, "/jobs/0/read/io_bytes") as u64;
        assert_eq!(bytes, ios << 20, "{v}: fio counts 1 MiB IOs");
        // io.stat counts when an IO clears blk-throttle: IOs still in
        // flight at the end are counted there and not by fio
        let rios = io_stat_key(&stat, "/j", "rios") as u64;
        let rbytes = io_stat_key(&stat, "/j", "rbytes") as u64;
        assert_eq!(rios % 8, 0, "{v}: 8 requests per read");
        assert!(
            (ios..=ios + 8).contains(&(rios / 8)),
            "{v}: {rios} vs {ios}"
        );
        assert_eq!(rbytes, rios / 8 * (1 << 20), "{v}: bytes once");
    }
}

/// `rbps=1MiB` admits 1 MiB/s of 1 MiB reads split into 8 requests.
#[test]
fn rbps_counts_bytes_once() {
    for v in ["mainline", "linux-6.12", "legacy", "paced"] {
        let (doc, _) = one_mib_reader("rbps=1048576", v, 30);
        let bw = num(&doc, "/jobs/0/read/bw_bytes");
        assert_within(&format!("{v}: read bytes/s"), bw, 1048576.0, 12.0);
    }
}

/// The scenario key and its errors.
#[test]
fn max_sectors_kb_in_a_scenario_and_bad_values() {
    let dir = tempfile::tempdir().unwrap();
    let text = "seed = 1\n[device]\nmodel = \"ssd\"\nmax_sectors_kb = 256\n\
                [[fio]]\nargs = \"--name=w --rw=write --bs=1m --size=64m --ioengine=libaio \
                --iodepth=4 --direct=1 --output-format=json\"\n";
    let p = write_file(dir.path(), "s.toml", text);
    let r = blkqos(
        &["run".to_string(), p.display().to_string()],
        Some(dir.path()),
    );
    r.ok();
    let doc = r.json();
    assert_eq!(num(&doc, "/jobs/0/write/total_ios"), 64.0);
    // the disk saw 4 requests per 1 MiB write (disk_util: write ios)
    let ios = num(&doc, "/disk_util/0/write_ios");
    assert_eq!(ios, 256.0, "{doc}");

    for bad in ["3", "0", "big", "1048577"] {
        let r = blkqos(
            &[
                "run",
                "--name=j",
                "--rw=read",
                "--size=1m",
                &format!("--device=ssd,max_sectors_kb={bad}"),
            ],
            None,
        );
        assert_no_panic(&r);
        assert_eq!(r.code, Some(2), "{bad}: {}", r.stderr);
        assert!(
            r.stderr.contains("`max_sectors_kb`") && r.stderr.contains(&format!("`{bad}`")),
            "{bad}: {}",
            r.stderr
        );
    }
}

/// iocost charges each request (`rq_qos_throttle` runs per piece, after
/// the split), and the pieces after the first are sequential: when only
/// random IOs are expensive, cutting 1 MiB random reads into 8 pieces
/// barely changes the charge per read; when sequential IOs cost as much,
/// it is 8×.
#[test]
fn iocost_charges_each_piece_the_rest_sequentially() {
    let usage_per_read = |max_kb: u32, seqiops: u32| {
        let r = run_in_process(&[
            "--name=r".to_string(),
            "--rw=randread".into(),
            "--bs=1m".into(),
            "--size=4g".into(),
            "--runtime=2".into(),
            "--time_based".into(),
            "--ioengine=libaio".into(),
            "--iodepth=1".into(),
            "--direct=1".into(),
            "--cgroup=/j".into(),
            format!("--device=ssd,max_sectors_kb={max_kb}"),
            // 200 ms periods: io.stat's usage is flushed at period ends,
            // ten of them in the run (latency targets never missed)
            "--io-cost-qos=253:0 enable=1 ctrl=user rpct=95 rlat=100000 wpct=95 wlat=100000".into(),
            format!(
                "--io-cost-model=253:0 ctrl=user model=linear rbps=4000000000 \
                     rseqiops={seqiops} rrandiops=100 wbps=4000000000 wseqiops={seqiops} \
                     wrandiops=100"
            ),
            "--io-weight=100".into(),
            "--output-format=json".into(),
        ]);
        let ios = num(r.json(), "/jobs/0/read/total_ios");
        assert!(ios >= 10.0, "{ios} reads");
        io_stat_key(&r.io_stat, "/j", "cost.usage") / ios
    };
    let whole = usage_per_read(1024, 1_000_000);
    let split = usage_per_read(128, 1_000_000);
    assert_within(
        "cheap sequential pieces: charge per read",
        split,
        whole,
        10.0,
    );
    let whole = usage_per_read(1024, 100);
    let split = usage_per_read(128, 100);
    assert_within("sequential as dear as random: 8×", split / whole, 8.0, 10.0);
}
