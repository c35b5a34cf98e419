//! Every example and lab scenario runs with `--check-invariants`: each
//! controller's invariants (blk-throttle's queue counts, iocost's weight
//! sums and active list, paced's armed queues) are checked after every pass
//! of the driver loop, and time never runs backwards for a controller.

use crate::common;

use common::*;
use std::path::PathBuf;

fn scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut v = Vec::new();
    for dir in ["examples", "lab/matrix"] {
        for e in walk(&root.join(dir)) {
            if e.extension().is_some_and(|x| x == "toml") && !e.ends_with("matrix.toml") {
                v.push(e);
            }
        }
    }
    v.sort();
    v
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn every_scenario_keeps_the_controllers_invariants() {
    let all = scenarios();
    assert!(all.len() >= 25, "{all:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for s in &all {
        let text = std::fs::read_to_string(s).unwrap();
        if !text.contains("[[fio]]") || text.contains("backend = \"real\"") {
            continue;
        }
        let r = blkqos(
            &[
                "run".to_string(),
                s.display().to_string(),
                "--check-invariants".into(),
                "--output-format=terse".into(),
            ],
            Some(dir.path()),
        );
        assert_eq!(r.code, Some(0), "{}: {}", s.display(), r.stderr);
        ran += 1;
    }
    assert!(ran >= 25, "only {ran} scenarios ran");
}

/// `--check-invariants` takes no value, 1 or 0; anything else is refused.
#[test]
fn check_invariants_value_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let run = |flag: &str| {
        blkqos(
            &[
                "run",
                "--name=x",
                "--rw=read",
                "--size=1m",
                flag,
                "--output-format=terse",
            ]
            .map(String::from),
            Some(dir.path()),
        )
    };
    for ok in [
        "--check-invariants",
        "--check-invariants=1",
        "--check-invariants=0",
    ] {
        assert_eq!(run(ok).code, Some(0), "{ok}");
    }
    let r = run("--check-invariants=yes");
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("--check-invariants=yes"), "{}", r.stderr);
}

/// The README's `blkqos lab compare --summary` reads every recorded kernel
/// under lab/fixtures (and nothing else there) and passes.
#[test]
fn lab_compare_summary_passes() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let r = blkqos(
        &["lab", "compare", "--summary"].map(String::from),
        Some(&root),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}
