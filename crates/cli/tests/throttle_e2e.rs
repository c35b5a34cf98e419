//! io.max end to end: scenario file → blk-throttle (or the paced limiter)
//! on the simulator → fio JSON.

mod common;

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
    let mut args = vec![
        "run".to_string(),
        p.display().to_string(),
        "--output-format=json".to_string(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    let r = blkqos(&args, Some(dir.path()));
    r.ok();
    r.json_docs()
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
        assert_within(&format!("{v}: IOs in [5s,6s)"), t6 - t5, 300.0, 2.0);
        assert_within(&format!("{v}: IOs in [6s,7s)"), t7 - t6, 300.0, 2.0);
    }
}

/// clat figures of one seed-000 run: IOPS and clat p90/p95/p99/max/mean (ns).
struct SeedRun {
    iops: f64,
    p90: f64,
    p95: f64,
    p99: f64,
    max: f64,
    mean: f64,
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
    write_file(dir.path(), "scenario.toml", &text);
    std::fs::copy(
        example("seed-000-throttle/r2.job"),
        dir.path().join("r2.job"),
    )
    .unwrap();
    let r = blkqos(
        &[
            "run",
            "scenario.toml",
            "--output-format=json",
            &format!("--throttle={variant}"),
        ],
        Some(dir.path()),
    );
    r.ok();
    let d = r.json();
    let clat = |k: &str| num(&d, &format!("/jobs/0/read/clat_ns/{k}"));
    SeedRun {
        iops: num(&d, "/jobs/0/read/iops"),
        p90: clat("percentile/90.000000"),
        p95: clat("percentile/95.000000"),
        p99: clat("percentile/99.000000"),
        max: clat("max"),
        mean: clat("mean"),
    }
}

/// Seeds 000/002 before and after: the legacy iops wait gives ≈ 99–100 IOPS
/// with clat p99 23.7 ms and max 28.9 ms; the 2018 rest-of-slice wait gives
/// 100 IOPS with p99 12.0 ms and max 12.4 ms (±15 % on each latency figure,
/// ±2 % on IOPS), on one host model for both runs.
///
/// The legacy tail is an instability of its formula: after a timer release
/// that reaches the device late (kthrotld), the next IOs cross a slice edge,
/// and the following one is charged against two slices' allowance. On an
/// ideal host the legacy wait settles into the same 0 / 12 ms pattern as
/// the fixed one, which the last assertions show.
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
    assert!(
        (99.0 * 0.98..=100.0 * 1.02).contains(&legacy.iops),
        "legacy IOPS {}",
        legacy.iops
    );
    assert_within("legacy clat p99", legacy.p99, 23.7e6, 15.0);
    assert_within("legacy clat max", legacy.max, 28.9e6, 15.0);
    assert_within("slice-remainder IOPS", fixed.iops, 100.0, 2.0);
    assert_within("slice-remainder clat p99", fixed.p99, 12.0e6, 15.0);
    assert_within("slice-remainder clat max", fixed.max, 12.4e6, 15.0);
    // the shape, not just the tail: legacy's 95th percentile is in the
    // two-slice class, the fixed wait's is not
    assert!(legacy.p95 > 20e6, "legacy p95 {}", legacy.p95);
    assert!(fixed.p95 < 14e6, "slice-remainder p95 {}", fixed.p95);

    let ideal = seed000("legacy", true);
    println!(
        "seed-000 legacy, ideal host: p99 {:.2} max {:.2} ms",
        ms(ideal.p99),
        ms(ideal.max)
    );
    assert!(
        ideal.p99 < 13e6,
        "legacy on an ideal host should settle at the 12 ms class, p99 {}",
        ideal.p99
    );
}

/// The seed scenario (riops=100, a QD1 reader with a 4 ms thinktime): the
/// paced limiter gives the same IOPS as the kernel's rest-of-slice wait,
/// with a much lower tail.
///
/// How much lower is bounded by the workload, not by the limiter: the job is
/// a closed loop (thinktime → IO → thinktime) held to 100 IOPS, so each
/// cycle lasts 10 ms on average and the mean clat is 10 − 4 = 6 ms under any
/// limiter. A p99 of 1/3 of slice-remainder's 12 ms (4 ms) would need 1 %
/// of the IOs to wait ≥ 0.2 s. The ideal is every IO waiting ~6 ms, which
/// is what paced achieves on an ideal host: p99 ≈ 6 ms, half of
/// slice-remainder's 12 ms. On the seed's host model the timer-release
/// lateness (≈1.4 ms mean) adds to both.
#[test]
fn paced_matches_rate_with_a_lower_tail_on_the_seed() {
    for ideal in [true, false] {
        let s = seed000("slice-remainder", ideal);
        let p = seed000("paced", ideal);
        println!(
            "seed-000 (ideal host: {ideal}): slice-remainder {:.3} IOPS p99 {:.3} ms; paced {:.3} IOPS p99 {:.3} ms",
            s.iops,
            s.p99 / 1e6,
            p.iops,
            p.p99 / 1e6
        );
        assert_within(
            "seed-000 iops, paced vs slice-remainder",
            p.iops,
            s.iops,
            1.0,
        );
        assert_within("seed-000 iops", s.iops, 100.0, 1.0);
        // slice-remainder: every other IO waits the rest of a 20 ms slice
        assert!(s.p99 > 11e6, "slice-remainder p99 {} ns", s.p99);
        // paced: at the closed-loop floor (mean 6 ms)
        assert_within("paced mean clat", p.mean, 6e6, 2.0);
        if ideal {
            assert!(
                p.p99 <= 6.1e6,
                "paced p99 {} ns above the 6 ms floor",
                p.p99
            );
            assert!(
                s.p99 / p.p99 >= 1.9,
                "paced p99 {} ns is not ~half of slice-remainder's {} ns",
                p.p99,
                s.p99
            );
        } else {
            assert!(
                s.p99 / p.p99 >= 1.7,
                "paced p99 {} ns vs slice-remainder's {} ns on the seed host",
                p.p99,
                s.p99
            );
        }
    }
}
