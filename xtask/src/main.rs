//! `cargo xtask test [TIER...]`: blkqos's test tiers, each run with cargo's
//! own test harness, then counted and timed in one closing line.
//!
//! - `fast` (the default; what `cargo test --workspace` runs): unit and
//!   property tests, in-process and end-to-end simulated runs, golden and
//!   determinism tests, the lab comparison against the recorded kernels, one
//!   small differential against real fio per area, bad input, the fuzzers at
//!   a small case count.
//! - `real`: the real engine and the fio differentials, on files, loop
//!   devices and tmpfs (`#[ignore]`d tests under a `tier_real` module).
//! - `calibrate`: calibrations of loop devices and refits of every recorded
//!   device (`tier_calibrate`).
//! - `examples`: fio's own example job files, run and compared
//!   (`tier_examples`).
//! - `fuzz`: the input fuzzers at 2,000 cases per target.
//! - `all`: every tier in turn.
//!
//! A tier is a filter over ignored tests: `cargo xtask test real` is
//! `cargo test --workspace --no-fail-fast -- --ignored tier_real::`, which
//! also works without this wrapper. What the wrapper adds is the count of
//! skips (see `blkqos-testkit`): each tier ends with one line, e.g.
//! `tier real: 212 passed, 0 failed, 4 skipped (3 no root, 1 no fio) in 611.2 s`.
//!
//! `cargo xtask instructions` counts the simulator's instructions per IO
//! (see `instructions.rs`): the guard on the hot path's cost.
//! `cargo xtask same --base=OLD` checks that two builds give the same
//! results byte for byte (see `same.rs`): the guard on a change that must
//! not change behaviour. `cargo xtask pgo` builds a profile-guided
//! release binary (see `pgo.rs`).

mod instructions;
mod pgo;
mod same;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// One tier: a name, what it covers, and the cargo test command it runs.
struct Tier {
    name: &'static str,
    covers: &'static str,
    /// Arguments after `cargo test`.
    args: &'static [&'static str],
    /// Extra environment.
    env: &'static [(&'static str, &'static str)],
}

const TIERS: &[Tier] = &[
    Tier {
        name: "fast",
        covers: "unit, property, simulated end-to-end, golden, determinism, lab, \
                 one fio differential per area, bad input, fuzzers at 48 cases",
        args: &["--workspace", "--no-fail-fast"],
        env: &[],
    },
    Tier {
        name: "real",
        covers: "the real engine (io_uring, threads) and fio differentials",
        args: &[
            "--workspace",
            "--no-fail-fast",
            "--",
            "--ignored",
            "tier_real::",
        ],
        env: &[],
    },
    Tier {
        name: "calibrate",
        covers: "calibrations of loop devices, refits of the recorded devices",
        args: &[
            "--workspace",
            "--no-fail-fast",
            "--",
            "--ignored",
            "tier_calibrate::",
        ],
        env: &[],
    },
    Tier {
        name: "examples",
        covers: "fio's example job files, run and compared with fio",
        args: &[
            "--workspace",
            "--no-fail-fast",
            "--",
            "--ignored",
            "tier_examples::",
        ],
        env: &[],
    },
    Tier {
        name: "fuzz",
        covers: "the input fuzzers at 2,000 cases per target",
        args: &[
            "-p",
            "blkqos-experiment",
            "--lib",
            "--no-fail-fast",
            "fuzz_tests",
        ],
        env: &[("BLKQOS_FUZZ_CASES", "2000")],
    },
];

/// What libtest's `test result:` lines add up to.
#[derive(Default, Debug, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    /// Add one `test result: ok. 3 passed; 0 failed; 1 ignored; ...` line.
    fn add_line(&mut self, line: &str) -> bool {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return false;
        };
        let field = |key: &str| -> u64 {
            rest.split(';')
                .filter_map(|part| {
                    let part = part.trim().trim_start_matches("ok.").trim();
                    let part = part.trim_start_matches("FAILED.").trim();
                    let (n, k) = part.split_once(' ')?;
                    (k == key).then(|| n.parse().ok()).flatten()
                })
                .next()
                .unwrap_or(0)
        };
        self.passed += field("passed");
        self.failed += field("failed");
        self.ignored += field("ignored");
        true
    }
}

/// Skips recorded in the log: distinct tests per reason.
fn read_skips(log: &Path) -> BTreeMap<String, Vec<String>> {
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    for line in text.lines() {
        let mut f = line.splitn(3, '\t');
        let (Some(reason), Some(test)) = (f.next(), f.next()) else {
            continue;
        };
        let tests = by_reason.entry(reason.to_string()).or_default();
        if !tests.iter().any(|t| t == test) {
            tests.push(test.to_string());
        }
    }
    by_reason
}

/// The closing line of a tier.
fn summary(tier: &str, c: &Counts, skips: &BTreeMap<String, Vec<String>>, secs: f64) -> String {
    let skipped: usize = skips.values().map(Vec::len).sum();
    let reasons: Vec<String> = skips
        .iter()
        .map(|(r, t)| format!("{} {r}", t.len()))
        .collect();
    let reasons = if reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", reasons.join(", "))
    };
    let not_run = if tier == "fast" {
        format!(", {} in the slow tiers", c.ignored)
    } else {
        String::new()
    };
    format!(
        "tier {tier}: {} passed, {} failed, {skipped} skipped{reasons}{not_run} in {secs:.1} s",
        c.passed.saturating_sub(skipped as u64),
        c.failed
    )
}

/// Run one tier, streaming cargo's output; returns (success, closing line).
fn run_tier(tier: &Tier, target: &Path, extra: &[String]) -> (bool, String) {
    let log = target.join(format!("xtask/skips-{}.log", tier.name));
    std::fs::create_dir_all(log.parent().expect("log dir")).expect("create target/xtask");
    let _ = std::fs::remove_file(&log);
    eprintln!("== tier {}: {}", tier.name, tier.covers);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("test").args(tier.args).args(extra);
    cmd.env("BLKQOS_SKIP_LOG", &log).stdout(Stdio::piped());
    for (k, v) in tier.env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (false, format!("tier {}: cannot run cargo: {e}", tier.name)),
    };
    let mut counts = Counts::default();
    let out = child.stdout.take().expect("piped stdout");
    let stdout = std::io::stdout();
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        counts.add_line(&line);
        let mut o = stdout.lock();
        let _ = writeln!(o, "{line}");
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    let skips = read_skips(&log);
    for (reason, tests) in &skips {
        for t in tests {
            eprintln!("skipped [{reason}] {t}");
        }
    }
    let mut line = summary(tier.name, &counts, &skips, start.elapsed().as_secs_f64());
    let ran_none = ran_nothing(&counts, extra);
    if ran_none {
        line += " — FAILED: it ran no test (its crate or filter matches none)";
    }
    (ok && counts.failed == 0 && !ran_none, line)
}

/// A tier that ran no test at all fails: its crate or filter went stale
/// (a test filter the caller added may match none).
fn ran_nothing(c: &Counts, extra: &[String]) -> bool {
    c.passed + c.failed == 0 && extra.is_empty()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

fn usage() -> String {
    let mut s = String::from(
        "usage: cargo xtask test [TIER...] [-- ARGS for cargo test]\n\ntiers (default: fast):\n",
    );
    for t in TIERS {
        s.push_str(&format!("  {:<10} {}\n", t.name, t.covers));
    }
    s.push_str("  all        every tier in turn\n\n");
    s.push_str(instructions::USAGE);
    s.push_str(same::USAGE);
    s.push_str(pgo::USAGE);
    s
}

/// Run a subcommand other than `test` on the workspace: its error on
/// stderr and a failing exit status.
fn subcommand(run: fn(&[String], &Path) -> Result<(), String>, args: &[String]) -> ExitCode {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match run(args, &ws) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ours, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (&args[..], Vec::new()),
    };
    match ours.first().map(String::as_str) {
        Some("test") => {}
        Some("instructions") => return subcommand(instructions::main, &ours[1..]),
        Some("same") => return subcommand(same::main, &ours[1..]),
        Some("pgo") => return subcommand(pgo::main, &ours[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        _ => {
            eprint!("{}", usage());
            return ExitCode::from(2);
        }
    }
    let mut chosen: Vec<&Tier> = Vec::new();
    for name in &ours[1..] {
        if name == "all" {
            chosen.extend(TIERS.iter());
            continue;
        }
        match TIERS.iter().find(|t| t.name == name) {
            Some(t) => chosen.push(t),
            None => {
                eprint!("cargo xtask test: no tier `{name}`\n\n{}", usage());
                return ExitCode::from(2);
            }
        }
    }
    if chosen.is_empty() {
        chosen.push(&TIERS[0]);
    }
    let target = target_dir();
    let mut lines = Vec::new();
    let mut ok = true;
    for tier in chosen {
        let (tier_ok, line) = run_tier(tier, &target, &extra);
        eprintln!("{line}");
        ok &= tier_ok;
        lines.push(line);
    }
    if lines.len() > 1 {
        eprintln!("== summary");
        for l in &lines {
            eprintln!("{l}");
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tier whose crate or filter matches no test fails, unless the
    /// caller's own filter is what left it empty.
    #[test]
    fn a_tier_that_runs_nothing_fails() {
        let none = Counts::default();
        assert!(ran_nothing(&none, &[]));
        assert!(!ran_nothing(&none, &["some_filter".to_string()]));
        let one = Counts {
            passed: 1,
            ..Counts::default()
        };
        assert!(!ran_nothing(&one, &[]));
    }

    /// Every tier names a crate of the workspace (`-p NAME`).
    #[test]
    fn every_tier_names_a_workspace_crate() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut names = Vec::new();
        for e in std::fs::read_dir(root.join("crates")).unwrap() {
            let toml = std::fs::read_to_string(e.unwrap().path().join("Cargo.toml")).unwrap();
            let name = toml
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .map(|n| n.trim_end_matches('"').to_string());
            names.extend(name);
        }
        for t in TIERS {
            if let Some(i) = t.args.iter().position(|a| *a == "-p") {
                let p = t.args[i + 1];
                assert!(
                    names.iter().any(|n| n == p),
                    "tier {}: no crate {p}",
                    t.name
                );
            }
        }
    }

    /// Every `.rs` file under `dir`.
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// A test `#[ignore]`d for a tier lives in that tier's module, so the
    /// tier's filter (`tier_NAME::`) runs it; and no test is ignored for
    /// another reason, where no tier would ever run it.
    #[test]
    fn every_ignored_test_is_in_its_tiers_module() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        rust_files(&root.join("crates"), &mut files);
        let mut seen = 0;
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            for (n, line) in text.lines().enumerate() {
                // attribute lines, and the attributes a macro writes
                let attr_line =
                    line.trim_start().starts_with("#[ignore") || line.contains("#[test] #[ignore");
                let Some(at) = line.find("#[ignore").filter(|_| attr_line) else {
                    continue;
                };
                let attr = &line[at..];
                let tier = attr
                    .strip_prefix("#[ignore = \"tier ")
                    .and_then(|r| r.split('"').next());
                let Some(tier) = tier else {
                    panic!("{rel}:{}: `{attr}`: an ignored test must name its tier (#[ignore = \"tier NAME\"])", n + 1);
                };
                assert!(
                    TIERS.iter().any(|t| t.name == tier && t.name != "fast"),
                    "{rel}:{}: no tier `{tier}`",
                    n + 1
                );
                // the macros that generate real-backend tests are only used
                // under tier_real (checked by their users' paths below)
                let is_macro = rel.ends_with("engine_util/mod.rs");
                assert!(
                    is_macro || rel.contains(&format!("/tier_{tier}/")),
                    "{rel}:{}: ignored for tier {tier} but not under a tier_{tier}/ module",
                    n + 1
                );
                seen += 1;
            }
            if !rel.contains("/tier_real/") && !rel.ends_with("engine_util/mod.rs") {
                for m in ["on_every_backend!(", "on_real_backends!("] {
                    assert!(
                        !text.lines().any(|l| l.starts_with(m)),
                        "{rel}: {m} generates tier-real tests outside tier_real/"
                    );
                }
            }
        }
        assert!(seen > 50, "only {seen} tier attributes found: wrong root?");
    }

    #[test]
    fn result_lines_add_up() {
        let mut c = Counts::default();
        assert!(c.add_line(
            "test result: ok. 12 passed; 0 failed; 3 ignored; 0 measured; 5 filtered out; finished in 0.20s"
        ));
        assert!(c.add_line(
            "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s"
        ));
        assert!(!c.add_line("running 3 tests"));
        assert_eq!(
            c,
            Counts {
                passed: 13,
                failed: 2,
                ignored: 3
            }
        );
    }

    #[test]
    fn skips_count_distinct_tests_per_reason() {
        let dir = std::env::temp_dir().join(format!("xtask-skips-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        std::fs::write(
            &log,
            "no fio\ta::x\tfio missing\nno fio\ta::x\tagain\nno root\tb::y\tloop\nno fio\tc::z\t-\n",
        )
        .unwrap();
        let s = read_skips(&log);
        assert_eq!(s["no fio"], vec!["a::x", "c::z"]);
        assert_eq!(s["no root"], vec!["b::y"]);
        let c = Counts {
            passed: 10,
            failed: 0,
            ignored: 4,
        };
        assert_eq!(
            summary("fast", &c, &s, 1.24),
            "tier fast: 7 passed, 0 failed, 3 skipped (2 no fio, 1 no root), 4 in the slow tiers in 1.2 s"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
