//! fio's own draws against fio itself: every job of [`crate::fio_draws::CASES`]
//! run under the installed fio 3.33 (`--ioengine=null`, no IO), and the
//! split and mixed jobs again with `randseed` 1 to 5, each giving the same
//! bytes and IOs per direction in blkqos. Not covered: jobs with several
//! passes (fio seeds its generators again at each) and
//! `file_service_type=random` (fio's own file-choice generator).

use crate::common;
use crate::fio_draws::{blkqos_counts, CASES};

use serde_json::Value;
use std::process::Command;

/// fio's (read bytes, write bytes, read IOs, write IOs) of `options`;
/// `None` when fio 3.33 is not installed.
fn fio_counts(options: &str) -> Option<[u64; 4]> {
    let out = Command::new("fio")
        .args(["--name=L", "--ioengine=null", "--output-format=json"])
        .args(options.split_whitespace())
        .current_dir(std::env::temp_dir())
        .output()
        .ok()?;
    assert!(out.status.success(), "fio {options}: {out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("fio JSON");
    let at = |p: &str| common::num(&doc, &format!("/jobs/0/{p}")) as u64;
    Some([
        at("read/io_bytes"),
        at("write/io_bytes"),
        at("read/total_ios"),
        at("write/total_ios"),
    ])
}

fn fio_3_33() -> bool {
    let v = Command::new("fio").arg("--version").output();
    match v {
        Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with("fio-3.33") => true,
        _ => {
            blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio 3.33 is not installed");
            false
        }
    }
}

#[test]
#[ignore = "tier real"]
fn block_sizes_mix_and_offsets_match_fio_on_every_case_and_seed() {
    if !fio_3_33() {
        return;
    }
    let mut jobs: Vec<String> = CASES.iter().map(|(o, _)| o.to_string()).collect();
    for seed in 1..=5 {
        for split in [
            "--rw=randrw --rwmixread=30 --bssplit=512/10:4k/60:16k/30 --norandommap",
            "--rw=randrw --rwmixread=30 --bssplit=4k/60:16k/40,4k/50:64k/50",
            "--rw=randread --bssplit=4k/25:8k/25:128k/50 --norandommap",
            "--rw=randwrite --bsrange=512-256k",
            "--rw=randrw --bs=4k,64k",
            "--rw=randrw --rwmixread=80 --bs=64k,16k --nrfiles=3",
        ] {
            jobs.push(format!("--size=64m {split} --randseed={seed}"));
        }
    }
    let mut wrong = Vec::new();
    for options in &jobs {
        let fio = fio_counts(options).expect("fio ran");
        let got = blkqos_counts(options);
        if got != fio {
            wrong.push(format!("{options}\n  fio    {fio:?}\n  blkqos {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
