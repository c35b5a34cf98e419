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

/// `--emit=hwdb` as systemd reads it: the record compiled by
/// `systemd-hwdb update` into a test root and looked up with the string
/// systemd's 90-iocost.rules builds (`block::name:MODEL:fwrev:REV:`)
/// gives the solution's properties back.
#[test]
fn the_hwdb_record_is_what_systemd_hwdb_finds_for_the_device_model() {
    let scenario = example("calibrate/two-groups.toml").display().to_string();
    let r = blkqos(
        &[
            "apply",
            &scenario,
            "--emit=hwdb",
            "--model=QEMU_HARDDISK",
            "--solution=isolated-bandwidth",
        ],
        None,
    );
    r.ok();
    let record = String::from_utf8(r.stdout.clone()).unwrap();
    let qos = "rpct=95.00 rlat=2000 wpct=95.00 wlat=5000 min=25.00 max=92.00";
    assert!(
        record.contains(&format!(" IOCOST_QOS_ISOLATED_BANDWIDTH={qos}\n")),
        "{record}"
    );
    let hwdb = std::process::Command::new("systemd-hwdb")
        .arg("--version")
        .output();
    if !hwdb.is_ok_and(|o| o.status.success()) {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Tool,
            "systemd-hwdb is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("etc/udev/hwdb.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("90-blkqos.hwdb"), &record).unwrap();
    let root = dir.path().display().to_string();
    let up = std::process::Command::new("systemd-hwdb")
        .args(["--root", &root, "--strict", "update"])
        .output()
        .unwrap();
    assert!(up.status.success(), "systemd-hwdb update: {up:?}");
    assert!(
        up.stderr.is_empty(),
        "warnings: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let q = std::process::Command::new("systemd-hwdb")
        .args([
            "--root",
            &root,
            "query",
            "block::name:QEMU_HARDDISK:fwrev:2.5+:",
        ])
        .output()
        .unwrap();
    let props = String::from_utf8_lossy(&q.stdout);
    assert!(
        props.contains("IOCOST_SOLUTIONS=isolated-bandwidth"),
        "{props}"
    );
    assert!(
        props.contains(&format!("IOCOST_QOS_ISOLATED_BANDWIDTH={qos}")),
        "{props}"
    );
    assert!(
        props.contains("IOCOST_MODEL_ISOLATED_BANDWIDTH=rbps=104370146 rseqiops=25348 rrandiops=25640 wbps=104803456 wseqiops=25346 wrandiops=25617"),
        "{props}"
    );
    // another model finds nothing
    let q = std::process::Command::new("systemd-hwdb")
        .args(["--root", &root, "query", "block::name:OTHER:fwrev:1:"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&q.stdout).contains("IOCOST"));
}

#[test]
fn units_classes_and_iocost_conf_name_the_device_and_solution() {
    let scenario = example("calibrate/two-groups.toml").display().to_string();
    let out = |fmt: &str| {
        let r = blkqos(
            &[
                "apply",
                &scenario,
                &format!("--emit={fmt}"),
                "--dev-path=/dev/sdb",
                "--solution=isolation",
            ],
            None,
        );
        r.ok();
        String::from_utf8(r.stdout.clone()).unwrap()
    };
    assert_eq!(out("iocost.conf"), "[IOCost]\nTargetSolution=isolation\n");
    let units = out("systemd");
    assert!(
        units.contains(
            "# /etc/systemd/system/cgB.slice.d/50-blkqos-io.conf\n[Slice]\nIOWeight=100\n"
        ),
        "{units}"
    );
    let classes = out("goresctrl");
    assert!(
        classes.starts_with("Classes:\n  cgA:\n    - Weight: 100\n"),
        "{classes}"
    );
    // a format that needs the device node says so
    let r = blkqos(&["apply", &scenario, "--emit=systemd"], None);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("--emit=systemd needs --dev-path=/dev/X"),
        "{}",
        r.stderr
    );
}

/// A vrate sweep names iocost-tune's four solutions; `--solution=NAME`
/// applies one (its fixed vrate), and `--emit=hwdb` carries all four in one
/// record, each solution's io.cost.qos as systemd writes it.
#[test]
fn a_vrate_sweeps_named_solutions_apply_and_fill_one_hwdb_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hierarchy(d);
    let scenario = example("calibrate/two-groups.toml").display().to_string();
    blkqos(
        &[
            "sweep",
            &scenario,
            "--vary",
            "io.cost.qos:vrate=50..125:step:25",
            "--objective",
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            "--json",
            "--out=tune.json",
        ],
        Some(d),
    )
    .ok();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("tune.json")).unwrap()).unwrap();
    let named = doc["named_solutions"].as_array().expect("named solutions");
    let names: Vec<&str> = named.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["isolation", "isolated-bandwidth", "bandwidth", "naive"]
    );
    let qos_of = |name: &str| {
        named.iter().find(|n| n["name"] == name).unwrap()["qos"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // bandwidth is a fixed vrate, and apply writes it
    let bw = qos_of("bandwidth");
    let r = blkqos(
        &[
            "apply",
            "--sweep=tune.json",
            "--solution=bandwidth",
            "--device=8:16",
            "--root=cg",
            "--sysfs=sys",
        ],
        Some(d),
    );
    r.ok();
    let written = read(d, "io.cost.qos");
    for kv in bw.split_whitespace() {
        assert!(written.contains(&format!(" {kv}")), "{kv} in {written}");
    }
    // an unknown name lists the ones there are
    let r = blkqos(
        &[
            "apply",
            "--sweep=tune.json",
            "--solution=fast",
            "--emit=iocost.conf",
        ],
        Some(d),
    );
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains(
            "no named solution `fast` (it has isolation, isolated-bandwidth, bandwidth, naive)"
        ),
        "{}",
        r.stderr
    );
    // one hwdb record with all four
    let r = blkqos(
        &["apply", "--sweep=tune.json", "--emit=hwdb", "--model=DISK"],
        Some(d),
    );
    r.ok();
    let rec = String::from_utf8(r.stdout.clone()).unwrap();
    assert!(
        rec.contains(" IOCOST_SOLUTIONS=isolation isolated-bandwidth bandwidth naive\n"),
        "{rec}"
    );
    for p in ["ISOLATION", "ISOLATED_BANDWIDTH", "BANDWIDTH", "NAIVE"] {
        assert!(
            rec.contains(&format!(" IOCOST_QOS_{p}=rpct=")),
            "{p}: {rec}"
        );
        assert!(
            rec.contains(&format!(" IOCOST_MODEL_{p}=rbps=104370146 ")),
            "{p}: {rec}"
        );
    }
    assert!(rec.contains(" IOCOST_QOS_NAIVE=rpct=99.00 "), "{rec}");
    assert!(rec.contains(" min=75.00 max=100.00\n"), "{rec}");
}

/// Lab job a02 (recorded in Linux 6.1, 6.12 and 7.2, several runs each):
/// `blkqos apply` wrote the worked example's settings in every run, each
/// file read back as the kernel prints it.
#[test]
fn in_real_kernels_apply_wrote_and_read_back_every_file() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/fixtures");
    let mut runs = 0;
    for kernel in std::fs::read_dir(&fixtures).unwrap() {
        let kernel = kernel.unwrap().path();
        for run in std::fs::read_dir(&kernel).unwrap() {
            let meta = run.unwrap().path().join("a02-apply-two-groups/meta.json");
            let Ok(text) = std::fs::read_to_string(&meta) else {
                continue;
            };
            let m: serde_json::Value = serde_json::from_str(&text).unwrap();
            let at = meta.display();
            assert_eq!(m["apply"]["exit"], 0, "{at}: {}", m["apply"]["stderr"]);
            let log = m["apply"]["stderr"].as_str().unwrap();
            assert_eq!(log.matches("(read back: ok)").count(), 4, "{at}: {log}");
            let qos = m["knobs"]["/"]["io.cost.qos"].as_str().unwrap();
            assert!(
                qos.ends_with(" enable=1 ctrl=user rpct=95.00 rlat=2000 wpct=95.00 wlat=5000 min=25.00 max=92.00"),
                "{at}: {qos}"
            );
            let model = m["knobs"]["/"]["io.cost.model"].as_str().unwrap();
            assert!(
                model.contains(" ctrl=user model=linear rbps=104370146 "),
                "{at}: {model}"
            );
            assert_eq!(m["knobs"]["/cgB"]["io.weight"], "default 100", "{at}");
            runs += 1;
        }
    }
    assert!(runs >= 15, "three kernels, five runs each at least: {runs}");
}

/// `--emit=systemd` as systemd reads it: each drop-in, beside a slice unit
/// of its name, passes `systemd-analyze verify` without a warning (a weight
/// or limit systemd refuses is logged, as the second half shows).
#[test]
fn systemd_accepts_every_drop_in() {
    let ok = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output();
    if !ok.is_ok_and(|o| o.status.success()) {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Tool,
            "systemd-analyze is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let verify = |text: &str| -> String {
        let units = dir.path().join("units");
        let _ = std::fs::remove_dir_all(&units);
        let mut slices = Vec::new();
        for part in text.split("# /etc/systemd/system/").skip(1) {
            let (path, body) = part.split_once('\n').unwrap();
            let file = units.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, body).unwrap();
            let slice = path.split(".d/").next().unwrap();
            std::fs::write(units.join(slice), "[Unit]\nDescription=blkqos test\n").unwrap();
            slices.push(units.join(slice));
        }
        assert!(!slices.is_empty(), "{text}");
        let out = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .args(&slices)
            .env("SYSTEMD_UNIT_PATH", format!("{}:", units.display()))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for scenario in [
        example("calibrate/two-groups.toml"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/matrix/t06-two-groups.toml"),
    ] {
        let r = blkqos(
            &[
                "apply",
                &scenario.display().to_string(),
                "--emit=systemd",
                "--dev-path=/dev/sda",
            ],
            None,
        );
        r.ok();
        let text = String::from_utf8(r.stdout.clone()).unwrap();
        let warnings = verify(&text);
        assert!(
            warnings.is_empty(),
            "{}: {warnings}\n{text}",
            scenario.display()
        );
    }
    // the check can fail: systemd refuses a weight over 10000 and a 0 limit
    let bad = "# /etc/systemd/system/x.slice.d/50-blkqos-io.conf\n[Slice]\nIOWeight=100000\nIOReadIOPSMax=/dev/sda 0\n";
    let warnings = verify(bad);
    assert!(warnings.contains("Invalid weight"), "{warnings}");
}
