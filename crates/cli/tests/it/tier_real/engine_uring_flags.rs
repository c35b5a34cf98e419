//! io_uring's `fixedbufs` and `registerfiles` on the real engine: with
//! the io_uring backend the job runs (its ring registered buffers and the
//! target) and issues the IOs fio 3.33 issues for the same job file on the
//! same scratch file; the thread pool has no ring and refuses the job
//! (exit 2, at the option's line). `sqthread_poll` sets up the ring with
//! `IORING_SETUP_SQPOLL`; the thread pool refuses it and `hipri` before
//! anything opens.

use crate::engine_util;

use engine_util::*;
use std::process::Command;

const JOB: &str = "ioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=8\nsize=8m\n";

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn registered_ring_runs_what_fio_runs() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("reg.dat");
    let jf = s.path("reg.fio");
    std::fs::write(
        &jf,
        format!(
            "[reg]\nfilename={}\n{JOB}fixedbufs\nregisterfiles=1\n",
            file.display()
        ),
    )
    .unwrap();
    let r = blkqos(
        &[
            "run",
            jf.to_str().unwrap(),
            "--backend=io_uring",
            "--output-format=json",
        ],
        s.dir.path(),
    );
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    if r.stderr.contains("the kernel refused the registration") {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, r.stderr.trim());
        return;
    }
    r.ok();
    let ours = num(&r.json_docs()[0]["jobs"][0], "/read/total_ios");
    assert_eq!(ours, 2048.0, "8 MiB in 4 KiB reads");
    if !fio_installed() {
        eprintln!("fio is not installed: compared with the job's size only");
        return;
    }
    let mut cmd = Command::new("fio");
    cmd.arg(&jf)
        .arg("--output-format=json")
        .current_dir(s.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    let theirs = num(&f.json_docs()[0]["jobs"][0], "/read/total_ios");
    assert_eq!(ours, theirs, "IOs: blkqos {ours}, fio {theirs}");
}

#[test]
fn thread_pool_refuses_registration() {
    let s = Scratch::new();
    let file = s.path("pool.dat");
    let jf = s.path("pool.fio");
    std::fs::write(
        &jf,
        format!(
            "[pool]\nfilename={}\n{JOB}registerfiles=1\n",
            file.display()
        ),
    )
    .unwrap();
    let r = blkqos(
        &["run", jf.to_str().unwrap(), "--backend=threads"],
        s.dir.path(),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "pool.fio:9: option `registerfiles`: value `1`: job `pool` asks for the target registered"
        ) && r.stderr.contains("thread-pool backend has no ring"),
        "{}",
        r.stderr
    );
    assert!(!file.exists(), "refused before the target is laid out");
}

#[test]
fn sqpoll_runs_and_the_thread_pool_refuses_ring_flags() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("up.dat");
    let jf = s.path("up.fio");
    std::fs::write(
        &jf,
        format!(
            "[up]\nfilename={}\n{JOB}sqthread_poll=1\nsqthread_poll_cpu=0\n",
            file.display()
        ),
    )
    .unwrap();
    let r = blkqos(
        &[
            "run",
            jf.to_str().unwrap(),
            "--backend=io_uring",
            "--output-format=json",
        ],
        s.dir.path(),
    );
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    r.ok();
    // IORING_SETUP_SQPOLL: every IO of the job done, none failed
    let docs = r.json_docs();
    assert_eq!(num(job(&docs, "up"), "/read/total_ios"), 2048.0);
    assert_eq!(num(job(&docs, "up"), "/error"), 0.0);
    std::fs::remove_file(&file).unwrap();
    for opt in ["sqthread_poll=1", "hipri"] {
        std::fs::write(
            &jf,
            format!("[up]\nfilename={}\n{JOB}{opt}\n", file.display()),
        )
        .unwrap();
        let r = blkqos(
            &["run", jf.to_str().unwrap(), "--backend=threads"],
            s.dir.path(),
        );
        assert_ne!(r.code, Some(0), "{opt}: {}", r.stderr);
        assert!(
            r.stderr.contains("thread-pool backend has no ring"),
            "{opt}: {}",
            r.stderr
        );
        assert!(!file.exists(), "{opt}: nothing opened");
    }
}
