//! The driver loop skips the passes that would do nothing: a completion
//! that leaves no job able to act, no controller timer, dispatch or paced
//! split due, ends no pass (`Loop::idle_until`). `--check-invariants`
//! makes every pass (the controllers are checked after each one), so the
//! same run with it is the reference: every report must be the same byte
//! for byte, every io.stat counter the same, and the lean run must have
//! made fewer passes (the skip is taken).

use crate::common;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// fio's reports, io.stat and the passes of one in-process run.
fn run(a: &[String]) -> (Vec<String>, String, u64) {
    std::env::set_var("SOURCE_DATE_EPOCH", common::EPOCH);
    let exp = blkqos::plan_run(a).expect("plan");
    let ran = blkqos::run_simulated(&exp).expect("run");
    let t0_ms = common::EPOCH.parse::<u64>().unwrap() * 1000;
    let reports = blkqos::fio_reports(&exp, &ran, t0_ms);
    (reports, format!("{:?}", ran.iostat), ran.result.passes)
}

fn same_with_every_pass(a: &[&str]) {
    let lean = run(&args(a));
    let every = run(&[args(a), args(&["--check-invariants"])].concat());
    assert_eq!(lean.0, every.0, "reports differ: {a:?}");
    assert_eq!(lean.1, every.1, "io.stat differs: {a:?}");
    assert!(
        lean.2 < every.2,
        "{a:?}: {} passes lean, {} with every pass: no pass was skipped",
        lean.2,
        every.2
    );
}

const JOB: &[&str] = &[
    "--ioengine=libaio",
    "--direct=1",
    "--runtime=1",
    "--time_based",
    "--output-format=json+",
];

#[test]
fn a_deep_queue_on_the_ssd_model() {
    same_with_every_pass(
        &[
            &[][..],
            &["--device=ssd,channels=64,read_ns=25000", "--name=a"],
            &["--rw=randread", "--bs=4k", "--iodepth=32", "--size=1g"],
            JOB,
        ]
        .concat(),
    );
}

/// Two groups under iocost (weights 100 and 400) on a null_blk with a
/// bandwidth cap: completions come at its ticks, the period timer runs.
const IOCOST: &str = r#"
seed = 1
cgroups = ["/a", "/b"]

[device]
model = "null"
mbps = 200

[[write]]
file = "/sys/fs/cgroup/io.cost.qos"
value = "253:0 enable=1 rpct=95 rlat=5000 min=50 max=150"

[[write]]
file = "/sys/fs/cgroup/a/io.weight"
value = "100"

[[write]]
file = "/sys/fs/cgroup/b/io.weight"
value = "400"

[[fio]]
cgroup = "/a"
args = "--name=a --rw=randread --bs=64k --iodepth=32 --size=1g --ioengine=libaio --direct=1 --runtime=1 --time_based --output-format=json+"

[[fio]]
cgroup = "/b"
args = "--name=b --rw=randwrite --bs=4k --iodepth=4 --size=1g --ioengine=libaio --direct=1 --runtime=1 --time_based --output-format=json+"
"#;

#[test]
fn two_groups_under_iocost_on_a_null_blk_with_a_bandwidth_cap() {
    let dir = std::env::temp_dir().join(format!("blkqos-idle-passes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("iocost.toml");
    std::fs::write(&path, IOCOST).unwrap();
    same_with_every_pass(&[path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn io_max_with_reads_that_wait_for_tags() {
    same_with_every_pass(
        &[
            &[][..],
            &["--device=null,queue_depth=8,completion_ns=50000"],
            &["--cgroup=g", "--io-max=253:0 riops=3000 wbps=4194304"],
            &["--name=a", "--rw=randrw", "--bs=4k", "--iodepth=32"],
            &["--size=1g"],
            JOB,
        ]
        .concat(),
    );
}
