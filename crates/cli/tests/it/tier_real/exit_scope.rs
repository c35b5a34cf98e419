//! `exitall` acts within one fio process: in a scenario each `[[fio]]`
//! entry is a fio of its own, so a job ending with `exitall` in one does
//! not stop the jobs of another (fio's `exitall_on_terminate` is a global
//! of its process); and with `exitall` the status reports' ETA is the
//! shortest job's (fio eta.c).

use crate::common;

use common::{blkqos, num, write_file};

#[test]
fn exitall_stops_only_its_own_fio() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |exitall_in_b: bool| {
        format!(
            "[device]\nmodel = \"null\"\nsize = \"64m\"\n\n\
             [[fio]]\njob = \"\"\"\n[a]\nfilename=/dev/nullb0\nrw=read\nbs=4k\nnumber_ios=10\nexitall\n\"\"\"\n\
             output = \"a.json\"\noutput_format = \"json\"\n\n\
             [[fio]]\njob = \"\"\"\n[b]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\ntime_based\nruntime=2\n\
             [b2]\nfilename=/dev/nullb0\nrw=read\nbs=4k\nnumber_ios=10\n{}\n\"\"\"\n\
             output = \"b.json\"\noutput_format = \"json\"\n",
            if exitall_in_b { "exitall" } else { "" }
        )
    };
    let runtime_of_b = |text: String| {
        let f = write_file(dir.path(), "s.toml", &text);
        blkqos(&["run", f.to_str().unwrap()], Some(dir.path())).ok();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("b.json")).unwrap())
                .unwrap();
        num(&doc["jobs"][0], "/job_runtime")
    };
    assert_eq!(
        runtime_of_b(scenario(false)),
        2000.0,
        "a's exitall stops nothing in the other fio"
    );
    assert!(
        runtime_of_b(scenario(true)) < 1000.0,
        "b2's exitall stops b, in its own fio"
    );
}

/// (eta, elapsed) of each status report with a finite ETA, first job.
fn etas(stdout: &str) -> Vec<(u64, u64)> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<serde_json::Value>()
        .map(|d| d.expect("JSON"))
        .map(|d| {
            (
                num(&d["jobs"][0], "/eta") as u64,
                num(&d["jobs"][0], "/elapsed") as u64,
            )
        })
        .filter(|(eta, _)| *eta < i32::MAX as u64)
        .collect()
}

/// fio eta.c: with exitall the run ends with its shortest job, and the
/// ETA says so: `b` (5 s) ends the run before `a` (10 s). fio 3.33 on a
/// file shows the same (its elapsed counts from its own start).
#[test]
#[ignore = "tier real"]
fn eta_with_exitall_is_the_shortest_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let job = |target: &str, exitall: bool| {
        format!(
            "[global]\nfilename={target}\nsize=4m\nrw=randread\ntime_based\nrate_iops=100\n{}\
             [a]\nruntime=10\n[b]\nruntime=5\n",
            if exitall { "exitall\n" } else { "" }
        )
    };
    let run = |text: String| {
        let f = write_file(dir.path(), "eta.fio", &text);
        let r = blkqos(
            &[
                "run",
                f.to_str().unwrap(),
                "--status-interval=1",
                "--output-format=json",
            ],
            Some(dir.path()),
        );
        r.ok();
        etas(&r.stdout_str())
    };
    let with = run(job("/dev/nullb0", true));
    assert!(!with.is_empty());
    assert!(
        with.iter().all(|(eta, el)| eta + el <= 5),
        "ETA of the 5 s job: {with:?}"
    );
    let without = run(job("/dev/nullb0", false));
    assert!(
        without.iter().any(|(eta, el)| eta + el >= 9),
        "without exitall the 10 s job sets the ETA: {without:?}"
    );
    if std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_err()
    {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "fio comparison: fio is not installed",
        );
        return;
    }
    let target = dir.path().join("data");
    let f = write_file(
        dir.path(),
        "eta_fio.fio",
        &job(target.to_str().unwrap(), true),
    );
    let out = std::process::Command::new("fio")
        .arg(&f)
        .arg("--status-interval=1")
        .arg("--output-format=json")
        .current_dir(dir.path())
        .output()
        .expect("fio");
    let fio = etas(&String::from_utf8_lossy(&out.stdout));
    assert!(
        !fio.is_empty() && fio.iter().all(|(eta, el)| eta + el <= 7),
        "fio: {fio:?}"
    );
}
