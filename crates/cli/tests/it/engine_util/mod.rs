//! Helpers of the real-engine end-to-end tests (`engine_*.rs`): the
//! binary, backends, scratch files on the temp dir's filesystem, loop
//! devices, and the outputs (fio JSON, io.stat, diskstats snapshots).
//!
//! A test skips (printing why) only when the kernel refuses io_uring or
//! O_DIRECT, or for the loop-device cases when it has no loop devices.

#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_blkqos");

/// A run that must finish within this.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Tests that saturate the target (or measure rates) take this, so they do
/// not run at the same time as each other within one test binary.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where the jobs run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Be {
    /// The simulator (an `ssd` model standing in for the file).
    Sim,
    Uring,
    Threads,
}

impl Be {
    pub fn name(self) -> &'static str {
        match self {
            Be::Sim => "sim",
            Be::Uring => "io_uring",
            Be::Threads => "threads",
        }
    }
    pub fn is_real(self) -> bool {
        self != Be::Sim
    }
    /// The command-line flag selecting it.
    pub fn flag(self) -> String {
        format!("--backend={}", self.name())
    }
    /// A scenario's `[device]` table for a target at `path` with `devid`.
    pub fn device_toml(self, path: &Path, devid: &str) -> String {
        match self {
            Be::Sim => format!("[device]\nmodel = \"ssd\"\nname = \"sim\"\ndevid = \"{devid}\"\n"),
            _ => format!(
                "[device]\npath = \"{}\"\nbackend = \"{}\"\n",
                path.display(),
                self.name()
            ),
        }
    }
}

/// A scratch directory on the temp dir's filesystem (a real disk here),
/// and the `MAJ:MIN` io.max lines need for files in it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
    pub devid: String,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        let devid = devid_of(dir.path());
        Scratch { dir, devid }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `stat -c '%Hd:%Ld' PATH`: the device of the filesystem holding `path`.
pub fn devid_of(path: &Path) -> String {
    let dev = std::fs::metadata(path).expect("stat").dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    format!("{major}:{minor}")
}

/// The outcome of one process.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub wall: Duration,
}

impl Ran {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    /// Why the kernel refused the run, if that is why it failed: the only
    /// reasons these tests skip.
    pub fn kernel_refusal(&self) -> Option<String> {
        if self.code == Some(0) {
            return None;
        }
        ["io_uring is unavailable", "O_DIRECT is not supported"]
            .iter()
            .find(|m| self.stderr.contains(*m))
            .map(|_| self.stderr.trim().to_string())
    }
    /// Assert success (no panic, exit 0).
    #[track_caller]
    pub fn ok(&self) -> &Self {
        assert!(
            !self.stderr.contains("panicked"),
            "blkqos panicked:\n{}",
            self.stderr
        );
        assert_eq!(
            self.code,
            Some(0),
            "failed\nstderr:\n{}\nstdout:\n{}",
            self.stderr,
            self.stdout_str()
        );
        self
    }
    /// Every JSON document on stdout.
    pub fn json_docs(&self) -> Vec<Value> {
        let text = self.stdout_str();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| {
                panic!(
                    "stdout is not JSON ({e}):\n{text}\nstderr:\n{}",
                    self.stderr
                )
            })
    }
}

/// Run `cmd` (stdout/stderr captured), killing it after `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Ran {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let (out, err) = drain(&mut child);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{cmd:?} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ran {
        code: status.code(),
        stdout: out.join().expect("stdout"),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr")).into_owned(),
        wall: t0.elapsed(),
    }
}

type Pipe = std::thread::JoinHandle<Vec<u8>>;

/// Read a child's stdout and stderr on threads.
pub fn drain(child: &mut std::process::Child) -> (Pipe, Pipe) {
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    (
        std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut out, &mut v).ok();
            v
        }),
        std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut err, &mut v).ok();
            v
        }),
    )
}

/// `blkqos ARGS` in `dir`.
pub fn blkqos<S: AsRef<std::ffi::OsStr>>(args: &[S], dir: &Path) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir).env_remove("RUST_BACKTRACE");
    run_bounded(cmd, TIMEOUT)
}

/// A number at a JSON pointer (fio writes some as strings).
#[track_caller]
pub fn num(v: &Value, pointer: &str) -> f64 {
    match v.pointer(pointer) {
        Some(Value::Number(n)) => n.as_f64().expect("finite"),
        Some(Value::String(s)) => s.parse().unwrap_or_else(|_| panic!("{pointer} = {s:?}")),
        o => panic!("{pointer}: {o:?}"),
    }
}

/// The job named `name` in a fio JSON document list.
#[track_caller]
pub fn job<'a>(docs: &'a [Value], name: &str) -> &'a Value {
    docs.iter()
        .flat_map(|d| d["jobs"].as_array().into_iter().flatten())
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job `{name}` in the JSON"))
}

/// `|got − want| ≤ pct % of want`.
pub fn within(got: f64, want: f64, pct: f64) -> bool {
    (got - want).abs() <= want.abs() * pct / 100.0
}

/// An `--io-stat` file: group → key → value (`rios`, `cost.usage`, ...).
pub fn parse_io_stat(text: &str) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    let mut group = String::new();
    for line in text.lines() {
        if let Some(g) = line.strip_prefix("# ") {
            group = g.trim_end_matches(" io.stat").to_string();
            out.entry(group.clone()).or_insert_with(BTreeMap::new);
            continue;
        }
        let e = out.entry(group.clone()).or_insert_with(BTreeMap::new);
        for kv in line.split_whitespace().skip(1) {
            if let Some((k, v)) = kv.split_once('=') {
                e.insert(k.to_string(), v.parse().unwrap_or(f64::NAN));
            }
        }
    }
    out
}

/// The last `--diskstats-dir` snapshot: its 17 counters and uptime (s).
pub fn last_diskstats(dir: &Path) -> ([u64; 17], f64) {
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("diskstats dir")
        .map(|e| e.expect("entry").path())
        .collect();
    snaps.sort();
    let last = snaps.last().expect("a snapshot");
    let line = std::fs::read_to_string(last.join("diskstats")).expect("diskstats");
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(3)
        .map(|x| x.parse().expect("counter"))
        .collect();
    let up: f64 = std::fs::read_to_string(last.join("uptime"))
        .expect("uptime")
        .split_whitespace()
        .next()
        .expect("uptime value")
        .parse()
        .expect("uptime number");
    let mut c = [0u64; 17];
    c[..f.len().min(17)].copy_from_slice(&f[..f.len().min(17)]);
    (c, up)
}

/// Accounting identities of a run with groups `groups`: the groups' io.stat
/// add up to the device's (root io.stat and the last diskstats snapshot),
/// iocost's `cost.usage` adds up too, and the busy time (diskstats field 10)
/// is at most the elapsed time.
#[track_caller]
pub fn check_accounting(what: &str, io_stat: &Path, diskstats_dir: &Path, groups: &[&str]) {
    let st = parse_io_stat(&std::fs::read_to_string(io_stat).expect("io.stat file"));
    let root = &st["/"];
    for key in ["rios", "wios", "rbytes", "wbytes", "cost.usage"] {
        let Some(&dev) = root.get(key) else {
            continue;
        };
        let sum: f64 = groups
            .iter()
            .map(|g| st[*g].get(key).copied().unwrap_or(0.0))
            .sum();
        assert_eq!(
            sum, dev,
            "{what}: io.stat {key}: groups add up to {sum}, device {dev}\n{st:?}"
        );
    }
    let (d, uptime) = last_diskstats(diskstats_dir);
    assert_eq!(
        d[0] as f64, root["rios"],
        "{what}: diskstats reads vs io.stat"
    );
    assert_eq!(
        d[4] as f64, root["wios"],
        "{what}: diskstats writes vs io.stat"
    );
    assert_eq!(
        (d[2] * 512) as f64,
        root["rbytes"],
        "{what}: diskstats read sectors vs io.stat"
    );
    // io_ticks (ms) vs the elapsed time (uptime of the snapshot, 10 ms units)
    let elapsed_ms = uptime * 1000.0 + 10.0;
    assert!(
        (d[9] as f64) <= elapsed_ms,
        "{what}: io_ticks {} ms > elapsed {elapsed_ms} ms",
        d[9]
    );
    eprintln!(
        "{what}: accounting: {} reads, {} writes in io.stat = diskstats; io_ticks {} ms <= elapsed {:.0} ms",
        root["rios"], root["wios"], d[9], uptime * 1000.0
    );
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A loop device over a backing file, detached on drop.
pub struct LoopDev {
    pub dev: PathBuf,
}

impl LoopDev {
    /// A 1 MiB loop device whose backing file (in `s`) is then cut to
    /// 256 KiB: the device keeps its size, reads past 256 KiB fail with EIO.
    /// `None` (reason printed) without root or loop devices.
    pub fn cut_short(s: &Scratch) -> Option<LoopDev> {
        let backing = s.path("backing.img");
        std::fs::write(&backing, vec![0u8; 1 << 20]).unwrap();
        let lo = LoopDev::attach(&backing)?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&backing)
            .unwrap()
            .set_len(256 << 10)
            .unwrap();
        Some(lo)
    }

    /// Attach `backing`, or `None` with the reason printed.
    pub fn attach(backing: &Path) -> Option<LoopDev> {
        if !is_root() {
            blkqos_testkit::skip(blkqos_testkit::Reason::Root, "loop devices need root");
            return None;
        }
        match Command::new("losetup")
            .args(["--find", "--show"])
            .arg(backing)
            .output()
        {
            Ok(o) if o.status.success() => Some(LoopDev {
                dev: PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
            }),
            Ok(o) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!(
                        "no loop device: losetup: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                );
                None
            }
            Err(e) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!("no loop device: cannot run losetup: {e}"),
                );
                None
            }
        }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A filesystem mounted on a fresh directory, unmounted on drop (lazily if
/// still busy).
pub struct Mounted {
    pub dir: tempfile::TempDir,
}

impl Mounted {
    pub fn mount(dev: &Path) -> Option<Mounted> {
        Self::mount_with(&[dev.as_os_str()])
    }

    /// A tmpfs of `size` (mount's syntax, e.g. `1m`).
    pub fn tmpfs(size: &str) -> Option<Mounted> {
        if !is_root() {
            blkqos_testkit::skip(blkqos_testkit::Reason::Root, "mounting a tmpfs needs root");
            return None;
        }
        let opts = format!("size={size}");
        Self::mount_with(&[
            "-t".as_ref(),
            "tmpfs".as_ref(),
            "-o".as_ref(),
            opts.as_ref(),
            "tmpfs".as_ref(),
        ])
    }

    fn mount_with(args: &[&std::ffi::OsStr]) -> Option<Mounted> {
        let dir = tempfile::tempdir().expect("tempdir");
        let dev = args.last().copied().unwrap_or_default().to_owned();
        let dev = Path::new(&dev);
        let o = Command::new("mount").args(args).arg(dir.path()).output();
        match o {
            Ok(o) if o.status.success() => Some(Mounted { dir }),
            Ok(o) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!(
                        "cannot mount {}: {}",
                        dev.display(),
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                );
                None
            }
            Err(e) => {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::Tool,
                    format!("cannot run mount: {e}"),
                );
                None
            }
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..20 {
            if matches!(Command::new("umount").arg(self.dir.path()).status(), Ok(s) if s.success())
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Run `body` on the simulator (by default) and on both real backends
/// (tier real: `#[ignore]`d).
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod sim {
            $(#[test] fn $name() { super::$name($crate::engine_util::Be::Sim) })*
        }
        mod io_uring {
            $(#[test] #[ignore = "tier real"] fn $name() { super::$name($crate::engine_util::Be::Uring) })*
        }
        mod threads {
            $(#[test] #[ignore = "tier real"] fn $name() { super::$name($crate::engine_util::Be::Threads) })*
        }
    };
}

/// Run `body` on both real backends (tier real: `#[ignore]`d).
#[macro_export]
macro_rules! on_real_backends {
    ($($name:ident),* $(,)?) => {
        mod io_uring {
            $(#[test] #[ignore = "tier real"] fn $name() { super::$name($crate::engine_util::Be::Uring) })*
        }
        mod threads {
            $(#[test] #[ignore = "tier real"] fn $name() { super::$name($crate::engine_util::Be::Threads) })*
        }
    };
}

/// Does `pid` catch both SIGINT and SIGTERM (`SigCgt` in
/// `/proc/PID/status`)? Then its handler is installed and a signal can no
/// longer kill it.
pub fn catches_int_and_term(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|m| m & (1 << (2 - 1)) != 0 && m & (1 << (15 - 1)) != 0)
}

/// A process that was sent signals, and when it ended.
#[derive(Debug)]
pub struct Signalled {
    pub ran: Ran,
    /// From the first signal to the exit.
    pub after_first: Duration,
    /// From the last signal sent to the exit.
    pub after_last: Duration,
    /// Signals sent (fewer than asked for when it exited before the rest).
    pub sent: usize,
}

/// `kill -SIG pid`.
pub fn send(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// `blkqos ARGS` in `dir`: once it catches SIGINT and SIGTERM, wait
/// `settle`, then send `signals` (`INT`, `TERM`) `gap` apart. `gap` and
/// `settle` only make it likely the signals land where the test means
/// them to (in the run, during a drain); nothing is asserted on them.
/// `limit` is a hang guard: still running then, it is killed (SIGKILL)
/// and the test fails.
pub fn signal_blkqos(
    args: &[String],
    dir: &Path,
    settle: Duration,
    signals: &[&str],
    gap: Duration,
    limit: Duration,
) -> Signalled {
    assert!(!signals.is_empty(), "no signal to send");
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn blkqos");
    let (out, err) = drain(&mut child);
    let pid = child.id();
    let armed = loop {
        if catches_int_and_term(pid) {
            break true;
        }
        if child.try_wait().expect("wait").is_some() || t0.elapsed() > limit {
            break false;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut sent = Vec::new();
    // (exit status, when it was seen)
    let mut exited = None;
    if armed {
        std::thread::sleep(settle);
        for (i, sig) in signals.iter().enumerate() {
            if i > 0 {
                exited = exited.or_else(|| exit_within(&mut child, gap));
            }
            if exited.is_some() {
                // reaped: its pid is no longer its own
                break;
            }
            send(sig, pid);
            sent.push(Instant::now());
        }
    }
    let (status, end) = match exited {
        Some(e) => e,
        None => exit_within(&mut child, limit.saturating_sub(t0.elapsed())).unwrap_or_else(|| {
            child.kill().ok();
            child.wait().ok();
            panic!("{args:?} still running after {limit:?}: killed");
        }),
    };
    let ran = Ran {
        code: status.code(),
        stdout: out.join().expect("stdout"),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr")).into_owned(),
        wall: t0.elapsed(),
    };
    assert!(
        armed,
        "blkqos ended before catching SIGINT/SIGTERM: {:?}\n{}",
        ran.code, ran.stderr
    );
    let last = *sent.last().expect("a signal");
    Signalled {
        after_first: end.saturating_duration_since(sent[0]),
        after_last: end.saturating_duration_since(last),
        sent: sent.len(),
        ran,
    }
}

/// The child's exit status and when it was seen, if it exits within `d`.
fn exit_within(
    child: &mut std::process::Child,
    d: Duration,
) -> Option<(std::process::ExitStatus, Instant)> {
    let until = Instant::now() + d;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return Some((s, Instant::now()));
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// FNV-1a, 64-bit.
pub fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
