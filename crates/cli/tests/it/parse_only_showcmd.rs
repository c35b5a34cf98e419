//! fio's `--parse-only` and `--showcmd`, and "did you mean" for misspelt
//! options. `--showcmd` is compared with real fio's output for the same job
//! files when fio is installed (skipped, saying so, when it is not).

use crate::common;

use common::*;
use std::process::Command;

const JOBS: &[&str] = &[
    "[global]\nbs=4k\ndirect=1\n[a]\nrw=randread\nsize=1m\n[b]\nrw=write\nsize=2m\n",
    "[global]\nioengine=libaio\niodepth=16\nruntime=10\ntime_based\n[x]\nrw=randrw\nrwmixread=70\nbs=4k,64k\nsize=64m\nrate_iops=100,50\n[global]\nthinktime=1ms\n[y]\nnew_group\nrw=read\nbsrange=4k-16k\nsize=8m\n",
    "; a comment\n[only]\nfilename=/dev/nullb0\nrw=trim\nbs=1m\nsize=16m\nnumjobs=2\ngroup_reporting\n",
];

#[test]
fn showcmd_prints_what_fio_prints() {
    let dir = tempfile::tempdir().unwrap();
    let has_fio = Command::new("fio").arg("--version").output().is_ok();
    if !has_fio {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "the comparison with fio: fio is not installed",
        );
    }
    for (i, text) in JOBS.iter().enumerate() {
        let name = format!("j{i}.fio");
        write_file(dir.path(), &name, text);
        let r = blkqos(&["run", "--showcmd", &name], Some(dir.path()));
        r.ok();
        let ours = r.stdout_str();
        assert!(ours.starts_with("fio --"), "{ours}");
        if has_fio {
            let out = Command::new("fio")
                .args(["--showcmd", &name])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert_eq!(ours, String::from_utf8_lossy(&out.stdout), "{name}");
        }
    }
}

#[test]
fn parse_only_checks_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "ok.fio", JOBS[1]);
    let r = blkqos(
        &["run", "ok.fio", "--parse-only", "--output=out.txt"],
        Some(dir.path()),
    );
    r.ok();
    assert!(r.stdout.is_empty(), "{}", r.stdout_str());
    assert!(!dir.path().join("out.txt").exists(), "nothing is written");
    // what a run would refuse before it starts is refused here too
    let r = blkqos(
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--size=4m",
            "--filename=/dev/nullb0",
            "--offset=300g",
            "--parse-only",
        ],
        Some(dir.path()),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("past the end"), "{}", r.stderr);
    // a scenario, with the knob writes replayed
    let r = blkqos(
        &[
            "run",
            example("seed-000-throttle/scenario.toml").to_str().unwrap(),
            "--parse-only",
        ],
        Some(dir.path()),
    );
    r.ok();
    assert!(r.stdout.is_empty());
}

#[test]
fn misspelt_options_get_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "m.fio", "[a]\nrw=read\nsize=1m\niodpeth=4\n");
    let r = blkqos(&["run", "m.fio"], Some(dir.path()));
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("m.fio:4") && r.stderr.contains("did you mean `iodepth`?"),
        "{}",
        r.stderr
    );
    for (bad, want) in [
        ("--runtim=1", "did you mean `--runtime`?"),
        ("--io-mx=253:0 riops=1", "did you mean `--io-max`?"),
        ("--outptu=x", "did you mean `--output`?"),
    ] {
        let r = blkqos(
            &["run", "--name=a", "--rw=read", "--size=1m", bad],
            Some(dir.path()),
        );
        assert_eq!(r.code, Some(2), "{bad}");
        assert!(r.stderr.contains(want), "{bad}: {}", r.stderr);
    }
}
