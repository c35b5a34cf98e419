//! `--live` / `--live-json` on the simulator: blocks per simulated second,
//! deterministic; each cgroup's per-interval IOs add up to its IOs in the
//! run; io.max's held IOs and waits show under a binding limit, iocost's
//! vrate and hweights under iocost. Without the flags nothing is printed.

mod common;

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
