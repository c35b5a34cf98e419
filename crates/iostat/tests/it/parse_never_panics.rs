//! Parsers never panic; the diskstats writer and parser round-trip; bad
//! files give errors that name the file and line.

use blkqos_iostat::{
    format_diskstats, format_diskstats_line, parse_args, parse_diskstats, parse_diskstats_line,
    parse_stat, parse_uptime, read_proc_dir, render, Banner, DiskCounters, DiskStatsLine, Error,
    Sample,
};
use proptest::prelude::*;
use std::path::PathBuf;

fn counters() -> impl Strategy<Value = DiskCounters> {
    (
        any::<[u64; 3]>(),
        any::<u32>(),
        any::<[u64; 3]>(),
        any::<[u32; 4]>(),
        any::<[u64; 3]>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
    )
        .prop_map(|(r, rt, w, m, d, dt, fl, ft)| DiskCounters {
            rd_ios: r[0],
            rd_merges: r[1],
            rd_sectors: r[2],
            rd_ticks: rt,
            wr_ios: w[0],
            wr_merges: w[1],
            wr_sectors: w[2],
            wr_ticks: m[0],
            ios_pgr: m[1],
            tot_ticks: m[2],
            rq_ticks: m[3],
            dc_ios: d[0],
            dc_merges: d[1],
            dc_sectors: d[2],
            dc_ticks: dt,
            fl_ios: fl,
            fl_ticks: ft,
        })
}

/// Text that looks like diskstats: mostly well-formed lines with 0..20
/// counters (so some parse and get reported on), some garbage.
fn near_diskstats() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        "[0-9]{1,22}",
        "[a-z]{1,6}[0-9]{0,2}",
        Just("-1".to_string()),
        ".{0,3}"
    ];
    let garbage = proptest::collection::vec(tok, 0..22).prop_map(|t| t.join(" "));
    let line = (
        0u32..300,
        0u32..300,
        "[a-z]{1,3}[0-9p]{0,3}",
        proptest::collection::vec(0u64..1 << 40, 0..20),
    )
        .prop_map(|(ma, mi, name, v)| {
            let nums: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("{ma:4} {mi:7} {name} {}", nums.join(" "))
        });
    let line = prop_oneof![8 => line, 1 => garbage];
    proptest::collection::vec(line, 0..8).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parsers_never_panic(s in ".{0,300}") {
        let _ = parse_diskstats(&s);
        let _ = parse_uptime(&s);
        let _ = parse_stat(&s);
        let args: Vec<&str> = s.split_whitespace().collect();
        let _ = parse_args(&args);
    }

    #[test]
    fn diskstats_like_text_never_panics(s in near_diskstats()) {
        let _ = parse_diskstats(&s);
        let lines: Vec<_> = s.lines().enumerate().filter_map(|(i, l)| parse_diskstats_line(l, i + 1).ok().flatten()).collect();
        {
            // Whatever parses can be reported on, in every mode, also when
            // counters and uptime go backwards.
            let sample = Sample::new(12345, lines.clone());
            let mut half = lines;
            for l in &mut half {
                l.counters.rd_ios /= 2;
                l.counters.rq_ticks /= 2;
            }
            let banner = Banner { sysname: "L".into(), release: "r".into(), nodename: "n".into(), machine: "m".into(), nr_cpus: 1, time: 0 };
            for args in [&["-x", "-p", "ALL", "1", "2"][..], &["ALL", "1", "3"], &["-xs", "1", "3"], &["-o", "JSON", "-x", "1", "3"], &["-yz", "1"]] {
                let o = parse_args(args).unwrap();
                render(&o, &banner, &[sample.clone(), Sample::new(100, half.clone()), Sample::new(0, vec![])]).unwrap();
            }
        }
    }

    #[test]
    fn format_then_parse_is_identity(major in 0u32..=u32::MAX, minor in any::<u32>(), name in "[a-z][a-z0-9/!-]{0,12}", c in counters()) {
        let text = format_diskstats_line(major, minor, &name, &c);
        prop_assert!(text.ends_with('\n'));
        let l = parse_diskstats_line(&text, 1).unwrap().unwrap();
        prop_assert_eq!(&l, &DiskStatsLine { major, minor, name: name.clone(), counters: c, nr_counters: 17 });
        prop_assert_eq!(format_diskstats(std::slice::from_ref(&l)), text);
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blkqos-iostat-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn errors_name_the_file_and_line() {
    let d = temp_dir("bad");
    std::fs::write(d.join("uptime"), "100.00 1.00\n").unwrap();
    std::fs::write(
        d.join("diskstats"),
        "   8       0 sda 1 0 8 1 0 0 0 0 0 1 1\n   8       1 sda1 1 0 eight\n",
    )
    .unwrap();
    match read_proc_dir(&d) {
        Err(e @ Error::Parse { line: 2, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("{}:2: ", d.join("diskstats").display())),
                "{msg}"
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(
        d.join("diskstats"),
        "   8       0 sda 1 0 8 1 0 0 0 0 0 1 1\n",
    )
    .unwrap();
    std::fs::write(d.join("uptime"), "soon\n").unwrap();
    let e = read_proc_dir(&d).unwrap_err().to_string();
    assert!(e.contains("uptime:1:"), "{e}");
    std::fs::write(d.join("uptime"), "100.00 1.00\n").unwrap();
    std::fs::write(d.join("stat"), "cpu 1 2\n").unwrap();
    let e = read_proc_dir(&d).unwrap_err().to_string();
    assert!(e.contains("stat:1:"), "{e}");
    std::fs::remove_file(d.join("stat")).unwrap();
    let (s, cpus) = read_proc_dir(&d).unwrap();
    assert_eq!(
        (s.uptime_cs, s.disks.len(), s.cpu, cpus),
        (10000, 1, None, None)
    );
    let missing = d.join("nope");
    let e = read_proc_dir(&missing).unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
    assert!(
        e.to_string()
            .contains(&missing.join("diskstats").display().to_string()),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
