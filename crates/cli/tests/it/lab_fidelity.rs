//! blkqos against real kernels: every job of the lab matrix
//! (`lab/matrix/`), simulated under each recorded kernel's profile, against
//! that kernel's recorded runs (`lab/fixtures/`). The misses must be
//! exactly those `lab/expected.toml` lists, each with its reason: a profile
//! that drifts, or a fix that makes a listed miss match, fails here.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_blkqos");

fn lab() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lab")
}

fn compare(extra: &[&str]) -> (Option<i32>, String, String) {
    let lab = lab();
    let out = Command::new(BIN)
        .arg("lab")
        .arg("compare")
        .arg(format!("--lab={}", lab.display()))
        .arg("--seeds=5")
        .args(extra)
        .output()
        .expect("run blkqos");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn kernel_matches_its_recording(kernel: &str) {
    let expect = lab().join("expected.toml");
    let (code, stdout, stderr) = compare(&[
        &format!("--kernel={kernel}"),
        &format!("--expect={}", expect.display()),
    ]);
    let rows = stdout
        .lines()
        .filter(|l| l.contains(" ok") || l.contains("MISS"))
        .count();
    assert!(
        rows >= 100,
        "{kernel}: only {rows} compared metrics\n{stdout}"
    );
    assert_eq!(code, Some(0), "{kernel}:\n{stderr}\n{stdout}");
}

#[test]
fn linux_6_1_matches_its_recording() {
    kernel_matches_its_recording("6.1");
}

#[test]
fn linux_6_12_matches_its_recording() {
    kernel_matches_its_recording("6.12");
}

#[test]
fn linux_7_2_matches_its_recording() {
    kernel_matches_its_recording("7.2");
}

/// The comparison bites: seed 000's job under THROTTLING_LOW's 20 ms slice
/// (what the `linux-6.1` profile used to be) is not the 6.1 that
/// distributions ship.
#[test]
fn a_wrong_profile_misses() {
    let (code, stdout, _) = compare(&[
        "--kernel=6.1",
        "--job=t01-riops-seed000",
        "--throttle=linux-6.1-low",
    ]);
    assert_eq!(code, Some(0), "no --expect: the table only");
    let misses: Vec<&str> = stdout.lines().filter(|l| l.contains("MISS")).collect();
    assert!(
        misses.iter().any(|l| l.contains("r.read.p99")),
        "the 20 ms slice's 12 ms tail is not 6.1's 60 ms one:\n{stdout}"
    );
}

/// `blkqos lab compare --help` is help, not an unknown option, and names
/// every option the parser takes.
#[test]
fn lab_compare_help_names_every_option() {
    let r = crate::common::blkqos(&["lab", "compare", "--help"], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = r.stdout_str();
    for o in [
        "--lab=",
        "--kernel=",
        "--job=",
        "--seeds=",
        "--expect=",
        "--markdown",
        "--summary",
        "--values",
        "--real-engine",
        "--traces",
        "--report=",
        "--throttle=",
        "--iocost=",
        "--hz=",
        "reduce-trace",
    ] {
        assert!(out.contains(o), "{o} missing from:\n{out}");
    }
}

/// `--values`: under each metric, the recorded runs' values ascending and
/// the seeds' in seed order. Seed 001's layout on 6.12 (c07): ten recorded
/// runs whose cgB IOPS split into a low mode (51-65) and a high one, as
/// fio's own reports have them, and the five seeds.
#[test]
fn values_show_each_run_and_each_seed() {
    let (code, stdout, stderr) = compare(&["--kernel=6.12", "--job=c07", "--values"]);
    assert_eq!(code, Some(0), "{stderr}");
    let mut lines = stdout.lines().skip_while(|l| !l.contains("cgB.mixed.iops"));
    assert!(lines.next().is_some(), "{stdout}");
    let numbers = |l: Option<&str>, head: &str| -> Vec<f64> {
        let l = l.unwrap_or_default().trim();
        let rest = l
            .strip_prefix(head)
            .unwrap_or_else(|| panic!("{head} in {l:?}"));
        rest.split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let runs = numbers(lines.next(), "runs:");
    let seeds = numbers(lines.next(), "seeds:");
    assert_eq!(seeds.len(), 5, "{stdout}");
    // the fixtures' own figures, ascending
    let dir = lab().join("fixtures/6.12.117+deb13-amd64");
    let mut want: Vec<f64> = (1..=10)
        .map(|r| {
            let f = dir.join(format!("run{r}/c07-seed001-32k/fio1.json"));
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            v["jobs"][0]["mixed"]["iops"].as_f64().unwrap()
        })
        .collect();
    want.sort_by(f64::total_cmp);
    assert_eq!(runs.len(), 10, "{stdout}");
    for (got, w) in runs.iter().zip(&want) {
        assert!((got - w).abs() < 0.06, "runs {runs:?} against {want:?}");
    }
    assert!(runs.iter().filter(|&&v| v < 66.0).count() >= 5, "{runs:?}");
    // without the flag: no such lines
    let (_, plain, _) = compare(&["--kernel=6.12", "--job=c07"]);
    assert!(!plain.contains("    runs:"), "{plain}");
}

/// The bytes a recorded run's device wrote (`diskstats.end` less
/// `.start`, the null_blk's line) and those its groups' `io.stat` holds.
fn device_and_group_writes(run: &std::path::Path) -> (u64, u64) {
    let sectors = |f: &str| -> u64 {
        let text = std::fs::read_to_string(run.join(f)).unwrap();
        let line = text
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|d| d.starts_with("nullb"))
            })
            .unwrap_or_else(|| panic!("{}: no null_blk line in {f}", run.display()));
        line.split_whitespace().nth(9).unwrap().parse().unwrap()
    };
    let device = (sectors("diskstats.end") - sectors("diskstats.start")) * 512;
    let io_stat = std::fs::read_to_string(run.join("io.stat")).unwrap();
    let groups = io_stat
        .split_whitespace()
        .filter_map(|kv| kv.strip_prefix("wbytes="))
        .map(|v| v.parse::<u64>().unwrap())
        .sum();
    (device, groups)
}

/// The file-system jobs' recordings hold only the jobs' own writes: the
/// guest's ext4 is made with `-E lazy_itable_init=0` (lab/guest_run.py),
/// so no `ext4lazyinit` thread zeroes inode tables in the root cgroup
/// during a run. Recorded with lazy init (before 2026-11-30), every run of
/// w01 and w02 had 13-67 MB written beside the groups' io.stat.
#[test]
fn file_system_runs_write_nothing_beside_their_groups() {
    let mut checked = 0;
    for kernel in std::fs::read_dir(lab().join("fixtures")).unwrap().flatten() {
        for run in std::fs::read_dir(kernel.path()).unwrap().flatten() {
            for job in ["w01-seed003-writeback", "w02-memcg-limit"] {
                let dir = run.path().join(job);
                if !dir.join("io.stat").exists() {
                    continue;
                }
                let (device, groups) = device_and_group_writes(&dir);
                // ext4's journal commits: a few hundred KiB
                assert!(
                    device <= groups + (1 << 20),
                    "{}: the device wrote {device} bytes, the groups {groups}",
                    dir.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "{checked} runs checked");
}
