//! A scenario's outputs go to the current directory (as fio's `--output`),
//! its inputs are read next to it: running an example from the repository
//! root never writes into `examples/`.

use crate::common;

use common::*;

#[test]
fn outputs_land_in_the_current_directory() {
    let scen = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_file(
        scen.path(),
        "job.fio",
        "[w]\nrw=write\nbs=64k\nsize=4m\ndirect=0\nioengine=psync\n",
    );
    write_file(
        scen.path(),
        "s.toml",
        "cgroups = [\"/a\"]\n\
         [accounting]\nlat_hist = \"lat.txt\"\nrequest_trace = \"rq.txt\"\ndiskstats_dir = \"snap\"\ndiskstats_every = \"100ms\"\n\
         [pagecache]\nreport = \"wb.txt\"\n\
         [[fio]]\ncgroup = \"/a\"\njob_file = \"job.fio\"\noutput = \"out.txt\"\n",
    );
    let s = scen.path().join("s.toml");
    let r = blkqos(&["run", s.to_str().unwrap()], Some(cwd.path()));
    r.ok();
    // every report went to a file: stdout has what ran, one row per job
    // and direction (64 writes of 64 KiB), and stderr names each file once
    let table: Vec<Vec<String>> = r
        .stdout_str()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(table.len(), 2, "{}", r.stdout_str());
    assert_eq!(
        table[0],
        ["job", "cgroup", "dir", "ios", "iops", "MiB/s", "p50", "p99", "max"]
    );
    assert_eq!(table[1][..4], ["w", "/a", "write", "64"], "{:?}", table[1]);
    let iops: f64 = table[1][4].parse().unwrap();
    let mibs: f64 = table[1][5].parse().unwrap();
    assert!(
        (iops / 16.0 - mibs).abs() < 0.1,
        "{iops} IOPS of 64 KiB vs {mibs} MiB/s"
    );
    let ms = |c: usize| table[1][c].parse::<f64>().unwrap();
    assert!(ms(6) <= ms(7) && ms(7) <= ms(8), "{:?}", table[1]);
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("blkqos: wrote "))
        .collect();
    assert_eq!(
        said,
        [
            "blkqos: wrote out.txt (fio report)",
            "blkqos: wrote lat.txt (latency histograms)",
            "blkqos: wrote rq.txt (request trace)",
            "blkqos: wrote wb.txt (writeback report)",
            "blkqos: wrote snap (diskstats snapshots)",
        ],
        "{}",
        r.stderr
    );
    for f in [
        "lat.txt",
        "rq.txt",
        "snap/0000/diskstats",
        "wb.txt",
        "out.txt",
    ] {
        assert!(
            cwd.path().join(f).exists(),
            "{f} not in the current directory"
        );
    }
    let mut beside: Vec<String> = std::fs::read_dir(scen.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    beside.sort();
    assert_eq!(
        beside,
        ["job.fio", "s.toml"],
        "the run wrote beside the scenario"
    );
}

/// A run says which controller implementations its knob writes reach, so
/// a newcomer's first run (seed 000) tells which io.max rule produced it.
#[test]
fn a_run_names_the_controllers_it_ran() {
    let seed000 = example("seed-000-throttle/scenario.toml");
    for (extra, want) in [
        (
            None,
            "blkqos: controllers: io.max by blk-throttle `slice-remainder` (1 write); HZ=1000",
        ),
        (
            Some("--throttle=legacy"),
            "blkqos: controllers: io.max by blk-throttle `legacy` (1 write); HZ=1000",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["run", seed000.to_str().unwrap()];
        args.extend(extra);
        let r = blkqos(&args, Some(dir.path()));
        r.ok();
        // its fio report went to stdout: no summary table
        assert!(!r.stdout_str().contains("# what ran"), "{}", r.stdout_str());
        assert!(
            r.stderr.lines().any(|l| l == want),
            "{extra:?}: {}",
            r.stderr
        );
    }
    // no knob written, no line
    let dir = tempfile::tempdir().unwrap();
    let r = blkqos(
        &["run", "--name=x", "--rw=read", "--size=1m"],
        Some(dir.path()),
    );
    r.ok();
    assert!(!r.stderr.contains("controllers:"), "{}", r.stderr);
}
