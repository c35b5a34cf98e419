//! fio's completion latency histogram log (`write_hist_log`,
//! `log_hist_msec`, `log_hist_coarseness`).
//!
//! Real engine against real fio 3.33: the same job (4 KiB randrw, psync,
//! direct=1, 2 s, `log_hist_msec=500`, with `write_lat_log` beside it) on
//! the same scratch file, each in a directory of its own: the same file
//! names, line counts within one line per direction, 3 + 1856 columns
//! (3 + 232 with `log_hist_coarseness=3`), the same directions and block
//! sizes, time stamps about 500 ms apart, IOs per line within 3x of fio's;
//! in both tools' files, each line's bins are the completions its
//! direction's clat log has since the previous line (give or take those
//! in the same ms). fio's own `fio-histo-log-pctiles.py` (shipped by
//! Debian's fio package under /usr/share/doc/fio) reads our file and
//! prints a percentile row per second.
//!
//! Simulator: each line's bins are exactly the IOs the clat log has
//! between the previous line of its direction and this one, columns are
//! 3 + (1856 >> coarseness), and two runs write the same bytes.

use crate::engine_util;

use engine_util::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// fio's histogram buckets (`FIO_IO_U_PLAT_NR`).
const PLAT_NR: usize = 1856;

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn read_log(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|f| f.parse().unwrap_or_else(|_| panic!("{l:?}")))
                .collect()
        })
        .collect()
}

type Logs = BTreeMap<String, Vec<Vec<u64>>>;

fn logs_in(dir: &Path) -> Logs {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?.to_string();
            name.ends_with(".log").then(|| (name, read_log(&p)))
        })
        .collect()
}

fn bins_sum(l: &[u64]) -> u64 {
    l[3..].iter().sum()
}

/// blkqos and fio on the same job file, each in its own directory: their
/// directories, or None when the kernel refuses the engine.
fn both(s: &Scratch, coarseness: u32) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let file = s.path("scratch.dat");
    let jf = s.path(&format!("hist{coarseness}.fio"));
    std::fs::write(
        &jf,
        format!(
            "[j]\nfilename={}\nioengine=psync\ndirect=1\nrw=randrw\nbs=4k\nsize=16m\n\
             runtime=2\ntime_based\nwrite_hist_log=h\nlog_hist_msec=500\n\
             log_hist_coarseness={coarseness}\nwrite_lat_log=h\n",
            file.display()
        ),
    )
    .unwrap();
    let (bdir, fdir) = (
        s.path(&format!("b{coarseness}")),
        s.path(&format!("f{coarseness}")),
    );
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::create_dir_all(&fdir).unwrap();
    let r = blkqos(&["run", &jf.display().to_string(), "--backend=real"], &bdir);
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return None;
    }
    r.ok();
    let mut cmd = Command::new("fio");
    cmd.arg(&jf).arg("--output=/dev/null").current_dir(&fdir);
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    Some((bdir, fdir))
}

#[test]
#[ignore = "tier real"]
fn hist_log_matches_fio_and_its_script_reads_it() {
    let _x = exclusive();
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((bdir, fdir)) = both(&s, 0) else {
        return;
    };
    let (ours, fio) = (logs_in(&bdir), logs_in(&fdir));
    let names = |l: &Logs| l.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&fio),
        [
            "h_clat.1.log",
            "h_clat_hist.1.log",
            "h_lat.1.log",
            "h_slat.1.log"
        ]
    );
    assert_eq!(names(&ours), names(&fio));
    for (who, l) in [("blkqos", &ours), ("fio", &fio)] {
        bins_are_the_intervals_ios(who, &l["h_clat_hist.1.log"], &l["h_clat.1.log"]);
    }
    let (mine, theirs) = (&ours["h_clat_hist.1.log"], &fio["h_clat_hist.1.log"]);
    for d in 0..2 {
        let of = |v: &Vec<Vec<u64>>| v.iter().filter(|l| l[1] == d).count();
        eprintln!(
            "ddir {d}: {} lines (fio {}), IOs per line {:.0} (fio {:.0})",
            of(mine),
            of(theirs),
            per_line(mine, d),
            per_line(theirs, d)
        );
        assert!(of(mine) >= 2, "ddir {d}: {mine:?}");
        assert!(of(mine).abs_diff(of(theirs)) <= 1, "ddir {d}");
        let (a, b) = (per_line(mine, d), per_line(theirs, d));
        assert!(
            a > b / 3.0 && a < b * 3.0,
            "ddir {d}: {a} IOs a line, fio {b}"
        );
        let times: Vec<u64> = mine.iter().filter(|l| l[1] == d).map(|l| l[0]).collect();
        for w in times.windows(2) {
            assert!((400..=650).contains(&(w[1] - w[0])), "ddir {d}: {times:?}");
        }
    }
    for l in mine.iter().chain(theirs) {
        assert_eq!(l.len(), 3 + PLAT_NR);
        assert!(l[1] <= 1 && l[2] == 4096, "{:?}", &l[..3]);
        assert!(bins_sum(l) > 0, "{:?}", &l[..3]);
    }
    pctiles_script_reads(&bdir.join("h_clat_hist.1.log"), &s);
}

#[test]
#[ignore = "tier real"]
fn coarse_hist_log_has_fios_columns() {
    let _x = exclusive();
    if !fio_installed() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let Some((bdir, fdir)) = both(&s, 3) else {
        return;
    };
    let (ours, fio) = (logs_in(&bdir), logs_in(&fdir));
    let (mine, theirs) = (&ours["h_clat_hist.1.log"], &fio["h_clat_hist.1.log"]);
    assert!(mine.len() >= 4 && mine.len().abs_diff(theirs.len()) <= 2);
    for l in mine.iter().chain(theirs) {
        assert_eq!(l.len(), 3 + (PLAT_NR >> 3), "{:?}", &l[..3]);
        assert!(bins_sum(l) > 0, "{:?}", &l[..3]);
    }
}

/// Each line's bins are the completions of its direction since the
/// previous line, per the clat log of the same run: those between the two
/// time stamps, give or take completions in the same ms as either.
fn bins_are_the_intervals_ios(who: &str, hist: &[Vec<u64>], clat: &[Vec<u64>]) {
    for d in 0..2u64 {
        let mut prev: Option<u64> = None;
        for l in hist.iter().filter(|l| l[1] == d) {
            let t = l[0];
            let of = |lo_incl: bool, hi_incl: bool| {
                clat.iter()
                    .filter(|k| k[2] == d)
                    .filter(|k| prev.is_none_or(|p| k[0] > p || (lo_incl && k[0] == p)))
                    .filter(|k| k[0] < t || (hi_incl && k[0] == t))
                    .count() as u64
            };
            let (lo, hi) = (of(false, false), of(true, true));
            let n = bins_sum(l);
            assert!(
                lo <= n && n <= hi,
                "{who} ddir {d} at {t}: {n} IOs, clat log {lo}..={hi}"
            );
            prev = Some(t);
        }
    }
}

/// Mean bins sum of direction `d`'s lines.
fn per_line(v: &[Vec<u64>], d: u64) -> f64 {
    let lines: Vec<u64> = v
        .iter()
        .filter(|l| l[1] == d)
        .map(|l| bins_sum(l))
        .collect();
    lines.iter().sum::<u64>() as f64 / lines.len().max(1) as f64
}

/// fio's `fio-histo-log-pctiles.py` on our log: it exits 0 and prints a
/// row of percentiles for the second it covers. Skipped (said so) where
/// the package or python3 is missing.
fn pctiles_script_reads(log: &Path, s: &Scratch) {
    let gz = Path::new("/usr/share/doc/fio/fio-histo-log-pctiles.py.gz");
    let plain = Path::new("/usr/share/doc/fio/fio-histo-log-pctiles.py");
    let script = s.path("pctiles.py");
    let text = if plain.exists() {
        std::fs::read(plain).ok()
    } else if gz.exists() {
        Command::new("gzip")
            .arg("-dc")
            .arg(gz)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
    } else {
        None
    };
    let Some(text) = text else {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Tool,
            "fio-histo-log-pctiles.py is not installed",
        );
        return;
    };
    std::fs::write(&script, text).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(log).current_dir(s.dir.path());
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            blkqos_testkit::skip(blkqos_testkit::Reason::Tool, format!("python3: {e}"));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fio-histo-log-pctiles.py refused our log:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `msec-since-start, samples, min, median, 95.0, 99.0, max` then rows
    let rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("msec-since-start"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(!rows.is_empty(), "no percentile row:\n{stdout}");
    let samples: f64 = rows[0].split(',').nth(1).unwrap().trim().parse().unwrap();
    assert!(samples > 0.0, "{stdout}");
    eprintln!("fio-histo-log-pctiles.py: {}", rows[0].trim());
}

fn sim_run(dir: &Path, coarseness: u32) -> Logs {
    std::fs::create_dir_all(dir).unwrap();
    let r = blkqos(
        &[
            "run",
            "--name=j",
            "--rw=randrw",
            "--bs=4k",
            "--size=8m",
            "--rate_iops=100",
            "--runtime=3",
            "--time_based",
            "--ioengine=libaio",
            "--iodepth=2",
            "--direct=1",
            "--write_lat_log=x",
            "--write_hist_log=x",
            "--log_hist_msec=500",
            &format!("--log_hist_coarseness={coarseness}"),
            "--device=ssd",
            "--output-format=json",
        ],
        dir,
    );
    r.ok();
    logs_in(dir)
}

#[test]
fn simulated_hist_log_counts_each_interval_and_repeats() {
    let s = Scratch::new();
    for c in [0, 3, 6] {
        let a = sim_run(&s.path(&format!("a{c}")), c);
        let b = sim_run(&s.path(&format!("b{c}")), c);
        assert_eq!(a, b, "coarseness {c}: two runs, different logs");
        let hist = &a["x_clat_hist.1.log"];
        let clat = &a["x_clat.1.log"];
        for d in 0..2u64 {
            let lines: Vec<&Vec<u64>> = hist.iter().filter(|l| l[1] == d).collect();
            // 3 s in 500 ms windows, the last one partial and unwritten
            assert_eq!(lines.len(), 5, "coarseness {c} ddir {d}");
            let mut from = 0;
            for l in &lines {
                assert_eq!(l.len(), 3 + (PLAT_NR >> c), "coarseness {c}");
                let ios = clat
                    .iter()
                    .filter(|k| k[2] == d && k[0] > from && k[0] <= l[0])
                    .count() as u64;
                let ios = if from == 0 {
                    // the first window also holds IOs of time 0
                    ios + clat.iter().filter(|k| k[2] == d && k[0] == 0).count() as u64
                } else {
                    ios
                };
                assert_eq!(bins_sum(l), ios, "coarseness {c} ddir {d} at {}", l[0]);
                from = l[0];
            }
            let unwritten = clat.iter().filter(|k| k[2] == d && k[0] > from).count();
            let total = clat.iter().filter(|k| k[2] == d).count();
            let logged: u64 = lines.iter().map(|l| bins_sum(l)).sum();
            assert_eq!(logged as usize + unwritten, total, "ddir {d}");
        }
    }
}
