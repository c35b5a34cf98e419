//! Golden outputs: runs whose IOs all fit the device's max IO size must
//! produce the bytes they produced before IO splitting existed.
//!
//! Each case's fingerprint is FNV-1a over stdout and every file the run
//! wrote (sorted by name). The expected values were recorded with the
//! binary of the commit before splitting (8f3ca7b; first recorded on
//! 0fdd142, before the page cache), and re-recorded after the intended
//! changes of the kernel-lab work: a seeded jiffy phase and jiffies value,
//! null_blk's seeded tick grid, the linux-6.1 and linux-6.12 profiles'
//! 100 ms slice, the seed examples without fitted starting conditions
//! (the hdd, cloud and null-64k cases did not change), and null-64k (a
//! buffered read job) again when a job's page cache copies became one
//! thread's, in turn, at the measured copy speed, and the io.max and
//! iocost cases when jiffies timers started to run a tick after their
//! expiry (the timer wheel's `calc_index`), and seed001-azure when a
//! scenario whose reports all go to files started to print what it ran
//! on stdout (its files hash as before: 0x699d4ae6f8b5eed1 with an
//! empty stdout), and the randrw and hdd cases when the read/write mix,
//! block sizes and uniform random offsets started to come from fio's own
//! generators and seeds (`blkqos_workload::fio_rand`), and every case
//! with more than one IO in flight when a job's end started to reap its
//! last IOs in one getevents call (fio's `io_u_queued_complete(td,
//! cur_depth)`: they all end their clat at the last one's completion).
//! Re-record after an
//! intended change with
//!
//! ```sh
//! GOLDEN_BIN=path/to/old/blkqos GOLDEN_PRINT=1 \
//!     cargo test -p blkqos --test golden_unsplit -- --nocapture
//! ```

use crate::common;

use common::*;
use std::path::Path;

/// (name, scenario example or `None`, arguments after `run`).
type Case = (&'static str, Option<&'static str>, &'static [&'static str]);

const CASES: &[Case] = &[
    // the seed-000 scenario (null device, 4 KiB, riops=100) per io.max variant
    ("seed000-mainline", Some("seed-000-throttle/scenario.toml"), &["--throttle=mainline"]),
    ("seed000-legacy", Some("seed-000-throttle/scenario.toml"), &["--throttle=legacy"]),
    ("seed000-linux-5.15", Some("seed-000-throttle/scenario.toml"), &["--throttle=linux-5.15"]),
    ("seed000-linux-6.1", Some("seed-000-throttle/scenario.toml"), &["--throttle=linux-6.1"]),
    ("seed000-linux-6.12", Some("seed-000-throttle/scenario.toml"), &["--throttle=linux-6.12"]),
    ("seed000-paced", Some("seed-000-throttle/scenario.toml"), &["--throttle=paced"]),
    // seed 001: iocost with 1 MiB IOs on the cloud model (max 1280 KiB)
    ("seed001-azure", Some("seed-001-iocost/azure.toml"), &["--iocost=reset"]),
    // fio-style jobs on every model, at most the model's max IO size
    (
        "ssd-randrw-iomax",
        None,
        &[
            "--name=j", "--rw=randrw", "--bsrange=4k-128k", "--size=1g", "--runtime=2",
            "--time_based", "--ioengine=libaio", "--direct=1", "--iodepth=16", "--device=ssd",
            "--cgroup=/j", "--io-max=253:0 riops=2000 wbps=8388608", "--output-format=json",
        ],
    ),
    (
        "ssd-randrw-iomax-6.1",
        None,
        &[
            "--name=j", "--rw=randrw", "--bsrange=4k-128k", "--size=1g", "--runtime=2",
            "--time_based", "--ioengine=libaio", "--direct=1", "--iodepth=16", "--device=ssd",
            "--cgroup=/j", "--io-max=253:0 riops=2000 wbps=8388608", "--throttle=linux-6.1",
            "--output-format=json",
        ],
    ),
    (
        "hdd-64k",
        None,
        &[
            "--name=j", "--rw=randread", "--bs=64k", "--size=4g", "--runtime=1",
            "--time_based", "--ioengine=libaio", "--direct=1", "--iodepth=4", "--device=hdd",
            "--output-format=json",
        ],
    ),
    (
        "cloud-1m",
        None,
        &[
            "--name=j", "--rw=randwrite", "--bs=1m", "--size=4g", "--runtime=2",
            "--time_based", "--ioengine=libaio", "--iodepth=8", "--direct=1",
            "--device=cloud", "--output-format=json",
        ],
    ),
    (
        "null-64k-iostat",
        None,
        &[
            "--name=j", "--rw=read", "--bs=64k", "--size=1g", "--runtime=1",
            "--time_based", "--ioengine=libaio", "--iodepth=8", "--iostat=-x 1",
        ],
    ),
    (
        "ssd-iocost",
        None,
        &[
            "--name=j", "--rw=randread", "--bs=16k", "--size=1g", "--runtime=1",
            "--time_based", "--ioengine=libaio", "--iodepth=32", "--device=ssd",
            "--io-cost-qos=253:0 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=2000",
            "--io-cost-model=253:0 ctrl=user model=linear rbps=800000000 rseqiops=21200 rrandiops=21200 wbps=800000000 wseqiops=100000 wrandiops=100000",
            "--cgroup=/j", "--io-weight=100", "--output-format=json",
        ],
    ),
];

/// (case, fingerprint), see the module header for when they were recorded.
const GOLDEN: &[(&str, u64)] = &[
    ("seed000-mainline", 0x720f53ce83383457),
    ("seed000-legacy", 0x8512069daa9b761e),
    ("seed000-linux-5.15", 0x3cd7088fb8b230c1),
    ("seed000-linux-6.1", 0x720f53ce83383457),
    ("seed000-linux-6.12", 0x720f53ce83383457),
    ("seed000-paced", 0x0996e71c420574bd),
    ("seed001-azure", 0xe98f5e9e9cac29b4),
    ("ssd-randrw-iomax", 0x664343ae95973064),
    ("ssd-randrw-iomax-6.1", 0x664343ae95973064),
    ("hdd-64k", 0xd2e1ab04557e7102),
    ("cloud-1m", 0xb0590685e5670e13),
    ("null-64k-iostat", 0x75de3d28a6c578b5),
    ("ssd-iocost", 0xe6c15a981ba87bb9),
];

/// FNV-1a, 64 bits.
fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Run one case in a fresh directory: its fingerprint.
fn fingerprint(bin: &str, case: &Case) -> u64 {
    let (name, scenario, extra) = case;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["run".to_string()];
    if let Some(s) = scenario {
        args.push(example(s).display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = std::process::Command::new(bin);
    cmd.args(&args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env_remove("RUST_BACKTRACE")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let r = run_bounded(cmd, std::time::Duration::from_secs(300));
    r.ok();
    let mut h = fnv1a(0xcbf2_9ce4_8422_2325, &r.stdout);
    h = files_into(h, dir.path());
    if std::env::var_os("GOLDEN_PRINT").is_some() {
        println!("    (\"{name}\", {h:#018x}),");
    }
    h
}

/// Hash every file under `dir` (names and contents, sorted by name).
fn files_into(mut h: u64, dir: &Path) -> u64 {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        h = fnv1a(h, p.file_name().expect("name").as_encoded_bytes());
        if p.is_dir() {
            h = files_into(h, &p);
        } else {
            h = fnv1a(h, &std::fs::read(&p).expect("read"));
        }
    }
    h
}

#[test]
fn unsplit_runs_are_byte_identical_to_before_splitting() {
    let bin = std::env::var("GOLDEN_BIN").unwrap_or_else(|_| BIN.to_string());
    let got: Vec<(&str, u64)> = CASES.iter().map(|c| (c.0, fingerprint(&bin, c))).collect();
    if std::env::var_os("GOLDEN_PRINT").is_some() {
        return;
    }
    assert_eq!(got.len(), GOLDEN.len(), "a case without a recorded value");
    for ((name, h), (gname, want)) in got.iter().zip(GOLDEN) {
        assert_eq!(name, gname);
        assert_eq!(h, want, "{name}: output changed");
    }
}
