//! The status line of real runs (`--eta=auto|always|never`), on both real
//! backends: elapsed time, ETA, and per job the IOPS and bandwidth of the
//! last second, on stderr; rewritten in place on a terminal (`auto`, the
//! default), one line per second with `always`, nothing otherwise. The fio
//! report on stdout is never disturbed.

use crate::engine_util;

use engine_util::*;
use std::process::Command;

/// Two rate-limited jobs on one scratch file: `a` reads at 1000 IOPS, `b`
/// reads and writes at 300 IOPS each.
fn args(be: Be, s: &Scratch, runtime: &str, extra: &[&str]) -> Vec<String> {
    let f = s.path("progress.dat");
    let common = format!(
        "--filename={} --size=16m --bs=4k --ioengine=io_uring --direct=1 --iodepth=4 \
         --runtime={runtime} --time_based",
        f.display()
    );
    let mut a = vec!["run".to_string()];
    a.extend(
        format!("--name=a --rw=randread --rate_iops=1000 {common}")
            .split(' ')
            .map(String::from),
    );
    a.extend(
        format!("--name=b --rw=randrw --rate_iops=300 {common}")
            .split(' ')
            .map(String::from),
    );
    a.push(be.flag());
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

/// The IOPS figures of `job` in a status line, per direction.
fn rates(line: &str, job: &str) -> Vec<(String, f64)> {
    let Some(part) = line
        .split(" | ")
        .map(|p| p.rsplit("] ").next().unwrap_or(p))
        .find(|p| p.starts_with(&format!("{job}:")))
    else {
        return Vec::new();
    };
    let toks: Vec<&str> = part.split_whitespace().collect();
    toks.windows(3)
        .filter(|w| w[2].starts_with("IOPS"))
        .map(|w| (w[0][..1].to_string(), w[1].parse().unwrap_or(f64::NAN)))
        .collect()
}

/// Lay the scratch file out; false (and why) if the kernel refuses.
fn prepare(be: Be, s: &Scratch) -> bool {
    let r = blkqos(&args(be, s, "1ms", &["--eta=never"]), s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return false;
    }
    r.ok();
    true
}

fn eta_always_shows_rates_per_job(be: Be) {
    let s = Scratch::new();
    if !prepare(be, &s) {
        return;
    }
    let r = blkqos(
        &args(be, &s, "2200ms", &["--eta=always", "--output-format=json"]),
        s.dir.path(),
    );
    r.ok();
    assert_eq!(r.json_docs().len(), 1, "the report is intact");
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("blkqos: ["))
        .collect();
    eprintln!("{}:\n{}", be.name(), lines.join("\n"));
    assert!(lines.len() >= 2, "a line a second: {}", r.stderr);
    assert!(lines.iter().all(|l| l.contains("[eta ")), "{lines:?}");
    // every line has each job's rates
    for l in &lines {
        assert_eq!(rates(l, "a").len(), 1, "a reads only: {l}");
        assert_eq!(rates(l, "b").len(), 2, "b reads and writes: {l}");
    }
    // a rate_iops schedule catches up after a slow second (start-up, or a
    // loaded host delaying it): each job's rates show on one line, or on
    // average over the lines
    let shows = |job: &str, want: &[f64]| {
        let per_line: Vec<Vec<f64>> = lines
            .iter()
            .map(|l| rates(l, job).iter().map(|r| r.1).collect())
            .collect();
        let one_line = per_line
            .iter()
            .any(|v| v.iter().zip(want).all(|(&got, &w)| within(got, w, 10.0)));
        let mean: Vec<f64> = (0..want.len())
            .map(|d| per_line.iter().map(|v| v[d]).sum::<f64>() / per_line.len() as f64)
            .collect();
        one_line || mean.iter().zip(want).all(|(&m, &w)| within(m, w, 10.0))
    };
    assert!(
        lines.iter().all(|l| rates(l, "a")[0].0 == "r"),
        "a reads: {lines:?}"
    );
    assert!(
        shows("a", &[1000.0]) && shows("b", &[300.0, 300.0]),
        "a is not at 1000 IOPS or b at 300+300, per line or on average: {lines:?}"
    );
    let l = lines[lines.len() - 1];
    assert!(l.contains("KiB/s"), "{l}");
    assert!(
        l.contains("[eta 00m:01s]") || l.contains("[eta 00m:00s]"),
        "2.2 s run, second line: {l}"
    );
}

fn quiet_off_a_terminal(be: Be) {
    let s = Scratch::new();
    if !prepare(be, &s) {
        return;
    }
    let r = blkqos(
        &args(be, &s, "1200ms", &["--output-format=json"]),
        s.dir.path(),
    );
    r.ok();
    r.json_docs();
    assert!(
        !r.stderr.contains("blkqos: ["),
        "no status line without a terminal: {}",
        r.stderr
    );
}

fn terminal_gets_a_line_rewritten_in_place(be: Be) {
    let s = Scratch::new();
    if !prepare(be, &s) {
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Tool,
            "no `script` (util-linux) to run blkqos on a pseudo-terminal",
        );
        return;
    }
    let out = s.path("report.json");
    let mut cmd_line = vec![BIN.to_string()];
    cmd_line.extend(args(
        be,
        &s,
        "1300ms",
        &[
            "--output-format=json",
            &format!("--output={}", out.display()),
        ],
    ));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &cmd_line.join(" "), "/dev/null"])
        .current_dir(s.dir.path());
    let r = run_bounded(cmd, TIMEOUT);
    let tty = r.stdout_str();
    eprintln!("{}: on a terminal: {tty:?}", be.name());
    assert_eq!(r.code, Some(0), "{tty}\n{}", r.stderr);
    assert!(tty.contains("\rblkqos: ["), "{tty:?}");
    assert!(
        tty.contains("\x1b[K"),
        "the line is rewritten in place: {tty:?}"
    );
    assert!(
        !tty.contains("IOPS\n") && !tty.contains("IOPS\r\n"),
        "no newline after a status line: {tty:?}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("JSON report");
    assert_eq!(report["jobs"].as_array().map(Vec::len), Some(2));
    // --eta=never on a terminal: nothing
    let mut cmd_line = vec![BIN.to_string()];
    cmd_line.extend(args(
        be,
        &s,
        "1100ms",
        &[
            "--eta=never",
            "--output-format=json",
            &format!("--output={}", out.display()),
        ],
    ));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &cmd_line.join(" "), "/dev/null"])
        .current_dir(s.dir.path());
    let r = run_bounded(cmd, TIMEOUT);
    assert_eq!(r.code, Some(0));
    assert!(
        !r.stdout_str().contains("blkqos: ["),
        "{:?}",
        r.stdout_str()
    );
}

on_real_backends!(
    eta_always_shows_rates_per_job,
    quiet_off_a_terminal,
    terminal_gets_a_line_rewritten_in_place
);
