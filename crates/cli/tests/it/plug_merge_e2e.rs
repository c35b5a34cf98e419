//! Batched submission (`iodepth_batch_submit`) and the block layer's plug
//! merge, end to end on the simulator: adjacent bios of one submit call
//! become one request up to `max_sectors_kb` (diskstats counts merges and
//! requests, fio counts its IOs), and under iocost a merged bio pays its
//! size cost only, as debt when over budget, which puts the submitter in
//! issuer delay (fio sees it as `slat`).

use crate::common;

use common::*;
use serde_json::Value;

/// A 2 s sequential (or random) 4 KiB-aligned writer on an ssd, QD32:
/// the fio JSON.
fn writer(rw: &str, bs: &str, batch: &str, device: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let r = blkqos(
        &[
            "run".to_string(),
            "--name=w".into(),
            format!("--rw={rw}"),
            format!("--bs={bs}"),
            "--size=256m".into(),
            "--runtime=2".into(),
            "--time_based".into(),
            "--ioengine=io_uring".into(),
            "--iodepth=32".into(),
            format!("--iodepth_batch_submit={batch}"),
            "--direct=1".into(),
            format!("--device={device}"),
            "--output-format=json".into(),
        ],
        Some(dir.path()),
    );
    r.ok();
    r.json()
}

/// (bios fio completed, requests the disk completed, merges the disk counted).
fn counts(doc: &Value) -> (f64, f64, f64) {
    (
        num(doc, "/jobs/0/write/total_ios"),
        num(doc, "/disk_util/0/write_ios"),
        num(doc, "/disk_util/0/write_merges"),
    )
}

/// Every bio is a request or a merge; the last calls' bios may still be
/// in flight when the run ends (counted by neither side yet).
fn assert_every_bio_accounted(what: &str, doc: &Value) {
    let (bios, rqs, merges) = counts(doc);
    assert!(
        (rqs + merges - bios).abs() <= 32.0,
        "{what}: {rqs} requests + {merges} merges vs {bios} bios"
    );
}

/// Sixteen 4 KiB sequential writes per call make one 64 KiB request; with
/// `max_sectors_kb=32` a request stops at eight (the job then reaps eight
/// at a time and commits eight per call); `iodepth_batch_submit=0` means
/// the iodepth (32 × 4 KiB = 128 KiB, the ssd's limit).
#[test]
fn sequential_batches_merge_up_to_max_sectors() {
    for (device, batch, bios_per_rq, submit_bucket) in [
        ("ssd", "16", 16.0, "16"),
        ("ssd,max_sectors_kb=32", "16", 8.0, "8"),
        ("ssd", "0", 32.0, "32"),
    ] {
        let what = format!("{device} batch={batch}");
        let doc = writer("write", "4k", batch, device);
        assert_every_bio_accounted(&what, &doc);
        let (bios, rqs, _) = counts(&doc);
        assert_within(
            &format!("{what}: bios per request"),
            bios / rqs,
            bios_per_rq,
            1.0,
        );
        // fio's "submit" distribution: (nearly) every call commits a batch
        // of that size
        let pct = num(&doc, &format!("/jobs/0/iodepth_submit/{submit_bucket}"));
        assert!(pct > 99.0, "{what}: {}", doc["jobs"][0]["iodepth_submit"]);
    }
}

/// A submit call commits what the job queued before it had to wait:
/// 64 KiB writes merge in pairs (128 KiB), a pair completes together,
/// the job reaps two, queues two and must wait again, so it commits two
/// per call, and io_uring plugs only calls of more than two IOs: the
/// merging stops by itself (fio's behaviour with
/// `iodepth_batch_complete_min=1`).
#[test]
fn partial_batches_of_two_do_not_plug() {
    let doc = writer("write", "64k", "16", "ssd");
    assert_every_bio_accounted("64k", &doc);
    let (bios, _, merges) = counts(&doc);
    assert!(merges > 0.0 && merges < bios * 0.01, "{merges} of {bios}");
    assert!(
        num(&doc, "/jobs/0/iodepth_submit/4") > 99.0,
        "{}",
        doc["jobs"][0]["iodepth_submit"]
    );
}

/// No merges without a plug (one IO per call, or two: io_uring plugs
/// only calls of more than two IOs), nor between random writes.
#[test]
fn no_merges_without_a_plug_or_adjacent_bios() {
    for (rw, batch) in [("write", "1"), ("write", "2"), ("randwrite", "16")] {
        let what = format!("rw={rw} batch={batch}");
        let doc = writer(rw, "4k", batch, "ssd");
        assert_every_bio_accounted(&what, &doc);
        let (bios, _, merges) = counts(&doc);
        assert!(bios > 10_000.0, "{what}: {bios}");
        if rw == "write" {
            assert_eq!(merges, 0.0, "{what}");
        } else {
            // 16 random 4 KiB offsets in 256 MiB: adjacent pairs are rare
            assert!(merges < bios * 0.001, "{what}: {merges} of {bios}");
        }
    }
}

/// `examples/iocost-weights/merge-debt.toml`, and the same with one IO per
/// call. iocost on a saturated ssd: `/a` (weight 100) writes 64 KiB sequentially
/// at QD64, `/b` (weight 300) reads 4 KiB at random. With one IO per call
/// nothing merges and `/a` waits in iocost for each IO; with 16 per call
/// the ssd sees 512 KiB requests (max_segments), each bio after a
/// request's first merged: it pays
/// its size cost only and cannot wait, so over budget it is debt, and the
/// debt's overage puts `/a` in issuer delay: the submitter sleeps before
/// its call returns (fio `slat`). Either way `/a` gets its 25% of the
/// device time (`cost.usage`): debt and delay are how iocost keeps that
/// share when IO cannot wait.
#[test]
fn iocost_charges_merges_as_debt_and_delays_the_submitter() {
    let run = |batch: u32| {
        let dir = tempfile::tempdir().unwrap();
        let example = std::fs::read_to_string(example("iocost-weights/merge-debt.toml")).unwrap();
        assert!(example.contains("--iodepth_batch_submit=16 "));
        let scen = write_file(
            dir.path(),
            "merge.toml",
            &example.replace(
                "--iodepth_batch_submit=16 ",
                &format!("--iodepth_batch_submit={batch} "),
            ),
        );
        let io_stat = dir.path().join("io.stat");
        blkqos(
            &[
                "run".to_string(),
                scen.display().to_string(),
                "--blkcg-debug-stats=1".into(),
                format!("--io-stat={}", io_stat.display()),
            ],
            Some(dir.path()),
        )
        .ok();
        let a: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("a.json")).unwrap())
                .unwrap();
        (a, std::fs::read_to_string(&io_stat).unwrap())
    };
    let (one, stat_one) = run(1);
    let (sixteen, stat_sixteen) = run(16);
    let key = |stat: &str, k: &str| io_stat_key(stat, "/a", k);

    // one IO per call: no merges, no debt, no delay
    assert_eq!(num(&one, "/disk_util/0/write_merges"), 0.0);
    assert_eq!(key(&stat_one, "cost.indebt"), 0.0, "{stat_one}");
    assert_eq!(key(&stat_one, "cost.indelay"), 0.0, "{stat_one}");

    // sixteen per call: 512 KiB requests, debt, and the submitter delayed
    let bios = num(&sixteen, "/jobs/0/write/total_ios");
    let rqs = num(&sixteen, "/disk_util/0/write_ios");
    // 8 × 64 KiB = 128 segments of 4 KiB: queue/max_segments stops the merge
    assert_within("bios per request", bios / rqs, 8.0, 5.0);
    let indebt_us = key(&stat_sixteen, "cost.indebt");
    let indelay_us = key(&stat_sixteen, "cost.indelay");
    assert!(
        indebt_us > 1.5e6,
        "in debt {indebt_us} us of 3 s\n{stat_sixteen}"
    );
    assert!(
        indelay_us > 1.5e6,
        "in delay {indelay_us} us of 3 s\n{stat_sixteen}"
    );
    let slat_min_ms = num(&sixteen, "/jobs/0/write/slat_ns/min") / 1e6;
    let slat_mean_ms = num(&sixteen, "/jobs/0/write/slat_ns/mean") / 1e6;
    assert!(
        slat_min_ms >= 0.25 && slat_mean_ms > 10.0,
        "slat min {slat_min_ms} ms, mean {slat_mean_ms} ms: issuer delay in the submit call"
    );
    assert!(
        num(&one, "/jobs/0/write/slat_ns/min") < 250_000.0,
        "without merges some calls return at once"
    );

    // the share of device time holds either way: 25% of 3 s
    for (what, stat) in [("batch 1", &stat_one), ("batch 16", &stat_sixteen)] {
        let usage_s = key(stat, "cost.usage") / 1e6;
        assert_within(&format!("{what}: /a device time (s)"), usage_s, 0.75, 5.0);
    }
}
