//! fio's own draws: block sizes (`bssplit`, `bsrange`), the read/write
//! mix and uniform random offsets come from fio 3.33's generators and
//! seeds (`blkqos_workload::fio_rand`), so the same job moves the same
//! bytes in the same IOs under fio and blkqos.
//!
//! [`CASES`] holds what fio 3.33 reported for each job (`--ioengine=null`,
//! JSON: read and write `io_bytes`, read and write `total_ios`), recorded
//! by running it; this module checks blkqos against those figures, and
//! `tier_real::fio_draws` runs fio itself on the same jobs and on more
//! seeds.

use crate::common;

use common::*;

/// (job options after `--name=L --ioengine=null`, fio 3.33's read bytes,
/// write bytes, read IOs, write IOs).
pub const CASES: &[(&str, [u64; 4])] = &[
    // the bssplit job fio and blkqos used to disagree on, at QD8 and QD1
    (
        "--size=4G --rw=randread --bssplit=4k/50:64k/30:256k/20 --number_ios=1090 --iodepth=8",
        [86_708_224, 0, 1090, 0],
    ),
    (
        "--size=4G --rw=randread --bssplit=4k/50:64k/30:256k/20 --number_ios=1060",
        [84_484_096, 0, 1060, 0],
    ),
    // bsrange, no random map
    (
        "--size=4G --rw=randwrite --bsrange=4k-64k --norandommap --number_ios=2000",
        [0, 72_388_608, 0, 2000],
    ),
    // a split per direction and the read/write mix
    (
        "--size=4G --rw=randrw --rwmixread=70 --bssplit=4k/50:64k/30:256k/20,8k/60:128k/40 --norandommap --number_ios=2000",
        [113_528_832, 32_972_800, 1395, 605],
    ),
    // a randseed (it turns randrepeat off, after fio seeded the offsets)
    (
        "--size=4G --rw=randread --bssplit=4k/50:64k/30:256k/20 --norandommap --randseed=1234 --number_ios=2000",
        [151_408_640, 0, 2000, 0],
    ),
    (
        "--size=4G --rw=randread --bssplit=4k/50:64k/30:256k/20 --randrepeat=0 --randseed=99 --number_ios=2000",
        [141_332_480, 0, 2000, 0],
    ),
    // the 64-bit generator
    (
        "--size=4G --rw=randrw --bssplit=4k/50:64k/30:256k/20 --random_generator=tausworthe64 --number_ios=3000",
        [107_782_144, 110_800_896, 1463, 1537],
    ),
    // three clones, each seeded by its thread number
    (
        "--size=4G --rw=randrw --bssplit=4k/50:64k/30:256k/20 --number_ios=3000 --numjobs=3 --group_reporting",
        [315_060_224, 323_837_952, 4393, 4607],
    ),
    // size-bound: the random map cuts IOs to its free runs, and a size
    // that does not fit before the end is passed over or drawn again
    (
        "--size=64m --rw=randread --bssplit=4k/50:64k/30:256k/20",
        [67_108_864, 0, 1823, 0],
    ),
    (
        "--size=1m --rw=randread --bssplit=4k/50:64k/30:256k/20",
        [1_048_576, 0, 44, 0],
    ),
    (
        "--size=16m --rw=read --bssplit=4k/10:48k/90",
        [16_777_216, 0, 389, 0],
    ),
    (
        "--size=16m --rw=write --bsrange=4k-100k",
        [0, 16_777_216, 0, 312],
    ),
];

/// blkqos's (read bytes, write bytes, read IOs, write IOs) of the first
/// job of `options`.
pub fn blkqos_counts(options: &str) -> [u64; 4] {
    let mut args = vec!["run", "--name=L", "--ioengine=null", "--output-format=json"];
    args.extend(options.split_whitespace());
    let r = blkqos(&args, None);
    r.ok();
    let doc = r.json();
    let at = |p: &str| num(&doc, &format!("/jobs/0/{p}")) as u64;
    [
        at("read/io_bytes"),
        at("write/io_bytes"),
        at("read/total_ios"),
        at("write/total_ios"),
    ]
}

#[test]
fn the_same_jobs_move_the_same_bytes_in_the_same_ios_as_fio_3_33() {
    let mut wrong = Vec::new();
    for (options, fio) in CASES {
        let got = blkqos_counts(options);
        if got != *fio {
            wrong.push(format!("{options}\n  fio 3.33 {fio:?}\n  blkqos   {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
