//! Same input + same seed → the same bytes; the seed reaches the job's
//! random streams when `randrepeat=0`.

use crate::common;

use common::*;

/// The seed scenario (60 simulated seconds) twice, with
/// `SOURCE_DATE_EPOCH`: byte-identical JSON, and the JSON is the full run.
#[test]
fn seed_scenario_twice_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = example("seed-000-throttle/scenario.toml");
    let args = [
        "run".to_string(),
        scenario.display().to_string(),
        "--output-format=json".to_string(),
    ];
    let t0 = std::time::Instant::now();
    let a = blkqos(&args, Some(dir.path()));
    let wall = t0.elapsed();
    let b = blkqos(&args, Some(dir.path()));
    a.ok();
    b.ok();
    assert!(!a.stdout.is_empty());
    assert!(
        a.stdout == b.stdout,
        "two runs of the seed scenario differ:\n--- first\n{}\n--- second\n{}",
        a.stdout_str(),
        b.stdout_str()
    );
    // it is the whole 60 s run, not an early exit
    let doc = a.json();
    let job = &doc["jobs"][0];
    assert_eq!(job["jobname"], "file1");
    assert!(
        num(job, "/job_runtime") >= 60_000.0,
        "{}",
        job["job_runtime"]
    );
    assert!(num(job, "/read/total_ios") > 5_900.0);
    // wall-clock fields come from SOURCE_DATE_EPOCH (+ the simulated time)
    let ts = num(&doc, "/timestamp");
    assert!(
        (1_700_000_060.0..1_700_000_062.0).contains(&ts),
        "timestamp {ts} does not derive from SOURCE_DATE_EPOCH"
    );
    // 60 simulated seconds take well under a second in release builds;
    // allow slack for loaded or debug builds
    assert!(wall.as_secs_f64() < 10.0, "seed scenario took {wall:?}");
}

/// A random job whose offsets are visible in its latencies (hdd: seek time
/// depends on the distance between offsets).
fn hdd_job(randrepeat: u32, seed: u32) -> Vec<String> {
    [
        "run",
        "--name=s",
        "--rw=randread",
        "--bs=4k",
        "--size=1g",
        "--runtime=1",
        "--time_based",
        "--ioengine=libaio",
        "--iodepth=4",
        "--device=hdd,seed=7", // pin the device's own randomness: only offsets vary
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("--randrepeat={randrepeat}"),
        format!("--seed={seed}"),
    ])
    .collect()
}

#[test]
fn seed_drives_randrepeat0_streams() {
    let s1 = blkqos(&hdd_job(0, 1), None);
    let s1_again = blkqos(&hdd_job(0, 1), None);
    let s2 = blkqos(&hdd_job(0, 2), None);
    for r in [&s1, &s1_again, &s2] {
        r.ok();
    }
    // same seed: same bytes
    assert!(s1.stdout == s1_again.stdout, "same seed, different output");
    // another seed: other offsets, so other seek latencies
    assert!(
        s1.stdout != s2.stdout,
        "--seed had no effect with randrepeat=0"
    );
    let (a, b) = (s1.json(), s2.json());
    assert_ne!(
        a["jobs"][0]["read"]["clat_ns"], b["jobs"][0]["read"]["clat_ns"],
        "--seed changed the bytes but not the latencies"
    );

    // control: with randrepeat=1 the offsets come from fio's fixed seed,
    // so --seed does not change anything on this (jitter-free) device
    let r1 = blkqos(&hdd_job(1, 1), None);
    let r2 = blkqos(&hdd_job(1, 2), None);
    r1.ok();
    r2.ok();
    assert!(
        r1.stdout == r2.stdout,
        "randrepeat=1 output depends on --seed"
    );
    assert!(r1.stdout != s1.stdout, "randrepeat=0 ignored the seed");
}

/// `run --help` ("--seed=N  seed for randrepeat=0 streams and device
/// jitter") and docs/SCENARIOS.md (`seed`: "randrepeat=0 streams, device
/// jitter, host jitter") say the seed drives the device's jitter too.
///
/// Fails today: the ssd model's jitter comes only from its own `seed`
/// parameter (`--device=ssd,seed=N` / `[device] seed`); `--seed` and the
/// scenario's `seed` never reach `DeviceSpec` (crates/experiment/src/experiment.rs),
/// so with `randrepeat=1` the output is identical for every `--seed`.
#[test]
fn seed_drives_device_jitter() {
    let job = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--name=j",
            "--rw=randread",
            "--bs=4k",
            "--size=1g",
            "--runtime=1",
            "--time_based",
            "--ioengine=libaio",
            "--iodepth=4",
            "--output-format=json",
        ];
        args.extend_from_slice(extra);
        let r = blkqos(&args, None);
        r.ok();
        r.json()["jobs"][0]["read"]["clat_ns"].clone()
    };
    // the model's own seed does change the jitter ...
    assert_ne!(job(&["--device=ssd,seed=1"]), job(&["--device=ssd,seed=2"]));
    // ... and so should the run's seed
    assert_ne!(
        job(&["--device=ssd", "--seed=1"]),
        job(&["--device=ssd", "--seed=2"]),
        "--seed does not reach the ssd model's jitter"
    );
}
