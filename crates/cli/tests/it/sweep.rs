//! `blkqos sweep`: a sweep with a known answer, a point equal to the
//! scenario run with its lines, every kind of knob taking effect, reports
//! independent of threads and shards (`--merge` byte-identical to the
//! single run), and bad input refused with status 2.
//!
//! The scenario is examples/sweep/iocost-two-groups.toml: a batch reader
//! (cgA) and a latency-sensitive reader (cgB) under iocost, 10 simulated
//! seconds (about 20 ms of CPU per point).

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn scenario() -> PathBuf {
    example("sweep/iocost-two-groups.toml")
}

/// `blkqos sweep SCENARIO ARGS` in `dir`.
fn sweep<S: AsRef<str>>(dir: &Path, args: &[S]) -> Ran {
    let mut a: Vec<String> = vec!["sweep".into(), scenario().display().to_string()];
    a.extend(args.iter().map(|x| x.as_ref().to_string()));
    blkqos(&a, Some(dir))
}

/// `base` then `extra`, as owned arguments.
fn args(base: &[&str], extra: &[String]) -> Vec<String> {
    base.iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect()
}

/// The JSON report of a sweep that succeeded.
fn sweep_json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let r = sweep(dir, &a);
    r.ok();
    serde_json::from_slice(&r.stdout).expect("--json prints JSON")
}

fn metric(p: &Value, name: &str) -> f64 {
    p["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("point {} has no {name}", p["point"]))
}

const RLAT: &str = "io.cost.qos:rlat=500,1000,2000,4000,8000,16000";
const OBJECTIVE: &str = "max total_bw_mbps subject to /cgB.clat_p99_ms<=5";

/// A tighter latency target makes iocost lower vrate sooner, so cgB's reads
/// queue less behind cgA's: cgB's p99 does not grow as rlat shrinks, and
/// the tightest targets throttle cgA for nothing. The best setting for
/// "most bandwidth with cgB's p99 within 5 ms" is then the loosest rlat
/// that still meets the limit.
#[test]
fn tighter_rlat_lowers_cgb_p99_and_the_best_point_is_the_loosest_that_meets_it() {
    let dir = tempfile::tempdir().unwrap();
    let j = sweep_json(dir.path(), &["--vary", RLAT, "--objective", OBJECTIVE]);
    let points = j["points"].as_array().expect("points");
    assert_eq!(points.len(), 6);
    let rlat = |p: &Value| -> u64 {
        p["knobs"]["io.cost.qos:rlat"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let p99: Vec<f64> = points
        .iter()
        .map(|p| metric(p, "/cgB.clat_p99_ms"))
        .collect();
    for w in p99.windows(2) {
        assert!(
            w[0] <= w[1],
            "cgB p99 must not fall as rlat loosens: {p99:?}"
        );
    }
    assert!(
        p99[0] < 5.0 && p99[5] > 5.0,
        "the limit must cut the sweep: {p99:?}"
    );
    // feasibility is exactly the limit
    for p in points {
        assert_eq!(p["feasible"], metric(p, "/cgB.clat_p99_ms") <= 5.0, "{p}");
    }
    let best = &j["solution"];
    let loosest_ok = points
        .iter()
        .filter(|p| p["feasible"] == true)
        .max_by_key(|p| rlat(p))
        .unwrap();
    assert_eq!(best["point"], loosest_ok["point"], "solution: {best}");
    // ... and it is the feasible point with the most bandwidth
    for p in points.iter().filter(|p| p["feasible"] == true) {
        assert!(
            metric(p, "total_bw_mbps") <= metric(best, "total_bw_mbps"),
            "{p}"
        );
    }
    // the tightest target costs bandwidth (vrate held at min)
    assert!(metric(&points[0], "total_bw_mbps") < 0.5 * metric(best, "total_bw_mbps"));
    let want_line = format!("rlat={} ", rlat(best));
    let line = best["lines"][0].as_str().unwrap();
    assert!(
        line.starts_with("echo \"259:0 enable=1 ctrl=user rpct=95 ")
            && line.contains(&want_line)
            && line.ends_with("\" > /sys/fs/cgroup/io.cost.qos"),
        "{line}"
    );
    // the frontier goes from the tightest p99 to the loosest, improving
    let f = j["frontier"].as_array().unwrap();
    assert!(f.len() >= 2, "{f:?}");
    for w in f.windows(2) {
        assert!(w[0]["level"].as_f64() <= w[1]["level"].as_f64());
        assert!(w[0]["objective"].as_f64() < w[1]["objective"].as_f64());
    }
}

/// A point is the scenario with its lines written: `blkqos run` of the
/// scenario edited that way reports the same numbers in fio's JSON.
#[test]
fn a_point_is_the_scenario_run_with_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let j = sweep_json(
        dir.path(),
        &[
            "--vary",
            "io.cost.qos:rlat=1500",
            "--vary",
            "/cgB/io.weight=250",
        ],
    );
    let p = &j["points"][0];
    let text = std::fs::read_to_string(scenario()).unwrap();
    let edited = text.replace("rlat=5000 wpct", "rlat=1500 wpct").replace(
        "cgB/io.weight\"\nvalue = \"100\"",
        "cgB/io.weight\"\nvalue = \"259:0 250\"",
    );
    assert_ne!(edited, text);
    assert!(edited.contains("value = \"259:0 250\""));
    write_file(dir.path(), "edited.toml", &edited);
    blkqos(&["run", "edited.toml"], Some(dir.path())).ok();
    let fio = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    for g in ["cgA", "cgB"] {
        let r = &fio(&format!("{g}.json"))["jobs"][0]["read"];
        let p99_ns = num(r, "/clat_ns/percentile/99.000000");
        assert_eq!(
            metric(p, &format!("/{g}.clat_p99_ms")),
            ((p99_ns as u64 + 500) / 1000) as f64 / 1000.0,
            "{g} p99"
        );
        let kb_per_s = num(r, "/io_bytes") as u64 / num(r, "/runtime") as u64;
        assert_eq!(
            metric(p, &format!("/{g}.bw_mbps")),
            kb_per_s as f64 / 1000.0,
            "{g} bw"
        );
        let max_us = (num(r, "/clat_ns/max") as u64 + 500) / 1000;
        assert_eq!(
            metric(p, &format!("/{g}.clat_max_ms")),
            max_us as f64 / 1000.0,
            "{g} max"
        );
    }
    assert_eq!(
        p["lines"],
        serde_json::json!([
            "echo \"259:0 enable=1 ctrl=user rpct=95 rlat=1500 wpct=95 wlat=5000 min=25 max=150\" > /sys/fs/cgroup/io.cost.qos",
            "echo \"259:0 250\" > /sys/fs/cgroup/cgB/io.weight"
        ])
    );
}

/// Every kind of knob reaches the run: two values, two different results.
#[test]
fn every_kind_of_knob_changes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    for (vary, m) in [
        ("/cgA/io.max:riops=500,max", "/cgA.iops"),
        ("device:read_mbps=100,200", "total_bw_mbps"),
        ("io.cost.model:rrandiops=20000,40000", "/cgA.iops"),
        ("io.cost.qos:rlat=1000,16000", "/cgB.clat_p99_ms"),
        ("/cgA/io.weight=50,100", "/cgA.iops"),
        ("controllers:iocost_vrate=25,100", "/cgA.iops"),
    ] {
        let j = sweep_json(dir.path(), &["--vary", vary]);
        let v: Vec<f64> = j["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| metric(p, m))
            .collect();
        assert_eq!(v.len(), 2, "{vary}");
        assert_ne!(v[0], v[1], "--vary {vary} left {m} unchanged");
    }
    // io.max riops=500 holds cgA to 500 IOPS
    let j = sweep_json(dir.path(), &["--vary", "/cgA/io.max:riops=500"]);
    let iops = metric(&j["points"][0], "/cgA.iops");
    assert!((490.0..=510.0).contains(&iops), "{iops}");
    assert_eq!(
        j["points"][0]["lines"][0],
        "echo \"259:0 riops=500\" > /sys/fs/cgroup/cgA/io.max"
    );
    // iocost off: no vrate
    let j = sweep_json(dir.path(), &["--vary", "io.cost.qos:enable=0"]);
    assert_eq!(j["points"][0]["metrics"]["vrate_pct"], Value::Null);
}

const TWO_KNOBS: [&str; 6] = [
    "--vary",
    "io.cost.qos:rlat=800..12800:log:5",
    "--vary",
    "/cgB/io.weight=100,400",
    "--objective",
    "max total_bw_mbps subject to /cgB.clat_p99_ms<=5 and /cgA.bw_mbps>=100",
];

/// Same report, byte for byte, with 1 or 2 threads, and from 3 or 4 shards
/// merged (in any order) as from the single run; text and JSON.
#[test]
fn threads_and_shards_do_not_change_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for json in [false, true] {
        let mut base = TWO_KNOBS.to_vec();
        if json {
            base.push("--json");
        }
        let with = |extra: &[&str]| {
            let mut a = base.clone();
            a.extend_from_slice(extra);
            let r = sweep(d, &a);
            r.ok();
            r.stdout
        };
        let one = with(&["--jobs=1"]);
        assert_eq!(one, with(&["--jobs=2"]), "--jobs changed the report");
        assert!(String::from_utf8_lossy(&one).contains("solution"));
        for n in [3u32, 4] {
            let mut files = Vec::new();
            for i in (1..=n).rev() {
                let f = format!("s{i}of{n}.json");
                let r = sweep(
                    d,
                    &args(
                        &TWO_KNOBS,
                        &[format!("--shard={i}/{n}"), format!("--out={f}")],
                    ),
                );
                r.ok();
                assert!(r.stdout.is_empty(), "--out: nothing on stdout");
                files.push(f);
            }
            let mut m = vec!["sweep", "--merge"];
            m.extend(files.iter().map(String::as_str));
            if json {
                m.push("--json");
            }
            let merged = blkqos(&m, Some(d));
            merged.ok();
            assert_eq!(
                merged.stdout_str(),
                String::from_utf8_lossy(&one),
                "{n} shards merged differ from the single run"
            );
        }
    }
}

/// `--merge` takes the N shards of one sweep, each once, and nothing else.
#[test]
fn merge_refuses_incomplete_duplicated_or_mixed_shards() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shard = |extra: &str, i: &str, out: &str| {
        let mut a = args(
            &TWO_KNOBS,
            &[format!("--shard={i}"), format!("--out={out}")],
        );
        if !extra.is_empty() {
            a.push(extra.to_string());
        }
        sweep(d, &a).ok();
    };
    shard("", "1/3", "a1.json");
    shard("", "2/3", "a2.json");
    shard("", "3/3", "a3.json");
    shard("--seed=2", "3/3", "b3.json");
    shard("", "2/2", "c2.json");
    write_file(d, "junk.json", "{\"x\": 1}\n");
    let full = blkqos(
        &["sweep", "--merge", "a1.json", "a2.json", "a3.json"],
        Some(d),
    );
    full.ok();
    for (files, needles) in [
        (&["a1.json", "a2.json"][..], &["missing shard 3/3"][..]),
        (
            &["a1.json", "a2.json", "a2.json", "a3.json"][..],
            &["shard 2/3 is given twice", "a2.json"][..],
        ),
        (
            &["a1.json", "a2.json", "b3.json"][..],
            &["b3.json", "another sweep"][..],
        ),
        (
            &["a1.json", "c2.json"][..],
            &["c2.json", "split two ways"][..],
        ),
        (
            &["a1.json", "junk.json"][..],
            &["junk.json", "not a sweep shard file"][..],
        ),
        (
            &["a1.json", "nope.json"][..],
            &["cannot read nope.json"][..],
        ),
        (&[][..], &["give the shard files"][..]),
    ] {
        let mut a = vec!["sweep", "--merge"];
        a.extend_from_slice(files);
        let r = blkqos(&a, Some(d));
        assert_bad(&r, &a.join(" "), needles);
    }
    // an edited shard (a point dropped) is refused
    let text = std::fs::read_to_string(d.join("a1.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["results"].as_array_mut().unwrap().pop();
    write_file(d, "a1cut.json", &v.to_string());
    let r = blkqos(
        &["sweep", "--merge", "a1cut.json", "a2.json", "a3.json"],
        Some(d),
    );
    assert_bad(&r, "a1cut", &["a1cut.json", "should hold points 0, 3"]);
}

#[track_caller]
fn assert_bad(r: &Ran, what: &str, needles: &[&str]) {
    assert_no_panic(r);
    assert_eq!(
        r.code,
        Some(2),
        "`{what}`: want exit status 2\nstderr:\n{}",
        r.stderr
    );
    assert!(r.stderr.starts_with("blkqos: "), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "`{what}`: output despite bad input");
    for n in needles {
        assert!(
            r.stderr.contains(n),
            "`{what}`: the error lacks `{n}`:\n{}",
            r.stderr
        );
    }
}

/// Bad input: status 2, nothing run, the message names the argument and
/// the value.
#[test]
fn bad_input_exits_2_naming_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let ok_vary = "io.cost.qos:rlat=1000,2000";
    for (args, needles) in [
        (
            vec!["--vary", "io.cost.qos:bogus=1,2"],
            vec!["--vary `io.cost.qos:bogus=1,2`", "no field `bogus`", "rlat"],
        ),
        (
            vec!["--vary", "io.bogus:x=1"],
            vec!["--vary `io.bogus:x=1`", "`io.bogus`"],
        ),
        (vec!["--vary", "/cgB/io.weight:w=1"], vec!["takes no field"]),
        (
            vec!["--vary", "/cgC/io.weight=100,200"],
            vec!["--vary `/cgC/io.weight=100,200`", "no cgroup `/cgC`"],
        ),
        (
            vec!["--vary", "io.cost.qos:rlat=20000..1000:4"],
            vec!["`20000..1000:4`", "LO must be below HI"],
        ),
        (
            vec!["--vary", "io.cost.qos:rlat=1000..2000"],
            vec!["`1000..2000`", "how many values"],
        ),
        (
            vec!["--vary", "io.cost.qos:rlat=1..3:log:8"],
            vec!["`1..3:log:8`", "twice"],
        ),
        (
            vec!["--vary", "io.cost.qos:rlat=1000,abc"],
            vec![
                "--vary `io.cost.qos:rlat=1000,abc`",
                "value `abc`",
                "rlat=abc",
            ],
        ),
        (
            vec!["--vary", "/cgB/io.weight=0,100"],
            vec!["--vary `/cgB/io.weight=0,100`", "value `0`", "1..10000"],
        ),
        (
            vec!["--vary", "device:bogus=1,2"],
            vec!["--vary `device:bogus=1,2`", "value `1`", "bogus"],
        ),
        (vec!["--vary", "device:devid=8:0"], vec!["cannot be varied"]),
        (
            vec!["--vary", "controllers:iocost=hold,nope"],
            vec!["value `nope`", "iocost"],
        ),
        (
            vec![
                "--vary",
                "io.cost.qos:min=25,90",
                "--vary",
                "io.cost.qos:max=50,150",
            ],
            vec!["point 2", "io.cost.qos:min=90, io.cost.qos:max=50"],
        ),
        (
            vec!["--vary", ok_vary, "--vary", "io.cost.qos:rlat=5,6"],
            vec!["io.cost.qos:rlat is already varied"],
        ),
        (
            vec!["--vary", ok_vary, "--objective", "max bw"],
            vec!["--objective `max bw`", "unknown metric `bw`"],
        ),
        (
            vec![
                "--vary",
                ok_vary,
                "--objective",
                "max total_bw_mbps subject to /cgZ.clat_p99_ms<=5",
            ],
            vec!["no cgroup `/cgZ`"],
        ),
        (
            vec![
                "--vary",
                ok_vary,
                "--objective",
                "max total_bw_mbps subject to /cgB.clat_p99_ms=5",
            ],
            vec!["expected METRIC<=NUMBER"],
        ),
        (
            vec!["--vary", ok_vary, "--show", "/cgB.p99"],
            vec!["--show", "`p99`"],
        ),
        (
            vec!["--vary", ok_vary, "--shard=4/3"],
            vec!["--shard=4/3", "1..3"],
        ),
        (
            vec!["--vary", ok_vary, "--shard=0/3"],
            vec!["--shard=0/3", "+1"],
        ),
        (
            vec!["--vary", ok_vary, "--jobs=0"],
            vec!["invalid value '0' for '--jobs"],
        ),
        (
            vec!["--vary", ok_vary, "--out=."],
            vec!["--out=.", "directory"],
        ),
        (
            vec!["--vary", ok_vary, "--frobnicate"],
            vec!["unexpected argument '--frobnicate'"],
        ),
        (vec![], vec!["nothing to vary"]),
        (
            vec![
                "--vary",
                "io.cost.qos:rlat=1..1000000:step:1",
                "--vary",
                "io.cost.qos:min=1..100:step:1",
            ],
            vec!["at most 10000"],
        ),
        (
            vec![
                "--vary",
                "io.cost.qos:rlat=1..10000:step:1",
                "--vary",
                "io.cost.qos:min=1..200:step:1",
            ],
            vec!["more than 1000000 points"],
        ),
    ] {
        let r = sweep(dir.path(), &args);
        assert_bad(&r, &args.join(" "), &needles);
    }
    // no scenario, a missing one, a job file
    for (args, needles) in [
        (
            vec!["sweep", "--vary=io.cost.qos:rlat=1,2"],
            vec!["give a scenario"],
        ),
        (
            vec!["sweep", "missing.toml", "--vary=io.cost.qos:rlat=1,2"],
            vec!["missing.toml"],
        ),
        (
            vec!["sweep", "job.fio", "--vary=io.cost.qos:rlat=1,2"],
            vec!["`job.fio`", ".toml"],
        ),
    ] {
        let r = blkqos(&args, Some(dir.path()));
        assert_bad(&r, &args.join(" "), &needles);
    }
}

/// No point meets the limit: the report says so, status 0, JSON null.
#[test]
fn no_feasible_point_is_reported_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let obj = "max total_bw_mbps subject to /cgB.clat_p99_ms<=0.001";
    let r = sweep(
        dir.path(),
        &["--vary", "io.cost.qos:rlat=1000,2000", "--objective", obj],
    );
    r.ok();
    let t = r.stdout_str();
    assert!(
        t.contains("solution: none: no point meets every limit"),
        "{t}"
    );
    let j = sweep_json(
        dir.path(),
        &["--vary", "io.cost.qos:rlat=1000,2000", "--objective", obj],
    );
    assert_eq!(j["solution"], Value::Null);
    assert!(j["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["feasible"] == false));
}

/// `--dry-run` checks and counts without running; a shard's share.
#[test]
fn dry_run_counts_the_points() {
    let dir = tempfile::tempdir().unwrap();
    let r = sweep(
        dir.path(),
        &args(&TWO_KNOBS, &["--dry-run".into(), "--shard=2/3".into()]),
    );
    r.ok();
    let t = r.stdout_str();
    assert!(t.starts_with("points 10\n"), "{t}");
    assert!(
        t.contains("vary io.cost.qos:rlat = 800,1600,3200,6400,12800\n"),
        "{t}"
    );
    assert!(t.contains("shard 2/3: 3 points\n"), "{t}");
    assert!(
        !r.stderr.contains("points in"),
        "--dry-run ran points: {}",
        r.stderr
    );
}

/// iocost knobs on a scenario that never enables iocost: a note says they
/// change nothing; a real-engine scenario is refused (a sweep simulates).
#[test]
fn iocost_off_is_noted_and_real_scenarios_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = "[[fio]]\ncgroup = \"/a\"\nargs = \"--name=a --filename=/dev/nullb0 --rw=randread --bs=4k --direct=1 --runtime=1 --time_based\"\n";
    write_file(
        d,
        "plain.toml",
        &format!("cgroups = [\"/a\"]\n[device]\nmodel = \"null\"\n{job}"),
    );
    let r = blkqos(
        &["sweep", "plain.toml", "--vary", "/a/io.weight=100,200"],
        Some(d),
    );
    r.ok();
    assert!(r.stderr.contains("iocost stays off"), "{}", r.stderr);
    let r = blkqos(
        &[
            "sweep",
            "plain.toml",
            "--vary",
            "/a/io.weight=100,200",
            "--vary",
            "io.cost.qos:enable=1",
        ],
        Some(d),
    );
    r.ok();
    assert!(!r.stderr.contains("iocost stays off"), "{}", r.stderr);
    write_file(
        d,
        "real.toml",
        &format!("cgroups = [\"/a\"]\n[device]\npath = \"scratch\"\n{job}"),
    );
    let r = blkqos(
        &["sweep", "real.toml", "--vary", "/a/io.weight=100,200"],
        Some(d),
    );
    assert_bad(&r, "real.toml", &["real.toml", "real engine", "simulator"]);
}
