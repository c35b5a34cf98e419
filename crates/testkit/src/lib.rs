//! Skips that are counted, and failures where a skip is not allowed.
//!
//! A test that cannot run here (no fio, not root, no io_uring, ...) calls
//! [`skip`] with the [`Reason`] and returns. The skip is:
//!
//! - printed on stderr (`SKIP [no fio] tier_real::engine_truth::x: ...`);
//! - appended to the file named by `BLKQOS_SKIP_LOG`, when set: one line
//!   `reason<TAB>test<TAB>detail`, which `cargo xtask test` counts and
//!   totals at the end of a tier;
//! - a failure instead when `BLKQOS_REQUIRE_<REASON>=1` (e.g.
//!   `BLKQOS_REQUIRE_FIO=1`) or `BLKQOS_REQUIRE_ALL=1` is set: CI sets them
//!   where it installed what the tests need, so a skip there is a bug.
//!
//! Which of these a tier hit is the last line `cargo xtask test` prints.

use std::io::Write;

/// Why a test could not run here. Each has its `BLKQOS_REQUIRE_*` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// fio 3.x is not installed (or not the version the test compares with).
    Fio,
    /// The test needs root (loop devices, mounts, device nodes).
    Root,
    /// The kernel refuses io_uring, or O_DIRECT on the test's filesystem.
    IoUring,
    /// No Chromium to render the HTML report.
    Chromium,
    /// `../shared` (other projects' fixtures) is not beside the checkout.
    Shared,
    /// Another tool the test drives is missing or failed (jq, losetup,
    /// mkfs.ext4, script, mount).
    Tool,
    /// The host itself: too busy to measure a rate, no block device under
    /// `/`, no `/dev/full`.
    Host,
}

impl Reason {
    /// Every reason, in the order summaries print them.
    pub const ALL: [Reason; 7] = [
        Reason::Fio,
        Reason::Root,
        Reason::IoUring,
        Reason::Chromium,
        Reason::Shared,
        Reason::Tool,
        Reason::Host,
    ];

    /// The short name printed and logged (`no fio`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Reason::Fio => "no fio",
            Reason::Root => "no root",
            Reason::IoUring => "no io_uring",
            Reason::Chromium => "no chromium",
            Reason::Shared => "no ../shared",
            Reason::Tool => "no tool",
            Reason::Host => "host",
        }
    }

    /// The environment variable that turns this skip into a failure.
    pub fn require_var(self) -> &'static str {
        match self {
            Reason::Fio => "BLKQOS_REQUIRE_FIO",
            Reason::Root => "BLKQOS_REQUIRE_ROOT",
            Reason::IoUring => "BLKQOS_REQUIRE_IO_URING",
            Reason::Chromium => "BLKQOS_REQUIRE_CHROMIUM",
            Reason::Shared => "BLKQOS_REQUIRE_SHARED",
            Reason::Tool => "BLKQOS_REQUIRE_TOOLS",
            Reason::Host => "BLKQOS_REQUIRE_HOST",
        }
    }

    /// Parse a label back (for the summary).
    pub fn from_label(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.label() == s)
    }

    /// Whether this skip is refused here (`BLKQOS_REQUIRE_<REASON>=1` or
    /// `BLKQOS_REQUIRE_ALL=1`; `Shared` is never covered by `ALL`, since a
    /// clone alone has no `../shared` by design).
    pub fn required(self) -> bool {
        let set = |k: &str| std::env::var_os(k).is_some_and(|v| v == "1");
        set(self.require_var()) || (self != Reason::Shared && set("BLKQOS_REQUIRE_ALL"))
    }
}

/// The name of the running test (libtest names the test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed thread>")
        .to_string()
}

/// Record that the calling test skips for `reason` (see the module
/// documentation), or panic if that reason is required here.
#[track_caller]
pub fn skip(reason: Reason, detail: impl std::fmt::Display) {
    let test = test_name();
    let detail = detail.to_string().replace(['\n', '\t'], " ");
    if reason.required() {
        panic!(
            "{test} would skip ({}: {detail}) but {}=1 requires it to run",
            reason.label(),
            reason.require_var()
        );
    }
    eprintln!("SKIP [{}] {test}: {detail}", reason.label());
    if let Some(path) = std::env::var_os("BLKQOS_SKIP_LOG") {
        // one short write per line with O_APPEND: lines from tests and
        // binaries running at once do not interleave
        let line = format!("{}\t{test}\t{detail}\n", reason.label());
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// `fio --version` if a fio 3.x is on the PATH, else a skip with
/// [`Reason::Fio`] and `None`.
pub fn fio_or_skip() -> Option<String> {
    match std::process::Command::new("fio").arg("--version").output() {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if v.starts_with("fio-3.") {
                Some(v)
            } else {
                skip(Reason::Fio, format!("fio is {v}, not 3.x"));
                None
            }
        }
        _ => {
            skip(Reason::Fio, "fio is not installed (apt-get install fio)");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_variables_are_distinct() {
        let mut vars: Vec<_> = Reason::ALL.iter().map(|r| r.require_var()).collect();
        vars.sort();
        vars.dedup();
        assert_eq!(vars.len(), Reason::ALL.len());
        for r in Reason::ALL {
            assert_eq!(Reason::from_label(r.label()), Some(r));
        }
    }
}
