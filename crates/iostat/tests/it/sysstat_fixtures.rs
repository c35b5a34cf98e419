//! Our output against sysstat 12.6's own test fixtures
//! (`shared/fixtures/sysstat`: `rootN/proc/{diskstats,uptime,stat}` and the
//! `expected.iostat-x*` files its `iostat` printed with `LC_ALL=C TZ=GMT`),
//! compared character for character.

use blkqos_iostat::{parse_args, read_proc_dir, render, Banner, Sample};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/sysstat")
}

/// These tests need other projects' data (`../shared/fixtures`, beside
/// the checkout): an optional differential tier. Without it they skip,
/// saying so (counted by `cargo xtask test`); `BLKQOS_REQUIRE_SHARED=1`
/// (CI, where it is present) makes a missing directory a failure.
fn skip() -> bool {
    if fixtures().is_dir() {
        return false;
    }
    blkqos_testkit::skip(
        blkqos_testkit::Reason::Shared,
        format!(
            "{} is not there (optional tier: other projects' fixtures beside the checkout)",
            fixtures().display()
        ),
    );
    true
}

fn sample(n: u32) -> Sample {
    read_proc_dir(&fixtures().join(format!("root{n}/proc")))
        .unwrap()
        .0
}

fn samples(from: u32, to: u32) -> Vec<Sample> {
    (from..=to).map(sample).collect()
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// The machine of sysstat's test suite: `Linux 1.2.3-TEST (SYSSTAT.TEST)
/// \t06/01/20 \t_x86_64_\t(9 CPU)`; the CPU count is that of root1's stat.
fn test_banner() -> Banner {
    let cpus = read_proc_dir(&fixtures().join("root1/proc"))
        .unwrap()
        .1
        .unwrap();
    Banner {
        sysname: "Linux".into(),
        release: "1.2.3-TEST".into(),
        nodename: "SYSSTAT.TEST".into(),
        machine: "x86_64".into(),
        nr_cpus: cpus,
        time: 1_590_969_600, // 2020-06-01
    }
}

fn iostat(args: &str, samples: &[Sample]) -> String {
    let v: Vec<&str> = args.split_whitespace().collect();
    render(&parse_args(&v).unwrap(), &test_banner(), samples).unwrap()
}

/// Show the first differing line, not two 3 KB strings.
#[track_caller]
fn assert_same(ours: &str, theirs: &str) {
    for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(a, b, "line {} differs", i + 1);
    }
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "line counts differ"
    );
    assert_eq!(ours, theirs, "newlines differ");
}

/// The device blocks of a sysstat report: the report without the
/// `avg-cpu` blocks (the header line, the values and the blank line).
fn device_blocks(full: &str) -> String {
    let mut out = String::new();
    let mut lines = full.split_inclusive('\n');
    while let Some(l) = lines.next() {
        if l.starts_with("avg-cpu:") {
            let values = lines.next().unwrap();
            assert!(values.starts_with("       "), "{values:?}");
            assert_eq!(lines.next(), Some("\n"));
            continue;
        }
        out.push_str(l);
    }
    out
}

/// Everything after the banner line.
fn after_banner(s: &str) -> &str {
    &s[s.find('\n').unwrap() + 1..]
}

// (sysstat command, first root, last root, expected file)
const CASES: [(&str, u32, u32, &str); 3] = [
    ("-x", 1, 1, "expected.iostat-x-0"),
    ("-x 1 2", 1, 2, "expected.iostat-x"),
    ("-x ALL 1 2", 1, 2, "expected.iostat-x-ALL"),
];

#[test]
fn whole_output_matches_sysstat() {
    if skip() {
        return;
    }
    for (args, from, to, file) in CASES {
        let ours = iostat(args, &samples(from, to));
        let theirs = expected(file);
        assert!(theirs
            .starts_with("Linux 1.2.3-TEST (SYSSTAT.TEST) \t06/01/20 \t_x86_64_\t(9 CPU)\n\n"));
        assert_same(&ours, &theirs);
    }
}

#[test]
fn device_block_matches_sysstat() {
    if skip() {
        return;
    }
    for (args, from, to, file) in CASES {
        // `-d`: device report only, as a reporter without avg-cpu prints it.
        let ours = iostat(&format!("-d {args}"), &samples(from, to));
        let theirs = device_blocks(&expected(file));
        assert!(theirs.contains("Device            r/s     rkB/s"));
        assert_same(after_banner(&ours), after_banner(&theirs));
        // And the same without /proc/stat in the samples.
        let mut no_cpu = samples(from, to);
        for s in &mut no_cpu {
            s.cpu = None;
        }
        assert_same(&iostat(args, &no_cpu), &theirs);
    }
}

#[test]
fn extra_samples_are_not_read() {
    if skip() {
        return;
    }
    // `iostat -x 1 2` reads two samples even if more are there.
    assert_same(
        &iostat("-x 1 2", &samples(1, 5)),
        &expected("expected.iostat-x"),
    );
    assert_same(
        &iostat("-x", &samples(1, 3)),
        &expected("expected.iostat-x-0"),
    );
}

#[test]
fn samples_running_out_end_like_sigint() {
    if skip() {
        return;
    }
    // `iostat -x 1 5` with two samples: sysstat's test harness simulates
    // Ctrl-C when it has no next root; the output is that of `-x 1 2`.
    assert_same(
        &iostat("-x 1 5", &samples(1, 2)),
        &expected("expected.iostat-x"),
    );
    assert_same(
        &iostat("-x 1", &samples(1, 2)),
        &expected("expected.iostat-x"),
    );
}

#[test]
fn y_skips_the_since_boot_report() {
    if skip() {
        return;
    }
    let ours = iostat("-dx -y 1 1", &samples(1, 2));
    let theirs = device_blocks(&expected("expected.iostat-x"));
    // sysstat prints the skipped iteration's newline, then report 2.
    let second = &theirs[theirs.rfind("Device ").unwrap()..];
    assert_eq!(after_banner(&ours), format!("\n\n{second}"));
}

fn names(report: &str) -> Vec<Vec<String>> {
    report
        .split("Device ")
        .skip(1)
        .map(|block| {
            block
                .lines()
                .skip(1)
                .take_while(|l| !l.is_empty())
                .map(|l| l.split_whitespace().next().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn which_devices_are_shown() {
    if skip() {
        return;
    }
    let s = samples(1, 2);
    let to_s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Default: whole devices with IO since boot, sorted; dm-2 (no IO) and
    // sr0 hidden; the partitions sda1..sda12 never.
    let active = to_s(&["sda", "sdb", "sdq", "sdr", "sds"]);
    assert_eq!(names(&iostat("-dx 1 2", &s)), [active.clone(), active]);
    // -p ALL: every line of /proc/diskstats in file order, idle ones too.
    let p_all = names(&iostat("-dx -p ALL", &s[..1]));
    let file_order: Vec<String> = s[0].disks.iter().map(|d| d.name.clone()).collect();
    assert_eq!(p_all, [file_order]);
    // -p alone: the same order, but devices without IO hidden.
    let p = names(&iostat("-dx -p", &s[..1]));
    assert!(!p[0].contains(&"sr0".to_string()) && p[0].contains(&"sda12".to_string()));
    // -p sda: the disk and its partitions, strcmp order.
    let sda = to_s(&[
        "sda", "sda1", "sda10", "sda11", "sda12", "sda2", "sda3", "sda4", "sda5", "sda6", "sda7",
        "sda8", "sda9",
    ]);
    assert_eq!(names(&iostat("-dx -p sda", &s[..1])), [sda]);
    // Named devices, sorted, shown without IO; a partition by name too.
    assert_eq!(
        names(&iostat("-dx sdc sda3 /dev/sda nosuch", &s[..1])),
        [to_s(&["sda", "sda3", "sdc"])]
    );
    // A device gone from the second sample (dm-2) is not shown in it.
    let all = names(&iostat("-dx ALL 1 2", &s));
    assert!(all[0].contains(&"dm-2".to_string()) && !all[1].contains(&"dm-2".to_string()));
    // -z: devices without IO in the interval are omitted.
    assert_eq!(
        names(&iostat("-dxz 1 2", &s))[1],
        to_s(&["sdq", "sdr", "sds"])
    );
}

#[test]
fn json_is_valid_and_matches_the_plain_report() {
    if skip() {
        return;
    }
    let s = samples(1, 2);
    let json = iostat("-x -p ALL -o JSON 1 2", &s);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let host = &v["sysstat"]["hosts"][0];
    assert_eq!(host["nodename"], "SYSSTAT.TEST");
    assert_eq!(host["number-of-cpus"], 9);
    assert_eq!(host["date"], "06/01/20");
    let stats = host["statistics"].as_array().unwrap();
    assert_eq!(stats.len(), 2);
    assert_eq!(stats[0]["avg-cpu"]["nice"].as_f64(), Some(39.91));
    let plain = iostat("-dx -p ALL 1 2", &s);
    let blocks: Vec<&str> = plain.split("Device ").skip(1).collect();
    for (report, block) in stats.iter().zip(blocks) {
        let disks = report["disk"].as_array().unwrap();
        let rows: Vec<&str> = block
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(disks.len(), rows.len());
        for (d, row) in disks.iter().zip(rows) {
            let f: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(d["disk_device"], f[0]);
            for (key, col) in [
                ("r/s", 1),
                ("rkB/s", 2),
                ("rrqm", 4),
                ("rareq-sz", 6),
                ("dkB/s", 14),
                ("aqu-sz", 21),
                ("util", 22),
            ] {
                assert_eq!(
                    format!("{:.2}", d[key].as_f64().unwrap()),
                    f[col],
                    "{} {key}",
                    f[0]
                );
            }
        }
    }
}

#[test]
fn flush_and_discard_columns() {
    if skip() {
        return;
    }
    // root3 has 17-counter lines; sdq has discards since root1.
    let out = iostat("-dx ALL 1 2", &samples(3, 4));
    let row = |name: &str, block: usize| -> Vec<String> {
        let b = out.split("Device ").nth(block).unwrap();
        b.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // sdc: 32 flushes in 2145 ms since boot (uptime 7254.96 s).
    let r = row("sdc", 1);
    assert_eq!((r[19].as_str(), r[20].as_str()), ("0.00", "67.03"));
    assert_eq!(format!("{:.2}", 32.0 / 7254.96), "0.00");
    assert_eq!(format!("{:.2}", 2145.0 / 32.0), "67.03");
    // Then 24 flushes in 1231 ms over 38.50 s.
    let r = row("sdc", 2);
    assert_eq!((r[19].as_str(), r[20].as_str()), ("0.62", "51.29"));
}

#[test]
fn megabytes_sectors_and_decimals() {
    if skip() {
        return;
    }
    let s = samples(1, 1);
    let out = iostat("-dxm sda", &s);
    assert!(
        out.contains("Device            r/s     rMB/s   rrqm/s"),
        "{out}"
    );
    let out = iostat("-dx --dec=0 sda", &s);
    let sda = out.lines().find(|l| l.starts_with("sda")).unwrap();
    assert_eq!(sda.split_whitespace().nth(2), Some("222"));
    let sectors = blkqos_iostat::parse_args_env(&["-dx", "sda"], |k| {
        (k == "POSIXLY_CORRECT").then(String::new)
    })
    .unwrap();
    let out = render(&sectors, &test_banner(), &s).unwrap();
    assert!(
        out.contains("Device            r/s    rsec/s   rrqm/s"),
        "{out}"
    );
    let sda = out.lines().find(|l| l.starts_with("sda")).unwrap();
    assert_eq!(sda.split_whitespace().nth(2), Some("444.28"));
}
