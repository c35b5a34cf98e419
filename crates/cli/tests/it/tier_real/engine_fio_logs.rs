//! fio's sample logs (`write_bw_log`, `write_iops_log`, `write_lat_log`),
//! the real engine against real fio 3.33: the same job file on the same
//! scratch file (4 KiB randrw, QD4, io_uring, direct=1, `rate_iops=200`
//! per direction, 2 s), run by `blkqos run JOBFILE --backend=io_uring` and by
//! `fio JOBFILE`, each in a directory of its own:
//!
//! * per IO (`log_avg_msec=0`): the same five file names, the same number
//!   of columns, line counts within ±2%, the same directions and block
//!   sizes, iops values all 1, the last time stamp within 5%;
//! * averaged (`log_avg_msec=500`): the same file names and columns, bs 0,
//!   line counts within one window per direction, the bw and iops logs'
//!   means within 5%.
//!
//! On the simulator: the per-IO logs agree with the job's JSON report (one
//! line per IO, latencies' means) and two runs write the same bytes.

use crate::engine_util;

use engine_util::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const KINDS: [&str; 5] = ["bw", "iops", "lat", "clat", "slat"];

fn fio_version() -> Option<String> {
    let o = Command::new("fio").arg("--version").output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// One log: its lines' fields.
fn read_log(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|f| f.parse().unwrap_or_else(|_| panic!("{l:?}")))
                .collect()
        })
        .collect()
}

/// The `*.log` files of a directory: name → lines.
fn logs_in(dir: &Path) -> BTreeMap<String, Vec<Vec<u64>>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?.to_string();
            name.ends_with(".log").then(|| (name, read_log(&p)))
        })
        .collect()
}

fn mean(xs: impl Iterator<Item = u64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0.0), |(s, n), x| (s + x as f64, n + 1.0));
    if n == 0.0 {
        0.0
    } else {
        s / n
    }
}

fn job_file(dir: &Path, file: &Path, avg_msec: u32) -> std::path::PathBuf {
    let p = dir.join("logs.fio");
    std::fs::write(
        &p,
        format!(
            "[j]\nfilename={}\nioengine=io_uring\ndirect=1\nrw=randrw\nbs=4k\niodepth=4\n\
             size=32m\nrate_iops=200\nruntime=2\ntime_based\nwrite_bw_log=x\n\
             write_iops_log=x\nwrite_lat_log=x\nlog_avg_msec={avg_msec}\n",
            file.display()
        ),
    )
    .unwrap();
    p
}

/// Run blkqos and fio on the same job, each in its own directory: their
/// logs, or None when the kernel refuses the engine.
type Logs = BTreeMap<String, Vec<Vec<u64>>>;
fn both(s: &Scratch, avg_msec: u32) -> Option<(Logs, Logs)> {
    let file = s.path("scratch.dat");
    let jf = job_file(s.dir.path(), &file, avg_msec);
    let (bdir, fdir) = (
        s.path(&format!("b{avg_msec}")),
        s.path(&format!("f{avg_msec}")),
    );
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&fdir).unwrap();
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        "--backend=io_uring".into(),
    ];
    let r = blkqos(&args, &bdir);
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return None;
    }
    r.ok();
    let mut cmd = Command::new("fio");
    cmd.arg(&jf).arg("--output=/dev/null").current_dir(&fdir);
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    Some((logs_in(&bdir), logs_in(&fdir)))
}

fn names(l: &Logs) -> Vec<&String> {
    l.keys().collect()
}

#[test]
#[ignore = "tier real"]
fn per_io_logs_match_fio() {
    let _x = exclusive();
    let Some(version) = fio_version() else {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    };
    let s = Scratch::new();
    let Some((ours, fio)) = both(&s, 0) else {
        return;
    };
    let want: Vec<String> = KINDS.iter().map(|k| format!("x_{k}.1.log")).collect();
    let mut want: Vec<&String> = want.iter().collect();
    want.sort();
    assert_eq!(names(&fio), want, "{version}");
    assert_eq!(names(&ours), names(&fio));
    let mut table = Vec::new();
    for (name, theirs) in &fio {
        let mine = &ours[name];
        table.push(format!(
            "{name:<14} lines {:>5} (fio {:>5})",
            mine.len(),
            theirs.len()
        ));
        assert!(
            within(mine.len() as f64, theirs.len() as f64, 2.0),
            "{name}: {} lines, fio {}",
            mine.len(),
            theirs.len()
        );
        for l in mine.iter().chain(theirs) {
            assert_eq!(l.len(), 5, "{name}: {l:?}");
            assert_eq!(l[3], 4096, "{name}: bs {l:?}");
            assert!(l[2] <= 1, "{name}: ddir {l:?}");
        }
        for d in 0..2 {
            let (a, b) = (
                mine.iter().filter(|l| l[2] == d).count() as f64,
                theirs.iter().filter(|l| l[2] == d).count() as f64,
            );
            assert!(within(a, b, 2.0), "{name} ddir {d}: {a} lines, fio {b}");
        }
        let last = |v: &Vec<Vec<u64>>| v.last().map_or(0, |l| l[0]) as f64;
        assert!(
            within(last(mine), last(theirs), 5.0),
            "{name}: last time {} fio {}",
            last(mine),
            last(theirs)
        );
        if name.contains("iops") {
            assert!(mine.iter().all(|l| l[1] == 1), "{name}");
        }
    }
    eprintln!("{}", table.join("\n"));
}

#[test]
#[ignore = "tier real"]
fn averaged_logs_match_fio() {
    let _x = exclusive();
    if fio_version().is_none() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((ours, fio)) = both(&s, 500) else {
        return;
    };
    assert_eq!(names(&ours), names(&fio));
    for (name, theirs) in &fio {
        let mine = &ours[name];
        eprintln!(
            "{name:<14} lines {:>3} (fio {:>3})",
            mine.len(),
            theirs.len()
        );
        assert!(
            mine.len().abs_diff(theirs.len()) <= 2,
            "{name}: {mine:?}\nfio {theirs:?}"
        );
        for l in mine {
            assert_eq!((l.len(), l[3]), (5, 0), "{name}: {l:?}");
        }
        if name.contains("bw") || name.contains("iops") {
            let (a, b) = (
                mean(mine.iter().map(|l| l[1])),
                mean(theirs.iter().map(|l| l[1])),
            );
            assert!(within(a, b, 5.0), "{name}: mean {a}, fio {b}");
        }
    }
}

#[test]
fn simulated_logs_agree_with_the_report_and_repeat() {
    let s = Scratch::new();
    let run = |sub: &str| {
        let dir = s.path(sub);
        std::fs::create_dir_all(&dir).unwrap();
        let r = blkqos(
            &[
                "run",
                "--name=j",
                "--rw=randrw",
                "--bs=4k",
                "--size=8m",
                "--rate_iops=100",
                "--runtime=2",
                "--time_based",
                "--ioengine=libaio",
                "--iodepth=2",
                "--direct=1",
                "--write_lat_log=x",
                "--write_bw_log=x",
                "--write_iops_log=x",
                "--device=ssd",
                "--output-format=json",
            ],
            &dir,
        );
        r.ok();
        (logs_in(&dir), r.json_docs())
    };
    let (a, docs) = run("a");
    let (b, _) = run("b");
    assert_eq!(a, b, "two runs, different logs");
    let j = &docs[0]["jobs"][0];
    for (d, dir) in ["read", "write"].iter().enumerate() {
        let ios = num(j, &format!("/{dir}/total_ios")) as usize;
        for k in KINDS {
            let lines: Vec<_> = a[&format!("x_{k}.1.log")]
                .iter()
                .filter(|l| l[2] == d as u64)
                .collect();
            assert_eq!(lines.len(), ios, "{k} {dir}");
        }
        for k in ["lat", "clat", "slat"] {
            let m = mean(
                a[&format!("x_{k}.1.log")]
                    .iter()
                    .filter(|l| l[2] == d as u64)
                    .map(|l| l[1]),
            );
            let want = num(j, &format!("/{dir}/{k}_ns/mean"));
            assert!(
                within(m, want, 0.01),
                "{k} {dir}: log mean {m}, report {want}"
            );
        }
    }
}
