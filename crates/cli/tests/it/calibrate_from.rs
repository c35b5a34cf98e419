//! `blkqos calibrate --from`: the io.cost.model people already have (a
//! systemd hwdb record, a resctl-bench result) and a simulated device with
//! its rates, measuring nothing.

use crate::common;

use common::*;

/// A record as iocost-benchmarks publishes them (resctl-bench's format).
const HWDB: &str = "# 12 points, MOF=[1.346,1.346], aMOF=[1.249,1.249]
block:*:name:HFS256GD9TNG-62A0A:fwrev:*:
  IOCOST_SOLUTIONS=isolation naive
  IOCOST_MODEL_ISOLATION=rbps=545719746 rseqiops=26143 rrandiops=31892 wbps=96164733 wseqiops=6154 wrandiops=8059
  IOCOST_QOS_ISOLATION=rpct=0.00 rlat=8807 wpct=0.00 wlat=59023 min=100.00 max=100.00
  IOCOST_MODEL_NAIVE=rbps=1091439492 rseqiops=52286 rrandiops=63784 wbps=192329466 wseqiops=12309 wrandiops=16119
  IOCOST_QOS_NAIVE=rpct=99.00 rlat=8807 wpct=99.00 wlat=59023 min=75.00 max=100.00
";

#[test]
fn a_hwdb_records_model_becomes_a_device_with_its_rates() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("disk.hwdb"), HWDB).unwrap();
    let r = blkqos(
        &["calibrate", "--from=disk.hwdb", "--output-format=json"],
        Some(dir.path()),
    );
    r.ok();
    let doc = r.json();
    assert!(
        doc["io_cost_model"]
            .as_str()
            .unwrap()
            .ends_with("rbps=1091439492 rseqiops=52286 rrandiops=63784 wbps=192329466 wseqiops=12309 wrandiops=16119"),
        "{doc}"
    );
    // the device replays every rate of the model within 1%
    for c in doc["check"].as_array().unwrap() {
        let (want, got) = (c["model"].as_f64().unwrap(), c["device"].as_f64().unwrap());
        assert!((got / want - 1.0).abs() < 0.01, "{c}");
    }
    // and runs as a --device
    let device = doc["device"].as_str().unwrap();
    blkqos(
        &[
            "run",
            &format!("--device={device}"),
            "--name=x",
            "--rw=randread",
            "--size=64m",
            "--runtime=1",
            "--time_based",
        ],
        Some(dir.path()),
    )
    .ok();
    // another solution's model on request; an unknown one names those there are
    let r = blkqos(
        &["calibrate", "--from=disk.hwdb", "--from-solution=isolation"],
        Some(dir.path()),
    );
    r.ok();
    assert!(String::from_utf8_lossy(&r.stdout).contains("rbps=545719746 "));
    let r = blkqos(
        &["calibrate", "--from=disk.hwdb", "--from-solution=bandwidth"],
        Some(dir.path()),
    );
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("disk.hwdb: record `block:*:name:HFS256GD9TNG-62A0A:fwrev:*:` has no IOCOST_MODEL_BANDWIDTH"), "{}", r.stderr);
}

/// `apply --emit=hwdb` and `calibrate --from` agree: the worked example's
/// model goes into a record and comes back out unchanged.
#[test]
fn a_model_round_trips_through_blkqos_own_hwdb_record() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = example("calibrate/two-groups.toml").display().to_string();
    let r = blkqos(&["apply", &scenario, "--emit=hwdb", "--model=NULLB"], None);
    r.ok();
    std::fs::write(dir.path().join("b.hwdb"), &r.stdout).unwrap();
    let r = blkqos(&["calibrate", "--from=b.hwdb"], Some(dir.path()));
    r.ok();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains("io.cost.model: MAJ:MIN ctrl=user model=linear rbps=104370146 rseqiops=25348 rrandiops=25640 wbps=104803456 wseqiops=25346 wrandiops=25617\n"),
        "{out}"
    );
}

#[test]
fn a_resctl_bench_result_and_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("result.json"),
        r#"[{"spec":{"kind":"iocost-params","id":null,"props":[]},"period":[0,1],"record":{"devnr":"259:0","model":{"rbps":2000000000,"rseqiops":400000,"rrandiops":300000,"wbps":1000000000,"wseqiops":200000,"wrandiops":150000},"qos":{"rpct":0.0,"rlat":250000,"wpct":0.0,"wlat":250000,"min":100.0,"max":100.0}},"result":true}]"#,
    )
    .unwrap();
    let r = blkqos(&["calibrate", "--from=result.json"], Some(d));
    r.ok();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains("result.json: resctl-bench iocost-params"),
        "{out}"
    );
    assert!(out.contains(" rrandiops=300000 "), "{out}");
    // bad input names the file
    std::fs::write(d.join("empty.hwdb"), "# nothing\n").unwrap();
    for (file, needle) in [
        ("empty.hwdb", "empty.hwdb: no IOCOST_SOLUTIONS"),
        ("missing.hwdb", "cannot read missing.hwdb"),
    ] {
        let r = blkqos(&["calibrate", &format!("--from={file}")], Some(d));
        assert_eq!(r.code, Some(2), "{file}");
        assert!(r.stderr.contains(needle), "{file}: {}", r.stderr);
    }
}
