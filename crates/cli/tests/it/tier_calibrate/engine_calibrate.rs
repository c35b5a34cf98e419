//! `blkqos calibrate` on real loop devices (over a RAM file and over a file
//! on the disk): it measures, fits, checks and prints a model the
//! simulator runs; an interrupted calibration still reports its whole
//! rounds. The accuracy of the fitted devices is judged on recorded
//! measurements (`calibrate.rs`, `lab/calibrate/fixtures/`), where the
//! run-to-run spread is known; here the machine running the suite may be
//! busy, so only what holds on any machine is asserted.

use crate::engine_util;

use engine_util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A loop device over a `mib`-MiB zero-filled file at `backing`.
fn loop_over(backing: &Path, mib: usize) -> Option<LoopDev> {
    std::fs::write(backing, vec![0u8; mib << 20]).unwrap();
    LoopDev::attach(backing)
}

/// What a calibration was asked for: its rounds, whether it wrote, and
/// whether the fit check ran (`--no-check` otherwise).
#[derive(Clone, Copy)]
struct Asked {
    rounds: usize,
    writes: bool,
    checked: bool,
}

impl Asked {
    fn args(self) -> Vec<String> {
        let mut a = vec![format!("--rounds={}", self.rounds), "--time=1".into()];
        if self.writes {
            a.extend(["--write".into(), "--allow-destructive".into()]);
        }
        if !self.checked {
            a.push("--no-check".into());
        }
        a
    }
}

fn calibrate_json(dev: &Path, asked: Asked, extra: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("calibrate")
        .arg(dev)
        .args(asked.args())
        .args(extra)
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "calibrate {}: {}",
        dev.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check_calibration(what: &str, dev: &Path, asked: Asked, v: &Value) {
    let base = dev.file_name().unwrap().to_string_lossy();
    let devid = std::fs::read_to_string(format!("/sys/block/{base}/dev"))
        .unwrap()
        .trim()
        .to_string();
    // the io.cost.model line: the device's MAJ:MIN, six positive numbers
    let line = v["io_cost_model"]["line"].as_str().unwrap();
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some(devid.as_str()), "{line}");
    let keys: Vec<(String, f64)> = words
        .skip(2)
        .map(|w| {
            let (k, n) = w.split_once('=').unwrap();
            (k.to_string(), n.parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    let all = [
        "rbps",
        "rseqiops",
        "rrandiops",
        "wbps",
        "wseqiops",
        "wrandiops",
    ];
    let (want, jobs) = if asked.writes {
        (&all[..], 26)
    } else {
        (&all[..3], 13)
    };
    assert_eq!(names, want, "{line}");
    assert!(keys.iter().all(|(_, n)| *n > 0.0), "{line}");
    // every round has every job, each completed IO
    let rounds = v["measured"]["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), asked.rounds);
    for r in rounds {
        assert_eq!(r.as_object().unwrap().len(), jobs, "{r}");
        assert!(r
            .as_object()
            .unwrap()
            .values()
            .all(|p| p["ios"].as_u64().unwrap() > 0));
    }
    // the target's own queue limits are the fitted device's
    let t = &v["measured"]["target"];
    assert_eq!(t["devid"], devid.as_str());
    let name = t["name"].as_str().unwrap();
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{name}/queue/{f}"))
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(t["max_sectors_kb"], sys("max_sectors_kb"));
    // every candidate was replayed; the chosen one has the least error
    if asked.checked {
        let errs: Vec<f64> = v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["error"].as_f64().unwrap())
            .collect();
        let chosen = v["device"]["error"].as_f64().unwrap();
        assert!(errs.iter().all(|&e| e >= chosen), "{errs:?}");
    }
    // and the simulator runs the fitted device
    let spec = v["device"]["spec"].as_str().unwrap();
    let out = Command::new(BIN)
        .args(["run", "--name=t", "--rw=randread", "--bs=4k", "--size=16m"])
        .args(["--direct=1", "--runtime=1", "--time_based"])
        .arg(format!("--device={spec}"))
        .arg(format!("--submit-ns={}", v["device"]["submit_ns"]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{what}: {spec}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{what}: {line}\n  --device={spec}");
}

#[test]
#[ignore = "tier calibrate"]
fn calibrates_a_loop_device_over_ram() {
    let _x = exclusive();
    let Some(ram) = Mounted::tmpfs("80m") else {
        return;
    };
    let Some(lo) = loop_over(&ram.dir.path().join("backing.img"), 64) else {
        return;
    };
    // the whole calibration: writes, two rounds, the fit check
    let asked = Asked {
        rounds: 2,
        writes: true,
        checked: true,
    };
    let v = calibrate_json(&lo.dev, asked, &[]);
    check_calibration("loop over RAM", &lo.dev, asked, &v);
    // the runner line names the CPUs' idle handling as this machine has it
    let backend = v["measured"]["backend"].as_str().unwrap();
    let cpuidle = std::fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver")
        .ok()
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty() && d != "none");
    match cpuidle {
        Some(d) => assert!(
            backend.contains(&format!("idle states on (cpuidle {d}"))
                || backend.contains("idle CPUs polling (a 0 us latency request in force)"),
            "{backend}"
        ),
        None => assert!(!backend.contains("idle"), "{backend}"),
    }
}

#[test]
#[ignore = "tier calibrate"]
fn calibrates_a_loop_device_over_a_disk_file() {
    let _x = exclusive();
    let s = Scratch::new();
    let Some(lo) = loop_over(&s.path("backing.img"), 64) else {
        return;
    };
    // reads (the default), two rounds, the fit check: a second device
    // for the same code, at half the time
    let asked = Asked {
        rounds: 2,
        writes: false,
        checked: true,
    };
    let v = calibrate_json(&lo.dev, asked, &[]);
    check_calibration("loop over a disk file", &lo.dev, asked, &v);
}

/// `--cpu-idle=poll`: while it measures, the CPU latency request in force
/// is 0 µs; after, the request is gone; the report says how it measured.
#[test]
#[ignore = "tier calibrate"]
fn cpu_idle_poll_holds_a_latency_request_while_measuring() {
    let _x = exclusive();
    let latency_us = || -> Option<i32> {
        let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
        Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
    };
    let Some(before) = latency_us() else {
        blkqos_testkit::skip(blkqos_testkit::Reason::Host, "no /dev/cpu_dma_latency");
        return;
    };
    if before == 0 {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Host,
            "a 0 us request is already in force",
        );
        return;
    }
    let Some(ram) = Mounted::tmpfs("40m") else {
        return;
    };
    let Some(lo) = loop_over(&ram.dir.path().join("backing.img"), 32) else {
        return;
    };
    let child = Command::new(BIN)
        .arg("calibrate")
        .arg(&lo.dev)
        .args(["--rounds=1", "--time=1", "--no-check", "--cpu-idle=poll"])
        .arg("--output-format=json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // 13 read jobs of 1 s: 4 s in, it is measuring
    std::thread::sleep(Duration::from_secs(4));
    let during = latency_us();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(during, Some(0), "no 0 us request while measuring");
    assert_eq!(latency_us(), Some(before), "the request outlived the run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let backend = v["measured"]["backend"].as_str().unwrap();
    assert!(backend.contains("idle CPUs polling"), "{backend}");
}

fn have_fio() -> bool {
    let ok = Command::new("fio").arg("--version").output().is_ok();
    if !ok {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
    }
    ok
}

/// `--runner=fio`: fio runs the jobs (its version is in the record) and
/// the same fit follows; blkqos's safety rules still guard the target.
#[test]
#[ignore = "tier calibrate"]
fn fio_can_run_the_calibration_jobs() {
    if !have_fio() {
        return;
    }
    let _x = exclusive();
    let s = Scratch::new();
    // a file blkqos did not lay out: writing it needs --overwrite, with
    // fio as with blkqos's engine
    let file = s.path("theirs.img");
    std::fs::write(&file, vec![7u8; 2 << 20]).unwrap();
    let out = Command::new(BIN)
        .arg("calibrate")
        .arg(&file)
        .args(["--runner=fio", "--write", "--rounds=1", "--time=1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--overwrite"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), vec![7u8; 2 << 20]);
    let Some(lo) = loop_over(&s.path("backing.img"), 64) else {
        return;
    };
    // fio's reads and writes, one round; the fit and its check do not
    // depend on who measured (the tests above check them)
    let asked = Asked {
        rounds: 1,
        writes: true,
        checked: false,
    };
    let v = calibrate_json(&lo.dev, asked, &["--runner=fio"]);
    let backend = v["measured"]["backend"].as_str().unwrap();
    assert!(backend.starts_with("fio-"), "{backend}");
    check_calibration("loop over a disk file, measured by fio", &lo.dev, asked, &v);
    // fio's numbers, not blkqos's: each job ran its second
    for r in v["measured"]["rounds"].as_array().unwrap() {
        for (job, p) in r.as_object().unwrap() {
            let ms = p["runtime_ms"].as_u64().unwrap();
            assert!((900..=1500).contains(&ms), "{job}: {p}");
        }
    }
}

/// SIGINT after the first round: the report of that round, exit 130.
#[test]
#[ignore = "tier calibrate"]
fn an_interrupted_calibration_reports_its_whole_rounds() {
    let _x = exclusive();
    let Some(ram) = Mounted::tmpfs("40m") else {
        return;
    };
    let Some(lo) = loop_over(&ram.dir.path().join("backing.img"), 32) else {
        return;
    };
    // a round: 12 read jobs of 1 s: the signal comes in the second round
    let args: Vec<String> = [
        "calibrate",
        &lo.dev.display().to_string(),
        "--rounds=5",
        "--time=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let s = signal_blkqos(
        &args,
        Path::new("."),
        Duration::from_millis(16500),
        &["INT"],
        Duration::ZERO,
        Duration::from_secs(60),
    );
    assert_eq!(s.ran.code, Some(130), "{}", s.ran.stderr);
    let out = s.ran.stdout_str();
    assert!(out.contains("INTERRUPTED"), "{out}");
    assert!(out.contains("ctrl=user model=linear rbps="), "{out}");
    assert!(s.ran.stderr.contains("whole round"), "{}", s.ran.stderr);
    // it stopped within the job that was running
    assert!(
        s.after_first < Duration::from_secs(3),
        "{:?}",
        s.after_first
    );
}
