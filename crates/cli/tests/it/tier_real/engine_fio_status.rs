//! `--status-interval=T`: the reports of the run so far every T, then the
//! final one.
//!
//! Real engine against real fio 3.33: the same job (4 KiB randread, psync,
//! direct=1, 2.5 s, `--status-interval=1`) on the same scratch file, in
//! each output format:
//! * JSON: as many objects (±1), each with the same keys as fio's (less
//!   blkqos's own `blkqos_disk_util`), the IO counts and runtimes growing
//!   from one to the next (cumulative, as fio's);
//! * normal: as many report blocks (±1), each with fio's sections in
//!   fio's order and fio's lines;
//! * terse: as many lines (±1), each with as many fields as fio's.
//!
//! Simulator: with T = 1 s over 3.5 s, exactly 3 reports then the final
//! one, runtimes 1000, 2000, 3000 ms, byte-identical across runs, the
//! final report byte-identical to a run without the option, IO counts
//! growing up to the run's totals; `--output` gets the same bytes as
//! stdout; bad values exit 2 naming the option.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every JSON object of a stream of them.
fn json_objects(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(|v| v.unwrap_or_else(|e| panic!("{e}:\n{text}")))
        .collect()
}

/// Every key path of a JSON value (array elements under `[]`).
fn key_paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn keys_of(v: &Value) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    key_paths(v, "", &mut s);
    s.retain(|k| !k.starts_with("/blkqos_disk_util"));
    s
}

/// The normal reports: each block's shape, the first word of each line
/// that opens a section or a statistic (numbers and units aside).
fn normal_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut skip = false;
    for line in text.lines() {
        if line.contains("(groupid=") {
            blocks.push(Vec::new());
            skip = false;
        }
        // blkqos's own request accounting, apart from the kernel's
        if line.starts_with("blkqos request stats") {
            skip = true;
        }
        let Some(b) = blocks.last_mut() else { continue };
        if skip || line.trim().is_empty() {
            continue;
        }
        let shape: String = line
            .split([':', '=', '(', '|'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        // `lat (usec)` lines, one per unit the latencies reach
        if b.last() != Some(&shape) || !matches!(shape.as_str(), "lat" | "") {
            b.push(shape);
        }
    }
    // the device's name differs between fio's and ours
    for b in &mut blocks {
        if let Some(i) = b.iter().position(|s| s == "Disk stats") {
            b.truncate(i + 1);
        }
        b.dedup();
    }
    blocks
}

/// blkqos and fio on the same job with `--output-format=format`: their
/// stdout, or None when the kernel refuses the engine.
fn both(s: &Scratch, format: &str) -> Option<(String, String)> {
    let file = s.path("scratch.dat");
    let job = [
        "--name=j".to_string(),
        format!("--filename={}", file.display()),
        "--size=16m".into(),
        "--rw=randread".into(),
        "--bs=4k".into(),
        "--ioengine=psync".into(),
        "--direct=1".into(),
        "--time_based".into(),
        "--runtime=2500ms".into(),
        "--status-interval=1".into(),
        format!("--output-format={format}"),
    ];
    let mut args = vec![
        "run".to_string(),
        "--backend=real".into(),
        "--overwrite".into(),
    ];
    args.extend(job.iter().cloned());
    let r = blkqos(&args, s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return None;
    }
    r.ok();
    let mut cmd = Command::new("fio");
    cmd.args(&job).current_dir(s.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    Some((r.stdout_str(), f.stdout_str()))
}

#[test]
#[ignore = "tier real"]
fn json_status_reports_match_fio() {
    let _x = exclusive();
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((ours, fio)) = both(&s, "json") else {
        return;
    };
    let (ours, fio) = (json_objects(&ours), json_objects(&fio));
    eprintln!("JSON reports: {} (fio {})", ours.len(), fio.len());
    assert!(ours.len() >= 2, "no interim report");
    assert!(ours.len().abs_diff(fio.len()) <= 1);
    let want = keys_of(&fio[0]);
    for (i, o) in ours.iter().enumerate() {
        let got = keys_of(o);
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "report {i}: missing {missing:?}, extra {extra:?}"
        );
    }
    let at = |o: &Value, p: &str| num(&o["jobs"][0], p);
    for w in ours.windows(2) {
        assert!(at(&w[1], "/read/total_ios") > at(&w[0], "/read/total_ios"));
        assert!(at(&w[1], "/read/runtime") > at(&w[0], "/read/runtime"));
    }
    let first = at(&ours[0], "/read/runtime");
    assert!(
        (900.0..=1500.0).contains(&first),
        "first report at {first} ms"
    );
    // fio's ETA is INT_MAX for the first 2 s of a run, 0 in the final report
    for docs in [&ours, &fio] {
        assert_eq!(num(&docs[0]["jobs"][0], "/eta"), 2_147_483_647.0);
        assert_eq!(num(&docs[docs.len() - 1]["jobs"][0], "/eta"), 0.0);
    }
}

#[test]
#[ignore = "tier real"]
fn normal_status_reports_match_fio() {
    let _x = exclusive();
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((ours, fio)) = both(&s, "normal") else {
        return;
    };
    let (ours, fio) = (normal_blocks(&ours), normal_blocks(&fio));
    eprintln!("normal reports: {} (fio {})", ours.len(), fio.len());
    assert!(ours.len() >= 2, "no interim report");
    assert!(ours.len().abs_diff(fio.len()) <= 1);
    for (i, b) in ours.iter().enumerate() {
        assert_eq!(b, &fio[0], "report {i}");
    }
}

#[test]
#[ignore = "tier real"]
fn terse_status_reports_match_fio() {
    let _x = exclusive();
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((ours, fio)) = both(&s, "terse") else {
        return;
    };
    let fields = |t: &str| -> Vec<usize> {
        t.lines()
            .filter(|l| l.starts_with("3;"))
            .map(|l| l.split(';').count())
            .collect()
    };
    let (ours, fio) = (fields(&ours), fields(&fio));
    eprintln!("terse reports: {} (fio {})", ours.len(), fio.len());
    assert!(ours.len() >= 2, "no interim report");
    assert!(ours.len().abs_diff(fio.len()) <= 1);
    assert!(ours.iter().all(|&n| n == fio[0]), "{ours:?} fio {fio:?}");
}

fn sim(dir: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "run",
        "--name=j",
        "--rw=randrw",
        "--bs=4k",
        "--size=8m",
        "--runtime=3500ms",
        "--time_based",
        "--ioengine=libaio",
        "--iodepth=4",
        "--device=ssd",
        // paced: the reports are what is tested, not ~2 M IOs per second
        "--rate_iops=2000",
    ];
    args.extend(extra);
    let mut cmd = Command::new(BIN);
    cmd.args(&args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    let r = run_bounded(cmd, TIMEOUT);
    r.ok();
    r
}

#[test]
fn simulated_status_reports_are_cumulative_and_repeat() {
    let s = Scratch::new();
    let dir = s.dir.path();
    let json = ["--output-format=json", "--status-interval=1"];
    let a = sim(dir, &json).stdout_str();
    let b = sim(dir, &json).stdout_str();
    assert_eq!(a, b, "two runs, different reports");
    let plain = sim(dir, &["--output-format=json"]).stdout_str();
    assert!(
        a.ends_with(&plain),
        "the final report changed with --status-interval"
    );
    let docs = json_objects(&a);
    assert_eq!(docs.len(), 4);
    let at = |o: &Value, p: &str| num(&o["jobs"][0], p);
    for (i, want) in [1000.0, 2000.0, 3000.0, 3500.0].iter().enumerate() {
        for d in ["read", "write"] {
            let rt = at(&docs[i], &format!("/{d}/runtime"));
            assert!((rt - want).abs() <= 1.0, "report {i} {d}: runtime {rt}");
        }
        let ts = num(&docs[i], "/timestamp_ms");
        assert_eq!(ts, 1_700_000_000_000.0 + want.floor(), "report {i}");
    }
    let eta: Vec<f64> = docs.iter().map(|o| at(o, "/eta")).collect();
    let elapsed: Vec<f64> = docs.iter().map(|o| at(o, "/elapsed")).collect();
    assert_eq!(eta, [2_147_483_647.0, 2_147_483_647.0, 0.0, 0.0]);
    assert_eq!(elapsed, [1.0, 2.0, 3.0, 4.0]);
    for d in ["read", "write"] {
        let ios: Vec<f64> = docs
            .iter()
            .map(|o| at(o, &format!("/{d}/total_ios")))
            .collect();
        assert!(ios.windows(2).all(|w| w[1] > w[0]), "{d}: {ios:?}");
        // about a third of the run's IO per second
        let share = ios[0] / ios[3];
        assert!((0.2..0.4).contains(&share), "{d}: {ios:?}");
    }
    // the same reports, in normal and terse, to --output
    for (fmt, count) in [("normal", "(groupid="), ("terse", "\n3;")] {
        let out = s.path(&format!("{fmt}.txt"));
        std::fs::write(&out, "stale\n").unwrap();
        let o = format!("--output={}", out.display());
        let f = format!("--output-format={fmt}");
        let r = sim(dir, &[&f, "--status-interval=1", &o]);
        assert!(r.stdout_str().is_empty());
        let text = std::fs::read_to_string(&out).unwrap();
        let stdout = sim(dir, &[&f, "--status-interval=1"]).stdout_str();
        assert_eq!(text, stdout, "{fmt}: --output and stdout differ");
        assert_eq!(
            format!("\n{text}").matches(count).count(),
            4,
            "{fmt}:\n{text}"
        );
    }
}

#[test]
fn bad_status_interval_exits_2_naming_it() {
    let s = Scratch::new();
    for v in ["abc", "500us", "1x"] {
        let r = blkqos(
            &[
                "run",
                "--name=j",
                "--rw=read",
                "--size=1m",
                &format!("--status-interval={v}"),
            ],
            s.dir.path(),
        );
        assert_eq!(r.code, Some(2), "{v}: {}", r.stderr);
        assert!(
            r.stderr.contains("<command line>")
                && r.stderr.contains("status-interval")
                && r.stderr.contains(v),
            "{v}: {}",
            r.stderr
        );
    }
}

#[test]
#[ignore = "tier real"]
fn scenario_invocations_share_one_status_interval() {
    let s = Scratch::new();
    let sc = s.path("sc.toml");
    let write = |b_extra: &str| {
        std::fs::write(
            &sc,
            format!(
                "[device]\nmodel = \"ssd\"\n\n[[fio]]\nargs = \"--name=a --rw=randread --size=8m --runtime=2500ms --time_based --status-interval=1 --output-format=terse\"\n\n\
                 [[fio]]\nargs = \"--name=b --rw=randread --size=8m --runtime=2500ms --time_based{b_extra} --output-format=terse\"\n"
            ),
        )
        .unwrap();
    };
    write("");
    let r = blkqos(&["run", &sc.display().to_string()], s.dir.path());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("sc.toml:4") && r.stderr.contains("--status-interval"),
        "{}",
        r.stderr
    );
    write(" --status-interval=1");
    let r = blkqos(&["run", &sc.display().to_string()], s.dir.path());
    r.ok();
    let lines: Vec<String> = r
        .stdout_str()
        .lines()
        .map(|l| l[..12].to_string())
        .collect();
    // 1 s, 2 s, then the final reports: each invocation's in turn
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(lines
        .iter()
        .step_by(2)
        .all(|l| l.starts_with("3;fio-3.33;a")));
    assert!(lines
        .iter()
        .skip(1)
        .step_by(2)
        .all(|l| l.starts_with("3;fio-3.33;b")));
}
