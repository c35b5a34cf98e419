//! The engines that work the host instead of doing IO, on the real engine:
//! cpuio burns `cpuload` percent of a CPU for its runtime (its thread's
//! user CPU is the job's `usr_cpu`), exec runs a program for the runtime
//! with `%r`/`%n` expanded and leaves it dead at the end. The simulator
//! refuses both at the `ioengine` line.

use crate::engine_util;

use engine_util::*;
use std::path::Path;

fn run_real(dir: &Path, text: &str) -> serde_json::Value {
    std::fs::write(dir.join("j.fio"), text).unwrap();
    let r = blkqos(
        &["run", "j.fio", "--backend=real", "--output-format=json"],
        dir,
    );
    r.ok();
    r.json_docs().remove(0)
}

#[test]
#[ignore = "tier real"]
fn cpuio_burns_its_load_for_its_runtime() {
    let _x = exclusive();
    let s = Scratch::new();
    // 20 ms cycles at 50%: 20 ms burnt, 20 ms asleep
    let doc = run_real(
        s.dir.path(),
        "[c]\nioengine=cpuio\ncpuload=50\ncpuchunks=20000\ntime_based\nruntime=2\n",
    );
    let j = &doc["jobs"][0];
    let runtime_ms = num(j, "/job_runtime");
    assert!((1900.0..=2600.0).contains(&runtime_ms), "{runtime_ms}");
    let ios = num(j, "/read/total_ios");
    // 2 s of 40 ms cycles
    assert!((30.0..=55.0).contains(&ios), "{ios} cycles");
    assert_eq!(num(j, "/read/io_bytes"), 0.0);
    // each cycle's latency is its burn: 20 ms
    let lat_ms = num(j, "/read/lat_ns/mean") / 1e6;
    assert!((19.5..=40.0).contains(&lat_ms), "{lat_ms}");
    // the burn is user CPU; on a shared machine the thread gets less
    // than the wall time it spins: a tolerant ratio to cpuload
    let usr = num(j, "/usr_cpu");
    assert!(usr / 50.0 > 0.1 && usr / 50.0 < 1.3, "usr_cpu {usr}");
}

#[test]
#[ignore = "tier real"]
fn cpuio_qsort_and_a_full_load() {
    let _x = exclusive();
    let s = Scratch::new();
    let doc = run_real(
        s.dir.path(),
        "[q]\nioengine=cpuio\ncpuload=100\ncpumode=qsort\ncpuchunks=10000\ntime_based\n\
         runtime=1\n",
    );
    let j = &doc["jobs"][0];
    // no think time at 100%: cycles back to back
    let ios = num(j, "/read/total_ios");
    assert!((50.0..=110.0).contains(&ios), "{ios}");
    assert!(num(j, "/usr_cpu") > 5.0, "{}", num(j, "/usr_cpu"));
}

#[test]
#[ignore = "tier real"]
fn exec_runs_the_program_for_the_runtime_and_kills_it() {
    let _x = exclusive();
    let s = Scratch::new();
    let script = s.path("prog.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"$@\" > args.txt\necho $$ > pid.txt\nwhile :; do sleep 0.05; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let t0 = std::time::Instant::now();
    let doc = run_real(
        s.dir.path(),
        "[ex]\nioengine=exec\nprogram=./prog.sh\narguments=%n -t %r\ntime_based\nruntime=1\n\
         grace_time=0\n",
    );
    assert!(t0.elapsed().as_secs_f64() >= 1.0);
    let j = &doc["jobs"][0];
    assert_eq!(num(j, "/error"), 0.0);
    // the first IO starts the program, then one every 100 ms
    let ios = num(j, "/read/total_ios");
    assert!((5.0..=12.0).contains(&ios), "{ios}");
    let args = std::fs::read_to_string(s.path("args.txt")).unwrap();
    assert_eq!(args.trim(), "ex -t 1");
    // std_redirect=1: its output files are there
    assert!(s.path("ex.stdout").exists() && s.path("ex.stderr").exists());
    let pid = std::fs::read_to_string(s.path("pid.txt")).unwrap();
    let alive = Path::new("/proc").join(pid.trim()).exists();
    assert!(!alive, "the program must be gone after the job");
}

#[test]
fn exec_of_a_missing_program_fails_the_job() {
    let _x = exclusive();
    let s = Scratch::new();
    std::fs::write(
        s.path("j.fio"),
        "[ex]\nioengine=exec\nprogram=/nonexistent/prog\ntime_based\nruntime=1\n",
    )
    .unwrap();
    let r = blkqos(&["run", "j.fio", "--backend=real"], s.dir.path());
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot run /nonexistent/prog"),
        "{}",
        r.stderr
    );
}

#[test]
fn refusals() {
    let s = Scratch::new();
    for (text, want) in [
        (
            "[c]\nioengine=cpuio\ncpuload=10\ntime_based\nruntime=1\n",
            "j.fio:2: option `ioengine`: value `cpuio`: ioengine=cpuio burns the host's CPU: a \
             simulation has no host to work; run it with --backend=real",
        ),
        (
            "[c]\nioengine=cpuio\ntime_based\nruntime=1\n",
            "cpu thread needs rate (cpuload=)",
        ),
        (
            "[e]\nioengine=exec\ntime_based\nruntime=1\n",
            "no program is defined",
        ),
        ("[e]\nioengine=exec\nprogram=/bin/true\n", "without runtime"),
        (
            "[c]\nioengine=psync\ncpuload=10\n",
            "`cpuload` is an option of ioengine=cpuio",
        ),
    ] {
        std::fs::write(s.path("j.fio"), text).unwrap();
        let r = blkqos(&["run", "j.fio"], s.dir.path());
        assert_eq!(r.code, Some(2), "{text}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{text}: {}", r.stderr);
    }
}
