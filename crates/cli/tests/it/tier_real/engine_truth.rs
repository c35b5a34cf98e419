//! The values of a real run's report that come from the host, against fio
//! 3.33 on the same job and target:
//!
//! * `slat`: measured at the submit call on the real engine, so it is
//!   nonzero for the async engines (io_uring, libaio) on both backends and
//!   within 100x of fio's; absent (N = 0) for psync, as in fio;
//! * `usr_cpu`/`sys_cpu`/`ctx`: from getrusage, nonzero as fio's;
//! * `disk_util`: the kernel's numbers of the disk under the target, named
//!   as fio names it (a file: the disk of its filesystem); on a loop device
//!   the kernel's read count is fio's ±2% and the job's ±2%, and blkqos's
//!   own accounting is apart, under `blkqos_disk_util`;
//! * times: the local time of `TZ` as fio prints it (UTC when
//!   `SOURCE_DATE_EPOCH` pins the run).
//!
//! Bounds are broad on purpose (both > 0, within 100x): nothing here
//! times the machine. The measured values are printed side by side.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn fio_version() -> Option<String> {
    let o = Command::new("fio").arg("--version").output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// A job file for `file` with `engine` and the job lines `body`.
fn job_file(dir: &Path, name: &str, file: &Path, engine: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{name}.fio"));
    let text = format!(
        "[{name}]\nfilename={}\nioengine={engine}\ndirect=1\n{body}",
        file.display()
    );
    std::fs::write(&p, text).expect("job file");
    p
}

/// `fio JOBFILE --output-format=json` in `dir`, with `TZ` if given.
fn fio_json(jf: &Path, dir: &Path, tz: Option<&str>) -> Value {
    let mut cmd = Command::new("fio");
    cmd.arg(jf).arg("--output-format=json").current_dir(dir);
    if let Some(tz) = tz {
        cmd.env("TZ", tz);
    }
    let f = run_bounded(cmd, TIMEOUT);
    assert_eq!(f.code, Some(0), "fio {}:\n{}", jf.display(), f.stderr);
    f.json_docs().remove(0)
}

/// `blkqos run JOBFILE --backend=BE --output-format=json`, or None when the
/// kernel refuses the backend (said on stderr).
fn blkqos_json(jf: &Path, dir: &Path, be: Be) -> Option<Value> {
    let args = [
        "run".to_string(),
        jf.display().to_string(),
        be.flag(),
        "--output-format=json".into(),
    ];
    let r = blkqos(&args, dir);
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return None;
    }
    r.ok();
    Some(r.json_docs().remove(0))
}

/// What one run reports that the host decides.
#[derive(Debug)]
struct Truth {
    slat_mean_ns: f64,
    slat_n: f64,
    usr: f64,
    sys: f64,
    ctx: f64,
    disks: Vec<String>,
}

fn truth(doc: &Value) -> Truth {
    let j = &doc["jobs"][0];
    Truth {
        slat_mean_ns: num(j, "/read/slat_ns/mean"),
        slat_n: num(j, "/read/slat_ns/N"),
        usr: num(j, "/usr_cpu"),
        sys: num(j, "/sys_cpu"),
        ctx: num(j, "/ctx"),
        disks: disk_names(doc, "disk_util"),
    }
}

fn disk_names(doc: &Value, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| d["name"].as_str().unwrap_or("").to_string())
        .collect()
}

const RANDREAD_1S: &str = "rw=randread\nbs=4k\niodepth=8\nsize=16m\nruntime=1\ntime_based\n";

#[test]
#[ignore = "tier real"]
fn slat_cpu_and_disk_name_like_fio() {
    let _x = exclusive();
    let Some(version) = fio_version() else {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    };
    let s = Scratch::new();
    let file = s.path("truth.dat");
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for engine in ["io_uring", "libaio", "psync"] {
        let body = if engine == "psync" {
            RANDREAD_1S.replace("iodepth=8", "iodepth=1")
        } else {
            RANDREAD_1S.to_string()
        };
        let jf = job_file(s.dir.path(), engine, &file, engine, &body);
        // blkqos first: it lays the file out, fio reuses it
        let mut ours = Vec::new();
        for be in [Be::Uring, Be::Threads] {
            if let Some(doc) = blkqos_json(&jf, s.dir.path(), be) {
                ours.push((format!("blkqos {}", be.name()), truth(&doc)));
            }
        }
        let fio = truth(&fio_json(&jf, s.dir.path(), None));
        for (who, t) in &ours {
            check_truth(engine, who, t, &fio, &mut bad);
            rows.push(row(engine, who, t));
        }
        rows.push(row(engine, &version, &fio));
    }
    eprintln!(
        "{:<9} {:<16} {:>12} {:>8} {:>8} {:>8}  disks\n{}",
        "engine",
        "runner",
        "slat mean ns",
        "usr %",
        "sys %",
        "ctx",
        rows.join("\n")
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn row(engine: &str, who: &str, t: &Truth) -> String {
    format!(
        "{engine:<9} {who:<16} {:>12.0} {:>8.2} {:>8.2} {:>8}  {}",
        t.slat_mean_ns,
        t.usr,
        t.sys,
        t.ctx,
        t.disks.join(",")
    )
}

/// One blkqos run against fio's on the same job.
fn check_truth(engine: &str, who: &str, t: &Truth, fio: &Truth, bad: &mut Vec<String>) {
    let mut fail = |what: String| bad.push(format!("{engine} {who}: {what}"));
    if engine == "psync" {
        if t.slat_n != 0.0 || fio.slat_n != 0.0 {
            fail(format!(
                "slat N {} (fio {}): a sync engine has none",
                t.slat_n, fio.slat_n
            ));
        }
    } else {
        let (a, b) = (t.slat_mean_ns, fio.slat_mean_ns);
        if !(a > 0.0 && b > 0.0 && a / b <= 100.0 && b / a <= 100.0) {
            fail(format!(
                "slat mean {a:.0} ns, fio {b:.0} ns: want both > 0, within 100x"
            ));
        }
    }
    if t.usr + t.sys <= 0.0 || t.ctx <= 0.0 {
        fail(format!(
            "cpu usr {} sys {} ctx {}: want > 0",
            t.usr, t.sys, t.ctx
        ));
    }
    if fio.usr + fio.sys <= 0.0 || fio.ctx <= 0.0 {
        fail(format!(
            "fio's cpu usr {} sys {} ctx {}",
            fio.usr, fio.sys, fio.ctx
        ));
    }
    if t.disks != fio.disks {
        fail(format!("disks {:?}, fio {:?}", t.disks, fio.disks));
    }
}

/// The udev probe of a freshly attached loop device must not land in a
/// measured run.
fn settle() {
    let _ = Command::new("udevadm")
        .args(["settle", "--timeout=5"])
        .status();
    std::thread::sleep(std::time::Duration::from_millis(200));
}

/// (name, read ios, util) of the first `key` entry.
fn first_disk(doc: &Value, key: &str) -> (String, f64, f64) {
    let d = &doc[key][0];
    (
        d["name"].as_str().unwrap_or("").to_string(),
        num(d, "/read_ios"),
        num(d, "/util"),
    )
}

/// 4096 reads; `thinktime_blocks_type=issue` makes fio sleep 500 ms
/// after the last one with its file still open, so that its disk-util
/// sampler (every 250 ms while a file is open) sees all of them.
const LOOP_JOB: &str = "rw=randread\nbs=4k\niodepth=4\nsize=16m\n\
thinktime=500ms\nthinktime_blocks=4096\nthinktime_blocks_type=issue\n";

#[test]
#[ignore = "tier real"]
fn disk_util_from_the_kernel_on_a_loop_device() {
    let _x = exclusive();
    if fio_version().is_none() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let backing = s.path("loop.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(64 << 20))
        .expect("backing file");
    let Some(lo) = LoopDev::attach(&backing) else {
        return;
    };
    settle();
    let jf = job_file(s.dir.path(), "loopread", &lo.dev, "io_uring", LOOP_JOB);
    let Some(ours) = blkqos_json(&jf, s.dir.path(), Be::Uring) else {
        return;
    };
    let fio = fio_json(&jf, s.dir.path(), None);
    let (name, ios, util) = first_disk(&ours, "disk_util");
    let (fname, fios, futil) = first_disk(&fio, "disk_util");
    let (own_name, own_ios, own_util) = first_disk(&ours, "blkqos_disk_util");
    let issued = num(&ours["jobs"][0], "/read/total_ios");
    eprintln!(
        "{:<22} {:>9} {:>8}\n{:<22} {ios:>9} {util:>8.2}\n{:<22} {fios:>9} {futil:>8.2}\n{:<22} {own_ios:>9} {own_util:>8.2}",
        "loop device read ios", "", "util %",
        format!("blkqos: kernel {name}"),
        format!("fio: kernel {fname}"),
        format!("blkqos own {own_name}"),
    );
    let want = lo.dev.file_name().and_then(|n| n.to_str()).unwrap_or("");
    assert_eq!(name, want, "blkqos names the disk as the kernel does");
    assert_eq!(fname, want, "fio names the disk as the kernel does");
    assert!(
        within(ios, fios, 2.0),
        "kernel reads {ios}, fio's run {fios} (±2%)"
    );
    assert!(
        within(ios, issued, 2.0),
        "kernel reads {ios}, job issued {issued} (±2%)"
    );
    assert!((0.0..=100.0).contains(&util) && util > 0.0, "util {util}");
    assert_eq!(own_name, lo.dev.display().to_string());
    assert_eq!(own_ios, issued, "blkqos's own count is the job's");
    assert_eq!(disk_names(&fio, "blkqos_disk_util"), Vec::<String>::new());
}

/// Seconds since the epoch of a `ctime()` text read as UTC.
fn ctime_secs(text: &str) -> i64 {
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let f: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(f.len(), 5, "ctime layout: {text:?}");
    let m = MON.iter().position(|&m| m == f[1]).expect("month") as i64 + 1;
    let d: i64 = f[2].parse().expect("day");
    let y: i64 = f[4].parse().expect("year");
    let hms: Vec<i64> = f[3].split(':').map(|v| v.parse().expect("time")).collect();
    // days from civil (H. Hinnant)
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]
}

/// The zone offset (s) a JSON report's `time` shows against its
/// `timestamp`, to the quarter hour.
fn shown_offset(doc: &Value) -> i64 {
    let time = doc["time"].as_str().expect("time");
    let ts = num(doc, "/timestamp") as i64;
    ((ctime_secs(time) - ts) as f64 / 900.0).round() as i64 * 900
}

#[test]
#[ignore = "tier real"]
fn local_time_like_fio() {
    if fio_version().is_none() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    let s = Scratch::new();
    let file = s.path("tz.dat");
    std::fs::write(&file, vec![7u8; 64 << 10]).expect("file");
    let jf = job_file(
        s.dir.path(),
        "tz",
        &file,
        "psync",
        "rw=read\nbs=4k\nsize=64k\n",
    );
    for (tz, want) in [("Asia/Tokyo", 9 * 3600), ("UTC", 0), ("JST-9", 9 * 3600)] {
        let fio = fio_json(&jf, s.dir.path(), Some(tz));
        let r = blkqos_tz(
            &[
                "run",
                "--name=tz",
                "--rw=read",
                "--size=64k",
                "--device=ssd",
            ],
            tz,
            None,
            s.dir.path(),
        );
        let normal = r.stdout_str();
        let json = blkqos_tz(
            &[
                "run",
                "--name=tz",
                "--rw=read",
                "--size=64k",
                "--device=ssd",
                "--output-format=json",
            ],
            tz,
            None,
            s.dir.path(),
        )
        .json_docs()
        .remove(0);
        assert_eq!(
            shown_offset(&fio),
            want,
            "fio with TZ={tz}: {}",
            fio["time"]
        );
        assert_eq!(
            shown_offset(&json),
            want,
            "blkqos with TZ={tz}: {}",
            json["time"]
        );
        // the job line prints the same clock as the JSON `time`, in
        // ctime's layout (as fio's `os_ctime_r`)
        let line = normal
            .lines()
            .find(|l| l.contains(" pid="))
            .expect("job line");
        let shown = line.rsplit(": ").next().expect("time");
        assert_eq!(shown.len(), 24, "ctime layout: {shown:?}");
        ctime_secs(shown);
    }
    // a pinned run prints UTC whatever the zone
    let pinned = blkqos_tz(
        &[
            "run",
            "--name=tz",
            "--rw=read",
            "--size=64k",
            "--device=ssd",
            "--output-format=json",
        ],
        "Asia/Tokyo",
        Some("1795293556"),
        s.dir.path(),
    )
    .json_docs()
    .remove(0);
    assert_eq!(pinned["time"], "Sat Nov 21 20:39:16 2026");
}

/// `blkqos ARGS` with `TZ` set and `SOURCE_DATE_EPOCH` as given.
fn blkqos_tz(args: &[&str], tz: &str, sde: Option<&str>, dir: &Path) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env("TZ", tz)
        .env_remove("SOURCE_DATE_EPOCH");
    if let Some(v) = sde {
        cmd.env("SOURCE_DATE_EPOCH", v);
    }
    let r = run_bounded(cmd, TIMEOUT);
    r.ok();
    r
}
