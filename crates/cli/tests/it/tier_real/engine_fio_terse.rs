//! `--output-format=terse` (fio's terse version 3) against fio 3.33: the
//! same rate-limited job file (4 KiB randrw, QD4, io_uring, direct=1,
//! `rate_iops=200` per direction, 2 s) on the same scratch file, run by
//! `blkqos run JOBFILE --backend=io_uring` and by `fio JOBFILE`. The lines
//! have the same number of fields (130 with one disk) and the fields a
//! rate-limited job fixes agree: version, fio version, job name, group,
//! error, the percentile labels, the disk's name exactly; KiB and IOPS per
//! direction within ±2%, runtime within 5%. On the simulator: the field
//! count with and without `continue_on_error` and a description.

use crate::engine_util;

use engine_util::*;
use std::process::Command;

fn fields(text: &str) -> Vec<String> {
    let line = text.lines().next().expect("a terse line");
    line.split(';').map(str::to_string).collect()
}

fn num_at(f: &[String], i: usize) -> f64 {
    f[i].trim_end_matches('%')
        .parse()
        .unwrap_or_else(|_| panic!("field {i}: {:?}", f[i]))
}

#[test]
#[ignore = "tier real"]
fn terse_line_matches_fio() {
    let _x = exclusive();
    if Command::new("fio").arg("--version").output().is_err() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let jf = s.path("t.fio");
    std::fs::write(
        &jf,
        format!(
            "[t]\nfilename={}\nioengine=io_uring\ndirect=1\nrw=randrw\nbs=4k\niodepth=4\n\
             size=32m\nrate_iops=200\nruntime=2\ntime_based\n",
            s.path("scratch.dat").display()
        ),
    )
    .unwrap();
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        "--backend=io_uring".into(),
        "--output-format=terse".into(),
    ];
    let r = blkqos(&args, s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(blkqos_testkit::Reason::IoUring, why);
        return;
    }
    r.ok();
    let ours = fields(&r.stdout_str());
    let mut cmd = Command::new("fio");
    cmd.arg(&jf)
        .arg("--output-format=terse")
        .current_dir(s.dir.path());
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio:\n{}", f.stderr);
    let fio = fields(&f.stdout_str());
    eprintln!("blkqos: {}\nfio:    {}", ours.join(";"), fio.join(";"));
    assert_eq!(ours.len(), fio.len(), "field count");
    // 1-based field numbers of fio's HOWTO list
    for i in [1, 2, 3, 4, 5, 122] {
        assert_eq!(ours[i - 1], fio[i - 1], "field {i}");
    }
    for base in [18, 59] {
        for i in base..base + 20 {
            let label = |v: &String| v.split('=').next().unwrap_or("").to_string();
            assert_eq!(label(&ours[i - 1]), label(&fio[i - 1]), "field {i}");
        }
    }
    for i in [6, 8, 47, 49] {
        let (a, b) = (num_at(&ours, i - 1), num_at(&fio, i - 1));
        assert!(within(a, b, 2.0), "field {i}: {a}, fio {b}");
    }
    for i in [9, 50] {
        let (a, b) = (num_at(&ours, i - 1), num_at(&fio, i - 1));
        assert!(within(a, b, 5.0), "field {i} (runtime): {a}, fio {b}");
    }
}

#[test]
fn simulated_terse_fields() {
    let s = Scratch::new();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--name=j",
            "--rw=randread",
            "--bs=4k",
            "--size=8m",
            "--rate_iops=100",
            "--runtime=1",
            "--time_based",
            "--direct=1",
            "--device=ssd",
            "--output-format=terse",
        ];
        args.extend_from_slice(extra);
        let r = blkqos(&args, s.dir.path());
        r.ok();
        r.stdout_str()
    };
    let plain = run(&[]);
    let f = fields(&plain);
    assert_eq!(f.len(), 130, "{plain}");
    assert_eq!(&f[..5], ["3", "fio-3.33", "j", "0", "0"]);
    assert_eq!((f[5].as_str(), f[7].as_str()), ("400", "100"));
    assert_eq!(f[46], "0", "no writes");
    assert_eq!(run(&[]), plain, "deterministic");
    let more = fields(&run(&[
        "--continue_on_error=all",
        "--description=two words",
    ]));
    assert_eq!(more.len(), 133);
    assert_eq!(&more[130..], ["0", "0", "two words"]);
}
