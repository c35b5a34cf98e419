//! Differential test against the installed fio 3.33 over fio's own example
//! job files (`shared/fixtures/fio-examples/`).
//!
//! For each file, `fio --parse-only FILE` (run in an empty directory) decides:
//! * fio rejects it → blkqos must reject it too;
//! * fio accepts it → blkqos either rejects it as *unsupported* (an option
//!   or engine fio knows but blkqos does not implement, named in the error),
//!   or parses it, and then
//!   - blkqos's `showcmd` must equal `fio --showcmd FILE` byte for byte
//!     (job names, canonical option names, verbatim values, fio's order);
//!   - the jobs must round-trip: `to_fio_args` → `parse_fio_args` gives the
//!     same jobs, and fio accepts that command line too.

use std::path::{Path, PathBuf};
use std::process::Command;

use blkqos_fio::{parse_fio_args, parse_job_file, showcmd, to_fio_args};
use blkqos_workload::spec::{JobSpec, Origin};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/fio-examples")
}

/// These tests need other projects' data (`../shared/fixtures`, beside
/// the checkout): an optional differential tier. Without it they skip,
/// saying so (counted by `cargo xtask test`); `BLKQOS_REQUIRE_SHARED=1`
/// (CI, where it is present) makes a missing directory a failure.
fn skip() -> bool {
    if fixtures().is_dir() {
        return false;
    }
    blkqos_testkit::skip(
        blkqos_testkit::Reason::Shared,
        format!(
            "{} is not there (optional tier: other projects' fixtures beside the checkout)",
            fixtures().display()
        ),
    );
    true
}

/// fio's version string, or why fio cannot be used.
fn fio_version() -> Result<String, String> {
    let out = Command::new("fio")
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run `fio`: {e}"))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(v)
    } else {
        Err(format!("`fio --version` failed: {v}"))
    }
}

struct Fio {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn fio(args: &[&str], cwd: &Path) -> Fio {
    let out = Command::new("fio")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("fio ran a moment ago");
    Fio {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// An option's place, made comparable (only that it was given counts).
fn nowhere(o: &blkqos_workload::spec::DataOption) -> blkqos_workload::spec::DataOption {
    blkqos_workload::spec::DataOption {
        file: String::new(),
        line: 0,
        ..o.clone()
    }
}

fn comparable(jobs: &[JobSpec]) -> Vec<JobSpec> {
    jobs.iter()
        .map(|j| JobSpec {
            origin: Origin::default(),
            job_options: Vec::new(),
            notes: Vec::new(),
            // where a refusal points: the file's line or the command line
            engine: blkqos_workload::spec::EngineSpec {
                real_refusal: j.engine.real_refusal.as_ref().map(|_| String::new()),
                registration_at: j.engine.registration_at.as_ref().map(|_| String::new()),
                sim_refusal: j.engine.sim_refusal.as_ref().map(|_| String::new()),
                sync_at: j.engine.sync_at.as_ref().map(nowhere),
                invalidate_at: j.engine.invalidate_at.as_ref().map(nowhere),
                ..j.engine.clone()
            },
            data_options: Vec::new(),
            ..j.clone()
        })
        .collect()
}

/// A scratch directory for fio to run in, so it creates nothing elsewhere.
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blkqos-fio-examples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

#[derive(Default)]
struct Summary {
    files: usize,
    rejected_by_both: usize,
    unsupported: Vec<(String, String)>,
    equal: Vec<String>,
    failures: Vec<String>,
}

#[test]
#[ignore = "tier examples"]
fn fio_examples_differential() {
    if skip() {
        return;
    }
    let version = match fio_version() {
        Ok(v) => v,
        Err(why) => {
            blkqos_testkit::skip(
                blkqos_testkit::Reason::Fio,
                format!("fio_examples_differential: {why} (install fio 3.33, e.g. `apt-get install fio`)"),
            );
            return;
        }
    };
    if version != "fio-3.33" {
        eprintln!("note: comparing against {version}, not fio-3.33");
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", fixtures().display());
    let cwd = scratch_dir();
    let mut s = Summary::default();

    for path in &paths {
        s.files += 1;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let p = path.to_string_lossy().into_owned();
        let text =
            String::from_utf8_lossy(&std::fs::read(path).expect("read fixture")).into_owned();
        let theirs = fio(&["--parse-only", &p], &cwd);
        let ours = parse_job_file(&p, &text, &env);
        match (theirs.ok, ours) {
            (false, Ok(_)) => s.failures.push(format!(
                "{name}: fio rejects it but blkqos accepts it; fio says: {}",
                theirs.stderr.trim()
            )),
            (false, Err(_)) => s.rejected_by_both += 1,
            (true, Err(e)) => {
                if e.message.contains("unsupported") && e.option.is_some() {
                    s.unsupported.push((name, e.option.unwrap_or_default()));
                } else {
                    s.failures
                        .push(format!("{name}: fio accepts it, blkqos rejects it: {e}"));
                }
            }
            (true, Ok(set)) => {
                let want = fio(&["--showcmd", &p], &cwd).stdout;
                match showcmd(&p, &text, &env) {
                    Ok(got) if got == want => {}
                    Ok(got) => s.failures.push(format!(
                        "{name}: --showcmd differs\n  fio:    {want}  blkqos: {got}"
                    )),
                    Err(e) => s.failures.push(format!("{name}: showcmd failed: {e}")),
                }
                let args = to_fio_args(&set.jobs);
                match parse_fio_args(&args, &[], &env) {
                    Ok(back) if comparable(&back.jobs.jobs) == comparable(&set.jobs) => {}
                    Ok(_) => s
                        .failures
                        .push(format!("{name}: jobs change through to_fio_args: {args:?}")),
                    Err(e) => s
                        .failures
                        .push(format!("{name}: to_fio_args output rejected: {e}")),
                }
                let mut fio_args = vec!["--parse-only"];
                fio_args.extend(args.iter().map(String::as_str));
                // fio 3.33 parses a job file naming fio 3.34's directory
                // engines (or a later fio's page_fault), but loads the
                // engine of a command-line job
                let fio_3_34_engine = args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "--ioengine=dircreate"
                            | "--ioengine=dirstat"
                            | "--ioengine=dirdelete"
                            | "--ioengine=page_fault"
                    )
                });
                let check = fio(&fio_args, &cwd);
                // a fio built without libzbc loads that engine only for
                // a run (a job file's --parse-only accepts it)
                let unbuilt = check.stderr.contains("engine libzbc not loadable");
                if !check.ok && !unbuilt && !fio_3_34_engine {
                    s.failures.push(format!(
                        "{name}: fio rejects to_fio_args output {args:?}: {}",
                        check.stderr.trim()
                    ));
                }
                s.equal.push(name);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);

    eprintln!("fio examples vs {version}: {} files", s.files);
    eprintln!("  rejected by fio and by blkqos: {}", s.rejected_by_both);
    eprintln!(
        "  accepted by fio, unsupported in blkqos: {}",
        s.unsupported.len()
    );
    for (f, o) in &s.unsupported {
        eprintln!("    {f}: `{o}`");
    }
    eprintln!(
        "  accepted by both, showcmd equal and round-tripped: {} {:?}",
        s.equal.len(),
        s.equal
    );
    eprintln!("  failures: {}", s.failures.len());
    for f in &s.failures {
        eprintln!("    {f}");
    }
    assert!(
        s.failures.is_empty(),
        "{} differential failures (see stderr)",
        s.failures.len()
    );
    assert!(
        !s.equal.is_empty(),
        "no fixture was accepted by both: the comparison tested nothing"
    );
}
