//! fio's io_uring engine rounds `iodepth` up to a power of two for its ring
//! (`fio_ioring_init`) after `fixup_options` has taken `iodepth_low` from
//! the depth as written: `iodepth=12` keeps up to 16 IOs in flight and
//! reaps down to 12, which fio's "IO depths" show as about 75% at 8-15 and
//! 25% at 16. blkqos's real engine and simulator run the same job the same
//! way, and libaio keeps the depth as written. Compared against real fio
//! 3.33 on the same scratch file.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::process::Command;

/// `iodepth_level` of the job's JSON: the shares at 8-15 and at 16-31.
fn depth_shares(doc: &Value) -> (f64, f64) {
    let l = &doc["jobs"][0]["iodepth_level"];
    (l["8"].as_f64().unwrap(), l["16"].as_f64().unwrap())
}

fn args(engine: &str, file: &str) -> Vec<String> {
    [
        "--name=d",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--iodepth=12",
        "--direct=1",
        "--norandommap",
        "--randrepeat=0",
        "--runtime=1",
        "--time_based",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--ioengine={engine}"), format!("--filename={file}")])
    .collect()
}

#[test]
#[ignore = "tier real"]
fn io_uring_rounds_the_depth_up_as_fio_does() {
    if Command::new("fio").arg("--version").output().is_err() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("depth.dat");
    std::fs::write(&file, vec![1u8; 16 << 20]).unwrap();
    let file = file.to_string_lossy().to_string();
    for (engine, want16) in [("io_uring", true), ("libaio", false)] {
        let a = args(engine, &file);
        let mut cmd = Command::new("fio");
        cmd.args(&a).current_dir(s.dir.path());
        let fio = run_bounded(cmd, TIMEOUT);
        let fio_doc: Value = serde_json::from_str(&fio.ok().stdout_str()).unwrap();
        let run = ["run".to_string()];
        let real = blkqos(
            &[
                &run[..],
                &a[..],
                &["--backend=io_uring".into(), "--overwrite".into()],
            ]
            .concat(),
            s.dir.path(),
        );
        let real_doc: Value = serde_json::from_str(&real.ok().stdout_str()).unwrap();
        let mut sim_args = args(engine, "/dev/nullb0");
        sim_args.retain(|x| !x.starts_with("--size"));
        let sim = blkqos(&[&run[..], &sim_args[..]].concat(), s.dir.path());
        let sim_doc: Value = serde_json::from_str(&sim.ok().stdout_str()).unwrap();
        for (who, doc) in [
            ("fio", &fio_doc),
            ("blkqos", &real_doc),
            ("simulator", &sim_doc),
        ] {
            let (at8, at16) = depth_shares(doc);
            eprintln!("{engine} iodepth=12, {who}: {at8:.1}% at 8-15, {at16:.1}% at 16-31");
            if want16 {
                // refilled from 12 to 16: four of every 16 submissions at 16
                assert!(
                    (20.0..=30.0).contains(&at16),
                    "{engine} {who}: {at16}% at 16"
                );
            } else {
                assert!(at16 < 0.5 && at8 > 99.0, "{engine} {who}: {at8}% / {at16}%");
            }
        }
    }
}
