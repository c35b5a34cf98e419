//! `wait_for`, `exitall`, `exit_what` on the simulator and the real
//! engine, and against real fio 3.33 on the same job file and scratch file:
//!
//! * `wait_for`: in the request trace no read (the waiting job) is
//!   submitted before the last write (the job it waits for) completed; the
//!   same file without `wait_for` overlaps them (simulator); IO counts per
//!   job equal fio's.
//! * `exitall` + `exit_what=group|stonewall|all`: which jobs a short job's
//!   end stops, started or not, the same in blkqos and in fio: a stopped
//!   time-based job ends long before its runtime (asserted below half of
//!   it, where it ends within milliseconds), a job never started does no IO.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const BACKENDS: [Be; 3] = [Be::Sim, Be::Uring, Be::Threads];

fn write_file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write job file");
    p
}

fn have_fio() -> bool {
    Command::new("fio").arg("--version").output().is_ok()
}

/// blkqos on `be` (None: it refused the kernel feature), JSON and trace.
fn run_blkqos(s: &Scratch, jf: &Path, be: Be) -> Option<(Value, String)> {
    let trace = s.path(&format!("{}.trace", be.name()));
    let mut args = vec![
        "run".to_string(),
        jf.display().to_string(),
        "--output-format=json".into(),
        format!("--request-trace={}", trace.display()),
    ];
    if be.is_real() {
        args.push(be.flag());
    }
    let r = blkqos(&args, s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return None;
    }
    r.ok();
    let doc = r.json_docs().remove(0);
    Some((doc, std::fs::read_to_string(&trace).unwrap_or_default()))
}

fn run_fio(s: &Scratch, jf: &Path) -> Value {
    let mut cmd = Command::new("fio");
    cmd.arg(jf)
        .arg("--output-format=json")
        .current_dir(s.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio: {}", f.stderr);
    f.json_docs().remove(0)
}

/// Per job (in order): name, read IOs, write IOs, job_runtime ms.
fn jobs(doc: &Value) -> Vec<(String, u64, u64, u64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or("").to_string(),
                num(j, "/read/total_ios") as u64,
                num(j, "/write/total_ios") as u64,
                num(j, "/job_runtime") as u64,
            )
        })
        .collect()
}

/// (latest write completion, earliest read submission) in the trace, ns.
fn write_end_read_start(trace: &str) -> (u64, u64) {
    let (mut w_end, mut r_start) = (0u64, u64::MAX);
    for l in trace.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u64>().expect("ns");
        match f[1] {
            "write" => w_end = w_end.max(n(4)),
            "read" => r_start = r_start.min(n(2)),
            _ => {}
        }
    }
    (w_end, r_start)
}

fn wait_for_job(file: &Path, wait: bool) -> String {
    format!(
        "[global]\nfilename={}\nsize=2m\nbs=64k\ndirect=1\nioengine=psync\n\
         [writers]\nrw=write\nnumjobs=2\n\
         [readers]\nrw=read\n{}",
        file.display(),
        if wait { "wait_for=writers\n" } else { "" }
    )
}

#[test]
#[ignore = "tier real"]
fn wait_for_starts_after_the_waitee_ends() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("data");
    let jf = write_file(s.dir.path(), "wait.fio", &wait_for_job(&file, true));
    let mut counts = Vec::new();
    for be in BACKENDS {
        let Some((doc, trace)) = run_blkqos(&s, &jf, be) else {
            continue;
        };
        let (w_end, r_start) = write_end_read_start(&trace);
        assert!(
            r_start != u64::MAX && w_end > 0,
            "{}: trace has reads and writes",
            be.name()
        );
        assert!(
            r_start >= w_end,
            "{}: a read was submitted at {r_start} ns, before the writers' last write completed at {w_end} ns",
            be.name()
        );
        counts.push((be.name(), jobs(&doc)));
    }
    // without wait_for the reader starts with the writers
    let free = write_file(s.dir.path(), "free.fio", &wait_for_job(&file, false));
    let (_, trace) = run_blkqos(&s, &free, Be::Sim).expect("simulator");
    let (w_end, r_start) = write_end_read_start(&trace);
    assert!(
        r_start < w_end,
        "control: the jobs overlap without wait_for"
    );
    if !have_fio() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "fio comparison: fio is not installed",
        );
        return;
    }
    let fio = jobs(&run_fio(&s, &jf));
    for (be, got) in counts {
        let strip = |v: &[(String, u64, u64, u64)]| {
            v.iter()
                .map(|(n, r, w, _)| (n.clone(), *r, *w))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&got), strip(&fio), "{be}: IO counts per job vs fio");
    }
}

/// `a` ends after 20 IOs; `b` (its own group) is time-based for 4 s;
/// `c` (after a stonewall) for 1 s. With `exitall`, `a`'s `exit_what`
/// decides what its end stops.
fn exit_job(file: &Path, what: &str) -> String {
    format!(
        "[global]\nfilename={}\nsize=4m\nbs=4k\ndirect=1\nioengine=psync\nexitall\n\
         [a]\nrw=read\nnumber_ios=20\nthinktime=2ms\nexit_what={what}\n\
         [b]\nnew_group\nrw=randread\ntime_based\nruntime=4\n\
         [c]\nstonewall\nrw=randread\ntime_based\nruntime=1\n",
        file.display()
    )
}

/// What each `exit_what` must show: (b stopped early, c ran).
fn expected(what: &str) -> (bool, bool) {
    match what {
        // a's group is a alone: b runs its 4 s, then c
        "group" => (false, true),
        // the running b stops; c, not started yet, still runs
        "stonewall" => (true, true),
        // everything stops; c never starts
        _ => (true, false),
    }
}

fn check_exit(who: &str, what: &str, got: &[(String, u64, u64, u64)]) {
    let find = |n: &str| got.iter().find(|j| j.0 == n).expect(n).clone();
    let (a, b, c) = (find("a"), find("b"), find("c"));
    assert_eq!(a.1, 20, "{who} exit_what={what}: a does its 20 IOs");
    let (b_stopped, c_ran) = expected(what);
    assert_eq!(
        b.3 < 2000,
        b_stopped,
        "{who} exit_what={what}: b ran {} ms of its 4000",
        b.3
    );
    assert_eq!(c.1 > 0, c_ran, "{who} exit_what={what}: c did {} IOs", c.1);
}

#[test]
#[ignore = "tier real"]
fn exitall_stops_what_exit_what_names() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("data");
    for what in ["all", "stonewall", "group"] {
        let jf = write_file(s.dir.path(), &format!("{what}.fio"), &exit_job(&file, what));
        for be in BACKENDS {
            if let Some((doc, _)) = run_blkqos(&s, &jf, be) {
                check_exit(&format!("blkqos {}", be.name()), what, &jobs(&doc));
            }
        }
        if have_fio() {
            check_exit("fio", what, &jobs(&run_fio(&s, &jf)));
        }
    }
}

/// A job stopped before it started never ran: its own `exit_what` stops
/// nothing (fio runs no thread_main for it). `a`'s end stops its group:
/// `b`, still in its start delay, never starts; `c` (another group) runs
/// its 3 s although `b` says `exit_what=all`.
#[test]
#[ignore = "tier real"]
fn an_unstarted_stopped_job_stops_nothing() {
    let _x = exclusive();
    let s = Scratch::new();
    let file = s.path("data");
    let text = format!(
        "[global]\nfilename={}\nsize=4m\nbs=4k\ndirect=1\nioengine=psync\nexitall\n\
         [a]\nrw=read\nnumber_ios=20\n\
         [b]\nrw=read\nstartdelay=2\nexit_what=all\n\
         [c]\nnew_group\nrw=randread\ntime_based\nruntime=3\n",
        file.display()
    );
    let jf = write_file(s.dir.path(), "unstarted.fio", &text);
    let check = |who: &str, got: Vec<(String, u64, u64, u64)>| {
        let find = |n: &str| got.iter().find(|j| j.0 == n).expect(n).clone();
        assert_eq!(find("b").1, 0, "{who}: b never starts");
        assert!(find("c").3 >= 2000, "{who}: c runs on: {:?}", find("c"));
    };
    for be in BACKENDS {
        if let Some((doc, _)) = run_blkqos(&s, &jf, be) {
            check(&format!("blkqos {}", be.name()), jobs(&doc));
        }
    }
    if have_fio() {
        check("fio", jobs(&run_fio(&s, &jf)));
    }
}
