//! `--lat-hist`: per-device and per-group latency percentiles, checked
//! against the run's own per-IO data (`--request-trace`) and fio's JSON.
//!
//! Scenario: an SSD model with jitter; `/cgA` limited by io.max to 200
//! read IOPS at QD4 (its IOs wait in blk-throttle), `/cgB` unlimited
//! randrw at QD2. Submit cost 0, so an IO enters the block layer when the
//! job issues it.

use crate::common;

use blkqos_core::hist::{idx_to_val, val_to_idx, LatHist, DEFAULT_PERCENTILES};
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const SCENARIO: &str = r#"seed = 3
cgroups = ["/cgA", "/cgB"]
[device]
model = "ssd"
devid = "253:1"
name = "nvme0n1"
jitter_pct = 30
[host]
submit_ns = 0
[[write]]
file = "/cgA/io.max"
value = "253:1 riops=200"
[[fio]]
cgroup = "/cgA"
args = "--name=a --rw=randread --bs=4k --size=64m --direct=1 --ioengine=libaio --iodepth=4 --runtime=2 --time_based"
output = "a.json"
output_format = "json"
[[fio]]
cgroup = "/cgB"
args = "--name=b --rw=randrw --bs=4k --size=64m --direct=1 --ioengine=libaio --iodepth=2 --runtime=2 --time_based"
output = "b.json"
output_format = "json"
"#;

/// One request of `--request-trace`.
struct Req {
    group: String,
    dir: String,
    submit: u64,
    start: u64,
    complete: u64,
}

fn parse_trace(text: &str) -> Vec<Req> {
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("# group dir submit_ns start_ns complete_ns")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 5, "trace line `{l}`");
            let n = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("`{l}`"));
            Req {
                group: f[0].to_string(),
                dir: f[1].to_string(),
                submit: n(f[2]),
                start: n(f[3]),
                complete: n(f[4]),
            }
        })
        .collect()
}

/// What `--lat-hist` should say about these latencies, computed here:
/// count, min, max, sum, and fio's percentiles of the same samples.
struct Expect {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// `LatHist`'s percentiles (fio's rule on fio's buckets).
    pct: Vec<(f64, u64)>,
    sorted: Vec<u64>,
}

fn expect(lat: impl Iterator<Item = u64>) -> Expect {
    let mut sorted: Vec<u64> = lat.collect();
    sorted.sort_unstable();
    let mut h = LatHist::new();
    sorted.iter().for_each(|&v| h.record(v));
    Expect {
        count: sorted.len() as u64,
        min: sorted[0],
        max: *sorted.last().expect("samples"),
        sum: sorted.iter().map(|&v| u128::from(v)).sum(),
        pct: h.percentiles(&DEFAULT_PERCENTILES),
        sorted,
    }
}

/// The JSON entries of one array, keyed by (device or group, dir).
fn entries(doc: &Value, array: &str, key: &str) -> BTreeMap<(String, String), Value> {
    doc[array]
        .as_array()
        .unwrap_or_else(|| panic!("no `{array}` array"))
        .iter()
        .map(|e| {
            let k = e[key].as_str().expect("name").to_string();
            let d = e["dir"].as_str().expect("dir").to_string();
            ((k, d), e.clone())
        })
        .collect()
}

#[track_caller]
fn check_entry(what: &str, e: &Value, x: &Expect) {
    assert_eq!(e["count"].as_u64(), Some(x.count), "{what} count");
    assert_eq!(e["min_ns"].as_u64(), Some(x.min), "{what} min");
    assert_eq!(e["max_ns"].as_u64(), Some(x.max), "{what} max");
    let mean = x.sum as f64 / x.count as f64;
    let got = e["mean_ns"].as_f64().expect("mean");
    assert!((got - mean).abs() < 1e-3, "{what} mean {got} vs {mean}");
    let p = e["percentile"].as_object().expect("percentile object");
    assert_eq!(p.len(), DEFAULT_PERCENTILES.len(), "{what}");
    for &(pct, v) in &x.pct {
        let key = format!("{pct:.6}");
        assert_eq!(p[&key].as_u64(), Some(v), "{what} p{key}");
        // and within one fio bucket of the exact nearest-rank value
        let rank = ((pct / 100.0 * x.count as f64).ceil() as usize).clamp(1, x.sorted.len());
        let exact = x.sorted[rank - 1];
        assert_eq!(v, idx_to_val(val_to_idx(exact)), "{what} p{key} vs {exact}");
        assert!(v.abs_diff(exact) <= exact / 64 + 1, "{what} p{key}");
    }
}

fn p99(e: &Value) -> u64 {
    e["percentile"]["99.000000"].as_u64().expect("p99")
}

fn run_scenario(dir: &Path, extra: &[&str]) {
    write_file(dir, "s.toml", SCENARIO);
    let mut args = vec!["run", "s.toml"];
    args.extend_from_slice(extra);
    blkqos(&args, Some(dir)).ok();
}

#[test]
fn lat_hist_agrees_with_request_trace_and_fio() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run_scenario(d, &["--lat-hist=lat.json", "--request-trace=trace.txt"]);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("lat.json")).unwrap()).unwrap();
    let trace = parse_trace(&std::fs::read_to_string(d.join("trace.txt")).unwrap());
    let devs = entries(&doc, "devices", "device");
    let groups = entries(&doc, "groups", "group");

    // device: request start -> completion, per direction; the same
    // interval as diskstats' ms reading/writing (fio's disk_util ticks)
    let fio_a: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("a.json")).unwrap()).unwrap();
    for dirn in ["read", "write"] {
        let x = expect(
            trace
                .iter()
                .filter(|r| r.dir == dirn)
                .map(|r| r.complete - r.start),
        );
        let e = &devs[&("253:1".to_string(), dirn.to_string())];
        assert_eq!(e["name"], "nvme0n1");
        check_entry(&format!("device {dirn}"), e, &x);
        let ticks = num(&fio_a, &format!("/disk_util/0/{dirn}_ticks")) as u128;
        assert_eq!(ticks, x.sum / 1_000_000, "diskstats {dirn} ms vs trace");
    }
    assert_eq!(devs.len(), 2, "only read and write had IO: {devs:?}");

    // groups: submit -> completion; `/` rolls up both
    let cases = [("/cgA", "read"), ("/cgB", "read"), ("/cgB", "write")];
    for (g, dirn) in cases {
        let x = expect(
            trace
                .iter()
                .filter(|r| r.group == g && r.dir == dirn)
                .map(|r| r.complete - r.submit),
        );
        let e = &groups[&(g.to_string(), dirn.to_string())];
        assert_eq!(e["device"], "253:1");
        check_entry(&format!("{g} {dirn}"), e, &x);
    }
    for dirn in ["read", "write"] {
        let x = expect(
            trace
                .iter()
                .filter(|r| r.dir == dirn)
                .map(|r| r.complete - r.submit),
        );
        check_entry(
            &format!("/ {dirn}"),
            &groups[&("/".to_string(), dirn.to_string())],
            &x,
        );
    }
    // no IO: no entry (/cgA never writes)
    assert!(!groups.contains_key(&("/cgA".to_string(), "write".to_string())));
    assert_eq!(groups.len(), 5, "{:?}", groups.keys());

    // group counts sum to the device count, which is fio's
    let count = |e: &Value| e["count"].as_u64().expect("count");
    let g = |p: &str, d: &str| &groups[&(p.to_string(), d.to_string())];
    let dev = |d: &str| &devs[&("253:1".to_string(), d.to_string())];
    assert_eq!(
        count(g("/cgA", "read")) + count(g("/cgB", "read")),
        count(dev("read"))
    );
    assert_eq!(count(g("/cgB", "write")), count(dev("write")));
    let fio = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join(f)).unwrap()).unwrap()
    };
    let (a, b) = (fio("a.json"), fio("b.json"));
    assert_eq!(
        num(&a, "/jobs/0/read/total_ios") as u64,
        count(g("/cgA", "read"))
    );
    assert_eq!(
        num(&b, "/jobs/0/read/total_ios") as u64,
        count(g("/cgB", "read"))
    );
    assert_eq!(
        num(&b, "/jobs/0/write/total_ios") as u64,
        count(dev("write"))
    );

    // the throttled group's tail is its io.max wait; the device's is not
    let (pa, pdev, pb) = (
        p99(g("/cgA", "read")),
        p99(dev("read")),
        p99(g("/cgB", "read")),
    );
    assert!(pdev < 1_000_000, "device read p99 {pdev} ns");
    assert!(pa > 10_000_000, "/cgA read p99 {pa} ns: no io.max wait?");
    assert!(pa > 50 * pdev, "/cgA p99 {pa} vs device p99 {pdev}");
    // the unthrottled group sees about the device's latency
    assert!(
        pb.abs_diff(pdev) <= pdev / 10,
        "/cgB p99 {pb} vs device {pdev}"
    );
    // fio agrees: cgA's completion latency tail holds the same wait
    let fio_p99 = num(&a, "/jobs/0/read/clat_ns/percentile/99.000000") as u64;
    assert!(fio_p99 > 10_000_000, "fio clat p99 {fio_p99}");
}

/// A parsed text block direction: count, min/max/mean (µs text) and the
/// percentile entries.
#[derive(Debug, Default)]
struct TextDir {
    count: u64,
    min: String,
    max: String,
    mean: f64,
    pct: Vec<(String, u64)>,
}

/// `(block header, dir) -> TextDir` of a text report.
fn parse_text(t: &str) -> BTreeMap<(String, String), TextDir> {
    let mut out = BTreeMap::new();
    let mut block = String::new();
    let mut cur: Option<(String, String)> = None;
    for line in t.lines() {
        if line.starts_with("device ") || line.starts_with("group ") {
            // "device 253:1 nvme0n1: request start -> completion"
            block = line.rsplit_once(": ").expect("header").0.to_string();
        } else if let Some(rest) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) {
            let (dir, kv) = rest.split_once(": ").expect("direction line");
            let mut td = TextDir::default();
            for f in kv.trim_end_matches(" (usec)").split(", ") {
                let (k, v) = f.split_once('=').expect("key=value");
                match k {
                    "count" => td.count = v.parse().expect("count"),
                    "min" => td.min = v.to_string(),
                    "max" => td.max = v.to_string(),
                    "mean" => td.mean = v.parse().expect("mean"),
                    o => panic!("unexpected key {o}"),
                }
            }
            let key = (block.clone(), dir.to_string());
            out.insert(key.clone(), td);
            cur = Some(key);
        } else if let Some(rest) = line.trim_start().strip_prefix('|') {
            let td = out
                .get_mut(cur.as_ref().expect("a direction"))
                .expect("dir");
            for ent in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (p, v) = ent.split_once("th=[").expect("entry");
                let v = v.trim_end_matches(']').trim().parse().expect("value");
                td.pct.push((p.trim().to_string(), v));
            }
        }
    }
    out
}

#[test]
fn text_and_json_agree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run_scenario(d, &["--lat-hist=lat.json"]);
    run_scenario(d, &["--lat-hist=lat.txt"]);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("lat.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(d.join("lat.txt")).unwrap();
    assert!(
        text.contains("\n    lat percentiles (usec):\n     |  1.00th=["),
        "{text}"
    );
    let blocks = parse_text(&text);
    let mut json_entries = Vec::new();
    for e in doc["devices"].as_array().expect("devices") {
        let head = format!(
            "device {} {}",
            e["device"].as_str().unwrap(),
            e["name"].as_str().unwrap()
        );
        json_entries.push((head, e));
    }
    for e in doc["groups"].as_array().expect("groups") {
        let head = format!(
            "group {} on {}",
            e["group"].as_str().unwrap(),
            e["device"].as_str().unwrap()
        );
        json_entries.push((head, e));
    }
    assert_eq!(json_entries.len(), blocks.len(), "{:?}", blocks.keys());
    let usec = |ns: u64| format!("{}.{:03}", ns / 1000, ns % 1000);
    for (head, e) in json_entries {
        let dirn = e["dir"].as_str().unwrap().to_string();
        let t = blocks
            .get(&(head.clone(), dirn.clone()))
            .unwrap_or_else(|| panic!("no text for {head} {dirn}:\n{text}"));
        assert_eq!(Some(t.count), e["count"].as_u64(), "{head} {dirn}");
        assert_eq!(t.min, usec(e["min_ns"].as_u64().unwrap()), "{head} {dirn}");
        assert_eq!(t.max, usec(e["max_ns"].as_u64().unwrap()), "{head} {dirn}");
        let mean_us = e["mean_ns"].as_f64().unwrap() / 1000.0;
        assert!((t.mean - mean_us).abs() <= 0.0005 + 1e-9, "{head} {dirn}");
        let p = e["percentile"].as_object().unwrap();
        let want: Vec<(String, u64)> = DEFAULT_PERCENTILES
            .iter()
            .map(|pc| {
                let ns = p[&format!("{pc:.6}")].as_u64().unwrap();
                (format!("{pc:.2}"), ns.div_ceil(1000))
            })
            .collect();
        assert_eq!(t.pct, want, "{head} {dirn}");
    }
}

/// `[accounting] lat_hist` in a scenario: an output, so relative to the
/// current directory (as fio's `--output`), never next to the scenario.
#[test]
fn scenario_key_writes_to_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let text = SCENARIO.replace(
        "[host]",
        "[accounting]\nlat_hist = \"out/lat.json\"\n[host]",
    );
    std::fs::create_dir(dir.path().join("out")).unwrap();
    write_file(&sub, "s.toml", &text);
    blkqos(&["run", "sub/s.toml"], Some(dir.path())).ok();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/lat.json")).unwrap())
            .unwrap();
    assert!(doc["groups"].as_array().is_some_and(|g| g.len() == 5));
    assert!(!sub.join("out").exists());
}
