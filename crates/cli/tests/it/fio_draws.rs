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
    // directions of different smallest sizes: each aligns its offsets to
    // its own `ba` and indexes the random map (a bit per `rw_min_bs`) in
    // its own blocks, so the larger direction's next free bit can lie past
    // its last block and the file is done early
    (
        "--size=16m --rw=randrw --bs=4k,64k",
        [802_816, 13_107_200, 196, 200],
    ),
    (
        "--size=16m --rw=randrw --bs=64k,4k",
        [11_403_264, 741_376, 174, 181],
    ),
    (
        "--size=16m --rw=randwrite --bs=,64k",
        [0, 10_158_080, 0, 155],
    ),
    (
        "--size=16m --rw=randrw --bs=4k,64k --norandommap",
        [901_120, 15_925_248, 220, 243],
    ),
    (
        "--size=32m --rw=randrw --bsrange=4k-16k,64k-128k",
        [2_101_248, 21_233_664, 216, 233],
    ),
    // a file that is done hands the IO, its direction drawn again and its
    // length not yet drawn, to the next file
    (
        "--size=16m --rw=randrw --bs=4k,64k --nrfiles=2",
        [634_880, 10_158_080, 155, 155],
    ),
    (
        "--size=16m --rw=randrw --bssplit=4k/50:8k/50,64k/50:128k/50 --nrfiles=2",
        [466_944, 6_946_816, 78, 79],
    ),
    // a `ba` other than the block size turns the random map off
    (
        "--size=16m --rw=randread --bs=8k --ba=4k",
        [16_777_216, 0, 2048, 0],
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

/// A time-based job whose larger direction runs out of blocks in the map
/// starts a new pass (fio `thread_main` clears the files) and keeps its
/// rate: 1 s at 1,000 reads and 500 writes per second over a 1 MiB file
/// of 16 write blocks.
#[test]
fn a_time_based_job_whose_map_fails_a_direction_starts_a_new_pass() {
    let r = blkqos(
        &[
            "run",
            "--device=ssd",
            "--name=L",
            "--output-format=json",
            "--time_based",
            "--runtime=1",
            "--size=1m",
            "--rw=randrw",
            "--bs=4k,64k",
            "--rate_iops=1000,500",
        ],
        None,
    );
    r.ok();
    let doc = r.json();
    let ios = |d: &str| num(&doc, &format!("/jobs/0/{d}/total_ios"));
    assert_eq!((ios("read"), ios("write")), (1000.0, 500.0));
}
