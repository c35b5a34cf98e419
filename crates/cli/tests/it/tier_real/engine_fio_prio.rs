//! IO priorities against real fio 3.33, on the real engine (io_uring,
//! direct=1, a scratch file): `prioclass`/`prio` with
//! `cmdprio_percentage`/`cmdprio_class`/`cmdprio`, the per-priority
//! completion latencies (JSON `prios`, the text `clat prio C/L` lines),
//! `log_prio`'s column; the engine thread's IO priority and CPUs read back
//! while it runs; `hipri` on a file failing with EOPNOTSUPP as in fio.
//! The simulator's report has the same shape.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn have_fio() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const PRIO_JOB: &str = "[j]\nioengine=io_uring\ndirect=1\nrw=randrw\nbs=4k\niodepth=4\n\
                        size=4m\nprioclass=2\nprio=5\ncmdprio_percentage=30\n\
                        cmdprio_class=1\ncmdprio=2\nwrite_lat_log=x\nlog_prio=1\n";

fn job_file(dir: &Path, file: &Path) -> std::path::PathBuf {
    let p = dir.join("prio.fio");
    std::fs::write(&p, format!("{PRIO_JOB}filename={}\n", file.display())).unwrap();
    p
}

/// `(prioclass, prio, N)` of a direction's `prios`.
fn prios(dir: &Value) -> Vec<(u64, u64, u64)> {
    dir["prios"]
        .as_array()
        .unwrap_or_else(|| panic!("no prios in {dir}"))
        .iter()
        .map(|p| {
            let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["prioclass", "prio", "clat_ns"], "{p}");
            (
                p["prioclass"].as_u64().unwrap(),
                p["prio"].as_u64().unwrap(),
                p["clat_ns"]["N"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The IOs of a direction by priority, checked against its total.
fn check_dir(what: &str, dir: &Value) -> f64 {
    let p = prios(dir);
    let classes: Vec<(u64, u64)> = p.iter().map(|x| (x.0, x.1)).collect();
    assert_eq!(
        classes,
        [(2, 5), (1, 2)],
        "{what}: job's own first, then cmdprio"
    );
    let n: u64 = p.iter().map(|x| x.2).sum();
    assert_eq!(n, dir["total_ios"].as_u64().unwrap(), "{what}");
    assert!(
        dir["prios"][0]["clat_ns"]["percentile"].is_object(),
        "{what}"
    );
    p[1].2 as f64 / n as f64
}

/// The priority column of a latency log.
fn log_prios(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.rsplit(", ").next().unwrap().to_string())
        .collect()
}

#[test]
#[ignore = "tier real"]
fn per_priority_latencies_match_fio() {
    let _x = exclusive();
    if !have_fio() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let jf = job_file(s.dir.path(), &s.path("scratch.dat"));
    let (bdir, fdir) = (s.path("b"), s.path("f"));
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&fdir).unwrap();
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        "--backend=io_uring".into(),
        "--output-format=json".into(),
    ];
    let r = blkqos(&args, &bdir);
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    r.ok();
    let ours = r.json_docs();
    let mut cmd = Command::new("fio");
    cmd.arg(&jf).arg("--output-format=json").current_dir(&fdir);
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    let theirs = f.json_docs();
    for d in ["read", "write"] {
        let mine = check_dir(&format!("blkqos {d}"), &job(&ours, "j")[d]);
        let fio = check_dir(&format!("fio {d}"), &job(&theirs, "j")[d]);
        // 30% of ~512 IOs: a draw's spread is about 2 points
        assert!((mine - 0.30).abs() < 0.08, "blkqos {d}: {mine}");
        assert!((fio - 0.30).abs() < 0.08, "fio {d}: {fio}");
    }
    for dir in [&bdir, &fdir] {
        let want: BTreeSet<String> = ["0x2002", "0x4005"].map(String::from).into();
        assert_eq!(
            log_prios(&dir.join("x_clat.1.log")),
            want,
            "{}",
            dir.display()
        );
    }
    // the text report's lines, fio's way
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        "--backend=io_uring".into(),
    ];
    let text = blkqos(&args, &bdir).ok().stdout_str();
    for want in ["clat prio 2/5 (", "clat prio 1/2 (", "clat prio 1/2 ("] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(
        text.contains("% of IOs) percentiles (usec):")
            || text.contains("% of IOs) percentiles (nsec):"),
        "{text}"
    );
}

#[test]
fn simulated_report_has_the_same_shape() {
    let s = Scratch::new();
    let jf = job_file(s.dir.path(), &s.path("scratch.dat"));
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        "--output-format=json".into(),
    ];
    let r = blkqos(&args, s.dir.path());
    r.ok();
    let docs = r.json_docs();
    for d in ["read", "write"] {
        let share = check_dir(d, &job(&docs, "j")[d]);
        assert!((share - 0.30).abs() < 0.08, "{d}: {share}");
    }
    assert_eq!(
        log_prios(&s.dir.path().join("x_clat.1.log")),
        ["0x2002", "0x4005"].map(String::from).into()
    );
}

/// A field of `/proc/PID/status`.
fn proc_status(pid: u32, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().to_string())
}

/// `ionice -p PID`'s report, if util-linux's ionice is there.
fn ionice(pid: u32) -> Option<String> {
    let o = Command::new("ionice")
        .arg("-p")
        .arg(pid.to_string())
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
#[ignore = "tier real"]
fn the_engine_thread_gets_the_jobs_priority_and_cpus() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("scratch.dat");
    let jf = s.dir.path().join("place.fio");
    std::fs::write(
        &jf,
        format!(
            "[j]\nfilename={}\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\nsize=4m\n\
             prioclass=3\ncpus_allowed=0\nnice=4\nruntime=3\ntime_based\nrate_iops=100\n",
            file.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_blkqos"))
        .args(["run", jf.to_str().unwrap(), "--backend=io_uring"])
        .current_dir(s.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = None;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if proc_status(pid, "Cpus_allowed_list:").as_deref() == Some("0") {
            seen = Some((
                ionice(pid),
                std::fs::read_to_string(format!("/proc/{pid}/stat")),
            ));
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("io_uring is unavailable") || stderr.contains("O_DIRECT is not supported") {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, stderr);
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let (ionice, stat) = seen.expect("the engine thread never ran on CPU 0 alone");
    if let Some(i) = ionice {
        assert_eq!(i, "idle", "ionice -p");
    }
    // /proc/PID/stat field 19: the nice level
    let stat = stat.unwrap();
    let after_comm = stat.rsplit(") ").next().unwrap();
    let nice: i64 = after_comm.split(' ').nth(16).unwrap().parse().unwrap();
    assert_eq!(nice, 4, "{stat}");
}

#[test]
#[ignore = "tier real"]
fn hipri_on_a_file_fails_as_in_fio() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("scratch.dat");
    let args = [
        "run".to_string(),
        "--name=h".into(),
        format!("--filename={}", file.display()),
        "--size=64k".into(),
        "--rw=randread".into(),
        "--ioengine=io_uring".into(),
        "--direct=1".into(),
        "--hipri".into(),
        "--backend=io_uring".into(),
        "--output-format=json".into(),
    ];
    let r = blkqos(&args, s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    let docs = r.json_docs();
    // EOPNOTSUPP: a file system's files take no polled IO
    assert_eq!(job(&docs, "h")["error"].as_u64(), Some(95), "{}", r.stderr);
    if have_fio() {
        let mut cmd = Command::new("fio");
        cmd.args(&args[1..8])
            .arg("--output-format=json")
            .current_dir(s.dir.path());
        let f = run_bounded(cmd, TIMEOUT);
        // fio prints its "fio: pid=..., err=95" line before the JSON
        let text = f.stdout_str();
        let doc: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        assert_eq!(job(&[doc], "h")["error"].as_u64(), Some(95), "{text}");
    }
    // the simulator refuses it, naming the option
    let sim = blkqos(&args[..8], s.dir.path());
    assert_ne!(sim.code, Some(0));
    assert!(sim.stderr.contains("option `hipri`"), "{}", sim.stderr);
}
