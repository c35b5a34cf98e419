//! Steady-state detection (`ss`, `ss_dur`, `ss_ramp`) end to end: a job
//! held at 1000 IOPS attains `ss=iops:10%` over a 2 s window after a 1 s
//! ramp and stops, on the simulator deterministically (samples at the
//! run's whole seconds: ramp over at 2 s, attained at 3 s) and on the real
//! engine; the JSON `steadystate` object has fio 3.33's keys and shape,
//! checked against fio itself on the same scratch file when it is
//! installed.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::process::Command;

const JOB: &str = "rw=read\nbs=4k\nsize=64m\nss=iops:10%\nss_dur=2s\nss_ramp=1s\n\
                   time_based\nruntime=20\nrate_iops=1000\n";

fn job_file(s: &Scratch) -> std::path::PathBuf {
    let jf = s.dir.path().join("ss.fio");
    let file = s.path("ss.dat");
    std::fs::write(&file, vec![0u8; 64 << 20]).unwrap();
    std::fs::write(&jf, format!("[ss]\nfilename={}\n{JOB}", file.display())).unwrap();
    jf
}

/// Every key path of a JSON value, arrays as `[]` with their length.
fn shape(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                shape(x, &p, out);
            }
        }
        Value::Array(a) => out.push(format!("{at}[{}]", a.len())),
        _ => {}
    }
}

fn ss_of(doc: &Value) -> &Value {
    &doc["jobs"][0]["steadystate"]
}

fn run(s: &Scratch, jf: &std::path::Path, backend: &str) -> Ran {
    blkqos(
        &[
            "run".to_string(),
            jf.display().to_string(),
            backend.to_string(),
            "--output-format=json".into(),
        ],
        s.dir.path(),
    )
}

#[test]
fn simulator_attains_at_the_third_second() {
    let s = Scratch::new();
    let jf = job_file(&s);
    let r = run(&s, &jf, "--backend=sim");
    r.ok();
    let doc = &r.json_docs()[0];
    let ss = ss_of(doc);
    assert_eq!(ss["ss"], "iops:10.000000%");
    assert_eq!(ss["duration"], 2);
    assert_eq!(ss["attained"], 1);
    assert_eq!(ss["criterion"], "0.000000%");
    assert_eq!(ss["data"]["iops"], serde_json::json!([1000, 1000]));
    assert_eq!(ss["data"]["bw"], serde_json::json!([4096000, 4096000]));
    assert_eq!(ss["data"]["iops_mean"], 1000);
    // the job stopped when steady state was attained, not at runtime=20
    assert_eq!(num(&doc["jobs"][0], "/job_runtime"), 3000.0);
    // and the same again: deterministic
    let again = run(&s, &jf, "--backend=sim");
    assert_eq!(ss_of(&again.json_docs()[0]), ss);
}

#[test]
fn the_text_report_has_the_steadystate_line() {
    let s = Scratch::new();
    let jf = job_file(&s);
    let r = blkqos(&["run".to_string(), jf.display().to_string()], s.dir.path());
    r.ok();
    assert!(
        r.stdout_str().contains(
            "  steadystate  : attained=yes, bw=4000KiB/s (4000kB/s), iops=1000, iops mean dev=0.000%\n"
        ),
        "{}",
        r.stdout_str()
    );
}

#[test]
fn inconsistent_options_in_a_group_are_rejected_as_fio_does() {
    let s = Scratch::new();
    let jf = s.dir.path().join("mix.fio");
    std::fs::write(
        &jf,
        "[a]\nsize=1m\nss=iops:10%\nss_dur=2\n[b]\nsize=1m\n[c]\nnew_group\nsize=1m\n",
    )
    .unwrap();
    let r = blkqos(&["run".to_string(), jf.display().to_string()], s.dir.path());
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr
            .contains("steadystate options must be consistent within reporting groups"),
        "{}",
        r.stderr
    );
}

#[test]
#[ignore = "tier real"]
fn real_engine_and_fio_agree_on_the_object() {
    let _x = exclusive();
    let s = Scratch::new();
    let jf = job_file(&s);
    let r = run(&s, &jf, &Be::Uring.flag());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    r.ok();
    let ours = r.json_docs()[0].clone();
    assert_eq!(ss_of(&ours)["attained"], 1, "{ours}");
    // ramp 1 s + 1 s, then two samples: attained well before runtime=20
    let runtime_ms = num(&ours["jobs"][0], "/job_runtime");
    assert!((2000.0..6000.0).contains(&runtime_ms), "{runtime_ms}");
    let have_fio = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_fio {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "(fio part) fio is not installed",
        );
        return;
    }
    let mut cmd = Command::new("fio");
    cmd.arg(&jf)
        .arg("--output-format=json")
        .current_dir(s.dir.path());
    let f = run_bounded(cmd, std::time::Duration::from_secs(60));
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let fio = f.json_docs()[0].clone();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    shape(ss_of(&ours), "", &mut a);
    shape(ss_of(&fio), "", &mut b);
    assert_eq!(a, b, "steadystate keys and array lengths");
    assert_eq!(ss_of(&fio)["attained"], 1);
    assert_eq!(ss_of(&fio)["ss"], ss_of(&ours)["ss"]);
    // both see the rate the job was held at
    for doc in [&ours, &fio] {
        let iops = num(ss_of(doc), "/data/iops_mean");
        assert!(within(iops, 1000.0, 5.0), "{iops}");
    }
}

/// With `group_reporting` the clones' samples are summed into one ring
/// (fio keeps it on the group's last job) and the whole group stops;
/// without it each clone judges its own.
#[test]
fn group_reporting_sums_the_clones() {
    let s = Scratch::new();
    let file = s.path("g.dat");
    std::fs::write(&file, vec![0u8; 64 << 20]).unwrap();
    let body = "rw=read\nbs=4k\nsize=64m\nss=iops_slope:1%\nss_dur=3\n\
                time_based\nruntime=30\nrate_iops=500\nnumjobs=2\n";
    for (grouped, entries) in [(true, 1), (false, 2)] {
        let jf = s.dir.path().join(format!("g{grouped}.fio"));
        let gr = if grouped { "group_reporting\n" } else { "" };
        std::fs::write(&jf, format!("[g]\nfilename={}\n{gr}{body}", file.display())).unwrap();
        let r = run(&s, &jf, "--backend=sim");
        r.ok();
        let doc = &r.json_docs()[0];
        let jobs = doc["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), entries);
        let want = if grouped { 1000 } else { 500 };
        for j in jobs {
            let ss = &j["steadystate"];
            assert_eq!(ss["attained"], 1, "{ss}");
            assert_eq!(ss["data"]["iops"], serde_json::json!([want, want, want]));
            assert_eq!(ss["criterion"], "0.000000%");
        }
        // no ramp: samples at 1, 2 and 3 s, attained at the third; a
        // group's job_runtime is its clones' summed, as fio's (fio 3.33
        // on this job: 5748 ms, its helper ticking at its own phase)
        let runtime_ms = num(&jobs[0], "/job_runtime");
        let want_ms = if grouped { 6000.0 } else { 3000.0 };
        assert_eq!(runtime_ms, want_ms, "grouped={grouped}");
    }
}
