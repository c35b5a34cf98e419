//! Every command in the README's `sh` blocks, run as written from a clean
//! copy of the checkout (its tracked files, committed into a fresh git
//! repository), with the built `blkqos` first on PATH; each must exit 0,
//! and afterwards `git status` must be clean: every output the README's
//! commands write is either removed by them or listed in `.gitignore`.
//!
//! `cargo run --release -p blkqos --` runs as `blkqos` (the binary under
//! test); the example scripts get `BLKQOS` (their documented override) so
//! they do not build a second copy. Commands that cannot run here are
//! listed in [`NOT_RUN`] with the reason; an entry that matches no README
//! command fails the test, so the list cannot go stale.

use crate::common;

use common::{run_bounded, BIN, EPOCH};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// README commands this test does not run: (the command's start, why).
const NOT_RUN: &[(&str, &str)] = &[
    ("cargo xtask test", "the test runner that runs this test"),
    (
        "cargo xtask pgo",
        "two release builds (about 4 min); .ci/run makes it and checks its results with cargo xtask same",
    ),
    (
        "blkqos calibrate /dev/nvme1n1",
        "a real NVMe device (tier calibrate measures loop devices)",
    ),
    (
        "blkqos calibrate /dev/loop0",
        "destroys the data on a loop device (tier calibrate makes its own)",
    ),
    (
        "blkqos apply --sweep=sweep.json --device=8:16",
        "writes (or with --dry-run checks) this machine's live cgroup hierarchy and device 8:16 (tests/it/apply.rs on a test hierarchy; lab job a02 in real kernels)",
    ),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands of every ```` ```sh ```` block (fences may be indented),
/// with `\` continuations joined and comments dropped.
pub fn readme_commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut cur = String::new();
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = strip_comment(t);
        if code.is_empty() && cur.is_empty() {
            continue;
        }
        match code.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head.trim_end());
                cur.push(' ');
            }
            None => {
                cur.push_str(code);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    out
}

/// `line` without a `#` comment that starts outside quotes (at the start
/// or after whitespace, as sh reads it), trimmed.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev_space => return line[..i].trim_end(),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    line.trim_end()
}

/// Why `cmd` is not run, if it is in [`NOT_RUN`].
fn not_run(cmd: &str) -> Option<&'static str> {
    NOT_RUN
        .iter()
        .find(|(start, _)| cmd.starts_with(start))
        .map(|(_, why)| *why)
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git")
}

/// The checkout's tracked files (as they are in the work tree), copied
/// into `to` and committed there as one fresh repository.
fn clean_copy(to: &Path) -> bool {
    let listed = git(&repo(), &["ls-files", "-z"]);
    if !listed.status.success() {
        return false;
    }
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("utf-8 path");
        let (src, dst) = (repo().join(name), to.join(name));
        if !src.exists() {
            continue; // deleted in the work tree, not yet committed
        }
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "copy"],
    ] {
        let r = git(to, args);
        assert!(r.status.success(), "git {args:?}: {r:?}");
    }
    true
}

fn sh(cmd: &str, dir: &Path) -> common::Ran {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .env("BLKQOS", BIN)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_bounded(c, Duration::from_secs(600))
}

#[test]
#[ignore = "tier examples"]
fn every_readme_command_runs_as_written_and_leaves_the_tree_clean() {
    if Command::new("git").arg("--version").output().is_err() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Tool, "no `git`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if !clean_copy(dir.path()) {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Tool,
            "the checkout is not a git work tree (git ls-files failed)",
        );
        return;
    }
    let readme = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let commands = readme_commands(&readme);
    assert!(commands.len() > 20, "{commands:#?}");
    for (start, _) in NOT_RUN {
        assert!(
            commands.iter().any(|c| c.starts_with(start)),
            "NOT_RUN lists `{start}`, which the README no longer has"
        );
    }
    let mut ran = 0;
    for cmd in &commands {
        if let Some(why) = not_run(cmd) {
            eprintln!("not run: {cmd} ({why})");
            continue;
        }
        let as_run = match cmd.strip_prefix("cargo run --release -p blkqos -- ") {
            Some(rest) => format!("blkqos {rest}"),
            None => cmd.clone(),
        };
        assert!(
            as_run.starts_with("blkqos ") || as_run.starts_with("examples/"),
            "a README command this test does not know how to run: {cmd}"
        );
        let r = sh(&as_run, dir.path());
        assert_eq!(
            r.code,
            Some(0),
            "README command failed: {cmd}\nstderr:\n{}",
            r.stderr
        );
        ran += 1;
        let status = git(
            dir.path(),
            &["status", "--porcelain", "--untracked-files=all"],
        );
        let dirty = String::from_utf8_lossy(&status.stdout).into_owned();
        assert!(
            dirty.is_empty(),
            "after `{cmd}` the tree is not clean (list the output in .gitignore):\n{dirty}"
        );
    }
    eprintln!("ran {ran} README commands");
}

#[test]
fn readme_commands_are_extracted_with_continuations_and_without_comments() {
    let text = "intro\n```sh\n# a comment\nblkqos run a \\\n    --b='x # y'  # why\n\n```\n\
                ```toml\nnot = \"a command\"\n```\n   ```sh\n   blkqos devices\n   ```\n";
    assert_eq!(
        readme_commands(text),
        ["blkqos run a --b='x # y'", "blkqos devices"]
    );
}
