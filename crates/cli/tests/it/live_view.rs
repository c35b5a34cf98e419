//! `--live` / `--live-json` on the simulator: blocks per simulated second,
//! deterministic; each cgroup's per-interval IOs add up to its IOs in the
//! run; io.max's held IOs and waits show under a binding limit, iocost's
//! vrate and hweights under iocost. Without the flags nothing is printed.

use crate::common;

use common::*;
use serde_json::Value;

fn lab(name: &str) -> String {
    format!("{}/../../lab/matrix/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Run `scenario` with `--live --live-json`: (stderr live lines, JSON lines, fio JSON).
fn live_run(scenario: &str) -> (Vec<String>, Vec<Value>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("live.jsonl");
    let r = blkqos(
        &[
            "run",
            scenario,
            "--live",
            &format!("--live-json={}", jl.display()),
            "--output-format=json",
        ],
        None,
    );
    r.ok();
    let lines = r
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("live t="))
        .take_while(|l| l.starts_with("live t=") || l.starts_with("  "))
        .map(String::from)
        .collect();
    let text = std::fs::read_to_string(&jl).unwrap();
    let blocks = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let docs = r.json_docs();
    (lines, blocks, Value::Array(docs))
}

/// Sum of a cgroup's `ios[dir]` over every block.
fn total_ios(blocks: &[Value], cgroup: &str, dir: usize) -> u64 {
    blocks
        .iter()
        .flat_map(|b| b["cgroups"].as_array().unwrap().iter())
        .filter(|c| c["cgroup"] == cgroup)
        .map(|c| c["ios"][dir].as_u64().unwrap())
        .sum()
}

/// The fio report's read IOs of job `name` (all invocations' documents).
fn fio_read_ios(docs: &Value, name: &str) -> u64 {
    docs.as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["jobs"].as_array().unwrap().iter())
        .filter(|j| j["jobname"] == name)
        .map(|j| j["read"]["total_ios"].as_u64().unwrap())
        .sum()
}

#[test]
fn io_max_blocks_are_deterministic_and_add_up() {
    let sc = lab("t06-two-groups.toml");
    let (lines, blocks, docs) = live_run(&sc);
    let (again, _, _) = live_run(&sc);
    assert_eq!(lines, again, "same scenario, same live output");
    // one block per simulated second of the 5 s run; the end's sliver
    // after the last second only in the JSON lines
    let heads = lines.iter().filter(|l| l.starts_with("live t=")).count();
    assert_eq!(heads, 5, "{}", lines.join("\n"));
    assert_eq!(blocks.len(), 6);
    assert!(blocks[5]["interval_ns"].as_u64().unwrap() < 250_000_000);
    for (g, job, iops) in [("/a", "a", 200.0), ("/b", "b", 50.0)] {
        assert_eq!(total_ios(&blocks, g, 0), fio_read_ios(&docs, job), "{g}");
        // whole seconds after the first hold the limit
        for b in &blocks[1..blocks.len() - 1] {
            let c = b["cgroups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["cgroup"] == g)
                .unwrap();
            let rate = c["ios"][0].as_f64().unwrap() * 1e9 / b["interval_ns"].as_f64().unwrap();
            assert_within(&format!("{g} IOPS"), rate, iops, 5.0);
        }
        let held = blocks
            .iter()
            .flat_map(|b| b["cgroups"].as_array().unwrap().iter())
            .filter(|c| c["cgroup"] == g);
        let held: Vec<(u64, u64)> = held
            .map(|c| {
                (
                    c["held_ios"].as_u64().unwrap(),
                    c["oldest_wait_ns"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(held.iter().any(|&(n, w)| n > 0 && w > 0), "{g}: {held:?}");
    }
    assert!(
        blocks.iter().all(|b| b["iocost"].is_null()),
        "no iocost here"
    );
    assert!(
        lines[1].contains("held") && lines[1].contains("wait_ms"),
        "{}",
        lines[1]
    );
    assert!(!lines[1].contains("hw_act%"), "{}", lines[1]);
}

#[test]
fn iocost_blocks_show_vrate_and_hweights() {
    let (lines, blocks, docs) = live_run(&lab("c01-weights-flat.toml"));
    assert!(
        lines[0].contains("iocost RUN") && lines[0].contains("vrate="),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("hw_act%"), "{}", lines[1]);
    for b in &blocks {
        let c = &b["iocost"];
        assert_eq!(c["enabled"], true);
        assert!(c["vrate_ppm"].as_u64().unwrap() > 0);
    }
    // weights 100:400 (c01): active shares 20% and 80% while both issue
    let mid = &blocks[1]["cgroups"];
    let share = |g: &str| {
        mid.as_array()
            .unwrap()
            .iter()
            .find(|c| c["cgroup"] == g)
            .unwrap()["iocost"]["hweight_active_ppm"]
            .as_f64()
            .unwrap()
    };
    assert_within("/a hweight_active", share("/a"), 200_000.0, 1.0);
    assert_within("/b hweight_active", share("/b"), 800_000.0, 1.0);
    for (g, job) in [("/a", "a"), ("/b", "b")] {
        assert_eq!(total_ios(&blocks, g, 0), fio_read_ios(&docs, job), "{g}");
    }
}

#[test]
fn live_every_n_seconds_and_off_by_default() {
    let sc = lab("t06-two-groups.toml");
    let r = blkqos(&["run", &sc, "--live=2", "--output-format=json"], None);
    r.ok();
    let heads: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("live t="))
        .collect();
    // 2 s, 4 s, and the end of the 5 s run
    assert_eq!(heads.len(), 3, "{}", r.stderr);
    assert!(heads[0].starts_with("live t=2.0"), "{}", heads[0]);
    let quiet = blkqos(&["run", &sc, "--output-format=json"], None);
    quiet.ok();
    assert!(!quiet.stderr.contains("live t="), "{}", quiet.stderr);
    let bad = blkqos(&["run", &sc, "--live=0"], None);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
}

/// The time series' additions: per cgroup and device p50 <= p90 <= p99
/// <= the bucket of max, the device's IOs are the cgroups' IOs, its
/// `util_pct` is iostat's `%util` over the same seconds (one formula: the
/// diskstats io_ticks delta over the interval), and only the last line
/// carries the run's latency summary, whose CDF counts every IO.
#[test]
fn time_series_has_percentiles_util_as_iostat_and_the_run_cdf() {
    for sc in ["c01-weights-flat.toml", "t06-two-groups.toml"] {
        let dir = tempfile::tempdir().unwrap();
        let jl = dir.path().join("live.jsonl");
        let r = blkqos(
            &[
                "run",
                &lab(sc),
                &format!("--live-json={}", jl.display()),
                "--iostat=-x 1",
                "--output-format=terse",
            ],
            None,
        );
        r.ok();
        let blocks: Vec<Value> = std::fs::read_to_string(&jl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let util: Vec<f64> = r
            .stdout_str()
            .lines()
            .filter(|l| l.starts_with("nullb1 "))
            .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
            .collect();
        assert_eq!(
            util.len(),
            blocks.len(),
            "{sc}: an iostat report per interval"
        );
        for (k, b) in blocks.iter().enumerate() {
            let d = &b["device"];
            assert_eq!(d["name"], "nullb1");
            let u = d["util_pct"].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&u), "{sc} interval {k}: {u}");
            // iostat reads its intervals from /proc/uptime (1/100 s): the
            // end-of-run sliver's length differs there
            assert!(
                b["interval_ns"].as_u64().unwrap() < 250_000_000 || (u - util[k]).abs() < 0.006,
                "{sc} interval {k}: {u} vs iostat {}",
                util[k]
            );
            let cg = b["cgroups"].as_array().unwrap();
            let ios: u64 = cg.iter().map(|c| c["ios"][0].as_u64().unwrap()).sum();
            assert_eq!(d["ios"][0].as_u64().unwrap(), ios, "{sc} interval {k}");
            for row in cg.iter().chain(std::iter::once(d)) {
                if row["ios"][0].as_u64().unwrap() == 0 {
                    assert!(row["latency_ns_p50"].is_null());
                    continue;
                }
                let p = |k: &str| row[k].as_u64().unwrap();
                assert!(p("latency_ns_p50") <= p("latency_ns_p90"), "{row}");
                assert!(p("latency_ns_p90") <= p("latency_ns_p99"), "{row}");
                // percentiles are fio bucket values (within ~1.6% of a sample)
                assert!(
                    p("latency_ns_p99") as f64 <= p("latency_ns_max") as f64 * 1.02,
                    "{row}"
                );
                if !row["p99_ns"].is_null() {
                    assert_eq!(row["p99_ns"], row["latency_ns_p99"]);
                }
            }
            assert_eq!(
                b.get("run").is_some(),
                k == blocks.len() - 1,
                "{sc} interval {k}"
            );
        }
        let run = &blocks.last().unwrap()["run"];
        for c in run["cgroups"].as_array().unwrap() {
            let g = c["cgroup"].as_str().unwrap();
            let cdf = c["latency_ns_cdf"].as_array().unwrap();
            let last = cdf.last().unwrap()[1].as_u64().unwrap();
            assert_eq!(
                last,
                total_ios(&blocks, g, 0),
                "{sc} {g}: the CDF counts every IO"
            );
            assert_eq!(c["ios"][0].as_u64().unwrap(), last);
            let pct = c["latency_ns_percentiles"].as_array().unwrap();
            assert_eq!(pct.len(), 19);
        }
        let dev = &run["device"];
        let n: u64 = blocks
            .iter()
            .map(|b| b["device"]["ios"][0].as_u64().unwrap())
            .sum();
        assert_eq!(
            dev["latency_ns_cdf"].as_array().unwrap().last().unwrap()[1],
            n
        );
    }
}
