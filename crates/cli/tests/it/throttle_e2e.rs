//! io.max end to end, in-process: scenario file → blk-throttle (or the
//! paced limiter) on the simulator → fio JSON, through the library
//! (`plan_run`, `run_simulated`, `fio_reports`) in the test's own thread.

use crate::common;

use common::*;
use serde_json::Value;

/// A knob write: (`at`, cgroup, io.max line).
type Write<'a> = (Option<&'a str>, &'a str, &'a str);

/// A scenario on a fast simulated SSD (devid 253:0) with io.max writes and
/// one fio process per `(cgroup, args)`.
fn scenario(writes: &[Write], cgroups: &[&str], fios: &[(&str, String)]) -> String {
    let mut s = String::from("seed = 1\n");
    let cg: Vec<String> = cgroups.iter().map(|c| format!("\"{c}\"")).collect();
    s += &format!("cgroups = [{}]\n", cg.join(", "));
    s += "[device]\nmodel = \"ssd\"\ndevid = \"253:0\"\n";
    for (at, cg, v) in writes {
        s += "[[write]]\n";
        if let Some(at) = at {
            s += &format!("at = \"{at}\"\n");
        }
        s += &format!("file = \"/sys/fs/cgroup{cg}/io.max\"\nvalue = \"253:0 {v}\"\n");
    }
    for (cg, args) in fios {
        s += &format!("[[fio]]\ncgroup = \"{cg}\"\nargs = \"{args}\"\n");
    }
    s
}

/// fio options of a saturating random job: libaio, QD 8, `runtime` s.
fn job(name: &str, rw: &str, bs: &str, runtime: u32) -> String {
    format!(
        "--name={name} --rw={rw} --bs={bs} --size=1g --ioengine=libaio --direct=1 \
         --iodepth=8 --runtime={runtime} --time_based"
    )
}

/// Run a scenario (plus flags), return one JSON document per [[fio]].
fn run(text: &str, flags: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "s.toml", text);
    let mut args = vec![p.display().to_string(), "--output-format=json".to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    run_in_process(&args).docs
}

const KERNEL_VARIANTS: &[&str] = &[
    "mainline",
    "legacy",
    "slice-remainder",
    "linux-4.18",
    "linux-5.15",
    "linux-6.18",
];

#[test]
fn riops_limits_a_qd8_reader() {
    let text = scenario(
        &[(None, "/cg1", "riops=100")],
        &[],
        &[("/cg1", job("r", "randread", "4k", 30))],
    );
    for v in KERNEL_VARIANTS.iter().chain(&["paced"]) {
        let docs = run(&text, &[&format!("--throttle={v}")]);
        let iops = num(&docs[0], "/jobs/0/read/iops");
        assert_within(&format!("{v}: riops=100 read iops"), iops, 100.0, 1.0);
        // the device (an SSD at QD 8) could do far more: the limit binds
        assert!(
            num(&docs[0], "/jobs/0/read/clat_ns/mean") > 1e6,
            "{v}: not throttled"
        );
    }
}

#[test]
fn wbps_limits_a_64k_writer() {
    let text = scenario(
        &[(None, "/cg1", "wbps=1048576")],
        &[],
        &[("/cg1", job("w", "randwrite", "64k", 20))],
    );
    for v in KERNEL_VARIANTS.iter().chain(&["paced"]) {
        let docs = run(&text, &[&format!("--throttle={v}")]);
        let bw = num(&docs[0], "/jobs/0/write/bw_bytes");
        assert_within(&format!("{v}: wbps=1MiB write bytes/s"), bw, 1048576.0, 2.0);
        assert_eq!(num(&docs[0], "/jobs/0/read/total_ios"), 0.0);
    }
}

fn two_children(parent: &str, child_b: Option<&str>) -> String {
    let mut writes = vec![(None, "/p", parent)];
    if let Some(b) = child_b {
        writes.push((None, "/p/b", b));
    }
    scenario(
        &writes,
        &["/p/a", "/p/b"],
        &[
            ("/p/a", job("a", "randread", "4k", 20)),
            ("/p/b", job("b", "randread", "4k", 20)),
        ],
    )
}

fn child_iops(docs: &[Value]) -> (f64, f64) {
    assert_eq!(docs.len(), 2, "one report per [[fio]]");
    (
        num(&docs[0], "/jobs/0/read/iops"),
        num(&docs[1], "/jobs/0/read/iops"),
    )
}

/// A limit on `/p` bounds the sum of its children, whichever io.max
/// implementation runs.
#[test]
fn parent_limit_bounds_the_children_sum() {
    let text = two_children("riops=200", None);
    for v in KERNEL_VARIANTS.iter().chain(&["paced"]) {
        let (a, b) = child_iops(&run(&text, &[&format!("--throttle={v}")]));
        assert_within(&format!("{v}: /p/a + /p/b iops"), a + b, 200.0, 2.0);
    }
}

/// blk-throttle serves siblings under a limited parent in turn: each gets
/// its share, and a child's own tighter limit holds inside the parent's.
#[test]
fn kernel_throttle_shares_the_parent_limit() {
    let even = two_children("riops=200", None);
    let capped = two_children("riops=200", Some("riops=50"));
    for v in KERNEL_VARIANTS {
        let (a, b) = child_iops(&run(&even, &[&format!("--throttle={v}")]));
        assert_within(&format!("{v}: /p/a share"), a, 100.0, 5.0);
        assert_within(&format!("{v}: /p/b share"), b, 100.0, 5.0);
        let (a, b) = child_iops(&run(&capped, &[&format!("--throttle={v}")]));
        assert_within(&format!("{v}: /p/b own limit"), b, 50.0, 2.0);
        assert_within(&format!("{v}: /p/a rest of /p"), a, 150.0, 2.0);
    }
}

/// The same for the paced limiter: siblings under a shared parent limit
/// are served in turn (an earlier version let the group whose timer fired
/// first win every slot of the parent's GCRA), and a child's own limit
/// leaves the rest of the parent's to its sibling.
#[test]
fn paced_shares_the_parent_limit() {
    let (a, b) = child_iops(&run(
        &two_children("riops=200", None),
        &["--throttle=paced"],
    ));
    assert_within("paced: /p/a share", a, 100.0, 5.0);
    assert_within("paced: /p/b share", b, 100.0, 5.0);
    let (a, b) = child_iops(&run(
        &two_children("riops=200", Some("riops=50")),
        &["--throttle=paced"],
    ));
    assert_within("paced: /p/b own limit", b, 50.0, 2.0);
    assert_within("paced: /p/a rest of /p", a, 150.0, 2.0);
}

/// `[[write]] at = "5s"` raises riops from 100 to 300. The simulator is
/// deterministic and a longer runtime only extends a run, so the IOs done
/// in a second are the difference of the totals of runs that end one
/// second apart: [4 s, 5 s) must be at the old rate, [5 s, 6 s) already at
/// the new one.
#[test]
fn runtime_limit_change_applies_within_a_second() {
    for v in ["mainline", "legacy", "slice-remainder", "paced"] {
        let total = |runtime: u32| {
            let text = scenario(
                &[
                    (None, "/cg1", "riops=100"),
                    (Some("5s"), "/cg1", "riops=300"),
                ],
                &[],
                &[("/cg1", job("r", "randread", "4k", runtime))],
            );
            num(
                &run(&text, &[&format!("--throttle={v}")])[0],
                "/jobs/0/read/total_ios",
            )
        };
        let (t4, t5, t6, t7) = (total(4), total(5), total(6), total(7));
        assert_within(&format!("{v}: IOs in [4s,5s)"), t5 - t4, 100.0, 2.0);
        // the write starts a new slice at an arbitrary point of the
        // run's jiffy phase: its first slice may add up to one slice of
        // burst (30 IOs of a 100 ms slice at 300 IOPS, +10%)
        assert_within(&format!("{v}: IOs in [5s,6s)"), t6 - t5, 300.0, 10.0);
        assert_within(&format!("{v}: IOs in [6s,7s)"), t7 - t6, 300.0, 2.0);
    }
}

/// clat figures of one seed-000 run: IOPS and clat p90/p95/p99/max (ns).
struct SeedRun {
    iops: f64,
    p90: f64,
    p95: f64,
    p99: f64,
    max: f64,
}

/// Run seed 000's example (riops=100 on a 4 MB/s null_blk, QD1 reader with
/// a 4 ms thinktime) under `variant`. `ideal_host` drops the example's
/// `[host]` table (no submit cost, no wake-up or dispatch lateness).
fn seed000(variant: &str, ideal_host: bool) -> SeedRun {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("seed-000-throttle/scenario.toml")).unwrap();
    let text = if ideal_host {
        let start = text.find("[host]").expect("the example has a [host] table");
        let end = start
            + text[start..]
                .find("\n\n")
                .expect("[host] ends with a blank line");
        format!("{}{}", &text[..start], &text[end..])
    } else {
        text
    };
    let scenario = write_file(dir.path(), "scenario.toml", &text);
    std::fs::copy(
        example("seed-000-throttle/r2.job"),
        dir.path().join("r2.job"),
    )
    .unwrap();
    let r = run_in_process(&[
        scenario.display().to_string(),
        "--output-format=json".into(),
        format!("--throttle={variant}"),
    ]);
    let d = r.json();
    let clat = |k: &str| num(d, &format!("/jobs/0/read/clat_ns/{k}"));
    SeedRun {
        iops: num(d, "/jobs/0/read/iops"),
        p90: clat("percentile/90.000000"),
        p95: clat("percentile/95.000000"),
        p99: clat("percentile/99.000000"),
        max: clat("max"),
    }
}

/// Seeds 000/002 before and after, from first principles: the example
/// states only the seed's published submit cost (slat ~27 us) and nothing
/// else about its host. The 2018 rest-of-slice wait reproduces the seed's
/// "after" (100 IOPS, clat p99 12.0 ms, max 12.4 ms; ±15 % on each latency,
/// ±2 % on IOPS). The legacy wait settles into the same 0 / 12 ms pattern:
/// only the rare IO that crosses a slice edge is charged against two
/// slices' allowance (max in the 22 ms class), while the seed's legacy p95
/// and p99 (22.7, 23.7 ms) are there. That tail is an instability of the
/// legacy formula that needs IOs released late from blk-throttle's timer
/// (kthrotld); the seed does not publish its host's lateness, so blkqos does
/// not assume one (docs/fidelity.md, "Seed 000", shows both).
#[test]
fn seed_000_legacy_vs_slice_remainder() {
    let legacy = seed000("legacy", false);
    let fixed = seed000("slice-remainder", false);
    let ms = |ns: f64| ns / 1e6;
    println!(
        "seed-000 legacy:          {:.2} IOPS clat p90 {:.2} p95 {:.2} p99 {:.2} max {:.2} ms (seed: 99, 12.9, 22.7, 23.7, 28.9)",
        legacy.iops, ms(legacy.p90), ms(legacy.p95), ms(legacy.p99), ms(legacy.max)
    );
    println!(
        "seed-000 slice-remainder: {:.2} IOPS clat p90 {:.2} p95 {:.2} p99 {:.2} max {:.2} ms (seed: 100, 12.0, 12.0, 12.0, 12.4)",
        fixed.iops, ms(fixed.p90), ms(fixed.p95), ms(fixed.p99), ms(fixed.max)
    );
    assert_within("slice-remainder IOPS", fixed.iops, 100.0, 2.0);
    assert_within("slice-remainder clat p99", fixed.p99, 12.0e6, 15.0);
    assert_within("slice-remainder clat max", fixed.max, 12.4e6, 15.0);
    assert!(
        (99.0 * 0.98..=100.0 * 1.02).contains(&legacy.iops),
        "legacy IOPS {}",
        legacy.iops
    );
    // the legacy wait's two-slice class appears only at the max
    assert!(legacy.max > 20e6, "legacy max {}", legacy.max);
    assert!(legacy.p99 < 13e6, "legacy p99 {}", legacy.p99);
    // an ideal host (no submit cost) changes neither
    let ideal = seed000("legacy", true);
    assert!(ideal.p99 < 13e6, "legacy, ideal host: p99 {}", ideal.p99);
}

/// HZ changes results where the kernel's formulas count whole jiffies.
/// Seed 000's job under the legacy wait, `(io_disp + 1)·HZ/iops + 1 −
/// elapsed` jiffies: the `+ 1` is 10 ms at HZ=100 and 1 ms at HZ=1000, so
/// the waiting IO's class moves from ~28 ms to ~12 ms. With the 2018
/// rest-of-slice wait (a 100 ms slice at any HZ, the wait ends on the
/// slice's edge) the closed loop re-anchors on that edge and HZ does not
/// show, as on a real kernel.
#[test]
fn hz_changes_results_where_the_kernel_counts_jiffies() {
    let p99 = |hz: u32, throttle: &str| {
        let r = run_in_process(&[
            example("../lab/matrix/t01-riops-seed000.toml")
                .display()
                .to_string(),
            format!("--kernel=6.1,hz={hz}"),
            format!("--throttle={throttle}"),
            "--output-format=json".into(),
        ]);
        num(r.json(), "/jobs/0/read/clat_ns/percentile/99.000000")
    };
    let (legacy_100, legacy_1000) = (p99(100, "legacy"), p99(1000, "legacy"));
    assert!(legacy_100 > 25e6, "legacy at HZ=100: p99 {legacy_100}");
    assert!(legacy_1000 < 13e6, "legacy at HZ=1000: p99 {legacy_1000}");
    let (fixed_250, fixed_1000) = (p99(250, "linux-6.1"), p99(1000, "linux-6.1"));
    assert_eq!(fixed_250, fixed_1000);
}

/// The block layer's counters and fio's agree on seed 000's run under
/// every io.max rule: io.stat's `rios` (bios the cgroup issued, counted
/// when they complete), diskstats' reads completed (fio's `disk_util`)
/// and fio's `total_ios` are the same IOs. Under `paced` the last IO was
/// submitted before the 60 s runtime ended and released at 60.000 s: it
/// counts in all three (6,002); blk-throttle's slices give 6,001.
#[test]
fn io_stat_diskstats_and_fio_count_the_same_ios_under_every_rule() {
    let scenario = example("seed-000-throttle/scenario.toml");
    for (rule, ios) in [("legacy", 6001), ("slice-remainder", 6001), ("paced", 6002)] {
        let r = run_in_process(&[
            scenario.display().to_string(),
            "--output-format=json".into(),
            format!("--throttle={rule}"),
        ]);
        let d = r.json();
        let stat = &r.io_stat;
        let counts = [
            num(d, "/jobs/0/read/total_ios"),
            num(d, "/disk_util/0/read_ios"),
            io_stat_key(stat, "/cg1", "rios"),
            io_stat_key(stat, "/", "rios"),
        ];
        assert_eq!(
            counts,
            [f64::from(ios); 4],
            "{rule}: fio, diskstats, io.stat /cg1 and /"
        );
    }
}

/// A bio blk-throttle held is issued by its dispatch work
/// (`blk_throtl_dispatch_work_fn`, queued by the pending timer), a kworker
/// that woke from a sleep: its request completes late as one after a
/// sleep (`late_sleep_*`), while a bio that passed at submit completes as
/// its submitter's CPU says (here asleep in `io_getevents`: `late_idle_*`).
/// At riops=20 and QD1 about half the bios pass at submit (the slice's
/// budget) and half wait for the timer: every request completes 25 or
/// 320 us after its issue, and both happen.
#[test]
fn throttled_bios_complete_as_after_a_sleep() {
    let text = "seed = 1\ncgroups = [\"/g\"]\n\
        [device]\nmodel = \"null\"\ndevid = \"254:0\"\ncompletion_ns = 20000\n\
        late_idle_p50_ns = 5000\nlate_idle_p99_ns = 5000\n\
        late_sleep_p50_ns = 300000\nlate_sleep_p99_ns = 300000\n\
        [[write]]\nfile = \"/sys/fs/cgroup/g/io.max\"\nvalue = \"254:0 riops=20\"\n\
        [[fio]]\ncgroup = \"/g\"\nargs = \"--name=r --rw=randread --bs=4k --size=1g \
        --ioengine=libaio --direct=1 --iodepth=1 --runtime=2 --time_based\"\n";
    let (mut late, mut prompt) = (0, 0);
    for r in traced_requests(&ktrace_of(text)) {
        let d2c_us = (r.complete_s - r.issue_s) * 1e6;
        if (d2c_us - 320.0).abs() < 2.0 {
            late += 1;
        } else if (d2c_us - 25.0).abs() < 2.0 {
            prompt += 1;
        } else {
            panic!("d2c {d2c_us} us at {} s", r.issue_s);
        }
    }
    assert!(late >= 15 && prompt >= 15, "{late} late, {prompt} prompt");
}
