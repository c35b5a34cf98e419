//! iocost's proportional sharing end to end, through the example scenarios
//! in `examples/iocost-weights/` (an NVMe-like `ssd`, 4 KiB random reads at
//! QD512 per group, latency QoS 95% within 2 ms):
//!
//! * `weights.toml`: io.weight 100 and 300 split the device's time 25/75
//!   (±2 points) over 10 s; with iocost disabled the same jobs split 50/50.
//! * `idle-return.toml`: a third group (400) that pauses for 3 s (fio
//!   thinktime) gives up its share: /a and /b split the device 25/75 while
//!   it is away, and within one period of issuing again it has its 50% back.
//!
//! Device time per group. The `ssd` model occupies one of its channels for
//! `read_ns + len / read_mbps` plus a seeded jitter for every read; every IO
//! here is the same 4 KiB random read, so each costs the device the same
//! time on average and a group's share of device time is its share of the
//! reads the block layer counted (io.stat `rios`, independent of iocost).
//! io.stat `cost.usage` is iocost's own account of device time (its cost
//! model, which matches this device); the test checks it agrees. The
//! per-period split comes from the iocost trace (`usage%` per group: the
//! same account, per period), the only per-period, per-group view.

use crate::common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `(rios, cost.usage µs)` per cgroup from an io.stat dump.
fn io_stat(path: &Path) -> BTreeMap<String, (u64, u64)> {
    let text = std::fs::read_to_string(path).expect("io.stat written");
    let mut out = BTreeMap::new();
    let mut group = None;
    for line in text.lines() {
        if let Some(g) = line.strip_prefix("# ") {
            group = g.strip_suffix(" io.stat").map(str::to_string);
            continue;
        }
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                .map_or(0, |v| v.parse::<u64>().expect("number"))
        };
        if let Some(g) = group.take() {
            out.insert(g, (field("rios"), field("cost.usage")));
        }
    }
    out
}

/// Run an example scenario (optionally edited) in a fresh directory with
/// io.stat and the JSON iocost trace; returns the directory.
fn run_example(name: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let text = std::fs::read_to_string(example(&format!("iocost-weights/{name}"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "scenario.toml", &edit(text));
    blkqos(
        &[
            "run",
            "scenario.toml",
            "--io-stat=io.stat",
            "--iocost-trace=trace.jsonl",
        ],
        Some(dir.path()),
    )
    .ok();
    dir
}

fn share(x: u64, total: u64) -> f64 {
    100.0 * x as f64 / total as f64
}

#[test]
fn weights_100_300_split_device_time_25_75() {
    let (on, off) = std::thread::scope(|s| {
        let on = s.spawn(|| run_example("weights.toml", |t| t));
        let off = s.spawn(|| {
            run_example("weights.toml", |t| {
                assert!(t.contains("enable=1"));
                t.replace("enable=1", "enable=0")
            })
        });
        (on.join().unwrap(), off.join().unwrap())
    });
    let st = io_stat(&on.path().join("io.stat"));
    let (a, b) = (st["/a"], st["/b"]);
    let ios = a.0 + b.0;
    let (dev_a, dev_b) = (share(a.0, ios), share(b.0, ios));
    let (use_a, use_b) = (share(a.1, a.1 + b.1), share(b.1, a.1 + b.1));
    println!(
        "iocost on: /a {} reads ({dev_a:.3}% of device time), /b {} ({dev_b:.3}%); \
         cost.usage /a {:.3} s ({use_a:.3}%), /b {:.3} s ({use_b:.3}%)",
        a.0,
        b.0,
        a.1 as f64 / 1e6,
        b.1 as f64 / 1e6
    );
    assert!(
        (dev_a - 25.0).abs() <= 2.0,
        "/a has {dev_a:.2}% of device time"
    );
    assert!(
        (dev_b - 75.0).abs() <= 2.0,
        "/b has {dev_b:.2}% of device time"
    );
    assert!((use_a - 25.0).abs() <= 2.0, "/a cost.usage {use_a:.2}%");
    assert!((use_b - 75.0).abs() <= 2.0, "/b cost.usage {use_b:.2}%");

    // without iocost the same jobs share the device's FIFO equally and run
    // it flat out; iocost keeps it within 10% of that
    let st0 = io_stat(&off.path().join("io.stat"));
    let (a0, b0) = (st0["/a"].0, st0["/b"].0);
    let off_a = share(a0, a0 + b0);
    println!("iocost off: /a {a0} reads ({off_a:.3}%), /b {b0}");
    assert!((off_a - 50.0).abs() <= 2.0, "{off_a}");
    assert!(
        ios as f64 >= 0.9 * (a0 + b0) as f64,
        "iocost kept the device at {ios} reads of {}",
        a0 + b0
    );
}

/// One period of the iocost trace: its end time and, per active group,
/// `(hweight_active%, hweight_inuse%, usage%)`.
struct Period {
    t: f64,
    groups: BTreeMap<String, (f64, f64, f64)>,
}

fn trace(path: &Path) -> Vec<Period> {
    let text = std::fs::read_to_string(path).expect("trace written");
    let mut out: Vec<Period> = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON line");
        if v.get("device").is_some() {
            out.push(Period {
                t: num(&v, "/timestamp"),
                groups: BTreeMap::new(),
            });
        } else if let Some(p) = out.last_mut() {
            p.groups.insert(
                v["cgroup"].as_str().unwrap().to_string(),
                (
                    num(&v, "/hweight_active_pct"),
                    num(&v, "/hweight_inuse_pct"),
                    num(&v, "/usage_pct"),
                ),
            );
        }
    }
    out
}

/// Each group's share (%) of the usage summed over `periods`.
fn usage_shares<'a>(periods: impl IntoIterator<Item = &'a Period>) -> BTreeMap<String, f64> {
    let mut sum: BTreeMap<String, f64> = BTreeMap::new();
    for p in periods {
        for (g, &(_, _, u)) in &p.groups {
            *sum.entry(g.clone()).or_default() += u;
        }
    }
    let total: f64 = sum.values().sum();
    sum.into_iter()
        .map(|(g, u)| (g, 100.0 * u / total))
        .collect()
}

#[track_caller]
fn assert_shares(what: &str, got: &BTreeMap<String, f64>, want: &[(&str, f64)]) {
    assert_eq!(got.len(), want.len(), "{what}: groups {got:?}");
    for &(g, w) in want {
        let s = got[g];
        assert!(
            (s - w).abs() <= 2.0,
            "{what}: {g} has {s:.2}%, want {w}% ± 2"
        );
    }
}

#[test]
fn idle_group_gives_up_its_share_and_gets_it_back_within_a_period() {
    let dir = run_example("idle-return.toml", |t| t);
    let tr = trace(&dir.path().join("trace.jsonl"));
    let has_c = |p: &Period| p.groups.contains_key("/c");
    // /c leaves the active list after its 40,000 reads and comes back 3 s later
    let gone = tr.iter().position(|p| !has_c(p)).expect("/c deactivated");
    let back = gone + tr[gone..].iter().position(has_c).expect("/c returned");
    let period = tr[1].t - tr[0].t;
    let (t_gone, t_back) = (tr[gone].t, tr[back].t);
    println!(
        "period {:.1} ms; /c inactive from {t_gone:.3} s, active again at {t_back:.3} s",
        period * 1e3
    );
    assert!(t_gone > 2.0 && t_back < 9.0, "{t_gone} {t_back}");
    assert!(
        (2.9..3.2).contains(&(t_back - t_gone)),
        "{t_gone}..{t_back}"
    );

    // all three saturating: 100:300:400
    let between = |a: f64, b: f64| usage_shares(tr.iter().filter(move |p| p.t > a && p.t < b));
    assert_shares(
        "all three active",
        &between(0.5, t_gone - 0.1),
        &[("/a", 12.5), ("/b", 37.5), ("/c", 50.0)],
    );

    // idle for a whole period with nothing in flight, /c is deactivated and
    // its share goes to /a and /b: the whole device, 100:300, every period
    for p in &tr[gone..back] {
        assert_eq!(p.groups.len(), 2, "at {:.3}: {:?}", p.t, p.groups.keys());
        assert_eq!(
            (p.groups["/a"].0, p.groups["/b"].0),
            (25.0, 75.0),
            "at {:.3}",
            p.t
        );
    }
    assert_shares(
        "/c idle",
        &between(t_gone + 0.1, t_back - 0.1),
        &[("/a", 25.0), ("/b", 75.0)],
    );

    // back: its full weight at once, and half of the device in the very
    // next period
    let first = &tr[back].groups;
    assert_eq!(
        (first["/a"].0, first["/b"].0, first["/c"].0),
        (12.5, 37.5, 50.0),
        "weights on return"
    );
    let next = usage_shares([&tr[back + 1]]);
    println!("period after /c returned: {next:?}");
    assert_shares(
        "the period after /c returned",
        &next,
        &[("/a", 12.5), ("/b", 37.5), ("/c", 50.0)],
    );
    assert_shares(
        "/c back",
        &between(t_back + 0.1, 9.9),
        &[("/a", 12.5), ("/b", 37.5), ("/c", 50.0)],
    );
}
