//! Buffered writes and writeback end to end, in-process through the
//! library: seed 003's two `dd` writers under 4 MB/s and 2 MB/s write
//! limits, through the simulated page cache.

use crate::common;

use common::*;
use serde_json::Value;

/// Run seed 003's example with `--writeback=mode` (and extra flags)
/// in-process; return the writeback report (JSON) and both writers' fio
/// JSON.
fn seed003(mode: &str, extra: &[&str]) -> (Value, Value, Value) {
    let mut args = vec![
        example("seed-003-writeback/scenario.toml")
            .display()
            .to_string(),
        format!("--writeback={mode}"),
        "--output-format=json".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = run_in_process(&args);
    let [a, b] = &r.docs[..] else {
        panic!("two writers' reports, got {}", r.docs.len());
    };
    let wb = r.pagecache.clone().expect("a writeback report");
    (wb, a.clone(), b.clone())
}

/// Device write MB/s for each whole second while both writers dirty pages.
fn disk_series(wb: &Value) -> Vec<f64> {
    wb["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["second"].as_u64().unwrap() <= 60)
        .map(|s| s["device_write_bytes"].as_f64().unwrap() / 1e6)
        .collect()
}

/// Run scenario `text` in-process with JSON output (plus `extra` flags);
/// the fio JSON, the disk's diskstats counters at the end and the
/// writeback report, if any.
fn run_scenario(text: &str, extra: &[&str]) -> (Value, Vec<u64>, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "s.toml", text);
    let mut args = vec![p.display().to_string(), "--output-format=json".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = run_in_process(&args);
    (r.json().clone(), r.diskstats.clone(), r.pagecache)
}

fn writer_mbps(fio: &Value) -> f64 {
    num(fio, "/jobs/0/write/bw_bytes") / 1e6
}

/// The seed's "with kiothrottled" column: after warm-up, every second the
/// disk writes what that column's `dstat` lines show (6144k to 6904k a
/// second, 6.29 to 7.07 MB/s; the seed expects 6 MB/s), and each writer's
/// long-run rate (its runtime includes `end_fsync`, so every byte it wrote
/// reached the disk) is within 15 % of its limit. A second holds a whole
/// number of the flushers' bios (up to 512 KiB at 2 and 4 MiB/s), so it
/// may read a bio more or less. The sync mode (throttling in the
/// flusher's context) is burstier and holds both writers under their
/// limits, as the seed's "without kiothrottled" column.
#[test]
fn seed_003_async_writeback_is_steady_and_meets_the_limits() {
    let (wb, a, b) = seed003("async", &[]);
    let (swb, sa, sb) = seed003("sync", &[]);
    let series = disk_series(&wb);
    let sync_series = disk_series(&swb);
    println!("sec  async  sync (disk MB/s)");
    for (i, (x, y)) in series.iter().zip(&sync_series).enumerate() {
        println!("{:>3} {x:>6.2} {y:>6.2}", i + 1);
    }
    let (ra, rb) = (writer_mbps(&a), writer_mbps(&b));
    let (sra, srb) = (writer_mbps(&sa), writer_mbps(&sb));
    println!("writers: async {ra:.2} / {rb:.2} MB/s, sync {sra:.2} / {srb:.2} MB/s");
    assert!(series.len() >= 60, "{} seconds", series.len());
    // warm-up: the first second (dirtying up to the background threshold)
    for (i, &x) in series.iter().enumerate().skip(1) {
        assert!(
            (6.0..=7.07).contains(&x),
            "async second {}: {x} MB/s",
            i + 1
        );
    }
    assert_within("writer a (4 MiB/s limit)", ra, 4.194304, 15.0);
    assert_within("writer b (2 MiB/s limit)", rb, 2.097152, 15.0);
    // sync: burstier (spread of the per-second series) and both under limit
    let spread = |s: &[f64]| {
        let s = &s[1..];
        s.iter().cloned().fold(f64::MIN, f64::max) - s.iter().cloned().fold(f64::MAX, f64::min)
    };
    // the seed's own column spreads 0.78 MB/s (6144k-6904k)
    assert!(spread(&series) < 0.78, "async spread {}", spread(&series));
    assert!(
        spread(&sync_series) > 1.5,
        "sync spread {} MB/s",
        spread(&sync_series)
    );
    assert!(
        sra < 4.194304 * 0.85 && srb < 2.097152,
        "sync writers {sra} {srb}"
    );
    // conservation: every dirtied byte was written back, once
    for r in [&wb, &swb] {
        assert_eq!(r["double_writebacks"], 0);
        assert_eq!(r["dirtied_bytes"], r["written_back_bytes"]);
        for t in r["tasks"].as_array().unwrap() {
            assert_eq!(t["dirty_pages_end"], 0, "end_fsync leaves nothing dirty");
            assert_eq!(t["fsyncs"], 1);
        }
    }
}

/// Limits bound the owner's writeback in every second (async), and with
/// writeback charged to the root group (cgroup v1) they do not apply at all.
#[test]
fn owner_limits_bound_writeback_unless_charged_to_root() {
    let (wb, _, _) = seed003("async", &[]);
    for s in wb["series"].as_array().unwrap() {
        let per = &s["writeback_bytes"];
        let a = per["/a"].as_f64().unwrap_or(0.0);
        let b = per["/b"].as_f64().unwrap_or(0.0);
        // one 512 KiB request of slack per second
        assert!(a <= 4194304.0 + 524288.0, "second {}: /a {a}", s["second"]);
        assert!(b <= 2097152.0 + 524288.0, "second {}: /b {b}", s["second"]);
    }
    let (root, a, b) = seed003("root", &[]);
    let series = disk_series(&root);
    let peak = series.iter().cloned().fold(0.0, f64::max);
    println!(
        "root: peak {peak:.1} MB/s, writers {:.1} / {:.1} MB/s",
        writer_mbps(&a),
        writer_mbps(&b)
    );
    assert!(
        peak > 20.0,
        "root writeback escapes the limits: peak {peak}"
    );
    assert!(writer_mbps(&b) > 2.097152 * 2.0);
}

/// Buffered reads of pages the job wrote are served from the cache: the
/// device sees no read.
#[test]
fn buffered_reads_of_written_pages_hit_the_cache() {
    let text = "[device]\nmodel = \"ssd\"\ndevid = \"259:0\"\n\
        [pagecache]\nmemory = \"256m\"\n\
        [[fio]]\nargs = \"--filename=shared --name=w --rw=write --bs=64k --size=32m --direct=0 --end_fsync=1 \
        --name=r --stonewall --rw=read --bs=64k --size=32m --direct=0\"\n";
    let (d, f, _) = run_scenario(text, &["--iostats=precise"]);
    assert_eq!(num(&d, "/jobs/1/read/io_bytes"), 32.0 * 1048576.0);
    assert_eq!(f[0], 0, "reads completed by the device: {f:?}");
    assert_eq!(f[6] * 512, 32 << 20, "sectors written: {f:?}");
}

/// Writeback IOs longer than the device's max IO size are split like any
/// other bio: 1 MiB writeback on an SSD with `max_sectors_kb = 128` reaches
/// the disk as 128 KiB requests, every dirtied byte once, and a `wiops`
/// limit on the owner counts the requests (mainline).
#[test]
fn writeback_longer_than_max_io_is_split_and_charged_per_request() {
    let text = "cgroups = [\"/w\"]\n[device]\nmodel = \"ssd\"\ndevid = \"259:0\"\nmax_sectors_kb = 128\n\
        [pagecache]\nmemory = \"256m\"\nwriteback_io = \"1m\"\nreport = \"wb.json\"\n\
        [[write]]\nfile = \"/sys/fs/cgroup/w/io.max\"\nvalue = \"259:0 wiops=200\"\n\
        [[fio]]\nargs = \"--name=w --cgroup=/w --rw=write --bs=64k --size=16m --direct=0 --end_fsync=1\"\n";
    let (d, f, wb) = run_scenario(text, &[]);
    assert_eq!(num(&d, "/jobs/0/write/io_bytes"), 16.0 * 1048576.0);
    assert_eq!(f[6] * 512, 16 << 20, "sectors written: {f:?}");
    // 128 pieces of 128 KiB (+ the fsync's flush, counted by diskstats
    // in its own fields, not as a write)
    assert_eq!(f[4], 128, "write requests: {f:?}");
    let wb = wb.expect("the writeback report");
    assert_eq!(wb["dirtied_bytes"], wb["written_back_bytes"]);
    assert_eq!(wb["double_writebacks"], 0);
    // 128 requests at 200 per second: end_fsync waits ≈ 0.64 s of writeback
    let runtime_ms = num(&d, "/jobs/0/write/runtime");
    assert!(
        (560.0..=720.0).contains(&runtime_ms),
        "runtime {runtime_ms} ms"
    );
}

/// fio's `fsync=N` / `fdatasync=N`: a sync after every N-th write (none
/// after the last write: the job ends first, as fio's 31 syncs for 256
/// writes with `fsync=8`), reported as fio's `sync` object; each sync
/// writes the file's dirty pages back, so after `fsync=64` the disk holds
/// the first 192 writes and the last 64 stay dirty. `end_fsync` syncs are
/// not counted (fio: `TD_FSYNCING`).
#[test]
fn fsync_every_n_writes_syncs_and_is_reported_like_fio() {
    let run = |extra: &str| -> (Value, u64) {
        let text = format!(
            "[device]\nmodel = \"ssd\"\ndevid = \"259:0\"\n[pagecache]\nmemory = \"1g\"\n\
             [[fio]]\nargs = \"--name=w --rw=write --bs=4k --size=1m --ioengine=psync {extra}\"\n"
        );
        let (d, f, _) = run_scenario(&text, &[]);
        (d, f[6] * 512)
    };
    let (d, _) = run("--direct=1 --fsync=8");
    assert_eq!(num(&d, "/jobs/0/sync/total_ios"), 31.0);
    assert_eq!(num(&d, "/jobs/0/sync/lat_ns/N"), 31.0);
    assert_eq!(num(&d, "/jobs/0/write/total_ios"), 256.0);
    let (d, _) = run("--direct=1 --fdatasync=16");
    assert_eq!(num(&d, "/jobs/0/sync/total_ios"), 15.0);
    let (d, written) = run("--direct=0 --fsync=64");
    assert_eq!(num(&d, "/jobs/0/sync/total_ios"), 3.0);
    assert_eq!(written, 192 * 4096, "bytes on disk after the third sync");
    let (d, written) = run("--direct=0 --end_fsync=1");
    assert_eq!(num(&d, "/jobs/0/sync/total_ios"), 0.0);
    assert_eq!(written, 1 << 20);
    let (d, written) = run("--direct=0");
    assert_eq!(num(&d, "/jobs/0/sync/total_ios"), 0.0);
    assert_eq!(written, 0, "nothing synced, nothing past the thresholds");
}

/// Write bandwidth of a 1 s buffered sequential write job of 256 KiB
/// IOs on libaio at `iodepth`, on the default (null) device.
fn buffered_write_bw(iodepth: u32) -> f64 {
    let r = run_in_process(&[
        "--name=w".to_string(),
        "--rw=write".into(),
        "--bs=256k".into(),
        "--size=10g".into(),
        "--runtime=1".into(),
        "--time_based".into(),
        "--ioengine=libaio".into(),
        format!("--iodepth={iodepth}"),
        "--direct=0".into(),
        "--output-format=json".into(),
    ]);
    r.json()["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap()
}

/// A job's page cache copies are one thread's work, in turn: the iodepth
/// does not multiply a buffered writer's bandwidth, which stays at the
/// host's copy speed (4.92 GB/s plus 0.3 µs per IO, measured) while the
/// null device keeps up with writeback. (Before, 16 copies ran at once and
/// fio-seq-write.fio reported 122 GiB/s.)
#[test]
fn buffered_copies_take_turns_at_the_copy_speed() {
    let deep = buffered_write_bw(16);
    let shallow = buffered_write_bw(1);
    // one 256 KiB IO: 1 µs submit (iodepth 1 only: at depth the next
    // submit overlaps the copy) + 0.3 µs + 262144 B / 4.92 GB/s = 53.3 µs
    let copy_only = 262_144.0 / (0.3e-6 + 262_144.0 / 4.92e9);
    assert!(
        deep <= copy_only * 1.01 && deep >= copy_only * 0.9,
        "iodepth 16: {deep:.3e} B/s, the copy alone allows {copy_only:.3e}"
    );
    assert!(
        shallow <= deep * 1.001 && shallow >= deep * 0.95,
        "iodepth 1 {shallow:.3e} B/s vs iodepth 16 {deep:.3e} B/s"
    );
}

/// Each owner's flusher submits one bio at a time and sleeps while its
/// request waits for a tag (`blk_mq_get_tag` in the flusher's
/// `wb_workfn`): two buffered writers on a device with 4 tags and 20 MB/s
/// get their writeback through in turns, 8 MiB bios each, every second,
/// rather than one owner's whole writeback chunk before the other's.
#[test]
fn owners_flushers_take_turns_for_tags() {
    let scenario = r#"
seed = 1
cgroups = ["/a", "/b"]

[device]
model = "null"
name = "nullb1"
devid = "254:0"
size = "4g"
mbps = 20
queue_depth = 4
completion_ns = 20000

[pagecache]
memory = "1g"
dirty_bytes = "32m"
dirty_background_bytes = "16m"
writeback_io = "8m"

[[fio]]
cgroup = "/a"
args = "--name=a --filename=a.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=6 --time_based"

[[fio]]
cgroup = "/b"
args = "--name=b --filename=b.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=6 --time_based"
"#;
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "s.toml", scenario);
    let r = run_in_process(&[
        p.display().to_string(),
        "--output-format=json".into(),
        "--pagecache-report=wb.json".into(),
    ]);
    let wb = r.pagecache.expect("a writeback report");
    let series = wb["series"].as_array().unwrap();
    let mib = |s: &Value, g: &str| s["writeback_bytes"][g].as_f64().unwrap_or(0.0) / 1048576.0;
    for s in series
        .iter()
        .filter(|s| (1..=5).contains(&s["second"].as_u64().unwrap()))
    {
        let (a, b) = (mib(s, "/a"), mib(s, "/b"));
        assert!(
            a >= 4.0 && b >= 4.0,
            "second {}: /a {a} MiB, /b {b} MiB",
            s["second"]
        );
    }
}

/// Writes issued and not completed, at most, in a `--ktrace` file
/// (`block_rq_issue` / `block_rq_complete` of writes).
fn max_writes_in_flight(ktrace: &str) -> usize {
    let (mut now, mut max) = (0usize, 0usize);
    for l in ktrace.lines() {
        if l.contains(": block_rq_issue: ") && l.contains(" W ") {
            now += 1;
            max = max.max(now);
        } else if l.contains(": block_rq_complete: ") && l.contains(" W ") {
            now = now.saturating_sub(1);
        }
    }
    max
}

/// blk-wbt (block/blk-wbt.c) keeps buffered writeback from taking every
/// request slot: on a 64-slot queue with a task sleeping in
/// `balance_dirty_pages` it lets writeback use at most `max_depth`, 16 at
/// step 0 and at most 48 (3/4 of the queue) after scaling up, as the
/// `wbt_step` lines say. `queue/wbt_lat_usec = 0` turns it off and the
/// writeback fills all 64 slots.
#[test]
fn wbt_keeps_writeback_below_three_quarters_of_the_queue() {
    let scenario = |wbt: &str| {
        format!(
            r#"
seed = 1
[device]
model = "null"
name = "nullb1"
devid = "254:0"
size = "4g"
mbps = 20
completion_ns = 20000
[pagecache]
memory = "1g"
dirty_bytes = "64m"
dirty_background_bytes = "32m"
writeback_io = "8m"
{wbt}
[[fio]]
args = "--name=w --filename=w.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=4 --time_based"
"#
        )
    };
    let run = ktrace_of;
    let on = run(&scenario(""));
    assert_eq!(max_writes_in_flight(&on), 48, "with blk-wbt");
    assert!(
        on.contains(
            "wbt_step: 254:0: scale up: step=-2, window=100000us, background=12, normal=24, max=48"
        ),
        "{}",
        on.lines()
            .filter(|l| l.contains("wbt_"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let off = run(&scenario(
        "[[write]]\nfile = \"/sys/block/nullb1/queue/wbt_lat_usec\"\nvalue = \"0\"",
    ));
    assert_eq!(max_writes_in_flight(&off), 64, "without blk-wbt");
    assert!(!off.contains("wbt_"));
}

/// Mean length of the runs of one group's requests in the `--ktrace`
/// issue order of two files laid out one after the other (`a.dat` in
/// the first GiB, `b.dat` after it).
fn mean_issue_run(ktrace: &str) -> f64 {
    let order: Vec<bool> = ktrace
        .lines()
        .filter(|l| l.contains(": block_rq_issue: ") && l.contains(" W "))
        .filter_map(|l| {
            let sector: u64 = l.split(" () ").nth(1)?.split(' ').next()?.parse().ok()?;
            Some(sector >= (1 << 30) / 512)
        })
        .collect();
    assert!(order.len() > 100, "{} writes issued", order.len());
    let runs = 1 + order.windows(2).filter(|w| w[0] != w[1]).count();
    order.len() as f64 / runs as f64
}

/// Two owners' flushers each submit an 8 MiB bio as 127 KiB requests
/// through blk-wbt. On the guest each kworker spends its own CPU time per
/// request (`lab/traces/flusher.json`: 4-18 µs), so when blk-wbt wakes
/// both they take the freed slots in turn; with that cost
/// (`writeback_piece_ns`) blkqos's issue order alternates as the traced
/// `block_getrq` order does (runs of 2.7 and 3.1 requests on 6.1), and
/// without it one flusher takes every free slot before the other moves.
#[test]
fn flushers_cpu_time_interleaves_their_requests() {
    let scenario = |piece_ns: u64| {
        format!(
            r#"
seed = 1
cgroups = ["/a", "/b"]
[host]
writeback_piece_ns = {piece_ns}
[device]
model = "null"
name = "nullb1"
devid = "254:0"
size = "4g"
mbps = 20
completion_ns = 20000
[pagecache]
memory = "1g"
dirty_bytes = "64m"
dirty_background_bytes = "32m"
writeback_io = "8m"
[[fio]]
cgroup = "/a"
args = "--name=a --filename=a.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=6 --time_based"
[[fio]]
cgroup = "/b"
args = "--name=b --filename=b.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=6 --time_based"
"#
        )
    };
    let run = |text: &str| mean_issue_run(&ktrace_of(text));
    let paced = run(&scenario(18_000));
    let back_to_back = run(&scenario(0));
    println!("paced {paced}, back to back {back_to_back}");
    assert!(paced < 2.0, "paced: runs of {paced} requests");
    assert!(back_to_back > 4.0, "back to back: runs of {back_to_back}");
}
