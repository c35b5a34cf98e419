//! `blkqos apply` on a test hierarchy (`--root`, `--sysfs`): the worked
//! example's settings and a sweep's chosen point, moved to the target
//! device; the checks that write nothing; and the rollback of a write
//! that fails half-way.

use crate::common;

use common::*;
use std::path::Path;

/// A cgroup v2 root with `io` enabled for its children, iocost's files,
/// `/cgA` and `/cgB` with their io.weight, and device 8:16 in sysfs; the
/// files hold what a kernel prints before any setting.
fn hierarchy(d: &Path) {
    let cg = d.join("cg");
    for g in ["cgA", "cgB"] {
        std::fs::create_dir_all(cg.join(g)).unwrap();
        std::fs::write(cg.join(g).join("io.weight"), "default 100\n").unwrap();
    }
    std::fs::write(cg.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
    std::fs::write(cg.join("cgroup.subtree_control"), "io memory\n").unwrap();
    std::fs::write(
        cg.join("io.cost.qos"),
        "8:16 enable=0 ctrl=auto rpct=0.00 rlat=250000 wpct=0.00 wlat=250000 min=1.00 max=10000.00\n",
    )
    .unwrap();
    std::fs::write(
        cg.join("io.cost.model"),
        "8:16 ctrl=auto model=linear rbps=2706339840 rseqiops=89698 rrandiops=110036 wbps=1063126016 wseqiops=135560 wrandiops=130734\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("sys/dev/block/8:16")).unwrap();
}

fn read(d: &Path, f: &str) -> String {
    std::fs::read_to_string(d.join("cg").join(f)).unwrap()
}

fn apply(d: &Path, extra: &[&str]) -> Ran {
    let scenario = example("calibrate/two-groups.toml");
    let mut args = vec![
        "apply".to_string(),
        scenario.display().to_string(),
        "--device=8:16".into(),
        "--root=cg".into(),
        "--sysfs=sys".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    blkqos(&args, Some(d))
}

#[test]
fn the_worked_example_applies_on_the_target_device_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let r = apply(d, &[]);
    r.ok();
    assert_eq!(
        read(d, "io.cost.qos"),
        "8:16 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=5000 min=25 max=92\n"
    );
    assert!(read(d, "io.cost.model").starts_with("8:16 ctrl=user model=linear rbps=104370146 "));
    assert_eq!(read(d, "cgA/io.weight"), "100\n");
    assert!(r.stderr.contains("(read back: ok)"), "{}", r.stderr);
}

#[test]
fn a_dry_run_prints_the_writes_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let qos = read(d, "io.cost.qos");
    let r = apply(d, &["--dry-run"]);
    r.ok();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains(
            "echo \"8:16 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=5000 min=25 max=92\" > cg/io.cost.qos"
        ),
        "{out}"
    );
    assert!(out.contains("echo \"100\" > cg/cgB/io.weight"), "{out}");
    assert_eq!(read(d, "io.cost.qos"), qos, "nothing written");
}

#[test]
fn checks_fail_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let qos = read(d, "io.cost.qos");
    // io not enabled for the children, and a device that is not there
    std::fs::write(d.join("cg/cgroup.subtree_control"), "memory\n").unwrap();
    let r = blkqos(
        &[
            "apply",
            &example("calibrate/two-groups.toml").display().to_string(),
            "--device=8:32",
            "--root=cg",
            "--sysfs=sys",
        ],
        Some(d),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("nothing written"), "{}", r.stderr);
    assert!(
        r.stderr.contains("device 8:32: no sys/dev/block/8:32"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("`io` is not enabled for cg's children (it reads `memory`"),
        "{}",
        r.stderr
    );
    assert_eq!(read(d, "io.cost.qos"), qos);
    // a missing cgroup: named, and made with --create
    std::fs::write(d.join("cg/cgroup.subtree_control"), "io\n").unwrap();
    std::fs::remove_file(d.join("cg/cgB/io.weight")).unwrap();
    std::fs::remove_dir(d.join("cg/cgB")).unwrap();
    let r = apply(d, &[]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .contains("cg/cgB: no such cgroup (create it, or give --create)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_write_that_fails_rolls_back_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let (qos, model) = (read(d, "io.cost.qos"), read(d, "io.cost.model"));
    let weight_a = read(d, "cgA/io.weight");
    // /cgB's io.weight cannot be written (a directory in its place); it
    // is the last write, after both iocost files and /cgA's weight
    std::fs::remove_file(d.join("cg/cgB/io.weight")).unwrap();
    std::fs::create_dir(d.join("cg/cgB/io.weight")).unwrap();
    let r = apply(d, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("rolled back:"), "{}", r.stderr);
    assert!(r.stderr.contains("cg/cgB/io.weight"), "{}", r.stderr);
    // each file holds its line from before again
    assert_eq!(read(d, "io.cost.qos"), qos);
    assert_eq!(read(d, "io.cost.model"), model);
    assert_eq!(read(d, "cgA/io.weight"), weight_a);
}

#[test]
fn a_sweeps_chosen_point_is_what_gets_applied() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let scenario = example("calibrate/two-groups.toml").display().to_string();
    blkqos(
        &[
            "sweep",
            &scenario,
            "--vary",
            "io.cost.qos:max=80..100:lin:11",
            "--objective",
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            "--json",
            "--out=sweep.json",
        ],
        Some(d),
    )
    .ok();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("sweep.json")).unwrap()).unwrap();
    let max = doc["solution"]["knobs"]["io.cost.qos:max"]
        .as_str()
        .unwrap()
        .to_string();
    let r = blkqos(
        &[
            "apply",
            "--sweep=sweep.json",
            "--device=8:16",
            "--root=cg",
            "--sysfs=sys",
        ],
        Some(d),
    );
    r.ok();
    let qos = read(d, "io.cost.qos");
    assert!(
        qos.ends_with(&format!(" max={max}\n")),
        "{qos} (chosen max={max})"
    );
    assert!(r.stderr.contains("point "), "{}", r.stderr);
    // another point on request
    let r = blkqos(
        &[
            "apply",
            "--sweep=sweep.json",
            "--point=0",
            "--device=8:16",
            "--root=cg",
            "--sysfs=sys",
        ],
        Some(d),
    );
    r.ok();
    assert!(
        read(d, "io.cost.qos").ends_with(" max=80\n"),
        "{}",
        read(d, "io.cost.qos")
    );
}
