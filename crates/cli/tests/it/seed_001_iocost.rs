//! Seed 001 end to end: the seed's noisy-neighbour script (cgA 1 MiB randrw
//! QD128 against cgB 4k/32k/256k randrw QD1 at 100+100 IOPS) on the
//! example profiles, with the kernel before (`reset`) and after (`hold`)
//! f91ffe89b201 "blk-iocost: fix busy_level reset when no IOs complete".
//!
//! * From first principles (the examples as they are: vrate starts at the
//!   kernel's 100%): this model of the disk is never saturated by cgA at
//!   the vrate iocost keeps, so `reset` and `hold` give the same table and
//!   cgB is protected; the seed's starvation is *not* reproduced
//!   (docs/fidelity.md, "Seed 001").
//! * Started where the seed's trace shows the pre-fix kernel (vrate
//!   127.50%, stated explicitly here as the what-if it is): on the
//!   Azure-like disk (credit released on grant ticks, most 7 ms periods
//!   complete nothing under saturation) `reset` starves cgB (≤ 10 IOPS,
//!   ≥ 100 ms average completion latency; the seed: 4–6 IOPS, 170–225 ms)
//!   and `hold` protects it (≥ 190 IOPS, ≤ 5 ms; the seed: 199–200 IOPS,
//!   1.95–4.01 ms), leaving cgA within 25% of the seed's "after" IOPS.
//! * GCP-like disk (same limits, credit granted continuously): even
//!   `reset` protects cgB.
//!
//! Each case simulates 10 s; the tables are printed (`--nocapture`).

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;

const SIZES: [&str; 3] = ["4k", "32k", "256k"];

/// The seed's "After" cgA IOPS per cgB block size (v1 table).
fn seed_after_cga(bs: &str) -> f64 {
    match bs {
        "4k" => 159.0,
        "32k" => 147.0,
        "256k" => 114.0,
        _ => unreachable!(),
    }
}

/// `.jobs[0].mixed` of a report.
fn mixed(dir: &Path, file: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
    let v: Value = serde_json::from_str(&text).expect("fio JSON");
    v.pointer("/jobs/0/mixed")
        .cloned()
        .expect("unified_rw_reporting=mixed")
}

/// One seed-001 run: `profile`.toml with cgB at `bs`, in a fresh
/// directory (kept alive by the returned guard) that holds the reports.
fn run_case(
    profile: &str,
    variant: &str,
    bs: &str,
    vrate: Option<&str>,
) -> (tempfile::TempDir, Value, Value) {
    let src = std::fs::read_to_string(example(&format!("seed-001-iocost/{profile}.toml")))
        .expect("example profile");
    assert!(src.contains("--bs=4k ") && src.contains("cgB_4k.json"));
    assert!(!src.contains("iocost_vrate"), "the example states no vrate");
    let mut text = src
        .replace("--bs=4k ", &format!("--bs={bs} "))
        .replace("cgB_4k.json", &format!("cgB_{bs}.json"));
    if let Some(v) = vrate {
        text += &format!("\n[controllers]\niocost_vrate = {v}\n");
    }
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "scenario.toml", &text);
    blkqos(
        &["run", "scenario.toml", &format!("--iocost={variant}")],
        Some(dir.path()),
    )
    .ok();
    let a = mixed(dir.path(), "cgA_1m.json");
    let b = mixed(dir.path(), &format!("cgB_{bs}.json"));
    (dir, a, b)
}

struct Case {
    bs: &'static str,
    /// kept for the summary table
    dir: tempfile::TempDir,
    a_iops: f64,
    b_iops: f64,
    /// ms
    b_clat: f64,
}

/// The three block sizes of one profile and variant, run in parallel, and
/// the seed's table printed from their reports.
fn run_all(profile: &str, variant: &str, vrate: Option<&'static str>) -> Vec<Case> {
    let cases: Vec<Case> = std::thread::scope(|s| {
        let hs: Vec<_> = SIZES
            .iter()
            .map(|&bs| s.spawn(move || (bs, run_case(profile, variant, bs, vrate))))
            .collect();
        hs.into_iter()
            .map(|h| {
                let (bs, (dir, a, b)) = h.join().expect("run");
                Case {
                    bs,
                    dir,
                    a_iops: num(&a, "/iops"),
                    b_iops: num(&b, "/iops"),
                    b_clat: num(&b, "/clat_ns/mean") / 1e6,
                }
            })
            .collect()
    });
    let mut files = vec!["summary".to_string()];
    for c in &cases {
        files.push(c.dir.path().join("cgA_1m.json").display().to_string());
        files.push(
            c.dir
                .path()
                .join(format!("cgB_{}.json", c.bs))
                .display()
                .to_string(),
        );
    }
    let table = blkqos(&files, None);
    table.ok();
    println!(
        "\n{profile}, iocost={variant}, vrate at start {}:\n\n{}",
        vrate.unwrap_or("100 (the kernel's)"),
        table.stdout_str()
    );
    cases
}

/// The seed's trace: the pre-fix kernel at vrate 127.50%.
const SEED_VRATE: Option<&str> = Some("127.50");

/// From the kernel's own start (100%), the model of the seed's disk with
/// the fix (`hold`) protects cgB at every size. Without it (`reset`), 4k
/// and 32k come out the same, and at 256k cgB loses: 169 against 196 IOPS,
/// p99 38.5 ms against 3.3 (since the period timer runs a tick after its
/// expiry, as the kernel's timer wheel runs it). That is the seed's
/// direction, not its size: the seed's "before" table has cgB at 4-5 IOPS.
#[test]
fn azure_from_first_principles_hold_protects_cgb() {
    let reset = run_all("azure", "reset", None);
    let hold = run_all("azure", "hold", None);
    for (r, h) in reset.iter().zip(&hold) {
        assert!(
            h.b_iops >= 190.0 && h.b_clat <= 5.0,
            "cgB-{} with hold: {:.1} IOPS, {:.2} ms",
            h.bs,
            h.b_iops,
            h.b_clat
        );
        if r.bs == "256k" {
            assert!(
                r.b_iops < h.b_iops - 15.0,
                "cgB-256k: reset {:.1} IOPS, hold {:.1}",
                r.b_iops,
                h.b_iops
            );
        } else {
            assert_eq!((r.a_iops, r.b_iops), (h.a_iops, h.b_iops), "cgB-{}", r.bs);
        }
    }
}

#[test]
fn azure_at_the_seeds_vrate_reset_starves_cgb() {
    for c in run_all("azure", "reset", SEED_VRATE) {
        assert!(
            c.b_iops <= 10.0 && c.b_clat >= 100.0,
            "cgB-{}: {:.1} IOPS, {:.2} ms average clat; the seed without the fix: 4-6 IOPS, 170-225 ms",
            c.bs,
            c.b_iops,
            c.b_clat
        );
        // cgA owns the disk: 166-167 MiB/s in the seed
        assert!(
            c.a_iops >= 160.0,
            "cgA with cgB-{}: {} IOPS",
            c.bs,
            c.a_iops
        );
    }
}

#[test]
fn azure_at_the_seeds_vrate_hold_protects_cgb() {
    for c in run_all("azure", "hold", SEED_VRATE) {
        // 256k: 183 IOPS at 5.2 ms on average where the seed has 199-200 at
        // 2-4 ms (since the period timer runs a tick after its expiry)
        let (iops, clat) = if c.bs == "256k" {
            (180.0, 6.0)
        } else {
            (190.0, 5.0)
        };
        assert!(
            c.b_iops >= iops && c.b_clat <= clat,
            "cgB-{}: {:.1} IOPS, {:.2} ms average clat; the seed with the fix: 199-200 IOPS, 1.95-4.01 ms",
            c.bs,
            c.b_iops,
            c.b_clat
        );
        let want = seed_after_cga(c.bs);
        assert!(
            within(c.a_iops, want, 25.0),
            "cgA with cgB-{}: {} IOPS, the seed's after: {want} ± 25%",
            c.bs,
            c.a_iops
        );
    }
}

#[test]
fn gcp_reset_does_not_starve_cgb() {
    for c in run_all("gcp", "reset", SEED_VRATE) {
        assert!(
            c.b_iops >= 190.0 && c.b_clat <= 5.0,
            "cgB-{} on the smooth disk without the fix: {:.1} IOPS, {:.2} ms average clat",
            c.bs,
            c.b_iops,
            c.b_clat
        );
    }
}

#[test]
fn scenario_toml_is_the_azure_profile() {
    let read = |f: &str| std::fs::read_to_string(example(&format!("seed-001-iocost/{f}"))).unwrap();
    assert_eq!(read("scenario.toml"), read("azure.toml"));
    // the two profiles differ only in how credit is granted
    let strip = |s: String| -> Vec<String> {
        s.lines()
            .filter(|l| {
                !l.starts_with('#') && !l.starts_with("description") && !l.starts_with("grant_")
            })
            .map(str::to_string)
            .collect()
    };
    assert_eq!(strip(read("azure.toml")), strip(read("gcp.toml")));
}
