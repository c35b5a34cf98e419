//! Workload agreement with the real fio 3.33.
//!
//! Each job runs in real fio (on a scratch file in a temp dir that the test
//! writes and fsyncs first, buffered IO, `invalidate=0`: reads come from the
//! page cache, so fio's own IO time stays far below the pacing intervals;
//! a file fio lays out itself stalls reads for milliseconds while it is
//! written back) and in `blkqos run --device=ssd`
//! (a simulated device much faster than the workload). Per-direction `iops`
//! and `total_ios` must agree within 2 %. The fio runs go in parallel
//! threads (≈ 4 s in all). Skipped, with the reason printed, only when
//! `fio` is not installed.
//!
//! `cargo test -p blkqos --release --test fio_agreement -- --nocapture`
//! prints the side-by-side table.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Options both programs get (plus `--name=TAG`).
const COMMON: &[&str] = &[
    "--filename=data",
    "--size=16m",
    "--runtime=3",
    "--time_based",
    "--output-format=json",
];

struct Case {
    tag: &'static str,
    what: &'static str,
    opts: &'static [&'static str],
    /// Replace the runtime of [`COMMON`] (seconds).
    runtime: Option<u32>,
    /// Simulated devices blkqos runs the job on, each compared with the
    /// same fio run (`ssd`; `null` too where completions that arrive
    /// while the queue fills matter).
    devices: &'static [&'static str],
    /// What fio semantics predict for blkqos (deterministic), per direction
    /// `(read, write)` total_ios; checked within 2 %.
    expect_ios: (f64, f64),
}

const CASES: &[Case] = &[
    Case {
        tag: "a",
        what: "randrw rate_iops=100",
        opts: &["--rw=randrw", "--rate_iops=100"],
        runtime: None,
        devices: &["ssd"],
        // rate_iops without a comma caps each direction: 100 r/s + 100 w/s
        expect_ios: (300.0, 300.0),
    },
    Case {
        tag: "b",
        what: "libaio qd8 thinktime 100ms/4blk",
        opts: &[
            "--rw=randread",
            "--ioengine=libaio",
            "--iodepth=8",
            "--thinktime=100ms",
            "--thinktime_blocks=4",
        ],
        runtime: None,
        devices: &["ssd", "null"],
        // fio reads the completed-block count before draining the queue,
        // and reaps one completion per full-queue wait: pauses alternate
        // after 10 IOs and after 1 IO (11 in the first burst), so 30
        // pauses in 3 s give 11 + 1 + 14 × 11 = 166 IOs, not 4 per pause.
        // fio spends ~0.7 ms of its own per pause: 100 ms keeps that < 1 %
        expect_ios: (166.0, 0.0),
    },
    Case {
        tag: "c",
        what: "randrw bs=4k,64k rate_iops=50,20",
        opts: &["--rw=randrw", "--bs=4k,64k", "--rate_iops=50,20"],
        runtime: None,
        devices: &["ssd"],
        expect_ios: (150.0, 60.0),
    },
    Case {
        tag: "d",
        what: "randrw rwmixread=70 rate_iops=140,60",
        opts: &["--rw=randrw", "--rwmixread=70", "--rate_iops=140,60"],
        runtime: None,
        devices: &["ssd"],
        expect_ios: (420.0, 180.0),
    },
    Case {
        tag: "e",
        what: "numjobs=3 group_reporting riops=50",
        opts: &[
            "--numjobs=3",
            "--group_reporting",
            "--rw=randread",
            "--rate_iops=50",
        ],
        runtime: None,
        devices: &["ssd"],
        expect_ios: (450.0, 0.0),
    },
    Case {
        tag: "f",
        what: "ramp_time=1 runtime=6 thinktime 50ms",
        opts: &["--rw=randread", "--ramp_time=1", "--thinktime=50ms"],
        runtime: Some(6),
        devices: &["ssd"],
        // the ramp resets fio's block counters but not the count at the
        // last pause: 21 IOs without pause after the ramp (20 were done in
        // it), then one per 50 ms pause: 21 + 119 = 140. (6 s so that the
        // last pause overrunning the runtime moves iops by < 1 %.)
        expect_ios: (140.0, 0.0),
    },
    Case {
        tag: "g",
        what: "thinktime 2s > runtime 1s",
        opts: &["--rw=randread", "--thinktime=2s"],
        runtime: Some(1),
        devices: &["ssd"],
        // fio sleeps the whole pause past the runtime: job_runtime ≈ 2000
        expect_ios: (1.0, 0.0),
    },
];

fn args_for(c: &Case) -> Vec<String> {
    let mut a = vec![format!("--name={}", c.tag)];
    for o in COMMON {
        match (c.runtime, *o) {
            (Some(r), "--runtime=3") => a.push(format!("--runtime={r}")),
            _ => a.push(o.to_string()),
        }
    }
    a.extend(c.opts.iter().map(|s| s.to_string()));
    a
}

fn fio_version() -> Option<String> {
    let o = Command::new("fio").arg("--version").output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The scratch file fio reads and writes, on disk and in the page cache.
fn make_data_file(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("data")).unwrap();
    let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 + 1) as u8).collect();
    for _ in 0..16 {
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
}

fn run_fio(args: &[String], dir: &Path) -> Value {
    let mut cmd = Command::new("fio");
    cmd.args(args)
        .arg("--invalidate=0")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let r = run_bounded(cmd, Duration::from_secs(60));
    assert_eq!(
        r.code,
        Some(0),
        "fio {} failed:\n{}",
        args.join(" "),
        r.stderr
    );
    serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("fio JSON: {e}\n{}", r.stdout_str()))
}

fn run_blkqos(args: &[String], device: &str) -> Value {
    let mut a = vec!["run".to_string()];
    a.extend(args.iter().cloned());
    a.push(format!("--device={device}"));
    let r = blkqos(&a, None);
    r.ok();
    r.json()
}

const DIRS: [&str; 2] = ["read", "write"];

#[test]
#[ignore = "tier real"]
fn workloads_agree_with_fio() {
    let Some(version) = fio_version() else {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Fio,
            "fio_agreement: fio is not installed",
        );
        return;
    };
    if version != "fio-3.33" {
        println!("note: comparing with {version}; these expectations are fio-3.33's");
    }
    let dir = tempfile::tempdir().unwrap();
    // every scratch file first (writing and syncing them disturbs fio's
    // timing), then real fio for every case at once, each in its own dir
    let dirs: Vec<_> = CASES
        .iter()
        .map(|c| {
            let d = dir.path().join(c.tag);
            std::fs::create_dir_all(&d).unwrap();
            make_data_file(&d);
            d
        })
        .collect();
    let fio: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = CASES
            .iter()
            .zip(&dirs)
            .map(|(c, d)| {
                let args = args_for(c);
                s.spawn(move || run_fio(&args, d))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ours: Vec<Vec<Value>> = CASES
        .iter()
        .map(|c| {
            c.devices
                .iter()
                .map(|d| run_blkqos(&args_for(c), d))
                .collect()
        })
        .collect();

    let mut failures = Vec::new();
    println!();
    println!(
        "{:<46} {:<5} {:>9} {:>9} {:>7} {:>7} {:>7}",
        "job (blkqos device)", "dir", "fio iops", "blkqos", "fio ios", "blkqos", "diff %"
    );
    for (((c, f), runs), d) in CASES.iter().zip(&fio).zip(&ours).zip(&dirs) {
        // real fio's pacing is the host's timing: a transiently loaded
        // host makes it late (sleeps, rate waits). A case that disagrees
        // is run again in fio, alone, up to twice; blkqos (deterministic)
        // is never re-run, and its predicted counts are checked every time.
        let mut f = f.clone();
        for attempt in 0..3 {
            let mut now = Vec::new();
            for (dev, o) in c.devices.iter().zip(runs) {
                compare(c, dev, &f, o, &mut now);
            }
            if now.is_empty() || attempt == 2 {
                failures.extend(now);
                break;
            }
            println!(
                "({}) fio disagreed ({}); running fio again",
                c.tag,
                now.join("; ")
            );
            f = run_fio(&args_for(c), d);
        }
    }
    println!();
    assert!(
        failures.is_empty(),
        "disagreement with {version}:\n  {}",
        failures.join("\n  ")
    );
}

/// Compare one blkqos run (on `dev`) with fio's; print table rows.
fn compare(c: &Case, dev: &str, f: &Value, o: &Value, failures: &mut Vec<String>) {
    let tag = format!("({}) {dev}", c.tag);
    let (fj, oj) = (&f["jobs"], &o["jobs"]);
    let (nf, no) = (
        fj.as_array().map_or(0, Vec::len),
        oj.as_array().map_or(0, Vec::len),
    );
    if nf != 1 || no != 1 {
        // group_reporting merges the clones into one entry
        failures.push(format!(
            "{tag}: want one job entry each: fio {nf}, blkqos {no}"
        ));
        return;
    }
    let (fj, oj) = (&fj[0], &oj[0]);
    // (g) is one IO then a 2 s sleep, (f) 119 sleeps of 50 ms: their IOPS
    // and IO counts are fio's sleep accuracy, which real fio loses on a
    // loaded host (measured 2046 ms for 2000; 137 IOs for 140 with a
    // parallel build running); ±5% / ±4% there, ±2% (the agreed
    // tolerance) everywhere else. blkqos itself is held to the predicted
    // count within 2% in every case.
    let tol = match c.tag {
        "g" => 5.0,
        "f" => 4.0,
        _ => 2.0,
    };
    for (k, d) in DIRS.iter().enumerate() {
        let fi = num(fj, &format!("/{d}/iops"));
        let oi = num(oj, &format!("/{d}/iops"));
        let fn_ = num(fj, &format!("/{d}/total_ios"));
        let on = num(oj, &format!("/{d}/total_ios"));
        let want = if k == 0 {
            c.expect_ios.0
        } else {
            c.expect_ios.1
        };
        if fn_ == 0.0 && on == 0.0 && want == 0.0 {
            continue;
        }
        println!(
            "({}) {:<36} {:<5} {:<5} {:>9.2} {:>9.2} {:>7} {:>7} {:>+7.2}",
            c.tag,
            c.what,
            dev,
            d,
            fi,
            oi,
            fn_,
            on,
            (oi - fi) / fi * 100.0
        );
        if !within(oi, fi, tol) {
            failures.push(format!("{tag} {d} iops: fio {fi}, blkqos {oi}"));
        }
        if !within(on, fn_, tol) {
            failures.push(format!("{tag} {d} total_ios: fio {fn_}, blkqos {on}"));
        }
        if !within(on, want, 2.0) {
            failures.push(format!(
                "{tag} {d} total_ios: blkqos {on}, fio semantics predict {want}"
            ));
        }
    }
    // the length of the run (thinktime past the runtime, ramp)
    let (fr, or) = (num(fj, "/job_runtime"), num(oj, "/job_runtime"));
    if !within(or, fr, tol) {
        failures.push(format!("{tag} job_runtime: fio {fr} ms, blkqos {or} ms"));
    }
}

/// The jq program users run on fio's `unified_rw_reporting=mixed` JSON works
/// on ours and shows ~200 IOPS for job (a).
#[test]
fn jq_script_on_mixed_report() {
    const PROGRAM: &str = r#".jobs[0].mixed | ( .iops | tonumber | round ) as $iops | ( .bw_bytes / 1024 / 1024 ) as $bps | ( .clat_ns.mean / 1000000 ) as $avg | ( .clat_ns.max / 1000000 ) as $max | ( .clat_ns.percentile["90.000000"] / 1000000 ) as $p90 | ( .clat_ns.percentile["99.000000"] / 1000000 ) as $p99 | ( .clat_ns.percentile["99.900000"] / 1000000 ) as $p999 | ( .clat_ns.percentile["99.990000"] / 1000000 ) as $p9999 | "\($iops)|\($bps)|\($avg)|\($max)|\($p90)|\($p99)|\($p999)|\($p9999)""#;
    let mut args = vec!["run".to_string()];
    args.extend(args_for(&CASES[0]));
    args.push("--unified_rw_reporting=mixed".to_string());
    args.push("--device=ssd".to_string());
    let r = blkqos(&args, None);
    r.ok();
    let doc = r.json();
    assert!(
        doc["jobs"][0].get("read").is_none(),
        "mixed report has read"
    );
    let dir = tempfile::tempdir().unwrap();
    let json = write_file(dir.path(), "a.json", &r.stdout_str());
    let out = match Command::new("jq")
        .arg("-r")
        .arg(PROGRAM)
        .arg(&json)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::Tool,
                format!("jq check: cannot run jq ({e})"),
            );
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "jq failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("jq: {}", stdout.trim());
    let fields: Vec<&str> = stdout.trim().split('|').collect();
    assert_eq!(fields.len(), 8, "jq output: {stdout}");
    for f in &fields {
        assert!(
            f.parse::<f64>().is_ok_and(|x| x.is_finite() && x >= 0.0),
            "jq field `{f}` is not a number: {stdout}"
        );
    }
    let iops: f64 = fields[0].parse().unwrap();
    assert_within("mixed iops via jq", iops, 200.0, 2.0);
    // 100 r/s + 100 w/s of 4 KiB: 0.78 MiB/s
    let mibps: f64 = fields[1].parse().unwrap();
    assert_within("mixed MiB/s via jq", mibps, 200.0 * 4096.0 / 1048576.0, 2.0);
}
