//! Helpers shared by the end-to-end tests of the `blkqos` binary.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_blkqos");

/// `SOURCE_DATE_EPOCH` for every run, so timestamps are reproducible.
pub const EPOCH: &str = "1700000000";

/// A run of the binary that must finish within this (a hang is a failure,
/// not a stuck test suite).
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The outcome of one `blkqos` run.
#[derive(Debug)]
pub struct Ran {
    /// Exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Ran {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    /// Assert the run succeeded.
    pub fn ok(&self) -> &Self {
        assert_no_panic(self);
        assert_eq!(
            self.code,
            Some(0),
            "blkqos failed\nstderr:\n{}\nstdout:\n{}",
            self.stderr,
            self.stdout_str()
        );
        self
    }
    /// The fio JSON documents on stdout (one per `[[fio]]` invocation).
    pub fn json_docs(&self) -> Vec<Value> {
        let text = self.stdout_str();
        let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{text}"));
        assert!(
            !docs.is_empty(),
            "no JSON on stdout; stderr:\n{}",
            self.stderr
        );
        docs
    }
    /// The single fio JSON document on stdout.
    pub fn json(&self) -> Value {
        let mut d = self.json_docs();
        assert_eq!(d.len(), 1, "expected one JSON document");
        d.remove(0)
    }
}

pub fn assert_no_panic(r: &Ran) {
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("RUST_BACKTRACE"),
        "blkqos panicked:\n{}",
        r.stderr
    );
    // 101 is Rust's exit status after a panic; a signal is a crash
    assert!(
        r.code.is_some() && r.code != Some(101),
        "blkqos crashed ({:?}):\n{}",
        r.code,
        r.stderr
    );
}

/// Run `blkqos ARGS` in `dir` (the current directory if `None`), with
/// `SOURCE_DATE_EPOCH` set, killing it after [`TIMEOUT`].
pub fn blkqos<S: AsRef<std::ffi::OsStr>>(args: &[S], dir: Option<&Path>) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    run_bounded(cmd, TIMEOUT)
}

/// Run a command, killing it if it is still running after `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Ran {
    let mut child = cmd.spawn().expect("spawn");
    // drain the pipes on threads so a chatty child never blocks
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{cmd:?} still running after {limit:?}: killed (hang?)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ran {
        code: status.code(),
        stdout: t_out.join().expect("stdout thread"),
        stderr: String::from_utf8_lossy(&t_err.join().expect("stderr thread")).into_owned(),
    }
}

/// `examples/<name>` of the repository.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Write `text` to `dir/name` and return the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p
}

/// A number at a JSON pointer (fio writes some numbers as strings).
pub fn num(v: &Value, pointer: &str) -> f64 {
    let x = v
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no `{pointer}` in JSON"));
    match x {
        Value::Number(n) => n.as_f64().expect("finite"),
        Value::String(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("`{pointer}` = {s:?} is not a number")),
        o => panic!("`{pointer}` = {o} is not a number"),
    }
}

/// `|got − want| ≤ pct % of want`.
pub fn within(got: f64, want: f64, pct: f64) -> bool {
    (got - want).abs() <= want.abs() * pct / 100.0
}

/// Assert `got` is within `pct` % of `want`.
#[track_caller]
pub fn assert_within(what: &str, got: f64, want: f64, pct: f64) {
    assert!(
        within(got, want, pct),
        "{what}: got {got}, want {want} ± {pct}% (off by {:+.3}%)",
        (got - want) / want * 100.0
    );
}

/// `key=N` on the io.stat line that follows `# <cgroup> io.stat` (the
/// `--io-stat` file's layout).
pub fn io_stat_key(text: &str, cgroup: &str, key: &str) -> f64 {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| *l == format!("# {cgroup} io.stat"))
        .unwrap_or_else(|| panic!("no {cgroup} in\n{text}"));
    let line = lines.next().expect("io.stat line");
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in `{line}`"))
        .parse()
        .unwrap_or_else(|e| panic!("{key} in `{line}`: {e}"))
}

/// A simulated run made in-process through the library, as `blkqos run`
/// makes it: fio's JSON documents (one per report), every cgroup's
/// `io.stat`, the writeback report (with a page cache) and the disk's 17
/// diskstats counters at the end of the run (what the last snapshot of
/// `--diskstats-dir` holds).
pub struct InProcess {
    pub docs: Vec<Value>,
    pub io_stat: String,
    pub pagecache: Option<Value>,
    pub diskstats: Vec<u64>,
}

impl InProcess {
    /// The one JSON document.
    pub fn json(&self) -> &Value {
        assert_eq!(self.docs.len(), 1, "expected one JSON document");
        &self.docs[0]
    }
}

/// `blkqos run ARGS` (without `run`; paths absolute or relative to a
/// scenario file) planned, simulated and reported in-process: no
/// subprocess, the controllers run in the test's own thread. The reports
/// must be JSON (`--output-format=json`).
pub fn run_in_process<S: AsRef<str>>(args: &[S]) -> InProcess {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    let exp = blkqos::plan_run(&args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
    let ran = blkqos::run_simulated(&exp).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
    let t0_ms = EPOCH.parse::<u64>().expect("epoch") * 1000;
    let mut docs = Vec::new();
    for report in blkqos::fio_reports(&exp, &ran, t0_ms) {
        for d in serde_json::Deserializer::from_str(&report).into_iter::<Value>() {
            docs.push(d.unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{report}")));
        }
    }
    assert!(!docs.is_empty(), "{args:?}: no JSON report");
    InProcess {
        docs,
        io_stat: blkqos::io_stat_text(&ran),
        pagecache: blkqos::pagecache_report_json(&ran)
            .map(|t| serde_json::from_str(&t).expect("the writeback report is JSON")),
        diskstats: ran.result.disk.diskstats_fields().to_vec(),
    }
}

/// The `--ktrace` of a `blkqos run` of scenario `text` (a temporary
/// directory holds both).
pub fn ktrace_of(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "s.toml", text);
    let r = blkqos(
        &["run", p.to_str().unwrap(), "--ktrace=k.txt"],
        Some(dir.path()),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    std::fs::read_to_string(dir.path().join("k.txt")).unwrap()
}

/// One request of a kernel-format trace (the kernel's or blkqos's
/// `--ktrace`): its last `block_rq_issue` and its `block_rq_complete`, in
/// s, paired by sector, its length in sectors and its issue's rwbs.
pub struct TracedRequest {
    pub issue_s: f64,
    pub complete_s: f64,
    pub sectors: u64,
    pub rwbs: String,
}

/// The requests of a kernel-format trace, in completion order.
pub fn traced_requests(text: &str) -> Vec<TracedRequest> {
    let mut issued = std::collections::HashMap::new();
    let mut out = Vec::new();
    for l in text.lines() {
        let (issue, head, tail) = if let Some((h, t)) = l.split_once(": block_rq_issue: ") {
            (true, h, t)
        } else if let Some((h, t)) = l.split_once(": block_rq_complete: ") {
            (false, h, t)
        } else {
            continue;
        };
        let Some(t) = head
            .split_whitespace()
            .last()
            .and_then(|w| w.parse::<f64>().ok())
        else {
            continue;
        };
        // `254,0 R 4096 () SECTOR + 8 ...` or `254,0 R () SECTOR + 8 ...`
        let words: Vec<&str> = tail.split_whitespace().collect();
        let Some(plus) = words.iter().position(|w| *w == "+").filter(|&p| p > 0) else {
            continue;
        };
        let sector = words[plus - 1].to_string();
        if issue {
            let sectors = words
                .get(plus + 1)
                .and_then(|w| w.parse().ok())
                .unwrap_or(0);
            let rwbs = words.get(1).copied().unwrap_or("").to_string();
            issued.insert(sector, (t, sectors, rwbs));
        } else if let Some((t0, sectors, rwbs)) = issued.remove(&sector) {
            out.push(TracedRequest {
                issue_s: t0,
                complete_s: t,
                sectors,
                rwbs,
            });
        }
    }
    out
}
